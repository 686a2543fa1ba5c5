"""Policies called as the user's own loop calls them: the numbers of a run equal a plain loop written here.

Each kind of policy a user brings (a function of the TensorDict, a callable with ``in_keys`` /
``out_keys`` that is no module, ...) is run through :func:`render_policy` and compared with a
plain gymnasium or torchrl loop that calls the same policy by hand.
"""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
import torch
from tensordict import TensorDict, TensorDictBase

from torchrl_render import RenderConfig, render_policy
from torchrl_render.errors import PolicyError

from helpers.plainloop import plain_returns

SEEDS = [0, 1]
STEPS = 25
W = torch.tensor([[0.7], [-0.4], [0.25]])  # Pendulum: 3 observations -> 1 torque


def evaluate(tmp_path, policy, env="Pendulum-v1", **kw):
    """Per-episode (return, length) of a run, and the run's result."""
    cfg = dict(policy=lambda: policy, env=env, num_trajs=len(SEEDS), max_steps=STEPS, seed=SEEDS[0],
               out=tmp_path / "run.jsonl", overwrite=True, progress=False)
    cfg.update(kw)
    result = render_policy(RenderConfig(**cfg))
    return [(e["sum_reward"], e["length"]) for e in result.metrics["per_episode"]], result


# K envs with one batched policy call per step run the policy on [K, n] rows, and torch may round a row of a
# [K, n] matrix product differently from the same product on one row (it does with AVX-512 kernels): the product
# promises bit-identical returns for one env and for per-env calls (--policy-batch per-env), and returns within
# float rounding for batched calls. Each case below checks what is promised for its own K and batch mode.
K_AND_BATCH = [(1, "batched"), (2, "per-env"), (2, "batched")]


def assert_matches_loop(ours, ref, num_envs, batch):
    if num_envs == 1 or batch == "per-env":
        assert ours == ref
    else:
        assert [n for _, n in ours] == [n for _, n in ref]
        assert [r for r, _ in ours] == pytest.approx([r for r, _ in ref], rel=1e-7, abs=0)


def gym_loop(env_id, act, seeds=SEEDS, max_steps=STEPS):
    """What a user writes: ``env.reset(seed=s)``, ``env.step(act(obs))``, float64 return."""
    return plain_returns(lambda: gymnasium.make(env_id), act, seeds, max_steps)


def torque(obs):
    """The tests' deterministic Pendulum controller, on a float32 tensor."""
    return torch.tanh(obs @ W) * 2


def np_torque(obs):
    return torque(torch.as_tensor(obs, dtype=torch.float32)).numpy()


# -- a function of the TensorDict --------------------------------------------------------------

def tutorial_policy(td):
    """As TorchRL's rendering tutorial writes it."""
    td.set("action", torque(td["observation"]))
    return td


def annotated_policy(data: TensorDictBase):
    data.set("action", torque(data.get("observation")))
    return data


def test_the_kind_rule_reads_keys_annotations_and_names():
    from tensordict.nn import TensorDictModule

    from torchrl_render.policies import policy_kind

    class Keys:
        in_keys, out_keys = ["observation"], ["action"]

        def __call__(self, x):
            return x

    class Annotated(torch.nn.Module):
        def forward(self, data: TensorDict):
            return data

    def tensor_annotated(td: torch.Tensor):
        return td

    def optional(x: TensorDictBase | None = None):
        return x

    cases = {"module with keys": (TensorDictModule(torch.nn.Linear(3, 1), ["observation"], ["action"]), "tensordict"),
             "callable with keys": (Keys(), "tensordict"), "forward annotated": (Annotated(), "tensordict"),
             "named td": (tutorial_policy, "tensordict"), "annotated": (annotated_policy, "tensordict"),
             "optional TensorDictBase": (optional, "tensordict"),
             "annotated Tensor, named td": (tensor_annotated, "tensor"),
             "Linear (forward annotated Tensor)": (torch.nn.Linear(3, 1), "tensor"),
             "Sequential (forward unannotated)": (torch.nn.Sequential(torch.nn.Tanh()), None),
             "lambda": (lambda obs: obs, None),
             "builtin": (abs, None)}
    assert {name: policy_kind(p) for name, (p, _) in cases.items()} == {n: k for n, (_, k) in cases.items()}


