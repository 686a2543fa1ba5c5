"""The report notebook: the ``.ipynb`` that the ipynb writer executes and writes.

:func:`build_report` assembles it with nbformat (imported when called). Its first five cells
are laid out as torchrl.render's report, whose users run them by index: a title, the metrics,
``render_config`` (the run's config), the asset folder's ``metadata`` and saved ``rollouts``,
and ``cfg`` (the :class:`~torchrl_render.RenderConfig` rebuilt). Then a return plot, one cell per
rendered episode with its video (embedded or linked, built with
:func:`torchrl_render.notebook.video_html`), and cells that roll the policy out again: in
``saved`` mode a ``render_policy`` re-run left for the reader; in ``live``/``both`` mode
torchrl.render's ``collect_rollouts_in_notebook()`` (the same calls), then its files written
and shown. :func:`equivalent_command` writes the command line that reproduces a config.
Executing and writing the notebook is the ipynb writer's job (:mod:`torchrl_render.writers.ipynb`).

Example:
    >>> nb = build_report(config={"policy": "m:p", "env": "E"}, metrics={}, mode="live")
    >>> [c.id for c in nb.cells]
    ['title', 'metrics', 'config', 'assets', 'cfg', 'rerun-heading', 'live-rollout', 'live-show', 'live-plot']
"""

from __future__ import annotations

import base64
import dataclasses
import html
import json
import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from .._version import __version__
from ..config import RenderConfig
from ..contracts import EpisodeMetrics
from ..data import RunMetrics
from ..registry import WRITERS
from .display import EMBED_LIMIT_BYTES, fmt_cell, fmt_size, metrics_markdown, video_html, viewer_html
from .markup import md_fence, md_text
from .report_cells import (
    ASSETS,
    CFG,
    LIVE_OVERRIDES,
    LIVE_SHOW,
    NO_METRICS,
    config_source,
    kwargs_source,
    live_source,
    rerun_heading,
    rerun_source,
)

if TYPE_CHECKING:
    from nbformat import NotebookNode

__all__ = ["LIVE_OVERRIDES", "ReportVideo", "build_report", "equivalent_command"]


@dataclass
class ReportVideo:
    """One rendered episode in the report.

    Args:
        episode: Episode index.
        name: The mp4's file name (beside the notebook when linked).
        size: The mp4's size in bytes.
        data: The mp4's bytes when embedded; ``None`` when linked.
        preview: An animated PNG preview (for viewers that block ``<video>``, such as GitHub), if any.
        metrics: The episode's metrics, for the caption.
        limit_bytes: The embedding limit (quoted when the video is linked).
        width: Display width in CSS pixels.
        budget_left: What was left of the embedding limit when this video came (the limit is for all videos).
        viewer: The episode's 3-D replay page (html), shown beside the video in a sandboxed iframe.
    """

    episode: int
    name: str
    size: int
    data: bytes | None = None
    preview: bytes | None = None
    metrics: EpisodeMetrics | None = None
    limit_bytes: int | None = EMBED_LIMIT_BYTES
    width: int | None = None
    budget_left: int | None = None
    viewer: str | None = None


