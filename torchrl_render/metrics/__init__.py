"""Per-episode and aggregate metrics.

Aggregate names follow lerobot-eval where it has one (``avg_sum_reward``,
``pc_success``...), with imitation's ``return_*`` / ``len_*`` as aliases.

Semantics: ``std_sum_reward`` (and ``return_std``, ``len_std``) is the population standard
deviation (ddof=0), as ``numpy.std``, SB3's ``evaluate_policy`` and imitation report it;
``ci95_sum_reward`` is the Student-t 95% interval of the mean, which uses the sample standard
deviation (ddof=1), as that interval requires, and the exact quantile ``t(0.975, n-1)`` at every
``n`` (scipy's); ``ci95_success`` is the 95% Wilson score interval of ``pc_success`` (in
percent), present when some episode reports success; ``avg_sum_reward_fn`` and ``std_sum_reward_fn``
are present with a reward function. ``iqm_sum_reward`` is the interquartile mean of the returns (the 25%-trimmed mean);
``iqm_sum_reward_ci95`` and ``median_sum_reward_ci95`` are their 95% percentile bootstrap intervals over
the episodes (:mod:`torchrl_render.metrics.robust`, rliable's definitions), seeded with the run's seed
(its first episode's) unless told. An episode cut by ``max_steps`` is ``truncated``. ``n_traj`` is imitation's name for
``n_episodes``.

``success`` is read from a ``success`` or ``is_success`` entry of the step
TensorDict; for gymnasium envs, ``info["is_success"]`` (or ``info["success"]``) is
read into it by :func:`torchrl_render.envs.success_reader`, which every gymnasium env
we wrap gets. It is ``None`` when the env never reports it. The success rule
(:data:`SUCCESS_RULES`, :func:`step_success`) says how the steps' reports make the episode's.

A non-finite return (a diverging simulator's NaN reward) is reported as it is for its
episode (``null`` in JSON, see :func:`json_ready`); the return aggregates are over the finite
returns, and ``nonfinite_sum_reward`` lists the episodes left out (see :func:`nonfinite_note`).

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
import operator
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import SupportsIndex, SupportsInt, TypedDict, TypeVar, overload

import numpy as np

from .. import contracts
from ..contracts import StepView
from .robust import DEFAULT_REPS, CellEstimates, Draws, cell_estimates

__all__ = ["SUCCESS_RULES", "Aggregated", "BootstrapOptions", "EpisodeMetrics", "aggregate", "bootstrap_options",
           "json_ready", "nonfinite_note", "read_success", "step_success", "t_quantile", "wilson_interval"]

SUCCESS_KEYS = ("success", "is_success")
#: How an episode's success is read from the steps that report it: ``any`` (true at some step, as
#: lerobot-eval reduces its per-step success with ``any``) or ``final`` (the last step's report, as
#: SB3's ``EvalCallback`` reads ``info["is_success"]`` when the episode is done).
SUCCESS_RULES = ("any", "final")


class _ReturnStats(TypedDict):
    """The finite returns' mean, spread, extremes and the 95% Student-t interval of the mean (None without one)."""

    avg_sum_reward: float | None
    std_sum_reward: float | None
    min_sum_reward: float | None
    median_sum_reward: float | None
    max_sum_reward: float | None
    ci95_sum_reward: list[float] | None


class _Optional(TypedDict, total=False):
    """The aggregates present only when they apply: non-finite returns left out, success reported, a reward
    function's returns."""

    nonfinite_sum_reward: list[int]
    ci95_success: list[float]
    avg_sum_reward_fn: float
    std_sum_reward_fn: float


class Aggregated(_ReturnStats, CellEstimates, _Optional):
    """A run's aggregates (:func:`aggregate`; the names are the module docstring's): None where there is nothing
    to aggregate (no episode, no finite return, no success reported, an interval of fewer than 2 returns)."""

    n_episodes: int
    avg_max_reward: float | None
    pc_success: float | None
    avg_length: float | None
    eval_s: float
    eval_ep_s: float | None
    n_traj: int
    return_mean: float | None
    return_std: float | None
    return_min: float | None
    return_max: float | None
    len_mean: float | None
    len_std: float | None
    len_min: int | None
    len_max: int | None


class BootstrapOptions(TypedDict):
    """:func:`aggregate`'s ``reps`` and ``seed`` (:func:`bootstrap_options`)."""

    reps: int
    seed: int | None


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

    def add(self, reward: float, success: bool | None = None, rule: str = "any") -> None:
        """Adds one step (``success``: this step's report, combined by ``rule``)."""
        self.sum_reward += reward
        self.max_reward = max(self.max_reward, reward)
        self.length += 1
        self.success = step_success(rule, self.success, success)

    def to_dict(self) -> contracts.EpisodeMetrics:
        """The episode's row (``max_reward`` None for an episode of no step)."""
        return {"episode_ix": self.episode_ix, "seed": self.seed, "sum_reward": self.sum_reward,
                "max_reward": None if self.length == 0 else self.max_reward, "length": self.length,
                "success": self.success, "terminated": self.terminated, "truncated": self.truncated,
                "wall_s": self.wall_s, "num_frames": self.num_frames}


