"""Fanning bundles out to writers: one writer per file, on this thread or a background one.

:class:`WriterGroup` routes each bundle to one writer per (trajectory, if split) x (camera, if
separate) and knows every path before the run; :class:`BackgroundWriters` runs groups on a
background thread behind a bounded queue, :class:`InlineWriters` on the calling thread
(``background_encode=False``); :class:`KeptFrames` also keeps the frames for ``RenderResult.frames``.
"""

from __future__ import annotations

import dataclasses
import errno
import queue
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from ..contracts import EpisodeMetrics, UserEnv
from ..data import Artifact, FrameBundle
from ..errors import ConfigError, WriterError
from ..registry import WRITERS, Registry
from .base import Writer, remove, writer_class

if TYPE_CHECKING:
    from ..config import RenderConfig
    from ..engine.records import Episode


__all__ = [
    "MAX_SPLIT_FILES",
    "BackgroundWriters",
    "InlineWriters",
    "KeptFrames",
    "WriterGroup",
    "too_many_split_files",
]

#: The argument of one of a group's calls (write, on_trajectory, on_episode, on_metrics)...
_Arg: TypeAlias = "FrameBundle | Episode | EpisodeMetrics | list[EpisodeMetrics]"
#: ...and what the background thread hands to each group: the method's name and that argument.
_Call: TypeAlias = tuple[str, _Arg]


@contextmanager
def _os_errors(writer: Writer) -> Iterator[None]:
    """Turns an operating-system error (disk full, permissions...) into a WriterError naming the file."""
    try:
        yield
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise WriterError(f"writing {str(writer.path)!r} failed: {reason}", got=f"{type(exc).__name__}: {exc}",
                          fix=("free disk space" if exc.errno == errno.ENOSPC else
                               "check that the folder is writable and has room")) from exc


#: --split-trajectories writes one file per episode (and camera); every path is checked before the run.
MAX_SPLIT_FILES = 100_000


def too_many_split_files(count: int) -> ConfigError:
    """The error for a split output of more files than :data:`MAX_SPLIT_FILES`."""
    return ConfigError(
        f"split_trajectories would write {count:,} files, one per episode (and camera)",
        expected=f"at most {MAX_SPLIT_FILES:,} files", got=f"{count:,}",
        fix="pass --max-episodes-rendered N to write the first N episodes' files (frame formats), fewer "
            "--num-trajs, or drop --split-trajectories to write one file")


def _rendered(cfg: RenderConfig, writers: Registry) -> int:
    """How many episodes get a file of their own: all, or the first ``max_episodes_rendered`` for frame formats."""
    limit = getattr(cfg, "max_episodes_rendered", None)
    total = cfg.num_trajs if cfg.num_trajs is not None else (limit or 0)  # eval_n_timesteps: not known ahead
    if limit is None or not writers.entry(cfg.format_name).needs_frames:
        return total
    return min(total, limit)


