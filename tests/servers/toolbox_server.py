"""An MCP server over stdio for the Toolbox tests, built on mcp_sync.testing.FakeServer.

Tools whose names, descriptions, schemas and results test what a Toolbox hands a model,
and tools that make concurrency observable without sleeping:

* ``meet(key, parties, wait=10)``: waits until ``parties`` calls with the same key are
  running at once (an error result after ``wait`` seconds without them); ``peak(key)`` is
  the most calls of that key that ran at once.
* ``wait_for(key)`` waits (bounded) until ``signal(key)`` is called.
* ``bump(key)`` counts calls per key; ``count_of(key)`` reads the count.
* ``sleep(seconds)`` ends early when the call is cancelled; ``cancelled()`` says how many
  were.
* ``record(...)`` returns the arguments it received (its schema has ``$defs``, a
  ``$ref``, optional and nullable properties, an enum and an ``anyOf``).
* ``media()``: text, PNG and BMP images, audio, embedded text/PDF/binary resources, a
  resource link and structured content in one result.
* ``whoami()``: the ``--label`` given on the command line.
* tools with odd names (dots, spaces, non-ASCII, control characters, 80 characters,
  names that sanitise to the same string), a hostile and a long description, and schemas
  strict mode cannot express (recursive, free-form, open) or past the toolbox's bounds.

Usage: ``python tests/servers/toolbox_server.py [--label NAME]``.
"""

from __future__ import annotations

import argparse
import base64
import sys
import threading
from pathlib import Path
from typing import Any, Dict, Set

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcp_sync.testing import FakeServer, ToolContext, ToolError

parser = argparse.ArgumentParser()
parser.add_argument("--label", default="toolbox")
options = parser.parse_args()

BOUND = 10.0  # seconds any tool here waits for another call
# A 1x1 transparent PNG.
TINY_PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63000100000500010d0a2db40000000049454e44ae426082"
)).decode()
HOSTILE = "red \x1b[31mALERT\x1b[0m\x07 \u202egnp.exe\u202c done"
LONG = "word " * 600  # 3000 characters

server = FakeServer("toolbox", "1.0.0")
state = threading.Condition()
meetings: Dict[str, int] = {}
peaks: Dict[str, int] = {}
signals: Set[str] = set()
counts: Dict[str, int] = {}
cancelled = [0]


@server.tool(annotations={"readOnlyHint": True})
def meet(key: str, parties: int, wait: float = BOUND) -> str:
    """Wait (at most `wait` seconds) until `parties` calls with this key run at once."""
    with state:
        meetings[key] = meetings.get(key, 0) + 1
        peaks[key] = max(peaks.get(key, 0), meetings[key])
        state.notify_all()
        try:
            if not state.wait_for(lambda: peaks[key] >= parties, wait):
                raise ToolError(f"alone: only {meetings[key]} of {parties} calls came")
        finally:
            meetings[key] -= 1
    return "met"


@server.tool(annotations={"readOnlyHint": True})
def peak(key: str) -> int:
    """The most calls of `meet` with this key that ran at once."""
    with state:
        return peaks.get(key, 0)


@server.tool()
def wait_for(key: str) -> str:
    """Wait until `signal(key)` is called."""
    with state:
        if not state.wait_for(lambda: key in signals, BOUND):
            raise ToolError(f"no signal {key!r}")
    return f"signalled {key}"


@server.tool()
def signal(key: str) -> str:
    """Wake `wait_for(key)`."""
    with state:
        signals.add(key)
        state.notify_all()
    return f"sent {key}"


@server.tool()
def bump(key: str) -> int:
    """Count a call."""
    with state:
        counts[key] = counts.get(key, 0) + 1
        return counts[key]


@server.tool(annotations={"readOnlyHint": True})
def count_of(key: str) -> int:
    """How many times `bump(key)` ran."""
    with state:
        return counts.get(key, 0)


