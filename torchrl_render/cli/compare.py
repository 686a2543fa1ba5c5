"""``python -m torchrl_render compare A/eval_info.json B/eval_info.json``: is B better than A?

Two separate evaluations (single runs or sweeps, each one checkpoint) are compared on the tasks they
share: the probability of improvement ``P(a return of B > a return of A) + 0.5 P(equal)`` averaged over
the tasks, each side's IQM and the IQM difference ``B - A``, each with its 95% bootstrap interval (both
sides resampled independently within each task; :mod:`torchrl_render.metrics.robust`). With
``--score-baselines`` the IQMs are on normalised scores. A single run's ``eval_info.json`` holds one task
(it does not name it): it matches the other side's only task. For each side and task it also says what half-width
its fixed number of episodes reached: the 95% confidence sequence of the mean return, read at the end
(:func:`~torchrl_render.metrics.sequential.halfwidth_at_fixed_n`), which ``--precision`` would have stopped on.

Example::

    python -m torchrl_render compare runs/a/eval_info.json runs/b/eval_info.json --seed 0
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NotRequired, TypedDict

import numpy as np

from ..config import load_mapping
from ..errors import ConfigError, RenderError
from ..metrics.robust import (
    DEFAULT_REPS,
    Draws,
    JoinedDraws,
    check_baselines,
    interval95,
    iqm,
    keyed_seed,
    normalise,
    pair_estimates,
)
from ..metrics.sequential import halfwidth_at_fixed_n
from .parser import PROG, Parser

__all__ = ["Comparison", "FixedNHalfwidth", "compare", "main", "read_evaluation"]

_ONE_TASK = "(the run's env)"


class FixedNHalfwidth(TypedDict):
    """What one side's returns of one task reached: the 95% confidence sequence of the mean return, read at the
    end (its half-width and interval after ``n`` episodes, and its method)."""

    halfwidth: float
    interval: list[float]
    n: int
    method: str


class Comparison(TypedDict):
    """:func:`compare`'s result (``--json`` prints it): B against A on the tasks they share. The intervals are
    None without bootstrap resamples (or with a single episode of a task); ``note`` says why when that is it."""

    tasks: list[str]
    score: str  # "normalised" (--score-baselines) or "raw"
    n_episodes: list[int]  # A's, B's
    bootstrap_reps: int
    seed: int
    probability_of_improvement: float
    probability_of_improvement_ci95: list[float] | None
    iqm_a: float
    iqm_b: float
    iqm_difference: float
    iqm_a_ci95: list[float] | None
    iqm_b_ci95: list[float] | None
    iqm_difference_ci95: list[float] | None
    fixed_n_halfwidth: dict[str, dict[str, FixedNHalfwidth]]  # {"a" / "b": {task: what its returns reached}}
    note: NotRequired[str]


def read_evaluation(path: Path, checkpoint: str | None = None) -> tuple[str, dict[str, list[float]]]:
    """``(label, {task: finite returns})`` of one evaluation: a single run's ``eval_info.json`` or a sweep's
    (one checkpoint: the only one, or the one named by ``checkpoint``, its path, file name or sha256 prefix)."""
    fix = "pass the eval_info.json of a run (--format json) or of a sweep (its --out folder)"
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{str(path)!r} does not exist", expected="an eval_info.json file", got=str(path),
                          fix=fix) from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{str(path)!r} is not a JSON file ({exc})", expected="an eval_info.json file",
                          got=str(path), fix=fix) from None
    if isinstance(data, dict) and isinstance(data.get("per_episode"), list):
        return str(path), {_ONE_TASK: _finite([e.get("sum_reward") for e in data["per_episode"]])}
    if isinstance(data, dict) and isinstance(data.get("per_checkpoint"), list) and data["per_checkpoint"]:
        entries = data["per_checkpoint"]
        names = [e["checkpoint"] for e in entries]
        if checkpoint is not None:
            entries = [e for e in entries if checkpoint in (e["checkpoint"], Path(e["checkpoint"]).name)
                       or str(e.get("checkpoint_sha256", "")).startswith(checkpoint)]
        if len(entries) != 1:
            raise ConfigError(f"{str(path)!r} is a sweep of {len(names)} checkpoints"
                              + (f"; {checkpoint!r} names {len(entries)} of them" if checkpoint else ""),
                              expected="one checkpoint", got=", ".join(names),
                              fix="name one with --checkpoint-a / --checkpoint-b (path, file name or sha256 prefix); "
                                  "the sweep's own eval_info.json has every pair under 'comparisons'")
        entry = entries[0]
        missing = [t for t, c in entry["per_task"].items() if "sum_rewards" not in c]
        if missing:
            raise ConfigError(f"{str(path)!r} has no per-episode returns for {', '.join(missing)}",
                              expected="per_checkpoint[].per_task[].sum_rewards", got="a sweep report without them",
                              fix="rewrite the report with this version (python -m torchrl_render sweep --resume "
                                  "on its folder)")
        label = f"{entry['checkpoint']} (sha256 {str(entry.get('checkpoint_sha256', ''))[:12]})"
        return label, {t: _finite(c["sum_rewards"]) for t, c in entry["per_task"].items()}
    raise ConfigError(f"{str(path)!r} is not an eval_info.json", expected="a run's (per_episode) or a sweep's "
                      "(per_checkpoint) eval_info.json", got="other JSON", fix=fix)


def _finite(values: Sequence[float | None]) -> list[float]:
    return [float(v) for v in values if v is not None and np.isfinite(float(v))]


def _match(a: dict[str, list[float]],
           b: dict[str, list[float]]) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Renames a single run's one task to the other side's only task."""
    if _ONE_TASK in a and len(b) == 1:
        a = {next(iter(b)): a[_ONE_TASK]}
    elif _ONE_TASK in b and len(a) == 1:
        b = {next(iter(a)): b[_ONE_TASK]}
    return a, b


