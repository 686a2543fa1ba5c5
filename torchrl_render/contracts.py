"""The contracts between the stages of a run, named: what flows from one stage to the next.

A run (``api``) hands these from stage to stage; the classes that implement each contract live with their
capability, and each contract is either a class of its own there or a :class:`typing.Protocol` here:

- :data:`UserEnv`, :data:`UserPolicy`, :data:`Payload` and :data:`UserValue`: what the user's factories, checkpoint
  and keyword arguments give (the boundary: any gymnasium, TorchRL, dm_control or Isaac Lab env; a module, a
  callable, an SB3 model or a LeRobot policy; a state dict or a torchrl.render checkpoint; the kwargs of the user's
  own factories). They stay ``Any`` on purpose, and they are the only ``Any`` of ours in the package (mypy's
  ``disallow_any_explicit``; :data:`Array` spells out numpy's own): nothing of ours may assume more than
  ``envs/``, ``policies/`` and ``checkpoint/`` checked.
- :class:`UserFactory`: a callable of the user's (an env or policy factory), called by its own signature.
- :data:`Json`: a value read from a JSON (or YAML/TOML) document, to be narrowed before use.
- :class:`JsonDumpOptions`: :func:`json.dumps`'s options, as our JSON writers hand them on.
- :class:`MujocoState`: a MuJoCo env's state arrays as read at a step (``data.SimState`` adds the model).
- :data:`Array`: a numpy array of any dtype (``np.ndarray``, which mypy refuses elsewhere for numpy's own ``Any``).
- :data:`StepView`: the state of one step as a render backend reads it.
- :data:`StepMetrics`: a rendered step's running numbers (reward, return so far), as the overlay, the observers
  and the writers read them.
- :class:`EpisodeMetrics`: one episode's numbers, as the metadata's ``per_episode`` rows and every consumer of an
  episode (selection, the sweep, the loggers, the live page) read them.
- :class:`EnvSlots`: K gymnasium envs as one set of arrays (``engine.env_slots``: in this process, or split with
  worker processes on shared memory), which the engine's slot loop steps.
- :data:`ActFn` and :data:`BeginFn`: the policy as the slot loop calls it (``engine.gym_loop.actor``).
- The step and episode records the engine yields: ``engine.records.StepRecord`` and ``engine.records.Episode``
  (dataclasses).
- :class:`FrameSource`: a render backend as the engine's torchrl env workers call it, giving uint8 frames
  (``backends.factory.Uint8Frames``, what ``make_backend`` builds, implements it; the engine is a layer below the
  backends).
- A render backend (frames from a step): ``backends.base.RenderBackend``; a format writer:
  ``writers.base.Writer``; an observer of a run (the live page, the viewer window): ``sink.Observer``.

This module imports nothing of the package, so every layer may name these.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NotRequired, Protocol, TypeAlias, TypedDict, TypeVar

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    import torch
    from tensordict import TensorDictBase

__all__ = ["ActFn", "Array", "BeginFn", "EnvSlots", "EpisodeMetrics", "FrameSource", "Frames", "Json",
           "JsonDumpOptions", "MujocoState", "Payload", "RerunNumbers", "StepMetrics", "StepView", "UserEnv",
           "UserFactory", "UserPolicy", "UserValue"]

#: What the env factory returned (or what ``envs.open_env`` made of a gymnasium id): a gymnasium env, a TorchRL
#: ``EnvBase``, a dm_control environment, an Isaac Lab env. The user's boundary: ``envs/`` finds out which.
UserEnv: TypeAlias = Any

#: What ``--ckpt`` loaded (``checkpoint.load_checkpoint``): a state dict, a whole module (trusted loads only),
#: a torchrl.render render checkpoint, or None without ``--ckpt``. The policy factory decides what it means.
Payload: TypeAlias = Any

#: What the policy factory returned (or what ``policies/`` made of a checkpoint): a ``torch.nn.Module``, a
#: TensorDictModule, a plain callable, an SB3 model, a LeRobot policy. ``policies.normalize`` finds out which.
UserPolicy: TypeAlias = Any

#: A value the user hands over for their own code, which we pass on unread: a factory's keyword arguments
#: (``env_kwargs``, ``policy_kwargs``), a config field's value before ``config.validate`` has checked it.
UserValue: TypeAlias = Any

_R_co = TypeVar("_R_co", covariant=True)


class UserFactory(Protocol[_R_co]):
    """A callable of the user's that we call by its own signature: an env or policy factory (``config.RenderConfig``'s
    ``env`` / ``policy``, or the one a ``module:object`` spec names), whose parameters ``resolve.call_factory`` binds
    by their names. It takes what its signature declares (so any callable is one: hence :data:`UserValue`, where
    ``Callable[..., R]`` would be an explicit ``Any`` to mypy) and returns ``_R_co`` (:data:`UserEnv`,
    :data:`UserPolicy`; ``object`` where nothing is known of it yet)."""

    def __call__(self, *args: UserValue, **kwargs: UserValue) -> _R_co: ...


#: A value parsed from a JSON, YAML or TOML document (ours or the user's): narrow it (``isinstance``) before use.
Json: TypeAlias = "bool | int | float | str | list[Json] | dict[str, Json] | None"

#: The state of one step as a render backend reads it: the step's TensorDict (torchrl path: the reset's at step 0,
#: ``next`` after), or the observation entries as tensors (gymnasium path), keyed as in a TensorDict: an extra entry
#: under a nested ``mujoco_qpos_key`` (and its mocap siblings) has a tuple key.
StepView: TypeAlias = "TensorDictBase | dict[str | tuple[str, ...], torch.Tensor]"

#: A numpy array of a dtype and shape that vary (an observation, an action, a frame of either kind): ``np.ndarray``
#: with numpy's own default type parameters written out. It is named here because mypy counts the ``Any`` of those
#: defaults as an explicit one outside this module; where the dtype is known, ``NDArray[np.uint8]`` (or
#: ``np.float64``, ...) says more and is no ``Any``.
Array: TypeAlias = np.ndarray[tuple[Any, ...], np.dtype[Any]]

#: A step's frames by camera name: ``(H, W, 3)`` uint8 arrays (a depth camera's: ``(H, W)`` float32).
Frames: TypeAlias = dict[str, np.ndarray]

#: A rendered step's running numbers (``sink.Sink`` makes them, as do the replays of saved episodes; the overlay,
#: the observers and the writers read them, ``FrameBundle.metrics``): the step's index in its episode, its reward,
#: the episode's return so far and, once the env has reported it, whether the episode has succeeded so far. Every
#: key may be missing (a bundle built without numbers has ``{}``): read them with ``in`` or ``get``. A functional
#: TypedDict, since ``return`` is a keyword.
StepMetrics = TypedDict("StepMetrics", {"step": int, "reward": float, "return": float, "success": bool}, total=False)


class JsonDumpOptions(TypedDict, total=False):
    """:func:`json.dumps`'s options, as our JSON writers hand them on (``RenderConfig.to_json``,
    ``storage.write_json_atomic``)."""

    skipkeys: bool
    ensure_ascii: bool
    check_circular: bool
    allow_nan: bool
    cls: type[json.JSONEncoder] | None
    indent: int | str | None
    separators: tuple[str, str] | None
    default: Callable[[object], object] | None
    sort_keys: bool


class MujocoState(TypedDict):
    """A MuJoCo env's state arrays as ``envs.mujoco_state.MujocoStateReader.read`` copies them (float64):
    ``qpos`` always, the others where the env has them (and they are not empty; ``time`` is a 0-d array).
    ``data.SimState`` adds the model, for drawing."""

    qpos: NDArray[np.float64]
    qvel: NotRequired[NDArray[np.float64]]
    act: NotRequired[NDArray[np.float64]]
    ctrl: NotRequired[NDArray[np.float64]]
    mocap_pos: NotRequired[NDArray[np.float64]]
    mocap_quat: NotRequired[NDArray[np.float64]]
    time: NotRequired[NDArray[np.float64]]


class RerunNumbers(TypedDict):
    """A ``--render-select`` re-run's numbers, where they differ from the first pass's."""

    sum_reward: float
    length: int
    success: bool | None


class EpisodeMetrics(TypedDict):
    """One episode's numbers (``engine.records.Episode.metrics``): the metadata's ``per_episode`` rows, with the
    names lerobot-eval uses. ``seed`` is None for an env reset without one; ``max_reward`` None for an episode of
    no step; ``success`` None where the env never reported it; ``sum_reward_fn`` only with ``--reward-fn``. A
    ``--render-select`` run's chosen episodes also carry why they were chosen (``render_reason``), whether the
    filmed re-run reproduced the first pass (``reproduced``) and, where not, the re-run's numbers (``rerun``)."""

    episode_ix: int
    seed: int | None
    sum_reward: float
    max_reward: float | None
    length: int
    success: bool | None
    terminated: bool
    truncated: bool
    wall_s: float
    num_frames: int
    sum_reward_fn: NotRequired[float]
    render_reason: NotRequired[str]
    reproduced: NotRequired[bool]
    rerun: NotRequired[RerunNumbers]

