#!/usr/bin/env python3
"""mcp_sync's client for the official MCP conformance suite (``@modelcontextprotocol/conformance``).

The harness runs ``python tests/conformance/client.py <server-url>`` with the scenario's
name in ``MCP_CONFORMANCE_SCENARIO`` (and, for a few auth scenarios, JSON context in
``MCP_CONFORMANCE_CONTEXT``; ``toolCalls`` for http-custom-headers), then scores what the
client did against its mock server. The 0.2.0 harness also sets
``MCP_CONFORMANCE_PROTOCOL_VERSION`` (the revision the scenario runs at); the client pins
that version, and negotiates by itself when it is unset (0.1.16). This program only drives
mcp_sync's public API; every protocol detail the suite checks is the library's. Exit
status: 0 when the scenario's steps succeeded, 1 otherwise (the error goes to stderr, which
the harness keeps in ``stderr.txt``).

Run by hand (see ``tests/interop/test_conformance.py`` for the whole command)::

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
from mcp_sync.client import SUPPORTED_PROTOCOL_VERSIONS

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


def requested_version() -> Optional[str]:
    """The protocol version the harness runs the scenario at, if it says one we speak.

    The 0.2.0 harness sets ``MCP_CONFORMANCE_PROTOCOL_VERSION`` (the wire version of the
    requirement set, 2025-11-25 by default); 0.1.16 sets nothing, and the client then
    negotiates by itself.
    """
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION", "").strip()
    return version if version in SUPPORTED_PROTOCOL_VERSIONS else None


def connect(url: str, **kwargs: Any) -> mcp_sync.Client:
    kwargs.setdefault("client_info", CLIENT_INFO)
    kwargs.setdefault("timeout", 20.0)
    kwargs.setdefault("protocol_version", requested_version())
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


def confirm_everything(params: Any) -> Dict[str, Any]:
    """An elicitation handler that accepts a form, every boolean field set to true."""
    if isinstance(params, types.ElicitRequestURLParams):
        return {"action": "decline"}
    schema = params.requested_schema.model_dump(by_alias=True, exclude_none=True)
    content = schema_defaults(schema)
    for name, spec in (schema.get("properties") or {}).items():
        if isinstance(spec, dict) and spec.get("type") == "boolean":
            content.setdefault(name, True)
    log.info("elicitation %r: accepting with %s", params.message, content)
    return {"action": "accept", "content": content}


def no_sampling(params: Any) -> Dict[str, Any]:
    """Declares the sampling capability; no scenario here asks for a completion."""
    return {"role": "assistant", "content": {"type": "text", "text": "(no model here)"},
            "model": "none"}


def run_request_metadata(url: str, context: Dict[str, Any]) -> None:
    """Declare roots, sampling and elicitation, then list and call tools.

    The mock rejects the first request with -32022 (the client must retry with a version
    it lists) and checks every request's ``_meta`` envelope and ``MCP-Protocol-Version``.
    """
    with connect(url, roots=[{"uri": "file:///conformance", "name": "conformance"}],
                 sampling_handler=no_sampling, elicitation_handler=confirm_everything) as client:
        log.info("connected at %s", client.protocol_version)
        if client.server_capabilities.tools is not None:
            names = [tool.name for tool in client.list_tools()]
            log.info("tools: %s", names)
            for name in names:
                client.call_tool(name, {})
        client.ping()


def run_standard_headers(url: str, context: Dict[str, Any]) -> None:
    """Use every method that carries ``Mcp-Method`` (and ``Mcp-Name``) headers."""
    with connect(url) as client:
        for tool in client.list_tools():
            log.info("%s: %s", tool.name, client.call_tool(tool.name, {}).text)
        for resource in client.list_resources():
            contents = client.read_resource(resource.uri).contents
            log.info("%s: %d contents", resource.uri, len(contents))
        for prompt in client.list_prompts():
            messages = client.get_prompt(prompt.name).messages
            log.info("%s: %d messages", prompt.name, len(messages))


def run_tool_calls(url: str, context: Dict[str, Any]) -> None:
    """Make the tool calls the scenario lists in its context (``toolCalls``).

    The client mirrors the ``x-mcp-header`` parameters into ``Mcp-Param-*`` headers.
    """
    calls = context.get("toolCalls") or []
    if not calls:
        raise SystemExit("the scenario context lists no toolCalls")
    with connect(url) as client:
        log.info("tools: %s", [tool.name for tool in client.list_tools()])
        for call in calls:
            result = client.call_tool(call["name"], call.get("arguments") or {})
            log.info("%s: %s", call["name"], result.text)


def run_invalid_tool_headers(url: str, context: Dict[str, Any]) -> None:
    """Call every tool ``list_tools()`` kept: the ones with invalid x-mcp-header are gone."""
    with connect(url) as client:
        for tool in client.list_tools():
            arguments = {name: "conformance"
                         for name in (tool.input_schema.get("required") or [])}
            log.info("%s: %s", tool.name, client.call_tool(tool.name, arguments).text)


def run_request_state(url: str, context: Dict[str, Any]) -> None:
    """Multi round-trip requests: answer the elicitations, echo the request state.

    ``test_mrtr_unrelated`` runs between two rounds of another call (from a handler), so
    it must carry none of that call's ``inputResponses`` or ``requestState``.
    """
    client_ref: List[mcp_sync.Client] = []

    def confirm_and_call_another(params: Any) -> Dict[str, Any]:
        if client_ref and "no state" not in str(params.message):
            text = client_ref[0].call_tool("test_mrtr_unrelated", {}).text
            log.info("test_mrtr_unrelated (between rounds): %s", text)
        return confirm_everything(params)

    with connect(url, elicitation_handler=confirm_and_call_another) as client:
        client_ref.append(client)
        names = [tool.name for tool in client.list_tools()]
        log.info("tools: %s", names)
        for name in ("test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated",
                     "test_mrtr_no_result_type"):
            log.info("%s: %s", name, client.call_tool(name, {}).text)


def run_list_tools(url: str, context: Dict[str, Any]) -> None:
    """List the tools (and nothing else): their schemas' network ``$ref`` stays unfetched."""
    with connect(url) as client:
        for tool in client.list_tools():
            log.info("%s: input schema keys %s", tool.name, sorted(tool.input_schema))


