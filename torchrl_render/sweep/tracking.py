"""A sweep's ``--logger``: each finished cell's aggregates and videos at its checkpoint's training step.

The workers run with no logger (a block is only a part of a cell); the driver opens one logger for the
sweep (:class:`torchrl_render.loggers.EvalLogger`, in ``<out>/logs`` unless ``--logger-dir``), logs the
sweep's config as hparams, and each cell once all its episodes are recorded, from ``eval_info.json``.
Tags carry the task's name when the sweep has several tasks, and the run's when it has several runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from ..loggers import EvalLogger, scalars
from .grid import Cell, SweepConfig

__all__ = ["log_cell", "open_tracker"]


def open_tracker(cfg: SweepConfig, echo: Callable[[str], None]) -> EvalLogger | None:
    """The sweep's logger (None without ``--logger``); its notes (W&B offline) are echoed."""
    base = cfg.base
    if not base.get("logger"):
        return None
    tracker = EvalLogger(base["logger"], base.get("logger_dir") or cfg.out_dir / "logs",
                         base.get("exp_name") or cfg.out_dir.resolve().name, base.get("logger_project"),
                         fps=base.get("fps") or 30.0)
    tracker.log_hparams(cfg.to_dict())
    for note in tracker.notes:
        echo(note)
    return tracker


def log_cell(tracker: EvalLogger, cfg: SweepConfig, cell: Cell, resumed: bool = False) -> None:
    """A finished cell's videos and aggregates (as ``eval_info.json`` has them).

    ``resumed``: an earlier session began logging the cell and may have been killed after the logger wrote some
    or all of it (before the ledger said so). What the logger's files hold at the cell's step is not logged
    again (:meth:`EvalLogger.on_disk`); the videos go first, so a cell with a scalar on disk has its videos there.
    """
    info = json.loads((cfg.out_dir / "eval_info.json").read_text(encoding="utf-8"))
    entry = next(e for e in info["per_checkpoint"] if e["checkpoint"] == cell.ckpt and e["run"] == cell.run)
    agg = entry["per_task"][cell.task]
    parts = ([cell.run] if len(cfg.run) > 1 else []) + ([cell.task] if len(cfg.tasks) > 1 else [])
    tag = "/".join(parts) or None
    have = (tracker.on_disk(cell.step) or set()) & set(scalars(agg, tag)) if resumed else set()
    if not have:
        tracker.log_videos([cfg.out_dir / v for v in agg.get("video_paths", [])], cell.step, tag)
    tracker.log_eval(agg, cell.step, tag, have=have)
