"""A tool called again behaves as it did the first time.

A plain ``call_tool`` (session era, no task) plans the call and keeps the plan for the
listing (the very first call lists the tools, so the second keeps it); the calls after
it take a shorter path (``ToolCalls.planned``, the send, the result parsed and
checked). Everything a call is given must still reach the wire and the result: its
progress callback, its timeout (and the client's, read at each call), its ``_meta``,
``raise_on_error``, the ``input_required`` rounds, the outputSchema check. Each test
warms the tool's plan up first, then checks calls that take the short path, against
the fake stdio server.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Tuple

import pytest

import mcp_sync
from mcp_sync import ProtocolError, RequestTimeout, ToolError

from ..conftest import PY, SERVERS, fake_server_command

T = 10.0


def connect(**kwargs: Any) -> mcp_sync.Client:
    kwargs.setdefault("timeout", T)
    return mcp_sync.connect(fake_server_command(), **kwargs)


def calls_of(client: mcp_sync.Client, name: str) -> List[Dict[str, Any]]:
    """The params of every tools/call of tool ``name`` the server received."""
    received = client.call_tool("received", {"method": "tools/call"})
    return [m["params"] for m in json.loads(received.text) if m["params"]["name"] == name]


def warm(client: mcp_sync.Client, name: str, arguments: Dict[str, Any]) -> None:
    """Call tool ``name`` until its plan is kept: the next calls take the short path."""
    for _ in range(2):
        client.call_tool(name, arguments)
    assert client._tool_calls.planned(name) is not None


def test_a_steady_call_has_a_kept_plan() -> None:
    with connect() as client:
        assert client._tool_calls.planned("echo") is None
        client.call_tool("echo", {"text": "a"})  # lists the tools: a new key
        assert client._tool_calls.planned("echo") is None
        client.call_tool("echo", {"text": "b"})
        assert client._tool_calls.planned("echo") is not None


def test_each_call_reports_its_progress() -> None:
    seen: List[Tuple[int, Any, Optional[float], Optional[str]]] = []
    with connect() as client:
        warm(client, "slow", {"seconds": 0})
        for call in (1, 2, 3):
            result = client.call_tool(
                "slow", {"seconds": 0.3, "progress_interval": 0.05},
                on_progress=lambda p, total, message, call=call: seen.append(
                    (call, p, total, message)))
            assert result.text == "slept 0.3"
    assert {call for call, *_ in seen} == {1, 2, 3}
    assert (2, 1, None, "step 1") in seen and (3, 1, None, "step 1") in seen


def test_each_call_has_its_own_timeout_and_the_clients_is_read_at_each() -> None:
    with connect() as client:
        warm(client, "slow", {"seconds": 0})
        with pytest.raises(RequestTimeout):
            client.call_tool("slow", {"seconds": 5}, timeout=0.3)
        client.timeout = 0.3
        with pytest.raises(RequestTimeout):
            client.call_tool("slow", {"seconds": 5})
        client.timeout = T
        assert client.call_tool("slow", {"seconds": 0.4}).text == "slept 0.4"


def test_each_call_sends_its_meta_and_arguments() -> None:
    with connect() as client:
        warm(client, "echo", {"text": "zero"})
        client.call_tool("echo", {"text": "one"}, meta={"call": 1})
        client.call_tool("echo", {"text": "two"}, meta={"call": 2})
        client.call_tool("echo", {"text": "three"})
        sent = calls_of(client, "echo")
    assert [p["arguments"] for p in sent[2:]] == [{"text": "one"}, {"text": "two"},
                                                  {"text": "three"}]
    assert [p.get("_meta", {}).get("call") for p in sent[2:]] == [1, 2, None]


def test_raise_on_error_is_read_at_each_call() -> None:
    with connect() as client:
        warm(client, "fail", {"message": "zero"})
        assert client.call_tool("fail", {"message": "first"}).is_error
        with pytest.raises(ToolError, match="second"):
            client.call_tool("fail", {"message": "second"}, raise_on_error=True)
        assert client.call_tool("fail", {"message": "third"}).is_error
        with pytest.raises(ToolError, match="fourth"):
            client.call_tool("fail", {"message": "fourth"}, raise_on_error=True)


def test_each_call_answers_its_input_rounds() -> None:
    answered: List[str] = []

    def roots() -> List[Dict[str, str]]:
        answered.append("roots")
        return [{"uri": "file:///work", "name": "work"}]

    requests = {"where": {"method": "roots/list", "params": {}}}
    with connect(roots=roots) as client:
        warm(client, "needs_input", {"input_requests": requests})
        for _ in range(2):
            result = client.call_tool("needs_input", {"input_requests": requests})
            assert result.text == "answered"
            assert result.structured is not None
            assert result.structured["inputResponses"]["where"]["roots"][0]["name"] == "work"
        assert len(calls_of(client, "needs_input")) == 4 * 2  # two rounds each
    assert answered == ["roots"] * 4


def test_each_result_is_checked_against_the_output_schema() -> None:
    with connect() as client:
        warm(client, "shaped", {"value": 0})
        assert client.call_tool("shaped", {"value": 1}).structured == {"value": 1}
        with pytest.raises(ProtocolError, match="'x' is not of type 'number'"):
            client.call_tool("shaped", {"value": "x"})
        assert client.call_tool("shaped", {"value": 2}).data == {"value": 2}


def test_arguments_not_a_mapping_are_refused_at_each_call() -> None:
    with connect() as client:
        with pytest.raises(TypeError):
            client.call_tool("echo", ["not", "a", "mapping"])  # type: ignore[arg-type]
        warm(client, "echo", {"text": "fine"})
        with pytest.raises(TypeError):
            client.call_tool("echo", ["not", "a", "mapping"])  # type: ignore[arg-type]


def test_a_result_that_is_no_call_tool_result_is_refused_at_each_call() -> None:
    # The schema server's any_value returns its value as structuredContent: an object
    # is a session-era CallToolResult, an array is not (its 2026-07-28 schema is off).
    with mcp_sync.connect([PY, str(SERVERS / "schema_stdio.py")], timeout=T,
                          protocol_version="2025-11-25", validate_output=False) as client:
        warm(client, "any_value", {"value": {"a": 1}})
        for _ in range(2):
            with pytest.raises(ProtocolError,
                               match="invalid tools/call result from server") as info:
                client.call_tool("any_value", {"value": [1, 2, 3]})
            assert info.value.__cause__ is None and info.value.__suppress_context__
            assert client.call_tool("any_value", {"value": {"b": 2}}).structured == {"b": 2}
