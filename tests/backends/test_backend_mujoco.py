"""The mujoco backend: renders MuJoCo cameras itself (gymnasium MuJoCo and dm_control envs)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from torchrl_render.backends.mujoco import (
    MujocoBackend,
    camera_names,
    free_gymnasium_gl,
    resolve_camera_id,
)
from torchrl_render.errors import BackendUnavailable, ConfigError

from helpers import real_envs as R  # first: headless GL before mujoco is imported
from helpers.paths import ROOT

pytestmark = pytest.mark.slow  # real simulators

FAST = {"render_quality": "fast"}


@pytest.fixture(scope="module")
def pendulum(gym_rgb):
    """InvertedPendulum-v5 with render_mode='rgb_array' (conftest's gym_rgb)."""
    return gym_rgb


def test_importing_the_module_does_not_import_mujoco():
    code = "import sys, torchrl_render.backends.mujoco; print('mujoco' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=str(ROOT))
    assert out.stdout.strip() == "False"


def test_default_view_equals_gymnasium_render():
    """Same model, data, camera set-up, scene option and MSAA as gymnasium's OffScreenViewer: identical pixels.
    An env of its own: the first frame is drawn before gymnasium ever rendered this env (the module's shared env
    may have rendered in another test already, with its camera set up at another state)."""
    pendulum = R.gym_env(render_mode="rgb_array")
    raw = pendulum._env
    try:
        with MujocoBackend.from_config(pendulum, R.cfg()) as backend:
            td = pendulum.reset()
            ours = backend.capture(td)["default"]  # before gymnasium's first render: its camera is built the same way
            np.testing.assert_array_equal(ours, raw.render())
            td = R.steps(pendulum, td, 5)
            ours = backend.capture(td)["default"]
            assert ours.shape == (R.SIZE, R.SIZE, 3) and ours.dtype == np.uint8
            np.testing.assert_array_equal(ours, raw.render())
    finally:
        R.close_env(pendulum)


def test_default_view_copies_a_camera_gymnasium_already_built(pendulum):
    raw = pendulum._env
    pendulum.reset()
    reference = raw.render()
    with MujocoBackend.from_config(pendulum, R.cfg()) as backend:
        np.testing.assert_array_equal(backend.capture(None)["default"], reference)


def test_env_rendering_stays_right_while_and_after_the_backend_renders():
    """gymnasium's viewer draws into whatever GL context is current: the backend must hand it back."""
    env = R.gym_env(from_pixels=True)
    raw = env._env
    try:
        env.set_seed(0)
        reference = env.reset()["pixels"].numpy()
        backend = MujocoBackend.from_config(env, R.cfg(width=100, height=80, **FAST))
        backend.capture(None)
        np.testing.assert_array_equal(raw.render(), reference)
        env.set_seed(0)
        np.testing.assert_array_equal(env.reset()["pixels"].numpy(), reference)  # the policy's input
        backend.close()
        np.testing.assert_array_equal(raw.render(), reference)
    finally:
        R.close_env(env)


def test_frames_follow_the_state_and_fast_differs(pendulum):
    td = pendulum.reset()
    with MujocoBackend.from_config(pendulum, R.cfg(**FAST)) as fast, \
            MujocoBackend.from_config(pendulum, R.cfg()) as default:
        first = fast.capture(td)["default"]
        assert (first != default.capture(td)["default"]).any()  # no shadows / reflections / MSAA
        later = fast.capture(R.steps(pendulum, td, 5))["default"]
        assert (later != first).any()


def test_balanced_keeps_the_look_closer_than_fast():
    """balanced keeps lighting, shadows and reflections (only the shadow map and MSAA change); fast drops them."""
    env = R.gym_env("Hopper-v5", size=96)
    try:
        env.set_seed(0)
        td = R.steps(env, env.reset(), 3)
        frames = {}
        for quality in ("default", "balanced", "fast"):
            with MujocoBackend.from_config(env, R.cfg(width=96, height=96, render_quality=quality)) as backend:
                frames[quality] = backend.capture(td)["default"].astype(np.int16)
        off_balanced = np.abs(frames["balanced"] - frames["default"]).mean()
        off_fast = np.abs(frames["fast"] - frames["default"]).mean()
        assert 0 < off_balanced < off_fast / 3, (off_balanced, off_fast)
    finally:
        R.close_env(env)


@pytest.mark.parametrize("quality", ["balanced", "fast"])
def test_presets_leave_the_model_as_it_was(pendulum, quality):
    model = pendulum._env.unwrapped.model

    def settings():
        return (model.vis.quality.offsamples, model.vis.quality.shadowsize, model.vis.global_.offwidth,
                model.vis.global_.offheight)

    before = settings()
    backend = MujocoBackend.from_config(pendulum, R.cfg(width=700, height=90, render_quality=quality))
    try:
        assert backend.capture(None)["default"].shape == (90, 700, 3)
        assert any("offscreen buffer" in note for note in backend.notes)
    finally:
        backend.close()
    assert settings() == before


def test_dm_control_cameras(dm):
    model = dm._env.physics.model.ptr
    assert camera_names(model) == ["fixed", "lookatcart"]
    cfg = R.cfg(camera="default,lookatcart,1,-1", **FAST)
    with MujocoBackend.from_config(dm, cfg) as backend:
        td = dm.reset()
        frames = backend.capture(td)
        assert list(frames) == ["default", "lookatcart", "1", "-1"]
        np.testing.assert_array_equal(frames["lookatcart"], frames["1"])
        assert (frames["default"] != frames["lookatcart"]).any() and (frames["-1"] != frames["default"]).any()
        later = backend.capture(R.steps(dm, td, 10))
        assert (later["lookatcart"] != frames["lookatcart"]).any()
    assert backend.info() == {"render_backend": "mujoco", "gl": os.environ["MUJOCO_GL"],
                              "cameras": ["default", "lookatcart", "1", "-1"], "width": R.SIZE, "height": R.SIZE,
                              "render_quality": "fast", "draw_thread": os.environ["MUJOCO_GL"] == "egl"}


def test_dm_control_default_equals_physics_render(dm):
    dm.reset()
    with MujocoBackend.from_config(dm, R.cfg()) as backend:
        ours = backend.capture(None)["default"]
    np.testing.assert_array_equal(ours, dm._env.physics.render(R.SIZE, R.SIZE, camera_id=0))


def test_unknown_camera_lists_the_model_cameras(dm):
    with pytest.raises(ConfigError) as err:
        MujocoBackend.from_config(dm, R.cfg(camera="default,overhead"))
    message = str(err.value)
    assert "'overhead'" in message and "'fixed'" in message and "'lookatcart'" in message
    with pytest.raises(ConfigError, match="index below 2"):
        resolve_camera_id(dm._env.physics.model.ptr, 5)


def test_halfcheetah_default_view_matches_gymnasium(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # HalfCheetah's XML makes MuJoCo write MUJOCO_LOG.TXT into the working directory
    env = R.gym_env("HalfCheetah-v5", render_mode="rgb_array")
    try:
        with MujocoBackend.from_config(env, R.cfg(**FAST)) as fast:
            td = R.steps(env, env.reset(), 3)
            assert fast.capture(td)["default"].shape == (R.SIZE, R.SIZE, 3)
        with MujocoBackend.from_config(env, R.cfg()) as backend:
            np.testing.assert_array_equal(backend.capture(td)["default"], env._env.render())
    finally:
        R.close_env(env)


@pytest.mark.parametrize("make", [R.NoRenderEnv, R.gym_cartpole], ids=["torchrl", "cartpole"])
def test_non_mujoco_env_is_unavailable(make):
    with pytest.raises(BackendUnavailable, match="MuJoCo simulation"):
        MujocoBackend.from_config(make(), R.cfg())


def test_close_is_safe_twice_and_after_a_failed_init(dm):
    backend = MujocoBackend.from_config(dm, R.cfg(**FAST))
    backend.close()
    backend.close()
    with pytest.raises(RuntimeError, match="close"):
        backend.capture(None)
    MujocoBackend.__new__(MujocoBackend).close()  # nothing of __init__ ran


def test_mujoco_imported_before_mujoco_gl_is_explained(tmp_path):
    """No display, MUJOCO_GL unset while mujoco is imported: mujoco keeps glfw, and the error says why."""
    code = """
import types, mujoco
from torchrl_render.backends.mujoco import MujocoBackend
from torchrl_render.errors import BackendUnavailable
model = mujoco.MjModel.from_xml_string("<mujoco><worldbody><geom size='1'/></worldbody></mujoco>")
env = types.SimpleNamespace(unwrapped=types.SimpleNamespace(model=model, data=mujoco.MjData(model)))
cfg = types.SimpleNamespace(camera=["default"], width=8, height=8, render_quality="fast")
try:
    MujocoBackend.from_config(env, cfg)
except BackendUnavailable as exc:
    print(exc)
"""
    env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "PYOPENGL_PLATFORM", "DISPLAY",
                                                            "WAYLAND_DISPLAY")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=120, check=False)
    assert "mujoco was imported before MUJOCO_GL" in out.stdout, out.stdout + out.stderr
    assert "ensure_headless_gl()" in out.stdout


def test_free_gymnasium_gl_frees_in_the_env_own_context():
    """gymnasium leaves its MjrContext to the collector, which would free it into whatever context is current."""
    first, second = R.gym_env(render_mode="rgb_array"), R.gym_env(render_mode="rgb_array")
    try:
        first.reset()
        first._env.render()
        second.set_seed(0)
        second.reset()
        reference = second._env.render()  # second's context is current now
        free_gymnasium_gl(first)
        free_gymnasium_gl(first)
        assert first._env.unwrapped.mujoco_renderer._viewers["rgb_array"].con.offFBO == 0  # nothing left to free
        second._env.unwrapped.mujoco_renderer.viewer.make_context_current()  # gymnasium never does it again
        np.testing.assert_array_equal(second._env.render(), reference)  # second's GL objects are intact
    finally:
        R.close_env(first)
        R.close_env(second)
