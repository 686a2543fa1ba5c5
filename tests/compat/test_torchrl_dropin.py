"""torchrl.render's users' code and commands, run on torchrl_render, and side by side with torchrl.render.

TorchRL's own rlrender tutorial, the two "MuJoCo-WASM notebook render" commands of its PPO README,
the pipeline chained as torchrl.render's ``render_policy`` body chains it, and the files code that
reads torchrl.render's artifacts reads: the same inputs go to both packages (torchrl.render 0.14.1 is
installed in the test venv; the package never imports it), and the results are compared.
"""

from __future__ import annotations

import importlib.util
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
import torchrl.render as theirs
from torchrl.envs import PendulumEnv
from torchrl.envs.libs.gym import GymEnv

import torchrl_render as ours

from helpers.clicode import exit_code
from helpers.dropin_toys import CountingEnv, StateEnv, counting_policy, state_env
from helpers.paths import TESTS

# -- TorchRL's rlrender tutorial, with the import renamed --------------------------------------------------

def tutorial_env(spec):
    """The tutorial's env factory: a torchrl env built on the spec's device."""
    return PendulumEnv(device=spec.device)


def tutorial_policy(spec):
    """The tutorial's policy factory: a plain function of the TensorDict that writes a zero action."""
    def policy(tensordict):
        tensordict.set("action", torch.zeros(1, device=spec.device))
        return tensordict

    return policy


def test_the_rlrender_tutorial_runs_with_the_import_renamed(tmp_path):
    ckpt = tmp_path / "policy.pt"
    torch.save({}, ckpt)
    results = {}
    for name, module in (("ours", ours), ("theirs", theirs)):
        config = module.RenderConfig(ckpt=ckpt, policy=tutorial_policy, env=tutorial_env, max_steps=3,
                                     format="jsonl", out=tmp_path / f"{name}.jsonl", auto_load_policy=False,
                                     overwrite=True)
        results[name] = module.render_policy(config)
    mine, yours = results["ours"], results["theirs"]
    assert mine.artifact_path == tmp_path / "ours.jsonl" and mine.artifact_path.is_file()
    assert set(yours.metadata) <= set(mine.metadata)
    (a,), (b,) = mine.trajectories, yours.trajectories
    assert torch.equal(a["action"], torch.zeros(3, 1)) and torch.equal(a["action"], b["action"])
    assert a["next", "truncated"][-1].item() and a["next", "done"][-1].item()        # max_steps cut, as theirs
    assert b["next", "truncated"][-1].item() and b["next", "done"][-1].item()


# -- the PPO README's "MuJoCo-WASM notebook render" commands --------------------------------------------------

def _ppo_checkpoint(tmp_path: Path) -> Path:
    from helpers.ppo_factories import make_actor, make_env

    env = make_env("InvertedPendulum-v4", max_episode_steps=7)
    try:
        actor = make_actor(env)
    finally:
        env.close()
    return ours.save_render_checkpoint(tmp_path / "ppo.pt", actor, frames=12, format="pt", env_metadata={
        "env_name": "InvertedPendulum-v4", "env_backend": "gym", "normalize_observation": False, "vecnorm": None,
        "max_episode_steps": 7})


def _readme_argv(tmp_path: Path, ckpt: Path, out: str, factories: str) -> list[str]:
    import gymnasium.envs.mujoco

    model = Path(gymnasium.envs.mujoco.__file__).parent / "assets" / "inverted_pendulum.xml"
    return ["--ckpt", str(ckpt), "--policy", f"{factories}:make_render_policy", "--env",
            f"{factories}:make_render_env", "--env-kwargs", '{"env_name":"InvertedPendulum-v4"}',
            "--render-backend", "null", "--max-steps", "1000", "--num-trajs", "1", "--format", "ipynb",
            "--out", str(tmp_path / out), "--notebook-render-backend", "mujoco-wasm", "--mujoco-model-path",
            str(model), "--mujoco-qpos-key", "qpos", "--overwrite", "--quiet"]