def read_success(td: StepView) -> bool | None:
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


def step_success(rule: str, so_far: bool | None, step: bool | None) -> bool | None:
    """An episode's success after one more step whose report is ``step`` (None: not reported).

    Example:
        >>> step_success("any", True, False), step_success("final", True, False), step_success("final", True, None)
        (True, False, None)
    """
    if rule == "final":
        return step
    return so_far if step is None else bool(so_far) or step


def _finite_only(values: list[float | None]) -> list[float]:
    return [v for v in values if v is not None and math.isfinite(v)]


def aggregate(episodes: Sequence[contracts.EpisodeMetrics], eval_s: float, *, reps: int = DEFAULT_REPS,
              seed: int | None = None, draws: Draws | None = None) -> Aggregated:
    """Aggregates per-episode rows (see module docstring for the names).

    ``reps``: bootstrap resamples of the IQM's and the median's intervals (0: no interval); ``seed``: their
    generator's seed (default: the smallest episode seed, which is the run's ``--seed``, else 0);
    ``draws``: resamples of the finite returns drawn already (a sweep's cell), used instead.
    A row read back from JSON has None for a return that was not finite (JSON has no NaN): left out as one.
    """
    n = len(episodes)
    returns = _finite_only([_number(e["sum_reward"]) for e in episodes])
    if seed is None:
        seeds = [s for e in episodes if isinstance(s := e.get("seed"), int)]
        seed = min(seeds) if seeds else 0
    lengths = [int(e["length"]) for e in episodes]
    maxes = _finite_only([_number(e["max_reward"]) for e in episodes])
    successes = [bool(e["success"]) for e in episodes if e["success"] is not None]
    optional: _Optional = {}
    if len(returns) < n:
        optional["nonfinite_sum_reward"] = [e["episode_ix"] for e in episodes
                                            if not _finite_only([_number(e["sum_reward"])])]
    if successes:
        optional["ci95_success"] = wilson_interval(sum(successes), len(successes))
    fn_returns = _finite_only([_number(e.get("sum_reward_fn")) for e in episodes])
    if fn_returns:
        optional["avg_sum_reward_fn"] = statistics.fmean(fn_returns)
        optional["std_sum_reward_fn"] = statistics.pstdev(fn_returns)
    stats = _return_stats(returns)
    avg_length = statistics.fmean(lengths) if n else None
    return {"n_episodes": n, **stats,
            "avg_max_reward": statistics.fmean(maxes) if maxes else None,
            "pc_success": 100.0 * sum(successes) / len(successes) if successes else None,
            "avg_length": avg_length,
            "eval_s": eval_s, "eval_ep_s": eval_s / n if n else None,
            **cell_estimates(draws if draws is not None else returns, reps, np.random.default_rng(seed)),
            **optional,
            # imitation's rollout_stats names
            "n_traj": n, "return_mean": stats["avg_sum_reward"], "return_std": stats["std_sum_reward"],
            "return_min": stats["min_sum_reward"], "return_max": stats["max_sum_reward"],
            "len_mean": avg_length, "len_std": statistics.pstdev(lengths) if n else None,
            "len_min": min(lengths) if n else None, "len_max": max(lengths) if n else None}


def bootstrap_options(config: Mapping[str, object] | None) -> BootstrapOptions:
    """:func:`aggregate`'s ``reps`` and ``seed`` from a run's config as a dict (``--bootstrap-reps``, ``--seed``)."""
    config = config or {}
    reps, seed = config.get("bootstrap_reps", DEFAULT_REPS), config.get("seed")
    # a writer's config dict need not be RenderConfig's: the count is int() of what it holds (a numpy integer, a
    # float, a digit string), the seed the integer it stands for (a numpy integer seeds the generator as its int)
    if not isinstance(reps, (str, bytes, bytearray, SupportsInt, SupportsIndex)):
        raise TypeError(f"bootstrap_reps must be an integer, got {reps!r}")
    if seed is not None and not isinstance(seed, SupportsIndex):
        raise TypeError(f"seed must be an integer or None, got {seed!r}")
    return {"reps": int(reps), "seed": None if seed is None else operator.index(seed)}


def _number(value: float | None) -> float | None:
    """A per-episode number as a float (``None`` stays None: JSON's null for a NaN read back)."""
    return None if value is None else float(value)


