"""A fake with Isaac Lab's API shape (Isaac Lab cannot be installed here): ``num_envs`` copies on a
torch ``device``, dict observations with a ``"policy"`` group, torch tensors in and out, and
sub-envs reset by the env itself when their episode ends (at ``episode_length`` steps, or when
``|x| > 1``). Copy ``i`` of a seeded env starts at ``x = 0.1 * (i + 1) * sign``.
"""

from __future__ import annotations

import torch


class Box:
    def __init__(self, shape):
        self.shape = shape


class FakeIsaacEnv:
    def __init__(self, num_envs: int = 4, episode_length: int = 5, device: str = "cpu") -> None:
        self.num_envs, self.episode_length, self.device = num_envs, episode_length, torch.device(device)
        self.single_action_space = Box((1,))
        self.action_space = Box((num_envs, 1))
        self.seeded = []
        self.x = torch.zeros(num_envs, 2)
        self.t = torch.zeros(num_envs, dtype=torch.long)
        self.closed = False

    def _obs(self):
        return {"policy": self.x.clone(), "critic": torch.cat([self.x, self.t[:, None].float()], -1)}

    def _start(self, ids):
        self.x[ids, 0] = 0.1 * (ids.float() + 1)
        self.x[ids, 1] = 0.0
        self.t[ids] = 0

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.seeded.append(seed)
        self._start(torch.arange(self.num_envs))
        return self._obs(), {}

    def step(self, action):
        assert isinstance(action, torch.Tensor) and action.shape == (self.num_envs, 1)
        self.x[:, 1] = self.x[:, 0]
        self.x[:, 0] = self.x[:, 0] + action[:, 0]
        self.t += 1
        reward = -self.x[:, 0].abs()
        terminated = self.x[:, 0].abs() > 1.0
        truncated = (self.t >= self.episode_length) & ~terminated
        ended = torch.nonzero(terminated | truncated).reshape(-1)
        if len(ended):
            self._start(ended)  # Isaac Lab resets finished sub-envs inside step
        return self._obs(), reward, terminated, truncated, {}

    def close(self):
        self.closed = True


def make_env(num_envs: int = 4, episode_length: int = 5):
    return FakeIsaacEnv(num_envs, episode_length)


class Push(torch.nn.Module):
    """action = 0.3 (a fixed push), batched over sub-envs."""

    def forward(self, obs):
        return torch.full((*obs.shape[:-1], 1), 0.3)


def make_policy():
    return Push()
