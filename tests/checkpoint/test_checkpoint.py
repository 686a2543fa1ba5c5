"""Checkpoint loading: safe by default, hashing, inference, fitting the policy."""

from __future__ import annotations

import hashlib

import pytest
import torch

from torchrl_render import (
    CheckpointError,
    UnsafeCheckpointError,
    load_checkpoint,
    save_render_checkpoint,
)
from torchrl_render.checkpoint import find_state_dict, load_into_policy, read_checkpoint

from helpers.paths import ROOT


class Evil:
    """Unpickling this runs code: it creates a marker file."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_round_trip_and_sha256(tmp_path):
    net = torch.nn.Linear(3, 2)
    path = save_render_checkpoint(tmp_path / "p.pt", net, env_metadata={"env_name": "X"}, metrics={"r": 1.0},
                                  format="pt")
    payload, digest = read_checkpoint(path)
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest()
    sd, where = find_state_dict(payload)
    assert where == "model_state_dict" and torch.equal(sd["weight"], net.weight)
    assert payload["env_name"] == "X" and payload["metrics"] == {"r": 1.0}


def test_save_refuses_unpicklable_metadata(tmp_path):
    with pytest.raises(CheckpointError, match="only full unpickling could load"):
        save_render_checkpoint(tmp_path / "p.pt", torch.nn.Linear(1, 1), env_metadata={"obj": object()}, format="pt")
    assert not (tmp_path / "p.pt").exists()


def test_pickle_payload_refused_and_nothing_runs(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    torch.save({"x": Evil(str(marker))}, path)
    with pytest.raises(UnsafeCheckpointError) as exc:
        load_checkpoint(path)
    assert not marker.exists()
    assert "--trust-checkpoint" in str(exc.value) and "runs code" in str(exc.value)
    load_checkpoint(path, trust=True)   # opting in does run it
    assert marker.exists()


class _Calls:
    """Unpickling this calls ``fn(*args)``: the payloads a crafted checkpoint carries."""

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


def _payloads(marker):
    import builtins
    import os
    import subprocess

    return {"os.system": _Calls(os.system, f"touch {marker}"),
            "subprocess": _Calls(subprocess.call, ["touch", str(marker)]),
            "builtins.exec": _Calls(builtins.exec, f"open({str(marker)!r}, 'w').close()"),
            "open": _Calls(open, str(marker), "w")}


@pytest.mark.parametrize("zipped", [True, False], ids=["zip", "legacy"])
@pytest.mark.parametrize("kind", ["os.system", "subprocess", "builtins.exec", "open"])
def test_a_code_running_checkpoint_is_named_as_such_and_trust_loads_it(tmp_path, kind, zipped):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    torch.save({"model_state_dict": {"w": torch.ones(1)}, "x": _payloads(marker)[kind]}, path,
               _use_new_zipfile_serialization=zipped)
    with pytest.raises(UnsafeCheckpointError) as exc:
        load_checkpoint(path)
    text = str(exc.value)
    assert not marker.exists()
    assert "runs code" in text and "--trust-checkpoint" in text and "GLOBAL" in text
    assert "corrupt" not in text and "truncated" not in text
    assert "weights_only" not in text and "Re-running" not in text   # never torch's advice to unpickle
    payload = load_checkpoint(path, trust=True)   # the opt-in loads what the user chose to trust
    assert marker.exists() and torch.equal(payload["model_state_dict"]["w"], torch.ones(1))


@pytest.mark.parametrize("zipped", [True, False], ids=["zip", "legacy"])
@pytest.mark.parametrize("trust", [False, True])
def test_a_damaged_checkpoint_is_called_damaged_with_or_without_trust(tmp_path, zipped, trust):
    path = tmp_path / "w.pt"
    torch.save({"w": torch.ones(100)}, path, _use_new_zipfile_serialization=zipped)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(CheckpointError, match="cannot be read.*truncated or corrupt") as exc:
        load_checkpoint(path, trust=trust)
    assert not isinstance(exc.value, UnsafeCheckpointError) and "weights_only" not in str(exc.value)


@pytest.mark.parametrize("maker,fragment", [
    (lambda p: p, "does not exist"),
    (lambda p: (p.mkdir(), p)[1], "is a folder"),
    (lambda p: (p.write_bytes(b"not a checkpoint at all"), p)[1], "cannot be read"),
])
def test_bad_paths(tmp_path, maker, fragment):
    path = maker(tmp_path / "c.pt")
    with pytest.raises(CheckpointError, match=fragment):
        load_checkpoint(path)


def test_truncated_checkpoint(tmp_path):
    path = save_render_checkpoint(tmp_path / "p.pt", torch.nn.Linear(30, 30), format="pt")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        load_checkpoint(path)


def test_remote_url_refused():
    with pytest.raises(CheckpointError, match="Only local checkpoint paths are read, and checkpoint .* is a URL"):
        load_checkpoint("https://example.com/policy.pt")


@pytest.mark.parametrize("layout,where", [
    (lambda sd: {"model_state_dict": sd}, "model_state_dict"),
    (lambda sd: {"policy": sd, "step": 3}, "policy"),
    (lambda sd: {"state_dict": sd}, "state_dict"),
    (lambda sd: sd, "<root>"),
])
def test_infer_layouts(layout, where):
    sd = torch.nn.Linear(2, 2).state_dict()
    found, at = find_state_dict(layout(sd))
    assert at == where and found.keys() == sd.keys()


def test_explicit_keys():
    sd = torch.nn.Linear(2, 2).state_dict()
    payload = {"agent": {"actor_weights": sd, "critic_weights": {}}}
    found, at = find_state_dict(payload, checkpoint_key="agent", state_dict_key="actor_weights")
    assert at == "agent.actor_weights" and found.keys() == sd.keys()
    with pytest.raises(CheckpointError, match="has no entry 'actr'.*actor_weights"):
        find_state_dict(payload, checkpoint_key="agent", state_dict_key="actr")


def test_state_dict_that_does_not_fit_names_keys():
    policy = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 1))
    wrong = torch.nn.Linear(3, 4).state_dict()
    with pytest.raises(CheckpointError) as exc:
        load_into_policy(policy, wrong)
    msg = str(exc.value)
    assert "missing keys ['0.bias', '0.weight', '1.bias', '1.weight']" in msg
    assert "unexpected keys ['bias', 'weight']" in msg and "--no-strict-load" in msg


def test_shape_mismatch_named():
    with pytest.raises(CheckpointError, match=r"weight: checkpoint \(4, 3\) vs policy \(5, 3\)"):
        load_into_policy(torch.nn.Linear(3, 5), torch.nn.Linear(3, 4).state_dict())


def test_already_loaded_is_detected():
    net = torch.nn.Linear(2, 2)
    assert load_into_policy(net, net.state_dict()) == "already loaded"
    other = torch.nn.Linear(2, 2).state_dict()
    assert load_into_policy(net, other) == "loaded" and torch.equal(net.weight, other["weight"])


def test_safetensors(tmp_path):
    from safetensors.torch import save_file
    sd = torch.nn.Linear(2, 2).state_dict()
    save_file(sd, str(tmp_path / "w.safetensors"))
    payload = load_checkpoint(tmp_path / "w.safetensors")
    assert find_state_dict(payload)[1] == "<root>"


def test_a_save_pretrained_folder_stands_for_its_model_safetensors(tmp_path):
    # the layout Hugging Face's save_pretrained writes (LeRobot's pretrained_model, transformers' models): the
    # folder as --ckpt loads its weights file and hashes it; a folder with the weights but no config is refused
    from safetensors.torch import save_file

    from torchrl_render.checkpoint import check_checkpoint_path, checkpoint_hash

    folder = tmp_path / "pretrained_model"
    folder.mkdir()
    sd = torch.nn.Linear(2, 2).state_dict()
    save_file(sd, str(folder / "model.safetensors"))
    with pytest.raises(CheckpointError, match="save_pretrained folder"):
        check_checkpoint_path(folder)
    (folder / "config.json").write_text('{"type": "act"}')
    assert check_checkpoint_path(folder) == folder / "model.safetensors"
    assert torch.equal(load_checkpoint(folder)["weight"], sd["weight"])
    assert checkpoint_hash(folder) == hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()


# -- TorchRL's own checkpoint format (torchrl.checkpoint.Checkpoint), written by torchrl's savers --------------

def _policy():
    torch.manual_seed(1)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 1))


@pytest.mark.parametrize("fmt", ["directory", "archive"])
def test_torchrl_render_checkpoint_read_without_torchrl(tmp_path, fmt):
    import warnings

    from torchrl.render import checkpoint_hash
    from torchrl.render import save_render_checkpoint as theirs
    net = _policy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = theirs(tmp_path / ("ck.torchrl" if fmt == "archive" else "ck"), net,
                      env_metadata={"env_name": "X-v0", "vecnorm": {"loc": torch.arange(3.0)}}, frames=12,
                      metrics={"r": 1.5}, config={"lr": 0.1}, extra={"note": "hi"}, format=fmt)
    payload, digest = read_checkpoint(path)
    assert digest == checkpoint_hash(path)
    if fmt == "directory":  # its manifest stands for the folder
        assert read_checkpoint(path / "manifest.json")[1] == digest
    sd, where = find_state_dict(payload)
    assert where == "model_state_dict" and sd.keys() == net.state_dict().keys()
    assert all(torch.equal(sd[k], v) for k, v in net.state_dict().items())
    assert (payload["env_name"], payload["frames"], payload["metrics"], payload["config"], payload["note"]) == \
        ("X-v0", 12, {"r": 1.5}, {"lr": 0.1}, "hi")
    assert torch.equal(payload["vecnorm"]["loc"], torch.arange(3.0))


class _Blob:
    """A component that only its own object can restore (dump/load), like a replay buffer."""

    def dump(self, path):
        (path / "data.bin").write_bytes(b"\x00" * 64)

    def load(self, path):
        raise AssertionError("never called")


@pytest.mark.parametrize("fmt", ["directory", "archive"])
def test_torchrl_trainer_checkpoint_reads_only_the_policy(tmp_path, fmt):
    from torchrl.checkpoint import Checkpoint
    net = _policy()
    optim = torch.optim.Adam(net.parameters())
    net(torch.ones(3)).sum().backward()
    optim.step()
    path = Checkpoint(format=fmt, policy=net, optimizer=optim, replay_buffer=_Blob(),
                      trainer_state={"frames": 7}).save(tmp_path / "trainer")
    if fmt == "directory":  # damage what must not be read: reading it would fail
        for name in ("optimizer", "replay_buffer"):
            for f in next((path / "components").glob(f"*-{name}")).rglob("*"):
                if f.is_file():
                    f.write_bytes(b"garbage")
    payload = load_checkpoint(path)
    sd, _ = find_state_dict(payload)
    assert all(torch.equal(sd[k], v) for k, v in net.state_dict().items())
    assert payload.loaded == ["policy", "trainer_state"] and payload["frames"] == 7 and isinstance(payload, dict)
    assert not any("optimizer" in r or "replay_buffer" in r for r in payload.source.reads)
    with pytest.raises(CheckpointError, match="'torchrl.dump_load' adapter.*--checkpoint-key"):
        find_state_dict(payload, checkpoint_key="replay_buffer")


@pytest.mark.parametrize("payload_format", ["archive", "consolidated", "torch"])
def test_torchrl_state_dict_payload_formats(tmp_path, payload_format):
    from torchrl.checkpoint import Checkpoint, StateDictCheckpointAdapter
    net = _policy()
    ck = Checkpoint()
    ck.register("policy", net, adapter=StateDictCheckpointAdapter(payload_format=payload_format))
    payload = load_checkpoint(ck.save(tmp_path / "ck"))
    sd, _ = find_state_dict(payload)
    assert all(torch.equal(sd[k], v) for k, v in net.state_dict().items())


def test_torchrl_checkpoint_with_pickle_runs_nothing(tmp_path):
    from torchrl.checkpoint import Checkpoint, StateDictCheckpointAdapter
    marker = tmp_path / "pwned"

    class Holder:
        def state_dict(self):
            return {"x": Evil(str(marker))}

        def load_state_dict(self, sd):
            pass
    ck = Checkpoint()
    ck.register("policy", Holder(), adapter=StateDictCheckpointAdapter(payload_format="torch"))
    path = ck.save(tmp_path / "ck")
    with pytest.raises(UnsafeCheckpointError, match="--trust-checkpoint"):  # the policy is read at load
        load_checkpoint(path)
    assert not marker.exists()
    trusted = load_checkpoint(path, trust=True)
    assert "x" in trusted["model_state_dict"] and marker.exists()


def _torchrl_dir(tmp_path):
    from torchrl.checkpoint import Checkpoint
    return Checkpoint(policy=torch.nn.Linear(30, 30)).save(tmp_path / "ck")


@pytest.mark.parametrize("damage,fragment", [
    (lambda p: next(p.rglob("tensor_00000000.memmap")).write_bytes(b"\0" * 10), "has 10 bytes, 3600 expected"),
    (lambda p: (p / "manifest.json").write_text("{nope"), "manifest.json is not valid JSON"),
    (lambda p: (p / "manifest.json").write_text('{"format": "torchrl.checkpoint", "format_version": 9}'),
     "format 'torchrl.checkpoint', version 1"),
    (lambda p: next(p.rglob("state.json")).unlink(), "cannot be read (FileNotFoundError"),
])
def test_damaged_torchrl_checkpoints(tmp_path, damage, fragment):
    path = _torchrl_dir(tmp_path)
    damage(path)
    with pytest.raises(CheckpointError) as exc:
        payload = load_checkpoint(path)
        find_state_dict(payload)
    assert fragment in str(exc.value)


def test_torchrl_manifest_cannot_point_outside(tmp_path):
    import json
    path = _torchrl_dir(tmp_path)
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["components"]["policy"]["path"] = "../../etc"
    (path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(CheckpointError, match="outside the checkpoint"):
        load_checkpoint(path)


def test_torchrl_checkpoint_end_to_end(tmp_path):
    from torchrl.checkpoint import Checkpoint

    from torchrl_render import RenderConfig, render_policy

    from helpers.tinyenv import make_policy
    net = make_policy()
    torch.nn.init.constant_(net[0].weight, 0.0)
    torch.nn.init.constant_(net[0].bias, 0.25)
    path = Checkpoint(format="archive", policy=net).save(tmp_path / "policy.torchrl")
    result = render_policy(RenderConfig(ckpt=path, policy="helpers.tinyenv:make_policy", env="helpers.tinyenv:make_env",
                                        format="frames", out=tmp_path / "f", from_pixels=True, max_steps=2))
    actions = result.trajectories[0]["action"]
    assert torch.allclose(actions, torch.full_like(actions, float(torch.tanh(torch.tensor(0.25)))))
    assert any("loaded from checkpoint entry 'model_state_dict'" in w for w in result.warnings)


def test_load_checkpoint_returns_the_payload_as_torchrl_render_does(tmp_path):
    from torchrl.render import load_checkpoint as theirs

    path = tmp_path / "p.pt"
    torch.save({"model_state_dict": {"w": torch.ones(2)}, "env_name": "X"}, path)
    ours = load_checkpoint(path, "cpu")
    assert ours.keys() == theirs(path).keys() and torch.equal(ours["model_state_dict"]["w"], torch.ones(2))


def test_weights_only_false_is_trust(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    torch.save({"x": Evil(str(marker))}, path)
    for safe in ({}, {"weights_only": True}, {"weights_only": None}):
        with pytest.raises(UnsafeCheckpointError):
            load_checkpoint(path, **safe)
    assert not marker.exists()
    load_checkpoint(path, weights_only=False)
    assert marker.exists()


def test_save_render_checkpoint_warns_on_the_legacy_default_and_makes_the_folder(tmp_path, recwarn):
    path = tmp_path / "deep" / "er" / "p.pt"
    with pytest.warns(FutureWarning, match="v0.15"):
        assert save_render_checkpoint(path, torch.nn.Linear(2, 1)) == path
    assert "model_state_dict" in torch.load(path, weights_only=True)
    recwarn.clear()
    save_render_checkpoint(tmp_path / "new" / "q.pt", torch.nn.Linear(2, 1), format="pt")
    assert not [w for w in recwarn if issubclass(w.category, FutureWarning)]
    archive = save_render_checkpoint(tmp_path / "other" / "r.torchrl", torch.nn.Linear(2, 1), format="archive")
    assert archive.is_file()


def test_archive_keeps_nested_tensors_as_tensors(tmp_path):
    stats = {"vecnorm": {"loc": torch.ones(2), "scale": torch.full((2,), 2.0)}, "env_name": "X"}
    path = save_render_checkpoint(tmp_path / "p.torchrl", torch.nn.Linear(2, 2), env_metadata=stats, format="archive")
    payload = load_checkpoint(path)
    assert torch.equal(payload["vecnorm"]["scale"], torch.full((2,), 2.0)) and payload["env_name"] == "X"


def test_trainer_state_component_gives_frames(tmp_path):
    from torchrl.checkpoint import Checkpoint

    class Trainer:  # a component with state_dict(), as torchrl's trainers have
        def state_dict(self):
            return {"collected_frames": 37}

        def load_state_dict(self, state):
            pass

    path = Checkpoint(format="archive", policy=torch.nn.Linear(2, 2), trainer_state=Trainer()).save(
        tmp_path / "t.torchrl")
    assert load_checkpoint(path)["frames"] == 37


@pytest.mark.parametrize("given", ["tuple", "path"])
def test_a_payload_of_the_wrong_type_is_refused(tmp_path, given):
    from torchrl_render import RenderConfig, load_render_policy, make_render_env

    path = tmp_path / "p.pt"
    torch.save({"model_state_dict": torch.nn.Linear(3, 1).state_dict()}, path)
    wrong = read_checkpoint(path) if given == "tuple" else str(path)
    cfg = RenderConfig(ckpt=path, policy="helpers.tinyenv:make_policy", env="helpers.tinyenv:make_env", format="jsonl",
                       out=tmp_path / "r.jsonl")
    with pytest.raises(CheckpointError, match="takes the loaded checkpoint payload") as exc:
        make_render_env(cfg, checkpoint=wrong)
    if given == "tuple":  # pinned: docs/troubleshooting.md quotes it
        doc = (ROOT / "docs" / "troubleshooting.md").read_text()
        assert " ".join(str(exc.value).split()) in doc
    with pytest.raises(CheckpointError, match="takes the loaded checkpoint payload"):
        load_render_policy(cfg, None, checkpoint=wrong)


def _rezip(src, dst, bomb_member, inflated):
    """``src``'s records copied into ``dst``, ``bomb_member`` replaced by ``inflated`` zero bytes, deflated
    (about 1,000:1): a zip bomb of the checkpoint's own layout."""
    import zipfile

    with zipfile.ZipFile(src) as old, zipfile.ZipFile(dst, "w") as new:
        for info in old.infolist():
            if info.filename != bomb_member:
                new.writestr(info, old.read(info))
                continue
            big = zipfile.ZipInfo(info.filename)
            big.compress_type = zipfile.ZIP_DEFLATED
            with new.open(big, "w", force_zip64=True) as fh:
                chunk = bytes(1 << 20)
                for _ in range(inflated >> 20):
                    fh.write(chunk)
    return dst


