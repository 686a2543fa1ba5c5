"""Replays from saved rollouts: model file + recorded qpos -> html/mp4/gif/frames, without policy or env."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from torchrl_render import RenderConfig, render_policy
from torchrl_render.cli import main
from torchrl_render.cli.rebuild import replay_rollouts
from torchrl_render.envs.mujoco_state import MujocoStateReader, extract_qpos_trajectory

from helpers.htmlread import episode_arrays
from helpers.mediaprobe import gif_frames, probe_mp4


def cheetah_xml() -> Path:
    import gymnasium

    return Path(os.path.dirname(gymnasium.__file__)) / "envs" / "mujoco" / "assets" / "half_cheetah.xml"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A live HalfCheetah html run that saves its rollouts with qpos."""
    folder = tmp_path_factory.mktemp("run")
    result = render_policy(RenderConfig(policy="helpers.policies:linear_policy", env="HalfCheetah-v5", num_trajs=2,
                                        max_steps=25,
                                        out=str(folder / "live.html"), save_rollout=True, mujoco_qpos_key="qpos"))
    return folder, result


def test_html_replay_equals_the_live_run(run, capsys):
    folder, _result = run
    code = main(["replay", str(folder / "live_rollouts"), "--mujoco-model-path", str(cheetah_xml()),
                 "--out", str(folder / "replay.html")])
    assert code == 0 and capsys.readouterr().out.strip() == str(folder / "replay.html")
    live, replay = episode_arrays(folder / "live.html"), episode_arrays(folder / "replay.html")
    assert sorted(live) == sorted(replay) == [0, 1]
    for ep in live:
        assert live[ep]["xpos"].shape[0] == 26
        for key in ("xpos", "xquat", "reward", "return"):
            np.testing.assert_array_equal(live[ep][key], replay[ep][key])


@pytest.mark.slow
def test_video_and_frames_replays(run, tmp_path):
    folder, _ = run
    arts = replay_rollouts(folder / "live_rollouts", cheetah_xml(), tmp_path / "r.mp4", width=96, height=64)
    assert probe_mp4(arts[0].path)["frames"] == 2 * 26
    arts = replay_rollouts(folder / "live_rollouts", cheetah_xml(), tmp_path / "r.gif", width=32, height=32)
    assert gif_frames(arts[0].path) == 2 * 26
    arts = replay_rollouts(folder / "live_rollouts", cheetah_xml(), tmp_path / "frames", width=32, height=32)
    assert len(list((tmp_path / "frames").glob("*.png"))) == 2 * 26


def test_extract_qpos_trajectory_and_state_reader(run):
    _, result = run
    traj = result.trajectories[0]
    qpos = extract_qpos_trajectory(traj, "qpos")
    assert len(qpos) == 25 and len(qpos[0]) == 9
    assert extract_qpos_trajectory(traj, "next.qpos")[0] == qpos[1]
    from helpers.real_envs import close_env, dm_env, gym_env

    for env in (gym_env("HalfCheetah-v5"), dm_env()):
        env.reset()
        reader = MujocoStateReader()
        assert reader.supports(env)
        state = reader.capture(env)
        model = reader.model(env)
        assert state["qpos"].shape == (model.nq,) and state["qvel"].shape == (model.nv,)
        close_env(env)
    assert not MujocoStateReader().supports(object())


