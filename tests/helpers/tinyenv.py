"""TinyEnv: a fast torchrl env for unit tests (no simulator).

The state is a 3-vector; the episode length depends on the seed (``base_len +
seed % 3``) so that seeding is observable; ``pixels=True`` adds a small uint8
image whose colour encodes the step, so frames can be checked after decoding.
"""

from __future__ import annotations

import torch
from tensordict import TensorDict, TensorDictBase
from torchrl.data import Bounded, Composite, Unbounded
from torchrl.envs import EnvBase


class TinyEnv(EnvBase):
    """A deterministic toy env: reward = -|x0|, action pushes x0."""

    def __init__(self, pixels: bool = False, size: int = 16, base_len: int = 5, obs_dtype=torch.float32,
                 fail_at: int | None = None, device: str = "cpu") -> None:
        super().__init__(device=device, batch_size=torch.Size([]))
        self.pixels, self.size, self.base_len, self.fail_at = pixels, size, base_len, fail_at
        obs = {"observation": Unbounded(shape=(3,), dtype=obs_dtype, device=device)}
        if pixels:
            obs["pixels"] = Bounded(0, 255, shape=(size, size, 3), dtype=torch.uint8, device=device)
        self.observation_spec = Composite(obs, device=device)
        self.action_spec = Bounded(-1.0, 1.0, shape=(1,), device=device)
        self.reward_spec = Unbounded(shape=(1,), device=device)
        self.obs_dtype = obs_dtype
        self._seed = 0
        self.t = 0
        self.state = torch.zeros(3, dtype=obs_dtype)

    def _obs(self) -> TensorDictBase:
        out = {"observation": self.state.clone()}
        if self.pixels:
            img = torch.zeros(self.size, self.size, 3, dtype=torch.uint8)
            img[..., 0] = min(255, 20 * self.t)
            img[..., 1] = 128
            out["pixels"] = img
        return out

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs) -> TensorDictBase:
        self.t = 0
        gen = torch.Generator().manual_seed(self._seed)
        self.state = torch.randn(3, generator=gen).to(self.obs_dtype)
        self.length = self.base_len + self._seed % 3
        return TensorDict({**self._obs(), "done": torch.zeros(1, dtype=torch.bool),
                           "terminated": torch.zeros(1, dtype=torch.bool)}, batch_size=[])

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        self.t += 1
        if self.fail_at is not None and self.t == self.fail_at:
            raise RuntimeError(f"TinyEnv exploded at t={self.t}")
        action = tensordict.get("action").to(self.obs_dtype)
        self.state = self.state + torch.cat([action.reshape(1), torch.zeros(2, dtype=self.obs_dtype)])
        done = torch.tensor([self.t >= self.length])
        return TensorDict({**self._obs(), "reward": -self.state[:1].abs().float(), "done": done,
                           "terminated": done.clone()}, batch_size=[])

    def _set_seed(self, seed: int | None) -> int | None:
        self._seed = int(seed or 0)
        return seed


def make_env(spec=None, pixels: bool = False, **kwargs) -> TinyEnv:
    """Factory: ``helpers.tinyenv:make_env`` (``env_kwargs`` go to TinyEnv)."""
    return TinyEnv(pixels=pixels or bool(getattr(spec, "from_pixels", False)), **kwargs)


def make_policy(spec=None) -> torch.nn.Module:
    """Factory: a tensor policy (Linear 3 -> 1, then tanh)."""
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Tanh())


def note_this_process() -> None:
    """Appends a line to ``$TORCHRL_RENDER_TEST_NOTES``: this process's pid, its parent's, the
    ``$TORCHRL_RENDER_TEST_MARK`` it sees and how many objects its garbage collector leaves out
    (``gc.get_freeze_count()``)."""
    import gc
    import os

    with open(os.environ["TORCHRL_RENDER_TEST_NOTES"], "a") as fh:
        fh.write(f"{os.getpid()} {os.getppid()} {os.environ.get('TORCHRL_RENDER_TEST_MARK')} {gc.get_freeze_count()}\n")


def make_env_noting_its_process(spec=None, **kwargs) -> TinyEnv:
    """``make_env``, after :func:`note_this_process`."""
    note_this_process()
    return make_env(spec, **kwargs)
