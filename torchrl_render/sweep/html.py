"""``report.html``: a plain page (no script) over ``eval_info.json``.

Return-against-training-step curves per task (one line per run, the 95% confidence band of
the mean return shaded), a success-rate and return table (checkpoints x tasks), failures,
and the rendered episodes of each cell (``<video>`` elements pointing at the cells' files).
The curve images are also written as ``report_files/curve_<task>.png``.

Across tasks, per checkpoint (rliable's three figures, from the ``scores`` and ``comparisons`` of
``eval_info.json``): the IQM, median and mean with their 95% stratified bootstrap intervals
(``report_files/aggregates.png``), the performance profiles with their bands (``profiles.png``) and the
probability of improvement of each checkpoint over each other (``improvement.png``).
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from .gallery import gallery_html

if TYPE_CHECKING:
    from ..metrics.robust import LevelEstimates
    from .report import CellEntry, CheckpointEntry, CurvePoint, EvalInfo  # the report imports this module

__all__ = ["episode_videos", "plot_aggregates", "plot_curve", "plot_improvement", "plot_profiles", "robust_table",
           "success_table", "write_html"]

_STYLE = ("body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px}table{border-collapse:collapse}"
          "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}th{background:#f4f4f4}"
          ".failed{color:#b00}.pending{color:#888}figure{display:inline-block;margin:0 1em 1em 0;vertical-align:top}"
          "figcaption{font-size:90%;color:#444}")


def plot_curve(task: str, runs: Mapping[str, list[CurvePoint]], path: Path) -> Path:
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


def _pyplot() -> ModuleType:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _label(entry: CheckpointEntry) -> str:
    name = Path(entry["checkpoint"]).name
    return f"{entry['run']}/{name}" if entry.get("run") not in (None, "default") else name


def _scored(info: EvalInfo) -> list[tuple[str, LevelEstimates]]:
    """Each checkpoint's estimates across tasks, where it has some (an info built by hand may have none)."""
    rows = []
    for e in info["per_checkpoint"]:
        overall = e.get("overall")
        scores = overall.get("scores") if overall else None
        if scores and scores.get("iqm") is not None:
            rows.append((_label(e), scores))
    return rows


#: The estimates across tasks a level has (``optimality_gap`` with normalised scores only), in the figures' order.
_ESTIMATES = ("iqm", "median", "mean", "optimality_gap")


def _estimate(scores: LevelEstimates, key: str) -> tuple[float | None, list[float] | None]:
    """The estimate ``key`` (one of :data:`_ESTIMATES`) and its 95% interval."""
    if key == "iqm":
        return scores["iqm"], scores.get("iqm_ci95")
    if key == "median":
        return scores["median"], scores.get("median_ci95")
    if key == "mean":
        return scores["mean"], scores.get("mean_ci95")
    return scores["optimality_gap"], scores.get("optimality_gap_ci95")


def plot_aggregates(info: EvalInfo, path: Path) -> Path:
    """Each checkpoint's IQM, median and mean across tasks, as points with their 95% intervals (rliable's
    interval-estimates figure)."""
    plt = _pyplot()
    rows = _scored(info)
    keys = [k for k in _ESTIMATES if rows and k in rows[0][1]]
    fig, axes = plt.subplots(1, len(keys), figsize=(2.6 * len(keys) + 1.6, 0.5 * len(rows) + 1.7), dpi=100,
                             sharey=True, squeeze=False)
    try:
        for ax, key in zip(axes[0], keys):
            for y, (_, sc) in enumerate(rows):
                value, ci = _estimate(sc, key)
                if ci:
                    ax.plot(ci, [y, y], lw=6, alpha=0.35, color=f"C{y % 10}", solid_capstyle="butt")
                ax.plot([value], [y], "|", ms=14, mew=2, color=f"C{y % 10}")
            ax.set(title={"iqm": "IQM", "median": "Median", "mean": "Mean", "optimality_gap": "Optimality gap"}[key])
            ax.grid(axis="x", alpha=0.3)
        axes[0][0].set_yticks(range(len(rows)), [r[0] for r in rows])
        axes[0][0].invert_yaxis()
        score = rows[0][1]["score"] if rows else "raw"
        fig.supxlabel("normalised score" if score == "normalised" else "return (raw: no --score-baselines)",
                      fontsize="small")
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)
    return path


