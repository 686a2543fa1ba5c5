"""The live side of a run: the MuJoCo state behind a step record, for the html format and ``mujoco_qpos_key``.

Example:
    >>> import gymnasium as gym
    >>> from types import SimpleNamespace
    >>> env = gym.make("InvertedPendulum-v5")
    >>> _ = env.reset(seed=0)
    >>> model, state = read_live_state(SimpleNamespace(env=env, trajectory=0, step=0), {}, None)
    >>> model.nq, sorted(state)[:2]
    (2, ['act', 'ctrl'])
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from .state import MujocoStateReader

__all__ = ["read_live_state"]


def read_live_state(record: Any, readers: dict[int, Any], cfg: Any) -> tuple[Any, dict[str, Any]]:
    """``(MjModel, state arrays)`` of ``record.env``; the reader is built once per env (``readers`` caches it)."""
    env = record.env
    if env is None:
        raise ConfigError(
            "the html format and mujoco_qpos_key read the MuJoCo state of the env, and this run's records "
            "carry no env (with --num-envs > 1 the envs live in worker processes)",
            expected="--num-envs 1", got=f"num_envs={getattr(cfg, 'num_envs', '?')}",
            fix="run with --num-envs 1 for --out *.html or --mujoco-qpos-key")
    entry = readers.get(id(env))
    if entry is None:
        reader = MujocoStateReader()
        model = reader.model(env)
        if model is None:
            raise ConfigError(
                "the html format draws MuJoCo models, and this env has none",
                expected="a gymnasium MuJoCo env or a dm_control env (a mujoco.MjModel behind the env)",
                got=type(env).__name__, fix="use a video format (--out run.mp4) for this env")
        entry = readers[id(env)] = (reader, model)
    reader, model = entry
    return model, reader.read(env)
