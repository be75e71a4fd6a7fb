"""A Streamable HTTP MCP server for tests (session era; 2026-07-28 with ``stateless``),
on the standard library.

``POST /mcp`` takes one JSON-RPC message. ``initialize`` opens an MCP session (a new
``Mcp-Session-Id``, one :class:`mcp_sync.testing.FakeServer` connection); every later
message must carry that id (else 400, or 404 for an id the server does not know).
Requests are answered with an SSE stream (``reply="sse"``: a priming event with an id,
then every message the request causes, the response last) or one JSON body
(``reply="json"``). Notifications and responses get ``202``. ``GET /mcp`` opens the
session's stream for messages not tied to a request, or resumes a request's stream with
``Last-Event-ID``. ``DELETE /mcp`` ends the session. Any other path (but ``/mcp/``) gets
a web server's HTML ``404`` page.

Knobs, set before the client sends what they apply to:

* ``reply``: ``"sse"`` or ``"json"``.
* ``get_status``: answer every plain GET with this status (405: "no GET stream here").
* ``get_gate``: an Event; GETs get no answer until it is set.
* ``retry_ms``: the ``retry:`` field of every priming event.
* ``priming_data``: whether priming events have a ``data:`` line (empty); False sends
  only their ``id`` and ``retry``.
* ``break_streams``: end this many request streams right after their priming event; what
  the request then produces waits for a GET with ``Last-Event-ID``.
* ``cut_events``: with ``break_streams``, the stream ends half-way through the event after
  the priming one (its ``id`` line sent, its data cut short) instead.
* ``hold_open``: an Event; request streams stay open after their response until it is set.
* ``keepalive``: seconds between ``: keep-alive`` comments on an idle request stream.
* ``post_hook(handler, message)``: takes over a POST when it returns True (it writes the
  whole reply with the handler's ``send_status``/``start_events``/``write_event``/...).
* ``delete_hook(handler)``: takes over a DELETE when it returns True (after the session
  it names was ended).
* ``stateless``: also serve the 2026-07-28 era (the FakeServer must answer
  ``server/discover``): a POST with no ``Mcp-Session-Id`` (but ``initialize``) goes to one
  FakeServer connection that all such requests share, and its reply names no session. A
  client that closes a request's event stream before the response has cancelled it (the
  era's only cancellation): ``on_stream_closed(request_id)`` is then called.

Records: ``requests`` (every request, :class:`Recorded`), ``wait_for(predicate)``.
Controls: ``expire_sessions()`` (the server forgets them: later requests get 404),
``drop_get_streams()``, ``push(method, params)`` (a notification on the GET streams),
``stream_end(request_id)`` (an Event set when that request's reply is over).

``tls``: an ``ssl.SSLContext`` (tests/servers/tls.py) serves HTTPS instead of HTTP.

Binds 127.0.0.1 on a free port; ``stop()`` (or the context manager) ends every stream,
closes the FakeServer connections and joins the serving thread. Its threads are named
``http-test-*``, outside the ``mcp-sync`` names the leak check watches.
"""

from __future__ import annotations

import itertools
import json
import select
import socket
import ssl
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional, Tuple
from urllib.parse import urlsplit

from mcp_sync.testing import FakeServer, ServerConnection

from .tls import wrap_listener

__all__ = ["McpHttpServer", "Recorded"]

# How often a stream's writer wakes to check for the server stopping (seconds).
_POLL = 0.05
# The longest a JSON reply waits for the FakeServer's answer.
_JSON_WAIT = 30.0
# What a web framework answers for a path it does not serve.
NOT_FOUND_PAGE = (b"<!doctype html>\n<html lang=en>\n<title>404 Not Found</title>\n"
                  b"<h1>Not Found</h1>\n<p>The requested URL was not found on the server. If you "
                  b"entered the URL manually please check your spelling and try again.</p>\n")


