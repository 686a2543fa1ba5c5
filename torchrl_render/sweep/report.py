"""Derived outputs of a sweep, rebuilt from ``manifest.json`` and ``episodes.jsonl`` alone.

``eval_info.json`` has lerobot-eval's keys: ``per_task`` (a list of ``{task_group, task_id,
task, metrics}``), ``per_group``, ``overall`` (each with ``avg_sum_reward``, ``avg_max_reward``,
``pc_success``, ``n_episodes``, ``eval_s``, ``eval_ep_s``, ``video_paths``), plus
``per_checkpoint`` (each checkpoint's cells) and ``curves`` (per task and run: mean return
and its 95% confidence interval against the training step). ``eval_s`` adds up the
episodes' own rollout times. ``report.html`` (:mod:`.html`) and the executed
``report.ipynb`` show the curves, a success table and the rendered episodes of each cell.

Example:
    >>> records = [{"kind": "episode", "cell": "c", "task": "t", "run": "r", "step": 10, "episode_ix": i,
    ...             "metrics": {"sum_reward": float(i), "max_reward": 1.0, "success": None, "length": 5,
    ...                         "wall_s": 0.5}} for i in range(3)]
    >>> curves(records)["t"]["r"][0]["mean"], curves(records)["t"]["r"][0]["ci95"]
    (1.0, [-1.484138, 3.484138])
"""

from __future__ import annotations

import math
import os
from collections import OrderedDict, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NotRequired, TypedDict

import numpy as np
from numpy.typing import NDArray

from ..contracts import EpisodeMetrics, UserValue
from ..metrics import Aggregated, aggregate, robust
from .gallery import galleries
from .grid import CellDict
from .html import write_html
from .notebook import write_notebook
from .precision import CellPrecision, cell_precision, has_precision, settled
from .separate import Separation, pair_cells, separations, spec_of, trim
from .store import EpisodeRecord, GalleryEntry, Manifest, Record, read_manifest, read_records, write_json_atomic

__all__ = ["CellEntry", "CheckpointEntry", "Comparison", "CurvePoint", "EvalInfo", "Level", "Progress", "ScoredLevel",
           "TaskEntry", "curves", "derive", "level_text", "nonfinite_text", "write_derived"]

EVAL_INFO = "eval_info.json"
_VIDEO_SUFFIXES = (".mp4", ".gif", ".webm", ".html")
#: Bytes of bootstrap resamples kept at once while the report is derived (8 bytes x resamples x episodes per
#: cell); beyond it a cell's resamples are drawn again when needed, identically (seeded by the cell's id).
DRAWS_BUDGET = 1 << 30


class NamedMetrics(EpisodeMetrics):
    """An episode's row with its cell, so that a level can name its non-finite episodes."""

    cell: str


class NamedEpisode(TypedDict):
    """An episode named across cells: its cell and index."""

    cell: str
    episode_ix: int


class Level(TypedDict):
    """The aggregates of a level (a cell, a task, a group, a checkpoint, the sweep) in ``eval_info.json``: a single
    run's (:func:`torchrl_render.metrics.aggregate`) and the rendered videos; ``ci95_success`` when an episode
    reported success; ``nonfinite_sum_reward`` and ``note`` when a return was NaN or infinite."""

    avg_sum_reward: float | None
    avg_max_reward: float | None
    pc_success: float | None
    n_episodes: int
    eval_s: float
    eval_ep_s: float | None
    std_sum_reward: float | None
    ci95_sum_reward: list[float] | None
    avg_length: float | None
    iqm_sum_reward: float | None
    iqm_sum_reward_ci95: list[float] | None
    median_sum_reward: float | None
    median_sum_reward_ci95: list[float] | None
    video_paths: list[str]
    ci95_success: NotRequired[list[float]]
    nonfinite_sum_reward: NotRequired[list[NamedEpisode]]
    note: NotRequired[str]


