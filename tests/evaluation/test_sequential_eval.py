"""``--precision``: a run stops at the first n whose 95% confidence sequence is narrow enough, on episodes in
seed order, so that n and every number are the same for any --num-envs; checked on real gymnasium envs against
a plain loop written here (``env.reset(seed=seed + i)``, the same policy) and against the confidence sequence
run over that loop's returns."""

from __future__ import annotations

import json
import math

import gymnasium as gym
import pytest
import torch

from torchrl_render import RenderConfig, render_policy
from torchrl_render.cli import main
from torchrl_render.metrics.sequential import confidence_sequence

from helpers.plainloop import plain_returns
from helpers.seq_policies import cartpole_policy, pendulum_policy, torchrl_pendulum


def _plain(policy, env_id, n, seed=0, max_steps=None):
    act = policy()
    to_env = (lambda a: int(a)) if env_id.startswith("CartPole") else (lambda a: a.numpy())
    return [r for r, _ in plain_returns(lambda: gym.make(env_id), lambda o: to_env(act(torch.from_numpy(o))),
                                        range(seed, seed + n), max_steps=max_steps)]


def _first_n(returns, metric, target, bounds=None, cap=None):
    """The n at which the confidence sequence over ``returns`` (seed order) first reaches ``target``."""
    cs = confidence_sequence(metric, bounds=bounds, target_n=cap, target_halfwidth=target)
    for n, value in enumerate(returns, 1):
        cs.update(value)
        if cs.halfwidth <= target:
            return n, cs
    return None, cs


def _run(tmp_path, name, **fields):
    return render_policy(RenderConfig(out=tmp_path / name, progress=False, **fields))


@pytest.mark.parametrize("batch", [{"num_envs": 4, "env_batch_mode": "serial"},
                                   {"num_envs": 4, "env_batch_mode": "parallel"}], ids=["k4-serial", "k4-workers"])
def test_return_precision_stops_on_the_seed_prefix_for_any_num_envs(tmp_path, batch):
    common = dict(policy=pendulum_policy, env="Pendulum-v1", max_steps=20, num_trajs=150, seed=7,
                  precision="return:15")
    one = _run(tmp_path, "k1.json", **common)
    many = _run(tmp_path, "k4.json", **common, **batch)
    seq = one.metrics["sequential"]
    n = seq["n_episodes"]
    assert seq["stopped_on"] == "precision" and 20 <= n < 150
    assert seq["asymptotic"] and "asymptotic" in seq["method"] and seq["halfwidth"] <= 15.0
    episodes = one.metrics["per_episode"]
    assert [e["seed"] for e in episodes] == list(range(7, 7 + n))
    plain = _plain(pendulum_policy, "Pendulum-v1", n + 5, seed=7, max_steps=20)
    assert [e["sum_reward"] for e in episodes] == pytest.approx(plain[:n], rel=1e-12, abs=1e-9)
    assert _first_n(plain, "return", 15.0, cap=150)[0] == n
    assert many.metrics["sequential"] == seq
    assert [e["sum_reward"] for e in many.metrics["per_episode"]] == [e["sum_reward"] for e in episodes]


def test_bounded_return_cap_is_honoured_with_a_note(tmp_path):
    result = _run(tmp_path, "cap.jsonl", policy=cartpole_policy, env="CartPole-v1", num_trajs=12, num_envs=3,
                  precision="return:0.5", return_bounds=[0, 500])
    seq = result.metrics["sequential"]
    assert seq["stopped_on"] == "cap" and seq["n_episodes"] == 12 and seq["halfwidth"] > 0.5
    assert not seq["asymptotic"] and seq["bounds"] == [0.0, 500.0] and "betting" in seq["method"]
    plain = _plain(cartpole_policy, "CartPole-v1", 12)
    assert [e["sum_reward"] for e in result.metrics["per_episode"]] == plain
    cs = confidence_sequence("return", bounds=(0, 500), target_n=12, target_halfwidth=0.5)
    for value in plain:
        cs.update(value)
    assert seq["interval"] == pytest.approx(list(cs.interval)) and seq["mean"] == pytest.approx(sum(plain) / 12)
    assert any("was not reached within the cap of 12 episodes" in note for note in result.warnings)


