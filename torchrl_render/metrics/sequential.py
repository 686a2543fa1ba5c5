"""Anytime-valid confidence sequences: evaluate until the number is trustworthy.

A 95% *confidence sequence* (CS) is a sequence of intervals ``C_1, C_2, ...`` that contains the true mean at
every ``n`` at once with probability at least 95%: ``P(for all n: mu in C_n) >= 0.95``. So the intervals may be
read after every episode and the run stopped as soon as one is narrow enough (``--precision success:0.05``)
without the guarantee breaking, which a fixed-N interval (Student-t, Wilson) read after every episode does not
give: peeking at it until it looks narrow misses the mean far more often than 5% of the time (the figures in
``docs/sequential.md``, which ``tests/evaluation/test_sequential_cs.py`` measures). Episodes are taken in seed
order (episode ``i`` has seed ``seed + i``), so the stopping ``n`` is the same for any number of parallel envs.

Methods, by metric:

- **Bounded** (success in {0, 1}; returns with ``--return-bounds LO HI``, rescaled to [0, 1]): the hedged
  betting CS of Waudby-Smith & Ramdas, "Estimating means of bounded random variables by betting" (JRSS-B 2024),
  the hedged capital process with predictable plug-in bets (the paper's recommendation). For a candidate
  mean ``m``, a gambler who bets ``lambda_i (X_i - m)`` from capital 1 has the capital ``K_n(m) = theta
  prod(1 + lambda_i^+ (X_i - m)) + (1 - theta) prod(1 - lambda_i^- (X_i - m))``; under mean ``m`` it is a
  nonnegative martingale, so by Ville's inequality it reaches ``1/alpha`` with probability at most ``alpha``.
  (The sum of the two halves; taking their maximum instead, ``confseq``'s default, is valid too, and wider.)
  The CS is the set of ``m`` whose capital has never reached ``1/alpha`` (the running intersection). The bets
  are the paper's plug-in bets from the regularised running variance ``sigma2`` (for any n: ``lambda_n =
  sqrt(2 log(2/alpha) / (sigma2_{n-1} n log(1+n)))``; tuned for a planned n or for the ``--precision``
  half-width: see :func:`_bet`), capped at ``c/m`` and ``c/(1-m)`` (``c = 1/2``), as in the paper and its
  authors' ``confseq`` package (whose ``betting_cs(..., convex_comb=True, running_intersection=True)`` it
  reproduces). ``m`` runs over
  a grid of :data:`GRID_POINTS` points (resolution 1/2000 of the range); the reported interval runs to the first
  rejected grid point outside the surviving ones, so it contains the exact CS (it is conservative by at most
  one grid step). The closed-form predictable plug-in empirical-Bernstein CS (PrPl-EB, the same paper's
  Theorem 2) is there too (``method="eb"``): cheaper (O(1) per episode) and wider.
- **Unbounded returns** (no bounds): the asymptotic CS of Waudby-Smith, Arbour, Sinha, Kennedy & Ramdas,
  "Time-uniform central limit theory and asymptotic confidence sequences" (Annals of Statistics 2024):
  ``mean_n +- sd_n sqrt(2 (n rho^2 + 1) / (n^2 rho^2) log(sqrt(n rho^2 + 1) / alpha))``, Robbins' normal-mixture
  boundary with the sample standard deviation plugged in, and ``rho`` tuned to be tightest at ``target_n``
  (their ``rho = sqrt((-2 log alpha + log(-2 log alpha + 1)) / target_n)``). Its guarantee is asymptotic (it
  holds as the monitoring starts late), so it is labelled so (``asymptotic`` is True, the ``method`` says it),
  it reports no width before :data:`BURN_IN` episodes, and no running intersection is taken.

The difference of two checkpoints, paired by seed (episode ``i`` of A and of B have the same seed), is a CS on the
mean of ``D_i = X_i - Y_i`` (:func:`difference_sequence`), with an anytime-valid p-value for equal means.

Example:
    >>> cs = confidence_sequence("success")
    >>> for x in [1, 1, 0, 1, 1, 1, 1, 0, 1, 1] * 10:
    ...     cs.update(x)
    >>> cs.n, round(cs.mean, 2), [round(v, 3) for v in cs.interval]
    (100, 0.8, [0.669, 0.908])
    >>> parse_precision("return:25")
    ('return', 25.0)
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TypedDict

import numpy as np

from ..errors import did_you_mean
from .cs_core import (
    _THETA,
    _TRUNCATION,
    BURN_IN,
    DEFAULT_TARGET_N,
    GRID_POINTS,
    _bet,
    _mixture_radius,
    asymptotic_bounds,
    betting_log_capital,
    eb_bounds,
    mixture_rho,
    plugin_bets,
)

__all__ = ["BURN_IN", "GRID_POINTS", "AsymptoticCS", "BettingCS", "ConfidenceSequence", "DifferenceSequence",
           "EmpiricalBernsteinCS", "Halfwidth", "asymptotic_bounds", "betting_log_capital", "confidence_sequence",
           "difference_sequence", "eb_bounds", "halfwidth_at_fixed_n", "mixture_rho", "parse_precision",
           "plugin_bets"]

METRICS = ("success", "return")


class Halfwidth(TypedDict):
    """What a fixed-N evaluation reached (:func:`halfwidth_at_fixed_n`): the CS's half-width and interval after
    ``n`` values, its method, the mean, and whether its guarantee is asymptotic only."""

    halfwidth: float
    interval: list[float]
    method: str
    n: int
    mean: float
    asymptotic: bool


class ConfidenceSequence:
    """One running CS of a metric's mean; :meth:`update` after each episode, in seed order.

    ``interval`` is in the metric's own units (returns, not rescaled); ``halfwidth`` is half its length
    (``inf`` before enough data); ``method`` names the method and its reference, ``asymptotic`` says whether
    its guarantee is asymptotic only.
    """

    method: str = ""
    asymptotic: bool = False

    def __init__(self, *, alpha: float = 0.05, bounds: tuple[float, float] | None = None) -> None:
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha {alpha!r} must be between 0 and 1 (for instance 0.05 for a 95% CS)")
        self.alpha = float(alpha)
        self.bounds = None if bounds is None else (float(bounds[0]), float(bounds[1]))
        self.n = 0
        self._sum = 0.0

    def update(self, x: float) -> None:
        """Takes the next episode's value (the episode ``n`` in seed order)."""
        if x is None:
            raise ValueError(f"episode {self.n} has no value (an env that never reports success has none): "
                             "--precision success needs an env that reports info['is_success']; use return instead")
        x = float(x)
        if not math.isfinite(x):
            raise ValueError(f"episode {self.n}'s value is {x}: a confidence sequence needs finite values")
        if self.bounds is not None and not self.bounds[0] <= x <= self.bounds[1]:
            lo, hi = self.bounds
            raise ValueError(f"episode {self.n}'s value {x:g} is outside the bounds [{lo:g}, {hi:g}]: the bounded CS "
                             "holds only for values inside them (for returns: widen --return-bounds, or leave it out "
                             "for the asymptotic CS)")
        self.n += 1
        self._sum += x
        self._update(x)

    def _update(self, x: float) -> None:
        raise NotImplementedError

    @property
    def interval(self) -> tuple[float, float]:
        raise NotImplementedError

    @property
    def mean(self) -> float:
        """The sample mean so far (``nan`` before the first episode)."""
        return self._sum / self.n if self.n else math.nan

    @property
    def halfwidth(self) -> float:
        lo, hi = self.interval
        return (hi - lo) / 2

    def __repr__(self) -> str:
        lo, hi = self.interval
        return f"<{type(self).__name__} n={self.n} mean={self.mean:.4g} interval=[{lo:.4g}, {hi:.4g}] {self.method}>"


