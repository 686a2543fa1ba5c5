"""``sweep(SweepConfig) -> SweepResult``: plan the missing episodes, run them, record them.

The driver alone writes the sweep folder. It writes ``manifest.json`` before anything runs,
plans the episodes not yet in ``episodes.jsonl`` as work units (contiguous blocks of a
cell's episodes), hands them to the executor and appends each episode the moment a worker
reports it. A unit whose worker died is resubmitted for its unrecorded episodes only, so
nothing is counted twice; a unit that raised is recorded as failed and the others go on.
Ctrl-C stops scheduling, keeps what finished, rewrites the derived outputs and re-raises.
With ``watch`` the grid grows: each new checkpoint the globs match (:mod:`.watch`) adds its
cells to the manifest and its units to the executor. A sweep that could not start (its
executor or its workers failed before anything ran) leaves no files behind; a Python
:func:`sweep` whose every cell failed raises :class:`SweepFailedError`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import NotRequired, Protocol, TypedDict

from ..contracts import EpisodeMetrics, UserValue
from ..errors import ConfigError, OutputExistsError, RenderError
from ..loggers import EvalLogger, check_logger
from ..metrics import aggregate
from ..sidecar import versions
from .gallery import film_galleries
from .grid import Cell, SweepConfig, checkpoint_cells, expand_cells
from .local import LocalExecutor, machine_cpus
from .precision import cell_precision, has_precision, settled
from .ray_exec import RayExecutor, import_ray
from .report import EvalInfo, level_text, write_derived
from .separate import PairSpec, PairState, pair_cells, pair_state, spec_of
from .store import (
    EPISODES,
    MANIFEST,
    Grid,
    Identity,
    Manifest,
    Record,
    Store,
    done_episodes,
    read_manifest,
    read_records,
    write_json_atomic,
)
from .tracking import log_cell, open_tracker
from .watch import TRIES, Watcher, add_to_manifest
from .work import Block, Message, Unit

__all__ = ["DriverInfo", "Executor", "SweepFailedError", "SweepResult", "SweepTerminated", "WatchInfo", "plan_units",
           "sweep"]

log = logging.getLogger("torchrl_render")
DRIVER = "driver.json"
_HOW = ("executor", "workers", "block_size", "resume", "max_attempts", "report", "ray_address", "ray_num_cpus",
        "ray_num_gpus", "out", "score_baselines", "watch", "watch_timeout", "watch_settle")  # a resume may change these

_LOGGING = ("logger", "logger_dir", "logger_project", "exp_name")


class WatchInfo(TypedDict):
    """driver.json's ``watch`` entry (sweep-status prints it)."""

    patterns: dict[str, list[str]]
    timeout_s: float | None
    last_seen: str | None
    last_step: int | None
    last_seen_time: float | None


class DriverInfo(TypedDict):
    """driver.json: who runs the sweep, and a watched sweep's last look."""

    pid: int
    host: str
    started: float
    executor: str
    watch: NotRequired[WatchInfo]
    checked: NotRequired[float]


class Executor(Protocol):
    """Where the units run (:class:`~.local.LocalExecutor`, :class:`~.ray_exec.RayExecutor`): ``poll`` gives the
    messages the units sent meanwhile."""

    def submit(self, unit: Unit) -> None: ...

    def busy(self) -> bool: ...

    def cancel_pending(self) -> None: ...

    def poll(self, timeout: float) -> list[Message]: ...

    def close(self) -> None: ...


class SweepFailedError(RenderError):
    """Every cell of a sweep failed: the message has the first cell's error and the fix."""


class SweepTerminated(KeyboardInterrupt):
    """SIGTERM (a scheduler, ``docker stop``, ``kill``) ended the sweep: the same clean stop as Ctrl-C (finished
    episodes kept, derived outputs and loggers finished, ``--resume`` goes on); the CLI exits 143."""


