"""Sweeps: the grid, the episode log, equality with single runs, the report, a failing cell.

Real parts: spawned worker processes, real files read back, the report notebook executed in
a real kernel, a real gymnasium MuJoCo env. Fault tests (killed workers and drivers, Ray)
are in test_sweep_faults.py.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest
import torch

from torchrl_render import RenderConfig, SweepConfig, render_policy, sweep
from torchrl_render.cli import main
from torchrl_render.errors import ConfigError
from torchrl_render.sweep.cli import build_sweep_parser, sweep_status
from torchrl_render.sweep.grid import expand_cells
from torchrl_render.sweep.store import EPISODES, Store, read_records

from helpers import sweep_envs as sweepenv
from helpers.clicode import exit_code
from helpers.paths import ROOT

COMPARED = ("episode_ix", "seed", "sum_reward", "max_reward", "length", "success", "terminated", "truncated",
            "num_frames")


def single_run(tmp: Path, ckpt, env: str, n: int, seed: int = 0, **fields) -> list[dict]:
    """The reference: one render_policy run of a whole cell, metrics only."""
    fields = {"policy": "helpers.tinyenv:make_policy", "max_episodes_rendered": 0, "format": "jsonl", **fields}
    out = tmp / f"single_{Path(str(ckpt)).stem}_{abs(hash(env))}_{seed}.{fields['format']}"
    result = render_policy(RenderConfig(ckpt=ckpt, env=env, num_trajs=n, seed=seed, out=out, overwrite=True,
                                        progress=False, **fields))
    return [{k: ep[k] for k in COMPARED} for ep in result.metrics["per_episode"]]


def recorded(folder: Path) -> dict[str, list[dict]]:
    """Per cell, the recorded episodes' metrics in index order; asserts that none is recorded twice."""
    lines = [json.loads(line) for line in (folder / EPISODES).read_text().splitlines() if line.strip()]
    keys = [(r["cell"], r["episode_ix"]) for r in lines if r["kind"] == "episode"]
    assert len(keys) == len(set(keys)), "an episode was recorded twice"
    out: dict[str, list[dict]] = {}
    for r in sorted((r for r in lines if r["kind"] == "episode"), key=lambda r: r["episode_ix"]):
        assert r["seed"] == r["metrics"]["seed"] and r["status"] == "ok"
        out.setdefault(r["cell"], []).append({k: r["metrics"][k] for k in COMPARED})
    return out


def test_config_from_files_and_flags(tmp_path):
    ckpts = sweepenv.write_checkpoints(tmp_path, steps=(5, 50))
    yaml = tmp_path / "s.yaml"
    yaml.write_text(f"ckpt: ['{tmp_path}/ckpt_*.pt']\n"
                    "env: {a: helpers.tinyenv:make_env, b: helpers.tinyenv:make_env}\n"
                    "group: {g: [a]}\npolicy: helpers.tinyenv:make_policy\nnum_trajs: 3\nseed: 7\n")
    toml = tmp_path / "s.toml"
    toml.write_text(f"ckpt = ['{tmp_path}/ckpt_*.pt']\n"
                    "policy = 'helpers.tinyenv:make_policy'\nnum_trajs = 3\nseed = 7\n"
                    "[env]\na = 'helpers.tinyenv:make_env'\nb = 'helpers.tinyenv:make_env'\n[group]\ng = ['a']\n")
    from_yaml, from_toml = SweepConfig.from_file(yaml), SweepConfig.from_file(toml)
    assert from_yaml.to_dict() == from_toml.to_dict()
    assert from_yaml.groups == {"g": ["a"], "ungrouped": ["b"]} and from_yaml.base["seed"] == 7
    cells = expand_cells(from_yaml)
    assert [(Path(c.ckpt).name, c.step, c.task) for c in cells] == [
        ("ckpt_5.pt", 5, "a"), ("ckpt_5.pt", 5, "b"), ("ckpt_50.pt", 50, "a"), ("ckpt_50.pt", 50, "b")]
    assert SweepConfig.from_dict(from_yaml.to_dict()).to_dict() == from_yaml.to_dict()
    # the CLI is generated from the fields: sweep fields and every RenderConfig field but those a sweep owns
    args = build_sweep_parser().parse_args(["--ckpt", str(ckpts[0]), str(ckpts[1]), "--env",
                                            "a=helpers.tinyenv:make_env",
                                            "--run", "s1=x.pt", "--executor", "ray", "--ray-num-cpus", "0.5",
                                            "--num-trajs", "4", "--render-quality", "fast", "--no-report"])
    assert (args.ckpt, args.run, args.ray_num_cpus, args.num_trajs, args.report) == (
        [str(ckpts[0]), str(ckpts[1])], ["s1=x.pt"], 0.5, 4, False)
    with pytest.raises(SystemExit):
        build_sweep_parser().parse_args(["--overwrite"])  # the sweep decides where each cell writes
    # the training step: the file name's number, else the checkpoint's own entry (the shipped example's train_steps)
    pend = SweepConfig(ckpt=[str(ROOT / "examples/inverted_pendulum/policy.pt")], env=["InvertedPendulum-v5"],
                       base={"policy": "examples/inverted_pendulum/policy.py:make_policy"})
    assert expand_cells(pend)[0].step == 14753