def test_cli_writes_the_sequential_entry_to_eval_info_and_the_sidecar(tmp_path, capsys):
    out = tmp_path / "eval_info.json"
    code = main(["--policy", "helpers.seq_policies:cartpole_policy", "--env", "CartPole-v1", "--num-trajs", "200",
                 "--num-envs", "4", "--precision", "return:4", "--return-bounds", "0", "100", "--max-steps", "100",
                 "--out", str(out), "--no-progress"])
    captured = capsys.readouterr()
    assert code == 0 and captured.out.strip() == str(out)
    info = json.loads(out.read_text())
    side = json.loads((tmp_path / "eval_info.json.metadata.json").read_text())
    seq = info["sequential"]
    assert side["metrics"]["sequential"] == seq
    n = seq["n_episodes"]
    assert seq["stopped_on"] == "precision" and n < 200 and seq["target"] == 4.0 and seq["halfwidth"] <= 4.0
    assert set(seq) >= {"metric", "target", "halfwidth", "interval", "n_episodes", "stopped_on", "method"}
    assert [e["seed"] for e in info["per_episode"]] == list(range(n)) and info["aggregated"]["n_episodes"] == n
    plain = _plain(cartpole_policy, "CartPole-v1", n + 3, max_steps=100)
    assert [e["sum_reward"] for e in info["per_episode"]] == plain[:n]
    assert _first_n(plain, "return", 4.0, bounds=(0, 100), cap=200)[0] == n
    assert side["requested_num_trajs"] == 200 and side["num_trajs"] == n
    assert f"over episodes 0..{n - 1}: precision reached" in captured.err and "half-width" in captured.err


def test_success_precision_on_an_env_that_reports_success(tmp_path):
    common = dict(policy="helpers.select_toys:zero_policy", env="helpers.select_toys:make", num_trajs=300,
                  precision="success:0.25")
    one, three = _run(tmp_path, "a.json", **common), _run(tmp_path, "b.json", **common, num_envs=3)
    seq = one.metrics["sequential"]
    assert seq["metric"] == "success" and seq["stopped_on"] == "precision" and seq["n_episodes"] < 300
    assert three.metrics["sequential"] == seq
    from helpers.select_toys import expected  # the env's return (and so its success) from the seed alone

    wins = [expected(s)[0] > 0 for s in range(seq["n_episodes"])]
    assert [e["success"] for e in one.metrics["per_episode"]] == wins
    assert _first_n([float(w) for w in wins] + [0.0] * 300, "success", 0.25, cap=300)[0] == seq["n_episodes"]
    assert seq["mean"] == pytest.approx(sum(wins) / len(wins))
    saved = json.loads((tmp_path / "a.json").read_text())["sequential"]
    assert saved == json.loads(json.dumps(seq))


def test_progress_bar_shows_the_halfwidth(tmp_path, capsys):
    render_policy(RenderConfig(policy="helpers.select_toys:zero_policy", env="helpers.select_toys:make",
                               num_trajs=40, precision="success:0.3", out=tmp_path / "p.jsonl", progress=True))
    err = capsys.readouterr().err
    assert "halfwidth=" in err and "/0.3" in err


@pytest.mark.parametrize("stop", [{"precision": "success:0.3", "num_trajs": 100}, {"eval_n_timesteps": 40}],
                         ids=["precision", "eval-n-timesteps"])
def test_a_run_of_unknown_length_films_exactly_its_reported_episodes(tmp_path, stop):
    """Frames of the episodes the cut discards never reach the video (and the rendered range is not walked)."""
    import imageio.v3 as iio

    result = _run(tmp_path, "v.gif", policy="helpers.select_toys:zero_policy", env="helpers.select_toys:make",
                  num_envs=4, env_batch_mode="serial", **stop)
    episodes = result.metrics["per_episode"]
    assert [e["episode_ix"] for e in episodes] == list(range(len(episodes)))
    frames = sum(e["length"] + 1 for e in episodes)
    assert sum(e["num_frames"] for e in episodes) == frames == iio.imread(tmp_path / "v.gif").shape[0]