def test_the_ppo_readme_notebook_command(tmp_path, capsys):
    """A notebook whose viewer replays qpos needs no frames; the checkpoint's env settings reach the factory."""
    ckpt = _ppo_checkpoint(tmp_path)
    argv = _readme_argv(tmp_path, ckpt, "ppo.ipynb", str(TESTS / "helpers" / "ppo_factories.py"))
    assert exit_code(argv) == 0, capsys.readouterr().err
    import nbformat

    cells = {c.id: c for c in nbformat.read(tmp_path / "ppo.ipynb", as_version=4).cells}
    assert "torchrl-render-replay" in cells["episode-0"].outputs[0]["data"]["text/html"]       # the 3-D replay
    meta = json.loads((tmp_path / "ppo" / "metadata.json").read_text())
    (steps,) = [t["num_steps"] for t in meta["trajectories"]]
    assert meta["mujoco_wasm"]["viewer_dir"] == "mujoco_wasm" and meta["mujoco_wasm"]["qpos_key"] == "qpos"
    assert (tmp_path / "ppo" / "mujoco_wasm" / "manifest.json").is_file()
    rollout = torch.load(tmp_path / "ppo" / "rollouts" / "traj_000.pt", weights_only=False)
    assert rollout["qpos"].shape == (steps, 2)                  # InvertedPendulum's nq, recorded from MuJoCo
    # the checkpoint's max_episode_steps=7 reached the factory (its StepCounter counts the steps)
    assert "step_count" in rollout.keys() and steps <= 7
    assert ours.extract_qpos_trajectory(rollout, "qpos") == theirs.extract_qpos_trajectory(rollout, "qpos")


def test_the_ppo_readme_live_notebook_command_defers_the_rollout(tmp_path, monkeypatch, capsys):
    """--notebook-rollout-mode live: written at once, as torchrl.render writes it: no factory is called."""
    from helpers import ppo_factories

    def refuse(spec):
        raise AssertionError("a factory ran before the notebook's cells did")

    monkeypatch.setattr(ppo_factories, "make_render_env", refuse)
    monkeypatch.setattr(ppo_factories, "make_render_policy", refuse)
    ckpt = _ppo_checkpoint(tmp_path)
    argv = _readme_argv(tmp_path, ckpt, "live.ipynb", "ppo_factories") + ["--notebook-rollout-mode", "live"]
    assert exit_code(argv) == 0, capsys.readouterr().err
    notebook = json.loads((tmp_path / "live.ipynb").read_text())
    source = "\n".join("".join(cell["source"]) for cell in notebook["cells"])
    assert "live_result = collect_rollouts_in_notebook()" in source
    meta = json.loads((tmp_path / "live" / "metadata.json").read_text())
    assert (meta["num_trajs"], meta["requested_num_trajs"]) == (0, 1) and not (tmp_path / "live" / "rollouts").exists()
    assert meta["checkpoint"]["sha256"] == theirs.checkpoint_hash(ckpt)


# -- the pipeline chained as torchrl.render's render_policy chains it ---------------------------------------

SEEN: list = []


def recording_env(spec):
    """Records what the factory was given as the checkpoint (torchrl's factories test isinstance(dict))."""
    SEEN.append(spec.checkpoint)
    return PendulumEnv(device=spec.device)


def linear_policy(spec):
    from tensordict.nn import TensorDictModule

    return TensorDictModule(torch.nn.Linear(3, 1), in_keys=["features"], out_keys=["action"])


def features_env(spec):
    """Pendulum with its (cos, sin, thdot) as one ``features`` entry, for a linear policy."""
    from torchrl.envs import CatTensors, TransformedEnv, UnsqueezeTransform

    env = TransformedEnv(PendulumEnv(device=spec.device), UnsqueezeTransform(dim=-1, in_keys=["th", "thdot"],
                                                                            out_keys=["th1", "thdot1"]))
    env.append_transform(CatTensors(in_keys=["th1", "th1", "thdot1"], out_key="features", del_keys=False))
    SEEN.append(spec.checkpoint)
    return env


