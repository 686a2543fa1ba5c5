"""``sweep --watch``: checkpoints written into a folder while the sweep runs, with real processes.

Nothing is trained: the test writes TinyEnv checkpoints the way a training loop does (one slowly,
in pieces, so that it is half-written for a while; one through a rename; one corrupt; one whose
step is in its metadata only), while a real ``sweep --watch`` driver process watches the folder.
Then Ctrl-C (exit 130) and ``--resume --watch`` with a timeout that ends it; each finished cell is
logged through ``--logger tensorboard`` and read back with TensorBoard's EventAccumulator. The same
on a Ray cluster (``--executor ray``), logged to MLflow and read back with MLflow's client.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from test_sweep import recorded, single_run
from test_sweep_faults import ENV, wait_for

from torchrl_render.sweep.cli import status_text, sweep_status
from torchrl_render.sweep.store import read_records

from helpers import sweep_envs as sweepenv
from helpers.tinyenv import make_policy
from helpers.trackers import mlflow_run, tensorboard_scalars


def watch_driver(tmp: Path, *extra: str, logger: str = "tensorboard", env: dict | None = None) -> subprocess.Popen:
    # no report: the watched sweep's report is the docs' example (docs/sweeps.md, run by tests/docs)
    argv = [sys.executable, "-m", "torchrl_render", "sweep", "--ckpt", f"{tmp}/ckpts/*.pt", "--env",
            "tiny=helpers.tinyenv:make_env", "--policy", "helpers.tinyenv:make_policy", "--num-trajs", "3",
            "--max-episodes-rendered", "0", "--workers", "1", "--no-report", "--out", str(tmp / "sw"), "--watch",
            "--watch-settle", "1", "--logger", logger, *extra]
    return subprocess.Popen(argv, cwd=tmp, env={**ENV, **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def checkpoint_bytes(tmp: Path, step: int, **extra) -> bytes:
    policy = make_policy()
    with torch.no_grad():
        for tensor in policy.parameters():
            tensor.add_(step / 100)
    path = tmp / f"bytes_{step}.pt"
    torch.save({"model_state_dict": policy.state_dict(), **extra}, path)
    return path.read_bytes()


def steps_recorded(tmp: Path) -> dict[int | None, int]:
    counts: dict[int | None, int] = {}
    for r in read_records(tmp / "sw"):
        if r["kind"] == "episode":
            counts[r["step"]] = counts.get(r["step"], 0) + 1
    return counts


@pytest.mark.slow
def test_watch_takes_new_checkpoints_in_step_order_then_ctrl_c_and_resume(tmp_path):
    folder = tmp_path / "ckpts"
    folder.mkdir()
    sweepenv.write_checkpoints(folder, steps=(10,))  # there before the sweep starts
    driver = watch_driver(tmp_path)
    wait_for(lambda: steps_recorded(tmp_path).get(10) == 3, driver)
    status = sweep_status(tmp_path / "sw")
    assert status["running"] and status["watching"] and status["watch"]["patterns"] == {
        "default": [f"{folder}/*.pt"]}
    assert f"watching '{folder}/*.pt': " in status_text(status)
    # a checkpoint written slowly, in pieces, pausing longer than the settle time: loaded half-written and failing,
    # then retried as it changes, never failed for good (its cell is evaluated, with the whole file's sha256)
    data = checkpoint_bytes(tmp_path, 20)
    with open(folder / "step_20.pt", "wb") as fh:
        for i in range(0, len(data), len(data) // 4 + 1):
            fh.write(data[i:i + len(data) // 4 + 1])
            fh.flush()
            time.sleep(1.2)
    # written by rename (as torch.save to a temporary name, then os.replace, does); step in the metadata only
    (tmp_path / "tmp.bin").write_bytes(checkpoint_bytes(tmp_path, 30, frames=30))
    os.replace(tmp_path / "tmp.bin", folder / "latest.pt")
    (folder / "ckpt-25.pt").write_bytes(b"PK\x03\x04 not a whole checkpoint")  # corrupt: given up after 3 loads
    wait_for(lambda: steps_recorded(tmp_path).get(30) == 3 and steps_recorded(tmp_path).get(20) == 3, driver)
    wait_for(lambda: any(r["kind"] == "failed" for r in read_records(tmp_path / "sw")), driver)
    status = sweep_status(tmp_path / "sw")
    assert status["watch"]["last_step"] in (20, 30) and "last saw " in status_text(status)
    driver.send_signal(signal.SIGINT)  # Ctrl-C: ends cleanly
    _, err = driver.communicate(timeout=60)
    assert driver.returncode == 130, err
    assert "new checkpoint step_20.pt (step 20)" in err and "new checkpoint latest.pt (step 30)" in err
    assert "ckpt-25.pt (step 25) failed to load 3 times, unchanged" in err
    assert f"watching '{folder}/*.pt' for new checkpoints (1 there already), until Ctrl-C" in err  # says so at once
    # --resume --watch goes on: an earlier one is there already, a new one comes; then the timeout ends it
    driver = watch_driver(tmp_path, "--resume", "--watch-timeout", "4")
    sweepenv.write_checkpoints(folder, steps=(40,))
    _, err = driver.communicate(timeout=120)
    assert driver.returncode == 3, err  # it ended on its timeout; the corrupt checkpoint's cell failed
    assert "there already), until 4 s without a new one, or Ctrl-C" in err  # 4 or 5: ckpt_40 races the start
    assert steps_recorded(tmp_path) == {10: 3, 20: 3, 30: 3, 40: 3}  # each once: no second cell for a step
    assert {r["checkpoint_sha256"] for r in read_records(tmp_path / "sw") if r.get("step") == 20} == {
        hashlib.sha256(data).hexdigest()}  # the complete file's, not a half file's
    info = json.loads((tmp_path / "sw" / "eval_info.json").read_text())
    assert [e["step"] for e in info["per_checkpoint"]] == [10, 20, 25, 30, 40]  # the training step is the x axis
    assert [p["step"] for p in info["curves"]["tiny"]["default"]] == [10, 20, 30, 40]
    failed = [r for r in read_records(tmp_path / "sw") if r["kind"] == "failed"]
    # one cell failed: while watching (it failed to load 3 times), and again in its worker when --resume retried it
    assert {r["cell"] for r in failed} == {failed[0]["cell"]} and {r["step"] for r in failed} == {25}
    assert "CheckpointError" in failed[0]["error"]
    # every watched cell equals a single run of its checkpoint
    got = recorded(tmp_path / "sw")
    for name in ("ckpt_10.pt", "step_20.pt", "latest.pt", "ckpt_40.pt"):
        cell = next(c for c in got if c.startswith(Path(name).stem + "-"))
        assert got[cell] == single_run(tmp_path, folder / name, "helpers.tinyenv:make_env", 3)
    assert not sweep_status(tmp_path / "sw")["running"]
    # the logs, read back with TensorBoard's EventAccumulator: each cell once, at its training step
    scalars, _ = tensorboard_scalars(tmp_path / "sw" / "logs" / "sw")
    means = {e["step"]: e["per_task"]["tiny"]["avg_sum_reward"] for e in info["per_checkpoint"] if e["step"] != 25}
    assert [s for s, _ in scalars["eval/avg_sum_reward"]] == [10, 20, 30, 40]
    assert dict(scalars["eval/avg_sum_reward"]) == pytest.approx(means)
    assert {s for s, _ in scalars["eval/ci95_sum_reward_high"]} == {10, 20, 30, 40}


class InterruptedWhileFreed:
    """An object whose ``__del__`` gets the Ctrl-C: Python prints the KeyboardInterrupt raised there and drops it
    (as when the signal lands while a library's weakref callback runs), so nothing above sees it."""

    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)  # the handler runs here, inside __del__


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the dropped Ctrl-C, printed
def test_a_ctrl_c_swallowed_where_it_landed_still_ends_a_watching_sweep(tmp_path):
    from torchrl_render import SweepConfig, sweep

    folder = tmp_path / "ckpts"
    folder.mkdir()
    sweepenv.write_checkpoints(folder, steps=(10,))
    lines = []

    def echo(text: str) -> None:
        lines.append(text)
        if text.startswith("watching "):
            InterruptedWhileFreed()  # made and freed at once: Ctrl-C arrives in its __del__ and is dropped there

    cfg = SweepConfig(ckpt=[f"{folder}/*.pt"], env=["tiny=helpers.tinyenv:make_env"], out=tmp_path / "sw",
                      base={"policy": "helpers.tinyenv:make_policy", "num_trajs": 1, "max_episodes_rendered": 0},
                      workers=1, report=False, watch=True, watch_timeout=30)
    began = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        sweep(cfg, echo=echo)
    assert time.monotonic() - began < 25, "the sweep watched on until its timeout"  # an outer bound, not a timing
    assert not sweep_status(tmp_path / "sw")["running"]


