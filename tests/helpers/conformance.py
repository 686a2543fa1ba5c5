"""The policy conformance matrix's parts: envs, policies, and the plain loops they are compared with.

An :class:`EnvCase` is one env with one action space, and knows how a plain loop written by its
user steps it (:meth:`EnvCase.sims`). A :class:`PolicyCase` builds one kind of policy for an env case
and knows how the user's own loop calls it (:meth:`PolicyCase.caller`). :func:`plain_loop` runs the
two together, one env at a time or ``K`` envs with one batched policy call per step, with no code
of torchrl_render's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium
import numpy as np
import torch
from tensordict import TensorDict
from torchrl.data import Bounded, Categorical, Composite, MultiOneHot, Unbounded
from torchrl.envs import EnvBase

# -- action spaces, as the tests' policies produce them ---------------------------------------------

@dataclass(frozen=True)
class Space:
    """``kind`` "box" (``n`` actions in ``[low, high]``), "discrete" (``n`` choices) or "multidiscrete"."""

    kind: str
    n: int = 1
    low: float = -1.0
    high: float = 1.0
    nvec: tuple[int, ...] = ()

    @property
    def logits(self) -> int:
        """Outputs of a network head for this space."""
        return sum(self.nvec) if self.kind == "multidiscrete" else self.n


def head(z: torch.Tensor, space: Space) -> torch.Tensor:
    """A network's outputs ``[..., logits]`` to the action in gymnasium's encoding (floats, an index, indices)."""
    if space.kind == "box":
        return torch.tanh(z) * space.high
    if space.kind == "discrete":
        return z.argmax(-1)
    return torch.stack([part.argmax(-1) for part in z.split(list(space.nvec), -1)], -1)


def to_gym(action: Any, space: Space) -> Any:
    """What a user passes to a gymnasium ``step``: a numpy array, an index (a one-hot becomes its argmax)."""
    action = torch.as_tensor(action).detach()
    if space.kind == "box":
        return action.numpy()
    if space.kind == "discrete" and action.shape[-1:] == (space.n,) and action.dim() >= 1:
        action = action.argmax(-1)
    return action.long().numpy()  # a whole-number float index, as int() makes it


def to_one_hot(index: Any, space: Space) -> torch.Tensor:
    """A torchrl user's encoding of indices for a ``OneHot`` / ``MultiOneHot`` action spec."""
    index = torch.as_tensor(np.asarray(index)).long()
    if space.kind == "discrete":
        return torch.nn.functional.one_hot(index, space.n)
    return torch.cat([torch.nn.functional.one_hot(index[..., j], n) for j, n in enumerate(space.nvec)], -1)


# -- envs ---------------------------------------------------------------------------------------------

class GymSim:
    """A gymnasium env as a plain loop steps it (``reward_dtype``: what a torchrl wrapper would keep)."""

    def __init__(self, make: Callable[[], Any], space: Space, reward_dtype: Any = np.float64) -> None:
        self.env, self.space, self.reward_dtype = make(), space, reward_dtype

    def reset(self, seed: int) -> Any:
        return self.env.reset(seed=seed)[0]

    def step(self, action: Any) -> tuple[Any, float, bool]:
        obs, reward, terminated, truncated, _ = self.env.step(to_gym(action, self.space))
        return obs, float(self.reward_dtype(reward)), terminated or truncated


class DmSim:
    """A dm_control task: loaded with ``task_kwargs={"random": seed}`` for each episode, as its docs seed it."""

    def __init__(self, domain: str, task: str, key: str, space: Space) -> None:
        self.domain, self.task, self.key, self.space = domain, task, key, space

    def reset(self, seed: int) -> Any:
        from dm_control import suite

        self.env = suite.load(self.domain, self.task, task_kwargs={"random": seed})
        return self.env.reset().observation[self.key]

    def step(self, action: Any) -> tuple[Any, float, bool]:
        ts = self.env.step(to_gym(action, self.space))
        return ts.observation[self.key], float(ts.reward), ts.last()


