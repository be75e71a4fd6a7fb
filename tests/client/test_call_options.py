"""A tool call's options and the client's settings, each declared once.

:class:`~mcp_sync.ToolCallOptions` are the keywords of ``call_tool`` and
``call_tool_future`` (and of ``Manager.call_tool``: ``tests/manager/test_manager.py``),
:class:`~mcp_sync.TaskStartOptions` those of ``start_tool_task``: options made once serve
every form, and a keyword that is no option of the form is refused as Python refuses it,
before anything is sent. The client's settings are groups its connection holds and its
helpers read at each use: a setting changed after connecting is the one the next call
uses. Against the project's fake stdio server and the session-era task server.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Dict, List, Optional

import pytest

import mcp_sync
from mcp_sync import ListingTooLarge, TaskStartOptions, ToolCallOptions, ToolError

from ..conftest import PY, SERVERS, fake_server_command

T = 10.0


def sent(client: mcp_sync.Client, tool: str) -> List[Dict[str, Any]]:
    """The params of every tools/call of ``tool`` the server received."""
    received = client.call_tool("received", {"method": "tools/call"})
    return [m["params"] for m in json.loads(received.text) if m["params"]["name"] == tool]


def test_options_made_once_serve_every_call_form() -> None:
    progress: List[Optional[str]] = []
    options = ToolCallOptions(timeout=T, meta={"from": "options"}, raise_on_error=True,
                              on_progress=lambda p, total, message: progress.append(message))
    with mcp_sync.connect(fake_server_command(), timeout=T) as client:
        with pytest.raises(ToolError, match="blocking"):
            client.call_tool("fail", {"message": "blocking"}, **options)
        with pytest.raises(ToolError, match="future"):
            client.call_tool_future("fail", {"message": "future"}, **options).result(T)
        assert client.call_tool("slow", {"seconds": 0.2, "progress_interval": 0.05},
                                **options).text == "slept 0.2"
        assert [p.get("_meta", {}).get("from") for p in sent(client, "fail")] == [
            "options", "options"]
    assert "step 1" in progress


def test_start_tool_task_takes_the_task_start_options() -> None:
    options = TaskStartOptions(ttl=60, timeout=T, meta={"from": "options"})
    with mcp_sync.connect([PY, str(SERVERS / "task_server.py")], timeout=T) as client:
        handle = client.start_tool_task("countdown", {"polls": 1, "text": "done"}, **options)
        assert handle.last is not None and handle.last.ttl == 60_000
        assert handle.result(T).text == "done"


@pytest.mark.parametrize("form", ["call_tool", "call_tool_future", "start_tool_task"])
def test_a_keyword_that_is_no_option_is_refused_before_anything_is_sent(form: str) -> None:
    with mcp_sync.connect(fake_server_command(), timeout=T) as client:
        call = getattr(client, form)
        with pytest.raises(TypeError,
                           match=rf"^{form}\(\) got an unexpected keyword argument 'timout'$"):
            call("echo", {"text": "typo"}, timout=1)
        if form == "start_tool_task":  # an option of a call, not of a task's start
            with pytest.raises(TypeError, match="'raise_on_error'"):
                call("echo", {"text": "typo"}, raise_on_error=True)
        assert sent(client, "echo") == []


def test_a_setting_changed_after_connecting_is_the_one_used() -> None:
    logged = threading.Event()
    seen: List[str] = []

    def notified(method: str, params: Optional[Dict[str, Any]]) -> None:
        seen.append(method)
        logged.set()

    with mcp_sync.connect(fake_server_command(), timeout=T,
                          roots=[{"uri": "file:///before"}]) as client:
        client.max_list_items = 1  # a limit
        with pytest.raises(ListingTooLarge, match="max_list_items=1"):
            client.list_tools()
        client.max_list_items = None
        assert client.call_tool("echo", {"text": "listed"}).text == "listed"
        client.roots = [{"uri": "file:///after"}]  # a handler
        answer = client.call_tool("ask", {"method": "roots/list"}).structured
        assert answer == {"result": {"roots": [{"uri": "file:///after"}]}}
        client.notification_handler = notified
        client.call_tool("log", {"level": "info", "data": "hello"})
        assert logged.wait(T)
        assert "notifications/message" in seen
        client.validate_output = False  # a check of tools
        assert client.call_tool("shaped", {"value": "not a number"}).structured == {
            "value": "not a number"}
