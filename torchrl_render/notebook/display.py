"""The HTML Jupyter shows for results, artifacts and videos, and :func:`show`.

Pure functions build the HTML of a :class:`~torchrl_render.RenderResult` (its videos and the metrics
table) and of an :class:`~torchrl_render.Artifact`; :func:`show` and :func:`display_page` are the ones with
a side effect (they display when IPython runs). The report notebook reuses these builders.
"""

from __future__ import annotations

import base64
import html
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, SupportsInt

from ..data import Artifact, MimeTypes, RenderResult, RunMetrics
from ..errors import ConfigError

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.display import DisplayHandle

__all__ = ["EMBED_LIMIT_BYTES", "MAX_TABLE_ROWS", "HasPath", "Media", "artifact_html", "artifact_mimebundle",
           "display_page", "display_width", "fmt_cell", "fmt_size", "metrics_html", "metrics_markdown", "page_iframe",
           "result_html", "result_mimebundle", "result_text", "show", "video_html", "viewer_html"]

EMBED_LIMIT_BYTES = 20 * 2**20
"""Default cap on the video bytes embedded in one output or one report notebook (20 MiB)."""
MAX_TABLE_ROWS = 100
_MIME = {".mp4": "video/mp4", ".m4v": "video/mp4", ".webm": "video/webm", ".gif": "image/gif",
         ".png": "image/png", ".apng": "image/apng"}
_VIDEO_FORMATS = ("mp4", "gif")
_PLAYABLE = (".mp4", ".m4v", ".webm", ".gif")
_SUMMARY = (("n_episodes", "episodes"), ("avg_sum_reward", "mean return"), ("std_sum_reward", "std return"),
            ("min_sum_reward", "min return"), ("median_sum_reward", "median return"),
            ("max_sum_reward", "max return"), ("ci95_sum_reward", "95% CI of the mean return"),
            ("pc_success", "success rate (%)"), ("avg_length", "mean length"), ("eval_s", "wall time (s)"))
_COLUMNS = (("episode_ix", "episode"), ("seed", "seed"), ("sum_reward", "return"), ("length", "length"),
            ("max_reward", "max reward"), ("success", "success"), ("terminated", "terminated"),
            ("truncated", "truncated"), ("num_frames", "frames"))


# -- HTML builders (pure) -----------------------------------------------------------------------

def video_html(source: str | Path | bytes, *, mime: str | None = None, embed: bool = True,
               limit_bytes: int | None = EMBED_LIMIT_BYTES, width: int | None = None, caption: str | None = None,
               link: str | None = None) -> str:
    """HTML that plays a video (``<video>``) or a GIF (``<img>``).

    Args:
        source: A file path, or the file's bytes (always embedded).
        mime: ``video/mp4`` or ``image/gif``...; from the suffix when ``None`` (bytes: mp4).
        embed: Embed a file's bytes as a base64 ``data:`` URI when it fits ``limit_bytes``.
        limit_bytes: Largest file embedded (``None``: no limit); a larger one is linked and the HTML says so.
        width: Display width in CSS pixels (default: the video's own).
        caption: Text under the video.
        link: The URL used when the file is linked (default: its path relative to the working directory).
    """
    note = ""
    if isinstance(source, (bytes, bytearray, memoryview)):
        src = _data_uri(bytes(source), mime or "video/mp4")
        mime = mime or "video/mp4"
    else:
        path = Path(source)
        mime = mime or _MIME.get(path.suffix.lower(), "video/mp4")
        size = path.stat().st_size
        if embed and (limit_bytes is None or size <= limit_bytes):
            src = _data_uri(path.read_bytes(), mime)
        else:
            src = link or _relative_link(path)
            why = (f"it is {fmt_size(size)}, over the {fmt_size(limit_bytes)} embedding limit" if embed
                   else "linking was asked")
            note = (f'<p style="font-size:90%">Not embedded ({why}): it plays from '
                    f'<a href="{html.escape(src)}">{html.escape(src)}</a> while that file stays beside this '
                    "page; viewers of the notebook alone (GitHub, nbviewer) cannot play it.</p>")
    size_attr = f' width="{int(width)}"' if width else ""
    if mime.startswith("image/"):
        media = f'<img src="{html.escape(src)}"{size_attr} alt="{html.escape(caption or "animation")}"/>'
    else:
        media = (f'<video controls loop muted playsinline preload="metadata"{size_attr}>'
                 f'<source src="{html.escape(src)}" type="{mime}"/>Your browser cannot play this video.</video>')
    cap = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
    return f'<figure class="torchrl-render-video" style="margin:0.5em 0">{media}{cap}{note}</figure>'


