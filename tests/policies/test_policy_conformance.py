"""The policy conformance matrix: every kind of policy a user brings, on every action space and kind of
env, at K = 1 and 4 envs (per-env, batched, parallel), equals a plain loop written in ``helpers/conformance.py``
that calls the policy as the user's own loop would.

* K=1 and K=4 per-env: equal to the bit to the loop that runs one env at a time (the docs' claim).
* K=4 batched / parallel: one policy call on the ``[4, ...]`` batch per step; equal to the bit to a
  loop that does the same (a plain batched loop: four envs, one call on their stacked observations).

Combinations that do not apply are not generated (:func:`combinations` says why); refusals and the
fixes they name are at the end. MuJoCo rows (gymnasium's and dm_control's) and torchrl worker
processes (``ParallelEnv``, seconds to start) carry the ``slow`` marker; the rest runs in under a minute.
"""

from __future__ import annotations

import functools

import pytest
import torch

from torchrl_render import RenderConfig, render_policy
from torchrl_render.errors import ConfigError, PolicyError

from helpers.conformance import ENVS, POLICIES, EnvCase, PolicyCase, plain_loop

SEEDS = [0, 1, 2, 3]
STEPS = 10
KS = {"k1": dict(num_envs=1), "k4-per-env": dict(num_envs=4, env_batch_mode="serial", policy_batch="per-env"),
      "k4-batched": dict(num_envs=4, env_batch_mode="serial", policy_batch="batched"),
      "k4-parallel": dict(num_envs=4, env_batch_mode="parallel", policy_batch="batched")}


def path_of(env: EnvCase, policy: PolicyCase) -> str:
    """The engine path the docs promise: gymnasium for a gymnasium env, unless the policy is recurrent."""
    return "gymnasium" if env.family == "gymnasium" and policy.style != "lstm" else "torchrl"


def combinations():
    """``(params, why_not)``: the matrix, and the combinations left out with the reason."""
    params, left_out = [], []
    for env in ENVS:
        for policy in POLICIES:
            why = policy.applies(env)
            if why is not None:
                left_out.append((env.name, policy.name, why))
                continue
            for k in KS:
                workers = k == "k4-parallel" and path_of(env, policy) == "torchrl"
                slow = env.slow or env.family == "dm_control" or workers
                params.append(pytest.param(env, policy, k, id=f"{env.name}-{policy.name}-{k}",
                                           marks=[pytest.mark.slow] if slow else []))
    return params, left_out


PARAMS, LEFT_OUT = combinations()


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny policies run fastest on one thread on a busy machine (two spin-waiting threads made a 4-unit
    LSTM step cost milliseconds); torchrl's batched envs set the count back when they close."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def run(tmp_path, env: EnvCase, policy: PolicyCase, k: str, obj, env_object=None, **kw):
    cfg = dict(policy=lambda: obj, env=env.env if env_object is None else env_object, obs_key=env.obs_key,
               num_trajs=len(SEEDS), max_steps=STEPS, seed=SEEDS[0], out=tmp_path / "run.jsonl", progress=False,
               **KS[k])
    cfg.update(kw)
    return render_policy(RenderConfig(**cfg))


@pytest.mark.parametrize("env,policy,k", PARAMS)
@pytest.mark.slow
def test_matrix(tmp_path, env, policy, k):
    obj = policy.build(env)
    result = run(tmp_path, env, policy, k, obj)
    torch.set_num_threads(1)  # closing a SerialEnv / ParallelEnv resets it
    assert result.metadata["engine"]["path"] == path_of(env, policy), result.metadata["engine"]
    ours = [(e["sum_reward"], e["length"]) for e in result.metrics["per_episode"]]
    batched = KS[k].get("policy_batch") == "batched" and KS[k]["num_envs"] > 1
    assert ours == reference(env, policy, batched)


@functools.cache
def reference(env: EnvCase, policy: PolicyCase, batched: bool) -> list[tuple[float, int]]:
    """The plain loop's per-episode numbers (the same for K=1 and K=4 per-env, and for batched and parallel)."""
    return plain_loop(env, policy, policy.build(env), SEEDS, STEPS, batched=batched)


def test_the_matrix_is_complete():
    """Every env x policy pair is either run at every K or left out for a stated reason."""
    run_pairs = {(p.values[0].name, p.values[1].name) for p in PARAMS}
    left = {(e, p) for e, p, _ in LEFT_OUT}
    assert run_pairs | left == {(e.name, p.name) for e in ENVS for p in POLICIES} and not run_pairs & left
    assert len(PARAMS) == len(run_pairs) * len(KS)
    assert all(why for _, _, why in LEFT_OUT)


# -- refused before the rollout, with a fix that works ------------------------------------------------

def _dm():
    return next(e for e in ENVS if e.name == "dm_control-box")


def _case(name):
    return next(p for p in POLICIES if p.name == name)


@pytest.mark.slow
def test_a_tensor_policy_on_dm_control_names_its_keys_and_the_fix_works(tmp_path):
    env, policy = _dm(), _case("ordinary-module")
    with pytest.raises(PolicyError, match=r"no observation key 'observation'.*'position', 'velocity'.*--obs-key"):
        run(tmp_path, env, policy, "k1", policy.build(env), obs_key="observation")
    assert not (tmp_path / "run.jsonl").exists()
    test_matrix(tmp_path, env, policy, "k1")  # the fix: --obs-key position


def test_sb3_predict_without_the_index_is_refused_and_the_fix_works(tmp_path):
    stable_baselines3 = pytest.importorskip("stable_baselines3")

    from helpers.sb3models import MODELS, trained

    env = next(e for e in ENVS if e.name == "classic-discrete")
    model = getattr(stable_baselines3, MODELS[env.sb3][0]).load(trained(env.sb3), device="cpu")
    tuple_message = r"returned a tuple \(ndarray, NoneType\).*predict\(obs, deterministic=True\)\[0\]"
    with pytest.raises(PolicyError, match=tuple_message):
        run(tmp_path, env, _case("sb3-predict"), "k1", lambda obs: model.predict(obs.numpy(), deterministic=True))
    assert not (tmp_path / "run.jsonl").exists()
    test_matrix(tmp_path, env, _case("sb3-predict"), "k1")


def test_an_env_object_for_parallel_workers_is_refused_and_the_fix_works(tmp_path):
    from helpers.conformance import ToyTorchrl

    env = next(e for e in ENVS if e.name == "torchrl-custom-box")
    policy = _case("obs-function")
    with pytest.raises(ConfigError, match="an env object cannot be copied into 4 env workers.*env=lambda"):
        run(tmp_path, env, policy, "k4-batched", policy.build(env), env_object=ToyTorchrl("box"))
    assert not (tmp_path / "run.jsonl").exists()
    test_matrix(tmp_path, env, policy, "k4-batched")  # the fix: a function that builds the env
