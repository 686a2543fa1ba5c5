"""The html replay page in real headless Chromium: offline, no console error, poses equal MuJoCo's xpos.

Chromium is Debian's ``chromium`` driven by playwright (``tools/test_setup.sh`` installs both); every
request that is not ``file://`` is blocked and counted.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from torchrl_render import RenderConfig, render_policy
from torchrl_render.data import FrameBundle
from torchrl_render.writers.html import HtmlWriter

from helpers.browser import needs_browser, open_page
from helpers.replay import mesh_model, mujoco_xpos, random_states

pytestmark = needs_browser
ATOL = 1e-5  # float32 positions of bodies within a few metres of the origin


def _states(trajectory, key="qpos"):
    from torchrl_render.envs.mujoco_state import episode_states

    return episode_states(trajectory, key)


@pytest.fixture(scope="module")
def cheetah(tmp_path_factory):
    """HalfCheetah-v5, two short episodes, qpos recorded in the rollouts."""
    out = tmp_path_factory.mktemp("cheetah") / "replay.html"
    result = render_policy(RenderConfig(policy="helpers.policies:linear_policy", env="HalfCheetah-v5", num_trajs=2,
                                        max_steps=40,
                                        out=str(out), mujoco_qpos_key="qpos", save_rollout=True))
    return out, result


def _model(result):
    import gymnasium

    env = gymnasium.make("HalfCheetah-v5")
    return env.unwrapped.model


def _non_blank(png: bytes) -> float:
    from PIL import Image

    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.float32)
    return float(pixels.std())


@pytest.mark.slow
def test_cheetah_page_is_offline_and_matches_mujoco(cheetah):
    out, result = cheetah
    model = _model(result)
    with open_page(out) as (page, top):
        assert page.blocked == [] and all(u.startswith("file://") for u in page.requests)
        assert page.js("replay.episodes") == [0, 1]
        for ep, traj in enumerate(result.trajectories):
            states = _states(traj)
            assert page.js(f"replay.numFrames({ep})") == len(states) == traj.shape[0] + 1 == 41
            for frame in (0, 7, 40):
                drawn = np.array(page.js("([f, e]) => { replay.seek(f, e); return replay.bodyPositions(); }",
                                         [frame, ep]))
                assert drawn.shape == (model.nbody, 3)
                np.testing.assert_allclose(drawn, mujoco_xpos(model, states[frame]), atol=ATOL, rtol=1e-6)
        shot = top.locator("canvas").first.screenshot()
        assert _non_blank(shot) > 5.0
        assert page.errors == []


@pytest.mark.slow
def test_scrub_speed_follow_and_compare_change_what_the_page_reports(cheetah):
    out, _ = cheetah
    with open_page(out) as (page, top):
        assert page.js("replay.seek(12, 0)") == 12 and page.js("replay.frame") == 12
        top.locator("#scrub").fill("30")  # the scrub bar
        assert page.js("replay.frame") == 30
        top.locator("#episode").select_option("1")  # the episode picker, the speed menu, the step buttons
        top.locator("#speed").select_option("0.25")
        top.locator("#fwd").click()
        assert page.js("replay.state()") == {"episode": 1, "compare": None, "frame": 31, "playing": False,
                                             "speed": 0.25, "loop": True, "follow": True}
        assert page.js("replay.setSpeed(4)") == 4 and page.js("replay.state().speed") == 4
        with pytest.raises(Exception, match="speed must be between"):
            page.js("replay.setSpeed(10)")
        page.js("replay.seek(0, 0); replay.play()")
        page.page.wait_for_function("() => replay.frame >= 5", timeout=20000)
        page.js("replay.pause()")
        assert page.js("replay.playing") is False
        # follow: the camera moves with the cheetah; free: it stays where it is
        cam_a = page.js("replay.seek(0, 0), replay.camera()")
        cam_b = page.js("replay.seek(40, 0), replay.camera()")
        assert cam_a["mode"] == "follow" and cam_a["position"] != cam_b["position"]
        page.js("replay.setFollow(false)")
        cam_c = page.js("replay.seek(0, 0), replay.camera()")
        assert cam_c["mode"] == "free" and cam_c["position"] == cam_b["position"]
        # two episodes side by side on one clock
        page.js("replay.setFollow(true); replay.setCompare(1); replay.seek(20, 0)")
        assert top.locator("#views canvas").count() == 2
        assert page.js("replay.state().compare") == 1
        assert page.js("replay.bodyPositions(1)") != page.js("replay.bodyPositions(0)")
        assert page.errors == [] and page.blocked == []


@pytest.mark.slow
def test_sandboxed_srcdoc_iframe(cheetah):
    out, result = cheetah
    model = _model(result)
    with open_page(out, srcdoc=True) as (page, top):
        drawn = np.array(page.js("replay.seek(9, 1), replay.bodyPositions()"))
        np.testing.assert_allclose(drawn, mujoco_xpos(model, _states(result.trajectories[1])[9]), atol=ATOL, rtol=1e-6)
        assert page.errors == [] and page.blocked == []
        assert _non_blank(top.screenshot()) > 5.0


@pytest.mark.slow
def test_dm_control_page(tmp_path):
    from dm_control import suite

    out = tmp_path / "dm.html"
    result = render_policy(RenderConfig(policy="helpers.policies:dm_linear_policy", env="dm_control/cartpole-balance",
                                        max_steps=15, out=str(out), mujoco_qpos_key="qpos"))
    model = suite.load("cartpole", "balance").physics.model.ptr
    states = _states(result.trajectories[0])
    with open_page(out) as (page, _):
        assert page.js("replay.numFrames(0)") == 16
        for frame in (0, 15):
            drawn = np.array(page.js("(f) => (replay.seek(f, 0), replay.bodyPositions())", frame))
            np.testing.assert_allclose(drawn, mujoco_xpos(model, states[frame]), atol=ATOL, rtol=1e-6)
        assert page.errors == [] and page.blocked == []


@pytest.mark.slow
def test_mesh_model_page(tmp_path):
    model = mesh_model()
    states = random_states(model, 12)
    out = tmp_path / "mesh.html"
    with HtmlWriter(out) as writer:
        for step, qpos in enumerate(states):
            writer.write(FrameBundle({}, step, 3, state={"model": model, "qpos": qpos},
                                     metrics={"reward": float(step), "return": step * (step + 1) / 2}))
        writer.on_episode({"episode_ix": 3, "seed": 7, "sum_reward": 66.0, "length": 11, "success": True})
    with open_page(out) as (page, top):
        assert page.js("replay.episodes") == [3] and page.js("replay.numFrames(3)") == 12
        for frame in (0, 5, 11):
            drawn = np.array(page.js("(f) => (replay.seek(f, 3), replay.bodyPositions())", frame))
            np.testing.assert_allclose(drawn, mujoco_xpos(model, states[frame]), atol=ATOL, rtol=1e-6)
        facts = top.locator("#facts").inner_text()
        assert "seed" in facts and "7" in facts and "66" in facts
        assert _non_blank(top.locator("canvas").first.screenshot()) > 5.0
        assert page.errors == [] and page.blocked == []


@pytest.mark.slow
def test_replay_from_saved_rollouts_draws_what_the_live_run_drew(cheetah, tmp_path):
    import os

    import gymnasium

    from torchrl_render.cli.rebuild import replay_rollouts

    out, _ = cheetah
    xml = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", "half_cheetah.xml")
    replay = replay_rollouts(out.with_name("replay_rollouts"), xml, tmp_path / "again.html")[0].path
    frames = [(0, 0), (25, 0), (40, 1)]
    drawn = {}
    for path in (out, replay):
        with open_page(path) as (page, _):
            drawn[path] = [page.js("([f, e]) => (replay.seek(f, e), replay.bodyPositions())", [f, e])
                           for f, e in frames]
            assert page.errors == [] and page.blocked == []
    assert drawn[out] == drawn[replay]
