"""--overlay: legible text at 64x64 and 480x480 on real MuJoCo frames, and through the pipeline."""

from __future__ import annotations

import numpy as np
import pytest

from torchrl_render import RenderConfig, render_policy
from torchrl_render.backends.mujoco import MujocoBackend
from torchrl_render.frames import _GLYPHS, draw_overlay, overlay_lines

from helpers import real_envs as R
from helpers.mediaprobe import decode_frames

METRICS = {"step": 123, "reward": -0.42, "return": 1234.5, "success": True}


@pytest.mark.parametrize("size,scale", [(64, 1), (480, 4)])
@pytest.mark.slow
def test_overlay_on_real_frames(size, scale):
    env = R.gym_env("HalfCheetah-v5", size=size)
    backend = MujocoBackend.from_config(env, R.cfg(width=size, height=size, render_quality="fast"))
    try:
        env.reset()
        frame = backend.capture(None)["default"]
    finally:
        backend.close()
        env.close()
    out = draw_overlay(frame, METRICS)
    assert out.shape == frame.shape and out is not frame
    lines = overlay_lines(METRICS)
    box_h, box_w = 6 * scale * len(lines) + scale, 4 * scale * max(map(len, lines)) + scale
    assert np.array_equal(out[box_h:], frame[box_h:]) and np.array_equal(out[:, box_w:], frame[:, box_w:])
    # every glyph pixel is pure white, every other box pixel is darkened: maximal contrast
    for row, text in enumerate(lines):
        for col, char in enumerate(text):
            bitmap = np.kron(np.array([c == "1" for c in _GLYPHS[char]]).reshape(5, 3), np.ones((scale, scale)))
            top, left = scale + row * 6 * scale, scale + col * 4 * scale
            cell = out[top:top + 5 * scale, left:left + 3 * scale]
            assert (cell[bitmap.astype(bool)] == 255).all(), (text, char)
            assert (cell[~bitmap.astype(bool)] <= 255 // 3).all(), (text, char)


def test_overlay_through_the_pipeline(tmp_path):
    common = dict(policy="helpers.tinyenv:make_policy", env="helpers.tinyenv:make_env", from_pixels=True, max_steps=3,
                  env_kwargs={"size": 64})
    plain = render_policy(RenderConfig(out=tmp_path / "a.mp4", **common))
    marked = render_policy(RenderConfig(out=tmp_path / "b.mp4", overlay=True, **common))
    a, b = list(decode_frames(plain.artifact_path)), list(decode_frames(marked.artifact_path))
    assert len(a) == len(b) == 4
    for x, y in zip(a, b):
        corner = np.abs(x[:20, :24].astype(int) - y[:20, :24].astype(int)).mean()
        rest = np.abs(x[32:, 32:].astype(int) - y[32:, 32:].astype(int)).mean()
        assert corner > 20 and rest < 2
