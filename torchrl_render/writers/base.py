"""The writer contract, atomic output, and the fan-out to several files.

A writer is built with its path and the options it needs (``from_config``);
``write(bundle)`` receives one :class:`FrameBundle` holding exactly one frame;
``close() -> Artifact`` is idempotent; ``abort()`` removes what was written.
Writers write to a hidden temporary name beside the target and rename it into
place only in ``close()``, so a crash or Ctrl-C never leaves a half-written file
under the requested name. Used as a context manager, an exception aborts.

Data writers (npz, jsonl) also get ``on_trajectory(episode)`` (an :class:`~torchrl_render.engine.Episode`
with its per-step arrays, once per episode, in episode order) and ``on_episode(metrics)``.

Example:
    >>> import numpy as np, tempfile, pathlib
    >>> from torchrl_render.data import FrameBundle
    >>> from torchrl_render.writers.png import PngWriter
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "frames"
    >>> with PngWriter(out) as w:
    ...     w.write(FrameBundle({"default": np.zeros((4, 4, 3), np.uint8)}, 0, 0))
    >>> sorted(p.name for p in out.iterdir())
    ['traj0000_step000000.png']
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

import logging

from ..data import Artifact, FrameBundle
from ..errors import ConfigError, NoFramesError, WriterError

__all__ = ["Writer", "WriterGroup", "frame_size_error", "no_frames_error", "temp_path", "wants_state"]

log = logging.getLogger("torchrl_render")


def temp_path(path: Path) -> Path:
    """A hidden name beside ``path`` (same folder, same suffix) for atomic writes."""
    return path.with_name(f".{path.stem}.tmp-{os.getpid()}{path.suffix}")


def remove(path: Path) -> None:
    """Removes a file or a folder if it exists."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _commit(tmp: Path, path: Path) -> None:
    """Moves ``tmp`` into place: one atomic rename for files; folders swap via a side name."""
    if not tmp.is_dir() or not path.exists():
        os.replace(tmp, path)
        return
    old = path.with_name(f".{path.name}.old-{os.getpid()}")
    os.replace(path, old)
    os.replace(tmp, path)
    remove(old)


def wants_state(cls: Any, cfg: Any, default: bool) -> bool:
    """Whether a writer class takes simulator states for ``cfg`` (its ``wants_state`` hook, else the table's)."""
    hook = getattr(cls, "wants_state", None)
    return bool(hook(cfg)) if hook is not None else default


def frame_size_error(fmt: str, first: tuple[int, int] | None, shape: tuple[int, ...],
                     bundle: FrameBundle) -> WriterError:
    """The error for a frame whose size differs from the first frame's (``first`` is ``(H, W)``)."""
    h, w = first or (0, 0)
    return WriterError(
        f"the frame at trajectory {bundle.trajectory_index}, step {bundle.step} has a different size "
        f"than the first frame of this {fmt}",
        expected=f"{w}x{h} (width x height), the size of the first frame",
        got=f"{shape[1]}x{shape[0]}",
        fix="render every step at one size (set --width/--height), or use --split-trajectories "
            "or --camera-layout separate so that each size gets its own file")


def no_frames_error(fmt: str, path: Path) -> NoFramesError:
    """The error for closing a frame format that received no frame."""
    return NoFramesError(
        f"no frames were rendered, so there is nothing to write to {str(path)!r}",
        expected=f"at least one frame for format {fmt!r}", got="0 frames",
        fix="make the env render: pass render_mode='rgb_array' to a gymnasium env, "
            "--from-pixels for pixel observations, or --render-backend mujoco for MuJoCo envs; "
            "or pick a data format that needs no frames")