class TorchrlSim:
    """A torchrl env as a torchrl user steps it: ``set_seed`` then ``reset``, ``step`` with the spec's encoding."""

    def __init__(self, make: Callable[[], Any], space: Space, one_hot: bool) -> None:
        self.env, self.space, self.one_hot = make(), space, one_hot

    def reset(self, seed: int) -> Any:
        self.env.set_seed(seed)
        self.td = self.env.reset()
        return self.td["observation"]

    def step(self, action: Any) -> tuple[Any, float, bool]:
        index = to_gym(action, self.space)
        action = to_one_hot(index, self.space) if self.one_hot else torch.as_tensor(index)
        td = self.env.step(self.td.set("action", action.to(self.env.action_spec.dtype)))
        self.td = td["next"]
        return self.td["observation"], float(self.td["reward"].sum()), bool(self.td["done"].any())


class ToyTorchrl(EnvBase):
    """A custom torchrl env for each action space: ``x`` pushed by the action; float64 rewards; the
    episode length depends on the seed."""

    SPECS = {"box": lambda: Bounded(-1.0, 1.0, shape=(2,)), "discrete": lambda: Categorical(3),
             "multidiscrete": lambda: MultiOneHot([3, 2])}

    def __init__(self, kind: str = "box") -> None:
        super().__init__(batch_size=torch.Size([]))
        self.kind = kind
        self.observation_spec = Composite(observation=Unbounded(shape=(3,)))
        self.action_spec = self.SPECS[kind]()
        self.reward_spec = Unbounded(shape=(1,), dtype=torch.float64)
        self.gen = torch.Generator().manual_seed(0)

    def _effect(self, action: torch.Tensor) -> float:
        if self.kind == "box":
            return float(action.double() @ torch.tensor([0.3, -0.2], dtype=torch.float64))
        if self.kind == "discrete":
            return 0.25 * (int(action) - 1)
        first, second = action[:3].long().argmax().item(), action[3:].long().argmax().item()
        return 0.2 * (first - 1) + 0.1 * second

    def _reset(self, tensordict=None, **kwargs):
        self.x = torch.randn(3, generator=self.gen, dtype=torch.float64)
        self.t, self.length = 0, 8 + int(torch.randint(0, 5, (), generator=self.gen))
        return TensorDict(observation=self.x.float(), done=torch.zeros(1, dtype=torch.bool),
                          terminated=torch.zeros(1, dtype=torch.bool))

    def _step(self, tensordict):
        self.t += 1
        x = self.x
        self.x = x + torch.tensor([self._effect(tensordict["action"]), 0.05 * float(x[0]), -0.03 * float(x[1])],
                                  dtype=torch.float64)
        reward = -torch.sin(self.x[:1]) ** 2 - 0.01 * self.t
        done = torch.tensor([self.t >= self.length])
        return TensorDict(observation=self.x.float(), reward=reward, done=done, terminated=torch.zeros(1, dtype=bool))

    def _set_seed(self, seed):
        self.gen = torch.Generator().manual_seed(int(seed or 0))
        return seed


@dataclass(eq=False)
class EnvCase:
    """One env with one action space: what ``render_policy`` gets, and how a plain loop steps it."""

    name: str
    env: Any                                  # RenderConfig.env
    space: Space
    obs_size: int
    sim: Callable[[], Any]                    # one env of the plain loop
    obs_key: str = "observation"
    family: str = "gymnasium"                 # gymnasium, dm_control, torchrl
    sb3: str | None = None                    # the SB3 model that fits it (tests/helpers/sb3models.py)
    slow: bool = False

    def sims(self, k: int) -> list[Any]:
        return [self.sim() for _ in range(k)]


def _gym(env_id: str) -> Callable[[], Any]:
    return lambda: gymnasium.make(env_id)


