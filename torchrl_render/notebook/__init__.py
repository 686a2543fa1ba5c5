"""Notebooks: the HTML Jupyter shows for results, artifacts and videos, and the report notebook.

Pure functions build the HTML that Jupyter shows for a :class:`~torchrl_render.RenderResult`
(its videos and the metrics table) and for an :class:`~torchrl_render.Artifact`;
:func:`show` is the one with a side effect (it displays when IPython runs).
The builders live in :mod:`.display` (re-exported here); the ``.ipynb`` report is built in
:mod:`.report` (its cells in :mod:`.report_cells`, its paths in :mod:`.paths`) and run by
:mod:`.kernel`; executing and writing it is the ipynb writer's job (:mod:`torchrl_render.writers.ipynb`).

Videos are embedded as base64 ``data:`` URIs up to a size limit (:data:`EMBED_LIMIT_BYTES`
by default, for all the videos of one output together); a video over the limit is
linked by its path instead, and the HTML says so.

Example:
    >>> html = video_html(b"\\x00\\x00\\x00\\x18ftypmp42", caption="episode 0")
    >>> html.startswith("<figure") and "data:video/mp4;base64,AAAAGGZ0eXBtcDQy" in html
    True
    >>> print(metrics_markdown({"aggregated": {"n_episodes": 1, "avg_sum_reward": 2.5}, "per_episode": []})
    ...       .splitlines()[2])
    | episodes | 1 |
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from ..contracts import Json
from ..data import RenderResult, RunMetrics, register_display
from ..storage import atomic_path
from .display import (
    EMBED_LIMIT_BYTES,
    Media,
    artifact_html,
    artifact_mimebundle,
    display_width,
    metrics_html,
    metrics_markdown,
    result_html,
    result_mimebundle,
    result_text,
    show,
    video_html,
    viewer_html,
)
from .paths import asset_folder, portable_config, relative
from .report import ReportVideo, build_report, equivalent_command

if TYPE_CHECKING:
    from ..config import RenderConfig

# the Jupyter display of RenderResult and Artifact (data.py sits below this package in the layers)
register_display(artifact_html=artifact_html, artifact_mimebundle=artifact_mimebundle, result_html=result_html,
                 result_mimebundle=result_mimebundle)

__all__ = ["EMBED_LIMIT_BYTES", "Media", "artifact_html", "artifact_mimebundle", "build_notebook", "display_width",
           "metrics_html", "metrics_markdown", "result_html", "result_mimebundle", "result_text", "show", "video_html",
           "viewer_html", "write_render_notebook"]


def build_notebook(result: RenderResult, config: RenderConfig) -> dict[str, Json]:
    """torchrl.render's notebook builder: the report notebook of ``result`` (not executed), as JSON-ready ``dict``.

    Its cells are the report's (:func:`torchrl_render.notebook.report.build_report`): the run's mp4 artifacts are
    embedded while they fit the embedding limit; the asset folder is ``config``'s.
    """
    import nbformat

    videos, budget = [], EMBED_LIMIT_BYTES
    for i, path in enumerate(p for p in map(Path, result.frame_paths) if p.suffix.lower() == ".mp4" and p.is_file()):
        size = path.stat().st_size
        fits = size <= budget
        budget -= size if fits else 0
        videos.append(ReportVideo(i, path.name, size, path.read_bytes() if fits else None))
    # duck-typed as torchrl.render's builder is: its RenderConfig has no out_path, its RenderResult no metrics
    out = Path(config.out) if config.out is not None else config.out_path
    metrics: RunMetrics = getattr(result, "metrics", None) or RunMetrics()
    assets = asset_folder(out, config)
    nb = build_report(config=portable_config(config), metrics=metrics,
                      videos=videos, mode=config.notebook_rollout_mode, command=equivalent_command(config.to_dict()),
                      assets=(relative(assets, out.parent), str(assets.absolute())))
    return json.loads(nbformat.writes(nb))


def write_render_notebook(result: RenderResult, config: RenderConfig, path: str | Path) -> Path:
    """Writes :func:`build_notebook`'s notebook to ``path`` (not executed); returns ``path``."""
    path = Path(path)
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(build_notebook(result, config), indent=1, ensure_ascii=False) + "\n",
                       encoding="utf-8")
    return path
