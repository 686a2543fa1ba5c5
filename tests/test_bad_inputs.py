"""The catalogue of bad inputs: one table, each run through the real CLI in-process.

Every row is a user mistake. The CLI must exit with code 2 and print one paragraph
that starts with ``torchrl-render: error: `` and holds the pinned fragments, with no
traceback, and the output folder must hold exactly what it held before (no artifact,
no temporary file, no sidecar, no ``.partial.json``). Rows marked ``midrun`` fail in a
writer, on its background thread: episodes may finish before the error surfaces, and
their metrics may then be kept in ``<out>.partial.json`` (by design), nothing else.

docs/troubleshooting.md explains every row: the message is the one the row prints, put there by
tools/gen_troubleshooting.py (the test compares the whole message with the page's), the meaning and
the fix come from tests/bad_inputs_explained.md. Placeholders in argv: ``{inp}`` (a folder for input files the row's
set-up writes) and ``{out}`` (the output folder, also the current directory).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

from torchrl_render.cli import main
from torchrl_render.writers import WRITERS

from helpers import troubleshooting
from helpers.paths import ROOT, TESTS

DOC = troubleshooting.PAGE
OUT = ["--out", "{out}/run.mp4"]
TINY = ["--policy", "helpers.tinyenv:make_policy", "--env", "helpers.tinyenv:make_env", "--from-pixels", "--max-steps",
        "3", *OUT]
TINY_DATA = ["--policy", "helpers.tinyenv:make_policy", "--env", "helpers.tinyenv:make_env", "--max-steps", "3",
             "--out", "{out}/run.jsonl"]
CARTPOLE = ["--env", "CartPole-v1", "--max-steps", "3", "--out", "{out}/run.jsonl"]
PEND = ["--policy", "helpers.tinyenv:make_policy", "--env", "InvertedPendulum-v5", "--max-steps", "2", "--width", "64",
        "--height", "64", "--render-quality", "fast", *OUT]


@dataclass
class Ctx:
    """What a row's set-up gets: the input folder, the output folder, monkeypatch."""

    inp: Path
    out: Path
    monkeypatch: pytest.MonkeyPatch


@dataclass
class Case:
    id: str
    argv: list[str]
    fragments: tuple[str, ...]
    setup: Callable[[Ctx], None] | None = None
    check: Callable[[Ctx], None] | None = None     # extra assertions after the run
    xfail: str | None = None                       # a known gap, with the fix proposed (strict)
    midrun: bool = False                           # fails while writing: <out>.partial.json may keep finished episodes
    slow: bool = False                             # a real simulator


# -- set-ups ----------------------------------------------------------------------------------------------------


class Evil:
    """Unpickling this runs code: it creates a marker file."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def write(name: str, text: str | bytes) -> Callable[[Ctx], None]:
    def setup(ctx: Ctx) -> None:
        path = ctx.inp / name
        path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text)
    return setup


def tiny_ckpt(ctx: Ctx, name: str = "p.pt", net: torch.nn.Module | None = None) -> Path:
    from torchrl_render import save_render_checkpoint
    return save_render_checkpoint(ctx.inp / name, net or torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Tanh()),
                                  env_metadata={"env_name": "Tiny-v0"}, format="pt")


def truncated_ckpt(ctx: Ctx) -> None:
    path = tiny_ckpt(ctx, net=torch.nn.Sequential(torch.nn.Linear(300, 1)))
    path.write_bytes(path.read_bytes()[:1000])


def pickle_ckpt(ctx: Ctx) -> None:
    torch.save({"model_state_dict": {}, "callback": Evil(str(ctx.inp / "pwned"))}, ctx.inp / "p.pt")


def no_code_ran(ctx: Ctx) -> None:
    assert not (ctx.inp / "pwned").exists()


def torchrl_ckpt(damage: Callable[[Path], None]) -> Callable[[Ctx], None]:
    def setup(ctx: Ctx) -> None:
        from torchrl.checkpoint import Checkpoint
        damage(Checkpoint(policy=torch.nn.Sequential(torch.nn.Linear(3, 1))).save(ctx.inp / "ck"))
    return setup


def existing(name: str, folder: bool = False) -> Callable[[Ctx], None]:
    def setup(ctx: Ctx) -> None:
        (ctx.out / name).mkdir() if folder else (ctx.out / name).write_bytes(b"precious")
    return setup


def fifo(name: str) -> Callable[[Ctx], None]:
    def setup(ctx: Ctx) -> None:
        os.mkfifo(ctx.out / name)
    return setup


def device_node(name: str) -> Callable[[Ctx], None]:
    """A character device at ``name``: a copy of /dev/null's node, so that a regression replaces nothing of the
    machine's (``--out /dev/full --overwrite`` once replaced the real one)."""
    def setup(ctx: Ctx) -> None:
        if os.geteuid() != 0:
            pytest.skip("creating a device node needs root")
        os.mknod(ctx.out / name, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    return setup


def dangling(name: str) -> Callable[[Ctx], None]:
    def setup(ctx: Ctx) -> None:
        (ctx.out / name).symlink_to(ctx.out / "nothing-there.mp4")
    return setup


def os_system_ckpt(ctx: Ctx) -> None:
    """A checkpoint whose pickle calls os.system (torch 2.13 words its refusal 'module posix is blocked')."""
    torch.save({"model_state_dict": {}, "callback": CallsSystem(f"touch {ctx.inp / 'pwned'}")}, ctx.inp / "p.pt")


class CallsSystem:
    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


def no_display(ctx: Ctx) -> None:
    """A machine without a display (a headless server, an SSH session without -X)."""
    ctx.monkeypatch.delenv("DISPLAY", raising=False)
    ctx.monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)


def read_only_out(ctx: Ctx) -> None:
    target = ctx.out / "ro"
    target.mkdir(mode=0o500)
    if os.geteuid() == 0:  # root writes anywhere: make os.access answer as for a normal user
        real = os.access
        ctx.monkeypatch.setattr(os, "access", lambda p, m, *a, **k: False if Path(p) == target else real(p, m, *a, **k))


SWEEP = ["--env", "tiny=helpers.tinyenv:make_env", "--policy", "helpers.tinyenv:make_policy", "--out", "{out}/sw"]


def sweep_folder(name: str) -> Callable[[Ctx], None]:
    """A checkpoint, and an --out folder holding ``name`` (a stray file, or another sweep's manifest)."""
    def setup(ctx: Ctx) -> None:
        tiny_ckpt(ctx)
        (ctx.out / "sw").mkdir()
        (ctx.out / "sw" / name).write_text('{"grid": {"cells": []}}')
    return setup


