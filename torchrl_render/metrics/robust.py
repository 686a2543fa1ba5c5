"""Aggregates that hold up with few runs: IQM, bootstrap intervals, performance profiles, probability of improvement.

The definitions are rliable's (Agarwal et al., "Deep Reinforcement Learning at the Edge of the Statistical
Precipice", NeurIPS 2021; github.com/google-research/rliable, ``rliable/metrics.py`` and ``library.py``),
with an episode in the place of rliable's run:

- **IQM** (:func:`iqm`): the 25%-trimmed mean, ``scipy.stats.trim_mean(x, 0.25)``: sort the ``n`` scores,
  drop ``int(0.25 n)`` from each end, average the rest. Over several tasks, the trimmed mean of all
  their scores together (rliable's ``aggregate_iqm``, ``axis=None``).
- **Median**: of one cell's returns, the median; over several tasks, the median of the per-task mean
  scores (rliable's ``aggregate_median``). **Mean** over tasks: the mean of the per-task means.
- **Optimality gap** (with normalised scores): ``gamma - mean(min(score, gamma))``, ``gamma`` = 1 (the
  reference return; rliable's ``aggregate_optimality_gap``).
- **Performance profile** (:func:`profile`): the fraction of all scores strictly above each threshold tau
  (rliable's score distribution, ``np.mean(scores > tau)``).
- **Probability of improvement** (:func:`probability_of_improvement`): the mean over the shared tasks of
  ``P(Y > X) + 0.5 P(Y = X)`` for a score ``X`` of the first and ``Y`` of the second (the Mann-Whitney U
  statistic over ``n m``, rliable's ``probability_of_improvement`` with the arguments in that order).
- **Intervals**: 95% percentile bootstrap intervals (rliable's default method): ``reps`` resamples of the
  episodes *within each task* (the stratified bootstrap); the probability of improvement resamples both
  sides independently within each task (rliable's ``StratifiedIndependentBootstrap``).

How it is computed: each cell (one checkpoint on one task) draws its ``reps`` resamples once
(:class:`Draws`), as counts (how often each of its episodes, in return order, is drawn), from a generator
seeded with the run's seed and the cell's name (:func:`keyed_seed`). Every estimate at every level uses
those same resamples: a level across tasks joins its cells' resamples (so it is resampled within each
task, the stratified bootstrap), and a pair of checkpoints uses both sides' own (independent) resamples.
No resample is materialised or sorted: each statistic is a weighted sum over sorted scores, so the cost
is a few passes over ``reps x episodes`` numbers, and the memory ``4 reps x episodes`` bytes.

Example:
    >>> x = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 100.0]
    >>> iqm(x), round(float(np.mean(x)), 3)
    (3.5, 15.125)
    >>> probability_of_improvement([[0.0, 1.0]], [[1.0, 2.0]])
    0.875
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal, NotRequired, TypeAlias, TypedDict, TypeVar

import numpy as np
from numpy.typing import NDArray

from ..errors import ConfigError, did_you_mean

__all__ = ["DEFAULT_REPS", "TAUS", "CellEstimates", "Draws", "JoinedDraws", "LevelEstimates", "PairEstimates",
           "PerformanceProfile", "cell_estimates", "check_baselines", "interval95", "iqm", "keyed_seed",
           "level_estimates", "normalise", "pair_estimates", "pair_task_samples", "pooled_estimates",
           "probability_of_improvement", "profile"]

#: Bootstrap resamples unless told (rliable's papers use 50,000 for the figures they publish).
DEFAULT_REPS = 2000
#: The thresholds of a performance profile on normalised scores (0 = random, 1 = the reference return).
TAUS = np.linspace(0.0, 2.0, 41)
_BLOCK = 1_000_000  # random numbers drawn at once (8 MB: a run of thousands of episodes stays within ~30 MB)

#: Scores as they are given: a list of numbers or a float array.
Scores: TypeAlias = Sequence[float] | NDArray[np.float64]
#: What :func:`_sum_arrays` adds: counts (the cumulative counts are int32) or float sums.
_Number = TypeVar("_Number", np.int32, np.float64)


class CellEstimates(TypedDict):
    """One cell's (or a pool of cells') IQM and median of the returns, with their 95% bootstrap intervals
    (None without a return, or an interval with fewer than 2 returns or no resample)."""

    iqm_sum_reward: float | None
    median_sum_reward: float | None
    iqm_sum_reward_ci95: list[float] | None
    median_sum_reward_ci95: list[float] | None


class PerformanceProfile(TypedDict):
    """The fraction of the scores above each threshold ``tau``, with its 95% band (a low and a high list; None
    without resamples)."""

    tau: list[float]
    fraction: list[float]
    ci95: list[list[float]] | None


class _Scale(TypedDict):
    """How a level's scores are measured: ``normalised`` or ``raw`` (then ``note`` says why), and its tasks."""

    score: str
    tasks: list[str]
    note: NotRequired[str]