def viewer_html(page: str, *, height: int = 560) -> str:
    """A 3-D replay page (the ``html`` format) in a sandboxed ``<iframe srcdoc>``: scripts only, no network."""
    return (f'<iframe class="torchrl-render-replay" sandbox="allow-scripts" style="width:100%;height:{int(height)}px;'
            f'border:0" srcdoc="{html.escape(page, quote=True)}"></iframe>')


def artifact_html(artifact: Artifact, *, limit_bytes: int | None = EMBED_LIMIT_BYTES) -> str:
    """HTML for one artifact: an mp4/gif plays inline, an html replay in an iframe; else a one-line description."""
    path = Path(artifact.path)
    if artifact.format == "html" and path.is_file() and (limit_bytes is None or path.stat().st_size <= limit_bytes):
        return viewer_html(path.read_text(encoding="utf-8")) + f"<p>{html.escape(_artifact_caption(artifact))}</p>"
    if artifact.format in _VIDEO_FORMATS and path.is_file():
        return video_html(path, limit_bytes=limit_bytes, caption=_artifact_caption(artifact),
                          width=display_width(artifact.info))
    return f"<p>{html.escape(_artifact_caption(artifact))}</p>"


def metrics_html(metrics: RunMetrics, *, max_rows: int = MAX_TABLE_ROWS) -> str:
    """The aggregate numbers and the per-episode table as HTML tables."""
    agg: Mapping[str, object] = metrics.get("aggregated") or {}  # read by the names of _SUMMARY
    rows = "".join(f"<tr><th style='text-align:left'>{html.escape(label)}</th><td>{html.escape(fmt_cell(agg[key]))}"
                   "</td></tr>" for key, label in _SUMMARY if agg.get(key) is not None)
    out = f"<table class='torchrl-render-summary'>{rows}</table>" if rows else ""
    episodes = metrics.get("per_episode") or []
    if episodes:
        head = "".join(f"<th>{html.escape(label)}</th>" for _, label in _COLUMNS)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(fmt_cell(e.get(key)))}</td>" for key, _ in _COLUMNS)
                       + "</tr>" for e in episodes[:max_rows])
        more = (f"<p>... and {len(episodes) - max_rows} more episodes (all of them are in the metadata "
                "sidecar).</p>") if len(episodes) > max_rows else ""
        out += f"<table class='torchrl-render-episodes'><tr>{head}</tr>{body}</table>{more}"
    return out


def metrics_markdown(metrics: RunMetrics, *, max_rows: int = MAX_TABLE_ROWS) -> str:
    """The same tables as :func:`metrics_html`, in Markdown (renders without a kernel)."""
    agg: Mapping[str, object] = metrics.get("aggregated") or {}  # read by the names of _SUMMARY
    lines = ["| metric | value |", "|:--|--:|"]
    lines += [f"| {label} | {fmt_cell(agg[key])} |" for key, label in _SUMMARY if agg.get(key) is not None]
    episodes = metrics.get("per_episode") or []
    if episodes:
        lines += ["", "| " + " | ".join(label for _, label in _COLUMNS) + " |",
                  "|" + "--:|" * len(_COLUMNS)]
        lines += ["| " + " | ".join(fmt_cell(e.get(key)) for key, _ in _COLUMNS) + " |" for e in episodes[:max_rows]]
        if len(episodes) > max_rows:
            lines += ["",
                      f"... and {len(episodes) - max_rows} more episodes (all of them are in the metadata sidecar)."]
    return "\n".join(lines)


