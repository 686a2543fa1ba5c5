"""``report.html``: a plain page (no script) over ``eval_info.json``.

Return-against-training-step curves per task (one line per run, the 95% confidence band of
the mean return shaded), a success-rate and return table (checkpoints x tasks), failures,
and the rendered episodes of each cell (``<video>`` elements pointing at the cells' files).
The curve images are also written as ``report_files/curve_<task>.png``.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

__all__ = ["episode_videos", "plot_curve", "success_table", "write_html"]

_STYLE = ("body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px}table{border-collapse:collapse}"
          "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}th{background:#f4f4f4}"
          ".failed{color:#b00}.pending{color:#888}figure{display:inline-block;margin:0 1em 1em 0;vertical-align:top}"
          "figcaption{font-size:90%;color:#444}")


def plot_curve(task: str, runs: dict[str, list[dict[str, Any]]], path: Path) -> Path:
    """Draws one task's return-vs-step curves (with their confidence bands) into a PNG."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6), dpi=100)
    try:
        for run, points in runs.items():
            xs = [p["step"] if p["step"] is not None else i for i, p in enumerate(points)]
            ax.plot(xs, [p["mean"] for p in points], marker="o", label=run)
            banded = [(x, p["ci95"]) for x, p in zip(xs, points) if p["ci95"]]
            if banded:
                ax.fill_between([b[0] for b in banded], [b[1][0] for b in banded], [b[1][1] for b in banded],
                                alpha=0.25)
        ax.set(xlabel="training step", ylabel="return (mean, 95% CI)", title=task)
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize="small")
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)
    return path


def write_html(folder: Path, info: dict[str, Any]) -> Path:
    """Writes ``report.html`` (and its curve PNGs) into the sweep folder; returns its path."""
    folder = Path(folder)
    files = folder / "report_files"
    files.mkdir(exist_ok=True)
    figures = []
    for task, runs in info["curves"].items():
        png = plot_curve(task, runs, files / f"curve_{re.sub(r'[^A-Za-z0-9_.-]+', '_', task)}.png")
        figures.append(f'<figure><img width=540 src="report_files/{png.name}" alt="return vs step: '
                       f'{html.escape(task)}"></figure>')
    p = info["progress"]
    body = [f"<h1>Sweep report</h1><p>{p['done']}/{p['cells']} cells done, {p['failed']} failed, "
            f"{p['episodes']}/{p['episodes_total']} episodes; overall mean return "
            f"{_num(info['overall']['avg_sum_reward'])}, success {_num(info['overall']['pc_success'])}%.</p>",
            "<h2>Return against training step</h2>", "".join(figures) or "<p>No episode yet.</p>",
            "<h2>Success rate and mean return</h2>", success_table(info)]
    if info["failures"]:
        body.append("<h2>Failures</h2><ul>" + "".join(f"<li class=failed><b>{html.escape(c)}</b>: {html.escape(e)}"
                                                       "</li>" for c, e in info["failures"].items()) + "</ul>")
    body += ["<h2>Rendered episodes</h2>", episode_videos(info)]
    page = (f"<!doctype html><html><head><meta charset=utf-8><title>Sweep report</title><style>{_STYLE}</style>"
            f"</head><body>{''.join(body)}</body></html>\n")
    path = folder / "report.html"
    tmp = path.with_name(".report.html.tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(path)
    return path


def _num(value: Any) -> str:
    return "-" if value is None else f"{value:.2f}" if isinstance(value, float) else str(value)


def success_table(info: dict[str, Any]) -> str:
    """The success rate and mean return (with its 95% CI half-width) of each checkpoint x task, as an HTML table."""
    tasks = [t["task"] for t in info["per_task"]]
    head = "<tr><th>run</th><th>checkpoint</th><th>step</th>" + "".join(
        f"<th>{html.escape(t)}<br>success % / return</th>" for t in tasks) + "</tr>"
    rows = []
    for entry in info["per_checkpoint"]:
        cells = []
        for task in tasks:
            c = entry["per_task"].get(task, {})
            ci = c.get("ci95_sum_reward")
            band = f" &plusmn; {(ci[1] - ci[0]) / 2:.2f}" if ci else ""
            cells.append(f"<td class={c.get('status', 'pending')}>{_num(c.get('pc_success'))} / "
                         f"{_num(c.get('avg_sum_reward'))}{band} (n={c.get('n_episodes', 0)})</td>")
        rows.append(f"<tr><td>{html.escape(str(entry['run']))}</td><td>{html.escape(Path(entry['checkpoint']).name)}"
                    f"</td><td>{_num(entry['step'])}</td>{''.join(cells)}</tr>")
    return f"<table>{head}{''.join(rows)}</table>"


def episode_videos(info: dict[str, Any]) -> str:
    """The rendered episodes of each checkpoint x task as HTML figures (a paragraph when there are none)."""
    parts = []
    for entry in info["per_checkpoint"]:
        for task, c in entry["per_task"].items():
            if not c["video_paths"]:
                continue
            items = "".join(f'<video controls muted width=240 src="{html.escape(v)}"></video>' if v.endswith(".mp4")
                            else f'<img width=240 src="{html.escape(v)}">' if v.endswith(".gif")
                            else f'<a href="{html.escape(v)}">{html.escape(v)}</a>' for v in c["video_paths"])
            caption = f"{html.escape(Path(entry['checkpoint']).name)} &times; {html.escape(task)}"
            parts.append(f"<figure>{items}<figcaption>{caption}</figcaption></figure>")
    return "".join(parts) or "<p>No rendered episodes (metrics only).</p>"
