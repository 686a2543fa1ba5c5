"""The folder the docs' blocks run in: the shipped examples, and real files behind the docs' placeholders.

The docs write ``--ckpt policy.pt --policy mypkg.policy:make --env mypkg.env:make`` (or ``p.pt``, ``m:make``)
for "your checkpoint and your factories", ``model.xml`` for a MuJoCo model file and ``runs/eval_rollouts`` for
rollouts saved earlier. Here each of them is the shipped HalfCheetah example (examples/half_cheetah): the
same checkpoint, its factories, gymnasium's half_cheetah.xml, and rollouts recorded from it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path

import shrink

from helpers.paths import ROOT
from helpers.xserver import xvfb

FACTORY = '''"""The docs' placeholder for your {what} factory: the shipped HalfCheetah example's."""
import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "docs_half_cheetah_policy", Path(__file__).resolve().parents[{up}] / "examples" / "half_cheetah" / "policy.py")
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
make_env, make_policy = _module.make_env, _module.make_policy
'''
EITHER = '''
from torchrl_render import RenderEnvSpec


def make(spec):
    """One name for both factories (``--policy m:make --env m:make``): the spec says which is asked for."""
    return make_env(spec) if isinstance(spec, RenderEnvSpec) else make_policy(spec)
'''
SHIM = "#!{python}\nimport sys\nsys.path.insert(0, {here!r})\nimport shrink\nshrink.main({kind!r})\n"


# What the placeholders' runs hold, made in one interpreter (one start-up): rollouts with MuJoCo states for
# `replay`, two evaluations for `compare`, and a tiny PPO model for the SB3 example (a few hundred steps: the
# docs evaluate it, nobody judges it).
RUNS = """
from torchrl_render.cli import main
common = ["--ckpt", "p.pt", "--policy", "m:make", "--env", "m:make", "--quiet"]
assert main([*common, "--num-trajs", "1", "--max-steps", "20", "--mujoco-qpos-key", "qpos", "--save-rollout",
             "--out", "runs/eval.jsonl"]) == 0
for name, seed in (("a", "0"), ("b", "10")):
    assert main([*common, "--num-trajs", "4", "--max-steps", "50", "--seed", seed,
                 "--out", f"runs/{name}/eval_info.json"]) == 0
from stable_baselines3 import PPO
PPO("MlpPolicy", "Pendulum-v1", n_steps=64, batch_size=64, n_epochs=1, seed=0, device="cpu").learn(64).save(
    "ppo_pendulum.zip")
"""


def build(ws: Path) -> Path:
    """The template every document's workspace is copied from."""
    import gymnasium

    shutil.copytree(ROOT / "examples", ws / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    (ws / "mypkg").mkdir()
    (ws / "mypkg" / "__init__.py").write_text("")
    (ws / "mypkg" / "policy.py").write_text(FACTORY.format(what="policy", up=1) + "make = make_policy\n")
    (ws / "mypkg" / "env.py").write_text(FACTORY.format(what="env", up=1) + "make = make_env\n")
    (ws / "m.py").write_text(FACTORY.format(what="env and policy", up=0) + EITHER)
    for name in ("policy.pt", "p.pt"):
        shutil.copy(ws / "examples" / "half_cheetah" / "policy.pt", ws / name)
    (ws / "runs").mkdir()
    for step in (0, 1000, 2000):
        shutil.copy(ws / "examples" / "half_cheetah" / "policy.pt", ws / "runs" / f"ckpt_{step}.pt")
    model = Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets" / "half_cheetah.xml"
    for name in ("model.xml", "half_cheetah.xml"):
        shutil.copy(model, ws / name)
    for name in ("a", "b"):
        (ws / "runs" / name).mkdir()
    subprocess.run([sys.executable, "-c", RUNS], cwd=ws, env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ws}",
                                                              "MUJOCO_GL": "egl"}, check=True, timeout=600)
    (ws / ".bin").mkdir()
    here = str(Path(__file__).resolve().parent)
    for name, kind in (("python", "python"), ("python3", "python"), ("python3.11", "python"),
                       ("torchrl-render", "torchrl-render")):
        shim = ws / ".bin" / name
        shim.write_text(SHIM.format(python=sys.executable, here=here, kind=kind))
        shim.chmod(0o755)
    return ws


def copy(template: Path, relpath: str) -> Path:
    """A fresh workspace for one document, beside the template."""
    target = template.parent / ("ws_" + relpath.replace("/", "_").replace(".md", ""))
    shutil.copytree(template, target, symlinks=True)
    return target


@contextlib.contextmanager
def inside(ws: Path):
    """The current folder and the first import path are ``ws`` (as for ``python script.py`` run there)."""
    before = Path.cwd()
    os.chdir(ws)
    sys.path.insert(0, str(ws))
    try:
        yield
    finally:
        os.chdir(before)
        with contextlib.suppress(ValueError):
            sys.path.remove(str(ws))


def shrink_config(cfg, cap: dict[str, int]):
    """A ``RenderConfig`` capped as ``shrink.shrink_render`` caps the command line."""
    data = str(cfg.out or "").endswith(shrink.DATA_SUFFIXES)
    trajs, steps = (cap["eval_trajs"], cap["eval_steps"]) if data else (cap["trajs"], cap["steps"])
    changes = {"max_steps": min(cfg.max_steps or steps, steps)}
    if cfg.eval_n_timesteps is None:
        changes["num_trajs"] = min(cfg.num_trajs or 1, trajs)
    if not data:
        changes.update(width=min(cfg.width, cap["size"]), height=min(cfg.height, cap["size"]), render_quality="fast")
    return dataclasses.replace(cfg, **changes)


def shrink_sweep(cfg, cap: dict[str, int]):
    """A ``SweepConfig`` whose cells are capped as a rendering run's are."""
    base = dict(cfg.base)
    base["num_trajs"] = min(base.get("num_trajs") or 1, cap["trajs"])
    base["max_steps"] = min(base.get("max_steps") or cap["steps"], cap["steps"])
    base.update(width=min(base.get("width", 480), cap["size"]), height=min(base.get("height", 480), cap["size"]),
                render_quality="fast")
    return dataclasses.replace(cfg, base=base)


@contextlib.contextmanager
def shrunk_render_policy():
    """``torchrl_render.render_policy`` and ``sweep`` with their configs capped (the shims' defaults)."""
    import torchrl_render
    from torchrl_render import RenderConfig, SweepConfig

    real, real_sweep = torchrl_render.render_policy, torchrl_render.sweep
    cap = shrink.caps("")

    def render_policy(config=None, /, **fields):
        if config is None:
            keep = {k: fields.pop(k) for k in ("command", "on_episode", "live") if k in fields}
            config, fields = RenderConfig(**fields), keep
        return real(shrink_config(config, cap), **fields)

    def sweep(config=None, /, **fields):
        if config is None:
            keep = {k: fields.pop(k) for k in ("command", "echo") if k in fields}
            config, fields = SweepConfig(**fields), keep
        return real_sweep(shrink_sweep(config, cap), **fields)

    torchrl_render.render_policy, torchrl_render.sweep = render_policy, sweep
    try:
        yield
    finally:
        torchrl_render.render_policy, torchrl_render.sweep = real, real_sweep


@contextlib.contextmanager
def x_server():
    """A real X server (Xvfb) for the blocks that open a window (``--viewer``); None where Xvfb is missing."""
    with xvfb() as display:
        yield display