def echo_fake(name: str) -> FakeServer:
    """A FakeServer with one tool, ``echo(text)``: the peer most HTTP tests need."""
    fake = FakeServer(name)

    @fake.tool()
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    return fake


class Recorded:
    """One request the server received."""

    def __init__(self, method: str, path: str, headers: Dict[str, str], body: bytes) -> None:
        self.time = time.monotonic()
        self.method = method
        self.path = path
        self.headers = headers  # keys lower-cased
        self.body = body
        try:
            self.json: Any = json.loads(body) if body else None
        except ValueError:
            self.json = None

    @property
    def rpc_method(self) -> Optional[str]:
        return self.json.get("method") if isinstance(self.json, dict) else None

    def header(self, name: str) -> Optional[str]:
        return self.headers.get(name.lower())

    def __repr__(self) -> str:
        return f"<{self.method} {self.rpc_method or ''} {self.headers.get('mcp-session-id')}>"


class _Stream:
    """The events of one SSE stream (or one JSON reply), kept for replay.

    ``cond`` guards ``events``, ``done`` and ``closed``.
    """

    def __init__(self, stream_id: str, request_id: Any = None) -> None:
        self.stream_id = stream_id
        self.request_id = request_id
        self.events: List[Tuple[str, Dict[str, Any]]] = []  # (event id, message)
        self.done = False  # the response was added
        self.closed = False  # no writer should go on with it
        self.cond = threading.Condition()

    def add(self, message: Dict[str, Any]) -> None:
        with self.cond:
            self.events.append((f"{self.stream_id}-{len(self.events) + 1}", message))
            if self.request_id is not None and message.get("id") == self.request_id and (
                "method" not in message
            ):
                self.done = True
            self.cond.notify_all()

    def close(self) -> None:
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def wait(self, have: int, timeout: float) -> Tuple[List[Tuple[str, Dict[str, Any]]], bool]:
        """Events after the first ``have`` (waiting up to ``timeout`` for one), and closed."""
        with self.cond:
            if len(self.events) <= have and not self.closed:
                self.cond.wait(timeout)
            return self.events[have:], self.closed


class _Session:
    """One MCP session: its FakeServer connection and its streams.

    ``lock`` guards ``streams``, ``open_requests``, ``get_stream`` and ``backlog``.
    """

    def __init__(self, server: McpHttpServer, session_id: str) -> None:
        self.server = server
        self.session_id = session_id
        self.lock = threading.Lock()
        self.streams: Dict[str, _Stream] = {}
        self.open_requests: Dict[Any, _Stream] = {}
        self.get_stream: Optional[_Stream] = None
        self.backlog: List[Dict[str, Any]] = []  # for the GET stream, before one is open
        self._ids = itertools.count(1)
        self.connection: ServerConnection = server.fake.open_connection(self.route)

    def new_stream(self, prefix: str, request_id: Any = None) -> _Stream:
        stream = _Stream(f"{prefix}{next(self._ids)}", request_id)
        with self.lock:
            self.streams[stream.stream_id] = stream
            if request_id is not None:
                self.open_requests[request_id] = stream
        return stream

    def cancel(self, request_id: Any) -> None:
        """The client cancelled the request: its stream ends without a response."""
        with self.lock:
            stream = self.open_requests.get(request_id)
        if stream is not None:
            stream.close()

    def finish(self, stream: _Stream) -> None:
        with self.lock:
            if self.open_requests.get(stream.request_id) is stream:
                del self.open_requests[stream.request_id]

    def route(self, message: Dict[str, Any]) -> None:
        """Where a message from the FakeServer goes: its request's stream, else GET's."""
        with self.lock:
            target = None
            if "method" not in message:
                target = self.open_requests.get(message.get("id"))
            if target is None:
                target = getattr(self.server.local, "stream", None)
            if target is None and message.get("method") == "notifications/progress":
                target = self.open_requests.get((message.get("params") or {}).get(
                    "progressToken"))
            if target is None and self.open_requests:
                target = list(self.open_requests.values())[-1]
            if target is not None and target.request_id is None:
                target = None  # a JSON reply cannot carry it
            if target is None:
                if self.get_stream is not None and not self.get_stream.closed:
                    target = self.get_stream
                else:
                    self.backlog.append(message)
                    return
        target.add(message)

    def open_get_stream(self) -> _Stream:
        stream = self.new_stream("g")
        with self.lock:
            self.get_stream = stream
            backlog, self.backlog = self.backlog, []
        for message in backlog:
            stream.add(message)
        return stream

    def close(self) -> None:
        with self.lock:
            streams = list(self.streams.values())
        for stream in streams:
            stream.close()
        self.connection.close()


