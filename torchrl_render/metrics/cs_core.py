"""The closed forms behind :mod:`.sequential`'s confidence sequences, vectorised over any leading axes.

Each function takes the values of one episode stream (or of many, along the last axis) and gives the bets, the
capital or the bounds after every value: :mod:`.sequential`'s classes run them one episode at a time, and the
coverage tests run them over a thousand streams at once. The methods and their references are in
:mod:`.sequential`'s docstring.

Example:
    >>> import numpy as np
    >>> lo, hi = eb_bounds(np.array([1.0, 0.0, 1.0, 1.0] * 25))
    >>> bool(lo[-1] < 0.75 < hi[-1]), bool(hi[-1] - lo[-1] < hi[9] - lo[9])
    (True, True)
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

__all__ = ["BURN_IN", "DEFAULT_TARGET_N", "GRID_POINTS", "asymptotic_bounds", "betting_log_capital", "eb_bounds",
           "mixture_rho", "plugin_bets"]

#: Candidate means of the betting CS, on [0, 1] (0.5 is one of them: the difference's null of equal means).
GRID_POINTS = 2001
#: Episodes before the asymptotic CS reports a width: its guarantee is for monitoring that starts late.
BURN_IN = 20
#: The sample size the asymptotic CS's rho is tuned for when none is given.
DEFAULT_TARGET_N = 100
_TRUNCATION = 0.5   # c: the largest bet, as a fraction of what the capital could lose (the paper's 1/2)
_THETA = 0.5        # the hedge: half the capital bets on a mean above m, half below


def plugin_bets(x: NDArray[np.float64], *, alpha: float = 0.05, cap: float = math.inf, target_n: int | None = None,
                target_halfwidth: float | None = None) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The predictable plug-in bets and means of values in [0, 1] along the last axis (any leading shape).

    Returns ``(lam, mu_prev)``: ``lam[..., i]`` is the bet on value ``i`` (0-based), made from values ``0..i-1``
    only (see :func:`_bet` for the three tunings), and ``mu_prev`` the regularised mean before it. Waudby-Smith &
    Ramdas (2024): ``mu_t = (1/2 + sum_{i<=t} X_i) / (t + 1)``, ``sigma2_t = (1/4 + sum_{i<=t} (X_i - mu_i)^2) /
    (t + 1)``. The betting CS caps the bets per candidate mean (``c/m``, ``c/(1-m)``); PrPl-EB caps them at ``c``.
    """
    x = np.asarray(x, dtype=float)
    t = np.arange(1, x.shape[-1] + 1, dtype=float)
    mu = (0.5 + np.cumsum(x, axis=-1)) / (t + 1)
    var = (0.25 + np.cumsum((x - mu) ** 2, axis=-1)) / (t + 1)
    pad = [(0, 0)] * (x.ndim - 1) + [(1, 0)]
    var_prev = np.pad(var[..., :-1], pad, constant_values=0.25)
    mu_prev = np.pad(mu[..., :-1], pad, constant_values=0.5)
    if target_halfwidth:
        lam = target_halfwidth / var_prev
    else:
        lam = np.sqrt(2 * math.log(2 / alpha) / (var_prev * (target_n or t * np.log1p(t))))
    return np.minimum(lam, cap), mu_prev


def _bet(t: int, sum_sq: float, alpha: float, target_n: int | None = None,
         target_halfwidth: float | None = None) -> float:
    """The bet on value ``t`` (1-based) from ``sum_sq``, the sum of ``(X_i - mu_i)^2`` over the ``t - 1`` before.

    With ``sigma2 = (1/4 + sum_sq) / t``: the paper's bets for a CS, ``sqrt(2 log(2/alpha) / (sigma2 t log(1+t)))``;
    with ``target_n``, its bets for a planned sample size ``n``, ``sqrt(2 log(2/alpha) / (sigma2 n))``; with
    ``target_halfwidth`` ``h`` (in [0, 1] units), the same with ``n = 2 log(2/alpha) sigma2 / h^2``, the sample size
    at which ``h`` is reached under the variance seen so far, which is ``h / sigma2``. All are predictable (they use
    the past only), so all keep the guarantee; the tuning moves only where the CS is narrowest.
    """
    var = (0.25 + sum_sq) / t
    if target_halfwidth:
        return target_halfwidth / var
    return math.sqrt(2 * math.log(2 / alpha) / (var * (target_n or t * math.log1p(t))))