def _toy(kind: str) -> Callable[[], Any]:
    from helpers import gymtoys

    return lambda: gymtoys.make(kind)


def _wrapped(make: Callable[[], Any], **kwargs) -> Callable[[], Any]:
    """The user's own torchrl env around a gymnasium one."""
    def build():
        from torchrl.envs import GymWrapper

        return GymWrapper(make(), **kwargs)
    return build


def _gymenv(env_id: str) -> Callable[[], Any]:
    def build():
        from torchrl.envs import GymEnv

        return GymEnv(env_id)
    return build


PEND, CART, MD = Space("box", 1, -2.0, 2.0), Space("discrete", 2), Space("multidiscrete", nvec=(3, 2))
ENVS = [
    EnvCase("mujoco-box", lambda: gymnasium.make("InvertedPendulum-v5"), Space("box", 1, -3.0, 3.0), 4,
            lambda: GymSim(_gym("InvertedPendulum-v5"), Space("box", 1, -3.0, 3.0)), sb3="ppo-invpendulum",
            slow=True),
    EnvCase("classic-box", lambda: gymnasium.make("Pendulum-v1"), PEND, 3, lambda: GymSim(_gym("Pendulum-v1"), PEND),
            sb3="ppo-pendulum"),
    EnvCase("classic-discrete", lambda: gymnasium.make("CartPole-v1"), CART, 4,
            lambda: GymSim(_gym("CartPole-v1"), CART), sb3="dqn-cartpole"),
    EnvCase("gymnasium-multidiscrete", _toy("multidiscrete"), MD, 3, lambda: GymSim(_toy("multidiscrete"), MD),
            sb3="ppo-toy-multidiscrete"),
    EnvCase("dm_control-box", "dm_control/cartpole-balance", Space("box", 1), 3,
            lambda: DmSim("cartpole", "balance", "position", Space("box", 1)), obs_key="position",
            family="dm_control"),
    # torchrl envs of the user's: GymEnv keeps float32 rewards and one-hot discrete actions
    EnvCase("torchrl-gymenv-box", _gymenv("Pendulum-v1"), PEND, 3,
            lambda: GymSim(_gym("Pendulum-v1"), PEND, np.float32), family="torchrl", sb3="ppo-pendulum"),
    EnvCase("torchrl-gymenv-discrete", _gymenv("CartPole-v1"), CART, 4,
            lambda: GymSim(_gym("CartPole-v1"), CART, np.float32), family="torchrl", sb3="dqn-cartpole"),
    EnvCase("torchrl-gymwrapper-multidiscrete", _wrapped(_toy("multidiscrete")), MD, 3,
            lambda: GymSim(_toy("multidiscrete"), MD, np.float32), family="torchrl", sb3="ppo-toy-multidiscrete"),
    EnvCase("torchrl-custom-box", lambda: ToyTorchrl("box"), Space("box", 2), 3,
            lambda: TorchrlSim(lambda: ToyTorchrl("box"), Space("box", 2), False), family="torchrl"),
    EnvCase("torchrl-custom-discrete", lambda: ToyTorchrl("discrete"), Space("discrete", 3), 3,
            lambda: TorchrlSim(lambda: ToyTorchrl("discrete"), Space("discrete", 3), False), family="torchrl"),
    EnvCase("torchrl-custom-multidiscrete", lambda: ToyTorchrl("multidiscrete"), MD, 3,
            lambda: TorchrlSim(lambda: ToyTorchrl("multidiscrete"), MD, True), family="torchrl"),
]


# -- policies ---------------------------------------------------------------------------------------

