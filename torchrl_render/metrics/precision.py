"""``--precision METRIC:HALFWIDTH``: stop a run once its metric is known to that precision.

:class:`PrecisionRule` is the stop rule an episode plan (:class:`~torchrl_render.engine.EpisodePlan`) consults:
it takes the episodes in seed order (episode 0, 1, 2...: the plan hands it each one once every episode
before it has finished), updates the 95% anytime-valid confidence sequence of the mean return or of the
success rate (:mod:`.sequential`), and says stop at the first ``n`` whose half-width is at most the target.
Since the decision reads the first ``n`` episodes only, a re-run stops at the same ``n`` with the same
numbers for every ``--num-envs``. :func:`sequential_entry` replays the rule over a run's reported
episodes: the ``sequential`` entry of its metrics, sidecar and ``eval_info.json``.

A return outside ``--return-bounds`` is an error naming the episode (clipping it would void the bounded
sequence's guarantee without a word); so is an episode that reports no success under ``--precision success:``.

Example:
    >>> rule = PrecisionRule("return", 1.0, bounds=(0.0, 10.0), cap=500)
    >>> [rule.add(i, 5.0, None) for i in range(2)]
    [False, False]
    >>> try:
    ...     rule.add(2, 20.0, None)
    ... except ConfigError as exc:
    ...     print(exc.what)
    episode 2's return 20 is outside --return-bounds 0 10, so the bounded confidence sequence does not hold
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, TypedDict

from ..contracts import EpisodeMetrics
from ..errors import ConfigError
from .sequential import confidence_sequence, parse_precision

__all__ = ["ALPHA", "PrecisionConfig", "PrecisionRule", "SequentialEntry", "sequential_entry"]

#: The confidence sequences' error rate: 95% intervals, valid at every n at once.
ALPHA = 0.05


class PrecisionConfig(Protocol):
    """What :meth:`PrecisionRule.from_config` reads of a ``RenderConfig`` (config sits above this module, and
    imports it)."""

    @property
    def precision(self) -> str | None: ...

    @property
    def return_bounds(self) -> Sequence[float] | None: ...

    @property
    def num_trajs(self) -> int | None: ...

    @property
    def seed(self) -> int | None: ...


class SequentialEntry(TypedDict):
    """The ``sequential`` entry of a run's metrics (:meth:`PrecisionRule.entry`): the metric and half-width asked
    for, the half-width, interval and mean reached (None before the first episode) on ``n_episodes``, the cap,
    why it stopped (``precision``, ``cap``, ``stopped``), the sequence's method, its level and bounds."""

    metric: str
    target: float
    halfwidth: float
    interval: list[float] | None
    mean: float | None
    n_episodes: int
    cap: int | None
    stopped_on: str
    method: str
    asymptotic: bool
    alpha: float
    bounds: list[float] | None