@dataclass
class SweepResult:
    """What a sweep left in its folder.

    Args:
        out: The sweep folder.
        eval_info: The content of ``eval_info.json`` (``per_task``, ``per_group``, ``overall``, ``per_checkpoint``).
        cells: Cells in the grid.
        cells_done: Cells with every episode recorded.
        cells_failed: Cells with a failed block and episodes missing.
        episodes: Episodes recorded in ``episodes.jsonl`` (all sessions).
        episodes_run: Episodes recorded by this call.
        report_paths: ``report.html`` and ``report.ipynb`` when written.
        failures: ``{cell: error}`` of the failed cells.

    Example:
        >>> r = SweepResult(Path("sweeps/run1"), {"overall": {}}, cells=4, cells_done=3, cells_failed=1, episodes=60,
        ...                 episodes_run=20)
        >>> r.cells - r.cells_done - r.cells_failed  # cells still pending
        0
    """

    out: Path
    eval_info: EvalInfo
    cells: int
    cells_done: int
    cells_failed: int
    episodes: int
    episodes_run: int
    report_paths: list[Path] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)


def sweep(config: SweepConfig | None = None, /, *, command: list[str] | None = None,
          echo: Callable[[str], None] | None = None, **fields: UserValue) -> SweepResult:
    """Runs every (checkpoint, task) cell of the grid; resumable episode by episode.

    Args:
        config: A :class:`SweepConfig`; or pass its fields (and RenderConfig fields) as keyword arguments.
        command: The command line to record in the manifest.
        echo: Called with one line of text per finished cell (the CLI prints them).

    Example:
        >>> from torchrl_render import SweepConfig, sweep
        >>> cfg = SweepConfig(ckpt=["examples/inverted_pendulum/policy.pt"], env=["InvertedPendulum-v5"],
        ...                   base={"policy": "examples/inverted_pendulum/policy.py:make_policy"})
        >>> len(cfg.tasks)  # sweep(cfg) would run it into cfg.out
        1
    """
    cfg = config if config is not None else SweepConfig.from_dict(fields)
    if config is not None and fields:
        cfg = SweepConfig.from_dict({**cfg.to_dict(), **fields})
    if cfg.executor == "ray":  # before anything is written: the error names the extra

        import_ray()
    check_logger(cfg.base.get("logger"))
    cells = expand_cells(cfg)
    spec_of(cfg.to_dict(), [c.to_dict() for c in cells])  # --separate names two of its checkpoints: before any file
    fresh = read_manifest(cfg.out_dir) is None
    created = not cfg.out_dir.exists()
    store, records = _open(cfg, cells, command)
    driver = _Driver(cfg, _known_cells(cfg, cells, records), store, records, echo or (lambda text: None))
    try:
        result = driver.run()
    except RenderError:
        if fresh and not driver.ran:  # it never started: leave nothing, so that the same command can run again
            _discard(cfg.out_dir, created)
        raise
    if result.cells and result.cells_failed == result.cells:
        cell, error = next(iter(result.failures.items()))
        raise SweepFailedError(f"every cell of the sweep failed ({result.cells} cells); the first, {cell}: {error}",
                               got=f"{result.cells_failed} failed cells, 0 episodes" if not result.episodes else
                               f"{result.cells_failed} failed cells", fix="correct what the first error names (the "
                               "env, policy or checkpoint), then run the same sweep with resume=True (--resume): "
                               f"only the missing episodes run; the errors are in {cfg.out_dir / EPISODES}")
    return result


def _discard(folder: Path, created: bool) -> None:
    """Removes the files a sweep that never started wrote (and its folder when the sweep made it)."""
    for name in (MANIFEST, EPISODES, DRIVER):
        (folder / name).unlink(missing_ok=True)
    if created and (folder / "logs").is_dir():  # a logger's empty run, in the folder this sweep made
        shutil.rmtree(folder / "logs", ignore_errors=True)
    if created and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()


def _known_cells(cfg: SweepConfig, cells: list[Cell], records: list[Record]) -> list[Cell]:
    """A watched sweep's cells: those of its manifest (checkpoints seen before) and those found now.

    A manifest cell whose file has other bytes now and that has no episode recorded (it failed to load: the file
    was given up half-written, then completed) is superseded by the file as it is: dropped from the manifest, so
    that one step has one cell (and the records carry the sha256 of the file evaluated).
    """
    manifest: Manifest = read_manifest(cfg.out_dir) or {}
    old = [Cell(**c) for c in manifest.get("cells", [])] if cfg.watch else []
    now = {c.ckpt: c.sha256 for c in cells}
    evaluated = {r["cell"] for r in records if r["kind"] == "episode"}
    stale = {c.id for c in old if now.get(c.ckpt, c.sha256) != c.sha256 and c.id not in evaluated}
    if stale:
        manifest["cells"] = [c for c in manifest["cells"] if c["id"] not in stale]
        write_json_atomic(cfg.out_dir / MANIFEST, manifest)
        old = [c for c in old if c.id not in stale]
    ids = {c.id for c in old}
    return old + [c for c in cells if c.id not in ids]