def build_report(*, config: Mapping[str, object], metrics: RunMetrics, videos: Sequence[ReportVideo] = (),
                 mode: str = "saved", command: str | None = None, live_out: str = "render_live.mp4",
                 search_path: Sequence[str] = (), title: str | None = None,
                 assets: tuple[str, str] = ("render", "render")) -> NotebookNode:
    """The report notebook (an ``nbformat.NotebookNode``, v4.5 with cell ids; not executed).

    Cells: ``title``, ``metrics`` (tables), ``config`` (``render_config``), ``assets`` (``metadata``,
    ``rollouts``), ``cfg``; in ``saved``/``both`` mode ``returns-plot``, ``episodes`` and one
    ``episode-<i>`` per video (outputs filled in, tagged ``skip-execution``); then ``rerun-heading``;
    in ``saved`` mode ``rerun-kwargs`` (editable env/policy kwargs) and ``rerun`` (runs
    :func:`render_policy`, tagged ``skip-execution``); in ``live``/``both`` mode ``live-rollout``
    (``collect_rollouts_in_notebook()``), ``live-show`` (writes and shows its files), ``live-plot``.

    Args:
        config: ``RenderConfig.to_dict()`` of the run (paths best made absolute).
        metrics: ``{"per_episode": [...], "aggregated": {...}}`` of the saved rollout.
        videos: The rendered episodes (saved/both).
        mode: ``saved``, ``live`` or ``both``.
        command: The command line to show.
        live_out: The mp4 the re-run/live cell writes (relative to the notebook).
        search_path: Folders the kernel adds to ``sys.path`` to import the env/policy factories.
        title: The heading (default from the env and policy specs).
        assets: The asset folder (``metadata.json``, ``rollouts/``): relative to the notebook, and absolute.
    """
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    summary = metrics_markdown(metrics) if mode != "live" else NO_METRICS
    cells = [new_markdown_cell(_title_source(config, metrics, mode, command, title), id="title"),
             new_markdown_cell("## Metrics\n\n" + summary, id="metrics"),
             new_code_cell(config_source(config), id="config"),
             new_code_cell(ASSETS.format(relative=assets[0], absolute=assets[1]), id="assets"),
             new_code_cell(CFG, id="cfg")]
    if mode in ("saved", "both"):
        cells += _episode_cells(metrics, videos)
    cells.append(new_markdown_cell(rerun_heading(mode, live_out), id="rerun-heading"))
    cells += _rollout_cells(mode, config, live_out, search_path)
    nb = new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
        "torchrl_render": {"mode": mode, "config": config}})
    nbformat.validate(nb)
    return nb


def _episode_cells(metrics: RunMetrics, videos: Sequence[ReportVideo]) -> list[NotebookNode]:
    """The saved rollout: the return plot, then one cell per rendered episode."""
    from nbformat.v4 import new_code_cell, new_markdown_cell

    episodes = metrics.get("per_episode") or []
    cells = [new_code_cell(_saved_plot_source(episodes), id="returns-plot")] if episodes else []
    cells.append(new_markdown_cell(_episodes_source(videos), id="episodes"))
    return cells + [_video_cell(v) for v in videos]


def _rollout_cells(mode: str, config: Mapping[str, object], live_out: str,
                   search_path: Sequence[str]) -> list[NotebookNode]:
    """Saved: the re-run left for the reader; live/both: torchrl.render's in-notebook collection, shown."""
    from nbformat.v4 import new_code_cell

    if mode != "saved":
        return [new_code_cell(live_source(config, live_out, search_path), id="live-rollout"),
                new_code_cell(LIVE_SHOW, id="live-show"), new_code_cell(_LIVE_PLOT, id="live-plot")]
    rerun = new_code_cell(rerun_source(config), id="rerun")
    rerun.metadata["tags"] = ["skip-execution"]
    return [new_code_cell(kwargs_source(config, live_out, search_path), id="rerun-kwargs"), rerun]


def _title_source(config: Mapping[str, object], metrics: RunMetrics, mode: str, command: str | None,
                  title: str | None) -> str:
    counted = len(metrics.get("per_episode") or [])
    aggregated = metrics.get("aggregated")
    n = aggregated.get("n_episodes", counted) if aggregated else counted
    heading = title or f"Policy report: {_short_spec(config.get('policy'))} in {_short_spec(config.get('env'))}"
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    what = {"saved": f"{n} saved episode(s)", "live": "rolled out live in this notebook",
            "both": f"{n} saved episode(s), then rolled out live in this notebook"}[mode]
    lines = [f"# {md_text(heading)}", "",
             f"Written by torchrl_render {__version__} on {when}; rollout mode `{mode}`: {what}.", ""]
    if command:  # names in it are the user's: a fence no line of theirs can close
        lines += ["Command:", "", md_fence(command, "bash")]
    return "\n".join(lines)


