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


def gym_loop(env_id, act, seeds=SEEDS, max_steps=STEPS):
    """What a user writes: ``env.reset(seed=s)``, ``env.step(act(obs))``, float64 return."""
    env = gymnasium.make(env_id)
    out = []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        total, n = 0.0, 0
        while True:
            obs, reward, terminated, truncated, _ = env.step(act(obs))
            total += reward
            n += 1
            if terminated or truncated or n == max_steps:
                break
        out.append((total, n))
    env.close()
    return out


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


@pytest.mark.parametrize("policy", [tutorial_policy, annotated_policy], ids=["named-td", "annotated"])
@pytest.mark.parametrize("num_envs", [1, 2])
def test_a_function_of_the_tensordict_equals_a_plain_loop(tmp_path, policy, num_envs):
    ours, result = evaluate(tmp_path, policy, num_envs=num_envs)
    assert ours == gym_loop("Pendulum-v1", np_torque)
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
    from tinyenv import TinyEnv

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


@pytest.mark.parametrize("num_envs", [1, 2])
def test_a_keyed_callable_that_is_no_module_equals_a_plain_loop(tmp_path, num_envs):
    ours, result = evaluate(tmp_path, KeyedCallable(), num_envs=num_envs)
    assert ours == gym_loop("Pendulum-v1", np_torque)
    assert "policy adapted as a tensordict policy" in result.warnings