class _BoundedCS(ConfidenceSequence):
    """What the two bounded CSs share: the rescaling to [0, 1], the running sums and the tuning of the bets."""

    asymptotic = False
    _name = ""
    _cap = math.inf
    bounds: tuple[float, float]  # always given here (ConfidenceSequence's may be None)

    def __init__(self, *, alpha: float = 0.05, bounds: tuple[float, float] = (0.0, 1.0), target_n: int | None = None,
                 target_halfwidth: float | None = None) -> None:
        super().__init__(alpha=alpha, bounds=bounds)
        lo, hi = self.bounds
        if not lo < hi:
            raise ValueError(f"the bounds {bounds!r} must be LO < HI (for instance --return-bounds 0 500)")
        self.target_n, self.target_halfwidth = target_n, target_halfwidth
        self._h01 = None if target_halfwidth is None else float(target_halfwidth) / (hi - lo)
        if target_halfwidth is not None:
            tuning = f"bets tuned for half-width {target_halfwidth:g}"
        else:
            tuning = f"bets tuned for n={target_n}" if target_n else "bets for any n"
        self.method = f"{self._name}, {tuning}, {_level(alpha)}"
        self._s01 = 0.0   # sum of the rescaled values
        self._ss = 0.0    # sum of (X_i - mu_i)^2, rescaled

    def _units(self, lo01: float, hi01: float) -> tuple[float, float]:
        lo, hi = self.bounds
        return float(lo + (hi - lo) * lo01), float(lo + (hi - lo) * hi01)

    def _update(self, x: float) -> None:
        lo, hi = self.bounds
        x01, t = (x - lo) / (hi - lo), self.n
        lam = min(_bet(t, self._ss, self.alpha, self.target_n, self._h01), self._cap)
        self._step(x01, lam, (0.5 + self._s01) / t)
        self._s01 += x01
        self._ss += (x01 - (0.5 + self._s01) / (t + 1)) ** 2

    def _step(self, x01: float, lam: float, mu_prev: float) -> None:
        raise NotImplementedError

    @property
    def halfwidth(self) -> float:
        return math.inf if self.n == 0 else super().halfwidth