@pytest.mark.slow
@pytest.mark.xdist_group("ray")
def test_watch_on_ray_takes_a_new_checkpoint_and_logs_it_to_mlflow(tmp_path, ray_cluster):
    # on the session's cluster (the tests of a sweep's own local Ray instance are in test_sweep_faults)
    folder = tmp_path / "ckpts"
    folder.mkdir()
    sweepenv.write_checkpoints(folder, steps=(10,))
    address, auth = ray_cluster
    driver = watch_driver(tmp_path, "--executor", "ray", "--ray-address", address, "--ray-num-cpus", "0.5",
                          "--watch-timeout", "8", logger="mlflow", env=auth)
    wait_for(lambda: steps_recorded(tmp_path).get(10) == 3, driver, timeout=300)
    sweepenv.write_checkpoints(folder, steps=(20,))  # written while the Ray tasks' sweep watches
    _, err = driver.communicate(timeout=300)
    assert driver.returncode == 0, err
    assert "new checkpoint ckpt_20.pt (step 20)" in err, err
    assert steps_recorded(tmp_path) == {10: 3, 20: 3}
    workers = {r["worker"] for r in read_records(tmp_path / "sw") if r["kind"] == "episode"}
    assert all(int(w.split("@")[0]) != driver.pid for w in workers)  # run in Ray's worker processes
    got = recorded(tmp_path / "sw")
    for name in ("ckpt_10.pt", "ckpt_20.pt"):
        cell = next(c for c in got if c.startswith(Path(name).stem + "-"))
        assert got[cell] == single_run(tmp_path, folder / name, "helpers.tinyenv:make_env", 3)
    info = json.loads((tmp_path / "sw" / "eval_info.json").read_text())
    run = mlflow_run(tmp_path / "sw" / "logs", "torchrl_render")
    means = {e["step"]: e["per_task"]["tiny"]["avg_sum_reward"] for e in info["per_checkpoint"]}
    assert run["name"] == "sw" and [s for s, _ in run["metrics"]["eval/avg_sum_reward"]] == [10, 20]
    assert dict(run["metrics"]["eval/avg_sum_reward"]) == pytest.approx(means)
    assert run["params"]["executor"] == "ray" and run["params"]["watch"] == "True"


