"""Tool results checked against the tool's outputSchema: against the fake stdio server,
whose ``shaped`` tool returns whatever it is given under a schema that says "a number".

The client lists the tools itself before calling one it has not seen, once per listing
(again after ``notifications/tools/list_changed``); ``validate_output=False`` turns the
check off; a server's schema never makes the client fetch anything (a reference outside it
is an ``InvalidToolSchema``; the hostile schemas are in test_hostile_schemas.py). The
checker is a dependency (test_packaging.py), loaded at the first tool with an outputSchema
(test_lazy_imports.py).
"""

from __future__ import annotations

import gc
import json
import threading
import weakref
from concurrent.futures import Future
from typing import Any, Dict, List

import pytest

import mcp_sync
from mcp_sync import InvalidToolSchema, ProtocolError

from ..conftest import fake_server_command
from ..helpers import Notified

T = 10.0
STRING_RESULT = {"type": "object", "properties": {"value": {"type": "string"}},
                 "required": ["value"]}


def connect(**kwargs: Any) -> mcp_sync.Client:
    kwargs.setdefault("timeout", T)
    return mcp_sync.connect(fake_server_command(), **kwargs)


def listings(client: mcp_sync.Client) -> int:
    """How many tools/list requests the server has received (the check lists none)."""
    received = client.request("tools/call", {"name": "received",
                                             "arguments": {"method": "tools/list"}})
    return len(json.loads(received["content"][0]["text"]))


def test_a_mismatching_result_is_rejected_though_the_tool_was_never_listed() -> None:
    with connect() as client:
        with pytest.raises(ProtocolError, match=r"'shaped'.*outputSchema at \$\.value: "
                                                r"'x' is not of type 'number'"):
            client.call_tool("shaped", {"value": "x"})
        assert listings(client) == 1  # the client listed the tools to learn the schema
        assert client.call_tool("shaped", {"value": 2}).structured == {"value": 2}
        assert listings(client) == 1  # once: the listing is kept


def test_the_future_form_checks_too_off_the_dispatch_thread() -> None:
    gate = threading.Event()
    finished_on: List[str] = []

    def roots() -> List[Dict[str, str]]:
        # The server asks for roots before it answers: the result waits for the test.
        assert gate.wait(T)
        return []

    with connect(roots=roots) as client:
        future = client.call_tool_future("shaped", {"value": "x", "ask_roots": True})
        future.add_done_callback(
            lambda done: finished_on.append(threading.current_thread().name))
        gate.set()
        error = future.exception(T)
        assert isinstance(error, ProtocolError) and "outputSchema" in str(error)
        assert finished_on and finished_on[0].startswith("mcp-sync-handler-")

        good: Future[Any] = client.call_tool_future("shaped", {"value": 5})
        assert good.result(T).structured == {"value": 5}


def test_the_listing_is_dropped_on_list_changed_and_only_then() -> None:
    tools_changed = Notified("notifications/tools/list_changed")

    # on_tool_change="warn": the server changes a tool's schema on purpose here (the
    # default, "block", would refuse the changed tool: test_tool_pins.py).
    with connect(notification_handler=tools_changed, on_tool_change="warn") as client:
        with pytest.raises(ProtocolError):
            client.call_tool("shaped", {"value": "x"})
        client.call_tool("reshape", {"schema": STRING_RESULT})
        # No notification yet: the client checks against the listing it has.
        with pytest.raises(ProtocolError):
            client.call_tool("shaped", {"value": "x"})
        assert listings(client) == 1

        client.call_tool("notify", {"method": "notifications/tools/list_changed"})
        tools_changed.wait(T)
        assert client.call_tool("shaped", {"value": "x"}).structured == {"value": "x"}
        assert listings(client) == 2
        with pytest.raises(ProtocolError, match="1 is not of type 'string'"):
            client.call_tool("shaped", {"value": 1})
        assert listings(client) == 2


def test_validate_output_false_turns_the_check_off() -> None:
    with connect(validate_output=False) as client:
        assert client.call_tool("shaped", {"value": "x"}).structured == {"value": "x"}
        future = client.call_tool_future("shaped", {"value": "y"})
        assert future.result(T).structured == {"value": "y"}
        assert listings(client) == 0  # and nothing is listed for it


def test_validate_output_is_read_at_every_call() -> None:
    # The client keeps a tool's plan (its definition, its compiled schema) per listing;
    # the setting is still the client's attribute, read at each call.
    with connect() as client:
        with pytest.raises(ProtocolError, match="outputSchema"):
            client.call_tool("shaped", {"value": "x"})
        client.validate_output = False
        assert client.call_tool("shaped", {"value": "x"}).structured == {"value": "x"}
        client.validate_output = True
        with pytest.raises(ProtocolError, match="outputSchema"):
            client.call_tool("shaped", {"value": "x"})
        assert listings(client) == 1


def test_a_new_connection_plans_its_calls_anew() -> None:
    # The server forgets the reshaped schema when it restarts: the client's new
    # connection checks against the new listing, not the plan of the old one.
    tools_changed = Notified("notifications/tools/list_changed")

    with connect(notification_handler=tools_changed, on_tool_change="warn") as client:
        client.call_tool("reshape", {"schema": STRING_RESULT})
        client.call_tool("notify", {"method": "notifications/tools/list_changed"})
        tools_changed.wait(T)
        assert client.call_tool("shaped", {"value": "x"}).structured == {"value": "x"}
        client.close()
        client.connect()
        with pytest.raises(ProtocolError, match="'x' is not of type 'number'"):
            client.call_tool("shaped", {"value": "x"})


def test_a_kept_plan_holds_none_of_a_calls_arguments() -> None:
    # The plan of a plain call outlives the call (it is kept for the next calls to the
    # tool): the arguments of the call that made it must not live on with it.
    class Text(str):
        pass

    with connect() as client:
        text = Text("x" * 100_000)
        gone = weakref.ref(text)
        assert client.call_tool("echo", {"text": text}).text == text
        del text
        gc.collect()
        assert gone() is None
        assert client.call_tool("echo", {"text": "again"}).text == "again"


def test_a_servers_schema_never_makes_the_client_fetch(schema_host: Dict[str, Any]) -> None:
    remote = {"type": "object", "properties": {"value": {"$ref": schema_host["url"]}}}
    local = {"$defs": {"number": {"type": "number"}}, "type": "object",
             "properties": {"value": {"$ref": "#/$defs/number"}}}
    tools_changed = Notified("notifications/tools/list_changed")

    def reshape(client: mcp_sync.Client, schema: Dict[str, Any]) -> None:
        client.call_tool("reshape", {"schema": schema})
        client.call_tool("notify", {"method": "notifications/tools/list_changed"})
        tools_changed.wait(T)
        client.list_tools()

    with connect(notification_handler=tools_changed, on_tool_change="warn") as client:
        reshape(client, remote)
        # An error of the tool's schema, said so, and the call is not even sent.
        with pytest.raises(InvalidToolSchema, match="leads to nothing in the schema"):
            client.call_tool("shaped", {"value": "x"})
        assert schema_host["requests"] == []

        reshape(client, local)  # a reference inside the schema itself still resolves
        with pytest.raises(ProtocolError, match="'x' is not of type 'number'"):
            client.call_tool("shaped", {"value": "x"})
    assert schema_host["requests"] == []
