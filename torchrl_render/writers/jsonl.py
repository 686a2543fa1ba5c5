"""JSON Lines event log, streamed as the run goes.

One JSON object per line, each with a ``type``:

* ``metadata`` (first line): ``format`` ("torchrl_render.jsonl"), ``version``, ``created`` (UTC ISO time),
  ``torchrl_render`` (version), ``action_key``, ``config`` (the run's config, or null).
* ``step`` (one per env step, steps 1..n of each trajectory): ``trajectory``, ``step``, ``reward``,
  ``return`` (so far), ``done``, ``terminated``, ``truncated``, ``action_mean``, ``action_min``,
  ``action_max``, ``action_norm`` (L2), ``action`` (the values, only for actions of at most
  8 entries), ``wall_s`` (seconds since the log was opened).
* ``episode`` (at each episode end): ``trajectory`` and the episode's metrics (``episode_ix``, ``seed``,
  ``sum_reward``, ``max_reward``, ``length``, ``success``, ``terminated``, ``truncated``, ``wall_s``,
  ``num_frames``).
* ``summary`` (last line): ``n_steps``, ``wall_s`` and the aggregate metrics
  (``n_episodes``, ``avg_sum_reward``, ``pc_success``...).

Non-finite numbers are written as ``null`` (strict JSON). Each line goes to the file
in one ``write`` and is flushed at once, so ``pandas.read_json(path, lines=True)``
reads the file, and a process killed mid-run leaves complete lines only. Like every
artifact the log is written under a hidden temporary name (``.<stem>.tmp-<pid>.jsonl``,
which ``tail -f`` can follow) and renamed at the end; an error or Ctrl-C removes it
(the run's finished-episode metrics go to ``<out>.partial.json`` instead).

Example:
    >>> import tempfile, pathlib, json
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "run.jsonl"
    >>> with JsonlWriter(out) as w:
    ...     w.on_episode({"episode_ix": 0, "seed": 0, "sum_reward": 1.0, "max_reward": 1.0, "length": 1,
    ...                   "success": None, "terminated": True, "truncated": False, "wall_s": 0.1, "num_frames": 0})
    >>> [json.loads(line)["type"] for line in out.read_text().splitlines()]
    ['metadata', 'episode', 'summary']
"""

from __future__ import annotations

import json
import math
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from ..data import FrameBundle
from ..errors import WriterError
from ..metrics import aggregate
from .base import Writer

__all__ = ["JsonlWriter"]

VERSION = 1
ACTION_LIST_MAX = 8


class JsonlWriter(Writer):
    """Streams ``metadata`` / ``step`` / ``episode`` / ``summary`` lines (see the module docstring).

    Args:
        path: Target file; written under a temporary name and renamed on close.
        action_key: The action entry summarised in ``step`` lines.
        config: The run's config as a dict, for the ``metadata`` line.
    """

    format = "jsonl"

    def __init__(self, path: str | Path, action_key: Any = "action", config: dict[str, Any] | None = None) -> None:
        super().__init__(path)
        self.action_key, self.config = action_key, config
        self._file: IO[bytes] | None = None
        self._t0 = time.perf_counter()
        self._episodes: list[dict[str, Any]] = []
        self._steps = 0
        self._returns: dict[int, float] = {}

    @classmethod
    def from_config(cls, path: Path, cfg: Any) -> JsonlWriter:
        """Reads ``action_key`` and the whole config (for the metadata line)."""
        return cls(path, action_key=cfg.action_key, config=cfg.to_dict())

    def write(self, bundle: FrameBundle) -> None:
        """A data format: frames are not written."""

    def on_step(self, record: Any) -> None:
        """Writes a ``step`` line for every step after the reset."""
        if record.step == 0:
            self._returns[record.trajectory] = 0.0
            self._open()
            return
        total = self._returns.get(record.trajectory, 0.0) + record.reward
        self._returns[record.trajectory] = total
        line = {"type": "step", "trajectory": record.trajectory, "step": record.step, "reward": record.reward,
                "return": total, "done": record.done, "terminated": record.terminated,
                "truncated": record.truncated}
        action = record.transition.get(self.action_key, None) if record.transition is not None else None
        if action is not None:
            line.update(_action_summary(action))
        line["wall_s"] = time.perf_counter() - self._t0
        self._line(line)
        self._steps += 1

    def on_episode(self, metrics: dict[str, Any]) -> None:
        """Writes an ``episode`` line."""
        self._episodes.append(metrics)
        self._line({"type": "episode", "trajectory": metrics.get("episode_ix"), **metrics})

    def _open(self) -> IO[bytes]:
        if self._file is None:
            try:
                self._file = open(self.tmp, "wb", buffering=0)  # noqa: SIM115 - closed in _finish/_release
            except OSError as exc:
                raise WriterError(f"cannot create the log file {str(self.path)!r}", got=str(exc),
                                  fix="check that the folder exists and is writable") from exc
            from .. import __version__

            self._line({"type": "metadata", "format": "torchrl_render.jsonl", "version": VERSION,
                        "created": datetime.now(UTC).isoformat(timespec="seconds"),
                        "torchrl_render": __version__, "action_key": _key(self.action_key), "config": self.config})
        return self._file

    def _line(self, data: dict[str, Any]) -> None:
        """One complete line per ``write`` call (unbuffered), so a crash never splits a line."""
        payload = (json.dumps(_finite(data), allow_nan=False, default=str) + "\n").encode("utf-8")
        view = memoryview(payload)
        file = self._open()
        while view:
            view = view[file.write(view):]

    def _finish(self) -> dict[str, Any]:
        wall = time.perf_counter() - self._t0
        self._line({"type": "summary", "n_steps": self._steps, "wall_s": wall, **aggregate(self._episodes, wall)})
        file, self._file = self._file, None
        os.fsync(file.fileno())
        file.close()
        return {"lines": self._steps + len(self._episodes) + 2, "steps": self._steps,
                "episodes": len(self._episodes)}

    def _release(self) -> None:
        file, self._file = self._file, None
        if file is not None:
            file.close()


def _action_summary(action: Any) -> dict[str, Any]:
    import torch

    values = action.detach().reshape(-1).to("cpu", torch.float64)
    if values.numel() == 0:
        return {}
    out = {"action_mean": float(values.mean()), "action_min": float(values.min()),
           "action_max": float(values.max()), "action_norm": float(values.norm())}
    if values.numel() <= ACTION_LIST_MAX:
        out["action"] = values.tolist()
    return out


def _finite(value: Any) -> Any:
    """NaN and infinities become None (JSON has no such numbers)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _key(key: Any) -> str:
    return ".".join(key) if isinstance(key, tuple) else str(key)
