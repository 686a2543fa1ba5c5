"""``--logger``: a run's evaluation through TorchRL's loggers, read back with each tool's own reader.

Real runs of the shipped InvertedPendulum example (64x64, fast look, 20 steps); the logs read back
with TensorBoard's EventAccumulator, the CSV files, W&B's offline run file (W&B's protobufs) and
MLflow's own client on the local store.
A sweep's per-cell logging (scalars and videos) is here too, and a watched sweep's in tests/sweep/test_watch.py.
"""

from __future__ import annotations

import importlib.util
import math
import os

import pytest

from torchrl_render import RenderConfig, render_policy
from torchrl_render.config import LOGGER_KINDS
from torchrl_render.loggers import LOGGERS

from helpers.clicode import exit_code
from helpers.paths import ROOT
from helpers.trackers import csv_scalars, mlflow_run, tensorboard_scalars, wandb_config, wandb_history

PEND = {"ckpt": str(ROOT / "examples/inverted_pendulum/policy.pt"),
        "policy": str(ROOT / "examples/inverted_pendulum/policy.py:make_policy"), "env": "InvertedPendulum-v5",
        "num_trajs": 2, "max_steps": 20, "width": 64, "height": 64, "render_quality": "fast", "progress": False}
STEP = 14753  # the example checkpoint's train_steps entry
TAGS = {"eval/avg_sum_reward", "eval/avg_max_reward", "eval/avg_length", "eval/ci95_sum_reward_low",
        "eval/ci95_sum_reward_high"}  # no eval/pc_success: InvertedPendulum gives no success signal


def test_the_kinds_are_one_table():
    assert tuple(LOGGERS) == LOGGER_KINDS


@pytest.mark.slow
def test_tensorboard_scalars_video_and_hparams(tmp_path):
    result = render_policy(RenderConfig(**PEND, out=tmp_path / "run.mp4", logger="tensorboard"))
    agg = result.metrics["aggregated"]
    scalars, videos = tensorboard_scalars(tmp_path / "logs" / "run")
    assert set(scalars) == TAGS
    assert scalars["eval/avg_sum_reward"] == [(STEP, pytest.approx(agg["avg_sum_reward"]))]
    assert scalars["eval/ci95_sum_reward_low"][0][1] == pytest.approx(agg["ci95_sum_reward"][0])
    assert videos == [("eval/video", [STEP])]
    hparams = [p for p in (tmp_path / "logs" / "run").iterdir() if p.is_dir()]  # add_hparams' own run folder
    assert len(hparams) == 1 and any(hparams[0].glob("events.out.tfevents.*"))