@server.tool()
def sleep(seconds: float, ctx: ToolContext) -> str:
    """Wait `seconds`, or until the call is cancelled."""
    if ctx.cancelled.wait(seconds):
        with state:
            cancelled[0] += 1
        return "cancelled"
    return "slept"


@server.tool(annotations={"readOnlyHint": True})
def cancelled_calls() -> int:
    """How many `sleep` calls were cancelled."""
    with state:
        return cancelled[0]


@server.tool(annotations={"readOnlyHint": True})
def whoami() -> str:
    """This server's label."""
    return options.label


RECORD_SCHEMA: Dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "who"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "address": {"$ref": "#/$defs/Address", "description": "where"},
        "note": {"type": ["string", "null"]},
        "size": {"enum": ["s", "m", "l"]},
        "when": {"type": "string", "format": "date-time", "minLength": 1},
        "target": {"anyOf": [{"type": "integer"}, {"$ref": "#/$defs/Address"}]},
    },
    "required": ["name"],
    "$defs": {
        "Address": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
            "required": ["city"],
        },
    },
}


@server.tool(description="Return the arguments received.", input_schema=RECORD_SCHEMA)
def record(**arguments: Any) -> Dict[str, Any]:
    return {"received": arguments}


@server.tool(description="A tree (recursive schema).", input_schema={
    "type": "object",
    "properties": {"root": {"$ref": "#/$defs/Node"}},
    "required": ["root"],
    "$defs": {"Node": {"type": "object", "properties": {
        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}},
})
def tree(root: Any) -> str:
    return "ok"


@server.tool(description="Free-form options.", input_schema={
    "type": "object",
    "properties": {"options": {"type": "object"}},
})
def free(**arguments: Any) -> str:
    return "ok"


@server.tool(description="Takes a remote reference.", input_schema={
    "type": "object",
    "properties": {"x": {"$ref": "http://127.0.0.1:9/never-fetched.json"}},
})
def remote(**arguments: Any) -> str:
    return "ok"


HUGE_SCHEMA = {"type": "object", "properties": {
    f"p{i}": {"type": "string", "description": "x" * 1000} for i in range(300)}}


@server.tool(description="A schema past the toolbox's size bound.", input_schema=HUGE_SCHEMA)
def huge(**arguments: Any) -> str:
    return "ok"


@server.tool()
def media() -> Dict[str, Any]:
    """Every kind of content block."""
    return {
        "content": [
            {"type": "text", "text": "caption"},
            {"type": "image", "data": TINY_PNG, "mimeType": "image/png"},
            {"type": "image", "data": base64.b64encode(b"BM" + bytes(60)).decode(),
             "mimeType": "image/bmp"},
            {"type": "audio", "data": base64.b64encode(bytes(100)).decode(),
             "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///notes.txt",
                                              "mimeType": "text/plain", "text": "the notes"}},
            {"type": "resource", "resource": {
                "uri": "file:///report.pdf", "mimeType": "application/pdf",
                "blob": base64.b64encode(b"%PDF-1.4 tiny").decode()}},
            {"type": "resource", "resource": {"uri": "file:///data.bin",
                                              "blob": base64.b64encode(bytes(30)).decode()}},
            {"type": "resource_link", "uri": "file:///big.csv", "name": "big.csv",
             "mimeType": "text/csv"},
        ],
        "structuredContent": {"rows": 3},
    }


@server.tool()
def structured() -> Dict[str, Any]:
    """A dict: the same value as JSON text and as structured content."""
    return {"sum": 5}


@server.tool()
def fail(message: str) -> str:
    """Fail with `message` (an isError result)."""
    raise ToolError(message)


def odd(name: str, description: str = "An oddly named tool.") -> None:
    server.tool(name=name, description=description, input_schema={
        "type": "object", "properties": {}})(lambda: f"called {name}")


odd("get.user v2")
odd("a.b")
odd("a:b")
odd("a_b")
odd("caf\u00e9")
odd("x\x1b[31mred")
odd("n" * 80)
odd("hostile", HOSTILE)
odd("wordy", LONG)

if __name__ == "__main__":
    server.serve_stdio()