class _EpisodeLists(TypedDict):
    """lerobot-eval's per-episode lists."""

    sum_rewards: list[float]
    max_rewards: list[float | None]
    successes: list[bool | None]


class TaskMetrics(Level, robust.CellEstimates, _EpisodeLists):
    """A task's aggregates over all its checkpoints: the IQM and median of the pooled returns, resampled within
    each cell."""


class TaskEntry(TypedDict):
    """``per_task``'s entry of a task, lerobot-eval's names."""

    task_group: str
    task_id: int
    task: str
    task_spec: str
    metrics: TaskMetrics


class ScoredLevel(Level):
    """A level across tasks, with its estimates on the tasks' (normalised or raw) scores."""

    scores: robust.LevelEstimates


class GroupScores(TypedDict):
    """A checkpoint's estimates across the tasks of one group."""

    scores: robust.LevelEstimates


class CellEntry(Level, CellPrecision):
    """A cell in its checkpoint's ``per_task``: its aggregates, status, episodes and precision."""

    cell: str
    status: str
    n_expected: int
    error: str | None
    episodes: list[int]
    sum_rewards: list[float]


class CheckpointEntry(TypedDict):
    """``per_checkpoint``'s entry of a checkpoint: its cells by task, its levels across tasks and groups."""

    run: str
    checkpoint: str
    checkpoint_sha256: str
    step: int | None
    per_task: dict[str, CellEntry]
    overall: ScoredLevel
    per_group: dict[str, GroupScores]


class Comparison(TypedDict):
    """P(a return of B > a return of A) over the tasks both checkpoints have, with its 95% interval."""

    checkpoint_a: str
    checkpoint_b: str
    checkpoint_a_sha256: str
    checkpoint_b_sha256: str
    run_a: str
    run_b: str
    step_a: int | None
    step_b: int | None
    tasks: list[str]
    probability_of_improvement: float
    probability_of_improvement_ci95: list[float] | None


class CurvePoint(TypedDict):
    """One checkpoint on a task's curve (:func:`curves`)."""

    step: int | None
    checkpoint: str
    n: int
    mean: float | None
    ci95: list[float] | None
    pc_success: float | None
    ci95_success: list[float] | None
    nonfinite: int


class Progress(TypedDict):
    """Cells by status, and episodes recorded of those the cells need."""

    cells: int
    done: int
    failed: int
    pending: int
    episodes: int
    episodes_total: int


class EvalInfo(TypedDict):
    """``eval_info.json`` (the module docstring's keys)."""

    per_task: list[TaskEntry]
    per_group: dict[str, ScoredLevel]
    overall: ScoredLevel
    per_checkpoint: list[CheckpointEntry]
    comparisons: list[Comparison]
    separations: list[Separation]
    curves: dict[str, dict[str, list[CurvePoint]]]
    progress: Progress
    failures: dict[str, str]
    galleries: dict[str, list[GalleryEntry]]


def _base_of(manifest: Manifest) -> Mapping[str, UserValue]:
    """The cells' shared RenderConfig fields, as the manifest keeps them (the user's, ``SweepConfig.base``)."""
    base = (manifest.get("config") or {}).get("base") or {}
    if not isinstance(base, Mapping):  # SweepConfig.to_dict() wrote a dict
        raise TypeError(f"the manifest's config.base is a mapping, got {base!r}")
    return base


@dataclass
class _Stats:
    """How the sweep's bootstrap runs: resamples, the seed (the cells' ``--seed``), the per-task baselines."""

    reps: int = robust.DEFAULT_REPS
    seed: int = 0
    baselines: dict[str, dict[str, float]] | None = None

    @classmethod
    def of(cls, manifest: Manifest) -> _Stats:
        base = _base_of(manifest)
        return cls(int(base.get("bootstrap_reps", robust.DEFAULT_REPS)), int(base.get("seed") or 0),
                   manifest.get("baselines"))

    def draws(self, cell: str, metrics: Sequence[EpisodeMetrics]) -> robust.Draws:
        """The cell's resamples, seeded with the sweep's seed and the cell's id."""
        returns = _returns(metrics)
        rng = np.random.default_rng(robust.keyed_seed(self.seed, cell))
        return robust.Draws(returns, self.reps if len(returns) > 1 else 0, rng)