class BettingCS(_BoundedCS):
    """The hedged betting CS of a mean in ``bounds`` (Waudby-Smith & Ramdas 2024), on a grid of candidate means.

    Example:
        >>> cs = BettingCS(bounds=(0.0, 100.0))
        >>> for x in [60.0, 70.0, 65.0, 80.0] * 25:
        ...     cs.update(x)
        >>> [round(v, 1) for v in cs.interval]
        [63.8, 71.4]
    """

    _name = "betting (Waudby-Smith & Ramdas 2024), hedged capital"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.grid = np.linspace(0.0, 1.0, GRID_POINTS)
        with np.errstate(divide="ignore"):
            self._cap_up = _TRUNCATION / self.grid
            self._cap_down = _TRUNCATION / (1.0 - self.grid)
        self._log_up = np.zeros(GRID_POINTS)
        self._log_down = np.zeros(GRID_POINTS)
        self._max_log = np.full(GRID_POINTS, -np.inf)  # the running maximum of the log capital at each m
        self._kept = (0, GRID_POINTS - 1)

    def _step(self, x01: float, lam: float, mu_prev: float) -> None:
        d = x01 - self.grid
        self._log_up += np.log1p(np.minimum(lam, self._cap_up) * d)
        self._log_down += np.log1p(-np.minimum(lam, self._cap_down) * d)
        log_k = np.logaddexp(math.log(_THETA) + self._log_up, math.log(1 - _THETA) + self._log_down)
        np.maximum(self._max_log, log_k, out=self._max_log)

    def log_capital_max(self, m01: float) -> float:
        """The largest log capital reached so far at the grid point nearest ``m01`` (in [0, 1])."""
        return float(self._max_log[round(m01 * (GRID_POINTS - 1))])

    @property
    def interval(self) -> tuple[float, float]:
        kept = np.flatnonzero(self._max_log < math.log(1 / self.alpha))
        if kept.size:   # empty only when the CS has already missed the mean (probability < alpha): keep the last
            self._kept = (max(int(kept[0]) - 1, 0), min(int(kept[-1]) + 1, GRID_POINTS - 1))
        return self._units(self.grid[self._kept[0]], self.grid[self._kept[1]])


