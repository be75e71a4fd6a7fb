"""MemoryTransport and FakeServer: the in-process testing helpers users get."""

from __future__ import annotations

import threading
from typing import Any, List

import pytest

import mcp_sync
from mcp_sync import Client, ConnectionClosed, MemoryTransport, RequestTimeout
from mcp_sync.testing import FakeServer, ToolContext


def make_server() -> FakeServer:
    server = FakeServer("weather", page_size=1)

    @server.tool(description="Forecast for a city")
    def forecast(city: str) -> str:
        return f"sunny in {city}"

    @server.tool()
    def structured(n: int) -> dict:  # type: ignore[type-arg]
        return {"n": n, "double": 2 * n}

    @server.tool()
    def wait(ctx: ToolContext) -> str:
        ctx.progress(1, 2, "half")
        ctx.cancelled.wait(30)
        return "woke"

    return server


def test_a_client_talks_to_an_in_process_server() -> None:
    server = make_server()
    with Client(MemoryTransport(server), timeout=5) as client:
        assert client.server_info.name == "weather"
        assert [t.name for t in client.list_tools()] == ["forecast", "structured", "wait"]
        assert client.call_tool("forecast", {"city": "Oslo"}).text == "sunny in Oslo"
        result = client.call_tool("structured", {"n": 4})
        assert result.structured == {"n": 4, "double": 8}
        connection = server.connections[0]
        assert connection.wait_for(lambda m: m.get("method") == "notifications/initialized")
        # three pages of one tool each were fetched
        assert sum(1 for m in connection.received if m.get("method") == "tools/list") == 3


def test_memory_timeout_cancels_and_server_sees_it() -> None:
    server = make_server()
    progress: List[Any] = []
    with Client(MemoryTransport(server), timeout=5) as client:
        with pytest.raises(RequestTimeout):
            client.call_tool("wait", timeout=0.3,
                             on_progress=lambda *args: progress.append(args))
        message = server.connections[0].wait_for(
            lambda m: m.get("method") == "notifications/cancelled")
        assert message["params"]["reason"] == "timed out"
    assert progress == [(1.0, 2.0, "half")]


def test_server_closing_the_connection_fails_pending_requests() -> None:
    server = make_server()
    client = Client(MemoryTransport(server), timeout=10)
    client.connect()
    try:
        future = client.call_tool_future("wait")
        connection = server.connections[0]
        connection.wait_for(lambda m: m.get("params", {}).get("name") == "wait")
        threading.Thread(target=connection.close).start()
        with pytest.raises(ConnectionClosed):
            future.result(5)
        with pytest.raises(ConnectionClosed):
            client.ping()
    finally:
        client.close()


def test_connect_accepts_a_transport() -> None:
    server = make_server()
    with mcp_sync.connect(MemoryTransport(server)) as client:
        client.ping()
        assert client.connected
