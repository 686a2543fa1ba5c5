"""The html writer without a browser: scene export, poses vs MuJoCo, streaming, atomic output, errors."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from torchrl_render import RenderConfig, render_policy
from torchrl_render.data import FrameBundle
from torchrl_render.errors import ConfigError, NoFramesError, WriterError
from torchrl_render.replay.poses import CHUNK_FRAMES
from torchrl_render.replay.scene import export_scene
from torchrl_render.writers import WRITERS
from torchrl_render.writers.html import HtmlWriter

from helpers.htmlread import episode_arrays, read_data
from helpers.replay import mesh_model, mujoco_xpos, random_states


def _write(path, model, states, episode=0):
    writer = HtmlWriter(path)
    for step, qpos in enumerate(states):
        writer.write(FrameBundle({}, step, episode, state={"model": model, "qpos": qpos},
                                 metrics={"reward": 1.0, "return": float(step)}))
    return writer


def test_registry_row_asks_for_states_not_frames():
    entry = WRITERS.entry("html")
    assert (entry.needs_frames, entry.needs_state) == (False, True)
    assert WRITERS.for_suffix("x.html") == "html"


def test_scene_export_of_a_model_with_meshes():
    model = mesh_model()
    scene = export_scene(model)
    types = [g["type"] for g in scene["geoms"]]
    assert types == ["plane", "mesh", "mesh", "capsule", "ellipsoid", "cylinder"]
    assert [b["name"] for b in scene["bodies"]] == ["world", "floater", "arm"]
    assert [m["num_vertices"] for m in scene["meshes"]] == [4, 8]
    floor = scene["materials"][scene["geoms"][0]["material"]]
    assert floor["texture"] == 0 and floor["texuniform"] and floor["texrepeat"] == [4.0, 4.0]
    capsule = scene["geoms"][3]
    assert capsule["size"][:2] == [pytest.approx(0.04), pytest.approx(0.15)]  # radius, half-length
    assert scene["follow_body"] == 1 and scene["lights"][0]["type"] == "spot"  # MuJoCo lights are spots by default


def test_poses_equal_mujoco_and_stream_in_chunks(tmp_path):
    model = mesh_model()
    n = CHUNK_FRAMES * 2 + 5
    states = random_states(model, n, seed=1)
    writer = _write(tmp_path / "r.html", model, states)
    poses_file = writer._chunks_path
    assert len(writer._encoder) == 5  # only the open chunk is held in memory
    assert len(poses_file.read_text().splitlines()) == 2  # two full chunks already on disk
    assert not (tmp_path / "r.html").exists()
    artifact = writer.close()
    assert artifact.num_frames == n and not poses_file.exists()
    arrays = episode_arrays(tmp_path / "r.html")[0]
    assert arrays["xpos"].shape == (n, model.nbody, 3)
    for f in (0, 300, n - 1):
        np.testing.assert_allclose(arrays["xpos"][f], mujoco_xpos(model, states[f]), atol=1e-5, rtol=1e-6)
        data = mujoco.MjData(model)
        data.qpos[:] = states[f]
        mujoco.mj_kinematics(model, data)
        np.testing.assert_allclose(arrays["xquat"][f], data.xquat, atol=1e-4)
    np.testing.assert_array_equal(arrays["return"], np.arange(n, dtype=np.float32))


def test_page_is_self_contained(tmp_path):
    model = mesh_model()
    _write(tmp_path / "r.html", model, random_states(model, 3)).close()
    text = (tmp_path / "r.html").read_text()
    assert "Content-Security-Policy\" content=\"default-src 'none'" in text
    assert "<link" not in text and " src=" not in text.replace("srcdoc", "")
    assert read_data(tmp_path / "r.html")["head"]["nbody"] == 3


def test_abort_leaves_nothing(tmp_path):
    model = mesh_model()
    writer = _write(tmp_path / "r.html", model, random_states(model, 3))
    writer.abort()
    assert list(tmp_path.iterdir()) == []


def test_bundle_without_state_is_refused(tmp_path):
    with (pytest.raises(WriterError, match="the html format needs MuJoCo states, and a frame came without one"),
          HtmlWriter(tmp_path / "r.html") as writer):
        writer.write(FrameBundle({"default": np.zeros((2, 2, 3), np.uint8)}, 0, 0))
    assert list(tmp_path.iterdir()) == []


def test_no_frame_at_all(tmp_path):
    with pytest.raises(NoFramesError, match="no frames were rendered"):
        HtmlWriter(tmp_path / "r.html").close()


def test_env_without_mujoco_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="the html format, the notebook.s 3-D viewer and mujoco_qpos_key need a "
                                          "MuJoCo model, and this env has none"):
        render_policy(RenderConfig(policy="helpers.policies:linear_policy", env="MountainCarContinuous-v0", max_steps=3,
                                   out=str(tmp_path / "r.html")))
    assert not (tmp_path / "r.html").exists()


def test_several_envs_on_the_gymnasium_path_give_the_one_env_page(tmp_path):
    """Rendered episodes run on the run's own env whatever --num-envs is: the page holds the same states."""
    common = dict(policy="helpers.policies:linear_policy", env="InvertedPendulum-v5", max_steps=5, num_trajs=3, seed=2,
                  mujoco_qpos_key="qpos", max_episodes_rendered=2, policy_batch="per-env")
    one = render_policy(RenderConfig(out=str(tmp_path / "one.html"), **common))
    two = render_policy(RenderConfig(out=str(tmp_path / "two.html"), num_envs=2, env_batch_mode="serial", **common))
    assert one.artifacts[0].num_frames == two.artifacts[0].num_frames == 12
    for a, b in zip(one.trajectories, two.trajectories):
        assert (a["qpos"] == b["qpos"]).all() and (a["next", "qpos"] == b["next", "qpos"]).all()


