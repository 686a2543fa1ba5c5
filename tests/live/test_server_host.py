"""The live server's own address checks and listen backlog, on a real server over loopback sockets."""

from __future__ import annotations

import http.client
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
