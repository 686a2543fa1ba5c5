"""Envs and policies for the tests of compat, importable by module name (``helpers.dropin_toys:...``)
so that CLI subprocesses and env worker processes can build them too."""

from __future__ import annotations

import torch
from tensordict import TensorDict
from torchrl.data import Composite, Unbounded
from torchrl.envs import EnvBase


class CountingEnv(EnvBase):
    """A torchrl env with pixels and a done after two steps (as torchrl.render's own test env)."""

    def __init__(self, device="cpu"):
        super().__init__(device=device, batch_size=[])
        self.observation_spec = Composite(observation=Unbounded(shape=(1,)),
                                          pixels=Unbounded(shape=(4, 4, 3), dtype=torch.uint8))
        self.action_spec = Unbounded(shape=(1,))
        self.reward_spec = Unbounded(shape=(1,))
        self.count = 0

    def _obs(self, **extra):
        return TensorDict({"observation": torch.full((1,), float(self.count)),
                           "pixels": torch.full((4, 4, 3), self.count, dtype=torch.uint8), **extra}, [])

    def _reset(self, tensordict=None, **kwargs):
        self.count = 0
        return self._obs(done=torch.zeros(1, dtype=torch.bool), terminated=torch.zeros(1, dtype=torch.bool))

    def _step(self, tensordict):
        self.count += 1
        done = torch.tensor([self.count >= 2])
        return self._obs(reward=torch.ones(1), done=done, terminated=done.clone())

    def _set_seed(self, seed):
        pass


def counting_policy(spec):
    def policy(tensordict):
        tensordict.set("action", tensordict["observation"] * 0.5)
        return tensordict

    return policy


class StateEnv(CountingEnv):
    """No MuJoCo model behind it, but a ``get_state()`` with qpos (torchrl.render's MujocoStateReader reads it)."""

    def get_state(self):
        return TensorDict({"qpos": torch.tensor([0.1 * self.count, -0.2 * self.count])}, [])


def state_env(spec):
    return StateEnv(device=spec.device)
