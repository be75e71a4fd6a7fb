"""The demo MCP server that ships with mcp_sync (``python -m mcp_sync.demo_server``).

A stdio server built on :class:`mcp_sync.testing.FakeServer`, standard library only:
``mcp-sync demo`` spawns it, lists its tools and calls ``count`` with progress.
"""

from __future__ import annotations

import datetime

from .testing import FakeServer, ToolContext

server = FakeServer("mcp-sync-demo", instructions="A demo server: echo, add, count, now.")


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
            return "cancelled"
        ctx.progress(i, n, f"counted to {i}")
    return f"counted to {n}"


@server.tool(description="The server's current UTC time.",
             annotations={"readOnlyHint": True})
def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


server.resource("demo://readme", "mcp_sync demo server: try the count tool.", name="readme")


@server.prompt(description="Greet someone.", arguments=[{"name": "name", "required": True}])
def greet(name: str) -> str:
    return f"Say hello to {name}."


def main() -> None:
    server.serve_stdio()


if __name__ == "__main__":
    main()
