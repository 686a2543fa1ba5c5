"""``--separate A B``: which of two checkpoints is better, decided on as few episodes as the data allow.

For each task, checkpoints A and B run on the same seeds (episode ``i`` of both is seed ``seed + i``), in lockstep
blocks of ``--block-size`` episodes (:data:`BLOCK` by default). After each block the paired difference's 95%
confidence sequence (:func:`~torchrl_render.metrics.sequential.difference_sequence`, on ``A - B`` of the return
or the success) is run over the pairs in seed order; the pair stops at the first ``n`` whose sequence excludes 0
(``stopped_on: "separated"``) or at ``--num-trajs`` (``"cap"``). Episodes a block ran past ``n`` are recorded but
left out of the cells' numbers (:func:`trim`), so that the same ``n`` and numbers come out for any block size or
number of workers. The report gives the anytime-valid p-value of equal means and the better checkpoint, beside the
fixed-N probability of improvement the sweep computes for every pair.

Example:
    >>> a = [{"episode_ix": i, "sum_reward": 1.0 + (i % 3), "success": True} for i in range(40)]
    >>> b = [{"episode_ix": i, "sum_reward": 0.0 + (i % 2), "success": False} for i in range(40)]
    >>> state = pair_state(a, b, "success", None, cap=100)
    >>> state["better"], state["stopped_on"], state["n_pairs"] < 40
    ('A', 'separated', True)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NotRequired, TypedDict

from ..contracts import EpisodeMetrics
from ..errors import ConfigError
from ..metrics.precision import ALPHA
from ..metrics.sequential import difference_sequence
from .grid import CellDict
from .precision import bounds_pair
from .store import EpisodeRecord

__all__ = ["BLOCK", "METRICS", "FixedNComparison", "PairSpec", "PairState", "Separation", "find_pair", "pair_cells",
           "pair_state", "separations", "spec_of", "trim"]

#: Episodes each checkpoint of the pair runs before the pair's sequence is read again (without --block-size).
BLOCK = 10
METRICS = ("return", "success")


class PairSpec(TypedDict):
    """What a sweep separates (:func:`spec_of`): checkpoints A and B, the metric, the bounds of the return (or None)
    and the lockstep block."""

    a: str
    b: str
    metric: str
    bounds: list[float] | None
    block: int


class PairState(TypedDict):
    """The pair's difference sequence on one task (:func:`pair_state`)."""

    metric: str
    n_pairs: int
    cap: int
    stopped_on: str | None
    better: str | None
    p_value: float
    mean_difference: float | None
    interval: list[float]
    halfwidth: float
    method: str
    asymptotic: bool
    alpha: float


class FixedNComparison(TypedDict):
    """The fixed-N probability of improvement of B over A beside a separation (the report's comparisons)."""

    probability_of_improvement: float
    probability_of_improvement_ci95: list[float] | None
    tasks: list[str]


class Separation(PairState):
    """One task's separation (:func:`separations`): its cells, the pair's state, the better checkpoint and, in
    ``eval_info.json``, the fixed-N comparison beside it."""

    task: str
    checkpoint_a: str
    checkpoint_b: str
    cell_a: str
    cell_b: str
    better_checkpoint: str | None
    fixed_n: NotRequired[FixedNComparison | None]


def spec_of(config: Mapping[str, object] | None, cells: Sequence[CellDict]) -> PairSpec | None:
    """What the sweep's config (``SweepConfig.to_dict()``, as its manifest keeps it) separates: ``{a, b, metric,
    bounds, block}``, or None. The bounds are ``--return-bounds`` when the cells' ``--precision`` is on the return."""
    config = config or {}
    separate, base = config.get("separate"), config.get("base") or {}
    if not separate:
        return None
    if not isinstance(separate, list) or not isinstance(base, Mapping):  # SweepConfig made them so
        raise TypeError(f"a sweep config's separate is a list and its base a mapping, got {separate!r}, {base!r}")
    a, b = find_pair([str(s) for s in separate], cells)
    precision = str(base.get("precision") or "")
    bounds = base.get("return_bounds") if precision.startswith("return") else None
    metric, block = config.get("separate_metric") or "return", config.get("block_size") or BLOCK
    if not isinstance(metric, str) or not isinstance(block, int):  # SweepConfig checked both
        raise TypeError(f"a sweep config's separate_metric is a str and its block_size an int, got {metric!r}, "
                        f"{block!r}")
    return {"a": a, "b": b, "metric": metric, "bounds": list(bounds) if bounds is not None else None, "block": block}


def pair_cells(spec: PairSpec | None, cells: Sequence[CellDict]) -> dict[str, tuple[str, str]]:
    """``{cell id: (cell id of A, cell id of B)}`` for the cells of the pair, on the tasks both have."""
    if not spec:
        return {}
    cell_of = {(c["ckpt"], c["task"]): c["id"] for c in cells}
    out = {}
    for task in dict.fromkeys(c["task"] for c in cells):
        ca, cb = cell_of.get((spec["a"], task)), cell_of.get((spec["b"], task))
        if ca is not None and cb is not None:
            out[ca] = out[cb] = (ca, cb)
    return out


