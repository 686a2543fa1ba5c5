"""``sweep --watch`` at its edges, in this process (a real local worker runs the cells): a writer slower than the
settle time, a whole-module checkpoint with ``trust_checkpoint``, a checkpoint deleted once taken, a watch that
found nothing, and SIGTERM.

The driver-process tests (Ctrl-C, ``--resume``, the loggers read back, Ray) are in test_watch.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
import torch

from torchrl_render import SweepConfig, sweep
from torchrl_render.errors import ConfigError
from torchrl_render.sweep.store import read_records

from helpers import sweep_envs as sweepenv
from helpers.clicode import exit_code
from helpers.tinyenv import make_policy
from helpers.trackers import csv_scalars

TINY = {"policy": "helpers.tinyenv:make_policy", "num_trajs": 2, "max_episodes_rendered": 0}


def watched(tmp: Path, **fields) -> SweepConfig:
    return SweepConfig(**{"ckpt": [f"{tmp}/ckpts/*.pt"], "env": ["tiny=helpers.tinyenv:make_env"],
                          "out": tmp / "sw", "workers": 1, "report": False, "watch": True, "base": dict(TINY),
                          **fields})


def write_slowly(path: Path, data: bytes, pieces: int, pause_s: float) -> None:
    """A training loop on a busy machine, or a network filesystem: the file grows in pieces, with pauses."""
    size = len(data) // pieces + 1
    with open(path, "wb") as fh:
        for i in range(0, len(data), size):
            fh.write(data[i:i + size])
            fh.flush()
            time.sleep(pause_s)


def module_checkpoint(tmp: Path) -> bytes:
    """``torch.save(policy, path)``: the whole module, which only a trusted load unpickles."""
    policy = make_policy()
    with torch.no_grad():
        for tensor in policy.parameters():
            tensor.add_(0.3)
    torch.save(policy, tmp / "module.bin")
    return (tmp / "module.bin").read_bytes()


def test_a_slow_writer_a_trusted_module_and_a_vanished_checkpoint(tmp_path):
    folder = tmp_path / "ckpts"
    folder.mkdir()
    data = module_checkpoint(tmp_path)

    def training() -> None:
        # pauses longer than the settle time: each piece is loaded half-written (and fails) before the next comes
        write_slowly(folder / "step_20.pt", data, pieces=3, pause_s=1.0)
        sweepenv.write_checkpoints(tmp_path, steps=(30,))
        os.replace(tmp_path / "ckpt_30.pt", folder / "step_30.pt")

    lines: list[str] = []

    def echo(text: str) -> None:
        lines.append(text)
        if text.startswith("watching "):
            threading.Thread(target=training, daemon=True).start()
        if text.startswith("new checkpoint step_30.pt"):
            (folder / "step_30.pt").unlink()  # taken, then deleted by the training run before its cell ran

    cfg = watched(tmp_path, watch_timeout=2.0, watch_settle=0.5, base={**TINY, "trust_checkpoint": True})
    result = sweep(cfg, echo=echo)
    records = read_records(tmp_path / "sw")
    # the timeout counted from the last change of the file still being written: the watch waited for it
    slow = [r for r in records if r.get("step") == 20]
    assert [r["kind"] for r in slow] == ["episode", "episode"], slow  # never failed, though loaded half-written
    assert {r["checkpoint_sha256"] for r in slow} == {hashlib.sha256(data).hexdigest()}  # the complete file's
    assert "new checkpoint step_20.pt (step 20)" in lines
    # the vanished one: named as gone from the watched folder, not as a wrong --ckpt
    failed = [r for r in records if r["kind"] == "failed"]
    assert [r["step"] for r in failed] == [30]
    assert f"{folder / 'step_30.pt'} vanished from the watched folder after it was taken" in failed[0]["error"]
    assert result.cells == 2 and result.cells_failed == 1


def test_a_watch_that_found_nothing_says_so_and_leaves_nothing(tmp_path):
    (tmp_path / "ckpts").mkdir()
    (tmp_path / "ckpts" / "step_10.pt.tmp").write_bytes(b"not matched: the glob is *.pt")
    with pytest.raises(ConfigError) as caught:
        sweep(watched(tmp_path, watch_timeout=0.5, base={**TINY, "logger": "csv"}))
    message = str(caught.value)
    assert "the watch ended after --watch-timeout 0.5 s with nothing evaluated" in message
    assert f"Expected: a checkpoint matching '{tmp_path}/ckpts/*.pt'" in message and "Got: no file matched" in message
    assert "check the glob" in message and "--resume" in message
    assert not (tmp_path / "sw").exists()  # the folder it made, its logger's run included, is gone


def test_sigterm_stops_a_watching_sweep_as_ctrl_c_does(tmp_path, capsys):
    folder = tmp_path / "ckpts"
    folder.mkdir()
    sweepenv.write_checkpoints(folder, steps=(10,))
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # else the SIGTERM below would not be the sweep's

    def scheduler() -> None:  # docker stop, a cluster's pre-emption: SIGTERM once the first cell is in
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            done = (tmp_path / "sw" / "episodes.jsonl").exists() and sum(
                r["kind"] == "episode" for r in read_records(tmp_path / "sw")) == 2
            if done and signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:  # the sweep's handler is in
                os.kill(os.getpid(), signal.SIGTERM)
                return
            time.sleep(0.05)

    threading.Thread(target=scheduler, daemon=True).start()
    code = exit_code(["sweep", "--ckpt", f"{folder}/*.pt", "--env", "tiny=helpers.tinyenv:make_env", "--policy",
                 "helpers.tinyenv:make_policy", "--num-trajs", "2", "--max-episodes-rendered", "0", "--workers", "1",
                 "--no-report", "--out", str(tmp_path / "sw"), "--watch", "--logger", "csv"])
    err = capsys.readouterr().err
    assert code == 143, err
    assert "stopped by SIGTERM; the finished episodes are kept in" in err and "--resume to go on" in err
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # put back
    assert not (tmp_path / "sw" / "driver.json").exists() and (tmp_path / "sw" / "eval_info.json").exists()
    # --resume goes on; the logger gets the cell once, whether or not the stopped session had logged it
    assert exit_code(["sweep", "--ckpt", f"{folder}/*.pt", "--env", "tiny=helpers.tinyenv:make_env", "--policy",
                      "helpers.tinyenv:make_policy", "--num-trajs", "2", "--max-episodes-rendered", "0", "--workers",
                      "1", "--no-report", "--out", str(tmp_path / "sw"), "--watch", "--watch-timeout", "0.5",
                      "--logger", "csv", "--resume"]) == 0
    assert [s for s, _ in csv_scalars(tmp_path / "sw" / "logs" / "sw")["eval/avg_sum_reward"]] == [10]


def test_resume_after_a_checkpoint_given_up_half_written_evaluates_the_whole_file_once(tmp_path):
    from torchrl_render.sweep import SweepFailedError

    folder = tmp_path / "ckpts"
    folder.mkdir()
    sweepenv.write_checkpoints(tmp_path, steps=(20,))
    data = (tmp_path / "ckpt_20.pt").read_bytes()
    lines: list[str] = []

    def echo(text: str) -> None:
        lines.append(text)
        if text.startswith("watching "):  # the writer stalls for good halfway (the training job was pre-empted)
            (folder / "step_20.pt").write_bytes(data[: len(data) // 2])

    with pytest.raises(SweepFailedError):  # its one cell failed: the half file never loaded
        sweep(watched(tmp_path, watch_timeout=1.0, watch_settle=0.2), echo=echo)
    assert any("step_20.pt (step 20) failed to load 3 times, unchanged" in line for line in lines), lines
    (folder / "step_20.pt").write_bytes(data)  # the job came back and wrote it whole
    result = sweep(watched(tmp_path, watch_timeout=1.0, watch_settle=0.2, resume=True))
    episodes = [r for r in read_records(tmp_path / "sw") if r["kind"] == "episode"]
    assert len(episodes) == 2 and {r["checkpoint_sha256"] for r in episodes} == {hashlib.sha256(data).hexdigest()}
    info = json.loads((tmp_path / "sw" / "eval_info.json").read_text())
    assert [e["step"] for e in info["per_checkpoint"]] == [20]  # one point for the step, of its two episodes
    assert result.cells == 1 and result.cells_failed == 0


def test_a_resumed_watch_logs_what_the_logger_lacks_once_in_training_step_order(tmp_path):
    folder = tmp_path / "ckpts"
    folder.mkdir()
    sweepenv.write_checkpoints(folder, steps=(20,))
    # a session without the logger (or killed between a cell's last episode and its logging): step 20 is in
    # episodes.jsonl, and no logger has it
    sweep(watched(tmp_path, watch_timeout=0.5))
    sweepenv.write_checkpoints(folder, steps=(10,))  # an earlier step, written meanwhile
    logged = watched(tmp_path, watch_timeout=0.5, resume=True, base={**TINY, "logger": "csv"})
    sweep(logged)
    scalars = csv_scalars(tmp_path / "sw" / "logs" / "sw")
    # step 20 (complete at the start) waited for step 10: the curve is logged left to right, each point once
    assert [step for step, _ in scalars["eval/avg_sum_reward"]] == [10, 20]
    sweep(logged)  # once more: the ledger has both, nothing is logged twice
    assert [step for step, _ in csv_scalars(tmp_path / "sw" / "logs" / "sw")["eval/avg_sum_reward"]] == [10, 20]
    ledger = [r["cell"] for r in read_records(tmp_path / "sw") if r["kind"] == "logged"]
    assert len(ledger) == 2 == len(set(ledger))


@pytest.mark.parametrize("logger", ["csv", "tensorboard"])
def test_a_cell_the_logger_holds_but_the_ledger_lacks_is_not_logged_twice(tmp_path, logger):
    # kill -9 after the logger wrote a cell, before the ledger's line: the resume reads the logger's own files
    # and logs only what they lack (here: all of step 20's numbers there, and for CSV one scalar's point lost)
    if logger == "tensorboard":
        pytest.importorskip("tensorboard", reason="needs the loggers extra (make test-min goes without it)")
    from helpers.trackers import tensorboard_scalars

    folder = tmp_path / "ckpts"
    folder.mkdir()
    sweepenv.write_checkpoints(folder, steps=(10, 20))
    config = watched(tmp_path, watch_timeout=0.5, base={**TINY, "logger": logger})
    sweep(config)
    records = tmp_path / "sw" / "episodes.jsonl"
    last = read_records(tmp_path / "sw")[-1]
    assert last["kind"] == "logged"   # step 20's cell, logged last
    records.write_text("".join(line for line in records.read_text().splitlines(keepends=True)
                               if json.loads(line) != {**last, "time": json.loads(line).get("time")}))
    logs = tmp_path / "sw" / "logs" / "sw"
    if logger == "csv":
        lost = logs / "scalars" / "eval" / "avg_length.csv"
        lost.write_text("".join(line for line in lost.read_text().splitlines(keepends=True)
                                if not line.startswith("20,")))
    sweep(watched(tmp_path, watch_timeout=0.5, resume=True, base={**TINY, "logger": logger}))
    scalars = csv_scalars(logs) if logger == "csv" else tensorboard_scalars(logs)[0]
    for name, points in scalars.items():
        assert [step for step, _ in points] == [10, 20], name   # each point once, the lost one written again
    ledger = [r["cell"] for r in read_records(tmp_path / "sw") if r["kind"] == "logged"]
    assert len(ledger) == 2 == len(set(ledger))


def test_a_file_deleted_while_awaiting_its_retry_does_not_keep_the_watch_busy(tmp_path):
    from torchrl_render.sweep.watch import Watcher

    (tmp_path / "ckpt_5.pt").write_bytes(b"PK\x03\x04 half")
    os.utime(tmp_path / "ckpt_5.pt", (time.time() - 10, time.time() - 10))  # settled already
    watcher = Watcher({"default": [f"{tmp_path}/*.pt"]}, known=set(), settle_s=0.1)
    assert watcher.poll() == ([], []) and watcher.retrying()  # failed once: its next try is due
    (tmp_path / "ckpt_5.pt").unlink()  # the training run removed it
    assert watcher.poll() == ([], []) and not watcher.retrying()  # nothing left to wait for: the watch can idle
