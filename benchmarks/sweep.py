"""Sweeps: a shell loop of single CLI runs against ``sweep --executor local`` and ``ray``.

    MUJOCO_GL=egl .venv/bin/python benchmarks/sweep.py                  # 4 ckpts x 2 tasks x 8 episodes, 200 steps
    MUJOCO_GL=egl .venv/bin/python benchmarks/sweep.py --max-steps 50   # quicker

The grid: 4 checkpoints made by perturbing the shipped HalfCheetah policy's weights (written to a
temporary folder as ``step_<k>.pt``), times 2 tasks (the example's ``make_env``, which films through
the tracking camera, and the plain ``HalfCheetah-v5`` id: the same dynamics, two specs), times 8
episodes, metrics only (nothing rendered). Three ways to run it, each timed from the shell's point of
view (start-up included):

- ``loop``: a bash loop of 8 ``python -m torchrl_render`` runs, one per cell (what users do today);
- ``local``: one ``python -m torchrl_render sweep`` (worker processes sized to the machine);
- ``ray``: the same with ``--executor ray`` (a local Ray instance started and stopped by the sweep).

It checks that the three give the same per-episode returns, and writes a JSON of the figures
(default ``benchmarks/results/sweep.json``). The target: ``local`` at least 1.5x the loop.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHEETAH = ROOT / "examples" / "half_cheetah"
POLICY = f"{CHEETAH / 'policy.py'}:make_policy"
TASKS = {"cheetah_track": f"{CHEETAH / 'policy.py'}:make_env", "cheetah_plain": "HalfCheetah-v5"}


def make_checkpoints(folder: Path, n: int = 4) -> list[Path]:
    """The shipped weights plus seeded noise of growing size: ``step_<k>.pt`` for k = 0, 1000, ..."""
    import torch

    base = torch.load(CHEETAH / "policy.pt", weights_only=True)
    paths = []
    for i in range(n):
        payload = dict(base)
        state = {k: v.clone() for k, v in base["model_state_dict"].items()}
        gen = torch.Generator().manual_seed(i)
        weight = state["linear.weight"]
        state["linear.weight"] = weight + 0.05 * (n - 1 - i) * torch.randn(weight.shape, generator=gen)
        payload["model_state_dict"] = state
        path = folder / f"step_{1000 * i}.pt"
        torch.save(payload, path)
        paths.append(path)
    return paths


def run_loop(ckpts: list[Path], folder: Path, episodes: int, steps: int) -> tuple[float, dict]:
    lines = []
    for ckpt in ckpts:
        for task, spec in TASKS.items():
            out = folder / f"{ckpt.stem}__{task}.jsonl"
            lines.append(" ".join(shlex.quote(a) for a in [
                sys.executable, "-m", "torchrl_render", "--ckpt", str(ckpt), "--env", spec, "--policy", POLICY,
                "--num-trajs", str(episodes), "--max-steps", str(steps), "--out", str(out), "--quiet"]))
    script = "set -e\n" + "\n".join(f"{line} > /dev/null" for line in lines)
    start = time.perf_counter()
    subprocess.run(["bash", "-c", script], check=True, cwd=ROOT)
    wall = time.perf_counter() - start
    returns, rollout = {}, 0.0
    for ckpt in ckpts:
        for task in TASKS:
            meta = json.loads((folder / f"{ckpt.stem}__{task}.jsonl.metadata.json").read_text())
            returns[(ckpt.stem, task)] = [round(e["sum_reward"], 6) for e in meta["metrics"]["per_episode"]]
            rollout += sum(e["wall_s"] for e in meta["metrics"]["per_episode"])
    return wall, returns, rollout, 1


def run_sweep(executor: str, ckpts: list[Path], folder: Path, episodes: int, steps: int) -> tuple[float, dict]:
    out = folder / f"sweep_{executor}"
    argv = [sys.executable, "-m", "torchrl_render", "sweep", "--ckpt", *map(str, ckpts),
            *[a for task, spec in TASKS.items() for a in ("--env", f"{task}={spec}")], "--policy", POLICY,
            "--num-trajs", str(episodes), "--max-steps", str(steps), "--max-episodes-rendered", "0",
            "--executor", executor, "--no-report", "--quiet", "--out", str(out)]
    start = time.perf_counter()
    subprocess.run(argv, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    returns: dict = {}
    rollout = 0.0
    for line in (out / "episodes.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["kind"] == "episode":
            rollout += r["metrics"]["wall_s"]
            returns.setdefault((Path(r["checkpoint"]).stem, r["task"]), []).append((r["episode_ix"],
                                                                                   round(r["metrics"]["sum_reward"],
                                                                                         6)))
    slots = os.cpu_count() or 1  # local: one worker per CPU; ray: a local instance with one task per CPU
    return wall, {k: [v for _, v in sorted(eps)] for k, eps in returns.items()}, rollout, slots


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--max-steps", type=int, default=200)
    parser.add_argument("--executors", default="loop,local,ray")
    parser.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "sweep.json")
    args = parser.parse_args()
    os.environ.setdefault("MUJOCO_GL", "egl")
    rows = {}
    with tempfile.TemporaryDirectory(prefix="trr-sweep-bench-") as tmp:
        folder = Path(tmp)
        ckpts = make_checkpoints(folder)
        cells = len(ckpts) * len(TASKS)
        reference = None
        for name in args.executors.split(","):
            run = run_loop if name == "loop" else lambda *a, n=name: run_sweep(n, *a)
            wall, returns, rollout, slots = run(ckpts, folder, args.episodes, args.max_steps)
            same = reference is None or returns == reference
            reference = reference or returns
            overhead = (wall * slots - rollout) / cells  # process-slot seconds per cell not spent stepping episodes
            rows[name] = {"wall_s": round(wall, 2), "per_cell_s": round(wall / cells, 2), "rollout_s": round(rollout,
                                                                                                             2),
                          "slots": slots, "overhead_per_cell_s": round(overhead, 2), "same_returns": same}
            print(f"{name:<6} {wall:7.1f} s  {wall / cells:6.2f} s/cell  rollouts {rollout:6.1f} s  overhead "
                  f"{overhead:5.2f} slot-s/cell  same returns: {same}", flush=True)
    if "loop" in rows:
        for row in rows.values():
            row["speedup_vs_loop"] = round(rows["loop"]["wall_s"] / row["wall_s"], 2)
        print("speed-up vs the loop: " + ", ".join(f"{k} {v['speedup_vs_loop']}x" for k, v in rows.items()))
    result = {"grid": {"checkpoints": 4, "tasks": len(TASKS), "episodes": args.episodes, "max_steps": args.max_steps},
              "cpus": os.cpu_count(), "load_avg_1m": os.getloadavg()[0], "rows": rows}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0 if all(r["same_returns"] for r in rows.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
