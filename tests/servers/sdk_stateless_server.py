"""An official-SDK (PyPI ``mcp``) server for the 2026-07-28 tests: dual-era by default.

Usage: sdk_stateless_server.py [stdio | streamable-http PORT]

Tools: ``add``; ``slow`` (progress; a cancelled call is remembered by its ``tag``);
``was_cancelled`` (whether the tagged call was cancelled, waiting up to a bound for it);
``confirm`` (elicitation through the multi round-trip flow); ``ask_llm`` (sampling);
``roots_count`` (roots); ``regional`` (a parameter mirrored into the ``Mcp-Param-Region``
header; it returns the header the server saw); ``grow`` (adds a tool and announces the
list change to subscribers); ``log_it``.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import anyio
from _sdk_tools import add_grow
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, ListRoots, Resolve, Sample
from mcp_types import ListRootsResult, SamplingMessage, TextContent
from pydantic import BaseModel, Field

mcp = MCPServer("sdk-stateless", instructions="Stateless test server.")


class Confirmation(BaseModel):
    confirmed: bool
    name: str = "nobody"


def ask_confirmation() -> Any:
    return Elicit("Please confirm", Confirmation)


def ask_capital() -> Any:
    return Sample(
        [SamplingMessage(role="user", content=TextContent(type="text", text="Capital of France?"))],
        max_tokens=20,
    )


def ask_roots() -> Any:
    return ListRoots()


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


# Calls of `slow` the client cancelled (by tag): set when the call's task is cancelled,
# which over 2026-07-28 HTTP means the client closed the response stream.
_cancelled: dict[str, anyio.Event] = {}


def _cancellation(tag: str) -> anyio.Event:
    return _cancelled.setdefault(tag, anyio.Event())


@mcp.tool()
async def slow(seconds: float, ctx: Context, tag: str = "") -> str:
    """Sleep, reporting progress every 0.1 s; a cancelled call is remembered by `tag`."""
    steps = int(seconds * 10)
    try:
        for step in range(steps):
            await ctx.report_progress(step, steps)
            await anyio.sleep(0.1)
    except anyio.get_cancelled_exc_class():
        if tag:
            _cancellation(tag).set()
        raise
    return "done"


@mcp.tool()
async def was_cancelled(tag: str, wait: float = 5.0) -> bool:
    """Whether the `slow` call tagged `tag` was cancelled, waiting up to `wait` seconds."""
    with anyio.move_on_after(wait):
        await _cancellation(tag).wait()
    return _cancellation(tag).is_set()


@mcp.tool()
def confirm(answer: Annotated[Confirmation, Resolve(ask_confirmation)]) -> str:
    """Ask the user to confirm (elicitation)."""
    return f"confirmed={answer.confirmed} name={answer.name}"


@mcp.tool()
def ask_llm(reply: Annotated[Any, Resolve(ask_capital)]) -> str:
    """Ask the client's LLM (sampling)."""
    return f"llm said: {reply.content.text}"


@mcp.tool()
def roots_count(roots: Annotated[ListRootsResult, Resolve(ask_roots)]) -> str:
    """Count the client's roots."""
    return f"{len(roots.roots)} roots: " + ",".join(str(r.uri) for r in roots.roots)


@mcp.tool()
def regional(
    region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})],
    query: str,
    ctx: Context,
) -> str:
    """A tool whose `region` travels in the Mcp-Param-Region header."""
    request = getattr(ctx.request_context, "request", None)
    headers = getattr(request, "headers", None)
    seen = headers.get("mcp-param-region") if headers is not None else None
    return f"region={region} header={seen} query={query}"


add_grow(mcp)


@mcp.tool()
async def log_it(text: str, ctx: Context) -> str:
    """Send a log message at info level."""
    await ctx.info(text)
    return "logged"


@mcp.resource("test://greeting")
def greeting() -> str:
    """A fixed text resource."""
    return "hello from the stateless server"


@mcp.prompt()
def review(code: str) -> str:
    """Review some code."""
    return f"Please review: {code}"


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "stdio":
        mcp.run()
    else:
        mcp.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