def compare(a: dict[str, list[float]], b: dict[str, list[float]], *, reps: int = DEFAULT_REPS, seed: int = 0,
            baselines: Mapping[str, object] | None = None) -> Comparison:
    """The comparison of two evaluations' returns by task (see the module docstring); ``baselines`` as
    ``--score-baselines`` reads them (``{task: {random: R, reference: S}}``, checked here)."""
    a, b = _match(a, b)
    shared = [t for t in a if t in b and a[t] and b[t]]
    if not shared:
        raise ConfigError("the two evaluations share no task with returns", expected="the same task names",
                          got=f"A: {', '.join(a) or 'none'}; B: {', '.join(b) or 'none'}",
                          fix="compare evaluations of the same tasks (a single run matches a one-task sweep)")
    checked = None
    if baselines is not None:
        if shared == [_ONE_TASK] and len(baselines) == 1:  # two single runs: the file's one entry is their task
            baselines = {_ONE_TASK: next(iter(baselines.values()))}
        checked = check_baselines(baselines, shared, "--score-baselines")
    table = checked or {}
    normalised = checked is not None and all(t in table for t in shared)
    draws = [{t: Draws(side[t], reps, np.random.default_rng(keyed_seed(seed, f"{name}:{t}"))) for t in shared}
             for name, side in (("a", a), ("b", b))]
    pair = pair_estimates(*draws)
    if pair is None:  # never: every shared task has returns on both sides
        raise ValueError(f"no task with returns on both sides among {shared}")
    scores = [[normalise(d[t].values, table[t] if normalised else None) for t in shared] for d in draws]
    iqms = [iqm(np.concatenate(s)) for s in scores]
    out: Comparison = {"tasks": shared, "score": "normalised" if normalised else "raw",
                       "n_episodes": [sum(d[t].n for t in shared) for d in draws], "bootstrap_reps": reps,
                       "seed": seed, "probability_of_improvement": pair["probability_of_improvement"],
                       "probability_of_improvement_ci95": pair["probability_of_improvement_ci95"],
                       "iqm_a": iqms[0], "iqm_b": iqms[1], "iqm_difference": iqms[1] - iqms[0],
                       "iqm_a_ci95": None, "iqm_b_ci95": None, "iqm_difference_ci95": None,
                       "fixed_n_halfwidth": {name: {t: _halfwidth(side[t]) for t in shared}
                                             for name, side in (("a", a), ("b", b))}}
    fewest = min(d[t].n for d in draws for t in shared)
    if reps > 0 and fewest < 2:  # resamples of one value are that value: a zero-width interval would claim certainty
        out["probability_of_improvement_ci95"] = None
        side, task = next((name, t) for name, d in (("A", draws[0]), ("B", draws[1])) for t in shared if d[t].n < 2)
        out["note"] = (f"no intervals: {side} has a single episode of task {task!r}, and a bootstrap of one episode "
                       "does not vary; evaluate at least 2 episodes per task (more for a useful interval)")
    if reps > 0 and fewest > 1:
        samples = [JoinedDraws([d[t] for t in shared], s, reps).trimmed() for d, s in zip(draws, scores)]
        out.update({"iqm_a_ci95": interval95(samples[0]), "iqm_b_ci95": interval95(samples[1]),
                    "iqm_difference_ci95": interval95(samples[1] - samples[0])})
    return out


