"""Skins, height fields and cube/PNG textures on the replay page, checked against MuJoCo itself."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

from torchrl_render.data import FrameBundle
from torchrl_render.writers.html import HtmlWriter

from helpers.browser import needs_browser, open_page
from helpers.replay import dm_replay, random_states

pytestmark = needs_browser


def _write(path, model, states, mocap=None):
    with HtmlWriter(path) as writer:
        for step, qpos in enumerate(states):
            writer.write(FrameBundle({}, step, 0, state={"model": model, "qpos": qpos}))
        writer.on_episode({"episode_ix": 0, "seed": 0, "sum_reward": 0.0, "length": len(states) - 1,
                           "success": None})
    return writer


def _mujoco_skin(model, qpos):
    """MuJoCo's own skinned vertices (mjv_updateScene fills them, as its visualiser draws them)."""
    import mujoco

    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    mujoco.mj_forward(model, data)
    scene = mujoco.MjvScene(model, maxgeom=10000)
    mujoco.mjv_updateScene(model, data, mujoco.MjvOption(), None, mujoco.MjvCamera(), mujoco.mjtCatBit.mjCAT_ALL,
                           scene)
    return np.array(scene.skinvert[:3 * int(scene.skinvertnum[0])], dtype=np.float64).reshape(-1, 3)


@pytest.fixture(scope="module")
def dog(tmp_path_factory):
    return dm_replay(tmp_path_factory.mktemp("dog"), "dog-walk", 40)


@pytest.mark.slow
def test_the_dogs_skin_is_drawn_where_mujoco_skins_it(dog):
    out, result, model, states = dog
    with open_page(out) as (page, _):
        for frame in (0, 40):
            drawn = np.array(page.js(f"replay.seek({frame}, 0), replay.drawnVertices('skin', 0)")).reshape(-1, 3)
            expected = _mujoco_skin(model, states[frame])
            assert drawn.shape == expected.shape == (24065, 3)
            # the page's bone orientations are int16 (about 3e-5 rad): a few tenths of a millimetre on the dog
            np.testing.assert_allclose(drawn, expected, atol=2e-3)
        assert page.js("replay.drawn()")["skins"] == {"model": 1, "drawn": 1}
        assert page.errors == [] and page.blocked == []
    meta = json.loads(Path(f"{out}.metadata.json").read_text())
    entry = next(a for a in meta["artifacts"] if a["format"] == "html")["replay"]
    assert entry["skins"]["drawn"] == 1 and entry["textures"]["model"] == 4
    assert any("skybox texture 'skybox'" in line for line in entry["not_drawn"])
    assert not any("does not draw" in n for n in result.warnings)  # a skybox alone is no reason for a note


HFIELD_XML = """
<mujoco>
  <asset><hfield name="terrain" nrow="9" ncol="13" size="2 1.5 .4 .1"/></asset>
  <worldbody>
    <geom name="ground" type="hfield" hfield="terrain" pos=".3 -.2 .05" euler="0 0 20" rgba=".4 .6 .3 1"/>
    <body pos="0 0 2"><freejoint/><geom type="sphere" size=".1" contype="0" conaffinity="0"/></body>
  </worldbody>
</mujoco>
"""


@pytest.mark.slow
def test_a_height_field_is_drawn_at_the_heights_mujoco_collides_with(tmp_path):
    import mujoco

    model = mujoco.MjModel.from_xml_string(HFIELD_XML)
    rng = np.random.default_rng(0)
    model.hfield_data[:] = rng.uniform(0, 1, model.hfield_data.shape)
    _write(tmp_path / "hf.html", model, random_states(model, 2))
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    with open_page(tmp_path / "hf.html") as (page, _):
        verts = np.array(page.js("replay.drawnVertices('hfield', 0)")).reshape(-1, 3)
        assert page.js("replay.drawn()")["hfields"] == {"model": 1, "drawn": 1} and page.errors == []
    assert verts.shape == (9 * 13, 3)
    geomgroup = np.zeros(6, np.uint8)
    geomgroup[0] = 1
    interior = verts.reshape(9, 13, 3)[1:-1, 1:-1].reshape(-1, 3)  # a ray along the border may miss it
    for x, y, z in interior[::5]:  # MuJoCo's ray from above hits the surface at each drawn grid point
        hit = np.zeros(1, np.int32)
        dist = mujoco.mj_ray(model, data, np.array([x, y, 5.0]), np.array([0, 0, -1.0]), geomgroup, 1, -1, hit)
        assert hit[0] == 0 and abs((5.0 - dist) - z) < 1e-4


