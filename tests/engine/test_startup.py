"""Start-up: a gymnasium run imports neither tensordict nor torchrl unless it needs them.

tensordict's import (which imports ``torch._dynamo``) and torchrl's cost more than a second over
``import torch``. The engine steps gymnasium envs in numpy, so a plain-module policy on a gymnasium env
needs neither: the env's torchrl wrapper, its specs and the TensorDicts are built only when something
asks for them (a factory reading ``spec.env_specs``, a TensorDict policy, trajectories kept as
TensorDicts, a torchrl env). Each case runs the CLI in a fresh process and reports what it imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers.paths import ROOT, TESTS

HEAVY = ("tensordict", "torchrl", "torch._dynamo", "scipy")

PROBE = f"""
import json, sys
from torchrl_render.cli import main
code = main(sys.argv[1:])
print("PROBE " + json.dumps({{"code": code, "loaded": [m for m in {HEAVY!r} if m in sys.modules]}}))
"""


def run_cli(tmp_path, *argv: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), str(ROOT)]), "MUJOCO_GL": "egl"}
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv, "--quiet", "--no-progress"], capture_output=True,
                          text=True, cwd=tmp_path, env=env, timeout=300)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("PROBE ")), None)
    assert proc.returncode == 0 and line is not None, proc.stderr[-3000:]
    return json.loads(line[len("PROBE "):])


CHEETAH = ROOT / "examples" / "half_cheetah"
SHIPPED = ["--ckpt", str(CHEETAH / "policy.pt"), "--policy", f"{CHEETAH / 'policy.py'}:make_policy",
           "--env", f"{CHEETAH / 'policy.py'}:make_env", "--max-steps", "15"]


@pytest.mark.slow
@pytest.mark.parametrize("out", ["eval_info.json", "run.jsonl", "run.mp4", "replay.html"])
def test_a_gymnasium_run_of_a_module_policy_imports_neither_tensordict_nor_torchrl(tmp_path, out):
    # the command's default: nobody receives the trajectories, so no TensorDict is built for them
    got = run_cli(tmp_path, *SHIPPED, "--num-trajs", "2", "--out", str(tmp_path / out),
                  "--render-quality", "fast", "--width", "48", "--height", "48")
    assert got == {"code": 0, "loaded": []}
    meta = json.loads((tmp_path / f"{out}.metadata.json").read_text())
    assert meta["engine"]["path"] == "gymnasium" and len(meta["metrics"]["per_episode"]) == 2
    assert meta["env_info"]["class"] == "GymWrapper"  # what torchrl would have wrapped it in, as before


@pytest.mark.slow
def test_worker_processes_of_a_gymnasium_run_need_no_tensordict_either(tmp_path):
    got = run_cli(tmp_path, *SHIPPED, "--num-trajs", "4", "--num-envs", "2", "--env-batch-mode", "parallel",
                  "--no-trajectories", "--out", str(tmp_path / "eval_info.json"))
    assert got == {"code": 0, "loaded": []}
    meta = json.loads((tmp_path / "eval_info.json.metadata.json").read_text())
    assert meta["engine"]["batch_mode"] == "parallel" and meta["engine"]["start_method"] == "fork"


@pytest.mark.slow
def test_what_needs_torchrl_still_gets_it(tmp_path):
    # trajectories asked for, or saved beside the artifact: each episode's TensorDict
    got = run_cli(tmp_path, *SHIPPED, "--num-trajs", "1", "--trajectories", "--out", str(tmp_path / "a.json"))
    assert got["code"] == 0 and "tensordict" in got["loaded"]
    got = run_cli(tmp_path, *SHIPPED, "--num-trajs", "1", "--save-rollout", "--out", str(tmp_path / "s.json"))
    assert got["code"] == 0 and "tensordict" in got["loaded"] and (tmp_path / "s_rollouts").is_dir()
    # a factory that reads spec.env_specs gets torchrl's specs (built when it reads them)
    got = run_cli(tmp_path, "--policy", "helpers.policies:linear_policy", "--env", "InvertedPendulum-v5",
                  "--max-steps", "5", "--no-trajectories", "--out", str(tmp_path / "b.json"))
    assert got["code"] == 0 and "torchrl" in got["loaded"]


def test_the_policy_spec_builds_env_specs_when_they_are_read():
    from torchrl_render.config import Deferred, RenderPolicySpec

    made = []
    spec = RenderPolicySpec(None, None, None, "cpu", Deferred(lambda: made.append(1) or {"action": 1}), {}, None)
    assert made == []
    assert spec.env_specs == {"action": 1} and spec.env_specs == {"action": 1} and made == [1]
    assert RenderPolicySpec(None, None, None, "cpu", "given", {}, None).env_specs == "given"
    with pytest.raises(TypeError, match="env_specs"):
        RenderPolicySpec(None, None, None, "cpu")  # still a required field, as torchrl.render's


def test_the_gymnasium_handle_answers_without_torchrl_and_wraps_on_demand():
    import gymnasium

    from torchrl_render.envs import GymnasiumEnv, as_torchrl, to_torchrl_env

    env = GymnasiumEnv(gymnasium.make("Pendulum-v1"), to_torchrl_env)
    assert env.raw.spec.id == "Pendulum-v1" and env.unwrapped is env.raw.unwrapped and not env.wrapped
    with pytest.raises(AttributeError):
        env._torchrl_render_batched  # noqa: B018 - a private probe never builds the wrapper
    assert not env.wrapped
    wrapped = as_torchrl(env)
    assert env.wrapped and wrapped is env.torchrl and env.action_spec is wrapped.action_spec
    assert env.reset is not env.raw.reset and env.reset() is not None  # torchrl's reset wins over gymnasium's
    env.close()
