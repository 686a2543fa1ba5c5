"""Factories for the sweep tests: TinyEnv made slow (so a test can act mid-cell) or broken, and checkpoints.

``make_slow_env`` has TinyEnv's dynamics (so its metrics equal ``helpers.tinyenv:make_env``'s) but sleeps
``SWEEP_STEP_S`` seconds (default 0.05) per step; ``make_broken_env`` raises when built.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import torch

from helpers.tinyenv import TinyEnv, make_policy


class SlowTinyEnv(TinyEnv):
    def _step(self, tensordict):
        time.sleep(float(os.environ.get("SWEEP_STEP_S", "0.05")))
        return super()._step(tensordict)


def make_slow_env(spec=None, **kwargs):
    return SlowTinyEnv(**kwargs)


def make_broken_env(spec=None):
    raise RuntimeError("this task's simulator is not installed")


def write_checkpoints(folder: Path, steps=(10, 20, 30)) -> list[Path]:
    """TinyEnv policies with weights moved by step/100, saved as ckpt_<step>.pt."""
    paths = []
    for step in steps:
        policy = make_policy()
        with torch.no_grad():
            for tensor in policy.parameters():
                tensor.add_(step / 100)
        path = Path(folder) / f"ckpt_{step}.pt"
        torch.save({"model_state_dict": policy.state_dict()}, path)
        paths.append(path)
    return paths
