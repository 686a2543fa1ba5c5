"""Train the InvertedPendulum-v5 example policy with ARS V2-t (numpy, 2 worker processes).

    python examples/inverted_pendulum/train.py --seed 0 --out examples/inverted_pendulum/policy.pt

Same algorithm as the HalfCheetah example (``examples/ars.py``): linear
policy on running-mean/std-normalised observations, N=8 directions, top b=4,
1000-step episodes. Stops as soon as the mean policy balances for all 1000
steps on 8 evaluation episodes (checked every 2 iterations), or after
--minutes. Takes seconds.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import ars

if __name__ == "__main__":
    sys.exit(ars.cli(HERE, description=__doc__.splitlines()[0], minutes=2.0, step_size=0.02, noise=0.03,
                     directions=8, top_b=4, episode_len=1000, eval_every=2, eval_episodes=8,
                     target_return=1000.0))
