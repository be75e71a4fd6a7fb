"""Deferred tools: a Toolbox over a Manager lists the tools of a server that is still
connecting (saved on disk by ``Manager(tool_cache=...)``) or reconnecting (its last
listing), and a call to one waits for the server, within ``wait_for_server``.

Real processes: tests/servers/gate_stdio.py, whose start (and every ``hold`` call) waits
at a gate the test holds (tests/_gate.py), so "the server is still starting" is a known
moment, not a race; tests/servers/fake_stdio.py for ``tools/list_changed``. Nothing
sleeps: the gate, the manager's hooks and bounded waits order everything.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import stat
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from mcp_sync import Manager, Toolbox, types
from mcp_sync.manager import ServerState, ServerUnavailable
from mcp_sync.manager._toolcache import MAX_FILE_BYTES, ToolCache, cache_key, default_directory

from .._gate import Gate
from ..conftest import PY, SERVERS, fake_server_command
from ..helpers import Recorder, wait_for

T = 30.0  # bound for anything that should be quick; generous for a small, noisy VM
SECRET = "s3cret-token-value"
GATE_TOOLS = ["gate__hold", "gate__hold_write", "gate__echo"]
# Pinned protocol: no era probe, so a server held at its start is not taken for an old
# one; quick reconnects.
QUICK: Dict[str, Any] = {"timeout": T, "protocol_version": "2025-11-25", "backoff": (0.05,),
                         "breaker_failures": 1000, "close_timeout": 15.0}


def gate_config(gate: Gate) -> Dict[str, Any]:
    return {"mcpServers": {"gate": {
        "command": PY, "args": [str(SERVERS / "gate_stdio.py")],
        "env": {"GATE_PORT": str(gate.port), "GATE_API_TOKEN": SECRET}}}}


def names_of(toolbox: Toolbox) -> List[str]:
    return [tool["name"] for tool in toolbox.tools()]


def wait_until_waiting(caplog: pytest.LogCaptureFixture, tool: str) -> None:
    """Until the toolbox logs that the call of ``tool`` waits for its server."""
    wait_for(lambda: any(r.getMessage().startswith(f"{tool}: waiting up to ")
                         for r in caplog.records), T, f"{tool} waiting for its server")


def call_held_until_released(toolbox: Toolbox, gate: Gate, caplog: pytest.LogCaptureFixture,
                             name: str, arguments: Dict[str, Any]) -> List[Tuple[str, bool]]:
    """Call ``name`` on a thread while the gate holds its server's start: once the toolbox
    logs that the call waits for the server, the call must not have returned; then the
    start is released. The call's results, as (text, is_error)."""
    results: List[types.CallToolResult] = []
    with caplog.at_level(logging.DEBUG, logger="mcp_sync.toolbox"):
        caller = threading.Thread(target=lambda: results.append(toolbox.call(name, arguments)),
                                  name="test-caller")
        caller.start()
        wait_until_waiting(caplog, name)
        assert not results
        gate.release_starts()
        caller.join(T)
    return [(r.text, r.is_error) for r in results]


# -- a server that is still starting --------------------------------------------------------


