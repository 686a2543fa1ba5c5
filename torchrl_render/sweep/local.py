"""The local executor: worker processes on this machine, one unit at a time each.

Workers are started with ``spawn`` (a fresh interpreter: no torch, GL or thread state is
inherited) and each builds its own envs and policies through ``render_policy``; no policy is
ever shared between threads or processes. Each worker talks to the driver over its own pipe,
so a worker killed mid-unit cannot corrupt what the others send: the driver sees its pipe
close, reports the unit ``lost`` (the driver retries what was not recorded) and starts a
replacement. Workers ignore SIGINT: Ctrl-C is the driver's to handle.

A spawned worker imports the user's ``__main__`` script anew before it runs anything; a script
that calls ``sweep(...)`` without an ``if __name__ == "__main__":`` guard dies there. So a
worker starts with its stderr in a file, and takes the driver's stderr back (passed over its
pipe) once it has started; until one worker has said so no other is started, and a worker
that dies before it is the sweep's error (:class:`WorkerStartError`, naming the guard),
raised once, with the last lines the worker printed.
"""

from __future__ import annotations

import collections
import multiprocessing
import os
import signal
import sys
import tempfile
from multiprocessing import reduction
from multiprocessing.connection import Connection, wait
from multiprocessing.context import SpawnContext

from ..envs.gl import ensure_headless_gl
from ..errors import RenderError
from .work import LostMessage, Message, StartedMessage, Unit, run_unit

__all__ = ["LocalExecutor", "WorkerStartError", "machine_cpus"]


class WorkerStartError(RenderError):
    """A sweep's worker process died while starting, before it ran anything."""


