"""The consuming end of a run: step records in, metrics, frames and writer calls out.

:class:`Sink` takes what the engine (:mod:`torchrl_render.engine`) yields, in episode
order: it submits the frames of rendered steps to the render backend and hands them,
overlaid and laid out, to the writers; it keeps each finished episode's metrics and
TensorDict and hands the episode to the data writers. Whatever watches the run as it goes (the
``--live`` page, the ``--viewer`` window) is an :class:`Observer`, handed in by the caller: the sink
names none of them. It sees the run through a small :class:`RunContext`, not the run itself.
:class:`Progress` is the episode bar.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, Self, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from .config import RenderConfig
from .contracts import EpisodeMetrics, StepMetrics
from .data import FrameBundle
from .engine.records import Episode, StepRecord
from .envs.mujoco_state import LiveStates
from .errors import NoFramesError
from .frames import apply_layout, draw_overlay, to_uint8_hwc
from .metrics import read_success, step_success
from .metrics.precision import PrecisionRule

if TYPE_CHECKING:
    from tensordict import TensorDictBase
    from tqdm.auto import tqdm

    from .backends.base import DrawnFrames, PendingFrames, RenderBackend

__all__ = ["Lingering", "Observer", "Progress", "RunContext", "RunWriters", "Sink", "rendered_range"]


class RunWriters(Protocol):
    """The run's writers as the sink calls them (``writers.group.BackgroundWriters``, ``InlineWriters`` and
    ``KeptFrames``; a measuring pass's ``rerun.NoWriters``): a frame or state bundle, a finished episode, its
    metrics."""

    def write(self, bundle: FrameBundle) -> None: ...

    def on_trajectory(self, episode: Episode) -> None: ...

    def on_episode(self, metrics: EpisodeMetrics) -> None: ...


@dataclass
class RunContext:
    """What the sink needs of its run: the config, the writers, where warnings go, and what to make."""

    cfg: RenderConfig
    writers: RunWriters
    warnings: list[str] = field(default_factory=list)
    needs_frames: bool = False  # the backend renders the rendered episodes' steps
    needs_state: bool = False  # writers take MuJoCo state bundles
    format_frames: bool = True  # the format itself needs frames (not only RenderResult.frames)
    #: the episodes that get frames (None: rendered_range(cfg)); a set for chosen episodes
    rendered: range | frozenset[int] | None = None
    #: metrics -> the metrics handed to the writers (a re-run: the first pass's, labelled)
    relabel: Callable[[EpisodeMetrics], EpisodeMetrics] | None = None


class Lingering(Protocol):
    """What an observer leaves running after the run (the live page, still serving): the run stops it once
    the artifacts are written (``finished``) or when the run failed after its rollout."""

    def stop(self, finished: bool = True) -> None: ...


@runtime_checkable
class Observer(Protocol):
    """Watches a run as it goes; the sink calls each observer the same way.

    ``current_frames``: whether :meth:`on_step` needs that step's frame finished first (a window that
    shows it). :meth:`close` returns what must outlive the run (the live page while the artifacts are
    written) or None.
    """

    current_frames: bool

    def on_step(self, record: StepRecord, metrics: StepMetrics) -> None: ...

    def on_frame(self, frame: NDArray[np.uint8], record: StepRecord, metrics: StepMetrics) -> None: ...

    def on_episode(self, episodes: list[EpisodeMetrics]) -> None: ...

    def stopped_because(self, finished: int) -> str | None: ...

    def close(self, finished: bool = True) -> Lingering | None: ...


@dataclass
class _SoFar:
    """A rendered episode's numbers so far: its return, and whether it has succeeded (None: never reported)."""

    ret: float = 0.0
    success: bool | None = None


