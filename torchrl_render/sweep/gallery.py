"""A sweep's gallery: per cell, the episodes ``--render-select`` chose from the cell's recorded numbers.

With a selection other than ``first:N`` (``worst:3``, ``failed:5``...) a sweep's blocks only measure
(:func:`~torchrl_render.sweep.work.block_config` sends them to the json format); once a cell has
every episode recorded, the driver films its chosen episodes here, one run each, seeded as the cell
seeded them (``seed + episode_ix``), so the gallery of a checkpoint shows its failures. Each film is
checked against the recorded return and length (to the bit) and recorded as one ``gallery`` line
in ``episodes.jsonl``; a resumed sweep films only cells without one.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..api import render_policy
from ..config import RenderConfig
from ..contracts import EpisodeMetrics, UserValue
from ..selection import Selector, choose, needs_two_passes, parse_selectors, reconcile
from ..writers import WRITERS
from .grid import Cell
from .precision import settled
from .store import GalleryEntry, Record

if TYPE_CHECKING:
    from .report import EvalInfo  # the report imports this module

__all__ = ["film_galleries", "galleries", "gallery_html", "selection_of"]


def selection_of(base: Mapping[str, UserValue]) -> tuple[Selector, ...] | None:
    """The sweep's selectors when they need the cells' numbers (a gallery after the cell), else None."""
    selectors = parse_selectors(base.get("render_select"))
    return selectors if needs_two_passes(selectors) else None


def film_galleries(base: Mapping[str, UserValue], out: Path, cells: Iterable[Cell], records: Sequence[Record],
                   append: Callable[[Record], None]) -> None:
    """Films the chosen episodes of every complete cell that has no gallery yet; ``append`` records each."""
    selectors = selection_of(base)
    if selectors is None:
        return
    filmed = {r["cell"] for r in records if r["kind"] == "gallery"}
    episodes: dict[str, list[EpisodeMetrics]] = {}
    for r in records:
        if r["kind"] == "episode":
            episodes.setdefault(r["cell"], []).append(r["metrics"])
    for cell in cells:
        done = sorted(episodes.get(cell.id, []), key=lambda m: m["episode_ix"])
        if cell.id in filmed or not settled(base, cell, done):
            continue
        chosen = choose(selectors, done)
        entries = [_film(base, out, cell, done[ix], why) for ix, why in chosen]
        append({"kind": "gallery", "cell": cell.id, "selectors": [str(s) for s in selectors], "episodes": entries})


def _film(base: Mapping[str, UserValue], out: Path, cell: Cell, recorded: EpisodeMetrics, why: str) -> GalleryEntry:
    """One chosen episode, re-run alone by its seed into the cell's gallery folder."""
    ix = recorded["episode_ix"]
    fmt = base.get("format") or "mp4"
    if not WRITERS.entry(fmt).needs_frames:
        fmt = "mp4"
    suffix = WRITERS.entry(fmt).suffixes[0] if WRITERS.entry(fmt).suffixes else "_frames"
    folder = Path(out) / "cells" / cell.id / "gallery"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"ep{ix:04d}{suffix}"
    fields: dict[str, object] = {
        **base, "env": cell.spec, "ckpt": cell.ckpt, "format": fmt, "out": str(path), "overwrite": True,
        "progress": False, "num_trajs": 1, "num_envs": 1, "seed": None if cell.seed is None else cell.seed + ix,
        "render_select": [], "max_episodes_rendered": None, "eval_n_timesteps": None,
        "precision": None, "return_bounds": None,
        "logger": None}  # the sweep logs each whole cell itself (tracking.py)
    result = render_policy(RenderConfig.from_dict(fields), command=["torchrl-render", "sweep", "gallery", cell.id])
    rerun: EpisodeMetrics = {**result.metrics["per_episode"][0], "episode_ix": ix}
    merged = reconcile(recorded, rerun, why)
    entry: GalleryEntry = {"episode_ix": ix, "seed": recorded["seed"], "reason": why, "path": str(path),
             "sum_reward": recorded["sum_reward"], "length": recorded["length"], "success": recorded.get("success"),
             "num_frames": merged["num_frames"], "reproduced": merged["reproduced"]}
    if "rerun" in merged:
        entry["rerun"] = merged["rerun"]
    return entry


def galleries(records: Sequence[Record], relative: Callable[[str], str]) -> dict[str, list[GalleryEntry]]:
    """``eval_info.json``'s ``galleries``: cell id -> its filmed episodes (paths made ``relative``)."""
    out: dict[str, list[GalleryEntry]] = {}
    for r in records:
        if r["kind"] == "gallery":
            out[r["cell"]] = [{**e, "path": relative(e["path"])} for e in r["episodes"]]
    return out


def gallery_html(info: EvalInfo) -> str:
    """The report's gallery: per checkpoint x task, each chosen episode with why it was chosen."""
    chosen = info.get("galleries") or {}
    if not chosen:
        return ""
    parts = ["<h2>Chosen episodes (--render-select)</h2>"]
    for entry in info["per_checkpoint"]:
        for task, c in entry["per_task"].items():
            items = chosen.get(c.get("cell"))
            if not items:
                continue
            figures = "".join(_figure(e) for e in items)
            caption = f"{html.escape(Path(entry['checkpoint']).name)} &times; {html.escape(task)}"
            parts.append(f"<div class=gallery><h3>{caption}</h3>{figures}</div>")
    return "".join(parts)


def _figure(e: GalleryEntry) -> str:
    path = html.escape(e["path"])
    media = f'<video controls muted width=240 src="{path}"></video>' if path.endswith(".mp4") else \
        f'<img width=240 src="{path}">' if path.endswith(".gif") else f'<a href="{path}">{path}</a>'
    words = f"episode {e['episode_ix']} (seed {e['seed']}): {e['reason']}; return {e['sum_reward']:.4g}, " \
            f"{e['length']} steps"
    if not e["reproduced"]:
        words += f"; the film is a re-run that differed (return {e['rerun']['sum_reward']:.4g})"
    return f"<figure>{media}<figcaption>{html.escape(words)}</figcaption></figure>"