#: ``act(active) -> actions``: the actions of the slots whose indices are in ``active`` (the other rows are left
#: as they were), as a ``[K, ...]`` array the env takes.
ActFn: TypeAlias = Callable[[np.ndarray], np.ndarray]

#: ``begin(slot, seed)``: slot ``slot`` starts an episode reset with ``seed`` (a stateful policy resets there).
BeginFn: TypeAlias = Callable[[int, "int | None"], None]


class EnvSlots(Protocol):
    """K envs as one set of arrays: ``reset`` and ``step`` fill the given rows only.

    ``obs[key]`` is ``[K, ...]`` (the layout's entries, then any extra such as MuJoCo's qpos under its TensorDict
    key, which may be nested), ``reward`` ``[K]`` float64, ``terminated`` / ``truncated`` ``[K]`` bool,
    ``success`` ``[K]`` int8 (-1: the env reported none). ``infos`` is None unless the slots were made to keep
    each episode's info dicts, which ``take_infos(i)`` then hands over once.
    """

    kind: str
    num: int
    layout: dict[str, tuple[tuple[int, ...], np.dtype]]
    obs: dict[str | tuple[str, ...], np.ndarray]
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    success: np.ndarray
    infos: dict[int, list[dict[str, object]]] | None

    def reset(self, rows: Sequence[int], seeds: Sequence[int | None]) -> None: ...

    def step(self, rows: Sequence[int], actions: np.ndarray) -> None: ...

    def take_infos(self, i: int) -> list[dict[str, object]]: ...

    def env(self, i: int) -> UserEnv: ...

    def close(self) -> None: ...


class FrameSource(Protocol):
    """A render backend as the engine calls it inside a torchrl env worker (``engine.episode_control``):
    ``capture(td)`` gives the step's frames by camera name (None: none this step), ``begin_episode()`` at each
    reset, ``close()`` once. ``backends.factory.Uint8Frames`` implements it: it wraps any
    ``backends.base.RenderBackend``, whose own frames may be tensors or floats, and gives uint8 HWC arrays."""

    def capture(self, td: StepView | None) -> Frames | None: ...

    def begin_episode(self) -> None: ...

    def close(self) -> None: ...