@pytest.mark.slow
def test_a_killed_watchers_wandb_cells_are_logged_again_by_its_resume(tmp_path):
    # W&B offline writes through its own service, on its own clock, with no call that confirms a write before
    # the run finishes: a watcher killed with kill -9 may have lost its cells' numbers; the ledger counts them
    # only once the run finished, so the resume logs them again, into its own run
    from helpers.trackers import wandb_history

    folder = tmp_path / "ckpts"
    folder.mkdir()
    sweepenv.write_checkpoints(folder, steps=(10,))
    offline = {"WANDB_API_KEY": "", "HOME": str(tmp_path), "WANDB_SILENT": "true"}  # no credentials: offline
    driver = watch_driver(tmp_path, logger="wandb", env=offline)
    wait_for(lambda: steps_recorded(tmp_path).get(10) == 3, driver)
    time.sleep(1.0)  # the driver has given the cell to W&B by now (or not: the resume must cope either way)
    driver.kill()
    driver.communicate(timeout=60)
    assert not [r for r in read_records(tmp_path / "sw") if r["kind"] == "logged"]  # nothing W&B confirmed
    driver = watch_driver(tmp_path, "--resume", "--watch-timeout", "1", logger="wandb", env=offline)
    _, err = driver.communicate(timeout=120)
    assert driver.returncode == 0, err
    runs = sorted((tmp_path / "sw" / "logs" / "wandb").glob("offline-run-*/run-*.wandb"), key=os.path.getmtime)
    rows = wandb_history(runs[-1])  # the resumed session's run
    assert [r["eval/step"] for r in rows if "eval/avg_sum_reward" in r] == [10]
    assert [r["cell"] for r in read_records(tmp_path / "sw") if r["kind"] == "logged"] == [
        next(r["cell"] for r in read_records(tmp_path / "sw") if r["kind"] == "episode")]  # once, at its finish


