"""The Manager over real server processes: the project's fake server, a server built on
the official Python SDK (tests/servers/manager_sdk_server.py) and server-everything.

Concurrency is gated with Events and Conditions (the manager's ``on_status`` and
``on_tools_changed`` hooks), never with sleeps; every wait is bounded. Backoff and breaker
timings are shrunk through the constructor.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import shutil
import signal
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import pytest

import mcp_sync
from mcp_sync import ClientNotConnected, ConnectionClosed, types
from mcp_sync.config import ConfigError
from mcp_sync.manager import Manager, ServerState, ServerStatus, ServerUnavailable

from ..conftest import PY, SERVERS, fake_server_command, require_everything
from ..helpers import Recorder

T = 30.0  # bound for anything that should be quick; generous for a small, noisy VM
SDK_SERVER = SERVERS / "manager_sdk_server.py"


def everything_entry() -> Dict[str, Any]:
    node = shutil.which("node")
    assert node, "node is not on PATH: server-everything needs Node 20+"
    return {"command": node, "args": [str(require_everything()), "stdio"]}


def sdk_entry(state: Path) -> Dict[str, Any]:
    return {"command": PY, "args": [str(SDK_SERVER)], "env": {"MANAGER_SDK_STATE": str(state)}}


def fake_entry(*args: str) -> Dict[str, Any]:
    command = fake_server_command(*args)
    return {"command": command[0], "args": command[1:]}


def three_servers(state: Path, fake: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    return {"mcpServers": {
        "fake": fake or fake_entry(),
        "sdk": sdk_entry(state),
        "everything": everything_entry(),
        "dormant": {"command": "no-such-command-anywhere", "disabled": True},
    }}


def calls_log(state: Path) -> List[str]:
    path = state / "calls.log"
    return path.read_text(encoding="utf-8").split() if path.exists() else []


def received(manager: Manager, method: str) -> List[Dict[str, Any]]:
    result = manager.call_tool("fake", "received", {"method": method}, timeout=T)
    return json.loads(result.text)  # type: ignore[no-any-return]


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def trio(tmp_path: Path, recorder: Recorder) -> Iterator[Manager]:
    """A connected manager over the three real servers, with quick reconnects."""
    # probe_timeout: the SDK peer's start (a second or more on a busy machine) must not
    # pass for "no answer to server/discover"
    manager = Manager.from_config(three_servers(tmp_path), timeout=T, backoff=(0.05, 0.1),
                                  on_status=recorder, close_timeout=15.0, probe_timeout=T)
    with manager:
        yield manager


# -- aggregation and routing -------------------------------------------------------------


def test_three_servers_aggregate_tools_and_route_calls(trio: Manager) -> None:
    manager = trio
    assert manager.servers == ["fake", "sdk", "everything", "dormant"]
    status = manager.status()
    for name in ("fake", "sdk", "everything"):
        assert status[name].state is ServerState.CONNECTED, status[name]
        assert status[name].error is None and status[name].tools > 0
        assert status[name].transport == "stdio"
        assert status[name].connected_since is not None
    assert status["dormant"].state is ServerState.DISABLED
    assert status["sdk"].server_name == "manager-sdk-peer"
    assert status["everything"].server_name == "mcp-servers/everything"
    assert status["fake"].to_dict()["state"] == "connected"

    tools = manager.list_tools()
    names = [tool.name for tool in tools]
    assert all(isinstance(tool, types.Tool) for tool in tools)
    assert isinstance(tools, types.ToolList)  # a table in Jupyter, like Client.list_tools()
    assert f"{len(tools)} tools" in tools._repr_html_()
    assert r"| **sdk\_\_add** |" in tools._repr_markdown_()  # "_" escaped
    assert {"fake__echo", "fake__add", "sdk__add", "sdk__crash_once_plain", "everything__echo",
            "everything__get-sum"} <= set(names)
    assert len(names) == len(set(names))
    # configuration order: every fake tool before the sdk's, the sdk's before everything's
    assert names.index("fake__echo") < names.index("sdk__add") < names.index("everything__echo")
    assert sum(status[n].tools for n in ("fake", "sdk", "everything")) == len(tools)
    add = next(tool for tool in tools if tool.name == "sdk__add")
    assert add.annotations is not None and add.annotations.read_only_hint is True

    assert manager.call_tool("fake__echo", {"text": "one"}, timeout=T).text == "one"
    assert manager.call_tool("fake", "echo", {"text": "two"}, timeout=T).text == "two"
    assert manager.call_tool("sdk__add", {"a": 2, "b": 3}, timeout=T).text == "5"
    assert manager.call_tool("everything", "get-sum", {"a": 2, "b": 3}, timeout=T).text \
        == "The sum of 2 and 3 is 5."
    assert manager.call_tool("everything__echo", {"message": "hi"}, timeout=T).text \
        == "Echo: hi"

    assert isinstance(manager["sdk"], mcp_sync.Client)
    assert manager["sdk"].protocol_version == "2026-07-28"  # the SDK peer negotiates
    assert manager["everything"].protocol_version == "2025-11-25"
    with pytest.raises(KeyError, match="no server 'nope'"):
        manager.call_tool("nope__echo", {})
    with pytest.raises(KeyError):
        manager["nope"]
    with pytest.raises(ValueError, match="not a qualified name"):
        manager.call_tool("echo", {})
    with pytest.raises(ServerUnavailable, match="disabled") as caught:
        manager.call_tool("dormant", "anything", {})
    assert caught.value.request_sent is False and caught.value.server == "dormant"


def test_resources_and_prompts_are_aggregated_and_routed(trio: Manager) -> None:
    manager = trio
    resources = manager.list_resources()
    names = {resource.name for resource in resources}
    assert {"fake__hello", "sdk__motto"} <= names
    assert any(name.startswith("everything__") for name in names)
    assert manager.read_resource("res://motto", timeout=T).contents[0].text == "blocking is fine"
    assert manager.read_resource("fake", "test://hello").contents[0].text == "hello world"
    with pytest.raises(KeyError, match="no connected server lists"):
        manager.read_resource("res://nobody-has-this")
    templates = manager.list_resource_templates()
    assert any(template.name.startswith("everything__") for template in templates)

    prompts = {prompt.name for prompt in manager.list_prompts()}
    assert {"fake__greet", "sdk__haiku", "everything__simple-prompt"} <= prompts
    assert "Hello, Ann!" in str(manager.get_prompt("fake__greet", {"who": "Ann"}).to_wire())
    haiku = manager.get_prompt("sdk", "haiku", {"topic": "threads"}, timeout=T)
    assert "haiku about threads" in str(haiku.to_wire())


# -- a killed server ---------------------------------------------------------------------


def test_killed_server_keeps_its_tools_fails_fast_and_comes_back(
    tmp_path: Path, recorder: Recorder
) -> None:
    good = shlex.join(fake_server_command())
    refusing = shlex.join(fake_server_command("--exit-at-start", "3"))
    environ = {"FAKE_SERVER": good}
    config = three_servers(tmp_path, fake={"command": "${FAKE_SERVER}"})
    with Manager(config, environ=environ, timeout=T, backoff=(0.05, 0.1),
                 breaker_failures=10_000, on_status=recorder) as manager:
        before = {tool.name for tool in manager.list_tools()}
        first_pid = manager["fake"].transport.pid  # type: ignore[attr-defined]
        assert first_pid is not None

        # The configuration is resolved again at each attempt: from now on the fake
        # server's command refuses to start, so the reconnects fail until it is restored.
        environ["FAKE_SERVER"] = refusing
        mark = recorder.mark()
        os.kill(first_pid, signal.SIGKILL)
        (down,) = recorder.next_call(
            lambda s: s.name == "fake" and s.state is ServerState.RECONNECTING
            and s.recent_failures >= 2, since=mark,  # lost + a failed retry
            what="fake reconnecting after a failed retry")
        assert isinstance(down.error, ConnectionClosed)

        assert {tool.name for tool in manager.list_tools()} == before  # still listed
        assert manager.status()["fake"].tools > 0
        started = time.monotonic()
        with pytest.raises(ServerUnavailable, match="reconnecting") as caught:
            manager.call_tool("fake__echo", {"text": "while down"}, timeout=T)
        assert time.monotonic() - started < 1.0  # fast: no waiting for the reconnect
        assert caught.value.state is ServerState.RECONNECTING
        assert caught.value.request_sent is False
        with pytest.raises(ServerUnavailable):
            manager["fake"]
        # the other servers are not disturbed
        assert manager.call_tool("sdk__add", {"a": 1, "b": 1}, timeout=T).text == "2"
        assert manager.call_tool("everything__get-sum", {"a": 1, "b": 1}, timeout=T).text \
            == "The sum of 1 and 1 is 2."

        mark = recorder.mark()
        environ["FAKE_SERVER"] = good
        (back,) = recorder.next_call(
            lambda s: s.name == "fake" and s.state is ServerState.CONNECTED, since=mark,
            what="fake connected again")
        assert back.error is None
        assert manager.call_tool("fake__echo", {"text": "back"}, timeout=T).text == "back"
        assert manager["fake"].transport.pid != first_pid  # type: ignore[attr-defined]
        assert {tool.name for tool in manager.list_tools()} == before


def test_a_server_that_dies_at_every_start_trips_the_breaker(recorder: Recorder) -> None:
    # on_status runs on the server's reconnect thread: while `hold` is set, a status of
    # crashy keeps that thread in the callback until `release`, so no further attempt can
    # run between the one reconnect() waits for and the status it returns.
    hold, release = threading.Event(), threading.Event()

    def on_status(status: ServerStatus) -> None:
        recorder(status)
        if status.name == "crashy" and hold.is_set():
            release.wait(T)

    config = {"mcpServers": {"fake": fake_entry(), "crashy": fake_entry("--exit-at-start", "3")}}
    with Manager(config, timeout=T, backoff=(0.01, 0.02), breaker_failures=5,
                 breaker_window=30.0, on_status=on_status) as manager:
        (failed,) = recorder.next_call(
            lambda s: s.name == "crashy" and s.state is ServerState.FAILED, what="crashy failed")
        assert failed.recent_failures == 6  # more than 5 in 30 s
        assert isinstance(failed.error, ServerUnavailable)
        assert "failed 6 times in 30 s; not reconnecting" in str(failed.error)
        cause = failed.error.__cause__
        assert isinstance(cause, ConnectionClosed) and cause.exit_code == 3
        # it stopped: its reconnect thread ends by itself
        for thread in threading.enumerate():
            if thread.name == "mcp-sync-reconnect-crashy":
                thread.join(T)
                assert not thread.is_alive()
        assert manager.status()["crashy"].state is ServerState.FAILED
        with pytest.raises(ServerUnavailable, match="failed and is not being reconnected"):
            manager.call_tool("crashy__echo", {"text": "x"})
        assert not [t for t in manager.list_tools() if t.name.startswith("crashy__")]
        # the healthy server is untouched
        assert manager.status()["fake"].state is ServerState.CONNECTED
        assert manager.call_tool("fake__echo", {"text": "fine"}, timeout=T).text == "fine"
        # reconnect() resets the breaker and tries again at once: that attempt fails, and
        # with one failure counted afresh (not seven) the server is reconnecting again
        hold.set()
        try:
            mark = recorder.mark()
            again = manager.reconnect("crashy")
            assert again.state is ServerState.RECONNECTING, again
            assert again.recent_failures == 1
            assert isinstance(again.error, ConnectionClosed) and again.error.exit_code == 3
        finally:
            hold.clear()
            release.set()
        # ...until the breaker opens again after as many failures as the first time
        (failed,) = recorder.next_call(
            lambda s: s.name == "crashy" and s.state is ServerState.FAILED, since=mark,
            what="crashy failed again")
        assert failed.recent_failures == 6


def test_without_reconnect_a_failing_server_is_reported_and_the_others_connect() -> None:
    config = {"mcpServers": {"fake": fake_entry(),
                             "missing": {"command": "no-such-mcp-server-command"}}}
    with Manager(config, timeout=T, reconnect=False) as manager:
        status = manager.status()
        assert status["fake"].state is ServerState.CONNECTED
        assert status["missing"].state is ServerState.FAILED
        assert isinstance(status["missing"].error, mcp_sync.CommandNotFound)
        assert "no-such-mcp-server-command" in str(status["missing"].to_dict()["error"])
        assert manager.call_tool("fake__echo", {"text": "ok"}, timeout=T).text == "ok"
        assert [t.name for t in manager.list_tools() if t.name.startswith("missing")] == []


# -- retry once, when safe ---------------------------------------------------------------


def test_retry_once_for_hinted_tools_and_not_for_a_tool_without_hints(trio: Manager,
                                                                      tmp_path: Path) -> None:
    manager = trio
    # readOnlyHint: the server dies mid-call; the manager reconnects and retries once.
    result = manager.call_tool("sdk__crash_once_readonly", {"tag": "ro"}, timeout=T)
    assert result.text == "survived ro"
    assert calls_log(tmp_path).count("ro") == 2

    # idempotentHint: the same.
    result = manager.call_tool("sdk", "crash_once_idempotent", {"tag": "idem"}, timeout=T)
    assert result.text == "survived idem"
    assert calls_log(tmp_path).count("idem") == 2

    # no hints, and the request reached the server: the error surfaces, no retry.
    with pytest.raises(ConnectionClosed) as caught:
        manager.call_tool("sdk__crash_once_plain", {"tag": "plain"}, timeout=T)
    assert not isinstance(caught.value, ServerUnavailable)
    assert caught.value.request_sent is not False
    assert calls_log(tmp_path).count("plain") == 1
    # ...and the server still comes back in the background
    status = manager.reconnect("sdk")
    assert status.state is ServerState.CONNECTED, status
    assert manager.call_tool("sdk__crash_once_plain", {"tag": "plain"}, timeout=T).text \
        == "survived plain"
    assert calls_log(tmp_path).count("plain") == 2
    # the other servers never noticed
    assert manager.status()["fake"].recent_failures == 0


def test_a_request_that_never_left_is_retried_even_without_hints(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The manager learns of a lost connection from the dead client's callback thread. Hold
    # that thread in a notification handler, close the link under the client, and call:
    # the send fails before anything is written (request_sent False), so even echo (no
    # hints) is retried on a new connection.
    entered, gate = threading.Event(), threading.Event()

    def hold(method: str, params: Optional[Dict[str, Any]]) -> None:
        if method == "notifications/test/hold":
            entered.set()
            gate.wait(T)

    config = {"mcpServers": {"fake": fake_entry()}}
    caplog.set_level(logging.INFO, logger="mcp_sync.manager")
    with Manager(config, timeout=T, backoff=(0.05,), notification_handler=hold,
                 close_timeout=0.5) as manager:
        try:
            old = manager["fake"]
            assert manager.call_tool("fake__notify", {"method": "notifications/test/hold"},
                                     timeout=T).text == "sent"
            assert entered.wait(T)
            old.transport.close()  # the server exits; the session knows, the manager not yet
            assert not old.connected
            assert manager.status()["fake"].state is ServerState.CONNECTED

            result = manager.call_tool("fake", "echo", {"text": "again"}, timeout=T)
            assert result.text == "again"
            assert manager["fake"] is not old
            assert manager.status()["fake"].recent_failures == 1
        finally:
            gate.set()
    assert any("retrying on the new connection to fake" in r.getMessage()
               for r in caplog.records)


# -- list_changed ------------------------------------------------------------------------


def test_a_burst_of_list_changed_causes_one_refresh() -> None:
    refreshed = threading.Condition()
    refreshes: List[List[str]] = []
    seen: List[str] = []

    def on_tools_changed(server: str, tools: List[types.Tool]) -> None:
        with refreshed:
            refreshes.append([tool.name for tool in tools])
            refreshed.notify_all()

    def count(method: str, params: Optional[Dict[str, Any]]) -> None:
        seen.append(method)

    config = {"mcpServers": {"fake": fake_entry()}}
    # validate_output=False: with it, a client lists its tools again before the first call
    # that follows a list_changed (for their output schemas); this counts the manager's
    # own fetches.
    with Manager(config, timeout=T, refresh_debounce=0.5, on_tools_changed=on_tools_changed,
                 notification_handler=count, validate_output=False) as manager:
        with refreshed:
            assert refreshed.wait_for(lambda: len(refreshes) == 1, T)  # the connect's list
        assert len(received(manager, "tools/list")) == 1
        for _ in range(5):
            manager.call_tool("fake__notify", {"method": "notifications/tools/list_changed"},
                              timeout=T)
        with refreshed:
            assert refreshed.wait_for(lambda: len(refreshes) == 2, T)
        assert len(received(manager, "tools/list")) == 2  # five notifications, one fetch
        assert len(refreshes) == 2 and "echo" in refreshes[1]
        assert seen.count("notifications/tools/list_changed") == 5  # the user's handler too
        assert "fake__echo" in [tool.name for tool in manager.list_tools()]
        # refresh=True asks the client again, which serves its own cache: the server
        # promised list_changed notifications, so nothing is fetched
        assert "fake__echo" in [tool.name for tool in manager.list_tools(refresh=True)]
        assert len(received(manager, "tools/list")) == 2


# -- lifecycle ---------------------------------------------------------------------------


def test_close_is_bounded_while_a_reconnect_thread_waits(recorder: Recorder) -> None:
    config = {"mcpServers": {"crashy": fake_entry("--exit-at-start", "4")}}
    manager = Manager(config, timeout=T, backoff=(600.0,), close_timeout=5.0,
                      on_status=recorder)
    manager.connect()
    assert manager.status()["crashy"].state is ServerState.RECONNECTING
    assert [t for t in threading.enumerate() if t.name == "mcp-sync-reconnect-crashy"]
    started = time.monotonic()
    manager.close()
    assert time.monotonic() - started < 5.0
    assert not [t for t in threading.enumerate() if t.name.startswith("mcp-sync")]
    assert manager.status()["crashy"].state is ServerState.CLOSED
    manager.close()  # idempotent
    with pytest.raises(ClientNotConnected, match="closed"):
        manager.list_tools()
    with pytest.raises(ClientNotConnected, match="closed"):
        manager.connect()


def test_close_stops_a_stubborn_server_within_the_managers_close_timeout() -> None:
    # The server ignores stdin's end and SIGTERM: only SIGKILL, after two waits, stops it.
    # With the clients' 2 s steps the manager gave up on it after its 1.2 s bound.
    config = {"mcpServers": {"stubborn": fake_entry("--stubborn"), "plain": fake_entry()}}
    manager = Manager(config, timeout=T, close_timeout=1.2).connect()
    transports = {name: manager[name].transport for name in ("stubborn", "plain")}
    started = time.monotonic()
    manager.close()
    elapsed = time.monotonic() - started
    assert elapsed < 1.2 + 0.5, f"close() took {elapsed:.1f} s"
    assert transports["stubborn"].returncode == -signal.SIGKILL  # type: ignore[attr-defined]
    assert transports["plain"].returncode == 0  # type: ignore[attr-defined]
    assert not [t for t in threading.enumerate() if t.name.startswith("mcp-sync")]


def test_from_a_file_with_a_custom_separator(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"fake": fake_entry()}}), encoding="utf-8")
    manager = Manager.from_config(str(path), separator=".", timeout=T)
    with pytest.raises(ClientNotConnected, match="not connected"):
        manager.list_tools()
    with manager:
        assert "fake.echo" in [tool.name for tool in manager.list_tools()]
        assert manager.call_tool("fake.echo", {"text": "dot"}, timeout=T).text == "dot"
        assert "fake=connected" in repr(manager)
        assert list(manager) == ["fake"] and len(manager) == 1 and "fake" in manager


def test_bad_configurations_fail_at_construction() -> None:
    with pytest.raises(ValueError, match="contains the separator"):
        Manager({"mcpServers": {"a__b": fake_entry()}})
    with pytest.raises(ConfigError, match="server 'x'"):
        Manager({"mcpServers": {"x": {"command": "y", "type": "telepathy"}}})
    with pytest.raises(ValueError, match="backoff"):
        Manager({"mcpServers": {}}, backoff=())


def test_a_missing_variable_fails_only_its_server_until_it_is_set() -> None:
    command = fake_server_command()
    environ: Dict[str, str] = {}
    config = {"mcpServers": {
        "fake": fake_entry(),
        "needy": {"command": command[0], "args": command[1:],
                  "env": {"TOKEN": "${NEEDY_TOKEN}"}},
    }}
    with Manager(config, timeout=T, environ=environ) as manager:
        status = manager.status()
        assert status["fake"].state is ServerState.CONNECTED
        assert status["needy"].state is ServerState.FAILED  # not retried: waiting cannot help
        error = status["needy"].error
        assert isinstance(error, ConfigError)
        assert error.server == "needy" and error.key == "env.TOKEN"
        assert "'NEEDY_TOKEN' is not set" in str(error)
        environ["NEEDY_TOKEN"] = "now set"  # resolved again at the next attempt
        assert manager.reconnect("needy").state is ServerState.CONNECTED
        assert manager.call_tool("needy__echo", {"text": "ok"}, timeout=T).text == "ok"


def test_per_server_timeout_from_the_configuration(recorder: Recorder) -> None:
    # The server's timeout bounds its handshake too: on a busy machine a first attempt may
    # miss it, and the manager then connects again.
    config = {"mcpServers": {"fake": {**fake_entry(), "timeout": 1.0}}}
    with Manager(config, timeout=T, backoff=(0.05,), on_status=recorder) as manager:
        recorder.next_call(lambda s: s.name == "fake" and s.state is ServerState.CONNECTED,
                           what="fake connected")
        assert manager["fake"].timeout == 1.0
        with pytest.raises(mcp_sync.RequestTimeout, match=r"timed out after 1\.0 s"):
            manager.call_tool("fake__slow", {"seconds": 30})
        # The call was cancelled on the wire: the session sends notifications/cancelled
        # before it fails the call, and the server reads its stdin in order, so the
        # cancellation is on record before the "received" call below is read.
        (slow,) = [m for m in received(manager, "tools/call")
                   if m["params"]["name"] == "slow"]
        cancelled = received(manager, "notifications/cancelled")
        assert [note["params"]["requestId"] for note in cancelled] == [slow["id"]]
        # ...and the server is still connected
        assert manager.call_tool("fake__echo", {"text": "still"}, timeout=T).text == "still"


# -- the Client hooks the manager is built on --------------------------------------------


def test_client_reports_a_lost_connection_once_and_never_for_close() -> None:
    lost: List[BaseException] = []
    reported = threading.Event()

    def on_lost(error: BaseException) -> None:
        lost.append(error)
        reported.set()

    client = mcp_sync.connect(fake_server_command(), timeout=T, on_connection_lost=on_lost)
    try:
        with pytest.raises(ConnectionClosed) as caught:
            client.call_tool("crash", {"code": 3})
        assert caught.value.request_sent is not False  # it reached the server, which died
        assert reported.wait(T)
        assert len(lost) == 1 and isinstance(lost[0], ConnectionClosed)
        assert lost[0].exit_code == 3  # type: ignore[attr-defined]
        assert not client.connected
        # the link is known to be closed: the next request is never written
        with pytest.raises(ConnectionClosed) as caught:
            client.call_tool("echo", {"text": "x"})
        assert caught.value.request_sent is False
    finally:
        client.close()
    assert len(lost) == 1

    # close() is not a loss
    closed: List[BaseException] = []
    with mcp_sync.connect(fake_server_command(), timeout=T, on_connection_lost=closed.append):
        pass
    assert closed == []  # every thread of that client has been joined: it can never fire

    # nor is a failed connect
    failed: List[BaseException] = []
    with pytest.raises(ConnectionClosed):
        mcp_sync.connect(fake_server_command("--exit-at-start", "2"), timeout=T,
                         on_connection_lost=failed.append)
    assert failed == []
