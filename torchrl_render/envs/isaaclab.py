"""``env_backend="isaaclab"``: Isaac Lab's already-batched torch envs as one batched torchrl env.

An Isaac Lab env (``gymnasium.make("Isaac-...")``) simulates ``num_envs`` copies at once on its
``device``: ``reset()`` gives ``({"policy": tensor(N, ...), ...}, info)``; ``step(action(N, A))`` gives
observations, rewards, ``terminated`` and ``truncated`` (all ``(N,)`` tensors) and resets the copies that
finished by itself. The adapter is a torchrl env of batch size ``(N,)``: the ``policy`` group is the
``observation`` (other groups keep their names), a sub-env that the env finished has already been
reset, so a partial reset hands back the observation the step returned.

How it maps onto our engine (recorded in the run's notes):

* the env's ``num_envs`` copies are the run's env slots: ``num_envs`` is taken from the env
  (``--num-envs`` must be left at 1 or equal it); the copies take episodes ``0, 1, ...`` in order,
  each runs whole episodes, and copies left without an episode keep stepping (the simulator steps
  them all) while their transitions are dropped;
* the simulator is seeded once, with ``seed`` (its copies share one random stream), so episode
  ``i`` is not reset with ``seed + i`` as on the other backends;
* an episode ends when the env ends it (its own ``episode_length_s``); ``max_steps`` below that
  cannot reset one copy alone, and is refused by the adapter when it would;
* frames come from Isaac Lab's cameras, which this adapter does not read yet: use a data format
  (``json``, ``jsonl``, ``npz``).

Example:
    >>> "isaaclab" in __import__("torchrl_render.config", fromlist=["ENV_BACKENDS"]).ENV_BACKENDS
    True
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TypeAlias

import torch
from tensordict import TensorDict, TensorDictBase
from torchrl.data import Composite, Unbounded
from torchrl.envs import EnvBase

from ..config import RenderConfig
from ..contracts import UserEnv
from ..errors import ConfigError, EnvError

__all__ = ["IsaacLabAdapter", "is_isaaclab_like", "slots_config", "wrap_isaaclab"]

#: An Isaac Lab observation: ``(N, ...)`` tensors by group name (a group may hold named tensors itself).
Observation: TypeAlias = "torch.Tensor | Mapping[str, Observation]"


def is_isaaclab_like(obj: object) -> bool:
    """Has Isaac Lab's shape: ``num_envs``, ``device``, ``reset`` and ``step``."""
    return all(hasattr(obj, name) for name in ("num_envs", "device", "reset", "step"))


def wrap_isaaclab(env: UserEnv, device: str | None = None) -> IsaacLabAdapter:
    """The batched torchrl env around ``env`` (see the module docstring)."""
    if not is_isaaclab_like(env):
        raise EnvError("env_backend='isaaclab' needs an Isaac Lab env", expected="an env with num_envs, device, "
                       "reset() and step() on torch tensors (gymnasium.make('Isaac-...'))",
                       got=type(env).__qualname__, fix="return the Isaac Lab env from the factory, or pick "
                                                        "another --env-backend")
    return IsaacLabAdapter(env, device)


def slots_config(cfg: RenderConfig, env: IsaacLabAdapter, needs_frames: bool, notes: list[str]) -> RenderConfig:
    """The run's config with ``num_envs`` = the env's copies; seeds the simulator once."""
    n = int(env.batch_size[0])
    if cfg.num_envs not in (1, n):
        raise ConfigError(f"the Isaac Lab env simulates {n} sub-envs, and --num-envs says {cfg.num_envs}",
                          expected=f"--num-envs 1 (taken from the env) or {n}", got=cfg.num_envs,
                          fix="drop --num-envs; set the env's num_envs in its factory (e.g. --env-kwargs)")
    if needs_frames:
        raise ConfigError(f"format {cfg.format!r} needs frames, and the isaaclab backend does not read Isaac "
                          "Lab's cameras yet", expected="a data format: json, jsonl or npz", got=cfg.format,
                          fix="write --out run.json (or .jsonl, .npz)")
    out = copy.copy(cfg)  # not dataclasses.replace: num_envs may exceed num_trajs here (copies idle)
    out.num_envs = n
    if cfg.seed is not None:
        env.set_seed(cfg.seed)
    notes.append(f"isaaclab: the env's {n} sub-envs are the env slots; the simulator is seeded once with "
                 f"seed={cfg.seed} (episode i is not reset with seed+i)")
    return out