@pytest.mark.parametrize("layout", ["pt", "archive"])
def test_the_render_policy_chain_loads_the_checkpoint_as_torchrl_render(tmp_path, layout):
    """torchrl.render's render_policy body, on both packages; a unified checkpoint reaches the factory as a dict."""
    weights = torch.nn.Linear(3, 1)
    torch.nn.init.constant_(weights.weight, 0.25)
    torch.nn.init.constant_(weights.bias, -0.5)
    state = {f"module.{k}": v for k, v in weights.state_dict().items()}
    if layout == "pt":
        path = tmp_path / "policy.pt"
        torch.save({"model_state_dict": state, "env_name": "Pendulum"}, path)
    else:
        path = theirs.save_render_checkpoint(tmp_path / "policy.torchrl", state, env_metadata={"env_name": "Pendulum"},
                                             format="archive")
    actions = {}
    for name, module in (("ours", ours), ("theirs", theirs)):
        SEEN.clear()
        config = module.RenderConfig(ckpt=path, policy=linear_policy, env=features_env, max_steps=4, seed=1,
                                     format="jsonl", out=tmp_path / f"{name}.jsonl")
        checkpoint = module.load_checkpoint(path)
        env = module.make_render_env(config, checkpoint=checkpoint)
        try:
            policy = module.load_render_policy(config, env, checkpoint=checkpoint)
            result = module.collect_render_rollouts(env, policy, config)
        finally:
            env.close()
        assert len(SEEN) == 1 and isinstance(SEEN[0], dict) and SEEN[0]["env_name"] == "Pendulum"
        (traj,) = result.trajectories
        expected = traj["features"] @ weights.weight.detach().T + weights.bias.detach()  # the checkpoint acted
        torch.testing.assert_close(traj["action"], expected)
        actions[name] = traj["action"]
    torch.testing.assert_close(actions["ours"], actions["theirs"])


# -- seeding: --seed-mode torchrl gives torchrl.render's episodes --------------------------------------------

def pendulum_env(spec):
    return PendulumEnv(device=spec.device)


def gym_pendulum_env(spec):
    return GymEnv("Pendulum-v1", device=spec.device)


def push_policy(spec):
    def policy(tensordict):
        tensordict.set("action", torch.full((1,), 0.3))
        return tensordict

    return policy


@pytest.mark.parametrize("env", [pendulum_env, gym_pendulum_env], ids=["PendulumEnv", "GymEnv"])
def test_seed_mode_torchrl_reproduces_torchrl_render_episodes(tmp_path, env):
    ckpt = tmp_path / "p.pt"
    torch.save({}, ckpt)
    kw = dict(ckpt=ckpt, policy=push_policy, env=env, max_steps=5, num_trajs=3, seed=7, format="jsonl",
              auto_load_policy=False)
    yours = theirs.render_policy(theirs.RenderConfig(out=tmp_path / "theirs.jsonl", **kw))
    mine = ours.render_policy(ours.RenderConfig(out=tmp_path / "ours.jsonl", seed_mode="torchrl", **kw))
    default = ours.render_policy(ours.RenderConfig(out=tmp_path / "default.jsonl", **kw))
    for a, b in zip(mine.trajectories, yours.trajectories):
        torch.testing.assert_close(a["next", "reward"], b["next", "reward"])
        for key in ("truncated", "done"):
            assert torch.equal(a["next", key], b["next", key]), key
    assert [e["seed"] for e in mine.metrics["per_episode"]] == [None] * 3  # one seeded stream, not one per episode
    # the default seeds episode i with seed + i, its ecosystem's way: other episodes than theirs
    assert not all(torch.equal(a["next", "reward"], b["next", "reward"])
                   for a, b in zip(default.trajectories, yours.trajectories))


def test_seed_mode_torchrl_takes_one_env():
    with pytest.raises(ours.ConfigError, match="seed_mode='torchrl' seeds one env once"):
        ours.RenderConfig(policy="m:p", env="e:m", seed_mode="torchrl", num_envs=2, num_trajs=2)


# -- the files: every key torchrl.render writes is in ours ---------------------------------------------------


def counting_env(spec):
    return CountingEnv(device=spec.device)


def _both(tmp_path: Path, fmt: str, composed: bool) -> tuple:
    """The same run through both packages: render_policy, or make_render_env/collect/write."""
    ckpt = tmp_path / "p.pt"
    torch.save({}, ckpt)
    results = []
    for name, module in (("ours", ours), ("theirs", theirs)):
        config = module.RenderConfig(ckpt=ckpt, policy=counting_policy, env=counting_env, num_trajs=2, format=fmt,
                                     out=tmp_path / f"{name}.{fmt}", auto_load_policy=False, max_steps=5)
        if not composed:
            results.append(module.render_policy(config))
            continue
        env = module.make_render_env(config)
        try:
            collected = module.collect_render_rollouts(env, module.load_render_policy(config, env), config)
        finally:
            env.close()
        results.append(module.write_render_artifact(collected, config))
    return results