class EmpiricalBernsteinCS(_BoundedCS):
    """The closed-form PrPl-EB CS of a mean in ``bounds`` (Waudby-Smith & Ramdas 2024, Theorem 2), intersected."""

    _name = "empirical Bernstein (PrPl-EB, Waudby-Smith & Ramdas 2024)"
    _cap = _TRUNCATION

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._s_lam = self._s_lam_x = self._s_psi = 0.0
        self._lo, self._hi = 0.0, 1.0

    def _step(self, x01: float, lam: float, mu_prev: float) -> None:
        self._s_lam += lam
        self._s_lam_x += lam * x01
        self._s_psi += (x01 - mu_prev) ** 2 * (-math.log1p(-lam) - lam)
        centre = self._s_lam_x / self._s_lam
        margin = (math.log(2 / self.alpha) + self._s_psi) / self._s_lam
        self._lo, self._hi = max(self._lo, centre - margin), min(self._hi, centre + margin)

    @property
    def interval(self) -> tuple[float, float]:
        lo, hi = (self._lo, self._hi) if self._lo <= self._hi else (self._hi, self._lo)  # crossed: already missed
        return self._units(lo, hi)


class AsymptoticCS(ConfidenceSequence):
    """The asymptotic CS of an unbounded mean (Waudby-Smith et al. 2024), tightest near ``target_n`` episodes.

    Example:
        >>> cs = AsymptoticCS(target_n=100)
        >>> for x in [10.0, 12.0, 9.0, 11.0] * 25:
        ...     cs.update(x)
        >>> cs.asymptotic, [round(v, 2) for v in cs.interval]
        (True, [10.16, 10.84])
    """

    asymptotic = True

    def __init__(self, *, alpha: float = 0.05, target_n: int | None = None, burn_in: int = BURN_IN) -> None:
        super().__init__(alpha=alpha)
        self.target_n = int(target_n or DEFAULT_TARGET_N)
        self.rho = mixture_rho(self.target_n, alpha)
        self.burn_in = max(int(burn_in), 2)
        self.method = (f"asymptotic CS (Waudby-Smith et al. 2024), normal mixture tuned for n={self.target_n}, "
                       f"{_level(alpha)}, valid from about {self.burn_in} episodes on")
        self._mean = self._m2 = 0.0   # Welford's running mean and sum of squared deviations

    def _update(self, x: float) -> None:
        delta = x - self._mean
        self._mean += delta / self.n
        self._m2 += delta * (x - self._mean)

    @property
    def sd(self) -> float:
        """The sample standard deviation (divided by ``n``, as the paper's)."""
        return math.sqrt(self._m2 / self.n) if self.n else math.nan

    @property
    def radius(self) -> float:
        """The half-width: ``sd`` times the normal mixture's boundary per unit variance (``inf`` before the burn-in)."""
        if self.n < self.burn_in:
            return math.inf
        return self.sd * float(_mixture_radius(self.n, self.rho, self.alpha))

    @property
    def interval(self) -> tuple[float, float]:
        r = self.radius
        return (-math.inf, math.inf) if math.isinf(r) else (float(self.mean - r), float(self.mean + r))

    def p_value(self, m: float = 0.0) -> float:
        """The smallest alpha whose CS (with this rho) excludes ``m`` now: ``1 / M_n``, the normal mixture's
        martingale with the sample variance plugged in (1 before the burn-in)."""
        if self.n < self.burn_in:
            return 1.0
        r2n = self.rho ** 2 * self.n
        z2 = (self.mean - m) ** 2 / self.sd ** 2 if self.sd > 0 else (0.0 if self.mean == m else math.inf)
        return min(1.0, math.sqrt(r2n + 1) * math.exp(-r2n * self.n * z2 / (2 * (r2n + 1))))


def _level(alpha: float) -> str:
    return f"{100 * (1 - alpha):g}%"