def returns_the_action(td):
    return torque(td["observation"])


def returns_a_mapping(td):
    return {"action": torque(td["observation"])}


@pytest.mark.parametrize("policy", [tutorial_policy, annotated_policy, returns_the_action, returns_a_mapping],
                         ids=["named-td", "annotated", "returns-action", "returns-mapping"])
@pytest.mark.parametrize("num_envs,batch", K_AND_BATCH)
def test_a_function_of_the_tensordict_equals_a_plain_loop(tmp_path, policy, num_envs, batch):
    ours, result = evaluate(tmp_path, policy, num_envs=num_envs, policy_batch=batch)
    assert_matches_loop(ours, gym_loop("Pendulum-v1", np_torque), num_envs, batch)
    assert result.metadata["engine"]["path"] == "gymnasium"
    assert "policy adapted as a tensordict policy" in result.warnings


def test_a_tensordict_function_the_rule_cannot_tell_falls_back_at_its_first_call(tmp_path):
    calls = []

    def act(data):  # no annotation, a name that says nothing: called with the observation first, which raises
        calls.append(type(data).__name__)
        data.set("action", torque(data["observation"]))
        return data

    ours, result = evaluate(tmp_path, act)
    assert ours == gym_loop("Pendulum-v1", np_torque)
    assert calls[0] == "Tensor" and set(calls[1:]) == {"TensorDict"}  # decided once, at the first call
    assert any(w.startswith("policy adapted as a tensordict policy (called with the observation it raised")
               for w in result.warnings), result.warnings


def test_a_tensordict_function_on_a_torchrl_env_without_the_observation_key(tmp_path):
    """A TorchRL env whose entries are not named ``observation``: the TensorDict function reads its own keys."""
    from helpers.tinyenv import TinyEnv

    class Renamed(TinyEnv):
        def __init__(self):
            super().__init__()
            self.observation_spec = self.observation_spec.clone()
            self.observation_spec["state"] = self.observation_spec.pop("observation")

        def _obs(self):
            return {"state": self.state.clone()}

    def policy(td):
        return td.set("action", torch.tanh(td["state"][:1]))

    ours, result = evaluate(tmp_path, policy, env=Renamed, max_steps=None)
    env, ref = Renamed(), []
    for seed in SEEDS:
        env.set_seed(seed)
        td, total, n = env.reset(), 0.0, 0
        while True:
            td = env.step(policy(td))
            total, n = total + td["next", "reward"].double().sum().item(), n + 1
            if td["next", "done"].any():
                break
            td = td["next"]
        ref.append((total, n))
    assert ours == ref and result.metadata["engine"]["path"] == "torchrl"


def test_a_policy_that_fails_on_both_says_both(tmp_path):
    with pytest.raises(PolicyError) as exc:
        evaluate(tmp_path, lambda x: x.no_such_method())
    text = str(exc.value)
    assert text.startswith("the policy raised at step 1 of episode 0: AttributeError: 'Tensor' object"), text
    assert "(called with the step TensorDict instead, it raised AttributeError" in text, text


def test_missing_observation_key_names_the_tensordict_form(tmp_path):
    with pytest.raises(PolicyError) as exc:
        evaluate(tmp_path, torch.nn.Sequential(torch.nn.Linear(3, 1)), obs_key="obs")
    text = str(exc.value)
    assert "the step TensorDict has no observation key 'obs'" in text and "--obs-key" in text
    assert "def policy(td: TensorDictBase)" in text


# -- a callable with in_keys / out_keys that is no module ----------------------------------------

class KeyedCallable:
    """A TensorDict policy that is not an ``nn.Module`` (no ``apply``, no parameters)."""

    in_keys, out_keys = ["observation"], ["action"]

    def __call__(self, td):
        return td.set("action", torque(td["observation"]))


@pytest.mark.parametrize("num_envs,batch", K_AND_BATCH)
def test_a_keyed_callable_that_is_no_module_equals_a_plain_loop(tmp_path, num_envs, batch):
    ours, result = evaluate(tmp_path, KeyedCallable(), num_envs=num_envs, policy_batch=batch)
    assert_matches_loop(ours, gym_loop("Pendulum-v1", np_torque), num_envs, batch)
    assert "policy adapted as a tensordict policy" in result.warnings


