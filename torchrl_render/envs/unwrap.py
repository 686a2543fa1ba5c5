"""Looking inside the user's env: the simulator behind torchrl's wrappers and transforms.

Used by the engine (qpos recording, plain gymnasium stepping), the render backends, the live
viewer and the replay: one place that knows how torchrl nests envs.

Example:
    >>> import gymnasium as gym
    >>> env = gym.make("InvertedPendulum-v5")
    >>> underlying_env(env) is env, is_gymnasium(env)
    (True, True)
    >>> model, data = find_simulation(env)
    >>> model.nq
    2
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..contracts import UserEnv
from ..keys import NestedKey

if TYPE_CHECKING:
    from gymnasium import Space
    from mujoco import MjData, MjModel
    from torchrl.envs import GymWrapper

__all__ = ["SIMULATION_PLACES", "describe_env", "find_simulation", "is_dm_env", "is_gymnasium", "model_file",
           "plain_gymnasium", "space_keys", "underlying_env"]


def underlying_env(env: UserEnv) -> UserEnv:
    """The raw simulator env behind a torchrl env (gymnasium ``Env``, dm_control ``Environment``).

    Unwraps ``TransformedEnv`` (``base_env``) and torchrl's library wrappers
    (``_env``); returns ``env`` itself when there is nothing to unwrap.
    """
    seen = 0
    while seen < 16:
        seen += 1
        # look in the instance's own storage, never through getattr: torchrl envs forward unknown
        # attributes (TransformedEnv to its base env, batched envs to their workers)
        own = getattr(env, "__dict__", {})
        modules = own.get("_modules") or {}
        inner = modules.get("base_env") or own.get("base_env") or own.get("_env") or modules.get("_env")
        if inner is None or inner is env:
            break
        env = inner
    return env


def plain_gymnasium(env: UserEnv) -> UserEnv | None:
    """The gymnasium env behind ``env`` when ``env`` is just our ``GymWrapper`` around it (no torchrl
    transforms of the user's), else None: such envs can be stepped without torchrl."""
    from .handle import GymnasiumEnv, loaded_class

    if isinstance(env, GymnasiumEnv):
        return env.raw
    # a GymWrapper means torchrl is imported already
    wrapper: type[GymWrapper] | None = loaded_class("torchrl.envs", "GymWrapper")
    if wrapper is None or type(env) is not wrapper or not getattr(env, "_torchrl_render_wrapped", False):
        return None
    return env._env if is_gymnasium(env._env) else None


def model_file(env: UserEnv) -> str | None:
    """The MuJoCo model file (absolute path) a gymnasium MuJoCo env was built from, else None.

    Gymnasium's ``MujocoEnv`` keeps it as ``fullpath``; dm_control builds its models from strings, so it
    has none. The sidecar and the saved rollouts record it, and ``replay`` finds the model from there.
    """
    from os.path import abspath, isfile

    from .handle import GymnasiumEnv

    raw = env.raw if isinstance(env, GymnasiumEnv) else underlying_env(env)
    path = getattr(getattr(raw, "unwrapped", raw), "fullpath", None)
    return abspath(path) if isinstance(path, str) and isfile(path) else None


def space_keys(space: Space, prefix: tuple[str, ...] = ()) -> set[NestedKey]:
    """The observation keys torchrl's ``GymWrapper`` gives a gymnasium observation space: ``"observation"``
    for a single space, a ``Dict``'s own keys (nested ones as tuples) otherwise, a top-level ``"state"``
    renamed ``"observation"`` when there is no ``"observation"`` (torchrl's convention).

    Example:
        >>> from gymnasium import spaces
        >>> sorted(space_keys(spaces.Dict(pixels=spaces.Box(0, 255, (2, 2, 3)), state=spaces.Box(-1, 1, (3,)))))
        ['observation', 'pixels']
    """
    from gymnasium import spaces

    if not isinstance(space, spaces.Dict):
        return {prefix if len(prefix) > 1 else prefix[0]} if prefix else {"observation"}
    keys: set[NestedKey] = set()
    for key, sub in space.spaces.items():
        keys |= space_keys(sub, (*prefix, str(key))) if isinstance(sub, spaces.Dict) else \
            {(*prefix, str(key)) if prefix else str(key)}
    if not prefix and "state" in keys and "observation" not in keys:
        keys = (keys - {"state"}) | {"observation"}
    return keys


def _is_mj(obj: object, name: str) -> bool:
    return type(obj).__name__ == name and type(obj).__module__.startswith("mujoco")


#: where :func:`find_simulation` looks, as error messages name it
SIMULATION_PLACES = ("env.physics (dm_control)", "env.unwrapped.model/.data (gymnasium MuJoCo)",
                     "env.unwrapped._env.physics / .env.physics (a dm_control task inside a gymnasium env, "
                     "as gym-aloha's)")


def describe_env(env: UserEnv) -> str:
    """The env's class, and the class under its gymnasium wrappers: ``'TimeLimit (unwrapped: AlohaEnv)'``."""
    raw = underlying_env(env)
    inner = getattr(raw, "unwrapped", raw)
    names = [type(env).__name__] + ([type(raw).__name__] if raw is not env else [])
    return " > ".join(names) + (f" (unwrapped: {type(inner).__name__})" if inner is not raw else "")


def find_simulation(env: UserEnv) -> tuple[MjModel, MjData] | None:
    """``(MjModel, MjData)`` behind ``env`` (torchrl-wrapped or raw), or ``None`` (see :data:`SIMULATION_PLACES`)."""
    for candidate in (env, underlying_env(env)):
        unwrapped = getattr(candidate, "unwrapped", candidate)
        own = getattr(unwrapped, "__dict__", {})  # a gymnasium env holding a dm_control Environment
        for holder in (candidate, own.get("_env"), own.get("env")):
            physics = getattr(holder, "physics", None)
            if physics is not None and hasattr(getattr(physics, "model", None), "ptr"):
                return physics.model.ptr, physics.data.ptr
        model, data = getattr(unwrapped, "model", None), getattr(unwrapped, "data", None)
        if _is_mj(model, "MjModel") and _is_mj(data, "MjData"):
            return model, data
    return None


def is_gymnasium(obj: object) -> bool:
    """Whether ``obj`` is a ``gymnasium.Env`` (False when gymnasium is not installed)."""
    try:
        import gymnasium
    except ImportError:
        return False
    return isinstance(obj, gymnasium.Env)


def is_dm_env(obj: object) -> bool:
    """Whether ``obj`` is a dm_env ``Environment`` (False when dm_env is not installed)."""
    try:
        import dm_env
    except ImportError:
        return False
    return isinstance(obj, dm_env.Environment)
