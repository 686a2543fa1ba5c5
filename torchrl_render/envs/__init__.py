"""Turning what an env factory returns into the run's env.

Accepted: a torchrl ``EnvBase`` (used as is), a ``gymnasium.Env`` (wrapped by
torchrl's ``GymWrapper``), a dm_control ``Environment`` (``DMControlWrapper``).
Strings without a colon are shortcuts: a registered gymnasium id
(``"HalfCheetah-v5"``) or ``"dm_control/<domain>-<task>"``.

:func:`open_env` is what a run uses: a gymnasium env comes back as a :class:`~.handle.GymnasiumEnv`,
which builds the ``GymWrapper`` only when something asks for torchrl (the engine steps gymnasium envs
in numpy, so most runs never import torchrl). :func:`build_env` always gives the torchrl env.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import logging
from typing import TYPE_CHECKING

from ..config import RenderConfig, RenderEnvSpec
from ..contracts import Json, Payload, UserEnv, UserFactory
from ..errors import EnvError, did_you_mean
from ..resolve import call_factory, factory_name, receives, resolve
from .gl import missing_gl_library
from .handle import GymnasiumEnv, loaded_class
from .unwrap import is_dm_env, is_gymnasium, model_file, plain_gymnasium, underlying_env

if TYPE_CHECKING:
    import gymnasium
    from dm_control.rl.control import Environment
    from tensordict import TensorDictBase
    from torchrl.data import Composite
    from torchrl.envs import EnvBase, GymWrapper
    from torchrl.envs.batched_envs import BatchedEnvBase
    from torchrl.envs.gym_like import BaseInfoDictReader

__all__ = ["GymnasiumEnv", "as_torchrl", "build_env", "describe_env", "is_env_object", "make_raw_env", "open_env",
           "plain_gymnasium", "to_torchrl_env"]

log = logging.getLogger("torchrl_render")
DM_PREFIX = "dm_control/"
_PYGAME_ENVS = ("gymnasium.envs.classic_control", "gymnasium.envs.toy_text", "gymnasium.envs.box2d")


def build_env(cfg: RenderConfig, checkpoint: Payload = None, render_mode: str | None = None) -> EnvBase:
    """Builds the torchrl env for ``cfg`` (``render_mode`` is a default the config can override)."""
    return as_torchrl(open_env(cfg, checkpoint, render_mode))


def open_env(cfg: RenderConfig, checkpoint: Payload = None,
             render_mode: str | None = None) -> GymnasiumEnv | EnvBase:
    """The run's env for ``cfg``: a :class:`GymnasiumEnv` for a gymnasium env (torchrl on demand), else the
    torchrl env (``render_mode`` is a default the config can override)."""
    spec = RenderEnvSpec.from_config(cfg, checkpoint=checkpoint, render_mode=render_mode)
    raw = make_raw_env(cfg, checkpoint, render_mode)
    if cfg.env_backend in ("auto", "gym", "gymnasium") and is_gymnasium(raw):
        return GymnasiumEnv(raw, lambda env: _gym_wrapper(env, spec.device))
    return to_torchrl_env(raw, device=spec.device, backend=cfg.env_backend, source=cfg.env)


def as_torchrl(env: GymnasiumEnv | EnvBase) -> EnvBase:
    """The torchrl env of what :func:`open_env` returned (a :class:`GymnasiumEnv` builds its wrapper)."""
    return env.torchrl if isinstance(env, GymnasiumEnv) else env


def make_raw_env(cfg: RenderConfig, checkpoint: Payload = None, render_mode: str | None = None) -> UserEnv:
    """What the env factory (or the id shortcut) returns, before any wrapping."""
    spec = RenderEnvSpec.from_config(cfg, checkpoint=checkpoint, render_mode=render_mode)
    try:
        return _raw_env(cfg, spec)
    except Exception as exc:
        gl_error = missing_gl_library()  # MuJoCo envs fail obscurely when MUJOCO_GL's library is missing
        if gl_error is not None:
            raise gl_error from exc
        raise


def _raw_env(cfg: RenderConfig, spec: RenderEnvSpec) -> UserEnv:
    if is_env_object(cfg.env):
        return cfg.env  # an env instance: used as it is
    if isinstance(cfg.env, str) and ":" not in cfg.env:
        return _from_shortcut(cfg.env, spec)
    factory = resolve(cfg.env, "env")
    if cfg.render_mode is not None and not receives(factory, spec, cfg.env_kwargs, "render_mode", "env"):
        raise EnvError(f"the env factory {factory_name(factory)} takes no render_mode parameter (nor a spec), so "
                       f"--render-mode {cfg.render_mode} cannot reach it",
                       expected="a factory that takes render_mode (or spec, and reads spec.render_mode)",
                       got=f"parameters {list(inspect.signature(factory).parameters)}",
                       fix="add the parameter and forward it, e.g. def make_env(render_mode=None): return "
                           "gymnasium.make(..., render_mode=render_mode); or drop --render-mode")
    return call_factory(factory, spec, cfg.env_kwargs, "env")


def is_env_object(obj: object) -> bool:
    """An env instance (torchrl, gymnasium, dm_control) rather than a factory or an id."""
    if isinstance(obj, (str, type)) or obj is None:
        return False
    base = loaded_class("torchrl.envs", "EnvBase")  # a torchrl env means torchrl is imported already
    return (base is not None and isinstance(obj, base)) or is_gymnasium(obj) or is_dm_env(obj)


def _from_shortcut(name: str, spec: RenderEnvSpec) -> gymnasium.Env[object, object] | Environment:
    if name.startswith(DM_PREFIX):
        return _dm_control(name[len(DM_PREFIX):], spec)
    return _gymnasium(name, spec)


def import_namespace(env_id: str) -> None:
    """Imports the package that an id's namespace names (``gym_pusht/PushT-v0``: ``gym_pusht``) when the id is
    not registered yet: LeRobot's env packages (gym_pusht, gym_aloha, gym_xarm) register their ids on import,
    which a fresh interpreter has not done. Nothing happens when no such package is installed."""
    import gymnasium

    namespace = env_id.split("/", 1)[0] if "/" in env_id else ""
    if env_id not in gymnasium.registry and namespace.isidentifier() and importlib.util.find_spec(namespace):
        importlib.import_module(namespace)


def _gymnasium(env_id: str, spec: RenderEnvSpec) -> gymnasium.Env[object, object]:
    import gymnasium

    import_namespace(env_id)
    if env_id not in gymnasium.registry:
        raise EnvError(f"{env_id!r} is neither 'module:object' nor a registered gymnasium id."
                       f"{did_you_mean(env_id, gymnasium.registry)}",
                       expected="'mypkg.env:make_env', 'path/env.py:make_env', a gymnasium id such as "
                                "'HalfCheetah-v5', or 'dm_control/cheetah-run'", got=env_id,
                       fix="add the colon and factory name, or correct the id")
    kwargs = dict(spec.env_kwargs)
    if spec.render_mode is not None:
        kwargs.setdefault("render_mode", spec.render_mode)
    entry = str(gymnasium.spec(env_id).entry_point)
    if spec.render_mode is not None and entry.startswith(_PYGAME_ENVS):
        _check_pygame(env_id)
    if "mujoco" in entry:
        kwargs.setdefault("width", spec.width)
        kwargs.setdefault("height", spec.height)
    try:
        return gymnasium.make(env_id, **kwargs)
    except Exception as exc:
        raise EnvError(f"gymnasium.make({env_id!r}) raised {type(exc).__name__}: {exc}",
                       fix="check --env-kwargs, or install the env's extra "
                           "(e.g. pip install 'gymnasium[mujoco]')") from exc


def _check_pygame(env_id: str) -> None:
    """gymnasium draws its classic-control (and toy-text, box2d) envs with pygame, imported at the first render."""
    import os

    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")  # pygame prints a banner on stdout otherwise
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")   # off-screen surfaces only; no display warnings
    try:
        import pygame  # noqa: F401
    except ImportError as exc:
        raise EnvError(f"{env_id!r} needs pygame to render its frames (gymnasium draws it with pygame), and pygame "
                       "cannot be imported", expected="pygame installed", got=f"ImportError: {exc}",
                       fix="install it, or pick a format that needs no frames (--format jsonl)",
                       extra="'gymnasium[classic-control]'") from exc


def _dm_control(name: str, spec: RenderEnvSpec) -> Environment:
    from dm_control import suite

    domain, _, task = name.partition("-")
    known = [f"{d}-{t}" for d, t in suite.ALL_TASKS]
    if (domain, task) not in suite.ALL_TASKS:
        raise EnvError(f"'dm_control/{name}' is not a dm_control suite task.{did_you_mean(name, known)}",
                       expected="dm_control/<domain>-<task>, e.g. dm_control/cheetah-run", got=name,
                       fix="pick a task from dm_control.suite.ALL_TASKS")
    task_kwargs = {"random": spec.seed} if spec.seed is not None else {}
    return suite.load(domain, task, task_kwargs=task_kwargs, environment_kwargs=dict(spec.env_kwargs) or None)


def to_torchrl_env(obj: UserEnv, device: str = "cpu", backend: str = "auto",
                   source: str | UserFactory[UserEnv] | UserEnv | None = None) -> EnvBase:
    """Wraps ``obj`` into a torchrl env; an informative :class:`EnvError` otherwise."""
    if isinstance(obj, GymnasiumEnv):
        return obj.torchrl
    from torchrl.envs import EnvBase

    if isinstance(obj, EnvBase):
        return obj
    if backend in ("auto", "gym", "gymnasium") and is_gymnasium(obj):
        return _gym_wrapper(obj, device)
    if backend in ("auto", "dm_control") and is_dm_env(obj):
        from torchrl.envs import DMControlWrapper

        return DMControlWrapper(obj, device=device)
    if backend == "isaaclab":  # an already-batched Isaac Lab env
        from .isaaclab import wrap_isaaclab  # imports torchrl and torch: only for Isaac Lab envs

        return wrap_isaaclab(obj, device)
    raise EnvError(f"the env factory {factory_name(source)} returned a "
                   f"{type(obj).__module__}.{type(obj).__qualname__}, "
                   "which is not an environment",
                   expected="a torchrl EnvBase, a gymnasium.Env or a dm_control Environment"
                            + ("" if backend == "auto" else f" matching env_backend={backend!r}"),
                   got=type(obj).__qualname__, fix="return the env object itself from the factory")


def _gym_wrapper(obj: UserEnv, device: str) -> GymWrapper:
    """torchrl's ``GymWrapper`` of a gymnasium env, reading its success reports, with float64 rewards."""
    from torchrl.envs import GymWrapper

    wrapped = GymWrapper(obj, device=device).set_info_dict_reader(success_reader())
    wrapped._torchrl_render_wrapped = True  # ours: the engine may step ``obj`` directly
    _keep_float64_reward(wrapped)
    return wrapped


