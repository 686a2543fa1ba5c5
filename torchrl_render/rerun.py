"""Filming the episodes that matter: evaluate every episode without frames, then re-run the chosen ones.

With ``--render-select worst:3`` (anything but ``first:N``) a run makes two passes in one process:

1. the metrics pass: every episode, as fast as the engine goes (K envs, no frames, no writers);
2. the chosen episodes (:func:`torchrl_render.selection.choose`), each re-run on the run's own env by its
   seed (``seed + index``), one after another, with the render backend, into the writers.

The first pass's numbers are the run's metrics. A re-run of episodes that ran K at a time with one policy
call per batch step (gymnasium envs, or torchrl envs in a SerialEnv / ParallelEnv) calls the policy on a
``[K]`` batch of copies of its step and reads the row its episode ran in, so its actions are the same to
the bit (the other rows held other episodes then: a policy whose rows mix would differ, and is caught).
Each re-run's return and length are compared with the first pass's to the bit; where they differ (a
stochastic policy that draws without its episode's seed, an env whose state survives reset) both are kept
and the run says which episodes differ.
``first:N`` alone never comes here: it stays the single pass of a plain run.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from .contracts import EpisodeMetrics, UserEnv
from .engine import Engine
from .engine.records import Episode
from .errors import ConfigError
from .selection import Selector, SelectSummary, choose, differ_note, missing_seeds, reconcile, summary
from .sink import Progress, RunContext, Sink

if TYPE_CHECKING:
    from tensordict import TensorDictBase

    from .backends.base import RenderBackend
    from .config import RenderConfig
    from .data import FrameBundle
    from .writers.group import BackgroundWriters, KeptFrames, WriterGroup

__all__ = ["FilmingRun", "NoWriters", "film_chosen", "refuse_batched_env"]


class FilmingRun(Protocol):
    """What the two passes read of their run (``api.Run``, a layer above), and ``measured``: the first pass's
    sink, which they set (a failure then keeps its episodes)."""

    measured: Sink | None
    notes: list[str]

    @property
    def cfg(self) -> RenderConfig: ...

    @property
    def selectors(self) -> tuple[Selector, ...] | None: ...

    @property
    def groups(self) -> list[WriterGroup]: ...

    @property
    def writers(self) -> BackgroundWriters | KeptFrames: ...

    @property
    def on_episode(self) -> Callable[[EpisodeMetrics], None] | None: ...

    @property
    def needs_frames(self) -> bool: ...

    @property
    def needs_state(self) -> bool: ...

    @property
    def format_frames(self) -> bool: ...


class NoWriters:
    """The first pass's writers: none (its episodes are only measured)."""

    def write(self, bundle: FrameBundle) -> None:
        pass

    def on_trajectory(self, episode: Episode) -> None:
        pass

    def on_episode(self, metrics: EpisodeMetrics) -> None:
        pass


def refuse_batched_env(env: UserEnv) -> None:
    """An env that is K envs already (Isaac Lab) cannot re-run one episode alone."""
    if getattr(env, "_torchrl_render_batched", False):
        raise ConfigError("render_select re-runs chosen episodes one by one, and this env is a batch of envs "
                          "(Isaac Lab)", got="--render-select with --env-backend isaaclab",
                          fix="drop --render-select (or use --render-select first:N)")


def film_chosen(run: FilmingRun, engine: Engine, backend: RenderBackend
                ) -> tuple[list[EpisodeMetrics], list[TensorDictBase | None], SelectSummary]:
    """Both passes; returns the per-episode metrics (the chosen ones reconciled), the trajectories and the
    metadata's ``render_select`` entry. ``run`` is the :class:`~torchrl_render.api.Run`."""
    selectors = run.selectors
    assert selectors is not None  # only a run with a two-pass selection films chosen episodes
    started = time.perf_counter()
    first, rows = _measure(run, engine)
    first_s = time.perf_counter() - started
    chosen = choose(selectors, first.episodes)
    missing = missing_seeds(selectors, first.episodes)
    if missing:  # --eval-n-timesteps: how many episodes run is known only now
        run.notes.append(f"render_select names seed(s) {', '.join(map(str, missing))}, which no episode of the run "
                         f"had ({len(first.episodes)} episodes ran): not filmed")
    if not chosen:
        run.notes.append(f"render_select {' '.join(run.cfg.render_select)} chose no episode (for failed:N/"
                         "succeeded:N: no episode of the run reported that outcome), so nothing was filmed")
        return first.episodes, first.trajectories, summary(selectors, first.episodes, first_s, 0.0)
    started = time.perf_counter()
    reasons = dict(chosen)
    by_index = {e["episode_ix"]: e for e in first.episodes}
    merged: dict[int, EpisodeMetrics] = {}

    def relabel(metrics: EpisodeMetrics) -> EpisodeMetrics:
        ix = metrics["episode_ix"]
        merged[ix] = reconcile(by_index[ix], metrics, reasons[ix])
        return merged[ix].copy()

    for group in run.groups:  # split files: one per chosen episode
        group.trajectories = sorted(reasons)
    _film(run, engine, backend, sorted(reasons), relabel, rows)
    episodes = [merged.get(e["episode_ix"], e) for e in first.episodes]
    run.writers.on_metrics(episodes)
    note = differ_note(episodes)
    if note is not None:
        run.notes.append(note)
    return episodes, first.trajectories, summary(selectors, episodes, first_s, time.perf_counter() - started)


def _measure(run: FilmingRun, engine: Engine) -> tuple[Sink, dict[int, int]]:
    """The first pass: every episode, no frames, no writers (``on_episode`` still hears each one); returns
    its sink and the env slot each episode ran in."""
    context = RunContext(run.cfg, NoWriters(), run.notes, False, False, False, rendered=range(0))
    sink = run.measured = Sink(context, None, [], run.on_episode)  # a failure keeps its episodes (.partial.json)
    rows: dict[int, int] = {}
    with Progress(run.cfg) as bar:
        for item in engine.episodes():
            if isinstance(item, Episode) and item.slot is not None:
                rows[item.index] = item.slot
            if sink.consume(item):
                bar.episode_done(sink.episodes)
    return sink, rows


def _film(run: FilmingRun, engine: Engine, backend: RenderBackend, indices: list[int],
          relabel: Callable[[EpisodeMetrics], EpisodeMetrics], rows: dict[int, int]) -> None:
    """The second pass: the chosen episodes on the run's own env, one by one, rendered into the writers."""
    cfg = dataclasses.replace(run.cfg, num_envs=1, env_batch_mode="serial", render_select=[],
                              max_episodes_rendered=None)
    second = Engine(cfg, engine.env, engine.policy, engine.payload, engine.render_mode, frozenset(indices),
                    keep=engine.keep, reward_fn=engine.reward_fn, notes=run.notes, only=tuple(indices),
                    batch_like=engine.batched_policy, batch_rows=rows)  # the first pass's calls: the same actions
    context = RunContext(run.cfg, run.writers, run.notes, run.needs_frames, run.needs_state, run.format_frames,
                         rendered=frozenset(indices), relabel=relabel)
    sink = Sink(context, backend, [], None)
    try:
        for item in second.episodes():
            sink.consume(item)
        sink.flush()
    finally:
        second.close()