def run_schema_echo(url: str, context: Dict[str, Any]) -> None:
    """Send the focal tool's inputSchema back through ``json_schema_echo``, verbatim.

    The mock compares what comes back with what it advertised: the client must keep every
    JSON Schema 2020-12 keyword it does not itself use.
    """
    with connect(url) as client:
        tools = {tool.name: tool for tool in client.list_tools()}
        focal = next(name for name in tools if name != "json_schema_echo")
        result = client.call_tool("json_schema_echo", {"schema": tools[focal].input_schema})
        log.info("json_schema_echo of %s: %s", focal, result.text)


def run_auth(url: str, context: Dict[str, Any]) -> None:
    """Every ``auth/*`` scenario: connect with OAuth, list and call the tools
    (``auth_scenarios.py`` configures OAuth from the scenario and its context)."""
    from auth_scenarios import run_auth as drive

    drive(url, context, connect, os.environ.get("MCP_CONFORMANCE_SCENARIO", ""))


def run_default(url: str, context: Dict[str, Any]) -> None:
    """Any other scenario: connect, look around, close."""
    with connect(url) as client:
        if client.server_capabilities.tools is not None:
            log.info("tools: %s", [tool.name for tool in client.list_tools()])


SCENARIOS: Dict[str, Callable[[str, Dict[str, Any]], None]] = {
    "initialize": run_initialize,
    "tools_call": run_tools_call,
    "elicitation-sep1034-client-defaults": run_elicitation_defaults,
    "sse-retry": run_sse_retry,
    "request-metadata": run_request_metadata,
    "http-standard-headers": run_standard_headers,
    "http-custom-headers": run_tool_calls,
    "http-invalid-tool-headers": run_invalid_tool_headers,
    "sep-2322-client-request-state": run_request_state,
    "json-schema-ref-no-deref": run_list_tools,
    "json-schema-2020-12-preservation": run_schema_echo,
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
    run = SCENARIOS.get(scenario) or (run_auth if scenario.startswith("auth/") else run_default)
    log.info("scenario %r at protocol %s against %s", scenario, requested_version() or "auto",
             url)
    try:
        run(url, context)
    except mcp_sync.MCPError as exc:
        log.error("scenario %r failed: %s", scenario, exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
