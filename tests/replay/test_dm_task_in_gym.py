"""A dm_control task inside a gymnasium env (gym-aloha's shape) replays, and a non-MuJoCo one is named."""

from __future__ import annotations

import numpy as np
import pytest

from torchrl_render import RenderConfig, render_policy
from torchrl_render.envs.mujoco_state import episode_states
from torchrl_render.errors import RenderError

from helpers.htmlread import episode_arrays
from helpers.replay import mujoco_xpos


@pytest.mark.slow
def test_html_of_a_dm_control_task_inside_a_gymnasium_time_limit(tmp_path):
    from dm_control import suite

    out = tmp_path / "aloha_like.html"
    result = render_policy(RenderConfig(policy="helpers.policies:linear_policy", env="helpers.dm_in_gym:make_env",
                                        max_steps=20, out=str(out), mujoco_qpos_key="qpos"))
    model = suite.load("cartpole", "swingup").physics.model.ptr
    states = episode_states(result.trajectories[0], "qpos")
    drawn = episode_arrays(out)[0]["xpos"]
    assert drawn.shape == (21, model.nbody, 3) and np.ptp(states[:, 0]) > 0
    for f in (0, 10, 20):
        np.testing.assert_allclose(drawn[f], mujoco_xpos(model, states[f]), atol=1e-5)


@pytest.mark.slow
def test_the_mujoco_backend_finds_the_physics_too(tmp_path):
    out = tmp_path / "aloha_like.mp4"
    result = render_policy(RenderConfig(policy="helpers.policies:linear_policy", env="helpers.dm_in_gym:make_env",
                                        max_steps=3, out=str(out), render_backend="mujoco", width=48, height=48))
    assert result.artifacts[0].num_frames == 4


@pytest.mark.slow
def test_an_env_without_a_simulation_is_named_with_its_unwrapped_class_and_the_places_looked_at(tmp_path):
    with pytest.raises(RenderError) as exc:
        render_policy(RenderConfig(policy="helpers.policies:linear_policy", env="helpers.dm_in_gym:make_plain",
                                   max_steps=3, out=str(tmp_path / "x.html")))
    text = str(exc.value)
    assert "TimeLimit (unwrapped: NoPhysics)" in text
    assert "env.unwrapped._env.physics" in text and "env.unwrapped.model/.data" in text
    assert not (tmp_path / "x.html").exists()