def _keys_within(yours, mine, where="") -> None:
    """Every key of ``yours`` is in ``mine``, recursively through dicts (and the first entry of lists)."""
    if isinstance(yours, dict):
        assert isinstance(mine, dict), where
        for key, value in yours.items():
            assert key in mine, f"{where}.{key}"
            _keys_within(value, mine[key], f"{where}.{key}")
    elif isinstance(yours, list) and yours and isinstance(yours[0], dict):
        assert isinstance(mine, list) and mine, where
        _keys_within(yours[0], mine[0], f"{where}[0]")


@pytest.mark.parametrize("composed", [False, True], ids=["render_policy", "collect_then_write"])
def test_sidecar_and_jsonl_hold_every_torchrl_render_key(tmp_path, composed):
    mine, yours = _both(tmp_path, "jsonl", composed)
    skip = {"config"}  # a config is its package's own dataclass: ours has every field of theirs (test_torchrl_compat)
    sidecars = [json.loads(Path(f"{r.artifact_path}.metadata.json").read_text()) for r in (mine, yours)]
    _keys_within({k: v for k, v in sidecars[1].items() if k not in skip}, sidecars[0])
    assert set(sidecars[1]["config"]) <= set(sidecars[0]["config"])
    lines = [[json.loads(line) for line in r.artifact_path.read_text().splitlines()] for r in (mine, yours)]
    assert lines[0][0]["type"] == lines[1][0]["type"] == "metadata"
    _keys_within({k: v for k, v in lines[1][0]["metadata"].items() if k not in skip}, lines[0][0]["metadata"])
    types = [{line["type"] for line in ls} for ls in lines]
    # torchrl.render renders frames for every format; our render_policy renders none for a data format
    assert types[1] - types[0] == (set() if composed else {"frame"})
    for kind in types[1] & types[0] - {"metadata"}:
        first = [next(line for line in ls if line["type"] == kind) for ls in lines]
        assert set(first[1]) <= set(first[0]), kind
    mine_traj = [line for line in lines[0] if line["type"] == "trajectory"]
    your_traj = [line for line in lines[1] if line["type"] == "trajectory"]
    assert [(t["index"], t["num_steps"], t["return"]) for t in mine_traj] == \
        [(t["index"], t["num_steps"], t["return"]) for t in your_traj]
    if composed:
        assert [t["num_frames"] for t in mine_traj] == [t["num_frames"] for t in your_traj] == [3, 3]


@pytest.mark.parametrize("composed", [False, True], ids=["render_policy", "collect_then_write"])
def test_npz_holds_every_torchrl_render_key(tmp_path, composed):
    mine, yours = _both(tmp_path, "npz", composed)
    a, b = np.load(mine.artifact_path), np.load(yours.artifact_path)
    assert set(b.files) <= set(a.files)
    for key in b.files:
        if key.startswith("traj_"):
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    skip = {"config"}
    _keys_within({k: v for k, v in json.loads(str(b["metadata"])).items() if k not in skip},
                 json.loads(str(a["metadata"])))
    assert set(json.loads(str(b["config"]))) <= set(json.loads(str(a["config"])))


# -- the names torchrl.render's reference documents ----------------------------------------------------------

def _documented() -> dict[str, list[str]]:
    """docs/source/reference/render.rst of torchrl 0.14.1: module -> the names it documents there."""
    return {
        "": ["render_policy", "make_render_env", "load_render_policy", "collect_render_rollouts",
             "write_render_artifact", "import_from_string", "call_with_supported_kwargs", "load_checkpoint",
             "save_render_checkpoint", "checkpoint_hash", "infer_state_dict", "parse_nested_key", "key_to_string",
             "normalize_policy", "add_step_counter", "seed_env", "normalize_env", "write_mujoco_wasm_viewer",
             "display_mujoco_wasm_viewer", "send_mujoco_wasm_qpos", "play_mujoco_wasm_trajectory",
             "extract_qpos_trajectory", "RenderConfig", "RenderEnvSpec", "RenderPolicySpec", "RenderResult",
             "FrameBundle", "TensorDictPolicyAdapter"],
        "backends": ["RenderBackend", "MujocoStateReader", "TensorDictPixelsBackend", "EnvRenderBackend",
                     "NullRenderBackend"],
        "cli": ["build_parser", "config_from_args", "main"],
        "notebook": ["build_notebook", "write_render_notebook"],
        "video": ["normalize_frame", "normalize_frame_output", "compose_frame_grid", "encode_video", "encode_gif",
                  "write_png"],
        "artifacts": ["write_render_artifact", "checkpoint_hash"],
    }


