"""The cost of ``--live`` on a run whose page stops reading, as a ratio within one process.

    MUJOCO_GL=egl .venv/bin/python benchmarks/live_overhead.py            # ~1 min
    MUJOCO_GL=egl .venv/bin/python benchmarks/live_overhead.py --rounds 5 --episodes 4
    MUJOCO_GL=egl .venv/bin/python benchmarks/live_overhead.py --idle 500   # and 500 idle connections

The same run (the shipped HalfCheetah-v5 policy, 1000-step episodes, mp4 at 96x96 with the fast look,
so the run is step-bound and the live page gets a pose every 1/30 s) is timed alternately without
``--live`` and with ``--live`` plus two stalled clients: one subscribed to the event stream that never
reads a byte (its socket buffer fills, its server thread blocks on the write, then is dropped after the
timeout), and one that sends half a request and waits. Reported: the median wall time of each, their
ratio, the poses published and the events dropped for the stalled pages; the returns must match.
``--idle N`` adds N connections that never send a request (a flood): they wait threadless in the server's
selector, so the ratio should not move; the threads alive at the run's end are reported.
"""

from __future__ import annotations

import argparse
import logging
import re
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CHEETAH = ROOT / "examples" / "half_cheetah"


class _Url(logging.Handler):
    def __init__(self):
        super().__init__()
        self.url = None
        self.seen = threading.Event()

    def emit(self, record):
        found = re.findall(r"http://\S+", record.getMessage())
        if found and self.url is None:
            self.url = found[0]
            self.seen.set()


def _stall(url: str, sockets: list, idle: int = 0) -> None:
    """Two clients that never read: one on the event stream, one with half a request; ``idle`` more that
    connect and say nothing."""
    rest = url[len("http://"):]
    hostport, _, query = rest.partition("/?")
    host, port = hostport.rsplit(":", 1)
    events = socket.create_connection((host, int(port)))
    events.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    events.sendall(f"GET /events?{query} HTTP/1.0\r\n\r\n".encode())
    half = socket.create_connection((host, int(port)))
    half.sendall(b"GET /state?tok")
    sockets += [events, half]
    sockets += [socket.create_connection((host, int(port))) for _ in range(idle)]


def _run(out: Path, episodes: int, live: bool, catch: _Url, idle: int = 0) -> tuple[float, list[float], dict]:
    from torchrl_render import RenderConfig, render_policy

    cfg = RenderConfig(ckpt=str(CHEETAH / "policy.pt"), policy=f"{CHEETAH / 'policy.py'}:make_policy",
                       env=f"{CHEETAH / 'policy.py'}:make_env", num_trajs=episodes, out=str(out), width=96,
                       height=96, render_quality="fast", overwrite=True, progress=False,
                       live=0 if live else None)
    sockets: list = []
    stats: dict = {}
    if live:
        catch.url, _ = None, catch.seen.clear()
        threading.Thread(target=lambda: catch.seen.wait(120) and _stall(catch.url, sockets, idle),
                         daemon=True).start()
        import torchrl_render.live.feed as feed

        original = feed.LiveFeed.close

        def close(self, finished=True):
            stats.update(poses=self.hub.poses, dropped=self.hub.dropped, threads=threading.active_count())
            original(self, finished)

        feed.LiveFeed.close = close
    started = time.perf_counter()
    try:
        result = render_policy(cfg)
    finally:
        if live:
            feed.LiveFeed.close = original
    wall = time.perf_counter() - started
    for s in sockets:
        s.close()
    return wall, [e["sum_reward"] for e in result.metrics["per_episode"]], stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--episodes", type=int, default=2)
    parser.add_argument("--idle", type=int, default=0, help="connections that never send a request")
    args = parser.parse_args()
    catch = _Url()
    logger = logging.getLogger("torchrl_render")
    logger.addHandler(catch)
    logger.setLevel(logging.WARNING)
    walls: dict[bool, list[float]] = {False: [], True: []}
    returns: dict[bool, list[float]] = {}
    stats: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        _run(Path(tmp) / "warm.mp4", 1, False, catch)  # imports, GL context
        for _ in range(args.rounds):
            for live in (False, True):
                wall, rets, st = _run(Path(tmp) / f"live{int(live)}.mp4", args.episodes, live, catch, args.idle)
                walls[live].append(wall)
                returns[live] = rets
                stats = st or stats
    plain, live = statistics.median(walls[False]), statistics.median(walls[True])
    sys.stdout.write(f"without --live: median {plain:.2f} s {[f'{w:.2f}' for w in walls[False]]}\n"
                     f"with --live, two stalled clients and {args.idle} idle connections: median {live:.2f} s "
                     f"{[f'{w:.2f}' for w in walls[True]]}\n"
                     f"ratio live/plain: {live / plain:.3f}\n"
                     f"poses published (last live run): {stats.get('poses')}, events dropped for the stalled "
                     f"page: {stats.get('dropped')}, threads alive at its end: {stats.get('threads')}\n"
                     f"returns equal: {returns[False] == returns[True]}\n")


if __name__ == "__main__":
    main()
