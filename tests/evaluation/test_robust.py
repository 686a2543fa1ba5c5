"""IQM, bootstrap intervals, performance profiles and the probability of improvement, against independent
computations: scipy (``trim_mean``, ``mannwhitneyu``), numpy on resamples built here, and a bootstrap by
index resampling written here (rliable's formulas; rliable itself does not install next to pandas 3).

Exact checks: each point estimate, and each bootstrap statistic per resample (the resample is rebuilt from its
counts and the statistic recomputed by scipy/numpy). Monte-Carlo checks: the counts are uniform draws within
each task, and the intervals agree with an index-resampling bootstrap within its Monte-Carlo error.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from torchrl_render import RenderConfig
from torchrl_render.errors import ConfigError
from torchrl_render.metrics import aggregate
from torchrl_render.metrics import robust as R


def episodes(returns, seed=0):
    return [{"episode_ix": i, "seed": seed + i, "sum_reward": float(r), "max_reward": 1.0, "length": 5,
             "success": None} for i, r in enumerate(returns)]


def materialised(draws: R.Draws, r: int, values=None) -> np.ndarray:
    """Resample ``r`` of ``draws`` as the array of scores it draws."""
    return np.repeat(draws.values if values is None else values, draws.counts[r])


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 8, 50, 101])
def test_iqm_is_scipys_trimmed_mean(n):
    rng = np.random.default_rng(n)
    for x in (rng.normal(size=n), rng.integers(0, 3, size=n).astype(float)):  # with ties too
        assert R.iqm(x) == pytest.approx(stats.trim_mean(x, 0.25), abs=1e-12)
        agg = aggregate(episodes(x), 1.0, reps=50)
        assert agg["iqm_sum_reward"] == pytest.approx(stats.trim_mean(x, 0.25), abs=1e-12)
        assert agg["median_sum_reward"] == pytest.approx(float(np.median(x)))


def test_each_resample_statistic_equals_it_recomputed_on_the_rebuilt_resample():
    rng = np.random.default_rng(1)
    x = np.round(rng.normal(size=23), 1)  # ties
    d = R.Draws(x, 300, np.random.default_rng(2))
    assert np.all(d.counts.sum(axis=1) == x.size) and np.all(d.cum[:, -1] == x.size)
    trimmed, median = R._trimmed(d.values, d.cum), R._median(d.values, d.cum)
    for r in range(300):
        sample = materialised(d, r)
        assert trimmed[r] == pytest.approx(stats.trim_mean(sample, 0.25), abs=1e-12)
        assert median[r] == pytest.approx(np.median(sample), abs=1e-12)


def test_joined_resamples_of_several_tasks():
    """Across tasks: the joined resample of each resample r (each task resampled within itself)."""
    rng = np.random.default_rng(3)
    tasks = {"a": rng.normal(0, 1, 11), "b": rng.normal(5, 2, 17), "c": np.round(rng.normal(1, 1, 8))}
    base = {"a": {"random": -1.0, "reference": 1.0}, "b": {"random": 0.0, "reference": 10.0},
            "c": {"random": 0.0, "reference": 2.0}}
    draws = {t: R.Draws(v, 200, np.random.default_rng(i)) for i, (t, v) in enumerate(tasks.items())}
    scores = {t: R.normalise(draws[t].values, base[t]) for t in tasks}
    joined = R.JoinedDraws(list(draws.values()), list(scores.values()), 200)
    trimmed, median = joined.trimmed(), joined.median()
    for r in range(200):
        sample = np.concatenate([materialised(draws[t], r, scores[t]) for t in tasks])
        assert trimmed[r] == pytest.approx(stats.trim_mean(sample, 0.25), abs=1e-12)
        assert median[r] == pytest.approx(np.median(sample), abs=1e-12)
    est = R.level_estimates([(t, draws[t]) for t in tasks], base)
    flat = np.concatenate([R.normalise(tasks[t], base[t]) for t in tasks])
    means = [R.normalise(tasks[t], base[t]).mean() for t in tasks]
    assert est["score"] == "normalised" and "note" not in est
    assert est["iqm"] == pytest.approx(stats.trim_mean(flat, 0.25), abs=1e-12)
    assert est["median"] == pytest.approx(np.median(means)) and est["mean"] == pytest.approx(np.mean(means))
    assert est["optimality_gap"] == pytest.approx(1.0 - np.mean(np.minimum(flat, 1.0)))
    prof = est["performance_profile"]
    assert prof["fraction"] == pytest.approx([np.mean(flat > tau) for tau in R.TAUS])
    # the intervals: percentiles of the statistic over the rebuilt resamples
    per_rep = [np.concatenate([materialised(draws[t], r, scores[t]) for t in tasks]) for r in range(200)]
    task_means = np.array([[materialised(draws[t], r, scores[t]).mean() for t in tasks] for r in range(200)])
    expected = {"iqm": [stats.trim_mean(s, 0.25) for s in per_rep], "median": np.median(task_means, axis=1),
                "mean": task_means.mean(axis=1), "optimality_gap": [1 - np.mean(np.minimum(s, 1)) for s in per_rep]}
    for key, samples in expected.items():
        assert est[f"{key}_ci95"] == pytest.approx(list(np.percentile(samples, [2.5, 97.5])), abs=1e-12), key
    above = np.array([[np.mean(s > tau) for tau in R.TAUS] for s in per_rep])
    assert np.allclose(prof["ci95"], np.percentile(above, [2.5, 97.5], axis=0), atol=1e-12)


def test_without_baselines_the_scores_are_raw_and_say_so():
    d = [("a", R.Draws([1.0, 2.0, 3.0], 10, np.random.default_rng(0))),
         ("b", R.Draws([5.0, 6.0], 10, np.random.default_rng(1)))]
    raw = R.level_estimates(d, None)
    assert raw["score"] == "raw" and "no --score-baselines" in raw["note"] and "optimality_gap" not in raw
    part = R.level_estimates(d, {"a": {"random": 0.0, "reference": 1.0}})
    assert part["score"] == "raw" and "no entry for b" in part["note"]


@pytest.mark.slow
def test_probability_of_improvement_is_the_mann_whitney_statistic():
    rng = np.random.default_rng(4)
    xs = [np.round(rng.normal(0, 1, 12), 1), np.round(rng.normal(0, 1, 9), 1)]
    ys = [np.round(rng.normal(0.5, 1, 15), 1), np.round(rng.normal(0.2, 1, 9), 1)]
    expected = np.mean([stats.mannwhitneyu(y, x).statistic / (x.size * y.size) for x, y in zip(xs, ys)])
    assert R.probability_of_improvement(xs, ys) == pytest.approx(expected, abs=1e-12)
    a = {f"t{i}": R.Draws(x, 150, np.random.default_rng(10 + i)) for i, x in enumerate(xs)}
    b = {f"t{i}": R.Draws(y, 150, np.random.default_rng(20 + i)) for i, y in enumerate(ys)}
    est = R.pair_estimates(a, b)
    assert est["probability_of_improvement"] == pytest.approx(expected, abs=1e-12)
    per_rep = [np.mean([stats.mannwhitneyu(materialised(b[t], r), materialised(a[t], r)).statistic
                        / (a[t].n * b[t].n) for t in a]) for r in range(150)]
    assert est["probability_of_improvement_ci95"] == pytest.approx(list(np.percentile(per_rep, [2.5, 97.5])),
                                                                   abs=1e-12)
    assert R.pair_estimates(a, {"other": b["t0"]}) is None


def test_the_counts_are_uniform_draws_within_each_task():
    """Monte-Carlo: each episode is drawn once per resample on average, with the binomial's variance."""
    d = R.Draws(np.arange(40.0), 20000, np.random.default_rng(5))
    mean, var = d.counts.mean(axis=0), d.counts.var(axis=0)
    assert np.all(np.abs(mean - 1.0) < 5 * np.sqrt((1 - 1 / 40) / 20000))
    assert np.all(np.abs(var - (1 - 1 / 40)) < 0.06)


