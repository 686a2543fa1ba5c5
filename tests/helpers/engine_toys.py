"""Envs and policies for the tests of engine, importable by module name (``helpers.engine_toys:...``)
so that CLI subprocesses and env worker processes can build them too."""

from __future__ import annotations

import gymnasium
import numpy as np
import torch


class Counting(gymnasium.Env):
    """A gymnasium env whose episode length depends on its seed; counts steps after an episode ended."""

    observation_space = gymnasium.spaces.Box(-1e9, 1e9, (2,), np.float64)
    action_space = gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)
    instances: list = []

    def __init__(self):
        self.ended, self.stepped_after_end, self.resets, self.steps = False, 0, 0, 0
        Counting.instances.append(self)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.length = 2 + int(self.np_random.integers(0, 6))
        self.t, self.ended = 0, False
        self.resets += 1
        return np.array([self.length, 0.0]), {}

    def step(self, action):
        if self.ended:
            self.stepped_after_end += 1
        self.t += 1
        self.steps += 1
        self.ended = self.t >= self.length
        return np.array([self.length, self.t], np.float64), float(action[0]) + self.t, self.ended, False, \
            {"is_success": self.t % 2 == 0}


def counting_env():
    return Counting()


def half_policy():
    return lambda obs: torch.full((*obs.shape[:-1], 1), 0.5)


def learned_reward(td):
    """A stand-in for a learned reward model: a function of observation, action and next observation."""
    return (td["next", "observation"][..., 1] * 0.1 - td["action"][..., 0]).to(torch.float64)


def float64_tiny_env():
    from helpers.tinyenv import TinyEnv
    return TinyEnv(obs_dtype=torch.float64)


def dm_cartpole(spec):
    from dm_control import suite
    return suite.load("cartpole", "swingup", task_kwargs={"random": 999})   # reseeded per episode by the engine


def dict_policy():
    net = torch.nn.Linear(4, 1)
    return lambda obs: {"action": torch.tanh(net(obs.float()))}


def sac_like_policy():
    net = torch.nn.Linear(4, 1)
    return lambda obs: (torch.tanh(net(obs.float())), torch.zeros(()))


def nan_policy():
    return lambda obs: torch.full((*obs.shape[:-1], 1), float("nan"))


class StepCounting:
    """A stateful tensor policy (``reset()``): its action depends on its own step count."""

    def __init__(self):
        self.t = 0

    def reset(self):
        self.t = 0

    def __call__(self, obs):
        self.t += 1
        return torch.full((1,), 0.05 * self.t).tanh()
