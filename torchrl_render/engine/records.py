"""What the engine hands out: per-step records (rendered episodes only) and finished episodes.

A :class:`StepRecord` exists only where something consumes a step as it happens (the
frames of a rendered episode); every episode ends with one :class:`Episode` that holds
its per-step arrays, assembled in stacked storage, and its TensorDict when asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ..contracts import Array, EpisodeMetrics, Frames, StepView, UserEnv

if TYPE_CHECKING:
    from tensordict import TensorDictBase

__all__ = ["Episode", "StepRecord"]


@dataclass
class StepRecord:
    """One step of one rendered trajectory.

    Args:
        trajectory: Episode index (0-based).
        step: 0 after reset, ``t`` after the ``t``-th action.
        td: The state view for render backends: the reset TensorDict at step 0, ``next`` after (on the
            gymnasium path, a dict of the observation entries as tensors).
        transition: The full transition (observation, action, ``next``); ``None`` at step 0.
        seed: The seed this trajectory was reset with.
        reward: Scalar reward of this step (0.0 at step 0).
        done / terminated / truncated: End flags after this step.
        wall: ``time.perf_counter()`` when the record was made.
        frames: Frames already captured (by an env worker), else ``None``.
        env: The env (of the slot) that produced the step, for readers of its live state.
        slot: The row of the batched env it ran in (the torchrl path's K envs), for a re-run in that row.
    """

    trajectory: int
    step: int
    td: StepView
    transition: TensorDictBase | None
    seed: int | None
    reward: float = 0.0
    done: bool = False
    terminated: bool = False
    truncated: bool = False
    wall: float = 0.0
    frames: Frames | None = None
    env: UserEnv = None
    slot: int | None = None


@dataclass
class Episode:
    """A finished episode: its numbers, its per-step arrays and (when kept) its TensorDict.

    Args:
        index: Episode index (``episode_ix``); its seed is ``seed + index``.
        seed: The seed the episode was reset with.
        rewards: ``(T,)`` float64, the env's reward of each step (summed over its entries).
        dones / terminated / truncated: ``(T,)`` bool flags after each step; a step cut by
            ``max_steps`` is marked truncated (and done), as a time limit would.
        sum_reward: The return, summed step by step in float64 (as a plain loop does).
        success: True/False when the env reported success at some step, else None.
        observations: ``(T+1, ...)`` the ``obs_key`` entry at steps 0..T, when kept.
        actions: ``(T, ...)`` the actions, when kept.
        step_success: ``(T+1,)`` int8, the env's success report at the reset and after each step (1/0; -1: it
            reported none), when kept (gymnasium path).
        step_infos: ``T+1`` info dicts, the reset's and each step's as the env returned them (gymnasium path),
            or the extra entries of each step's TensorDict (torchrl path), when a data writer stores them.
        trajectory: The episode's transitions as one TensorDict ``[T]``, when kept.
        wall_s: Seconds from its reset to its last step.
        sum_reward_fn: The return under ``--reward-fn``, summed as ``sum_reward`` is (None without one).
        slot: The env slot it ran in (K envs), not a metric: a re-run in the same batch row.

    Example:
        >>> ep = Episode(0, 7, np.array([1.0, 2.0]), np.array([False, True]), np.array([False, True]),
        ...              np.array([False, False]), sum_reward=3.0)
        >>> ep.metrics()["length"], ep.metrics()["max_reward"], ep.metrics()["terminated"]
        (2, 2.0, True)
    """

    index: int
    seed: int | None
    rewards: NDArray[np.float64]
    dones: NDArray[np.bool_]
    terminated: NDArray[np.bool_]
    truncated: NDArray[np.bool_]
    sum_reward: float = 0.0
    success: bool | None = None
    observations: Array | None = None
    actions: Array | None = None
    trajectory: TensorDictBase | None = None
    wall_s: float = 0.0
    sum_reward_fn: float | None = None
    slot: int | None = None
    step_success: NDArray[np.int8] | None = None
    step_infos: list[dict[str, object]] | None = None

    @property
    def length(self) -> int:
        return int(self.rewards.shape[0])

    def metrics(self, num_frames: int = 0) -> EpisodeMetrics:
        """The per-episode metrics dict (names as in the metadata and lerobot-eval)."""
        n = self.length
        out: EpisodeMetrics = {"episode_ix": self.index, "seed": self.seed, "sum_reward": float(self.sum_reward),
               "max_reward": float(self.rewards.max()) if n else None, "length": n, "success": self.success,
               "terminated": bool(self.terminated[-1]) if n else False,
               "truncated": bool(self.truncated[-1]) if n else False, "wall_s": self.wall_s,
               "num_frames": num_frames}
        if self.sum_reward_fn is not None:
            out["sum_reward_fn"] = self.sum_reward_fn
        return out
