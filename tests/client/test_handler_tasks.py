"""Tasks (MCP 2025-11-25), the client as executor: ``handler_tasks`` lets the server
run the sampling and elicitation handlers as tasks and follow them with ``tasks/get``,
``tasks/result``, ``tasks/list`` and ``tasks/cancel``.

The peer is ``tests/servers/task_server.py`` (a stdio child process, and the same
FakeServer behind ``McpHttpServer`` in this process): its ``ask`` tool sends the client
whatever request a test names and returns the client's answer, so each test plays the
server's side step by step. The handlers run in this process, gated by events. The
last tests run server-everything's ``trigger-sampling-request-async`` and
``trigger-elicitation-request-async``, which poll the client's task and read its result.
"""

from __future__ import annotations

import os
import signal
import threading
from concurrent.futures import Future
from typing import Any, Dict, Iterator, List, Optional

import pytest

import mcp_sync
from mcp_sync import MemoryTransport, ServerError, request_context
from mcp_sync.client._tasks import executor as _executor
from mcp_sync.testing import FakeServer

from .._peer_processes import everything_argv, everything_command, serve
from .test_tasks import Peer

WAIT = 10.0
RELATED_TASK = "io.modelcontextprotocol/related-task"
ANSWER = {"role": "assistant", "content": {"type": "text", "text": "forty-two"},
          "model": "test-model", "stopReason": "endTurn"}
SAMPLING = {"messages": [{"role": "user", "content": {"type": "text", "text": "Sum?"}}],
            "maxTokens": 10}


class Handlers:
    """A sampling and an elicitation handler that wait for ``gate`` (bounded) and record
    what they saw: the task's context, its cancellation."""

    def __init__(self, gated: bool = False) -> None:
        self.gate = threading.Event()
        if not gated:
            self.gate.set()
        self.started = threading.Event()
        self.contexts: List[Any] = []
        self.saw_cancel: List[bool] = []
        self.threads: List[str] = []
        self.fail: Optional[BaseException] = None
        self.wait_for_cancel = False

    def sampling(self, params: Any) -> Dict[str, Any]:
        context = request_context()
        self.contexts.append(context)
        self.threads.append(threading.current_thread().name)
        self.started.set()
        if self.wait_for_cancel:
            self.saw_cancel.append(context.cancelled.wait(WAIT))
            return ANSWER
        assert self.gate.wait(WAIT), "the test never opened the gate"
        if self.fail is not None:
            raise self.fail
        return ANSWER

    def elicitation(self, params: Any) -> Dict[str, Any]:
        return {"action": "accept", "content": {"name": "Ada"}}


@pytest.fixture(params=["stdio", "http"])
def peer(request: pytest.FixtureRequest) -> Iterator[Peer]:
    with Peer(request.param) as made:
        yield made


def connect(peer: Peer, handlers: Handlers, **kwargs: Any) -> mcp_sync.Client:
    kwargs.setdefault("handler_tasks", True)
    return peer.connect(sampling_handler=handlers.sampling,
                        elicitation_handler=handlers.elicitation, **kwargs)


def ask(client: mcp_sync.Client, method: str, params: Dict[str, Any],
        timeout: float = WAIT) -> Dict[str, Any]:
    """The server sends ``method``: the client's ``{"result": ...}`` or ``{"error": ...}``."""
    result = client.call_tool("ask", {"method": method, "params": params, "timeout": timeout},
                              timeout=timeout + WAIT)
    answer: Dict[str, Any] = result.structured_content
    return answer


def start_task(client: mcp_sync.Client, ttl: int = 60_000) -> Dict[str, Any]:
    answer = ask(client, "sampling/createMessage", dict(SAMPLING, task={"ttl": ttl}))
    task: Dict[str, Any] = answer["result"]["task"]
    return task


def status_notes(client: mcp_sync.Client) -> List[Dict[str, Any]]:
    notes: List[Dict[str, Any]] = client.call_tool(
        "notes", {"method": "notifications/tasks/status"}).structured_content["params"]
    return notes


# -- the opt-in --------------------------------------------------------------------------------