def confidence_sequence(metric: str, *, bounds: tuple[float, float] | None = None, alpha: float = 0.05,
                        target_n: int | None = None, target_halfwidth: float | None = None,
                        method: str = "betting") -> ConfidenceSequence:
    """The CS for a metric: ``success`` -> betting on [0, 1]; ``return`` with ``bounds`` -> betting on them;
    ``return`` without -> asymptotic.

    Args:
        metric: ``success`` or ``return``.
        bounds: ``(LO, HI)`` that every return lies in (``--return-bounds``); ignored for success.
        alpha: 0.05 for a 95% CS.
        target_n: the asymptotic CS's ``rho`` is tuned for it (:data:`DEFAULT_TARGET_N` unless told; pass the cap,
            ``--num-trajs``); a bounded CS without ``target_halfwidth`` uses the paper's bets for that ``n``.
        target_halfwidth: a bounded CS's bets are tuned to reach this half-width (in the metric's units) in the
            fewest episodes (``--precision``); the asymptotic CS cannot use it (its ``rho`` is fixed in advance).
        method: ``betting`` (the hedged betting CS) or ``eb`` (PrPl-EB) for a bounded metric.

    Example:
        >>> confidence_sequence("return").asymptotic, confidence_sequence("return", bounds=(0, 500)).asymptotic
        (True, False)
    """
    _check_metric(metric)
    if bounds is not None and metric == "return":
        lo, hi = (float(b) for b in bounds)
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ValueError(f"the bounds {bounds!r} must be two finite numbers LO < HI (for instance "
                             "--return-bounds 0 500)")
    if metric == "success":
        bounds = (0.0, 1.0)
    if bounds is None:
        return AsymptoticCS(alpha=alpha, target_n=target_n)
    if method not in ("betting", "eb"):
        raise ValueError(f"method {method!r} must be betting or eb")
    kind = BettingCS if method == "betting" else EmpiricalBernsteinCS
    return kind(alpha=alpha, bounds=bounds, target_n=target_n, target_halfwidth=target_halfwidth)


class DifferenceSequence:
    """A CS on the mean difference A - B of two checkpoints paired by seed, and an anytime-valid p-value.

    Bounded: the betting CS of ``D_i = X_i - Y_i`` in ``[-(HI - LO), HI - LO]``; its p-value for equal means is
    ``1 / max capital at D = 0`` (capped at 1). Unbounded: the asymptotic CS of ``D_i`` and its mixture p-value.
    ``better`` is ``"A"`` or ``"B"`` from the first ``n`` whose CS excludes 0 (``None`` until then).

    Example:
        >>> d = difference_sequence("success")
        >>> for a, b in [(1, 0), (1, 1), (1, 0), (0, 0)] * 20:
        ...     d.update(a, b)
        >>> d.better, d.p_value < 0.05
        ('A', True)
    """

    def __init__(self, metric: str, *, bounds: tuple[float, float] | None = None, alpha: float = 0.05,
                 target_n: int | None = None) -> None:
        _check_metric(metric)
        self.metric = metric
        self.value_bounds = (0.0, 1.0) if metric == "success" else bounds
        if self.value_bounds is None:
            self.cs: ConfidenceSequence = AsymptoticCS(alpha=alpha, target_n=target_n)
        else:
            width = float(self.value_bounds[1]) - float(self.value_bounds[0])
            self.cs = confidence_sequence("return", bounds=(-width, width), alpha=alpha, target_n=target_n)
        self.alpha, self.method, self.asymptotic = alpha, "difference A - B, " + self.cs.method, self.cs.asymptotic
        self._min_p = 1.0
        self._better: str | None = None

    def update(self, x: float, y: float) -> None:
        """Takes episode ``n`` of A (``x``) and of B (``y``), which share a seed."""
        if self.value_bounds is not None:
            lo, hi = self.value_bounds
            for name, v in (("A", x), ("B", y)):
                if not lo <= float(v) <= hi:
                    raise ValueError(f"{name}'s episode {self.n} value {v:g} is outside the bounds [{lo:g}, {hi:g}]")
        self.cs.update(float(x) - float(y))
        self._min_p = min(self._min_p, self._p_now())
        if self._better is None:
            lo, hi = self.cs.interval
            self._better = "A" if lo > 0 else "B" if hi < 0 else None

    def _p_now(self) -> float:
        cs = self.cs
        if isinstance(cs, BettingCS):
            return min(1.0, math.exp(-cs.log_capital_max(0.5)))
        if not isinstance(cs, AsymptoticCS):  # never: __init__ makes one of the two
            raise TypeError(f"no p-value for a {type(cs).__name__}")
        return cs.p_value(0.0)

    n = property(lambda self: self.cs.n, doc="Pairs seen.")
    mean = property(lambda self: self.cs.mean, doc="The mean difference A - B so far.")
    interval = property(lambda self: self.cs.interval, doc="The CS of the mean difference A - B, in the units.")
    halfwidth = property(lambda self: self.cs.halfwidth, doc="Half the interval's length.")

    @property
    def p_value(self) -> float:
        """The anytime-valid p-value of equal means: the smallest so far (valid at any stopping time)."""
        return self._min_p

    @property
    def excludes_zero(self) -> bool:
        """Whether the current CS excludes 0 (equal means)."""
        lo, hi = self.cs.interval
        return lo > 0 or hi < 0

    @property
    def better(self) -> str | None:
        """``"A"`` or ``"B"``: the one whose mean is higher, once a CS has excluded 0; ``None`` until then."""
        return self._better


