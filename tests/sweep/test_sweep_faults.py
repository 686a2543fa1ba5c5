"""Sweep faults, with real processes and signals, and a real local Ray cluster.

- local: a worker killed mid-cell by its pid (the cell is retried, nothing counted twice), then
  SIGINT of the driver (exit 130), ``--resume`` in a new driver killed with SIGKILL, a torn last
  line, and a last ``--resume`` that completes the grid; every cell equals single runs.
- ray: ``ray start --head`` on 127.0.0.1 with 2 CPUs, a sweep joining it with ``--ray-address``,
  one of its Ray workers killed mid-cell by pid; a sweep joining it through ``$RAY_ADDRESS``;
  ``ray stop`` afterwards.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from test_sweep import recorded, single_run

from torchrl_render.cli import main
from torchrl_render.sweep.cli import sweep_status
from torchrl_render.sweep.store import EPISODES, read_records

from helpers import sweep_envs as sweepenv
from helpers.paths import TESTS

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS.parent)]), "MUJOCO_GL": "egl"}


def sweep_argv(tmp: Path, *extra: str) -> list[str]:
    return ["sweep", "--ckpt", f"{tmp}/ckpt_*.pt", "--env", "slow=helpers.sweep_envs:make_slow_env", "--policy",
            "helpers.tinyenv:make_policy", "--num-trajs", "6", "--max-episodes-rendered", "0", "--workers", "1",
            "--no-report", "--out", str(tmp / "sw"), *extra]


def start_driver(tmp: Path, *extra: str, step_s: str = "0.04", env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "torchrl_render", *sweep_argv(tmp, *extra)], cwd=tmp,
                            env={**ENV, "SWEEP_STEP_S": step_s, **(env or {})}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def episodes(tmp: Path) -> list[dict]:
    return [r for r in read_records(tmp / "sw") if r["kind"] == "episode"]


def wait_for(predicate, proc: subprocess.Popen | None = None, timeout: float = 120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the driver ended early: {proc.returncode} {proc.communicate()}")
        time.sleep(0.05)
    raise AssertionError("timed out")


def check_against_single_runs(tmp: Path, ckpts: list[Path], n: int = 6) -> None:
    got = recorded(tmp / "sw")  # also asserts that no episode was recorded twice
    assert len(got) == len(ckpts)
    for ckpt in ckpts:
        cell = next(c for c in got if ckpt.stem + "-" in c)
        assert got[cell] == single_run(tmp, ckpt, "helpers.tinyenv:make_env", n)  # same dynamics, no sleep


@pytest.mark.slow
def test_killed_worker_sigint_sigkill_torn_line_then_resume(tmp_path, monkeypatch):
    ckpts = sweepenv.write_checkpoints(tmp_path, steps=(10, 20))
    driver = start_driver(tmp_path)
    # 1. kill the worker mid-cell, by the pid its first episode line names
    first = wait_for(lambda: episodes(tmp_path), driver)[0]
    pid = int(first["worker"].split("@")[0])
    assert pid != driver.pid and psutil.Process(pid).ppid() == driver.pid
    os.kill(pid, signal.SIGKILL)
    retried = wait_for(lambda: [r for r in episodes(tmp_path) if r["attempt"] == 2], driver)
    assert int(retried[0]["worker"].split("@")[0]) != pid and retried[0]["cell"] == first["cell"]
    # 2. Ctrl-C: the driver stops scheduling, keeps what finished, exits 130
    driver.send_signal(signal.SIGINT)
    _, err = driver.communicate(timeout=60)
    assert driver.returncode == 130, err
    assert "interrupted; the finished episodes are kept" in err and "--resume" in err
    after_sigint = len(episodes(tmp_path))
    assert 2 <= after_sigint < 12
    # 3. --resume in a new driver, killed with SIGKILL (its worker is left orphaned: end it too)
    driver = start_driver(tmp_path, "--resume")
    wait_for(lambda: len(episodes(tmp_path)) > after_sigint, driver)
    running = sweep_status(tmp_path / "sw")
    assert running["running"] and running["driver_pid"] == driver.pid and running["episodes_per_s"] > 0
    children = psutil.Process(driver.pid).children(recursive=True)
    driver.kill()
    driver.wait(30)
    for child in children:
        child.kill()
    psutil.wait_procs(children, timeout=30)
    status = sweep_status(tmp_path / "sw")
    assert not status["running"] and status["episodes"] == len(episodes(tmp_path)) < 12
    # 4. a torn last line, as a SIGKILL in the middle of a write leaves it
    with open(tmp_path / "sw" / EPISODES, "a") as fh:
        fh.write(json.dumps(episodes(tmp_path)[0])[:70])
    # 5. --resume completes the grid from episodes.jsonl
    monkeypatch.setenv("SWEEP_STEP_S", "0")
    monkeypatch.chdir(tmp_path)
    assert main(sweep_argv(tmp_path, "--resume")) == 0
    assert len(episodes(tmp_path)) == 12
    check_against_single_runs(tmp_path, ckpts)


@pytest.mark.slow
@pytest.mark.xdist_group("ray")
def test_ray_cluster_streams_episodes_and_retries_a_killed_worker(tmp_path, ray_cluster):
    ckpts = sweepenv.write_checkpoints(tmp_path, steps=(10, 20))
    address, auth = ray_cluster
    driver = start_driver(tmp_path, "--executor", "ray", "--ray-address", address, "--ray-num-cpus", "1",
                          "--block-size", "3", step_s="0.08", env=auth)
    first = wait_for(lambda: episodes(tmp_path), driver)[0]  # streamed back before its task ended
    pid = int(first["worker"].split("@")[0])
    assert pid != driver.pid and "ray" in " ".join(psutil.Process(pid).cmdline()).lower()
    os.kill(pid, signal.SIGKILL)
    _, err = driver.communicate(timeout=180)
    assert driver.returncode == 0, err
    lines = episodes(tmp_path)
    assert len(lines) == 12 and any(r["attempt"] == 2 for r in lines)
    assert len({r["worker"] for r in lines}) >= 2
    check_against_single_runs(tmp_path, ckpts)


@pytest.mark.slow
@pytest.mark.xdist_group("ray")
def test_ray_address_in_the_environment_joins_that_cluster_as_it_is(tmp_path, ray_cluster):
    sweepenv.write_checkpoints(tmp_path, steps=(10,))
    address, auth = ray_cluster
    driver = start_driver(tmp_path, "--executor", "ray", "--debug", step_s="0", env={**auth, "RAY_ADDRESS": address})
    _, err = driver.communicate(timeout=180)
    assert driver.returncode == 0, err
    assert "local Ray instance" not in err  # no instance of its own: the user's cluster ran the cell
    assert len(episodes(tmp_path)) == 6
