"""An env whose return is known from its seed, and policies for the tests of ``--render-select``;
importable by module name (``helpers.select_toys:...``) so CLI subprocesses and env workers build them.

Episode seeded ``s`` lasts ``expected(s)[1]`` steps and pays ``expected(s)[0]`` (plus the actions' sum)
at its last step, where it reports success when that return is positive; it renders 16x16 frames.
"""

from __future__ import annotations

import gymnasium
import numpy as np
import torch
from gymnasium.utils import seeding


def expected(seed: int) -> tuple[float, int]:
    """(return, length) of the episode reset with ``seed`` under a zero policy."""
    rng, _ = seeding.np_random(seed)
    return float(rng.integers(0, 9)) - 4.0, 2 + int(rng.integers(0, 3))


class SeedReturn(gymnasium.Env):
    """See the module docstring."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 30}
    observation_space = gymnasium.spaces.Box(-1e9, 1e9, (2,), np.float64)
    action_space = gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def __init__(self, render_mode: str | None = None) -> None:
        self.render_mode = render_mode
        self.t, self.value, self.length, self.pushed = 0, 0.0, 1, 0.0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.value = float(self.np_random.integers(0, 9)) - 4.0
        self.length = 2 + int(self.np_random.integers(0, 3))
        self.t, self.pushed = 0, 0.0
        return np.array([self.value, 0.0]), {}

    def step(self, action):
        self.t += 1
        self.pushed += float(np.asarray(action, np.float64).sum())
        end = self.t >= self.length
        reward = self.value + self.pushed if end else 0.0
        info = {"is_success": reward > 0} if end else {}
        return np.array([self.value, self.t], np.float64), reward, end, False, info

    def render(self):
        frame = np.zeros((16, 16, 3), np.uint8)
        frame[..., 0] = 20 * self.t
        frame[..., 1] = 20 * (self.value + 4)
        return frame


def make(render_mode: str | None = None) -> SeedReturn:
    return SeedReturn(render_mode)


def zero_policy():
    return lambda obs: torch.zeros((*obs.shape[:-1], 1))


def noisy_policy():
    """Made stochastic on purpose: unseeded noise, so a re-run of an episode does not reproduce it."""
    return lambda obs: 0.1 * torch.randn((*obs.shape[:-1], 1))


def mlp_policy():
    """A seeded tanh MLP with small outputs: the return carries its actions' last bits."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(2, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64), torch.nn.Tanh(),
                              torch.nn.Linear(64, 1), torch.nn.Tanh())
    return lambda obs: 0.01 * net(obs.float())


class BreaksWhenRendered(SeedReturn):
    """Renders nothing but an error: the filmed re-run fails after the first pass measured every episode."""

    def render(self):
        raise RuntimeError("the renderer broke")


def make_breaking(render_mode: str | None = None) -> BreaksWhenRendered:
    return BreaksWhenRendered(render_mode)