class Sink:
    """Consumes the engine's items in episode order: frames of rendered steps, finished episodes.

    A frame is submitted to the backend at its step and finished (overlay, layout,
    writers) at the next one, so a backend that draws in the background draws while
    the env steps; an episode's frames are all finished before the episode itself is
    handed to the writers (``on_trajectory``, then ``on_episode``).
    """

    def __init__(self, run: RunContext, backend: RenderBackend | None, observers: Sequence[Observer] = (),
                 on_episode: Callable[[EpisodeMetrics], None] | None = None) -> None:
        self.run, self.cfg, self.backend = run, run.cfg, backend
        self.on_episode = on_episode
        self.observers = list(observers)
        self._late = [o for o in self.observers if o.current_frames]  # called once the step's frame is finished
        self.episodes: list[EpisodeMetrics] = []
        self.trajectories: list[TensorDictBase | None] = []
        self.pending: tuple[PendingFrames, StepRecord, StepMetrics] | None = None
        self.frames: dict[int, int] = {}
        self.running: dict[int, _SoFar] = {}
        self.rendered = run.rendered if run.rendered is not None else rendered_range(self.cfg)
        self._live: LiveStates | None = None

    def consume(self, item: StepRecord | Episode) -> bool:
        """Takes a step record or a finished episode; returns True when it was an episode."""
        if isinstance(item, Episode):
            self._episode(item)
            return True
        if item.trajectory in self.rendered:
            metrics = self._running(item)
            self._mujoco_state(item, metrics)
            for observer in self.observers:
                if not observer.current_frames:
                    observer.on_step(item, metrics)
            if self.run.needs_frames:
                self._frame(item, metrics)
            if self._late:
                self.flush()
                for observer in self._late:
                    observer.on_step(item, metrics)
        return False

    def stopped(self) -> bool:
        """Whether an observer ended the run (the viewer: escape, window closed); the finished episodes stand."""
        notes = [n for n in (o.stopped_because(len(self.episodes)) for o in self.observers) if n is not None]
        if not notes:
            return False
        self.pending = None  # the unfinished episode's last frame is dropped
        self.run.warnings.extend(notes)
        return True

    def _episode(self, episode: Episode) -> None:
        self.flush()
        metrics = episode.metrics(num_frames=self.frames.pop(episode.index, 0))
        if self.run.relabel is not None:
            metrics = self.run.relabel(metrics)
        self.running.pop(episode.index, None)
        self.episodes.append(metrics)
        if self.cfg.trajectories:
            self.trajectories.append(episode.trajectory)
        self.run.writers.on_trajectory(episode)
        self.run.writers.on_episode(metrics)
        if self.on_episode is not None:
            self.on_episode(metrics.copy())
        for observer in self.observers:
            observer.on_episode(self.episodes)

    def close(self, finished: bool = True) -> list[Lingering]:
        """Tells each observer the run is over; returns what must outlive it (after a finished run, the
        live page, which the caller stops once the artifacts are written)."""
        observers, self.observers, self._late = self.observers, [], []
        kept = [observer.close(finished) for observer in observers]
        return [k for k in kept if k is not None]

    def _running(self, record: StepRecord) -> StepMetrics:
        """The rendered episode's numbers so far, for overlays and the replay page."""
        total = self.running.get(record.trajectory)
        if total is None:  # the episode's first rendered step (not setdefault: no _SoFar built at every step)
            total = self.running[record.trajectory] = _SoFar()
        total.ret += record.reward
        if record.step and record.td is not None:  # the reset's report is no step's (the episode ignores it too)
            total.success = step_success(self.cfg.success_rule, total.success, read_success(record.td))
        metrics: StepMetrics = {"step": record.step, "reward": record.reward, "return": total.ret}
        if total.success is not None:
            metrics["success"] = total.success
        return metrics

    def _mujoco_state(self, record: StepRecord, metrics: StepMetrics) -> None:
        """The MuJoCo state of a rendered step, as a state bundle, for writers that take states."""
        if not self.run.needs_state:
            return
        if self._live is None:
            self._live = LiveStates(self.cfg, True)
        bundle = self._live.step(record, None, metrics["return"], True)
        if bundle is not None:
            self.run.writers.write(bundle)
            self.frames[record.trajectory] = self.frames.get(record.trajectory, 0) + self._live.counts_frames

    def _frame(self, record: StepRecord, metrics: StepMetrics) -> None:
        if record.frames is not None:  # rendered in an env worker
            self._finish(record.frames, record, metrics)
            return
        assert self.backend is not None  # a run that needs frames built one (only a measuring pass has none)
        if record.step == 0:
            self.backend.begin_episode()
        submitted = (self.backend.submit(record.td), record, metrics)
        self.flush()
        self.pending = submitted

    def flush(self) -> None:
        """Finishes the submitted frame, if any (waits for it to be drawn)."""
        pending, self.pending = self.pending, None
        if pending is not None:
            future, record, metrics = pending
            self._finish(self._drawn(future), record, metrics)

    def _drawn(self, future: PendingFrames) -> DrawnFrames | None:
        """The submitted frame, once drawn (the only place the rollout waits for the renderer)."""
        return future.result()

    def _finish(self, captured: DrawnFrames | None, record: StepRecord, metrics: StepMetrics) -> None:
        if not captured:
            assert self.backend is not None  # frames were asked of it (worker frames: the run built one too)
            if record.step == 0 and getattr(self.run, "format_frames", True):  # not when only result.frames asked
                raise NoFramesError(
                    f"the {self.backend.name!r} render backend returned no frame, and format {self.cfg.format!r} "
                    "needs frames", fix=("pass render_mode='rgb_array' to the env (--render-mode rgb_array), ask "
                                         "for pixel observations (--from-pixels), or render MuJoCo cameras "
                                         "(--render-backend mujoco)"))
            return
        frames = {name: to_uint8_hwc(f) for name, f in captured.items()}
        if self.cfg.overlay:
            frames = {name: draw_overlay(f, metrics) for name, f in frames.items()}
        bundle = FrameBundle(apply_layout(frames, self.cfg.camera_layout), record.step, record.trajectory,
                             record.wall, metrics=metrics)
        self.run.writers.write(bundle)
        self.frames[record.trajectory] = self.frames.get(record.trajectory, 0) + 1
        for observer in self.observers:  # the first camera's frame, by reference
            observer.on_frame(next(iter(bundle.frames.values())), record, metrics)


