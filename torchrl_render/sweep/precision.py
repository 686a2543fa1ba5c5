"""``--precision`` in a sweep: each cell stops on its own, at the first ``n`` whose confidence sequence is narrow
enough (at most its ``num_trajs``, the cap).

A cell with a precision runs as one unit from its episode 0 (its plan then stops it on its seed prefix, exactly as a
single run stops); a resumed or retried one runs again from episode 0, and the driver records only the episodes it
lacks (they come out the same). Whether a cell is complete is read from its recorded episodes alone:
:func:`settled` replays the stop rule over them, so the driver, the report and ``sweep-status`` agree.

Example:
    >>> base = {"precision": "success:0.3", "num_trajs": 100}
    >>> cell = {"num_trajs": 100, "seed": 0}
    >>> settled(base, cell, [{"episode_ix": i, "sum_reward": 1.0, "success": True} for i in range(5)])
    False
    >>> settled(base, cell, [{"episode_ix": i, "sum_reward": 1.0, "success": True} for i in range(40)])
    True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NotRequired, TypedDict

from ..contracts import EpisodeMetrics, UserValue
from ..metrics.precision import PrecisionRule, SequentialEntry
from ..metrics.sequential import Halfwidth, halfwidth_at_fixed_n, parse_precision
from .grid import Cell, CellDict

__all__ = ["CellPrecision", "FixedN", "bounds_pair", "cell_precision", "fixed_n_halfwidth", "has_precision", "rule",
           "settled"]

#: What a fixed number of episodes ``n`` reached: the half-width of the mean return's 95% confidence sequence
#: (``return``, with a finite return), and of the success rate's (``success``, when every episode reports one).
#: A functional TypedDict, since ``return`` is a keyword.
FixedN = TypedDict("FixedN", {"n": int, "return": NotRequired[Halfwidth], "success": NotRequired[Halfwidth]})


class CellPrecision(TypedDict, total=False):
    """A cell's ``sequential`` entry with ``--precision``, else its ``fixed_n_halfwidth``."""

    sequential: SequentialEntry
    fixed_n_halfwidth: FixedN


def has_precision(base: Mapping[str, UserValue]) -> bool:
    """Whether the sweep's cells stop on ``--precision``."""
    return base.get("precision") is not None


def rule(base: Mapping[str, UserValue], cell: Cell | CellDict) -> PrecisionRule | None:
    """A fresh stop rule for ``cell`` (a :class:`~torchrl_render.sweep.grid.Cell` or its dict); None without one."""
    if not has_precision(base):
        return None
    return _rule(base, cell)


def _rule(base: Mapping[str, UserValue], cell: Cell | CellDict) -> PrecisionRule:
    """:func:`rule` of a sweep that has a precision."""
    metric, target = parse_precision(base["precision"])
    seed, cap = (cell["seed"], cell["num_trajs"]) if isinstance(cell, dict) else (cell.seed, cell.num_trajs)
    return PrecisionRule(metric, target, bounds=base.get("return_bounds"), cap=cap, seed=seed)


def _prefix(metrics: Sequence[EpisodeMetrics]) -> list[EpisodeMetrics]:
    """The recorded episodes ``0..k-1`` (one each, in seed order): the prefix the rule reads."""
    by_ix = {m["episode_ix"]: m for m in metrics}
    out: list[EpisodeMetrics] = []
    while len(out) in by_ix:
        out.append(by_ix[len(out)])
    return out


def _replay(base: Mapping[str, UserValue], cell: Cell | CellDict, metrics: Sequence[EpisodeMetrics]) -> PrecisionRule:
    """The stop rule run over the recorded prefix (a sweep with a precision: its callers check)."""
    r = _rule(base, cell)
    for m in _prefix(metrics):
        r.add(m["episode_ix"], m.get("sum_reward"), m.get("success"))
        if r.reached:
            break
    return r


def settled(base: Mapping[str, UserValue], cell: Cell | CellDict, metrics: Sequence[EpisodeMetrics]) -> bool:
    """Whether the cell needs no more episodes: its precision is reached on the recorded prefix, or the cap is."""
    cap = cell["num_trajs"] if isinstance(cell, dict) else cell.num_trajs
    if not has_precision(base):
        return len(metrics) >= cap
    r = _replay(base, cell, metrics)
    return r.reached or r.cs.n >= cap


def cell_precision(base: Mapping[str, UserValue], cell: Cell | CellDict,
                   metrics: Sequence[EpisodeMetrics]) -> CellPrecision:
    """The cell's ``sequential`` entry (as a single run's), or for a fixed-N cell the half-width it reached."""
    if has_precision(base):
        return {"sequential": _replay(base, cell, metrics).entry()}
    return {"fixed_n_halfwidth": fixed_n_halfwidth(metrics, base.get("return_bounds"))}


def fixed_n_halfwidth(metrics: Sequence[EpisodeMetrics], bounds: Sequence[float] | None = None) -> FixedN:
    """What a fixed number of episodes reached: the 95% confidence sequence's half-width of the mean return (and of
    the success rate when every episode reports one), read at the end, over the episodes in seed order."""
    ordered = sorted(metrics, key=lambda m: m["episode_ix"])
    returns = [float(m["sum_reward"]) for m in ordered if m.get("sum_reward") is not None]
    out: FixedN = {"n": len(ordered)}
    if returns:
        out["return"] = halfwidth_at_fixed_n(returns, metric="return", bounds=bounds_pair(bounds))
    successes = [float(success) for m in ordered if (success := m.get("success")) is not None]
    if successes and len(successes) == len(ordered):  # every episode reports one
        out["success"] = halfwidth_at_fixed_n(successes, metric="success")
    return out


def bounds_pair(bounds: Sequence[float] | None) -> tuple[float, float] | None:
    """``--return-bounds`` LO HI as a pair (RenderConfig checked that it is two numbers)."""
    if bounds is None:
        return None
    lo, hi = bounds
    return float(lo), float(hi)