def _agg(metrics: Sequence[NamedMetrics], videos: list[str], draws: robust.Draws | None = None) -> Level:
    """The aggregates of ``metrics``: with the cell's ``draws``, the IQM's and the median's intervals; without (a
    level across tasks, whose intervals are in ``scores``), the IQM and median of the pooled returns alone.

    ``ci95_success`` (the Wilson interval of ``pc_success``) when an episode reported success; when a return is
    NaN or infinite, ``nonfinite_sum_reward`` names its episodes (``{cell, episode_ix}``) and ``note`` says the
    return statistics are over the finite ones, as a single run's aggregates do.
    """
    full = aggregate(metrics, eval_s=sum(float(m.get("wall_s") or 0.0) for m in metrics), reps=0, draws=draws)
    out: Level = {"avg_sum_reward": full["avg_sum_reward"], "avg_max_reward": full["avg_max_reward"],
                  "pc_success": full["pc_success"], "n_episodes": full["n_episodes"], "eval_s": full["eval_s"],
                  "eval_ep_s": full["eval_ep_s"], "std_sum_reward": full["std_sum_reward"],
                  "ci95_sum_reward": full["ci95_sum_reward"], "avg_length": full["avg_length"],
                  "iqm_sum_reward": full["iqm_sum_reward"], "iqm_sum_reward_ci95": full["iqm_sum_reward_ci95"],
                  "median_sum_reward": full["median_sum_reward"],
                  "median_sum_reward_ci95": full["median_sum_reward_ci95"], "video_paths": list(videos)}
    if "ci95_success" in full:
        out["ci95_success"] = full["ci95_success"]
    bad: list[NamedEpisode] = [{"cell": m["cell"], "episode_ix": m["episode_ix"]} for m in metrics if not _finite(m)]
    if bad:
        out["nonfinite_sum_reward"] = bad
        out["note"] = nonfinite_text(len(bad), len(metrics))
    return out


def level_text(agg: Aggregated | Level) -> str:
    """One line of a level's numbers: the mean return with its 95% interval, the success rate with its Wilson
    interval, and what was left out of them.

    Example:
        >>> level_text({"avg_sum_reward": 12.5, "ci95_sum_reward": [10.0, 15.0], "n_episodes": 4, "pc_success": 50.0,
        ...             "ci95_success": [15.0, 85.0]})
        'mean return 12.50 [10.00, 15.00] (n=4), success 50.00% [15.00, 85.00]'
    """
    mean, ci = agg.get("avg_sum_reward"), agg.get("ci95_sum_reward")
    text = "mean return " + ("-" if mean is None else f"{mean:.2f}") + (
        f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "") + f" (n={agg.get('n_episodes', 0)})"
    if agg.get("pc_success") is not None:
        wilson = agg.get("ci95_success")
        text += f", success {agg['pc_success']:.2f}%" + (f" [{wilson[0]:.2f}, {wilson[1]:.2f}]" if wilson else "")
    if agg.get("nonfinite_sum_reward"):
        text += f"; {nonfinite_text(len(agg['nonfinite_sum_reward']), agg.get('n_episodes', 0))}"
    return text


def nonfinite_text(bad: int, n: int) -> str:
    """What a level with ``bad`` of its ``n`` returns NaN or infinite says beside its numbers.

    Example:
        >>> nonfinite_text(3, 6)
        '3 of the 6 returns are not finite (NaN or infinite): the return statistics are over the 3 finite ones'
    """
    return (f"{bad} of the {n} returns {'is' if bad == 1 else 'are'} not finite (NaN or infinite): the return "
            f"statistics are over the {n - bad} finite one{'' if n - bad == 1 else 's'}")


