"""The Flask app ``bench/bench_cache.py`` serves with gunicorn: one view that lists the
tools and reads a resource through the process's ``Manager`` (``mcp_sync.contrib.flask``).

Environment: ``MCP_BENCH_URL`` (the MCP server), ``MCP_BENCH_CACHE`` (``off``:
``cache=False``; ``process``: the client's default, a ``MemoryStore`` of its own in each
worker process; ``shared``: one ``RedisStore`` for every worker) and ``MCP_BENCH_REDIS``
(the Redis URL, for ``shared``). The manager hands ``cache`` to its client.
"""

from __future__ import annotations

import os
from typing import Any, Dict

from flask import Flask, jsonify

from mcp_sync.contrib.flask import MCP

URI = "test://greeting"


def cache_options(mode: str) -> Dict[str, Any]:
    """The Manager (and so Client) arguments of a cache mode."""
    if mode == "off":
        return {"cache": False}
    if mode == "process":
        return {}  # the default: each client a cache of its own
    if mode == "shared":
        from mcp_sync.cache import RedisStore, ResponseCache

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
