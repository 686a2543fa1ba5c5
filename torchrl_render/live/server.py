"""The live server: a small standard-library HTTP server for ``--live`` and the notebook viewer.

:class:`LiveHub` holds what the page shows (the scene, the latest pose or frame, the metrics so
far) and fans events out to the connected pages through bounded queues: the publishing side
(the evaluation) only appends to a ``deque(maxlen=...)`` and never waits, so a slow or vanished
browser loses events, never slows the run. :class:`LiveServer` serves the hub with
``http.server.ThreadingHTTPServer`` on a daemon thread: a thread per request being served (at most
:data:`MAX_HANDLERS`, a 503 beyond), none for a connection that has not sent its request yet.

Security: every request must carry the random ``token`` (403 without it); only ``GET`` on the
fixed paths of :data:`ROUTES` (404 otherwise, 405 for other methods); request lines over 2 KiB,
headers over 8 KiB, ``..``, backslashes or NUL bytes in the path and malformed queries get 400;
a ``Host`` header other than a loopback name or the bound address gets 403 (a page of another site
that reached the server through DNS rebinding); nothing is read from disk per request. Server-sent
events (``/events``) carry the updates.

Example:
    >>> import json, urllib.request, urllib.error
    >>> server = LiveServer(LiveHub(), port=0)
    >>> urllib.request.urlopen(server.url).status
    200
    >>> try:
    ...     urllib.request.urlopen(server.origin + "/state")
    ... except urllib.error.HTTPError as err:
    ...     err.code
    403
    >>> json.load(urllib.request.urlopen(server.origin + "/state?token=" + server.token))["poses"]
    0
    >>> server.close()
"""

from __future__ import annotations

import hmac
import html
import ipaddress
import json
import logging
import secrets
import selectors
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from urllib.parse import parse_qs, unquote, urlsplit

import numpy as np
from numpy.typing import NDArray

from ..replay.page import page_resource

__all__ = ["LISTEN_BACKLOG", "LOOPBACK", "MAX_HANDLERS", "MAX_WAITING", "ROUTES", "LiveHub", "LiveServer",
           "live_page"]

log = logging.getLogger("torchrl_render.live")

ROUTES = ("/", "/state", "/scene", "/events", "/frame.png", "/ack")
LOOPBACK = ("127.0.0.1", "localhost", "::1")
MAX_REQUEST_LINE = 2048
MAX_HEADER_BYTES = 8192
LISTEN_BACKLOG = 128  # connections the kernel queues before the server thread accepts them
MAX_HANDLERS = 32  # requests served at once (each open page holds one event stream); more get a 503
MAX_WAITING = 256  # accepted connections waiting, threadless, for their request; the oldest is dropped
QUEUE_EVENTS = 64  # per page: older events are dropped when a page reads slower than the run publishes
_LIVE_SCRIPTS = ("decode.js", "view.js", "live.js")


def _dumps(data: object) -> str:
    return json.dumps(data, separators=(",", ":"), allow_nan=False, default=lambda v: v.item())


