"""Real simulator envs for the backend tests (gymnasium MuJoCo, dm_control), kept tiny.

Importing this module makes GL headless first (``ensure_headless_gl``), before
gymnasium's MuJoCo envs or dm_control import ``mujoco``. Frames are 64x64.
"""

from __future__ import annotations

import types

from torchrl_render.envs.gl import ensure_headless_gl

ensure_headless_gl()

import torch
from tensordict import TensorDict, TensorDictBase
from torchrl.data import Bounded, Composite, Unbounded
from torchrl.envs import EnvBase

SIZE = 64

try:
    from torchrl_render.config import RenderConfig
except Exception:
    RenderConfig = None


def cfg(**kwargs):
    """A RenderConfig for the tests (64x64), or a SimpleNamespace with the same fields."""
    kwargs.setdefault("width", SIZE)
    kwargs.setdefault("height", SIZE)
    if RenderConfig is not None:
        return RenderConfig(policy="p:m", env="e:m", **kwargs)
    fields = {"camera": ["default"], "render_quality": "default", "pixel_key": "pixels", "render_mode": None}
    fields.update(kwargs)
    if isinstance(fields["camera"], str):
        fields["camera"] = [c.strip() for c in fields["camera"].split(",")]
    return types.SimpleNamespace(**fields)


def gym_env(env_id: str = "InvertedPendulum-v5", size: int = SIZE, from_pixels: bool = False, **make_kwargs):
    """``GymWrapper(gymnasium.make(env_id, width=size, height=size, ...))``."""
    import gymnasium
    from torchrl.envs import GymWrapper

    if from_pixels:
        make_kwargs.setdefault("render_mode", "rgb_array")
    raw = gymnasium.make(env_id, width=size, height=size, **make_kwargs)
    return GymWrapper(raw, from_pixels=from_pixels, pixels_only=False) if from_pixels else GymWrapper(raw)


def gym_cartpole():
    """CartPole-v1 without render_mode: a real env that renders nothing (and needs no pygame)."""
    import gymnasium
    from torchrl.envs import GymWrapper

    return GymWrapper(gymnasium.make("CartPole-v1"))


def dm_env(from_pixels: bool = False, size: int = SIZE):
    """``DMControlWrapper(suite.load("cartpole", "balance"))``; its model has cameras 'fixed' and 'lookatcart'."""
    from dm_control import suite
    from torchrl.envs import DMControlWrapper

    raw = suite.load("cartpole", "balance", task_kwargs={"random": 0})
    if from_pixels:
        return DMControlWrapper(raw, from_pixels=True, pixels_only=False,
                                render_kwargs={"height": size, "width": size})
    return DMControlWrapper(raw)


def close_env(env) -> None:
    """Closes ``env``, first freeing gymnasium's viewers in their own GL contexts (see ``free_gymnasium_gl``)."""
    from torchrl_render.backends.mujoco import free_gymnasium_gl

    free_gymnasium_gl(env)
    env.close()


def steps(env, td: TensorDictBase, n: int) -> TensorDictBase:
    """``n`` random steps from ``td``; returns the last ``next`` view (what the pipeline captures)."""
    from torchrl.envs.utils import step_mdp

    nxt = td
    for _ in range(n):
        td = env.rand_step(td)
        nxt = td.get("next")
        td = step_mdp(td)
    return nxt


class NoRenderEnv(EnvBase):
    """A torchrl env without pixels and without render()."""

    def __init__(self) -> None:
        super().__init__(batch_size=torch.Size([]))
        self.observation_spec = Composite(observation=Unbounded(shape=(2,)))
        self.action_spec = Bounded(-1.0, 1.0, shape=(1,))
        self.reward_spec = Unbounded(shape=(1,))

    def _reset(self, tensordict=None, **kwargs) -> TensorDictBase:
        return TensorDict(observation=torch.zeros(2), done=torch.zeros(1, dtype=torch.bool),
                          terminated=torch.zeros(1, dtype=torch.bool))

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        return TensorDict(observation=torch.ones(2), reward=torch.zeros(1), done=torch.zeros(1, dtype=torch.bool),
                          terminated=torch.zeros(1, dtype=torch.bool))

    def _set_seed(self, seed):
        return seed


class RenderingEnv(NoRenderEnv):
    """A torchrl env whose render() returns ``(1, 8, 8, 3)`` uint8 (a batch of one, like torchrl's MuJoCo envs)."""

    def __init__(self, result: str = "image") -> None:
        super().__init__()
        self.result = result
        self.calls = 0

    def render(self):
        self.calls += 1
        if self.result == "none":
            return None
        return torch.full((1, 8, 8, 3), self.calls % 256, dtype=torch.uint8)