# -- an action that requires grad ----------------------------------------------------------------

class ParameterView(torch.nn.Module):
    """A learned constant torque: returns a view of its parameter (``no_grad`` does not detach it)."""

    def __init__(self, value=0.3):
        super().__init__()
        self.p = torch.nn.Parameter(torch.tensor([value]))

    def forward(self, obs):
        return self.p.expand(*obs.shape[:-1], 1)


class ParameterItself(ParameterView):
    def forward(self, obs):
        return self.p


@pytest.mark.parametrize("num_envs,batch", [(1, "batched"), (2, "batched"), (2, "per-env")])
@pytest.mark.parametrize("kind", [ParameterView, ParameterItself], ids=["view", "itself"])
def test_an_action_that_requires_grad_equals_a_plain_loop(tmp_path, kind, num_envs, batch):
    if kind is ParameterItself and batch == "batched" and num_envs > 1:
        batch = "per-env"  # a parameter of one env's shape is no batch of actions
    ours, result = evaluate(tmp_path, kind(), num_envs=num_envs, policy_batch=batch)
    assert ours == gym_loop("Pendulum-v1", lambda obs: np.array([0.3], np.float32))
    assert not result.trajectories[0]["action"].requires_grad


def test_an_action_that_requires_grad_on_the_torchrl_path(tmp_path):
    from helpers.tinyenv import TinyEnv

    _ours, result = evaluate(tmp_path, ParameterView(), env=TinyEnv, max_steps=None)
    assert result.metadata["engine"]["path"] == "torchrl"
    assert not result.trajectories[0]["action"].requires_grad
    assert (result.trajectories[0]["action"] == 0.3).all()


# -- discrete actions: an index, as gymnasium (and SB3) have it ----------------------------------

def pole(obs):
    """CartPole: push towards the side the pole falls to (an index)."""
    return int(obs[2] + 0.5 * obs[3] > 0)


def cartpole_loop(seeds=SEEDS, max_steps=60):
    """Observations and returns of a plain gymnasium loop with :func:`pole`."""
    env, out = gymnasium.make("CartPole-v1"), []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        seen, total = [obs], 0.0
        while True:
            obs, reward, terminated, truncated, _ = env.step(pole(obs))
            seen.append(obs)
            total += reward
            if terminated or truncated or len(seen) > max_steps:
                break
        out.append((total, len(seen) - 1, np.stack(seen)))
    return out


INDEX_FORMS = {
    "python int": lambda obs: pole(obs.numpy()),
    "numpy integer": lambda obs: np.int64(pole(obs.numpy())),
    "0-d tensor": lambda obs: (obs[..., 2] + 0.5 * obs[..., 3] > 0).long(),
    "one-hot": lambda obs: torch.nn.functional.one_hot((obs[..., 2] + 0.5 * obs[..., 3] > 0).long(), 2),
    "float index": lambda obs: (obs[..., 2] + 0.5 * obs[..., 3] > 0).double(),
}


def _same_as_cartpole_loop(result, ref):
    assert [(e["sum_reward"], e["length"]) for e in result.metrics["per_episode"]] == [r[:2] for r in ref]
    for traj, (_, _, seen) in zip(result.trajectories, ref):
        obs = torch.cat([traj["observation"][:1], traj["next", "observation"]]).numpy()
        np.testing.assert_array_equal(obs, seen)


@pytest.mark.parametrize("form", list(INDEX_FORMS))
@pytest.mark.slow
def test_cartpole_with_an_index_equals_a_plain_loop_to_the_bit(tmp_path, form):
    _, result = evaluate(tmp_path, INDEX_FORMS[form], env="CartPole-v1", max_steps=60)
    assert result.metadata["engine"]["path"] == "gymnasium"
    _same_as_cartpole_loop(result, cartpole_loop())


@pytest.mark.parametrize("mode,batch", [("serial", "batched"), ("serial", "per-env"), ("parallel", "per-env")])
@pytest.mark.slow
def test_cartpole_indices_for_k_envs(tmp_path, mode, batch):
    policy = INDEX_FORMS["0-d tensor"]  # a [K] tensor of indices for a batch
    _, result = evaluate(tmp_path, policy, env="CartPole-v1", max_steps=60, num_trajs=4, num_envs=4,
                         env_batch_mode=mode, policy_batch=batch)
    assert result.metadata["engine"]["path"] == "gymnasium"
    _same_as_cartpole_loop(result, cartpole_loop(seeds=[0, 1, 2, 3]))


