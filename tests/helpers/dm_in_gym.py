"""A gymnasium env that holds a dm_control task, as gym-aloha's ``AlohaEnv`` does (the env LeRobot
evaluates ALOHA policies on): the ``control.Environment`` in ``self._env``, its physics in
``self._env.physics``, the env wrapped in gymnasium's ``TimeLimit``. gym-aloha itself pins
``mujoco<3.9``, so it does not install with this project's MuJoCo; this env has its shape, on dm_control's
cartpole (the ALOHA task is a dm_control task the same way)."""

from __future__ import annotations

import gymnasium
import numpy as np


class DmTaskEnv(gymnasium.Env):
    metadata = {"render_modes": ["rgb_array"], "render_fps": 50}

    def __init__(self, domain: str = "cartpole", task: str = "swingup", render_mode: str | None = None):
        from dm_control import suite

        self._env = suite.load(domain, task)  # what AlohaEnv._make_env_task returns: a control.Environment
        self.render_mode = render_mode
        spec = self._env.action_spec()
        self.action_space = gymnasium.spaces.Box(spec.minimum.astype(np.float32), spec.maximum.astype(np.float32))
        size = sum(int(np.prod(v.shape)) for v in self._env.observation_spec().values())
        self.observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (size,), np.float32)

    def _obs(self, ts) -> np.ndarray:
        return np.concatenate([np.ravel(v) for v in ts.observation.values()]).astype(np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            self._env.task._random = np.random.RandomState(seed)
        return self._obs(self._env.reset()), {}

    def step(self, action):
        ts = self._env.step(action)
        return self._obs(ts), float(ts.reward or 0.0), False, False, {}

    def render(self):
        return self._env.physics.render(height=64, width=64, camera_id=0)


def make_env(render_mode: str | None = None):
    return gymnasium.wrappers.TimeLimit(DmTaskEnv(render_mode=render_mode), max_episode_steps=400)


class NoPhysics(gymnasium.Env):
    """The same shape with nothing MuJoCo inside: the error must name this class and the places looked at."""

    action_space = gymnasium.spaces.Box(-1, 1, (1,), np.float32)
    observation_space = gymnasium.spaces.Box(-1, 1, (2,), np.float32)

    def __init__(self, render_mode: str | None = None):
        self._env = object()
        self.render_mode = render_mode

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), 0.0, False, False, {}


def make_plain(render_mode: str | None = None):
    return gymnasium.wrappers.TimeLimit(NoPhysics(render_mode=render_mode), max_episode_steps=10)
