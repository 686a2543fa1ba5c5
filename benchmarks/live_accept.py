"""Connection set-up time of the live server while the run keeps the interpreter busy.

A thread spins in Python (as an evaluation does between its I/O), and a burst of clients (as a page
opening its page, scene and event stream, and a few tabs) connects and fetches ``/state``; reports the
median and worst connect+reply time, for socketserver's default listen backlog (5) and the server's.

    .venv/bin/python benchmarks/live_accept.py [--clients 40]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def measure(backlog: int, clients: int) -> dict:
    from torchrl_render.live import server as srv

    srv._Server.request_queue_size = backlog
    stop = threading.Event()

    def busy() -> None:
        while not stop.is_set():
            sum(i * i for i in range(20000))

    spinner = threading.Thread(target=busy, daemon=True)
    spinner.start()
    try:
        with srv.LiveServer(srv.LiveHub(), port=0) as live:
            url = f"{live.origin}/state?token={live.token}"

            def one(_: int) -> float:
                t0 = time.perf_counter()
                urllib.request.urlopen(url, timeout=30).read()
                return time.perf_counter() - t0

            with ThreadPoolExecutor(clients) as pool:
                times = sorted(pool.map(one, range(clients)))
    finally:
        stop.set()
        spinner.join()
    return {"backlog": backlog, "clients": clients, "median_ms": 1000 * statistics.median(times),
            "max_ms": 1000 * times[-1]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=40)
    args = parser.parse_args()
    from torchrl_render.live.server import LISTEN_BACKLOG

    for backlog in (5, LISTEN_BACKLOG):
        r = measure(backlog, args.clients)
        print(f"backlog {r['backlog']:>4}: {r['clients']} clients at once, connect+reply median "
              f"{r['median_ms']:.1f} ms, worst {r['max_ms']:.1f} ms")


if __name__ == "__main__":
    main()
