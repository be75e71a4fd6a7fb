"""Extensions: what the client advertises under ``capabilities.extensions`` in each era,
what it reads of a server's, and the server's messages an extension recognises.

Peers: the project's fake stdio server (``tests/servers/fake_stdio.py``: its
``received`` tool shows what it was sent, ``--extensions``/``--many-extensions`` what
it advertises, ``notify`` and ``answer_with`` what it sends back), in both eras; the
official SDK's MCP Apps server (``tests/servers/apps_server.py --declared-tool``: the
SDK's own ``client_supports_apps`` and the client capabilities it parsed), in both eras.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

import mcp_sync
from mcp_sync import StdioTransport
from mcp_sync.apps import EXTENSION_ID as UI
from mcp_sync.apps import AppError, AppsExtension, load_app
from mcp_sync.extensions import (
    MAX_SERVER_EXTENSIONS,
    Extension,
    TasksExtension,
    check_identifier,
)

from ..conftest import PY, SERVERS, fake_server_command, fake_server_for

T = 30.0
TASKS = "io.modelcontextprotocol/tasks"
SESSION, STATELESS = "2025-11-25", "2026-07-28"


@pytest.fixture(params=[SESSION, STATELESS], ids=["session", "stateless"])
def era(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def fake(era: str, *args: str) -> List[str]:
    return [*fake_server_for(era), *args]


def sent_capabilities(client: mcp_sync.Client) -> Dict[str, Any]:
    """The capabilities the fake server received from ``client``: in ``initialize``
    (session era), or in the ``_meta`` of the last ``tools/call`` (stateless era)."""
    if client.era == "session":
        messages = received(client, "initialize")
        return dict(messages[0]["params"]["capabilities"])
    meta = received(client, "tools/call")[-1]["params"]["_meta"]
    return dict(meta["io.modelcontextprotocol/clientCapabilities"])


def received(client: mcp_sync.Client, method: str) -> List[Dict[str, Any]]:
    result = client.call_tool("received", {"method": method})
    text = result.content[0].text  # type: ignore[union-attr]
    messages: List[Dict[str, Any]] = json.loads(text)
    return messages


# -- identifiers and the forms of the argument --------------------------------------------


@pytest.mark.parametrize("identifier", [
    "com.example/x", "io.modelcontextprotocol/ui", "a/b", "x1.y-z/n_a.m-e", "a/9",
])
def test_identifiers_of_the_vendor_prefix_form_are_taken(identifier: str) -> None:
    assert check_identifier(identifier) == identifier
    assert Extension(identifier).identifier == identifier


@pytest.mark.parametrize("identifier", [
    "x", "/x", "com./x", "1com/x", "com-/x", "com/x-", "com/", "com/x y", "com/x/y",
    "com.example/" + "x" * 300, "", 5, None,
])
def test_a_malformed_identifier_is_a_clear_error(identifier: Any) -> None:
    transport = StdioTransport(fake_server_command())
    with pytest.raises(ValueError, match="vendor-prefix/name"):
        check_identifier(identifier)
    with pytest.raises(ValueError, match="is not an extension identifier"):
        mcp_sync.Client(transport, extensions=[Extension(identifier)])
    with pytest.raises(ValueError, match="vendor-prefix/name"):
        mcp_sync.Client(transport, extensions={identifier: {}})


def test_the_forms_of_the_argument() -> None:
    transport = StdioTransport(fake_server_command())
    client = mcp_sync.Client(transport, extensions={"com.example/a": {"level": 2}})
    assert isinstance(client.extensions[0], TasksExtension)
    assert check_identifier(TasksExtension().identifier) == TASKS
    assert [e.identifier for e in client.extensions] == [TASKS, "com.example/a"]
    assert dict(client.extensions[1].settings) == {"level": 2}
    named = mcp_sync.Client(transport, extensions=["com.example/b", AppsExtension()])
    assert [e.identifier for e in named.extensions] == [TASKS, "com.example/b", UI]
    assert mcp_sync.Client(transport).extensions[0].identifier == TASKS
    with pytest.raises(ValueError, match="given twice"):
        mcp_sync.Client(transport, extensions=["com.example/b", Extension("com.example/b")])
    with pytest.raises(ValueError, match="every client's already"):
        mcp_sync.Client(transport, extensions=[TASKS])
    with pytest.raises(ValueError, match="JSON object"):
        Extension("com.example/c", {"x": object()})
    with pytest.raises(ValueError, match="JSON object"):
        Extension("com.example/c", {"x": "y" * 20_000})
    with pytest.raises(TypeError, match="not an extension"):
        mcp_sync.Client(transport, extensions=[42])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="not a string"):
        mcp_sync.Client(transport, extensions="com.example/b")  # type: ignore[arg-type]
    with pytest.raises(mcp_sync.ClientNotConnected):
        _ = client.server_extensions
    with pytest.raises(mcp_sync.ClientNotConnected):
        client.extension_agreed("com.example/a")


# -- what the client advertises --------------------------------------------------------------


def test_a_users_extension_is_advertised_in_both_eras(era: str) -> None:
    settings = {"level": 2, "modes": ["a", "b"]}
    with mcp_sync.connect(fake(era), timeout=T,
                          extensions={"com.example/x": settings}) as client:
        assert client.protocol_version == era
        extensions = sent_capabilities(client)["extensions"]
    if era == STATELESS:  # the tasks extension rides along, in its era only
        assert extensions == {TASKS: {}, "com.example/x": settings}
    else:
        assert extensions == {"com.example/x": settings}


def test_without_extensions_the_offer_is_as_before(era: str) -> None:
    with mcp_sync.connect(fake(era), timeout=T) as client:
        capabilities = sent_capabilities(client)
    if era == STATELESS:
        assert capabilities["extensions"] == {TASKS: {}}
    else:
        assert "extensions" not in capabilities


def apps_server(record: Path) -> List[str]:
    return [PY, str(SERVERS / "apps_server.py"), "--record", str(record), "--declared-tool"]


@pytest.mark.peer
@pytest.mark.parametrize("protocol", [None, SESSION], ids=["stateless", "session"])
def test_the_sdk_sees_apps_declared_only_when_asked(tmp_path: Path,
                                                    protocol: Optional[str]) -> None:
    record = tmp_path / "calls.jsonl"
    for declared in (False, True):
        extensions = [AppsExtension()] if declared else []
        with mcp_sync.connect(apps_server(record), timeout=T, protocol_version=protocol,
                              extensions=extensions) as client:
            seen = client.call_tool("client_declared", {}).structured_content
            assert seen is not None
            stateless = client.era == "stateless"
            assert stateless == (protocol is None)
            assert seen["result"]["supportsApps"] is declared
            expected: Dict[str, Any] = {TASKS: {}} if stateless else {}
            if declared:
                expected[UI] = {"mimeTypes": ["text/html;profile=mcp-app"]}
            assert (seen["result"]["extensions"] or {}) == expected
            # What the SDK server advertises: the ui extension in 2026-07-28 only (its
            # 2025-11-25 initialize result has no extensions).
            assert dict(client.server_extensions) == ({UI: {}} if stateless else {})
            assert client.extension_agreed(UI) is (declared and stateless)
            assert client.extension_agreed(TASKS) is False  # the server runs no tasks
    recorded = [json.loads(line) for line in record.read_text().splitlines()]
    assert [entry["arguments"]["supportsApps"] for entry in recorded] == [False, True]


@pytest.mark.peer
def test_a_manager_passes_extensions_to_its_clients(tmp_path: Path) -> None:
    config = {"mcpServers": {"board": {"command": PY,
                                       "args": apps_server(tmp_path / "calls.jsonl")[1:]}}}
    with mcp_sync.Manager(config, timeout=T, extensions=[AppsExtension()]) as manager:
        result = manager.call_tool("board__client_declared", {})
    assert result.structured_content is not None
    assert result.structured_content["result"]["supportsApps"] is True


@pytest.mark.peer
def test_the_apps_helpers_refuse_a_client_that_did_not_declare_apps(tmp_path: Path) -> None:
    record = tmp_path / "calls.jsonl"
    with mcp_sync.connect(apps_server(record)[:-1], timeout=T) as client, \
            pytest.raises(AppError, match="does not declare MCP Apps"):
        load_app(client, "show_board", {"title": "t"})
    assert not record.exists()  # nothing was called
    with mcp_sync.connect(apps_server(record)[:-1], timeout=T,
                          extensions=[AppsExtension()]) as client:
        app = load_app(client, "show_board", {"title": "t"})
    assert app.result.structured_content == {"title": "t", "items": ["milk"]}
    assert "<html" in app.resource.html


# -- what the server advertises --------------------------------------------------------------


def test_server_extensions_reads_what_the_server_advertised(era: str) -> None:
    advertised = {"com.example/x": {"v": [1, 2]}, TASKS: {}}
    with mcp_sync.connect(fake(era, "--extensions", json.dumps(advertised)), timeout=T,
                          extensions=["com.example/x", "com.example/y"]) as client:
        extensions = client.server_extensions
        assert dict(extensions) == advertised
        with pytest.raises(TypeError):
            extensions["com.example/z"] = {}  # type: ignore[index]
        assert client.extension_agreed("com.example/x")
        assert not client.extension_agreed("com.example/y")  # the server did not
        assert not client.extension_agreed("com.example/z")  # neither side did
        # The tasks extension is agreed only in its era (the session era has the
        # tasks capability instead).
        assert client.extension_agreed(TASKS) is (era == STATELESS)


def test_a_hostile_extensions_map_is_bounded(era: str,
                                             caplog: pytest.LogCaptureFixture) -> None:
    hostile = {"not an id": {}, "com.example/number": 5, "com.example/list": [1],
               "com.example/big": {"x": "y" * 20_000}, "com.example/fine": {"ok": True}}
    command = fake(era, "--extensions", json.dumps(hostile), "--many-extensions", "5000")
    with caplog.at_level(logging.WARNING, logger="mcp_sync"), \
            mcp_sync.connect(command, timeout=T) as client:
        extensions = client.server_extensions
        assert client.server_extensions is extensions  # read once per agreement
        assert len(extensions) == MAX_SERVER_EXTENSIONS
        assert dict(extensions["com.example/fine"]) == {"ok": True}
        assert set(extensions) <= {"com.example/fine"} | {f"com.example/ext-{i}"
                                                         for i in range(5000)}
        assert client.call_tool("echo", {"text": "still here"}).content[0].text == (
            "still here")
    warnings = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    assert len(warnings) == 1
    assert "'not an id'" in warnings[0] and "'com.example/big'" in warnings[0]
    assert len(warnings[0]) < 2000


def test_an_extensions_value_that_is_not_an_object_is_ignored(
        era: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="mcp_sync"), \
            mcp_sync.connect(fake(era, "--extensions", "[1, 2]"), timeout=T) as client:
        assert dict(client.server_extensions) == {}
    assert any("not an object" in r.getMessage() for r in caplog.records)


# -- what belongs to an extension -----------------------------------------------------------


class Pings(Extension):
    """A user's extension: it claims its server's ``notifications/example/ping``."""

    def __init__(self) -> None:
        super().__init__("com.example/pings", {"v": 1})
        self.got: List[Any] = []
        self.arrived = threading.Event()

    def claims_notification(self, method: str) -> bool:
        return method == "notifications/example/ping"

    def on_notification(self, method: str, params: Optional[Dict[str, Any]]) -> None:
        self.got.append((method, params))
        self.arrived.set()


class Broken(Extension):
    def claims_notification(self, method: str) -> bool:
        return True

    def on_notification(self, method: str, params: Optional[Dict[str, Any]]) -> None:
        raise RuntimeError("boom")


def test_an_extension_recognises_its_notification(era: str,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    pings = Pings()
    seen: List[str] = []
    handled = threading.Event()

    def handler(method: str, params: Optional[Dict[str, Any]]) -> None:
        seen.append(method)
        if method == "notifications/example/ping":
            handled.set()

    with caplog.at_level(logging.ERROR, logger="mcp_sync.client"), \
            mcp_sync.connect(fake(era), timeout=T, notification_handler=handler,
                             extensions=[Broken("com.example/broken"), pings]) as client:
        client.call_tool("notify", {"method": "notifications/example/ping",
                                    "params": {"n": 7}})
        assert pings.arrived.wait(T)
        assert handled.wait(T)  # the notification handler sees it too
        assert client.call_tool("echo", {"text": "ok"}).content[0].text == "ok"
    assert pings.got == [("notifications/example/ping", {"n": 7})]
    assert any("com.example/broken raised" in r.getMessage() for r in caplog.records)


class Deferred(Extension):
    """A user's extension with a result of its own: ``resultType: "com.example/later"``,
    made a tool result by :meth:`on_result`."""

    def __init__(self) -> None:
        super().__init__("com.example/later")

    def claims_result(self, method: str, result: Any) -> bool:
        return method == "tools/call" and result.get("resultType") == "com.example/later"

    def on_result(self, method: str, result: Dict[str, Any]) -> Any:
        return {"content": [{"type": "text", "text": f"resolved {result['ticket']}"}]}


def test_an_agreed_extension_claims_its_result(era: str) -> None:
    later = {"resultType": "com.example/later", "ticket": "t-1", "content": []}
    advertised = json.dumps({"com.example/later": {}})
    with mcp_sync.connect(fake(era, "--extensions", advertised), timeout=T,
                          extensions=[Deferred()]) as client:
        for _ in range(2):  # the second call takes the kept plan's path
            result = client.call_tool("answer_with", {"result": later})
            assert result.content[0].text == "resolved t-1"
        future = client.call_tool_future("answer_with", {"result": later})
        assert future.result(T).content[0].text == "resolved t-1"
        plain = client.call_tool("answer_with", {"result": {"content": [
            {"type": "text", "text": "plain"}]}})
        assert plain.content[0].text == "plain"
    # Not agreed (the server does not advertise it): the result is the call's as sent.
    with mcp_sync.connect(fake(era, "--extensions", "{}"), timeout=T,
                          extensions=[Deferred()]) as client:
        assert client.call_tool("answer_with", {"result": later}).content == []


class Failing(Deferred):
    def on_result(self, method: str, result: Dict[str, Any]) -> Any:
        raise RuntimeError("the ticket is lost")


def test_an_exception_of_on_result_raises_from_the_call() -> None:
    later = {"resultType": "com.example/later", "ticket": "t-2", "content": []}
    advertised = json.dumps({"com.example/later": {}})
    with mcp_sync.connect(fake(STATELESS, "--extensions", advertised), timeout=T,
                          extensions=[Failing()]) as client:
        with pytest.raises(RuntimeError, match="the ticket is lost"):
            client.call_tool("answer_with", {"result": later})
        assert client.call_tool("echo", {"text": "after"}).content[0].text == "after"