@pytest.mark.parametrize("module", list(_documented()), ids=lambda m: m or "torchrl_render")
def test_documented_names_exist_at_their_module_paths(module):
    mine = importlib.import_module("torchrl_render" + (f".{module}" if module else ""))
    yours = importlib.import_module("torchrl.render" + (f".{module}" if module else ""))
    for name in _documented()[module]:
        assert hasattr(yours, name), name  # the list is theirs
        assert callable(getattr(mine, name)), name


@pytest.mark.parametrize("frame", [np.zeros((3, 4, 4), np.uint8), np.ones((2, 5), np.float32),
                                   np.full((4, 6, 4), 200, np.uint8), torch.rand(3, 8, 2),
                                   np.linspace(0, 1, 48, dtype=np.float64).reshape(4, 4, 3)],
                         ids=["chw-uint8", "grey-float", "rgba", "chw-tensor", "float01"])
def test_normalize_frame_matches(frame):
    from torchrl.render import video as their_video

    from torchrl_render import video as our_video

    mine, yours = our_video.normalize_frame(frame), their_video.normalize_frame(frame)
    assert mine.shape == yours.shape and mine.dtype == yours.dtype == np.uint8
    assert np.abs(mine.astype(int) - yours.astype(int)).max() <= 1  # we round floats, they truncate


def test_encoders_write_what_decodes_to_the_frames(tmp_path):
    from PIL import Image, ImageSequence

    from torchrl_render import video as our_video

    from helpers.mediaprobe import decode_frames, probe_mp4

    frames = [np.full((16, 16, 3), 40 * i, np.uint8) for i in range(4)]
    gif = our_video.encode_gif(frames, tmp_path / "a.gif", fps=10)
    decoded = [np.asarray(f.convert("RGB")) for f in ImageSequence.Iterator(Image.open(gif))]
    assert len(decoded) == 4 and all(np.abs(d.astype(int) - f).max() <= 4 for d, f in zip(decoded, frames))
    mp4 = our_video.encode_video(frames, tmp_path / "a.mp4", fps=10)
    assert probe_mp4(mp4)["frames"] == 4
    assert all(np.abs(d.astype(int) - f).mean() < 3 for d, f in zip(decode_frames(mp4), frames))
    png = our_video.write_png(frames[2], tmp_path / "a.png")
    assert np.array_equal(np.asarray(Image.open(png)), frames[2])
    with pytest.raises(ours.NoFramesError):
        our_video.encode_gif([], tmp_path / "none.gif", fps=10)
    assert not (tmp_path / "none.gif").exists()


def test_build_and_write_render_notebook(tmp_path):
    from torchrl_render import notebook

    config = ours.RenderConfig(policy="m:p", env="e:m", format="ipynb", out=tmp_path / "r.ipynb")
    built = notebook.build_notebook(ours.RenderResult(None, [], [], {}, []), config)
    assert built["nbformat"] == 4 and json.loads(json.dumps(built)) == built
    namespace: dict = {}
    exec("".join(built["cells"][2]["source"]), namespace)
    assert namespace["render_config"]["out"] == str(tmp_path / "r.ipynb")
    path = notebook.write_render_notebook(ours.RenderResult(None, [], [], {}, []), config, tmp_path / "r.ipynb")
    assert json.loads(path.read_text())["cells"] == built["cells"] and sorted(tmp_path.iterdir()) == [path]


def _their_modules():
    """Every module of torchrl.render (as installed), by its dotted name under the package."""
    import pkgutil

    return sorted(name for _, name, _ in pkgutil.walk_packages(theirs.__path__, "torchrl.render.")
                  if not name.endswith("__main__"))


