"""Factories shaped like those of TorchRL's ``sota-implementations/ppo/utils_mujoco.py`` (written here, for tests).

What matters is their contract with the renderer, which is what TorchRL's own factories rely on:
they read the env settings from ``spec.checkpoint`` only when it is a ``dict`` (the payload of
``load_checkpoint``), take ``env_kwargs`` / ``policy_kwargs`` over it, build a torchrl ``GymEnv``
with float observations and a ``StepCounter`` when the checkpoint names ``max_episode_steps``, and a
TanhNormal ``ProbabilisticActor`` whose weights the renderer loads from ``model_state_dict``.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict.nn import NormalParamExtractor, TensorDictModule
from torchrl.envs import DoubleToFloat, StepCounter, TransformedEnv
from torchrl.envs.libs.gym import GymEnv
from torchrl.modules import MLP, ProbabilisticActor, TanhNormal

DEFAULT_ENV = "InvertedPendulum-v4"


def _settings(spec: Any, kwargs: dict[str, Any]) -> tuple[str, int | None]:
    checkpoint = spec.checkpoint if isinstance(getattr(spec, "checkpoint", None), dict) else {}
    name = kwargs.get("env_name", checkpoint.get("env_name", DEFAULT_ENV))
    return name, kwargs.get("max_episode_steps", checkpoint.get("max_episode_steps"))


def make_env(env_name: str = DEFAULT_ENV, device: Any = "cpu", max_episode_steps: int | None = None) -> Any:
    """The training env: gymnasium's MuJoCo task in torchrl, float32 observations, an optional time limit."""
    env = TransformedEnv(GymEnv(env_name, device=device), DoubleToFloat())
    if max_episode_steps is not None:
        env.append_transform(StepCounter(max_steps=int(max_episode_steps)))
    return env


def make_actor(env: Any) -> Any:
    """A small TanhNormal actor for ``env``'s observation and action specs."""
    n_obs = env.observation_spec["observation"].shape[-1]
    n_act = env.action_spec.shape[-1]
    net = torch.nn.Sequential(MLP(in_features=n_obs, out_features=2 * n_act, num_cells=[16]), NormalParamExtractor())
    module = TensorDictModule(net, in_keys=["observation"], out_keys=["loc", "scale"])
    spec = env.action_spec
    return ProbabilisticActor(module, in_keys=["loc", "scale"], spec=spec, distribution_class=TanhNormal,
                              distribution_kwargs={"low": spec.space.low, "high": spec.space.high},
                              return_log_prob=False)


def make_render_env(spec: Any) -> Any:
    """The renderer's env factory (one spec argument)."""
    name, steps = _settings(spec, spec.env_kwargs)
    return make_env(name, device=spec.device, max_episode_steps=steps)


def make_render_policy(spec: Any) -> Any:
    """The renderer's policy factory: the actor of a proof env of the checkpoint's task."""
    name, steps = _settings(spec, spec.policy_kwargs)
    proof = make_env(name, device=spec.device, max_episode_steps=steps)
    try:
        return make_actor(proof)
    finally:
        proof.close()