def _weights(env: EnvCase, out: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(env.obs_size, out, generator=torch.Generator().manual_seed(seed)) * 0.8


class ParameterView(torch.nn.Module):
    """A learned constant action (a torque, or a whole-number index): a view of a parameter, which
    ``torch.no_grad`` leaves requiring grad."""

    def __init__(self, env: EnvCase) -> None:
        super().__init__()
        space = env.space
        value = {"box": [0.3] * space.n, "discrete": [1.0], "multidiscrete": [2.0, 1.0]}[space.kind]
        self.p = torch.nn.Parameter(torch.tensor(value))
        self.scalar = space.kind == "discrete"

    def forward(self, obs):
        p = self.p[0] if self.scalar else self.p
        return p.expand(obs.shape[:-1] + p.shape)


class Network(torch.nn.Module):
    """An ordinary module: a linear layer and the space's head."""

    def __init__(self, env: EnvCase, seed: int = 0) -> None:
        super().__init__()
        self.space = env.space
        self.linear = torch.nn.Linear(env.obs_size, env.space.logits)
        with torch.no_grad():
            self.linear.weight.copy_(_weights(env, env.space.logits, seed).T)
            self.linear.bias.zero_()

    def forward(self, obs):
        return head(self.linear(obs), self.space)


def _function(env: EnvCase) -> Callable[[Any], Any]:
    w, space = _weights(env, env.space.logits), env.space
    return lambda obs: head(obs.float() @ w, space)


def _td_function(env: EnvCase) -> Callable[[Any], Any]:
    w, space, key = _weights(env, env.space.logits), env.space, env.obs_key

    def policy(td):  # TorchRL's tutorial form
        td.set("action", head(td[key].float() @ w, space))
        return td
    return policy


def _td_module(env: EnvCase) -> Any:
    from tensordict.nn import TensorDictModule

    return TensorDictModule(Network(env), in_keys=[env.obs_key], out_keys=["action"])


def _multi_categorical(space: Space) -> Callable[..., Any]:
    """One index per component: independent categoricals over padded logits."""
    width = max(space.nvec)

    def make(logits):
        parts = [torch.nn.functional.pad(p, (0, width - p.shape[-1]), value=-1e9)
                 for p in logits.split(list(space.nvec), -1)]
        return torch.distributions.Independent(torch.distributions.Categorical(logits=torch.stack(parts, -2)), 1)
    return make


def _probabilistic_actor(env: EnvCase) -> Any:
    """The user guide's actor: TanhNormal for a Box (its deterministic sample: tanh of the mean, scaled),
    OneHotCategorical for Discrete (a one-hot), independent categoricals for MultiDiscrete (indices)."""
    from tensordict.nn import NormalParamExtractor, TensorDictModule
    from torchrl.modules import OneHotCategorical, ProbabilisticActor, TanhNormal

    space = env.space
    width = 2 * space.n if space.kind == "box" else space.logits
    linear = torch.nn.Linear(env.obs_size, width)
    with torch.no_grad():
        linear.weight.copy_(_weights(env, width).T)
        linear.bias.zero_()
    if space.kind == "box":
        net = TensorDictModule(torch.nn.Sequential(linear, NormalParamExtractor()), [env.obs_key], ["loc", "scale"])
        return ProbabilisticActor(net, ["loc", "scale"], distribution_class=TanhNormal,
                                  distribution_kwargs={"low": space.low, "high": space.high})
    net = TensorDictModule(linear, [env.obs_key], ["logits"])
    dist = OneHotCategorical if space.kind == "discrete" else _multi_categorical(space)
    return ProbabilisticActor(net, ["logits"], distribution_class=dist)


def _lstm(env: EnvCase) -> Any:
    from tensordict.nn import TensorDictModule, TensorDictSequential
    from torchrl.modules import LSTMModule

    torch.manual_seed(0)
    lstm = LSTMModule(input_size=env.obs_size, hidden_size=LSTM_HIDDEN, in_key=env.obs_key, out_key="embed")
    net = Network(env)
    net.linear = torch.nn.Linear(LSTM_HIDDEN, env.space.logits)
    return TensorDictSequential(lstm, TensorDictModule(net, ["embed"], ["action"]))


LSTM_HIDDEN = 4


def _sb3(env: EnvCase) -> Callable[[Any], Any]:
    from helpers.sb3models import MODELS, make_policy, trained

    return make_policy(trained(env.sb3), MODELS[env.sb3][0])


@dataclass(eq=False)
class PolicyCase:
    """One kind of policy: ``build(env)`` makes it; ``style`` says how the user's own loop calls it."""

    name: str
    build: Callable[[EnvCase], Any]
    style: str                        # "tensor", "tensordict", "lstm" or "sb3"
    applies: Callable[[EnvCase], str | None] = field(default=lambda env: None)  # why not, or None

    def caller(self, policy: Any, env: EnvCase) -> Callable[[Any, Any], tuple[Any, Any]]:
        """``call(obs [B?, D] float tensor, state) -> (action, state)`` as the user's loop calls the policy."""
        from torchrl.envs.utils import ExplorationType, set_exploration_type

        key = env.obs_key
        if self.style == "sb3":
            return lambda obs, state: (policy(obs), None)
        if self.style == "tensor":
            return lambda obs, state: (policy(obs.float()), None)

        def td_call(obs, state):
            batch = obs.shape[:-1]
            td = TensorDict({key: obs.float()}, batch_size=batch)
            if self.style == "lstm":
                first = state is None
                zeros = torch.zeros(*batch, 1, LSTM_HIDDEN)
                td.update(is_init=torch.full((*batch, 1), first), recurrent_state_h=zeros if first else state[0],
                          recurrent_state_c=zeros if first else state[1])
            with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
                td = policy(td)
            nxt = (td["next", "recurrent_state_h"], td["next", "recurrent_state_c"]) if self.style == "lstm" else None
            return td["action"], nxt
        return td_call


def _sb3_applies(env: EnvCase) -> str | None:
    return None if env.sb3 else "SB3 trains on gymnasium envs only: no model fits a dm_control or custom torchrl env"


POLICIES = [
    PolicyCase("parameter-view-module", ParameterView, "tensor"),
    PolicyCase("ordinary-module", Network, "tensor"),
    PolicyCase("obs-function", _function, "tensor"),
    PolicyCase("tensordict-function", _td_function, "tensordict"),
    PolicyCase("tensordictmodule", _td_module, "tensordict"),
    PolicyCase("probabilistic-actor", _probabilistic_actor, "tensordict"),
    PolicyCase("lstm-module", _lstm, "lstm"),
    PolicyCase("sb3-predict", _sb3, "sb3", _sb3_applies),
]


# -- the plain loop ---------------------------------------------------------------------------------

def plain_loop(env: EnvCase, policy_case: PolicyCase, policy: Any, seeds: list[int], max_steps: int,
               batched: bool) -> list[tuple[float, int]]:
    """Per-episode (return, length): one env at a time, or ``len(seeds)`` envs with one policy call on
    the stacked observations per step (a finished env keeps its last observation and is not stepped)."""
    call = policy_case.caller(policy, env)
    if not batched:
        sim, out = env.sim(), []
        for seed in seeds:
            out += _episodes(call, [sim], [seed], max_steps, batched=False)
        return out
    return _episodes(call, env.sims(len(seeds)), seeds, max_steps, batched=True)


def _episodes(call, sims, seeds, max_steps, batched):
    obs = [torch.as_tensor(np.asarray(s.reset(seed))) for s, seed in zip(sims, seeds)]
    totals, lengths, active, state = [0.0] * len(sims), [0] * len(sims), [True] * len(sims), None
    while any(active):
        if batched:
            actions, state = call(torch.stack(obs), state)
        else:
            action, state = call(obs[0], state)
            actions = [action]
        for i, sim in enumerate(sims):
            if not active[i]:
                continue
            o, reward, done = sim.step(actions[i])
            obs[i], totals[i], lengths[i] = torch.as_tensor(np.asarray(o)), totals[i] + reward, lengths[i] + 1
            active[i] = not done and lengths[i] < max_steps
    return list(zip(totals, lengths))
