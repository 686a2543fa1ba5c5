"""Evaluate the shipped example policies against zero-action and random baselines.

    python examples/evaluate.py                      # both examples
    python examples/evaluate.py half_cheetah --seeds 0 1 2 3 4 --steps 1000
    python examples/evaluate.py half_cheetah --ckpt /tmp/other.pt

Raw gymnasium + torch: each checkpoint is read with ``torch.load(...,
weights_only=True)`` and its ``"model_state_dict"`` is loaded (strictly) into
the example's ``policy.py:make_policy()``; the env comes from
``policy.py:make_env()``. Episode ``i`` is reset with seed ``seeds[i]`` and run
for up to ``--steps`` steps (it stops early only if the env terminates). The
policy is deterministic; the random baseline samples from the action space
seeded with the episode seed.

Reported per policy: return (mean, std, min over seeds), episode length,
x-distance travelled (``unwrapped.data.qpos[0]`` at the end minus at reset) and,
for HalfCheetah, the largest torso pitch ``|qpos[2]|`` seen (over ~1.6 rad means
the cheetah flipped onto its back).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
EXAMPLES = ("half_cheetah", "inverted_pendulum")


def load_policy_module(example: str):
    spec = importlib.util.spec_from_file_location(f"{example}_policy", HERE / example / "policy.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_episode(env, act, seed: int, steps: int) -> dict:
    obs, _ = env.reset(seed=seed)
    env.action_space.seed(seed)
    data = env.unwrapped.data
    x0 = float(data.qpos[0])
    total, n, max_pitch = 0.0, 0, abs(float(data.qpos[2])) if data.qpos.shape[0] > 2 else 0.0
    for _ in range(steps):
        obs, reward, terminated, truncated, _ = env.step(act(obs))
        total += float(reward)
        n += 1
        if data.qpos.shape[0] > 2:
            max_pitch = max(max_pitch, abs(float(data.qpos[2])))
        if terminated or truncated:
            break
    return {"return": total, "length": n, "x": float(data.qpos[0]) - x0, "max_pitch": max_pitch}


def evaluate(example: str, seeds, steps: int, ckpt: Path | None = None, baselines: bool = True) -> dict:
    module = load_policy_module(example)
    ckpt = ckpt or HERE / example / "policy.pt"
    checkpoint = torch.load(ckpt, weights_only=True, map_location="cpu")
    policy = module.make_policy()
    policy.load_state_dict(checkpoint["model_state_dict"])
    policy.eval()
    # max_episode_steps lifts gymnasium's TimeLimit so --steps > 1000 works too
    env = module.make_env(type("Spec", (), {"width": None, "height": None,
                                            "env_kwargs": {"max_episode_steps": steps}})())
    shape = env.action_space.shape

    def trained(obs):
        with torch.no_grad():
            return policy(torch.as_tensor(obs, dtype=torch.float32)).numpy()

    agents = {"trained": trained}
    if baselines:
        agents["zero"] = lambda obs: np.zeros(shape, dtype=np.float32)
        agents["random"] = lambda obs: env.action_space.sample()
    results = {}
    for name, act in agents.items():
        results[name] = [run_episode(env, act, s, steps) for s in seeds]
    env.close()
    meta = {k: v for k, v in checkpoint.items() if k != "model_state_dict"}
    return {"ckpt": str(ckpt), "meta": meta, "results": results}


def summarize(example: str, report: dict) -> None:
    print(f"== {example}: {report['ckpt']}")
    print(f"   checkpoint: {report['meta']}")
    for name, eps in report["results"].items():
        r = np.array([e["return"] for e in eps])
        line = (f"   {name:8s} return {r.mean():9.1f} +- {r.std():7.1f} (min {r.min():9.1f})  "
                f"len {np.mean([e['length'] for e in eps]):6.0f}  x {np.mean([e['x'] for e in eps]):7.2f} m")
        if example == "half_cheetah":
            line += f"  max|pitch| {max(e['max_pitch'] for e in eps):.2f} rad"
        print(line)
        print("            per seed: " + ", ".join(f"{e['return']:.1f}" for e in eps))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("examples", nargs="*", metavar="EXAMPLE", help=f"any of {', '.join(EXAMPLES)} (default: all)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--ckpt", type=Path, default=None, help="checkpoint to evaluate (one example only)")
    p.add_argument("--no-baselines", action="store_true")
    args = p.parse_args(argv)
    examples = args.examples or list(EXAMPLES)
    unknown = [e for e in examples if e not in EXAMPLES]
    if unknown:
        p.error(f"unknown example(s) {unknown}; choose from {list(EXAMPLES)}")
    if args.ckpt is not None and len(examples) != 1:
        p.error("--ckpt needs exactly one example")
    for example in examples:
        summarize(example, evaluate(example, args.seeds, args.steps, args.ckpt, not args.no_baselines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
