"""A minimal MCP echo server for benchmarks: standard library only.

Every client in ``bench_stdio.py`` talks to this same server, so differences between the
clients are differences between the clients.

The protocol logic is the transport-free :func:`handle` (one decoded JSON-RPC message in,
one response dict or ``None`` out); :func:`serve_stdio` is the newline-delimited JSON
binding on stdin/stdout. A later HTTP benchmark can reuse :func:`handle` (and
:func:`handle_body` for raw request bodies) unchanged behind ``http.server``.

Methods: ``initialize``, ``notifications/initialized`` (and any other notification,
ignored), ``ping``, ``tools/list`` and ``tools/call`` of the one tool ``echo``, which
returns its ``text`` argument as a single text content block.

Usage::

    python bench/echo_server.py [--cpu N]

``--cpu N`` pins the server process to CPU ``N`` (Linux ``sched_setaffinity``) so that a
pinned client and the server do not compete for one core.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, List, Optional, Union

SERVER_INFO = {"name": "bench-echo", "version": "1.0.0"}
LATEST_PROTOCOL_VERSION = "2025-11-25"
SUPPORTED_PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")

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
    return _error(request_id, -32601, f"Method not found: {method}")


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


def serve_stdio() -> None:
    """Newline-delimited JSON on stdin/stdout until stdin closes."""
    stdin = sys.stdin.buffer
    stdout = sys.stdout.buffer
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


def main(argv: Optional[List[str]] = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--cpu" in args:
        cpu = int(args[args.index("--cpu") + 1])
        if hasattr(os, "sched_setaffinity"):
            try:
                os.sched_setaffinity(0, {cpu})
            except OSError:
                pass  # fewer CPUs than asked for: run unpinned
    try:
        serve_stdio()
    except (BrokenPipeError, KeyboardInterrupt):
        pass


if __name__ == "__main__":
    main()
