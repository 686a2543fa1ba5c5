"""Evaluation numbers checked from outside: budgets at K envs, batch-mode timing, success rules, the
95% interval, non-finite rewards, huge episode counts, more envs than episodes, errors at K envs,
imitation's names, and the CLI's summary of many episodes.

Each number is compared with what the env defines or with a plain gymnasium loop written here.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

from torchrl_render import RenderConfig, render_policy
from torchrl_render.cli import main
from torchrl_render.metrics import aggregate

from helpers.clicode import exit_code
from helpers.eval_envs import Counting, diverging_env, normalized_pendulum
from helpers.paths import TESTS
from helpers.plainloop import plain_returns
from helpers.statsref import t975


def per_episode(result, *keys):
    keys = keys or ("episode_ix", "seed", "sum_reward", "length", "success")
    return [tuple(e[k] for k in keys) for e in result.metrics["per_episode"]]


def half_policy():
    return lambda obs: torch.full((*obs.shape[:-1], 1), 0.5)


# -- an eval_n_timesteps budget at K envs -------------------------------------------------------------------------


def test_eval_n_timesteps_at_four_envs_reports_the_plain_loops_episodes(tmp_path):
    """Pendulum's episodes are all 200 steps: the one that fills the budget and one started past it end on the
    same batch step; only episodes 0-4 count, as a one-env loop runs them."""
    result = render_policy(RenderConfig(policy=half_policy, env="Pendulum-v1", eval_n_timesteps=1000, num_envs=4,
                                        env_batch_mode="serial", out=tmp_path / "p.jsonl"))
    plain = plain_returns(lambda: gym.make("Pendulum-v1"), lambda obs: np.full(1, 0.5, np.float32), range(5))
    assert per_episode(result, "episode_ix", "seed", "sum_reward", "length") == \
        [(i, i, total, n) for i, (total, n) in enumerate(plain)]
    assert result.metrics["aggregated"]["n_episodes"] == 5
    assert result.metrics["aggregated"]["avg_sum_reward"] == pytest.approx(np.mean([t for t, _ in plain]))


@pytest.mark.parametrize("budget", [6, 8, 13])
def test_an_episode_started_past_the_budget_is_dropped_even_when_it_ends_first(tmp_path, budget):
    """Episode lengths vary with the seed, so with K envs a later episode can end before the one that reaches
    the budget; the reported episodes are still 0..n-1 for the smallest n whose lengths reach it."""
    lengths = [2 + int(np.random.default_rng(s).integers(0, 6)) for s in range(40)]  # test_engine.Counting
    n = next(i + 1 for i in range(40) if sum(lengths[:i + 1]) >= budget)
    for k in (3, 4):
        result = render_policy(RenderConfig(policy="helpers.engine_toys:half_policy",
                                            env="helpers.engine_toys:counting_env",
                                            eval_n_timesteps=budget, num_envs=k, env_batch_mode="serial", seed=0,
                                            out=tmp_path / f"n{k}.jsonl"))
        assert per_episode(result, "episode_ix", "length") == list(enumerate(lengths[:n])), k


# -- --env-batch-mode auto never steps the run's envs --------------------------------------------------------------


def tanh_policy():
    return lambda obs: torch.tanh(obs[..., :1])


def test_auto_batch_mode_times_an_env_of_its_own(tmp_path, monkeypatch):
    import torchrl_render.engine.gym_loop as gym_loop

    monkeypatch.setattr(gym_loop, "cpu_count", lambda: 2)            # time it on any machine
    monkeypatch.setattr(gym_loop, "free_cores", lambda: 2.0)         # however busy it is
    monkeypatch.setattr(gym_loop, "ORDER_S", 1.0)                    # and keep the envs in this process
    common = dict(policy=tanh_policy, env="helpers.eval_envs:normalized_pendulum", num_trajs=4, num_envs=2,
                  max_steps=40, seed=3)
    auto = render_policy(RenderConfig(out=tmp_path / "auto.jsonl", **common))
    serial = render_policy(RenderConfig(out=tmp_path / "serial.jsonl", env_batch_mode="serial", **common))
    assert auto.metadata["engine"]["batch_mode"] == "serial" and auto.metadata["engine"]["step_ms"] > 0
    assert per_episode(auto) == per_episode(serial)
    policy = tanh_policy()
    plain = plain_returns(normalized_pendulum, lambda o: policy(torch.as_tensor(o, dtype=torch.float32)).numpy(),
                          [3], max_steps=40)
    assert per_episode(auto, "sum_reward", "length")[0] == plain[0]   # episode 0 starts from fresh statistics


def test_auto_batch_mode_keeps_the_envs_here_on_a_busy_machine(tmp_path, monkeypatch):
    import torchrl_render.engine.gym_loop as gym_loop

    monkeypatch.setattr(gym_loop, "cpu_count", lambda: 2)
    monkeypatch.setattr(gym_loop, "free_cores", lambda: 0.6)         # the other core is taken
    result = render_policy(RenderConfig(out=tmp_path / "auto.jsonl", policy=tanh_policy,
                                        env="helpers.eval_envs:normalized_pendulum", num_trajs=4, num_envs=2,
                                        max_steps=10, seed=3))
    assert result.metadata["engine"]["batch_mode"] == "serial" and "step_ms" not in result.metadata["engine"]
    assert result.metadata["engine"]["free_cores"] == 0.6
    assert any("the machine is busy (about 0.6 of 2 cores free" in w for w in result.warnings)


# -- the success rule ------------------------------------------------------------------------------------------------


class Flicker(Counting):
    """Success is reported at step 2; at the last step (4) it is True for odd seeds, False for seeds 0 mod 4,
    and not reported at all for seeds 2 mod 4."""

    def step(self, action):
        self.t += 1
        info = {"is_success": self.t == 2}
        if self.t == 4:
            info = {} if self.seed_ % 4 == 2 else {"is_success": self.seed_ % 2 == 1}
        return np.full(3, float(self.t)), 1.0, self.t >= 4, False, info


def flicker_torchrl():
    """The same rule as a torchrl env of the user's, with a ``success`` entry at every step."""
    from tensordict import TensorDict
    from torchrl.data import Bounded, Composite, Unbounded
    from torchrl.envs import EnvBase

    class FlickerTorchrl(EnvBase):
        def __init__(self):
            super().__init__(batch_size=torch.Size([]))
            self.observation_spec = Composite(observation=Unbounded(shape=(3,)),
                                              success=Unbounded(shape=(1,), dtype=torch.bool))
            self.action_spec = Bounded(-1.0, 1.0, shape=(1,))
            self.reward_spec = Unbounded(shape=(1,))
            self.seed_, self.t = 0, 0

        def _reset(self, tensordict=None, **kwargs):
            self.t = 0
            false = torch.zeros(1, dtype=torch.bool)
            return TensorDict(observation=torch.zeros(3), success=false, done=false.clone(),
                              terminated=false.clone())

        def _step(self, tensordict):
            self.t += 1
            done = torch.tensor([self.t >= 4])
            success = self.t == 2 or (self.t == 4 and self.seed_ % 2 == 1)
            return TensorDict(observation=torch.full((3,), float(self.t)), success=torch.tensor([success]),
                              reward=torch.ones(1), done=done, terminated=done.clone())

        def _set_seed(self, seed):
            self.seed_ = int(seed or 0)
            return seed

    return FlickerTorchrl()


