"""``eval_info.json``: the evaluation's metrics only, in lerobot-eval's layout.

One JSON object, written when the run ends (atomically, like every artifact)::

    {"per_episode": [{"episode_ix", "seed", "sum_reward", "max_reward", "length", "success",
                      "terminated", "truncated", "wall_s", "num_frames", ...}, ...],
     "aggregated": {"avg_sum_reward", "avg_max_reward", "pc_success", "n_episodes", "eval_s",
                    "eval_ep_s", "std_sum_reward", "ci95_sum_reward",
                    "iqm_sum_reward", "iqm_sum_reward_ci95", "median_sum_reward", "median_sum_reward_ci95", ...,
                    "ci95_success" (when some episode reports success),
                    "avg_sum_reward_fn", "std_sum_reward_fn" (with a reward function)},
     "overall": <the same as aggregated, lerobot-eval's top-level name>,
     "sequential": {"metric", "target", "halfwidth", "interval", "n_episodes", "stopped_on", "method", ...}
                   (with --precision: :func:`torchrl_render.metrics.precision.sequential_entry`)}

Nothing is rendered and no step is stored: the leanest output, for evaluations of thousands of
episodes (with ``--no-trajectories``).

Example:
    >>> import tempfile, pathlib, json
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "eval_info.json"
    >>> with JsonWriter(out) as w:
    ...     w.on_episode({"episode_ix": 0, "seed": 0, "sum_reward": 2.0, "max_reward": 1.0, "length": 2,
    ...                   "success": True, "terminated": True, "truncated": False, "wall_s": 0.5, "num_frames": 0})
    >>> data = json.loads(out.read_text())
    >>> data["aggregated"]["avg_sum_reward"], data["overall"]["pc_success"]
    (2.0, 100.0)
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..contracts import EpisodeMetrics
from ..data import FrameBundle
from ..metrics import aggregate, json_ready
from ..metrics.precision import sequential_entry
from ..metrics.robust import DEFAULT_REPS
from .base import Writer

if TYPE_CHECKING:
    from ..config import RenderConfig


__all__ = ["JsonWriter"]


class JsonWriter(Writer):
    """Collects the per-episode metrics and writes them with their aggregates at the end.

    Args:
        path: Target file; written under a temporary name and renamed on close.
        bootstrap_reps: Resamples of the IQM's and the median's bootstrap intervals (0: none).
        seed: Their generator's seed (default: the first episode's seed).
    """

    format = "json"

    def __init__(self, path: str | Path, bootstrap_reps: int = DEFAULT_REPS, seed: int | None = None,
                 precision: RenderConfig | None = None) -> None:
        super().__init__(path)
        self._episodes: list[EpisodeMetrics] = []
        self._t0 = time.perf_counter()
        self.bootstrap_reps, self.seed = bootstrap_reps, seed
        self.precision = precision  # the run's config when it has --precision: its ``sequential`` entry

    @classmethod
    def from_config(cls, path: Path, cfg: RenderConfig) -> JsonWriter:
        """Reads ``bootstrap_reps``, ``seed`` and ``precision``."""
        return cls(path, bootstrap_reps=getattr(cfg, "bootstrap_reps", DEFAULT_REPS), seed=getattr(cfg, "seed", None),
                   precision=cfg if getattr(cfg, "precision", None) is not None else None)

    def write(self, bundle: FrameBundle) -> None:
        """A data format: frames are not written."""

    def on_episode(self, metrics: EpisodeMetrics) -> None:
        self._episodes.append({**metrics})  # a copy, as a dict (whatever Mapping it came as)

    def _finish(self) -> dict[str, object]:
        agg = aggregate(self._episodes, time.perf_counter() - self._t0, reps=self.bootstrap_reps, seed=self.seed)
        data: dict[str, object] = {"per_episode": self._episodes, "aggregated": agg, "overall": agg}
        if self.precision is not None:
            data["sequential"] = sequential_entry(self.precision, self._episodes)
        text = json.dumps(json_ready(data), indent=2, allow_nan=False, default=str)
        with open(self.tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        return {"episodes": len(self._episodes)}

    def _release(self) -> None:
        self._episodes = []
