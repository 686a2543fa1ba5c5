"""``sweep --watch``: new checkpoints the sweep's globs match, each taken once it is complete.

Training writes checkpoints into a folder while the sweep runs. A file is taken when its size
and modification time have not changed for the settle time (``--watch-settle``, default
:data:`SETTLE_S` seconds; a file written by rename is complete at once, and already old when
first seen; a file still being written keeps changing), and when it is unchanged again after
it was loaded and hashed, so the bytes evaluated are the bytes hashed. A load that fails is
tried again after the settle time, then after twice that; a file that changed in between (a
writer that paused longer than the settle time, then went on) starts afresh, and only the same
bytes failing :data:`TRIES` times, unchanged over four settle times, are given up: their cells
are recorded as failed. New checkpoints of one look are taken in training-step order
(:func:`.grid.checkpoint_step`).

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> watcher = Watcher({"default": [f"{folder}/*.pt"]}, known=set())
    >>> watcher.poll()
    ([], [])
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from ..checkpoint import load_checkpoint, sha256_file
from ..checkpoint.step import checkpoint_step, step_from_name
from ..errors import RenderError
from .grid import Cell, SweepConfig, expand_paths
from .store import MANIFEST, read_manifest, write_json_atomic

__all__ = ["SETTLE_S", "TRIES", "Found", "Watcher", "add_to_manifest"]

#: Seconds a checkpoint's size and mtime must stay unchanged before it is loaded (``--watch-settle``'s default).
SETTLE_S = cast(float, SweepConfig.__dataclass_fields__["watch_settle"].default)  # grid.py's float (typed: or MISSING)
#: Loads of the same unchanged bytes that must fail before a checkpoint is given up.
TRIES = 3


@dataclass
class Found:
    """A checkpoint the watcher took: its run, path, sha256, training step, and the load error if it failed."""

    run: str
    path: str
    digest: str
    step: int | None
    error: str | None = None


class Watcher:
    """Looks for checkpoints matching ``patterns`` (``{run: [globs]}``) that are not ``known`` yet.

    Args:
        patterns: The sweep's runs and their globs.
        known: Paths already in the sweep (never taken again).
        settle_s: Seconds a file must stay unchanged before it is loaded.
        trust: Load checkpoints that need full unpickling (``--trust-checkpoint``), as the cells will.
    """

    def __init__(self, patterns: dict[str, list[str]], known: set[str], settle_s: float | None = None,
                 trust: bool = False) -> None:
        self.patterns = patterns
        self.known = set(known)
        self.settle_s = SETTLE_S if settle_s is None else settle_s
        self.trust = trust
        self.seen: dict[str, tuple[tuple[int, int], float]] = {}  # path -> ((size, mtime_ns), unchanged since)
        self.tries: dict[str, tuple[tuple[int, int], int]] = {}  # path -> (the bytes that failed, failures)
        self.retry_at: dict[str, float] = {}  # path -> when a failed load is tried again
        self.last_found: Found | None = None
        self.last_found_time: float | None = None
        self.last_change = time.monotonic()  # a new file, or one still changing: the watch is not idle

    def poll(self) -> tuple[list[Found], list[Found]]:
        """``(taken, failed)``: the complete new checkpoints in step order, and those given up (the same bytes
        failing :data:`TRIES` times)."""
        now = time.time()
        taken: list[Found] = []
        failed: list[Found] = []
        matched = set()
        for run, patterns in self.patterns.items():
            for path in expand_paths(run, patterns, allow_none=True):
                matched.add(path)
                if path in self.known or not self._settled(path, now) or now < self.retry_at.get(path, 0.0):
                    continue
                found = self._load(run, path)
                if found is None:
                    continue
                self.known.add(path)
                (failed if found.error else taken).append(found)
        for path in [p for p in self.retry_at if p not in matched]:  # gone (deleted, renamed): nothing to retry
            self.retry_at.pop(path)
            self.tries.pop(path, None)
            self.seen.pop(path, None)
        taken.sort(key=lambda f: (f.step is None, f.step or 0, f.path))
        if taken:
            self.last_found, self.last_found_time = taken[-1], now
        return taken, failed

    def retrying(self) -> bool:
        """Whether a file that failed to load waits for its next try (the watch is not idle while it does)."""
        return any(path not in self.known for path in self.retry_at)

    def _settled(self, path: str, now: float) -> bool:
        """Whether ``path`` has kept its size and mtime for ``settle_s`` (a file already that old counts)."""
        try:
            st = os.stat(path)
        except FileNotFoundError:  # renamed away or deleted between the glob and now
            return False
        signature = (st.st_size, st.st_mtime_ns)
        previous = self.seen.get(path)
        if previous is None or previous[0] != signature:
            since = st.st_mtime if previous is None else now  # a file first seen counts from its last write
            self.seen[path] = (signature, since)
            self.last_change = time.monotonic()
            return previous is None and st.st_size > 0 and now - since >= self.settle_s
        return signature[0] > 0 and now - previous[1] >= self.settle_s

    def _load(self, run: str, path: str) -> Found | None:
        """The checkpoint's step once it loads; None to try again later; a Found with its error the second time
        the same bytes fail."""
        signature = self.seen[path][0]
        try:
            load_checkpoint(path, trust=self.trust)
            digest = _digest(path)
        except (RenderError, OSError) as exc:
            if self._changed(path, signature):  # written to while it was read: still being written
                return None
            before, failures = self.tries.get(path, (signature, 0))
            failures = failures + 1 if before == signature else 1
            self.tries[path] = (signature, failures)
            if failures < TRIES:  # tried again after the settle time, then twice that (if it changes: afresh)
                self.retry_at[path] = time.time() + self.settle_s * 2 ** (failures - 1)
                return None
            return Found(run, path, _digest(path), step_from_name(path),
                         f"{type(exc).__name__}: {' '.join(str(exc).split())}")
        if self._changed(path, signature):  # loaded, but written to meanwhile: what was hashed may not be it
            return None
        return Found(run, path, digest, checkpoint_step(path, digest))

    def _changed(self, path: str, signature: tuple[int, int]) -> bool:
        """Whether ``path`` differs from ``signature`` now (then it starts settling afresh)."""
        try:
            st = os.stat(path)
        except FileNotFoundError:
            self.seen.pop(path, None)
            return True
        now_signature = (st.st_size, st.st_mtime_ns)
        if now_signature != signature:
            self.seen[path] = (now_signature, time.time())
            self.last_change = time.monotonic()
            return True
        return False


def add_to_manifest(folder: Path, cells: list[Cell]) -> None:
    """Adds the cells of new checkpoints to the sweep's manifest, kept in training-step order (a stable sort:
    runs and tasks keep theirs), so that the report lists them as training wrote them."""
    manifest = read_manifest(folder) or {}
    known = {c["id"] for c in manifest.get("cells", [])}
    new = [c.to_dict() for c in cells if c.id not in known]
    if new:
        manifest["cells"] = sorted(manifest.get("cells", []) + new, key=lambda c: (c["step"] is None, c["step"] or 0))
        write_json_atomic(Path(folder) / MANIFEST, manifest)


def _digest(path: str) -> str:
    try:
        return sha256_file(path)
    except OSError:
        return "0" * 64