def without_ray(ctx: Ctx) -> None:
    tiny_ckpt(ctx)
    ctx.monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails as where the extra is not installed


# -- the catalogue ----------------------------------------------------------------------------------------------

def needs_minari(ctx: Ctx) -> None:
    """Rows that read or write a Minari dataset: skipped where the datasets extra is not installed."""
    pytest.importorskip("minari")


def minari_dataset(name: str, env: str | None, seed: int | None) -> Callable[[Ctx], None]:
    """A one-episode Minari dataset under inputs/datasets (MINARI_DATASETS_PATH), made with Minari's own
    create_dataset_from_buffers: CartPole's spaces, with CartPole's env spec (``env``) or none, seeded or not."""
    def setup(ctx: Ctx) -> None:
        minari = pytest.importorskip("minari")
        import warnings

        import gymnasium as gym
        from minari.data_collector.episode_buffer import EpisodeBuffer
        ctx.monkeypatch.setenv("MINARI_DATASETS_PATH", str(ctx.inp / "datasets"))
        spaces = {"observation_space": gym.spaces.Box(-np.inf, np.inf, shape=(4,), dtype=np.float32),
                  "action_space": gym.spaces.Discrete(2)}
        episode = EpisodeBuffer(seed=seed, observations=np.zeros((3, 4), np.float32), actions=np.zeros(2, np.int64),
                                rewards=[1.0, 1.0], terminations=[False, True], truncations=[False, False], infos={})
        with warnings.catch_warnings():  # Minari's reminders of the optional author fields
            warnings.simplefilter("ignore")
            minari.create_dataset_from_buffers(f"lab/{name}-v0", [episode], env=env, algorithm_name="test", **spaces)
    return setup


