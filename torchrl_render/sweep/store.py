"""Results that survive: ``manifest.json`` first, then ``episodes.jsonl``, one line per fact.

The manifest (the grid, the config, versions, the checkpoints' sha256) is written before
anything runs. Each finished episode is appended to ``episodes.jsonl`` as one
self-describing JSON line (checkpoint path and sha256, task, episode index, seed, the
per-episode metrics under the names a single run uses, status, error), flushed and
fsynced, so a crash loses at most the episodes in flight. Lines of kind ``failed`` record a
block that raised; ``artifacts`` lines name the files a block wrote. Everything else (the
aggregates, the report) is derived from these lines and can be rebuilt.

A torn last line (the driver was killed while writing it) is ignored, and cut off before
the next append. An episode recorded twice (it cannot be, but a hand-merged file might)
counts once: the first line wins.

Example:
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> store = Store.create(folder, {"cells": []})
    >>> store.append({"kind": "episode", "cell": "c", "episode_ix": 0, "metrics": {"sum_reward": 1.0}})
    >>> _ = (folder / EPISODES).open("a").write('{"kind": "episode", "cell": "c", "epi')  # a torn line
    >>> store.close()
    >>> [(r["cell"], r["episode_ix"]) for r in read_records(folder)]
    [('c', 0)]
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Literal, NotRequired, TextIO, TypedDict, cast

from ..contracts import EpisodeMetrics, RerunNumbers
from ..metrics import json_ready
from ..storage import write_json_atomic as _write_json_atomic
from .grid import CellDict

__all__ = ["EPISODES", "MANIFEST", "ArtifactsRecord", "EpisodeRecord", "FailedRecord", "GalleryEntry", "GalleryRecord",
           "Grid", "Identity", "LoggerRecord", "Manifest", "Record", "Store", "done_episodes", "read_manifest",
           "read_records", "write_json_atomic"]

MANIFEST = "manifest.json"
EPISODES = "episodes.jsonl"
log = logging.getLogger("torchrl_render")


class Grid(TypedDict):
    """What a resumed sweep must share with the original: the config less how it runs (``what``) and, unless
    watched, each cell's id and checkpoint sha256."""

    what: dict[str, object]
    cells: NotRequired[list[list[str]]]


class Manifest(TypedDict, total=False):
    """``manifest.json``: :meth:`Store.create` writes every key; readers take what a manifest has."""

    torchrl_render_sweep: int
    created: float
    command: list[str] | None
    grid: Grid
    config: dict[str, object]  # SweepConfig.to_dict()
    cells: list[CellDict]
    tasks: dict[str, str]
    groups: dict[str, list[str]]
    baselines: dict[str, dict[str, float]] | None
    versions: dict[str, str | None]


class Identity(TypedDict):
    """What makes an episode or failed line self-describing: the cell, its checkpoint and its task."""

    cell: str
    run: str
    checkpoint: str
    checkpoint_sha256: str
    step: int | None
    task: str
    task_spec: str
    group: str


class EpisodeRecord(Identity):
    """A finished episode: its metrics under the names a single run uses."""

    kind: Literal["episode"]
    episode_ix: int
    seed: int | None
    metrics: EpisodeMetrics
    status: str
    error: str | None
    attempt: int
    worker: str | None
    time: NotRequired[float]


class FailedRecord(Identity):
    """A block that raised (or whose workers died ``max_attempts`` times): ``episodes`` is ``[start, stop)``."""

    kind: Literal["failed"]
    episodes: list[int]
    status: str
    error: str
    attempt: int
    time: NotRequired[float]


class ArtifactsRecord(TypedDict):
    """The files a block of episodes ``[start, stop)`` wrote."""

    kind: Literal["artifacts"]
    cell: str
    episodes: list[int]
    paths: list[str]
    time: NotRequired[float]


class GalleryEntry(TypedDict):
    """One episode ``--render-select`` chose, filmed again (:mod:`.gallery`): why, where, and whether the film
    reproduced the recorded numbers (``rerun``: the film's, where not)."""

    episode_ix: int
    seed: int | None
    reason: str
    path: str
    sum_reward: float
    length: int
    success: bool | None
    num_frames: int
    reproduced: bool
    rerun: NotRequired[RerunNumbers]


