#!/usr/bin/env python
"""Filming the episodes that matter: ``--render-select worst:3`` against today's single pass filming the first 3.

    MUJOCO_GL=egl .venv/bin/python benchmarks/render_select.py                   # 1,000 episodes x 1,000 steps
    MUJOCO_GL=egl .venv/bin/python benchmarks/render_select.py --episodes 50     # a reduced check

Both are whole commands (fresh interpreters, timed from here) on the shipped HalfCheetah policy, with the same
flags but the selection: ``--max-episodes-rendered 3`` renders episodes 0-2 while the others run over K envs;
``--render-select worst:3`` runs every episode over K envs without frames, then re-runs the 3 lowest returns
by seed with rendering. Both film 3 episodes of 1,000 steps, so the difference is what the second pass costs
(and, where the first 3 are rendered first on one env, what K envs save on them). The selection run's
metadata says whether each re-run reproduced its first-pass return to the bit; the script prints it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "half_cheetah"
COMMON = ["--ckpt", str(EXAMPLE / "policy.pt"), "--policy", f"{EXAMPLE / 'policy.py'}:make_policy",
          "--env", f"{EXAMPLE / 'policy.py'}:make_env", "--seed", "0", "--no-progress", "--quiet"]
CASES = {"today: first 3, one pass": ["--max-episodes-rendered", "3"],
         "worst:3, two passes": ["--render-select", "worst:3"]}


def run_case(flags: list[str], args: argparse.Namespace, out: Path) -> tuple[float, dict]:
    argv = [sys.executable, "-m", "torchrl_render", *COMMON, "--num-trajs", str(args.episodes), "--max-steps",
            str(args.steps), "--num-envs", str(args.num_envs), "--render-quality", args.quality,
            "--policy-batch", args.policy_batch, "--out", str(out), "--overwrite", *flags]
    start = time.perf_counter()
    subprocess.run(argv, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)  # the CLI prints the artifact path
    wall = time.perf_counter() - start
    return wall, json.loads(Path(f"{out}.metadata.json").read_text(encoding="utf-8"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--quality", default="fast", choices=("default", "balanced", "fast"))
    parser.add_argument("--policy-batch", default="batched", choices=("batched", "per-env"))
    args = parser.parse_args()
    print(f"{args.episodes} episodes x {args.steps} steps, --num-envs {args.num_envs}, --render-quality "
          f"{args.quality}, --policy-batch {args.policy_batch}")
    with tempfile.TemporaryDirectory() as tmp:
        walls = {}
        for i, (case, flags) in enumerate(CASES.items()):
            wall, meta = run_case(flags, args, Path(tmp) / f"case{i}.mp4")
            walls[case] = wall
            frames = sum(e["num_frames"] for e in meta["metrics"]["per_episode"])
            print(f"{case:28s} {wall:8.1f} s  ({frames} frames)")
            chosen = meta.get("render_select")
            if chosen is not None:
                print("  chosen:", ", ".join(f"episode {e['episode_ix']} ({e['reason']}, return "
                                             f"{e['sum_reward']:.2f})" for e in chosen["episodes"]))
                print(f"  first pass {chosen['first_pass_s']:.1f} s, re-runs {chosen['rerun_s']:.1f} s; "
                      f"re-runs that differ: {chosen['differ'] or 'none'}")
    base, select = walls.values()
    print(f"worst:3 / today: {select / base:.2f}x the wall time")


if __name__ == "__main__":
    main()
