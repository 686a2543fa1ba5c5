"""The contracts between the stages of a run, named: what flows from one stage to the next.

A run (``api``) hands these from stage to stage; the classes that implement each contract live with their
capability, and each contract is either a class of its own there or a :class:`typing.Protocol` here:

- :data:`UserEnv` and :data:`Payload`: what the user's factories and checkpoint give (the boundary: any
  gymnasium, TorchRL, dm_control or Isaac Lab env; a state dict, a module or a torchrl.render checkpoint).
  They stay ``Any`` on purpose: nothing of ours may assume more than ``envs/`` and ``checkpoint/`` checked.
- :class:`EnvSlots`: K gymnasium envs as one set of arrays (``engine.env_slots``: in this process, or split with
  worker processes on shared memory), which the engine's slot loop steps.
- :data:`ActFn` and :data:`BeginFn`: the policy as the slot loop calls it (``engine.gym_loop.actor``).
- The step and episode records the engine yields: ``engine.records.StepRecord`` and ``engine.records.Episode``
  (dataclasses).
- :class:`FrameSource`: a render backend as the engine's torchrl env workers call it (``backends.base.RenderBackend``
  implements it; the engine is a layer below the backends).
- A render backend (frames from a step): ``backends.base.RenderBackend``; a format writer:
  ``writers.base.Writer``; an observer of a run (the live page, the viewer window): ``sink.Observer``.

This module imports nothing of the package, so every layer may name these.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeAlias

import numpy as np

__all__ = ["ActFn", "BeginFn", "EnvSlots", "FrameSource", "Payload", "UserEnv"]

#: What the env factory returned (or what ``envs.open_env`` made of a gymnasium id): a gymnasium env, a TorchRL
#: ``EnvBase``, a dm_control environment, an Isaac Lab env. The user's boundary: ``envs/`` finds out which.
UserEnv: TypeAlias = Any

#: What ``--ckpt`` loaded (``checkpoint.load_checkpoint``): a state dict, a whole module (trusted loads only),
#: a torchrl.render render checkpoint, or None without ``--ckpt``. The policy factory decides what it means.
Payload: TypeAlias = Any

#: ``act(active) -> actions``: the actions of the slots whose indices are in ``active`` (the other rows are left
#: as they were), as a ``[K, ...]`` array the env takes.
ActFn: TypeAlias = Callable[[np.ndarray], np.ndarray]

#: ``begin(slot, seed)``: slot ``slot`` starts an episode reset with ``seed`` (a stateful policy resets there).
BeginFn: TypeAlias = Callable[[int, "int | None"], None]


class EnvSlots(Protocol):
    """K envs as one set of arrays: ``reset`` and ``step`` fill the given rows only.

    ``obs[key]`` is ``[K, ...]``, ``reward`` ``[K]`` float64, ``terminated`` / ``truncated`` ``[K]`` bool,
    ``success`` ``[K]`` int8 (-1: the env reported none). ``infos`` is None unless the slots were made to keep
    each episode's info dicts, which ``take_infos(i)`` then hands over once.
    """

    kind: str
    num: int
    layout: dict[str, tuple[tuple[int, ...], np.dtype]]
    obs: dict[str, np.ndarray]
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    success: np.ndarray
    infos: dict[int, list[dict[str, Any]]] | None

    def reset(self, rows: Sequence[int], seeds: Sequence[int | None]) -> None: ...

    def step(self, rows: Sequence[int], actions: np.ndarray) -> None: ...

    def take_infos(self, i: int) -> list[dict[str, Any]]: ...

    def env(self, i: int) -> UserEnv: ...

    def close(self) -> None: ...


class FrameSource(Protocol):
    """A render backend as the engine calls it inside a torchrl env worker (``engine.episode_control``):
    ``capture(td)`` gives the step's frames by camera name (None: none this step), ``begin_episode()`` at each
    reset, ``close()`` once. ``backends.base.RenderBackend`` implements it."""

    def capture(self, td: Any) -> dict[str, Any] | None: ...

    def begin_episode(self) -> None: ...

    def close(self) -> None: ...