def machine_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class LocalExecutor:
    """Runs units in ``workers`` spawned processes; :meth:`poll` returns the messages they sent.

    Args:
        workers: The most worker processes at once.
    """

    name = "local"

    def __init__(self, workers: int) -> None:
        self.size = max(1, workers)
        self.ctx = multiprocessing.get_context("spawn")
        self.pending: collections.deque[Unit] = collections.deque()
        self.workers: list[_Worker] = []
        self.threads = max(1, machine_cpus() // self.size)

    def submit(self, unit: Unit) -> None:
        self.pending.append(unit)

    def busy(self) -> bool:
        return bool(self.pending) or any(w.unit is not None for w in self.workers)

    def cancel_pending(self) -> None:
        """Stops scheduling: units not yet started are dropped."""
        self.pending.clear()

    def poll(self, timeout: float) -> list[Message]:
        """Starts pending units on idle workers, then waits up to ``timeout`` s for messages."""
        self._schedule()
        ready = wait([w.conn for w in self.workers] + [w.proc.sentinel for w in self.workers], timeout)
        messages: list[Message] = []
        for worker in list(self.workers):
            if worker.conn in ready or worker.proc.sentinel in ready:
                messages += worker.drain()
                if worker.dead:
                    self.workers.remove(worker)
                    output = "" if worker.started else worker.start_log()
                    worker.close()
                    if not worker.started:
                        raise start_error(worker.proc.exitcode, output)
        return messages

    def _schedule(self) -> None:
        for worker in self.workers:
            if worker.unit is None and self.pending:
                worker.start(self.pending.popleft())
        # the first worker alone until it has started: a script that cannot be imported fails once
        while self.pending and len(self.workers) < self.size and all(w.started for w in self.workers):
            worker = _Worker(self.ctx, self.threads)
            self.workers.append(worker)
            worker.start(self.pending.popleft())

    def close(self) -> None:
        """Stops every worker (a unit in flight is abandoned; its recorded episodes stay)."""
        for worker in self.workers:  # all asked to stop first, then waited for: they exit in parallel
            worker.stop()
        for worker in self.workers:
            worker.close()
        self.workers.clear()


class _Worker:
    """One spawned process, its pipe and the unit it runs."""

    def __init__(self, ctx: SpawnContext, threads: int) -> None:
        conn, child = ctx.Pipe()
        self.conn: Connection[Unit | None, Message | StartedMessage] = conn  # units (None: stop) out, messages in
        self.proc = ctx.Process(target=worker_main, args=(child, os.getcwd(), threads), daemon=False,
                                name="torchrl_render-sweep-worker")
        self.log = tempfile.TemporaryFile()
        saved = os.dup(2)
        os.dup2(self.log.fileno(), 2)  # the child's stderr while it imports (the driver's own for this instant)
        try:
            self.proc.start()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        child.close()
        try:
            reduction.send_handle(self.conn, 2, self.proc.pid)  # its real stderr, once it has started
        except (OSError, RuntimeError):  # RuntimeError: macOS's acknowledgement never came
            pass  # it died already: drain() says so
        self.unit: Unit | None = None
        self.dead = False
        self.started = False

    def start_log(self) -> str:
        """The last lines the process printed before it started (its traceback if it died importing)."""
        self.log.seek(0)
        lines = self.log.read().decode("utf-8", "replace").strip().splitlines()
        return "\n".join(lines[-6:])

    def start(self, unit: Unit) -> None:
        self.unit = unit
        self.conn.send(unit)

    def drain(self) -> list[Message]:
        """Every message waiting in the pipe; a ``lost`` message when the process died mid-unit."""
        out: list[Message] = []
        try:
            while self.conn.poll():
                message = self.conn.recv()
                if message["type"] == "started":
                    self.started = True
                    continue
                out.append(message)
                if message["type"] in ("done", "error"):
                    self.unit = None
        except (EOFError, OSError):
            self.dead = True
        if not self.dead and not self.proc.is_alive():
            self.dead = True
        if self.dead and self.unit is not None and self.started:
            self.proc.join(1)
            lost: LostMessage = {"type": "lost", "unit": self.unit["id"], "pid": self.proc.pid,
                                 "error": f"worker process {self.proc.pid} died (exit code {self.proc.exitcode})"}
            out.append(lost)
            self.unit = None
        return out

    def stop(self) -> None:
        """Asks the process to end after its unit (it is idle at the end of a sweep)."""
        try:
            self.conn.send(None)
        except (OSError, ValueError):
            pass

    def close(self) -> None:
        self.stop()
        self.proc.join(2)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(5)
        self.conn.close()
        self.log.close()


def worker_main(conn: Connection[Message | StartedMessage, Unit | None], cwd: str, threads: int) -> None:
    """A worker's life: receive a unit, run it, send its messages; ``None`` ends it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stderr = reduction.recv_handle(conn)  # the driver's stderr: the start-up log file is done with
    sys.stderr.flush()
    os.dup2(stderr, 2)
    os.close(stderr)
    conn.send({"type": "started"})
    os.chdir(cwd)

    ensure_headless_gl()
    import torch

    torch.set_num_threads(threads)

    while True:
        try:
            unit = conn.recv()
        except EOFError:
            break
        if unit is None:
            break
        run_unit(unit, conn.send)
    conn.close()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # everything is sent and every file closed; skip interpreter teardown (GL, torch: seconds)


def start_error(exitcode: int | None, output: str) -> WorkerStartError:
    """The error of a worker that died while starting: with the fix of the spawn mistake when it looks like it."""
    main = getattr(sys.modules.get("__main__"), "__file__", None)
    script = main is not None and not main.endswith(("__main__.py", "pytest", "py.test")) and os.path.isfile(main)
    why = (f"each worker is a new interpreter that imports your script {main!r} again (multiprocessing's spawn), so "
           "a sweep(...) at its top level runs again in every worker" if script else
           "the worker could not import what the sweep needs")
    fix = ('put the script\'s call under the __main__ guard: if __name__ == "__main__": sweep(...)' if script else
           "run the failing import (the last line above) by hand, fix it, and run the sweep again")
    return WorkerStartError(f"the sweep's worker process died while starting, before it ran any cell (exit code "
                            f"{exitcode}): {why}", got=" | ".join(output.splitlines()[-3:]) or "no output", fix=fix)
