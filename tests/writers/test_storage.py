"""Rollouts saved as TensorDict memmaps and loaded back equal to what render_policy returned."""

from __future__ import annotations

import json

import pytest
import torch
from tensordict import TensorDict

from torchrl_render import OutputExistsError, RenderConfig, RenderError, render_policy
from torchrl_render.storage import load_rollouts, save_rollouts


def _run(tmp_path, **kw):
    kw.setdefault("out", tmp_path / "run.mp4")
    return render_policy(RenderConfig(policy="helpers.tinyenv:make_policy", env="helpers.tinyenv:make_env",
                                      from_pixels=True, **kw))


def _assert_same(loaded, returned):
    assert len(loaded) == len(returned)
    for a, b in zip(loaded, returned):
        assert a.batch_size == b.batch_size
        assert set(a.keys(True, True)) == set(b.keys(True, True))
        for key in b.keys(True, True):
            assert torch.equal(a.get(key), b.get(key)), key


@pytest.mark.parametrize("flag", ["save_rollout", "save_tensordicts"])
def test_render_policy_rollouts_round_trip(tmp_path, flag):
    result = _run(tmp_path, num_trajs=3, seed=4, **{flag: True})
    folder = tmp_path / "run_rollouts"
    art = next(a for a in result.artifacts if a.format == "tensordict")
    assert art.path == folder and art.info["count"] == 3
    assert art.info["steps"] == sum(e["length"] for e in result.metrics["per_episode"])
    _assert_same(load_rollouts(folder), result.trajectories)
    index = json.loads((folder / "index.json").read_text())
    assert [e["folder"] for e in index["trajectories"]] == ["traj0000", "traj0001", "traj0002"]
    assert "next.reward" in index["trajectories"][0]["keys"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.mp4", "run.mp4.metadata.json", "run_rollouts"]


def test_pixels_kept_round_trip(tmp_path):
    result = _run(tmp_path, max_steps=3, keep_pixels=True, save_rollout=True)
    loaded = load_rollouts(tmp_path / "run_rollouts")
    assert loaded[0]["next", "pixels"].dtype == torch.uint8
    _assert_same(loaded, result.trajectories)


def test_save_and_load_directly(tmp_path):
    tds = [TensorDict({"obs": torch.arange(6.0).reshape(3, 2), "nested": {"flag": torch.ones(3, dtype=torch.bool)}},
                      batch_size=[3]), None]
    art = save_rollouts(tds, tmp_path / "r")
    assert art.format == "tensordict" and art.info["count"] == 2 and art.info["bytes"] > 0
    back = load_rollouts(tmp_path / "r")
    assert back[1] is None and torch.equal(back[0]["nested", "flag"], tds[0]["nested", "flag"])
    assert [p.name for p in tmp_path.iterdir()] == ["r"]                     # no temporary folder left


def test_existing_folder_refused_then_replaced(tmp_path):
    td = TensorDict({"x": torch.zeros(2)}, batch_size=[2])
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "old.txt").write_text("old")
    with pytest.raises(OutputExistsError, match="already exists.*--overwrite"):
        save_rollouts([td], tmp_path / "r")
    assert (tmp_path / "r" / "old.txt").exists()
    save_rollouts([td], tmp_path / "r", overwrite=True)
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == ["index.json", "traj0000"]


def test_failed_save_leaves_nothing(tmp_path):
    class Broken:
        batch_size = torch.Size([1])

        def memmap(self, *args, **kwargs):
            raise OSError("disk full")

    with pytest.raises(RenderError, match="cannot write the rollouts.*disk full"):
        save_rollouts([Broken()], tmp_path / "r")
    assert list(tmp_path.iterdir()) == []


def test_load_errors_say_what_to_pass(tmp_path):
    with pytest.raises(RenderError, match="is not a rollout folder.*does not exist.*--save-rollout"):
        load_rollouts(tmp_path / "nope")
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "index.json").write_text('{"torchrl_render_rollouts": 99, "trajectories": []}')
    with pytest.raises(RenderError, match="unknown layout version"):
        load_rollouts(tmp_path / "r")
