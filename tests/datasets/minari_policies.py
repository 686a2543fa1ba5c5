"""Small deterministic policies of the observation for the dataset tests (plain functions a user would write), and
the same functions for the tests' own gymnasium loops (each reads the observation as plain floats: a run hands it
over as a tensor, a plain loop as an array)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np


def cartpole_act(obs):
    """Pushes toward the pole's lean: episodes of a few dozen steps whose lengths differ by seed."""
    return int(obs[2] > 0)


def pendulum_act(obs):
    """A torque that damps the swing, clipped to Pendulum's bounds."""
    return np.array([min(2.0, max(-2.0, -1.5 * float(obs[2])))], np.float32)


def cheetah_act(obs):
    """A bounded torque pattern of the observation (HalfCheetah's 6 actuators)."""
    return np.tanh(np.asarray(obs[:6], np.float32))


def cartpole():
    return cartpole_act


def pendulum():
    return pendulum_act


def cheetah():
    return cheetah_act


class SuccessToy(gym.Env):
    """A point pushed by a 1-D action that reports ``is_success`` at every step (true once it is past 0.5), as
    goal-reaching envs do; ``length`` steps an episode. Built by a factory, so it has no registered spec."""

    def __init__(self, length: int = 6) -> None:
        self.length = length
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float64)
        self.action_space = gym.spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        self.x, self.t = np.zeros(2), 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x, self.t = self.np_random.uniform(-0.5, 0.5, size=2), 0
        return self.x.copy(), {"is_success": False}

    def step(self, action):
        self.t += 1
        self.x = self.x + np.array([0.2 * float(np.asarray(action).reshape(-1)[0]), 0.01])
        success = bool(self.x[0] > 0.5)
        return self.x.copy(), float(-abs(0.5 - self.x[0])), False, self.t >= self.length, {"is_success": success}


def success_toy(length: int = 6):
    return SuccessToy(length)


def push():
    """Pushes right with a force that grows with the lag behind the goal."""
    return lambda obs: np.array([min(1.0, max(-1.0, 2 * (0.6 - float(obs[0]))))], np.float32)


class DictToy(gym.Env):
    """Goal-reaching observations as a Dict space (``position``, ``goal``), as Minari's maze datasets have them."""

    def __init__(self) -> None:
        box = gym.spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float64)
        self.observation_space = gym.spaces.Dict({"position": box, "goal": box})
        self.action_space = gym.spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)

    def _obs(self):
        return {"position": self.pos.copy(), "goal": self.goal.copy()}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.pos, self.goal, self.t = self.np_random.normal(size=2), self.np_random.normal(size=2), 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        self.pos = self.pos + 0.1 * np.asarray(action, np.float64)
        return self._obs(), float(-np.linalg.norm(self.goal - self.pos)), False, self.t >= 8, {}


def toward_goal(obs):
    return np.clip(obs["goal"] - obs["position"], -1, 1).astype(np.float32)


def torchrl_cartpole():
    """CartPole through TorchRL's GymEnv: the torchrl path, whose Discrete actions are one-hot."""
    from torchrl.envs import GymEnv

    return GymEnv("CartPole-v1")


def torchrl_cheetah_x():
    """HalfCheetah through TorchRL's GymEnv with an info reader for ``x_position`` (how TorchRL users keep an info)."""
    import torch
    from torchrl.data import Composite, Unbounded
    from torchrl.envs import GymEnv
    from torchrl.envs.gym_like import default_info_dict_reader

    spec = Composite(x_position=Unbounded(shape=(), dtype=torch.float64))
    return GymEnv("HalfCheetah-v5").set_info_dict_reader(default_info_dict_reader(["x_position"], spec=spec))


def one_hot_cartpole():
    """``cartpole_act`` as a one-hot action (what a TorchRL policy writes for a Discrete space)."""
    import torch

    return lambda obs: torch.nn.functional.one_hot(torch.tensor(cartpole_act(obs)), 2)
