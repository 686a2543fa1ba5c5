"""Reference statistics computed here, independently of the package (and of scipy)."""

from __future__ import annotations

import math

import numpy as np


def t975(dof: int) -> float:
    """Student's t 0.975 quantile: bisection on the CDF, the density integrated by Simpson's rule."""
    log_c = math.lgamma((dof + 1) / 2) - math.lgamma(dof / 2) - 0.5 * math.log(dof * math.pi)

    def cdf(x: float) -> float:
        grid = np.linspace(0.0, x, 20001)
        pdf = np.exp(log_c - (dof + 1) / 2 * np.log1p(grid ** 2 / dof))
        h = x / 20000
        return 0.5 + h / 3 * (pdf[0] + pdf[-1] + 4 * pdf[1:-1:2].sum() + 2 * pdf[2:-1:2].sum())

    lo, hi = 0.0, 20.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) < 0.975 else (lo, mid)
    return (lo + hi) / 2
