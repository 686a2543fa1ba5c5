"""What a process tree listens on, and a TinyEnv that holds a run still while a test looks at it.

``listening(pids)`` lists every listening TCP socket and every bound, unconnected UDP socket of the
given processes (what another machine could send to); ``tree(root)`` is a process and all its
descendants; ``ray_session_processes(session)`` adds Ray's processes named by a session (in case
one was reparented). ``is_loopback`` counts IPv4-mapped IPv6 addresses (``::ffff:127.0.0.1``, how
Ray's gRPC servers show a 127.0.0.1 bind on a dual-stack socket) as what they map to.

``make_gated_env``: TinyEnv whose first step writes ``ready-<pid>`` into the folder named by
``$TRR_GATE_DIR`` and waits until a file ``go`` appears there; so the run is certainly going (its
servers up, its workers started) when the test samples the sockets, with no sleep in the test.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from helpers.tinyenv import TinyEnv

GATE_ENV = "TRR_GATE_DIR"


@dataclass(frozen=True)
class Listener:
    pid: int
    process: str
    proto: str
    ip: str
    port: int

    def __str__(self) -> str:
        return f"{self.process}[{self.pid}] {self.proto} {self.ip}:{self.port}"


def is_loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip.split("%")[0])
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


def tree(root: int | None = None) -> dict[int, psutil.Process]:
    proc = psutil.Process(root)
    procs = {p.pid: p for p in proc.children(recursive=True)}
    procs[proc.pid] = proc
    return procs


def ray_session_processes(session: str) -> dict[int, psutil.Process]:
    """Processes whose command line names the Ray session, and their descendants."""
    procs = {}
    for proc in psutil.process_iter():
        try:
            if session in " ".join(proc.cmdline()):
                procs[proc.pid] = proc
                procs.update({c.pid: c for c in proc.children(recursive=True)})
        except psutil.Error:
            continue
    return procs


def listening(procs: dict[int, psutil.Process]) -> list[Listener]:
    found = []
    for pid, proc in sorted(procs.items()):
        try:
            name, conns = proc.name(), proc.net_connections(kind="inet")
        except psutil.NoSuchProcess:
            continue
        for conn in conns:
            tcp = conn.type == socket.SOCK_STREAM
            if (tcp and conn.status == psutil.CONN_LISTEN) or (not tcp and not conn.raddr):
                found.append(Listener(pid, name, "tcp" if tcp else "udp", conn.laddr.ip, conn.laddr.port))
    return found


def beyond_loopback(listeners: list[Listener], asked: set[tuple[str, int]] = frozenset()) -> list[str]:
    """The listeners on another address than loopback, except those the user asked for (ip, port)."""
    return [str(s) for s in listeners if not is_loopback(s.ip) and (s.ip, s.port) not in asked]


class GatedTinyEnv(TinyEnv):
    def _step(self, tensordict):
        gate = os.environ.get(GATE_ENV)
        if gate and not getattr(self, "_released", False):
            Path(gate, f"ready-{os.getpid()}").touch()
            while not Path(gate, "go").exists():
                time.sleep(0.01)
            self._released = True
        return super()._step(tensordict)


def make_gated_env(spec=None, **kwargs):
    return GatedTinyEnv(**kwargs)


def wait_ready(gate: Path, alive=lambda: True, timeout: float = 180.0) -> int:
    """Waits for the gated env's ready file; returns the pid that wrote it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready = list(gate.glob("ready-*"))
        if ready:
            return int(ready[0].name.split("-", 1)[1])
        assert alive(), "the run ended before its env was stepped"
        time.sleep(0.02)
    raise AssertionError(f"no env reached its first step within {timeout} s")