class WriterGroup:
    """Routes bundles to one writer per (trajectory if split) x (camera if separate).

    The paths are known before the run (:meth:`planned_paths`), so an existing
    output is refused before any rollout.
    """

    def __init__(self, cfg: RenderConfig, out: Path, trajectories: Sequence[int] | None = None) -> None:
        self.cfg = cfg
        self.out = Path(out)
        self.cls = writer_class(cfg.format_name)
        separate = cfg.camera_layout == "separate"
        self.streams = separate and self.cls.stream_per_file  # videos: one per (trajectory, camera)
        self.split = bool(cfg.split_trajectories) or self.streams
        self.cameras = list(cfg.camera) if self.streams or (separate and len(cfg.camera) > 1) else [None]
        # a range, never a list: --num-trajs 10**12 costs nothing before the first step
        self.trajectories = trajectories if trajectories is not None else range(_rendered(cfg, WRITERS))
        if self.split and len(self.trajectories) * len(self.cameras) > MAX_SPLIT_FILES:
            raise too_many_split_files(len(self.trajectories) * len(self.cameras))
        self.needs_state = bool(self.cls.wants_state(cfg, WRITERS.entry(cfg.format_name).needs_state))
        self.takes_frames = WRITERS.entry(cfg.format_name).needs_frames or not self.needs_state  # html: states only
        self._writers: dict[tuple[int | None, str | None], Writer] = {}
        self.env: UserEnv = None  # the run's env, handed to each writer as it opens (bind_env)

    def path_for(self, traj: int | None, camera: str | None) -> Path:
        """``run.mp4`` -> ``run_traj3.mp4`` (split), ``run_front.mp4`` (cameras), ``run_traj_003_front.mp4``
        (a video per stream: torchrl.render's names for camera_layout="separate")."""
        stem = self.out.stem if self.out.suffix else self.out.name
        if self.streams:
            return self.out.with_name(f"{stem}_traj_{traj:03d}_{camera}{self.out.suffix}")
        parts = [stem]
        if traj is not None:
            parts.append(f"traj{traj}")
        if camera is not None:
            parts.append(camera)
        return self.out.with_name("_".join(parts) + self.out.suffix)

    def planned_paths(self) -> list[Path]:
        """Every path this group will write."""
        trajs = self.trajectories if self.split else [None]
        return [self.path_for(t, c) for t in trajs for c in self.cameras]

    def open_planned(self) -> None:
        """Opens every planned writer now (a writer that gets nothing, as a ``live`` notebook, still writes)."""
        for traj in self.trajectories if self.split else [0]:
            for camera in self.cameras:
                self._writer(traj, camera)

    def _writer(self, traj: int, camera: str | None) -> Writer:
        key = (traj if self.split else None, camera)
        if key not in self._writers:
            writer = self._writers[key] = self.cls.from_config(self.path_for(*key), self.cfg)
            if self.env is not None:
                writer.bind_env(self.env)
        return self._writers[key]

    def bind_env(self, env: UserEnv) -> None:
        """Hands the run's env to the writers open now and to every one opened later."""
        self.env = env
        for writer in self._writers.values():
            writer.bind_env(env)

    def write(self, bundle: FrameBundle) -> None:
        """Sends each frame of ``bundle`` to its writer (a simulator state to the formats that take one)."""
        if bundle.state is not None:
            if self.needs_state:
                writer = self._writer(bundle.trajectory_index, self.cameras[0])
                with _os_errors(writer):
                    writer.write(bundle)
            return
        for camera, frame in (bundle.frames if self.takes_frames else {}).items():
            target = camera if self.cameras != [None] else None
            single = FrameBundle({camera: frame}, bundle.step, bundle.trajectory_index, bundle.timestamp,
                                 bundle.metadata, bundle.metrics)
            writer = self._writer(bundle.trajectory_index, target)
            with _os_errors(writer):
                writer.write(single)

    def _skips(self, traj: int) -> bool:
        """A split file for an episode that is not rendered is never opened (it would get no frame)."""
        return self.split and traj not in self.trajectories

    def on_trajectory(self, episode: Episode) -> None:
        if self._skips(episode.index):
            return
        for camera in self.cameras:
            writer = self._writer(episode.index, camera)
            with _os_errors(writer):
                writer.on_trajectory(episode)

    def on_episode(self, metrics: EpisodeMetrics) -> None:
        if self._skips(metrics["episode_ix"]):
            return
        for camera in self.cameras:
            writer = self._writer(metrics["episode_ix"], camera)
            with _os_errors(writer):
                writer.on_episode(metrics)

    def on_metrics(self, per_episode: list[EpisodeMetrics]) -> None:
        for writer in self._writers.values():
            with _os_errors(writer):
                writer.on_metrics(per_episode)

    def writers(self) -> list[Writer]:
        return list(self._writers.values())

    def close(self) -> list[Artifact]:
        """Closes every writer (in path order); on any failure aborts the rest."""
        artifacts = []
        try:
            for key in sorted(self._writers, key=lambda k: str(self.path_for(*k))):
                with _os_errors(self._writers[key]):
                    artifacts.append(self._writers[key].close())
        except BaseException:
            self.abort()
            for artifact in artifacts:  # all of the group or none of it: no split file without its siblings
                remove(artifact.path)
            raise
        return artifacts

    def abort(self) -> None:
        """Aborts every writer that has not finished."""
        for writer in self._writers.values():
            writer.abort()


