"""``replay`` without ``--mujoco-model-path``: the model file the run recorded (sidecar and index.json)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from torchrl_render import RenderConfig, render_policy
from torchrl_render.cli import main

from helpers.htmlread import episode_arrays


def gymnasium_asset(name: str) -> Path:
    import gymnasium

    return Path(os.path.dirname(gymnasium.__file__)) / "envs" / "mujoco" / "assets" / name


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """An InvertedPendulum json run (no frames) that saves its rollouts with qpos."""
    folder = tmp_path_factory.mktemp("run")
    render_policy(RenderConfig(policy="helpers.policies:linear_policy", env="InvertedPendulum-v5", num_trajs=2,
                               max_steps=6, out=str(folder / "eval.json"), save_rollout=True,
                               mujoco_qpos_key="qpos"))
    return folder


def test_the_sidecar_and_the_rollouts_record_the_gymnasium_model_file(run):
    expected = str(gymnasium_asset("inverted_pendulum.xml").resolve())
    meta = json.loads((run / "eval.json.metadata.json").read_text())
    assert meta["env_info"]["mujoco_model_path"] == expected
    index = json.loads((run / "eval_rollouts" / "index.json").read_text())
    assert index["mujoco_model_path"] == expected
    assert index["metadata"] == str((run / "eval.json.metadata.json").absolute())


def test_replay_finds_the_model_in_the_index(run, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["replay", str(run / "eval_rollouts"), "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    given = tmp_path / "given.html"
    assert main(["replay", str(run / "eval_rollouts"), "--mujoco-model-path",
                 str(gymnasium_asset("inverted_pendulum.xml")), "--out", str(given)]) == 0
    found, named = episode_arrays(out), episode_arrays(given)
    assert sorted(found) == [0, 1]
    for ep in found:
        np.testing.assert_array_equal(found[ep]["xpos"], named[ep]["xpos"])


def test_replay_finds_the_model_in_the_sidecar_beside_the_folder(run, tmp_path, capsys):
    """A rollout folder whose index.json names no model (written by hand, or copied without it): the
    sidecar beside it that lists the folder among its artifacts says which model."""
    import shutil

    copy = tmp_path / "eval_rollouts"
    shutil.copytree(run / "eval_rollouts", copy)
    index = json.loads((copy / "index.json").read_text())
    del index["mujoco_model_path"], index["metadata"]
    (copy / "index.json").write_text(json.dumps(index))
    meta = json.loads((run / "eval.json.metadata.json").read_text())
    for artifact in meta["artifacts"]:
        if artifact["format"] == "tensordict":
            artifact["path"] = str(copy)
    (tmp_path / "eval.json.metadata.json").write_text(json.dumps(meta))
    assert main(["replay", str(copy), "--out", str(tmp_path / "r.html")]) == 0
    assert sorted(episode_arrays(tmp_path / "r.html")) == [0, 1]


@pytest.mark.parametrize("case", ["unrecorded", "moved"])
def test_without_a_recorded_model_the_error_says_to_pass_it(run, tmp_path, capsys, case):
    import shutil

    copy = tmp_path / "in" / "eval_rollouts"
    shutil.copytree(run / "eval_rollouts", copy)
    index = json.loads((copy / "index.json").read_text())
    index.pop("metadata")
    index["mujoco_model_path"] = None if case == "unrecorded" else str(tmp_path / "gone" / "model.xml")
    (copy / "index.json").write_text(json.dumps(index))
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(SystemExit) as exc:
        main(["replay", str(copy), "--out", str(out / "r.html")])
    err = " ".join(capsys.readouterr().err.split())
    assert exc.value.code == 2
    if case == "unrecorded":
        assert f"torchrl-render replay: error: no --mujoco-model-path, and the run of {str(copy)!r} recorded no " \
               "MuJoCo model file (gymnasium MuJoCo envs record theirs; dm_control builds its models from " \
               "strings)" in err
    else:
        assert f"recorded the model file {str(tmp_path / 'gone' / 'model.xml')!r}, which is not on this machine" in err
    assert "Fix: pass the model file with --mujoco-model-path" in err
    assert list(out.iterdir()) == []


def test_dm_control_records_no_model_file():
    from torchrl_render.envs.unwrap import model_file

    from helpers.real_envs import close_env, dm_env, gym_env

    env = dm_env()
    assert model_file(env) is None
    close_env(env)
    env = gym_env("HalfCheetah-v5")
    assert model_file(env) == str(gymnasium_asset("half_cheetah.xml").resolve())
    close_env(env)
