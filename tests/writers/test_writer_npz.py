"""The npz writer: documented keys and shapes, equal to the returned rollouts, readable by numpy alone."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from torchrl_render import RenderConfig, render_policy
from torchrl_render.data import FrameBundle
from torchrl_render.engine import Episode
from torchrl_render.writers.npz import NpzWriter

PER_TRAJ = ["actions", "dones", "observations", "rewards", "terminated", "truncated"]


def _run(tmp_path, **kw):
    kw.setdefault("out", tmp_path / "run.npz")
    return render_policy(RenderConfig(policy="helpers.tinyenv:make_policy", env="helpers.tinyenv:make_env", **kw))


def _episode(traj: int, n: int, seed: int | None = None, obs_dim: int = 3, act_dim: int = 1,
             observations: bool = True) -> Episode:
    """A hand-made episode of ``n`` steps (obs = step number, action = -step, reward = step / 2)."""
    steps = np.arange(1, n + 1)
    done = steps == n
    obs = np.repeat(np.arange(n + 1, dtype=np.float32)[:, None], obs_dim, 1) if observations else None
    return Episode(traj, seed, 0.5 * steps, done, done, np.zeros(n, bool), sum_reward=float((0.5 * steps).sum()),
                   observations=obs, actions=np.repeat(-steps[:, None] * 1.0, act_dim, 1))


def test_keys_shapes_and_values_match_the_rollouts(tmp_path):
    result = _run(tmp_path, num_trajs=3, seed=5)
    data = np.load(tmp_path / "run.npz")
    lengths = [e["length"] for e in result.metrics["per_episode"]]
    theirs = [f"traj_{i:03d}/{'.'.join(k) if isinstance(k, tuple) else k}"  # torchrl.render's: the TensorDict
              for i, td in enumerate(result.trajectories) for k in td.keys(True, True)]
    assert sorted(data.files) == sorted([f"traj{i}/{k}" for i in range(3) for k in PER_TRAJ] + theirs
                                        + ["trajectories", "seeds", "lengths", "returns", "metadata_json",
                                           "config", "metadata"])
    for i, td in enumerate(result.trajectories):
        np.testing.assert_array_equal(data[f"traj_{i:03d}/next.reward"], td["next", "reward"].numpy())
    assert json.loads(str(data["metadata"])) == json.loads((tmp_path / "run.npz.metadata.json").read_text())
    assert json.loads(str(data["config"])) == result.metadata["config"]
    assert data["trajectories"].tolist() == [0, 1, 2] and data["seeds"].tolist() == [5, 6, 7]
    assert data["lengths"].tolist() == lengths
    for i, (td, ep) in enumerate(zip(result.trajectories, result.metrics["per_episode"])):
        n = lengths[i]
        obs = data[f"traj{i}/observations"]
        assert obs.shape == (n + 1, 3) and obs.dtype == np.float32
        np.testing.assert_array_equal(obs[:-1], td["observation"].numpy())
        np.testing.assert_array_equal(obs[1:], td["next", "observation"].numpy())
        np.testing.assert_array_equal(data[f"traj{i}/actions"], td["action"].numpy())
        np.testing.assert_allclose(data[f"traj{i}/rewards"], td["next", "reward"].squeeze(-1).numpy(), rtol=1e-6)
        assert data[f"traj{i}/dones"].dtype == bool and data[f"traj{i}/dones"].shape == (n,)
        assert data[f"traj{i}/dones"].tolist() == [False] * (n - 1) + [True]
        assert data["returns"][i] == pytest.approx(ep["sum_reward"])
    meta = json.loads(str(data["metadata_json"]))
    assert meta["obs_key"] == "observation" and meta["frames"] is False and meta["config"]["num_trajs"] == 3
    assert result.artifacts[0].info["trajectories"] == 3 and result.artifacts[0].num_frames == 0


@pytest.mark.slow
def test_numpy_alone_reads_it(tmp_path):
    _run(tmp_path, max_steps=2)
    code = ("import sys, numpy; d = numpy.load(sys.argv[1]); "
            "print(d['traj0/observations'].shape, d['traj0/actions'].shape, 'torchrl_render' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "run.npz")], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "(3, 3) (2, 1) False"


def test_a_data_format_renders_nothing(tmp_path):
    result = _run(tmp_path, from_pixels=True, num_trajs=2, max_steps=2)
    assert [e["num_frames"] for e in result.metrics["per_episode"]] == [0, 0]


def test_frames_stored_when_asked(tmp_path):
    out = tmp_path / "f.npz"
    with NpzWriter(out, frames=True) as writer:
        for traj, n in ((0, 3), (1, 2)):
            for step in range(n + 1):
                frame = np.full((6, 8, 3), 10 * step + traj, np.uint8)
                writer.write(FrameBundle({"default": frame}, step, traj))
            writer.on_trajectory(_episode(traj, n, seed=traj))
            writer.on_episode({"episode_ix": traj})
    data = np.load(out)
    assert data["traj0/frames"].shape == (4, 6, 8, 3) and data["traj1/frames"].shape == (3, 6, 8, 3)
    assert data["traj0/frames"][:, 0, 0, 0].tolist() == [0, 10, 20, 30]
    assert data["traj1/frames"][2, 5, 7].tolist() == [21, 21, 21]
    assert writer.close().num_frames == 7
    assert [p.name for p in tmp_path.iterdir()] == ["f.npz"]            # the frame spools left nothing


def test_frames_ignored_unless_asked(tmp_path):
    with NpzWriter(tmp_path / "f.npz") as writer:
        for step in range(3):
            writer.write(FrameBundle({"default": np.zeros((4, 4, 3), np.uint8)}, step, 0))
        writer.on_trajectory(_episode(0, 2))
    assert "traj0/frames" not in np.load(tmp_path / "f.npz").files and writer.close().num_frames == 0


@pytest.mark.skipif(not hasattr(RenderConfig(policy="p:m", env="e:m"), "npz_frames"),
                    reason="needs the RenderConfig field npz_frames")
def test_npz_frames_end_to_end(tmp_path):
    result = _run(tmp_path, from_pixels=True, max_steps=3, npz_frames=True)
    frames = np.load(tmp_path / "run.npz")["traj0/frames"]
    assert frames.shape == (4, 16, 16, 3) and result.artifacts[0].num_frames == 4


def test_missing_observation_key_is_recorded(tmp_path):
    with NpzWriter(tmp_path / "m.npz", obs_key="nope") as writer:
        writer.on_trajectory(_episode(0, 2, obs_dim=2, observations=False))
    data = np.load(tmp_path / "m.npz")
    assert "traj0/observations" not in data.files and data["traj0/actions"].shape == (2, 1)
    assert json.loads(str(data["metadata_json"]))["missing"] == ["observations"]


def test_memory_is_released_per_episode(tmp_path):
    writer = NpzWriter(tmp_path / "m.npz")
    writer.on_trajectory(_episode(0, 50))
    writer.on_episode({"episode_ix": 0})
    kept = [v for v in vars(writer).values() if isinstance(v, np.ndarray)]
    assert kept == [] and writer._spools == {}         # the episode went to the file, nothing is kept
    writer.abort()
    assert list(tmp_path.iterdir()) == []