@pytest.mark.slow
def test_csv_and_wandb_offline(tmp_path, monkeypatch):
    for name in ("WANDB_API_KEY", "WANDB_MODE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc: no credentials
    monkeypatch.setenv("WANDB_SILENT", "true")
    run = render_policy(RenderConfig(**PEND, out=tmp_path / "c.mp4", logger="csv", exp_name="evalrun",
                                     logger_dir=str(tmp_path / "csvlogs")))
    got = csv_scalars(tmp_path / "csvlogs" / "evalrun")
    assert set(got) == TAGS and got["eval/avg_length"] == [(STEP, 20.0)]
    assert math.isclose(got["eval/avg_sum_reward"][0][1], run.metrics["aggregated"]["avg_sum_reward"])
    video = next((tmp_path / "csvlogs" / "evalrun" / "videos").rglob("video_*"))
    assert video.name == f"video_{STEP}{'.mp4' if importlib.util.find_spec('torchcodec') else '.pt'}"
    assert "num_trajs: 2" in (tmp_path / "csvlogs" / "evalrun" / "texts" / "hparams0.txt").read_text()
    run = render_policy(RenderConfig(**PEND, out=tmp_path / "w.mp4", logger="wandb", logger_project="proj"))
    assert any("W&B: no credentials" in w and "offline" in w for w in run.warnings)
    [path] = (tmp_path / "logs" / "wandb").glob("offline-run-*/run-*.wandb")
    rows = wandb_history(path)
    values = {k: (r["eval/step"], v) for r in rows for k, v in r.items() if k in TAGS}
    assert set(values) == TAGS and values["eval/avg_length"] == (STEP, 20)
    assert any(r.get("eval/video/_type") == "video-file" and r["eval/step"] == STEP for r in rows)
    media = path.parent / "files" / next(r["eval/video/path"] for r in rows if "eval/video/path" in r)
    assert media.is_file() and media.read_bytes()[4:8] == b"ftyp"  # an mp4
    assert wandb_config(path)["num_trajs"] == 2


@pytest.mark.slow
def test_an_env_reporting_success_logs_the_wilson_interval_of_its_success_rate(tmp_path):
    result = render_policy(RenderConfig(policy="helpers.engine_toys:half_policy",
                                        env="helpers.engine_toys:counting_env", num_trajs=7, seed=2,
                                        out=tmp_path / "m.jsonl", progress=False, logger="csv", exp_name="succ"))
    agg = result.metrics["aggregated"]
    got = csv_scalars(tmp_path / "logs" / "succ")
    assert {k for k in got if "success" in k} == {"eval/pc_success", "eval/ci95_success_low", "eval/ci95_success_high"}
    low, high = got["eval/ci95_success_low"][0][1], got["eval/ci95_success_high"][0][1]
    assert [low, high] == pytest.approx(agg["ci95_success"]) and low == pytest.approx(100 * 7 / (7 + 1.96 ** 2), 1e-3)


@pytest.mark.slow
def test_mlflow_local_store_read_back_with_mlflows_client(tmp_path):
    run = render_policy(RenderConfig(**PEND, out=tmp_path / "m.mp4", logger="mlflow", exp_name="evalrun",
                                     logger_project="pendulum", logger_dir=str(tmp_path / "ml")))
    got = mlflow_run(tmp_path / "ml", "pendulum")
    assert got["name"] == "evalrun" and set(got["metrics"]) == TAGS
    assert got["metrics"]["eval/avg_sum_reward"] == [(STEP, pytest.approx(run.metrics["aggregated"]["avg_sum_reward"]))]
    assert got["metrics"]["eval/avg_length"] == [(STEP, 20.0)]
    assert got["params"]["num_trajs"] == "2" and got["params"]["env"] == "InvertedPendulum-v5"
    assert got["artifacts"] == [f"videos/eval_video_step_{STEP}.mp4"]
    video = tmp_path / "ml" / "mlartifacts" / got["artifact_uri"].split("/mlartifacts/")[1] / got["artifacts"][0]
    assert video.read_bytes()[4:8] == b"ftyp"  # an mp4, in the log folder: no server, nothing outside it


@pytest.mark.slow
def test_mlflow_without_torchcodec_logs_the_scalars_and_says_why_no_video(tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torchcodec" else real(name, *a))
    run = render_policy(RenderConfig(**PEND, out=tmp_path / "m.mp4", logger="mlflow"))
    assert any("the videos are not logged" in w and "pip install torchcodec" in w for w in run.warnings)
    got = mlflow_run(tmp_path / "logs", "torchrl_render")
    assert set(got["metrics"]) == TAGS and got["artifacts"] == [] and got["name"] == "m"


def test_a_logger_without_its_package_is_refused_before_anything_runs(tmp_path, capsys, monkeypatch):
    real = importlib.util.find_spec
    hidden = set(LOGGERS["mlflow"][1])  # as on a machine without the loggers extra (make test-min's, for one)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in hidden else real(name, *a))
    out = tmp_path / "run.mp4"
    code = exit_code(["--ckpt", PEND["ckpt"], "--policy", PEND["policy"], "--env", "InvertedPendulum-v5",
                      "--out", str(out), "--logger", "mlflow"])
    err = capsys.readouterr().err
    assert code == 2
    assert "--logger mlflow needs the mlflow, sqlalchemy, alembic and omegaconf packages, which are not installed" \
        in err
    assert "Install it with: pip install 'torchrl_render[loggers]'" in err
    assert not out.exists() and not (tmp_path / "logs").exists()
    code = exit_code(["--ckpt", PEND["ckpt"], "--policy", PEND["policy"], "--env", "InvertedPendulum-v5",
                      "--out", str(out), "--logger", "tensorbord"])
    assert code == 2 and "Did you mean 'tensorboard'?" in capsys.readouterr().err  # argparse's choices


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["csv", "mlflow"])
def test_a_sweep_logs_each_cell_with_its_task_in_the_tag(tmp_path, kind):
    from torchrl_render import SweepConfig, sweep

    from helpers import sweep_envs as sweepenv

    ckpts = sweepenv.write_checkpoints(tmp_path, steps=(10, 20))
    result = sweep(SweepConfig(ckpt=[str(p) for p in ckpts], env=["a=helpers.tinyenv:make_env",
                                                                  "b=helpers.tinyenv:make_env"],
                               out=tmp_path / "sw", workers=1, report=False,
                               base={"policy": "helpers.tinyenv:make_policy", "num_trajs": 3,
                                     "max_episodes_rendered": 0, "logger": kind, "exp_name": "evals"}))
    if kind == "csv":
        got = csv_scalars(tmp_path / "sw" / "logs" / "evals")
        hparams = (tmp_path / "sw" / "logs" / "evals" / "texts" / "hparams0.txt").read_text()
        assert "base.num_trajs: 3" in hparams and "watch: False" in hparams
    else:
        run = mlflow_run(tmp_path / "sw" / "logs", "torchrl_render")
        assert run["name"] == "evals" and run["params"]["base.num_trajs"] == "3" and run["params"]["watch"] == "False"
        got = run["metrics"]
    assert {t for t in got if t.endswith("avg_sum_reward")} == {"eval/a/avg_sum_reward", "eval/b/avg_sum_reward"}
    means = {(e["step"], task): c["avg_sum_reward"] for e in result.eval_info["per_checkpoint"]
             for task, c in e["per_task"].items()}
    for task in ("a", "b"):
        assert dict(got[f"eval/{task}/avg_sum_reward"]) == pytest.approx({s: means[(s, task)] for s in (10, 20)})


@pytest.mark.slow
def test_a_sweep_logs_each_cells_video_at_its_step_with_its_task_in_the_tag(tmp_path):
    from torchrl_render import SweepConfig, sweep

    from helpers import sweep_envs as sweepenv

    ckpts = sweepenv.write_checkpoints(tmp_path, steps=(10, 20))
    result = sweep(SweepConfig(ckpt=[str(p) for p in ckpts], env=["a=helpers.tinyenv:make_env",
                                                                  "b=helpers.tinyenv:make_env"],
                               out=tmp_path / "sw", workers=1, report=False,
                               base={"policy": "helpers.tinyenv:make_policy", "num_trajs": 2, "max_steps": 4,
                                     "from_pixels": True, "max_episodes_rendered": 1, "logger": "tensorboard",
                                     "exp_name": "evals"}))
    assert all(c["video_paths"] for e in result.eval_info["per_checkpoint"] for c in e["per_task"].values())
    _, videos = tensorboard_scalars(tmp_path / "sw" / "logs" / "evals")
    assert sorted((tag, sorted(steps)) for tag, steps in videos) == [("eval/a/video", [10, 20]),
                                                                     ("eval/b/video", [10, 20])]


@pytest.mark.slow
def test_a_wandb_evaluation_leaves_the_users_own_run_going(tmp_path, monkeypatch):
    """Evaluating inside a training script that logs to W&B itself: our logger finishes only its own run."""
    import wandb

    for name in ("WANDB_API_KEY", "WANDB_MODE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("WANDB_SILENT", "true")
    (tmp_path / "mine").mkdir()
    training = wandb.init(mode="offline", dir=str(tmp_path / "mine"), project="train")
    training.log({"loss": 2.0}, step=1)
    render_policy(RenderConfig(**PEND, out=tmp_path / "w.mp4", logger="wandb", logger_project="proj"))
    training.log({"loss": 1.0}, step=2)  # the user's run is still going
    assert "WANDB_MODE" not in os.environ  # TorchRL's logger sets it for the process: put back as it was
    training.finish()
    wandb.teardown()
    [mine] = (tmp_path / "mine" / "wandb").glob("offline-run-*/run-*.wandb")
    assert [r["loss"] for r in wandb_history(mine) if "loss" in r] == [2.0, 1.0]
    [ours] = (tmp_path / "logs" / "wandb").glob("offline-run-*/run-*.wandb")
    assert {k for r in wandb_history(ours) for k in r} >= TAGS
