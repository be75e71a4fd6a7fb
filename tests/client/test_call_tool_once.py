"""``mcp_sync.call_tool(target, name, arguments)``: one call, no lifecycle. Against the
project's stdio test server, the embedded demo server and the HTTP test server: the
result comes back, the server is gone when it returns (the autouse fixture fails a test
that leaves a child process or an mcp-sync thread), errors and timeouts are the
client's, and a second call to the same server skips the era probe."""

from __future__ import annotations

import sys
import time
from typing import List

import pytest

import mcp_sync
from mcp_sync import RequestTimeout, ServerError, ToolError

from ..conftest import fake_server_command
from ..servers.http_server import McpHttpServer, echo_fake

DEMO = [sys.executable, "-m", "mcp_sync.demo_server"]


def test_one_call_returns_the_result_and_leaves_nothing_running() -> None:
    result = mcp_sync.call_tool(fake_server_command(), "add", {"a": 2, "b": 3})
    assert result.data == {"sum": 5}
    assert not result.is_error
    # The demo server, as a target given as a string command.
    assert mcp_sync.call_tool(" ".join(DEMO), "echo", {"text": "hi"}, timeout=20).text == "hi"


def test_a_tool_error_is_returned_or_raised_as_asked() -> None:
    result = mcp_sync.call_tool(fake_server_command(), "fail", {"message": "nope"})
    assert result.is_error and "nope" in result.text
    with pytest.raises(ToolError, match="nope"):
        mcp_sync.call_tool(fake_server_command(), "fail", {"message": "nope"},
                           raise_on_error=True)


def test_an_unknown_tool_raises_the_server_error() -> None:
    with pytest.raises(ServerError):
        mcp_sync.call_tool(fake_server_command(), "no_such_tool", {})


def test_timeout_bounds_the_call_and_the_server_is_stopped() -> None:
    started = time.monotonic()
    with pytest.raises(RequestTimeout, match="slow"):
        mcp_sync.call_tool(fake_server_command(), "slow", {"seconds": 30}, timeout=1.0,
                           close_timeout=1.0)
    assert time.monotonic() - started < 8.0  # the timeout, the cancellation, the close


def test_connect_options_reach_the_transport() -> None:
    result = mcp_sync.call_tool(fake_server_command(), "environment", {},
                                env={"MCP_SYNC_TEST_MARK": "1"}, close_timeout=1.0)
    assert "MCP_SYNC_TEST_MARK" in result.text
    with pytest.raises(ValueError, match="headers apply to URLs, not to a command"):
        mcp_sync.call_tool(fake_server_command(), "echo", {"text": "x"},
                           headers={"X-Key": "k"})


def test_over_http_the_session_is_ended_and_the_era_remembered() -> None:
    with McpHttpServer(echo_fake("once")) as server:
        for text in ("one", "two"):
            assert mcp_sync.call_tool(server.url, "echo", {"text": text}).text == text
        methods: List[str] = [r.rpc_method or r.method for r in server.requests]
    # The first call probed the era (server/discover), the second did not; each ended
    # its MCP session with a DELETE.
    assert methods.count("server/discover") == 1
    assert methods.count("initialize") == 2 and methods.count("DELETE") == 2
