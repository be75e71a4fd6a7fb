"""A Flask app whose views call MCP tools through one shared client per process.

Run it from this folder with Flask's threaded development server::

    flask --app app run

or with gunicorn, two pre-forked workers of eight threads each (each worker process
starts its own demo server on its first request)::

    gunicorn --workers 2 --threads 8 --bind 127.0.0.1:8000 app:app

Then ``curl 'http://127.0.0.1:8000/add?a=2&b=3'``.
"""

from __future__ import annotations

import os
import sys

from flask import Flask, jsonify, request
from flask.typing import ResponseReturnValue

import mcp_sync
from mcp_sync.contrib.flask import MCP

app = Flask(__name__)
app.config["MCP_SERVERS"] = {
    # The demo server that ships inside mcp_sync, run by this interpreter.
    "demo": {"command": sys.executable, "args": ["-m", "mcp_sync.demo_server"]},
}
app.config["MCP_OPTIONS"] = {"timeout": 20}
mcp = MCP(app)


@app.get("/add")
def add() -> ResponseReturnValue:
    """Add ``a`` and ``b`` with the demo server's ``add`` tool."""
    a = float(request.args.get("a", 0))
    b = float(request.args.get("b", 0))
    client = mcp.get_client("demo")  # per request: cheap, and survives a reconnect
    result = client.call_tool("add", {"a": a, "b": b})
    return jsonify(
        sum=(result.structured or {}).get("sum"),
        worker=os.getpid(),  # which process answered (several under gunicorn)
        server=getattr(client.transport, "pid", None),  # that process's demo server
    )


@app.get("/tools")
def tools() -> ResponseReturnValue:
    return jsonify(tools=[tool.name for tool in mcp.get_client("demo").list_tools()])


@app.get("/status")
def status() -> ResponseReturnValue:
    servers = mcp.get_manager().status()
    return jsonify(worker=os.getpid(), servers={n: s.to_dict() for n, s in servers.items()})


@app.errorhandler(mcp_sync.MCPError)
def mcp_error(error: mcp_sync.MCPError) -> ResponseReturnValue:
    # The server is down (and being reconnected), timed out, or answered with an error.
    status = 504 if isinstance(error, mcp_sync.RequestTimeout) else 502
    return jsonify(error=type(error).__name__, message=str(error)), status
