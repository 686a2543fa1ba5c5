"""Which episodes are filmed: ``--render-select`` selectors, parsed once and applied to a run's metrics.

A selector is ``KIND:ARG``: ``first:N``, ``worst:N``, ``best:N`` (by return), ``failed:N``,
``succeeded:N`` (by the run's success rule) or ``seeds:3,17,42`` (episode seeds). ``first`` alone is
known before the run (today's ``--max-episodes-rendered``); the others need the run's numbers, so
the run evaluates every episode first without frames, then films the chosen ones again by seed.
Ties are broken by episode index; an episode chosen by several selectors gets every reason. An episode
whose return is NaN or infinite (a broken reward) comes first in ``worst:N``, saying so, and never in
``best:N``.

Example:
    >>> sel = parse_selectors(["worst:2", "seeds:4"])
    >>> episodes = [{"episode_ix": i, "seed": i, "sum_reward": r, "success": None}
    ...             for i, r in enumerate([3.0, 1.0, 1.0, 5.0, 0.5])]
    >>> choose(sel, episodes)
    [(1, 'worst 2 of 2'), (4, 'worst 1 of 2, seed 4')]
    >>> choose(parse_selectors(["worst:1"]), episodes + [{"episode_ix": 5, "seed": 5, "sum_reward": float("nan")}])
    [(5, 'worst 1 of 1 (its return is not finite: NaN or infinite)')]
    >>> only_first(parse_selectors(["first:3"]))
    3
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import NotRequired, Protocol, TypedDict

from .contracts import EpisodeMetrics, RerunNumbers
from .errors import ConfigError

__all__ = ["KINDS", "ChosenEntry", "SelectSummary", "SelectionConfig", "Selector", "check_selection", "choose",
           "differ_note", "missing_seeds", "needs_two_passes", "only_first", "parse_selectors", "reconcile",
           "same_bits", "summary"]

#: The selector kinds, in the order the help lists them.
KINDS = ("first", "worst", "best", "failed", "succeeded", "seeds")

_EXAMPLE = "--render-select worst:3 (or first:N, best:N, failed:N, succeeded:N, seeds:3,17,42)"


@dataclass(frozen=True)
class Selector:
    """One parsed selector: its kind and its count (``seeds``: the seeds, in the order given)."""

    kind: str
    count: int = 0
    seeds: tuple[int, ...] = ()

    def __str__(self) -> str:
        return f"seeds:{','.join(map(str, self.seeds))}" if self.kind == "seeds" else f"{self.kind}:{self.count}"


class ChosenEntry(TypedDict):
    """A filmed episode in the metadata's ``render_select`` entry: why it was chosen, and whether (else how) its
    re-run differed from the first pass."""

    episode_ix: int
    seed: int | None
    reason: str
    num_frames: int
    reproduced: bool
    sum_reward: float
    rerun: NotRequired[RerunNumbers]


class SelectSummary(TypedDict):
    """The metadata's ``render_select`` entry of a run that filmed chosen episodes (:func:`summary`)."""

    selectors: list[str]
    passes: int
    episodes: list[ChosenEntry]
    differ: list[int]
    shows: str
    first_pass_s: float
    rerun_s: float


class SelectionConfig(Protocol):
    """What :func:`check_selection` reads and normalises of a ``RenderConfig`` (config sits above this module,
    and calls it)."""

    render_select: list[str]
    max_episodes_rendered: int | None
    format: str | None
    seed: int | None
    seed_mode: str
    live: int | None
    viewer: str | None
    result_frames: bool
    num_trajs: int | None


def parse_selectors(values: object) -> tuple[Selector, ...]:
    """Parses ``--render-select`` values (strings, or already parsed :class:`Selector` s)."""
    if values is None:
        return ()
    if isinstance(values, (str, Selector)):
        values = [values]
    if not isinstance(values, (list, tuple)):
        raise ConfigError("render_select must be selectors", expected=_EXAMPLE, got=repr(values),
                          fix="pass a list of strings such as ['worst:3', 'best:1']")
    return tuple(v if isinstance(v, Selector) else _parse_one(v) for v in values)


def _parse_one(text: object) -> Selector:
    kind, sep, arg = str(text).strip().partition(":")
    kind = kind.strip().lower()
    if kind not in KINDS or not sep:
        raise ConfigError(f"render_select {text!r} is not a selector", expected=f"KIND:ARG with KIND one of "
                          f"{', '.join(KINDS)}", got=repr(text), fix=f"pass e.g. {_EXAMPLE}")
    parts = [p.strip() for p in arg.split(",") if p.strip()]
    numbers = [_integer(p, text) for p in parts]
    if kind == "seeds":
        if not numbers:
            raise ConfigError(f"render_select {text!r} names no seed", expected="seeds:S1,S2,...", got=repr(text),
                              fix="pass e.g. --render-select seeds:3,17,42")
        return Selector("seeds", seeds=tuple(dict.fromkeys(numbers)))
    if len(numbers) != 1 or numbers[0] < 1:
        raise ConfigError(f"render_select {text!r} needs one count of at least 1", expected=f"{kind}:N with N >= 1",
                          got=repr(text), fix=f"pass e.g. --render-select {kind}:3")
    return Selector(kind, count=numbers[0])