def find_pair(separate: Sequence[str], cells: Sequence[CellDict]) -> tuple[str, str]:
    """The two checkpoints (as the cells name them) that ``--separate A B`` names: by path, or by file name."""
    ckpts = list(dict.fromkeys(c["ckpt"] for c in cells))
    found = []
    for name in separate:
        exact = [c for c in ckpts if c == name or Path(c).resolve() == Path(name).resolve()]
        named = exact or [c for c in ckpts if Path(c).name == name or Path(c).stem == name]
        if len(named) != 1:
            listed = ", ".join(Path(c).name for c in ckpts[:6]) + (" ..." if len(ckpts) > 6 else "")
            fix = (f"pass two of the sweep's checkpoints, e.g. --separate {Path(ckpts[0]).name} "
                   f"{Path(ckpts[-1]).name}" if len(ckpts) > 1 else "give the sweep both checkpoints (--ckpt A.pt "
                   "--ckpt B.pt), then --separate A.pt B.pt")
            raise ConfigError(f"--separate names {name!r}, which is {'none' if not named else 'more than one'} of "
                              "the sweep's checkpoints", expected=f"a path or file name of one of: {listed}",
                              got=name, fix=fix)
        found.append(named[0])
    if found[0] == found[1]:
        raise ConfigError("--separate names the same checkpoint twice", got=" ".join(separate),
                          fix="pass two different checkpoints of the sweep")
    return found[0], found[1]


def pair_state(a: Sequence[EpisodeMetrics], b: Sequence[EpisodeMetrics], metric: str,
               bounds: Sequence[float] | None, cap: int) -> PairState:
    """The difference sequence over the pairs ``0..k-1`` both checkpoints have recorded, stopped at the first ``n``
    that excludes 0: ``n_pairs``, ``stopped_on`` (``separated``, ``cap`` or None while running), ``better``, the
    anytime-valid ``p_value``, the ``interval`` of the mean difference A - B and the ``method``."""
    ds = difference_sequence(metric, bounds=bounds_pair(bounds), alpha=ALPHA, target_n=cap)
    xa, xb = _values(a, metric), _values(b, metric)
    stopped = None
    for i in range(min(len(xa), len(xb), cap)):
        try:
            ds.update(xa[i], xb[i])
        except ValueError as exc:  # a return outside the bounds
            raise ConfigError(f"--separate: {exc}", fix="widen --return-bounds, or drop it") from None
        if ds.excludes_zero:
            stopped = "separated"
            break
    if stopped is None and ds.n >= cap:
        stopped = "cap"
    lo, hi = ds.interval if ds.n else (math.nan, math.nan)
    return {"metric": metric, "n_pairs": ds.n, "cap": cap, "stopped_on": stopped, "better": ds.better,
            "p_value": ds.p_value, "mean_difference": ds.mean if ds.n else None, "interval": [lo, hi],
            "halfwidth": ds.halfwidth, "method": ds.method, "asymptotic": ds.asymptotic, "alpha": ALPHA}


def _values(metrics: Sequence[EpisodeMetrics], metric: str) -> list[float]:
    """The prefix ``0..k-1`` of a cell's recorded episodes, as numbers of ``metric`` (a missing success ends it)."""
    by_ix = {m["episode_ix"]: m for m in metrics}
    out: list[float] = []
    while len(out) in by_ix:
        m = by_ix[len(out)]
        value = m.get("sum_reward") if metric == "return" else m.get("success")
        if value is None:
            if metric == "success":
                raise ConfigError(f"--separate on success needs each episode's success, and episode {len(out)} "
                                  "reported none", fix="pass --separate-metric return, or use an env that reports "
                                  "success")
            break
        out.append(float(value))
    return out


def separations(spec: PairSpec | None, cells: Sequence[CellDict],
                episodes: Mapping[str, Sequence[EpisodeRecord]]) -> list[Separation]:
    """One entry per task the pair shares: the pair's state and which checkpoint is better."""
    if not spec:
        return []
    a, b = spec["a"], spec["b"]
    cell_of = {(c["ckpt"], c["task"]): c for c in cells}
    out: list[Separation] = []
    for task in dict.fromkeys(c["task"] for c in cells):
        ca, cb = cell_of.get((a, task)), cell_of.get((b, task))
        if ca is None or cb is None:
            continue
        state = pair_state([r["metrics"] for r in episodes.get(ca["id"], [])],
                           [r["metrics"] for r in episodes.get(cb["id"], [])], spec["metric"], spec.get("bounds"),
                           min(ca["num_trajs"], cb["num_trajs"]))
        better = {"A": a, "B": b}.get(state["better"] or "")
        out.append({"task": task, "checkpoint_a": a, "checkpoint_b": b, "cell_a": ca["id"], "cell_b": cb["id"],
                    **state, "better_checkpoint": better})
    return out


def trim(spec: PairSpec | None, cells: Sequence[CellDict],
         episodes: dict[str, list[EpisodeRecord]]) -> dict[str, int]:
    """Cuts the pair's cells to the ``n`` pairs their decision used (a block may have run past it); returns
    ``{cell: n}`` of the decided ones."""
    decided = {}
    for entry in separations(spec, cells, episodes):
        if entry["stopped_on"] is None:
            continue
        for cid in (entry["cell_a"], entry["cell_b"]):
            episodes[cid] = [r for r in episodes.get(cid, []) if r["episode_ix"] < entry["n_pairs"]]
            decided[cid] = entry["n_pairs"]
    return decided
