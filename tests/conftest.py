"""Shared test set-up: headless GL before anything imports mujoco, and test helpers on sys.path."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent))

from torchrl_render.gl import ensure_headless_gl  # noqa: E402 - must run before anything imports mujoco

ensure_headless_gl()


import pytest  # noqa: E402


@pytest.fixture(scope="module")
def gym_rgb():
    """InvertedPendulum-v5 with render_mode='rgb_array' (64x64), so env.render() can be compared."""
    import envs_real as R
    env = R.gym_env(render_mode="rgb_array")
    yield env
    R.close_env(env)


@pytest.fixture(scope="module")
def dm():
    """dm_control cartpole-balance wrapped by torchrl (64x64 renders)."""
    import envs_real as R
    env = R.dm_env()
    yield env
    R.close_env(env)
