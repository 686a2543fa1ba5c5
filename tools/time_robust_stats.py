"""Times the sweep report's bootstrap on a grid of checkpoints x tasks x episodes (default: 10 x 10 x 50, a
100-cell sweep of 50 episodes), written as a sweep folder of known returns.

    python tools/time_robust_stats.py [--ckpts 10] [--tasks 10] [--episodes 50] [--reps 2000]

Prints the best of 3 of ``derive`` (eval_info.json's whole content) with ``--reps`` resamples and with none
(no interval, so the difference is the bootstrap's cost), and of the statistics alone: every cell's draws
and intervals, every checkpoint's estimates across tasks, every pair's probability of improvement.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from torchrl_render.metrics import robust as R
from torchrl_render.sweep.report import derive

from helpers.sweep_records import write_sweep


def best(fn, n=3) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ckpts", type=int, default=10)
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--reps", type=int, default=2000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    grid = {(f"ckpt_{i}.pt", f"t{j}"): list(rng.normal(10 * i, 20, args.episodes)) for i in range(args.ckpts)
            for j in range(args.tasks)}
    baselines = {f"t{j}": {"random": 0.0, "reference": 100.0} for j in range(args.tasks)}

    def statistics() -> None:
        draws = {k: R.Draws(v, args.reps, np.random.default_rng(R.keyed_seed(0, str(k)))) for k, v in grid.items()}
        for d in draws.values():
            R.cell_estimates(d)
        ckpts = [f"ckpt_{i}.pt" for i in range(args.ckpts)]
        by = {c: {t: d for (c2, t), d in draws.items() if c2 == c} for c in ckpts}
        for c in ckpts:
            R.level_estimates(list(by[c].items()), baselines)
        for i, a in enumerate(ckpts):
            for b in ckpts[i + 1:]:
                R.pair_estimates(by[a], by[b])

    with tempfile.TemporaryDirectory() as tmp:
        with_reps = write_sweep(Path(tmp) / "reps", grid, reps=args.reps, baselines=baselines)
        without = write_sweep(Path(tmp) / "none", grid, reps=0, baselines=baselines)
        cells = args.ckpts * args.tasks
        print(f"{cells} cells ({args.ckpts} checkpoints x {args.tasks} tasks) x {args.episodes} episodes, "
              f"{args.reps} resamples")
        print(f"statistics alone (draws, cell intervals, checkpoint levels, {args.ckpts * (args.ckpts - 1) // 2} "
              f"pairs): {best(statistics):.3f} s")
        t_with, t_without = best(lambda: derive(with_reps)), best(lambda: derive(without))
        print(f"derive: {t_with:.3f} s with the bootstrap, {t_without:.3f} s without (difference "
              f"{t_with - t_without:.3f} s)")


if __name__ == "__main__":
    main()
