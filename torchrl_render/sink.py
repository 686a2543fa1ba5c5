"""The consuming end of a run: step records in, metrics, frames and writer calls out.

:class:`Sink` takes what the engine (:mod:`torchrl_render.engine`) yields, in episode
order: it submits the frames of rendered steps to the render backend and hands them,
overlaid and laid out, to the writers; it keeps each finished episode's metrics and
TensorDict and hands the episode to the data writers. :class:`Progress` is the episode bar.
"""

from __future__ import annotations

import sys
from typing import Any, Self

from .config import RenderConfig
from .data import FrameBundle
from .errors import NoFramesError
from .frames import apply_layout, to_uint8_hwc
from .engine.records import Episode
from .metrics import read_success, step_success
from .live.feed import LiveFeed
from .live.viewer import Viewer
from .live.viewer import stopped_note
from .envs.mujoco_state import LiveStates
from .frames import draw_overlay

__all__ = ["Progress", "Sink", "rendered_range"]


class Sink:
    """Consumes the engine's items in episode order: frames of rendered steps, finished episodes.

    A frame is submitted to the backend at its step and finished (overlay, layout,
    writers) at the next one, so a backend that draws in the background draws while
    the env steps; an episode's frames are all finished before the episode itself is
    handed to the writers (``on_trajectory``, then ``on_episode``).
    """

    def __init__(self, run: Any, backend: Any, on_episode: Any = None) -> None:
        self.run, self.cfg, self.backend = run, run.cfg, backend
        self.on_episode = on_episode
        self.episodes: list[dict[str, Any]] = []
        self.trajectories: list[Any] = []
        self.pending: tuple[Any, Any, dict[str, Any]] | None = None
        self.frames: dict[int, int] = {}
        self.running: dict[int, list[Any]] = {}
        self.rendered = rendered_range(self.cfg)
        self._live: Any = None
        self._feed = _live_feed(self.cfg)  # --live
        self._viewer = _viewer(run)  # --viewer

    def consume(self, item: Any) -> bool:
        """Takes a step record or a finished episode; returns True when it was an episode."""
        if isinstance(item, Episode):
            self._episode(item)
            return True
        if item.trajectory in self.rendered:
            metrics = self._running(item)
            self._mujoco_state(item, metrics)
            if self._feed is not None:  # --live
                self._feed.step(item, metrics)
            if self.run.needs_frames:
                self._frame(item, metrics)
            if self._viewer is not None:  # --viewer (frames finished at once, so the window is current)
                self.flush()
                self._viewer.step(item, metrics)
        return False

    def stopped(self) -> bool:
        """Whether the viewer ended the run (escape, window closed); the finished episodes stand."""
        if self._viewer is None or not self._viewer.stopped:
            return False

        self.pending = None  # the unfinished episode's last frame is dropped
        self.run.notes.append(stopped_note(self.cfg, len(self.episodes)))
        return True

    def _episode(self, episode: Episode) -> None:
        self.flush()
        metrics = episode.metrics(num_frames=self.frames.pop(episode.index, 0))
        self.running.pop(episode.index, None)
        self.episodes.append(metrics)
        if self.cfg.trajectories:
            self.trajectories.append(episode.trajectory)
        self.run.writers.on_trajectory(episode)
        self.run.writers.on_episode(metrics)
        if self.on_episode is not None:
            self.on_episode(dict(metrics))
        if self._feed is not None:  # --live
            self._feed.episode(self.episodes)

    def close(self, finished: bool = True) -> Any:
        """Closes the viewer's window and ends the live page's stream, if any.

        After a failed run the page's server stops here. After a finished run the feed is returned,
        still serving: the caller closes it once the artifacts are written (it may stay up
        ``live_keep`` seconds so the last state can be seen).
        """
        if self._viewer is not None:  # --viewer
            self._viewer.close()
        feed, self._feed = self._feed, None
        if feed is None:
            return None
        if not finished:
            feed.close(finished=False)
            return None
        feed.hub.end()
        return feed

    def _running(self, record: Any) -> dict[str, Any]:
        """The rendered episode's numbers so far, for overlays and the replay page."""
        total = self.running.setdefault(record.trajectory, [0.0, None])
        total[0] += record.reward
        if record.step and record.td is not None:  # the reset's report is no step's (the episode ignores it too)
            total[1] = step_success(self.cfg.success_rule, total[1], read_success(record.td))
        metrics = {"step": record.step, "reward": record.reward, "return": total[0]}
        if total[1] is not None:
            metrics["success"] = total[1]
        return metrics

    def _mujoco_state(self, record: Any, metrics: dict[str, Any]) -> None:
        """The MuJoCo state of a rendered step, as a state bundle, for writers that take states."""
        if not self.run.needs_state:
            return
        if self._live is None:
            self._live = LiveStates(self.cfg, True)
        bundle = self._live.step(record, None, metrics["return"], True)
        if bundle is not None:
            self.run.writers.write(bundle)
            self.frames[record.trajectory] = self.frames.get(record.trajectory, 0) + self._live.counts_frames

    def _frame(self, record: Any, metrics: dict[str, Any]) -> None:
        if record.frames is not None:  # rendered in an env worker
            self._finish(record.frames, record, metrics)
            return
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

    def _drawn(self, future: Any) -> dict[str, Any] | None:
        """The submitted frame, once drawn (the only place the rollout waits for the renderer)."""
        return future.result()

    def _finish(self, captured: dict[str, Any] | None, record: Any, metrics: dict[str, Any]) -> None:
        if not captured:
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
        if self._feed is not None:  # --live (other envs: the latest frame, by reference)
            self._feed.frame(next(iter(bundle.frames.values())), record, metrics)
        if self._viewer is not None:  # --viewer (the window kind shows the video's frames)
            self._viewer.frame(next(iter(bundle.frames.values())))


class Progress:
    """A tqdm bar over episodes (running mean return, success rate); a no-op when off."""

    def __init__(self, cfg: RenderConfig) -> None:
        self.cfg = cfg
        self.bar = None

    def __enter__(self) -> Self:
        enabled = self.cfg.progress if self.cfg.progress is not None else sys.stderr.isatty()
        if enabled:
            from tqdm.auto import tqdm
            self.bar = tqdm(total=self.cfg.num_trajs, unit="ep", desc="episodes", file=sys.stderr)  # None: open-ended
        return self

    def episode_done(self, episodes: list[dict[str, Any]]) -> None:
        if self.bar is None:
            return
        mean = sum(e["sum_reward"] for e in episodes) / len(episodes)
        known = [e["success"] for e in episodes if e["success"] is not None]
        postfix = {"return": f"{mean:.2f}"}
        if known:
            postfix["success"] = f"{100 * sum(known) / len(known):.0f}%"
        self.bar.set_postfix(postfix, refresh=False)
        self.bar.update(1)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()


def _live_feed(cfg: RenderConfig) -> Any:
    """The live page's feed when ``--live`` is on (the server starts here)."""
    if getattr(cfg, "live", None) is None:
        return None

    return LiveFeed(cfg)


def _viewer(run: Any) -> Any:
    """The on-screen viewer when ``--viewer`` is on (its window opens at the first step)."""
    if getattr(run.cfg, "viewer", None) is None:
        return None

    return Viewer(run.cfg, run.needs_frames)


def rendered_range(cfg: RenderConfig) -> range:
    """The episodes that get frames: the first ``max_episodes_rendered`` (default: all)."""
    total = cfg.num_trajs if cfg.num_trajs is not None else sys.maxsize
    limit = cfg.max_episodes_rendered
    return range(total if limit is None else min(limit, total))
