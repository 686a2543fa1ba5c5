"""The sweep report's robust estimates (per cell, per checkpoint and group, comparisons), the compare subcommand,
the --score-baselines flag and the report's three figures.

The numbers are checked against scipy on the same returns; the real sweep runs TinyEnv policies in worker
processes and reads back eval_info.json, report.html and its PNGs.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from torchrl_render import SweepConfig
from torchrl_render.errors import ConfigError
from torchrl_render.metrics import robust as R
from torchrl_render.sweep.report import derive, write_derived
from torchrl_render.writers.json import JsonWriter

from helpers import sweep_envs as sweepenv
from helpers.clicode import exit_code
from helpers.sweep_records import write_sweep

BASE = {"a": {"random": 0.0, "reference": 10.0}, "b": {"random": -5.0, "reference": 5.0}}


def returns_grid(n=12, ckpts=3):
    rng = np.random.default_rng(0)
    return {(f"ckpt_{i}.pt", t): list(np.round(rng.normal(2 * i + j, 2, n), 2)) for i in range(ckpts)
            for j, t in enumerate(("a", "b"))}


def test_every_level_has_the_robust_keys_and_they_equal_scipys(tmp_path):
    grid = returns_grid()
    info = derive(write_sweep(tmp_path / "sw", grid, reps=300, baselines=BASE, groups={"g1": ["a"], "g2": ["b"]}))
    for entry in info["per_checkpoint"]:
        for task, cell in entry["per_task"].items():
            x = grid[entry["checkpoint"], task]
            assert cell["sum_rewards"] == x
            assert cell["iqm_sum_reward"] == pytest.approx(stats.trim_mean(x, 0.25))
            assert cell["median_sum_reward"] == pytest.approx(np.median(x))
            lo, hi = cell["iqm_sum_reward_ci95"]
            assert lo <= cell["iqm_sum_reward"] <= hi and cell["median_sum_reward_ci95"][0] <= hi
        sc = entry["overall"]["scores"]
        flat = np.concatenate([R.normalise(np.array(grid[entry["checkpoint"], t]), BASE[t]) for t in "ab"])
        assert sc["score"] == "normalised" and sc["iqm"] == pytest.approx(stats.trim_mean(flat, 0.25))
        assert sc["iqm_ci95"][0] <= sc["iqm"] <= sc["iqm_ci95"][1] and sc["performance_profile"]["ci95"]
        assert set(entry["per_group"]) == {"g1", "g2"} and entry["per_group"]["g1"]["scores"]["tasks"] == ["a"]
        only_a = R.normalise(np.array(grid[entry["checkpoint"], "a"]), BASE["a"])
        assert entry["per_group"]["g1"]["scores"]["iqm"] == pytest.approx(stats.trim_mean(only_a, 0.25))
    # the sweep-wide levels pool the checkpoints: point estimates, with a note
    assert info["overall"]["scores"]["iqm_ci95"] is None and "pooled over every checkpoint" in \
        info["overall"]["scores"]["note"]
    assert info["per_group"]["g1"]["scores"]["tasks"] == ["a"]
    task_a = next(t for t in info["per_task"] if t["task"] == "a")["metrics"]
    pooled = [r for (c, t), v in grid.items() if t == "a" for r in v]
    assert task_a["iqm_sum_reward"] == pytest.approx(stats.trim_mean(pooled, 0.25))
    # comparisons: every ordered pair, P(a,b) + P(b,a) = 1, the Mann-Whitney statistic
    comps = {(c["checkpoint_a"], c["checkpoint_b"]): c for c in info["comparisons"]}
    assert len(comps) == 3 * 2
    for (a, b), c in comps.items():
        expected = np.mean([stats.mannwhitneyu(grid[b, t], grid[a, t]).statistic / 144 for t in "ab"])
        assert c["probability_of_improvement"] == pytest.approx(expected)
        assert c["probability_of_improvement"] + comps[b, a]["probability_of_improvement"] == pytest.approx(1.0)
        lo, hi = c["probability_of_improvement_ci95"]
        assert (1 - hi, 1 - lo) == pytest.approx(tuple(comps[b, a]["probability_of_improvement_ci95"]))
        assert c["checkpoint_a_sha256"] != c["checkpoint_b_sha256"] and c["tasks"] == ["a", "b"]


def test_the_numbers_are_seeded_and_a_cells_do_not_depend_on_the_others(tmp_path):
    grid = returns_grid()
    one = derive(write_sweep(tmp_path / "one", grid, reps=200))
    again = derive(write_sweep(tmp_path / "again", grid, reps=200))
    other_seed = derive(write_sweep(tmp_path / "seed", grid, reps=200, seed=5))
    fewer = derive(write_sweep(tmp_path / "fewer", {k: v for k, v in grid.items() if k[0] != "ckpt_2.pt"}, reps=200))
    cell = lambda info: info["per_checkpoint"][0]["per_task"]["a"]["iqm_sum_reward_ci95"]  # noqa: E731
    assert cell(one) == cell(again) == cell(fewer) != cell(other_seed)
    assert one["comparisons"] == again["comparisons"]
    assert one["per_checkpoint"][0]["overall"]["scores"]["score"] == "raw"


def test_a_sweep_larger_than_the_memory_budget_gives_the_same_numbers(tmp_path, monkeypatch):
    """With room for one cell's resamples only, cells are drawn again as the levels and the pairs need them."""
    from torchrl_render.sweep import report

    folder = write_sweep(tmp_path / "sw", returns_grid(), reps=100, baselines=BASE)
    roomy = derive(folder)
    monkeypatch.setattr(report, "DRAWS_BUDGET", 1)
    assert derive(folder) == roomy