def test_the_tasks_capability_is_declared_only_when_asked_for(peer: Peer) -> None:
    handlers = Handlers()
    with connect(peer, handlers, handler_tasks=False) as client:
        declared = client.call_tool("client_capabilities").structured_content["capabilities"]
        assert "tasks" not in declared and "sampling" in declared
    with connect(peer, handlers) as client:
        declared = client.call_tool("client_capabilities").structured_content["capabilities"]
        assert declared["tasks"] == {
            "list": {}, "cancel": {},
            "requests": {"sampling": {"createMessage": {}}, "elicitation": {"create": {}}}}
    with connect(peer, handlers, handler_tasks=["elicitation"]) as client:
        declared = client.call_tool("client_capabilities").structured_content["capabilities"]
        assert declared["tasks"]["requests"] == {"elicitation": {"create": {}}}
        # Sampling is not a task here: a task-augmented request is answered plainly.
        assert ask(client, "sampling/createMessage",
                   dict(SAMPLING, task={"ttl": 1000}))["result"]["model"] == "test-model"


def test_handler_tasks_must_name_a_handler_that_is_set() -> None:
    with pytest.raises(ValueError, match="no sampling_handler"):
        mcp_sync.Client(MemoryTransport(FakeServer("x")),
                        elicitation_handler=print, handler_tasks=["sampling"])
    with pytest.raises(ValueError, match="needs a sampling_handler"):
        mcp_sync.Client(MemoryTransport(FakeServer("x")), handler_tasks=True)
    with pytest.raises(ValueError, match="'roots'"):
        mcp_sync.Client(MemoryTransport(FakeServer("x")),
                        sampling_handler=print, handler_tasks=["roots"])


# -- one task's life ---------------------------------------------------------------------------


def test_a_task_augmented_sampling_request_runs_as_a_task(peer: Peer) -> None:
    handlers = Handlers(gated=True)
    with connect(peer, handlers) as client:
        task = start_task(client, ttl=60_000)
        assert task["status"] == "working" and task["ttl"] == 60_000
        assert task["taskId"] and task["createdAt"] and task["pollInterval"] > 0
        assert handlers.started.wait(WAIT)
        context = handlers.contexts[0]
        assert context.request_id == task["taskId"] and not context.cancelled.is_set()
        # The task's context names the server, as the request's own did.
        assert (context.server_name, context.server_info) == (client.name, client.server_info)
        assert handlers.threads[0].startswith("mcp-sync-handler-")

        got = ask(client, "tasks/get", {"taskId": task["taskId"]})["result"]
        assert got["status"] == "working" and got["taskId"] == task["taskId"]
        # tasks/result blocks while the handler runs, and answers once it returns.
        waiting = client.call_tool_future(
            "ask", {"method": "tasks/result", "params": {"taskId": task["taskId"]}})
        assert not waiting.done()
        handlers.gate.set()
        result = waiting.result(WAIT).structured_content["result"]
        assert result["content"] == ANSWER["content"] and result["model"] == "test-model"
        assert result["_meta"][RELATED_TASK] == {"taskId": task["taskId"]}

        assert ask(client, "tasks/get", {"taskId": task["taskId"]})["result"]["status"] \
            == "completed"
        again = ask(client, "tasks/result", {"taskId": task["taskId"]})["result"]
        assert again["model"] == "test-model"  # kept for its ttl: read it again
        notes = status_notes(client)
        assert [(n["taskId"], n["status"]) for n in notes] == [(task["taskId"], "completed")]


def test_waiting_results_hold_no_handler_thread(peer: Peer) -> None:
    """Six tasks/result wait for one running handler, more than the pool's four threads:
    the waits hold none, so tasks/get is still answered, and all six get the answer."""
    handlers = Handlers(gated=True)
    with connect(peer, handlers) as client:
        task = start_task(client)
        assert handlers.started.wait(WAIT)
        waiting = [client.call_tool_future(
            "ask", {"method": "tasks/result", "params": {"taskId": task["taskId"]}})
            for _ in range(6)]
        # All six were sent (stdio: before the tasks/get below, which the client then
        # routes after them; blocking waits would leave no pool thread to answer it).
        assert client.call_tool("wait_pending", {"count": 6}).text == "6"
        got = ask(client, "tasks/get", {"taskId": task["taskId"]})["result"]
        assert got["status"] == "working"
        handlers.gate.set()
        for future in waiting:
            assert future.result(WAIT).structured_content["result"]["model"] == "test-model"