class Progress:
    """A tqdm bar over episodes (running mean return, success rate; with ``--precision``, the half-width
    reached against the one asked, over the cap); a no-op when off."""

    def __init__(self, cfg: RenderConfig) -> None:
        self.cfg = cfg
        self.bar: tqdm | None = None
        self.rule: PrecisionRule | None = None

    def __enter__(self) -> Self:
        enabled = self.cfg.progress if self.cfg.progress is not None else sys.stderr.isatty()
        if enabled:
            from tqdm.auto import tqdm
            self.bar = tqdm(total=self.cfg.num_trajs, unit="ep", desc="episodes", file=sys.stderr)  # None: open-ended
            self.rule = PrecisionRule.from_config(self.cfg)
        return self

    def episode_done(self, episodes: list[EpisodeMetrics]) -> None:
        if self.bar is None:
            return
        mean = sum(e["sum_reward"] for e in episodes) / len(episodes)
        known = [e["success"] for e in episodes if e["success"] is not None]
        postfix = {"return": f"{mean:.2f}"}
        if known:
            postfix["success"] = f"{100 * sum(known) / len(known):.0f}%"
        if self.rule is not None:  # the episodes arrive in seed order: the plan's own sequence, step by step
            last = episodes[-1]
            self.rule.add(last["episode_ix"], last["sum_reward"], last["success"])
            postfix["halfwidth"] = f"{self.rule.halfwidth:.3g}/{self.rule.target:g}"
        self.bar.set_postfix(postfix, refresh=False)
        self.bar.update(1)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()


def rendered_range(cfg: RenderConfig) -> range:
    """The episodes that get frames: the first ``max_episodes_rendered`` (default: all)."""
    total = cfg.num_trajs if cfg.num_trajs is not None else sys.maxsize
    limit = cfg.max_episodes_rendered
    return range(total if limit is None else min(limit, total))