def test_no_intervals_with_bootstrap_reps_0(tmp_path):
    info = derive(write_sweep(tmp_path / "sw", returns_grid(), reps=0))
    cell = info["per_checkpoint"][0]["per_task"]["a"]
    assert cell["iqm_sum_reward"] is not None and cell["iqm_sum_reward_ci95"] is None
    assert info["comparisons"][0]["probability_of_improvement_ci95"] is None


def test_a_cell_of_one_episode_gives_a_comparison_without_an_interval(tmp_path):
    # a running sweep's report is derived while cells are partial: one episode in a cell has no resamples
    info = derive(write_sweep(tmp_path / "sw", {("A", "a"): [1.0], ("B", "a"): [2.0, 3.0, 2.5]}))
    pair = next(c for c in info["comparisons"] if c["checkpoint_a"] == "A")
    assert pair["probability_of_improvement"] == 1.0 and pair["probability_of_improvement_ci95"] is None


def test_non_finite_returns_are_counted_and_named_wherever_the_cells_numbers_appear(tmp_path):
    nan, inf = float("nan"), float("inf")
    grid = {("ckpt_0.pt", "a"): [1.0, nan, 2.0, inf, 3.0, -inf], ("ckpt_0.pt", "b"): [4.0, 5.0]}
    folder = write_sweep(tmp_path / "sw", grid, reps=200)
    write_derived(folder, html=True)
    info = json.loads((folder / "eval_info.json").read_text())
    cell = info["per_checkpoint"][0]["per_task"]["a"]
    assert cell["n_episodes"] == 6 and cell["avg_sum_reward"] == pytest.approx(2.0)  # over 1, 2 and 3
    lo, hi = cell["ci95_sum_reward"]
    assert (hi - lo) / 2 == pytest.approx(stats.t.ppf(0.975, 2) * np.std([1, 2, 3], ddof=1) / np.sqrt(3))
    assert cell["iqm_sum_reward"] == pytest.approx(stats.trim_mean([1.0, 2.0, 3.0], 0.25))
    named = [{"cell": "ckpt_0.pt__a", "episode_ix": i} for i in (1, 3, 5)]
    assert cell["nonfinite_sum_reward"] == named
    note = "3 of the 6 returns are not finite (NaN or infinite): the return statistics are over the 3 finite ones"
    assert cell["note"] == note
    task_a = next(t for t in info["per_task"] if t["task"] == "a")["metrics"]
    for level in (task_a, info["per_group"]["all"], info["overall"], info["per_checkpoint"][0]["overall"]):
        assert level["nonfinite_sum_reward"] == named, level
    assert info["overall"]["note"].startswith("3 of the 8 returns are not finite")
    assert "nonfinite_sum_reward" not in info["per_checkpoint"][0]["per_task"]["b"]
    assert info["curves"]["a"]["default"][0]["nonfinite"] == 3 and info["curves"]["b"]["default"][0]["nonfinite"] == 0
    page = (folder / "report.html").read_text()
    assert page.count("3 of the 6 returns are not finite") == 1 and "3 of the 8 returns are not finite" in page


