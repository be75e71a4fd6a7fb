"""A legacy HTTP+SSE (protocol 2024-11-05) MCP server for tests, on the standard library.

``GET /sse`` opens the event stream: the first event is ``endpoint`` (the URL to POST to,
by default the relative ``/messages?sessionId=<id>``), then every message from the server
is a ``message`` event. ``POST /messages?sessionId=<id>`` takes one JSON-RPC message and
answers ``202 Accepted``; the reply travels on the stream. The MCP side is a
:class:`mcp_sync.testing.FakeServer`, one connection per stream.

Knobs for tests (set them before the client connects): ``endpoint`` (a function of the
session id returning the endpoint event's data, or None to send none), ``preamble`` (raw
bytes the stream starts with, before the endpoint event), ``get_status`` and
``post_status`` (answer GETs or POSTs with an error status instead), ``get_headers`` and
``post_headers`` (extra headers on those errors), ``required_headers`` (401 unless every
one is present), ``post_hook(handler, message)`` (takes over a POST to a known session
when it returns True: it writes the whole reply). ``requests`` records every request as
``(method, path, headers)``.
``end_streams()`` hangs up on every open stream; ``send_raw(text)`` writes raw SSE text to
every open stream.

Binds 127.0.0.1 on a free port (HTTPS with ``tls=``, an ``ssl.SSLContext`` from
tests/servers/tls.py); ``stop()`` (or the context manager) ends every stream and joins
every thread it started.
"""

from __future__ import annotations

import json
import queue
import select
import socket
import ssl
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional, Tuple
from urllib.parse import parse_qs, urlsplit

from mcp_sync.testing import FakeServer, ServerConnection

from .tls import wrap_listener

__all__ = ["LegacySseServer", "SseStream"]

# A frame queued to a stream that tells its handler to hang up.
_HANG_UP = object()


