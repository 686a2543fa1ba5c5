"""Compares torchrl_render.metrics.robust with rliable 1.2.0 itself on fixed score arrays.

rliable 1.2.0 needs pandas < 3 (its ``arch`` dependency breaks on pandas 3), so it is not installed next to
the project's environment; install it into a folder of its own and put that folder first on the path:

    pip install --no-deps --target /tmp/rl rliable==1.2.0 pandas==2.3.3 arch==7.2.0 statsmodels==0.15.0 \\
        patsy==1.0.3 seaborn==0.13.2 formulaic==1.2.2 interface_meta==2.0.1 narwhals==2.29.0 pytz
    PYTHONPATH=/tmp/rl:. python tools/check_against_rliable.py

Point estimates must be equal (to 1e-12); interval ends, computed with the same number of resamples but
each library's own generator, must agree within the Monte-Carlo error (reported as a fraction of the
interval's width). Prints one line per check and exits 1 if one fails.
"""

from __future__ import annotations

import sys

import numpy as np
from rliable import library as rly
from rliable import metrics

from torchrl_render.metrics import robust as R

REPS = 10000


def main() -> int:
    rng = np.random.default_rng(0)
    runs, tasks = 20, 5
    a = rng.gamma(2.0, 0.3, size=(runs, tasks))  # rliable's layout: (runs, tasks), normalised scores
    b = a + rng.normal(0.15, 0.3, size=(runs, tasks))
    ok = True

    def check(name: str, ours: float, theirs: float, tol: float) -> None:
        nonlocal ok
        good = abs(ours - theirs) <= tol
        ok &= good
        print(f"{'ok ' if good else 'BAD'} {name}: ours {ours:.6f}, rliable {theirs:.6f} (tolerance {tol:.2g})")

    cells = {f"t{t}": R.Draws(a[:, t], REPS, np.random.default_rng(t)) for t in range(tasks)}
    cells_b = {f"t{t}": R.Draws(b[:, t], REPS, np.random.default_rng(100 + t)) for t in range(tasks)}
    ones = {t: {"random": 0.0, "reference": 1.0} for t in cells}
    est = R.level_estimates(list(cells.items()), ones)
    check("IQM", est["iqm"], metrics.aggregate_iqm(a), 1e-12)
    check("median", est["median"], metrics.aggregate_median(a), 1e-12)
    check("mean", est["mean"], metrics.aggregate_mean(a), 1e-12)
    check("optimality gap", est["optimality_gap"], metrics.aggregate_optimality_gap(a), 1e-12)
    pi = R.pair_estimates(cells, cells_b)
    check("probability of improvement P(b > a)", pi["probability_of_improvement"],
          metrics.probability_of_improvement(b, a), 1e-12)
    dist, dist_cis = rly.create_performance_profile({"a": a}, R.TAUS, reps=REPS)
    check("profile (max abs difference)", float(np.max(np.abs(np.array(est["performance_profile"]["fraction"])
                                                               - dist["a"]))), 0.0, 1e-12)
    funcs = {"iqm": metrics.aggregate_iqm, "median": metrics.aggregate_median, "mean": metrics.aggregate_mean,
             "optimality_gap": metrics.aggregate_optimality_gap}
    _, cis = rly.get_interval_estimates({"a": a}, lambda s: np.array([f(s) for f in funcs.values()]),
                                             reps=REPS, random_state=np.random.RandomState(0))
    for i, key in enumerate(funcs):
        width = cis["a"][1, i] - cis["a"][0, i]
        for end in (0, 1):
            check(f"{key} interval {'low' if end == 0 else 'high'}", est[f"{key}_ci95"][end], cis["a"][end, i],
                  0.05 * width)
    prof_width = np.max(dist_cis["a"][1] - dist_cis["a"][0])
    check("profile interval (max abs difference)", float(np.max(np.abs(np.array(est["performance_profile"]["ci95"])
                                                                       - dist_cis["a"]))), 0.0, 0.1 * prof_width)
    _, pi_cis = rly.get_interval_estimates({"ab": (b, a)}, metrics.probability_of_improvement, reps=REPS,
                                           random_state=np.random.RandomState(0))
    theirs = np.ravel(pi_cis["ab"])  # [low, high]
    for end in (0, 1):
        check(f"probability of improvement interval {'low' if end == 0 else 'high'}",
              pi["probability_of_improvement_ci95"][end], float(theirs[end]), 0.05 * float(theirs[1] - theirs[0]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