def _keep_float64_reward(env: EnvBase) -> None:
    """gymnasium's rewards are Python floats (float64); torchrl's wrapper would store them as float32, and
    the torchrl path's returns would then differ from a plain gymnasium loop's in the last digits."""
    import torch
    from torchrl.data import Unbounded

    spec = env.reward_spec
    if spec.dtype == torch.float32:
        env.reward_spec = Unbounded(shape=spec.shape, dtype=torch.float64, device=spec.device)


def success_reader() -> BaseInfoDictReader:
    """Reads gymnasium's ``info["is_success"]`` (or ``info["success"]``) into the step TensorDict.

    Writes ``success`` and ``success_reported`` (both bool, shape ``(1,)``) at every reset and
    step, so the keys are the same at every step; ``success_reported`` is False when the info
    had neither key, and the episode's success stays unknown (``None``) unless reported.
    """
    import numpy as np
    import torch
    from torchrl.data import Composite, Unbounded
    from torchrl.envs.gym_like import BaseInfoDictReader

    class SuccessReader(BaseInfoDictReader):
        def __call__(self, info_dict: dict[str, object], tensordict: TensorDictBase) -> TensorDictBase:
            value = info_dict.get("is_success", info_dict.get("success"))
            reported = value is not None
            success = bool(np.any(np.asarray(value))) if reported else False
            tensordict.set("success", torch.tensor([success]))
            tensordict.set("success_reported", torch.tensor([reported]))
            return tensordict

        @property
        def info_spec(self) -> Composite:
            return Composite(success=Unbounded(shape=(1,), dtype=torch.bool),
                             success_reported=Unbounded(shape=(1,), dtype=torch.bool))

    return SuccessReader()


def describe_env(env: UserEnv) -> dict[str, Json]:
    """A JSON-ready description of the env for the metadata."""
    batched: type[BatchedEnvBase] | None = loaded_class("torchrl.envs.batched_envs", "BatchedEnvBase")
    raw = underlying_env(env)
    if batched is not None and isinstance(raw, batched):
        return {"class": type(env).__name__, "batched": type(raw).__name__, "num_envs": int(raw.batch_size[0]),
                "batch_size": list(env.batch_size)}
    spec = getattr(getattr(raw, "unwrapped", raw), "spec", None) or getattr(raw, "spec", None)
    name = "GymWrapper" if isinstance(env, GymnasiumEnv) else type(env).__name__  # the class torchrl would have
    return {"class": name, "raw_class": f"{type(raw).__module__}.{type(raw).__qualname__}",
            "id": getattr(spec, "id", None), "batch_size": list(getattr(env, "batch_size", [])),
            "mujoco_model_path": model_file(env)}  # where replay finds the model of saved rollouts
