"""The env backend: frames from the wrapped env's own render()."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from torchrl_render.backends.env import EnvRenderBackend
from torchrl_render.errors import BackendUnavailable, ConfigError
from torchrl_render.frames import to_uint8_hwc

from helpers import real_envs as R  # first: headless GL before mujoco is imported

pytestmark = pytest.mark.slow  # real simulators


def test_gymnasium_rgb_array_frames_follow_the_state(gym_rgb):
    raw = gym_rgb._env
    with EnvRenderBackend.from_config(gym_rgb, R.cfg()) as backend:
        td = gym_rgb.reset()
        first = backend.capture(td)["default"]
        np.testing.assert_array_equal(first, raw.render())
        assert first.shape == (R.SIZE, R.SIZE, 3) and first.dtype == np.uint8
        later = backend.capture(R.steps(gym_rgb, td, 5))["default"]
        assert (later != first).any()
    assert backend.info()["source"] == "gymnasium"


def test_gymnasium_without_rgb_array_names_the_fix():
    env = R.gym_env()
    try:
        with pytest.raises(BackendUnavailable) as err:
            EnvRenderBackend.from_config(env, R.cfg())
    finally:
        R.close_env(env)
    message = str(err.value)
    assert "render_mode='rgb_array'" in message and "--render-mode rgb_array" in message
    assert "render_mode=None" in message


def test_gymnasium_named_cameras_are_left_to_mujoco(gym_rgb):
    with pytest.raises(BackendUnavailable, match="--render-backend mujoco"):
        EnvRenderBackend.from_config(gym_rgb, R.cfg(camera="track"))


def test_dm_control_cameras_and_state(dm):
    cfg = R.cfg(camera="default,lookatcart,1", render_quality="fast")  # quality does not apply to env.render
    physics = dm._env.physics
    with EnvRenderBackend.from_config(dm, cfg) as backend:
        td = dm.reset()
        frames = backend.capture(td)
        assert list(frames) == ["default", "lookatcart", "1"]
        np.testing.assert_array_equal(frames["default"], physics.render(R.SIZE, R.SIZE, camera_id=0))
        np.testing.assert_array_equal(frames["lookatcart"], frames["1"])
        assert (frames["default"] != frames["lookatcart"]).any()
        later = backend.capture(R.steps(dm, td, 10))
        assert (later["lookatcart"] != frames["lookatcart"]).any()
    info = backend.info()
    assert info["source"] == "dm_control" and (info["width"], info["height"]) == (R.SIZE, R.SIZE)


def test_dm_control_unknown_camera_lists_the_cameras(dm):
    with pytest.raises(ConfigError) as err:
        EnvRenderBackend.from_config(dm, R.cfg(camera="overhead"))
    assert "'fixed'" in str(err.value) and "'lookatcart'" in str(err.value)


def test_torchrl_env_with_render_returning_an_image():
    env = R.RenderingEnv()
    backend = EnvRenderBackend.from_config(env, R.cfg())
    frame = backend.capture(env.reset())["default"]
    assert isinstance(frame, torch.Tensor) and frame.shape == (8, 8, 3)  # batch of one dropped
    assert to_uint8_hwc(frame).shape == (8, 8, 3)
    assert backend.info()["source"] == "torchrl"
    backend.close()
    backend.close()
    with pytest.raises(RuntimeError, match="close"):
        backend.capture(None)


@pytest.mark.parametrize("env", [R.RenderingEnv(result="none"), R.NoRenderEnv()], ids=["render-none", "no-render"])
def test_torchrl_env_that_renders_no_image_is_unavailable(env):
    with pytest.raises(BackendUnavailable, match="render_mode='rgb_array'"):
        EnvRenderBackend.from_config(env, R.cfg())


def test_dm_control_larger_than_the_model_buffer():
    env = R.dm_env()  # fresh: dm_control sizes its GL buffer on the first render
    try:
        with EnvRenderBackend.from_config(env, R.cfg(width=700, height=100)) as backend:
            assert backend.capture(env.reset())["default"].shape == (100, 700, 3)
        assert any("offscreen buffer (640x480)" in note for note in backend.notes)
    finally:
        R.close_env(env)
