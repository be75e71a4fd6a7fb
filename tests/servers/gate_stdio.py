"""A stdio MCP server whose start and tool calls wait at a gate the test holds, for the
tests that kill processes in the middle of a call (built on mcp_sync.testing.FakeServer).

The gate is a TCP socket of the test on 127.0.0.1, port ``$GATE_PORT``. At start, and in
every call of ``hold`` or ``hold_write``, the server connects to it, sends one JSON line
(``{"event": "start" | "call", "tool", "key", "pid", "ppid"}``) and waits for a line back
(at most 60 s) before it goes on: serving, or answering the call with its ``key``. So the
test knows which process started, under which parent, and which call is in progress, and
decides when each goes on.

Tools: ``hold(key)`` (annotated ``readOnlyHint``: safe to call again), ``hold_write(key)``
(no annotations: may not be called twice), ``echo(text)`` (no annotations, no gate).

With ``$GATE_LINGER`` set, the server does not exit when its stdin closes: it waits (at
most 60 s) for a signal, as a server that ignores EOF would. Only the client's own
shutdown (SIGTERM after the grace period) ends it in time.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcp_sync.testing import FakeServer

GATE_TIMEOUT = 60.0

server = FakeServer("gate", "1.0.0")


def wait_at_gate(event: str, tool: str = "", key: str = "") -> None:
    """Announce ``event`` to the test and block until it answers."""
    with socket.create_connection(("127.0.0.1", int(os.environ["GATE_PORT"])),
                                  timeout=GATE_TIMEOUT) as gate:
        gate.sendall(json.dumps({"event": event, "tool": tool, "key": key,
                                 "pid": os.getpid(), "ppid": os.getppid()}).encode() + b"\n")
        if not gate.makefile("rb").readline():
            raise RuntimeError("the gate closed without letting this through")


@server.tool(annotations={"readOnlyHint": True})
def hold(key: str) -> str:
    """Wait at the gate, then answer with ``key`` (safe to call again)."""
    wait_at_gate("call", "hold", key)
    return key


@server.tool()
def hold_write(key: str) -> str:
    """Wait at the gate, then answer with ``key`` (not safe to call again)."""
    wait_at_gate("call", "hold_write", key)
    return key


@server.tool()
def echo(text: str) -> str:
    """Echo the text."""
    return text


if __name__ == "__main__":
    wait_at_gate("start")
    server.serve_stdio()
    if os.environ.get("GATE_LINGER"):
        threading.Event().wait(GATE_TIMEOUT)