def _finite(metrics: EpisodeMetrics) -> bool:
    value = metrics.get("sum_reward")
    return value is not None and math.isfinite(float(value))


def _named(record: EpisodeRecord) -> NamedMetrics:
    """An episode line's metrics with its cell and index, so that a level can name its non-finite episodes."""
    return {**record["metrics"], "cell": record["cell"], "episode_ix": record["episode_ix"]}


def _returns(metrics: Sequence[EpisodeMetrics]) -> list[float]:
    """The finite returns (a NaN return is left out of every estimate, as of the means)."""
    return [float(m["sum_reward"]) for m in metrics
            if m.get("sum_reward") is not None and math.isfinite(float(m["sum_reward"]))]


def curves(records: Sequence[Record]) -> dict[str, dict[str, list[CurvePoint]]]:
    """``{task: {run: [{step, checkpoint, mean, ci95, n, pc_success, ci95_success, nonfinite}]}}`` from episode
    lines, in step order.

    The band is the 95% Student-t interval of the mean return over a checkpoint's finite returns (``None`` with
    fewer than 2); ``nonfinite`` counts the episodes whose return was NaN or infinite (left out of the mean).
    """
    # each episode's metrics, by (task, run, step, checkpoint)
    points: dict[tuple[str, str, int | None, str], list[EpisodeMetrics]] = defaultdict(list)
    for r in records:
        if r["kind"] == "episode":
            points[(r["task"], r["run"], r.get("step"), r.get("checkpoint", r["cell"]))].append(r["metrics"])
    out: dict[str, dict[str, list[CurvePoint]]] = {}
    for (task, run, step, ckpt), metrics in points.items():
        agg = aggregate(metrics, 0.0)
        ci = agg["ci95_sum_reward"]
        out.setdefault(task, {}).setdefault(run, []).append(
            {"step": step, "checkpoint": ckpt, "n": len(metrics),
             "mean": round(agg["avg_sum_reward"], 6) if agg["avg_sum_reward"] is not None else None,
             "ci95": [round(ci[0], 6), round(ci[1], 6)] if ci else None,
             "pc_success": agg["pc_success"], "ci95_success": agg.get("ci95_success"),
             "nonfinite": len(agg.get("nonfinite_sum_reward", []))})
    for runs in out.values():
        for pts in runs.values():
            pts.sort(key=lambda p: (p["step"] is None, p["step"] or 0, p["checkpoint"]))
    return out


