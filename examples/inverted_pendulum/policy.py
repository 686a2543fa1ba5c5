"""InvertedPendulum-v5 policy trained with Augmented Random Search (ARS V2-t).

A linear policy on normalised observations:
``action = clamp(W @ ((obs - obs_mean) / obs_std) + b, -3, 3)``, trained in
plain numpy by ``examples/inverted_pendulum/train.py`` (see ``examples/ars.py``)
and shipped as ``examples/inverted_pendulum/policy.pt`` (a few KB). It keeps
the pole up for the full 1000 steps.

Render the shipped policy (the renderer loads ``policy.pt``'s
``"model_state_dict"`` into ``make_policy()``)::

    MUJOCO_GL=egl python -m torchrl_render --ckpt examples/inverted_pendulum/policy.pt \\
        --policy examples/inverted_pendulum/policy.py:make_policy \\
        --env examples/inverted_pendulum/policy.py:make_env --out pendulum.mp4

Retrain (seconds; stops once the pole stays up for 1000 steps on 8
evaluation episodes; overwrites ``policy.pt``)::

    python examples/inverted_pendulum/train.py --seed 0 --out examples/inverted_pendulum/policy.pt

Evaluate (seeds 0-4, 1000 steps, deterministic)::

    python examples/evaluate.py inverted_pendulum
"""

from __future__ import annotations

import gymnasium as gym
import torch
from torch import nn

ENV_ID = "InvertedPendulum-v5"
OBS_DIM = 4
ACT_DIM = 1
ACT_LOW = -3.0
ACT_HIGH = 3.0

__all__ = ["ENV_ID", "LinearPolicy", "make_env", "make_policy"]


class LinearPolicy(nn.Module):
    """``clamp(linear((obs - obs_mean) / obs_std), act_low, act_high)``, all float32.

    Accepts observations of shape ``[..., obs_dim]`` of any float dtype and
    returns float32 actions of shape ``[..., act_dim]``.
    """

    def __init__(self, obs_dim: int, act_dim: int, act_low: float = -1.0, act_high: float = 1.0):
        super().__init__()
        self.linear = nn.Linear(obs_dim, act_dim)
        nn.init.zeros_(self.linear.weight)
        nn.init.zeros_(self.linear.bias)
        self.register_buffer("obs_mean", torch.zeros(obs_dim))
        self.register_buffer("obs_std", torch.ones(obs_dim))
        self.register_buffer("act_low", torch.full((act_dim,), float(act_low)))
        self.register_buffer("act_high", torch.full((act_dim,), float(act_high)))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        obs = obs.to(self.obs_mean.dtype)
        action = self.linear((obs - self.obs_mean) / self.obs_std)
        return torch.clamp(action, self.act_low, self.act_high)


def make_env(spec=None):
    """``gymnasium.make("InvertedPendulum-v5", ...)`` with render_mode/width/height from ``spec`` (if set)."""
    kwargs = {}
    for name, default in (("render_mode", None), ("width", 480), ("height", 480)):
        value = getattr(spec, name, default)
        if value is not None:
            kwargs[name] = value
    kwargs.update(getattr(spec, "env_kwargs", None) or {})
    return gym.make(ENV_ID, **kwargs)


def make_policy(spec=None) -> LinearPolicy:
    """An untrained :class:`LinearPolicy`; the renderer loads ``policy.pt`` into it."""
    return LinearPolicy(OBS_DIM, ACT_DIM, ACT_LOW, ACT_HIGH)
