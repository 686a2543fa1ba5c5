"""The pixels backend: frames are the env's pixel observations."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tensordict import TensorDict
from torchrl.data import Composite, Unbounded

from torchrl_render.backends.pixels import PixelsBackend
from torchrl_render.errors import BackendUnavailable
from torchrl_render.frames import to_uint8_hwc

from helpers import real_envs as R  # first: headless GL before mujoco is imported


class SpecOnly:
    """Just an observation spec: the backend needs nothing else from the env."""

    def __init__(self, **entries):
        self.observation_spec = Composite(entries)


@pytest.fixture(scope="module")
def pixel_env():
    env = R.gym_env(from_pixels=True)
    yield env
    R.close_env(env)


@pytest.mark.slow
def test_frames_are_the_pixel_observations_and_follow_the_state(pixel_env):
    with PixelsBackend.from_config(pixel_env, R.cfg()) as backend:
        td = pixel_env.reset()
        first = backend.capture(td)
        assert list(first) == ["default"]
        assert first["default"] is td["pixels"]  # no copy, no conversion: the pipeline normalises once
        assert to_uint8_hwc(first["default"]).shape == (R.SIZE, R.SIZE, 3)
        later = backend.capture(R.steps(pixel_env, td, 3))["default"]
        assert not torch.equal(later, first["default"])
    assert backend.info() == {"render_backend": "pixels", "pixel_key": "pixels", "cameras": ["default"]}


def test_nested_key_batch_of_one_and_camera_name():
    env = SpecOnly(agent=Composite(cam=Unbounded((1, 3, 4, 5), dtype=torch.uint8)))
    cfg = R.cfg(pixel_key="agent.cam", camera="front")
    backend = PixelsBackend.from_config(env, cfg)
    td = TensorDict(agent=TensorDict(cam=torch.ones(1, 3, 4, 5, dtype=torch.uint8)))
    frames = backend.capture(td)
    assert list(frames) == ["front"] and frames["front"].shape == (3, 4, 5)  # leading 1 dropped, CHW kept
    assert to_uint8_hwc(frames["front"]).shape == (4, 5, 3)


def test_no_pixel_key_is_unavailable_with_the_fix():
    env = SpecOnly(observation=Unbounded((3,)))
    with pytest.raises(BackendUnavailable) as err:
        PixelsBackend.from_config(env, R.cfg())
    message = str(err.value)
    assert "--from-pixels" in message and "from_pixels=True" in message and "'observation'" in message


def test_env_without_spec_is_unavailable():
    with pytest.raises(BackendUnavailable, match="from_pixels=True"):
        PixelsBackend.from_config(object(), R.cfg())


def test_several_cameras_are_left_to_other_backends():
    env = SpecOnly(pixels=Unbounded((4, 4, 3), dtype=torch.uint8))
    with pytest.raises(BackendUnavailable, match="mujoco"):
        PixelsBackend.from_config(env, R.cfg(camera="a,b"))


def test_missing_entry_skips_the_frame_with_a_note():
    env = SpecOnly(pixels=Unbounded((4, 4, 3), dtype=torch.uint8))
    backend = PixelsBackend.from_config(env, R.cfg())
    assert backend.capture(TensorDict(observation=torch.zeros(3))) is None
    assert backend.capture(TensorDict(observation=torch.zeros(3))) is None
    assert len(backend.notes) == 1 and "pixels" in backend.notes[0]
    frame = np.zeros((4, 4, 3), np.uint8)
    assert backend.capture({"pixels": frame})["default"] is frame
    backend.close()
    backend.close()