class PrecisionRule:
    """The confidence sequence of one metric over episodes in seed order, and whether it is narrow enough.

    Args:
        metric: ``"return"`` (the episode's return) or ``"success"`` (its success, 0 or 1).
        target: The half-width asked for.
        bounds: ``(lo, hi)`` that every return lies in (``return`` only; None: the asymptotic sequence).
        cap: The most episodes the run takes (``--num-trajs``), for the entry.
        seed: The run's base seed (episode ``i`` is seed ``seed + i``), for messages.
    """

    def __init__(self, metric: str, target: float, bounds: Sequence[float] | None = None, cap: int | None = None,
                 seed: int | None = 0) -> None:
        self.metric, self.target, self.cap, self.seed = metric, float(target), cap, seed
        self.bounds: tuple[float, float] | None = None
        if bounds is not None:
            lo, hi = bounds  # LO HI (RenderConfig checks --return-bounds is two numbers)
            self.bounds = (float(lo), float(hi))
        # a bounded sequence's bets are tuned to reach the target half-width in the fewest episodes; the asymptotic
        # one (unbounded returns) is tightest at the cap, the most the run may take
        self.cs = confidence_sequence(metric, bounds=self.bounds, alpha=ALPHA, target_n=cap,
                                      target_halfwidth=self.target)
        self.reached = False

    @classmethod
    def from_config(cls, cfg: PrecisionConfig) -> PrecisionRule | None:
        """The rule of ``cfg.precision`` (None without one)."""
        if cfg.precision is None:
            return None
        metric, target = parse_precision(cfg.precision)
        return cls(metric, target, bounds=cfg.return_bounds, cap=cfg.num_trajs, seed=cfg.seed)

    def add(self, index: int, sum_reward: float | None, success: bool | None) -> bool:
        """Adds episode ``index`` (the next in seed order); returns whether the half-width is reached."""
        self.cs.update(self._value(index, sum_reward, success))
        if not self.reached and _number(self.cs.halfwidth) <= self.target:
            self.reached = True
        return self.reached

    @property
    def halfwidth(self) -> float:
        """The half-width reached so far (infinite before the sequence has an interval)."""
        return _number(self.cs.halfwidth)

    def entry(self, stopped_on: str | None = None) -> SequentialEntry:
        """The ``sequential`` entry: what was asked, what was reached, on how many episodes, and how."""
        n = self.cs.n
        if stopped_on is None:
            stopped_on = "precision" if self.reached else "cap" if self.cap is not None and n >= self.cap else \
                "stopped"
        method = str(self.cs.method)
        if self.cs.asymptotic and "asymptotic" not in method:
            method += " (asymptotic)"
        return {"metric": self.metric, "target": self.target, "halfwidth": self.halfwidth,
                "interval": [float(v) for v in self.cs.interval] if n else None,
                "mean": float(self.cs.mean) if n else None, "n_episodes": n, "cap": self.cap,
                "stopped_on": stopped_on, "method": method, "asymptotic": bool(self.cs.asymptotic),
                "alpha": ALPHA, "bounds": list(self.bounds) if self.bounds is not None else None}

    def _value(self, index: int, sum_reward: float | None, success: bool | None) -> float:
        seed = f"seed {self.seed + index}" if self.seed is not None else "no seed"
        if self.metric == "success":
            if success is None:
                raise ConfigError(f"--precision success:{self.target:g} needs each episode's success, and episode "
                                  f"{index} ({seed}) reported none", expected="an env that reports "
                                  "info['is_success'] (or a 'success' entry) at the steps the --success-rule reads",
                                  got="no success report",
                                  fix="measure the return instead (--precision return:HALFWIDTH), or use an env that "
                                      "reports success")
            return 1.0 if success else 0.0
        value = _number(sum_reward)
        if not math.isfinite(value):
            raise ConfigError(f"episode {index}'s return is not a finite number, and --precision return needs one",
                              expected="a finite return", got=f"{sum_reward} (episode {index}, {seed})",
                              fix="fix the env's reward (a diverging simulator?), or drop --precision")
        if self.bounds is not None and not self.bounds[0] <= value <= self.bounds[1]:
            lo, hi = self.bounds
            raise ConfigError(f"episode {index}'s return {value:g} is outside --return-bounds {lo:g} {hi:g}, so the "
                              "bounded confidence sequence does not hold", expected=f"every return in [{lo:g}, {hi:g}]",
                              got=f"{value:g} (episode {index}, {seed})",
                              fix="widen --return-bounds to a range every return lies in, or drop --return-bounds "
                                  "(the asymptotic sequence needs no bounds)")
        return value


def sequential_entry(cfg: PrecisionConfig, episodes: Sequence[EpisodeMetrics]) -> SequentialEntry | None:
    """The ``sequential`` entry of a run with ``cfg.precision`` (None without one), from its reported episodes.

    They are the episodes the plan's rule took, in the same order, so replaying the rule gives its numbers.
    """
    rule = PrecisionRule.from_config(cfg)
    if rule is None:
        return None
    for e in sorted(episodes, key=lambda e: e["episode_ix"]):
        rule.add(e["episode_ix"], e.get("sum_reward"), e.get("success"))
    return rule.entry()


def _number(value: float | None) -> float:
    return float("nan") if value is None else float(value)
