"""NumPy ``.npz``: per-trajectory observations, actions, rewards and dones (frames when asked).

``numpy.load`` reads it without torchrl_render. Keys (``i`` is the trajectory index)::

    traj{i}/observations   (n+1, *obs_shape)  the obs_key entry at steps 0..n (0 is the reset)
    traj{i}/actions        (n, *action_shape) the action_key entry the policy wrote at steps 1..n
    traj{i}/rewards        (n,) float64       reward of each step (summed over its entries)
    traj{i}/dones          (n,) bool          done after each step
    traj{i}/terminated     (n,) bool
    traj{i}/truncated      (n,) bool
    traj{i}/frames         (m, H, W, 3) uint8 rendered frames (only with npz_frames; m = n+1 when rendered)
    trajectories           (T,) int64         the trajectory indices, in file order
    seeds                  (T,) int64         reset seed of each trajectory (-1: none)
    lengths                (T,) int64         n of each trajectory
    returns                (T,) float64       sum of its rewards
    metadata_json          ()   str           JSON: format version, keys used, config

Nothing is held for the whole run: each episode's arrays are written into the zip (stored,
like ``numpy.savez``) when it ends, and dropped. Frames,
when asked, go to an anonymous spool file in the output folder as they arrive and
are copied into the zip at the episode end, so memory stays flat.

Example:
    >>> import numpy as np, tempfile, pathlib
    >>> from torchrl_render.engine import Episode
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "run.npz"
    >>> flag = np.array([True])
    >>> with NpzWriter(out) as w:
    ...     w.on_trajectory(Episode(0, 7, np.array([0.5]), flag, flag, ~flag, sum_reward=0.5,
    ...                             observations=np.zeros((2, 3)), actions=np.ones((1, 1))))
    >>> data = np.load(out)
    >>> data["traj0/observations"].shape, data["traj0/actions"].shape, data["traj0/rewards"], data["seeds"]
    ((2, 3), (1, 1), array([0.5]), array([7]))
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ..contracts import Array, EpisodeMetrics
from ..data import FrameBundle
from ..errors import WriterError
from ..keys import NestedKey, key_to_string
from ..storage import atomic_path
from .base import Writer, close_quietly, frame_size_error

if TYPE_CHECKING:
    from ..config import RenderConfig
    from ..engine.records import Episode


__all__ = ["NpzWriter"]

log = logging.getLogger(__name__)
VERSION = 1


class NpzWriter(Writer):
    """Writes rollout data as ``.npz`` (see the module docstring for the keys).

    Args:
        path: Target file; written under a temporary name and renamed on close.
        obs_key: Observation entry stored as ``observations`` (a nested key is a tuple).
        action_key: Action entry stored as ``actions``.
        frames: Also store the frames this writer is fed (``npz_frames``).
        config: The run's config as a dict, stored in ``metadata_json``.
    """

    format = "npz"

    def __init__(self, path: str | Path, obs_key: NestedKey = "observation", action_key: NestedKey = "action",
                 frames: bool = False, config: Mapping[str, object] | None = None) -> None:
        super().__init__(path)
        self.obs_key, self.action_key, self.frames, self.config = obs_key, action_key, bool(frames), config
        self._zip: zipfile.ZipFile | None = None
        self._spools: dict[int, _FrameSpool] = {}
        self._index: list[tuple[int, int, int, float]] = []  # trajectory, seed, length, return
        self._missing: set[str] = set()

    @classmethod
    def from_config(cls, path: Path, cfg: RenderConfig) -> NpzWriter:
        """Reads ``obs_key``, ``action_key`` and ``npz_frames``."""
        return cls(path, obs_key=cfg.obs_key, action_key=cfg.action_key,
                   frames=cls.wants_frames(cfg), config=cfg.to_dict())

    @classmethod
    def wants_frames(cls, cfg: RenderConfig, default: bool = False) -> bool:
        """Frames only when ``npz_frames`` is set."""
        return bool(getattr(cfg, "npz_frames", False))

    def on_trajectory(self, episode: Episode) -> None:
        """Writes the finished episode's arrays (and its spooled frames) into the file, and every tensor of its
        TensorDict as torchrl.render's ``traj_<iii>/<dotted key>``."""
        trajectory = getattr(episode, "trajectory", None)
        if trajectory is not None:
            for key, value in trajectory.items(True, True):
                if hasattr(value, "detach"):  # tensors (non-tensor leaves have no array form)
                    self._put(f"traj_{episode.index:03d}/{key_to_string(key)}", value.detach().cpu().numpy())
        prefix = f"traj{episode.index}/"
        if episode.observations is None:
            self._missing.add("observations")
        else:
            self._put(prefix + "observations", episode.observations)
        if episode.actions is None:
            self._missing.add("actions")
        else:
            self._put(prefix + "actions", episode.actions)
        self._put(prefix + "rewards", np.asarray(episode.rewards, dtype=np.float64))
        for name, values in (("dones", episode.dones), ("terminated", episode.terminated),
                             ("truncated", episode.truncated)):
            self._put(prefix + name, np.asarray(values, dtype=bool))
        spool = self._spools.pop(episode.index, None)
        if spool is not None:
            spool.copy_into(self._open(), prefix + "frames.npy")
        self._index.append((episode.index, -1 if episode.seed is None else int(episode.seed), episode.length,
                            float(episode.sum_reward)))

    def on_episode(self, metrics: EpisodeMetrics) -> None:
        """Nothing more: the trajectory was written by :meth:`on_trajectory`."""

    def write(self, bundle: FrameBundle) -> None:
        """Spools the frame when frames were asked for (``npz_frames``); ignores it otherwise."""
        if not self.frames:
            return
        frame = next(iter(bundle.frames.values()))
        spool = self._spools.get(bundle.trajectory_index)
        if spool is None:
            spool = self._spools[bundle.trajectory_index] = _FrameSpool(self.path.parent, frame.shape)
        elif frame.shape != spool.shape:
            raise frame_size_error(self.format, (spool.shape[0], spool.shape[1]), frame.shape, bundle)
        spool.add(frame)
        self.num_frames += 1

    # -- file -----------------------------------------------------------------------------------

    def _open(self) -> zipfile.ZipFile:
        if self._zip is None:
            try:
                self._zip = zipfile.ZipFile(self.tmp, "w", zipfile.ZIP_STORED, allowZip64=True)
            except OSError as exc:
                raise WriterError(f"cannot create the npz file {str(self.path)!r}", got=str(exc),
                                  fix="check that the folder exists and is writable") from exc
        return self._zip

    def _put(self, name: str, array: Array) -> None:
        with self._open().open(name + ".npy", "w", force_zip64=True) as member:
            np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)

    def _finish(self) -> dict[str, object]:
        for index in sorted(self._spools):  # frames of trajectories that never got a step record
            self._spools.pop(index).copy_into(self._open(), f"traj{index}/frames.npy")
        columns = list(zip(*self._index)) or [(), (), (), ()]
        self._put("trajectories", np.asarray(columns[0], dtype=np.int64))
        self._put("seeds", np.asarray(columns[1], dtype=np.int64))
        self._put("lengths", np.asarray(columns[2], dtype=np.int64))
        self._put("returns", np.asarray(columns[3], dtype=np.float64))
        meta = {"torchrl_render_npz": VERSION, "obs_key": key_to_string(self.obs_key),
                "action_key": key_to_string(self.action_key),
                "frames": self.frames, "missing": sorted(self._missing), "config": self.config}
        self._put("metadata_json", np.asarray(json.dumps(meta, default=str)))
        self._put("config", np.asarray(json.dumps(self.config, sort_keys=True, default=str)))  # torchrl.render's
        zf, self._zip = self._open(), None  # open: the arrays above were just written to it
        zf.close()
        keys = sorted(n[:-4] for n in zf.namelist())
        return {"trajectories": len(self._index), "steps": int(sum(columns[2])), "keys": keys,
                "frames": self.frames, "missing": sorted(self._missing)}

    @classmethod
    def add_metadata(cls, path: Path, metadata: Mapping[str, object], cfg: RenderConfig) -> None:
        """Adds the run's metadata as ``metadata`` (a JSON string, torchrl.render's key), through a copy of the
        file renamed into place (a crash never leaves it half-written); an older ``metadata`` is replaced."""
        with atomic_path(path) as tmp, zipfile.ZipFile(path) as source, \
                zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED, allowZip64=True) as out:
            for info in source.infolist():
                if info.filename != "metadata.npy":
                    with source.open(info) as member, out.open(info.filename, "w", force_zip64=True) as copy:
                        shutil.copyfileobj(member, copy, 1 << 22)
            with out.open("metadata.npy", "w", force_zip64=True) as member:
                text = np.asarray(json.dumps(metadata, sort_keys=True, default=str))
                np.lib.format.write_array(member, text, allow_pickle=False)

    def _release(self) -> None:
        for spool in self._spools.values():
            spool.close()
        self._spools.clear()
        zf, self._zip = self._zip, None
        close_quietly(zf, "npz")


class _FrameSpool:
    """Frames of one trajectory in an anonymous file beside the output (not in memory)."""

    def __init__(self, folder: Path, shape: tuple[int, ...]) -> None:
        self.shape = tuple(shape)
        self.count = 0
        self.file: IO[bytes] | None = tempfile.TemporaryFile(dir=folder)

    def add(self, frame: NDArray[np.uint8]) -> None:
        assert self.file is not None, "frame spool used after close"
        self.file.write(np.ascontiguousarray(frame, dtype=np.uint8).tobytes())
        self.count += 1

    def copy_into(self, zf: zipfile.ZipFile, name: str) -> None:
        header = {"descr": np.lib.format.dtype_to_descr(np.dtype(np.uint8)), "fortran_order": False,
                  "shape": (self.count, *self.shape)}
        assert self.file is not None, "frame spool used after close"
        self.file.seek(0)
        with zf.open(name, "w", force_zip64=True) as member:
            np.lib.format.write_array_header_1_0(member, header)
            shutil.copyfileobj(self.file, member, 1 << 22)
        self.close()

    def close(self) -> None:
        file, self.file = self.file, None
        if file is not None:
            file.close()
