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

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "half_cheetah"
FAST_LOOK = f"{ROOT / 'benchmarks' / 'run.py'}:make_env_fast_look"
COMMON = ["--ckpt", str(EXAMPLE / "policy.pt"), "--policy", f"{EXAMPLE / 'policy.py'}:make_policy", "--seed", "0"]
ENV = ["--env", f"{EXAMPLE / 'policy.py'}:make_env"]

#: case -> (module, flags after COMMON; {out} is replaced by the output path)
TORCHRL = ["--render-mode", "rgb_array", "--format", "mp4", "--out", "{out}.mp4"]
CASES = {
    "torchrl.render mp4 (default look)": ("torchrl.render", [*ENV, *TORCHRL]),
    "torchrl.render mp4 (fast look, adapter)": ("torchrl.render", ["--env", FAST_LOOK, *TORCHRL]),
    "ours mp4 default": ("torchrl_render", [*ENV, "--out", "{out}.mp4", "--no-progress"]),
    "ours mp4 fast": ("torchrl_render", [*ENV, "--render-quality", "fast", "--out", "{out}.mp4", "--no-progress"]),
    "ours jsonl": ("torchrl_render", [*ENV, "--out", "{out}.jsonl", "--no-progress"]),
    "ours html": ("torchrl_render", [*ENV, "--out", "{out}.html", "--no-progress"]),
}
#: (what, our case, their case, goal): torchrl.render has no fast preset, so the fast look is judged against its
#: own (default) look, as benchmarks/run.py does; the adapter row shows the same pictures side by side.
TARGETS = [("fast look: ours at least 6x torchrl.render's whole command", "ours mp4 fast",
            "torchrl.render mp4 (default look)", 6.0),
           ("default look: ours at least 1x torchrl.render's whole command", "ours mp4 default",
            "torchrl.render mp4 (default look)", 1.0),
           ("fast look, both tools drawing the same pictures (no target)", "ours mp4 fast",
            "torchrl.render mp4 (fast look, adapter)", None)]


def run_case(case: str, trajs: int, steps: int, tmp: Path) -> float:
    module, flags = CASES[case]
    tmp.mkdir(exist_ok=True)
    out = tmp / case.replace(" ", "_").replace("(", "").replace(")", "").replace(",", "").replace(".", "_")
    argv = [sys.executable, "-m", module, *COMMON, *[f.format(out=out) for f in flags], "--num-trajs", str(trajs),
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
    args = parser.parse_args()
    trajs, steps = (2, 40) if args.quick else (2, 200)
    rounds = args.rounds or (1 if args.quick else 3)
    walls: dict[str, list[float]] = {case: [] for case in CASES}
    order = list(CASES)
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
        ratio = statistics.median(t / o for o, t in zip(walls[ours], walls[theirs]))
        verdict = "-" if goal is None else f"{'yes' if ratio >= goal else 'NO'} (>= {goal:g})"
        print(f"| {name} | {ratio:.2f}x | {verdict} |")
    html = statistics.median(h - j for h, j in zip(walls["ours html"], walls["ours jsonl"]))
    print(f"\nThe html replay page costs {html:+.2f} s over jsonl for the same {frames}-step rollout "
          f"({statistics.median(walls['ours html']):.2f} s against {statistics.median(walls['ours jsonl']):.2f} s).")


if __name__ == "__main__":
    main()