class LiveHub:
    """What the live page shows, and the event queues of the pages connected (thread-safe)."""

    def __init__(self, run: bool = True) -> None:
        self.lock = threading.Condition()
        self.scene_json: str | None = None
        self.scene_id = 0
        self.pose: dict[str, object] | None = None
        # a run's metrics so far; none for the MuJoCo viewer's page (run=False: it shows states sent to it)
        self.metrics: dict[str, object] = {"episodes_done": 0, "mean_return": None, "success_rate": None} if run else {}
        self.frame: NDArray[np.uint8] | None = None  # the latest frame (HxWx3), encoded on request by the server thread
        self.frame_seq = 0
        self._png: tuple[int, bytes] | None = None
        self.poses = 0
        self.acked = 0
        self.ended = False
        self.queues: list[deque[str]] = []
        self.dropped = 0

    @property
    def watched(self) -> bool:
        """Whether a page is connected (publishers skip work nobody sees)."""
        return bool(self.queues)

    def _publish(self, event: str, data: Mapping[str, object]) -> None:
        text = f"event: {event}\ndata: {_dumps(data)}\n\n"
        for queue in self.queues:
            if len(queue) == queue.maxlen:
                self.dropped += 1
            queue.append(text)
        self.lock.notify_all()

    def set_scene(self, scene: Mapping[str, object]) -> None:
        """A new model to draw (the pages rebuild their view)."""
        with self.lock:
            self.scene_json, self.scene_id = _dumps(scene), self.scene_id + 1
            self._publish("scene", {"id": self.scene_id})

    def set_pose(self, pose: Mapping[str, object]) -> int:
        """Body poses (``pos``: flat xpos, ``quat``: flat xquat w-first) plus facts; returns its number."""
        with self.lock:
            self.poses += 1
            self.pose = {**pose, "seq": self.poses}
            self._publish("pose", self.pose)
            return self.poses

    def set_frame(self, frame: NDArray[np.uint8], facts: Mapping[str, object]) -> None:
        """The latest frame (kept by reference: encoded only when a page asks for it)."""
        with self.lock:
            self.frame, self.frame_seq = frame, self.frame_seq + 1
            self._publish("frame", {**facts, "seq": self.frame_seq})

    def set_metrics(self, metrics: Mapping[str, object]) -> None:
        with self.lock:
            self.metrics = dict(metrics)
            self._publish("metrics", self.metrics)

    def end(self) -> None:
        with self.lock:
            self.ended = True
            self._publish("end", {"poses": self.poses})

    def ack(self, seq: int) -> None:
        with self.lock:
            self.acked = max(self.acked, seq)
            self.lock.notify_all()

    def wait_ack(self, seq: int, timeout: float) -> bool:
        """Waits until a page reports that it applied pose ``seq``."""
        with self.lock:
            return self.lock.wait_for(lambda: self.acked >= seq, timeout)

    def state(self) -> dict[str, object]:
        with self.lock:
            return {"poses": self.poses, "pose": self.pose, "metrics": self.metrics, "frame_seq": self.frame_seq,
                    "scene_id": self.scene_id, "ended": self.ended, "acked": self.acked}

    def png(self) -> bytes | None:
        with self.lock:
            frame, seq = self.frame, self.frame_seq
            if frame is None:
                return None
            if self._png is not None and self._png[0] == seq:
                return self._png[1]
        import io

        from PIL import Image

        buf = io.BytesIO()
        Image.fromarray(frame).save(buf, format="PNG", compress_level=1)
        with self.lock:
            self._png = (seq, buf.getvalue())
        return buf.getvalue()

    def subscribe(self) -> deque[str]:
        queue: deque[str] = deque(maxlen=QUEUE_EVENTS)
        with self.lock:
            self.queues.append(queue)
        return queue

    def unsubscribe(self, queue: deque[str]) -> None:
        with self.lock:
            if queue in self.queues:
                self.queues.remove(queue)


def live_page(title: str = "live") -> str:
    """The live page: ``live.html`` with three.js and the replay page's scene modules inlined."""
    template = resources.files("torchrl_render.live").joinpath("live.html").read_text(encoding="utf-8")
    template = template.replace("<!--TITLE-->", html.escape(title))
    three = "<script>" + page_resource("vendor/three.min.js").replace("</script", "<\\/script") + "</script>"
    app = "".join(f"<script>/* {n} */\n" + page_resource(f"js/{n}") + "</script>\n" for n in _LIVE_SCRIPTS)
    return template.replace("<!--THREE-->", three).replace("<!--APP-->", app)


class _Handler(BaseHTTPRequestHandler):
    server_version = "torchrl_render-live"
    sys_version = ""
    protocol_version = "HTTP/1.0"  # one request a connection; an event stream lasts until either side closes
    timeout = 10.0  # seconds a client may stall a read or a write before it is dropped
    live: LiveServer
    query: dict[str, list[str]]  # the request's query string, parsed (set by _route)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        code = {414: 400, 431: 400, 501: 405}.get(code, code)  # oversized line / headers, unknown method
        super().send_error(code, message, explain)

    def do_GET(self) -> None:
        route = self._route()
        if route is not None:
            getattr(self, "_get_" + (route.strip("/").replace(".", "_") or "page"))()

    def _route(self) -> str | None:
        if len(self.requestline) > MAX_REQUEST_LINE or sum(len(k) + len(v) for k, v in self.headers.items()) \
                > MAX_HEADER_BYTES:
            self.send_error(400, "request too large")
            return None
        try:
            parts = urlsplit(self.path)
            path = unquote(parts.path, errors="strict")
            query = parse_qs(parts.query, strict_parsing=bool(parts.query), max_num_fields=8)
        except (ValueError, UnicodeDecodeError):
            self.send_error(400, "malformed request")
            return None
        if not self.path.startswith("/") or ".." in path or "\\" in path or "\x00" in path or "//" in path:
            self.send_error(400, "bad path")
            return None
        if not self.live.host_allowed(self.headers.get("Host")):
            self.send_error(403, "this server answers only to its own address (Host header)")
            return None
        token = (query.get("token") or [""])[0]
        if not hmac.compare_digest(token.encode(), self.live.token.encode()):
            self.send_error(403, "a valid token is required")
            return None
        if path not in ROUTES:
            self.send_error(404)
            return None
        self.query = query
        return path

    def _send(self, body: bytes, ctype: str, code: int = 200) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self._common_headers()
        self.end_headers()
        self.wfile.write(body)

    def _common_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")  # the token is in the URL

    def _get_page(self) -> None:
        self._send(self.live.page.encode(), "text/html; charset=utf-8")

    def _get_state(self) -> None:
        self._send(_dumps(self.live.hub.state()).encode(), "application/json")

    def _get_scene(self) -> None:
        scene = self.live.hub.scene_json
        self._send((scene or "null").encode(), "application/json")

    def _get_frame_png(self) -> None:
        png = self.live.hub.png()
        if png is None:
            self._send(b"", "image/png", 204)
        else:
            self._send(png, "image/png")

    def _get_ack(self) -> None:
        try:
            seq = int((self.query.get("seq") or ["0"])[0])
        except ValueError:
            self.send_error(400, "seq must be an integer")
            return
        self.live.hub.ack(seq)
        self._send(b"{}", "application/json")

    def _get_events(self) -> None:
        hub = self.live.hub
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self._common_headers()
        self.end_headers()
        queue = hub.subscribe()
        try:
            self.wfile.write(f"event: hello\ndata: {_dumps(hub.state())}\n\n".encode())
            self.wfile.flush()
            while True:
                with hub.lock:
                    hub.lock.wait_for(lambda: queue or self.live.closing, 1.0)
                    batch = [queue.popleft() for _ in range(len(queue))]
                    closing = self.live.closing
                self.wfile.write(("".join(batch) or ": keep-alive\n\n").encode())
                self.wfile.flush()
                if closing:  # the last events (the run's end) were sent above
                    break
        except OSError:  # the page went away or stalled past the timeout
            pass
        finally:
            hub.unsubscribe(queue)

    def log_message(self, format: str, *args: object) -> None:
        log.debug("%s %s", self.address_string(), format % args)


