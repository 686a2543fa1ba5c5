"""Envs and policies for the tests of evaluation, importable by module name (``helpers.eval_envs:...``)
so that CLI subprocesses and env worker processes can build them too."""

from __future__ import annotations

import os
import time
from pathlib import Path

import gymnasium as gym
import numpy as np


def normalized_pendulum():
    """A stateful wrapper: its running statistics change with every step it sees."""
    return gym.wrappers.NormalizeObservation(gym.make("Pendulum-v1"))


class Counting(gym.Env):
    """Counts its steps (``t``) and keeps the episode's seed: the toy envs below act on both."""

    observation_space = gym.spaces.Box(-1e9, 1e9, (3,), np.float64)
    action_space = gym.spaces.Box(-1, 1, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.seed_ = 0, seed or 0
        return np.zeros(3), {}


class Diverging(Counting):
    """Rewards ``t * (1 + seed)`` for 5 steps; the episode seeded 1 gets a NaN reward at step 3."""

    def step(self, action):
        self.t += 1
        reward = float("nan") if (self.seed_, self.t) == (1, 3) else float(self.t * (1 + self.seed_))
        return np.full(3, float(self.t)), reward, self.t >= 5, False, {}


def diverging_env():
    return Diverging()


class Exploding(Counting):
    """Six-step episodes; the one seeded 2 raises at its step 3."""

    def step(self, action):
        self.t += 1
        if (self.seed_, self.t) == (2, 3):
            raise RuntimeError(f"exploded at t={self.t}")
        return np.full(3, float(self.t)), 1.0, self.t >= 6, False, {}


def exploding_env():
    return Exploding()


class SlowGym(gym.Env):
    """Three-step episodes that sleep per step; writes ``<marker>.<seed>`` when an episode is done."""

    observation_space = gym.spaces.Box(-1e9, 1e9, (3,), np.float64)
    action_space = gym.spaces.Box(-1, 1, (1,), np.float32)

    def __init__(self, delay: float, marker: str) -> None:
        self.delay, self.marker = delay, marker

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.seed_ = 0, seed or 0
        return np.zeros(3), {}

    def step(self, action):
        time.sleep(self.delay)
        self.t += 1
        if self.t >= 3:
            Path(f"{self.marker}.{self.seed_}").touch()
        return np.full(3, float(self.t)), 1.0, self.t >= 3, False, {}


def slow_gym_env(delay: float = 0.05, marker: str = os.devnull):
    return SlowGym(delay, marker)
