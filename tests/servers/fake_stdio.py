"""A scriptable MCP server over stdio for the tests, built on mcp_sync.testing.FakeServer.

Options:
  --page-size N          split list results into pages of N
  --extra-tools N        register N more tools named tool_000 ... (for pagination)
  --protocol-version V   answer initialize with V whatever the client offers
  --no-resources         declare no resources (so no resources.subscribe)
  --banner               print a non-JSON banner line on stdout before serving
  --exit-at-start N      exit with status N before reading anything
  --ignore-unknown       never answer unknown methods (some servers ignore server/discover)
  --stubborn             ignore SIGTERM, and keep running (60 s at most) after stdin ends:
                         only SIGKILL stops it
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcp_sync.testing import FakeServer, ToolContext

parser = argparse.ArgumentParser()
parser.add_argument("--page-size", type=int)
parser.add_argument("--extra-tools", type=int, default=0)
parser.add_argument("--protocol-version")
parser.add_argument("--no-resources", action="store_true")
parser.add_argument("--banner", action="store_true")
parser.add_argument("--exit-at-start", type=int)
parser.add_argument("--ignore-unknown", action="store_true",
                    help="never answer unknown methods (e.g. server/discover)")
parser.add_argument("--stubborn", action="store_true",
                    help="ignore SIGTERM and stdin's end: only SIGKILL stops it")
options = parser.parse_args()

if options.stubborn:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)

if options.exit_at_start is not None:
    sys.stderr.write("fake server refusing to start\n")
    sys.exit(options.exit_at_start)

versions = (options.protocol_version,) if options.protocol_version else (
    "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
server = FakeServer("fake", "1.2.3", instructions="Test server.", page_size=options.page_size,
                    protocol_versions=versions, ignore_unknown=options.ignore_unknown)


def raw_write(ctx: ToolContext, data: bytes) -> None:
    connection = ctx.connection
    assert connection.write_lock is not None and connection.stdout is not None
    with connection.write_lock:
        connection.stdout.write(data)
        connection.stdout.flush()


@server.tool()
def echo(text: str) -> str:
    """Echo the text."""
    return text


@server.tool(annotations={"readOnlyHint": True})
def add(a: float, b: float) -> Dict[str, Any]:
    """Add two numbers (structured result)."""
    return {"sum": a + b}


@server.tool()
def slow(seconds: float, ctx: ToolContext, progress_interval: float = 0.0) -> str:
    """Wait `seconds` (ends early when cancelled), reporting progress if asked."""
    deadline = time.monotonic() + seconds
    step = 0
    while time.monotonic() < deadline:
        wait = deadline - time.monotonic()
        if progress_interval:
            wait = min(wait, progress_interval)
        if ctx.cancelled.wait(max(0.0, wait)):
            return "cancelled"
        if progress_interval:
            step += 1
            ctx.progress(step, None, f"step {step}")
    return f"slept {seconds}"


@server.tool()
def big(size: int) -> str:
    """A text result of `size` characters."""
    return "x" * size


@server.tool()
def crash(code: int = 3, message: str = "fatal: something broke") -> str:
    """Write to stderr and exit at once with `code`, mid-request."""
    sys.stderr.write(message + "\n")
    sys.stderr.flush()
    os._exit(code)


@server.tool()
def orphan(code: int = 5, own_session: bool = False) -> str:
    """Start a process that inherits stdout and stderr and lives on (60 s at most; in a
    session of its own with `own_session`), write its pid to stderr as "orphan pid N",
    then exit at once with `code`, mid-request."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                             start_new_session=own_session)
    sys.stderr.write(f"orphan pid {child.pid}\n")
    sys.stderr.flush()
    os._exit(code)


@server.tool()
def stderr_flood(lines: int) -> str:
    """Write `lines` lines to stderr, then answer."""
    for i in range(lines):
        sys.stderr.write(f"noise line {i}\n")
    sys.stderr.write("last noise line\n")
    sys.stderr.flush()
    return f"wrote {lines}"


@server.tool()
def malformed(ctx: ToolContext) -> str:
    """Write broken lines to stdout before answering."""
    raw_write(ctx, b"this is not json\n")
    raw_write(ctx, b'{"truncated": \n')
    raw_write(ctx, b'"just a string"\n')
    raw_write(ctx, b'{"jsonrpc": "2.0", "no": "method or id"}\n')
    raw_write(ctx, b'{"jsonrpc":"2.0","id":999999,"result":{}}\n')  # unknown id
    return "survived"


@server.tool()
def batch(ctx: ToolContext) -> str:
    """Send two log notifications as one JSON array (a 2025-03-26 batch) before answering."""
    notes = [
        {"jsonrpc": "2.0", "method": "notifications/message",
         "params": {"level": "info", "data": f"batched {i}"}}
        for i in range(2)
    ]
    raw_write(ctx, json.dumps(notes).encode() + b"\n")
    return "batched"


@server.tool()
def ask(method: str, ctx: ToolContext, params: Optional[Dict[str, Any]] = None) -> Any:
    """Send a request to the client; return its result or its error."""
    try:
        return {"result": ctx.request(method, params, timeout=10.0)}
    except Exception as exc:  # noqa: BLE001
        return {"error": getattr(exc, "error", {"message": str(exc)})}


@server.tool()
def received(method: str) -> List[Dict[str, Any]]:
    """Messages this server received with the given method, in order."""
    return [m for c in server.connections for m in c.received if m.get("method") == method]


@server.tool()
def log(level: str, data: str, ctx: ToolContext) -> str:
    """Send a log notification."""
    ctx.log(level, data, logger="tool")
    return "logged"


@server.tool()
def notify(method: str, ctx: ToolContext) -> str:
    """Send a notification with no params (e.g. notifications/tools/list_changed)."""
    ctx.connection.notify(method)
    return "sent"


@server.tool()
def environment() -> List[str]:
    """The names of the server's environment variables."""
    return sorted(os.environ)


@server.tool()
def fail(message: str) -> str:
    """Raise: the result has isError true."""
    raise RuntimeError(message)


for index in range(options.extra_tools):
    server.tool(name=f"tool_{index:03d}", description=f"Extra tool {index}")(
        lambda: "extra"
    )

if not options.no_resources:
    server.resource("test://hello", "hello world", name="hello")
    server.resource("test://blob", None, name="blob", mime_type="application/octet-stream",
                    blob="AAEC")


@server.prompt(arguments=[{"name": "who", "required": True}])
def greet(who: str) -> str:
    """Greet someone."""
    return f"Hello, {who}!"


server.completion("greet", lambda name, value: [w for w in ("alice", "bob", "alina")
                                                  if w.startswith(value)])

if options.banner:
    sys.stdout.write("Fake server starting up (not JSON)\n")
    sys.stdout.flush()

server.serve_stdio()
if options.stubborn:
    threading.Event().wait(60.0)  # stdin ended: linger until SIGKILL (or a minute)