class Writer(ABC):
    """Base class of format writers (one output file or folder each)."""

    format: str = "base"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.tmp = temp_path(self.path)
        self.num_frames = 0
        self._artifact: Artifact | None = None
        self._aborted = False

    @classmethod
    def from_config(cls, path: Path, cfg: Any) -> Writer:
        """Builds the writer with the options it needs from ``cfg``."""
        return cls(path)

    @abstractmethod
    def write(self, bundle: FrameBundle) -> None:
        """Writes the (single) frame of ``bundle``."""

    def on_trajectory(self, episode: Any) -> None:
        """Data writers: called once per finished episode (after its frames), with its step arrays."""

    def on_episode(self, metrics: dict[str, Any]) -> None:
        """Data writers: called when an episode ends."""

    @abstractmethod
    def _finish(self) -> dict[str, Any]:
        """Flushes and closes the temporary output; returns artifact info."""

    def _release(self) -> None:
        """Closes open handles without finishing (after an error); safe twice."""

    def close(self) -> Artifact:
        """Finishes, renames into place and returns the :class:`Artifact` (idempotent)."""
        if self._artifact is None:
            if self._aborted:
                raise WriterError(f"the writer for {str(self.path)!r} was aborted and cannot be closed",
                                  fix="start a new run")
            try:
                info = self._finish()
            except BaseException:
                self.abort()
                raise
            _commit(self.tmp, self.path)
            self._artifact = Artifact(self.path, self.format, self.num_frames, info)
        return self._artifact

    def abort(self) -> None:
        """Drops the partial output; the target path is left untouched. Safe twice."""
        if self._artifact is not None or self._aborted:
            return
        self._aborted = True
        try:
            self._release()
        except Exception as exc:  # never let cleanup hide the error that caused the abort
            log.warning("releasing the %s writer for %s raised %s: %s", self.format, self.path,
                        type(exc).__name__, exc)
        finally:
            remove(self.tmp)

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


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


def _rendered(cfg: Any, writers: Any) -> int:
    """How many episodes get a file of their own: all, or the first ``max_episodes_rendered`` for frame formats."""
    limit = getattr(cfg, "max_episodes_rendered", None)
    total = cfg.num_trajs if cfg.num_trajs is not None else (limit or 0)  # eval_n_timesteps: not known ahead
    if limit is None or not writers.entry(cfg.format).needs_frames:
        return total
    return min(total, limit)


class WriterGroup:
    """Routes bundles to one writer per (trajectory if split) x (camera if separate).

    The paths are known before the run (:meth:`planned_paths`), so an existing
    output is refused before any rollout.
    """

    def __init__(self, cfg: Any, out: Path, trajectories: Sequence[int] | None = None) -> None:
        from . import WRITERS

        self.cfg = cfg
        self.out = Path(out)
        self.cls = WRITERS.load(cfg.format)
        separate = cfg.camera_layout == "separate"
        self.streams = separate and getattr(self.cls, "stream_per_file", False)  # videos: one per (trajectory, camera)
        self.split = bool(cfg.split_trajectories) or self.streams
        self.cameras = list(cfg.camera) if self.streams or (separate and len(cfg.camera) > 1) else [None]
        # a range, never a list: --num-trajs 10**12 costs nothing before the first step
        self.trajectories = trajectories if trajectories is not None else range(_rendered(cfg, WRITERS))
        if self.split and len(self.trajectories) * len(self.cameras) > MAX_SPLIT_FILES:
            raise too_many_split_files(len(self.trajectories) * len(self.cameras))
        self.needs_state = wants_state(self.cls, cfg, WRITERS.entry(cfg.format).needs_state)
        self.takes_frames = WRITERS.entry(cfg.format).needs_frames or not self.needs_state  # html: states only
        self._writers: dict[tuple[int | None, str | None], Writer] = {}

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
            self._writers[key] = self.cls.from_config(self.path_for(*key), self.cfg)
        return self._writers[key]

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

    def on_trajectory(self, episode: Any) -> None:
        if self._skips(episode.index):
            return
        for camera in self.cameras:
            writer = self._writer(episode.index, camera)
            with _os_errors(writer):
                writer.on_trajectory(episode)

    def on_episode(self, metrics: dict[str, Any]) -> None:
        if self._skips(metrics["episode_ix"]):
            return
        for camera in self.cameras:
            writer = self._writer(metrics["episode_ix"], camera)
            with _os_errors(writer):
                writer.on_episode(metrics)

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
        import queue
        import threading

        self.groups = groups
        self.queue: Any = queue.Queue(maxsize=maxsize)
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
            method, arg = item
            try:
                for group in self.groups:
                    getattr(group, method)(arg)
            except BaseException as exc:  # handed to the producer thread, which raises it
                self.error = exc

    def _put(self, method: str, arg: Any) -> None:
        if self.error is not None:
            raise self.error
        self.queue.put((method, arg))

    def write(self, bundle: FrameBundle) -> None:
        self._put("write", bundle)

    def on_trajectory(self, episode: Any) -> None:
        self._put("on_trajectory", episode)

    def on_episode(self, metrics: dict[str, Any]) -> None:
        self._put("on_episode", metrics)

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