def _integer(part: str, text: object) -> int:
    try:
        return int(part)
    except ValueError:
        raise ConfigError(f"render_select {text!r} holds {part!r}, which is not an integer",
                          expected="integers after the colon", got=repr(text), fix=f"pass e.g. {_EXAMPLE}") from None


def only_first(selectors: tuple[Selector, ...]) -> int | None:
    """The N of a selection made of ``first:N`` alone (several: the largest), else None."""
    if not selectors or any(s.kind != "first" for s in selectors):
        return None
    return max(s.count for s in selectors)


def needs_two_passes(selectors: tuple[Selector, ...]) -> bool:
    """Whether the selection needs the run's numbers (anything but ``first:N``)."""
    return bool(selectors) and only_first(selectors) is None


def choose(selectors: tuple[Selector, ...], episodes: list[EpisodeMetrics]) -> list[tuple[int, str]]:
    """``(episode_ix, why)`` of the chosen episodes, in episode order (``why``: e.g. ``"worst 1 of 3"``)."""
    reasons: dict[int, list[str]] = {}
    for selector in selectors:
        picked = _pick(selector, episodes)
        for rank, index in enumerate(picked, 1):
            why = f"seed {episodes[index]['seed']}" if selector.kind == "seeds" else \
                f"{selector.kind} {rank} of {len(picked)}"
            if selector.kind == "worst" and not _finite(episodes[index].get("sum_reward")):
                why += " (its return is not finite: NaN or infinite)"
            reasons.setdefault(episodes[index]["episode_ix"], []).append(why)
    return [(ix, ", ".join(reasons[ix])) for ix in sorted(reasons)]


def _pick(selector: Selector, episodes: list[EpisodeMetrics]) -> list[int]:
    """Positions in ``episodes`` that ``selector`` chooses, best match first."""
    n = selector.count
    if selector.kind == "first":
        return list(range(min(n, len(episodes))))
    if selector.kind == "seeds":
        where = {e["seed"]: i for i, e in enumerate(episodes)}
        return [where[s] for s in selector.seeds if s in where]
    if selector.kind in ("failed", "succeeded"):
        wanted = selector.kind == "succeeded"
        return [i for i, e in enumerate(episodes) if e.get("success") is wanted][:n]
    finite = [i for i, e in enumerate(episodes) if _finite(e.get("sum_reward"))]
    sign = 1.0 if selector.kind == "worst" else -1.0
    ranked = sorted(finite, key=lambda i: (sign * episodes[i]["sum_reward"], episodes[i]["episode_ix"]))
    if selector.kind == "worst":  # a NaN or infinite return is the first thing to look at: the worst of all
        ranked = [i for i, e in enumerate(episodes) if not _finite(e.get("sum_reward"))] + ranked
    return ranked[:n]


def _finite(value: object) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def missing_seeds(selectors: tuple[Selector, ...], episodes: list[EpisodeMetrics]) -> list[int]:
    """Seeds asked for with ``seeds:`` that no episode of the run had."""
    had = {e["seed"] for e in episodes}
    return [s for sel in selectors if sel.kind == "seeds" for s in sel.seeds if s not in had]


def check_selection(cfg: SelectionConfig, films: bool) -> None:
    """The config rules of ``render_select`` (``films``: the run writes frames or states). Normalises the field
    to its canonical strings; ``first:N`` alone becomes ``max_episodes_rendered`` (its alias)."""
    selectors = parse_selectors(cfg.render_select)
    cfg.render_select = [str(s) for s in selectors]
    first = only_first(selectors)
    if first is not None:
        if cfg.max_episodes_rendered not in (None, first):
            raise ConfigError("render_select first:N and max_episodes_rendered disagree", expected="one of the two "
                              "(--max-episodes-rendered N is first:N)", got=f"first:{first} and "
                              f"max_episodes_rendered={cfg.max_episodes_rendered}", fix="drop one of them")
        cfg.max_episodes_rendered = first
        return
    if not selectors:
        return
    why = _why_not_two_passes(cfg, films)
    if why is not None:
        raise ConfigError(f"render_select {' '.join(cfg.render_select)} films episodes chosen from the whole run's "
                          f"numbers, which {why[0]}", got=why[1], fix=why[2])
    _check_seeds(cfg, selectors)