def toy_loop(space, act, seeds=SEEDS):
    from helpers import gymtoys

    env, out = gymtoys.make(space), []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        total, n = 0.0, 0
        while True:
            obs, reward, terminated, truncated, _ = env.step(act(obs))
            total, n = total + reward, n + 1
            if terminated or truncated:
                break
        out.append((total, n))
    return out


TOY_POLICIES = {  # space -> (what the policy returns, what a plain gymnasium loop passes to step)
    "discrete-start": (lambda obs: int(obs[0] > 0) - 1, lambda obs: int(obs[0] > 0) - 1),
    "multidiscrete": (lambda obs: torch.stack([(obs[..., 0] > 0).long() * 2, (obs[..., 1] > 0).long()], -1),
                      lambda obs: np.array([int(obs[0] > 0) * 2, int(obs[1] > 0)])),
    "multidiscrete-onehot": (lambda obs: torch.tensor([0, 0, 1, 1, 0]), lambda obs: np.array([2, 0])),
    "multibinary": (lambda obs: (obs[..., :2] > 0), lambda obs: (obs[:2] > 0).astype(np.int8)),
}


@pytest.mark.parametrize("case", list(TOY_POLICIES))
@pytest.mark.parametrize("num_envs", [1, 2])
def test_other_discrete_spaces_equal_a_plain_loop(tmp_path, case, num_envs):
    space = case.replace("-onehot", "")
    ours, result = evaluate(tmp_path, TOY_POLICIES[case][0], env="helpers.gymtoys:make", env_kwargs={"space": space},
                            max_steps=None, num_envs=num_envs, policy_batch="per-env")
    assert result.metadata["engine"]["path"] == "gymnasium"
    assert ours == toy_loop(space, TOY_POLICIES[case][1])


def test_an_index_for_a_torchrl_one_hot_env(tmp_path):
    """The user's torchrl GymEnv keeps torchrl's one-hot action: an index is encoded for it."""
    from torchrl.envs import GymEnv

    policy = INDEX_FORMS["0-d tensor"]
    _, result = evaluate(tmp_path, policy, env=lambda: GymEnv("CartPole-v1"), max_steps=60)
    assert result.metadata["engine"]["path"] == "torchrl"
    assert any("converted from indices () to the env's one-hot (2,)" in w for w in result.warnings)
    _same_as_cartpole_loop(result, cartpole_loop())


@pytest.mark.parametrize("env,kw,fragments", [
    ("CartPole-v1", {}, ("the policy's action is neither an index nor a one-hot vector", "not probabilities")),
    ("helpers.gymtoys:make", {"env_kwargs": {"space": "multidiscrete"}},
     ("the policy's action is neither an index nor a one-hot vector", "[3, 2]")),
])
def test_probabilities_are_refused_with_advice_that_works(tmp_path, env, kw, fragments):
    n = 2 if env == "CartPole-v1" else 5
    with pytest.raises(PolicyError) as exc:
        evaluate(tmp_path, lambda obs: torch.full((n,), 1 / n), env=env, **kw)
    assert all(f in str(exc.value) for f in fragments), str(exc.value)


@pytest.mark.parametrize("env", ["CartPole-v1", lambda: __import__("torchrl.envs").envs.GymEnv("CartPole-v1")],
                         ids=["gymnasium", "torchrl"])
def test_an_index_outside_the_space_is_refused(tmp_path, env):
    with pytest.raises(PolicyError, match="(outside the env's action space|not a valid index).*2"):
        evaluate(tmp_path, lambda obs: 2, env=env)