def _return_stats(returns: list[float]) -> _ReturnStats:
    """Mean, spread and the 95% interval of the mean of the (finite) returns."""
    n = len(returns)
    mean = statistics.fmean(returns) if n else None
    half = t_quantile(0.975, n - 1) * statistics.stdev(returns) / math.sqrt(n) if n > 1 else None
    return {"avg_sum_reward": mean, "std_sum_reward": statistics.pstdev(returns) if n else None,
            "min_sum_reward": min(returns) if n else None,
            "median_sum_reward": statistics.median(returns) if n else None,
            "max_sum_reward": max(returns) if n else None,
            "ci95_sum_reward": [mean - half, mean + half] if mean is not None and half is not None else None}


def nonfinite_note(aggregated: Aggregated) -> str | None:
    """The run's note when some returns were not finite (None when all were)."""
    left_out = aggregated.get("nonfinite_sum_reward")
    if not left_out:
        return None
    finite = aggregated["n_episodes"] - len(left_out)
    shown = ", ".join(map(str, left_out[:10])) + (f" and {len(left_out) - 10} more" if len(left_out) > 10 else "")
    return (f"the return of episode(s) {shown} is not finite (the env's reward was NaN or infinite at some step; "
            f"null in the JSON files): the return aggregates (avg/std/min/median/max/ci95_sum_reward, return_*) "
            f"are over the {finite} finite return(s)")


_Value = TypeVar("_Value")


@overload
def json_ready(value: dict[str, _Value]) -> dict[str, object]: ...


@overload
def json_ready(value: object) -> object: ...


def json_ready(value: object) -> object:
    """``value`` with NaN and infinities as None, so that it is valid JSON (which has no such numbers); a dict
    stays a dict, a tuple becomes a list."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    return value


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


def t_quantile(p: float, dof: int) -> float:
    """Student's t quantile ``t(p, dof)``, exact at every ``dof`` to about 1e-12 (scipy's ``t.ppf`` to the
    last digits, without scipy's import, which costs seconds).

    Closed forms at 1 and 2 degrees of freedom, the Cornish-Fisher expansion of the normal quantile
    above 5,000; otherwise Newton's method on the t distribution's CDF (the regularised incomplete beta
    function, by its continued fraction) from that expansion, kept inside a bracket that bisection narrows.

    Example:
        >>> round(t_quantile(0.975, 31), 4)
        2.0395
    """
    if not 0.0 < p < 1.0 or dof < 1:
        raise ValueError(f"t_quantile needs 0 < p < 1 and dof >= 1, got p={p}, dof={dof}")
    if p < 0.5:
        return -t_quantile(1.0 - p, dof)
    if p == 0.5:
        return 0.0
    nu = float(dof)
    if dof == 1:
        return math.tan(math.pi * (p - 0.5))
    if dof == 2:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    z = statistics.NormalDist().inv_cdf(p)
    # Cornish-Fisher (Abramowitz & Stegun 26.7.5): a start for Newton, and the answer itself at large dof,
    # where its error is below 1e-11 and lgamma's large values would cost the CDF its last digits
    x = z + (z**3 + z) / (4 * nu) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * nu**2) \
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * nu**3) \
        + (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / (92160 * nu**4)
    if dof > 5000:
        return x
    lo, hi = 0.0, max(2.0 * x, 1.0)
    while _t_above(hi, nu, p) < 0:  # a bracket [lo, hi] around the quantile
        lo, hi = hi, 2 * hi
    x = min(max(x, lo), hi)
    for _ in range(200):
        err = _t_above(x, nu, p)
        if err > 0:
            hi = x
        else:
            lo = x
        step = err / _t_pdf(x, nu)
        new = x - step
        if not lo < new < hi:  # Newton left the bracket: bisect instead
            new = (lo + hi) / 2
        if abs(new - x) <= 1e-15 * max(1.0, abs(new)):
            return new
        x = new
    return x


def _t_pdf(x: float, nu: float) -> float:
    log = math.lgamma((nu + 1) / 2) - math.lgamma(nu / 2) - 0.5 * math.log(nu * math.pi)
    return math.exp(log - (nu + 1) / 2 * math.log1p(x * x / nu))


def _t_above(x: float, nu: float, p: float) -> float:
    """``P(T <= x) - p`` for x >= 0 and p > 1/2, computed without cancellation: from the centre
    (``P(0 < T <= x) - (p - 1/2)``) for p below 3/4, from the tail (``(1 - p) - P(T > x)``) above."""
    if p < 0.75:
        return 0.5 * _beta_inc(0.5, nu / 2, x * x / (nu + x * x)) - (p - 0.5)
    return (1.0 - p) - 0.5 * _beta_inc(nu / 2, 0.5, nu / (nu + x * x))


def _beta_inc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b) (Lentz's continued fraction, Numerical Recipes' betacf)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x > (a + 1) / (a + b + 2):  # the fraction converges fast on this side only: use the symmetry
        return 1.0 - _beta_inc(b, a, 1.0 - x)
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    f = d
    for m in range(1, 500):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            f *= c * d
        if abs(c * d - 1.0) < 1e-16:
            break
    return front * f / a
