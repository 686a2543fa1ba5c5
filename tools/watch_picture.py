"""docs/img/sweep_watch_tensorboard.png: the TensorBoard scalars of a real ``sweep --watch`` run.

Nothing is trained: checkpoints of the shipped InvertedPendulum policy, its linear weights scaled by
0, 0.25, ..., 1 (each stores its ``step``), are written into a folder one by one, by rename, as a
training loop would, while ``sweep --watch --logger tensorboard`` evaluates each new one. The
scalars are read back with TensorBoard's EventAccumulator and drawn with matplotlib.

Usage: MUJOCO_GL=egl python tools/watch_picture.py [--out docs/img/sweep_watch_tensorboard.png]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "inverted_pendulum"
FRACTIONS = (0.0, 0.25, 0.5, 0.75, 1.0)
TRAIN_STEPS = 14753  # the shipped checkpoint's train_steps


def write_checkpoints(folder: Path, gap_s: float) -> None:
    trained = torch.load(EXAMPLE / "policy.pt", weights_only=True)
    for fraction in FRACTIONS:
        state = dict(trained["model_state_dict"])
        state = {k: (v * fraction if k.startswith("linear.") else v) for k, v in state.items()}
        step = round(fraction * TRAIN_STEPS)
        tmp = folder / f"policy_{step}.pt.part"  # not matched by the glob until renamed
        torch.save({"model_state_dict": state, "step": step}, tmp)
        os.replace(tmp, folder / f"policy_{step}.pt")  # complete at once, as a training loop's save-and-rename
        time.sleep(gap_s)


def run_watch(work: Path) -> Path:
    folder = work / "ckpts"
    folder.mkdir()
    cmd = [sys.executable, "-m", "torchrl_render", "sweep", "--ckpt", f"{folder}/*.pt",
           "--env", f"pendulum={EXAMPLE / 'policy.py'}:make_env", "--policy", f"{EXAMPLE / 'policy.py'}:make_policy",
           "--num-trajs", "8", "--max-steps", "300", "--max-episodes-rendered", "0", "--workers", "1",
           "--out", str(work / "sweep"), "--watch", "--watch-timeout", "10", "--watch-settle", "1",
           "--logger", "tensorboard", "--quiet"]
    driver = subprocess.Popen(cmd, cwd=work)
    write_checkpoints(folder, gap_s=3.0)
    if driver.wait(timeout=600) != 0:
        raise SystemExit(f"the sweep failed: exit code {driver.returncode}")
    return work / "sweep" / "logs" / "sweep"


def draw(logs: Path, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(logs), size_guidance={"scalars": 0})
    acc.Reload()
    scalars = {t: sorted((e.step, e.value) for e in acc.Scalars(t)) for t in acc.Tags()["scalars"]}
    steps = [s for s, _ in scalars["eval/avg_sum_reward"]]
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4), constrained_layout=True)
    mean = [v for _, v in scalars["eval/avg_sum_reward"]]
    low, high = ([v for _, v in scalars[f"eval/ci95_sum_reward_{k}"]] for k in ("low", "high"))
    axes[0].plot(steps, mean, "o-", color="C0")
    axes[0].fill_between(steps, low, high, alpha=0.25, color="C0")
    axes[0].set(title="eval/avg_sum_reward (95% CI band)", xlabel="training step")
    for ax, tag in zip(axes[1:], ("eval/avg_length", "eval/avg_max_reward"), strict=True):
        ax.plot(steps, [v for _, v in scalars[tag]], "o-", color="C1")
        ax.set(title=tag, xlabel="training step")
    fig.suptitle("sweep --watch --logger tensorboard: each checkpoint evaluated as training wrote it "
                 "(InvertedPendulum-v5, 8 episodes each, read back with TensorBoard's EventAccumulator)", fontsize=9)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "sweep_watch_tensorboard.png")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        draw(run_watch(Path(tmp)), args.out)
    print(args.out)


if __name__ == "__main__":
    main()