class BackgroundWriters:
    """Runs writer groups on one background thread, fed by a bounded queue.

    Stepping and rendering go on while the previous frames are encoded; when the
    encoder falls behind, ``put`` blocks (back-pressure, never unbounded buffering).
    A writer error stops the run at the next ``write``/``on_trajectory`` with that error.
    """

    _STOP = object()

    def __init__(self, groups: list[WriterGroup], maxsize: int = 8) -> None:
        self.groups = groups
        self.queue: queue.Queue[_Call | object] = queue.Queue(maxsize=maxsize)  # a call, or _STOP
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._work, name="torchrl_render-writers", daemon=True)
        self.thread.start()

    def _work(self) -> None:
        while True:
            item = self.queue.get()
            if item is self._STOP:
                return
            if self.error is not None:
                continue  # drain without working after a failure
            assert isinstance(item, tuple)  # every item but _STOP is a call (_put)
            method, arg = item
            try:
                for group in self.groups:
                    getattr(group, method)(arg)
            except BaseException as exc:  # handed to the producer thread, which raises it
                self.error = exc

    def _put(self, method: str, arg: _Arg) -> None:
        if self.error is not None:
            raise self.error
        self.queue.put((method, arg))

    def write(self, bundle: FrameBundle) -> None:
        self._put("write", bundle)

    def on_trajectory(self, episode: Episode) -> None:
        self._put("on_trajectory", episode)

    def on_episode(self, metrics: EpisodeMetrics) -> None:
        self._put("on_episode", metrics)

    def on_metrics(self, per_episode: list[EpisodeMetrics]) -> None:
        self._put("on_metrics", per_episode)

    def _join(self) -> None:
        if self.thread.is_alive():
            self.queue.put(self._STOP)
            self.thread.join()

    def close(self) -> list[Artifact]:
        """Waits for the queue to drain, then closes every group (aborting all on any error)."""
        self._join()
        if self.error is not None:
            self.abort()
            raise self.error
        artifacts: list[Artifact] = []
        try:
            for group in self.groups:
                artifacts.extend(group.close())
        except BaseException:
            self.abort()
            raise
        return artifacts

    def abort(self) -> None:
        """Stops the thread (dropping what is queued) and aborts every group."""
        if self.error is None:
            self.error = RuntimeError("aborted")
        self._join()
        for group in self.groups:
            group.abort()


class InlineWriters(BackgroundWriters):
    """The same interface, writing on the calling thread (``background_encode=False``)."""

    def __init__(self, groups: list[WriterGroup]) -> None:  # no thread, no queue
        self.groups = groups
        self.error = None

    def _put(self, method: str, arg: _Arg) -> None:
        for group in self.groups:
            getattr(group, method)(arg)

    def _join(self) -> None:
        pass

    def abort(self) -> None:
        for group in self.groups:
            group.abort()


class KeptFrames:
    """The writers, also keeping every frame bundle, per trajectory, for ``RenderResult.frames``.

    Only with ``result_frames=True``: torchrl.render code that reads ``result.frames`` gets them, and
    memory grows with the run (the writers still stream; state bundles are not kept).
    """

    def __init__(self, writers: BackgroundWriters) -> None:
        self.writers = writers
        self.kept: list[list[FrameBundle]] = []

    def write(self, bundle: FrameBundle) -> None:
        if bundle.frames:
            while len(self.kept) <= bundle.trajectory_index:
                self.kept.append([])
            frames = {name: frame.copy() for name, frame in bundle.frames.items()}  # backends may reuse buffers
            self.kept[bundle.trajectory_index].append(dataclasses.replace(bundle, frames=frames))
        self.writers.write(bundle)

    def on_trajectory(self, episode: Episode) -> None:
        self.writers.on_trajectory(episode)

    def on_episode(self, metrics: EpisodeMetrics) -> None:
        self.writers.on_episode(metrics)

    def on_metrics(self, per_episode: list[EpisodeMetrics]) -> None:
        self.writers.on_metrics(per_episode)

    def close(self) -> list[Artifact]:
        return self.writers.close()

    def abort(self) -> None:
        self.writers.abort()

    def __getattr__(self, name: str) -> object:
        """The writers' other attributes (the calls above are spelled out, so that their types are known)."""
        return getattr(self.writers, name)
