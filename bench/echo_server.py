"""A minimal MCP echo server for benchmarks: standard library only.

Every client in ``bench_stdio.py`` talks to this same server, so differences between the
clients are differences between the clients.

The protocol logic is the transport-free :func:`handle` (one decoded JSON-RPC message in,
one response dict or ``None`` out); :func:`serve_stdio` is the newline-delimited JSON
binding on stdin/stdout, and :func:`serve_http` puts the same :func:`handle_body` behind
``http.server`` (``bench_http.py``).

Methods: ``initialize``, ``notifications/initialized`` (and any other notification,
ignored), ``ping``, ``tools/list`` and ``tools/call`` of the one tool ``echo``, which
returns its ``text`` argument as a single text content block.

Usage::

    python bench/echo_server.py [--cpu N] [--stateless] [--stamp PATH] [--start-delay S]
    python bench/echo_server.py --http PORT [--reply json|sse] [--sse-framing chunked|length]
                                [--cpu N] [--stateless]

``--cpu N`` pins the server process to CPU ``N`` (Linux ``sched_setaffinity``) so that a
pinned client and the server do not compete for one core.

``--stateless`` also answers ``server/discover`` as a 2026-07-28 server does (capabilities,
``supportedVersions``, server info in ``_meta``; ``-32022`` for a version it does not
speak). Without it ``server/discover`` gets ``-32601`` like any unknown method, as from a
server that predates 2026-07-28. ``initialize`` works either way.

``--stamp PATH`` (stdio) writes ``time.monotonic()`` to ``PATH`` just before the first read
of stdin: the moment the server is ready. ``CLOCK_MONOTONIC`` is system-wide on Linux, so
a client can subtract the spawn and start-up time from a connect (``bench_connect.py``).

``--start-delay S`` (stdio) waits ``S`` seconds before reading stdin: a server that is slow
to start, as one launched through ``npx`` or ``uvx`` is (``bench_toolbox.py``).

``--http PORT`` serves Streamable HTTP instead: ``POST /mcp`` on ``127.0.0.1:PORT`` with the
same :func:`handle_body`, on the standard library's ``ThreadingHTTPServer`` (one thread per
connection, HTTP/1.1 keep-alive, ``TCP_NODELAY``). ``PORT`` 0 picks a free port. The
server prints its URL (``http://127.0.0.1:PORT/mcp``) as the first line on stdout, then
runs until killed. A request is answered with one JSON body (``--reply json``, the default)
or with an event stream holding one ``message`` event (``--reply sse``), sent with
``Transfer-Encoding: chunked`` as a streaming server would (``--sse-framing chunked``, the
default) or with a ``Content-Length`` (``--sse-framing length``). Notifications get 202;
``GET`` and ``DELETE`` get 405 (no standalone stream, no session id: the server keeps no
state between requests).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Dict, List, Optional, Union

SERVER_INFO = {"name": "bench-echo", "version": "1.0.0"}
LATEST_PROTOCOL_VERSION = "2025-11-25"
SUPPORTED_PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
STATELESS_PROTOCOL_VERSION = "2026-07-28"
META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"

#: Answer ``server/discover`` as a 2026-07-28 server (``--stateless``); off: ``-32601``.
STATELESS = False

ECHO_TOOL = {
    "name": "echo",
    "description": "Return the text argument unchanged.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}

Message = Dict[str, Any]


def _result(request_id: Any, result: Any) -> Message:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _error(request_id: Any, code: int, message: str) -> Message:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def handle(message: Any) -> Optional[Message]:
    """Answer one decoded JSON-RPC message; ``None`` for notifications and responses.

    Transport-free: the stdio loop below and a future HTTP binding both call this.
    """
    if not isinstance(message, dict):
        return _error(None, -32600, "Invalid Request")
    method = message.get("method")
    if "id" not in message:
        return None  # a notification (notifications/initialized, cancelled, ...) or junk
    request_id = message["id"]
    if method is None:
        return None  # a response to a request we never sent
    params = message.get("params") or {}
    if method == "tools/call":  # first: the hot path
        if params.get("name") != "echo":
            return _error(request_id, -32602, f"Unknown tool: {params.get('name')!r}")
        arguments = params.get("arguments") or {}
        text = arguments.get("text")
        if not isinstance(text, str):
            return _result(request_id, {
                "content": [{"type": "text", "text": "echo needs a string 'text' argument"}],
                "isError": True,
            })
        return _result(request_id, {"content": [{"type": "text", "text": text}],
                                    "isError": False})
    if method == "initialize":
        requested = params.get("protocolVersion")
        version = requested if requested in SUPPORTED_PROTOCOL_VERSIONS else (
            LATEST_PROTOCOL_VERSION
        )
        return _result(request_id, {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": SERVER_INFO,
        })
    if method == "ping":
        return _result(request_id, {})
    if method == "tools/list":
        return _result(request_id, {"tools": [ECHO_TOOL]})
    if method == "server/discover" and STATELESS:
        return _discover(request_id, params)
    return _error(request_id, -32601, f"Method not found: {method}")


def _discover(request_id: Any, params: Dict[str, Any]) -> Message:
    """``server/discover`` as a 2026-07-28 server answers it (``--stateless`` only)."""
    meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
    requested = meta.get(META_PROTOCOL_VERSION)
    supported = [STATELESS_PROTOCOL_VERSION, *SUPPORTED_PROTOCOL_VERSIONS]
    if requested != STATELESS_PROTOCOL_VERSION:
        return {"jsonrpc": "2.0", "id": request_id, "error": {
            "code": -32022, "message": "Unsupported protocol version",
            "data": {"supported": supported, "requested": requested}}}
    return _result(request_id, {
        "resultType": "complete",
        "supportedVersions": supported,
        "capabilities": {"tools": {"listChanged": False}},
        "ttlMs": 0,
        "cacheScope": "private",
        "_meta": {META_SERVER_INFO: SERVER_INFO},
    })


def handle_body(body: bytes) -> Optional[bytes]:
    """Answer one JSON-RPC message (or batch) given as bytes; the reply as bytes or ``None``."""
    try:
        message: Union[Message, List[Any]] = json.loads(body)
    except ValueError:
        return encode(_error(None, -32700, "Parse error"))
    if isinstance(message, list):
        replies = [reply for reply in map(handle, message) if reply is not None]
        return encode(replies) if replies else None
    reply = handle(message)
    return None if reply is None else encode(reply)


def encode(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def serve_stdio(stamp: Optional[str] = None) -> None:
    """Newline-delimited JSON on stdin/stdout until stdin closes.

    ``stamp``: a file to write ``time.monotonic()`` to just before the first read.
    """
    stdin = sys.stdin.buffer
    stdout = sys.stdout.buffer
    if stamp:
        with open(stamp, "w") as f:
            f.write(repr(time.monotonic()))
    while True:
        line = stdin.readline()
        if not line:
            return
        if not line.strip():
            continue
        reply = handle_body(line)
        if reply is not None:
            stdout.write(reply + b"\n")
            stdout.flush()


# -- Streamable HTTP ------------------------------------------------------------------------

MCP_PATH = "/mcp"
_REASONS = {200: b"OK", 202: b"Accepted", 400: b"Bad Request", 404: b"Not Found",
            405: b"Method Not Allowed", 411: b"Length Required"}
# Replies smaller than this go out in one write with their headers.
_ONE_WRITE = 1 << 20


def make_http_server(port: int = 0, reply: str = "json", framing: str = "chunked") -> Any:
    """A ``ThreadingHTTPServer`` on ``127.0.0.1:port`` answering ``POST /mcp`` with
    :func:`handle_body`: one JSON body (``reply="json"``) or a one-event stream
    (``reply="sse"``, framed ``"chunked"`` or by ``"length"``). Not started."""
    import socket  # here, not at the top: the stdio server starts as fast as before
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    if reply not in ("json", "sse") or framing not in ("chunked", "length"):
        raise ValueError(f"reply must be json or sse, framing chunked or length: "
                         f"{reply!r}, {framing!r}")
    sse = reply == "sse"
    chunked = framing == "chunked"

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: clients pool their connections
        disable_nagle_algorithm = True  # TCP_NODELAY: no delayed small writes

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, headers: List[str], body: bytes = b"") -> None:
            head = [b"HTTP/1.1 %d %s" % (status, _REASONS.get(status, b""))]
            head += [h.encode("latin-1") for h in headers]
            if self.close_connection:
                head.append(b"Connection: close")
            data = b"\r\n".join(head) + b"\r\n\r\n"
            if len(body) < _ONE_WRITE:
                self.wfile.write(data + body)
            else:  # no 10 MB copy just to save a write
                self.wfile.write(data)
                self.wfile.write(body)

        def _refuse(self, status: int, allow: Optional[str] = None) -> None:
            body = encode(_error(None, -32600, f"HTTP {status}"))
            headers = ["Content-Type: application/json", f"Content-Length: {len(body)}"]
            if allow:
                headers.append(f"Allow: {allow}")
            self._send(status, headers, body)

        def _read_body(self) -> Optional[bytes]:
            length = self.headers.get("Content-Length")
            if length is not None:
                return self.rfile.read(int(length))
            if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                parts = []
                while True:
                    size = int(self.rfile.readline().split(b";", 1)[0], 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass  # trailers
                        return b"".join(parts)
                    parts.append(self.rfile.read(size))
                    self.rfile.readline()
            return None

        def do_POST(self) -> None:
            if self.path.split("?", 1)[0] != MCP_PATH:
                self._refuse(404)
                return
            body = self._read_body()
            if body is None:
                self.close_connection = True
                self._refuse(411)
                return
            reply = handle_body(body)
            if reply is None:  # notifications and responses: accepted
                self._send(202, ["Content-Length: 0"])
            elif not sse:
                self._send(200, ["Content-Type: application/json",
                                 f"Content-Length: {len(reply)}"], reply)
            else:
                event = b"event: message\ndata: " + reply + b"\n\n"
                if chunked:
                    self._send(200, ["Content-Type: text/event-stream",
                                     "Cache-Control: no-cache", "Transfer-Encoding: chunked"],
                               b"%x\r\n" % len(event) + event + b"\r\n0\r\n\r\n")
                else:
                    self._send(200, ["Content-Type: text/event-stream",
                                     "Cache-Control: no-cache",
                                     f"Content-Length: {len(event)}"], event)

        def do_GET(self) -> None:
            self._refuse(405 if self.path.split("?", 1)[0] == MCP_PATH else 404, "POST")

        def do_DELETE(self) -> None:
            self._refuse(405 if self.path.split("?", 1)[0] == MCP_PATH else 404, "POST")

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 128  # 8+ clients connecting at once

        def server_bind(self) -> None:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            # HTTPServer.server_bind would look up the host name (slow, and unused)
            self.socket.bind(self.server_address)
            self.server_address = self.socket.getsockname()
            self.server_name, self.server_port = "127.0.0.1", self.server_address[1]

    return Server(("127.0.0.1", port), Handler)


def serve_http(port: int, reply: str = "json", framing: str = "chunked") -> None:
    """Serve ``POST /mcp`` until killed; the URL is the first line on stdout."""
    server = make_http_server(port, reply, framing)
    print(f"http://127.0.0.1:{server.server_port}{MCP_PATH}", flush=True)
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        server.server_close()


def _option(args: List[str], name: str, default: Optional[str] = None) -> Optional[str]:
    if name not in args:
        return default
    index = args.index(name)
    if index + 1 >= len(args):
        raise SystemExit(f"{name} needs a value")
    return args[index + 1]


def main(argv: Optional[List[str]] = None) -> None:
    global STATELESS
    args = list(sys.argv[1:] if argv is None else argv)
    cpu = _option(args, "--cpu")
    if cpu is not None and hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, {int(cpu)})
        except OSError:
            pass  # fewer CPUs than asked for: run unpinned
    STATELESS = "--stateless" in args
    port = _option(args, "--http")
    try:
        if port is not None:
            serve_http(int(port), _option(args, "--reply", "json") or "json",
                       _option(args, "--sse-framing", "chunked") or "chunked")
        else:
            delay = float(_option(args, "--start-delay", "0") or 0)
            if delay > 0:
                time.sleep(delay)  # the slow start being measured, not a wait for an event
            serve_stdio(_option(args, "--stamp"))
    except (BrokenPipeError, KeyboardInterrupt):
        pass


if __name__ == "__main__":
    main()
