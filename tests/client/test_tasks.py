"""Tasks (MCP 2025-11-25), the client as requestor: ``call_tool`` and
``call_tool_future`` on a task tool, ``start_tool_task`` / ``task(id)`` handles,
``list_tasks``, ``cancel_task``, and the errors a task ends with.

The peer is ``tests/servers/task_server.py``: the same FakeServer as a stdio child
process and behind ``McpHttpServer`` in this process; every test runs over both. Its
tasks move one step per ``tasks/get``, so what happens is decided by the client's polls,
and ``received``/``wait_for`` tell what the server got.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest

import mcp_sync
from mcp_sync import (
    CapabilityError,
    ConnectionClosed,
    MessageTooLarge,
    ProtocolError,
    RequestTimeout,
    TaskCancelled,
    TaskFailed,
    TaskHandle,
    TaskNotFound,
    ToolError,
)
from mcp_sync.client._tasks.waiting import MAX_POLL_INTERVAL, MIN_POLL_INTERVAL, poll_interval

from .._peer_processes import everything_argv, everything_command, serve
from ..conftest import PY, SERVERS
from ..servers.http_server import McpHttpServer
from ..servers.task_server import RELATED_TASK, TaskServer

WAIT = 10.0  # the bound on anything a test waits for; nothing comes near it


class Peer:
    """The task server over one transport: a child running ``script`` over stdio, or
    :meth:`http_server` on 127.0.0.1; a context manager that stops the latter."""

    script = "task_server.py"

    def __init__(self, transport: str, *flags: str) -> None:
        self.transport = transport
        self.flags = flags
        self.http: Optional[McpHttpServer] = None
        if transport == "http":
            self.http = self.http_server(flags).start()

    def http_server(self, flags: Tuple[str, ...]) -> McpHttpServer:
        return McpHttpServer(TaskServer(tasks="--no-tasks" not in flags,
                                        cancel="--no-cancel" not in flags))

    def connect(self, **kwargs: Any) -> mcp_sync.Client:
        kwargs.setdefault("timeout", WAIT)
        if self.http is not None:
            return mcp_sync.connect(self.http.url, transport="http", **kwargs)
        return mcp_sync.connect([PY, str(SERVERS / self.script), *self.flags], **kwargs)

    def stop(self) -> None:
        if self.http is not None:
            self.http.stop()

    def __enter__(self) -> Peer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


@pytest.fixture(params=["stdio", "http"])
def peer(request: pytest.FixtureRequest) -> Iterator[Peer]:
    with Peer(request.param) as made:
        yield made


@pytest.fixture
def client(peer: Peer) -> Iterator[mcp_sync.Client]:
    with peer.connect(elicitation_handler=answer) as connected:
        yield connected


def answer(params: Any) -> Dict[str, Any]:
    assert params.message == "Proceed?"
    assert params.meta[RELATED_TASK]["taskId"].startswith("task-")
    return {"action": "accept", "content": {"answer": "yes"}}


def received(client: mcp_sync.Client, method: str) -> int:
    return int(client.call_tool("received", {"method": method}).text)


def wait_received(client: mcp_sync.Client, method: str, count: int = 1) -> int:
    """Block (server side, bounded) until the server has received ``count`` of ``method``."""
    return int(client.call_tool("wait_for", {"method": method, "count": count}).text)


def calls(client: mcp_sync.Client, tool: str, kind: str, **kwargs: Any) -> Any:
    """Call ``tool`` in the form ``kind`` (one of FORMS): blocking, or a future waited on."""
    if kind == "call_tool":
        return client.call_tool(tool, **kwargs)
    return client.call_tool_future(tool, **kwargs).result(WAIT)


FORMS = ["call_tool", "future"]


# -- the polling bounds (pure logic) ----------------------------------------------------------


def test_poll_interval_follows_the_server_within_bounds() -> None:
    class Task:
        def __init__(self, poll: Any) -> None:
            self.poll_interval = poll

    assert poll_interval(Task(250)) == 0.25
    assert poll_interval(Task(0)) == MIN_POLL_INTERVAL
    assert poll_interval(Task(3_600_000)) == MAX_POLL_INTERVAL
    assert poll_interval(Task(None)) == 1.0
    assert poll_interval(Task(float("nan"))) == 1.0


# -- call_tool on a task tool -----------------------------------------------------------------


@pytest.mark.parametrize("form", FORMS)
def test_a_required_tool_runs_as_a_task_and_returns_its_result(
        client: mcp_sync.Client, form: str) -> None:
    statuses: List[Any] = []
    result = calls(client, "countdown", form, arguments={"polls": 3, "text": "ready"},
                   on_progress=lambda *args: statuses.append(args))
    assert result.text == "ready" and not result.is_error
    assert result.structured_content == {"text": "ready", "polls": 3}
    assert result.meta == {RELATED_TASK: {"taskId": "task-1"}}
    # Each status change reached on_progress, counted, with its message.
    assert statuses == [(1.0, None, "started"), (2.0, None, "poll 1 of 3"),
                        (3.0, None, "poll 2 of 3"), (4.0, None, "done")]
    assert received(client, "tasks/get") == 3
    assert received(client, "tasks/result") == 1
    assert received(client, "tasks/cancel") == 0


@pytest.mark.parametrize("form", FORMS)
def test_a_task_result_is_checked_against_the_output_schema(
        client: mcp_sync.Client, form: str) -> None:
    with pytest.raises(ProtocolError, match="text"):
        calls(client, "misshapen", form)


@pytest.mark.parametrize("form", FORMS)
def test_a_failed_task_raises_task_failed_with_the_servers_error(
        client: mcp_sync.Client, form: str) -> None:
    with pytest.raises(TaskFailed, match="disk full") as caught:
        calls(client, "fails", form, arguments={"message": "disk full"})
    assert caught.value.task_id == "task-1"
    assert caught.value.task.status == "failed"
    assert caught.value.error.code == -32603


@pytest.mark.parametrize("form", FORMS)
def test_a_failed_tool_result_is_returned_like_a_plain_calls(
        client: mcp_sync.Client, form: str) -> None:
    result = calls(client, "fails_softly", form, arguments={"message": "no such city"},
                   task=True)
    assert result.is_error and result.text == "no such city"
    with pytest.raises(ToolError, match="no such city"):
        calls(client, "fails_softly", form, arguments={"message": "no such city"},
              task=True, raise_on_error=True)


@pytest.mark.parametrize("form", FORMS)
def test_a_task_the_server_cancels_raises_task_cancelled(
        client: mcp_sync.Client, form: str) -> None:
    with pytest.raises(TaskCancelled, match="stopped by the operator") as caught:
        calls(client, "dropped", form)
    assert caught.value.task.status == "cancelled"
    assert received(client, "tasks/result") == 0  # a cancelled task has no result


@pytest.mark.parametrize("form", FORMS)
def test_an_expired_task_raises_task_not_found(client: mcp_sync.Client, form: str) -> None:
    with pytest.raises(TaskNotFound, match="expired") as caught:
        calls(client, "expires", form)
    assert caught.value.error.code == -32602


@pytest.mark.parametrize("form", FORMS)
def test_a_task_that_needs_input_gets_it_through_tasks_result(
        client: mcp_sync.Client, form: str) -> None:
    result = calls(client, "confirm", form, arguments={"question": "Proceed?"})
    assert result.text == "answer: {'answer': 'yes'}"


@pytest.mark.parametrize("form", FORMS)
def test_a_status_notification_ends_the_wait_before_the_next_poll(
        client: mcp_sync.Client, form: str) -> None:
    # The server answers the only poll "working, poll again in 60 s" (5 s, bounded),
    # after 300 status notifications, the last "completed": the wait must end on those.
    messages: List[Optional[str]] = []
    started = time.monotonic()
    result = calls(client, "flood", form, arguments={"count": 300},
                   on_progress=lambda _n, _t, message: messages.append(message))
    assert result.text == "flooded 300"
    assert time.monotonic() - started < MAX_POLL_INTERVAL - 1.0
    assert received(client, "tasks/get") == 1
    # Coalesced: the caller sees at most one report per status seen, in order, ending
    # with the completion.
    assert messages[0] == "started" and messages[-1] == "all steps done"
    steps = [int(m.split()[1]) for m in messages if m and m.startswith("step ")]
    assert steps == sorted(steps) and len(messages) <= 303
    client.ping()


def test_a_status_flood_behind_stuck_callbacks_is_dropped_not_fatal() -> None:
    # The callback thread is stuck in the notification handler: the status notifications
    # fill its queue and are dropped (polling tells the same); the connection lives.
    stuck, release = threading.Event(), threading.Event()

    def handler(method: str, params: Any) -> None:
        if method == "notifications/tasks/status" and not stuck.is_set():
            stuck.set()
            release.wait(WAIT)

    peer = Peer("stdio")
    with peer.connect(notification_handler=handler) as client:
        try:
            result = client.call_tool("flood", {"count": 3000})
        finally:
            release.set()
        assert result.text == "flooded 3000"
        assert stuck.is_set() and client.dropped_notifications > 0
        assert received(client, "tasks/get") == 2  # the second poll saw it completed


@pytest.mark.parametrize("form", FORMS)
def test_a_timeout_cancels_the_task(client: mcp_sync.Client, form: str) -> None:
    started = time.monotonic()
    expected = re.escape("tools/call 'forever' timed out after 0.5 s")
    with pytest.raises(RequestTimeout, match=expected):
        calls(client, "forever", form, timeout=0.5)
    assert time.monotonic() - started < 0.5 + 2.0
    assert wait_received(client, "tasks/cancel") == 1
    assert client.call_tool("task_state", {"task_id": "task-1"}).text == "cancelled"


def test_status_changes_push_the_deadline_but_not_past_max_total_timeout(
        peer: Peer) -> None:
    with peer.connect(max_total_timeout=1.0) as client:
        started = time.monotonic()
        with pytest.raises(RequestTimeout, match=re.escape("max_total_timeout=1.0")) as caught:
            client.call_tool("ticking", timeout=0.3)  # a new message at every poll
        elapsed = time.monotonic() - started
        assert caught.value.total and 1.0 <= elapsed < 3.0
        assert wait_received(client, "tasks/cancel") == 1


def test_ctrl_c_while_waiting_cancels_the_task(client: mcp_sync.Client) -> None:
    def interrupt(_progress: float, _total: Optional[float], message: Optional[str]) -> None:
        if message == "tick 2":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        client.call_tool("ticking", on_progress=interrupt)
    assert wait_received(client, "tasks/cancel") == 1
    assert client.call_tool("task_state", {"task_id": "task-1"}).text == "cancelled"


def test_cancelling_the_future_cancels_the_task(client: mcp_sync.Client) -> None:
    polled = threading.Event()
    future = client.call_tool_future("ticking", on_progress=lambda *_: polled.set())
    assert polled.wait(WAIT)
    assert future.cancel()
    assert wait_received(client, "tasks/cancel") == 1
    assert client.call_tool("task_state", {"task_id": "task-1"}).text == "cancelled"


@pytest.mark.parametrize("form", FORMS)
def test_closing_the_client_fails_a_waiting_call_with_connection_closed(
        peer: Peer, form: str) -> None:
    client = peer.connect()
    polled = threading.Event()
    outcome: List[BaseException] = []
    if form == "future":
        future = client.call_tool_future("forever", on_progress=lambda *_: polled.set())
    else:
        def blocking() -> None:
            try:
                client.call_tool("forever", on_progress=lambda *_: polled.set())
            except BaseException as exc:  # noqa: BLE001 - the outcome under test
                outcome.append(exc)

        waiter = threading.Thread(target=blocking, name="test-task-waiter")
        waiter.start()
    try:
        assert polled.wait(WAIT)
    finally:
        client.close()
    if form == "future":
        error = future.exception(WAIT)
    else:
        waiter.join(WAIT)
        assert not waiter.is_alive()
        error = outcome[0]
    assert isinstance(error, ConnectionClosed), error


# -- which calls are tasks --------------------------------------------------------------------


@pytest.mark.parametrize("form", FORMS)
def test_an_optional_tool_is_plain_unless_a_task_is_asked_for(
        client: mcp_sync.Client, form: str) -> None:
    assert calls(client, "maybe", form, arguments={"text": "a"}).text == "plain: a"
    assert calls(client, "maybe", form, arguments={"text": "b"}, task=True).text == "task: b"
    assert calls(client, "maybe", form, arguments={"text": "c"}, ttl=30).text == "task: c"
    assert received(client, "tasks/result") == 2


@pytest.mark.parametrize("tool", ["echo", "never_task"])
def test_asking_a_task_of_a_tool_that_does_not_run_one_raises(
        client: mcp_sync.Client, tool: str) -> None:
    for ask in (lambda: client.call_tool(tool, {"text": "x"}, task=True),
                lambda: client.call_tool_future(tool, {"text": "x"}, ttl=5),
                lambda: client.start_tool_task(tool, {"text": "x"})):
        with pytest.raises(CapabilityError, match="cannot run as a task"):
            ask()
    assert client.call_tool(tool, {"text": "x"}).text == "x"  # plain, as ever
    assert received(client, "tasks/get") == 0


def test_no_task_without_the_servers_capability(peer_no_tasks: Peer) -> None:
    with peer_no_tasks.connect() as client:
        with pytest.raises(CapabilityError, match=re.escape("tasks.requests.tools.call")):
            client.call_tool("maybe", {"text": "x"}, task=True)
        assert client.call_tool("maybe", {"text": "x"}).text == "plain: x"
        # A "required" tool is called plainly: the server refused tasks altogether.
        with pytest.raises(mcp_sync.MethodNotFound):
            client.call_tool("countdown", {"polls": 1, "text": "x"})


@pytest.fixture(params=["stdio", "http"])
def peer_no_tasks(request: pytest.FixtureRequest) -> Iterator[Peer]:
    made = Peer(request.param, "--no-tasks")
    try:
        yield made
    finally:
        made.stop()


def test_a_ttl_must_be_positive_seconds(client: mcp_sync.Client) -> None:
    for ttl in (0, -1, float("inf"), True, "10"):
        with pytest.raises(ValueError, match="ttl"):
            client.call_tool("maybe", {"text": "x"}, ttl=ttl)  # type: ignore[arg-type]


# -- handles ----------------------------------------------------------------------------------


def test_start_a_task_then_reattach_by_id(client: mcp_sync.Client) -> None:
    handle = client.start_tool_task("countdown", {"polls": 2, "text": "later"}, ttl=2.5)
    assert isinstance(handle, TaskHandle) and handle.id == "task-1"
    assert handle.last is not None and handle.last.ttl == 2500  # sent in ms
    assert received(client, "tasks/get") == 0  # starting does not wait
    # Another request, another handle: only the id travels.
    again = client.task(handle.id)
    assert again.status().status_message == "poll 1 of 2"
    assert again.wait(WAIT).status == "completed"
    result = again.result(WAIT)
    assert result.text == "later"
    assert handle.result(WAIT).structured_content == {"text": "later", "polls": 2}


def test_a_handles_wait_reports_each_new_state(client: mcp_sync.Client) -> None:
    handle = client.start_tool_task("countdown", {"polls": 3, "text": "seen"})
    seen: List[str] = []

    def on_status(task: Any) -> None:
        seen.append(f"{task.status}: {task.status_message}")
        raise RuntimeError("a broken callback is logged, not raised")

    assert handle.wait(WAIT, on_status=on_status).status == "completed"
    # the state the task was created in, then each poll's
    assert seen == ["working: started", "working: poll 1 of 3", "working: poll 2 of 3",
                    "completed: done"]
    assert handle.result(WAIT).text == "seen"


def test_a_handle_waits_within_its_timeout_and_leaves_the_task_running(
        client: mcp_sync.Client) -> None:
    handle = client.start_tool_task("forever")
    with pytest.raises(RequestTimeout, match="task-1"):
        handle.wait(0.3)
    with pytest.raises(RequestTimeout):
        handle.result(0.3)
    assert handle.status().status == "working"
    assert received(client, "tasks/cancel") == 0
    cancelled = handle.cancel()
    assert cancelled.status == "cancelled"
    with pytest.raises(TaskCancelled):
        handle.result(WAIT)


def test_a_handles_future(client: mcp_sync.Client) -> None:
    handle = client.start_tool_task("countdown", {"polls": 2, "text": "f"})
    assert handle.future(WAIT).result(WAIT).text == "f"
    forever = client.start_tool_task("forever")
    future = forever.future(WAIT)
    assert future.cancel()
    assert wait_received(client, "tasks/cancel") == 1
    assert forever.status().status == "cancelled"


def test_cancel_task_and_an_unknown_id(client: mcp_sync.Client) -> None:
    handle = client.start_tool_task("forever")
    assert client.cancel_task(handle.id).status == "cancelled"
    # Cancelling a finished task returns its state (the server refuses with -32602).
    assert client.cancel_task(handle.id).status == "cancelled"
    with pytest.raises(TaskNotFound, match="task-99"):
        client.task("task-99").status()
    with pytest.raises(TaskNotFound):
        client.cancel_task("task-99")
    with pytest.raises(TaskNotFound):
        client.task("task-99").result(WAIT)
    with pytest.raises(TypeError):
        client.task("")


def test_list_tasks_follows_pages(client: mcp_sync.Client) -> None:
    ids = [client.start_tool_task("forever").id for _ in range(5)]
    listed = client.list_tasks()
    assert [task.task_id for task in listed] == ids  # three pages of two
    assert {task.status for task in listed} == {"working"}
    assert received(client, "tasks/list") == 3


def test_no_cancel_capability_no_tasks_cancel() -> None:
    peer = Peer("stdio", "--no-cancel")
    with peer.connect() as client:
        handle = client.start_tool_task("forever")
        with pytest.raises(CapabilityError, match=re.escape("tasks.cancel")):
            handle.cancel()
        with pytest.raises(RequestTimeout):
            client.call_tool("forever", timeout=0.3)
        assert received(client, "tasks/cancel") == 0


# -- against server-everything ----------------------------------------------------------------


def test_a_task_result_larger_than_max_message_size_fails_clearly(peer: Peer) -> None:
    """A task's result comes in the answer to ``tasks/result``: one too large for the
    client's bound fails the call with MessageTooLarge, and the client goes on."""
    with peer.connect(max_message_size=64 * 1024) as client:
        with pytest.raises(MessageTooLarge):
            client.call_tool("countdown", {"polls": 1, "text": "x" * (200 * 1024)})
        assert client.call_tool("countdown", {"polls": 1, "text": "small"}).text == "small"


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_server_everything_research_query_runs_as_a_task(
        transport: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """server-everything's ``simulate-research-query`` requires a task: four stages of
    about a second each, reported as status messages; ``ambiguous`` moves the task to
    ``input_required`` and asks for a clarification while ``tasks/result`` is open."""
    if transport == "stdio":
        research(everything_command())
        return
    for server in serve("everything-http", everything_argv("streamableHttp"), "/mcp",
                        tmp_path_factory):
        research(server.url, transport="http")


def research(target: Any, **kwargs: Any) -> None:
    asked: List[str] = []

    def clarify(params: Any) -> Dict[str, Any]:
        asked.append(params.message)
        return {"action": "accept", "content": {"interpretation": "programming"}}

    with mcp_sync.connect(target, timeout=WAIT, elicitation_handler=clarify,
                          **kwargs) as client:
        tool = next(t for t in client.list_tools() if t.name == "simulate-research-query")
        assert tool.execution is not None and tool.execution.task_support == "required"
        messages: List[Optional[str]] = []
        result = client.call_tool("simulate-research-query", {"topic": "tides"},
                                  on_progress=lambda _n, _t, message: messages.append(message))
        assert result.text.startswith("# Research Report: tides") and not result.is_error
        assert messages[:2] == ["Gathering sources...", "Analyzing content..."]
        assert "Generating report..." in messages and len(messages) == len(set(messages))

        result = client.call_tool_future("simulate-research-query",
                                         {"topic": "python", "ambiguous": True}).result(WAIT)
        assert result.text.startswith("# Research Report: python (programming)")
        assert len(asked) == 1 and "multiple interpretations" in asked[0]
        assert [task.status for task in client.list_tasks()] == ["completed", "completed"]

        handle = client.start_tool_task("simulate-research-query", {"topic": "cats"})
        assert handle.cancel().status == "cancelled"
        with pytest.raises(TaskCancelled):
            handle.result(WAIT)