@pytest.mark.parametrize("args, message", [
    (["--mujoco-model-path", "missing.xml"], "the MuJoCo model file 'missing.xml' does not exist"),
    (["--mujoco-qpos-key", "nope"], "rollout 0 holds no MuJoCo qpos under 'nope'"),
    (["--out", "x.npz"], "a replay from saved rollouts cannot write format 'npz'"),
])
def test_bad_replay_inputs(run, tmp_path, capsys, args, message):
    folder, _ = run
    base = {"--mujoco-model-path": str(cheetah_xml()), "--out": str(tmp_path / "r.html")}
    for flag, value in zip(args[::2], args[1::2]):
        base[flag] = value if flag != "--out" else str(tmp_path / value)
    argv = ["replay", str(folder / "live_rollouts")] + [x for kv in base.items() for x in kv]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_states_of_another_model_are_refused(run, tmp_path, capsys):
    import gymnasium

    folder, _ = run
    other = Path(os.path.dirname(gymnasium.__file__)) / "envs" / "mujoco" / "assets" / "inverted_pendulum.xml"
    with pytest.raises(SystemExit) as exc:
        main(["replay", str(folder / "live_rollouts"), "--mujoco-model-path", str(other),
              "--out", str(tmp_path / "r.html")])
    assert exc.value.code == 2
    assert "a saved MuJoCo state does not fit the model" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_asset_paths_feed_the_model_its_meshes(tmp_path, capsys):
    import mujoco
    import torch
    from tensordict import TensorDict

    from torchrl_render.storage import save_rollouts

    from helpers.htmlread import read_data
    from helpers.replay import mujoco_xpos

    assets = tmp_path / "assets"
    assets.mkdir()
    (assets / "tet.obj").write_text("v 0 0 0\nv .3 0 0\nv 0 .3 0\nv 0 0 .3\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n")
    xml = tmp_path / "model" / "m.xml"
    xml.parent.mkdir()
    xml.write_text('<mujoco><asset><mesh name="tet" file="tet.obj"/></asset><worldbody><body><freejoint/>'
                   '<geom type="mesh" mesh="tet"/></body></worldbody></mujoco>')
    qpos = torch.tensor([[0.0, 0, 1, 1, 0, 0, 0], [0.1, 0, 1.1, 1, 0, 0, 0], [0.2, 0, 1.2, 1, 0, 0, 0]])
    td = TensorDict({"qpos": qpos[:2], "next": {"qpos": qpos[1:], "reward": torch.ones(2, 1)}}, batch_size=[2])
    save_rollouts([td], tmp_path / "rollouts")
    base = ["replay", str(tmp_path / "rollouts"), "--mujoco-model-path", str(xml), "--out", str(tmp_path / "r.html")]
    with pytest.raises(SystemExit) as exc:
        main(base)
    err = capsys.readouterr().err  # the mesh is not beside the model
    assert exc.value.code == 2 and "names the file 'tet.obj', found neither beside the model" in err
    assert "folders searched: none (no --mujoco-asset-paths)" in err
    assert main([*base, "--mujoco-asset-paths", str(assets)]) == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    for more in ([str(empty), str(assets)], [f"{empty},{assets}"]):  # several values, or one comma list
        assert main([*base, "--overwrite", "--mujoco-asset-paths", *more]) == 0
    data = read_data(tmp_path / "r.html")
    assert data["scene"]["meshes"][0]["num_vertices"] == 4
    arrays = episode_arrays(tmp_path / "r.html")[0]
    model = mujoco.MjModel.from_xml_path(str(xml), {"tet.obj": (assets / "tet.obj").read_bytes()})
    for f in range(3):
        np.testing.assert_allclose(arrays["xpos"][f], mujoco_xpos(model, qpos[f].numpy()), atol=1e-6)
    np.testing.assert_array_equal(arrays["return"], [0.0, 1.0, 2.0])


TET_OBJ = "v 0 0 0\nv .3 0 0\nv 0 .3 0\nv 0 0 .3\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n"