@pytest.mark.parametrize("k", [1, 2])
def test_success_rule_any_or_final_on_the_gymnasium_path(tmp_path, k):
    def run(rule):
        return render_policy(RenderConfig(policy=half_policy, env=Flicker, num_trajs=4, num_envs=k,
                                          env_batch_mode="serial", success_rule=rule, out=tmp_path / f"{rule}.jsonl"))
    default, final = run("any"), run("final")
    assert [e["success"] for e in default.metrics["per_episode"]] == [True, True, True, True]
    assert [e["success"] for e in final.metrics["per_episode"]] == [False, True, None, True]
    assert default.metrics["aggregated"]["pc_success"] == 100.0
    assert final.metrics["aggregated"]["pc_success"] == pytest.approx(200 / 3)   # over the 3 episodes reporting it
    assert (default.metadata["engine"]["success_rule"], final.metadata["engine"]["success_rule"]) == ("any", "final")
    assert final.metadata["config"]["success_rule"] == "final"


def test_success_rule_final_on_the_torchrl_path(tmp_path):
    def run(rule):
        return render_policy(RenderConfig(policy="helpers.tinyenv:make_policy", env=flicker_torchrl, num_trajs=2,
                                          success_rule=rule, out=tmp_path / f"{rule}.jsonl"))
    default, final = run("any"), run("final")
    assert default.metadata["engine"]["path"] == "torchrl"
    assert [e["success"] for e in default.metrics["per_episode"]] == [True, True]
    assert [e["success"] for e in final.metrics["per_episode"]] == [False, True]


# -- the 95% interval of the mean return ---------------------------------------------------------------------------