@pytest.mark.parametrize("format", [None, "archive"])
def test_training_step_of_torchrl_render_checkpoints(tmp_path, format):
    """torchrl.render's save_render_checkpoint stores the training step as ``frames``."""
    import warnings

    from torchrl.render import save_render_checkpoint as theirs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        path = theirs(tmp_path / ("policy.torchrl" if format else "policy.pt"), torch.nn.Linear(3, 1), frames=4096,
                      format=format)
    sweep_cfg = SweepConfig(ckpt=[str(path)], env=["helpers.tinyenv:make_env"],
                            base={"policy": "helpers.tinyenv:make_policy"})
    cells = expand_cells(sweep_cfg)
    assert cells[0].step == 4096


@pytest.mark.parametrize("data, fragment", [
    ({"env": ["E"], "policy": "m:p"}, "the sweep has no checkpoints"),
    ({"ckpt": ["a.pt"], "policy": "m:p"}, "the sweep has no tasks"),
    ({"ckpt": ["a.pt"], "env": ["E"], "policy": "m:p", "num_traj": 3}, "Did you mean 'num_trajs'?"),
    ({"ckpt": ["a.pt"], "env": ["a=E"], "group": {"g": ["b"]}, "policy": "m:p"}, "names the unknown task 'b'"),
    ({"ckpt": ["a.pt"], "env": ["E"], "policy": "m:p", "fps": 0}, "fps must be a positive number"),
    ({"ckpt": ["a.pt"], "env": ["E"], "policy": "m:p", "workers": 0}, "workers must be a positive integer"),
])
def test_config_errors_are_caught_before_anything_runs(data, fragment):
    with pytest.raises(ConfigError, match=fragment.replace("?", r"\?").replace("(", r"\(")):
        SweepConfig.from_dict(data)


def test_torn_last_line_is_ignored_and_cut_before_appending(tmp_path):
    store = Store.create(tmp_path, {"cells": []})
    for i in range(3):
        store.append({"kind": "episode", "cell": "c", "episode_ix": i, "metrics": {"sum_reward": float(i)}})
    store.close()
    with open(tmp_path / EPISODES, "a") as fh:
        fh.write('{"kind": "episode", "cell": "c", "episode_ix": 3, "metr')  # the driver died mid-write
    assert [r["episode_ix"] for r in read_records(tmp_path)] == [0, 1, 2]
    store = Store.reopen(tmp_path)
    store.append({"kind": "episode", "cell": "c", "episode_ix": 3, "metrics": {"sum_reward": 3.0}})
    store.close()
    text = (tmp_path / EPISODES).read_text()
    assert text.endswith("\n") and "metr\n" not in text and text.count("\n") == 4
    assert [r["metrics"]["sum_reward"] for r in read_records(tmp_path)] == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.slow