def _why_not_two_passes(cfg: SelectionConfig, films: bool) -> tuple[str, str, str] | None:
    """What, if anything, keeps this run from evaluating first and filming chosen episodes after."""
    if not films:
        return ("needs a format that films", f"format={cfg.format!r}",
                "write an mp4, gif, frames, html or ipynb (or add --save-frames), or drop --render-select")
    if cfg.seed is None:
        return ("re-runs each chosen episode by its seed", "seed=None", "pass --seed (e.g. --seed 0)")
    if cfg.seed_mode == "torchrl":
        return ("re-runs each chosen episode by its own seed, and seed_mode='torchrl' seeds the env once",
                "--seed-mode torchrl", "use --seed-mode per-episode, or --render-select first:N")
    if cfg.live is not None or cfg.viewer is not None:
        return ("are known only once every episode has run, so there is nothing to watch as the run goes",
                "--live" if cfg.live is not None else "--viewer",
                "drop --live/--viewer, or use --render-select first:N (watched as they run)")
    if cfg.result_frames:
        return ("keeps RenderResult.frames by episode position", "result_frames=True",
                "drop result_frames, or use --render-select first:N")
    return None


def _check_seeds(cfg: SelectionConfig, selectors: tuple[Selector, ...]) -> None:
    """``seeds:`` names seeds of this run's episodes (``seed .. seed + num_trajs - 1``), when that is known."""
    if cfg.num_trajs is None:
        return
    assert cfg.seed is not None  # _why_not_two_passes refused a selection without a seed
    low, high = cfg.seed, cfg.seed + cfg.num_trajs - 1
    outside = [s for sel in selectors if sel.kind == "seeds" for s in sel.seeds if not low <= s <= high]
    if outside:
        raise ConfigError(f"render_select names seed{'s' if len(outside) > 1 else ''} "
                          f"{', '.join(map(str, outside))}, which no episode of this run has",
                          expected=f"seeds {low} to {high} (episode i is seeded seed+i)",
                          got=", ".join(map(str, outside)),
                          fix="pass seeds of this run, or raise --num-trajs / change --seed")


def same_bits(a: float | None, b: float | None) -> bool:
    """Whether two returns are the same float to the bit (NaN equals NaN; None equals None)."""
    if a is None or b is None:
        return a is b
    return struct.pack("<d", float(a)) == struct.pack("<d", float(b))


def reconcile(first: EpisodeMetrics, rerun: EpisodeMetrics, reason: str) -> EpisodeMetrics:
    """A chosen episode's metrics: the first pass's numbers (the truth), the re-run's frame count and the
    reason it was chosen; where the re-run's return or length differ, its numbers under ``rerun``."""
    merged: EpisodeMetrics = {**first, "num_frames": rerun["num_frames"], "render_reason": reason}
    same = same_bits(first["sum_reward"], rerun["sum_reward"]) and first["length"] == rerun["length"]
    merged["reproduced"] = same
    if not same:
        merged["rerun"] = {"sum_reward": rerun["sum_reward"], "length": rerun["length"],
                           "success": rerun.get("success")}
    return merged


def summary(selectors: tuple[Selector, ...], episodes: list[EpisodeMetrics], first_s: float,
            rerun_s: float) -> SelectSummary:
    """The metadata's ``render_select`` entry of a run that filmed chosen episodes (``episodes``: the run's
    per-episode list, the chosen ones reconciled)."""
    chosen = [e for e in episodes if "render_reason" in e]
    differ = [e["episode_ix"] for e in chosen if not e["reproduced"]]
    return {"selectors": [str(s) for s in selectors], "passes": 2, "episodes": [_chosen_entry(e) for e in chosen],
            "differ": differ, "shows": "re-run" if differ else "re-run, identical to the first pass",
            "first_pass_s": first_s, "rerun_s": rerun_s}


def _chosen_entry(episode: EpisodeMetrics) -> ChosenEntry:
    """A filmed episode's entry in :func:`summary` (its re-run's numbers last, where they differed)."""
    entry: ChosenEntry = {"episode_ix": episode["episode_ix"], "seed": episode["seed"],
                          "reason": episode["render_reason"], "num_frames": episode["num_frames"],
                          "reproduced": episode["reproduced"], "sum_reward": episode["sum_reward"]}
    if "rerun" in episode:
        entry["rerun"] = episode["rerun"]
    return entry


def differ_note(episodes: list[EpisodeMetrics]) -> str | None:
    """The run's warning when re-runs did not reproduce the first pass (None: all did)."""
    differ = [e for e in episodes if "render_reason" in e and not e["reproduced"]]
    if not differ:
        return None
    shown = "; ".join(f"episode {e['episode_ix']} (seed {e['seed']}): return {e['sum_reward']!r} then "
                      f"{e['rerun']['sum_reward']!r}, length {e['length']} then {e['rerun']['length']}"
                      for e in differ[:5])
    more = f" and {len(differ) - 5} more" if len(differ) > 5 else ""
    return (f"the filmed re-run of {len(differ)} chosen episode(s) did not reproduce the first pass: {shown}{more}. "
            "The metrics are the first pass's; the video shows the re-run (both numbers are in the metadata). "
            "A stochastic policy that draws without its episode's seed, an env whose state survives reset, or "
            "torchrl envs batched with --num-envs > 1 and --policy-batch batched do this (--policy-batch per-env "
            "there)")