def _flatten(obs: Mapping[str, Observation]) -> dict[str, Observation]:
    """Observation groups as TensorDict entries: ``policy`` -> ``observation``."""
    return {("observation" if name == "policy" else str(name)): value for name, value in obs.items()}


def _spec_of(value: Observation, n: int, device: torch.device) -> Composite | Unbounded:
    if isinstance(value, Mapping):
        return Composite({k: _spec_of(v, n, device) for k, v in value.items()}, shape=(n,), device=device)
    return Unbounded(shape=tuple(value.shape), dtype=value.dtype, device=device)


class IsaacLabAdapter(EnvBase):
    """Isaac Lab's batched env as a torchrl env of batch size ``(num_envs,)`` (see the module docstring)."""

    batch_locked = True
    _torchrl_render_batched = True  # the engine uses it as its batch of env slots

    def __init__(self, env: UserEnv, device: str | None) -> None:
        n = int(env.num_envs)
        super().__init__(device=torch.device(device or env.device), batch_size=torch.Size([n]))
        self._env, self._ended = env, torch.zeros(n, dtype=torch.bool)
        self._seed: int | None = None
        obs, _ = env.reset()
        self._obs = _flatten(obs)
        self.observation_spec = Composite({k: _spec_of(v, n, self.device) for k, v in self._obs.items()},
                                          shape=(n,), device=self.device)
        space = getattr(env, "single_action_space", None)
        shape = tuple(space.shape) if space is not None else tuple(env.action_space.shape[1:])
        self.action_spec = Unbounded(shape=(n, *shape), device=self.device)
        self.reward_spec = Unbounded(shape=(n, 1), device=self.device)
        self.full_done_spec = Composite({k: Unbounded(shape=(n, 1), dtype=torch.bool, device=self.device)
                                         for k in ("done", "terminated", "truncated")}, shape=(n,),
                                        device=self.device)

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: object) -> TensorDictBase:
        mask = tensordict.get("_reset", None) if tensordict is not None else None
        mask = mask.reshape(-1).to("cpu") if mask is not None else None
        if mask is None or bool(mask.all()):
            obs, _ = self._env.reset(seed=self._seed) if self._seed is not None else self._env.reset()
            self._seed, self._obs = None, _flatten(obs)  # seeded once: the copies share one stream
            self._ended[:] = False
        elif bool((mask & ~self._ended).any()):
            ids = torch.nonzero(mask & ~self._ended).reshape(-1).tolist()
            raise EnvError(f"Isaac Lab resets its sub-envs itself; sub-envs {ids[:8]} were asked to reset "
                           "before the env ended their episode", expected="episodes ended by the env (its "
                           "episode_length_s)", got="--max-steps shorter than the env's episodes",
                           fix="drop --max-steps and set the env's episode_length_s instead")
        self._ended &= ~(mask if mask is not None else self._ended)
        return self._out({})

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        obs, reward, terminated, truncated, _ = self._env.step(tensordict.get("action"))
        self._obs = _flatten(obs)
        terminated = torch.as_tensor(terminated, device=self.device).reshape(-1, 1).bool()
        truncated = torch.as_tensor(truncated, device=self.device).reshape(-1, 1).bool()
        self._ended = (terminated | truncated).reshape(-1).to("cpu")
        return self._out({"reward": torch.as_tensor(reward, device=self.device).reshape(-1, 1).float(),
                          "terminated": terminated, "truncated": truncated, "done": terminated | truncated})

    def _out(self, extra: dict[str, torch.Tensor]) -> TensorDict:
        n = self.batch_size[0]
        flags = {k: torch.zeros(n, 1, dtype=torch.bool, device=self.device)
                 for k in ("done", "terminated", "truncated")}
        return TensorDict({**flags, **self._obs, **extra}, batch_size=[n], device=self.device)

    def _set_seed(self, seed: int | None) -> None:
        self._seed = seed

    def close(self, *, raise_if_closed: bool = True) -> None:
        close = getattr(self._env, "close", None)
        if callable(close):
            close()
        super().close(raise_if_closed=raise_if_closed)