def betting_log_capital(x: NDArray[np.float64], m: float, *, alpha: float = 0.05, target_n: int | None = None,
                        target_halfwidth: float | None = None) -> NDArray[np.float64]:
    """The log of the hedged capital ``K_n(m)`` after each value, for values in [0, 1] along the last axis.

    The vectorised core of :class:`BettingCS` (Waudby-Smith & Ramdas 2024, hedged capital): ``m`` is rejected at the
    first ``n`` where this reaches ``log(1/alpha)``, and stays rejected.
    """
    x = np.asarray(x, dtype=float)
    lam, _ = plugin_bets(x, alpha=alpha, target_n=target_n, target_halfwidth=target_halfwidth)
    up = np.minimum(lam, _TRUNCATION / m) if m > 0 else lam
    down = np.minimum(lam, _TRUNCATION / (1 - m)) if m < 1 else lam
    log_up = np.cumsum(np.log1p(up * (x - m)), axis=-1)
    log_down = np.cumsum(np.log1p(-down * (x - m)), axis=-1)
    return np.logaddexp(math.log(_THETA) + log_up, math.log(1 - _THETA) + log_down)


def eb_bounds(x: NDArray[np.float64], *, alpha: float = 0.05, target_n: int | None = None,
              target_halfwidth: float | None = None) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The PrPl-EB CS (Waudby-Smith & Ramdas 2024, Theorem 2) after each value in [0, 1], running-intersected.

    ``sum(lam_i X_i) / sum(lam_i) +- (log(2/alpha) + sum(v_i psi(lam_i))) / sum(lam_i)``, ``v_i = 4 (X_i -
    mu_{i-1})^2``, ``psi(lam) = (-log(1 - lam) - lam) / 4``, with the bets of :func:`plugin_bets`.
    """
    x = np.asarray(x, dtype=float)
    lam, mu_prev = plugin_bets(x, alpha=alpha, cap=_TRUNCATION, target_n=target_n, target_halfwidth=target_halfwidth)
    s_lam = np.cumsum(lam, axis=-1)
    centre = np.cumsum(lam * x, axis=-1) / s_lam
    margin = (math.log(2 / alpha) + np.cumsum((x - mu_prev) ** 2 * (-np.log1p(-lam) - lam), axis=-1)) / s_lam
    lo = np.maximum.accumulate(np.maximum(centre - margin, 0.0), axis=-1)
    hi = np.minimum.accumulate(np.minimum(centre + margin, 1.0), axis=-1)
    return lo, hi


def mixture_rho(target_n: int, alpha: float = 0.05) -> float:
    """The normal mixture's ``rho`` whose boundary is (nearly) narrowest at ``target_n`` (Waudby-Smith et al. 2024).

    Example:
        >>> round(mixture_rho(100), 4)
        0.2817
    """
    la = -2 * math.log(alpha)
    return math.sqrt((la + math.log(la + 1)) / target_n)


def _mixture_radius(n: NDArray[np.float64] | float, rho: float, alpha: float) -> NDArray[np.float64] | float:
    """The asymptotic CS's half-width per unit standard deviation after ``n`` values."""
    r2n = rho * rho * np.asarray(n, dtype=float)
    return np.sqrt(2 * (r2n + 1) / (r2n * n) * np.log(np.sqrt(r2n + 1) / alpha))


def asymptotic_bounds(x: NDArray[np.float64], *, alpha: float = 0.05,
                      rho: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The asymptotic CS (Waudby-Smith et al. 2024, Gaussian mixture) after each value along the last axis.

    Not intersected over time. The sample variance is the paper's (divided by ``n``); after one value the width is
    infinite.
    """
    x = np.asarray(x, dtype=float)
    n = np.arange(1, x.shape[-1] + 1, dtype=float)
    mean = np.cumsum(x, axis=-1) / n
    var = np.maximum(np.cumsum(x * x, axis=-1) / n - mean * mean, 0.0)
    half = np.sqrt(var) * _mixture_radius(n, rho, alpha)
    half[..., 0] = np.inf
    return mean - half, mean + half
