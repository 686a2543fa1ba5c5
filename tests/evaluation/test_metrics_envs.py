"""Success from gymnasium's info, without the user writing an info reader; data-only runs render nothing."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch

from torchrl_render import RenderConfig, render_policy


class Reach(gym.Env):
    """Success when the running sum of actions passes 1.0; reports it only through info["is_success"]."""

    observation_space = gym.spaces.Box(-10, 10, (2,), np.float64)
    action_space = gym.spaces.Box(-1, 1, (1,), np.float32)

    def __init__(self, report=True):
        self.report, self.seed_ = report, 0

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:                                      # torchrl seeds once, then resets
            self.seed_ = seed
        self.x, self.t = 0.0, 0
        self.goal = 1.0 if self.seed_ % 2 == 0 else 100.0         # odd seeds cannot succeed
        return np.array([self.x, self.goal]), {}

    def step(self, action):
        self.x += float(action[0])
        self.t += 1
        success = self.x >= self.goal
        info = {"is_success": success} if self.report else {}
        return np.array([self.x, self.goal]), float(success), success, self.t >= 6, info


def push_policy():
    return lambda obs: torch.full((1,), 0.5)


def test_is_success_from_gymnasium_info(tmp_path):
    result = render_policy(RenderConfig(policy=push_policy, env=Reach, num_trajs=4, out=tmp_path / "r.jsonl"))
    eps = result.metrics["per_episode"]
    assert [e["success"] for e in eps] == [True, False, True, False]
    assert [e["length"] for e in eps] == [2, 6, 2, 6]
    assert result.metrics["aggregated"]["pc_success"] == 50.0


def test_success_unknown_when_never_reported(tmp_path):
    result = render_policy(RenderConfig(policy=push_policy, env=lambda: Reach(report=False), num_trajs=2,
                                        out=tmp_path / "r.jsonl"))
    assert [e["success"] for e in result.metrics["per_episode"]] == [None, None]
    assert result.metrics["aggregated"]["pc_success"] is None


def test_data_only_formats_render_nothing_on_a_mujoco_env(tmp_path):
    result = render_policy(RenderConfig(policy="helpers.policies:linear_policy", env="InvertedPendulum-v5", max_steps=5,
                                        out=tmp_path / "r.npz"))
    assert result.metadata["render"]["render_backend"] == "null"
    assert all(e["num_frames"] == 0 for e in result.metrics["per_episode"])


def test_progress_bar_reports_running_mean(tmp_path, capsys):
    render_policy(RenderConfig(policy=push_policy, env=Reach, num_trajs=3, out=tmp_path / "r.jsonl",
                               progress=True))
    err = capsys.readouterr().err
    assert "episodes" in err and "3/3" in err and "success=" in err and "return=" in err