def test_without_precision_there_is_no_sequential_entry(tmp_path):
    result = _run(tmp_path, "plain.json", policy="helpers.select_toys:zero_policy", env="helpers.select_toys:make",
                  num_trajs=3)
    assert "sequential" not in result.metrics
    assert "sequential" not in json.loads((tmp_path / "plain.json").read_text())


def test_a_return_outside_the_bounds_mid_run_names_the_episode_and_writes_no_artifact(tmp_path, capsys):
    # episode 0 (seed 0) returns 3 under the zero policy (helpers.select_toys.expected), outside [0, 2.5]
    out = tmp_path / "run.json"
    code = None
    try:
        code = main(["--policy", "helpers.select_toys:zero_policy", "--env", "helpers.select_toys:make", "--num-trajs",
                     "6", "--num-envs", "2", "--precision", "return:0.01", "--return-bounds", "0", "2.5", "--out",
                     str(out)])
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and "episode 0's return 3 is outside --return-bounds 0 2.5" in err
    assert not out.exists() and not (tmp_path / "run.json.metadata.json").exists()


@pytest.mark.parametrize("num_envs", [1, 3])
def test_torchrl_path_stops_at_the_same_n(tmp_path, num_envs):
    """The torchrl path (a torchrl env here; three of them in a SerialEnv, whose episodes finish out of seed
    order) feeds the plan the same way as the gymnasium path."""
    pytest.importorskip("torchrl")
    common = dict(policy=pendulum_policy, max_steps=10, num_trajs=60, precision="return:15")
    gymnasium_run = _run(tmp_path, "g.json", env="Pendulum-v1", **common)
    torchrl_run = _run(tmp_path, "t.json", env=torchrl_pendulum, num_envs=num_envs, env_batch_mode="serial",
                       **common)
    assert torchrl_run.metadata["engine"]["path"] == "torchrl"
    a, b = gymnasium_run.metrics["sequential"], torchrl_run.metrics["sequential"]
    assert a["n_episodes"] == b["n_episodes"] and a["stopped_on"] == b["stopped_on"] == "precision"
    assert math.isclose(a["halfwidth"], b["halfwidth"], rel_tol=1e-5)
    assert [e["episode_ix"] for e in torchrl_run.metrics["per_episode"]] == list(range(a["n_episodes"]))



# -- sweeps ------------------------------------------------------------------------------------------------------


def _checkpoints(folder, key, values):
    paths = []
    for i, value in enumerate(values):
        path = folder / f"{key}{i}.pt"
        torch.save({key: value}, path)
        paths.append(path)
    return paths


def test_sweep_precision_stops_each_cell_on_its_own(tmp_path, capsys):
    from types import SimpleNamespace

    from helpers.seq_policies import gain_policy

    ckpts = _checkpoints(tmp_path, "gain", [2.0, 0.0])
    out = tmp_path / "sw"
    argv = ["sweep", "--ckpt", str(ckpts[0]), "--ckpt", str(ckpts[1]), "--env", "Pendulum-v1", "--policy",
            "helpers.seq_policies:gain_policy", "--no-auto-load-policy", "--precision", "return:15", "--num-trajs",
            "150", "--max-steps", "20", "--num-envs", "2", "--format", "json", "--out", str(out), "--no-report",
            "--workers", "1"]
    assert main(argv) == 0
    info = json.loads((out / "eval_info.json").read_text())
    seen = set()
    for entry, gain in zip(info["per_checkpoint"], (2.0, 0.0)):
        cell = entry["per_task"]["Pendulum-v1"]
        seq = cell["sequential"]
        n = seq["n_episodes"]
        assert cell["status"] == "done" and seq["stopped_on"] == "precision" and n < 150 and cell["n_episodes"] == n
        assert cell["episodes"] == list(range(n))
        plain = _plain(lambda g=gain: gain_policy(SimpleNamespace(checkpoint={"gain": g})), "Pendulum-v1", n + 40,
                       max_steps=20)
        assert cell["sum_rewards"] == pytest.approx(plain[:n], rel=1e-12, abs=1e-9)
        assert _first_n(plain, "return", 15.0, cap=150)[0] == n
        seen.add(n)
    assert len(seen) == 2  # the two cells stopped at their own n
    assert info["progress"]["done"] == 2 and info["progress"]["episodes_total"] == info["progress"]["episodes"]
    assert "half-width" in capsys.readouterr().err
    assert main([*argv, "--resume"]) == 0  # settled cells: nothing runs again
    assert "0 run now" in capsys.readouterr().err


