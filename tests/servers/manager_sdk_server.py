"""A stdio MCP server written with the official Python SDK (PyPI ``mcp``), for the
Manager and CLI tests.

The SDK does the protocol; this file only defines tools:

* ``add(a, b)`` (``readOnlyHint``), ``echo(text)``, ``pid()`` (the server's process id),
  ``tiny_image()`` (a 1x1 PNG), ``slow(seconds)`` (progress every 0.1 s).
* ``crash_once_readonly(tag)`` (``readOnlyHint``), ``crash_once_idempotent(tag)``
  (``idempotentHint``) and ``crash_once_plain(tag)`` (no hints): the first call with a
  ``tag`` creates the marker file ``$MANAGER_SDK_STATE/<tag>`` and kills the server
  mid-request; a later call (in a new server process) finds the marker and answers
  ``"survived <tag>"``. Each call appends ``<tag>`` to ``$MANAGER_SDK_STATE/calls.log``.

Resources ``res://motto`` (text) and ``res://pictures/tiny.png`` (the PNG, as a blob);
prompt ``haiku(topic)``.

Run with ``python tests/servers/manager_sdk_server.py`` (stdio only).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

warnings.filterwarnings("ignore", category=DeprecationWarning)

import anyio  # noqa: E402
from mcp.server.mcpserver import Context, MCPServer  # noqa: E402
from mcp.server.mcpserver.utilities.types import Image  # noqa: E402
from mcp.types import ToolAnnotations  # noqa: E402

TINY_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63000100000500010d0a2db40000000049454e44ae426082"
)

mcp = MCPServer("manager-sdk-peer", version="2.0.0",
                instructions="The official SDK, as a peer for the manager tests.")


def _state_dir() -> Path:
    return Path(os.environ.get("MANAGER_SDK_STATE") or ".")


@mcp.tool(annotations=ToolAnnotations(read_only_hint=True))
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@mcp.tool(annotations=ToolAnnotations(read_only_hint=True))
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@mcp.tool()
def tiny_image() -> Image:
    """A 1x1 PNG."""
    return Image(data=TINY_PNG, format="png")


@mcp.tool()
async def slow(ctx: Context, seconds: float = 1.0) -> str:
    """Sleep ``seconds`` in steps of 0.1 s, reporting progress after each step."""
    steps = max(1, round(seconds / 0.1))
    for step in range(1, steps + 1):
        await anyio.sleep(0.1)
        await ctx.report_progress(step, steps, f"step {step}/{steps}")
    return f"slept {seconds} s"


def _crash_once(tag: str) -> str:
    state = _state_dir()
    with open(state / "calls.log", "a", encoding="utf-8") as log:
        log.write(tag + "\n")
    marker = state / tag
    if not marker.exists():
        marker.write_text("crashed once\n", encoding="utf-8")
        os._exit(17)  # mid-request: the client sees the connection close, no answer
    return f"survived {tag}"


@mcp.tool(annotations=ToolAnnotations(read_only_hint=True))
def crash_once_readonly(tag: str) -> str:
    """Read-only; kills the server the first time it is called with ``tag``."""
    return _crash_once(tag)


@mcp.tool(annotations=ToolAnnotations(idempotent_hint=True))
def crash_once_idempotent(tag: str) -> str:
    """Idempotent; kills the server the first time it is called with ``tag``."""
    return _crash_once(tag)


@mcp.tool()
def crash_once_plain(tag: str) -> str:
    """No hints; kills the server the first time it is called with ``tag``."""
    return _crash_once(tag)


@mcp.resource("res://motto", name="motto", mime_type="text/plain")
def motto() -> str:
    return "blocking is fine"


@mcp.resource("res://pictures/tiny.png", name="tiny", mime_type="image/png")
def tiny_picture() -> bytes:
    return TINY_PNG


@mcp.prompt()
def haiku(topic: str) -> str:
    """Ask for a haiku."""
    return f"Write a haiku about {topic}."


if __name__ == "__main__":
    mcp.run()
