"""The three MuJoCo looks side by side: one still each of the same state, and each one's render time.

    MUJOCO_GL=egl .venv/bin/python benchmarks/quality_stills.py              # writes docs/img/quality_*.png
    MUJOCO_GL=egl .venv/bin/python benchmarks/quality_stills.py --no-write   # timings only

The shipped HalfCheetah policy is rolled out from seed 0 for ``--step`` steps; the state is
then drawn at 480x480 with each ``render_quality`` by our mujoco backend, and the draw is
timed alone (``--frames`` draws of that state, after one warm-up draw). The presets are timed
one after another in rounds (default, balanced, fast, default, ...), and the median of the
rounds is kept, because the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHEETAH = ROOT / "examples" / "half_cheetah"
QUALITIES = ("default", "balanced", "fast")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--step", type=int, default=120, help="steps of the policy before the still")
    parser.add_argument("--frames", type=int, default=30, help="timed draws per preset and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-write", action="store_true", help="do not write docs/img/quality_*.png")
    args = parser.parse_args()
    os.environ.setdefault("MUJOCO_GL", "egl")
    sys.path.insert(0, str(ROOT))
    from PIL import Image
    from torchrl.envs.utils import step_mdp

    from torchrl_render import RenderConfig
    from torchrl_render.backends.mujoco import MujocoBackend
    from torchrl_render.checkpoint import read_checkpoint
    from torchrl_render.envs import build_env
    from torchrl_render.policies import build_policy

    cfg = RenderConfig(ckpt=CHEETAH / "policy.pt", policy=f"{CHEETAH / 'policy.py'}:make_policy",
                       env=f"{CHEETAH / 'policy.py'}:make_env", seed=0)
    payload, digest = read_checkpoint(cfg.ckpt)
    env = build_env(cfg, payload)
    policy = build_policy(cfg, env, payload, digest, [])
    env = policy.adapt_env(env)
    policy.env = env
    env.set_seed(0)
    td = env.reset()
    for _ in range(args.step):
        td = step_mdp(env.step(policy(td)), keep_other=True)
    backends = {q: MujocoBackend.from_config(env, RenderConfig(policy="p:m", env="e:m", render_quality=q))
                for q in QUALITIES}
    timings: dict[str, list[float]] = {q: [] for q in QUALITIES}
    try:
        for quality, backend in backends.items():
            frame = backend.capture(td)["default"]  # also the warm-up draw
            if not args.no_write:
                Image.fromarray(frame).save(ROOT / "docs" / "img" / f"quality_{quality}.png", optimize=True)
        for _ in range(args.rounds):
            for quality, backend in backends.items():
                start = time.perf_counter()
                for _ in range(args.frames):
                    backend.capture(td)
                timings[quality].append((time.perf_counter() - start) / args.frames * 1e3)
    finally:
        for backend in backends.values():
            backend.close()
        env.close()
    default_ms = statistics.median(timings["default"])
    print(f"HalfCheetah-v5 at step {args.step}, 480x480, {os.environ['MUJOCO_GL']}, median of {args.rounds} rounds")
    print("| look | ms / frame | x faster than default |")
    print("|---|---|---|")
    for quality in QUALITIES:
        ms = statistics.median(timings[quality])
        print(f"| {quality} | {ms:.1f} | {default_ms / ms:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
