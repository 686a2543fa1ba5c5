"""The jsonl event log: line types and counts, streamed complete lines, pandas reads it."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
import torch

from torchrl_render import RenderConfig, render_policy
from torchrl_render.engine import Episode
from torchrl_render.writers.jsonl import JsonlWriter


def _run(tmp_path, **kw):
    kw.setdefault("out", tmp_path / "run.jsonl")
    return render_policy(RenderConfig(policy="helpers.tinyenv:make_policy", env="helpers.tinyenv:make_env", **kw))


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def _episode(traj, actions, rewards):
    n = len(rewards)
    done = np.arange(n) == n - 1
    return Episode(traj, 0, np.asarray(rewards, np.float64), done, done, np.zeros(n, bool),
                   sum_reward=float(sum(rewards)), actions=np.asarray(actions, np.float64))


def test_line_types_and_counts(tmp_path):
    result = _run(tmp_path, num_trajs=3, seed=1)
    lines = _lines(tmp_path / "run.jsonl")
    lengths = [e["length"] for e in result.metrics["per_episode"]]
    types = [line["type"] for line in lines]
    assert types[0] == "metadata" and types[-1] == "summary"
    assert types.count("step") == sum(lengths) and types.count("episode") == types.count("trajectory") == 3
    assert lines[0]["config"]["num_trajs"] == 3 and lines[0]["format"] == "torchrl_render.jsonl"
    assert lines[0]["metadata"] == json.loads((tmp_path / "run.jsonl.metadata.json").read_text())  # the sidecar
    episode_at = [i for i, t in enumerate(types) if t == "episode"]
    assert episode_at == [1 + sum(lengths[:k + 1]) + 2 * k for k in range(3)]  # each right after its last step
    assert [lines[i + 1] for i in episode_at] == [  # then torchrl.render's trajectory line
        {"type": "trajectory", "index": k, "num_steps": lengths[k], "num_frames": 0, "cameras": [],
         "return": pytest.approx(result.metrics["per_episode"][k]["sum_reward"])} for k in range(3)]
    summary = lines[-1]
    assert summary["n_episodes"] == 3 and summary["n_steps"] == sum(lengths)
    assert summary["avg_sum_reward"] == pytest.approx(result.metrics["aggregated"]["avg_sum_reward"])
    assert result.artifacts[0].info == {"lines": len(lines), "steps": sum(lengths), "episodes": 3}


def test_step_lines_match_the_rollout(tmp_path):
    result = _run(tmp_path, num_trajs=2)
    steps = [line for line in _lines(tmp_path / "run.jsonl") if line["type"] == "step"]
    for traj, td in enumerate(result.trajectories):
        mine = [s for s in steps if s["trajectory"] == traj]
        assert [s["step"] for s in mine] == list(range(1, td.batch_size[0] + 1))
        rewards = td["next", "reward"].squeeze(-1).tolist()
        assert [s["reward"] for s in mine] == pytest.approx(rewards)
        assert mine[-1]["return"] == pytest.approx(sum(rewards))
        assert [s["action"][0] for s in mine] == pytest.approx(td["action"].squeeze(-1).tolist())
        assert [s["done"] for s in mine] == [False] * (len(mine) - 1) + [True]
        assert all(s["action_min"] <= s["action_mean"] <= s["action_max"] for s in mine)


def test_pandas_reads_it(tmp_path):
    result = _run(tmp_path, num_trajs=2)
    frame = pd.read_json(tmp_path / "run.jsonl", lines=True)
    counts = frame["type"].value_counts().to_dict()
    assert counts == {"step": sum(e["length"] for e in result.metrics["per_episode"]), "episode": 2,
                      "trajectory": 2, "metadata": 1, "summary": 1}
    steps = frame[frame["type"] == "step"]
    assert steps.groupby("trajectory")["reward"].sum().tolist() == pytest.approx(
        [e["sum_reward"] for e in result.metrics["per_episode"]])


def test_lines_are_on_disk_as_they_happen(tmp_path):
    writer = JsonlWriter(tmp_path / "log.jsonl")
    writer.on_trajectory(_episode(0, [[0.5]], [1.0]))                   # an episode ended: its steps are written
    written = [json.loads(line) for line in writer.tmp.read_text().splitlines()]     # not closed yet
    assert [line["type"] for line in written] == ["metadata", "step"]
    assert writer.tmp.read_text().endswith("\n") and not writer.path.exists()
    writer.abort()                                  # an error or Ctrl-C: no log under the requested name
    assert list(tmp_path.iterdir()) == []


def test_non_finite_numbers_become_null_and_big_actions_are_summarised(tmp_path):
    with JsonlWriter(tmp_path / "log.jsonl") as writer:
        writer.on_trajectory(_episode(0, [np.arange(12.0)], [math.nan]))
        writer.on_trajectory(_episode(1, [[1, 0, 0]], [math.inf]))
    text = (tmp_path / "log.jsonl").read_text()
    assert "NaN" not in text and "Infinity" not in text
    first, second = [line for line in _lines(tmp_path / "log.jsonl") if line["type"] == "step"]
    assert first["reward"] is None and "action" not in first
    assert first["action_max"] == 11.0 and first["action_norm"] == pytest.approx(float(torch.arange(12.0).norm()))
    assert second["reward"] is None and second["return"] is None
    assert second["action"] == [1.0, 0.0, 0.0]


def test_a_log_without_steps_still_has_metadata_and_summary(tmp_path):
    with JsonlWriter(tmp_path / "log.jsonl"):
        pass
    assert [line["type"] for line in _lines(tmp_path / "log.jsonl")] == ["metadata", "summary"]


def test_a_step_cut_by_max_steps_says_truncated(tmp_path):
    result = _run(tmp_path, num_trajs=1, max_steps=2)
    steps = [line for line in _lines(tmp_path / "run.jsonl") if line["type"] == "step"]
    episode = result.metrics["per_episode"][0]
    assert episode["length"] == 2 and episode["truncated"] is True and episode["terminated"] is False
    assert steps[-1]["truncated"] is True and steps[-1]["done"] is True and steps[0]["truncated"] is False