def _grid(cfg: SweepConfig, cells: list[Cell]) -> Grid:
    """What a resumed sweep must share with the original: the cells and what each cell runs (a watched sweep's
    cells grow as training writes checkpoints: what each cell runs alone)."""
    what = {k: v for k, v in cfg.to_dict().items() if k not in _HOW}
    what["base"] = {k: v for k, v in cfg.base.items() if k not in _LOGGING}  # where results are also logged
    return {"what": what} if cfg.watch else {"what": what, "cells": [[c.id, c.sha256] for c in cells]}


def _open(cfg: SweepConfig, cells: list[Cell], command: list[str] | None) -> tuple[Store, list[Record]]:
    manifest = read_manifest(cfg.out_dir)
    if manifest is None:
        if cfg.out_dir.exists() and any(cfg.out_dir.iterdir()):
            raise OutputExistsError(f"{str(cfg.out_dir)!r} exists and is not a sweep folder (it has no {MANIFEST})",
                                    got=str(cfg.out_dir), fix="choose another --out (a new or empty folder)")
        new: Manifest = {"torchrl_render_sweep": 1, "created": time.time(), "command": command,
                         "grid": _grid(cfg, cells), "config": cfg.to_dict(), "cells": [c.to_dict() for c in cells],
                         "tasks": cfg.tasks, "groups": cfg.groups, "baselines": cfg.baselines, "versions": versions()}
        return Store.create(cfg.out_dir, new), []
    if not cfg.resume:
        raise OutputExistsError(f"{str(cfg.out_dir)!r} already holds a sweep", got=str(cfg.out_dir),
                                fix="pass --resume to run only its missing episodes, or choose another --out")
    old_grid, new_grid = manifest.get("grid"), _grid(cfg, cells)
    old_what = old_grid.get("what") if old_grid else None
    if (old_what != new_grid["what"]) if cfg.watch else old_grid != new_grid:
        raise ConfigError(f"the sweep in {str(cfg.out_dir)!r} has another grid than this config (other checkpoints, "
                          "checkpoint contents, tasks or RenderConfig fields)",
                          expected="the config it was started with",
                          got=_first_difference(old_grid, _grid(cfg, cells)),
                          fix="resume with the original config (its manifest.json has it), or choose another --out")
    if cfg.baselines is not None and manifest.get("baselines") != cfg.baselines:  # --resume --score-baselines
        # FILE: the report renormalises (baselines are not part of the grid; a resume without them keeps the old)
        write_json_atomic(cfg.out_dir / MANIFEST, {**manifest, "baselines": cfg.baselines})
    store = Store.reopen(cfg.out_dir)
    return store, read_records(cfg.out_dir)


def _first_difference(old: Grid | None, new: Grid) -> str:
    """What differs between the recorded grid (None: the manifest has none) and this config's."""
    old_cells = old.get("cells") if old else None
    if old_cells != new.get("cells"):
        return (f"{len(old_cells or [])} cells recorded, {len(new.get('cells') or [])} in this config (or other "
                "checkpoints)")
    if (old.get("what") if old else None) != new["what"]:
        old_what = old.get("what", {}) if old else {}
        keys = sorted(k for k in set(old_what) | set(new["what"]) if old_what.get(k) != new["what"].get(k))
        return f"different {', '.join(keys)}"
    return "a different manifest"


def plan_units(cells: list[Cell], done: set[tuple[str, int]], block_size: int | None) -> list[tuple[Cell, int, int]]:
    """``(cell, start, count)`` blocks covering every episode not in ``done``.

    Example:
        >>> cell = Cell("c", "r", "a.pt", "0" * 64, None, "t", "E", "all", 6, 0)
        >>> [(s, n) for _, s, n in plan_units([cell], {("c", 1), ("c", 2)}, 2)]
        [(0, 1), (3, 2), (5, 1)]
    """
    units = []
    for cell in cells:
        missing = [i for i in range(cell.num_trajs) if (cell.id, i) not in done]
        runs: list[list[int]] = []
        for i in missing:
            if runs and runs[-1][-1] == i - 1:
                runs[-1].append(i)
            else:
                runs.append([i])
        size = block_size or cell.num_trajs
        for run in runs:
            for j in range(0, len(run), size):
                units.append((cell, run[j], len(run[j:j + size])))
    return units