def result_html(result: RenderResult, *, limit_bytes: int | None = EMBED_LIMIT_BYTES) -> str:
    """HTML for a :class:`RenderResult`: its videos (sharing ``limit_bytes``), the metrics, the notes."""
    parts, budget = [], limit_bytes
    others = []
    for artifact in result.artifacts:
        path = Path(artifact.path)
        if artifact.format in (*_VIDEO_FORMATS, "html") and path.is_file():
            size = path.stat().st_size
            parts.append(artifact_html(artifact, limit_bytes=budget))
            if budget is not None and size <= budget:
                budget -= size
        else:
            others.append(f"<li>{html.escape(_artifact_caption(artifact))}</li>")
    if others:
        parts.append(f"<p>Other artifacts:</p><ul>{''.join(others)}</ul>")
    if result.metrics:
        parts.append(metrics_html(result.metrics))
    if result.warnings:
        notes = "".join(f"<li>{html.escape(str(w))}</li>" for w in result.warnings)
        parts.append(f"<details><summary>{len(result.warnings)} note(s)</summary><ul>{notes}</ul></details>")
    if not parts:
        parts.append(f"<p>{html.escape(result_text(result))}</p>")
    return "<div class='torchrl-render-result'>" + "".join(parts) + "</div>"


def result_text(result: RenderResult) -> str:
    """A one-line plain-text summary of a :class:`RenderResult` (its ``text/plain`` form)."""
    agg: Mapping[str, object] = (result.metrics or {}).get("aggregated") or {}
    head = f"RenderResult({result.artifact_path}" if result.artifact_path else "RenderResult(no artifact"
    if agg.get("n_episodes"):
        head += (f"; {agg['n_episodes']} episode(s), mean return {fmt_cell(agg.get('avg_sum_reward'))}"
                 f" +- {fmt_cell(agg.get('std_sum_reward'))}")
    return head + ")"


def result_mimebundle(result: RenderResult, include: MimeTypes = None, exclude: MimeTypes = None) -> dict[str, str]:
    """``_repr_mimebundle_`` of a :class:`RenderResult`: ``text/html`` and a short ``text/plain``."""
    return {"text/html": result_html(result), "text/plain": result_text(result)}


def artifact_mimebundle(artifact: Artifact, include: MimeTypes = None, exclude: MimeTypes = None) -> dict[str, str]:
    """``_repr_mimebundle_`` of an :class:`Artifact`."""
    return {"text/html": artifact_html(artifact), "text/plain": f"Artifact({_artifact_caption(artifact)})"}


# -- display (side effect) ----------------------------------------------------------------------

class HasPath(Protocol):
    """A file :func:`show` plays, given as an object with its path: an :class:`Artifact`, a :class:`Media`."""

    @property
    def path(self) -> str | Path: ...


class Media:
    """A playable file for notebooks: what :func:`show` returns.

    Args:
        path: An ``.mp4`` or ``.gif`` file.
        limit_bytes: Largest file embedded; a larger one is linked.
        width: Display width in CSS pixels.
    """

    def __init__(self, path: str | Path, *, limit_bytes: int | None = EMBED_LIMIT_BYTES,
                 width: int | None = None) -> None:
        self.path = Path(path)
        self.limit_bytes, self.width = limit_bytes, width
        self._shown_in: int | None = None  # execution count of the cell whose show() already displayed it

    def _repr_html_(self) -> str:
        return video_html(self.path, limit_bytes=self.limit_bytes, width=self.width, caption=self.path.name)

    def _repr_mimebundle_(self, include: MimeTypes = None, exclude: MimeTypes = None) -> dict[str, str]:
        return {"text/html": self._repr_html_(), "text/plain": f"Media({str(self.path)!r})"}

    def _ipython_display_(self) -> None:
        shell = _ipython()
        count = getattr(shell, "execution_count", None)
        if self._shown_in is not None and self._shown_in == count:
            self._shown_in = None  # show() displayed it in this cell already: not twice
            return
        from IPython.display import display

        display(self._repr_mimebundle_(), raw=True)

    def __repr__(self) -> str:
        return f"Media({str(self.path)!r})"


