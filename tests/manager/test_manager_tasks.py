"""Tasks through the Manager: start, re-attach, list and cancel routed to the right one of
two task servers (``tests/servers/task_server.py`` as a stdio child, and the same server
behind ``McpHttpServer`` in this process), ``call_tool(task=True)``, and what a handle
does when its server reconnects.

Both servers number their tasks ``task-1``, ``task-2``...: the same id on two servers, so
a request that went to the wrong one shows. Their tasks move one step per ``tasks/get``.
"""

from __future__ import annotations

import os
import signal
from typing import Any, Dict, Iterator

import pytest

from mcp_sync import (
    ConnectionClosed,
    TaskHandle,
    TaskNotFound,
    TaskStartOptions,
    ToolCallOptions,
)
from mcp_sync.manager import Manager, ServerState

from ..conftest import PY, SERVERS
from ..helpers import Recorder
from ..servers.http_server import McpHttpServer
from ..servers.task_server import TaskServer

T = 30.0  # bound for anything quick; generous for a small, noisy VM


def local_entry() -> Dict[str, Any]:
    return {"command": PY, "args": [str(SERVERS / "task_server.py")]}


@pytest.fixture
def remote() -> Iterator[McpHttpServer]:
    server = McpHttpServer(TaskServer()).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def manager(remote: McpHttpServer, recorder: Recorder) -> Iterator[Manager]:
    config = {"mcpServers": {"local": local_entry(),
                             "remote": {"type": "http", "url": remote.url}}}
    with Manager(config, timeout=T, backoff=(0.05,), breaker_failures=10_000,
                 on_status=recorder) as started:
        yield started


def state(manager: Manager, server: str, task_id: str) -> str:
    return manager.call_tool(server, "task_state", {"task_id": task_id}, timeout=T).text


def test_start_status_list_and_cancel_go_to_the_right_server(manager: Manager) -> None:
    local = manager.start_tool_task("local", "forever", {}, ttl=60, timeout=T)
    remote = manager.start_tool_task("remote__countdown", {"polls": 2, "text": "far"},
                                     timeout=T)
    assert isinstance(local, TaskHandle) and isinstance(remote, TaskHandle)
    assert local.id == remote.id == "task-1"  # one id, two servers
    assert local.last is not None and local.last.ttl == 60_000

    assert manager.task("remote", remote.id).status(timeout=T).status_message == "poll 1 of 2"
    assert remote.result(T).structured == {"text": "far", "polls": 2}

    listed = manager.list_tasks(timeout=T)
    assert [(server, task.task_id, task.status) for server, task in listed] == [
        ("local", "task-1", "working"), ("remote", "task-1", "completed")]
    assert [(s, t.task_id) for s, t in manager.list_tasks("remote", timeout=T)] == [
        ("remote", "task-1")]

    # Cancelling task-1 of local leaves task-1 of remote as it was.
    assert manager.cancel_task("local", "task-1", timeout=T).status == "cancelled"
    assert state(manager, "local", "task-1") == "cancelled"
    assert state(manager, "remote", "task-1") == "completed"
    with pytest.raises(TaskNotFound):
        manager.task("remote", "task-9").status(timeout=T)
    with pytest.raises(KeyError):
        manager.task("nowhere", "task-1")


def test_call_tool_with_task_true_runs_an_optional_tool_as_a_task(manager: Manager) -> None:
    assert manager.call_tool("local__maybe", {"text": "x"}, timeout=T).text == "plain: x"
    assert manager.call_tool("local__maybe", {"text": "x"}, task=True,
                             timeout=T).text == "task: x"
    assert manager.call_tool("remote", "maybe", {"text": "y"}, ttl=5,
                             timeout=T).text == "task: y"
    assert [t.status for _, t in manager.list_tasks("remote", timeout=T)] == ["completed"]
    assert [t.ttl for _, t in manager.list_tasks("local", timeout=T)] == [60_000]


def test_the_clients_call_options_serve_the_manager(manager: Manager) -> None:
    # One options type for every call form, the manager's included (ToolCallOptions,
    # TaskStartOptions); a keyword that is none of them is refused before routing.
    options = ToolCallOptions(timeout=T, task=True, meta={"from": "options"})
    assert manager.call_tool("local__maybe", {"text": "x"}, **options).text == "task: x"
    assert manager.call_tool("remote", "maybe", {"text": "y"}, **options).text == "task: y"
    started = manager.start_tool_task("local", "countdown", {"polls": 1, "text": "z"},
                                      **TaskStartOptions(ttl=60, timeout=T))
    assert started.last is not None and started.last.ttl == 60_000
    assert started.result(T).text == "z"
    with pytest.raises(TypeError,
                       match=r"^call_tool\(\) got an unexpected keyword argument 'timout'$"):
        manager.call_tool("nowhere", "maybe", {"text": "typo"}, timout=T)
    with pytest.raises(TypeError, match=r"^start_tool_task\(\) got an unexpected keyword "
                                        r"argument 'task'$"):
        manager.start_tool_task("local", "countdown", {"polls": 1}, task=True)
    assert [t.task_id for _, t in manager.list_tasks("local", timeout=T)] == [
        "task-1", "task-2"]


def test_a_handle_from_before_a_reconnect_fails_clearly(
        manager: Manager, recorder: Recorder) -> None:
    handle = manager.start_tool_task("local", "forever", {}, timeout=T)
    waiting = handle.future(T)  # polls on a task thread of the old connection
    assert handle.status(timeout=T).status == "working"
    pid = manager["local"].transport.pid  # type: ignore[attr-defined]
    mark = recorder.mark()
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(ConnectionClosed):
        waiting.result(T)  # the wait under way ends with the connection, not its timeout

    recorder.next_call(lambda s: s.name == "local" and s.state is ServerState.CONNECTED,
                       since=mark, what="local connected again")
    assert manager["local"].transport.pid != pid  # type: ignore[attr-defined]
    # The new stdio server never heard of the task: the handle says so, at once.
    with pytest.raises(TaskNotFound, match="task-1"):
        handle.status(timeout=T)
    with pytest.raises(TaskNotFound):
        handle.result(T)


def test_a_handle_follows_its_server_to_a_new_connection(
        manager: Manager, recorder: Recorder, remote: McpHttpServer) -> None:
    # An HTTP server that keeps tasks across sessions: the handle goes on over the new one.
    handle = manager.start_tool_task("remote", "countdown", {"polls": 3, "text": "kept"},
                                     timeout=T)
    old = manager["remote"]
    mark = recorder.mark()
    manager._servers["remote"].connection_lost(old, ConnectionClosed("dropped by the test"))
    recorder.next_call(lambda s: s.name == "remote" and s.state is ServerState.CONNECTED,
                       since=mark, what="remote connected again")
    assert manager["remote"] is not old and not old.connected
    assert handle.result(T).text == "kept"
