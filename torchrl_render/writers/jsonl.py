"""JSON Lines event log, streamed as the run goes.

One JSON object per line, each with a ``type``:

* ``metadata`` (first line): ``format`` ("torchrl_render.jsonl"), ``version``, ``created`` (UTC ISO time),
  ``torchrl_render`` (version), ``action_key``, ``config`` (the run's config, or null).
* ``step`` (one per env step, steps 1..n of each trajectory): ``trajectory``, ``step``, ``reward``,
  ``return`` (so far), ``done``, ``terminated``, ``truncated``, ``action_mean``, ``action_min``,
  ``action_max``, ``action_norm`` (L2), ``action`` (the values, only for actions of at most
  8 entries), ``wall_s`` (seconds since the log was opened, when the episode's lines were written:
  step lines are written when their episode ends, from its stored arrays). A step cut by
  ``max_steps`` says ``truncated: true`` and ``done: true``, as its episode line does.
* ``episode`` (at each episode end): ``trajectory`` and the episode's metrics (``episode_ix``, ``seed``,
  ``sum_reward``, ``max_reward``, ``length``, ``success``, ``terminated``, ``truncated``, ``wall_s``,
  ``num_frames``), then torchrl.render's ``trajectory`` line: ``index``, ``num_steps``, ``return``,
  ``num_frames``, ``cameras``.
* ``summary`` (last line): ``n_steps``, ``wall_s`` and the aggregate metrics
  (``n_episodes``, ``avg_sum_reward``, ``pc_success``...).

When the run has ended, the metadata line gains ``metadata``: the run's whole metadata sidecar (the
first line of torchrl.render's log holds it there; the file is rewritten once, streamed).
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
    ['metadata', 'episode', 'trajectory', 'summary']
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING

import numpy as np

from .._version import __version__
from ..contracts import Array, EpisodeMetrics
from ..data import FrameBundle
from ..errors import WriterError
from ..keys import NestedKey, key_to_string
from ..metrics import aggregate, bootstrap_options, json_ready
from ..storage import atomic_path
from .base import Writer

if TYPE_CHECKING:
    from ..config import RenderConfig
    from ..engine.records import Episode


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

    def __init__(self, path: str | Path, action_key: NestedKey = "action",
                 config: Mapping[str, object] | None = None) -> None:
        super().__init__(path)
        self.action_key, self.config = action_key, config
        self._file: IO[bytes] | None = None
        self._t0 = time.perf_counter()
        self._episodes: list[EpisodeMetrics] = []
        self._steps = 0
        self._returns: dict[int, float] = {}
        self._lines = 0
        self._cameras: dict[int, set[str]] = {}  # per trajectory, the cameras of its frame lines

    @classmethod
    def from_config(cls, path: Path, cfg: RenderConfig) -> JsonlWriter:
        """Reads ``action_key`` and the whole config (for the metadata line)."""
        return cls(path, action_key=cfg.action_key, config=cfg.to_dict())

    def write(self, bundle: FrameBundle) -> None:
        """A frame it is given (only when the run renders frames for another reason: a data format renders
        none) becomes torchrl.render's ``frame`` line: ``trajectory_index``, ``step``, ``cameras``, ``metadata``."""
        self._cameras.setdefault(bundle.trajectory_index, set()).update(bundle.frames)
        self._line({"type": "frame", "trajectory_index": bundle.trajectory_index, "step": bundle.step,
                    "cameras": sorted(bundle.frames), "metadata": bundle.metadata})

    def on_trajectory(self, episode: Episode) -> None:
        """Writes the episode's ``step`` lines (steps 1..n), from its arrays, when it ends."""
        self._open()
        n = episode.length
        returns = np.cumsum(episode.rewards)  # sequential, as the episode's return is summed
        summary = _action_summaries(episode.actions, n)
        wall = time.perf_counter() - self._t0
        for t in range(n):
            line: dict[str, object] = {
                "type": "step", "trajectory": episode.index, "step": t + 1, "reward": float(episode.rewards[t]),
                "return": float(returns[t]), "done": bool(episode.dones[t]),
                "terminated": bool(episode.terminated[t]), "truncated": bool(episode.truncated[t])}
            line.update(summary[t])
            line["wall_s"] = wall
            self._line(line)
        self._steps += n

    def on_episode(self, metrics: EpisodeMetrics) -> None:
        """Writes an ``episode`` line."""
        self._episodes.append(metrics)
        index = metrics.get("episode_ix")
        self._line({"type": "episode", "trajectory": index, **metrics})
        cameras = sorted(self._cameras.pop(index, ())) if index is not None else []
        self._line({"type": "trajectory", "index": index, "num_steps": metrics.get("length"),
                    "return": metrics.get("sum_reward"), "num_frames": metrics.get("num_frames", 0),
                    "cameras": cameras})

    @classmethod
    def add_metadata(cls, path: Path, metadata: Mapping[str, object], cfg: RenderConfig) -> None:
        """Puts the run's ``metadata`` into the first line (torchrl.render's layout), rewriting the file once."""
        with atomic_path(path) as tmp, open(path, "rb") as source, open(tmp, "wb") as target:
            first = json.loads(source.readline())
            first["metadata"] = metadata
            target.write((json.dumps(json_ready(first), default=str, allow_nan=False) + "\n").encode())
            shutil.copyfileobj(source, target, 1 << 20)

    def _open(self) -> IO[bytes]:
        if self._file is None:
            try:
                self._file = open(self.tmp, "wb", buffering=0)
            except OSError as exc:
                raise WriterError(f"cannot create the log file {str(self.path)!r}", got=str(exc),
                                  fix="check that the folder exists and is writable") from exc
            self._line({"type": "metadata", "format": "torchrl_render.jsonl", "version": VERSION,
                        "created": datetime.now(UTC).isoformat(timespec="seconds"),
                        "torchrl_render": __version__, "action_key": key_to_string(self.action_key),
                        "config": self.config})
        return self._file

    def _line(self, data: dict[str, object]) -> None:
        """One complete line per ``write`` call (unbuffered), so a crash never splits a line."""
        payload = (json.dumps(json_ready(data), allow_nan=False, default=str) + "\n").encode("utf-8")
        view = memoryview(payload)
        file = self._open()
        self._lines += 1
        while view:
            view = view[file.write(view):]

    def _finish(self) -> dict[str, object]:
        wall = time.perf_counter() - self._t0
        summary = aggregate(self._episodes, wall, **bootstrap_options(self.config))
        self._line({"type": "summary", "n_steps": self._steps, "wall_s": wall, **summary})
        file, self._file = self._open(), None  # open: the summary line was just written to it
        os.fsync(file.fileno())
        file.close()
        return {"lines": self._lines, "steps": self._steps,
                "episodes": len(self._episodes)}

    def _release(self) -> None:
        file, self._file = self._file, None
        if file is not None:
            file.close()


def _action_summaries(actions: Array | None, n: int) -> list[dict[str, float | list[float]]]:
    """Per step: mean, min, max and L2 norm of the action (and its values when it is small)."""
    if actions is None or n == 0:
        return [{} for _ in range(n)]
    values = np.asarray(actions, dtype=np.float64).reshape(n, -1)
    if values.shape[1] == 0:
        return [{} for _ in range(n)]
    cols = zip(values.mean(1).tolist(), values.min(1).tolist(), values.max(1).tolist(),
               np.sqrt((values ** 2).sum(1)).tolist())
    out: list[dict[str, float | list[float]]] = [
        {"action_mean": m, "action_min": lo, "action_max": hi, "action_norm": nm} for m, lo, hi, nm in cols]
    if values.shape[1] <= ACTION_LIST_MAX:
        for row, listed in zip(out, values.tolist()):
            row["action"] = listed
    return out