def test_sweep_separate_tells_two_checkpoints_apart_on_the_same_seeds(tmp_path, capsys):
    from torchrl_render.metrics.sequential import difference_sequence

    from helpers.select_toys import expected

    ckpts = _checkpoints(tmp_path, "push", [0.0, 1.0])
    out = tmp_path / "sep"
    code = main(["sweep", "--ckpt", str(ckpts[0]), "--ckpt", str(ckpts[1]), "--env", "helpers.select_toys:make",
                 "--policy", "helpers.seq_policies:push_policy", "--no-auto-load-policy", "--separate", "push0.pt",
                 str(ckpts[1]), "--separate-metric", "success", "--num-trajs", "300", "--format", "json",
                 "--out", str(out), "--no-report", "--workers", "1"])
    err = capsys.readouterr().err
    assert code == 0
    info = json.loads((out / "eval_info.json").read_text())
    (sep,) = info["separations"]
    n = sep["n_pairs"]
    assert sep["stopped_on"] == "separated" and sep["better_checkpoint"] == str(ckpts[1]) and sep["better"] == "B"
    assert n < 300 and sep["p_value"] <= 0.05 and sep["interval"][1] < 0
    # the same decision from the successes known from each seed: value + push * length > 0
    ds = difference_sequence("success", target_n=300)
    for i in range(300):
        value, length = expected(i)
        ds.update(float(value > 0), float(value + length > 0))
        if ds.excludes_zero:
            break
    assert ds.n == n and ds.p_value == pytest.approx(sep["p_value"])
    for entry in info["per_checkpoint"]:  # the cells' numbers are on the n pairs the decision used
        cell = entry["per_task"]["helpers.select_toys:make"]
        assert cell["episodes"] == list(range(n)) and cell["status"] == "done"
        assert cell["fixed_n_halfwidth"]["n"] == n and cell["fixed_n_halfwidth"]["success"]["n"] == n
    assert sep["fixed_n"]["probability_of_improvement"] > 0.5  # the fixed-N comparison beside it agrees
    assert "push1.pt is better" in err and f"after {n} pairs" in err
    from torchrl_render.sweep.html import reached, separations_html

    assert "push1.pt is better" in separations_html(info) and "half-width reached" in reached(cell)


def test_compare_says_what_half_width_a_fixed_n_reached(tmp_path, capsys):
    from torchrl_render.metrics.sequential import halfwidth_at_fixed_n

    from helpers.select_toys import expected

    paths = []
    for seed, n in ((0, 30), (100, 25)):
        path = tmp_path / f"s{seed}.json"
        _run(tmp_path, path.name, policy="helpers.select_toys:zero_policy", env="helpers.select_toys:make",
             num_trajs=n, seed=seed)
        paths.append(path)
    assert main(["compare", str(paths[0]), str(paths[1]), "--json", "--bootstrap-reps", "0"]) == 0
    reached = json.loads(capsys.readouterr().out)["fixed_n_halfwidth"]
    for side, (seed, n) in zip("ab", ((0, 30), (100, 25))):
        (entry,) = reached[side].values()
        want = halfwidth_at_fixed_n([expected(s)[0] for s in range(seed, seed + n)], metric="return")
        assert entry["n"] == n and entry["halfwidth"] == pytest.approx(want["halfwidth"])
    assert main(["compare", str(paths[0]), str(paths[1]), "--bootstrap-reps", "0"]) == 0
    assert "half-width of the mean return reached" in capsys.readouterr().out


def test_a_notebook_of_unknown_length_is_written(tmp_path):
    """--eval-n-timesteps with an ipynb: how many episodes get files beside it is not known before the run."""
    result = _run(tmp_path, "n.ipynb", policy="helpers.select_toys:zero_policy", env="helpers.select_toys:make",
                  eval_n_timesteps=10, execute_notebook=False)
    assert result.artifact_path == tmp_path / "n.ipynb" and result.artifact_path.is_file()
    assert sum(e["length"] for e in result.metrics["per_episode"]) >= 10