def _halfwidth(returns: list[float]) -> FixedNHalfwidth:
    """What ``returns`` (in seed order) reached: the half-width of the mean return's confidence sequence."""
    reached = halfwidth_at_fixed_n(returns, metric="return")
    return {"halfwidth": reached["halfwidth"], "interval": list(reached["interval"]), "n": reached["n"],
            "method": reached["method"]}


def _halfwidth_text(result: Comparison) -> str:
    def one(r: FixedNHalfwidth) -> str:
        return f"+-{r['halfwidth']:.4g}" if np.isfinite(r["halfwidth"]) else f"none yet (n={r['n']})"

    parts = [f"{side.upper()} {one(r)}" + (f" ({task})" if len(result["tasks"]) > 1 else "")
             for side in ("a", "b") for task, r in result["fixed_n_halfwidth"][side].items()]
    return ("half-width of the mean return reached (95% confidence sequence, as --precision return: reads it): "
            + ", ".join(parts))


def _text(result: Comparison, label_a: str, label_b: str) -> str:
    def band(ci: list[float] | None) -> str:
        return f" [{ci[0]:.4g}, {ci[1]:.4g}]" if ci else ""

    unit = "normalised score" if result["score"] == "normalised" else "return"
    p = result["probability_of_improvement"]
    return "\n".join([
        f"A: {label_a}", f"B: {label_b}",
        f"tasks: {', '.join(result['tasks'])} ({result['n_episodes'][0]} and {result['n_episodes'][1]} episodes; "
        f"95% intervals: {result['bootstrap_reps']} bootstrap resamples, seed {result['seed']})",
        f"P(B > A) = {p:.4f}{band(result['probability_of_improvement_ci95'])}",
        f"IQM {unit}: A {result['iqm_a']:.4g}{band(result['iqm_a_ci95'])}, B {result['iqm_b']:.4g}"
        f"{band(result['iqm_b_ci95'])}",
        f"IQM difference B - A = {result['iqm_difference']:.4g}{band(result['iqm_difference_ci95'])}",
        _halfwidth_text(result),
        *([result["note"]] if result.get("note") else []),
    ])


def build_parser() -> Parser:
    """The ``compare`` subcommand's flags."""
    parser = Parser(prog=f"{PROG} compare", description="Compare two evaluations: the probability that B's return "
                    "beats A's, and the IQM difference, with bootstrap intervals.")
    parser.add_argument("a", help="A's eval_info.json (a run's or a one-checkpoint sweep's).")
    parser.add_argument("b", help="B's eval_info.json.")
    parser.add_argument("--checkpoint-a", metavar="NAME", help="A sweep's checkpoint (path, file name or sha256 "
                        "prefix) when it has several.")
    parser.add_argument("--checkpoint-b", metavar="NAME", help="The same for B.")
    parser.add_argument("--score-baselines", metavar="FILE", help="JSON/YAML {task: {random: R, reference: S}}: IQMs "
                        "on normalised scores.")
    parser.add_argument("--bootstrap-reps", type=int, default=DEFAULT_REPS, help="Bootstrap resamples (default: "
                        "%(default)s; 0: no intervals).")
    parser.add_argument("--seed", type=int, default=0, help="The bootstrap's seed (default: %(default)s).")
    parser.add_argument("--json", action="store_true", help="Print the result as JSON.")
    return parser


def main(argv: list[str]) -> int:
    """``compare A B``: prints the comparison (``--json``: as JSON); returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        if args.bootstrap_reps < 0:
            raise ConfigError("--bootstrap-reps must not be negative", expected="0 or more", got=args.bootstrap_reps,
                              fix="pass e.g. --bootstrap-reps 2000")
        label_a, a = read_evaluation(Path(args.a), args.checkpoint_a)
        label_b, b = read_evaluation(Path(args.b), args.checkpoint_b)
        baselines = load_mapping(args.score_baselines) if args.score_baselines else None
        result = compare(a, b, reps=args.bootstrap_reps, seed=args.seed, baselines=baselines)
    except RenderError as exc:
        print(f"{PROG} compare: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    print(json.dumps({"a": label_a, "b": label_b, **result}, indent=2) if args.json else _text(result, label_a,
                                                                                                  label_b))
    return 0