class _Point(TypedDict):
    iqm: float | None
    median: float | None
    mean: float | None


class _Gap(TypedDict, total=False):
    """The optimality gap, normalised scores only."""

    optimality_gap: float | None


class _Intervals(TypedDict):
    iqm_ci95: list[float] | None
    median_ci95: list[float] | None
    mean_ci95: list[float] | None


class _GapInterval(TypedDict, total=False):
    optimality_gap_ci95: list[float] | None


class LevelEstimates(_Scale, _Point, _Gap, _Intervals, _GapInterval):
    """The estimates across the tasks of a level (:func:`level_estimates`): ``optimality_gap`` and its interval
    with normalised scores only, ``note`` with raw scores only."""

    performance_profile: PerformanceProfile | None


class PairEstimates(TypedDict):
    """The probability of improvement of one side over the other, over the tasks both have (:func:`pair_estimates`)."""

    tasks: list[str]
    probability_of_improvement: float
    probability_of_improvement_ci95: list[float] | None


def iqm(scores: Scores) -> float:
    """The interquartile mean: the mean of the scores left once ``int(0.25 n)`` are cut at each end."""
    x = np.sort(np.asarray(scores, dtype=float).ravel())
    cut = int(0.25 * x.size)
    return float(np.mean(x[cut:x.size - cut]))


def profile(scores: Scores, taus: Scores = TAUS) -> NDArray[np.float64]:
    """The fraction of the scores strictly above each threshold."""
    x = np.sort(np.asarray(scores, dtype=float).ravel())
    return 1.0 - np.searchsorted(x, np.asarray(taus, dtype=float), side="right") / x.size


def probability_of_improvement(x_tasks: Sequence[Scores], y_tasks: Sequence[Scores]) -> float:
    """The mean over tasks of ``P(Y > X) + 0.5 P(Y = X)`` (``x_tasks[t]``, ``y_tasks[t]``: task t's scores)."""
    values = []
    for x_task, y_task in zip(x_tasks, y_tasks):
        x, y = np.sort(np.asarray(x_task, dtype=float)), np.asarray(y_task, dtype=float)
        below = np.searchsorted(x, y, side="left")
        equal = np.searchsorted(x, y, side="right") - below
        values.append(float(np.sum(below + 0.5 * equal)) / (x.size * y.size))
    return float(np.mean(values))


def keyed_seed(seed: int | None, key: str) -> int:
    """A seed for the resamples of ``key`` (a cell) drawn from the run's ``seed``, so that each number depends
    on its own episodes and the seed only, not on which others were computed before it."""
    return int(np.random.SeedSequence([int(seed or 0) & 0xFFFFFFFF, zlib.crc32(key.encode())]).generate_state(1)[0])


def normalise(scores: NDArray[np.float64], baseline: Mapping[str, float] | None) -> NDArray[np.float64]:
    """``(score - random) / (reference - random)``; the scores as they are without a baseline."""
    if baseline is None:
        return scores
    return (scores - baseline["random"]) / (baseline["reference"] - baseline["random"])


