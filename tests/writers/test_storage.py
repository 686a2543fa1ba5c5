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


class _RunsCode:
    """Unpickling this creates ``marker``: the stand-in for a payload that calls os.system."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _crafted(tmp_path, marker):
    """A rollouts folder whose non-tensor entry tensordict stored pickled (what a crafted folder ships)."""
    from tensordict import NonTensorData

    td = TensorDict({"obs": torch.zeros(3, 2)}, batch_size=[3])
    td["info"] = NonTensorData(_RunsCode(str(marker)), batch_size=[3])
    save_rollouts([td], tmp_path / "shared")
    assert list((tmp_path / "shared").rglob("other.pickle")), "tensordict stored the entry some other way"
    return tmp_path / "shared"


def test_a_pickled_entry_is_refused_and_runs_nothing_unless_trusted(tmp_path):
    from torchrl_render import UnsafeRolloutsError

    marker = tmp_path / "pwned"
    folder = _crafted(tmp_path, marker)
    with pytest.raises(UnsafeRolloutsError, match=r"pickled non-tensor entry.*runs code.*--trust-rollouts"):
        load_rollouts(folder)
    assert not marker.exists()
    load_rollouts(folder, trust=True)   # the opt-in loads what the user chose to trust
    assert marker.exists()


def test_replay_of_a_pickled_rollouts_folder_exits_2_naming_the_flag(tmp_path, capsys):
    from helpers.clicode import exit_code

    marker = tmp_path / "pwned"
    folder = _crafted(tmp_path, marker)
    model = tmp_path / "m.xml"
    model.write_text("<mujoco><worldbody><geom size='.1'/></worldbody></mujoco>")
    code = exit_code(["replay", str(folder), "--mujoco-model-path", str(model), "--out", str(tmp_path / "r.html")])
    err = capsys.readouterr().err
    assert code == 2 and "--trust-rollouts" in err and "Traceback" not in err
    assert not marker.exists() and not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("folder", ["../outside", "/etc", "a/../../outside", "..", ".", "", 3, "link"])
def test_an_index_entry_outside_the_folder_is_never_followed(tmp_path, folder):
    outside = tmp_path / "outside"
    save_rollouts([TensorDict({"x": torch.ones(2)}, batch_size=[2])], outside)   # a readable folder elsewhere
    root = tmp_path / "rollouts"
    save_rollouts([TensorDict({"x": torch.zeros(2)}, batch_size=[2])], root)
    (root / "link").symlink_to(outside / "traj0000")
    index = json.loads((root / "index.json").read_text())
    index["trajectories"][0]["folder"] = folder
    (root / "index.json").write_text(json.dumps(index))
    with pytest.raises(RenderError, match="not inside.*never read"):
        load_rollouts(root)


def test_a_symlink_inside_a_trajectory_to_outside_is_refused(tmp_path):
    secret = tmp_path / "secret.memmap"
    secret.write_bytes(b"\0" * 8)
    root = tmp_path / "rollouts"
    save_rollouts([TensorDict({"x": torch.zeros(2)}, batch_size=[2])], root)
    target = root / "traj0000" / "x.memmap"
    target.unlink()
    target.symlink_to(secret)
    with pytest.raises(RenderError, match="links to.*outside the rollout folder"):
        load_rollouts(root)


def test_a_malformed_index_gets_the_paragraph(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "index.json").write_text("{not json")
    with pytest.raises(RenderError, match="not readable JSON"):
        load_rollouts(tmp_path / "r")
    (tmp_path / "r" / "index.json").write_text('{"torchrl_render_rollouts": 1, "trajectories": "traj0000"}')
    with pytest.raises(RenderError, match="no valid list of trajectories"):
        load_rollouts(tmp_path / "r")