def test_a_plain_request_is_answered_as_before(peer: Peer) -> None:
    handlers = Handlers()
    with connect(peer, handlers) as client:
        assert ask(client, "sampling/createMessage", SAMPLING)["result"]["model"] == "test-model"
        answer = ask(client, "elicitation/create", {
            "mode": "form", "message": "Name?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}})
        assert answer["result"] == {"action": "accept", "content": {"name": "Ada"}}
        assert ask(client, "tasks/list", {})["result"] == {"tasks": []}


def test_an_elicitation_runs_as_a_task_too(peer: Peer) -> None:
    with connect(peer, Handlers()) as client:
        answer = ask(client, "elicitation/create", {
            "mode": "form", "message": "Name?", "task": {},
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}})
        task = answer["result"]["task"]
        assert task["ttl"] == _executor.DEFAULT_TTL_MS
        result = ask(client, "tasks/result", {"taskId": task["taskId"]})["result"]
        assert result["action"] == "accept" and result["content"] == {"name": "Ada"}


def test_tasks_cancel_reaches_the_running_handler(peer: Peer) -> None:
    handlers = Handlers()
    handlers.wait_for_cancel = True
    with connect(peer, handlers) as client:
        task = start_task(client)
        assert handlers.started.wait(WAIT)
        cancelled = ask(client, "tasks/cancel", {"taskId": task["taskId"]})["result"]
        assert cancelled["status"] == "cancelled"
        assert handlers.contexts[0].cancelled.wait(WAIT)
        # The handler returns an answer after it saw the cancellation: dropped.
        assert ask(client, "tasks/get", {"taskId": task["taskId"]})["result"]["status"] \
            == "cancelled"
        refused = ask(client, "tasks/cancel", {"taskId": task["taskId"]})["error"]
        assert refused["code"] == -32602 and "terminal" in refused["message"]
        error = ask(client, "tasks/result", {"taskId": task["taskId"]})["error"]
        assert "cancelled" in error["message"]
        assert handlers.saw_cancel == [True]
        assert [n["status"] for n in status_notes(client)] == ["cancelled"]


def test_a_failed_handler_makes_tasks_result_its_json_rpc_error(peer: Peer) -> None:
    handlers = Handlers()
    handlers.fail = ServerError(-32001, "the model is asleep")
    with connect(peer, handlers) as client:
        task = start_task(client)
        error = ask(client, "tasks/result", {"taskId": task["taskId"]})["error"]
        assert error == {"code": -32001, "message": "the model is asleep"}
        got = ask(client, "tasks/get", {"taskId": task["taskId"]})["result"]
        assert got["status"] == "failed" and got["statusMessage"] == "the model is asleep"

        handlers.fail = RuntimeError("secret-token-123 leaked in a traceback")
        task = start_task(client)
        error = ask(client, "tasks/result", {"taskId": task["taskId"]})["error"]
        assert error == {"code": -32603, "message": "the client's sampling handler failed"}


def test_unknown_ids_and_bad_cursors_are_invalid_params(peer: Peer) -> None:
    with connect(peer, Handlers()) as client:
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            error = ask(client, method, {"taskId": "no-such-task"})["error"]
            assert error == {"code": -32602,
                             "message": "Failed to retrieve task: Task not found"}
        assert ask(client, "tasks/list", {"cursor": "x"})["error"]["code"] == -32602


# -- the ttl, the list, the limit, closing -----------------------------------------------------


def test_a_task_is_freed_when_its_ttl_passes(peer: Peer) -> None:
    handlers = Handlers()
    with connect(peer, handlers) as client:
        finished = start_task(client, ttl=200)
        assert ask(client, "tasks/result", {"taskId": finished["taskId"]})["result"]["model"]
        handlers.gate.clear()  # the next handler runs until its task expires
        handlers.wait_for_cancel = True
        running = start_task(client, ttl=400)
        assert running["ttl"] == 400
        # tasks/result waits for the running task; its ttl ends the wait.
        error = ask(client, "tasks/result", {"taskId": running["taskId"]})["error"]
        assert error == {"code": -32602, "message": "Failed to retrieve task: Task has expired"}
        assert handlers.contexts[1].cancelled.wait(WAIT)  # the handler was told
        for task in (finished, running):
            error = ask(client, "tasks/get", {"taskId": task["taskId"]})["error"]
            assert error["message"] == "Failed to retrieve task: Task has expired"
        assert ask(client, "tasks/list", {})["result"]["tasks"] == []


def test_tasks_list_pages(peer: Peer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_executor, "PAGE_SIZE", 2)
    with connect(peer, Handlers()) as client:
        ids = [start_task(client)["taskId"] for _ in range(3)]
        first = ask(client, "tasks/list", {})["result"]
        assert [t["taskId"] for t in first["tasks"]] == ids[:2]
        second = ask(client, "tasks/list", {"cursor": first["nextCursor"]})["result"]
        assert [t["taskId"] for t in second["tasks"]] == ids[2:]
        assert "nextCursor" not in second


def test_tasks_beyond_the_limit_are_refused(peer: Peer) -> None:
    handlers = Handlers()
    handlers.wait_for_cancel = True  # each handler runs until its task ends
    with connect(peer, handlers, max_handler_tasks=2) as client:
        short = start_task(client, ttl=300)
        long = start_task(client)
        refused = ask(client, "sampling/createMessage", dict(SAMPLING, task={"ttl": 1000}))
        assert refused["error"]["code"] == -32603
        assert "2 tasks already" in refused["error"]["message"]
        ask(client, "tasks/cancel", {"taskId": long["taskId"]})
        # A cancelled task is kept (for tasks/get) until its ttl passes: still two.
        assert "error" in ask(client, "sampling/createMessage",
                              dict(SAMPLING, task={"ttl": 1000}))
        # The short one's ttl ends this wait, and frees its place.
        assert ask(client, "tasks/result", {"taskId": short["taskId"]})["error"]["code"] \
            == -32602
        assert start_task(client)["status"] == "working"


def test_closing_the_client_cancels_a_running_task(peer: Peer) -> None:
    handlers = Handlers()
    handlers.wait_for_cancel = True
    client = connect(peer, handlers)
    try:
        task = start_task(client)
        assert handlers.started.wait(WAIT)
        waiting = client.call_tool_future(
            "ask", {"method": "tasks/result", "params": {"taskId": task["taskId"]}})
    finally:
        client.close()
    assert handlers.contexts[0].cancelled.is_set()
    assert handlers.saw_cancel == [True]
    assert handlers.contexts[0].cancel_reason == "the client closed"
    try:
        late = waiting.result(WAIT)
    except mcp_sync.ConnectionClosed:
        pass  # the usual end: the link closed before the server's tool returned
    else:
        # Over stdio the server may still write its tool's result (that the client
        # never answered its tasks/result) after its stdin closed; the client reads
        # what arrives before stdout's EOF. Never an answer to tasks/result.
        answer = late.structured_content
        assert "result" not in answer and "no answer" in answer["error"]["message"], answer
    # The no_leaks fixture checks that no mcp-sync-tasks-* or handler thread is left.


def test_a_closed_executor_answers_no_task_request() -> None:
    """While the client closes, the session may still read the server's tasks/* requests:
    none of them is answered (the answer of a tasks/result waiting at close is dropped
    too), never "Task not found" for a task the server still holds. (The race behind
    test_closing_the_client_cancels_a_running_task, made certain.)"""
    class Session:  # what the executor uses of its session; the handler never runs here
        name = "peer"

        def offload(self, fn: Any, *args: Any) -> bool:
            return True

        def notify(self, method: str, params: Any = None) -> None:
            pass

    executor = _executor.TaskExecutor()
    executor.serve(Session())
    created = executor.create("sampling/createMessage", {"task": {"ttl": 60_000}},
                              run=lambda: {"role": "assistant"})
    task_id = created["task"]["taskId"]
    executor.close()
    for answer in (executor.get({"taskId": task_id}), executor.result({"taskId": task_id}),
                   executor.cancel({"taskId": task_id}), executor.list({})):
        assert isinstance(answer, Future) and answer.cancelled(), answer


def test_a_lost_connection_cancels_a_running_task() -> None:
    handlers = Handlers()
    handlers.wait_for_cancel = True
    lost = threading.Event()
    peer = Peer("stdio")
    with connect(peer, handlers, on_connection_lost=lambda _error: lost.set()) as client:
        start_task(client)
        assert handlers.started.wait(WAIT)
        os.kill(client.transport.pid, signal.SIGKILL)  # type: ignore[attr-defined]
        assert lost.wait(WAIT)
        assert handlers.contexts[0].cancelled.is_set()
        assert handlers.contexts[0].cancel_reason == "the connection to the server was lost"
        assert not [t for t in threading.enumerate() if t.name.startswith("mcp-sync-tasks-")]


def test_a_task_reports_progress_on_the_requests_token(peer: Peer) -> None:
    def sampling(params: Any) -> Dict[str, Any]:
        assert request_context().report_progress(1, 2, "half way")
        return ANSWER

    with peer.connect(sampling_handler=sampling, handler_tasks=True) as client:
        answer = ask(client, "sampling/createMessage",
                     dict(SAMPLING, task={}, _meta={"progressToken": "p-1"}))
        ask(client, "tasks/result", {"taskId": answer["result"]["task"]["taskId"]})
        notes = client.call_tool("notes", {"method": "notifications/progress"})
        assert notes.structured_content["params"] == [
            {"progressToken": "p-1", "progress": 1, "total": 2, "message": "half way"}]


# -- against server-everything -----------------------------------------------------------------


def everything_handlers() -> Dict[str, Any]:
    def sample(params: Any) -> Dict[str, Any]:
        assert request_context().request_id.startswith("client-task-")
        assert "tides" in params.messages[0].content.text
        return ANSWER

    def elicit(params: Any) -> Dict[str, Any]:
        return {"action": "accept", "content": {"name": "Ada", "favoriteColor": "Blue"}}

    return {"sampling_handler": sample, "elicitation_handler": elicit, "handler_tasks": True}


def check_everything(client: mcp_sync.Client) -> None:
    result = client.call_tool("trigger-sampling-request-async", {"prompt": "tides"})
    assert result.text.startswith("[COMPLETED] Async sampling completed!"), result.text
    assert "Task created: client-task-1" in result.text
    assert '"text": "forty-two"' in result.text and '"model": "test-model"' in result.text
    assert '"taskId": "client-task-1"' in result.text  # the related-task _meta
    result = client.call_tool("trigger-elicitation-request-async")
    assert result.text.startswith("[COMPLETED] User provided the requested information!")
    assert "Name: Ada" in result.text and "Favorite Color: Blue" in result.text


def test_server_everything_async_sampling_and_elicitation_over_stdio() -> None:
    with mcp_sync.connect(everything_command(), timeout=WAIT, **everything_handlers()) as client:
        check_everything(client)


def test_server_everything_async_tools_need_the_opt_in() -> None:
    handlers = everything_handlers()
    handlers["handler_tasks"] = False
    with mcp_sync.connect(everything_command(), timeout=WAIT, **handlers) as client:
        names = {tool.name for tool in client.list_tools()}
        assert "trigger-sampling-request" in names
        assert "trigger-sampling-request-async" not in names


def test_server_everything_async_sampling_and_elicitation_over_http(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    for server in serve("everything-http", everything_argv("streamableHttp"), "/mcp",
                        tmp_path_factory):
        with mcp_sync.connect(server.url, transport="http", timeout=WAIT,
                              **everything_handlers()) as client:
            check_everything(client)