class _Driver:
    """One session of a sweep: its store, executor, units in flight and counters."""

    def __init__(self, cfg: SweepConfig, cells: list[Cell], store: Store, records: list[Record],
                 echo: Callable[[str], None]) -> None:
        self.cfg, self.cells, self.store, self.echo = cfg, {c.id: c for c in cells}, store, echo
        self.done = done_episodes(records)
        # each cell's recorded episodes' metrics, once each: its progress line, and whether it is complete
        self.metrics: dict[str, list[EpisodeMetrics]] = {}
        seen: set[tuple[str, int]] = set()
        for r in records:
            if r["kind"] == "episode" and (r["cell"], r["episode_ix"]) not in seen:
                seen.add((r["cell"], r["episode_ix"]))
                self.metrics.setdefault(r["cell"], []).append(r["metrics"])
        self.units: dict[str, Unit] = {}
        # --separate: the pair's cells, each mapped to (cell of A, cell of B) of its task
        # (None without --separate: then no cell is in self.pairs, and only a cell of the pair reads it)
        self.pair: PairSpec | None = spec_of(cfg.to_dict(), [c.to_dict() for c in cells])
        self.pairs = pair_cells(self.pair, [c.to_dict() for c in cells])
        self.failed: dict[str, str] = {}
        self.run_count = 0
        self.last_report = 0.0
        self.watcher = Watcher(cfg.run, {c.ckpt for c in cells}, cfg.watch_settle,
                               trust=bool(cfg.base.get("trust_checkpoint"))) if cfg.watch else None
        self.tracker: EvalLogger | None = None
        # the loggers' ledger: cells whose numbers the logger has on disk ("logged" lines, kept across sessions),
        # and those given to a logger that confirms only when it closes (W&B)
        self.ledger = f"{cfg.base.get('logger')}:{cfg.base.get('exp_name') or cfg.out_dir.resolve().name}"
        self.logged = {r["cell"] for r in records if r["kind"] == "logged" and r.get("logger") == self.ledger}
        # cells an earlier session began to give the logger ("logging" lines) and did not see on disk: killed
        # between the two, the logger may hold some or all of their numbers
        self.begun = {r["cell"] for r in records if r["kind"] == "logging" and r.get("logger") == self.ledger}
        self.unconfirmed: list[str] = []
        self.last_new = time.monotonic()
        self.interrupted: type[KeyboardInterrupt] | None = None  # Ctrl-C or SIGTERM came (see _stop_signals)

    @property
    def ran(self) -> bool:
        """Whether this session recorded anything (an episode or a failed block)."""
        return bool(self.run_count or self.failed)

    def run(self) -> SweepResult:
        with self._stop_signals():
            return self._session()

    def _session(self) -> SweepResult:
        units = self._plan(list(self.cells.values()))
        self.driver_info: DriverInfo = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time(),
                            "executor": self.cfg.executor}
        if self.watcher is not None:
            # a resumed watch: checkpoints written meanwhile
            add_to_manifest(self.cfg.out_dir, list(self.cells.values()))
            self.driver_info["watch"] = {"patterns": self.cfg.run, "timeout_s": self.cfg.watch_timeout,
                                         "last_seen": None, "last_step": None, "last_seen_time": None}
            globs = ", ".join(repr(g) for patterns in self.cfg.run.values() for g in patterns)
            until = ("Ctrl-C" if self.cfg.watch_timeout is None else
                     f"{self.cfg.watch_timeout:g} s without a new one, or Ctrl-C")
            there = len({c.ckpt for c in self.cells.values()})
            self.echo(f"watching {globs} for new checkpoints ({there} there already), until {until}")
        executor = None
        try:
            executor = self._executor(len(units))
            self._run(executor, units)
        except KeyboardInterrupt:
            if executor is not None:
                executor.cancel_pending()
            self._finish(executor, final=False)
            raise
        except BaseException:
            self._finish(executor, final=False, derived=self.ran)
            raise
        if self.watcher is not None and not self.done and not self.failed:
            self._finish(executor, final=False, derived=False)
            raise self._nothing_evaluated(self.watcher)
        self._finish(executor, final=True)
        return self._result()

    def _nothing_evaluated(self, watcher: Watcher) -> ConfigError:
        """A watch that ended on its timeout with nothing evaluated: the glob, or a training run that never wrote."""
        globs = ", ".join(repr(g) for patterns in self.cfg.run.values() for g in patterns)
        settling = sorted(set(watcher.seen) - watcher.known)
        got = (f"{len(settling)} file(s) still being written or failing to load ({Path(settling[0]).name} ...)"
               if settling else "no file matched")
        return ConfigError(f"the watch ended after --watch-timeout {self.cfg.watch_timeout:g} s with nothing "
                           "evaluated", expected=f"a checkpoint matching {globs}", got=got,
                           fix="check the glob (quote it, or the shell expands it first) and that the training run "
                           "writes there; raise --watch-timeout for a slow start (or --watch-settle for a slow "
                           "writer); the same command with --resume goes on")

    @contextlib.contextmanager
    def _stop_signals(self) -> Iterator[None]:
        """Ctrl-C (SIGINT) and SIGTERM stop the sweep cleanly, noted as well as raised (main thread only, where
        signals arrive; a handler of the user's, or an ignored signal, is left alone).

        Python raises a signal handler's exception wherever the main thread is; landing in a weakref callback or a
        ``__del__`` (a library's object freed at that moment) it is printed and dropped, and a watching sweep
        would watch on. The note makes the loop raise it again at its next turn, within half a second.
        """
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        stops = {signal.SIGINT: (signal.default_int_handler, KeyboardInterrupt),
                 signal.SIGTERM: (signal.SIG_DFL, SweepTerminated)}
        previous = {}
        for signum, (default, error) in stops.items():
            if signal.getsignal(signum) is default:

                def stop(signum: int, frame: FrameType | None, error: type[KeyboardInterrupt] = error) -> None:
                    self.interrupted = error
                    raise error

                previous[signum] = signal.signal(signum, stop)
        try:
            yield
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _run(self, executor: Executor, units: list[tuple[Cell, int, int]]) -> None:
        """Starts the tracker, writes driver.json, submits the planned units and runs the loop."""
        self.tracker = open_tracker(self.cfg, self.echo)
        if self.tracker is not None and self._loggable():  # complete cells an earlier session did not log
            write_derived(self.cfg.out_dir, html=False)
            self._log_ready(self.tracker)
        write_json_atomic(self.cfg.out_dir / DRIVER, self.driver_info)
        for cell, start, count in units:
            executor.submit(self._unit(cell, start, count, 1))
        self._loop(executor)

    def _loop(self, executor: Executor) -> None:
        """Runs the units until none is left; a watched sweep also takes new checkpoints, until its timeout."""
        last_look = 0.0
        idle_since = None  # when the watched sweep ran out of work: the timeout counts the waiting, not the work
        while True:
            if self.interrupted is not None:  # a Ctrl-C or SIGTERM whose exception was dropped where it landed
                raise self.interrupted
            busy = executor.busy()
            if busy:
                for message in executor.poll(0.5):
                    self._handle(message, executor)
            watcher = self.watcher
            if watcher is None:
                if not busy:
                    return
                continue
            if time.monotonic() - last_look >= 1.0:
                last_look = time.monotonic()
                self._look(executor, watcher)
            timeout = self.cfg.watch_timeout
            if executor.busy():
                idle_since = None
                continue
            idle_since = time.monotonic() if idle_since is None else idle_since
            if watcher.retrying():  # a file that failed to load gets its next try first
                idle_since = time.monotonic()
            # idle since the last new checkpoint, the last change of one still being written, and the last cell
            if timeout is not None and time.monotonic() - max(self.last_new, watcher.last_change,
                                                              idle_since) >= timeout:
                return
            time.sleep(0.5)

    def _look(self, executor: Executor, watcher: Watcher) -> None:
        """Adds the cells of the checkpoints the watcher took; records those that failed to load as failed."""
        taken, failed = watcher.poll()
        for found in taken + failed:
            cells = checkpoint_cells(self.cfg, found.run, found.path, found.digest, found.step)
            self.cells.update({c.id: c for c in cells})
            add_to_manifest(self.cfg.out_dir, cells)
            self.last_new = time.monotonic()
            self.echo(f"new checkpoint {Path(found.path).name} (step {found.step})" +
                      (f" failed to load {TRIES} times, unchanged: {found.error}" if found.error else ""))
            for cell in cells:
                if found.error:
                    self._fail(cell, {"start": 0, "count": cell.num_trajs, "attempt": TRIES}, found.error)
                    continue
                for c, start, count in self._plan([cell]):
                    executor.submit(self._unit(c, start, count, 1))
        last = watcher.last_found
        if taken and last is not None:  # always: poll() sets it to the last of what it took
            self.driver_info["watch"].update({"last_seen": last.path, "last_step": last.step,
                                              "last_seen_time": watcher.last_found_time})
        if taken or failed or time.time() - self.driver_info.get("checked", 0) > 10:
            self.driver_info["checked"] = time.time()
            write_json_atomic(self.cfg.out_dir / DRIVER, self.driver_info)
        if failed and not executor.busy():
            write_derived(self.cfg.out_dir, html=self.cfg.report)

    def _plan(self, cells: list[Cell]) -> list[tuple[Cell, int, int]]:
        """The units of the episodes ``cells`` lack. With ``--precision`` a cell not yet settled runs whole, from
        episode 0: its own plan stops it on its seed prefix (the episodes recorded already come out the same and
        are recorded once)."""
        plain = [c for c in cells if c.id not in self.pairs]
        if not has_precision(self.cfg.base):
            units = plan_units(plain, self.done, self.cfg.block_size)
        else:
            units = [(c, 0, c.num_trajs) for c in plain if not self._complete(c)]
        for ca, cb in dict.fromkeys(self.pairs[c.id] for c in cells if c.id in self.pairs):
            units += self._pair_units(ca, cb)
        return units

    def _prefix(self, cell: Cell) -> int:
        """How many of the cell's first episodes are recorded, without a gap."""
        k = 0
        while (cell.id, k) in self.done:
            k += 1
        return k

    def _pair_spec(self) -> PairSpec:
        """``--separate``'s pair, which only a cell of the pair (in ``self.pairs``) reads."""
        assert self.pair is not None  # self.pairs is empty without one
        return self.pair

    def _pair_state(self, cid: str) -> PairState:
        ca, cb = (self.cells[c] for c in self.pairs[cid])
        spec = self._pair_spec()
        return pair_state(self.metrics.get(ca.id, []), self.metrics.get(cb.id, []), spec["metric"], spec["bounds"],
                          min(ca.num_trajs, cb.num_trajs))

    def _pair_units(self, ca_id: str, cb_id: str) -> list[tuple[Cell, int, int]]:
        """The pair's next lockstep block: both checkpoints up to the same episode, ``block`` further than the one
        behind; none while a block of either runs, once one failed, or once the pair is decided."""
        ca, cb = self.cells[ca_id], self.cells[cb_id]
        busy = {u["cell"]["id"] for u in self.units.values()}
        if ca.id in busy or cb.id in busy or ca.id in self.failed or cb.id in self.failed:
            return []
        if self._pair_state(ca.id)["stopped_on"] is not None:
            return []
        ka, kb = self._prefix(ca), self._prefix(cb)
        until = min(ca.num_trajs, cb.num_trajs, max(ka, kb, min(ka, kb) + self._pair_spec()["block"]))
        return [(c, k, until - k) for c, k in ((ca, ka), (cb, kb)) if k < until]

    def _executor(self, n_units: int) -> Executor:
        if self.cfg.executor == "ray":
            return RayExecutor(self.cfg.ray_address, self.cfg.ray_num_cpus, self.cfg.ray_num_gpus)

        workers = self.cfg.workers or machine_cpus()
        return LocalExecutor(workers if self.watcher is not None else min(workers, max(1, n_units)))

    def _unit(self, cell: Cell, start: int, count: int, attempt: int) -> Unit:
        unit: Unit = {
            "id": f"{cell.id}#{start}+{count}@{attempt}", "cell": cell.to_dict(), "start": start, "count": count,
            "attempt": attempt, "base": self.cfg.base, "out": str(self.cfg.out_dir.resolve()),
            "separate": cell.id in self.pairs}  # the pair's blocks stop on the pair, not on --precision
        self.units[unit["id"]] = unit
        return unit

    def _handle(self, message: Message, executor: Executor) -> None:
        unit = self.units.get(message["unit"])
        if unit is None:  # a unit already settled (e.g. a cancelled task's last word): nothing to record
            return
        cell = self.cells[unit["cell"]["id"]]
        if message["type"] == "episode":
            key = (cell.id, message["episode_ix"])
            if key not in self.done:  # a retried block may report an episode again: count it once
                self.store.append({"kind": "episode", **_identity(cell, self.cfg), "episode_ix": message["episode_ix"],
                                   "seed": message["seed"], "metrics": message["metrics"], "status": "ok",
                                   "error": None, "attempt": unit["attempt"], "worker": message.get("worker")})
                self.done.add(key)
                self.metrics.setdefault(cell.id, []).append(message["metrics"])
                self.run_count += 1
            return
        self.units.pop(message["unit"])
        if message["type"] == "done":
            self.store.append({"kind": "artifacts", "cell": cell.id, "episodes": [unit["start"],
                               unit["start"] + unit["count"]], "paths": message["paths"]})
            if cell.id in self.pairs:  # --separate: the next lockstep block, once both halves are in
                for c, start, count in self._pair_units(*self.pairs[cell.id]):
                    executor.submit(self._unit(c, start, count, 1))
        elif message["type"] == "error" or unit["attempt"] >= self.cfg.max_attempts:
            error = message["error"] if message["type"] == "error" else f"gave up after {unit['attempt']} attempts: " \
                                                                        f"{message['error']}"
            self._fail(cell, unit, error)
        else:  # lost: its worker died; run again what it had not reported
            log.warning("%s; retrying the episodes of %s it had not finished", message["error"], cell.id)
            retry = plan_units([cell], self.done | self._others(cell, unit), None) if not has_precision(
                self.cfg.base) else [(cell, 0, cell.num_trajs)]  # a precision cell: again from episode 0 (see _plan)
            for c, start, count in retry:
                executor.submit(self._unit(c, start, count, unit["attempt"] + 1))
        self._cell_progress(cell)

    def _others(self, cell: Cell, unit: Block) -> set[tuple[str, int]]:
        """Episodes of ``cell`` outside ``unit`` (other units own them): not to be planned again."""
        own = range(unit["start"], unit["start"] + unit["count"])
        return {(cell.id, i) for i in range(cell.num_trajs) if i not in own}

    def _fail(self, cell: Cell, unit: Block, error: str) -> None:
        if self.watcher is not None and not os.path.exists(cell.ckpt):  # taken, then gone before its cell ran
            error = (f"{cell.ckpt} vanished from the watched folder after it was taken, before its cell ran (the "
                     "training run deleted or moved it: one that keeps only its last checkpoints?); keep each "
                     "checkpoint until it is evaluated (sweep-status shows the cells left), or watch a folder "
                     f"the checkpoints are copied to. The worker said: {error}")
        self.store.append({"kind": "failed", **_identity(cell, self.cfg), "episodes": [unit["start"],
                           unit["start"] + unit["count"]], "status": "failed", "error": error,
                           "attempt": unit["attempt"]})
        self.failed[cell.id] = error
        self.echo(f"cell {cell.id} failed: {error}")

    def _cell_progress(self, cell: Cell) -> None:
        if any(u["cell"]["id"] == cell.id for u in self.units.values()):
            return
        n = sum(1 for i in range(cell.num_trajs) if (cell.id, i) in self.done)
        if cell.id not in self.failed:
            self.echo(f"cell {cell.id} (step {cell.step}): {n}/{cell.num_trajs} episodes; "
                      + level_text(aggregate(self.metrics.get(cell.id, []), 0.0, reps=0))
                      + (self._separation_text(cell) if cell.id in self.pairs else
                         _precision_text(self.cfg.base, cell, self.metrics.get(cell.id, []))))

        write_derived(self.cfg.out_dir, html=self.cfg.report and time.monotonic() - self.last_report > 10)
        self.last_report = time.monotonic()
        if self.tracker is not None:
            self._log_ready(self.tracker)

    def _complete(self, cell: Cell) -> bool:
        """All its episodes recorded; with ``--precision``, its half-width (or its cap) reached on them; a cell
        of ``--separate``'s pair, the pair decided."""
        if cell.id in self.pairs:
            return self._pair_state(cell.id)["stopped_on"] is not None
        return settled(self.cfg.base, cell, self.metrics.get(cell.id, []))

    def _separation_text(self, cell: Cell) -> str:
        state = self._pair_state(cell.id)
        lo, hi = state["interval"]
        where = "decided" if state["stopped_on"] else "running"
        spec = self._pair_spec()
        better = {"A": spec["a"], "B": spec["b"]}.get(state["better"] or "")
        return (f"; --separate ({where}): A - B {spec['metric']} in [{lo:.3g}, {hi:.3g}] after {state['n_pairs']} "
                f"pairs, p = {state['p_value']:.3g}" + (f", better: {Path(better).name}" if better else ""))

    def _loggable(self) -> list[Cell]:
        """The complete cells the logger lacks, in training-step order."""
        cells = [c for c in self.cells.values() if c.id not in self.logged and c.id not in self.unconfirmed
                 and c.id not in self.failed and self._complete(c)]
        return sorted(cells, key=_step_order)

    def _log_ready(self, tracker: EvalLogger) -> None:
        """Logs the complete cells whose every earlier-step cell is settled (complete or failed), in step order:
        W&B takes a run's steps in increasing order only, and a curve reads left to right in every logger. A cell
        that finished before an earlier step's waits for it; an interrupted sweep's waiting cells are logged by
        its ``--resume``. Each logged cell is recorded in the ledger once the logger has it on disk, and a
        "logging" line before it is given to the logger: a session killed between the two leaves its resume a
        cell the logger may hold already, of which it logs only what the logger's files lack."""
        pending = [c for c in self.cells.values() if not self._complete(c) and c.id not in self.failed]
        first_pending = min((_step_order(c) for c in pending), default=None)
        for cell in self._loggable():
            if first_pending is not None and _step_order(cell) > first_pending:
                break
            self.store.append({"kind": "logging", "cell": cell.id, "logger": self.ledger})
            log_cell(tracker, self.cfg, cell, resumed=cell.id in self.begun)
            if tracker.confirm():
                self._ledger([cell.id])
            else:
                self.unconfirmed.append(cell.id)

    def _ledger(self, cells: list[str]) -> None:
        for cell in cells:
            self.store.append({"kind": "logged", "cell": cell, "logger": self.ledger})
            self.logged.add(cell)

    def _finish(self, executor: Executor | None, final: bool, derived: bool = True) -> None:
        if executor is not None:
            executor.close()
        if self.tracker is not None:
            self.tracker.close()
            self._ledger(self.unconfirmed)  # on disk now that the logger closed (W&B's run finished)
            self.unconfirmed = []
        if final:  # --render-select worst:N...: the complete cells' chosen episodes, filmed once
            film_galleries(self.cfg.base, self.cfg.out_dir, self.cells.values(), read_records(self.cfg.out_dir),
                           self.store.append)
        self.store.close()
        self.report_paths = write_derived(self.cfg.out_dir, html=self.cfg.report, notebook=final and self.cfg.report) \
            if derived else []
        (self.cfg.out_dir / DRIVER).unlink(missing_ok=True)

    def _result(self) -> SweepResult:
        import json

        # eval_info.json as write_derived has just written it (read back: what the file says, NaN as null)
        info: EvalInfo = json.loads((self.cfg.out_dir / "eval_info.json").read_text(encoding="utf-8"))
        cells = list(self.cells.values())
        full = [c for c in cells if self._complete(c)]
        return SweepResult(self.cfg.out_dir, info, len(cells), len(full), len(self.failed), len(self.done),
                           self.run_count, self.report_paths, dict(self.failed))


def _precision_text(base: Mapping[str, UserValue], cell: Cell, metrics: Sequence[EpisodeMetrics]) -> str:
    """``--precision``: the half-width the cell reached, and on what it stopped."""
    if not has_precision(base):
        return ""
    seq = cell_precision(base, cell.to_dict(), metrics)["sequential"]
    return f"; half-width {seq['halfwidth']:.3g} (target {seq['target']:g}, stopped on {seq['stopped_on']})"


def _step_order(cell: Cell) -> tuple[bool, int]:
    """Training-step order; a checkpoint without a step comes last."""
    return cell.step is None, cell.step or 0


def _identity(cell: Cell, cfg: SweepConfig) -> Identity:
    """What makes a line self-describing: the checkpoint, the task, the cell."""
    return {"cell": cell.id, "run": cell.run, "checkpoint": cell.ckpt, "checkpoint_sha256": cell.sha256,
            "step": cell.step, "task": cell.task, "task_spec": cfg.tasks[cell.task], "group": cell.group}

