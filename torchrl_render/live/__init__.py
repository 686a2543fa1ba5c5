"""Watching a run while it runs: the ``--live`` page, the ``--viewer`` window and the notebook's MuJoCo viewer.

Modules: :mod:`.server` (a loopback HTTP server with server-sent events, a token in the URL),
:mod:`.feed` (a run's steps -> poses and frames on that server: ``--live``), :mod:`.playback`
(qpos trajectories played on a viewer), :mod:`.viewer` (``--viewer``: the run's side) and
:mod:`.windows` (its two windows: MuJoCo's passive viewer, a pygame window), :mod:`.keys` (what
both share), :mod:`.notebook_viewer` (torchrl.render's ``mujoco_wasm`` functions, over the same
server). The page reuses the offline replay's scene export and scripts (:mod:`torchrl_render.replay`).
Nothing here is imported by ``import torchrl_render`` except the notebook viewer's public functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .feed import LiveFeed
from .viewer import Viewer

if TYPE_CHECKING:
    from ..config import RenderConfig

__all__ = ["LiveFeed", "Viewer", "observers"]


def observers(cfg: RenderConfig, makes_frames: bool) -> list[LiveFeed | Viewer]:
    """What watches this run: the ``--live`` page's feed (its server starts here) and the ``--viewer``
    window (it opens at the first step), each when asked for. Both follow :class:`torchrl_render.sink.Observer`
    (the sink, a layer above, checks that where it takes them; this layer may not name it).
    """
    found: list[LiveFeed | Viewer] = []
    if getattr(cfg, "live", None) is not None:
        found.append(LiveFeed(cfg))
    if getattr(cfg, "viewer", None) is not None:
        found.append(Viewer(cfg, makes_frames))
    return found