def plot_profiles(info: EvalInfo, path: Path) -> Path:
    """Each checkpoint's performance profile (the fraction of episodes above tau) with its 95% band."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.6), dpi=100)
    try:
        rows = _scored(info)
        for i, (label, sc) in enumerate(rows):
            prof = sc["performance_profile"]
            assert prof is not None  # a level with an IQM (_scored) has its profile
            ax.plot(prof["tau"], prof["fraction"], label=label, color=f"C{i % 10}")
            if prof["ci95"]:
                ax.fill_between(prof["tau"], prof["ci95"][0], prof["ci95"][1], alpha=0.2, color=f"C{i % 10}")
        normalised = bool(rows) and rows[0][1]["score"] == "normalised"
        ax.set(xlabel=r"normalised score $\tau$" if normalised else r"return $\tau$",
               ylabel=r"fraction of episodes > $\tau$", title="Performance profiles", ylim=(-0.02, 1.02))
        ax.grid(alpha=0.3)
        if rows:
            ax.legend(loc="best", fontsize="small")
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)
    return path


def plot_improvement(info: EvalInfo, path: Path) -> Path:
    """The matrix of P(column's return > row's return), each cell annotated with its 95% interval."""
    plt = _pyplot()
    labels = [_label(e) for e in info["per_checkpoint"]]
    names = [e["checkpoint"] for e in info["per_checkpoint"]]
    k = len(names)
    matrix = [[float("nan")] * k for _ in range(k)]
    bands: dict[tuple[int, int], list[float] | None] = {}
    for c in info.get("comparisons", []):
        i, j = names.index(c["checkpoint_a"]), names.index(c["checkpoint_b"])
        matrix[i][j] = c["probability_of_improvement"]
        bands[(i, j)] = c["probability_of_improvement_ci95"]
    side = 1.1 * k + 2.2
    fig, ax = plt.subplots(figsize=(side + 1.2, side), dpi=100)
    try:
        image = ax.imshow(matrix, vmin=0, vmax=1, cmap="RdBu")
        if k <= 12:
            for (i, j), ci in bands.items():
                text = f"{matrix[i][j]:.2f}" + (f"\n[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")
                ax.text(j, i, text, ha="center", va="center", fontsize=8,
                        color="white" if abs(matrix[i][j] - 0.5) > 0.3 else "black")
        ax.set_xticks(range(k), labels, rotation=45, ha="right", fontsize="small")
        ax.set_yticks(range(k), labels, fontsize="small")
        ax.set(xlabel="B (column)", ylabel="A (row)", title="P(a return of B > a return of A)")
        fig.colorbar(image, ax=ax, fraction=0.046)
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)
    return path


def robust_table(info: EvalInfo) -> str:
    """Each checkpoint's estimates across tasks (IQM, median, mean, optimality gap) with their 95% intervals."""
    rows = _scored(info)
    if not rows:
        return "<p>No estimate yet.</p>"
    keys = [k for k in _ESTIMATES if k in rows[0][1]]
    head = "<tr><th>checkpoint</th>" + "".join(f"<th>{k.replace('_', ' ')} [95% CI]</th>" for k in keys) + "</tr>"
    body = []
    for label, sc in rows:
        cells = "".join(f"<td>{value:.3f}{_band(ci, 3)}</td>" for value, ci in (_estimate(sc, k) for k in keys))
        body.append(f"<tr><td>{html.escape(label)}</td>{cells}</tr>")
    note = rows[0][1].get("note")
    caption = f"<p>Scores: {html.escape(rows[0][1]['score'])}" + (f" ({html.escape(note)})" if note else "") + ".</p>"
    return f"{caption}<table>{head}{''.join(body)}</table>"


def _band(ci: list[float] | None, digits: int = 2) -> str:
    return f" [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]" if ci else ""