@pytest.mark.parametrize("env,num_envs,expected", [
    ("CartPole-v1", 1, "shape () (indices, the env's action spec) or (2,) (one-hot)"),
    ("CartPole-v1", 4, "shape (4,) (indices, the env's action spec, for a batch of 4 envs) or (4, 2) (one-hot)"),
    (lambda: __import__("torchrl.envs").envs.GymEnv("CartPole-v1"), 1,
     "shape (2,) (one-hot, the env's action spec) or () (indices)"),
], ids=["gymnasium-index", "gymnasium-index-k4", "torchrl-one-hot"])
def test_a_wrong_sized_discrete_action_names_each_encoding_with_its_shape(tmp_path, env, num_envs, expected):
    """Each shape stands beside its own encoding's name: a gymnasium Discrete takes indices, torchrl's one-hot."""
    with pytest.raises(PolicyError) as exc:
        evaluate(tmp_path, lambda obs: torch.zeros(*obs.shape[:-1], 3), env=env, num_trajs=num_envs,
                 num_envs=num_envs)
    assert "the policy's action has the wrong shape" in str(exc.value) and expected in str(exc.value), str(exc.value)


# -- numpy arrays, numbers, lists; a tuple ---------------------------------------------------------

@pytest.mark.parametrize("form", ["numpy", "number", "list", "nested list"])
def test_numpy_numbers_and_lists_are_actions(tmp_path, form):
    make = {"numpy": lambda t: t.numpy(), "number": lambda t: float(t), "list": lambda t: t.tolist(),
            "nested list": lambda t: [t.tolist()]}[form]
    ours, _ = evaluate(tmp_path, lambda obs: make(torque(obs)))
    assert ours == gym_loop("Pendulum-v1", np_torque)


def test_a_tuple_gets_the_clear_message(tmp_path):
    with pytest.raises(PolicyError, match=r"returned a tuple \(ndarray, NoneType\).*model.predict"):
        evaluate(tmp_path, lambda obs: (np.zeros(1, np.float32), None))


# -- the torchrl path sums the env's float64 rewards ---------------------------------------------

def lstm_policy(hidden=4):
    from tensordict.nn import TensorDictModule, TensorDictSequential
    from torchrl.modules import LSTMModule

    torch.manual_seed(0)
    lstm = LSTMModule(input_size=3, hidden_size=hidden, in_key="observation", out_key="embed")
    head = TensorDictModule(torch.nn.Sequential(torch.nn.Linear(hidden, 1), torch.nn.Tanh()), ["embed"], ["action"])
    return TensorDictSequential(lstm, head)


def lstm_gym_loop(policy, env_id="Pendulum-v1", seeds=SEEDS, max_steps=STEPS, hidden=4):
    """A gymnasium loop that carries the LSTM's state by hand (zeros and ``is_init`` at each reset)."""
    def act(obs, state):
        td = TensorDict(observation=torch.as_tensor(obs, dtype=torch.float32), is_init=torch.tensor([state is None]),
                        recurrent_state_h=torch.zeros(1, hidden) if state is None else state[0],
                        recurrent_state_c=torch.zeros(1, hidden) if state is None else state[1])
        with torch.no_grad():
            td = policy(td)
        return td["action"].numpy(), (td["next", "recurrent_state_h"], td["next", "recurrent_state_c"])

    env, out = gymnasium.make(env_id), []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        total, n, state = 0.0, 0, None
        while True:
            action, state = act(obs, state)
            obs, reward, terminated, truncated, _ = env.step(action)
            total, n = total + reward, n + 1
            if terminated or truncated or n == max_steps:
                break
        out.append((total, n))
    return out


@pytest.mark.parametrize("num_envs,batch", K_AND_BATCH)
@pytest.mark.slow
def test_custom_keys_on_the_torchrl_path_sum_float64_rewards_to_the_bit(tmp_path, num_envs, batch):
    ours, result = evaluate(tmp_path, torque, done_key="terminated", num_envs=num_envs, policy_batch=batch)
    assert result.metadata["engine"]["path"] == "torchrl"
    assert_matches_loop(ours, gym_loop("Pendulum-v1", np_torque), num_envs, batch)
    assert result.trajectories[0]["next", "reward"].dtype == torch.float64


@pytest.mark.parametrize("num_envs", [1, 2])
@pytest.mark.slow
def test_a_recurrent_policy_on_the_torchrl_path_equals_a_plain_loop_to_the_bit(tmp_path, num_envs):
    ours, result = evaluate(tmp_path, lstm_policy(), num_envs=num_envs, env_batch_mode="serial")
    assert result.metadata["engine"]["path"] == "torchrl"
    assert ours == lstm_gym_loop(lstm_policy())


# -- the user guide's TorchRL actor ----------------------------------------------------------------