def _letter_png(path, letter, colour):
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (32, 32), colour)
    ImageDraw.Draw(img).text((1, 1), letter, fill=(255, 255, 255))  # in a corner: the centre keeps the colour
    img.save(path)


@pytest.mark.slow
def test_a_cube_texture_and_a_2d_texture_from_png_files_are_drawn(tmp_path):
    """A lettered cube as the Shadow hand's block: six PNG faces, one colour each; a camera in front of each
    face sees that face's colour."""
    import mujoco
    from PIL import Image

    colours = {"right": (200, 30, 30), "left": (30, 200, 30), "up": (30, 30, 200), "down": (200, 200, 30),
               "front": (200, 30, 200), "back": (30, 200, 200)}
    for face, colour in colours.items():
        _letter_png(tmp_path / f"{face}.png", face[0].upper(), colour)
    files = " ".join(f'file{face}="{face}.png"' for face in colours)
    _letter_png(tmp_path / "floor.png", "G", (90, 90, 90))  # a 2-D texture from a PNG file too
    xml = tmp_path / "cube.xml"
    xml.write_text(f'<mujoco><asset><texture name="letters" type="cube" {files}/>'
                   '<material name="block" texture="letters"/>'
                   '<texture name="grid" type="2d" file="floor.png"/>'
                   '<material name="floor" texture="grid" texrepeat="2 2"/></asset>'
                   '<worldbody><geom type="plane" size="3 3 .1" material="floor"/>'
                   '<body name="block" pos="0 0 1"><freejoint/><geom type="box" size=".3 .3 .3" material="block"/>'
                   '</body></worldbody></mujoco>')
    model = mujoco.MjModel.from_xml_path(str(xml))
    _write(tmp_path / "cube.html", model, [model.qpos0, model.qpos0])
    with open_page(tmp_path / "cube.html", width=400, height=400) as (page, top):
        assert page.js("replay.drawn()")["textures"] == {"model": 2, "drawn": 2}
        page.js("replay.setFollow(false)")
        seen = {}
        for face, direction in {"right": [1, 0, 0], "left": [-1, 0, 0], "front": [0, 0.01, 1]}.items():
            eye = (np.array([0, 0, 1.0]) + 1.5 * np.array(direction)).tolist()
            page.js("([eye]) => replay.setCamera(eye, [0, 0, 1])", [eye])
            shot = Image.open(io.BytesIO(top.locator("canvas").first.screenshot())).convert("RGB")
            seen[face] = np.asarray(shot, float)[shot.height // 2 - 3:shot.height // 2 + 3,
                                                 shot.width // 2 - 3:shot.width // 2 + 3].reshape(-1, 3).mean(0)
        assert page.errors == []
    for face, rgb in seen.items():
        want = np.array(colours[face], float)
        assert np.argmax(rgb) == np.argmax(want) or np.corrcoef(rgb, want)[0, 1] > 0.9, (face, rgb)


@pytest.mark.slow
def test_what_stays_undrawn_is_named_by_the_replay_command(tmp_path, capsys):
    import torch
    from tensordict import TensorDict

    from torchrl_render.cli import main
    from torchrl_render.storage import save_rollouts

    from helpers.htmlread import read_data

    xml = tmp_path / "ball.xml"
    xml.write_text('<mujoco><asset><texture name="ball" type="cube" builtin="checker" rgb1="1 0 0" rgb2="1 1 1" '
                   'width="32" height="32"/><material name="ball" texture="ball"/></asset><worldbody>'
                   '<body><freejoint/><geom type="sphere" size=".1" material="ball"/></body>'
                   '<flexcomp name="cloth" type="grid" count="3 3 1" spacing=".1 .1 .1" pos="0 0 1" dim="2"/>'
                   '</worldbody></mujoco>')
    qpos = torch.zeros(3, 7 + 27, dtype=torch.float64)
    qpos[:, 3] = 1
    td = TensorDict({"qpos": qpos[:2], "next": {"qpos": qpos[1:]}}, batch_size=[2])
    save_rollouts([td], tmp_path / "rollouts")
    out = tmp_path / "r.html"
    assert main(["replay", str(tmp_path / "rollouts"), "--mujoco-model-path", str(xml), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "note: the 3-D replay does not draw: cube texture 'ball' on 1 geoms other than boxes" in err
    assert "1 flex object(s)" in err
    drawn = read_data(out)["scene"]["drawn"]
    assert drawn["flex"] == {"model": 1, "drawn": 0} and drawn["textures"] == {"model": 1, "drawn": 0}


@pytest.mark.slow
def test_each_cube_face_is_oriented_as_mujoco_draws_it(tmp_path):
    """A white square in one corner of each face image: seen from each side, the page puts it in the same
    corner as MuJoCo's own renderer."""
    import math

    import mujoco
    from PIL import Image, ImageDraw

    names = ["right", "left", "up", "down", "front", "back"]
    for n in names:
        img = Image.new("RGB", (64, 64), (60, 60, 160))
        ImageDraw.Draw(img).rectangle([0, 0, 20, 20], fill=(255, 255, 255))
        img.save(tmp_path / f"{n}.png")
    files = " ".join(f'file{n}="{n}.png"' for n in names)
    (tmp_path / "c.xml").write_text(f'<mujoco><visual><headlight ambient=".6 .6 .6"/></visual><asset>'
                                    f'<texture name="t" type="cube" {files}/><material name="m" texture="t"/></asset>'
                                    '<worldbody><geom type="box" size=".3 .3 .3" material="m"/></worldbody></mujoco>')
    model = mujoco.MjModel.from_xml_path(str(tmp_path / "c.xml"))
    model.vis.global_.fovy = 45
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    _write(tmp_path / "c.html", model, [model.qpos0, model.qpos0])
    sides = {"+x": [1, 0, 0], "-x": [-1, 0, 0], "+y": [0, 1, 0], "-y": [0, -1, 0], "+z": [0, -1e-3, 1],
             "-z": [0, -1e-3, -1]}

    def corner(pixels):
        ys, xs = np.nonzero(np.asarray(pixels, float).min(2) > 200)
        return ("left" if xs.mean() < pixels.shape[1] / 2 else "right", "top" if ys.mean() < pixels.shape[0] / 2
                else "bottom")

    expected = {}
    renderer = mujoco.Renderer(model, 300, 300)
    try:
        for side, v in sides.items():
            f = -np.asarray(v, float) / np.linalg.norm(v)
            cam = mujoco.MjvCamera()
            cam.type, cam.distance = mujoco.mjtCamera.mjCAMERA_FREE, 1.2
            cam.azimuth, cam.elevation = math.degrees(math.atan2(f[1], f[0])), math.degrees(math.asin(f[2]))
            renderer.update_scene(data, cam)
            expected[side] = corner(renderer.render())
    finally:
        renderer.close()
    with open_page(tmp_path / "c.html", width=300, height=300) as (page, top):
        page.js("replay.setFollow(false)")
        for side, v in sides.items():
            eye = (1.2 * np.asarray(v, float) / np.linalg.norm(v)).tolist()
            page.js("([e]) => replay.setCamera(e, [0, 0, 0])", [eye])
            shot = np.asarray(Image.open(io.BytesIO(top.locator("canvas").first.screenshot())).convert("RGB"))
            assert corner(shot) == expected[side], side
        assert page.errors == []