def write_html(folder: Path, info: EvalInfo) -> Path:
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
            f"{_num(info['overall']['avg_sum_reward'])}, {success_text(info['overall']['pc_success'])}"
            + (f" ({html.escape(info['overall']['note'])})" if info["overall"].get("note") else "") + ".</p>",
            "<h2>Return against training step</h2>", "".join(figures) or "<p>No episode yet.</p>",
            "<h2>Success rate and mean return</h2>", success_table(info), separations_html(info)]
    if _scored(info):
        robust = [plot_aggregates(info, files / "aggregates.png"), plot_profiles(info, files / "profiles.png")]
        if info.get("comparisons"):
            robust.append(plot_improvement(info, files / "improvement.png"))
        body += ["<h2>Across tasks: IQM, median, mean (95% stratified bootstrap intervals)</h2>", robust_table(info),
                 "".join(f'<figure><img width={1100 if p.stem == "aggregates" else 540} src="report_files/{p.name}" '
                         f'alt="{p.stem}"></figure>' for p in robust)]
    if info["failures"]:
        body.append("<h2>Failures</h2><ul>" + "".join(f"<li class=failed><b>{html.escape(c)}</b>: {html.escape(e)}"
                                                       "</li>" for c, e in info["failures"].items()) + "</ul>")
    body += [gallery_html(info), "<h2>Rendered episodes</h2>", episode_videos(info)]
    page = (f"<!doctype html><html><head><meta charset=utf-8><title>Sweep report</title><style>{_STYLE}</style>"
            f"</head><body>{''.join(body)}</body></html>\n")
    path = folder / "report.html"
    tmp = path.with_name(".report.html.tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(path)
    return path


def success_text(pc_success: float | None) -> str:
    """``success 40.00%``, or a plain sentence when no env reports success (never ``success -%``)."""
    return "success not reported (no env gives a success signal)" if pc_success is None \
        else f"success {pc_success:.2f}%"


def _num(value: object) -> str:
    return "-" if value is None else f"{value:.2f}" if isinstance(value, float) else str(value)


def success_table(info: EvalInfo) -> str:
    """The success rate, mean return (with its 95% CI half-width) and IQM (with its 95% bootstrap interval) of
    each checkpoint x task, as an HTML table."""
    tasks = [t["task"] for t in info["per_task"]]
    head = "<tr><th>run</th><th>checkpoint</th><th>step</th>" + "".join(
        f"<th>{html.escape(t)}<br>success % [95% Wilson] / mean return &plusmn; 95% CI</th>" for t in tasks) + "</tr>"
    rows = []
    for entry in info["per_checkpoint"]:
        cells = []
        for task in tasks:
            c = entry["per_task"].get(task)
            if c is None:  # the checkpoint has no cell of this task
                cells.append("<td class=pending>- / - (n=0)</td>")
                continue
            ci = c.get("ci95_sum_reward")
            band = f" &plusmn; {(ci[1] - ci[0]) / 2:.2f}" if ci else ""
            iqm = f"<br>IQM {_num(c['iqm_sum_reward'])}{_band(c.get('iqm_sum_reward_ci95'))}" \
                if c.get("iqm_sum_reward") is not None else ""
            success = "no success signal" if c.get("n_episodes") and c.get("pc_success") is None \
                else _num(c.get("pc_success")) + _band(c.get("ci95_success"))
            bad = f"<br><span class=note>{html.escape(c['note'])}</span>" if c.get("note") else ""
            cells.append(f"<td class={c.get('status', 'pending')}>{success} / {_num(c.get('avg_sum_reward'))}{band} "
                         f"(n={c.get('n_episodes', 0)}){iqm}{reached(c)}{bad}</td>")
        rows.append(f"<tr><td>{html.escape(str(entry['run']))}</td><td>{html.escape(Path(entry['checkpoint']).name)}"
                    f"</td><td>{_num(entry['step'])}</td>{''.join(cells)}</tr>")
    return f"<table>{head}{''.join(rows)}</table>"


def reached(cell: CellEntry) -> str:
    """The half-width the cell's confidence sequence reached: against ``--precision``'s target, or a fixed N's."""
    seq = cell.get("sequential")
    if seq is not None and seq.get("halfwidth") is not None:
        return (f"<br>{seq['metric']} half-width {seq['halfwidth']:.3g} (target {seq['target']:g}, "
                f"{html.escape(str(seq['stopped_on']))})")
    fixed_n = cell.get("fixed_n_halfwidth")
    fixed = fixed_n.get("return") if fixed_n else None
    if fixed and fixed.get("halfwidth") is not None and math.isfinite(fixed["halfwidth"]):
        return f"<br>return half-width reached {fixed['halfwidth']:.3g}"
    return ""


def separations_html(info: EvalInfo) -> str:
    """``--separate``'s verdict per task, beside the fixed-N probability of improvement."""
    rows = []
    for s in info.get("separations") or []:
        verdict = html.escape(Path(s["better_checkpoint"]).name) + " is better" if s["better_checkpoint"] else \
            "not separated" + (" within the cap" if s["stopped_on"] == "cap" else " yet")
        fixed_n = s.get("fixed_n")
        fixed = fixed_n.get("probability_of_improvement") if fixed_n else None
        rows.append(f"<tr><td>{html.escape(s['task'])}</td><td>{html.escape(Path(s['checkpoint_a']).name)}</td>"
                    f"<td>{html.escape(Path(s['checkpoint_b']).name)}</td><td>{verdict}</td><td>{s['n_pairs']}</td>"
                    f"<td>{_num(s['interval'][0])}, {_num(s['interval'][1])}</td><td>{s['p_value']:.3g}</td>"
                    f"<td>{_num(fixed)}</td></tr>")
    if not rows:
        return ""
    head = ("<tr><th>task</th><th>A</th><th>B</th><th>verdict</th><th>pairs</th><th>A - B (95% confidence "
            "sequence)</th><th>anytime-valid p</th><th>fixed-N P(B &gt; A)</th></tr>")
    return f"<h2>Telling two checkpoints apart (--separate)</h2><table>{head}{''.join(rows)}</table>"


def episode_videos(info: EvalInfo) -> str:
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
