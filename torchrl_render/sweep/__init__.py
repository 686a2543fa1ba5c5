"""Sweeps: many checkpoints x many tasks, resumable episode by episode, on one machine or a Ray cluster.

- :mod:`.grid`: :class:`SweepConfig` (validated once) and its cells.
- :mod:`.store`: ``manifest.json`` and the append-only ``episodes.jsonl``.
- :mod:`.driver`: :func:`sweep`, :class:`SweepResult` and :class:`SweepFailedError`.
- :mod:`.local`, :mod:`.ray_exec`: the executors; :mod:`.work`: one work unit.
- :mod:`.watch`: ``--watch``, new checkpoints as training writes them; :mod:`.tracking`: ``--logger``.
- :mod:`.report`, :mod:`.html`, :mod:`.notebook`: ``eval_info.json`` and the report.
- :mod:`.cli`: the ``sweep`` and ``sweep-status`` subcommands.
"""

from __future__ import annotations

from .driver import SweepFailedError, SweepResult, sweep
from .grid import SweepConfig
from .local import WorkerStartError

__all__ = ["SweepConfig", "SweepFailedError", "SweepResult", "WorkerStartError", "sweep"]
