"""``--live``: the live page in real headless Chromium while a real run goes on, and the server's refusals.

The page is watched while HalfCheetah-v5 (poses, 3-D view) or TinyEnv with pixels (frames) runs on
a thread; the same run without ``--live`` gives byte-identical artifacts and equal metrics.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from torchrl_render import RenderConfig, render_policy

from helpers.browser import browser, needs_browser
from helpers.live import run_in_thread


def _cfg(out, **kw):
    base = dict(policy="helpers.live:slow_linear_policy", env="HalfCheetah-v5", num_trajs=3, max_steps=200,
                out=str(out),
                width=64, height=64, render_quality="fast", background_encode=False, progress=False)
    return RenderConfig(**{**base, **kw})


def _metrics(result):
    keep = ("episode_ix", "seed", "sum_reward", "length", "success", "num_frames")
    return [{k: e[k] for k in keep} for e in result.metrics["per_episode"]]


def _open(context, url):
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("requestfailed", lambda r: None if r.url.split("?")[0].endswith("/events") and "ABORTED" in r.failure
            else errors.append(f"{r.url.split('?')[0]}: {r.failure}"))  # the page closes its stream at the end
    page.goto(url)
    page.wait_for_function("() => window.live !== undefined", timeout=20000)
    page.evaluate("window.live.ready.then(() => true)")
    return page, errors


@needs_browser
@pytest.mark.slow
def test_live_page_follows_a_mujoco_run(tmp_path):
    with browser() as context, run_in_thread(_cfg(tmp_path / "live.mp4", live=0)) as (url, box, thread):
        assert url.startswith("http://127.0.0.1:") and "token=" in url
        if True:
            page, errors = _open(context, url)
            page.wait_for_function("() => live.state().mode === '3d' && live.state().applied > 0", timeout=30000)
            first = page.evaluate("live.bodyPositions()")
            step1 = page.evaluate("live.state().step")
            page.wait_for_function(f"() => live.state().step !== {step1}", timeout=20000)
            second = page.evaluate("live.bodyPositions()")
            assert len(first) == len(second) > 1 and first != second  # the episode advances on the page
            page.wait_for_function("() => live.metrics().episodes_done >= 1", timeout=30000)
            done = page.evaluate("live.metrics()")
            page.screenshot(path=str(tmp_path / "live.png"))
            assert thread.is_alive() or "result" in box
            page.wait_for_function("() => live.state().ended", timeout=60000)
            final = page.evaluate("live.metrics()")
            assert errors == []
    assert "error" not in box, box.get("error")
    live = box["result"]
    assert final["episodes_done"] == 3 and done["episodes_done"] >= 1
    returns = [e["sum_reward"] for e in live.metrics["per_episode"]]
    assert final["mean_return"] == pytest.approx(sum(returns) / 3, rel=1e-6)
    plain = render_policy(_cfg(tmp_path / "plain.mp4"))
    assert _metrics(live) == _metrics(plain)
    assert (tmp_path / "live.mp4").read_bytes() == (tmp_path / "plain.mp4").read_bytes()


@needs_browser
@pytest.mark.slow
def test_live_page_shows_frames_of_other_envs(tmp_path):
    cfg = _cfg(tmp_path / "tiny.mp4", live=0, env="helpers.tinyenv:make_env", policy="helpers.live:slow_tiny_policy",
               env_kwargs={"pixels": True, "size": 32, "base_len": 150}, render_backend="pixels", num_trajs=2,
               max_steps=None)
    with browser() as context, run_in_thread(cfg) as (url, box, _thread):
        page, errors = _open(context, url)
        page.wait_for_function("() => live.state().frames > 0", timeout=30000)
        page.wait_for_function("() => document.getElementById('frame').naturalWidth === 32", timeout=20000)
        n = page.evaluate("live.state().frames")
        page.wait_for_function(f"() => live.state().frames > {n}", timeout=20000)
        assert page.evaluate("live.state().mode") == "frames"
        page.wait_for_function("() => live.state().ended", timeout=60000)
        assert page.evaluate("live.metrics().episodes_done") == 2 and errors == []
    assert "error" not in box, box.get("error")


def _raw(origin, data: bytes) -> int:
    """The status of the reply to raw bytes (an HTTP/0.9-style reply to garbage has only the error page)."""
    host, port = urlsplit(origin).hostname, urlsplit(origin).port
    with socket.create_connection((host, port), timeout=10) as s:
        s.sendall(data)
        reply = s.makefile("rb").read()
    if reply.startswith(b"HTTP/"):
        return int(reply.split()[1])
    return 400 if b"Error code: 400" in reply else -1


def _get(origin, path, headers=None, method="GET") -> int:
    parts = urlsplit(origin)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        conn.request(method, path, headers=headers or {})
        return conn.getresponse().status
    finally:
        conn.close()


@pytest.mark.slow
def test_live_server_refuses_bad_requests_and_the_run_goes_on(tmp_path):
    with run_in_thread(_cfg(tmp_path / "live.jsonl", live=0, num_trajs=2, max_steps=150)) as (url, box, thread):
        parts = urlsplit(url)
        origin, token = f"{parts.scheme}://{parts.netloc}", parts.query.split("=", 1)[1]
        assert _get(origin, "/") == 403 and _get(origin, "/state?token=wrong") == 403
        assert _get(origin, "/etc/passwd?token=" + token) == 404
        assert _get(origin, "/../../etc/passwd?token=" + token) == 400
        assert _get(origin, "/%2e%2e/%2e%2e/etc/passwd?token=" + token) == 400
        assert _get(origin, "/state?token=" + token, {"X-Big": "a" * 20000}) == 400
        assert _raw(origin, b"GET /state?token=" + token.encode() + b" HTTP/1.0\r\nX: " + b"b" * 70000 + b"\r\n\r\n") \
            == 400
        assert _raw(origin, b"GET /" + b"c" * 5000 + b" HTTP/1.0\r\n\r\n") == 400
        assert _raw(origin, b"\x16\x03\x01garbage\r\n\r\n") == 400
        assert _get(origin, "/state?token=" + token, method="POST") == 405
        assert _get(origin, "/state?token=" + token, method="DELETE") == 405
        state = json.load(urllib.request.urlopen(f"{origin}/state?token={token}", timeout=10))
        assert state["ended"] is False
        assert thread.is_alive()  # still running after every refusal
    assert "error" not in box, box.get("error")
    assert box["result"].metrics["aggregated"]["n_episodes"] == 2
    with pytest.raises(OSError):  # the server stopped with the run
        urllib.request.urlopen(f"{origin}/state?token={token}", timeout=5)


@pytest.mark.slow
def test_live_port_taken_falls_back_to_a_free_port_and_keep_waits(tmp_path):
    from torchrl_render.live.server import LiveHub, LiveServer

    with LiveServer(LiveHub(), port=0) as first:
        cfg = _cfg(tmp_path / "k.jsonl", live=first.port, live_keep=0.5, num_trajs=1, max_steps=5,
                   policy="helpers.policies:linear_policy")
        started = time.monotonic()
        with run_in_thread(cfg) as (url, box, _thread):
            assert urlsplit(url).port != first.port
        assert time.monotonic() - started >= 0.5 and "error" not in box


@pytest.mark.slow
def test_live_keep_serves_the_ended_page_once_every_artifact_is_written(tmp_path):
    """--live-keep: the page stays up after the run, and by then the artifact and its sidecar are complete."""
    from torchrl_render.live.server import wait_until

    out = tmp_path / "kept.jsonl"
    cfg = _cfg(out, live=0, live_keep=5.0, num_trajs=2, max_steps=5, policy="helpers.policies:linear_policy")
    with run_in_thread(cfg) as (url, box, thread):
        sidecar = Path(f"{out}.metadata.json")
        assert wait_until(sidecar.exists, 60)
        assert thread.is_alive()  # lingering, with everything written
        assert len(json.loads(sidecar.read_text())["metrics"]["per_episode"]) == 2
        assert len(out.read_text().splitlines()) > 0
        parts = urlsplit(url)
        state = json.load(urllib.request.urlopen(f"{parts.scheme}://{parts.netloc}/state?{parts.query}", timeout=5))
        assert state["ended"] and state["metrics"]["episodes_done"] == 2
    assert "error" not in box and box["result"].metrics["aggregated"]["n_episodes"] == 2


@pytest.mark.slow
def test_a_client_that_stops_reading_loses_events_and_never_blocks_the_publisher():
    """A real socket on the event stream that never reads: once the socket buffers are full its server thread
    blocks on the write, its bounded queue drops the oldest events, and publishing never waits."""
    from torchrl_render.live.server import QUEUE_EVENTS, LiveHub, LiveServer, wait_until

    hub = LiveHub()
    with LiveServer(hub, port=0) as server:
        stalled = socket.create_connection(("127.0.0.1", server.port))
        stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stalled.sendall(f"GET /events?token={server.token} HTTP/1.0\r\n\r\n".encode())
        assert wait_until(lambda: hub.watched, 10)
        big = [0.5] * 20000  # ~100 KB an event: a few fill the loopback buffers
        for i in range(400):
            hub.set_pose({"episode": 0, "step": i, "pos": big, "quat": []})
        assert hub.poses == 400 and hub.dropped > 0
        assert all(len(q) <= QUEUE_EVENTS for q in hub.queues)
        with urllib.request.urlopen(f"{server.origin}/state?token={server.token}", timeout=5) as reply:
            assert json.load(reply)["poses"] == 400  # other clients are still served
        stalled.close()
