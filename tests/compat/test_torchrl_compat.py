"""The torchrl.render compatibility surface, in one place.

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
import torchrl.render.mujoco_wasm as their_mujoco_wasm
import torchrl.render.video as their_video
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

import torchrl_render as ours
import torchrl_render.artifacts as our_artifacts
import torchrl_render.cli as our_cli
import torchrl_render.mujoco_wasm as our_mujoco_wasm
import torchrl_render.video as our_video

from helpers.mediaprobe import decode_frames, probe_mp4

#: Names whose signature differs on purpose (docs/migrating.md says how and why).
DIFFERENT_SIGNATURE = {
    "load_checkpoint": "adds trust= (our name for weights_only=False); weights_only=None is safe for every file",
    "render_policy": "config is positional-only and optional; fields as keyword arguments; command, on_episode",
}
DATACLASSES = ("FrameBundle", "RenderConfig", "RenderEnvSpec", "RenderPolicySpec", "RenderResult")
#: RenderConfig fields with a better default: None means "given by the config file or inferred".
BETTER_DEFAULTS = {"ckpt", "policy", "env", "num_trajs", "format"}


def _shape(obj):
    return [(p.name, p.kind, p.default) for p in inspect.signature(obj).parameters.values()]


def test_every_torchrl_render_name_is_exported():
    missing = set(theirs.__all__) - set(ours.__all__)
    assert not missing
    assert ours.__all__ == sorted(ours.__all__)


@pytest.mark.parametrize("name", sorted(set(theirs.__all__) - set(DATACLASSES)
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
    (our_mujoco_wasm, their_mujoco_wasm, their_mujoco_wasm.__all__),
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
    assert list(mine)[:3] == positional


def test_literal_types_match_our_registries():
    # the config's choice tuples are read from the Literal types (typing.get_args); the format and
    # backend tables are separate lists, which the Literal types must follow
    from torchrl_render.backends import BACKENDS
    from torchrl_render.writers import WRITERS

    assert set(typing.get_args(ours.RenderFormat)) == set(WRITERS.names())
    assert set(typing.get_args(ours.RenderBackendName)) == set(BACKENDS.names())


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
        assert ours.infer_state_dict(explicit, key="weights").keys() == theirs.infer_state_dict(explicit,
                                                                                                "weights").keys()


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

    file = ours.save_render_checkpoint(tmp_path / "p.pt", torch.nn.Linear(2, 1), format="pt")
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
    assert ours.call_with_supported_kwargs(factory, "S", kwargs) == theirs.call_with_supported_kwargs(factory, "S",
                                                                                                      kwargs)


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


@pytest.mark.parametrize("extra", [[], ["--notebook-rollout-mode", "both"], ["--notebook-rollout-mode", "live"],
                                   ["--no-save-rollout"], ["--notebook-rollout-mode", "live", "--save-rollout"]])
def test_cli_notebook_saves_its_rollouts_as_torchrl_render_does(extra):
    """torchrl.render's CLI turns --save-rollout on for notebooks unless told or live (its notebook
    reads the saved rollouts back)."""
    argv = BASE + ["--out", "r.ipynb", *extra]
    yours = their_cli.config_from_args(their_cli.build_parser().parse_args(argv))
    mine = our_cli.config_from_args(our_cli.build_parser().parse_args(argv))
    differ = [f.name for f in dataclasses.fields(yours) if _plain(getattr(mine, f.name)) != _plain(getattr(yours,
                                                                                                           f.name))]
    assert differ == [] and mine.save_rollout is yours.save_rollout


def test_dry_run_builds_nothing_and_check_setup_builds_everything(tmp_path, capsys):
    argv = ["--policy", "helpers.badfactories:raising_policy", "--env", "helpers.badfactories:raising_env", "--ckpt",
            str(tmp_path / "missing.pt"), "--out", str(tmp_path / "r.mp4")]
    assert our_cli.main([*argv, "--dry-run"]) == 0  # no checkpoint read, no factory imported or called
    out = capsys.readouterr().out
    assert '"dry_run": true' in out
    assert json.loads(out[:out.rindex("}") + 1])["env"] == "helpers.badfactories:raising_env"
    assert f"would write {tmp_path / 'r.mp4'}" in out and list(tmp_path.iterdir()) == []
    with pytest.raises(SystemExit) as exc:  # the checkpoint is read first
        our_cli.main([*argv, "--check-setup"])
    assert exc.value.code == 2 and "missing.pt' does not exist" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        our_cli.main([*argv[:-4], "--out", str(tmp_path / "r.mp4"), "--check-setup"])
    assert "boom: the simulator licence expired" in capsys.readouterr().err and list(tmp_path.iterdir()) == []


def test_missing_options_exit_2_as_torchrl_render_does(tmp_path, capsys):
    for main in (their_cli.main, our_cli.main):
        with pytest.raises(SystemExit) as exc:
            main(["--ckpt", str(tmp_path / "policy.pt")])
        assert exc.value.code == 2 and "Missing required rlrender option --policy" in capsys.readouterr().err


def test_config_keeps_asset_paths_as_paths(tmp_path):
    kw = dict(format="ipynb", mujoco_asset_paths=[str(tmp_path / "a"), tmp_path / "b"])
    mine = ours.RenderConfig(tmp_path / "p.pt", "pkg:p", "pkg:e", **kw)
    yours = theirs.RenderConfig(tmp_path / "p.pt", "pkg:p", "pkg:e", **kw)
    assert mine.mujoco_asset_paths == yours.mujoco_asset_paths == [tmp_path / "a", tmp_path / "b"]
    assert mine.to_dict()["mujoco_asset_paths"] == yours.to_dict()["mujoco_asset_paths"]
    with pytest.raises(ValueError, match="format must be one of"):
        ours.RenderConfig(tmp_path / "p.pt", "pkg:p", "pkg:e", format="invalid")


# -- the composition gives render_policy's artifact ----------------------------------------------------

TIMING = {"wall_s", "eval_s", "fps", "steps_per_s"}


def _same_episodes(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert {k: v for k, v in x.items() if k not in TIMING} == {k: v for k, v in y.items() if k not in TIMING}


@pytest.mark.parametrize("env, policy, out", [
    ("Pendulum-v1", "helpers.policies:linear_policy", "run.mp4"),                  # the gymnasium path
    ("helpers.tinyenv:make_env", "helpers.tinyenv:make_policy", "run.gif"),
    # the torchrl path (pixels backend)
])
@pytest.mark.slow
def test_composition_gives_the_render_policy_artifact(tmp_path, env, policy, out):
    kw = dict(env=env, policy=policy, num_trajs=2, max_steps=12, from_pixels="tinyenv" in env)
    (tmp_path / "direct").mkdir(), (tmp_path / "composed").mkdir()
    direct = ours.render_policy(ours.RenderConfig(out=tmp_path / "direct" / out, **kw))
    cfg = ours.RenderConfig(out=tmp_path / "composed" / out, **kw)
    built = ours.make_render_env(cfg)
    try:
        result = ours.collect_render_rollouts(built, ours.load_render_policy(cfg, built), cfg)
        assert not cfg.out.exists() and result.artifact_path.parent.name.startswith(".torchrl_render_spool-")
        result = ours.write_render_artifact(result, cfg)
    finally:
        built.close()
    assert result.artifact_path == cfg.out and sorted(p.name for p in cfg.out.parent.iterdir()) == \
        [out, out + ".metadata.json"]                                   # the spool is gone
    _same_episodes(result.metrics["per_episode"], direct.metrics["per_episode"])
    assert result.metadata["engine"] == direct.metadata["engine"]
    meta = json.loads(Path(f"{cfg.out}.metadata.json").read_text())
    assert meta["artifacts"][0]["path"] == str(cfg.out) and meta["config"]["out"] == str(cfg.out)
    assert [t["num_frames"] for t in meta["trajectories"]] == [t["num_frames"] for t in direct.metadata["trajectories"]]
    if out.endswith(".mp4"):
        mine, yours = list(decode_frames(cfg.out)), list(decode_frames(direct.artifact_path))
        assert len(mine) == len(yours) == probe_mp4(cfg.out)["frames"] == sum(e["length"] + 1 for e in
                                                                             result.metrics["per_episode"])
        assert all(np.array_equal(a, b) for a, b in zip(mine, yours))
    else:
        from PIL import Image, ImageSequence

        frames = [[np.asarray(f.convert("RGB")) for f in ImageSequence.Iterator(Image.open(p))]
                  for p in (cfg.out, direct.artifact_path)]
        assert len(frames[0]) == len(frames[1]) and all(np.array_equal(a, b) for a, b in zip(*frames))
    for td, other in zip(result.trajectories, direct.trajectories):
        assert torch.equal(td["next", "reward"], other["next", "reward"])


def test_collect_refuses_an_existing_output_before_rolling_out(tmp_path):
    cfg = ours.RenderConfig(env="helpers.tinyenv:make_env", policy="helpers.tinyenv:make_policy", from_pixels=True,
                            out=tmp_path / "run.mp4")
    cfg.out.write_bytes(b"old")
    with pytest.raises(ours.OutputExistsError):
        ours.collect_render_rollouts(object(), object(), cfg)
    assert cfg.out.read_bytes() == b"old" and sorted(tmp_path.iterdir()) == [cfg.out]


def test_result_frames_only_when_asked_and_a_hand_built_result_is_encoded(tmp_path):
    kw = dict(env="helpers.tinyenv:make_env", policy="helpers.tinyenv:make_policy", from_pixels=True, num_trajs=2)
    streamed = ours.render_policy(ours.RenderConfig(out=tmp_path / "a.mp4", **kw))
    assert streamed.frames == []
    kept = ours.render_policy(ours.RenderConfig(out=tmp_path / "b.mp4", result_frames=True, **kw))
    assert [len(t) for t in kept.frames] == [e["length"] + 1 for e in kept.metrics["per_episode"]]
    first = kept.frames[0][0]
    (camera,) = first.frames
    assert first.frames[camera].shape == (16, 16, 3) and first.step == 0 and kept.frames[1][0].trajectory_index == 1
    assert [int(b.frames[camera][0, 0, 0]) for b in kept.frames[0]] == \
        [min(255, 20 * t) for t in range(len(kept.frames[0]))]          # TinyEnv paints the step into red
    hand = ours.RenderResult(None, [], [], {"source": "by hand"}, [], frames=kept.frames)
    written = ours.write_render_artifact(hand, ours.RenderConfig(out=tmp_path / "hand.gif", **kw))
    from PIL import Image

    assert written.artifact_path == tmp_path / "hand.gif" and Image.open(written.artifact_path).n_frames == \
        sum(len(t) for t in kept.frames)
    with pytest.raises(ours.NoFramesError, match="nothing to write"):
        ours.write_render_artifact(ours.RenderResult(None, [], [], {}, []),
                                   ours.RenderConfig(out=tmp_path / "none.gif", **kw))


# -- torchrl's checkpoint and env conventions ---------------------------------------------------------

LOC, SCALE = torch.tensor([0.5, -0.25, 1.0]), torch.tensor([2.0, 4.0, 0.5])


def make_normalised_env(checkpoint, render_mode=None):
    """An env factory in torchrl.render's convention: the env is rebuilt from the checkpoint's metadata,
    and its ObservationNorm state is carried by the checkpoint."""
    from torchrl.envs import GymEnv, TransformedEnv
    from torchrl.envs.transforms import ObservationNorm

    norm = ObservationNorm(in_keys=["observation"], standard_normal=True, loc=torch.zeros(3), scale=torch.ones(3))
    norm.load_state_dict(checkpoint["obs_norm"])
    return TransformedEnv(GymEnv(checkpoint["env_name"]), norm)


def make_counted_env():
    from torchrl.envs import GymEnv, TransformedEnv
    from torchrl.envs.transforms import StepCounter

    return TransformedEnv(GymEnv("Pendulum-v1"), StepCounter(max_steps=6))


def make_fixed_policy():
    return torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Tanh())


@pytest.mark.parametrize("format", [None, "directory", "archive"])
def test_torchrl_render_checkpoints_with_normalisation_state(tmp_path, format):
    import gymnasium

    net = make_fixed_policy()
    torch.nn.init.constant_(net[0].weight, 0.1)
    torch.nn.init.constant_(net[0].bias, -0.2)
    from torchrl.envs.transforms import ObservationNorm

    norm_state = ObservationNorm(in_keys=["observation"], loc=LOC, scale=SCALE, standard_normal=True).state_dict()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # theirs warns that format=None changes in 0.15
        path = theirs.save_render_checkpoint(tmp_path / "ckpt", net, env_metadata={"env_name": "Pendulum-v1",
                                                                                      "obs_norm": norm_state},
                                             frames=1000, metrics={"return": -1.0}, format=format)
    result = ours.render_policy(ours.RenderConfig(ckpt=path, env=f"{__name__}:make_normalised_env",
                                                  policy=f"{__name__}:make_fixed_policy", out=tmp_path / "r.jsonl",
                                                  max_steps=5, seed=3))
    raw, _ = gymnasium.make("Pendulum-v1").reset(seed=3)                # independent: gymnasium itself
    obs = result.trajectories[0]["observation"]
    assert torch.allclose(obs[0], (torch.as_tensor(raw, dtype=torch.float32) - LOC) / SCALE, atol=1e-6)
    expected = torch.tanh(obs.sum(-1, keepdim=True) * 0.1 - 0.2)        # the checkpoint's weights acted
    assert torch.allclose(result.trajectories[0]["action"], expected, atol=1e-6)
    assert result.metadata["checkpoint"]["sha256"] == theirs.checkpoint_hash(path)
    payload = ours.load_checkpoint(path)
    assert payload["frames"] == 1000 and payload["env_name"] == "Pendulum-v1" and payload["metrics"] == {"return": -1.0}


def test_step_counter_wrapped_env(tmp_path):
    result = ours.render_policy(ours.RenderConfig(env=f"{__name__}:make_counted_env",
                                                  policy=f"{__name__}:make_fixed_policy", out=tmp_path / "r.jsonl",
                                                  num_trajs=2))
    assert [(e["length"], e["truncated"]) for e in result.metrics["per_episode"]] == [(6, True), (6, True)]


def test_messages_of_the_torchrl_style_functions(tmp_path):
    """Pinned (docs/troubleshooting.md lists them)."""
    def two(x, y):
        return x, y

    cases = [
        (lambda: ours.import_from_string("no_colon"), ours.ConfigError,
         "import spec 'no_colon' is not 'module:object'"),
        (lambda: ours.import_from_string("json:nope"), ours.ResolveError, "'json' has no attribute 'nope'"),
        (lambda: ours.call_with_supported_kwargs(two, "S", {}), ours.ResolveError, "nothing provides ['x', 'y']"),
        (lambda: ours.infer_state_dict({"frames": 1}), ours.CheckpointError, "no state dict found in the checkpoint"),
        (lambda: our_video.compose_frame_grid([]), ours.ConfigError, "there are no frames to compose"),
        (lambda: ours.save_render_checkpoint(tmp_path / "c", torch.nn.Linear(1, 1), format="zip"),
         ours.CheckpointError, "unknown checkpoint format"),
    ]
    for call, kind, message in cases:
        with pytest.raises(kind) as info:
            call()
        assert message in str(info.value) and "Fix:" in str(info.value)


# -- env_backend="isaaclab", against a fake with Isaac Lab's API shape -------------------------------


def test_isaaclab_backend_runs_episodes_over_the_sub_envs(tmp_path):
    result = ours.render_policy(ours.RenderConfig(env="helpers.isaacfake:make_env",
                                                  policy="helpers.isaacfake:make_policy",
                                                  env_backend="isaaclab", out=tmp_path / "r.json", num_trajs=6, seed=2))
    # independent: sub-env i starts at 0.1 (i + 1) and is pushed by 0.3 a step until |x| > 1;
    # episodes 0-3 start on sub-envs 0-3, episodes 4 and 5 on the sub-envs that end first (1 and 2)
    def episode(start):
        xs, x = [], start
        while abs(x) <= 1.0:
            x = round(x + 0.3, 6)
            xs.append(x)
        return len(xs), -sum(xs)

    expected = [episode(0.1 * (i + 1)) for i in (0, 1, 2, 3, 1, 2)]
    got = [(e["length"], e["sum_reward"]) for e in result.metrics["per_episode"]]
    assert [g[0] for g in got] == [e[0] for e in expected]
    assert all(abs(g[1] - e[1]) < 1e-5 for g, e in zip(got, expected))
    assert result.metadata["engine"]["num_envs"] == 4 and any("isaaclab" in w for w in result.warnings)
    obs = result.trajectories[0]["observation"]
    assert torch.allclose(obs[:, 0], torch.tensor([0.1, 0.4, 0.7, 1.0]))     # the "policy" group
    assert result.trajectories[0]["critic"].shape == (4, 3)                   # other groups keep their names


def test_isaaclab_backend_refuses_frames_and_other_num_envs(tmp_path):
    kw = dict(env="helpers.isaacfake:make_env", policy="helpers.isaacfake:make_policy", env_backend="isaaclab",
              num_trajs=4)
    with pytest.raises(ours.ConfigError, match="does not read Isaac Lab's cameras yet"):
        ours.render_policy(ours.RenderConfig(out=tmp_path / "r.mp4", **kw))
    with pytest.raises(ours.ConfigError, match="simulates 4 sub-envs, and --num-envs says 2"):
        ours.render_policy(ours.RenderConfig(out=tmp_path / "r.json", num_envs=2, **kw))
    assert list(tmp_path.iterdir()) == []


# -- the MuJoCo viewer names; the viewer itself in a kernel and Chromium: tests/live/test_mujoco_viewer.py --

def test_extract_qpos_trajectory_matches_on_every_key_spelling():
    td = TensorDict({"qpos": torch.arange(6.0).reshape(2, 3), "next": {"qpos": torch.ones(2, 3)}}, batch_size=[2])
    only_next = TensorDict({"next": {"qpos": torch.arange(4.0).reshape(2, 2)}}, batch_size=[2])
    for rollout, key in [(td, "qpos"), (td, ("next", "qpos")), (only_next, "qpos"), (only_next, ("next", "qpos"))]:
        assert ours.extract_qpos_trajectory(rollout, key) == theirs.extract_qpos_trajectory(rollout, key)
    for mod in (ours, theirs):
        with pytest.raises(KeyError, match="nope"):
            mod.extract_qpos_trajectory(td, "nope")


def test_mujoco_state_reader_captures_the_same_state_of_a_real_env():
    from torchrl.envs import GymEnv

    env = GymEnv("Hopper-v5")
    try:
        env.set_seed(3)
        env.rollout(5)
        mine, yours = ours.MujocoStateReader(), theirs.MujocoStateReader()
        assert mine.supports(env) and yours.supports(env)
        a, b = mine.capture(env), yours.capture(env)
        assert set(a.keys()) >= {"qpos", "qvel"} and set(a.keys()) <= set(b.keys()) | {"time"}
        for key in a.keys():
            torch.testing.assert_close(a[key].double().reshape(-1), b[key].double().reshape(-1), msg=key)
        assert not mine.supports(object()) and not yours.supports(object())
    finally:
        env.close()
