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
from pathlib import Path
from typing import Any, TextIO

from ..metrics import json_ready
from ..storage import write_json_atomic as _write_json_atomic

__all__ = ["EPISODES", "MANIFEST", "Store", "done_episodes", "read_manifest", "read_records", "write_json_atomic"]

MANIFEST = "manifest.json"
EPISODES = "episodes.jsonl"
log = logging.getLogger("torchrl_render")


class Store:
    """The append-only episode log of one sweep folder (the driver alone writes it)."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / EPISODES
        self._fh: TextIO | None = None  # set before open, which may raise: __del__ closes only what opened
        self._fh = open(self.path, "a", encoding="utf-8")

    @classmethod
    def create(cls, folder: Path, manifest: dict[str, Any]) -> Store:
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

    def append(self, record: dict[str, Any]) -> None:
        """Appends one line, flushed and fsynced before it returns."""
        fh = self._fh
        if fh is None:
            raise ValueError(f"append to the closed store of {self.folder}")
        record = {**record, "time": record.get("time", time.time())}
        fh.write(json.dumps(json_ready(record), default=str, allow_nan=False) + "\n")  # a NaN return: null
        fh.flush()
        os.fsync(fh.fileno())

    def close(self) -> None:
        fh, self._fh = self._fh, None
        if fh is not None:
            fh.close()

    def __del__(self) -> None:
        self.close()


def read_records(folder: Path) -> list[dict[str, Any]]:
    """Every whole line of ``episodes.jsonl`` in order, duplicate episodes dropped (the first wins)."""
    path = Path(folder) / EPISODES
    if not path.is_file():
        return []
    records, seen = [], set()
    lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    for number, line in enumerate(lines[:-1], 1):  # the last piece has no newline: empty or torn
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            log.warning("episodes.jsonl line %d is not JSON: ignored", number)
            continue
        if not isinstance(record, dict):
            continue
        if record.get("kind") == "episode":
            key = (record.get("cell"), record.get("episode_ix"))
            if key in seen:
                continue
            seen.add(key)
        records.append(record)
    return records


def done_episodes(records: list[dict[str, Any]]) -> set[tuple[str, int]]:
    """``(cell, episode_ix)`` of every recorded episode."""
    return {(r["cell"], r["episode_ix"]) for r in records if r.get("kind") == "episode"}


def read_manifest(folder: Path) -> dict[str, Any] | None:
    path = Path(folder) / MANIFEST
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def write_json_atomic(path: Path, data: Any) -> None:
    """Writes JSON through :func:`torchrl_render.storage.atomic_path` (flushed to disk, renamed into place)."""
    _write_json_atomic(path, data, default=str)