def derive(folder: Path) -> EvalInfo:
    """The content of ``eval_info.json`` for the sweep in ``folder``."""
    folder = Path(folder)
    manifest: Manifest = read_manifest(folder) or {"cells": [], "groups": {}}
    records = read_records(folder)
    episodes: dict[str, list[EpisodeRecord]] = defaultdict(list)
    videos: dict[str, list[str]] = defaultdict(list)
    errors: dict[str, str] = {}
    for r in records:
        if r["kind"] == "episode":
            episodes[r["cell"]].append(r)
        elif r["kind"] == "artifacts":
            videos[r["cell"]] += [_relative(p, folder) for p in r["paths"] if p.lower().endswith(_VIDEO_SUFFIXES)]
        elif r["kind"] == "failed":
            errors[r["cell"]] = r["error"]
    cells = manifest["cells"]
    for eps in episodes.values():
        eps.sort(key=lambda r: r["episode_ix"])
    base = _base_of(manifest)
    spec = spec_of(manifest.get("config"), cells)
    decided = trim(spec, cells, episodes)  # --separate: the pair's cells, cut to the pairs the decision used
    pairs = pair_cells(spec, cells)
    status = {c["id"]: "done" if (c["id"] in decided if c["id"] in pairs else
                                  settled(base, c, [r["metrics"] for r in episodes[c["id"]]])) else
              "failed" if c["id"] in errors else "pending" for c in cells}
    by = _grouped(cells, episodes, videos)
    stats = _Stats.of(manifest)
    groups = manifest.get("groups", {})
    draws = _DrawCache(stats, {c["id"]: [r["metrics"] for r in episodes[c["id"]]] for c in cells})
    by_task: dict[str, list[tuple[str, robust.Draws]]] = defaultdict(list)  # returns only: the sweep-wide levels
    for c in cells:
        by_task[c["task"]].append((c["task"], draws.point(c["id"])))
    everything = [pair for pairs in by_task.values() for pair in pairs]
    overall_scores = _pooled_note(robust.level_estimates(everything, stats.baselines))
    statuses = list(status.values())
    info: EvalInfo = {
        "per_task": [{"task_group": group, "task_id": i, "task": task,
                      "task_spec": (manifest.get("tasks") or {}).get(task, task),
                      "metrics": {**_agg(*by["task"][task]), **robust.pooled_estimates([d for _, d in by_task[task]]),
                                  **_lists(by["task"][task][0])}}
                     for group, tasks in groups.items() for i, task in enumerate(tasks)],
        "per_group": {group: {**_agg(*by["group"][group]),
                              "scores": overall_scores if set(tasks) >= set(by_task) else
                              _pooled_note(robust.level_estimates([p for t in tasks for p in by_task[t]],
                                                                  stats.baselines))}
                      for group, tasks in groups.items()},
        "overall": {**_agg(*by["all"][None]), "scores": overall_scores},
        "per_checkpoint": (per_checkpoint := _per_checkpoint(cells, episodes, videos, status, errors, draws, stats,
                                                             groups, base)),
        "comparisons": (comparisons := _comparisons(per_checkpoint, cells, draws)),
        "separations": _with_fixed_n(separations(spec, cells, episodes), comparisons),
        "curves": curves(records),
        "progress": {"cells": len(cells), "done": statuses.count("done"), "failed": statuses.count("failed"),
                     "pending": statuses.count("pending"),
                     "episodes": sum(len(v) for v in episodes.values()),
                     "episodes_total": sum(len(episodes[c["id"]]) if (has_precision(base) or c["id"] in pairs)
                                           and status[c["id"]] == "done" else c["num_trajs"]
                                           for c in cells)},  # a cell stopped early needs no more
        "failures": {cid: errors[cid] for cid, s in status.items() if s == "failed"},
        "galleries": galleries(records, lambda p: _relative(p, folder)),  # --render-select worst:N...
    }
    return info


def _with_fixed_n(entries: list[Separation], comparisons: list[Comparison]) -> list[Separation]:
    """Each separation with the fixed-N comparison of the same two checkpoints beside it (the probability of
    improvement of B over A, over their shared tasks, from every recorded episode)."""
    by_pair = {(c["checkpoint_a"], c["checkpoint_b"]): c for c in comparisons}
    for entry in entries:
        fixed = by_pair.get((entry["checkpoint_a"], entry["checkpoint_b"]))
        entry["fixed_n"] = None if fixed is None else {
            "probability_of_improvement": fixed["probability_of_improvement"],
            "probability_of_improvement_ci95": fixed["probability_of_improvement_ci95"], "tasks": fixed["tasks"]}
    return entries


def _grouped(cells: Sequence[CellDict], episodes: Mapping[str, Sequence[EpisodeRecord]],
             videos: Mapping[str, list[str]]) -> dict[str, dict[str | None, tuple[list[NamedMetrics], list[str]]]]:
    """Each task's, group's and the sweep's (key None) episodes, named, and videos."""
    by: dict[str, dict[str | None, tuple[list[NamedMetrics], list[str]]]] = {
        "task": defaultdict(lambda: ([], [])), "group": defaultdict(lambda: ([], [])),
        "all": defaultdict(lambda: ([], []))}
    for cell in cells:
        metrics = [_named(r) for r in episodes[cell["id"]]]
        for kind, key in (("task", cell["task"]), ("group", cell["group"]), ("all", None)):
            by[kind][key][0].extend(metrics)
            by[kind][key][1].extend(videos[cell["id"]])
    return by