def test_a_zip_bomb_checkpoint_is_refused_before_it_is_inflated(tmp_path):
    import zipfile

    plain = tmp_path / "plain.pt"
    torch.save({"model_state_dict": {"w": torch.ones(2)}}, plain)
    member = next(n for n in zipfile.ZipFile(plain).namelist() if n.endswith("/data/0"))
    bomb = _rezip(plain, tmp_path / "bomb.pt", member, 96 << 20)   # 96 MiB in about 100 kB
    assert bomb.stat().st_size < 1 << 20
    with pytest.raises(CheckpointError, match=r"declares a record .*data/0.* of 96\.0 MiB in a 0\.\d MiB file.*"
                                              r"refused before inflating") as exc:
        load_checkpoint(bomb, trust=True)   # trusting the code in a file is not trusting its sizes
    assert "zip bomb" in str(exc.value)
    assert torch.equal(load_checkpoint(plain)["model_state_dict"]["w"], torch.ones(2))   # torch.save's own: fine


def test_a_zip_bomb_inside_a_torchrl_archive_is_refused_before_it_is_inflated(tmp_path):
    plain = save_render_checkpoint(tmp_path / "p.torchrl", torch.nn.Linear(2, 2), format="archive")
    bomb = _rezip(plain, tmp_path / "bomb.torchrl", "components/0000-policy/state/tensor_00000000.memmap", 96 << 20)
    with pytest.raises(CheckpointError, match=r"declares a record .*tensor_00000000.memmap.* of 96\.0 MiB"):
        load_checkpoint(bomb)
