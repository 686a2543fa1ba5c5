"""The evaluation engine against plain gymnasium and dm_control loops written here, and its dispatch rules."""

from __future__ import annotations

import importlib.util
import math
import statistics

import gymnasium
import numpy as np
import pytest
import torch

from torchrl_render import RenderConfig, render_policy
from torchrl_render.errors import ConfigError

from helpers.engine_toys import Counting
from helpers.paths import ROOT
from helpers.plainloop import plain_returns
from helpers.statsref import t975

CHEETAH = ROOT / "examples" / "half_cheetah"


def _cheetah_policy():
    spec = importlib.util.spec_from_file_location("hc_policy", CHEETAH / "policy.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    policy = module.make_policy()
    policy.load_state_dict(torch.load(CHEETAH / "policy.pt", weights_only=True)["model_state_dict"])
    return policy.eval()


def plain_loop(make_env, policy, seeds, max_steps):
    """What a user writes: env.reset(seed=s), one policy call per step, float64 return."""
    def act(obs):
        with torch.no_grad():
            return policy(torch.as_tensor(obs, dtype=torch.float32)).numpy()

    return plain_returns(make_env, act, seeds, max_steps)


def cheetah(tmp_path, name, **kw):
    cfg = dict(ckpt=CHEETAH / "policy.pt", policy=f"{CHEETAH / 'policy.py'}:make_policy",
               env=f"{CHEETAH / 'policy.py'}:make_env", num_trajs=3, max_steps=120, seed=0,
               out=tmp_path / f"{name}.jsonl", progress=False)
    cfg.update(kw)
    return render_policy(RenderConfig(**cfg))


def returns(result):
    return [(e["sum_reward"], e["length"]) for e in result.metrics["per_episode"]]


@pytest.mark.slow
def test_k1_reproduces_a_plain_gymnasium_loop_to_the_bit(tmp_path):
    ref = plain_loop(lambda: gymnasium.make("HalfCheetah-v5"), _cheetah_policy(), [0, 1, 2], 120)
    ours = cheetah(tmp_path, "k1")
    assert returns(ours) == ref
    assert ours.metadata["engine"]["path"] == "gymnasium"
    first = ours.trajectories[0]["observation"][0].numpy()
    np.testing.assert_array_equal(first, gymnasium.make("HalfCheetah-v5").reset(seed=0)[0])


@pytest.mark.parametrize("mode", ["serial", "parallel"])
@pytest.mark.slow
def test_per_env_policy_batch_is_bit_identical_for_every_k(tmp_path, mode):
    one = cheetah(tmp_path, "one")
    four = cheetah(tmp_path, f"four_{mode}", num_envs=3, env_batch_mode=mode, policy_batch="per-env")
    assert returns(one) == returns(four)
    assert four.metadata["engine"]["batch_mode"] == mode
    for a, b in zip(one.trajectories, four.trajectories):
        assert (a["action"] == b["action"]).all() and (a["next", "observation"] == b["next", "observation"]).all()


@pytest.mark.slow
def test_batched_policy_calls_agree_within_the_confidence_interval(tmp_path):
    one = cheetah(tmp_path, "one", num_trajs=6)
    batched = cheetah(tmp_path, "batched", num_trajs=6, num_envs=3, env_batch_mode="serial")
    a, b = one.metrics["aggregated"], batched.metrics["aggregated"]
    lo, hi = a["ci95_sum_reward"]
    assert lo <= b["avg_sum_reward"] <= hi
    lo, hi = b["ci95_sum_reward"]
    assert lo <= a["avg_sum_reward"] <= hi
    # batched matmuls differ from per-row ones in the last bits only; HalfCheetah amplifies that
    obs = torch.from_numpy(np.stack([gymnasium.make("HalfCheetah-v5").reset(seed=s)[0] for s in range(3)])).float()
    policy = _cheetah_policy()
    with torch.no_grad():
        rows = torch.stack([policy(o) for o in obs])
        assert torch.allclose(policy(obs), rows, atol=1e-6)


def test_a_gymnasium_env_from_a_torchrl_wrapper_of_the_user_starts_at_the_seeded_reset(tmp_path):
    """torchrl's set_seed consumes a seeded reset; we do not: episode i starts at reset(seed=seed+i)."""
    result = render_policy(RenderConfig(policy="helpers.policies:linear_policy",
                                        env="helpers.torchrl_toys:torchrl_pendulum",
                                        num_trajs=3, seed=4, max_steps=5, out=tmp_path / "r.jsonl"))
    assert result.metadata["engine"]["path"] == "torchrl"
    env = gymnasium.make("InvertedPendulum-v5")
    for i, traj in enumerate(result.trajectories):
        np.testing.assert_array_equal(traj["observation"][0].numpy(), env.reset(seed=4 + i)[0])


def test_dispatch_runs_exactly_the_episodes_asked_and_never_steps_a_finished_env(tmp_path):
    Counting.instances.clear()
    result = render_policy(RenderConfig(policy="helpers.engine_toys:half_policy",
                                        env="helpers.engine_toys:counting_env",
                                        num_trajs=9, num_envs=4, env_batch_mode="serial", seed=3,
                                        out=tmp_path / "d.jsonl"))
    episodes = result.metrics["per_episode"]
    assert [e["episode_ix"] for e in episodes] == list(range(9)) and [e["seed"] for e in episodes] == list(range(3, 12))
    expected = [2 + int(np.random.default_rng(s).integers(0, 6)) for s in range(3, 12)]
    assert [e["length"] for e in episodes] == expected            # a short episode is not over-represented
    assert sum(c.resets for c in Counting.instances) == 9 + 0     # one reset per episode, none wasted
    assert all(c.stepped_after_end == 0 for c in Counting.instances)
    assert sum(c.steps for c in Counting.instances) == sum(expected)
    assert [e["sum_reward"] for e in episodes] == [sum(0.5 + t for t in range(1, n + 1)) for n in expected]
    assert all(e["success"] is (e["length"] >= 2) for e in episodes)


def test_eval_n_timesteps_runs_whole_episodes_until_enough_steps_whatever_k(tmp_path):
    def run(k):
        return render_policy(RenderConfig(policy="helpers.engine_toys:half_policy",
                                          env="helpers.engine_toys:counting_env",
                                          eval_n_timesteps=20, num_envs=k, env_batch_mode="serial", seed=0,
                                          out=tmp_path / f"n{k}.jsonl"))
    lengths = [2 + int(np.random.default_rng(s).integers(0, 6)) for s in range(40)]
    n = next(i + 1 for i in range(40) if sum(lengths[:i + 1]) >= 20)
    for k in (1, 3):
        result = run(k)
        assert [e["length"] for e in result.metrics["per_episode"]] == lengths[:n]
        assert result.metrics["aggregated"]["n_episodes"] == n


def test_num_trajs_and_eval_n_timesteps_are_exclusive():
    with pytest.raises(ConfigError, match="num_trajs and eval_n_timesteps were both given.*drop --num-trajs"):
        RenderConfig(policy="p:m", env="e:m", num_trajs=3, eval_n_timesteps=100)
    assert RenderConfig(policy="p:m", env="e:m").num_trajs == 1
    assert RenderConfig(policy="p:m", env="e:m", eval_n_timesteps=10).num_trajs is None


@pytest.mark.parametrize("k", [1, 2])
def test_reward_fn_is_reported_beside_the_env_reward(tmp_path, k):
    result = render_policy(RenderConfig(policy="helpers.engine_toys:half_policy",
                                        env="helpers.engine_toys:counting_env",
                                        num_trajs=3, num_envs=k, env_batch_mode="serial", seed=1,
                                        reward_fn="helpers.engine_toys:learned_reward", out=tmp_path / f"r{k}.jsonl"))
    for ep in result.metrics["per_episode"]:
        expected = sum(0.1 * t - 0.5 for t in range(1, ep["length"] + 1))
        assert ep["sum_reward_fn"] == pytest.approx(expected)
        assert ep["sum_reward"] == pytest.approx(sum(0.5 + t for t in range(1, ep["length"] + 1)))
    agg = result.metrics["aggregated"]
    assert agg["avg_sum_reward_fn"] == pytest.approx(statistics.fmean(e["sum_reward_fn"]
                                                                      for e in result.metrics["per_episode"]))


def test_what_lives_as_the_rollout_starts_is_left_out_of_full_collections_until_it_ends(tmp_path):
    # the imports, the env and the policy outlive the rollout: a full collection would walk them all (torch,
    # tensordict and torchrl hold about a million objects) each time a torchrl rollout's TensorDicts bring one
    import gc

    from helpers.tinyenv import make_policy

    seen = []
    policy = make_policy()

    def counting(obs):
        seen.append(gc.get_freeze_count())
        return policy(obs)

    assert gc.get_freeze_count() == 0
    render_policy(RenderConfig(policy=lambda: counting, env="helpers.tinyenv:make_env", num_trajs=2, max_steps=5,
                               out=tmp_path / "m.jsonl"))
    assert seen and min(seen) > 50_000  # frozen while it ran
    assert gc.get_freeze_count() == 0  # and given back


def test_metric_semantics_std_ci_and_wilson(tmp_path):
    result = render_policy(RenderConfig(policy="helpers.engine_toys:half_policy",
                                        env="helpers.engine_toys:counting_env",
                                        num_trajs=7, seed=2, out=tmp_path / "m.jsonl"))
    rets = np.array([e["sum_reward"] for e in result.metrics["per_episode"]])
    agg = result.metrics["aggregated"]
    assert agg["std_sum_reward"] == pytest.approx(np.std(rets))                       # ddof=0, as numpy/SB3
    half = t975(6) * np.std(rets, ddof=1) / math.sqrt(7)                              # Student t, 6 dof
    assert agg["ci95_sum_reward"] == pytest.approx([rets.mean() - half, rets.mean() + half])
    assert agg["pc_success"] == 100.0 and agg["ci95_success"][1] == pytest.approx(100.0)
    assert agg["ci95_success"][0] == pytest.approx(100 * 7 / (7 + 1.959963984540054 ** 2))


def test_no_trajectories_keeps_metrics_only(tmp_path):
    kept = render_policy(RenderConfig(policy="helpers.engine_toys:half_policy", env="helpers.engine_toys:counting_env",
                                      num_trajs=5, out=tmp_path / "a.jsonl"))
    lean = render_policy(RenderConfig(policy="helpers.engine_toys:half_policy", env="helpers.engine_toys:counting_env",
                                      num_trajs=5, trajectories=False, num_envs=2, out=tmp_path / "b.jsonl"))
    assert lean.trajectories == [] and len(kept.trajectories) == 5
    assert returns(lean) == returns(kept)
    with pytest.raises(ConfigError, match="save_rollout needs the trajectories"):
        RenderConfig(policy="p:m", env="e:m", trajectories=False, save_rollout=True)


@pytest.mark.slow
def test_memory_is_flat_in_the_number_of_episodes(tmp_path):
    import tracemalloc

    def peak(n):
        tracemalloc.start()
        render_policy(RenderConfig(policy="helpers.engine_toys:half_policy", env="Pendulum-v1", num_trajs=n,
                                   max_steps=50,
                                   trajectories=False, num_envs=2, out=tmp_path / f"p{n}.npz"))
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return top

    small, large = peak(10), peak(80)
    assert large < small * 1.5 + 2e6, (small, large)


@pytest.mark.slow
def test_factories_get_the_single_env_spec_whatever_k(tmp_path):
    seen = []

    def factory(spec):
        seen.append((tuple(spec.env_specs.shape), sorted(map(str, spec.env_specs["output_spec",
                                                                                 "full_observation_spec"].keys()))))
        return torch.nn.Sequential(torch.nn.Linear(4, 1), torch.nn.Tanh())

    for env, k, fmt in (("InvertedPendulum-v5", 3, "jsonl"), ("helpers.torchrl_toys:torchrl_pendulum", 2, "mp4")):
        render_policy(RenderConfig(policy=factory, env=env, num_trajs=3, num_envs=k, max_steps=3, width=32,
                                   height=32, render_quality="fast", env_batch_mode="serial",
                                   out=tmp_path / f"s{k}.{fmt}"))
    assert seen == [((), ["observation"]), ((), ["observation"])]


@pytest.mark.parametrize("batch", ["batched", "per-env"])
@pytest.mark.slow
def test_recurrent_policy_on_a_float64_env_is_the_same_in_every_slot(tmp_path, batch):
    common = dict(policy="helpers.torchrl_toys:make_lstm_policy", env="helpers.engine_toys:float64_tiny_env",
                  num_trajs=4, seed=11,
                  policy_batch=batch)
    one = render_policy(RenderConfig(out=tmp_path / "one.jsonl", **common))
    two = render_policy(RenderConfig(out=tmp_path / f"two{batch}.jsonl", num_envs=2, env_batch_mode="serial",
                                     **common))
    assert one.metadata["engine"]["path"] == "torchrl"
    for a, b in zip(one.trajectories, two.trajectories):
        torch.testing.assert_close(a["action"], b["action"], rtol=0, atol=1e-6 if batch == "batched" else 0)
    if batch == "per-env":
        assert returns(one) == returns(two)


@pytest.mark.slow
def test_dm_control_episode_starts_as_a_fresh_suite_load_with_its_seed(tmp_path):
    from dm_control import suite

    from helpers import policies as zoo

    result = render_policy(RenderConfig(policy="helpers.policies:dm_linear_policy",
                                        env="helpers.engine_toys:dm_cartpole", num_trajs=3,
                                        seed=5, max_steps=40, out=tmp_path / "dm.jsonl"))
    net = zoo.dm_linear_policy(_DmSpec())                               # the same weights as the run's
    for i, ep in enumerate(result.metrics["per_episode"]):
        env = suite.load("cartpole", "swingup", task_kwargs={"random": 5 + i})
        ts = env.reset()
        keys = sorted(ts.observation)
        first = np.concatenate([np.asarray(ts.observation[k]).reshape(-1) for k in keys])
        ours = np.concatenate([result.trajectories[i][k][0].numpy().reshape(-1) for k in keys])
        np.testing.assert_array_equal(first, ours)
        total = 0.0
        for _ in range(40):
            with torch.no_grad():
                obs = [torch.as_tensor(np.asarray(ts.observation[k])) for k in keys]
                action = net.module(*obs).numpy()
            ts = env.step(action)
            total += ts.reward
        assert ep["sum_reward"] == total                                   # to the bit
    # independent of what ran before and of K
    alone = render_policy(RenderConfig(policy="helpers.policies:dm_linear_policy",
                                       env="helpers.engine_toys:dm_cartpole", num_trajs=1,
                                       seed=7, max_steps=40, out=tmp_path / "alone.jsonl"))
    two = render_policy(RenderConfig(policy="helpers.policies:dm_linear_policy", env="helpers.engine_toys:dm_cartpole",
                                     num_trajs=3,
                                     seed=5, max_steps=40, num_envs=2, env_batch_mode="serial",
                                     policy_batch="per-env", out=tmp_path / "two.jsonl"))
    assert alone.metrics["per_episode"][0]["sum_reward"] == result.metrics["per_episode"][2]["sum_reward"]
    assert returns(two) == returns(result)


class _DmSpec:
    """The spec zoo.dm_linear_policy reads, from a finished run's env."""

    def __init__(self):
        from dm_control import suite
        from torchrl.envs import DMControlWrapper
        self.env_specs = DMControlWrapper(suite.load("cartpole", "swingup")).specs


def test_internal_success_keys_never_reach_the_user(tmp_path):
    """No ``success``/``success_reported`` for an env that never reports success."""
    from torchrl_render.errors import PolicyError

    result = render_policy(RenderConfig(policy="helpers.policies:linear_policy",
                                        env="helpers.torchrl_toys:torchrl_pendulum", num_trajs=1,
                                        max_steps=3, out=tmp_path / "a.jsonl"))
    fast = render_policy(RenderConfig(policy="helpers.policies:linear_policy", env="InvertedPendulum-v5", num_trajs=1,
                                      max_steps=3, out=tmp_path / "b.jsonl"))
    for traj in (result.trajectories[0], fast.trajectories[0]):
        names = {k if isinstance(k, str) else k[-1] for k in traj.keys(True, True)}
        assert not names & {"success", "success_reported"}
    assert fast.metrics["per_episode"][0]["success"] is None
    with pytest.raises(PolicyError) as err:
        render_policy(RenderConfig(policy="helpers.policies:linear_policy",
                                   env="helpers.torchrl_toys:torchrl_pendulum", num_trajs=1,
                                   max_steps=2, obs_key="obs", out=tmp_path / "c.jsonl"))
    assert "success" not in str(err.value) and "'observation'" in str(err.value)


@pytest.mark.parametrize("env", ["InvertedPendulum-v5", "helpers.torchrl_toys:torchrl_pendulum"])
@pytest.mark.slow
def test_a_policy_returning_a_mapping_with_the_action_just_works(tmp_path, env):
    """A policy that returns a mapping holding the action works on gymnasium and torchrl envs alike."""
    result = render_policy(RenderConfig(policy="helpers.engine_toys:dict_policy", env=env, num_trajs=2, max_steps=3,
                                        num_envs=2, out=tmp_path / "d.jsonl"))
    assert [e["length"] for e in result.metrics["per_episode"]] == [3, 3]


@pytest.mark.parametrize("env", ["InvertedPendulum-v5", "helpers.torchrl_toys:torchrl_pendulum"])
def test_a_policy_returning_a_tuple_is_told_how_to_select_the_action(tmp_path, env):
    """SAC actors return (action, log_prob); say so, not 'wrong shape (2,)'."""
    from helpers.clicode import exit_code

    code = exit_code(["--policy", "helpers.engine_toys:sac_like_policy", "--env", env, "--max-steps", "2",
                 "--out", str(tmp_path / "t.jsonl"), "--quiet"])
    assert code == 2 and not (tmp_path / "t.jsonl").exists()
    with pytest.raises(Exception, match=r"returned a tuple \(Tensor, Tensor\), not an action.*lambda obs: "
                                        r"actor\(obs\)\[0\]"):
        render_policy(RenderConfig(policy="helpers.engine_toys:sac_like_policy", env=env, max_steps=2,
                                   out=tmp_path / "u.jsonl"))


@pytest.mark.parametrize("k", [1, 2])
def test_a_nan_action_is_refused_on_the_gymnasium_path(tmp_path, k):
    from torchrl_render.errors import PolicyError

    with pytest.raises(PolicyError, match="the policy produced a NaN or infinite action. Got: \\[nan\\]"):
        render_policy(RenderConfig(policy="helpers.engine_toys:nan_policy", env="InvertedPendulum-v5", num_trajs=2,
                                   num_envs=k, max_steps=3, out=tmp_path / "n.jsonl"))
    assert not (tmp_path / "n.jsonl").exists()


def test_a_stateful_policy_keeps_one_state_per_slot_on_the_gymnasium_path(tmp_path):
    common = dict(policy="helpers.engine_toys:StepCounting", env="InvertedPendulum-v5", num_trajs=5, seed=2,
                  max_steps=8)
    one = render_policy(RenderConfig(out=tmp_path / "one.jsonl", **common))
    three = render_policy(RenderConfig(out=tmp_path / "three.jsonl", num_envs=3, env_batch_mode="serial", **common))
    assert returns(one) == returns(three) and three.metadata["engine"]["path"] == "gymnasium"
    for a, b in zip(one.trajectories, three.trajectories):
        assert (a["action"] == b["action"]).all()
        assert a["action"][0].item() == pytest.approx(math.tanh(0.05))        # reset at every episode


# -- the next step's input on the torchrl path ---------------------------------------------------------

def _same_entries(a, b):
    keys = set(a.keys(True, True))
    return keys == set(b.keys(True, True)) and all(a.get(k) is b.get(k) for k in keys)


def test_the_next_steps_input_is_torchrls_step_mdp_on_a_real_env_and_on_nested_and_changing_keys():
    """Our step-to-step move (its keys sorted once) against torchrl's ``step_mdp(td, keep_other=True)``: the
    same entries, the same tensors, on a GymEnv step with a step counter, on nested TensorDicts (which take
    torchrl's function) and when the keys change between steps."""
    from tensordict import TensorDict
    from torchrl.envs import GymEnv
    from torchrl.envs.utils import step_mdp

    from torchrl_render.engine.single import _Advance

    env = GymEnv("Pendulum-v1")
    advance = _Advance()
    td = env.reset()
    for step in range(3):
        td["action"] = env.action_spec.zero()
        td["step_count"] = torch.tensor([step])
        td = env.step(td)
        td["next", "step_count"] = torch.tensor([step + 1])
        ours, ref = advance(td), step_mdp(td, keep_other=True)
        assert _same_entries(ours, ref) and "reward" not in ours and "action" not in ours
        td = ours
    assert advance.flat
    env.close()

    def step_td(extra):
        nxt = TensorDict({"observation": torch.ones(2), "reward": torch.ones(1), "done": torch.zeros(1, dtype=bool),
                          **extra})
        return TensorDict({"observation": torch.zeros(2), "action": torch.zeros(1), "memory": torch.zeros(3),
                           "next": nxt})

    nested = step_td({"agents": TensorDict({"obs": torch.ones(2), "reward": torch.ones(1)})})
    ours = advance(nested)
    assert not advance.flat and _same_entries(ours, step_mdp(nested, keep_other=True))
    for extra in ({}, {"final": torch.ones(1)}, {}):  # a key that comes and goes: planned again each time
        changed = step_td(extra)
        ours = advance(changed)
        assert advance.flat and _same_entries(ours, step_mdp(changed, keep_other=True))
        assert ("final" in ours) == ("final" in extra) and ours["memory"] is changed["memory"]


def test_a_metrics_only_run_on_the_torchrl_path_builds_no_transition_and_reports_the_same_episodes(
        tmp_path, monkeypatch):
    """Without trajectories or a data format, the torchrl path keeps no per-step transition (no exclude,
    no stack at the episode's end); its episodes are those of a run that keeps them."""
    from torchrl.envs import GymEnv

    import torchrl_render.engine.torchrl_loop as loop

    built = []
    strip = loop._strip
    monkeypatch.setattr(loop, "_strip", lambda cfg, transition: built.append(1) or strip(cfg, transition))
    runs = {}
    for keep in (False, True):
        built.clear()
        out = tmp_path / ("run.jsonl" if keep else "eval_info.json")
        result = render_policy(RenderConfig(policy=lambda: (lambda obs: torch.tanh(obs[..., :1]) * 2),
                                            env=lambda: GymEnv("Pendulum-v1"), num_trajs=2, max_steps=15, seed=4,
                                            out=out, trajectories=keep, progress=False))
        assert result.metadata["engine"]["path"] == "torchrl"
        runs[keep] = ([(e["sum_reward"], e["length"]) for e in result.metrics["per_episode"]], len(built))
    assert runs[False][0] == runs[True][0]
    assert runs[False][1] == 0 and runs[True][1] == 30
