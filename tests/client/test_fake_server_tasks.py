"""Tools that run as tasks in mcp_sync.testing.FakeServer, and the demo server's
``slow_report``.

The demo server runs as a real stdio child; the FakeServer cases run in process over a
MemoryTransport, where a tool can be held by a ``threading.Event`` the test sets.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Iterator, List, Optional, Tuple

import pytest

import mcp_sync
from mcp_sync import Client, MemoryTransport, testing
from mcp_sync.testing import FakeServer, RpcError, ToolContext, ToolError

from ..helpers import wait_for

DEMO = [sys.executable, "-m", "mcp_sync.demo_server"]
WAIT = 10.0


@pytest.fixture
def demo() -> Iterator[Client]:
    with mcp_sync.connect(DEMO, timeout=WAIT) as client:
        yield client


def test_the_demo_server_lists_slow_report_as_a_task_tool(demo: Client) -> None:
    tools = {tool.name: tool for tool in demo.list_tools()}
    assert {"echo", "add", "count", "now", "image", "slow_report"} <= set(tools)
    execution = tools["slow_report"].execution
    assert execution is not None and execution.task_support == "required"
    assert all(tools[name].execution is None for name in ("echo", "add", "count"))
    tasks = demo.server_capabilities.tasks
    assert tasks is not None and tasks.list is not None and tasks.cancel is not None


def test_call_tool_runs_slow_report_as_a_task_without_being_asked(demo: Client) -> None:
    seen: List[Tuple[float, Optional[float], Optional[str]]] = []

    result = demo.call_tool("slow_report", {"topic": "tides", "seconds": 0.3},
                            on_progress=lambda *update: seen.append(update))

    assert result.text == "Report on tides: 3 steps done in 0.3 s."
    assert not result.is_error
    # The server's progress, sent with the call's token after the task was created,
    # reaches on_progress (the callback thread may deliver the last one just after).
    wait_for(lambda: len([u for u in seen if u[1] is not None]) == 3, what="3 progress")
    real = [update for update in seen if update[1] is not None]
    assert real == [(1.0, 3.0, "gathering sources"), (2.0, 3.0, "reading"),
                    (3.0, 3.0, "writing")]
    # Status messages stand in for progress only until the server's first progress.
    first = seen.index(real[0])
    assert all(update[1] is None for update in seen[:first])
    assert all(update[1] is not None for update in seen[first:]), seen
    with pytest.raises(mcp_sync.MethodNotFound, match="runs as a task only"):
        demo.call_tool("slow_report", {"topic": "tides"}, task=False)


def test_start_tool_task_then_status_list_cancel_and_result(demo: Client) -> None:
    long = demo.start_tool_task("slow_report", {"topic": "a", "seconds": 600}, ttl=60)
    assert long.status().status == "working"
    assert long.status().ttl == 60_000

    short = demo.start_tool_task("slow_report", {"topic": "b", "seconds": 0})
    assert short.result(timeout=WAIT).text == "Report on b: 3 steps done in 0 s."
    assert short.status().status == "completed"
    assert {(t.task_id, t.status) for t in demo.list_tasks()} == {
        (long.id, "working"), (short.id, "completed")}

    cancelled = long.cancel()
    assert cancelled.status == "cancelled"
    with pytest.raises(mcp_sync.TaskCancelled):
        long.result(timeout=WAIT)
    assert demo.cancel_task(short.id).status == "completed"  # it had ended already


def test_slow_report_fails_as_a_task(demo: Client) -> None:
    refused = demo.start_tool_task("slow_report", {"topic": "a", "seconds": -1})
    with pytest.raises(mcp_sync.TaskFailed, match="from 0 to 600, not -1") as caught:
        refused.result(timeout=WAIT)
    assert isinstance(caught.value.error, mcp_sync.ServerError)
    assert caught.value.error.code == -32602

    blank = demo.start_tool_task("slow_report", {"topic": " ", "seconds": 0})
    result = blank.result(timeout=WAIT)
    assert result.is_error and result.text == "a report needs a topic"
    assert blank.status().status == "failed"

    with pytest.raises(mcp_sync.TaskNotFound):
        demo.task("task-999").status()


# -- FakeServer, in process ----------------------------------------------------------------


class Gated:
    """A FakeServer with a ``held`` task tool that runs until ``release`` is set."""

    def __init__(self) -> None:
        self.server = FakeServer("gated")
        self.started = threading.Event()
        self.release = threading.Event()
        self.saw_cancel = threading.Event()

        @self.server.tool(task_support="optional")
        def held(text: str, ctx: ToolContext) -> str:
            ctx.status("held")
            self.started.set()
            deadline = time.monotonic() + WAIT
            while time.monotonic() < deadline:  # watches both events, bounded
                if self.release.wait(0.01):
                    return f"released {text}"
                if ctx.cancelled.is_set():
                    self.saw_cancel.set()
                    return "cancelled"
            return "never released"

        @self.server.tool(task_support="optional")
        def broken() -> str:
            raise RpcError({"code": -32000, "message": "no disk"})

        @self.server.tool(task_support="forbidden")
        def plain_only() -> str:
            return "plain"


@pytest.fixture
def gated() -> Iterator[Gated]:
    yield Gated()


def connect(server: FakeServer) -> Client:
    return Client(MemoryTransport(server), timeout=WAIT).connect()


def test_a_task_reports_its_status_and_ends_when_released(gated: Gated) -> None:
    with connect(gated.server) as client:
        handle = client.start_tool_task("held", {"text": "x"}, ttl=30)
        assert gated.started.wait(WAIT)
        task = handle.status()
        assert (task.status, task.status_message, task.poll_interval) == (
            "working", "held", 500)
        waiter = handle.future(timeout=WAIT)
        assert not waiter.done()

        gated.release.set()

        result = waiter.result(WAIT)
        assert result.text == "released x"
        related = (result.meta or {})["io.modelcontextprotocol/related-task"]
        assert related == {"taskId": handle.id}
        # An optional tool runs plainly unless asked.
        assert client.call_tool("held", {"text": "y"}).text == "released y"


def test_a_raised_rpc_error_fails_the_task(gated: Gated) -> None:
    with connect(gated.server) as client:
        handle = client.start_tool_task("broken")
        with pytest.raises(mcp_sync.TaskFailed, match="no disk"):
            handle.result()
        assert handle.status().status == "failed"
        with pytest.raises(mcp_sync.ServerError, match="in terminal status failed"):
            client.request("tasks/cancel", {"taskId": handle.id})
        with pytest.raises(mcp_sync.CapabilityError):
            client.start_tool_task("plain_only")


def test_a_task_is_forgotten_when_its_ttl_passes(gated: Gated) -> None:
    with connect(gated.server) as client:
        handle = client.start_tool_task("held", {"text": "x"}, ttl=0.1)
        assert gated.started.wait(WAIT)
        deadline = time.monotonic() + WAIT
        with pytest.raises(mcp_sync.TaskNotFound):
            while time.monotonic() < deadline:  # ask until the ttl has passed
                handle.status()
        assert gated.saw_cancel.wait(WAIT)  # the running tool was told
        assert client.list_tasks() == []


def test_a_connection_keeps_at_most_max_tasks(gated: Gated,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(testing, "MAX_TASKS", 2)
    gated.release.set()
    with connect(gated.server) as client:
        first = client.start_tool_task("held", {"text": "1"})
        client.start_tool_task("held", {"text": "2"}, ttl=0.1)
        with pytest.raises(mcp_sync.ServerError, match="holds 2 tasks already"):
            client.start_tool_task("held", {"text": "3"})
        assert first.result().text == "released 1"  # ended, but kept for its result
        deadline = time.monotonic() + WAIT
        while len(client.list_tasks()) == 2:  # until the second one's ttl has passed
            assert time.monotonic() < deadline
        assert client.start_tool_task("held", {"text": "4"}).result().text == "released 4"


def test_closing_the_connection_cancels_running_tasks(gated: Gated) -> None:
    client = connect(gated.server)
    client.start_tool_task("held", {"text": "x"})
    assert gated.started.wait(WAIT)
    waiting = client.start_tool_task("held", {"text": "y"}).future(timeout=WAIT)

    client.close()

    assert gated.saw_cancel.wait(WAIT)
    with pytest.raises(mcp_sync.ConnectionClosed):
        waiting.result(WAIT)
    assert gated.server.connections == []


def test_tasks_are_declared_only_by_a_server_with_a_task_tool() -> None:
    plain = FakeServer("plain")

    @plain.tool(task_support="forbidden")
    def echo(text: str) -> str:
        return text

    with connect(plain) as client:
        assert client.server_capabilities.tasks is None
        with pytest.raises(mcp_sync.MethodNotFound):
            client.request("tasks/get", {"taskId": "task-1"})
    with pytest.raises(ValueError, match="task_support"):
        plain.tool(task_support="always")


def test_a_required_task_tool_refuses_a_plain_call() -> None:
    server = FakeServer("strict")

    @server.tool(task_support="required")
    def work() -> Any:
        raise ToolError("never run plainly")

    with connect(server) as client:
        with pytest.raises(mcp_sync.MethodNotFound, match="runs as a task only"):
            client.call_tool("work", task=False)
        result = client.call_tool("work")  # as a task: the tool's error is a result
        assert result.is_error and result.text == "never run plainly"
