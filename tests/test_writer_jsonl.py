"""The jsonl event log: line types and counts, streamed complete lines, pandas reads it."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
import torch
from tensordict import TensorDict

from torchrl_render import RenderConfig, render_policy
from torchrl_render.rollout import StepRecord
from torchrl_render.writers.jsonl import JsonlWriter


def _run(tmp_path, **kw):
    kw.setdefault("out", tmp_path / "run.jsonl")
    return render_policy(RenderConfig(policy="tinyenv:make_policy", env="tinyenv:make_env", **kw))


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def _step(traj, t, action, reward=1.0, done=False):
    td = TensorDict({"action": action, "next": {"observation": torch.zeros(2)}})
    return StepRecord(traj, t, td["next"], td, 0, reward=reward, done=done)


def test_line_types_and_counts(tmp_path):
    result = _run(tmp_path, num_trajs=3, seed=1)
    lines = _lines(tmp_path / "run.jsonl")
    lengths = [e["length"] for e in result.metrics["per_episode"]]
    types = [line["type"] for line in lines]
    assert types[0] == "metadata" and types[-1] == "summary"
    assert types.count("step") == sum(lengths) and types.count("episode") == 3
    assert lines[0]["config"]["num_trajs"] == 3 and lines[0]["format"] == "torchrl_render.jsonl"
    episode_at = [i for i, t in enumerate(types) if t == "episode"]
    assert episode_at == [1 + sum(lengths[:k + 1]) + k for k in range(3)]    # each right after its last step
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
                      "metadata": 1, "summary": 1}
    steps = frame[frame["type"] == "step"]
    assert steps.groupby("trajectory")["reward"].sum().tolist() == pytest.approx(
        [e["sum_reward"] for e in result.metrics["per_episode"]])


def test_lines_are_on_disk_as_they_happen(tmp_path):
    writer = JsonlWriter(tmp_path / "log.jsonl")
    writer.on_step(StepRecord(0, 0, None, None, 0))
    writer.on_step(_step(0, 1, torch.tensor([0.5])))
    written = [json.loads(line) for line in writer.tmp.read_text().splitlines()]     # not closed yet
    assert [line["type"] for line in written] == ["metadata", "step"]
    assert writer.tmp.read_text().endswith("\n") and not writer.path.exists()
    writer.abort()                                  # an error or Ctrl-C: no log under the requested name
    assert list(tmp_path.iterdir()) == []


def test_non_finite_numbers_become_null_and_big_actions_are_summarised(tmp_path):
    with JsonlWriter(tmp_path / "log.jsonl") as writer:
        writer.on_step(StepRecord(0, 0, None, None, 0))
        writer.on_step(_step(0, 1, torch.arange(12.0), reward=math.nan))
        writer.on_step(_step(0, 2, torch.tensor([1, 0, 0]), reward=math.inf, done=True))
    text = (tmp_path / "log.jsonl").read_text()
    assert "NaN" not in text and "Infinity" not in text
    first, second = [line for line in _lines(tmp_path / "log.jsonl") if line["type"] == "step"]
    assert first["reward"] is None and "action" not in first
    assert first["action_max"] == 11.0 and first["action_norm"] == pytest.approx(float(torch.arange(12.0).norm()))
    assert second["action"] == [1.0, 0.0, 0.0]


def test_a_log_without_steps_still_has_metadata_and_summary(tmp_path):
    with JsonlWriter(tmp_path / "log.jsonl"):
        pass
    assert [line["type"] for line in _lines(tmp_path / "log.jsonl")] == ["metadata", "summary"]
