"""Tasks in the 2026-07-28 era: the ``io.modelcontextprotocol/tasks`` extension
(SEP-2663), the client as requestor. ``call_tool`` and ``call_tool_future`` follow a
call the server made a task, ``start_tool_task`` / ``task(id)`` / ``cancel_task`` work
through the same :class:`~mcp_sync.TaskHandle` as in 2025-11-25, input requests are
answered with ``tasks/update``, and the task's end maps to the same errors.

The peer is ``tests/servers/task_server_2026.py``: one stateless FakeServer as a stdio
child process and behind ``McpHttpServer`` (stateless) in this process; every test runs
over both. Its tasks move one step per ``tasks/get``.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterator, List, Tuple

import pytest

import mcp_sync
from mcp_sync import (
    CapabilityError,
    ProtocolError,
    RequestTimeout,
    TaskCancelled,
    TaskFailed,
    TaskNotFound,
    ToolError,
)

from ..servers.http_server import McpHttpServer
from ..servers.task_server_2026 import TASKS, ExtensionTaskServer
from .test_tasks import FORMS, WAIT, calls
from .test_tasks import Peer as TaskPeer


class Peer(TaskPeer):
    """The extension task server over one transport (stateless over HTTP)."""

    script = "task_server_2026.py"

    def http_server(self, flags: Tuple[str, ...]) -> McpHttpServer:
        http = McpHttpServer(ExtensionTaskServer(tasks="--no-tasks" not in flags))
        http.stateless = True
        return http

    def connect(self, **kwargs: Any) -> mcp_sync.Client:
        kwargs.setdefault("probe_timeout", WAIT)
        return super().connect(**kwargs)


@pytest.fixture(params=["stdio", "http"])
def peer(request: pytest.FixtureRequest) -> Iterator[Peer]:
    with Peer(request.param) as made:
        yield made


def elicit(params: Any) -> Dict[str, Any]:
    return {"action": "accept", "content": {"answer": f"yes to {params.message}"}}


def sample(params: Any) -> Dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": "Paris"},
            "model": "test-model"}


@pytest.fixture
def client(peer: Peer) -> Iterator[mcp_sync.Client]:
    with peer.connect(elicitation_handler=elicit, sampling_handler=sample) as connected:
        assert connected.era == "stateless"
        yield connected


def count(client: mcp_sync.Client, method: str) -> int:
    return int(client.call_tool("count", {"method": method}).text)


def state(client: mcp_sync.Client, task_id: str) -> str:
    return client.call_tool("task_state", {"task_id": task_id}).text


def wait_state(client: mcp_sync.Client, task_id: str, status: str) -> str:
    """Block (server side, bounded) until the task has ``status``; its status then."""
    return client.call_tool("wait_state", {"task_id": task_id, "status": status}).text


# -- negotiation ------------------------------------------------------------------------


def test_the_client_declares_the_extension_in_every_request(client: mcp_sync.Client) -> None:
    assert client.call_tool("declared").structured_content == {"extensions": {TASKS: {}}}


@pytest.mark.parametrize("form", FORMS)
def test_a_plain_tool_stays_a_plain_call(client: mcp_sync.Client, form: str) -> None:
    assert calls(client, "greet", form, arguments={"name": "ada"}).text == "Hello, ada!"
    assert count(client, "tasks/get") == 0


# -- call_tool follows a task -------------------------------------------------------------


@pytest.mark.parametrize("form", FORMS)
def test_a_call_the_server_makes_a_task_returns_the_task_result(
        client: mcp_sync.Client, form: str) -> None:
    statuses: List[Any] = []
    result = calls(client, "countdown", form, arguments={"polls": 3, "text": "ready"},
                   on_progress=lambda *args: statuses.append(args))
    assert result.text == "ready" and not result.is_error
    assert result.structured_content == {"text": "ready", "polls": 3}
    assert statuses == [(1.0, None, "started"), (2.0, None, "poll 1 of 3"),
                        (3.0, None, "poll 2 of 3"), (4.0, None, "done")]
    assert count(client, "tasks/get") == 3
    assert count(client, "tasks/result") == 0  # the result is inlined on tasks/get


@pytest.mark.parametrize("form", FORMS)
def test_a_task_result_is_checked_against_the_output_schema(
        client: mcp_sync.Client, form: str) -> None:
    with pytest.raises(ProtocolError, match="42 is not of type 'string'"):
        calls(client, "misshapen", form)


@pytest.mark.parametrize("form", FORMS)
def test_a_tool_error_is_a_completed_task_with_an_error_result(
        client: mcp_sync.Client, form: str) -> None:
    result = calls(client, "fails_softly", form, arguments={"message": "bad input"})
    assert result.is_error and result.text == "bad input"
    with pytest.raises(ToolError):
        calls(client, "fails_softly", form, arguments={"message": "bad input"},
              raise_on_error=True)


@pytest.mark.parametrize("form", FORMS)
def test_a_failed_task_raises_task_failed_with_the_inlined_error(
        client: mcp_sync.Client, form: str) -> None:
    with pytest.raises(TaskFailed, match="kaput") as caught:
        calls(client, "fails", form, arguments={"message": "kaput"})
    assert caught.value.error.code == -32603
    assert caught.value.task.status == "failed"


@pytest.mark.parametrize("form", FORMS)
def test_a_task_the_server_cancels_raises_task_cancelled(
        client: mcp_sync.Client, form: str) -> None:
    with pytest.raises(TaskCancelled, match="stopped by the operator"):
        calls(client, "dropped", form)


@pytest.mark.parametrize("form", FORMS)
def test_an_expired_task_raises_task_not_found(client: mcp_sync.Client, form: str) -> None:
    with pytest.raises(TaskNotFound, match="expired") as caught:
        calls(client, "expires", form)
    assert caught.value.error.code == -32602


@pytest.mark.parametrize("form", FORMS)
def test_input_requests_are_answered_with_tasks_update(
        client: mcp_sync.Client, form: str) -> None:
    result = calls(client, "confirm", form, arguments={"question": "Proceed?"})
    assert result.text == "answer: {'answer': 'yes to Proceed?'}"
    updates = client.call_tool("updates").structured_content["updates"]
    assert updates == [{"confirm-1": {"action": "accept",
                                      "content": {"answer": "yes to Proceed?"}}}]


def test_elicitation_and_sampling_are_answered_in_one_update(client: mcp_sync.Client) -> None:
    result = client.call_tool("two_inputs")
    assert result.text == "name={'answer': 'yes to name?'} llm=Paris"
    (update,) = client.call_tool("updates").structured_content["updates"]
    assert set(update) == {"ask-1", "ask-2"}
    assert update["ask-2"]["content"]["text"] == "Paris"


@pytest.mark.parametrize("form", FORMS)
def test_a_multi_round_trip_request_that_becomes_a_task(
        client: mcp_sync.Client, form: str) -> None:
    result = calls(client, "escalates", form)
    assert result.text == "hello {'answer': 'yes to who?'}"
    assert count(client, "tasks/get") == 1
    assert client.call_tool("updates").structured_content["updates"] == []


def test_a_timeout_cancels_the_task(client: mcp_sync.Client) -> None:
    with pytest.raises(RequestTimeout):
        client.call_tool("forever", timeout=0.5)
    assert count(client, "tasks/cancel") == 1
    assert state(client, "task-1") == "cancelled"


def test_cancelling_the_future_cancels_the_task(client: mcp_sync.Client) -> None:
    future = client.call_tool_future("forever")
    # Polled: the client follows the task (a cancel before would cancel the tools/call).
    assert int(client.call_tool("wait_polled", {"task_id": "task-1"}).text) >= 1
    assert future.cancel()
    assert wait_state(client, "task-1", "cancelled") == "cancelled"
    assert count(client, "tasks/cancel") == 1


# -- handles ------------------------------------------------------------------------------


def test_start_tool_task_returns_a_handle_to_wait_on(client: mcp_sync.Client) -> None:
    handle = client.start_tool_task("countdown", {"polls": 2, "text": "later"})
    assert handle.id == "task-1" and handle.tool == "countdown"
    assert handle.last is not None and handle.last.status == "working"
    assert handle.last.ttl == 60_000 and handle.last.poll_interval == 50
    assert handle.status().status == "working"
    assert handle.result().structured_content == {"text": "later", "polls": 2}
    # Re-attached by id, in this era as in the last.
    again = client.task("task-1")
    assert again.status().status == "completed"
    assert again.result().text == "later"


def test_a_handle_waits_for_input_required_and_its_result_answers(
        client: mcp_sync.Client) -> None:
    handle = client.start_tool_task("confirm", {"question": "Go?"})
    assert handle.wait().status == "input_required"  # told, not answered
    assert client.call_tool("updates").structured_content["updates"] == []
    assert handle.future().result(WAIT).text == "answer: {'answer': 'yes to Go?'}"


def test_cancel_task_acknowledges_and_reads_the_state(client: mcp_sync.Client) -> None:
    handle = client.start_tool_task("forever")
    assert client.cancel_task(handle.id).status == "cancelled"
    with pytest.raises(TaskCancelled):
        handle.result()
    # A terminal task: the same acknowledgement, its state unchanged.
    assert handle.cancel().status == "cancelled"
    with pytest.raises(TaskNotFound):
        client.cancel_task("no-such-task")


def test_an_unknown_task_id_is_task_not_found(client: mcp_sync.Client) -> None:
    with pytest.raises(TaskNotFound, match="no-such-task"):
        client.task("no-such-task").status()


def test_the_extension_has_no_task_listing(client: mcp_sync.Client) -> None:
    with pytest.raises(CapabilityError, match="no tasks/list"):
        client.list_tasks()
    assert count(client, "tasks/list") == 0


def test_task_ids_travel_in_mcp_name_over_http() -> None:
    peer = Peer("http")
    try:
        with peer.connect() as client:
            handle = client.start_tool_task("countdown", {"polls": 1, "text": "x"})
            handle.result()
        assert peer.http is not None
        named = [(r.headers.get("mcp-method"), r.headers.get("mcp-name"))
                 for r in peer.http.requests
                 if r.headers.get("mcp-method", "").startswith("tasks/")]
        assert {method for method, _ in named} == {"tasks/get"}
        assert all(name == handle.id for _, name in named)
    finally:
        peer.stop()


# -- without the extension ----------------------------------------------------------------


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_server_without_the_extension_runs_tools_plainly(transport: str) -> None:
    peer = Peer(transport, "--no-tasks")
    try:
        with peer.connect() as client:
            assert client.call_tool("countdown", {"polls": 2, "text": "now"}).text == "now"
            with pytest.raises(CapabilityError, match=re.escape(TASKS)):
                client.start_tool_task("countdown", {"polls": 2, "text": "now"})
            with pytest.raises(CapabilityError):
                client.cancel_task("task-1")
            assert count(client, "tasks/get") == 0
    finally:
        peer.stop()