class SseStream:
    """One open ``GET /sse`` stream and the FakeServer connection behind it."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.frames: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.connection: Optional[ServerConnection] = None
        #: Set when the handler has stopped writing to this stream.
        self.ended = threading.Event()

    def send_message(self, message: Dict[str, Any]) -> None:
        self.frames.put(f"event: message\ndata: {json.dumps(message)}\n\n")

    def hang_up(self) -> None:
        self.frames.put(_HANG_UP)


class _Handler(BaseHTTPRequestHandler):
    server: _HttpServer
    # HTTP/1.0: every response ends with the connection, so a stream needs no framing.
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output quiet

    def _record(self) -> None:
        self.server.owner.requests.append((self.command, self.path, dict(self.headers)))

    def _error(self, status: int, body: str = "", headers: Optional[Dict[str, str]] = None) -> None:
        data = body.encode()
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorised(self) -> bool:
        required = self.server.owner.required_headers
        if all(self.headers.get(k) == v for k, v in required.items()):
            return True
        self._error(401, "missing credentials",
                    {"WWW-Authenticate": 'Bearer realm="legacy", error="invalid_token"'})
        return False

    def do_GET(self) -> None:
        owner = self.server.owner
        self._record()
        if urlsplit(self.path).path != "/sse":
            self._error(404, "not found")
            return
        if owner.get_status is not None:
            self._error(owner.get_status, "refused", owner.get_headers)
            return
        if not self._authorised():
            return
        stream = SseStream(uuid.uuid4().hex)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self.wfile.write(owner.preamble)
        endpoint = owner.endpoint(stream.session_id)
        if endpoint is not None:
            self.wfile.write(f"event: endpoint\ndata: {endpoint}\n\n".encode())
        self.wfile.flush()
        stream.connection = owner.fake.open_connection(stream.send_message)
        owner._add_stream(stream)
        try:
            self._pump(stream)
        finally:
            stream.ended.set()
            owner._remove_stream(stream)
            stream.connection.close()

    def _pump(self, stream: SseStream) -> None:
        """Write queued frames until told to hang up, the client leaves, or the server stops."""
        owner = self.server.owner
        while not owner.stopping.is_set():
            try:
                frame = stream.frames.get(timeout=0.02)
            except queue.Empty:
                if self._client_left():
                    return
                continue
            if frame is _HANG_UP:
                return
            try:
                self.wfile.write(frame.encode())
                self.wfile.flush()
            except OSError:
                return

    def _client_left(self) -> bool:
        readable, _, _ = select.select([self.connection], [], [], 0)
        if not readable:
            return False
        if isinstance(self.connection, ssl.SSLSocket):
            # TLS cannot peek. The client sends nothing after its GET, so what arrives
            # now is its close_notify or its end: reading it consumes nothing of value.
            self.connection.setblocking(False)
            try:
                return self.connection.recv(1) == b""
            except ssl.SSLWantReadError:  # part of a record: nothing decided yet
                return False
            except OSError:
                return True
            finally:
                self.connection.setblocking(True)
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def do_POST(self) -> None:
        owner = self.server.owner
        self._record()
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        url = urlsplit(self.path)
        if url.path != "/messages":
            self._error(404, "not found")
            return
        if owner.post_status is not None:
            self._error(owner.post_status, "the server broke", owner.post_headers)
            return
        if not self._authorised():
            return
        session_id = (parse_qs(url.query).get("sessionId") or [""])[0]
        stream = owner.streams.get(session_id)
        if stream is None or stream.connection is None:
            self._error(404, f"unknown session {session_id!r}")
            return
        try:
            message = json.loads(body)
        except ValueError:
            self._error(400, "invalid JSON")
            return
        hook = owner.post_hook
        if hook is not None and hook(self, message):
            return
        self._error(202, "Accepted")
        stream.connection.receive(message)


class _HttpServer(ThreadingHTTPServer):
    # Handler threads are not daemons: server_close() joins every one of them.
    daemon_threads = False
    block_on_close = True

    def __init__(self, owner: LegacySseServer) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ssl.SSLError):
            return  # a client that refused the certificate: what a TLS test expects
        super().handle_error(request, client_address)


class LegacySseServer:
    """A threaded legacy-SSE MCP server on 127.0.0.1. Use as a context manager."""

    def __init__(self, fake: Optional[FakeServer] = None, *,
                 tls: Optional[ssl.SSLContext] = None) -> None:
        self.fake = fake or FakeServer("legacy")
        self.scheme = "https" if tls is not None else "http"
        self.endpoint: Callable[[str], Optional[str]] = lambda sid: f"/messages?sessionId={sid}"
        self.preamble = b""
        self.get_status: Optional[int] = None
        self.get_headers: Dict[str, str] = {}
        self.post_status: Optional[int] = None
        self.post_headers: Dict[str, str] = {}  # extra headers on that error (a Location)
        self.required_headers: Dict[str, str] = {}
        self.post_hook: Optional[Callable[[_Handler, Any], bool]] = None
        self.requests: List[Tuple[str, str, Dict[str, str]]] = []
        self.streams: Dict[str, SseStream] = {}
        self.stopping = threading.Event()
        # Guards streams and signals stream_opened.
        self._lock = threading.Condition()
        self._httpd = _HttpServer(self)
        if tls is not None:
            self._httpd.socket = wrap_listener(self._httpd.socket, tls)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
            name="legacy-sse-server",
        )

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """The URL a client connects to (the SSE stream)."""
        return f"{self.scheme}://127.0.0.1:{self.port}/sse"

    def start(self) -> LegacySseServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self._httpd.shutdown()
        self._thread.join(5.0)
        self._httpd.server_close()  # joins the handler threads

    def __enter__(self) -> LegacySseServer:
        return self.start()

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    # -- streams -------------------------------------------------------------------------

    def _add_stream(self, stream: SseStream) -> None:
        with self._lock:
            self.streams[stream.session_id] = stream
            self._lock.notify_all()

    def _remove_stream(self, stream: SseStream) -> None:
        with self._lock:
            self.streams.pop(stream.session_id, None)
            self._lock.notify_all()

    def wait_streams(self, count: int, timeout: float = 5.0) -> List[SseStream]:
        """Block until exactly ``count`` streams are open; return them."""
        with self._lock:
            if not self._lock.wait_for(lambda: len(self.streams) == count, timeout):
                raise TimeoutError(f"{len(self.streams)} streams open, expected {count}")
            return list(self.streams.values())

    def end_streams(self) -> None:
        """Hang up on every open stream (the client sees the stream end)."""
        with self._lock:
            streams = list(self.streams.values())
        for stream in streams:
            stream.hang_up()

    def send_raw(self, text: str) -> None:
        """Write raw SSE text to every open stream."""
        with self._lock:
            streams = list(self.streams.values())
        for stream in streams:
            stream.frames.put(text)
