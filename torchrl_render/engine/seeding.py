"""Seeding an episode the way its ecosystem means it.

* gymnasium: episode ``i`` starts from exactly the state of ``env.reset(seed=seed + i)``; no
  seeded reset is consumed before it.
* dm_control: the task's random state (``task.random``, which ``initialize_episode`` draws from)
  is replaced by ``numpy.random.RandomState(seed + i)`` and the env is reset once, so the episode
  starts where ``suite.load(..., task_kwargs={"random": seed + i}).reset()`` starts, whatever ran
  before and whatever the number of envs.
* any other torchrl ``EnvBase``: torchrl's convention, ``env.set_seed(seed + i)`` then ``env.reset()``.

``seed_mode="torchrl"`` seeds as torchrl.render does instead: ``env.set_seed(seed)`` once, before the
first episode, then one plain ``env.reset()`` per episode, one after another (:func:`seed_once`), so
the same checkpoint and seed give torchrl.render's episodes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..config import SEED_MODES  # per-episode: as its ecosystem seeds seed + i; torchrl: torchrl.render's
from ..contracts import UserEnv

if TYPE_CHECKING:
    from dm_control.rl.control import Task

__all__ = ["SEED_MODES", "episode_seed", "reseed_for_reset", "seed_kind", "seed_once"]


def episode_seed(mode: str, seed: int | None, index: int) -> int | None:
    """The seed episode ``index`` is reset with (``None``: not reseeded, it follows the env's stream)."""
    return None if seed is None or mode == "torchrl" else seed + index


def seed_once(env: UserEnv, mode: str, seed: int | None) -> None:
    """``seed_mode="torchrl"``: ``env.set_seed(seed)`` before the first episode (torchrl.render's ``seed_env``)."""
    if mode == "torchrl" and seed is not None:
        env.set_seed(int(seed))


def seed_kind(raw: UserEnv) -> str:
    """``"gymnasium"``, ``"dm_control"`` or ``"torchrl"`` for the env behind a torchrl wrapper."""
    try:
        import gymnasium
        if isinstance(raw, gymnasium.Env):
            return "gymnasium"
    except ImportError:  # pragma: no cover - gymnasium is a dependency
        pass
    if _dm_task(raw) is not None:
        return "dm_control"
    return "torchrl"


def _dm_task(raw: UserEnv) -> Task | None:
    """The dm_control task behind ``raw`` (it holds the random state its episodes draw from), else None."""
    inner = getattr(raw, "_env", raw)  # dm_control's pixels.Wrapper keeps the env in _env
    task = getattr(inner, "task", None) if type(inner).__module__.startswith("dm_control") else None
    return task if task is not None and hasattr(task, "_random") else None


def reseed_for_reset(env: UserEnv, raw: UserEnv, seed: int | None) -> None:
    """Prepares ``env`` (a torchrl env around ``raw``) so that its next plain ``reset()`` is the
    episode's seeded reset (see the module docstring). ``seed=None`` leaves the env's stream as it is."""
    if seed is None:
        return
    kind = seed_kind(raw)
    if kind == "gymnasium":
        from gymnasium.utils import seeding

        # what Env.reset(seed=s) does first; the reset that follows draws from this stream
        raw.unwrapped._np_random, raw.unwrapped._np_random_seed = seeding.np_random(int(seed))
    elif kind == "dm_control":
        import numpy as np

        task = _dm_task(raw)
        assert task is not None  # seed_kind found it
        task._random = np.random.RandomState(int(seed))
    else:
        env.set_seed(int(seed))
