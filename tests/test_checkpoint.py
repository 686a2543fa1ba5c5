"""Checkpoint loading: safe by default, hashing, inference, fitting the policy."""

from __future__ import annotations

import hashlib
import pickle

import pytest
import torch

from torchrl_render import CheckpointError, UnsafeCheckpointError, load_checkpoint, save_render_checkpoint
from torchrl_render.checkpoint import infer_state_dict, load_into_policy


class Evil:
    """Unpickling this runs code: it creates a marker file."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_round_trip_and_sha256(tmp_path):
    net = torch.nn.Linear(3, 2)
    path = save_render_checkpoint(tmp_path / "p.pt", net, env_metadata={"env_name": "X"}, metrics={"r": 1.0})
    payload, digest = load_checkpoint(path)
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest()
    sd, where = infer_state_dict(payload)
    assert where == "model_state_dict" and torch.equal(sd["weight"], net.weight)
    assert payload["env_name"] == "X" and payload["metrics"] == {"r": 1.0}


def test_save_refuses_unpicklable_metadata(tmp_path):
    with pytest.raises(CheckpointError, match="only full unpickling could load"):
        save_render_checkpoint(tmp_path / "p.pt", torch.nn.Linear(1, 1), env_metadata={"obj": object()})
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
    path = save_render_checkpoint(tmp_path / "p.pt", torch.nn.Linear(30, 30))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        load_checkpoint(path)


def test_remote_url_refused():
    with pytest.raises(CheckpointError, match="is a URL; only local files are read"):
        load_checkpoint("https://example.com/policy.pt")


@pytest.mark.parametrize("layout,where", [
    (lambda sd: {"model_state_dict": sd}, "model_state_dict"),
    (lambda sd: {"policy": sd, "step": 3}, "policy"),
    (lambda sd: {"state_dict": sd}, "state_dict"),
    (lambda sd: sd, "<root>"),
])
def test_infer_layouts(layout, where):
    sd = torch.nn.Linear(2, 2).state_dict()
    found, at = infer_state_dict(layout(sd))
    assert at == where and found.keys() == sd.keys()


def test_explicit_keys():
    sd = torch.nn.Linear(2, 2).state_dict()
    payload = {"agent": {"actor_weights": sd, "critic_weights": {}}}
    found, at = infer_state_dict(payload, checkpoint_key="agent", state_dict_key="actor_weights")
    assert at == "agent.actor_weights" and found.keys() == sd.keys()
    with pytest.raises(CheckpointError, match="has no entry 'actr'.*actor_weights"):
        infer_state_dict(payload, checkpoint_key="agent", state_dict_key="actr")


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
    payload, _ = load_checkpoint(tmp_path / "w.safetensors")
    assert infer_state_dict(payload)[1] == "<root>"
