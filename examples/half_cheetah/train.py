"""Train the HalfCheetah-v5 example policy with ARS V2-t (numpy, 2 worker processes).

    python examples/half_cheetah/train.py --minutes 11 --seed 0 --out examples/half_cheetah/policy.pt

Hyperparameters: step size 0.02, noise 0.03, N=8 directions, top b=4,
1000-step episodes (the full task horizon). The best mean-policy checkpoint so
far (4 evaluation episodes of 1000 steps every 10 iterations) is written to
``--out`` whenever it improves, so an interrupted run still leaves a usable
policy. Iteration k is reproducible for a given --seed; how many iterations
fit in --minutes depends on the machine (use --iters for a fixed count).
See ``examples/ars.py`` for the algorithm and ``policy.py`` for the network.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import ars

if __name__ == "__main__":
    sys.exit(ars.cli(HERE, description=__doc__.splitlines()[0], minutes=11.0, step_size=0.02, noise=0.03,
                     directions=8, top_b=4, episode_len=1000, eval_every=10, eval_episodes=4))