class GalleryRecord(TypedDict):
    """A cell's chosen episodes, filmed."""

    kind: Literal["gallery"]
    cell: str
    selectors: list[str]
    episodes: list[GalleryEntry]
    time: NotRequired[float]


class LoggerRecord(TypedDict):
    """The loggers' ledger: a cell given to the logger (``logging``), then on its disk (``logged``)."""

    kind: Literal["logging", "logged"]
    cell: str
    logger: str
    time: NotRequired[float]


#: One line of ``episodes.jsonl``; its ``kind`` says which.
Record = EpisodeRecord | FailedRecord | ArtifactsRecord | GalleryRecord | LoggerRecord


class Store:
    """The append-only episode log of one sweep folder (the driver alone writes it)."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / EPISODES
        self._fh: TextIO | None = None  # set before open, which may raise: __del__ closes only what opened
        self._fh = open(self.path, "a", encoding="utf-8")

    @classmethod
    def create(cls, folder: Path, manifest: Manifest) -> Store:
        """A new sweep folder: the manifest first, then an empty episode log."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        write_json_atomic(folder / MANIFEST, manifest)
        (folder / EPISODES).touch()
        return cls(folder)

    @classmethod
    def reopen(cls, folder: Path) -> Store:
        """An existing sweep folder, its torn last line (if any) cut off so that appends start clean."""
        path = Path(folder) / EPISODES
        path.touch()
        data = path.read_bytes()
        if data and not data.endswith(b"\n"):
            keep = data.rfind(b"\n") + 1
            log.warning("episodes.jsonl ended in a torn line (%d bytes): ignored", len(data) - keep)
            with open(path, "r+b") as fh:
                fh.truncate(keep)
                fh.flush()
                os.fsync(fh.fileno())
        return cls(folder)

    def append(self, record: Record) -> None:
        """Appends one line (stamped with its ``time`` unless it has one), flushed and fsynced before it returns."""
        fh = self._fh
        if fh is None:
            raise ValueError(f"append to the closed store of {self.folder}")
        line: dict[str, object] = dict(record)
        line["time"] = record.get("time", time.time())
        fh.write(json.dumps(json_ready(line), default=str, allow_nan=False) + "\n")  # a NaN return: null
        fh.flush()
        os.fsync(fh.fileno())

    def close(self) -> None:
        fh, self._fh = self._fh, None
        if fh is not None:
            fh.close()

    def __del__(self) -> None:
        self.close()


def read_records(folder: Path) -> list[Record]:
    """Every whole line of ``episodes.jsonl`` in order, duplicate episodes dropped (the first wins); a line that is
    not a JSON object with a ``kind`` is ignored (every reader picks lines by their kind)."""
    path = Path(folder) / EPISODES
    if not path.is_file():
        return []
    records: list[Record] = []
    seen: set[tuple[object, object]] = set()
    lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    for number, line in enumerate(lines[:-1], 1):  # the last piece has no newline: empty or torn
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            log.warning("episodes.jsonl line %d is not JSON: ignored", number)
            continue
        if not isinstance(record, dict) or not isinstance(record.get("kind"), str):
            continue
        if record.get("kind") == "episode":
            key = (record.get("cell"), record.get("episode_ix"))
            if key in seen:
                continue
            seen.add(key)
        # a line Store.append wrote, as JSON gives it back (lists for tuples, null for a NaN)
        records.append(cast(Record, record))
    return records


def done_episodes(records: Iterable[Record]) -> set[tuple[str, int]]:
    """``(cell, episode_ix)`` of every recorded episode."""
    return {(r["cell"], r["episode_ix"]) for r in records if r["kind"] == "episode"}


def read_manifest(folder: Path) -> Manifest | None:
    """The sweep's ``manifest.json`` (None when there is none)."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        return None
    manifest: Manifest = json.loads(path.read_text(encoding="utf-8"))  # as Store.create (or the watch) wrote it
    return manifest


def write_json_atomic(path: Path, data: object) -> None:
    """Writes JSON through :func:`torchrl_render.storage.atomic_path` (flushed to disk, renamed into place)."""
    _write_json_atomic(path, data, default=str)