def test_intervals_agree_with_an_index_resampling_bootstrap():
    """Within Monte-Carlo error: our intervals (20,000 resamples) and a bootstrap written here (20,000)."""
    rng = np.random.default_rng(6)
    x = rng.gamma(2.0, 10.0, size=50)
    ours = R.cell_estimates(x, 20000, np.random.default_rng(7))
    idx = np.random.default_rng(8).integers(0, x.size, size=(20000, x.size))
    width = np.ptp(np.percentile(stats.trim_mean(x[idx], 0.25, axis=1), [2.5, 97.5]))
    for key, stat in (("iqm_sum_reward_ci95", lambda s: stats.trim_mean(s, 0.25, axis=1)),
                      ("median_sum_reward_ci95", lambda s: np.median(s, axis=1))):
        theirs = np.percentile(stat(x[idx]), [2.5, 97.5])
        assert np.allclose(ours[key], theirs, atol=0.08 * width), key


def test_aggregate_is_seeded_by_the_runs_seed_and_reps():
    x = np.random.default_rng(9).normal(size=30)
    one, again = aggregate(episodes(x, seed=3), 1.0), aggregate(episodes(x, seed=3), 1.0)
    other = aggregate(episodes(x, seed=4), 1.0)
    assert one["iqm_sum_reward_ci95"] == again["iqm_sum_reward_ci95"] != other["iqm_sum_reward_ci95"]
    assert one["iqm_sum_reward_ci95"] == aggregate(episodes(x, seed=4), 1.0, seed=3)["iqm_sum_reward_ci95"]
    none = aggregate(episodes(x), 1.0, reps=0)
    assert none["iqm_sum_reward_ci95"] is None and none["iqm_sum_reward"] == pytest.approx(R.iqm(x))
    lo, hi = one["iqm_sum_reward_ci95"]
    assert lo < one["iqm_sum_reward"] < hi
    assert aggregate(episodes([1.0]), 1.0)["iqm_sum_reward_ci95"] is None  # one episode: no interval
    assert aggregate([], 1.0)["iqm_sum_reward"] is None


