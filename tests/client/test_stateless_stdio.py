"""The stateless 2026-07-28 era over stdio: negotiation, the envelope, MRTR, subscriptions.

Peers: the official SDK's server (``mcp`` 2.3.0, dual-era) and the project's fake server
(session era only: it answers unknown methods with -32601, or never with
``--ignore-unknown``).
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any, Dict, List, Optional

import pytest

import mcp_sync
from mcp_sync import CapabilityError, MemoryTransport, RequestTimeout
from mcp_sync.testing import FakeServer, RpcError

from ..conftest import PY, SERVERS, fake_server_command
from ..helpers import elicit, sample

SDK_STATELESS = [PY, str(SERVERS / "sdk_stateless_server.py")]



def connect_stateless(**kwargs: Any) -> mcp_sync.Client:
    kwargs.setdefault("timeout", 20.0)
    # The probe waits for the SDK peer's start (about a second, more on a loaded machine);
    # the tests that hold the 1 s default to its promise pass probe_timeout themselves.
    kwargs.setdefault("probe_timeout", 20.0)
    return mcp_sync.connect(SDK_STATELESS, **kwargs)


def test_auto_negotiation_lands_on_the_stateless_era() -> None:
    with connect_stateless() as client:
        assert client.era == "stateless"
        assert client.protocol_version == "2026-07-28"
        assert client.server_info.name == "sdk-stateless"
        assert client.instructions == "Stateless test server."
        assert client.server_capabilities.tools is not None
        names = {tool.name for tool in client.list_tools()}
        assert {"add", "confirm", "ask_llm", "regional"} <= names
        assert client.call_tool("add", {"a": 2, "b": 40}).structured == {"result": 42}
        assert client.read_resource("test://greeting").text == "hello from the stateless server"
        prompt = client.get_prompt("review", {"code": "x = 1"})
        assert "Please review: x = 1" in prompt.messages[0].content.text
        client.ping()  # server/discover stands in for ping


def test_multi_round_trip_requests_use_the_handlers() -> None:
    with connect_stateless(elicitation_handler=elicit, sampling_handler=sample,
                        roots=[{"uri": "file:///a"}, {"uri": "file:///b"}]) as client:
        assert client.call_tool("confirm").text == "confirmed=True name=ada"
        assert client.call_tool("ask_llm").text == "llm said: Paris"
        assert client.call_tool("roots_count").text == "2 roots: file:///a,file:///b"
        future = client.call_tool_future("confirm")
        assert future.result(20).text == "confirmed=True name=ada"


def test_a_missing_capability_is_a_clear_error() -> None:
    with connect_stateless() as client:
        with pytest.raises(mcp_sync.MissingClientCapability) as info:
            client.call_tool("ask_llm")
        assert info.value.code == -32021
        assert "sampling" in str(info.value)
        assert client.call_tool("add", {"a": 1, "b": 1}).structured == {"result": 2}


def test_progress_and_timeout_in_the_stateless_era() -> None:
    seen: List[float] = []
    with connect_stateless(max_total_timeout=3.0) as client:
        result = client.call_tool("slow", {"seconds": 1.0}, timeout=0.6,
                                  on_progress=lambda p, total, message: seen.append(p))
        assert result.text == "done"
        assert seen == sorted(seen) and len(seen) >= 5
        started = time.monotonic()
        with pytest.raises(RequestTimeout):
            client.call_tool("slow", {"seconds": 30}, timeout=0.3)
        assert time.monotonic() - started < 10
        assert client.call_tool("add", {"a": 1, "b": 2}).structured == {"result": 3}


def test_subscription_receives_list_changed_and_refreshes_the_cache() -> None:
    changed = threading.Event()

    def on_notification(method: str, params: Optional[Dict[str, Any]]) -> None:
        if method == "notifications/tools/list_changed":
            changed.set()

    with connect_stateless(notification_handler=on_notification) as client:
        with client.subscribe(tools=True) as subscription:
            assert subscription.acknowledged == {"toolsListChanged": True}
            before = {tool.name for tool in client.list_tools()}
            assert client.call_tool("grow", {"name": "fresh_tool"}).text == "added fresh_tool"
            assert changed.wait(10)
            deadline = time.monotonic() + 5
            while "fresh_tool" not in {t.name for t in client.list_tools()}:
                assert time.monotonic() < deadline, "the tool cache was not refreshed"
            assert "fresh_tool" not in before
        assert subscription.acknowledged is not None
    assert not any(t.name.startswith("mcp-sync-subscription") for t in threading.enumerate())


def test_pinned_session_version_uses_initialize_on_a_dual_era_server() -> None:
    with connect_stateless(protocol_version="2025-11-25") as client:
        assert client.era == "session"
        assert client.protocol_version == "2025-11-25"
        assert client.call_tool("add", {"a": 1, "b": 2}).structured == {"result": 3}


def test_fallback_against_a_server_that_answers_unknown_methods() -> None:
    started = time.monotonic()
    with mcp_sync.connect(fake_server_command(), timeout=10) as client:
        elapsed = time.monotonic() - started
        assert client.era == "session"
        assert client.protocol_version == "2025-11-25"
        received = json.loads(client.call_tool("received", {"method": "server/discover"}).text)
        assert len(received) == 1
    assert elapsed < 5.0


def test_fallback_against_a_silent_server_costs_no_more_than_the_probe() -> None:
    started = time.monotonic()
    with mcp_sync.connect(fake_server_command("--ignore-unknown"), timeout=10,
                          probe_timeout=0.5) as client:
        elapsed = time.monotonic() - started
        assert client.era == "session"
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        cancels = json.loads(
            client.call_tool("received", {"method": "notifications/cancelled"}).text)
        assert cancels == []  # the probe is never cancelled on the wire
    assert 0.5 <= elapsed < 0.5 + 4.0


def test_the_era_is_cached_per_server_command() -> None:
    command = fake_server_command("--ignore-unknown")
    with mcp_sync.connect(command, timeout=10, probe_timeout=0.5) as client:
        assert client.era == "session"
    started = time.monotonic()
    with mcp_sync.connect(command, timeout=10, probe_timeout=5.0) as client:
        assert time.monotonic() - started < 4.0  # no probe this time
        received = json.loads(client.call_tool("received", {"method": "server/discover"}).text)
        assert received == []


def stateless_fake(supported: Optional[List[str]] = None) -> FakeServer:
    """A fake server answering server/discover like a stateless one."""
    server = FakeServer("stateless-fake")
    versions = supported or ["2026-07-28"]

    @server.tool()
    def echo(text: str) -> str:
        return text

    @server.method("server/discover")
    def discover(params: Dict[str, Any]) -> Dict[str, Any]:
        meta = params.get("_meta") or {}
        version = meta.get("io.modelcontextprotocol/protocolVersion")
        if version not in versions:
            raise RpcError({"code": -32022, "message": "Unsupported protocol version",
                            "data": {"supported": versions, "requested": version}})
        return {"resultType": "complete", "supportedVersions": versions,
                "capabilities": {"tools": {}, "logging": {}},
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "mf", "version": "9"}}}

    return server


def test_every_request_carries_the_envelope() -> None:
    server = stateless_fake()
    with mcp_sync.Client(MemoryTransport(server), timeout=5,
                         client_info={"name": "tester", "version": "1"},
                         elicitation_handler=elicit) as client:
        assert client.era == "stateless" and client.server_info.version == "9"
        client.set_logging_level("warning")
        assert client.call_tool("echo", {"text": "x"}).text == "x"
        received = server.connections[0].received
    methods = [m.get("method") for m in received]
    assert "initialize" not in methods and "logging/setLevel" not in methods
    call = next(m for m in received if m.get("method") == "tools/call")
    meta = call["params"]["_meta"]
    assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert meta["io.modelcontextprotocol/clientInfo"] == {"name": "tester", "version": "1"}
    assert "elicitation" in meta["io.modelcontextprotocol/clientCapabilities"]
    assert meta["io.modelcontextprotocol/logLevel"] == "warning"


def test_unsupported_version_error_picks_a_common_version() -> None:
    server = stateless_fake(["2025-06-18", "2024-11-05"])
    with mcp_sync.Client(MemoryTransport(server), timeout=5) as client:
        # the server only lists session-era versions: the handshake uses the newest common
        assert client.era == "session"
        assert client.protocol_version == "2025-06-18"
    server = stateless_fake(["1999-01-01"])
    with pytest.raises(mcp_sync.UnsupportedProtocolVersion, match="1999-01-01"):
        mcp_sync.Client(MemoryTransport(server), timeout=5).connect()


def test_input_rounds_are_bounded_and_missing_sampling_handler_is_clear() -> None:
    server = stateless_fake()
    rounds: List[Dict[str, Any]] = []

    @server.tool()
    def endless() -> Dict[str, Any]:
        rounds.append({})
        return {"resultType": "input_required", "requestState": f"s{len(rounds)}",
                "content": []}

    @server.tool()
    def wants_llm() -> Dict[str, Any]:
        return {"resultType": "input_required", "content": [], "inputRequests": {
            "q": {"method": "sampling/createMessage",
                  "params": {"messages": [], "maxTokens": 5}}}}

    with mcp_sync.Client(MemoryTransport(server), timeout=5, max_input_rounds=3) as client:
        with pytest.raises(mcp_sync.ProtocolError, match="3 rounds"):
            client.call_tool("endless")
        assert len(rounds) == 4
        calls = [m for m in server.connections[0].received if m.get("method") == "tools/call"]
        assert [c["params"].get("requestState") for c in calls] == [None, "s1", "s2", "s3"]
        assert len({c["id"] for c in calls}) == 4  # a new id every round
        with pytest.raises(CapabilityError, match="sampling"):
            client.call_tool("wants_llm")


def test_a_handler_that_raises_fails_the_call_with_callback_error() -> None:
    server = stateless_fake()

    @server.tool()
    def wants_llm() -> Dict[str, Any]:
        return {"resultType": "input_required", "content": [], "inputRequests": {
            "q": {"method": "sampling/createMessage",
                  "params": {"messages": [], "maxTokens": 5}}}}

    def broken(params: Any) -> Any:
        raise RuntimeError("no model available")

    with mcp_sync.Client(MemoryTransport(server), timeout=5, sampling_handler=broken) as client:
        with pytest.raises(mcp_sync.CallbackError, match="no model available") as info:
            client.call_tool("wants_llm")
        assert isinstance(info.value.__cause__, RuntimeError)
        assert client.call_tool("echo", {"text": "still fine"}).text == "still fine"


def test_a_logging_handler_receives_logs_without_set_logging_level() -> None:
    """2026-07-28: a server sends log messages only to a request whose ``_meta`` names a
    level. A registered logging_handler opts in at ``info`` by itself, as in the session
    era (where servers log without being asked); set_logging_level() changes it."""
    received: List[Any] = []
    arrived = threading.Event()

    def on_log(params: Any) -> None:
        received.append(params)
        arrived.set()

    with connect_stateless(logging_handler=on_log) as client:
        assert client.era == "stateless"
        assert client.call_tool("log_it", {"text": "from the stateless era"}).text == "logged"
        assert arrived.wait(10), "the logging handler received nothing"
        assert received[0].level == "info" and received[0].data == "from the stateless era"
    # Without a handler, nothing is asked for: the envelope names no level.
    with connect_stateless() as client:
        assert client.log_level is None
