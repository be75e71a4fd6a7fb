"""The Flask app ``bench/bench_cache.py`` serves with gunicorn: one view that lists the
tools and reads a resource through the process's ``Manager`` (``mcp_sync.contrib.flask``).

Environment: ``MCP_BENCH_URL`` (the MCP server), ``MCP_BENCH_CACHE`` (``off``, ``process``:
a ``MemoryStore`` per worker process, ``shared``: one Redis for every worker) and
``MCP_BENCH_REDIS`` (the Redis URL, for ``shared``).
"""

from __future__ import annotations

import inspect
import os
from typing import Any, Dict

from flask import Flask, jsonify

import mcp_sync
from mcp_sync.contrib.flask import MCP

URI = "test://greeting"


def client_takes_a_cache() -> bool:
    """Whether this mcp_sync's clients honour the response cache (``Client(cache=...)``)."""
    return "cache" in inspect.signature(mcp_sync.Client.__init__).parameters


def cache_options(mode: str) -> Dict[str, Any]:
    """The Manager (and Client) arguments of a cache mode."""
    if mode == "off":
        return {"cache": None} if client_takes_a_cache() else {}
    if not client_takes_a_cache():
        raise RuntimeError(f"cache mode {mode!r}: this mcp_sync's Client takes no cache")
    from mcp_sync.cache import MemoryStore, RedisStore, ResponseCache

    if mode == "process":
        return {"cache": ResponseCache(MemoryStore())}
    if mode == "shared":
        return {"cache": ResponseCache(RedisStore(os.environ["MCP_BENCH_REDIS"]))}
    raise ValueError(f"unknown cache mode {mode!r}")


def create_app() -> Flask:
    """The app (gunicorn ``'cache_app:create_app()'``), configured from the environment."""
    app = Flask(__name__)
    app.config["MCP_SERVERS"] = {"sdk": {"url": os.environ["MCP_BENCH_URL"]}}
    app.config["MCP_OPTIONS"] = {"timeout": 30, "protocol_version": "2026-07-28",
                                 **cache_options(os.environ.get("MCP_BENCH_CACHE", "off"))}
    mcp = MCP(app)

    @app.get("/")
    def view() -> Any:
        manager = mcp.get_manager()
        tools = mcp.get_client("sdk").list_tools()
        read = manager.read_resource("sdk", URI)
        return jsonify(worker=os.getpid(), tools=len(tools), text=read.contents[0].text)

    return app