def test_saved_tools_are_listed_while_the_server_starts_and_calls_wait_for_it(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cache = tmp_path / "cache"
    with Gate() as gate:
        config = gate_config(gate)
        # a first run lists the live tools and saves them
        with Manager(config, tool_cache=cache, **QUICK) as manager:
            assert names_of(Toolbox(manager)) == GATE_TOOLS
        (saved,) = cache.iterdir()
        assert saved.name == f"{cache_key(config['mcpServers']['gate'])}.json"
        assert stat.S_IMODE(saved.stat().st_mode) == 0o600
        text = saved.read_text(encoding="utf-8")
        # the tools only: no configuration, no secret
        for private in (SECRET, "GATE_API_TOKEN", str(gate.port), "gate_stdio", PY):
            assert private not in text
        assert [tool["name"] for tool in json.loads(text)["tools"]] == [
            "hold", "hold_write", "echo"]

        # the next run: the server is held at its start
        gate.hold_starts = True
        with Manager(config, tool_cache=cache, connect_timeout=0, **QUICK) as manager:
            gate.wait_for(lambda arrivals: len(gate.starts()) == 2)
            toolbox = Toolbox(manager, wait_for_server=0.3, startup_wait=0.05)
            assert names_of(toolbox) == GATE_TOOLS  # at once, from the cache
            assert manager.status()["gate"].state is ServerState.CONNECTING
            assert manager.status()["gate"].tools == 3

            # past the bound: an error result the model can read
            started = time.monotonic()
            late = toolbox.call("gate__echo", {"text": "late"})
            assert time.monotonic() - started >= 0.3
            assert late.is_error
            assert late.text.startswith(
                "the server of gate__echo is unavailable (waited 0.3 s for it): server "
                "'gate' is still connecting"), late.text
            strict = Toolbox(manager, wait_for_server=0.1, raise_errors=True)
            with pytest.raises(ServerUnavailable) as raised:
                strict.call("gate__echo", {"text": "late"})
            assert raised.value.state is ServerState.CONNECTING

            # within the bound: the call waits for the server, then is made
            patient = Toolbox(manager, wait_for_server=T)
            results = call_held_until_released(patient, gate, caplog, "gate__echo",
                                               {"text": "on time"})
            assert results == [("on time", False)]
            assert manager.status()["gate"].state is ServerState.CONNECTED


def test_the_first_listing_waits_briefly_for_servers_still_connecting(
        caplog: pytest.LogCaptureFixture) -> None:
    with Gate() as gate:
        gate.hold_starts = True
        with Manager(gate_config(gate), connect_timeout=0, **QUICK) as manager:
            gate.wait_for(lambda arrivals: len(gate.starts()) == 1)
            assert manager.list_tools() == []  # no cache: nothing known yet
            toolbox = Toolbox(manager, startup_wait=T)
            listed: List[List[str]] = []
            with caplog.at_level(logging.DEBUG, logger="mcp_sync.toolbox"):
                lister = threading.Thread(target=lambda: listed.append(names_of(toolbox)),
                                          name="test-lister")
                lister.start()
                wait_for(lambda: any(r.getMessage().startswith("waiting up to ")
                                     for r in caplog.records), T, "the startup gate")
                gate.release_starts()
                lister.join(T)
            assert listed == [GATE_TOOLS]  # the live tools, once the server was up


def test_a_failed_server_is_not_waited_for() -> None:
    config = {"mcpServers": {"broken": {"command": PY, "args": [
        *fake_server_command("--exit-at-start", "3")[1:]]}}}
    with Manager(config, reconnect=False, **QUICK) as manager:
        assert manager.status()["broken"].state is ServerState.FAILED
        started = time.monotonic()
        assert manager.wait_ready("broken", T) is False
        assert manager.wait_ready(timeout=T) is False
        toolbox = Toolbox(manager, wait_for_server=T)
        assert toolbox.tools() == []
        result = toolbox.answer_openai({"tool_calls": [{"id": "1", "function": {
            "name": "broken__echo", "arguments": "{}"}}]})
        assert result[0]["content"].startswith("Error: there is no tool named")
        assert time.monotonic() - started < T / 2
    with pytest.raises(KeyError):
        manager.wait_ready("nope")


# -- a server that is reconnecting ----------------------------------------------------------


def test_a_killed_server_keeps_its_tools_and_calls_wait_for_the_reconnect(
        caplog: pytest.LogCaptureFixture) -> None:
    with Gate() as gate, Manager(gate_config(gate), **QUICK) as manager:
        toolbox = Toolbox(manager, wait_for_server=T)
        assert names_of(toolbox) == GATE_TOOLS
        # two calls in progress when the server dies: the read-only one is sent again on
        # the new connection (the manager's rule), the other is not
        turn: List[Any] = []
        message = {"tool_calls": [
            {"id": "r", "function": {"name": "gate__hold", "arguments": '{"key": "read"}'}},
            {"id": "w", "function": {"name": "gate__hold_write",
                                     "arguments": '{"key": "write"}'}}]}
        runner = threading.Thread(target=lambda: turn.extend(toolbox.answer_openai(message)),
                                  name="test-turn")
        runner.start()
        gate.wait_for(lambda arrivals: len(gate.calls()) == 2)
        (first,) = gate.starts()
        gate.hold_starts = True
        os.kill(first.pid, signal.SIGKILL)
        gate.wait_for(lambda arrivals: len(gate.starts()) == 2)  # the new one, held
        assert manager.status()["gate"].state is ServerState.RECONNECTING
        assert names_of(toolbox) == GATE_TOOLS  # still listed

        results = call_held_until_released(toolbox, gate, caplog, "gate__echo",
                                           {"text": "after"})
        assert results == [("after", False)]

        (again,) = gate.wait_for(lambda arrivals: [a for a in gate.calls(key="read")
                                                   if a.pid != first.pid])
        gate.release(again)
        runner.join(T)
        assert turn[0]["content"] == "read"
        assert turn[1]["content"].startswith("Error: the server of gate__hold_write is "
                                             "unavailable: ")
        assert [a.pid for a in gate.calls(key="write")] == [first.pid]  # sent once


# -- the cache file -------------------------------------------------------------------------


def test_the_saved_listing_follows_list_changed(tmp_path: Path) -> None:
    recorder = Recorder()
    command = fake_server_command()
    config = {"mcpServers": {"fake": {"command": command[0], "args": command[1:]}}}
    with Manager(config, tool_cache=tmp_path, on_tools_changed=recorder, timeout=T,
                 refresh_debounce=0.05) as manager:
        recorder.next_call(lambda server, tools: True, what="the connect's listing")
        (saved,) = tmp_path.iterdir()
        before = json.loads(saved.read_text(encoding="utf-8"))
        assert "echo" in [tool["name"] for tool in before["tools"]]
        assert "sprout" not in [tool["name"] for tool in before["tools"]]
        mark = recorder.mark()
        assert manager.call_tool("fake", "grow", {"name": "sprout"}, timeout=T).text == "grown"
        recorder.next_call(lambda server, tools: "sprout" in [t.name for t in tools],
                           since=mark, what="the listing after list_changed")
        after = json.loads(saved.read_text(encoding="utf-8"))
        assert "sprout" in [tool["name"] for tool in after["tools"]]
        assert after["saved"] >= before["saved"]
        assert stat.S_IMODE(saved.stat().st_mode) == 0o600
        assert [p.name for p in tmp_path.iterdir()] == [saved.name]  # no temporary left


def test_a_corrupt_cache_file_is_ignored_and_replaced(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with Gate() as gate:
        config = gate_config(gate)
        path = tmp_path / f"{cache_key(config['mcpServers']['gate'])}.json"
        path.write_bytes(b'{"format": "mcp_sync.tools", "tools": [\x00')
        gate.hold_starts = True
        with caplog.at_level(logging.WARNING, logger="mcp_sync.manager._toolcache"), Manager(
                config, tool_cache=tmp_path, connect_timeout=0, **QUICK) as manager:
            gate.wait_for(lambda arrivals: len(gate.starts()) == 1)
            assert manager.list_tools() == []  # nothing from a file that is not ours
            assert any(r.getMessage().startswith("ignoring the cached tools of gate in ")
                       and "not JSON" in r.getMessage() for r in caplog.records)
            gate.release_starts()
            assert manager.wait_ready("gate", T)
            assert [t.name for t in manager.list_tools()] == GATE_TOOLS
        saved = json.loads(path.read_text(encoding="utf-8"))  # rewritten from the live list
        assert [tool["name"] for tool in saved["tools"]] == ["hold", "hold_write", "echo"]


def test_saved_tools_get_the_bounds_of_live_ones(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    deep: Dict[str, Any] = {"type": "object"}
    for _ in range(100):
        deep = {"type": "object", "properties": {"x": deep}}
    hostile = [types.Tool(name="x\x1b[31mred", description="red \x1b[31mALERT\u202e done",
                          input_schema=deep)]
    with Gate() as gate:
        config = gate_config(gate)
        ToolCache(tmp_path, max_age=3600).store(
            cache_key(config["mcpServers"]["gate"]), "gate", hostile)
        gate.hold_starts = True
        with Manager(config, tool_cache=tmp_path, connect_timeout=0, **QUICK) as manager:
            with caplog.at_level(logging.WARNING, logger="mcp_sync.toolbox"):
                (tool,) = Toolbox(manager, startup_wait=0).tools()
            gate.release_starts()
            assert manager.wait_ready("gate", T)
    assert tool["name"] == "gate__x__31mred" and tool["tool"] == "x[31mred"
    assert "\x1b" not in tool["description"] and "\u202e" not in tool["description"]
    assert tool["schema"] == {"type": "object", "properties": {}, "additionalProperties": True}
    assert any("nests deeper than" in r.getMessage() for r in caplog.records)


def test_saved_tools_are_filtered_by_the_configuration_of_now(tmp_path: Path) -> None:
    with Gate() as gate:
        config = gate_config(gate)
        with Manager(config, tool_cache=tmp_path, **QUICK):
            pass  # saves hold, hold_write, echo
        config["mcpServers"]["gate"]["disabledTools"] = ["hold_write"]
        gate.hold_starts = True
        with Manager(config, tool_cache=tmp_path, connect_timeout=0, **QUICK) as manager:
            gate.wait_for(lambda arrivals: len(gate.starts()) == 2)
            assert names_of(Toolbox(manager, startup_wait=0)) == ["gate__hold", "gate__echo"]
            gate.release_starts()
            assert manager.wait_ready("gate", T)


def good_document(key: str, **changes: Any) -> Dict[str, Any]:
    document = {"format": "mcp_sync.tools", "version": 1, "key": key, "saved": time.time(),
                "tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
    document.update(changes)
    return document


@pytest.mark.parametrize("content, reason", [
    (b"\xff\xfe not text", "not JSON"),
    (b"[1, 2, 3]", "not a tool cache file of mcp_sync"),
    (json.dumps(good_document("k", version=2)).encode(), "format version 2, not 1"),
    (json.dumps(good_document("other")).encode(), "saved for another configuration"),
    (json.dumps(good_document("k", saved="yesterday")).encode(), "no valid time of saving"),
    (json.dumps(good_document("k", saved=time.time() + 86400)).encode(), "saved in the future"),
    (json.dumps(good_document("k", tools={"echo": {}})).encode(), "no list of tools"),
    (json.dumps(good_document("k", tools=[{"name": "echo"}])).encode(), "tool 0 is invalid"),
    (json.dumps(good_document("k", tools=[{"name": "x", "inputSchema": {}}] * 10_001)).encode(),
     "10001 tools, more than 10000"),
    (b" " * (MAX_FILE_BYTES + 1), f"{MAX_FILE_BYTES + 1} bytes, more than {MAX_FILE_BYTES}"),
])
def test_a_bad_cache_file_is_ignored_with_a_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, content: bytes, reason: str) -> None:
    cache = ToolCache(tmp_path, max_age=3600)
    cache.path("k").write_bytes(content)
    with caplog.at_level(logging.WARNING, logger="mcp_sync.manager._toolcache"):
        assert cache.load("k", "files") is None
    (record,) = caplog.records
    assert record.getMessage().startswith(f"ignoring the cached tools of files in {tmp_path}")
    assert reason in record.getMessage()
    assert len(record.getMessage()) < 1000


def test_a_cache_file_past_its_age_or_behind_a_symlink_is_not_used(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cache = ToolCache(tmp_path, max_age=60)
    cache.path("k").write_text(json.dumps(good_document("k", saved=time.time() - 61)))
    assert cache.load("k", "files") is None  # expired: INFO, not a warning
    cache.path("k").write_text(json.dumps(good_document("k")))
    assert [t.name for t in cache.load("k", "files") or []] == ["echo"]
    cache.path("k").rename(tmp_path / "elsewhere.json")
    cache.path("k").symlink_to(tmp_path / "elsewhere.json")
    with caplog.at_level(logging.WARNING, logger="mcp_sync.manager._toolcache"):
        assert cache.load("k", "files") is None
    assert [r.levelno for r in caplog.records] == [logging.WARNING]


def test_the_cache_key_and_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    entry = {"command": "srv", "args": ["--x"], "env": {"TOKEN": "one"},
             "headers": {"Authorization": "Bearer one"}}
    other_values = {**entry, "env": {"TOKEN": "two"}, "headers": {"Authorization": "two"}}
    assert cache_key(entry) == cache_key(other_values)  # values never enter the key
    assert cache_key(entry) != cache_key({**entry, "args": ["--y"]})
    assert cache_key(entry) != cache_key({**entry, "env": {"OTHER": "one"}})
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    if sys.platform.startswith("linux"):
        assert default_directory() == tmp_path / "mcp_sync" / "tools"
    assert ToolCache.from_option(None, 1) is None and ToolCache.from_option(False, 1) is None
    assert ToolCache.from_option(True, 1).directory == default_directory()  # type: ignore[union-attr]
    with pytest.raises(ValueError):
        ToolCache(tmp_path, max_age=0)


def test_a_cache_that_cannot_be_written_is_logged_not_raised(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cache = ToolCache(blocker / "cache", max_age=60)
    tool = types.Tool(name="echo", input_schema={"type": "object"})
    with caplog.at_level(logging.WARNING, logger="mcp_sync.manager._toolcache"):
        cache.store("k", "files", [tool])
    assert caplog.records[0].getMessage().startswith("could not cache the tools of files")