def guide_actor(spec):
    """The user guide's ProbabilisticActor factory, as written there."""
    from tensordict.nn import NormalParamExtractor, TensorDictModule
    from torchrl.modules import MLP, ProbabilisticActor, TanhNormal

    torch.manual_seed(0)
    action = spec.env_specs["input_spec", "full_action_spec", "action"]
    net = TensorDictModule(torch.nn.Sequential(MLP(out_features=2 * action.shape[-1], num_cells=[64]),
                                               NormalParamExtractor()),
                           in_keys=["observation"], out_keys=["loc", "scale"])
    return ProbabilisticActor(net, in_keys=["loc", "scale"], distribution_class=TanhNormal,
                              distribution_kwargs={"low": action.space.low, "high": action.space.high})


def test_the_user_guides_probabilistic_actor_equals_a_deterministic_plain_loop(tmp_path):
    from torchrl.envs import GymWrapper
    from torchrl.envs.utils import ExplorationType, set_exploration_type

    result = render_policy(RenderConfig(policy=guide_actor, env="Pendulum-v1", num_trajs=len(SEEDS), max_steps=STEPS,
                                        seed=SEEDS[0], out=tmp_path / "run.jsonl", progress=False))
    ours = [(e["sum_reward"], e["length"]) for e in result.metrics["per_episode"]]
    actor = guide_actor(type("Spec", (), {"env_specs": GymWrapper(gymnasium.make("Pendulum-v1")).specs})())

    def act(obs):
        with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
            return actor(TensorDict(observation=torch.as_tensor(obs)))["action"].numpy()

    assert ours == gym_loop("Pendulum-v1", act)
    assert result.metadata["engine"]["path"] == "gymnasium"


# -- a float32 module on a float64 torchrl env ----------------------------------------------------------

def float32_module():
    """A TensorDictModule of float32 weights that does not cast what it reads (a float64 input would raise)."""
    from tensordict.nn import TensorDictModule

    torch.manual_seed(3)
    return TensorDictModule(torch.nn.Linear(4, 1), in_keys=["observation"], out_keys=["action"])


def torchrl_inverted_pendulum():
    from torchrl.envs import GymEnv

    return GymEnv("InvertedPendulum-v5")  # float64 observations


@pytest.mark.parametrize("num_envs", [1, 2])
@pytest.mark.slow
def test_a_float32_module_on_a_float64_torchrl_env_reads_cast_observations_and_the_rollout_keeps_the_envs(
        tmp_path, num_envs):
    module = float32_module()
    ours, result = evaluate(tmp_path, module, env=torchrl_inverted_pendulum, num_envs=num_envs,
                            env_batch_mode="serial", max_steps=30)
    assert result.metadata["engine"]["path"] == "torchrl"
    with torch.no_grad():
        ref = plain_returns(lambda: gymnasium.make("InvertedPendulum-v5"),
                            lambda obs: module.module(torch.as_tensor(obs, dtype=torch.float32)).numpy().astype(
                                np.float32), SEEDS, 30)
    assert ours == ref
    traj = result.trajectories[0]
    assert traj["observation"].dtype == traj["next", "observation"].dtype == torch.float64  # the env's own
    assert [w for w in result.warnings if "observations cast" in w] == \
        ["observations cast from torch.float64 to the policy's torch.float32"]


def test_a_module_that_raises_leaves_the_step_tensordict_with_the_envs_observation():
    """The cast observation is swapped in for the call only: after the module raises, the step TensorDict
    holds the env's own float64 entry again."""
    from tensordict.nn import TensorDictModule

    from torchrl_render.errors import UserPolicyError
    from torchrl_render.policies.runner import PolicyRunner

    def boom(obs):
        assert obs.dtype == torch.float32
        raise ValueError("no")

    module = TensorDictModule(boom, in_keys=["observation"], out_keys=["action"])
    runner = PolicyRunner(torch.nn.Sequential(), RenderConfig(policy="p:m", env="e:m"), None, [])
    runner.policy, runner.dtype, runner.kind = module, torch.float32, "tensordict"
    obs = torch.zeros(4, dtype=torch.float64)
    td = TensorDict({"observation": obs})
    with pytest.raises(UserPolicyError, match="ValueError: no"):
        runner._call_td(td)
    assert td["observation"] is obs
