"""HalfCheetah-v5 policy trained with Augmented Random Search (ARS V2-t).

A linear policy on normalised observations:
``action = clamp(W @ ((obs - obs_mean) / obs_std) + b, -1, 1)``, trained in
plain numpy by ``examples/half_cheetah/train.py`` (see ``examples/ars.py``)
and shipped as ``examples/half_cheetah/policy.pt`` (a few KB).

Render the shipped policy (the renderer loads ``policy.pt``'s
``"model_state_dict"`` into ``make_policy()``)::

    MUJOCO_GL=egl python -m torchrl_render --ckpt examples/half_cheetah/policy.pt \\
        --policy examples/half_cheetah/policy.py:make_policy \\
        --env examples/half_cheetah/policy.py:make_env --out cheetah.mp4

Retrain (about 11 minutes on 2 CPU cores; overwrites ``policy.pt``)::

    python examples/half_cheetah/train.py --minutes 11 --seed 0 --out examples/half_cheetah/policy.pt

Evaluate (seeds 0-4, 1000 steps, deterministic)::

    python examples/evaluate.py half_cheetah
"""

from __future__ import annotations

import gymnasium as gym
import torch
from torch import nn

ENV_ID = "HalfCheetah-v5"
OBS_DIM = 17
ACT_DIM = 6
ACT_LOW = -1.0
ACT_HIGH = 1.0
FLOOR_HALF_SIZE = 1000.0  # metres; the shipped policy runs ~285 m in 1000 steps

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
    """``gymnasium.make("HalfCheetah-v5", ...)`` with render_mode/width/height from ``spec`` (if set).

    Frames come from the model's ``"track"`` camera (side view following the
    cheetah's centre of mass): gymnasium 1.x's default view for HalfCheetah-v5
    is a free camera that stays put, so a running cheetah leaves the picture
    within a second. Pass ``camera_name``/``camera_id``/``default_camera_config``
    in ``spec.env_kwargs`` (``--env-kwargs``) to choose another view.
    """
    kwargs = {}
    for name, default in (("render_mode", None), ("width", 480), ("height", 480)):
        value = getattr(spec, name, default)
        if value is not None:
            kwargs[name] = value
    env_kwargs = dict(getattr(spec, "env_kwargs", None) or {})
    if not {"camera_name", "camera_id", "default_camera_config"} & env_kwargs.keys():
        kwargs["camera_name"] = "track"
    kwargs.update(env_kwargs)
    env = gym.make(ENV_ID, **kwargs)
    _extend_floor(env.unwrapped)
    return env


def _extend_floor(raw_env, half_size: float = FLOOR_HALF_SIZE) -> None:
    """Draws the floor out to ``half_size`` metres, keeping the checker size.

    The stock floor is drawn 40 m each way; the trained cheetah passes that in
    about 150 steps and would then run over an empty background. A MuJoCo
    plane collides over its whole infinite extent whatever its size, so this
    changes only the picture, not the dynamics.
    """
    import mujoco

    model = getattr(raw_env, "model", None)
    if model is None:
        return
    geom = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "floor")
    if geom < 0 or model.geom_size[geom, 0] >= half_size:
        return
    scale = half_size / model.geom_size[geom, 0]
    model.geom_size[geom, :2] *= scale
    material = model.geom_matid[geom]
    if material >= 0:
        model.mat_texrepeat[material] *= scale


def make_policy(spec=None) -> LinearPolicy:
    """An untrained :class:`LinearPolicy`; the renderer loads ``policy.pt`` into it."""
    return LinearPolicy(OBS_DIM, ACT_DIM, ACT_LOW, ACT_HIGH)