class _Server(ThreadingHTTPServer):
    """A thread per request, not per connection: an accepted connection waits, threadless, in a selector until
    its request arrives (at most :data:`MAX_WAITING` of them, the oldest dropped first, each for at most
    ``_Handler.timeout`` seconds); at most :data:`MAX_HANDLERS` requests are served at once (an event stream
    is one), and a request beyond them gets a 503 at once. Idle or stalled clients cost a socket, never a
    thread, and cannot crowd out the page's own requests."""

    daemon_threads = True
    allow_reuse_address = False
    # the listen backlog: with socketserver's 5, a page opening its streams while the run keeps the
    # interpreter busy overflowed the queue and each further connection waited for a SYN retry
    request_queue_size = LISTEN_BACKLOG

    def __init__(self, address: tuple[str, int], handler: type[_Handler]) -> None:
        self.waiting: dict[socket.socket, tuple[float, object]] = {}  # socket -> (accepted at, client address)
        self.selector = selectors.DefaultSelector()
        self.slots = threading.BoundedSemaphore(MAX_HANDLERS)
        self.guard = threading.Lock()
        self.stopped = threading.Event()
        # a byte on this pair wakes the dispatcher (a connection parked, the server closing): it sleeps in
        # select() until then, never polling an idle server
        self.wake_in, self.wake_out = socket.socketpair()
        self.wake_in.setblocking(False)
        self.selector.register(self.wake_in, selectors.EVENT_READ)
        self.dispatcher: threading.Thread | None = None
        super().__init__(address, handler)  # a port that is taken raises here, after server_close
        self.dispatcher = threading.Thread(target=self._dispatch, name="torchrl_render-live-dispatch", daemon=True)
        self.dispatcher.start()

    def process_request(self, request: socket.socket | tuple[bytes, socket.socket], client_address: object) -> None:
        """Called on the accepting thread: park the connection until it has something to say."""
        assert isinstance(request, socket.socket)  # a TCP server's requests are its accepted sockets
        with self.guard:
            while len(self.waiting) >= MAX_WAITING:  # the oldest idle connection makes room
                oldest = min(self.waiting, key=lambda sock: self.waiting[sock][0])
                self._drop(oldest)
            self.waiting[request] = (time.monotonic(), client_address)
            self.selector.register(request, selectors.EVENT_READ)
        self._wake()

    def _wake(self) -> None:
        try:
            self.wake_out.send(b"\0")
        except OSError:  # its buffer is full: the dispatcher is awake already
            pass

    def _drop(self, sock: socket.socket) -> None:
        self.waiting.pop(sock, None)
        try:
            self.selector.unregister(sock)
        except (KeyError, ValueError):
            pass
        self.shutdown_request(sock)

    def _dispatch(self) -> None:
        timeout = _Handler.timeout
        while not self.stopped.is_set():
            try:  # with connections parked, wake each second to drop those past their timeout
                ready = self.selector.select(timeout=1.0 if self.waiting else None)
            except (OSError, ValueError):  # a socket closed under the selector: the next round sees the rest
                ready = []
            with self.guard:
                for key, _ in ready:
                    sock = key.fileobj
                    if sock is self.wake_in:
                        try:
                            while self.wake_in.recv(4096):
                                pass
                        except OSError:  # drained
                            pass
                        continue
                    if not isinstance(sock, socket.socket) or sock not in self.waiting:  # only sockets are parked
                        continue
                    _, client = self.waiting.pop(sock)
                    self.selector.unregister(sock)
                    if self.slots.acquire(blocking=False):
                        threading.Thread(target=self._serve, args=(sock, client), daemon=True,
                                         name="torchrl_render-live-request").start()
                    else:
                        self._busy(sock)
                now = time.monotonic()
                for sock in [s for s, (t, _) in self.waiting.items() if now - t > timeout]:
                    self._drop(sock)  # connected, said nothing for the handler's whole timeout

    def _serve(self, sock: socket.socket, client: object) -> None:
        try:
            self.process_request_thread(sock, client)  # handles, then closes the connection
        finally:
            self.slots.release()

    def _busy(self, sock: socket.socket) -> None:
        try:
            sock.settimeout(0.5)
            sock.sendall(b"HTTP/1.0 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\n"
                         b"Connection: close\r\n\r\n")
        except OSError:
            pass
        self.shutdown_request(sock)

    def server_close(self) -> None:
        self.stopped.set()
        self._wake()
        if self.dispatcher is not None:
            self.dispatcher.join(timeout=2)
        with self.guard:
            for sock in list(self.waiting):
                self._drop(sock)
        self.selector.close()
        self.wake_in.close()
        self.wake_out.close()
        super().server_close()

    def handle_error(self, request: socket.socket | tuple[bytes, socket.socket],
                     client_address: object) -> None:  # never a traceback on stderr
        log.debug("live server: request from %s failed", client_address, exc_info=True)