def _lists(metrics: Sequence[EpisodeMetrics]) -> _EpisodeLists:
    """lerobot-eval's per-episode lists."""
    return {"sum_rewards": [m["sum_reward"] for m in metrics], "max_rewards": [m["max_reward"] for m in metrics],
            "successes": [m["success"] for m in metrics]}


class _DrawCache:
    """Each cell's resamples, drawn when first asked for and kept within ``budget`` bytes (the least recently used
    go first, and are drawn again, identically, if asked for again): the checkpoints' levels read the cells
    checkpoint by checkpoint, the comparisons task by task, so a large sweep needs only a row or a column of
    its grid at once."""

    def __init__(self, stats: _Stats, metrics: dict[str, list[EpisodeMetrics]], budget: int | None = None) -> None:
        self.stats, self.metrics = stats, metrics
        self.budget = DRAWS_BUDGET if budget is None else budget
        self._kept: OrderedDict[str, robust.Draws] = OrderedDict()
        self._bytes = 0

    def __getitem__(self, cell: str) -> robust.Draws:
        if cell in self._kept:
            self._kept.move_to_end(cell)
            return self._kept[cell]
        draws = self.stats.draws(cell, self.metrics[cell])
        self._kept[cell] = draws
        self._bytes += draws.cum.nbytes + draws.counts.nbytes
        while self._bytes > self.budget and len(self._kept) > 1:
            _, old = self._kept.popitem(last=False)
            self._bytes -= old.cum.nbytes + old.counts.nbytes
        return draws

    def point(self, cell: str) -> robust.Draws:
        """The cell's returns without resamples: the sweep-wide levels pool checkpoints, and a bootstrap interval
        of a mixture of checkpoints answers no question (each checkpoint's levels have theirs)."""
        return robust.Draws(_returns(self.metrics[cell]), 0, np.random.default_rng(0))


def _pooled_note(scores: robust.LevelEstimates) -> robust.LevelEstimates:
    note = "pooled over every checkpoint: point estimates only (per_checkpoint has each checkpoint's intervals)"
    return {**scores, "note": f"{scores['note']}; {note}" if scores.get("note") else note}


def _comparisons(per_checkpoint: Sequence[CheckpointEntry], cells: Sequence[CellDict],
                 draws: _DrawCache) -> list[Comparison]:
    """One entry per ordered pair of checkpoints: P(a return of B > a return of A), over their shared tasks.

    Task by task (the resamples of one task's cells at a time), each unordered pair once; ``(B, A)`` is ``1 -``
    ``(A, B)`` on the same resamples.
    """
    entries = {e["checkpoint"]: e for e in per_checkpoint}
    names = list(entries)
    cell_of = {(c["ckpt"], c["task"]): c["id"] for c in cells}
    tasks = list(dict.fromkeys(c["task"] for c in cells))
    shared: dict[tuple[str, str], list[str]] = defaultdict(list)
    returns = {key: draws.point(cid).values for key, cid in cell_of.items()}
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            shared[a, b] = [t for t in tasks if returns.get((a, t), np.zeros(0)).size
                            and returns.get((b, t), np.zeros(0)).size]
    reps = draws.stats.reps
    # a cell of one episode has no resamples (no interval of its own): a pair with one gets no interval either
    samples: dict[tuple[str, str], NDArray[np.float64]] = {
        (a, b): np.zeros(reps) for (a, b), ts in shared.items() if ts and reps
        and all(returns[a, t].size > 1 and returns[b, t].size > 1 for t in ts)}
    if samples:
        for t in tasks:
            for (a, b) in samples:
                if t in shared[a, b]:
                    samples[a, b] += robust.pair_task_samples(draws[cell_of[a, t]], draws[cell_of[b, t]], reps)
    out: list[Comparison] = []
    for (a, b), ts in shared.items():
        if not ts:
            continue
        p = robust.probability_of_improvement([returns[a, t] for t in ts], [returns[b, t] for t in ts])
        ci = robust.interval95(samples[a, b] / len(ts)) if (a, b) in samples else None
        for x, y, px, band in ((a, b, p, ci), (b, a, 1.0 - p, [1.0 - ci[1], 1.0 - ci[0]] if ci else None)):
            out.append({"checkpoint_a": x, "checkpoint_b": y, "checkpoint_a_sha256": entries[x]["checkpoint_sha256"],
                        "checkpoint_b_sha256": entries[y]["checkpoint_sha256"], "run_a": entries[x]["run"],
                        "run_b": entries[y]["run"], "step_a": entries[x]["step"], "step_b": entries[y]["step"],
                        "tasks": ts, "probability_of_improvement": px, "probability_of_improvement_ci95": band})
    out.sort(key=lambda e: (names.index(e["checkpoint_a"]), names.index(e["checkpoint_b"])))
    return out