class _Handler(BaseHTTPRequestHandler):
    server: _HttpServer
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Small SSE chunks go out at once, as from any real server (no Nagle delay).
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # tests stay quiet

    @property
    def mcp(self) -> McpHttpServer:
        return self.server.mcp

    # -- writing helpers (for post hooks too) ----------------------------------------------

    def send_status(self, status: int, body: bytes = b"",
                    headers: Optional[Dict[str, str]] = None,
                    content_type: str = "application/json") -> None:
        """A whole reply with a body of known length."""
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if body:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body:
            self.wfile.write(body)

    def send_json(self, message: Any, status: int = 200,
                  headers: Optional[Dict[str, str]] = None) -> None:
        self.send_status(status, json.dumps(message).encode(), headers)

    def start_events(self, headers: Optional[Dict[str, str]] = None) -> None:
        """Begin an SSE reply (chunked, so the connection stays usable afterwards)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()

    def write_raw(self, data: bytes) -> None:
        """One HTTP chunk, sent at once."""
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def write_event(self, data: Any = None, *, event_id: Optional[str] = None,
                    retry: Optional[int] = None, event: Optional[str] = None) -> None:
        self.write_raw(self.event_bytes(data, event_id=event_id, retry=retry, event=event))

    def write_priming_event(self, event_id: str) -> None:
        """The event a stream starts with: an id to resume from, and ``retry_ms``."""
        if self.mcp.priming_data:
            self.write_event(None, event_id=event_id, retry=self.mcp.retry_ms)
        else:
            retry = "" if self.mcp.retry_ms is None else f"retry: {self.mcp.retry_ms}\n"
            self.write_raw(f"id: {event_id}\n{retry}\n".encode())

    @staticmethod
    def event_bytes(data: Any = None, *, event_id: Optional[str] = None,
                    retry: Optional[int] = None, event: Optional[str] = None) -> bytes:
        """One event: ``data`` (None: an empty ``data:`` line) as text or JSON."""
        lines = []
        if event is not None:
            lines.append(f"event: {event}")
        if event_id is not None:
            lines.append(f"id: {event_id}")
        if retry is not None:
            lines.append(f"retry: {retry}")
        if data is None:
            lines.append("data: ")
        else:
            text = data if isinstance(data, str) else json.dumps(data)
            lines.extend(f"data: {line}" for line in text.split("\n"))
        return ("\n".join(lines) + "\n\n").encode()

    def end_events(self) -> None:
        self.wfile.write(b"0\r\n\r\n")

    # -- requests ------------------------------------------------------------------------

    def _record(self, body: bytes) -> Recorded:
        headers = {key.lower(): value for key, value in self.headers.items()}
        recorded = Recorded(self.command, self.path, headers, body)
        self.mcp.record(recorded)
        return recorded

    def _not_here(self) -> bool:
        """Answer a request for a path other than the MCP endpoint's with an HTML 404."""
        if urlsplit(self.path).path.rstrip("/") == self.mcp.path.rstrip("/"):
            return False  # "/mcp/" too (a redirect test moves a call there)
        self.send_status(404, NOT_FOUND_PAGE, content_type="text/html; charset=utf-8")
        return True

    def _session(self) -> Tuple[Optional[_Session], Optional[int]]:
        session_id = self.headers.get("Mcp-Session-Id")
        if session_id is None:
            return None, 400
        session = self.mcp.sessions.get(session_id)
        return session, (None if session is not None else 404)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        recorded = self._record(body)
        if self._not_here():
            return
        message = recorded.json
        hook = self.mcp.post_hook
        if hook is not None and hook(self, message):
            return
        if not isinstance(message, dict):
            self.send_json({"jsonrpc": "2.0", "id": None,
                            "error": {"code": -32700, "message": "Parse error"}}, 400)
            return
        stateless = False
        if message.get("method") == "initialize":
            session = self.mcp.new_session()
        elif self.mcp.stateless and self.headers.get("Mcp-Session-Id") is None:
            session, stateless = self.mcp.stateless_session(), True
        else:
            found, status = self._session()
            if found is None:
                text = "No valid session ID provided" if status == 400 else "Session not found"
                self.send_json({"jsonrpc": "2.0", "id": None,
                                "error": {"code": -32000, "message": f"Bad Request: {text}"}},
                               status or 400)
                return
            session = found
        if "id" not in message or "method" not in message:  # notification or response
            session.connection.receive(message)
            if message.get("method") == "notifications/cancelled":
                session.cancel((message.get("params") or {}).get("requestId"))
            self.send_status(202)
            return
        headers = {} if stateless else {"Mcp-Session-Id": session.session_id}
        stream = session.new_stream("s", message["id"])
        self.mcp.local.stream = stream
        try:
            session.connection.receive(message)
        finally:
            self.mcp.local.stream = None
        try:
            if self.mcp.reply == "json":
                self._reply_json(stream, headers)
            else:
                self._reply_events(stream, headers, watch_close=stateless)
        except OSError:
            pass  # the client went away (a cancellation, or close())
        finally:
            session.finish(stream)
            self.mcp.stream_end(message["id"]).set()

    def _reply_json(self, stream: _Stream, headers: Dict[str, str]) -> None:
        with stream.cond:
            stream.cond.wait_for(lambda: stream.done or stream.closed, _JSON_WAIT)
            responses = [m for _, m in stream.events if "method" not in m]
        if responses:
            self.send_json(responses[-1], headers=headers)
        else:
            self.send_status(500, b"no response", content_type="text/plain")

    def _reply_events(self, stream: _Stream, headers: Dict[str, str], *,
                      watch_close: bool = False) -> None:
        self.start_events(headers)
        self.write_priming_event(f"{stream.stream_id}-0")
        if self.mcp.take_break():
            if self.mcp.cut_events:
                self._write_half_of_the_first_event(stream)
            self.end_events()  # gone before the response: the client must resume
            return
        self._write_stream(stream, 0, until_done=True, watch_close=watch_close)

    def _client_gone(self) -> bool:
        """True once the client has closed this connection (it sends nothing while it
        waits for a response, so a readable socket means EOF or a reset)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _write_half_of_the_first_event(self, stream: _Stream) -> None:
        deadline = time.monotonic() + _JSON_WAIT
        events: List[Tuple[str, Dict[str, Any]]] = []
        while not events and time.monotonic() < deadline and not self.mcp.stopping.is_set():
            events, closed = stream.wait(0, _POLL)
            if closed:
                break
        if events:
            event_id, message = events[0]
            whole = self.event_bytes(message, event_id=event_id)
            self.write_raw(whole[:len(whole) // 2])

    def _write_stream(self, stream: _Stream, have: int, *, until_done: bool,
                      watch_close: bool = False) -> None:
        """Write the stream's events after the first ``have`` as they come; with
        ``watch_close``, a client closing the stream first cancels its request."""
        idle = 0.0
        try:
            while not self.mcp.stopping.is_set():
                events, closed = stream.wait(have, _POLL)
                for event_id, message in events:
                    self.write_event(message, event_id=event_id)
                have += len(events)
                if closed or (until_done and stream.done and have == len(stream.events)):
                    break
                if watch_close and not events and self._client_gone():
                    self.mcp.stream_closed(stream.request_id)
                    return
                idle = 0.0 if events else idle + _POLL
                if self.mcp.keepalive is not None and idle >= self.mcp.keepalive:
                    self.write_raw(b": keep-alive\n\n")
                    idle = 0.0
            hold = self.mcp.hold_open
            if until_done and hold is not None:
                while not hold.wait(_POLL) and not self.mcp.stopping.is_set():
                    pass
            self.end_events()
        except OSError:
            pass  # the client went away (a cancellation, or close())

    def do_GET(self) -> None:
        self._record(b"")
        if self._not_here():
            return
        gate = self.mcp.get_gate
        if gate is not None:
            gate.wait(_JSON_WAIT)
        session, status = self._session()
        if self.mcp.get_status is not None:
            self.send_status(self.mcp.get_status, b"no GET stream", content_type="text/plain")
            return
        if session is None:
            self.send_status(status or 400, b"unknown session", content_type="text/plain")
            return
        last_event_id = self.headers.get("Last-Event-ID")
        resumed: Optional[_Stream] = None
        index = "0"
        if last_event_id:
            stream_id, _, index = last_event_id.rpartition("-")
            with session.lock:
                resumed = session.streams.get(stream_id)
            if resumed is None or not index.isdigit():
                self.send_status(400, b"unknown event id", content_type="text/plain")
                return
        if resumed is not None and resumed.request_id is not None:
            # The rest of a request's stream, up to its response.
            self.start_events({"Mcp-Session-Id": session.session_id})
            self._write_stream(resumed, int(index), until_done=True)
            return
        stream = session.open_get_stream()
        self.start_events({"Mcp-Session-Id": session.session_id})
        if resumed is not None:  # an earlier GET stream: what it had not delivered first
            with resumed.cond:
                missed = resumed.events[int(index):]
            for event_id, message in missed:
                self.write_event(message, event_id=event_id)
        self.write_priming_event(f"{stream.stream_id}-0")
        self._write_stream(stream, 0, until_done=False)

    def do_DELETE(self) -> None:
        self._record(b"")
        if self._not_here():
            return
        session, status = self._session()
        if session is None:
            self.send_status(status or 400)
            return
        self.mcp.end_session(session.session_id)
        hook = self.mcp.delete_hook
        if hook is not None and hook(self):
            return
        self.send_status(200)


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True  # a handler may wait on a client that never closes; stop() ends streams
    mcp: McpHttpServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError):
            return  # the client hung up (a cancelled stream, a closed pool): expected
        super().handle_error(request, client_address)


class McpHttpServer:
    """The scriptable server; see the module docstring."""

    def __init__(self, fake: Optional[FakeServer] = None, *, reply: str = "sse",
                 path: str = "/mcp", tls: Optional[ssl.SSLContext] = None) -> None:
        self.fake = fake or FakeServer("http-test")
        self.scheme = "https" if tls is not None else "http"
        self.reply = reply
        self.path = path
        self.get_status: Optional[int] = None
        self.get_gate: Optional[threading.Event] = None
        self.retry_ms: Optional[int] = None
        self.priming_data = True
        self.break_streams = 0
        self.cut_events = False
        self.hold_open: Optional[threading.Event] = None
        self.keepalive: Optional[float] = None
        self.post_hook: Optional[Callable[[_Handler, Any], bool]] = None
        self.delete_hook: Optional[Callable[[_Handler], bool]] = None
        self.stateless = False
        self.on_stream_closed: Optional[Callable[[Any], None]] = None
        self._stateless_session: Optional[_Session] = None
        self.sessions: Dict[str, _Session] = {}
        self.requests: List[Recorded] = []
        self._stream_ends: Dict[Any, threading.Event] = {}
        self.stopping = threading.Event()
        self.local = threading.local()
        # Guards requests, sessions and break_streams; signals new requests.
        self._changed = threading.Condition()
        self._httpd = _HttpServer(("127.0.0.1", 0), _Handler)
        self._httpd.mcp = self
        if tls is not None:
            self._httpd.socket = wrap_listener(self._httpd.socket, tls)
        self._thread: Optional[threading.Thread] = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}{self.path}"

    def start(self) -> McpHttpServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,),
                                        name=f"http-test-server-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        for gate in (self.hold_open, self.get_gate):
            if gate is not None:
                gate.set()
        self._httpd.shutdown()
        with self._changed:
            sessions = list(self.sessions.values())
            self.sessions.clear()
            if self._stateless_session is not None:
                sessions.append(self._stateless_session)
                self._stateless_session = None
        for session in sessions:
            session.close()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(5.0)

    def __enter__(self) -> McpHttpServer:
        return self.start()

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    # -- state ---------------------------------------------------------------------------

    def record(self, recorded: Recorded) -> None:
        with self._changed:
            self.requests.append(recorded)
            self._changed.notify_all()

    def new_session(self) -> _Session:
        session = _Session(self, uuid.uuid4().hex)
        with self._changed:
            self.sessions[session.session_id] = session
        return session

    def stateless_session(self) -> _Session:
        """The connection every 2026-07-28 request (one with no session id) goes to."""
        with self._changed:
            if self._stateless_session is None:
                self._stateless_session = _Session(self, "")
            return self._stateless_session

    def stream_closed(self, request_id: Any) -> None:
        """The client closed the stream of request ``request_id`` before its response."""
        hook = self.on_stream_closed
        if hook is not None:
            hook(request_id)

    def end_session(self, session_id: str) -> None:
        with self._changed:
            session = self.sessions.pop(session_id, None)
        if session is not None:
            session.close()

    def expire_sessions(self) -> None:
        """Forget every session, as a restarted server would: their ids now get 404."""
        with self._changed:
            sessions = list(self.sessions.values())
            self.sessions.clear()
        for session in sessions:
            session.close()

    def stream_end(self, request_id: Any) -> threading.Event:
        """Set when the reply to request ``request_id`` (its stream or JSON body) is over."""
        with self._changed:
            return self._stream_ends.setdefault(request_id, threading.Event())

    def take_break(self) -> bool:
        with self._changed:
            if self.break_streams > 0:
                self.break_streams -= 1
                return True
            return False

    def drop_get_streams(self) -> None:
        """End every open GET stream (the client should open a new one)."""
        with self._changed:
            sessions = list(self.sessions.values())
        for session in sessions:
            with session.lock:
                stream = session.get_stream
                session.get_stream = None
            if stream is not None:
                stream.close()

    def push(self, method: str, params: Optional[Dict[str, Any]] = None) -> None:
        """Send a notification from every session, outside any request."""
        with self._changed:
            sessions = list(self.sessions.values())
        for session in sessions:
            session.connection.notify(method, params)

    def wait_for(self, predicate: Callable[[Recorded], bool], timeout: float = 10.0,
                 count: int = 1) -> Recorded:
        """Block until ``count`` received requests match; return the last of them.

        Raises:
            TimeoutError: not within ``timeout`` seconds.
        """
        found: List[Recorded] = []

        def matched() -> bool:
            found[:] = [r for r in self.requests if predicate(r)]
            return len(found) >= count

        with self._changed:
            if not self._changed.wait_for(matched, timeout):
                raise TimeoutError(f"the server saw {len(found)} matching requests, "
                                   f"not {count}: {self.requests}")
        return found[count - 1]

    def matching(self, predicate: Callable[[Recorded], bool]) -> List[Recorded]:
        with self._changed:
            return [r for r in self.requests if predicate(r)]
