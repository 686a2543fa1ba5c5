"""Seeding an episode the way its ecosystem means it.

* gymnasium: episode ``i`` starts from exactly the state of ``env.reset(seed=seed + i)``; no
  seeded reset is consumed before it.
* dm_control: the task's random state (``task.random``, which ``initialize_episode`` draws from)
  is replaced by ``numpy.random.RandomState(seed + i)`` and the env is reset once, so the episode
  starts where ``suite.load(..., task_kwargs={"random": seed + i}).reset()`` starts, whatever ran
  before and whatever the number of envs.
* any other torchrl ``EnvBase``: torchrl's convention, ``env.set_seed(seed + i)`` then ``env.reset()``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["reseed_for_reset", "seed_kind"]


def seed_kind(raw: Any) -> str:
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


def _dm_task(raw: Any) -> Any:
    inner = getattr(raw, "_env", raw)  # dm_control's pixels.Wrapper keeps the env in _env
    task = getattr(inner, "task", None) if type(inner).__module__.startswith("dm_control") else None
    return task if task is not None and hasattr(task, "_random") else None


def reseed_for_reset(env: Any, raw: Any, seed: int | None) -> None:
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

        _dm_task(raw)._random = np.random.RandomState(int(seed))
    else:
        env.set_seed(int(seed))
