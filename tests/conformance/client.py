#!/usr/bin/env python3
"""mcp_sync's client for the official MCP conformance suite (``@modelcontextprotocol/conformance``).

The harness runs ``python tests/conformance/client.py <server-url>`` with the scenario's
name in ``MCP_CONFORMANCE_SCENARIO`` (and, for a few auth scenarios, JSON context in
``MCP_CONFORMANCE_CONTEXT``), then scores what the client did against its mock server.
This program only drives mcp_sync's public API; every protocol detail the suite checks is
the library's. Exit status: 0 when the scenario's steps succeeded, 1 otherwise (the error
goes to stderr, which the harness keeps in ``stderr.txt``).

Run by hand (see ``tests/test_conformance.py`` for the whole command)::

    conformance client --command "python3 tests/conformance/client.py" --scenario initialize
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

# Import mcp_sync from this checkout, installed or not.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import mcp_sync
from mcp_sync import types

log = logging.getLogger("conformance-client")

CLIENT_INFO = {"name": "mcp-sync-conformance", "version": mcp_sync.__version__}


def schema_defaults(schema: Dict[str, Any]) -> Dict[str, Any]:
    """The ``default`` of every property of a flat elicitation schema that declares one.

    What a form pre-filled with the server's defaults returns when the user just accepts
    it (SEP-1034: clients SHOULD pre-populate form fields with their defaults).
    """
    properties = schema.get("properties") or {}
    return {name: spec["default"] for name, spec in properties.items()
            if isinstance(spec, dict) and "default" in spec}


def accept_with_defaults(params: Any) -> Dict[str, Any]:
    """An elicitation handler that accepts every form, filled in with the schema's defaults."""
    if isinstance(params, types.ElicitRequestURLParams):
        return {"action": "decline"}  # no browser here
    schema = params.requested_schema.model_dump(by_alias=True, exclude_none=True)
    content = schema_defaults(schema)
    log.info("elicitation %r: accepting with %s", params.message, content)
    return {"action": "accept", "content": content}


def connect(url: str, **kwargs: Any) -> mcp_sync.Client:
    kwargs.setdefault("client_info", CLIENT_INFO)
    kwargs.setdefault("timeout", 20.0)
    return mcp_sync.connect(url, **kwargs)


def run_initialize(url: str, context: Dict[str, Any]) -> None:
    """Handshake, then close: the mock checks protocolVersion and clientInfo."""
    with connect(url) as client:
        log.info("connected to %s, protocol %s", client.server_info.name,
                 client.protocol_version)


def run_tools_call(url: str, context: Dict[str, Any]) -> None:
    """List the tools and call ``add_numbers``."""
    with connect(url) as client:
        names = [tool.name for tool in client.list_tools()]
        log.info("tools: %s", names)
        result = client.call_tool("add_numbers", {"a": 5, "b": 3})
        log.info("add_numbers: %s", result.text)
        if result.is_error:
            raise SystemExit(f"add_numbers failed: {result.text}")


def run_elicitation_defaults(url: str, context: Dict[str, Any]) -> None:
    """Call the tool that elicits a form; accept it with the schema's defaults."""
    with connect(url, elicitation_handler=accept_with_defaults) as client:
        client.list_tools()
        result = client.call_tool("test_client_elicitation_defaults", {})
        log.info("test_client_elicitation_defaults: %s", result.text)


def run_sse_retry(url: str, context: Dict[str, Any]) -> None:
    """Call the tool whose SSE stream the server closes before answering.

    The transport must wait the stream's ``retry`` and resume it with a GET carrying
    ``Last-Event-ID``; the answer then arrives on the resumed stream.
    """
    with connect(url) as client:
        client.list_tools()
        result = client.call_tool("test_reconnection", {})
        log.info("test_reconnection: %s", result.text)


def run_default(url: str, context: Dict[str, Any]) -> None:
    """Any other scenario (auth ones among them): connect, look around, close."""
    with connect(url) as client:
        if client.server_capabilities.tools is not None:
            log.info("tools: %s", [tool.name for tool in client.list_tools()])


SCENARIOS: Dict[str, Callable[[str, Dict[str, Any]], None]] = {
    "initialize": run_initialize,
    "tools_call": run_tools_call,
    "elicitation-sep1034-client-defaults": run_elicitation_defaults,
    "sse-retry": run_sse_retry,
}


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if os.environ.get("MCP_CONFORMANCE_DEBUG") else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not args:
        print("usage: client.py <server-url>", file=sys.stderr)
        return 2
    url = args[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    run = SCENARIOS.get(scenario, run_default)
    log.info("scenario %r against %s", scenario, url)
    try:
        run(url, context)
    except mcp_sync.MCPError as exc:
        log.error("scenario %r failed: %s", scenario, exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
