"""The consuming end of a run: step records in, metrics, frames and writer calls out.

:class:`Sink` takes the records of :func:`torchrl_render.rollout.rollout` (or of the
K-env dispatcher) in episode order: it keeps each episode's metrics and transitions,
submits frames to the render backend and hands them, overlaid and laid out, to the
writers. :class:`InlineWriters` is the writers' interface without a thread
(``background_encode=False``); :class:`Progress` is the episode bar.
"""

from __future__ import annotations

import sys
from typing import Any, Self

from .config import RenderConfig
from .data import FrameBundle
from .errors import NoFramesError
from .frames import apply_layout, to_uint8_hwc
from .metrics import EpisodeMetrics, read_success
from .writers.base import BackgroundWriters, WriterGroup

__all__ = ["InlineWriters", "Progress", "Sink", "stack_steps"]


class Sink:
    """Consumes step records in episode order: metrics, data writers, frames, trajectories.

    A frame is submitted to the backend at its step and finished (overlay, layout,
    writers) at the next one, so a backend that draws in the background draws while
    the env steps; an episode's frames are all finished before its end is written.
    """

    def __init__(self, run: Any, backend: Any) -> None:
        self.run, self.cfg, self.backend = run, run.cfg, backend
        self.episodes: list[dict[str, Any]] = []
        self.trajectories: list[Any] = []
        self.current: EpisodeMetrics | None = None
        self.steps: list[Any] = []
        self.t0 = 0.0
        self.pending: tuple[Any, Any, dict[str, Any]] | None = None
        limit = self.cfg.max_episodes_rendered
        self.rendered = range(self.cfg.num_trajs if limit is None else min(limit, self.cfg.num_trajs))

    def consume(self, record: Any) -> bool:
        """Takes one record; returns True when it ended an episode."""
        if record.step == 0:
            self.current, self.steps, self.t0 = EpisodeMetrics(record.trajectory, record.seed), [], record.wall
        else:
            self.current.add(record.reward, read_success(record.td))
            self.steps.append(self.run._strip(record.transition))
        self.run.writers.on_step(record)
        self._mujoco_state(record)  # issue 12: simulator state for html / mujoco_qpos_key
        if self.run.needs_frames and record.trajectory in self.rendered:
            self._frame(record)
        if not (record.done or record.step == self.cfg.max_steps):
            return False
        self.flush()
        ep = self.current
        ep.terminated, ep.truncated = record.terminated, record.truncated or not record.done
        ep.wall_s = record.wall - self.t0
        self.episodes.append(ep.to_dict())
        self.trajectories.append(stack_steps(self.steps))
        self.run.writers.on_episode(self.episodes[-1])
        return True

    # -- issue 12: MuJoCo state for the html format, the notebook viewer and mujoco_qpos_key (port as is) ------
    def _mujoco_state(self, record: Any) -> None:
        """Reads the env's MuJoCo state: a state bundle to the writers, ``qpos`` into the transition."""
        if not hasattr(self, "_live"):
            from .replay.live import LiveStates

            self._live = LiveStates(self.cfg, any(getattr(g, "needs_state", False) for g in self.run.groups))
        bundle = self._live.step(record, self.steps[-1] if record.step > 0 and self.steps else None,
                                 self.current.sum_reward, record.trajectory in self.rendered)
        if bundle is not None:
            self.run.writers.write(bundle)
            self.current.num_frames += self._live.counts_frames

    def _frame(self, record: Any) -> None:
        metrics = {"step": record.step, "reward": record.reward, "return": self.current.sum_reward}
        if self.current.success is not None:
            metrics["success"] = self.current.success
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
            if record.step == 0:
                raise NoFramesError(
                    f"the {self.backend.name!r} render backend returned no frame, and format {self.cfg.format!r} "
                    "needs frames", fix=("pass render_mode='rgb_array' to the env (--render-mode rgb_array), ask "
                                         "for pixel observations (--from-pixels), or render MuJoCo cameras "
                                         "(--render-backend mujoco)"))
            return
        frames = {name: to_uint8_hwc(f) for name, f in captured.items()}
        if self.cfg.overlay:
            from .frames import draw_overlay
            frames = {name: draw_overlay(f, metrics) for name, f in frames.items()}
        bundle = FrameBundle(apply_layout(frames, self.cfg.camera_layout), record.step, record.trajectory,
                             record.wall, metrics=metrics)
        self.run.writers.write(bundle)
        self.current.num_frames += 1


class InlineWriters(BackgroundWriters):
    """The same interface, writing on the calling thread (``background_encode=False``)."""

    def __init__(self, groups: list[WriterGroup]) -> None:  # no thread, no queue
        self.groups = groups
        self.error = None

    def _put(self, method: str, arg: Any) -> None:
        for group in self.groups:
            getattr(group, method)(arg)

    def _join(self) -> None:
        pass

    def abort(self) -> None:
        for group in self.groups:
            group.abort()


class Progress:
    """A tqdm bar over episodes (running mean return, success rate); a no-op when off."""

    def __init__(self, cfg: RenderConfig) -> None:
        self.cfg = cfg
        self.bar = None

    def __enter__(self) -> Self:
        enabled = self.cfg.progress if self.cfg.progress is not None else sys.stderr.isatty()
        if enabled:
            from tqdm.auto import tqdm
            self.bar = tqdm(total=self.cfg.num_trajs, unit="ep", desc="episodes", file=sys.stderr)
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


def stack_steps(steps: list[Any]) -> Any:
    """One TensorDict of an episode's transitions (``None`` for an episode without steps)."""
    import torch

    return torch.stack(steps) if steps else None