class LiveServer:
    """Serves a :class:`LiveHub` on ``host:port`` (a free port if that one is taken) from a daemon thread.

    Args:
        hub: What to serve.
        host: Address to bind (loopback by default; anything else logs a warning).
        port: Preferred port; ``0`` picks a free one.
        title: The page's title.
    """

    def __init__(self, hub: LiveHub, host: str = "127.0.0.1", port: int = 0, title: str = "live") -> None:
        self.hub, self.host, self.token, self.closing = hub, host, secrets.token_urlsafe(18), False
        self.title = title
        self._page: str | None = None  # live_page(title), built on first request
        handler = type("Handler", (_Handler,), {"live": self})
        try:
            self.httpd = _Server((host, int(port)), handler)
        except OSError:
            if not port:
                raise
            self.httpd = _Server((host, 0), handler)
            log.info("port %s is taken: serving on a free port instead", port)
        self.port = int(self.httpd.server_address[1])
        if host not in LOOPBACK:
            log.warning("the live server listens on %s: anyone who can reach this address and has the URL's "
                        "token can watch the run", host)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                       name="torchrl_render-live", daemon=True)
        self.thread.start()

    @property
    def page(self) -> str:
        """The page's text, assembled on first request (about 0.6 MB: three.js inlined)."""
        if self._page is None:
            self._page = live_page(self.title)
        return self._page

    @property
    def origin(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def url(self) -> str:
        """The page's address, token included."""
        return f"{self.origin}/?token={self.token}"

    def close(self) -> None:
        """Stops serving (idempotent); open event streams end within a second."""
        if self.closing:
            return
        self.closing = True
        with self.hub.lock:
            self.hub.lock.notify_all()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)

    def host_allowed(self, header: str | None) -> bool:
        """Whether a request's ``Host`` header names this server: a loopback name or the bound address (any
        IP literal when bound to all interfaces). A foreign name means a page of another site reached the
        server through DNS rebinding, so it is refused even with the token. No header (an HTTP/1.0 client,
        never a browser) is let through."""
        if header is None:
            return True
        name = header.strip().lower()
        if name.startswith("["):
            name = name[1:name.find("]")] if "]" in name else ""
        elif name.count(":") == 1:
            name = name.partition(":")[0]
        if name in LOOPBACK or name == self.host.lower():
            return True
        if self.host in ("", "0.0.0.0", "::"):
            try:
                ipaddress.ip_address(name)
            except ValueError:
                return False
            return True
        return False

    def __enter__(self) -> LiveServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def wait_until(predicate: Callable[[], object], timeout: float, interval: float = 0.05) -> bool:
    """Polls ``predicate`` until it is true or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)
    return True