CASES = [
    # checkpoints
    Case("ckpt-missing", ["--ckpt", "{inp}/none.pt", *TINY], ("checkpoint", "none.pt' does not exist",
                                                                 "check the path passed to --ckpt")),
    Case("ckpt-directory", ["--ckpt", "{inp}", *TINY], ("is a folder, and not a TorchRL checkpoint folder",
                                                       "point --ckpt at the file inside the folder"),
         setup=write("notes.txt", "x")),
    Case("ckpt-corrupt", ["--ckpt", "{inp}/p.pt", *TINY], ("cannot be read", "truncated or corrupt"),
         setup=write("p.pt", b"this is not a checkpoint")),
    Case("ckpt-truncated", ["--ckpt", "{inp}/p.pt", *TINY], ("cannot be read", "truncated or corrupt"),
         setup=truncated_ckpt),
    Case("ckpt-remote-url", ["--ckpt", "https://example.com/policy.pt", *TINY],
         ("Only local checkpoint paths are read, and checkpoint 'https://example.com/policy.pt' is a URL",
          "download it first")),
    Case("ckpt-needs-pickle", ["--ckpt", "{inp}/p.pt", *TINY],
         ("only full unpickling can load", "runs code", "Unsupported global", "--trust-checkpoint"),
         setup=pickle_ckpt, check=no_code_ran),
    Case("ckpt-runs-os-system", ["--ckpt", "{inp}/p.pt", *TINY],
         ("only full unpickling can load", "runs code", "unsupported GLOBAL posix.system (its module posix is blocked)",
          "--trust-checkpoint"), setup=os_system_ckpt, check=no_code_ran),
    Case("ckpt-name-too-long", ["--ckpt", "{inp}/" + "c" * 300 + ".pt", *TINY],
         ("cannot be looked up: File name too long", "check the path passed to --ckpt")),
    Case("ckpt-keys-do-not-fit", ["--ckpt", "{inp}/p.pt", *TINY],
         ("does not fit the policy", "missing keys ['0.bias', '0.weight']", "unexpected keys ['bias', 'weight']",
          "--no-strict-load"), setup=lambda ctx: tiny_ckpt(ctx, net=torch.nn.Linear(3, 1))),
    Case("ckpt-shapes-do-not-fit", ["--ckpt", "{inp}/p.pt", *TINY],
         ("does not fit the policy", "0.weight: checkpoint (1, 5) vs policy (1, 3)"),
         setup=lambda ctx: tiny_ckpt(ctx, net=torch.nn.Sequential(torch.nn.Linear(5, 1)))),
    Case("ckpt-unknown-checkpoint-key", ["--ckpt", "{inp}/p.pt", "--checkpoint-key", "actr", *TINY],
         ("the checkpoint has no entry 'actr'", "one of ['env_name', 'model_state_dict']"), setup=tiny_ckpt),
    Case("ckpt-entry-not-a-state-dict", ["--ckpt", "{inp}/p.pt", "--state-dict-key", "env_name", *TINY],
         ("checkpoint entry 'env_name' is not a state dict", "Got: str"), setup=tiny_ckpt),
    Case("ckpt-corrupt-safetensors", ["--ckpt", "{inp}/p.safetensors", *TINY],
         ("is not a valid safetensors file", "truncated or corrupt"), setup=write("p.safetensors", b"\x08garbage")),
    Case("ckpt-torchrl-truncated", ["--ckpt", "{inp}/ck", *TINY],
         ("TorchRL checkpoint", "is damaged", "has 2 bytes, 12 expected"),
         setup=torchrl_ckpt(lambda p: next(p.rglob("tensor_00000000.memmap")).write_bytes(b"\0\0"))),
    Case("ckpt-torchrl-other-version", ["--ckpt", "{inp}/ck", *TINY],
         ("has a manifest.json of another format or version", "version 1", "Got: format 'torchrl.checkpoint', "
          "version 2"),
         setup=torchrl_ckpt(lambda p: (p / "manifest.json").write_text(json.dumps(
             {**json.loads((p / "manifest.json").read_text()), "format_version": 2})))),
    # specs and factories
    Case("spec-no-colon", ["--policy", "mypolicy", "--env", "helpers.tinyenv:make_env", *OUT],
         ("the policy spec 'mypolicy' has no colon", "'module:object' or 'path/file.py:object'")),
    Case("env-id-unknown", ["--policy", "helpers.tinyenv:make_policy", "--env", "HalfCheetah-v9", *OUT],
         ("neither 'module:object' nor a registered gymnasium id", "Did you mean 'HalfCheetah-v5'?")),
    Case("env-dm-control-unknown-task", ["--policy", "helpers.tinyenv:make_policy", "--env",
                                         "dm_control/cartpole-balanse",
                                         *OUT], ("is not a dm_control suite task", "Did you mean 'cartpole-balance'?")),
    Case("spec-unknown-module", ["--policy", "nomodule_zz:p", "--env", "helpers.tinyenv:make_env", *OUT],
         ("cannot import module 'nomodule_zz' named in the policy spec",)),
    Case("spec-unknown-attribute", ["--policy", "helpers.tinyenv:make_polcy", "--env", "helpers.tinyenv:make_env",
                                    *OUT],
         ("module 'helpers.tinyenv' has no attribute 'make_polcy'", "Did you mean 'make_policy'?")),
    Case("spec-not-callable", ["--policy", "helpers.badfactories:NOT_CALLABLE", "--env", "helpers.tinyenv:make_env",
                               *OUT],
         ("'helpers.badfactories:NOT_CALLABLE' is not callable", "Got: int object")),
    Case("spec-file-missing", ["--policy", "{inp}/nofile.py:make", "--env", "helpers.tinyenv:make_env", *OUT],
         ("the policy file", "nofile.py' does not exist")),
    Case("spec-file-raises", ["--policy", "{inp}/broken.py:make", "--env", "helpers.tinyenv:make_env", *OUT],
         ("broken.py' raised NameError", "undefined_name"), setup=write("broken.py", "x = undefined_name\n")),
    Case("factory-raises-env", ["--policy", "helpers.tinyenv:make_policy", "--env", "helpers.badfactories:raising_env",
                                *OUT],
         ("the env factory 'helpers.badfactories:raising_env' raised ValueError: boom: the simulator "
          "licence expired",)),
    Case("factory-raises-policy", ["--policy", "helpers.badfactories:raising_policy", "--env",
                                   "helpers.tinyenv:make_env", *OUT],
         ("the policy factory 'helpers.badfactories:raising_policy' raised RuntimeError: cannot build the network",)),
    Case("factory-returns-non-env", ["--policy", "helpers.tinyenv:make_policy", "--env",
                                     "helpers.badfactories:string_env", *OUT],
         ("returned a builtins.str, which is not an environment", "a torchrl EnvBase, a gymnasium.Env")),
    Case("factory-returns-non-policy", ["--policy", "helpers.badfactories:none_policy", "--env",
                                        "helpers.tinyenv:make_env", *OUT],
         ("the policy factory 'helpers.badfactories:none_policy' returned NoneType, which cannot act",)),
    Case("factory-needs-arguments", ["--policy", "helpers.tinyenv:make_policy", "--env",
                                     "helpers.badfactories:two_args_env", *OUT],
         ("needs argument(s) alpha, beta that nothing provides", "--env-kwargs '{\"alpha\": ...}'")),
    Case("factory-unknown-kwarg", ["--policy", "helpers.badfactories:policy_no_spec", "--policy-kwargs", '{"hiden": 3}',
                                   "--env", "helpers.tinyenv:make_env", *OUT],
         ("does not accept policy_kwargs key 'hiden'", "Did you mean 'hidden'?")),
    # policy output
    Case("policy-obs-key-missing", [*TINY, "--obs-key", "obs"],
         ("the step TensorDict has no observation key 'obs'", "--obs-key")),
    Case("policy-obs-key-missing-gymnasium", ["--ckpt", str(ROOT / "examples/inverted_pendulum/policy.pt"), "--policy",
                                              str(ROOT / "examples/inverted_pendulum/policy.py:make_policy"),
                                              "--env", "InvertedPendulum-v5", "--max-steps", "2", "--obs-key", "obs",
                                              "--out", "{out}/run.jsonl"],
         ("the step TensorDict has no observation key 'obs'. Expected: one of ['observation']",
          "Fix: pass --obs-key with the right name"), slow=True),
    Case("policy-action-key-missing", [*TINY, "--policy", "helpers.badfactories:td_policy_wrong_key"],
         ("the policy output has no action key 'action'", "'act'", "--action-key")),
    Case("policy-action-wrong-shape", [*TINY, "--policy", "helpers.badfactories:shape_policy"],
         ("the policy's action has the wrong shape", "shape (1,) (the env's action spec)", "Got: shape (3,)")),
    Case("policy-action-fractional-for-discrete", [*TINY, "--policy", "helpers.badfactories:fractional_policy", "--env",
                                                   "helpers.badfactories:discrete_env"],
         ("the policy's action has the wrong dtype", "torch.int64")),
    Case("policy-action-probabilities-for-discrete", [*CARTPOLE, "--policy",
                                                      "helpers.badfactories:probabilities_policy"],
         ("the policy's action is neither an index nor a one-hot vector", "values [0.30000001192092896, 0.699999988")),
    Case("policy-action-outside-the-space", [*CARTPOLE, "--policy", "helpers.badfactories:out_of_space_policy"],
         ("the policy's action is outside the env's action space", "whole numbers from 0 to 1. Got: 2.")),
    Case("policy-action-invalid-index", [*CARTPOLE, "--policy", "helpers.badfactories:out_of_space_policy", "--env",
                                         "helpers.badfactories:torchrl_cartpole"],
         ("the policy's action is not a valid index", "indices in [0, 2). Got: 2.")),
    Case("policy-action-not-numbers", [*CARTPOLE, "--policy", "helpers.badfactories:words_policy"],
         ("the policy's action is not an array of numbers", "Got: list:")),
    Case("policy-action-complex", [*TINY, "--policy", "helpers.badfactories:complex_policy"],
         ("the policy's action has the wrong dtype", "torch.complex64")),
    Case("policy-action-nan", [*TINY, "--policy", "helpers.badfactories:nan_policy"],
         ("the policy produced a NaN or infinite action", "Got: [nan]")),
    Case("policy-action-inf", [*TINY, "--policy", "helpers.badfactories:inf_policy"],
         ("the policy produced a NaN or infinite action", "Got: [inf]")),
    Case("policy-raises", [*TINY, "--policy", "helpers.badfactories:raising_step_policy"],
         ("the policy raised at step 1 of episode 0: RuntimeError: policy exploded",)),
    Case("env-reset-raises", [*TINY, "--env", "helpers.badfactories:reset_fails_env"],
         ("the env raised while resetting episode 0: OSError: the simulator socket closed",)),
    Case("env-raises-at-several-envs", ["--policy", "helpers.engine_toys:half_policy", "--env",
                                        "helpers.eval_envs:exploding_env",
                                        "--num-trajs", "8", "--num-envs", "4", "--env-batch-mode", "serial",
                                        "--out", "{out}/run.jsonl"],
         ("the env raised at step 3 of episode 2: RuntimeError: exploded at t=3",
          "check the env's step(), or the action the policy produced")),
    # frames and render backends
    Case("no-frames-null-backend", [*TINY, "--render-backend", "null"],
         ("the 'null' render backend returned no frame, and format 'mp4' needs frames", "--render-mode rgb_array")),
    Case("no-frames-env-cannot-render", ["--policy", "helpers.tinyenv:make_policy", "--env",
                                         "helpers.tinyenv:make_env", *OUT],
         ("no render backend can produce frames for this env", "the env has no pixel observation 'pixels'",
          "--from-pixels")),
    Case("backend-pixels-without-pixels", ["--policy", "helpers.tinyenv:make_policy", "--env",
                                           "helpers.tinyenv:make_env",
                                           "--render-backend", "pixels", *OUT],
         ("the env has no pixel observation 'pixels'", "observation keys ['observation']")),
    Case("backend-mujoco-without-mujoco", [*TINY, "--render-backend", "mujoco"],
         ("the mujoco backend needs a MuJoCo simulation", "Got: TinyEnv")),
    Case("camera-unknown-gymnasium", [*PEND, "--render-backend", "mujoco", "--camera", "nope"],
         ("the model has no camera 'nope'", "this model defines no cameras (cameras: none)"), slow=True),
    Case("camera-unknown-dm-control", ["--policy", "helpers.tinyenv:make_policy", "--env",
                                       "dm_control/cartpole-balance",
                                       "--render-backend", "mujoco", "--camera", "nope", "--max-steps", "2", *OUT],
         ("the model has no camera 'nope'", "one of the model's cameras: 'fixed', 'lookatcart'"), slow=True),
    Case("camera-named-with-env-render", [*PEND, "--render-backend", "env", "--camera", "track"],
         ("env.render() shows only the env's own camera, but named cameras were asked for",
          "--render-backend mujoco"), slow=True),
    Case("frame-size-changes", [*TINY, "--env", "helpers.badfactories:resizing_env"],
         ("the frame at trajectory 0, step 2 has a different size than the first frame of this mp4",
          "Expected: 16x16", "Got: 18x18"), midrun=True),
    Case("frame-not-an-image", [*TINY, "--env", "helpers.badfactories:flat_pixels_env"],
         ("a frame must be an image", "Got: shape (48,)")),
    Case("width-too-large", [*TINY, "--width", "10000"], ("width is too large", "at most 8192 pixels")),
    Case("height-zero", [*TINY, "--height", "0"], ("height must be at least 1",)),
    Case("gl-invalid", [*TINY], ("MUJOCO_GL holds a value MuJoCo does not accept", "Got: vulkan"),
         setup=lambda ctx: ctx.monkeypatch.setenv("MUJOCO_GL", "vulkan")),
    # --viewer
    Case("viewer-no-display", [*TINY, "--viewer"], ("--viewer opens a window, and this machine has no display",
                                                    "Fix: watch it in the browser instead: --live 8765"),
         setup=no_display),
    Case("viewer-unknown-kind", [*TINY, "--viewer", "mujo"], ("argument --viewer: invalid choice: 'mujo'",
                                                              "(choose from 'auto', 'mujoco', 'window')")),
    Case("render-fps-zero", [*TINY, "--render-fps", "0"], ("render_fps must be a positive number",
                                                           "Got: 0.0")),
    # formats and outputs
    Case("format-unknown-flag", [*TINY, "--format", "avi"], ("invalid choice: 'avi'", "(choose from 'mp4', 'gif'")),
    Case("format-unknown-config", ["--config", "{inp}/c.json"],
         ("unknown format 'avi'", f"one of {', '.join(WRITERS.names())}"),
         setup=write("c.json", '{"policy": "a:b", "env": "c:d", "format": "avi", "out": "x"}')),
    Case("out-suffix-contradicts-format", [*TINY, "--out", "{out}/run.gif", "--format", "mp4"],
         ("the --out suffix '.gif' says gif, but format is 'mp4'", "make --out and --format agree")),
    Case("out-suffix-unknown", [*TINY, "--out", "{out}/run.avi"], ("'.avi'", "mp4")),
    Case("out-folder-missing", [*TINY, "--out", "{out}/nope/run.mp4"],
         ("the output folder", "nope' does not exist", "mkdir -p")),
    Case("out-folder-not-writable", [*TINY, "--out", "{out}/ro/run.mp4"],
         ("ro' is not writable", "choose a folder you can write to"), setup=read_only_out),
    Case("out-exists", TINY, ("run.mp4' already exists", "--overwrite"), setup=existing("run.mp4")),
    Case("sidecar-exists", TINY, ("run.mp4.metadata.json' already exists", "--overwrite"),
         setup=existing("run.mp4.metadata.json")),
    Case("out-name-too-long", [*TINY, "--out", "{out}/" + "a" * 300 + ".mp4"],
         ("in --out is 304 bytes long", "at most 255 bytes", "choose a shorter name for --out")),
    Case("out-folder-name-too-long", [*TINY, "--out", "{out}/" + "d" * 300 + "/run.mp4"],
         ("in --out is 300 bytes long", "at most 255 bytes")),
    Case("sidecar-name-too-long", [*TINY, "--out", "{out}/" + "b" * 238 + ".mp4"],
         ("that --out makes ('.metadata.json' added)", "a name of at most 228 bytes for --out")),
    Case("out-nul-byte", [*TINY, "--out", "{out}/a\x00b.mp4"], ("holds a NUL byte", "remove the NUL")),
    Case("out-fifo-overwrite", [*TINY, "--overwrite"], ("run.mp4' is a FIFO", "only replaces regular files"),
         setup=fifo("run.mp4")),
    Case("out-device-overwrite", [*TINY, "--overwrite"],
         ("run.mp4' is a character device", "only replaces regular files"), setup=device_node("run.mp4")),
    Case("out-dangling-symlink", TINY, ("run.mp4' already exists (a symlink to nothing)", "--overwrite"),
         setup=dangling("run.mp4")),
    Case("out-folder-name-with-escapes", [*TINY, "--out", "{out}/new\x1b[2Jrun/run.mp4"],
         ("new\\x1b[2Jrun' does not exist", "mkdir -p '"),),
    Case("out-is-a-folder-overwrite", [*TINY, "--overwrite"], ("run.mp4", "is a folder"),
         setup=existing("run.mp4", folder=True)),
    Case("video-codec-unknown", [*TINY, "--video-codec", "nope"],
         ("video codec 'nope' has no encoder in this PyAV build", "drop --video-codec"), midrun=True),
    # config files and kwargs
    Case("config-missing", ["--config", "{inp}/missing.toml"], ("missing.toml' does not exist",)),
    Case("config-invalid-json", ["--config", "{inp}/c.json"], ("is not valid JSON", "correct the syntax"),
         setup=write("c.json", '{"policy": "a:b",}')),
    Case("config-invalid-yaml", ["--config", "{inp}/c.yaml"], ("is not valid YAML",),
         setup=write("c.yaml", "policy: [a:b\nenv: c:d\n")),
    Case("config-invalid-toml", ["--config", "{inp}/c.toml"], ("is not valid TOML",),
         setup=write("c.toml", "policy = a:b\n")),
    Case("config-unsupported-suffix", ["--config", "{inp}/c.ini"], ("unsupported config file type '.ini'",),
         setup=write("c.ini", "[x]\n")),
    Case("config-not-a-mapping", ["--config", "{inp}/c.yaml"], ("must hold a mapping at the top level", "Got: list"),
         setup=write("c.yaml", "- policy\n- env\n")),
    Case("config-unknown-key", ["--config", "{inp}/c.yaml"],
         ("unknown config key 'num_traj'", "Did you mean 'num_trajs'?"),
         setup=write("c.yaml", "policy: a:b\nenv: c:d\nnum_traj: 3\n")),
    Case("config-wrong-type", ["--config", "{inp}/c.toml"], ("num_trajs has the wrong type", "'three' (str)"),
         setup=write("c.toml", 'policy = "a:b"\nenv = "c:d"\nnum_trajs = "three"\n')),
    Case("env-kwargs-invalid-json", [*TINY, "--env-kwargs", "{bad"], ("env_kwargs is not valid JSON",)),
    Case("policy-kwargs-invalid-json", [*TINY, "--policy-kwargs", "{'hidden': 3}"],
         ("policy_kwargs is not valid JSON", "double quotes")),
    Case("env-kwargs-not-json-nor-file", [*TINY, "--env-kwargs", "hidden=3"],
         ("env_kwargs must be inline JSON or a file",)),
    Case("env-kwargs-file-invalid-yaml", [*TINY, "--env-kwargs", "{inp}/kw.yaml"], ("kw.yaml' is not valid YAML",),
         setup=write("kw.yaml", "size: [16\n")),
    Case("env-kwargs-rejected-by-env", [*TINY, "--env-kwargs", '{"colour": 1}'],
         ("the env factory 'helpers.tinyenv:make_env' raised TypeError", "'colour'")),
    # numbers, devices, missing fields
    Case("no-env", ["--policy", "a:b"], ("Missing required rlrender option --env: no env was given",
                                         "--env HalfCheetah-v5")),
    Case("no-policy", ["--env", "c:d"], ("Missing required rlrender option --policy: no policy was given",)),
    Case("max-steps-zero", [*TINY, "--max-steps", "0"], ("max_steps must be at least 1",)),
    Case("max-steps-negative", [*TINY, "--max-steps", "-5"], ("max_steps must be at least 1", "Got: -5")),
    Case("num-trajs-zero", [*TINY, "--num-trajs", "0"], ("num_trajs must be at least 1",)),
    Case("fps-zero", [*TINY, "--fps", "0"], ("fps must be a positive number",)),
    Case("fps-negative", [*TINY, "--fps", "-2"], ("fps must be a positive number", "Got: -2.0")),
    Case("fps-nan", [*TINY, "--fps", "nan"], ("fps must be a positive number", "Got: nan")),
    Case("notebook-viewer-port-zero", [*TINY, "--notebook-viewer-port", "0"],
         ("notebook_viewer_port must be at least 1", "Got: 0")),
    Case("live-port-out-of-range", [*TINY, "--live", "70000"],
         ("live must be a port number", "0 to 65535 (0 picks a free port)", "--live 8765")),
    Case("live-keep-negative", [*TINY, "--live", "0", "--live-keep", "-1"],
         ("live_keep must be a number of seconds", "Got: -1.0", "--live-keep 30")),
    Case("split-too-many-files", [*TINY, "--split-trajectories", "--num-trajs", "1000000000000"],
         ("split_trajectories would write 1,000,000,000,000 files, one per episode", "at most 100,000 files",
          "--max-episodes-rendered N")),
    Case("success-rule-unknown", [*TINY, "--success-rule", "last"],
         ("argument --success-rule: invalid choice: 'last'", "(choose from 'any', 'final')")),
    Case("max-episodes-rendered-negative", [*TINY, "--max-episodes-rendered", "-1"],
         ("max_episodes_rendered must not be negative",)),
    Case("video-crf-out-of-range", [*TINY, "--video-crf", "60"], ("video_crf is out of range", "0 to 51")),
    Case("video-preset-unknown", [*TINY, "--video-preset", "veryfst"],
         ("argument --video-preset: invalid choice: 'veryfst'", "Did you mean 'veryfast'?")),
    Case("notebook-mode-without-ipynb", [*TINY, "--notebook-rollout-mode", "live"],
         ("notebook_rollout_mode other than 'saved' needs format='ipynb'",)),
    Case("device-not-available", [*TINY, "--device", "cuda:63"],
         ("device 'cuda:63' is not available on this machine", "--device cpu")),
    Case("device-malformed", [*TINY, "--policy-device", "gpu"], ("policy_device is not a device", "cuda:N")),
    Case("flag-not-a-number", [*TINY, "--num-trajs", "three"], ("argument --num-trajs: invalid int value: 'three'",)),
    Case("flag-unknown", [*TINY, "--nmu-trajs", "3"], ("unrecognized arguments: --nmu-trajs",)),
    # what a new user hits
    Case("ckpt-non-strict-loads-nothing", ["--ckpt", "{inp}/p.pt", "--no-strict-load", *TINY],
         ("no key of the checkpoint's state dict fits the policy", "missing keys ['0.bias', '0.weight']",
          "unexpected keys ['bias', 'weight']", "drop --ckpt"),
         setup=lambda ctx: tiny_ckpt(ctx, net=torch.nn.Linear(3, 1))),
    Case("render-mode-not-forwarded", ["--policy", "helpers.tinyenv:make_policy", "--env",
                                       "helpers.badfactories:no_render_mode_env",
                                       "--render-mode", "rgb_array", *OUT],
         ("takes no render_mode parameter (nor a spec), so --render-mode rgb_array cannot reach it",
          "def make_env(render_mode=None)")),
    Case("classic-control-without-pygame", ["--policy", "helpers.tinyenv:make_policy", "--env", "CartPole-v1",
                                            "--check-setup", *OUT],
         ("'CartPole-v1' needs pygame to render its frames", "pip install 'gymnasium[classic-control]'"),
         setup=lambda ctx: ctx.monkeypatch.setitem(sys.modules, "pygame", None)),  # import pygame -> ImportError
    Case("out-windows-path", [*TINY, "--out", "C:\\Users\\me\\run.mp4"],
         ("is a Windows path, and this machine is linux", "a path on this machine")),
    Case("out-backslash", [*TINY, "--out", "videos\\run.mp4"],
         ("holds a backslash", "write it with forward slashes: 'videos/run.mp4'")),
    Case("max-episodes-rendered-zero-video", [*TINY, "--max-episodes-rendered", "0"],
         ("max_episodes_rendered=0 renders no episode, and format 'mp4' needs frames", "--format jsonl")),
    Case("max-episodes-rendered-zero-dry-run", [*TINY, "--max-episodes-rendered", "0", "--dry-run"],
         ("max_episodes_rendered=0 renders no episode, and format 'mp4' needs frames",)),
    Case("max-episodes-rendered-zero-html", [*TINY[:-1], "{out}/run.html", "--max-episodes-rendered", "0"],
         ("max_episodes_rendered=0 renders no episode, and format 'html' replays the rendered episodes' MuJoCo "
          "states", "the page replays that many episodes")),
    Case("max-episodes-rendered-zero-html-dry-run", [*TINY[:-1], "{out}/run.html", "--max-episodes-rendered", "0",
                                                     "--dry-run"],
         ("format 'html' replays the rendered episodes' MuJoCo states", "drop --max-episodes-rendered")),
    Case("factory-one-arg-not-spec", ["--policy", "helpers.tinyenv:make_policy", "--env",
                                      "helpers.badfactories:one_arg_env", *OUT],
         ("has one parameter 'env_name', which no spec field or env_kwargs key names, so it received the "
          "RenderEnvSpec", "--env-kwargs '{\"env_name\": ...}'")),
    Case("exploration-mode-without-analytic-mode", ["--policy", "helpers.badfactories:tanh_normal_policy", "--env",
                                                    "helpers.tinyenv:make_env", "--exploration-mode", "mode", *OUT[:1],
                                                    "{out}/run.jsonl"],
         ("the policy's TanhNormal distribution has no 'mode'", "has not analytical mode",
          "--exploration-mode deterministic")),
    Case("flag-unknown-did-you-mean", [*TINY, "--stocastic"],
         ("unrecognized arguments: --stocastic", "Did you mean '--stochastic'?")),
    Case("logger-misspelled", [*TINY, "--logger", "tensorbord"],
         ("argument --logger: invalid choice: 'tensorbord'", "Did you mean 'tensorboard'?")),
    # sweeps: refused before anything is written
    Case("sweep-no-checkpoints", ["sweep", *SWEEP], ("the sweep has no checkpoints", "--ckpt 'runs/ckpt_*.pt'")),
    Case("sweep-glob-matches-nothing", ["sweep", "--ckpt", "{inp}/ckpt_*.pt", *SWEEP],
         ("checkpoint pattern", "ckpt_*.pt' (run 'default') matches no file", "quote a glob")),
    Case("sweep-group-unknown-task", ["sweep", "--ckpt", "{inp}/p.pt", *SWEEP, "--group", "g=tiny2"],
         ("group 'g' names the unknown task 'tiny2'", "--env NAME=SPEC"), setup=tiny_ckpt),
    Case("sweep-task-in-two-groups", ["sweep", "--ckpt", "{inp}/p.pt", *SWEEP, "--env",
                                      "tiny2=helpers.tinyenv:make_env", "--group", "g=tiny,tiny2", "--group", "h=tiny"],
         ("task 'tiny' is in two groups, 'g' and 'h'", "list each task in one --group"), setup=tiny_ckpt),
    Case("sweep-watch-settle-negative", ["sweep", "--ckpt", "{inp}/p.pt", *SWEEP, "--watch", "--watch-settle", "-1"],
         ("watch_settle must be a number of seconds >= 0", "--watch-settle 15"), setup=tiny_ckpt),
    Case("sweep-out-not-a-sweep", ["sweep", "--ckpt", "{inp}/p.pt", *SWEEP],
         ("exists and is not a sweep folder (it has no manifest.json)",), setup=sweep_folder("notes.txt")),
    Case("sweep-out-holds-a-sweep", ["sweep", "--ckpt", "{inp}/p.pt", *SWEEP],
         ("already holds a sweep", "pass --resume to run only its missing episodes"),
         setup=sweep_folder("manifest.json")),
    Case("sweep-resume-other-grid", ["sweep", "--ckpt", "{inp}/p.pt", *SWEEP, "--resume"],
         ("has another grid than this config", "resume with the original config"),
         setup=sweep_folder("manifest.json")),
    Case("sweep-gymnasium-id-misspelled", ["sweep", "--ckpt", "{inp}/p.pt", "--env", "HalfCheetah-v", "--policy",
                                           "helpers.tinyenv:make_policy", "--out", "{out}/sw"],
         ("'HalfCheetah-v' is neither 'module:object' nor a registered gymnasium id", "Did you mean 'HalfCheetah-v5'?",
          "nothing has run"), setup=tiny_ckpt),
    Case("sweep-ray-not-installed", ["sweep", "--ckpt", "{inp}/p.pt", *SWEEP, "--executor", "ray"],
         ("the ray executor needs Ray, which is not installed", "pip install 'torchrl_render[ray]'"),
         setup=without_ray),
    # the 3-D replay
    Case("html-env-without-mujoco", [*TINY, "--out", "{out}/run.html"],
         ("the html format, the notebook's 3-D viewer and mujoco_qpos_key need a MuJoCo model, and this env has "
          "none", "--out run.mp4")),
    Case("model-file-other-nq", ["--policy", "helpers.dropin_toys:counting_policy", "--env",
                                 "helpers.dropin_toys:state_env", "--mujoco-model-path", "{inp}/one.xml",
                                 "--out", "{out}/run.html"],
         ("the env's get_state() gives 2 qpos, and the model", "has nq=1", "--mujoco-model-path"),
         setup=lambda ctx: (ctx.inp / "one.xml").write_text(
             '<mujoco><worldbody><body><joint type="hinge"/><geom size=".1"/></body></worldbody></mujoco>')),
    Case("qpos-key-env-without-state", [*TINY, "--mujoco-qpos-key", "qpos", "--out", "{out}/run.jsonl"],
         ("mujoco_qpos_key records the env's MuJoCo state, and this env exposes none", "get_state()")),
    # the evaluation engine
    Case("seed-mode-torchrl-num-envs", [*TINY, "--seed-mode", "torchrl", "--num-envs", "2", "--num-trajs", "2"],
         ("seed_mode='torchrl' seeds one env once and runs its episodes one after another", "--seed-mode per-episode")),
    Case("eval-n-timesteps-with-num-trajs", [*TINY, "--num-trajs", "3", "--eval-n-timesteps", "100"],
         ("num_trajs and eval_n_timesteps were both given", "drop --num-trajs")),
    # --precision: stop on the confidence sequence's half-width
    Case("precision-malformed", [*TINY_DATA, "--num-trajs", "10", "--precision", "success"],
         ("--precision 'success': write METRIC:HALFWIDTH", "--precision success:0.05 or --precision return:25")),
    Case("precision-negative-halfwidth", [*TINY_DATA, "--num-trajs", "10", "--precision", "return:-5"],
         ("the half-width must be a positive number", "--precision return:25")),
    Case("precision-without-cap", [*TINY_DATA, "--precision", "return:5"],
         ("precision needs a cap", "--precision return:5 --num-trajs 500")),
    Case("precision-with-eval-n-timesteps", [*TINY_DATA, "--precision", "return:5", "--eval-n-timesteps", "100"],
         ("precision and eval_n_timesteps were both given", "drop --eval-n-timesteps")),
    Case("return-bounds-reversed", [*TINY_DATA, "--num-trajs", "10", "--precision", "return:5", "--return-bounds",
                                    "500", "0"],
         ("return_bounds' LO must be below its HI", "--return-bounds 0 500")),
    Case("return-bounds-without-precision", [*TINY_DATA, "--return-bounds", "0", "500"],
         ("return_bounds bounds the sequence of --precision return:", "drop --return-bounds")),
    Case("precision-success-not-reported", [*TINY_DATA, "--num-trajs", "10", "--precision", "success:0.2"],
         ("--precision success:0.2 needs each episode's success, and episode 0 (seed 0) reported none",
          "--precision return:HALFWIDTH")),
    Case("return-outside-bounds", ["--policy", "helpers.select_toys:zero_policy", "--env", "helpers.select_toys:make",
                                   "--num-trajs", "10", "--precision", "return:1", "--return-bounds", "-1", "1",
                                   "--out", "{out}/run.jsonl"],
         ("episode 0's return 3 is outside --return-bounds -1 1", "widen --return-bounds")),
    Case("sweep-precision-with-block-size", ["sweep", "--ckpt", "{inp}/p.pt", *SWEEP, "--precision", "return:5",
                                             "--num-trajs", "20", "--block-size", "5"],
         ("--precision stops each cell on its episodes in seed order", "drop --block-size"), setup=tiny_ckpt),
    Case("sweep-separate-unknown-checkpoint", ["sweep", "--ckpt", "{inp}/p.pt", "--ckpt", "{inp}/r.pt", *SWEEP,
                                               "--separate", "p.pt", "q.pt"],
         ("--separate names 'q.pt', which is none of the sweep's checkpoints", "--separate p.pt r.pt"),
         setup=lambda ctx: (tiny_ckpt(ctx), tiny_ckpt(ctx, "r.pt"))),
    Case("no-trajectories-with-save-rollout", [*TINY, "--no-trajectories", "--save-rollout"],
         ("save_rollout needs the trajectories, and trajectories=False drops them", "drop --no-trajectories")),
    Case("policy-batch-unknown", [*TINY, "--policy-batch", "per_env"],
         ("argument --policy-batch: invalid choice: 'per_env'", "Did you mean 'per-env'?")),
    Case("policy-not-batched", ["--policy", "helpers.badfactories:unbatched_policy", "--env", "InvertedPendulum-v5",
                                "--num-trajs", "2", "--num-envs", "2", "--max-steps", "2", "--out", "{out}/run.jsonl"],
         ("the policy's action has the wrong shape", "for a batch of 2 envs", "--policy-batch per-env"), slow=True),
    Case("policy-returns-tuple", ["--policy", "helpers.engine_toys:sac_like_policy", "--env", "InvertedPendulum-v5",
                                  "--max-steps", "2", "--out", "{out}/run.jsonl"],
         ("the policy returned a tuple (Tensor, Tensor), not an action", "lambda obs: actor(obs)[0]"), slow=True),
    Case("policy-lerobot-not-installed", ["--policy", "lerobot", *CARTPOLE],
         ("--policy lerobot needs the lerobot package, which is not installed",
          "'lerobot[pusht]==0.4.4'", "lerobot 0.4.4 needs torch >= 2.2.1 and < 2.11"),
         setup=lambda ctx: ctx.monkeypatch.setitem(sys.modules, "lerobot", None)),  # as where it is not installed
    # Minari datasets: --out NAME.minari, and the dataset subcommand (nothing is downloaded)
    Case("minari-not-installed", [*TINY_DATA, "--out", "{out}/run.minari"],
         ("Minari datasets need the package 'minari', which is not installed",
          "pip install torchrl_render[datasets]"),
         setup=lambda ctx: ctx.monkeypatch.setitem(sys.modules, "minari", None)),
    Case("minari-dataset-id-malformed", [*TINY_DATA, "--out", "{out}/run.minari", "--minari-dataset-id", "my run"],
         ("'my run' is not a Minari dataset id", "pass another --minari-dataset-id"), setup=needs_minari),
    Case("dataset-missing", ["dataset", "{inp}/nope.minari", "--out", "{out}/eval_info.json"],
         ("nope.minari' is not a Minari dataset (nothing is there)", "--out NAME.minari"), setup=needs_minari),
    Case("dataset-id-not-local", ["dataset", "someone/expert-v0", "--out", "{out}/eval_info.json"],
         ("the Minari dataset 'someone/expert-v0' is not on this machine", "nothing is downloaded here",
          "point MINARI_DATASETS_PATH at the folder that holds a local copy"),
         setup=lambda ctx: (needs_minari(ctx),
                            ctx.monkeypatch.setenv("MINARI_DATASETS_PATH", str(ctx.inp / "datasets")))),
    Case("dataset-env-not-recoverable", ["dataset", "{inp}/datasets/lab/nospec-v0", "--out", "{out}/replay.mp4"],
         ("the dataset 'lab/nospec-v0' records no env spec, so its env cannot be recovered",
          "--out eval_info.json/.jsonl (no env needed)"), setup=minari_dataset("nospec", None, 0)),
    Case("dataset-without-seeds", ["dataset", "{inp}/datasets/lab/unseeded-v0", "--out", "{out}/replay.mp4"],
         ("records no seed for episode(s) 0", "write --out eval_info.json / .jsonl"),
         setup=minari_dataset("unseeded", "CartPole-v1", None)),
    Case("html-several-envs", ["--policy", "helpers.policies:linear_policy", "--env",
                               "helpers.torchrl_toys:torchrl_pendulum",
                               "--max-steps", "2", "--out", "{out}/run.html", "--num-trajs", "2", "--num-envs", "2",
                               "--env-batch-mode", "serial"],
         ("with --num-envs > 1 the envs live in worker processes", "--num-envs 1"), slow=True),
]