_PLOT_TAIL = """fig, ax = plt.subplots(figsize=(7, 3))
ax.plot(episodes, returns, marker="o", label="return")
if returns:
    ax.axhline(sum(returns) / len(returns), color="gray", linestyle="--", label="mean")
ax.set(xlabel="episode", ylabel="return", title={title!r})
ax.legend(loc="best")
plt.show()
"""

_LIVE_PLOT = ("import matplotlib.pyplot as plt\n\n"
              "episodes = [e[\"episode_ix\"] for e in live_result.metrics[\"per_episode\"]]\n"
              "returns = [e[\"sum_reward\"] for e in live_result.metrics[\"per_episode\"]]\n"
              + _PLOT_TAIL.format(title="Return per episode (live rollout)"))


def _saved_plot_source(episodes: list[EpisodeMetrics]) -> str:
    xs = [e.get("episode_ix", i) for i, e in enumerate(episodes)]
    ys = [float(e["sum_reward"]) for e in episodes]
    return ("import matplotlib.pyplot as plt\n\n"
            f"episodes = {xs!r}\nreturns = {ys!r}\n" + _PLOT_TAIL.format(title="Return per episode"))


def _episodes_source(videos: Sequence[ReportVideo]) -> str:
    if not videos:
        return "## Episodes\n\nNo episode was rendered."
    text = ("## Episodes\n\nEach rendered episode's video (H.264 mp4) is embedded in this notebook while the "
            "videos fit the embedding limit; it plays in Jupyter, VS Code and nbviewer. A video over the limit "
            "is linked instead (the cell says so): keep its mp4 beside the notebook.")
    if any(v.preview for v in videos):
        text += (" GitHub's notebook viewer blocks `<video>`, so an animated PNG preview (fewer frames, "
                 "smaller) follows each video.")
    return text


def _video_cell(video: ReportVideo) -> NotebookNode:
    from nbformat.v4 import new_code_cell, new_output

    caption = _episode_caption(video)
    if not video.name:  # no frames were rendered (--render-backend null): the 3-D replay alone
        source = f"# {caption}: its 3-D replay is below (re-running this cell is not needed)."
        html_text = ""
    elif video.data is not None:
        source = f"# {caption}: embedded below (re-running this cell is not needed)."
        html_text = video_html(video.data, caption=caption, width=video.width)
    else:
        source = ("# Linked, not embedded (over the size limit): plays while the mp4 stays beside the notebook.\n"
                  "from torchrl_render.notebook import show\n\n"
                  f"show({video.name!r}, limit_bytes=0)")
        html_text = _linked_html(video, caption)
    if video.viewer is not None:  # the 3-D replay beside the video
        html_text = ('<div style="display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start">'
                     + (f'<div>{html_text}</div>' if html_text else "")
                     + f'<div style="flex:1 1 520px;min-width:320px">{viewer_html(video.viewer)}</div></div>')
    outputs = [new_output("display_data", data={"text/html": html_text, "text/plain": caption})]
    if video.preview is not None:
        outputs.append(new_output("display_data", data={
            "image/png": base64.b64encode(video.preview).decode("ascii"),
            "text/plain": f"animated preview of episode {video.episode}"}))
    cell = new_code_cell(source, id=f"episode-{video.episode}", outputs=outputs)
    cell.metadata["tags"] = ["skip-execution"]
    return cell


def _linked_html(video: ReportVideo, caption: str) -> str:
    src = html.escape(video.name)
    size_attr = f' width="{int(video.width)}"' if video.width else ""
    return (f'<figure class="torchrl-render-video" style="margin:0.5em 0"><video controls loop muted playsinline '
            f'preload="metadata"{size_attr}><source src="{src}" type="video/mp4"/></video>'
            f"<figcaption>{html.escape(caption)}</figcaption>{_linked_note(video)}</figure>")


