"""The demo MCP server that ships with mcp_sync (``python -m mcp_sync.demo_server``).

A stdio server built on :class:`mcp_sync.testing.FakeServer`, standard library only:
``mcp-sync demo`` spawns it, lists its tools and calls ``count`` with progress.
``slow_report`` runs as a task (MCP 2025-11-25), for the start-now-collect-later pattern
of ``examples/flask_app``.
"""

from __future__ import annotations

import base64
import datetime
import struct
import zlib

from .testing import FakeServer, RpcError, ToolContext, ToolError

server = FakeServer("mcp-sync-demo", instructions="A demo server: echo, add, count, now, image, "
                    "slow_report (a task).")


@server.tool(description="Echo the text back.")
def echo(text: str) -> str:
    return text


@server.tool(
    description="Add two numbers.",
    output_schema={"type": "object", "properties": {"sum": {"type": "number"}},
                   "required": ["sum"]},
    annotations={"readOnlyHint": True, "idempotentHint": True},
)
def add(a: float, b: float) -> dict:  # type: ignore[type-arg]
    return {"sum": a + b}


@server.tool(description="Count to n, reporting progress every `interval` seconds.")
def count(n: int = 5, interval: float = 0.1, ctx: ToolContext = None) -> str:  # type: ignore[assignment]
    for i in range(1, n + 1):
        if ctx.cancelled.wait(interval):
            ctx.log("notice", f"count cancelled at {i - 1} of {n}")
            return "cancelled"
        ctx.progress(i, n, f"counted to {i}")
    return f"counted to {n}"


@server.tool(description="The server's current UTC time.",
             annotations={"readOnlyHint": True})
def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _png(width: int, height: int) -> bytes:
    """A ``width`` x ``height`` RGB gradient as PNG bytes (zlib and struct only)."""
    rows = []
    for y in range(height):
        green = 255 * y // max(1, height - 1)
        row = bytearray([0])  # filter type 0 (none) for each scanline
        for x in range(width):
            row += bytes((255 * x // max(1, width - 1), green, 160))
        rows.append(bytes(row))

    def chunk(tag: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(tag + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(b"".join(rows))) + chunk(b"IEND", b""))


@server.tool(description="A small generated PNG image (a colour gradient), with a caption.",
             annotations={"readOnlyHint": True})
def image(width: int = 64, height: int = 32) -> list:  # type: ignore[type-arg]
    width, height = max(1, min(int(width), 512)), max(1, min(int(height), 512))
    data = base64.b64encode(_png(width, height)).decode("ascii")
    return [
        {"type": "image", "data": data, "mimeType": "image/png"},
        {"type": "text", "text": f"a {width}x{height} gradient"},
    ]


REPORT_STEPS = ("gathering sources", "reading", "writing")


@server.tool(description="Write a short report on `topic`, taking `seconds` (0 to 600). "
                         "Runs as a task: start it, then collect the report.",
             task_support="required")
def slow_report(topic: str, seconds: float = 3.0,
                ctx: ToolContext = None) -> str:  # type: ignore[assignment]
    if (isinstance(seconds, bool) or not isinstance(seconds, (int, float))
            or not 0 <= seconds <= 600):
        raise RpcError({"code": -32602,
                        "message": f"seconds must be a number from 0 to 600, not {seconds!r}"})
    if not isinstance(topic, str) or not topic.strip():
        raise ToolError("a report needs a topic")
    for number, step in enumerate(REPORT_STEPS, 1):
        ctx.progress(number, len(REPORT_STEPS), step)  # the call's token lives on
        ctx.status(f"{step} ({number} of {len(REPORT_STEPS)})")
        if ctx.cancelled.wait(seconds / len(REPORT_STEPS)):
            return "cancelled"
    return f"Report on {topic.strip()}: {len(REPORT_STEPS)} steps done in {seconds:g} s."


server.resource("demo://readme", "mcp_sync demo server: try the count tool.", name="readme")


@server.prompt(description="Greet someone.", arguments=[{"name": "name", "required": True}])
def greet(name: str) -> str:
    return f"Say hello to {name}."


def main() -> None:
    server.serve_stdio()


if __name__ == "__main__":
    main()
