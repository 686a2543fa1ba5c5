"""End to end on real simulators, headless: gymnasium MuJoCo, dm_control, the shipped example."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from torchrl_render import RenderConfig, render_policy
from torchrl_render.cli import main

from helpers.mediaprobe import probe_mp4
from helpers.paths import ROOT

CHEETAH = ROOT / "examples" / "half_cheetah"


@pytest.mark.slow
def test_shipped_example_through_the_cli(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "cheetah.mp4"
    argv = ["--ckpt", str(CHEETAH / "policy.pt"), "--policy", f"{CHEETAH / 'policy.py'}:make_policy",
            "--env", f"{CHEETAH / 'policy.py'}:make_env", "--num-trajs", "2", "--max-steps", "30",
            "--width", "96", "--height", "64", "--render-quality", "fast", "--out", str(out)]
    assert main(argv) == 0
    assert capsys.readouterr().out.strip() == str(out)
    info = probe_mp4(out)
    assert (info["codec"], info["pix_fmt"], info["frames"]) == ("h264", "yuv420p", 2 * 31)
    assert (info["width"], info["height"]) == (96, 64)
    meta = json.loads(Path(f"{out}.metadata.json").read_text())
    assert meta["checkpoint"]["sha256"] == hashlib.sha256((CHEETAH / "policy.pt").read_bytes()).hexdigest()
    assert meta["gl_backend"] in ("egl", "osmesa") and meta["render"]["render_backend"] == "mujoco"
    assert all(t["return"] > 0 for t in meta["trajectories"])          # the trained cheetah runs forward
    assert any("cast from torch.float64 to the policy's torch.float32" in w for w in meta["warnings"])


def test_gymnasium_id_shortcut(tmp_path):
    result = render_policy(RenderConfig(policy="helpers.policies:linear_policy", env="InvertedPendulum-v5",
                                        max_steps=12,
                                        width=64, height=48, out=tmp_path / "p.mp4", render_quality="fast"))
    n = result.metrics["per_episode"][0]["length"]
    assert probe_mp4(result.artifact_path)["frames"] == n + 1
    assert result.metadata["env_info"]["id"] == result.metadata["env"] == "InvertedPendulum-v5"


def test_gymnasium_env_backend_with_rgb_array(tmp_path):
    result = render_policy(RenderConfig(policy="helpers.policies:linear_policy", env="InvertedPendulum-v5", max_steps=5,
                                        width=64, height=64, render_backend="env", out=tmp_path / "p.gif"))
    assert result.metadata["render"]["render_backend"] == "env"
    assert result.artifacts[0].num_frames == result.metrics["per_episode"][0]["length"] + 1


@pytest.mark.slow
def test_dm_control_shortcut_with_mujoco_cameras(tmp_path):
    result = render_policy(RenderConfig(policy="helpers.policies:dm_linear_policy", env="dm_control/cartpole-balance",
                                        max_steps=10, num_trajs=2, width=64, height=64, out=tmp_path / "c.mp4",
                                        camera="0,1", camera_layout="horizontal", render_quality="fast"))
    info = probe_mp4(result.artifact_path)
    assert info["frames"] == 22 and (info["width"], info["height"]) == (128, 64)
    assert [e["seed"] for e in result.metrics["per_episode"]] == [0, 1]


@pytest.mark.parametrize("layout,files", [("separate", ["c_traj_000_0.mp4", "c_traj_000_1.mp4"])])  # torchrl.render's
@pytest.mark.slow
def test_separate_cameras_write_one_video_each(tmp_path, layout, files):
    result = render_policy(RenderConfig(policy="helpers.policies:dm_linear_policy", env="dm_control/cartpole-balance",
                                        max_steps=4, width=32, height=32, out=tmp_path / "c.mp4", camera="0,1",
                                        camera_layout=layout, render_quality="fast"))
    assert sorted(p.name for p in result.frame_paths) == files
    assert all(probe_mp4(p)["frames"] == 5 for p in result.frame_paths)
