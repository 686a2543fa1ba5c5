#!/usr/bin/env python
"""The whole command, as a user times it: ``python -m torchrl_render ...`` against ``python -m torchrl.render ...``.

    MUJOCO_GL=egl .venv/bin/python benchmarks/whole_command.py            # 2 x 200 steps, 3 rounds (~6 min)
    MUJOCO_GL=egl .venv/bin/python benchmarks/whole_command.py --quick    # 2 x 40 steps, 1 round

Each run is a fresh interpreter (imports, checkpoint, env, policy, rollout, encoding, sidecar: everything a
command does), timed from the parent with ``time.perf_counter``. benchmarks/run.py measures
``render_policy`` alone in processes forked from one that imported everything (the steady state); this
script adds what a user pays on top: imports and start-up. Same checkpoint, factories, seed and size
(the shipped HalfCheetah policy, 480x480, mp4). torchrl.render has no fast preset: its fast-look run goes
through benchmarks/run.py's ``make_env_fast_look`` (gymnasium's renderer with the fast preset's settings),
so both tools draw the same pictures. Cases are interleaved, every other round in reverse order; each
ratio is between runs of one round, and a target is judged on the median over the rounds.

Also measured: the html replay page's cost over jsonl (the same rollout, data only) for ours.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "half_cheetah"
THIS = Path(__file__).resolve()
FAST_LOOK = f"{ROOT / 'benchmarks' / 'run.py'}:make_env_fast_look"
COMMON = ["--ckpt", str(EXAMPLE / "policy.pt"), "--policy", f"{EXAMPLE / 'policy.py'}:make_policy", "--seed", "0"]
ENV = ["--env", f"{EXAMPLE / 'policy.py'}:make_env"]
#: The TorchRL path, as torchrl.render's users have it: the env a torchrl ``GymWrapper`` in a
#: ``TransformedEnv``, the policy a ``TensorDictModule`` whose factory holds the weights (torchrl.render
#: wants a --ckpt: the same file, not loaded into the module, with --no-auto-load-policy).
TR_COMMON = ["--ckpt", str(EXAMPLE / "policy.pt"), "--no-auto-load-policy", "--policy", f"{THIS}:torchrl_policy",
             "--seed", "0"]
TR_ENV = ["--env", f"{THIS}:torchrl_env"]

#: case -> (module, flags; {out} is replaced by the output path)
TORCHRL = ["--render-mode", "rgb_array", "--format", "mp4", "--out", "{out}.mp4"]
GYM_CASES = {
    "torchrl.render mp4 (default look)": ("torchrl.render", [*COMMON, *ENV, *TORCHRL]),
    "torchrl.render mp4 (fast look, adapter)": ("torchrl.render", [*COMMON, "--env", FAST_LOOK, *TORCHRL]),
    "ours mp4 default": ("torchrl_render", [*COMMON, *ENV, "--out", "{out}.mp4", "--no-progress"]),
    "ours mp4 fast": ("torchrl_render", [*COMMON, *ENV, "--render-quality", "fast", "--out", "{out}.mp4",
                                         "--no-progress"]),
    "ours jsonl": ("torchrl_render", [*COMMON, *ENV, "--out", "{out}.jsonl", "--no-progress"]),
    "ours html": ("torchrl_render", [*COMMON, *ENV, "--out", "{out}.html", "--no-progress"]),
}
TR_CASES = {
    "TorchRL env: torchrl.render mp4": ("torchrl.render", [*TR_COMMON, *TR_ENV, *TORCHRL]),
    "TorchRL env: torchrl.render jsonl": ("torchrl.render", [*TR_COMMON, *TR_ENV, "--format", "jsonl",
                                                             "--out", "{out}.jsonl"]),
    "TorchRL env: ours mp4 default": ("torchrl_render", [*TR_COMMON, *TR_ENV, "--out", "{out}.mp4",
                                                         "--no-progress"]),
    "TorchRL env: ours mp4 fast": ("torchrl_render", [*TR_COMMON, *TR_ENV, "--render-quality", "fast",
                                                      "--out", "{out}.mp4", "--no-progress"]),
    "TorchRL env: ours jsonl": ("torchrl_render", [*TR_COMMON, *TR_ENV, "--out", "{out}.jsonl", "--no-progress"]),
}
CASES = {**GYM_CASES, **TR_CASES}
#: (what, our case, their case, goal): torchrl.render has no fast preset, so the fast look is judged against its
#: own (default) look, as benchmarks/run.py does; the adapter row shows the same pictures side by side.
TARGETS = [("fast look: ours at least 6x torchrl.render's whole command", "ours mp4 fast",
            "torchrl.render mp4 (default look)", 6.0),
           ("default look: ours at least 1x torchrl.render's whole command", "ours mp4 default",
            "torchrl.render mp4 (default look)", 1.0),
           ("fast look, both tools drawing the same pictures (no target)", "ours mp4 fast",
            "torchrl.render mp4 (fast look, adapter)", None),
           ("TorchRL env, fast look: ours at least 6x torchrl.render", "TorchRL env: ours mp4 fast",
            "TorchRL env: torchrl.render mp4", 6.0),
           ("TorchRL env, default look: ours at least 1.3x torchrl.render", "TorchRL env: ours mp4 default",
            "TorchRL env: torchrl.render mp4", 1.3),
           ("TorchRL env, jsonl: ours at least 6x torchrl.render", "TorchRL env: ours jsonl",
            "TorchRL env: torchrl.render jsonl", 6.0)]


def _example() -> Any:
    """The example's ``policy.py``, loaded as a module (it is a file, not a package)."""
    import importlib.util

    module_spec = importlib.util.spec_from_file_location("_bench_half_cheetah_policy", EXAMPLE / "policy.py")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def torchrl_env(spec: Any = None) -> Any:
    """``--env ...whole_command.py:torchrl_env``: the example's env (its camera and floor) as a torchrl
    ``GymWrapper`` in a ``TransformedEnv`` with a ``StepCounter``, as TorchRL's tutorials build them."""
    from torchrl.envs import GymWrapper, StepCounter, TransformedEnv

    return TransformedEnv(GymWrapper(_example().make_env(spec)), StepCounter())