@pytest.mark.slow
@pytest.mark.parametrize("logger", ["tensorboard", "csv"])
def test_a_real_training_run_watched_killed_and_resumed_logs_each_checkpoint_once_in_step_order(tmp_path, logger):
    # the shipped trainer (examples/inverted_pendulum/train.py, ARS) writes a checkpoint per evaluation, saved then
    # renamed, named by its env steps, while `sweep --watch` evaluates the folder; the watcher is killed with
    # kill -9 the moment its first cell's episodes are all recorded (before it logged them, or just after), and
    # `--resume --watch` goes on: the logger, read back with its own reader, has each checkpoint once, in
    # training-step order, with the numbers of eval_info.json
    from helpers.paths import ROOT
    from helpers.trackers import csv_scalars

    example = ROOT / "examples" / "inverted_pendulum"
    folder = tmp_path / "ckpts"

    def watcher(*extra):
        argv = [sys.executable, "-m", "torchrl_render", "sweep", "--ckpt", f"{folder}/*.pt", "--env",
                f"pendulum={example}/policy.py:make_env", "--policy", f"{example}/policy.py:make_policy",
                "--num-trajs", "2", "--max-steps", "30", "--max-episodes-rendered", "0", "--workers", "1",
                "--no-report", "--out", str(tmp_path / "sw"), "--watch", "--watch-settle", "0.5",
                "--logger", logger, *extra]
        return subprocess.Popen(argv, cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)

    driver = watcher()
    training = subprocess.Popen(
        [sys.executable, str(example / "train.py"), "--iters", "4", "--eval-every", "1", "--eval-episodes", "1",
         "--episode-len", "30", "--directions", "2", "--top-b", "1", "--workers", "1", "--minutes", "5",
         "--out", str(tmp_path / "best.pt"), "--checkpoints", str(folder)],
        cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wait_for(lambda: 2 in steps_recorded(tmp_path).values(), driver)
    driver.kill()
    driver.communicate(timeout=60)
    out, _ = training.communicate(timeout=120)
    assert training.returncode == 0, out
    steps = sorted(int(p.stem.split("_")[1]) for p in folder.glob("step_*.pt"))
    assert len(steps) == 4 and all(torch.load(folder / f"step_{s}.pt", weights_only=True)["step"] == s for s in steps)
    driver = watcher("--resume", "--watch-timeout", "2")
    _, err = driver.communicate(timeout=180)
    assert driver.returncode == 0, err
    assert steps_recorded(tmp_path) == dict.fromkeys(steps, 2)  # each checkpoint evaluated once
    info = json.loads((tmp_path / "sw" / "eval_info.json").read_text())
    means = [(e["step"], e["per_task"]["pendulum"]["avg_sum_reward"]) for e in info["per_checkpoint"]]
    assert [s for s, _ in means] == steps
    logs = tmp_path / "sw" / "logs" / "sw"
    scalars = tensorboard_scalars(logs)[0] if logger == "tensorboard" else csv_scalars(logs)
    assert [s for s, _ in scalars["eval/avg_sum_reward"]] == steps  # once each, in training-step order
    assert dict(scalars["eval/avg_sum_reward"]) == pytest.approx(dict(means))
    assert len([r for r in read_records(tmp_path / "sw") if r["kind"] == "logged"]) == len(steps)