def test_every_cell_checkpoint_task_and_group_has_the_wilson_interval_of_its_success_rate(tmp_path):
    flags = {("ckpt_0.pt", "a"): [True, False, True, True], ("ckpt_0.pt", "b"): [False] * 3 + [True],
             ("ckpt_1.pt", "a"): [True] * 4, ("ckpt_1.pt", "b"): [False, True, False, True]}
    grid = {key: [1.0, 2.0, 3.0, 4.0] for key in flags}
    info = derive(write_sweep(tmp_path / "sw", grid, successes=flags, groups={"g": ["a"], "h": ["b"]}))

    def wilson(k, n):  # scipy's, in percent
        ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
        return [100 * ci.low, 100 * ci.high]

    for entry in info["per_checkpoint"]:
        for task, cell in entry["per_task"].items():
            k = sum(flags[Path(entry["checkpoint"]).name, task])
            assert cell["pc_success"] == 100 * k / 4 and cell["ci95_success"] == pytest.approx(wilson(k, 4))
        k = sum(sum(flags[Path(entry["checkpoint"]).name, t]) for t in ("a", "b"))
        assert entry["overall"]["ci95_success"] == pytest.approx(wilson(k, 8))
    for t in info["per_task"]:
        k = sum(sum(flags[c, t["task"]]) for c in ("ckpt_0.pt", "ckpt_1.pt"))
        assert t["metrics"]["ci95_success"] == pytest.approx(wilson(k, 8))
    assert info["per_group"]["g"]["ci95_success"] == pytest.approx(wilson(7, 8))
    assert info["overall"]["ci95_success"] == pytest.approx(wilson(10, 16))
    assert info["curves"]["b"]["default"][1]["ci95_success"] == pytest.approx(wilson(2, 4))


def test_compare_of_single_episodes_gives_no_interval_and_says_why(tmp_path, capsys):
    a, b = write_run(tmp_path / "a.json", [1.0]), write_run(tmp_path / "b.json", [2.0])
    assert exit_code(["compare", str(a), str(b), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["probability_of_improvement"] == 1.0 and out["probability_of_improvement_ci95"] is None
    assert out["iqm_difference_ci95"] is None and "a bootstrap of one episode does not vary" in out["note"]
    assert exit_code(["compare", str(a), str(b)]) == 0
    text = capsys.readouterr().out
    assert "P(B > A) = 1.0000\n" in text and "[" not in text.split("P(B > A)")[1].splitlines()[0]
    assert "no intervals: A has a single episode of task" in text


def test_score_baselines_flag_is_checked_before_anything_runs(tmp_path):
    sweepenv.write_checkpoints(tmp_path, steps=(5,))
    common = dict(ckpt=[f"{tmp_path}/ckpt_*.pt"], env=["a=helpers.tinyenv:make_env"],
                  base={"policy": "helpers.tinyenv:make_policy", "num_trajs": 2})
    good = tmp_path / "base.yaml"
    good.write_text("helpers.tinyenv:make_env: {random: -10, reference: 0}\n")
    assert SweepConfig(**common, score_baselines=str(good)).baselines == {"a": {"random": -10.0, "reference": 0.0}}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"aa": {"random": 0, "reference": 1}}))
    with pytest.raises(ConfigError, match="unknown task 'aa'. Did you mean 'a'"):
        SweepConfig(**common, score_baselines=str(bad))
    with pytest.raises(ConfigError, match="does not exist"):
        SweepConfig(**common, score_baselines=str(tmp_path / "missing.json"))


def write_run(path: Path, returns, seed=0) -> Path:
    with JsonWriter(path, bootstrap_reps=100, seed=seed) as w:
        for i, r in enumerate(returns):
            w.on_episode({"episode_ix": i, "seed": seed + i, "sum_reward": float(r), "max_reward": 1.0, "length": 3,
                          "success": None, "terminated": True, "truncated": False, "wall_s": 0.1, "num_frames": 0})
    return path


def test_a_runs_eval_info_has_the_robust_aggregates(tmp_path):
    x = np.random.default_rng(1).normal(size=20)
    agg = json.loads(write_run(tmp_path / "e.json", x).read_text())["aggregated"]
    assert agg["iqm_sum_reward"] == pytest.approx(stats.trim_mean(x, 0.25))
    assert len(agg["iqm_sum_reward_ci95"]) == 2 and len(agg["median_sum_reward_ci95"]) == 2


