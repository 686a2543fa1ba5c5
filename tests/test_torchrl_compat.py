"""The torchrl.render compatibility surface, in one place (issue 13).

Differential tests: the same inputs go to ``torchrl.render`` 0.14.1 (installed in the test venv;
the package never imports it) and to ``torchrl_render``, and the results are compared. What we do
differently on purpose is listed in docs/migrating.md and named in the sets below.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import typing
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
import torchrl.render as theirs
import torchrl.render.cli as their_cli
import torchrl.render.video as their_video
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

import torchrl_render as ours
import torchrl_render.artifacts as our_artifacts
import torchrl_render.cli as our_cli
import torchrl_render.video as our_video
from mediaprobe import decode_frames, probe_mp4

#: Issue 14 (the live viewer) exports these; it shrinks this set as it adds them.
OWNED_BY_ISSUE_14 = {"MujocoStateReader", "display_mujoco_wasm_viewer", "extract_qpos_trajectory",
                     "play_mujoco_wasm_trajectory", "send_mujoco_wasm_qpos", "write_mujoco_wasm_viewer"}
#: Names whose signature differs on purpose (docs/migrating.md says how and why).
DIFFERENT_SIGNATURE = {
    "load_checkpoint": "returns (payload, sha256); trust= instead of weights_only=; safe by default",
    "render_policy": "config is positional-only and optional; fields as keyword arguments; command, on_episode",
}
DATACLASSES = ("FrameBundle", "RenderConfig", "RenderEnvSpec", "RenderPolicySpec", "RenderResult")
#: RenderConfig fields with a better default: None means "given by the config file or inferred".
BETTER_DEFAULTS = {"ckpt", "policy", "env", "num_trajs", "format"}


def _shape(obj):
    return [(p.name, p.kind, p.default) for p in inspect.signature(obj).parameters.values()]


def test_every_torchrl_render_name_is_exported():
    missing = set(theirs.__all__) - OWNED_BY_ISSUE_14 - set(ours.__all__)
    assert not missing
    assert ours.__all__ == sorted(ours.__all__)


@pytest.mark.parametrize("name", sorted(set(theirs.__all__) - OWNED_BY_ISSUE_14 - set(DATACLASSES)
                                        - set(DIFFERENT_SIGNATURE)))
def test_same_signature(name):
    mine, yours = getattr(ours, name), getattr(theirs, name)
    if typing.get_origin(yours) is typing.Literal:
        assert set(typing.get_args(yours)) <= set(typing.get_args(mine))
        return
    assert _shape(mine) == _shape(yours)


@pytest.mark.parametrize("module, theirs_module, names", [
    (our_cli, their_cli, ["build_parser", "config_from_args", "main"]),
    (our_video, their_video, ["compose_frame_grid", "normalize_frame_output"]),
    (our_artifacts, theirs.artifacts, ["write_render_artifact"]),
])
def test_submodules_have_the_same_functions(module, theirs_module, names):
    for name in names:
        assert _shape(getattr(module, name)) == _shape(getattr(theirs_module, name)), name


@pytest.mark.parametrize("cls", DATACLASSES)
def test_dataclass_fields_keep_names_and_defaults(cls):
    mine = {f.name: f for f in dataclasses.fields(getattr(ours, cls))}
    for f in dataclasses.fields(getattr(theirs, cls)):
        assert f.name in mine, f.name
        if f.default is not dataclasses.MISSING and f.name not in BETTER_DEFAULTS:
            assert mine[f.name].default == f.default, f.name
    positional = [f.name for f in dataclasses.fields(getattr(theirs, cls))][:3]
    assert [f for f in mine][:3] == positional


def test_literal_types_match_our_registries_and_choices():
    from torchrl_render.backends import BACKENDS
    from torchrl_render.config import ENV_BACKENDS, EXPLORATION_MODES, NOTEBOOK_RENDER_BACKENDS
    from torchrl_render.writers import WRITERS

    assert set(typing.get_args(ours.RenderFormat)) == set(WRITERS.names())
    assert set(typing.get_args(ours.RenderBackendName)) == set(BACKENDS.names())
    assert set(typing.get_args(ours.EnvBackendName)) == set(ENV_BACKENDS)
    assert set(typing.get_args(ours.ExplorationMode)) == set(EXPLORATION_MODES)
    assert set(typing.get_args(ours.NotebookRenderBackendName)) == set(NOTEBOOK_RENDER_BACKENDS)


# -- pure functions, same inputs -------------------------------------------------------------------


@pytest.mark.parametrize("value", ["observation", "next.reward", "agent.obs.pos", ("a", "b"), ["x", "y"], " obs "])
def test_parse_nested_key_and_key_to_string(value):
    assert ours.parse_nested_key(value) == theirs.parse_nested_key(value)
    key = theirs.parse_nested_key(value)
    assert ours.key_to_string(key) == theirs.key_to_string(key)


def _payloads():
    sd = torch.nn.Linear(2, 1).state_dict()
    return {"model_state_dict": {"model_state_dict": sd, "env_name": "X"}, "policy": {"policy": sd, "frames": 3},
            "state_dict": {"state_dict": sd}, "raw": dict(sd), "first wins": {"model_state_dict": sd, "policy": {}}}


@pytest.mark.parametrize("layout", list(_payloads()))
def test_infer_state_dict(layout):
    payload = _payloads()[layout]
    mine, yours = ours.infer_state_dict(payload), theirs.infer_state_dict(payload)
    assert mine.keys() == yours.keys() and all(torch.equal(mine[k], yours[k]) for k in mine)
    explicit = {"weights": dict(yours)}
    if layout != "first wins":
        assert ours.infer_state_dict(explicit, key="weights").keys() == theirs.infer_state_dict(explicit, "weights").keys()


def test_infer_state_dict_failures_raise_in_both():
    for bad in ({"frames": 3}, [1, 2]):
        with pytest.raises(TypeError):
            theirs.infer_state_dict(bad)
        with pytest.raises(ours.CheckpointError, match="no state dict found"):
            ours.infer_state_dict(bad)


def _frames():
    rng = np.random.default_rng(0)
    return [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in [(4, 5), (3, 6), (4, 4), (2, 2), (5, 3)]]


@pytest.mark.parametrize("layout", ["single", "grid", "horizontal", "vertical"])
@pytest.mark.parametrize("count", [1, 2, 3, 5])
def test_compose_frame_grid(layout, count):
    frames = _frames()[:count]
    assert np.array_equal(our_video.compose_frame_grid(frames, layout), their_video.compose_frame_grid(frames, layout))


def test_normalize_frame_output():
    rng = np.random.default_rng(1)
    cases = [None, rng.random((4, 4, 3)).astype(np.float32), {"front": rng.integers(0, 256, (3, 5, 5), np.uint8),
             "gone": None}, [rng.integers(0, 256, (4, 4), np.uint8), None, rng.integers(0, 256, (4, 4, 4), np.uint8)],
             torch.rand(4, 4, 1)]
    for case in cases:
        mine, yours = our_video.normalize_frame_output(case), their_video.normalize_frame_output(case)
        assert mine.keys() == yours.keys()
        for key in mine:  # float frames: we round, torchrl.render truncates; at most one level apart
            assert mine[key].dtype == np.uint8 and mine[key].shape == yours[key].shape
            assert np.abs(mine[key].astype(int) - yours[key].astype(int)).max() <= 1


def test_checkpoint_hash_of_files_and_torchrl_checkpoint_folders(tmp_path):
    from torchrl.checkpoint import Checkpoint

    file = ours.save_render_checkpoint(tmp_path / "p.pt", torch.nn.Linear(2, 1))
    folder = Checkpoint(policy=torch.nn.Linear(2, 1), metrics={"r": 1.0}).save(tmp_path / "ck")
    for path in (file, folder):
        assert ours.checkpoint_hash(path) == theirs.checkpoint_hash(path)


def test_import_from_string(tmp_path):
    (tmp_path / "mod.py").write_text("VALUE = 41\nclass A:\n    class B:\n        x = 2\n")
    for spec in ("json:dumps", "os.path:sep", f"{tmp_path}/mod.py:VALUE", f"{tmp_path}/mod.py:A.B.x"):
        assert ours.import_from_string(spec) == theirs.import_from_string(spec)
    for bad, kind in (("no_colon", ValueError), ("json:nope", ImportError), ("no_such_module_x:f", ImportError)):
        with pytest.raises(kind):
            theirs.import_from_string(bad)
        with pytest.raises(kind):
            ours.import_from_string(bad)


def _factories():
    def by_name(seed, device="cpu"):
        return ("by_name", seed, device)

    def one_spec(cfg):
        return ("spec", cfg)

    def var_kw(**kw):
        return ("kw", sorted(kw))

    def var_pos(*args):
        return ("pos", args)

    def nothing():
        return "nothing"

    return [by_name, one_spec, var_kw, var_pos, nothing]


@pytest.mark.parametrize("factory", _factories(), ids=lambda f: f.__name__)
def test_call_with_supported_kwargs(factory):
    kwargs = {"seed": 3, "device": "cpu", "spec": "S"}
    assert ours.call_with_supported_kwargs(factory, "S", kwargs) == theirs.call_with_supported_kwargs(factory, "S", kwargs)


def test_tensordict_policy_adapter():
    module = TensorDictModule(torch.nn.Linear(3, 2), in_keys=["observation"], out_keys=["action"])
    td = TensorDict({"observation": torch.arange(3.0)}, [])
    for policy in (torch.nn.Linear(3, 3), module):  # a TensorDict module; a module that rejects a TensorDict
        mine = ours.TensorDictPolicyAdapter(policy, "observation", "action")(td.clone())
        yours = theirs.TensorDictPolicyAdapter(policy, "observation", "action")(td.clone())
        assert torch.equal(mine["action"], yours["action"])
    # Deliberately different: a tensor function that also accepts a TensorDict. torchrl.render calls it
    # with the TensorDict first and returns the doubled TensorDict (no action); we call it with the tensor.
    double = lambda obs: obs * 2  # noqa: E731
    assert "action" not in theirs.TensorDictPolicyAdapter(double, "observation", "action")(td.clone()).keys()
    assert torch.equal(ours.TensorDictPolicyAdapter(double, "observation", "action")(td.clone())["action"],
                       torch.tensor([0.0, 2.0, 4.0]))
    summed = ours.TensorDictPolicyAdapter(lambda obs: {"action": obs.sum(-1, keepdim=True)}, "observation", "action")
    assert torch.equal(summed(td.clone())["action"], torch.tensor([3.0]))
    cfg = ours.RenderConfig(policy="p:m", env="e:m", obs_key="agent.obs")
    adapter = ours.normalize_policy(double, cfg)
    assert adapter.obs_key == ("agent", "obs") and ours.normalize_policy(adapter, cfg) is adapter


def test_add_step_counter_and_seed_env():
    from torchrl.envs import GymEnv
    from torchrl.envs.transforms import StepCounter

    for module in (ours, theirs):
        env = module.add_step_counter(GymEnv("Pendulum-v1"), 4)
        assert module.add_step_counter(env, 4) is env and isinstance(env.transform, StepCounter)
        module.seed_env(env, 5)
        td = env.rollout(10)
        assert td.batch_size == (4,) and bool(td["next", "truncated"][-1])
        env.close()
    a, b = GymEnv("Pendulum-v1"), GymEnv("Pendulum-v1")
    ours.seed_env(a, 7)
    theirs.seed_env(b, 7)
    assert torch.equal(a.reset()["observation"], b.reset()["observation"])


# -- the CLI: the same argv through both parsers -----------------------------------------------------

ARGV = [
    [],
    ["--num-trajs", "3", "--out", "v.gif", "--max-steps", "50", "--fps", "12", "--seed", "4", "--camera", "a,b",
     "--camera-layout", "horizontal", "--stochastic", "--exploration-mode", "mean"],
    ["--obs-key", "agent.obs", "--action-key", "agent.action", "--done-key", "d", "--reward-key", "next.r",
     "--pixel-key", "img", "--from-pixels", "--pixels-only", "--render-mode", "rgb_array", "--render-backend",
     "pixels", "--env-backend", "gymnasium"],
    ["--env-kwargs", '{"a": 1}', "--policy-kwargs", '{"hidden": 8}', "--checkpoint-key", "agent",
     "--state-dict-key", "w", "--no-strict-load", "--no-auto-load-policy", "--train", "--device", "cpu",
     "--policy-device", "cpu", "--env-device", "cpu"],
    ["--save-rollout", "--save-tensordicts", "--save-frames", "--frame-dir", "fr", "--artifact-dir", "art",
     "--metadata", "m.json", "--overwrite", "--video-codec", "libx264", "--format", "frames", "--out", "folder"],
    ["--out", "r.npz", "--mujoco-model-path", "m.xml", "--mujoco-asset-paths", "a", "--mujoco-asset-paths", "b",
     "--mujoco-qpos-key", "next.qpos", "--notebook-viewer-port", "6000", "--notebook-render-backend", "mujoco-wasm",
     "--dry-run", "--validate-only"],
    ["--out", "r.jsonl", "--deterministic", "--eval", "--strict-load", "--auto-load-policy", "--no-from-pixels",
     "--no-pixels-only", "--no-save-rollout", "--no-save-tensordicts", "--no-save-frames", "--no-overwrite"],
]
BASE = ["--ckpt", "policy.pt", "--policy", "pkg.policy:make", "--env", "pkg.env:make"]


def _plain(value):
    if isinstance(value, (Path, torch.device)):
        return str(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@pytest.mark.parametrize("argv", ARGV, ids=lambda a: " ".join(a[:2]) or "defaults")
def test_cli_parses_the_same_argv_into_the_same_config(argv):
    yours = their_cli.config_from_args(their_cli.build_parser().parse_args(BASE + argv))
    mine = our_cli.config_from_args(our_cli.build_parser().parse_args(BASE + argv))
    for f in dataclasses.fields(yours):
        if f.name == "out" and yours.out is None:  # a better default: we resolve it at once (render.<suffix>)
            assert mine.out.name in ("render.mp4", "render_frames"), mine.out
            continue
        assert _plain(getattr(mine, f.name)) == _plain(getattr(yours, f.name)), f.name


def test_every_torchrl_render_flag_is_accepted():
    ours_flags = {o for a in our_cli.build_parser()._actions for o in a.option_strings}
    assert {o for a in their_cli.build_parser()._actions for o in a.option_strings} <= ours_flags