def test_envs_in_torchrl_workers_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="with --num-envs > 1 the envs live in worker processes"):
        render_policy(RenderConfig(policy="helpers.policies:linear_policy",
                                   env="helpers.torchrl_toys:torchrl_pendulum", max_steps=3,
                                   num_trajs=2, num_envs=2, env_batch_mode="serial", out=str(tmp_path / "r.html")))
    assert not (tmp_path / "r.html").exists()


def test_live_run_records_qpos_and_writes_poses_of_those_states(tmp_path):
    import gymnasium

    result = render_policy(RenderConfig(policy="helpers.policies:linear_policy", env="InvertedPendulum-v5",
                                        max_steps=12,
                                        num_trajs=2, seed=3, out=str(tmp_path / "r.html"),
                                        mujoco_qpos_key=("next", "qpos")))
    model = gymnasium.make("InvertedPendulum-v5").unwrapped.model
    arrays = episode_arrays(tmp_path / "r.html")
    for ep, traj in enumerate(result.trajectories):
        after = traj.get(("next", "qpos")).numpy()
        assert np.array_equal(traj.get("qpos")[1:].numpy(), after[:-1])  # the state before = the last one after
        assert arrays[ep]["xpos"].shape[0] == traj.shape[0] + 1
        for f in range(traj.shape[0]):
            np.testing.assert_allclose(arrays[ep]["xpos"][f + 1], mujoco_xpos(model, after[f]), atol=1e-5)
        rewards = traj.get(("next", "reward")).numpy().ravel()
        np.testing.assert_allclose(arrays[ep]["reward"][1:], rewards, rtol=1e-6)
    # the recorded qpos is the env's state: InvertedPendulum observes (qpos, qvel)
    traj = result.trajectories[0]
    np.testing.assert_allclose(traj.get("qpos").numpy(), traj.get("observation")[:, :2].numpy(), rtol=1e-6)
    np.testing.assert_allclose(traj.get(("next", "qpos")).numpy(), traj.get(("next", "observation"))[:, :2].numpy(),
                               rtol=1e-6)
    assert result.metrics["per_episode"][0]["num_frames"] == result.trajectories[0].shape[0] + 1


def test_env_raising_mid_run_leaves_partial_metrics_only(tmp_path, capsys):
    import json

    from helpers.clicode import exit_code

    out = tmp_path / "run.html"
    code = exit_code(["--policy", "helpers.policies:linear_policy", "--env", "helpers.replay:failing_pendulum",
                      "--num-trajs", "4",
                 "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "the env raised at step 3 of episode 2: RuntimeError: pendulum exploded at t=3" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.html.partial.json"]
    episodes = json.loads((tmp_path / "run.html.partial.json").read_text())["metrics"]["per_episode"]
    assert [e["episode_ix"] for e in episodes] == [0, 1]


def test_only_hidden_temporary_names_before_the_end(tmp_path):
    from helpers import replay as replaycase

    render_policy(RenderConfig(policy="helpers.replay:watching_pendulum_policy",
                               policy_kwargs={"folder": str(tmp_path)},
                               env="InvertedPendulum-v5", num_trajs=2, max_steps=30, out=str(tmp_path / "run.html")))
    seen = replaycase.WATCHED.pop(str(tmp_path))
    assert seen and all(name.startswith(".") for listing in seen for name in listing), seen[-1]
    assert any(listing for listing in seen)  # the temporary page and its pose file are there while running
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.html", "run.html.metadata.json"]


def test_the_cli_writes_a_replay(tmp_path, capsys):
    from torchrl_render.cli import main

    out = tmp_path / "replay.html"
    assert main(["--policy", "helpers.policies:linear_policy", "--env", "InvertedPendulum-v5", "--num-trajs", "2",
                 "--max-steps",
                 "5", "--out", str(out), "--quiet"]) == 0
    assert capsys.readouterr().out.splitlines() == [str(out)]
    data = read_data(out)
    assert [(e["episode_ix"], e["frames"], e["seed"], e["length"]) for e in data["episodes"]] == [(0, 6, 0, 5),
                                                                                                  (1, 6, 1, 5)]