def test_compare_two_runs(tmp_path, capsys):
    rng = np.random.default_rng(2)
    xa, xb = rng.normal(0, 1, 30), rng.normal(1, 1, 40)
    a, b = write_run(tmp_path / "a.json", xa), write_run(tmp_path / "b.json", xb)
    assert exit_code(["compare", str(a), str(b), "--json", "--bootstrap-reps", "300"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["probability_of_improvement"] == pytest.approx(stats.mannwhitneyu(xb, xa).statistic / 1200)
    assert out["iqm_difference"] == pytest.approx(stats.trim_mean(xb, 0.25) - stats.trim_mean(xa, 0.25))
    lo, hi = out["iqm_difference_ci95"]
    assert lo < out["iqm_difference"] < hi and out["n_episodes"] == [30, 40]
    base = tmp_path / "base.json"
    base.write_text(json.dumps({"cheetah": {"random": 0.0, "reference": 2.0}}))
    assert exit_code(["compare", str(a), str(b), "--score-baselines", str(base)]) == 0
    text = capsys.readouterr().out
    assert "P(B > A) = " in text and "IQM normalised score: A " in text and "IQM difference B - A = " in text


def test_compare_a_sweeps_checkpoint_with_a_run_and_its_errors(tmp_path, capsys):
    grid = {k: v for k, v in returns_grid(ckpts=2).items() if k[1] == "a"}
    folder = write_sweep(tmp_path / "sw", grid, reps=100)
    write_derived(folder, html=False)
    run = write_run(tmp_path / "r.json", grid["ckpt_1.pt", "a"])
    assert exit_code(["compare", str(folder / "eval_info.json"), str(run), "--checkpoint-a", "ckpt_0.pt"]) == 0
    assert "tasks: a (12 and 12 episodes" in capsys.readouterr().out
    assert exit_code(["compare", str(folder / "eval_info.json"), str(run)]) == 2
    err = capsys.readouterr().err
    assert "is a sweep of 2 checkpoints" in err and "--checkpoint-a" in err
    assert exit_code(["compare", str(tmp_path / "nope.json"), str(run)]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "x.json").write_text("[1, 2]")
    assert exit_code(["compare", str(tmp_path / "x.json"), str(run)]) == 2
    assert "is not an eval_info.json" in capsys.readouterr().err
    assert exit_code(["compare", str(run), str(run), "--bootstrap-reps", "-1"]) == 2
    assert "--bootstrap-reps must not be negative" in capsys.readouterr().err


@pytest.mark.slow
def test_a_real_sweep_reports_the_three_figures(tmp_path, capsys):
    """2 checkpoints x 2 tasks of TinyEnv, with baselines: eval_info.json has the estimates, report.html the
    three figures (real PNGs)."""
    sweepenv.write_checkpoints(tmp_path, steps=(10, 60))
    base = tmp_path / "base.json"
    base.write_text(json.dumps({"a": {"random": -60.0, "reference": 0.0}, "b": {"random": -60.0, "reference": 0.0}}))
    out = tmp_path / "sw"
    code = exit_code(["sweep", "--ckpt", f"{tmp_path}/ckpt_*.pt", "--env", "a=helpers.tinyenv:make_env", "--env",
                      "b=helpers.tinyenv:make_env", "--policy", "helpers.tinyenv:make_policy", "--num-trajs", "6",
                      "--max-episodes-rendered", "0", "--workers", "1", "--score-baselines", str(base),
                      "--bootstrap-reps", "500", "--seed", "3", "--no-report", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    write_derived(out, html=True)
    info = json.loads((out / "eval_info.json").read_text())
    assert [e["checkpoint_a"] for e in info["comparisons"]] == [info["per_checkpoint"][0]["checkpoint"],
                                                               info["per_checkpoint"][1]["checkpoint"]]
    assert info["per_checkpoint"][0]["overall"]["scores"]["score"] == "normalised"
    page = (out / "report.html").read_text()
    for name in ("aggregates", "profiles", "improvement"):
        assert f'src="report_files/{name}.png"' in page
        assert (out / "report_files" / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    assert "optimality gap [95% CI]" in page and "Scores: normalised" in page
    # baselines only change the report: a resume with others renormalises it and runs nothing
    iqm = info["per_checkpoint"][0]["overall"]["scores"]["iqm"]
    base.write_text(json.dumps({"a": {"random": -120.0, "reference": 0.0}, "b": {"random": -120.0, "reference": 0.0}}))
    code = exit_code(["sweep", "--ckpt", f"{tmp_path}/ckpt_*.pt", "--env", "a=helpers.tinyenv:make_env", "--env",
                      "b=helpers.tinyenv:make_env", "--policy", "helpers.tinyenv:make_policy", "--num-trajs", "6",
                      "--max-episodes-rendered", "0", "--workers", "1", "--score-baselines", str(base),
                      "--bootstrap-reps", "500", "--seed", "3", "--no-report", "--out", str(out), "--resume"])
    assert code == 0
    again = json.loads((out / "eval_info.json").read_text())["per_checkpoint"][0]["overall"]["scores"]["iqm"]
    assert again == pytest.approx(1 + (iqm - 1) / 2)  # (r + 120) / 120 = 1 + ((r + 60) / 60 - 1) / 2