def difference_sequence(metric: str, *, bounds: tuple[float, float] | None = None, alpha: float = 0.05,
                        target_n: int | None = None) -> DifferenceSequence:
    """A :class:`DifferenceSequence` for two checkpoints compared episode by episode, paired by seed."""
    return DifferenceSequence(metric, bounds=bounds, alpha=alpha, target_n=target_n)


def halfwidth_at_fixed_n(values: Iterable[float], *, metric: str, bounds: tuple[float, float] | None = None,
                         alpha: float = 0.05, target_n: int | None = None) -> Halfwidth:
    """What a fixed-N evaluation reached: the CS run over ``values`` in seed order, read at the end.

    The CS is tuned for ``len(values)`` episodes unless ``target_n`` says otherwise (a bounded CS's bets, the
    asymptotic CS's ``rho``): the narrowest a CS gets at that ``n``.

    Example:
        >>> r = halfwidth_at_fixed_n([1, 0, 1, 1] * 50, metric="success")
        >>> r["n"], round(r["halfwidth"], 3), r["asymptotic"]
        (200, 0.083, False)
    """
    values = [float(v) for v in values]
    cs = confidence_sequence(metric, bounds=bounds, alpha=alpha, target_n=target_n or max(len(values), 1))
    for v in values:
        cs.update(v)
    lo, hi = cs.interval
    return {"halfwidth": cs.halfwidth, "interval": [lo, hi], "method": cs.method, "n": cs.n, "mean": cs.mean,
            "asymptotic": cs.asymptotic}


def parse_precision(text: str) -> tuple[str, float]:
    """``--precision METRIC:HALFWIDTH`` -> ``(metric, halfwidth)``.

    Example:
        >>> parse_precision("success:0.05")
        ('success', 0.05)
        >>> parse_precision("succes:0.05")
        Traceback (most recent call last):
        ...
        ValueError: --precision 'succes:0.05': the metric must be success or return (for instance success:0.05
        or return:25). Did you mean 'success'?
    """
    example = "(for instance success:0.05 or return:25)"
    metric, sep, value = str(text).strip().partition(":")
    metric = metric.strip().lower()
    if not sep:
        raise ValueError(f"--precision {text!r}: write METRIC:HALFWIDTH {example}")
    if metric not in METRICS:
        hint = did_you_mean(metric, METRICS)
        raise ValueError(f"--precision {text!r}: the metric must be success or return {example}.{hint}")
    try:
        half = float(value)
    except ValueError:
        raise ValueError(f"--precision {text!r}: the half-width {value.strip()!r} must be a number {example}") from None
    if not (math.isfinite(half) and half > 0):
        raise ValueError(f"--precision {text!r}: the half-width must be a positive number {example}")
    if metric == "success" and half >= 0.5:
        raise ValueError(f"--precision {text!r}: a success rate's half-width is a fraction below 0.5 (for instance "
                         "success:0.05 for +-5 points)")
    return metric, half


def _check_metric(metric: str) -> None:
    if metric not in METRICS:
        raise ValueError(f"metric {metric!r} must be success or return.{did_you_mean(metric, METRICS)}")
