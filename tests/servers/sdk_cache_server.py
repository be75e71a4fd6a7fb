"""An official-SDK (PyPI ``mcp``) server that answers with caching hints (SEP-2549) and
counts the requests it receives, for the response-cache tests and ``bench/bench_cache.py``.

Usage: sdk_cache_server.py PORT [--ttl-ms N] [--read-ttl-ms N]

Streamable HTTP at ``http://127.0.0.1:PORT/mcp``, both eras (2026-07-28 and the session
era). Through the SDK's ``cache_hints`` (``mcp.server.caching``), the 2026-07-28 results of
``server/discover`` and the four lists carry ``ttlMs`` = ``--ttl-ms`` (60000 by default)
and ``cacheScope: "public"``; those of ``resources/read`` ``--read-ttl-ms`` (the same by
default) and ``cacheScope: "private"``.

``GET /counts`` answers the JSON-RPC requests received so far, by method
(``{"tools/list": 3, ...}``), and ``"http"``, every HTTP request to ``/mcp``: a test or
the benchmark reads it before and after to count round trips. What the counter reads is
the body the SDK's app is then given, byte for byte.

Tools: ``add``; ``grow`` (adds a tool, and tells ``subscriptions/listen`` subscribers the
tool list changed); ``touch`` (tells them a resource was updated). Resources:
``test://greeting`` (a fixed text), ``test://whoami/{label}`` (the ``Authorization``
header the request carried, so a test can see whose answer it was served). Prompt: ``review``.
"""

from __future__ import annotations

import argparse
import collections
import json
import threading
from typing import Any, Awaitable, Callable, Dict, MutableMapping

import uvicorn
from _sdk_tools import add_grow
from mcp.server.caching import CacheHint
from mcp.server.mcpserver import Context, MCPServer

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def build(ttl_ms: int, read_ttl_ms: int) -> MCPServer:
    listed = CacheHint(ttl_ms=ttl_ms, scope="public")
    mcp = MCPServer("sdk-cache", instructions="Answers with caching hints.", cache_hints={
        "server/discover": listed,
        "tools/list": listed,
        "prompts/list": listed,
        "resources/list": listed,
        "resources/templates/list": listed,
        "resources/read": CacheHint(ttl_ms=read_ttl_ms, scope="private"),
    })

    @mcp.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    add_grow(mcp)

    @mcp.tool()
    async def touch(uri: str, ctx: Context) -> str:
        """Tell subscribers the resource `uri` was updated."""
        await ctx.notify_resource_updated(uri)
        return f"touched {uri}"

    @mcp.resource("test://greeting")
    def greeting() -> str:
        """A fixed text."""
        return "hello from the cache server"

    @mcp.resource("test://whoami/{label}")
    def whoami(label: str, ctx: Context) -> str:
        """The Authorization header of the request that read it (a template: the SDK
        gives a Context to templates only)."""
        request = getattr(ctx.request_context, "request", None)
        headers = getattr(request, "headers", None)
        seen = headers.get("authorization") if headers is not None else None
        return f"{label}: authorization={seen}"

    @mcp.prompt()
    def review(code: str) -> str:
        """Review some code."""
        return f"Please review: {code}"

    return mcp


class Counting:
    """ASGI middleware: counts the requests to the MCP endpoint by JSON-RPC method, and
    answers ``GET /counts``. The body it reads is handed on to the app unchanged."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.counts: Dict[str, int] = collections.Counter()
        self.lock = threading.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["path"] == "/counts":
            with self.lock:
                body = json.dumps(dict(self.counts)).encode()
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})
            return
        with self.lock:
            self.counts["http"] += 1
        if scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message)
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        self.count(b"".join(m.get("body", b"") for m in chunks))
        replay = iter(chunks)

        async def replayed() -> Message:
            try:
                return next(replay)
            except StopIteration:
                return await receive()

        await self.app(scope, replayed, send)

    def count(self, body: bytes) -> None:
        try:
            message = json.loads(body)
        except ValueError:
            return
        messages = message if isinstance(message, list) else [message]
        with self.lock:
            for item in messages:
                if isinstance(item, dict) and isinstance(item.get("method"), str):
                    self.counts[item["method"]] += 1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--ttl-ms", type=int, default=60_000)
    parser.add_argument("--read-ttl-ms", type=int, default=None)
    args = parser.parse_args()
    read_ttl = args.ttl_ms if args.read_ttl_ms is None else args.read_ttl_ms
    app = Counting(build(args.ttl_ms, read_ttl).streamable_http_app())
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="info")


if __name__ == "__main__":
    main()
