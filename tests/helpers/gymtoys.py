"""A tiny gymnasium env for every action space: ``Toy(space)`` with a Box, Discrete, MultiDiscrete or
MultiBinary action, float64 rewards with many significant digits (so summing them in another order or
in float32 shows), and an episode length that depends on the seed.

Importable by module name (``helpers.gymtoys:make``), so env worker processes can build it too.
"""

from __future__ import annotations

import gymnasium
import numpy as np
from gymnasium import spaces

SPACES = {
    "box": lambda: spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32),
    "discrete": lambda: spaces.Discrete(3),
    "discrete-start": lambda: spaces.Discrete(3, start=-1),
    "multidiscrete": lambda: spaces.MultiDiscrete([3, 2]),
    "multibinary": lambda: spaces.MultiBinary(2),
}


class Toy(gymnasium.Env):
    """A point on a line pushed by the action: ``x += effect(action)``; reward ``-sin(x)**2 - 0.01 * t``."""

    metadata = {"render_modes": []}

    def __init__(self, space: str = "box") -> None:
        self.kind = space
        self.action_space = SPACES[space]()
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(3,), dtype=np.float64)
        self.x = np.zeros(3)
        self.t, self.length = 0, 0

    def _effect(self, action) -> float:
        if self.kind == "box":
            return float(np.asarray(action, np.float64) @ np.array([0.3, -0.2]))
        if self.kind in ("discrete", "discrete-start"):
            assert self.action_space.contains(action), action
            return 0.25 * (int(action) - self.action_space.start - 1)
        assert self.action_space.contains(np.asarray(action)), action
        if self.kind == "multidiscrete":
            return 0.2 * (int(action[0]) - 1) + 0.1 * int(action[1])
        return 0.15 * int(action[0]) - 0.1 * int(action[1])

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x = self.np_random.normal(size=3)
        self.t, self.length = 0, 8 + int(self.np_random.integers(0, 5))
        return self.x.copy(), {}

    def step(self, action):
        self.t += 1
        self.x = self.x + np.array([self._effect(action), 0.05 * self.x[0], -0.03 * self.x[1]])
        reward = -np.sin(self.x[0]) ** 2 - 0.01 * self.t
        return self.x.copy(), float(reward), bool(abs(self.x[0]) > 3), self.t >= self.length, {}


def make(space: str = "box") -> Toy:
    """Factory (``env_kwargs={"space": ...}``)."""
    return Toy(space)


def make_noting_its_process(space: str = "box") -> Toy:
    """``make``, after :func:`helpers.tinyenv.note_this_process`."""
    from helpers.tinyenv import note_this_process

    note_this_process()
    return Toy(space)


def make_named_observation() -> gymnasium.Env:
    """``Toy("box")`` whose observations are ``{"observation": x}``: a Dict space whose one entry carries torchrl's
    default observation name (its dicts must still be read as a Dict space's, never written into one array)."""
    from gymnasium.wrappers import TransformObservation

    env = Toy("box")
    return TransformObservation(env, lambda x: {"observation": x}, spaces.Dict(observation=env.observation_space))