def test_cells_equal_single_runs_with_two_workers_and_blocks(tmp_path):
    ckpts = sweepenv.write_checkpoints(tmp_path, steps=(10, 30))
    result = sweep(SweepConfig(ckpt=[str(p) for p in ckpts], env=["tiny=helpers.tinyenv:make_env"], out=tmp_path / "sw",
                               workers=2, block_size=2, report=False,
                               base={"policy": "helpers.tinyenv:make_policy", "num_trajs": 5, "seed": 3,
                                     "max_episodes_rendered": 0}))
    assert (result.cells, result.cells_done, result.cells_failed, result.episodes) == (2, 2, 0, 10)
    got = recorded(tmp_path / "sw")
    workers = {r["worker"] for r in read_records(tmp_path / "sw") if r["kind"] == "episode"}
    assert len(workers) == 2  # both workers ran blocks
    for ckpt in ckpts:
        cell = next(c for c in got if Path(str(ckpt)).stem in c)
        assert got[cell] == single_run(tmp_path, ckpt, "helpers.tinyenv:make_env", 5, seed=3)
    # a second sweep into the same folder is refused; --resume finds nothing left to do
    with pytest.raises(Exception, match="already holds a sweep"):
        sweep(SweepConfig(ckpt=[str(p) for p in ckpts], env=["tiny=helpers.tinyenv:make_env"], out=tmp_path / "sw",
                          base={"policy": "helpers.tinyenv:make_policy", "num_trajs": 5, "seed": 3,
                                "max_episodes_rendered": 0}))
    again = sweep(SweepConfig(ckpt=[str(p) for p in ckpts], env=["tiny=helpers.tinyenv:make_env"], out=tmp_path / "sw",
                              resume=True, report=False, base={"policy": "helpers.tinyenv:make_policy", "num_trajs": 5,
                                                               "seed": 3, "max_episodes_rendered": 0}))
    assert (again.episodes, again.episodes_run) == (10, 0)