def check_baselines(data: object, tasks: Mapping[str, str] | Sequence[str], source: str) -> dict[str, dict[str, float]]:
    """Per-task baselines ``{task: {"random": R, "reference": S}}``, checked: known tasks (by name, or by env spec
    when ``tasks`` maps names to specs), finite numbers, ``S > R`` (a higher return is better). ``source``
    names the file in the errors."""
    specs = dict(tasks) if isinstance(tasks, Mapping) else {t: t for t in tasks}
    spec_to_name = {spec: name for name, spec in specs.items()}
    fix = f"write {source} as {{TASK: {{random: R, reference: S}}}} for the tasks {', '.join(specs)}"
    if not isinstance(data, Mapping):
        raise ConfigError(f"score baselines in {source} must be a mapping of tasks", expected="{TASK: {random: R, "
                          "reference: S}}", got=type(data).__name__, fix=fix)
    out: dict[str, dict[str, float]] = {}
    for key, entry in data.items():
        task = key if key in specs else spec_to_name.get(key)
        if task is None:
            raise ConfigError(f"score baselines in {source} name an unknown task {key!r}."
                              f"{did_you_mean(str(key), sorted(specs))}",
                              expected=f"one of the tasks: {', '.join(specs)}", got=str(key), fix=fix)
        if not isinstance(entry, Mapping) or not {"random", "reference"} <= set(entry):
            raise ConfigError(f"the score baseline of task {key!r} needs a 'random' and a 'reference' return",
                              expected="{random: R, reference: S}", got=repr(entry), fix=fix)
        values = {k: entry[k] for k in ("random", "reference")}
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                   for v in values.values()) or not values["reference"] > values["random"]:
            raise ConfigError(f"the score baseline of task {key!r} must be two finite numbers, reference > random",
                              expected="random < reference (the return of a random policy, then of a good one)",
                              got=repr(values), fix=fix)
        out[task] = {k: float(v) for k, v in values.items()}
    return out


