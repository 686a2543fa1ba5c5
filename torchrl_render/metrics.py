"""Per-episode and aggregate metrics.

Aggregate names follow lerobot-eval where it has one (``avg_sum_reward``,
``pc_success``...), with imitation's ``return_*`` / ``len_*`` as aliases.

Semantics: ``std_sum_reward`` (and ``return_std``, ``len_std``) is the population standard
deviation (ddof=0), as ``numpy.std``, SB3's ``evaluate_policy`` and imitation report it;
``ci95_sum_reward`` is the Student-t 95% interval of the mean, which uses the sample standard
deviation (ddof=1), as that interval requires; ``ci95_success`` is the 95% Wilson score
interval of ``pc_success`` (in percent). An episode cut by ``max_steps`` is ``truncated``.
``success`` is read from a ``success`` or ``is_success`` entry of the step
TensorDict; for gymnasium envs, ``info["is_success"]`` (or ``info["success"]``) is
read into it by :func:`torchrl_render.envs.success_reader`, which every gymnasium env
we wrap gets. It is ``None`` when the env never reports it.

Example:
    >>> ep = EpisodeMetrics(episode_ix=0, seed=0)
    >>> for r in (1.0, 2.0, 0.5):
    ...     ep.add(r)
    >>> ep.sum_reward, ep.max_reward, ep.length
    (3.5, 2.0, 3)
    >>> aggregate([ep.to_dict()], eval_s=1.0)["avg_sum_reward"]
    3.5
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["EpisodeMetrics", "aggregate", "read_success", "wilson_interval"]

SUCCESS_KEYS = ("success", "is_success")


@dataclass
class EpisodeMetrics:
    """Running numbers of one episode."""

    episode_ix: int
    seed: int | None
    sum_reward: float = 0.0
    max_reward: float = -math.inf
    length: int = 0
    success: bool | None = None
    terminated: bool = False
    truncated: bool = False
    wall_s: float = 0.0
    num_frames: int = 0

    def add(self, reward: float, success: bool | None = None) -> None:
        """Adds one step."""
        self.sum_reward += reward
        self.max_reward = max(self.max_reward, reward)
        self.length += 1
        if success is not None:
            self.success = bool(self.success) or success

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if data["length"] == 0:
            data["max_reward"] = None
        return data


def read_success(td: Any) -> bool | None:
    """``True``/``False`` from a ``success`` / ``is_success`` entry, else ``None``.

    ``success_reported`` (written by our gymnasium info reader) tells a reported False from
    an env that said nothing this step.
    """
    reported = td.get("success_reported", None)
    if reported is not None and not bool(reported.any()):
        return None
    for key in SUCCESS_KEYS:
        value = td.get(key, None)
        if value is not None:
            return bool(value.any())
    return None


def aggregate(episodes: list[dict[str, Any]], eval_s: float) -> dict[str, Any]:
    """Aggregates per-episode dicts (see module docstring for the names)."""
    n = len(episodes)
    returns = [float(e["sum_reward"]) for e in episodes]
    lengths = [int(e["length"]) for e in episodes]
    maxes = [float(e["max_reward"]) for e in episodes if e["max_reward"] is not None]
    successes = [bool(e["success"]) for e in episodes if e["success"] is not None]
    mean = statistics.fmean(returns) if n else None
    std = statistics.pstdev(returns) if n else None
    sem = statistics.stdev(returns) / math.sqrt(n) if n > 1 else None
    half = _t95(n - 1) * sem if sem is not None else None
    out = {
        "n_episodes": n,
        "avg_sum_reward": mean,
        "std_sum_reward": std,
        "min_sum_reward": min(returns) if n else None,
        "median_sum_reward": statistics.median(returns) if n else None,
        "max_sum_reward": max(returns) if n else None,
        "ci95_sum_reward": [mean - half, mean + half] if half is not None else None,
        "avg_max_reward": statistics.fmean(maxes) if maxes else None,
        "pc_success": 100.0 * sum(successes) / len(successes) if successes else None,
        "avg_length": statistics.fmean(lengths) if n else None,
        "eval_s": eval_s,
        "eval_ep_s": eval_s / n if n else None,
    }
    if successes:
        out["ci95_success"] = wilson_interval(sum(successes), len(successes))
    fn_returns = [float(e["sum_reward_fn"]) for e in episodes if e.get("sum_reward_fn") is not None]
    if fn_returns:
        out["avg_sum_reward_fn"] = statistics.fmean(fn_returns)
        out["std_sum_reward_fn"] = statistics.pstdev(fn_returns)
    out.update({
        "return_mean": out["avg_sum_reward"], "return_std": out["std_sum_reward"],
        "return_min": out["min_sum_reward"], "return_max": out["max_sum_reward"],
        "len_mean": out["avg_length"], "len_std": statistics.pstdev(lengths) if n else None,
        "len_min": min(lengths) if n else None, "len_max": max(lengths) if n else None,
    })
    return out


def wilson_interval(successes: int, n: int, z: float = 1.959963984540054) -> list[float]:
    """The 95% Wilson score interval of a success rate, in percent (sound at 0% and 100% too).

    Example:
        >>> [round(v, 2) for v in wilson_interval(8, 10)]
        [49.02, 94.33]
    """
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return [100.0 * max(0.0, centre - half), 100.0 * min(1.0, centre + half)]


def _t95(dof: int) -> float:
    """Two-sided 95% Student-t quantile (exact table to 30, normal beyond)."""
    table = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
             2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
             2.052, 2.048, 2.045, 2.042]
    return table[dof - 1] if 1 <= dof <= len(table) else 1.96
