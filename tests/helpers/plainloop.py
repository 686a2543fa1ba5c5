"""The loop a user writes by hand, to check our numbers against: ``env.reset(seed=s)``, one action per step,
the return summed in float64 (as Python sums gymnasium's float rewards)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any


def plain_returns(make_env: Callable[[], Any], act: Callable[[Any], Any], seeds: Iterable[int],
                  max_steps: int | None = None) -> list[tuple[float, int]]:
    """``(return, length)`` of one episode per seed, on one env built by ``make_env``."""
    env = make_env()
    out = []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        total, n = 0.0, 0
        while True:
            obs, reward, terminated, truncated, _ = env.step(act(obs))
            total += reward
            n += 1
            if terminated or truncated or n == max_steps:
                break
        out.append((total, n))
    env.close()
    return out