def test_the_t_quantile_equals_scipys_without_importing_scipy():
    # scipy.stats costs seconds to import: the interval's quantile is computed without it, and must
    # still equal scipy's to scipy's own precision, which varies between versions (1.17 loses digits near
    # 1/2 at 4 dof, 1.11 near 1 at 1 dof, where the Cauchy closed form tan(pi (p - 1/2)) is exact)
    code = ("import sys; from torchrl_render.metrics import t_quantile; t_quantile(0.975, 9); "
            "print('scipy' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
    from scipy.stats import t

    from torchrl_render.metrics import t_quantile

    for dof in [*range(1, 120), 250, 1000, 5000, 5001, 10**4, 10**6]:
        for p in (0.5000001, 0.6, 0.74, 0.76, 0.9, 0.95, 0.975, 0.99, 0.9995, 0.999999, 0.025, 0.1):
            assert t_quantile(p, dof) == pytest.approx(float(t.ppf(p, dof)), rel=1e-8, abs=1e-9), (p, dof)
    assert t_quantile(0.9995, 1) == pytest.approx(1 / math.tan(math.pi * 0.0005), rel=1e-13)
    with pytest.raises(ValueError, match="0 < p < 1"):
        t_quantile(1.0, 3)


@pytest.mark.parametrize("n", [2, 7, 31, 32, 50, 60, 200])
def test_ci95_uses_the_exact_t_quantile_at_every_n(n):
    returns = list(np.random.default_rng(n).normal(100.0, 15.0, n))
    episodes = [{"episode_ix": i, "sum_reward": r, "max_reward": 1.0, "length": 10, "success": None}
                for i, r in enumerate(returns)]
    lo, hi = aggregate(episodes, 1.0)["ci95_sum_reward"]
    mean = sum(returns) / n
    sd = math.sqrt(sum((r - mean) ** 2 for r in returns) / (n - 1))
    half = t975(n - 1) * sd / math.sqrt(n)
    assert (hi - lo) / 2 == pytest.approx(half, rel=1e-7) and (hi + lo) / 2 == pytest.approx(mean, rel=1e-12)


# -- imitation's n_traj ------------------------------------------------------------------------------------------------


def test_imitation_rollout_stats_names_are_all_there(tmp_path):
    result = render_policy(RenderConfig(policy="helpers.engine_toys:half_policy",
                                        env="helpers.engine_toys:counting_env",
                                        num_trajs=5, seed=1, out=tmp_path / "s.jsonl"))
    agg = result.metrics["aggregated"]
    lengths = [e["length"] for e in result.metrics["per_episode"]]
    returns = [e["sum_reward"] for e in result.metrics["per_episode"]]
    # imitation.data.rollout.rollout_stats: n_traj, then return_* and len_* over the trajectories
    assert agg["n_traj"] == 5
    assert (agg["len_min"], agg["len_max"], agg["len_mean"]) == (min(lengths), max(lengths), np.mean(lengths))
    assert agg["return_std"] == pytest.approx(np.std(returns)) and agg["len_std"] == pytest.approx(np.std(lengths))


# -- a NaN reward ----------------------------------------------------------------------------------------------------


def strict_json(path: Path):
    def refuse(constant):
        raise AssertionError(f"{constant} in {path.name}: not JSON")
    return json.loads(path.read_text(), parse_constant=refuse)


def _refuse_constant(constant):
    raise AssertionError(f"{constant} in a JSON line")


@pytest.mark.parametrize("fmt", ["npz", "json", "jsonl"])
def test_a_nan_reward_is_reported_and_the_aggregates_say_what_they_are_over(tmp_path, capsys, fmt):
    out = tmp_path / f"run.{fmt}"
    code = main(["--policy", "helpers.engine_toys:half_policy", "--env", "helpers.eval_envs:diverging_env",
                 "--num-trajs", "4",
                 "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 0 and "Traceback" not in err and out.exists()
    meta = strict_json(Path(f"{out}.metadata.json"))
    returns = [e["sum_reward"] for e in meta["metrics"]["per_episode"]]
    assert returns == [15.0, None, 45.0, 60.0]                        # the NaN episode is reported, as null
    agg = meta["metrics"]["aggregated"]
    assert agg["n_episodes"] == 4 and agg["nonfinite_sum_reward"] == [1]
    assert agg["avg_sum_reward"] == pytest.approx(40.0) and agg["std_sum_reward"] == pytest.approx(np.std([15, 45, 60]))
    assert (agg["min_sum_reward"], agg["median_sum_reward"], agg["max_sum_reward"]) == (15.0, 45.0, 60.0)
    assert any("over the 3 finite return(s)" in w for w in meta["warnings"]) and "over the 3 finite" in err
    if fmt in ("json", "jsonl"):  # the data file itself is valid JSON too
        if fmt == "json":
            assert strict_json(out)
        else:  # every line, the metadata line included, parses without NaN or Infinity
            assert all(json.loads(line, parse_constant=_refuse_constant) for line in out.read_text().splitlines())


def test_a_run_that_fails_writing_its_sidecar_leaves_no_artifact(tmp_path, monkeypatch):
    import torchrl_render.api.outputs as outputs

    real = outputs.write_json

    def refuse_sidecar(path, data):
        if path.name.endswith(".metadata.json"):
            raise OSError(28, "No space left on device")
        real(path, data)

    monkeypatch.setattr(outputs, "write_json", refuse_sidecar)
    with pytest.raises(OSError, match="No space left"):
        render_policy(RenderConfig(policy=half_policy, env="helpers.engine_toys:counting_env", num_trajs=2,
                                   out=tmp_path / "run.npz"))
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# -- huge episode counts ---------------------------------------------------------------------------------------------


class Enough(Exception):
    """Raised from on_episode to end a run early."""


def test_a_huge_num_trajs_costs_nothing_before_the_first_step(tmp_path):
    common = dict(policy=half_policy, env=diverging_env, num_trajs=10 ** 12, out=tmp_path / "run.jsonl")
    dry = render_policy(RenderConfig(dry_run=True, **common))
    assert dry.metadata["planned_paths"] == [str(tmp_path / "run.jsonl"), str(tmp_path / "run.jsonl.metadata.json")]
    seen = []

    def stop_after_two(metrics):
        seen.append(metrics["episode_ix"])
        if len(seen) == 2:
            raise Enough

    with pytest.raises(Enough):
        render_policy(RenderConfig(**common), on_episode=stop_after_two)
    assert seen == [0, 1]


# -- more envs than episodes -----------------------------------------------------------------------------------------


def test_more_envs_than_episodes_runs_one_env_per_episode(tmp_path):
    common = dict(policy="helpers.engine_toys:half_policy", env="helpers.engine_toys:counting_env", num_trajs=2, seed=5)
    one = render_policy(RenderConfig(out=tmp_path / "one.jsonl", **common))
    many = render_policy(RenderConfig(out=tmp_path / "many.jsonl", num_envs=4, env_batch_mode="serial", **common))
    assert per_episode(many) == per_episode(one)
    assert many.metadata["engine"]["num_envs"] == 2 and many.metadata["config"]["num_envs"] == 2
    assert any("num_envs=4 is more than num_trajs=2: ran 2 env(s)" in w for w in many.warnings)


# -- an env that raises at K envs names its episode ------------------------------------------------------------------


# the env seeded 2 raises: at --seed 0 it is episode 2, which parallel slots step in this process (slot 2 of
# parts 0/1), at --seed 1 episode 1, which a worker process steps (slot 1)
@pytest.mark.parametrize(("mode", "seed"), [("serial", 0), ("parallel", 0), ("parallel", 1)])
@pytest.mark.slow
def test_an_env_raising_at_four_envs_names_the_episode_that_raised(tmp_path, capsys, mode, seed):
    out = tmp_path / "run.jsonl"
    code = exit_code(["--policy", "helpers.engine_toys:half_policy", "--env", "helpers.eval_envs:exploding_env",
                      "--num-trajs", "8", "--seed", str(seed),
                 "--num-envs", "4", "--env-batch-mode", mode, "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert f"the env raised at step 3 of episode {2 - seed}: RuntimeError: exploded at t=3" in err, err
    assert list(tmp_path.iterdir()) == []


def test_a_torchrl_env_raising_in_serial_envs_names_the_episode_that_raised(tmp_path, capsys):
    out = tmp_path / "run.jsonl"
    code = exit_code(["--policy", "helpers.tinyenv:make_policy", "--env", "helpers.badfactories:failing_env",
                      "--env-kwargs",
                 '{"fail_at": 3, "episode": 2}', "--num-trajs", "4", "--num-envs", "2", "--env-batch-mode", "serial",
                 "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert "the env raised at step 3 of episode 2: RuntimeError: TinyEnv exploded at t=3" in err, err


@pytest.mark.parametrize("mode", ["serial", "parallel"])
@pytest.mark.slow
def test_a_torchrl_env_raising_in_batched_envs_names_the_episode_its_env_and_seed(tmp_path, capsys, mode):
    """In a ParallelEnv worker process as in a SerialEnv: one line naming the step, the episode, the env that
    ran it and its seed, no traceback on the terminal (the worker's last lines are in the fix), no artifact
    (the finished episodes' metrics only, in the partial file)."""
    out = tmp_path / "run.jsonl"
    code = exit_code(["--policy", "helpers.tinyenv:make_policy", "--env", "helpers.badfactories:failing_env",
                      "--env-kwargs", '{"fail_at": 3, "episode": 2}', "--num-trajs", "4", "--num-envs", "2",
                      "--env-batch-mode", mode, "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "the env raised at step 3 of episode 2: RuntimeError: TinyEnv exploded at t=3" in err, err
    assert "(episode 2 ran in env 0, seeded 2)" in err, err  # episodes 0, 1 in envs 0, 1; 2 takes env 0
    assert ("the worker's traceback:" in err) == (mode == "parallel")
    assert [p.name for p in tmp_path.iterdir()] == ["run.jsonl.partial.json"]


# -- the CLI's summary of many episodes ------------------------------------------------------------------------------


def test_many_episodes_print_a_summary_and_verbose_prints_them_all(tmp_path, capsys):
    argv = ["--policy", "helpers.engine_toys:half_policy", "--env", "helpers.engine_toys:counting_env", "--num-trajs",
            "40",
            "--out", str(tmp_path / "run.jsonl")]
    assert main(argv) == 0
    err = capsys.readouterr().err
    episode_lines = [line for line in err.splitlines() if line.startswith("episode ")]
    assert len(episode_lines) == 5 and "... 35 more episodes (--verbose prints a line for each" in err
    meta = json.loads((tmp_path / "run.jsonl.metadata.json").read_text())
    returns = sorted(e["sum_reward"] for e in meta["metrics"]["per_episode"])
    assert f"min {returns[0]:.2f}, median {np.median(returns):.2f}, max {returns[-1]:.2f}" in err
    assert main([*argv, "--overwrite", "--verbose"]) == 0
    err = capsys.readouterr().err
    assert len([line for line in err.splitlines() if line.startswith("episode ")]) == 40


def test_a_few_episodes_still_print_one_line_each(tmp_path, capsys):
    assert main(["--policy", "helpers.engine_toys:half_policy", "--env", "helpers.engine_toys:counting_env",
                 "--num-trajs", "4",
                 "--out", str(tmp_path / "run.jsonl")]) == 0
    assert len([line for line in capsys.readouterr().err.splitlines() if line.startswith("episode ")]) == 4


# -- Ctrl-C with env worker processes --------------------------------------------------------------------------------


def _own_group_default_sigint() -> None:
    """Ctrl-C in a terminal reaches the process group: the run and its workers get their own one here,
    with SIGINT's default action (a test run may have been started with SIGINT ignored)."""
    os.setpgrp()
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
@pytest.mark.parametrize("path", ["gymnasium", "torchrl"])
def test_ctrl_c_with_env_worker_processes_prints_one_line_naming_the_partial_metrics(tmp_path, path):
    out, marker = tmp_path / "run.jsonl", tmp_path / "done"
    kwargs = json.dumps({"delay": 0.05, "marker": str(marker)})
    env, policy = ("helpers.eval_envs:slow_gym_env", "helpers.engine_toys:half_policy") if path == "gymnasium" else \
        ("helpers.badfactories:slow_env", "helpers.tinyenv:make_policy")
    argv = [sys.executable, "-m", "torchrl_render", "--policy", policy, "--env", env, "--env-kwargs", kwargs,
            "--num-trajs", "200", "--num-envs", "2", "--env-batch-mode", "parallel", "--out", str(out), "--quiet"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS.parent)])},
                            preexec_fn=_own_group_default_sigint)
    try:
        deadline = time.monotonic() + 240
        while not list(tmp_path.glob("done.3")):  # episodes 0-3 ended in the workers: some are recorded
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the run never finished an episode"
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)  # as Ctrl-C: the run and its env workers
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    partial = Path(f"{out}.partial.json")
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "Error" not in stderr and stderr.count("\n") == 1, stderr
    episodes = json.loads(partial.read_text())["metrics"]["per_episode"]
    assert stderr.strip() == (f"torchrl-render: interrupted; nothing was written at the output path; the "
                              f"{len(episodes)} finished episode(s) are in {partial}")
    assert 1 <= len(episodes) < 200 and [e["episode_ix"] for e in episodes] == list(range(len(episodes)))
    assert not out.exists() and not Path(f"{out}.metadata.json").exists()