def test_every_torchrl_render_module_path_imports_under_ours_with_its_names():
    """torchrl.render's modules, walked as installed (not a list of ours): each imports as ``torchrl_render.<path>``
    and holds every name of the module's ``__all__``; a function or class takes its parameters, in its order."""
    import dataclasses
    import inspect

    def parameters(obj):
        try:
            return [n for n, p in inspect.signature(obj).parameters.items()
                    if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]  # a Protocol's (*args, **kwargs): any
        except (TypeError, ValueError):  # a builtin or a constant: nothing to compare
            return None

    walked = _their_modules()
    assert {"torchrl.render.env", "torchrl.render.policy", "torchrl.render.rollout",
            "torchrl.render.import_utils", "torchrl.render.backends.mujoco"} <= set(walked)
    missing = []
    for name in walked:
        yours = importlib.import_module(name)
        mine = importlib.import_module(name.replace("torchrl.render", "torchrl_render", 1))
        for attr in getattr(yours, "__all__", ()):
            if not hasattr(mine, attr):
                missing.append(f"{name}.{attr}")
            elif callable(getattr(yours, attr)) and parameters(getattr(yours, attr)) is not None:
                theirs_takes, ours_takes = parameters(getattr(yours, attr)), parameters(getattr(mine, attr))
                assert set(theirs_takes) <= set(ours_takes), (f"{name}.{attr}", theirs_takes, ours_takes)
                if not dataclasses.is_dataclass(getattr(yours, attr)):  # a config's order: docs/migrating.md
                    assert ours_takes[:len(theirs_takes)] == theirs_takes, (f"{name}.{attr}", theirs_takes, ours_takes)
    assert not missing, missing


def test_backend_names_are_our_backends():
    from torchrl_render import backends
    from torchrl_render.backends.null import NullBackend
    from torchrl_render.backends.pixels import PixelsBackend

    assert backends.NullRenderBackend is NullBackend and backends.TensorDictPixelsBackend is PixelsBackend
    assert backends.null.NullRenderBackend is NullBackend and backends.pixels.TensorDictPixelsBackend is PixelsBackend
    assert backends.MujocoStateReader is ours.MujocoStateReader
    with pytest.raises(AttributeError):
        backends.NoSuchBackend  # noqa: B018
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert backends.RenderBackend.name == "base"


# -- the MuJoCo viewer of an env without a MuJoCo model, as torchrl.render's ---------------------------------


TWO_HINGES = ('<mujoco><worldbody><body><joint type="hinge"/><geom size=".1"/><body pos="0 0 .3">'
              '<joint type="hinge" axis="1 0 0"/><geom size=".1"/></body></body></worldbody></mujoco>')


def test_a_model_file_draws_an_env_without_a_model(tmp_path):
    """mujoco_model_path draws the env's get_state() qpos, for the html replay and the notebook's viewer."""
    from helpers.htmlread import episode_arrays

    xml = tmp_path / "two.xml"
    xml.write_text(TWO_HINGES)
    kw = dict(policy=counting_policy, env=state_env, mujoco_model_path=xml, mujoco_qpos_key="qpos", num_trajs=2)
    page = ours.render_policy(ours.RenderConfig(out=tmp_path / "r.html", **kw))
    yours = theirs.MujocoStateReader().capture(StateEnv())
    assert torch.equal(page.trajectories[0]["qpos"], torch.tensor([[0.0, 0.0], [0.1, -0.2]]))
    assert yours["qpos"].tolist() == [0.0, 0.0]
    arrays = episode_arrays(page.artifact_path)
    assert sorted(arrays) == [0, 1] and all(len(a["xpos"]) == 3 for a in arrays.values())  # 2 steps + the reset
    notebook = ours.render_policy(ours.RenderConfig(out=tmp_path / "r.ipynb", notebook_render_backend="mujoco_wasm",
                                                    execute_notebook=False, **kw))
    cells = json.loads(notebook.artifact_path.read_text())["cells"]
    episode = next(c for c in cells if c.get("id") == "episode-0")
    assert "torchrl-render-replay" in "".join(episode["outputs"][0]["data"]["text/html"])
    other = tmp_path / "one.xml"
    other.write_text('<mujoco><worldbody><body><joint type="hinge"/><geom size=".1"/></body></worldbody></mujoco>')
    with pytest.raises(ours.ConfigError, match=r"get_state\(\) gives 2 qpos, and the model .* has nq=1"):
        ours.render_policy(ours.RenderConfig(out=tmp_path / "x.html", **{**kw, "mujoco_model_path": other}))
