"""The page's automation API under bad input, and which body the follow camera follows, in real Chromium."""

from __future__ import annotations

import numpy as np
import pytest

from torchrl_render.data import FrameBundle
from torchrl_render.writers.html import HtmlWriter

from helpers.browser import needs_browser, open_page
from helpers.replay import dm_replay, mesh_model, mujoco_xpos, random_states

pytestmark = needs_browser

#: a static (jointless) body first, as Fetch's and the Shadow hand's empty bodies, then a cart on a slide
#: with a swinging pole: nothing has a free joint or a tracking camera
STATIC_FIRST_XML = """
<mujoco>
  <worldbody>
    <geom type="plane" size="5 5 .1"/>
    <body name="stand" pos="0 0 .5"><geom type="box" size=".1 .1 .5"/></body>
    <body name="cart" pos="1 0 .2">
      <joint name="slide" type="slide" axis="1 0 0"/>
      <geom type="box" size=".2 .1 .1"/>
      <body name="pole"><joint type="hinge" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0 0 .6" size=".03"/></body>
    </body>
  </worldbody>
</mujoco>
"""


def _write(path, model, states, episode=0):
    with HtmlWriter(path) as writer:
        for step, qpos in enumerate(states):
            writer.write(FrameBundle({}, step, episode, state={"model": model, "qpos": qpos}))
        writer.on_episode({"episode_ix": episode, "seed": 0, "sum_reward": 0.0, "length": len(states) - 1,
                           "success": None})


@pytest.mark.slow
def test_bad_calls_throw_a_clear_error_and_leave_the_page_working(tmp_path):
    model = mesh_model()
    states = random_states(model, 10)
    _write(tmp_path / "m.html", model, states)
    with open_page(tmp_path / "m.html") as (page, top):
        page.js("replay.seek(4)")
        for bad in ("replay.seek(NaN)", "replay.seek()", "replay.seek('abc')", "replay.seek(null)",
                    "replay.seek('3')", "replay.seek(Infinity)", "replay.seek({})"):
            with pytest.raises(Exception, match=r"replay.seek\(frame, episode\): frame must be a finite number"):
                page.js(bad)
            assert page.js("replay.frame") == 4, bad
        with pytest.raises(Exception, match="no episode 7; the page holds episodes 0"):
            page.js("replay.seek(2, 7)")
        with pytest.raises(Exception, match="no episode null"):
            page.js("replay.numFrames(null)")
        for bad in ("replay.bodyPositions(1)", "replay.camera(2)", "replay.bodyPositions('x')"):
            with pytest.raises(Exception, match="view must be 0"):
                page.js(bad)
        with pytest.raises(Exception, match="speed must be between"):
            page.js("replay.setSpeed(NaN)")
        assert page.js("replay.state()")["frame"] == 4 and "NaN" not in top.locator("#time").inner_text()
        drawn = np.array(page.js("replay.bodyPositions()"))
        np.testing.assert_allclose(drawn, mujoco_xpos(model, states[4]), atol=1e-5)
        top.locator("#fwd").click()  # the buttons and keys still work
        top.locator("#views").click()
        top.keyboard.press("ArrowRight")
        assert page.js("replay.frame") == 6
        page.js("replay.play()")
        page.page.wait_for_function("() => replay.frame !== 6", timeout=20000)
        page.js("replay.pause()")
        assert None not in np.array(page.js("replay.bodyPositions()")).ravel().tolist()
        assert page.errors == []


@pytest.mark.slow
def test_follow_camera_follows_the_body_that_moves_never_a_static_one(tmp_path):
    import mujoco

    model = mujoco.MjModel.from_xml_string(STATIC_FIRST_XML)
    states = np.zeros((30, model.nq))
    states[:, 0] = np.linspace(0, 3, 30)  # the cart drives 3 m
    states[:, 1] = 0.3 * np.sin(np.linspace(0, 6, 30))
    _write(tmp_path / "cart.html", model, states)
    with open_page(tmp_path / "cart.html") as (page, _):
        first = page.js("replay.seek(0), replay.camera()")
        assert first["body_name"] in ("cart", "pole") and first["follow_reason"] == "moves most"
        last = page.js("replay.seek(29), replay.camera()")
        moved = np.subtract(last["target"], first["target"])
        np.testing.assert_allclose(moved, [3, 0, 0], atol=1e-5)  # the camera kept the cart in view
        assert page.errors == []


@pytest.fixture(scope="module")
def quadruped(tmp_path_factory):
    return dm_replay(tmp_path_factory.mktemp("quadruped"), "quadruped-walk", 150)


@pytest.mark.slow
def test_quadruped_is_followed_by_its_torso_not_the_world_camera(quadruped):
    import mujoco

    out, _result, model, states = quadruped
    torso = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "torso")
    with open_page(out) as (page, _):
        last = len(states) - 1
        a = page.js("replay.seek(0, 0), replay.camera()")
        b = page.js(f"replay.seek({last}, 0), replay.camera()")
        assert a["body"] == torso and a["body_name"] == "torso" and a["follow_reason"].startswith("tracking camera")
        walked = mujoco_xpos(model, states[last])[torso] - mujoco_xpos(model, states[0])[torso]
        assert np.linalg.norm(walked) > 0.05
        np.testing.assert_allclose(np.subtract(b["target"], a["target"]), walked, atol=1e-4)
        assert page.errors == [] and page.blocked == []


@pytest.mark.slow
def test_body_positions_equal_xpos_after_mj_kinematics_not_the_stale_xpos_of_env_step(tmp_path):
    """The documented comparison: after ``env.step`` MuJoCo's ``xpos`` still belongs to the previous
    ``qpos``; after ``mj_kinematics`` it equals the page's frame of the new state."""
    import gymnasium
    import mujoco

    env = gymnasium.make("HalfCheetah-v5")
    env.reset(seed=0)
    model, data = env.unwrapped.model, env.unwrapped.data
    states = [data.qpos.copy()]
    stale = []
    rng = np.random.default_rng(0)
    for _ in range(5):
        env.step(rng.uniform(-1, 1, model.nu))
        states.append(data.qpos.copy())
        stale.append(data.xpos.copy())
    mujoco.mj_kinematics(model, data)
    fresh = data.xpos.copy()
    env.close()
    _write(tmp_path / "c.html", model, states)
    with open_page(tmp_path / "c.html") as (page, _):
        drawn = np.array(page.js("replay.seek(5, 0), replay.bodyPositions()"))
    np.testing.assert_allclose(drawn, fresh, atol=1e-5)
    assert np.abs(stale[-1] - fresh).max() > 1e-3  # the stale array would not have matched
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "formats.md").read_text(encoding="utf-8")
    assert "after `mj_kinematics`" in doc and "mujoco.mj_kinematics(env.unwrapped.model, data)" in doc