def test_a_nan_return_is_left_out_of_the_robust_estimates():
    eps = episodes([1.0, 2.0, 3.0, 4.0])
    eps[1]["sum_reward"] = float("nan")
    agg = aggregate(eps, 1.0)
    assert agg["iqm_sum_reward"] == pytest.approx(stats.trim_mean([1.0, 3.0, 4.0], 0.25))


@pytest.mark.parametrize("data, fragment", [
    ({"c": {"random": 0, "reference": 1}}, "unknown task 'c'"),
    ({"a": {"random": 0}}, "needs a 'random' and a 'reference' return"),
    ({"a": {"random": 1, "reference": 1}}, "reference > random"),
    ({"a": {"random": 0, "reference": float("nan")}}, "two finite numbers"),
    ({"a": {"random": True, "reference": 3}}, "two finite numbers"),
    (["a"], "must be a mapping of tasks"),
])
def test_bad_baselines_say_what_and_how_to_fix(data, fragment):
    with pytest.raises(ConfigError) as err:
        R.check_baselines(data, {"a": "A-v1", "b": "B-v1"}, "base.json")
    assert fragment in str(err.value) and "base.json" in str(err.value)


def test_baselines_may_name_a_task_by_its_spec():
    assert R.check_baselines({"A-v1": {"random": 0, "reference": 2}}, {"a": "A-v1"}, "f") == \
        {"a": {"random": 0.0, "reference": 2.0}}


def test_bootstrap_reps_is_a_checked_config_field():
    assert RenderConfig(policy="m:p", env="E").bootstrap_reps == R.DEFAULT_REPS
    with pytest.raises(ConfigError, match="bootstrap_reps must not be negative"):
        RenderConfig(policy="m:p", env="E", bootstrap_reps=-1)
    with pytest.raises(ConfigError, match="bootstrap_reps has the wrong type"):
        RenderConfig(policy="m:p", env="E", bootstrap_reps=2.5)


def test_a_runs_intervals_are_drawn_in_blocks_equal_to_one_draw_of_all_resamples(monkeypatch):
    """A long run's resamples are drawn block by block (flat memory); the numbers are those of one draw."""
    x = np.random.default_rng(11).normal(size=40)
    whole = R.cell_estimates(R.Draws(x, 500, np.random.default_rng(3)))
    monkeypatch.setattr(R, "_BLOCK", 40 * 64)  # blocks of 64 resamples
    assert R.cell_estimates(x, 500, np.random.default_rng(3)) == whole
    blocked = R.Draws(x, 500, np.random.default_rng(3))
    assert R.cell_estimates(blocked) == whole


def test_the_clis_summary_of_many_episodes_prints_the_iqm_and_its_interval():
    from torchrl_render.cli import TABLE_MAX, _mean_line

    x = np.random.default_rng(12).normal(size=TABLE_MAX + 5)
    agg = aggregate(episodes(x), 1.0, reps=200)
    lo, hi = agg["iqm_sum_reward_ci95"]
    assert f"; IQM {agg['iqm_sum_reward']:.2f} [{lo:.2f}, {hi:.2f}]" in _mean_line(agg)


def test_bootstrap_options_read_a_runs_config():
    from torchrl_render.metrics import bootstrap_options

    cfg = RenderConfig(policy="m:p", env="E", seed=7, bootstrap_reps=0).to_dict()
    assert bootstrap_options(cfg) == {"reps": 0, "seed": 7}
    assert bootstrap_options(None) == {"reps": R.DEFAULT_REPS, "seed": None}


def test_the_sidecar_and_eval_info_give_the_same_intervals(tmp_path):
    # both follow --bootstrap-reps and --seed: the run's RenderResult, its sidecar and eval_info.json agree
    import json

    from torchrl_render import render_policy

    result = render_policy(RenderConfig(policy="helpers.tinyenv:make_policy", env="helpers.tinyenv:make_env",
                                        num_trajs=12, seed=7, bootstrap_reps=300, out=tmp_path / "eval_info.json",
                                        trajectories=False))
    info = json.loads((tmp_path / "eval_info.json").read_text())["aggregated"]
    sidecar = json.loads((tmp_path / "eval_info.json.metadata.json").read_text())["metrics"]["aggregated"]
    for key in ("iqm_sum_reward_ci95", "median_sum_reward_ci95"):
        assert sidecar[key] == info[key] == result.metrics["aggregated"][key], key
    default = render_policy(RenderConfig(policy="helpers.tinyenv:make_policy", env="helpers.tinyenv:make_env",
                                         num_trajs=12, seed=7, out=tmp_path / "b.json", trajectories=False))
    assert default.metrics["aggregated"]["iqm_sum_reward"] == result.metrics["aggregated"]["iqm_sum_reward"]
