"""The writer contract and atomic output (the fan-out to several files is :mod:`.group`).

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

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, cast

import numpy as np
from numpy.typing import NDArray

from ..contracts import EpisodeMetrics, UserEnv
from ..data import Artifact, FrameBundle
from ..errors import ConfigError, NoFramesError, WriterError
from ..registry import WRITERS
from ..storage import commit, remove, temp_path

if TYPE_CHECKING:
    from ..config import RenderConfig
    from ..engine.records import Episode


__all__ = [
    "Closable",
    "Writer",
    "close_quietly",
    "commit",
    "frame_size_error",
    "fresh_folder",
    "no_frames_error",
    "remove",
    "temp_path",
    "writer_class",
]

log = logging.getLogger("torchrl_render")


def fresh_folder(tmp: Path, shown: Path, what: str) -> None:
    """Makes the temporary folder ``tmp`` of a writer whose artifact is a folder (``shown``), after removing a
    stale one of an earlier run with the same pid; a folder that cannot be made is a :class:`WriterError`."""
    remove(tmp)
    try:
        tmp.mkdir()
    except OSError as exc:
        raise WriterError(f"cannot create {what} {str(shown)!r}", got=str(exc),
                          fix="check that its parent folder exists and is writable") from exc


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


class Closable(Protocol):
    """A handle a writer may hold open (a file, a zip file, a container): what :func:`close_quietly` calls."""

    def close(self) -> None: ...


def close_quietly(handle: Closable | None, what: str) -> None:
    """Closes ``handle`` (if any) while aborting: a failure is logged, never raised (the partial output
    is deleted next, and the error that caused the abort must not be hidden)."""
    if handle is None:
        return
    try:
        handle.close()
    except Exception:
        log.debug("closing an aborted %s failed", what, exc_info=True)


def writer_class(name: str) -> type[Writer]:
    """The writer class registered as format ``name`` (a plugin's too). A plugin's class need not subclass
    :class:`Writer`: one that has its calls (duck-typed) is used as one, as it always was; one without
    ``from_config`` and ``wants_state`` (what a writer group calls of it) is refused."""
    cls = WRITERS.load(name)
    if isinstance(cls, type) and issubclass(cls, Writer):
        return cls
    if not (hasattr(cls, "from_config") and hasattr(cls, "wants_state")):
        raise ConfigError(f"format {name!r} ({WRITERS.entry(name).target}) is not a writer: it has no from_config "
                          "and wants_state", expected="a subclass of torchrl_render.writers.base.Writer",
                          got=repr(cls), fix=f"register a Writer subclass under {name!r}")
    # the plugin's own writer, duck-typed: the group calls of it what a Writer has (the table's contract)
    return cast("type[Writer]", cls)


class Writer(ABC):
    """Base class of format writers (one output file or folder each).

    Besides ``write``/``close``, a writer may override the optional hooks declared here (each has a
    default that fits most formats): :meth:`wants_frames` and :meth:`wants_state` (what it consumes
    for a config), :meth:`check` (preconditions before any rollout), :meth:`side_paths` (files it
    may write beside its artifact), :attr:`live_out` and :attr:`stream_per_file`.
    """

    format: str = "base"
    #: With ``camera_layout="separate"``, one file per (trajectory, camera) stream (videos).
    stream_per_file: bool = False
    #: ``(H, W)`` of the first frame, for formats whose frames must all have one size (see :meth:`_first_frame`).
    frame_shape: tuple[int, int] | None = None

    @classmethod
    def wants_frames(cls, cfg: RenderConfig, default: bool) -> bool:
        """Whether this writer consumes rendered frames for ``cfg`` (``default``: the table's ``needs_frames``)."""
        return default

    @classmethod
    def wants_state(cls, cfg: RenderConfig, default: bool) -> bool:
        """Whether this writer consumes simulator states for ``cfg`` (``default``: the table's ``needs_state``)."""
        return default

    @classmethod
    def check(cls, path: Path, cfg: RenderConfig) -> None:
        """Refuses, before any rollout, what would only fail at the end (raises a RenderError)."""

    def side_paths(self, episodes: Iterable[int]) -> list[Path]:
        """Files this writer may write beside its artifact for the rendered ``episodes`` (none by default)."""
        return []

    @property
    def live_out(self) -> str | None:
        """The file a live re-run of this artifact writes, relative to it (None: there is none)."""
        return None

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.tmp = temp_path(self.path)
        self.num_frames = 0
        self._artifact: Artifact | None = None
        self._aborted = False

    @classmethod
    def from_config(cls, path: Path, cfg: RenderConfig) -> Writer:
        """Builds the writer with the options it needs from ``cfg``."""
        return cls(path)

    @abstractmethod
    def write(self, bundle: FrameBundle) -> None:
        """Writes the (single) frame of ``bundle``."""

    def _first_frame(self, bundle: FrameBundle, start: Callable[[int, int], None]) -> NDArray[np.uint8]:
        """The (single) frame of ``bundle``. The first frame starts the output (``start(height, width)``,
        which sets :attr:`frame_shape`); a later frame of another size is refused."""
        frame = next(iter(bundle.frames.values()))
        if self.frame_shape is None:
            start(frame.shape[0], frame.shape[1])
        elif frame.shape[:2] != self.frame_shape:
            raise frame_size_error(self.format, self.frame_shape, frame.shape, bundle)
        return frame

    def bind_env(self, env: UserEnv) -> None:
        """Called once with the run's env, before any episode: a writer that describes the env (minari: its
        spaces and spec) reads it here; the others ignore it."""

    def on_trajectory(self, episode: Episode) -> None:
        """Data writers: called once per finished episode (after its frames), with its step arrays."""

    def on_episode(self, metrics: EpisodeMetrics) -> None:
        """Data writers: called when an episode ends."""

    def on_metrics(self, per_episode: list[EpisodeMetrics]) -> None:
        """Called once before :meth:`close` by a run that filmed episodes chosen from its numbers
        (``--render-select worst:3``): the whole run's per-episode metrics, where :meth:`on_episode` saw
        only the filmed episodes' (each labelled with ``render_reason``)."""

    @abstractmethod
    def _finish(self) -> dict[str, object]:
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
            commit(self.tmp, self.path)
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

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