def torchrl_policy(spec: Any = None) -> Any:
    """``--policy ...whole_command.py:torchrl_policy``: the shipped policy, weights loaded, as a
    ``TensorDictModule``."""
    import torch
    from tensordict.nn import TensorDictModule

    module = _example().make_policy(spec)
    module.load_state_dict(torch.load(EXAMPLE / "policy.pt", weights_only=True)["model_state_dict"])
    return TensorDictModule(module.eval(), in_keys=["observation"], out_keys=["action"])


def run_case(case: str, trajs: int, steps: int, tmp: Path) -> float:
    module, flags = CASES[case]
    tmp.mkdir(exist_ok=True)
    out = tmp / case.replace(" ", "_").replace("(", "").replace(")", "").replace(",", "").replace(".", "_")
    argv = [sys.executable, "-m", module, *[f.format(out=out) for f in flags], "--num-trajs", str(trajs),
            "--max-steps", str(steps)]
    env = dict(os.environ, MUJOCO_GL=os.environ.get("MUJOCO_GL", "egl"), PYTHONPATH=str(ROOT))
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{case} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--path", choices=["gymnasium", "torchrl", "both"], default="both",
                        help="the cases of a gymnasium env, of a TorchRL env, or both (default)")
    args = parser.parse_args()
    cases = {"gymnasium": GYM_CASES, "torchrl": TR_CASES, "both": CASES}[args.path]
    trajs, steps = (2, 40) if args.quick else (2, 200)
    rounds = args.rounds or (1 if args.quick else 3)
    walls: dict[str, list[float]] = {case: [] for case in cases}
    order = list(cases)
    with tempfile.TemporaryDirectory(prefix="whole_command_") as folder:
        for r in range(rounds):
            for case in order if r % 2 == 0 else order[::-1]:
                walls[case].append(run_case(case, trajs, steps, Path(folder) / f"round{r + 1}"))
                print(f"  round {r + 1}: {case}: {walls[case][-1]:.2f} s", file=sys.stderr)
    frames = trajs * (steps + 1)
    print(f"Whole command, fresh process each: {trajs} x {steps} steps ({frames} frames), 480x480, "
          f"HalfCheetah-v5, {rounds} round(s), load average {os.getloadavg()[0]:.1f} at the end.\n")
    print("| case | wall s (median) | wall s per round | frames/s |")
    print("|---|---|---|---|")
    for case, values in walls.items():
        per = ", ".join(f"{v:.2f}" for v in values)
        print(f"| {case} | {statistics.median(values):.2f} | {per} | {frames / statistics.median(values):.1f} |")
    print("\n| target | value (median of rounds) | met |")
    print("|---|---|---|")
    for name, ours, theirs, goal in TARGETS:
        if ours not in walls or theirs not in walls:
            continue
        ratio = statistics.median(t / o for o, t in zip(walls[ours], walls[theirs]))
        verdict = "-" if goal is None else f"{'yes' if ratio >= goal else 'NO'} (>= {goal:g})"
        print(f"| {name} | {ratio:.2f}x | {verdict} |")
    if "ours html" not in walls:
        return
    html = statistics.median(h - j for h, j in zip(walls["ours html"], walls["ours jsonl"]))
    print(f"\nThe html replay page costs {html:+.2f} s over jsonl for the same {frames}-step rollout "
          f"({statistics.median(walls['ours html']):.2f} s against {statistics.median(walls['ours jsonl']):.2f} s).")


if __name__ == "__main__":
    main()
