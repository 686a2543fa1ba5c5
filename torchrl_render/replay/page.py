"""Assembles the replay page: template + vendored three.js + the page's scripts + the data.

``page.html`` holds three markers (``<!--DATA-->``, ``<!--THREE-->``, ``<!--APP-->``)
that are replaced, in one streaming pass, by the data scripts, the three.js bundle
(``vendor/three.min.js``) and the page's own small scripts (``js/*.js``, in order).
The data are JSON in ``<script type="application/json">`` elements (every ``<`` written ``\\u003c``);
the pose chunks are copied line by line from the writer's temporary file, so the
whole page never sits in memory.

Example:
    >>> import io
    >>> buf = io.StringIO()
    >>> assemble_page(buf, {"title": "t", "fps": 30.0, "facts": {}, "nbody": 1},
    ...               {"bodies": [{"name": "world", "parent": 0}]}, [], io.StringIO(""))
    >>> html = buf.getvalue()
    >>> "default-src 'none'" in html, "window.replay" in html
    (True, True)
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from typing import IO, TYPE_CHECKING, NotRequired, TypedDict

if TYPE_CHECKING:
    from .scene import Scene  # imports mujoco

__all__ = ["PAGE_SCRIPTS", "PageEpisode", "assemble_page", "page_resource"]

#: The page's own scripts, inlined in this order after three.js
PAGE_SCRIPTS = ("decode.js", "view.js", "chart.js", "app.js")


class PageEpisode(TypedDict):
    """One episode as the page lists it: its index, its frame and pose-chunk counts and, once it ended, its
    facts (seed, return, length, success, ...)."""

    episode_ix: int
    frames: int
    chunks: int
    metrics: NotRequired[dict[str, object]]


def page_resource(name: str) -> str:
    """The text of a file shipped in ``torchrl_render/replay`` (``page.html``, ``js/app.js``...)."""
    return resources.files("torchrl_render.replay").joinpath(name).read_text(encoding="utf-8")


def _json(data: object) -> str:
    # in a <script>: no "<" at all (JSON has it only inside strings, where \u003c reads the same), so neither
    # "</script>" nor "<!--" can change how the HTML parser reads the script
    return json.dumps(data, separators=(",", ":"), allow_nan=False, default=_plain).replace("<", "\\u003c")


def _plain(value: object) -> object:
    if hasattr(value, "item"):
        return value.item()
    return str(value)


def _finite(value: object) -> object:
    if (isinstance(value, float) and value != value) or value in (float("inf"), float("-inf")):
        return None
    return value


def _episodes_json(out: IO[str], episodes: Sequence[PageEpisode], chunks: Iterable[str]) -> None:
    out.write('<script type="application/json" id="replay-episodes">[')
    lines = iter(chunks)
    for i, ep in enumerate(episodes):
        facts = {k: _finite(v) for k, v in (ep.get("metrics") or {}).items()}
        head = {"episode_ix": ep["episode_ix"], "frames": ep["frames"], **facts}
        out.write(("," if i else "") + _json(head)[:-1] + ',"chunks":[')
        for c in range(ep["chunks"]):
            out.write(("," if c else "") + '"' + next(lines).strip() + '"')
        out.write("]}")
    out.write("]</script>\n")


def assemble_page(out: IO[str], head: Mapping[str, object], scene: Scene, episodes: Sequence[PageEpisode],
                  chunks: Iterable[str]) -> None:
    """Writes the whole page to ``out``.

    Args:
        out: A text stream.
        head: ``title``, ``fps``, ``facts`` (run-level) and ``nbody``.
        scene: :func:`torchrl_render.replay.scene.export_scene`'s dict.
        episodes: ``{"episode_ix", "frames", "chunks", "metrics"}`` per episode, in order.
        chunks: The encoded pose chunks, one per line, episode after episode.
    """
    template = page_resource("page.html").replace("<!--TITLE-->", html.escape(str(head.get("title", "replay"))))
    before_data, _, rest = template.partition("<!--DATA-->")
    between, _, after_three = rest.partition("<!--THREE-->")
    before_app, _, tail = after_three.partition("<!--APP-->")
    out.write(before_data)
    out.write('<script type="application/json" id="replay-head">' + _json(head) + "</script>\n")
    out.write('<script type="application/json" id="replay-scene">' + _json(scene) + "</script>\n")
    _episodes_json(out, episodes, chunks)
    out.write(between)
    out.write("<script>" + page_resource("vendor/three.min.js").replace("</script", "<\\/script") + "</script>")
    out.write(before_app)
    for name in PAGE_SCRIPTS:
        out.write(f"<script>/* {name} */\n" + page_resource(f"js/{name}") + "</script>\n")
    out.write(tail)