DOCUMENTED = troubleshooting.documented(DOC.read_text(encoding="utf-8"))


def _params():
    for case in CASES:
        marks = [pytest.mark.slow] if case.slow else []
        if case.xfail:
            marks.append(pytest.mark.xfail(strict=True, reason=case.xfail))
        yield pytest.param(case, id=case.id, marks=marks)


def snapshot(folder: Path) -> dict[str, str]:
    """Every entry under ``folder`` (hidden ones included) with a hash of its bytes; a symlink, a FIFO or a
    device node by what it is (reading a FIFO would wait for a writer)."""
    def entry(p: Path) -> str:
        if p.is_symlink():
            return f"-> {os.readlink(p)}"
        if p.is_dir():
            return "dir"
        return hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else stat.filemode(p.lstat().st_mode)
    return {str(p.relative_to(folder)): entry(p) for p in folder.rglob("*")}


@pytest.fixture
def ctx(tmp_path, monkeypatch):
    (tmp_path / "inp").mkdir()
    (tmp_path / "out").mkdir()
    monkeypatch.chdir(tmp_path / "out")  # a default output path would land here too
    return Ctx(tmp_path / "inp", tmp_path / "out", monkeypatch)


def run_cli(argv: list[str], ctx: Ctx) -> int:
    argv = [a.replace("{inp}", str(ctx.inp)).replace("{out}", str(ctx.out)) for a in argv]
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's own errors
        return exc.code