def _per_checkpoint(cells: Sequence[CellDict], episodes: Mapping[str, Sequence[EpisodeRecord]],
                    videos: Mapping[str, list[str]], status: Mapping[str, str], errors: Mapping[str, str],
                    draws: _DrawCache, stats: _Stats, groups: Mapping[str, list[str]],
                    base: Mapping[str, UserValue] | None = None) -> list[CheckpointEntry]:
    by_ckpt: dict[str, list[CellDict]] = defaultdict(list)
    for cell in cells:
        by_ckpt[cell["ckpt"]].append(cell)
    out: list[CheckpointEntry] = []
    for ckpt, mine in by_ckpt.items():  # one checkpoint's cells at a time
        first = mine[0]
        per_task: dict[str, CellEntry] = {}
        everything: tuple[list[NamedMetrics], list[str]] = ([], [])
        for cell in mine:
            metrics = [_named(r) for r in episodes[cell["id"]]]
            per_task[cell["task"]] = {
                **_agg(metrics, videos[cell["id"]], draws[cell["id"]]), "cell": cell["id"],
                "status": status[cell["id"]], "n_expected": cell["num_trajs"],
                "error": errors.get(cell["id"]) if status[cell["id"]] == "failed" else None,
                "episodes": [r["episode_ix"] for r in episodes[cell["id"]]],
                "sum_rewards": [m["sum_reward"] for m in metrics],
                **cell_precision(base or {}, cell, [r["metrics"] for r in episodes[cell["id"]]])}
            everything[0].extend(metrics)
            everything[1].extend(videos[cell["id"]])
        pairs = [(cell["task"], draws[cell["id"]]) for cell in mine]
        overall: ScoredLevel = {**_agg(*everything), "scores": robust.level_estimates(pairs, stats.baselines)}
        per_group: dict[str, GroupScores] = {
            group: {"scores": overall["scores"] if set(tasks) >= {t for t, _ in pairs} else
                    robust.level_estimates([p for p in pairs if p[0] in tasks], stats.baselines)}
            for group, tasks in groups.items()}
        out.append({"run": first["run"], "checkpoint": ckpt, "checkpoint_sha256": first["sha256"],
                    "step": first["step"], "per_task": per_task, "overall": overall, "per_group": per_group})
    return out


def _relative(path: str, folder: Path) -> str:
    try:
        return os.path.relpath(path, folder.resolve())
    except ValueError:  # another drive
        return path


def write_derived(folder: Path, *, html: bool = True, notebook: bool = False) -> list[Path]:
    """Rewrites ``eval_info.json`` (and ``report.html``; ``report.ipynb`` executed when asked)."""
    folder = Path(folder)
    info = derive(folder)
    write_json_atomic(folder / EVAL_INFO, info)
    written = []
    if html:
        written.append(write_html(folder, info))
    if notebook:
        written.append(write_notebook(folder, info))
    return written
