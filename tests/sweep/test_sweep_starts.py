"""What a sweep user hit at the start: a spawn mistake, a grid whose every cell fails, a misspelled
gymnasium id, mangled cell ids, a report that says ``success -%``, a Ray cluster that refuses the token.

Real script files run by a real interpreter (the spawn mistake needs a ``__main__`` file), a real
token-authenticated Ray cluster (conftest.py's fixture), the report read back.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_sweep_faults import ENV, start_driver

from torchrl_render import SweepConfig
from torchrl_render.errors import ConfigError
from torchrl_render.sweep.grid import expand_cells
from torchrl_render.sweep.html import success_table, write_html

from helpers import sweep_envs as sweepenv
from helpers.clicode import exit_code
from helpers.paths import ROOT


def run_script(tmp: Path, body: str) -> subprocess.CompletedProcess:
    script = tmp / "my_sweep.py"
    script.write_text(textwrap.dedent(body))
    return subprocess.run([sys.executable, str(script)], cwd=tmp, env=ENV, capture_output=True, text=True,
                          timeout=300)




@pytest.mark.slow
def test_a_script_without_the_main_guard_gets_one_error_naming_it(tmp_path):
    sweepenv.write_checkpoints(tmp_path, steps=(10, 20))
    proc = run_script(tmp_path, """\
        from torchrl_render import sweep

        result = sweep(ckpt=["ckpt_*.pt"], env=["tiny=helpers.tinyenv:make_env"], policy="helpers.tinyenv:make_policy",
                       num_trajs=2, max_episodes_rendered=0, workers=2, report=False, out="sw")
        print(result.cells_done)
        """)
    assert proc.returncode == 1
    err = proc.stderr
    assert "WorkerStartError: the sweep's worker process died while starting, before it ran any cell" in err
    assert 'if __name__ == "__main__": sweep(...)' in err and "my_sweep.py" in err
    assert "already holds a sweep" in err  # what the worker hit, quoted once in the error
    assert err.count("Traceback") == 1 and len(err.splitlines()) < 40, err  # one error, not the workers' tracebacks
    assert not (tmp_path / "sw").exists()  # it never started: nothing left, the fixed script runs as it is
    fixed = (tmp_path / "my_sweep.py").read_text().replace("result = sweep(", "if __name__ == '__main__':\n"
                                                              "    result = sweep(")
    fixed = fixed.replace("                   num_trajs", "                       num_trajs").replace(
        "print(result", "    print(result")
    (tmp_path / "my_sweep.py").write_text(fixed)
    proc = subprocess.run([sys.executable, "my_sweep.py"], cwd=tmp_path, env=ENV, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "2", proc.stderr


@pytest.mark.slow
def test_a_python_sweep_whose_every_cell_failed_raises(tmp_path):
    sweepenv.write_checkpoints(tmp_path, steps=(10, 20))
    proc = run_script(tmp_path, """\
        from torchrl_render import sweep

        if __name__ == "__main__":
            result = sweep(ckpt=["ckpt_*.pt"], env=["bad=helpers.sweep_envs:make_broken_env"],
                           policy="helpers.tinyenv:make_policy", num_trajs=2, workers=1, report=False, out="sw")
            print(result.eval_info, result.cells_done, result.cells)
        """)
    assert proc.returncode == 1 and "None 0" not in proc.stdout
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("torchrl_render.sweep.driver.SweepFailedError: every cell of the sweep failed (2 cells)")
    assert "RuntimeError: this task's simulator is not installed" in last and "--resume" in last
    # the CLI: the failed-cells exit code and the same paragraph
    code = exit_code(["sweep", "--ckpt", f"{tmp_path}/ckpt_*.pt", "--env", "bad=helpers.sweep_envs:make_broken_env",
                 "--policy", "helpers.tinyenv:make_policy", "--num-trajs", "2", "--workers", "1", "--no-report",
                 "--out", str(tmp_path / "sw2")])
    assert code == 3


def test_a_misspelled_gymnasium_id_is_refused_before_anything_runs(tmp_path, capsys):
    ckpt = str(ROOT / "examples/inverted_pendulum/policy.pt")
    with pytest.raises(ConfigError, match=r"'HalfCheetah-v' is neither .* Did you mean 'HalfCheetah-v5'\?"):
        SweepConfig(ckpt=[ckpt], env=["InvertedPendulum-v5", "HalfCheetah-v"], base={"policy": "m:p"})
    code = exit_code(["sweep", "--ckpt", ckpt, "--env", "cheetah=HalfCheetah-v", "--policy", "m:p",
                 "--out", str(tmp_path / "sw")])
    err = capsys.readouterr().err
    assert code == 2 and "(task 'cheetah')" in err and "Did you mean 'HalfCheetah-v5'?" in err
    assert not (tmp_path / "sw").exists()


def test_cell_ids_are_short_and_readable(tmp_path):
    ckpts = sweepenv.write_checkpoints(tmp_path, steps=(1000,))
    (tmp_path / "other").mkdir()
    for folder in (tmp_path, tmp_path / "other"):
        (folder / "hproj.py").write_text("from helpers.tinyenv import make_env as make_corridor_env\n")
    cfg = SweepConfig(ckpt=[str(ckpts[0])], run={"seed1": [str(ckpts[0])]},
                      env=[f"{tmp_path}/hproj.py:make_corridor_env", f"{tmp_path}/other/hproj.py:make_corridor_env",
                           "InvertedPendulum-v5"], base={"policy": "helpers.tinyenv:make_policy"})
    ids = [c.id for c in expand_cells(cfg)]
    assert len(set(ids)) == 6 and all(len(i) < 64 and "/" not in i and str(tmp_path.name) not in i for i in ids)
    assert ids[0].startswith("ckpt_1000-") and ids[0].endswith("__make_corridor_env"), ids
    assert ids[2].endswith("__InvertedPendulum-v5") and ids[3].startswith("seed1__ckpt_1000-"), ids


def test_the_report_says_when_no_env_reports_success_and_what_the_band_is(tmp_path):
    cell = {"status": "done", "n_episodes": 4, "pc_success": None, "avg_sum_reward": 2.0,
            "ci95_sum_reward": [1.0, 3.0], "iqm_sum_reward": None}
    info = {"curves": {}, "progress": {"done": 1, "cells": 1, "failed": 0, "episodes": 4, "episodes_total": 4},
            "overall": {"avg_sum_reward": 2.0, "pc_success": None}, "per_task": [{"task": "t"}], "failures": {},
            "per_checkpoint": [{"run": "default", "checkpoint": "a.pt", "step": 1,
                                "per_task": {"t": {**cell, "video_paths": []}}}]}
    page = write_html(tmp_path, info).read_text()
    assert "success -%" not in page and "-%" not in page
    assert "success not reported (no env gives a success signal)" in page and "no success signal / 2.00" in page
    assert "mean return &plusmn; 95% CI" in success_table(info) and "&plusmn; 1.00" in page


@pytest.mark.slow
@pytest.mark.xdist_group("ray")
def test_a_cluster_that_refuses_the_token_is_named_and_leaves_nothing(tmp_path, ray_cluster):
    sweepenv.write_checkpoints(tmp_path, steps=(10,))
    address, _ = ray_cluster
    # no token given: not the cluster's. Ray retries a refused connection 20 times, a second apart, before it
    # raises; 3 retries print the same InvalidAuthToken lines the message is built from
    driver = start_driver(tmp_path, "--executor", "ray", "--ray-address", address, step_s="0",
                          env={"HOME": str(tmp_path), "RAY_NUM_REDIS_GET_RETRIES": "3"})
    _, err = driver.communicate(timeout=180)
    assert driver.returncode == 2, err
    last = err.strip().splitlines()[-1]
    assert "refused this process's authentication token (InvalidAuthToken)" in last
    assert "RAY_AUTH_TOKEN_PATH=<the token file the cluster was started with>" in last
    assert "could not connect" not in last
    assert not (tmp_path / "sw").exists()  # nothing ran: the same command, with the token, is not refused
    driver = start_driver(tmp_path, "--executor", "ray", "--ray-address", address, step_s="0", env=ray_cluster[1])
    _, err = driver.communicate(timeout=180)
    assert driver.returncode == 0, err


def test_a_config_files_return_bounds_text_reaches_the_cells_the_rule_and_separate_as_lo_hi(tmp_path):
    # RenderConfig takes "0, 100" from a config file; the sweep keeps base as given and once handed the text on
    # to --separate's pair (list("0, 100") is characters) and to the precision rule
    from torchrl_render.sweep.grid import Cell
    from torchrl_render.sweep.precision import rule
    from torchrl_render.sweep.separate import spec_of

    ckpts = sweepenv.write_checkpoints(tmp_path, steps=(1000, 2000))
    cfg = SweepConfig(ckpt=[str(c) for c in ckpts], env=["Pendulum-v1"], separate=[str(c) for c in ckpts],
                      base={"policy": "m:p", "precision": "return:5", "return_bounds": "0, 100", "num_trajs": 50})
    assert cfg.base["return_bounds"] == [0.0, 100.0]
    cells = [c.to_dict() for c in expand_cells(cfg)]
    assert spec_of(cfg.to_dict(), cells)["bounds"] == [0.0, 100.0]
    assert rule(cfg.base, Cell(**cells[0])).entry()["bounds"] == [0.0, 100.0]
    with pytest.raises(ConfigError, match="return_bounds' LO must be below its HI"):
        SweepConfig(ckpt=[str(ckpts[0])], env=["Pendulum-v1"],
                    base={"policy": "m:p", "precision": "return:5", "return_bounds": "100 0"})