@pytest.mark.parametrize("case", list(_params()))
def test_bad_input(case, ctx, capsys):
    if case.setup:
        case.setup(ctx)
    before = snapshot(ctx.out)
    code = run_cli(case.argv, ctx)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("torchrl-render: error: "), err
    assert "Traceback" not in err and err.count("\n") == 1, err
    for fragment in case.fragments:
        assert fragment.replace("{inp}", str(ctx.inp)) in err, (fragment, err)
    assert troubleshooting.page_message(err, ctx.inp, ctx.out) == DOCUMENTED.get(case.id), \
        "docs/troubleshooting.md shows another message: run tools/gen_troubleshooting.py"
    after = snapshot(ctx.out)
    if case.midrun:  # the writer fails on its own thread: episodes may have finished meanwhile (kept, not lost)
        partial = ctx.out / "run.mp4.partial.json"
        if "run.mp4.partial.json" in after and "run.mp4.partial.json" not in before:
            assert json.loads(partial.read_text())["metrics"]["per_episode"]
            del after["run.mp4.partial.json"]
    assert after == before
    if case.check:
        case.check(ctx)


def test_catalogue_is_large_and_ids_are_unique():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)) and len([c for c in CASES if not c.xfail]) >= 30


def test_troubleshooting_doc_lists_every_catalogued_input():
    text = DOC.read_text(encoding="utf-8")
    documented = re.findall(r"^### `([a-z0-9-]+)`", text, re.M)
    assert sorted(documented) == sorted(c.id for c in CASES)
    sections = dict(zip(documented, re.split(r"^### `[a-z0-9-]+`", text, flags=re.M)[1:]))
    for case in CASES:  # the doc quotes the pinned message
        assert case.fragments[0].replace("{inp}/", "") in sections[case.id], case.id


