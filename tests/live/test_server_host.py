"""The live server's own address checks and listen backlog, on a real server over loopback sockets."""

from __future__ import annotations

import http.client
import json
import socket

import pytest

from torchrl_render.live.server import LISTEN_BACKLOG, LiveHub, LiveServer


def _status(server, host_header, path="/state"):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.putrequest("GET", f"{path}?token={server.token}", skip_host=True)
        if host_header is not None:
            conn.putheader("Host", host_header)
        conn.endheaders()
        reply = conn.getresponse()
        return reply.status, reply.read()
    finally:
        conn.close()


@pytest.mark.slow
def test_a_foreign_host_header_is_refused_even_with_the_token():
    with LiveServer(LiveHub(), port=0) as server:
        for good in (f"127.0.0.1:{server.port}", f"localhost:{server.port}", "localhost", f"[::1]:{server.port}",
                     "LOCALHOST", None):
            assert _status(server, good)[0] == 200, good
        for bad in (f"evil.example:{server.port}", "evil.example", f"10.1.2.3:{server.port}", "127.0.0.1.nip.io",
                    f"[fe80::1]:{server.port}", ""):
            status, body = _status(server, bad)
            assert status == 403 and b"Host header" in body, bad


@pytest.mark.slow
def test_bound_to_all_interfaces_ip_literals_are_accepted_and_names_are_not():
    with LiveServer(LiveHub(), host="0.0.0.0", port=0) as server:
        assert server.host_allowed("192.168.1.20:8000") and server.host_allowed("localhost")
        assert not server.host_allowed("rebind.attacker.example:8000")
        assert _status(server, "attacker.example")[0] == 403


@pytest.mark.slow
def test_the_listen_backlog_queues_many_connections_while_the_server_is_busy():
    """With the serving loop stopped (as when the run holds the interpreter), the kernel still completes the
    handshakes of a page's burst of connections; socketserver's backlog of 5 dropped all but six of them."""
    assert LISTEN_BACKLOG >= 128
    server = LiveServer(LiveHub(), port=0)
    server.httpd.shutdown()  # nothing accepts any more; the listening socket stays open
    sockets = []
    try:
        for _ in range(64):
            sockets.append(socket.create_connection(("127.0.0.1", server.port), timeout=5))
        assert len(sockets) == 64
    finally:
        for s in sockets:
            s.close()
        server.close()


def _get(server, path):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("GET", f"{path}{'&' if '?' in path else '?'}token={server.token}")
        reply = conn.getresponse()
        return reply.status, reply.read()
    finally:
        conn.close()


def _wait(predicate, timeout=10.0):
    import time

    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.05)


@pytest.mark.slow
def test_idle_connections_cost_no_thread_and_leave_the_page_served():
    """500 connections that never send a request (a port scan, a stuck client, a flood) got a thread each
    (503 threads); now they wait threadless, the oldest beyond MAX_WAITING are dropped, and the page and its
    state are served meanwhile."""
    import threading

    from torchrl_render.live.server import MAX_WAITING

    with LiveServer(LiveHub(), port=0) as server:
        _get(server, "/state")
        base = threading.active_count()
        idle = [socket.create_connection(("127.0.0.1", server.port), timeout=5) for _ in range(500)]
        try:
            _wait(lambda: len(server.httpd.waiting) == MAX_WAITING)  # every one accepted, the oldest dropped
            assert threading.active_count() <= base + 1   # the 500 hold no thread (they would never end)
            status, body = _get(server, "/")
            assert status == 200 and b"<html" in body.lower()
            server.hub.set_metrics({"episodes": 3})
            status, body = _get(server, "/state")
            assert status == 200 and json.loads(body)["metrics"] == {"episodes": 3}
            # each request's thread ends with its request: it closes the connection and returns once its reply is
            # written, which the client may have read before, so the count is awaited, not sampled
            _wait(lambda: threading.active_count() <= base + 1)
            dropped = sum(1 for s in idle[:500 - MAX_WAITING] if s.recv(1) == b"")  # closed by the server
            assert dropped == 500 - MAX_WAITING
        finally:
            for s in idle:
                s.close()


@pytest.mark.slow
def test_requests_beyond_the_cap_get_a_clean_503_and_the_server_recovers():
    from torchrl_render.live.server import MAX_HANDLERS

    with LiveServer(LiveHub(), port=0) as server:
        streams = []
        try:
            for _ in range(MAX_HANDLERS):  # event streams hold their request (and its thread) open
                conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
                conn.request("GET", f"/events?token={server.token}")
                assert conn.getresponse().status == 200
                streams.append(conn)
            status, body = _get(server, "/state")
            assert status == 503 and body == b""
        finally:
            for conn in streams:
                conn.close()
        _wait(lambda: _get(server, "/state")[0] == 200)   # the slots come back as the streams end