@pytest.mark.slow
def test_asset_paths_given_a_parent_folder_find_the_models_relative_mesh_paths(tmp_path):
    """The model says meshdir="meshes" and file="arm/link.obj"; the folder given is two levels above the
    meshes, and another folder holds a different link.obj that must not be taken."""
    import mujoco

    from torchrl_render.envs.mujoco_state import load_model
    from torchrl_render.errors import ConfigError

    xml = tmp_path / "robot" / "scene.xml"
    xml.parent.mkdir()
    xml.write_text('<mujoco><compiler meshdir="meshes"/><asset><mesh name="link" file="arm/link.obj"/>'
                   '<mesh name="tet" file="tet.obj"/></asset><worldbody><body><freejoint/>'
                   '<geom type="mesh" mesh="link"/><geom type="mesh" mesh="tet" pos="1 0 0"/></body></worldbody>'
                   '</mujoco>')
    parent = tmp_path / "downloads"
    (parent / "robot_assets" / "meshes" / "arm").mkdir(parents=True)
    (parent / "robot_assets" / "meshes" / "arm" / "link.obj").write_text(TET_OBJ.replace(".3", ".5"))
    (parent / "robot_assets" / "meshes" / "tet.obj").write_text(TET_OBJ)
    (parent / "aaa_other" / "leg").mkdir(parents=True)
    (parent / "aaa_other" / "leg" / "link.obj").write_text(TET_OBJ.replace(".3", ".9"))
    model = load_model(xml, [parent])
    assert model.nmesh == 2
    meshes = parent / "robot_assets" / "meshes"
    expected = mujoco.MjModel.from_xml_path(str(xml), {"link.obj": (meshes / "arm" / "link.obj").read_bytes(),
                                                       "tet.obj": (meshes / "tet.obj").read_bytes()})
    np.testing.assert_array_equal(model.mesh_vert, expected.mesh_vert)  # arm/link.obj, not leg/link.obj
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError) as exc:
        load_model(xml, [empty, tmp_path / "robot"])
    text = str(exc.value)
    assert "names the file 'arm/link.obj'" in text and "'meshes/arm/link.obj'" in text
    assert f"folders searched: '{empty}', '{tmp_path / 'robot'}'" in text and "or a parent of it" in text


#: a bare model whose camera 0 is a head camera staring at a green wall, as Fetch's head camera
HEAD_CAMERA_XML = """
<mujoco>
  <worldbody>
    <light pos="0 0 3"/>
    <geom type="plane" size="2 2 .1" rgba=".4 .4 .4 1"/>
    <geom name="wall" type="box" pos="0 .3 .5" size="1 .02 1" rgba="0 1 0 1"/>
    <body name="robot" pos="0 0 .5">
      <joint type="hinge" axis="0 0 1"/>
      <geom type="box" size=".1 .1 .1" rgba=".8 .2 .2 1"/>
      <camera name="head" pos="0 .1 0" xyaxes="1 0 0 0 0 1"/>
    </body>
    <body name="mast" pos="2 0 1"><camera name="side" xyaxes="0 1 0 0 0 1"/></body>
  </worldbody>
</mujoco>
"""


@pytest.mark.slow
def test_video_replay_of_a_bare_model_films_the_free_camera_and_says_so(tmp_path, capsys):
    import mujoco
    import torch
    from PIL import Image
    from tensordict import TensorDict

    from torchrl_render.backends.mujoco import MujocoBackend
    from torchrl_render.storage import save_rollouts

    xml = tmp_path / "robot.xml"
    xml.write_text(HEAD_CAMERA_XML)
    qpos = torch.tensor([[0.0], [0.2], [0.4]], dtype=torch.float64)
    td = TensorDict({"qpos": qpos[:2], "next": {"qpos": qpos[1:], "reward": torch.ones(2, 1)}}, batch_size=[2])
    save_rollouts([td], tmp_path / "rollouts")
    out = tmp_path / "frames"
    assert main(["replay", str(tmp_path / "rollouts"), "--mujoco-model-path", str(xml), "--out", str(out),
                 "--format", "frames", "--width", "64", "--height", "48"]) == 0
    err = capsys.readouterr().err
    assert "filmed with MuJoCo's free camera framed on the model" in err and "'head', 'side'" in err
    first = np.asarray(Image.open(sorted(out.glob("*.png"))[0]).convert("RGB"))
    model = mujoco.MjModel.from_xml_string(HEAD_CAMERA_XML)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    views = {}
    for cam in ("-1", "head"):
        backend = MujocoBackend(model, data, [cam], width=64, height=48)
        try:
            views[cam] = np.asarray(next(iter(backend.capture(None).values()))).copy()
        finally:
            backend.close()
    np.testing.assert_array_equal(first, views["-1"])
    assert not np.array_equal(first, views["head"])
    green = views["head"][..., 1].astype(int) - views["head"][..., 0]
    assert (green > 100).mean() > 0.5  # the head camera sees the wall, which the replay does not film
