"""One work unit: a contiguous block of a cell's episodes, run through :func:`render_policy`.

A unit is a plain dict (it crosses process and machine boundaries): the cell, the first
episode ``start`` and the ``count`` of episodes, the shared base config and the sweep folder.
Episodes ``start .. start+count-1`` of a cell seeded ``seed`` are exactly a single run seeded
``seed + start`` with ``num_trajs=count``, whose episode ``j`` is the cell's ``start + j``.
Each worker builds its own env and policy (``render_policy`` does), so no policy is shared.

Messages sent back (``send`` is a pipe, a queue or a Ray generator's yield): ``episode`` (one
finished episode, its metrics under the names a single run uses), then ``done`` (the files
written) or ``error`` (what the env, policy or config raised).
"""

from __future__ import annotations

import os
import socket
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Literal, NotRequired, TypedDict

from ..api import render_policy
from ..config import RenderConfig
from ..contracts import EpisodeMetrics, UserValue
from ..selection import needs_two_passes, only_first, parse_selectors
from ..writers import WRITERS
from .grid import CellDict

__all__ = ["Block", "DoneMessage", "EpisodeMessage", "ErrorMessage", "LostMessage", "Message", "StartedMessage", "Unit",
           "block_config", "run_unit"]


class Block(TypedDict):
    """Episodes ``start .. start+count-1`` of a cell, in the ``attempt``-th run of them."""

    start: int
    count: int
    attempt: int


class Unit(Block):
    """A work unit as it crosses to a worker: its id, the cell, the sweep's shared RenderConfig fields (the user's,
    as ``SweepConfig.base`` holds them), the sweep folder, and whether the block is one of ``--separate``'s pair."""

    id: str
    cell: CellDict
    base: dict[str, UserValue]
    out: str
    separate: bool


class StartedMessage(TypedDict):
    """A local worker has started (imported what it needs)."""

    type: Literal["started"]


class EpisodeMessage(TypedDict):
    """One finished episode of the unit, its index the cell's."""

    type: Literal["episode"]
    unit: str
    episode_ix: int
    seed: int | None
    metrics: EpisodeMetrics
    worker: str
    pid: int


class ErrorMessage(TypedDict):
    """The unit raised (the cell's env, policy or config)."""

    type: Literal["error"]
    unit: str
    error: str
    traceback: str
    worker: str
    pid: int


class DoneMessage(TypedDict):
    """The unit finished: the files it wrote."""

    type: Literal["done"]
    unit: str
    paths: list[str]
    wall_s: float
    warnings: list[str]
    worker: str
    pid: int


class LostMessage(TypedDict):
    """The executor's word that the unit's worker died before it finished (the driver retries)."""

    type: Literal["lost"]
    unit: str
    error: str
    pid: NotRequired[int | None]


#: What the driver hears of a unit.
Message = EpisodeMessage | ErrorMessage | DoneMessage | LostMessage


def block_config(unit: Unit) -> RenderConfig:
    """The RenderConfig of a unit: the cell's config, shifted to its first episode."""

    cell, base, start, count = unit["cell"], unit["base"], unit["start"], unit["count"]
    fmt = base.get("format") or "mp4"
    fields: dict[str, object] = {"num_trajs": count, "num_envs": min(int(base.get("num_envs", 1)), count),
                              "seed": None if cell["seed"] is None else cell["seed"] + start}
    selectors = parse_selectors(base.get("render_select"))
    limit = only_first(selectors) if selectors else base.get("max_episodes_rendered")
    rendered = count if limit is None else max(0, min(count, limit - start))
    if unit.get("separate"):  # --separate's pair runs fixed blocks in lockstep: the pair decides when to stop
        fields["precision"], fields["return_bounds"] = None, None
    fields["max_episodes_rendered"], fields["render_select"] = rendered, []
    if needs_two_passes(selectors):  # chosen from the whole cell's numbers: filmed after it (gallery.py)
        rendered, fmt = 0, "json"
    if rendered == 0 and WRITERS.entry(fmt).needs_frames:
        fmt = "json"  # nothing to film in this block: its metrics alone (no frames, no stored steps)
    entry = WRITERS.entry(fmt)
    name = f"ep{start:04d}-{start + count - 1:04d}" + (entry.suffixes[0] if entry.suffixes else "_frames")
    folder = Path(unit["out"]) / "cells" / cell["id"]
    folder.mkdir(parents=True, exist_ok=True)
    return RenderConfig.from_dict({**base, "env": cell["spec"], "ckpt": cell["ckpt"], "format": fmt,
                                   "out": str(folder / name), "overwrite": True, "progress": False, **fields,
                                   "logger": None})  # the driver logs each whole cell (a block is a part of one)


def run_unit(unit: Unit, send: Callable[[Message], None]) -> None:
    """Runs one unit, sending a message per finished episode, then ``done`` or ``error``."""

    start = unit["start"]
    worker = f"{os.getpid()}@{socket.gethostname()}"
    t0 = time.perf_counter()

    def on_episode(ep: EpisodeMetrics) -> None:
        ix = start + ep["episode_ix"]
        send({"type": "episode", "unit": unit["id"], "episode_ix": ix, "seed": ep["seed"],
              "metrics": {**ep, "episode_ix": ix}, "worker": worker, "pid": os.getpid()})

    try:
        cfg = block_config(unit)
        result = render_policy(cfg, on_episode=on_episode, command=["torchrl-render", "sweep", unit["id"]])
    except Exception as exc:  # the cell's env, policy or config: recorded as a failed block
        send({"type": "error", "unit": unit["id"], "error": f"{type(exc).__name__}: {' '.join(str(exc).split())}",
              "traceback": traceback.format_exc(limit=8), "worker": worker, "pid": os.getpid()})
        return
    paths = [str(a.path) for a in result.artifacts]
    send({"type": "done", "unit": unit["id"], "paths": paths, "wall_s": time.perf_counter() - t0,
          "warnings": list(result.warnings), "worker": worker, "pid": os.getpid()})