def test_troubleshooting_page_is_generated_from_its_source():
    """The page is tests/bad_inputs_explained.md with the messages inserted: no hand edit, nothing left out."""
    source = troubleshooting.SOURCE.read_text(encoding="utf-8")
    page = DOC.read_text(encoding="utf-8")
    assert troubleshooting.row_ids(source) == list(DOCUMENTED)
    assert troubleshooting.render(source, DOCUMENTED) == page, \
        "docs/troubleshooting.md was edited by hand: edit tests/bad_inputs_explained.md, then run " \
        "tools/gen_troubleshooting.py"


@pytest.mark.slow
def test_a_real_subprocess_prints_one_paragraph(tmp_path):
    """``python -m torchrl_render`` on a bad input: exit 2, one line on stderr, nothing written."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS.parent)])}
    argv = [a.replace("{out}", str(tmp_path)) for a in TINY] + ["--fps", "0"]
    proc = subprocess.run([sys.executable, "-m", "torchrl_render", *argv], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=300)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("torchrl-render: error: fps must be a positive number")
    assert proc.stderr.count("\n") == 1 and list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_the_cli_leaves_third_party_info_logs_out(tmp_path):
    """Only torchrl_render's own log lines (and the error) reach stderr: not PyOpenGL's or absl's INFO chatter."""
    code = ("import logging, sys; from torchrl_render.cli import main; "
            "code = 0\ntry:\n    main(['--policy', 'a:b', '--env', 'c:d', '--fps', '0'])\n"
            "except SystemExit as exc:\n    code = exc.code\n"
            "logging.getLogger('absl').info('third-party chatter'); sys.exit(code)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS.parent)])}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=300)
    assert proc.returncode == 2 and proc.stderr.startswith("torchrl-render: error: fps must be a positive number")
    assert "third-party chatter" not in proc.stderr
