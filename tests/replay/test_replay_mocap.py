"""Mocap bodies in saved rollouts: recorded beside qpos and used by the replay (html and video)."""

from __future__ import annotations

import numpy as np
import pytest

from torchrl_render import RenderConfig, render_policy
from torchrl_render.cli.rebuild import replay_rollouts
from torchrl_render.envs.mujoco_state import episode_mocap, episode_states

from helpers.htmlread import episode_arrays
from helpers.mocap_env import MOCAP_XML


@pytest.mark.slow
def test_replay_from_rollouts_draws_the_mocap_body_where_the_run_had_it(tmp_path):
    import mujoco

    out = tmp_path / "live.html"
    result = render_policy(RenderConfig(policy="helpers.policies:linear_policy", env="helpers.mocap_env:make_env",
                                        max_steps=20, out=str(out), save_rollout=True, mujoco_qpos_key="qpos"))
    td = result.trajectories[0]
    mocap = episode_mocap(td, "qpos")
    assert sorted(mocap) == ["mocap_pos", "mocap_quat"] and mocap["mocap_pos"].shape == (21, 3)
    np.testing.assert_allclose(mocap["mocap_pos"][20], [0.7, 0.1, 0.5], atol=1e-9)
    xml = tmp_path / "mocap.xml"
    xml.write_text(MOCAP_XML)
    again = replay_rollouts(tmp_path / "live_rollouts", xml, tmp_path / "replay.html")[0].path
    model = mujoco.MjModel.from_xml_string(MOCAP_XML)
    target = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "target")
    live, replay = episode_arrays(out)[0], episode_arrays(again)[0]
    np.testing.assert_array_equal(live["xpos"], replay["xpos"])
    np.testing.assert_array_equal(live["xquat"], replay["xquat"])
    np.testing.assert_allclose(replay["xpos"][:, target], mocap["mocap_pos"], atol=1e-6)  # not 0.1 m off
    data = mujoco.MjData(model)  # MuJoCo itself, from the recorded state
    states = episode_states(td, "qpos")
    data.qpos[:], data.mocap_pos[:], data.mocap_quat[:] = states[15], mocap["mocap_pos"][15], mocap["mocap_quat"][15]
    mujoco.mj_kinematics(model, data)
    np.testing.assert_allclose(replay["xpos"][15], data.xpos, atol=1e-6)


@pytest.mark.slow
def test_video_replay_poses_the_mocap_body_too(tmp_path):
    import mujoco

    from torchrl_render.cli.rebuild import _Drawer

    model = mujoco.MjModel.from_xml_string(MOCAP_XML)
    cfg = RenderConfig(policy="(replay)", env="x", out=tmp_path / "r.mp4", width=64, height=64)
    drawer = _Drawer(model, cfg, ["-1"])
    try:
        still = next(iter(drawer.frames({"qpos": model.qpos0}).values())).copy()
        moved = drawer.frames({"qpos": model.qpos0, "mocap_pos": np.array([[0.2, 0.2, 0.3]]),
                               "mocap_quat": np.array([[1.0, 0, 0, 0]])})
        assert drawer.data.mocap_pos[0].tolist() == [0.2, 0.2, 0.3]
        assert np.abs(still.astype(int) - next(iter(moved.values()))).max() > 0
    finally:
        drawer.close()