class Draws:
    """One cell's returns (sorted) and ``reps`` bootstrap resamples of them, as cumulative counts.

    ``counts[r, i]`` is how often resample ``r`` draws the ``i``-th smallest return, ``cum[r, i]`` how many
    of its draws are among the ``i`` smallest (what rank statistics read).
    """

    def __init__(self, returns: Scores, reps: int, rng: np.random.Generator) -> None:
        self.values = np.sort(np.asarray(returns, dtype=float))
        n = self.n = self.values.size
        self.reps = reps
        self.cum = np.zeros((reps, n + 1), dtype=np.int32)
        self.counts = np.zeros((reps, n), dtype=np.int32)
        if n == 0 or reps == 0:
            return
        step = max(1, _BLOCK // n)
        for start in range(0, reps, step):  # uniform draws with replacement are exchangeable: draw the
            block = min(step, reps - start)  # counts of the sorted returns directly
            drawn = rng.integers(0, n, size=(block, n))
            drawn += (np.arange(block) * n)[:, None]
            self.counts[start:start + block] = np.bincount(drawn.ravel(), minlength=block * n).reshape(block, n)
        np.cumsum(self.counts, axis=1, out=self.cum[:, 1:])

    def sums(self, values: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
        """Each resample's sum of ``values`` (default the returns), one per sorted return."""
        return self.counts @ (self.values if values is None else values).astype(float)


def _trimmed(sorted_values: NDArray[np.float64], cum: NDArray[np.int32], cut: float = 0.25) -> NDArray[np.float64]:
    """Each resample's trimmed mean, from its cumulative counts over ``sorted_values``."""
    total = int(cum[0, -1])
    k = int(cut * total)
    # the sum of the values whose rank falls in [k, total - k): sum_i v_i (w_{i+1} - w_i), w = cum clipped to the
    # window, summed by parts (w_0 = k and w_n = total - k)
    window = np.clip(cum[:, 1:-1], k, total - k).astype(float)
    kept = (total - k) * sorted_values[-1] - k * sorted_values[0] - window @ np.diff(sorted_values)
    return kept / (total - 2 * k)


def _median(sorted_values: NDArray[np.float64], cum: NDArray[np.int32]) -> NDArray[np.float64]:
    """Each resample's median (numpy's: the mean of the two middle order statistics when n is even)."""
    total = int(cum[0, -1])
    lo = np.sum(cum[:, 1:] <= (total - 1) // 2, axis=1)  # index of the order statistic (total-1)//2
    hi = np.sum(cum[:, 1:] <= total // 2, axis=1)
    return (sorted_values[lo] + sorted_values[hi]) / 2


def _sum_arrays(arrays: Iterable[NDArray[_Number]]) -> NDArray[_Number]:
    """``sum(arrays)``, of at least one array (typed: ``sum`` of none is the int 0)."""
    total = sum(arrays)
    if not isinstance(total, np.ndarray):
        raise ValueError("no arrays to sum")
    return total


def interval95(samples: NDArray[np.float64]) -> list[float]:
    """The 95% percentile interval ``[low, high]`` of bootstrap ``samples`` (one per resample)."""
    low, high = np.percentile(samples, [2.5, 97.5])
    return [float(low), float(high)]


def _bands95(samples: NDArray[np.float64]) -> list[list[float]]:
    """The 95% percentile band ``[lows, highs]`` of each column of bootstrap ``samples`` (one row per resample)."""
    low, high = np.percentile(samples, [2.5, 97.5], axis=0)
    return [[float(v) for v in low], [float(v) for v in high]]


def cell_estimates(draws: Draws | Sequence[float], reps: int = DEFAULT_REPS,
                   rng: np.random.Generator | None = None) -> CellEstimates:
    """One cell's ``iqm_sum_reward``, ``median_sum_reward`` and their bootstrap 95% intervals (``..._ci95``).

    ``draws``: the cell's :class:`Draws`, or its returns (then drawn here with ``reps`` and ``rng``).
    """
    if not isinstance(draws, Draws):  # a run's returns: resampled block by block, so memory stays flat
        x = np.sort(np.asarray(draws, dtype=float))
        rng = rng if rng is not None else np.random.default_rng(0)
        out = cell_estimates(Draws(x, 0, rng))
        if x.size > 1 and reps > 0:
            step = max(1, _BLOCK // x.size)  # Draws' own block: the same draws as one Draws of all reps
            trimmed, median = [], []
            for start in range(0, reps, step):
                block = Draws(x, min(step, reps - start), rng)
                trimmed.append(_trimmed(x, block.cum))
                median.append(_median(x, block.cum))
            out["iqm_sum_reward_ci95"] = interval95(np.concatenate(trimmed))
            out["median_sum_reward_ci95"] = interval95(np.concatenate(median))
        return out
    x = draws.values
    out = {"iqm_sum_reward": iqm(x) if x.size else None, "median_sum_reward": float(np.median(x)) if x.size else None,
           "iqm_sum_reward_ci95": None, "median_sum_reward_ci95": None}
    if x.size > 1 and draws.reps > 0:
        out["iqm_sum_reward_ci95"] = interval95(_trimmed(x, draws.cum))
        out["median_sum_reward_ci95"] = interval95(_median(x, draws.cum))
    return out


class JoinedDraws:
    """Rank statistics of the joined resamples of several cells (resampled each within itself), without joining
    them: the ``q``-th order statistic of each resample by a bisection over the pooled sorted scores, whose
    counts come from each cell's cumulative counts (``log2 N`` rounds, each a search per cell)."""

    def __init__(self, draws: Sequence[Draws], scores: Sequence[NDArray[np.float64]], reps: int) -> None:
        self.draws, self.scores, self.reps = list(draws), list(scores), reps
        self.pooled = np.sort(np.concatenate(self.scores))
        self.total = self.pooled.size
        self.rows = np.arange(reps)
        self._prefix: list[NDArray[np.float64]] | None = None

    def _count(self, v: NDArray[np.float64], side: Literal["left", "right"]) -> NDArray[np.int32]:
        """Per resample, its draws below ``v`` (``left``) or below or equal (``right``)."""
        return _sum_arrays(d.cum[self.rows, np.searchsorted(s, v, side=side)] for d, s in zip(self.draws, self.scores))

    def order_stat(self, q: int) -> NDArray[np.float64]:
        """Each resample's score of rank ``q`` (0-based)."""
        lo = np.zeros(self.reps, dtype=np.int64)
        hi = np.full(self.reps, self.total - 1, dtype=np.int64)
        while np.any(lo < hi):
            mid = (lo + hi) // 2
            enough = self._count(self.pooled[mid], "right") > q
            hi = np.where(enough, mid, hi)
            lo = np.where(enough, lo, mid + 1)
        return self.pooled[lo]

    def smallest_sum(self, q: int) -> NDArray[np.float64]:
        """Each resample's sum of its ``q`` smallest scores."""
        if q == 0:
            return np.zeros(self.reps)
        if self._prefix is None:
            self._prefix = []
            for d, s in zip(self.draws, self.scores):  # prefix[r, i]: resample r's sum of the i smallest scores
                prefix = np.zeros((self.reps, d.n + 1))
                np.cumsum(np.multiply(d.counts[:self.reps], s), axis=1, out=prefix[:, 1:])
                self._prefix.append(prefix)
        v = self.order_stat(q - 1)
        below = sum(p[self.rows, np.searchsorted(s, v, side="left")] for p, s in zip(self._prefix, self.scores))
        return below + (q - self._count(v, "left")) * v

    def trimmed(self, cut: float = 0.25) -> NDArray[np.float64]:
        k = int(cut * self.total)
        return (self.smallest_sum(self.total - k) - self.smallest_sum(k)) / (self.total - 2 * k)

    def median(self) -> NDArray[np.float64]:
        return (self.order_stat((self.total - 1) // 2) + self.order_stat(self.total // 2)) / 2


def pooled_estimates(draws: Sequence[Draws]) -> CellEstimates:
    """:func:`cell_estimates` of several cells' returns together (one task's cells of several checkpoints),
    resampled within each cell."""
    draws = [d for d in draws if d.n]
    if len(draws) == 1:
        return cell_estimates(draws[0])
    x = np.sort(np.concatenate([d.values for d in draws])) if draws else np.zeros(0)
    out: CellEstimates = {"iqm_sum_reward": iqm(x) if x.size else None,
                          "median_sum_reward": float(np.median(x)) if x.size else None,
                          "iqm_sum_reward_ci95": None, "median_sum_reward_ci95": None}
    reps = min((d.reps for d in draws), default=0)
    if x.size > 1 and reps > 0:
        joined = JoinedDraws(draws, [d.values for d in draws], reps)
        out["iqm_sum_reward_ci95"] = interval95(joined.trimmed())
        out["median_sum_reward_ci95"] = interval95(joined.median())
    return out


def level_estimates(cells: Sequence[tuple[str, Draws]], baselines: Mapping[str, Mapping[str, float]] | None,
                    taus: Scores = TAUS) -> LevelEstimates:
    """The estimates across the tasks of ``cells`` (``(task, draws)`` pairs; a task may have several cells,
    e.g. the sweep's levels that pool checkpoints), normalised when ``baselines`` covers every task.

    Returns ``score`` (``normalised`` or ``raw``), ``tasks``, ``iqm``, ``median`` (of the per-task means),
    ``mean`` (of the per-task means) and, normalised, ``optimality_gap``, each with its ``..._ci95``;
    ``performance_profile`` (``tau``, ``fraction``, ``ci95``: a low and a high list); ``note`` when raw.
    """
    cells = [(t, d) for t, d in cells if d.n]
    names = list(dict.fromkeys(t for t, _ in cells))
    table = baselines or {}
    normalised = bool(table) and all(t in table for t in names)
    scale: _Scale = {"score": "normalised" if normalised else "raw", "tasks": names}
    if not normalised:
        missing = [t for t in names if t not in table]
        scale["note"] = ("returns as they are (no --score-baselines)" if not baselines else
                         f"returns as they are: --score-baselines has no entry for {', '.join(missing)}")
    no_gap: _Gap = {"optimality_gap": None} if normalised else {}
    no_intervals: _Intervals = {"iqm_ci95": None, "median_ci95": None, "mean_ci95": None}
    no_gap_interval: _GapInterval = {"optimality_gap_ci95": None} if normalised else {}
    if not cells:
        return {**scale, "iqm": None, "median": None, "mean": None, **no_gap, **no_intervals, **no_gap_interval,
                "performance_profile": None}
    scores = [normalise(d.values, table[t] if normalised else None) for t, d in cells]  # still sorted
    flat = np.concatenate(scores)
    by_task = {t: [i for i, (u, _) in enumerate(cells) if u == t] for t in names}
    task_means = [np.mean(np.concatenate([scores[i] for i in ix])) for ix in by_task.values()]
    point: _Point = {"iqm": iqm(flat), "median": float(np.median(task_means)), "mean": float(np.mean(task_means))}
    gap: _Gap = {"optimality_gap": float(1.0 - np.mean(np.minimum(flat, 1.0)))} if normalised else {}
    thresholds = np.asarray(taus if normalised else np.linspace(flat.min(), flat.max(), 41), dtype=float)
    prof: PerformanceProfile = {"tau": thresholds.tolist(), "fraction": profile(flat, thresholds).tolist(),
                                "ci95": None}
    reps = min(d.reps for _, d in cells)
    if reps == 0 or flat.size < 2:
        return {**scale, **point, **gap, "performance_profile": prof, **no_intervals, **no_gap_interval}
    total = flat.size
    iqm_ci95 = interval95(JoinedDraws([d for _, d in cells], scores, reps).trimmed())
    sums = [d.sums(s) for (_, d), s in zip(cells, scores)]
    means = np.stack([sum(sums[i] for i in ix) / sum(cells[i][1].n for i in ix) for ix in by_task.values()], axis=1)
    intervals: _Intervals = {"iqm_ci95": iqm_ci95, "median_ci95": interval95(np.median(means, axis=1)),
                             "mean_ci95": interval95(means.mean(axis=1))}
    gap_interval: _GapInterval = {}
    if normalised:
        clipped = _sum_arrays(d.sums(np.minimum(s, 1.0)) for (_, d), s in zip(cells, scores))
        gap_interval["optimality_gap_ci95"] = interval95(1.0 - clipped / total)
    above = _sum_arrays(d.n - d.cum[:, np.searchsorted(s, thresholds, side="right")]
                        for (_, d), s in zip(cells, scores))
    prof["ci95"] = _bands95(above / total)
    return {**scale, **point, **gap, "performance_profile": prof, **intervals, **gap_interval}


def pair_task_samples(x: Draws, y: Draws, reps: int) -> NDArray[np.float64]:
    """One task's ``P(Y > X) + 0.5 P(Y = X)`` in each of ``reps`` resamples (both sides' own, independent)."""
    below = np.searchsorted(x.values, y.values, side="left")  # per return of Y: how many of X's are below it,
    upto = np.searchsorted(x.values, y.values, side="right")  # and below or equal
    # resample r: the sum over Y's draws of (X's draws below + half of those equal), over n m
    wide = np.int64 if 2 * x.n * y.n >= 2**31 else np.int32  # the sum below is at most 2 n m
    if np.array_equal(below, upto):  # no tie between the two: one gather
        twice = 2 * np.einsum("rj,rj->r", y.counts[:reps], x.cum[:reps, below], dtype=wide)
    else:
        twice = np.einsum("rj,rj->r", y.counts[:reps], x.cum[:reps, below] + x.cum[:reps, upto], dtype=wide)
    return twice / (2 * x.n * y.n)


def pair_estimates(a: Mapping[str, Draws], b: Mapping[str, Draws]) -> PairEstimates | None:
    """P(a return of B > a return of A) + 0.5 P(equal), averaged over the tasks both have, with its interval.

    Both sides' own resamples (independent, each within its task) make the bootstrap; None when they share no
    task. ``P(A > B)`` is ``1 -`` this (the two add to 1), and its interval ``1 -`` this one's, reversed.
    """
    shared = [t for t in a if t in b and a[t].n and b[t].n]
    if not shared:
        return None
    point = probability_of_improvement([a[t].values for t in shared], [b[t].values for t in shared])
    out: PairEstimates = {"tasks": shared, "probability_of_improvement": point, "probability_of_improvement_ci95": None}
    reps = min(min(a[t].reps, b[t].reps) for t in shared)
    if reps == 0:
        return out
    total = _sum_arrays(pair_task_samples(a[t], b[t], reps) for t in shared)
    out["probability_of_improvement_ci95"] = interval95(total / len(shared))
    return out
