"""A plain tool call runs no task code; a call that is a task does.

The client's tasks (``mcp_sync/client/_tasks/``) are entered only by a call that runs as a
task, or once the server answered a call with one: a plain ``tools/call`` goes from the
client to its plan, the session and the transport, and back. Checked with a tripwire
(:func:`task_code`): a profile on the calling thread notes every function of that
package that runs, and every method of its classes notes its calls on any thread (a
future's answer is converted on the dispatch thread or the handler pool). The peers: the
project's fake stdio server (no tasks), the task servers of both eras
(``tests/servers/task_server.py``, ``task_server_2026.py``: they run tools as tasks, so a
call to a plain tool of theirs is planned against their tasks capability).
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any, Callable, Iterator, List

import pytest

import mcp_sync
import mcp_sync.client

from ..conftest import PY, SERVERS, fake_server_command

T = 10.0
TASKS = str(Path(mcp_sync.client.__file__).parent / "_tasks")


@contextmanager
def task_code(monkeypatch: pytest.MonkeyPatch) -> Iterator[List[str]]:
    """While inside: the functions of ``mcp_sync.client._tasks`` that ran (their names)."""
    ran: List[str] = []
    lock = threading.Lock()

    def note(what: str) -> None:
        with lock:
            ran.append(what)

    def tripwire(function: Callable[..., Any], what: str) -> Callable[..., Any]:
        @functools.wraps(function)
        def noted(*args: Any, **kwargs: Any) -> Any:
            note(what)
            return function(*args, **kwargs)

        return noted

    for module in list(sys.modules.values()):
        name = getattr(module, "__name__", "")
        if not name.startswith("mcp_sync.client._tasks"):
            continue
        for owner in list(vars(module).values()):
            if not (inspect.isclass(owner) and owner.__module__ == name):
                continue
            for attribute, value in list(vars(owner).items()):
                if inspect.isfunction(value):
                    monkeypatch.setattr(owner, attribute,
                                        tripwire(value, f"{owner.__name__}.{attribute}"))

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename.startswith(TASKS):
            note(f"{frame.f_code.co_name} ({Path(frame.f_code.co_filename).name})")

    sys.setprofile(profile)
    try:
        yield ran
    finally:
        sys.setprofile(None)
        monkeypatch.undo()


def test_plain_calls_run_no_task_code(monkeypatch: pytest.MonkeyPatch) -> None:
    with mcp_sync.connect(fake_server_command(), timeout=T) as client, \
            task_code(monkeypatch) as ran:
        assert client.call_tool("echo", {"text": "first"}).text == "first"  # plans it
        for text in ("second", "third"):  # the kept plan
            assert client.call_tool("echo", {"text": text}).text == text
        assert client.call_tool("echo", {"text": "opts"}, timeout=T, meta={"k": 1},
                                on_progress=lambda *progress: None,
                                raise_on_error=True).text == "opts"
        assert client.call_tool_future("echo", {"text": "later"}).result(T).text == "later"
        assert client.call_tool("shaped", {"value": 1}).structured == {"value": 1}
        shaped = client.call_tool_future("shaped", {"value": 2}).result(T)  # on the pool
        assert shaped.structured == {"value": 2}
        assert client.call_tool("echo", {"text": "no task"}, task=False).text == "no task"
    assert ran == []


@pytest.mark.parametrize("form", ["call_tool", "future"])
def test_plain_tools_of_a_server_that_runs_tasks_run_no_task_code(
        monkeypatch: pytest.MonkeyPatch, form: str) -> None:
    with mcp_sync.connect([PY, str(SERVERS / "task_server.py")], timeout=T) as client:
        assert client.server_capabilities.tasks is not None
        with task_code(monkeypatch) as ran:
            for tool in ("echo", "never_task", "maybe", "echo"):
                if form == "call_tool":
                    result = client.call_tool(tool, {"text": "hi"})
                else:
                    result = client.call_tool_future(tool, {"text": "hi"}).result(T)
                assert result.text.endswith("hi")
        assert ran == []
        # The tripwire works: a call that is a task goes through the tasks.
        with task_code(monkeypatch) as ran:
            assert client.call_tool("maybe", {"text": "hi"}, task=True).text == "task: hi"
        assert "ClientTasks.run_task" in ran


@pytest.mark.parametrize("form", ["call_tool", "future"])
def test_a_plain_answer_where_the_server_decides_runs_no_task_code(
        monkeypatch: pytest.MonkeyPatch, form: str) -> None:
    # 2026-07-28 with the tasks extension: any call may come back as a task; one that
    # comes back with its result touches no task code.
    with mcp_sync.connect([PY, str(SERVERS / "task_server_2026.py")], timeout=T,
                          probe_timeout=T) as client:
        assert client.era == "stateless"
        with task_code(monkeypatch) as ran:
            for name in ("ada", "grace"):
                if form == "call_tool":
                    result = client.call_tool("greet", {"name": name})
                else:
                    result = client.call_tool_future("greet", {"name": name}).result(T)
                assert result.text == f"Hello, {name}!"
        assert ran == []
        # The one the server makes a task is followed by the tasks.
        with task_code(monkeypatch) as ran:
            if form == "call_tool":
                result = client.call_tool("countdown", {"polls": 1, "text": "done"})
            else:
                result = client.call_tool_future(
                    "countdown", {"polls": 1, "text": "done"}).result(T)
            assert result.text == "done"
        assert ("ClientTasks.follow_task" if form == "call_tool"
                else "ClientTasks.follow_task_future") in ran