@pytest.mark.slow
def test_report_and_a_failing_cell(tmp_path, capsys):
    """3 checkpoints x (2 tasks + a broken one): the broken cells fail, the others finish; the report's
    curves (eval_info and the executed notebook) equal an independent computation from episodes.jsonl."""
    sweepenv.write_checkpoints(tmp_path, steps=(10, 20, 30))
    out = tmp_path / "sw"
    code = exit_code(["sweep", "--ckpt", f"{tmp_path}/ckpt_*.pt", "--env", "a=helpers.tinyenv:make_env", "--env",
                 "b=helpers.tinyenv:make_env", "--env", "bad=helpers.sweep_envs:make_broken_env", "--group", "ok=a,b",
                 "--group",
                 "broken=bad", "--policy", "helpers.tinyenv:make_policy", "--num-trajs", "4",
                 "--max-episodes-rendered", "0",
                 "--workers", "1", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 3, err
    assert "__bad failed: " in err and "RuntimeError: this task's simulator is not installed" in err
    info = json.loads((out / "eval_info.json").read_text())
    # the summary is the learning curve: each checkpoint x task with its own interval, then the pooled mean
    for entry in info["per_checkpoint"]:
        a = entry["per_task"]["a"]
        lo, hi = a["ci95_sum_reward"]
        assert (f"  step {entry['step']} ckpt_{entry['step']}.pt x a: mean return {a['avg_sum_reward']:.2f} "
                f"[{lo:.2f}, {hi:.2f}] (n=4)") in err, err
    assert "pooled over every checkpoint: mean return " in err
    assert "(step 10): 4/4 episodes; mean return " in err  # each cell's line as it completes
    lines = list(read_records(out))
    eps = [r for r in lines if r["kind"] == "episode"]
    assert len(eps) == 3 * 2 * 4 and {r["task"] for r in eps} == {"a", "b"}
    assert len([r for r in lines if r["kind"] == "failed"]) == 3 and len(info["failures"]) == 3
    assert info["progress"] == {"cells": 9, "done": 6, "failed": 3, "pending": 0, "episodes": 24, "episodes_total": 36}
    # lerobot-eval's keys, numbers recomputed here from the lines
    returns = [r["metrics"]["sum_reward"] for r in eps]
    assert info["overall"]["n_episodes"] == 24
    assert math.isclose(info["overall"]["avg_sum_reward"], statistics.fmean(returns))
    assert math.isclose(info["per_group"]["ok"]["avg_max_reward"],
                        statistics.fmean(r["metrics"]["max_reward"] for r in eps))
    assert info["per_group"]["broken"]["n_episodes"] == 0
    task_a = next(t for t in info["per_task"] if t["task"] == "a")
    assert task_a["task_group"] == "ok" and task_a["metrics"]["sum_rewards"] == [r["metrics"]["sum_reward"]
                                                                                 for r in eps if r["task"] == "a"]
    for key in ("avg_sum_reward", "avg_max_reward", "pc_success", "n_episodes", "eval_s", "eval_ep_s", "video_paths"):
        assert key in info["overall"] and key in info["per_group"]["ok"] and key in task_a["metrics"]
    assert [e["step"] for e in info["per_checkpoint"]] == [10, 20, 30]
    # the curve, computed independently: mean and Student-t 95% interval per (task, step)
    from scipy import stats
    expected = {}
    for task in ("a", "b"):
        for step in (10, 20, 30):
            x = [r["metrics"]["sum_reward"] for r in eps if r["task"] == task and r["step"] == step]
            half = stats.t.ppf(0.975, len(x) - 1) * statistics.stdev(x) / math.sqrt(len(x))
            expected[(task, step)] = (statistics.fmean(x), half)
    nb = json.loads((out / "report.ipynb").read_text())
    cell = next(c for c in nb["cells"] if c.get("id") == "curves")
    from_notebook = json.loads("".join(cell["outputs"][0]["text"]))
    for curve in (info["curves"], from_notebook):
        assert set(curve) == {"a", "b"}
        for task, runs in curve.items():
            for point in runs["default"]:
                mean, half = expected[(task, point["step"])]
                assert math.isclose(point["mean"], mean, abs_tol=1e-5)
                lo, hi = point["ci95"]  # the report rounds to 6 decimals
                assert math.isclose((hi - lo) / 2, half, rel_tol=1e-5) and math.isclose((hi + lo) / 2, mean,
                                                                                        abs_tol=1e-5)
    plot = next(c for c in nb["cells"] if c.get("id") == "plot")
    assert any("image/png" in o.get("data", {}) for o in plot["outputs"])
    page = (out / "report.html").read_text()
    assert 'src="report_files/curve_a.png"' in page and "this task&#x27;s simulator is not installed" in page
    assert (out / "report_files" / "curve_a.png").read_bytes()[:4] == b"\x89PNG"
    status = sweep_status(out)
    assert (status["running"], status["done"], status["failed"], status["episodes"]) == (False, 6, 3, 24)


@pytest.mark.slow
def test_a_real_mujoco_cell_renders_and_equals_a_single_run(tmp_path):
    ckpt = ROOT / "examples/inverted_pendulum/policy.pt"
    common = {"policy": str(ROOT / "examples/inverted_pendulum/policy.py:make_policy"), "max_steps": 40,
              "width": 64, "height": 64, "render_quality": "fast", "render_backend": "mujoco"}
    env = str(ROOT / "examples/inverted_pendulum/policy.py:make_env")
    result = sweep(SweepConfig(ckpt=[str(ckpt)], env=[f"pendulum={env}"], out=tmp_path / "sw", report=False,
                               block_size=2, workers=1, base={**common, "num_trajs": 3, "max_episodes_rendered": 1}))
    assert result.cells_done == 1
    got = next(iter(recorded(tmp_path / "sw").values()))
    reference = single_run(tmp_path, ckpt, env, 3, **common, format="mp4", max_episodes_rendered=1)
    assert got == reference and [e["num_frames"] for e in got] == [41, 0, 0]
    videos = result.eval_info["per_task"][0]["metrics"]["video_paths"]
    assert len(videos) == 1 and videos[0].endswith(".mp4")
    import av
    with av.open(str(tmp_path / "sw" / videos[0])) as container:
        assert sum(1 for _ in container.decode(video=0)) == 41


def test_docs_list_the_generated_sweep_flags(capsys, tmp_path):
    from torchrl_render.sweep.cli import flags_markdown
    text = (ROOT / "docs" / "sweeps.md").read_text()
    begin, end = text.index("<!-- sweep-flags:begin"), text.index("<!-- sweep-flags:end -->")
    assert text[begin:end].split("\n", 1)[1].strip() == flags_markdown()
    with pytest.raises(SystemExit) as exc:
        main(["sweep-status", str(tmp_path)])  # not a sweep folder
    assert exc.value.code == 2
    assert "is not a sweep folder (no manifest.json)" in capsys.readouterr().err