def show(source: str | os.PathLike[str] | HasPath, *, limit_bytes: int | None = EMBED_LIMIT_BYTES,
         width: int | None = None) -> Media:
    """Plays an mp4 or GIF (a path or an :class:`Artifact`) in Jupyter; returns the :class:`Media`.

    In an IPython session the video is displayed at once (once, even as a cell's last line);
    elsewhere nothing is shown and the returned object's ``_repr_html_`` gives the HTML.

    Example:
        >>> import tempfile, pathlib
        >>> gif = pathlib.Path(tempfile.mkdtemp()) / "a.gif"
        >>> _ = gif.write_bytes(b"GIF89a")
        >>> show(gif)._repr_html_().count("data:image/gif;base64,")
        1
    """
    path = Path(source if isinstance(source, (str, os.PathLike)) else source.path)
    if not path.is_file() or path.suffix.lower() not in _PLAYABLE:
        state = "missing" if not path.exists() else "not a file" if not path.is_file() else "not an mp4 or gif"
        raise ConfigError(f"show() cannot play {str(path)!r}", expected="an existing .mp4 or .gif file",
                          got=f"{path} ({state})", fix="pass the path of an mp4 or gif artifact (result.artifact_path)")
    media = Media(path, limit_bytes=limit_bytes, width=width)
    shell = _ipython()
    if shell is not None:
        from IPython.display import display

        display(media._repr_mimebundle_(), raw=True)
        media._shown_in = getattr(shell, "execution_count", None)
    return media


def page_iframe(url: str, *, width: str = "100%", height: int = 560) -> str:
    """An ``<iframe>`` of a served page (the live page, the MuJoCo viewer); ``url`` carries its token."""
    return (f'<iframe class="torchrl-render-live" src="{html.escape(url, quote=True)}" '
            f'style="width:{html.escape(str(width), quote=True)};height:{int(height)}px;border:0"></iframe>')


def display_page(url: str, *, width: str = "100%", height: int = 560) -> DisplayHandle | None:
    """In a Jupyter kernel, displays a served page in an iframe and returns the display handle; else ``None``.

    The handle lets the caller replace the iframe when the server stops (``handle.update(...)``),
    so that a saved notebook does not keep an iframe of a server that is gone.
    """
    shell = _ipython()
    if shell is None or not hasattr(shell, "kernel"):
        return None
    from IPython.display import HTML, display

    return display(HTML(page_iframe(url, width=width, height=height)), display_id=True)


def _ipython() -> InteractiveShell | None:
    if "IPython" not in sys.modules:
        return None
    from IPython import get_ipython

    return get_ipython()


# -- helpers ------------------------------------------------------------------------------------

def _data_uri(data: bytes, mime: str) -> str:
    return f"data:{mime};base64," + base64.b64encode(data).decode("ascii")


def _relative_link(path: Path) -> str:
    try:
        return Path(os.path.relpath(path.resolve(), Path.cwd())).as_posix()
    except ValueError:  # another drive (Windows)
        return path.resolve().as_uri()


def fmt_size(size: int | None) -> str:
    """A file size for a table cell: ``"1.5 MiB"``, ``"12 KiB"``, ``"no"`` for None (nothing embedded)."""
    if size is None:
        return "no"
    return f"{size / 2**20:.1f} MiB" if size >= 2**20 else f"{max(1, round(size / 1024))} KiB"


def fmt_cell(value: object) -> str:
    """A metric for a table cell: ``"-"`` for None, yes/no for booleans, 4 significant digits for floats."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(fmt_cell(v) for v in value) + "]"
    return str(value)


def _artifact_caption(artifact: Artifact) -> str:
    info = artifact.info or {}
    bits = [str(artifact.path), artifact.format]
    if artifact.num_frames:
        bits.append(f"{artifact.num_frames} frames")
    if info.get("width") and info.get("height"):
        bits.append(f"{info['width']}x{info['height']}")
    return " - ".join(bits)


def display_width(info: Mapping[str, object] | None) -> int | None:
    """The CSS width a video of ``info["width"]`` pixels is shown at: its own, within 320-640."""
    width = (info or {}).get("width")
    return min(max(int(width), 320), 640) if isinstance(width, (str, SupportsInt)) and width else None
