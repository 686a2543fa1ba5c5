"""Factories that misbehave on purpose, for the bad-input catalogue and the fault tests.

Each is named in a spec such as ``helpers.badfactories:raising_env`` (``tests/`` is on ``sys.path``).
"""

from __future__ import annotations

import os
import time

import torch
from tensordict.nn import TensorDictModule
from torchrl.data import Categorical

from helpers.tinyenv import TinyEnv, make_policy

NOT_CALLABLE = 42


def raising_env():
    raise ValueError("boom: the simulator licence expired")


def raising_policy():
    raise RuntimeError("cannot build the network")


def string_env():
    return "CartPole-v1"


def none_policy():
    return None


def two_args_env(alpha, beta):  # nothing provides both
    return TinyEnv(pixels=True)


def policy_no_spec(hidden: int = 8):
    return make_policy()


def td_policy_wrong_key():
    return TensorDictModule(torch.nn.Linear(3, 1), in_keys=["observation"], out_keys=["act"])


def shape_policy():
    return lambda obs: obs                      # (3,) where the spec wants (1,)


def nan_policy():
    return lambda obs: obs[:1] * float("nan")


def inf_policy():
    return lambda obs: obs[:1] * 0 + float("inf")


def complex_policy():
    return lambda obs: torch.complex(obs[:1], obs[:1])


def fractional_policy():
    return lambda obs: torch.tensor(0.7)        # a float for a discrete (Categorical) action


def raising_step_policy():
    def act(obs):
        raise RuntimeError("policy exploded")
    return act


class DiscreteTinyEnv(TinyEnv):
    """TinyEnv with a Categorical(3) action (an int64 index)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.action_spec = Categorical(3, shape=(1,))

    def _step(self, tensordict):
        tensordict = tensordict.clone()
        tensordict.set("action", tensordict.get("action").float() - 1)
        return super()._step(tensordict)


def discrete_env():
    return DiscreteTinyEnv(pixels=True)


class ResizingEnv(TinyEnv):
    """Pixels grow by 2 pixels at step 2: frames of two sizes in one video."""

    def _obs(self):
        out = super()._obs()
        if self.pixels and self.t >= 2:
            out["pixels"] = torch.zeros(self.size + 2, self.size + 2, 3, dtype=torch.uint8)
        return out


def resizing_env():
    return ResizingEnv(pixels=True)


class FlatPixelsEnv(TinyEnv):
    """Pixels that are not an image (a flat vector)."""

    def _obs(self):
        out = super()._obs()
        out["pixels"] = torch.zeros(48, dtype=torch.uint8)
        return out


def flat_pixels_env():
    return FlatPixelsEnv(pixels=True)


class ResetFailsEnv(TinyEnv):
    def _reset(self, tensordict=None, **kwargs):
        raise OSError("the simulator socket closed")


def reset_fails_env():
    return ResetFailsEnv(pixels=True)


def failing_env(fail_at: int = 3, episode: int = 1):
    """Episode ``episode`` (seeded ``episode`` with the default seed 0) raises at step ``fail_at``."""
    class FailLater(TinyEnv):
        def _reset(self, td=None, **kw):
            self.fail_at = fail_at if self._seed == episode else None
            return super()._reset(td, **kw)
    return FailLater(pixels=True)


class SlowEnv(TinyEnv):
    """Sleeps per step; writes ``<marker>.<episode>`` when an episode is done (for SIGINT tests)."""

    def __init__(self, delay: float, marker: str, **kwargs) -> None:
        super().__init__(pixels=True, **kwargs)
        self.delay, self.marker = delay, marker

    def _step(self, tensordict):
        time.sleep(self.delay)
        out = super()._step(tensordict)
        if bool(out["done"]):
            with open(f"{self.marker}.{self._seed}", "w"):
                pass
        return out


def slow_env(delay: float = 0.05, marker: str = os.devnull):
    return SlowEnv(delay, marker, base_len=3)


def nan_after_first_episode():
    """Acts for 5 calls (TinyEnv's episode 0 with seed 0), then returns NaN."""
    calls = []

    def act(obs):
        calls.append(1)
        return obs[:1] * (float("nan") if len(calls) > 5 else 0.0)
    return act


class InterruptingEnv(TinyEnv):
    """Raises KeyboardInterrupt (as Ctrl-C would) at step 2 of the episode seeded 1."""

    def _step(self, tensordict):
        if self._seed == 1 and self.t == 1:
            raise KeyboardInterrupt
        return super()._step(tensordict)


def interrupting_env():
    return InterruptingEnv(pixels=True)


WATCHED: dict[str, list[list[str]]] = {}


def watching_policy(folder: str):
    """A zero-action policy that lists ``folder`` at every step into ``WATCHED[folder]``."""
    seen = WATCHED.setdefault(folder, [])

    def act(obs):
        seen.append(sorted(os.listdir(folder)))
        return obs[:1] * 0.0
    return act


def pendulum_policy():
    """A float32 tensor policy for InvertedPendulum-v5 (float64 observations of size 4)."""
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 1), torch.nn.Tanh())


# -- what a new user hits --------------------------------------------------------------------------------


def tanh_normal_policy(spec=None):
    """A SAC-style actor: TanhNormal has no analytic mode (and no closed-form mean)."""
    from tensordict.nn import NormalParamExtractor
    from torchrl.modules import ProbabilisticActor, TanhNormal

    torch.manual_seed(0)
    net = TensorDictModule(torch.nn.Sequential(torch.nn.Linear(3, 2), NormalParamExtractor()),
                           in_keys=["observation"], out_keys=["loc", "scale"])
    return ProbabilisticActor(net, in_keys=["loc", "scale"], distribution_class=TanhNormal,
                              distribution_kwargs={"low": -1.0, "high": 1.0})


def no_render_mode_env():
    """Ignores --render-mode: nothing can forward it."""
    return TinyEnv()


def render_mode_env(render_mode=None):
    """Forwards --render-mode to gymnasium."""
    import gymnasium

    return gymnasium.make("InvertedPendulum-v5", render_mode=render_mode, width=64, height=64)


def one_arg_env(env_name):
    """A one-argument factory that expects an id, not the spec."""
    import gymnasium

    return gymnasium.make(env_name)


def cartpole_policy():
    """Always pushes left (CartPole's Discrete(2) action, one-hot in torchrl)."""
    return lambda obs: torch.tensor([1, 0])


def zero_policy():
    """Zero torques for the 6-actuator cheetahs (gymnasium and dm_control)."""
    return lambda obs: torch.zeros(6)


def zero_action_policy():
    """A zero action of shape (1,) for any observation (InvertedPendulum)."""
    return lambda obs: torch.zeros(1)


def unbatched_policy():
    """A policy written for one observation at a time: it flattens whatever it gets into one action."""
    net = torch.nn.Linear(4, 1)
    return lambda obs: torch.tanh(net(obs.float().reshape(-1, 4)[:1])).reshape(1)


def probabilities_policy():
    """CartPole: action probabilities instead of the chosen index."""
    return lambda obs: torch.tensor([0.3, 0.7])


def out_of_space_policy():
    """CartPole has actions 0 and 1."""
    return lambda obs: 2


def words_policy():
    return lambda obs: ["left"]


def torchrl_cartpole():
    """The user's torchrl env: its action stays torchrl's one-hot."""
    from torchrl.envs import GymEnv

    return GymEnv("CartPole-v1")
