"""Shared test set-up: headless GL before anything imports mujoco; the helpers are the ``helpers`` package."""

from __future__ import annotations

from torchrl_render.envs.gl import ensure_headless_gl

ensure_headless_gl()


import pytest


@pytest.fixture(scope="module")
def gym_rgb():
    """InvertedPendulum-v5 with render_mode='rgb_array' (64x64), so env.render() can be compared."""
    from helpers import real_envs as R
    env = R.gym_env(render_mode="rgb_array")
    yield env
    R.close_env(env)


@pytest.fixture(scope="module")
def dm():
    """dm_control cartpole-balance wrapped by torchrl (64x64 renders)."""
    from helpers import real_envs as R
    env = R.dm_env()
    yield env
    R.close_env(env)
