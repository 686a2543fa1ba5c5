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

from typing import Any

from ..metrics.precision import PrecisionRule
from ..metrics.sequential import halfwidth_at_fixed_n, parse_precision

__all__ = ["cell_precision", "fixed_n_halfwidth", "has_precision", "rule", "settled"]


def has_precision(base: dict[str, Any]) -> bool:
    """Whether the sweep's cells stop on ``--precision``."""
    return base.get("precision") is not None


def rule(base: dict[str, Any], cell: Any) -> PrecisionRule | None:
    """A fresh stop rule for ``cell`` (a :class:`~torchrl_render.sweep.grid.Cell` or its dict); None without one."""
    if not has_precision(base):
        return None
    return _rule(base, cell)


def _rule(base: dict[str, Any], cell: Any) -> PrecisionRule:
    """:func:`rule` of a sweep that has a precision."""
    metric, target = parse_precision(base["precision"])
    seed, cap = (cell["seed"], cell["num_trajs"]) if isinstance(cell, dict) else (cell.seed, cell.num_trajs)
    return PrecisionRule(metric, target, bounds=base.get("return_bounds"), cap=cap, seed=seed)


def _prefix(metrics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The recorded episodes ``0..k-1`` (one each, in seed order): the prefix the rule reads."""
    by_ix = {m["episode_ix"]: m for m in metrics}
    out: list[dict[str, Any]] = []
    while len(out) in by_ix:
        out.append(by_ix[len(out)])
    return out


def _replay(base: dict[str, Any], cell: Any, metrics: list[dict[str, Any]]) -> PrecisionRule:
    """The stop rule run over the recorded prefix (a sweep with a precision: its callers check)."""
    r = _rule(base, cell)
    for m in _prefix(metrics):
        r.add(m["episode_ix"], m.get("sum_reward"), m.get("success"))
        if r.reached:
            break
    return r


def settled(base: dict[str, Any], cell: Any, metrics: list[dict[str, Any]]) -> bool:
    """Whether the cell needs no more episodes: its precision is reached on the recorded prefix, or the cap is."""
    cap = cell["num_trajs"] if isinstance(cell, dict) else cell.num_trajs
    if not has_precision(base):
        return len(metrics) >= cap
    r = _replay(base, cell, metrics)
    return r.reached or r.cs.n >= cap


def cell_precision(base: dict[str, Any], cell: dict[str, Any], metrics: list[dict[str, Any]]) -> dict[str, Any]:
    """The cell's ``sequential`` entry (as a single run's), or for a fixed-N cell the half-width it reached."""
    if has_precision(base):
        return {"sequential": _replay(base, cell, metrics).entry()}
    return {"fixed_n_halfwidth": fixed_n_halfwidth(metrics, base.get("return_bounds"))}


def fixed_n_halfwidth(metrics: list[dict[str, Any]], bounds: Any = None) -> dict[str, Any]:
    """What a fixed number of episodes reached: the 95% confidence sequence's half-width of the mean return (and of
    the success rate when every episode reports one), read at the end, over the episodes in seed order."""
    ordered = sorted(metrics, key=lambda m: m["episode_ix"])
    returns = [float(m["sum_reward"]) for m in ordered if m.get("sum_reward") is not None]
    out: dict[str, Any] = {"n": len(ordered)}
    if returns:
        out["return"] = halfwidth_at_fixed_n(returns, metric="return", bounds=bounds)
    successes = [float(m["success"]) for m in ordered if m.get("success") is not None]
    if successes and len(successes) == len(ordered):  # every episode reports one
        out["success"] = halfwidth_at_fixed_n(successes, metric="success")
    return out