def _short_spec(spec: object) -> object:
    """``/a/long/path/policy.py:make`` -> ``policy.py:make`` (a heading must fit the page; the config cell has all)."""
    if not isinstance(spec, str) or ":" not in spec:
        return spec
    target, _, attr = spec.rpartition(":")
    return f"{Path(target).name}:{attr}" if target.endswith(".py") else spec


def _linked_note(video: ReportVideo) -> str:
    left, limit = video.budget_left, video.limit_bytes
    if left is not None and limit is not None and video.size <= limit:  # it alone fits: the earlier ones used it
        why = (f"this video is {fmt_size(video.size)}, and the videos embedded before it already use "
               f"{fmt_size(limit - left)} of the {fmt_size(limit)} embedding limit of this report "
               "(the limit is for all videos together)")
    else:
        why = f"this video is {fmt_size(video.size)}, over the {fmt_size(limit)} embedding limit of this report"
    return (f'<p style="font-size:90%">Not embedded: {html.escape(why)}, so it is linked: '
            f'<a href="{html.escape(video.name)}">{html.escape(video.name)}</a> beside the notebook. It plays in '
            "Jupyter while that file stays beside the notebook; GitHub and nbviewer cannot play it.</p>")


def equivalent_command(config: Mapping[str, object], prog: str = "torchrl-render") -> str:
    """A command line that reproduces ``config`` (its fields that differ from the defaults).

    Example:
        >>> equivalent_command({"policy": "m:p", "env": "Hopper-v5", "num_trajs": 2, "overlay": True})
        'torchrl-render --policy m:p --env Hopper-v5 --num-trajs 2 --overlay'
    """
    fields = {f.name: f for f in dataclasses.fields(RenderConfig)}
    out = config.get("out")
    implied = WRITERS.for_suffix(out) if isinstance(out, (str, os.PathLike)) and out else None
    args = [prog]
    for name, value in config.items():
        f = fields.get(name)
        if f is None or value == _default_of(f) or (name == "format" and value == implied) or name in _UNRECORDED:
            continue
        flag = "--" + f.metadata.get("flag", name).replace("_", "-")
        if isinstance(value, bool):
            args.append(flag if value else "--" + f.metadata.get("negative", "no-" + f.metadata.get("flag", name))
                        .replace("_", "-"))
        elif value is not None:
            text = (",".join(value) if isinstance(value, list) else json.dumps(value) if isinstance(value, dict)
                    else str(value))
            args += [flag, shlex.quote(text)]
    return " ".join(args)


# -- helpers ------------------------------------------------------------------------------------

#: Fields that change how a run is shown, not what it computes (--quiet sets progress=False: not typed, not shown).
_UNRECORDED = ("progress",)

def _default_of(f: dataclasses.Field[object]) -> object:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def _episode_caption(video: ReportVideo) -> str:
    m = video.metrics
    bits = [f"Episode {video.episode}"]
    if m is not None:
        if m.get("seed") is not None:
            bits.append(f"seed {m['seed']}")
        if m.get("length") is not None:
            bits.append(f"{m['length']} steps")
        if m.get("sum_reward") is not None:
            bits.append(f"return {fmt_cell(float(m['sum_reward']))}")
        if m.get("success") is not None:
            bits.append("success" if m["success"] else "failure")
    if video.name:
        bits.append(f"{fmt_size(video.size)} mp4")
    reason = m.get("render_reason") if m is not None else None
    if reason:  # chosen with --render-select (worst 1 of 3, ...)
        bits.append(f"chosen: {reason}")
    rerun = m.get("rerun") if m is not None else None
    if rerun:  # the filmed re-run did not reproduce the first pass
        bits.append(f"the video shows a re-run with return {fmt_cell(float(rerun['sum_reward']))}, "
                    f"{rerun['length']} steps")
    return ", ".join(bits)
