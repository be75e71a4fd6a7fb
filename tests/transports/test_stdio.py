"""The stdio transport and the whole client against the project's fake server subprocess."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import textwrap
import threading
import time
from typing import Any, Dict, List, Optional

import pytest

import mcp_sync
from mcp_sync import (
    CapabilityError,
    ClientNotConnected,
    CommandNotFound,
    ConnectionClosed,
    ForkedClientError,
    RequestCancelled,
    RequestTimeout,
    ServerError,
    StdioTransport,
    UnsupportedProtocolVersion,
)
from mcp_sync._rpc.session import RpcSession
from mcp_sync.client._connect import make_transport

from .._procs import default_ctrl_c, python_stdout, running, wait_gone
from ..conftest import PY, ROOT, fake_server_command


def connect(*args: str, **kwargs: Any) -> mcp_sync.Client:
    kwargs.setdefault("timeout", 10.0)
    return mcp_sync.connect(fake_server_command(*args), **kwargs)


def received(client: mcp_sync.Client, method: str) -> List[Dict[str, Any]]:
    return json.loads(client.call_tool("received", {"method": method}).text)


def test_handshake_info_and_tools() -> None:
    with connect() as client:
        assert client.connected
        assert client.protocol_version == "2025-11-25"
        assert client.server_info.name == "fake" and client.server_info.version == "1.2.3"
        assert client.instructions == "Test server."
        assert client.server_capabilities.tools is not None
        names = {tool.name for tool in client.list_tools()}
        assert {"echo", "add", "slow", "crash"} <= names
        assert client.call_tool("echo", {"text": "héllo"}).text == "héllo"
        result = client.call_tool("add", {"a": 2, "b": 3.5})
        assert result.structured == {"sum": 5.5}
        initialized = received(client, "notifications/initialized")
        assert len(initialized) == 1
    assert not client.connected


def test_pagination_follows_every_cursor() -> None:
    with connect("--page-size", "2", "--extra-tools", "25") as client:
        tools = client.list_tools()
        names = [tool.name for tool in tools]
        assert len(names) == len(set(names))
        assert {f"tool_{i:03d}" for i in range(25)} <= set(names)
        pages = received(client, "tools/list")
        assert len(pages) == (len(names) + 1) // 2
        assert [p.get("params", {}).get("cursor") for p in pages[:3]] == [None, "2", "4"]


def test_pagination_bound_raises_protocol_error() -> None:
    with connect("--page-size", "2", "--extra-tools", "25", max_pages=3) as client, \
            pytest.raises(mcp_sync.ProtocolError, match="3 pages"):
        client.list_tools()


def test_resources_prompts_completion_logging_level() -> None:
    with connect() as client:
        assert {r.uri for r in client.list_resources()} == {"test://hello", "test://blob"}
        assert client.read_resource("test://hello").text == "hello world"
        with pytest.raises(ServerError) as info:
            client.read_resource("test://missing")
        assert info.value.code == -32002
        prompt = client.get_prompt("greet", {"who": "Ada"})
        assert prompt.messages[0].content.text == "Hello, Ada!"
        assert [p.name for p in client.list_prompts()] == ["greet"]
        completion = client.complete({"type": "ref/prompt", "name": "greet"},
                                     {"name": "who", "value": "al"})
        assert completion.completion.values == ["alice", "alina"]
        client.set_logging_level("warning")
        assert received(client, "logging/setLevel")[0]["params"] == {"level": "warning"}
        client.ping()


def test_progress_extends_the_deadline_and_reaches_on_progress() -> None:
    seen: List[tuple] = []
    with connect() as client:
        started = time.monotonic()
        result = client.call_tool(
            "slow", {"seconds": 1.2, "progress_interval": 0.1}, timeout=0.5,
            on_progress=lambda p, total, message: seen.append((p, total, message)),
        )
        assert result.text == "slept 1.2"
        assert time.monotonic() - started >= 1.2
        assert len(seen) >= 5
        assert [p for p, _, _ in seen] == sorted(p for p, _, _ in seen)
        assert seen[0][2] == "step 1"


def test_progress_never_extends_past_max_total_timeout() -> None:
    """Progress every 0.1 s would keep a 0.4 s deadline alive for the whole 10 s call: the
    total cap ends it, at 1.5 s. The upper bound is tight enough that a cap twice as long
    (3 s) fails the test, and the error names the total bound, not the 0.4 s one."""
    with connect(max_total_timeout=1.5) as client:
        started = time.monotonic()
        with pytest.raises(RequestTimeout) as info:
            client.call_tool("slow", {"seconds": 10, "progress_interval": 0.1}, timeout=0.4)
        elapsed = time.monotonic() - started
        assert 1.4 <= elapsed < 2.3, elapsed
        assert "max_total_timeout=1.5 s" in str(info.value)
        assert client.call_tool("echo", {"text": "after"}).text == "after"


def test_timeout_sends_cancelled_and_client_stays_usable() -> None:
    with connect() as client:
        with pytest.raises(RequestTimeout) as info:
            client.call_tool("slow", {"seconds": 30}, timeout=0.3)
        assert isinstance(info.value, TimeoutError)
        request_id = info.value.request_id
        cancels = received(client, "notifications/cancelled")
        assert [c["params"]["requestId"] for c in cancels] == [request_id]
        assert cancels[0]["params"]["reason"]
        assert client.call_tool("echo", {"text": "still here"}).text == "still here"


def test_future_cancel_cancels_on_the_wire() -> None:
    with connect() as client:
        future = client.call_tool_future("slow", {"seconds": 30})
        assert not future.done()
        assert future.cancel()
        assert future.cancelled()
        cancels = received(client, "notifications/cancelled")
        assert len(cancels) == 1 and cancels[0]["params"]["reason"] == "cancelled by the client"
        raw = client.submit("tools/call", {"name": "echo", "arguments": {"text": "f"}})
        assert raw.result(10)["content"][0]["text"] == "f"


def test_a_submitted_future_settles_off_the_reader_thread() -> None:
    # A blocked request() is resolved on the reader thread; a future may have
    # done-callbacks (user code), so its response always goes through dispatch.
    gate = threading.Event()
    settled_on: List[str] = []

    def roots() -> List[Dict[str, str]]:
        assert gate.wait(10)  # the server answers only after the callback is added
        return []

    with connect(roots=roots) as client:
        future = client.submit("tools/call", {"name": "ask",
                                              "arguments": {"method": "roots/list"}})
        future.add_done_callback(
            lambda done: settled_on.append(threading.current_thread().name))
        gate.set()
        assert "result" in json.loads(future.result(10)["content"][0]["text"])
        assert len(settled_on) == 1 and settled_on[0].startswith("mcp-sync-dispatch-")
        assert client.call_tool("echo", {"text": "direct"}).text == "direct"


def test_submit_timeout_fails_the_future() -> None:
    with connect() as client:
        future = client.call_tool_future("slow", {"seconds": 30}, timeout=0.2)
        with pytest.raises(RequestTimeout):
            future.result(5)
        assert len(received(client, "notifications/cancelled")) == 1


def test_mcp_sync_timeout_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    # An in-process server: the 0.25 s default also bounds the handshake, which a server
    # process starting on a busy machine could miss.
    from mcp_sync.testing import FakeServer

    server = FakeServer("patient")
    release = threading.Event()

    @server.tool(description="Blocks until released (at most 10 s)")
    def wait() -> str:
        release.wait(10)
        return "released"

    monkeypatch.setenv("MCP_SYNC_TIMEOUT", "0.25")
    try:
        with mcp_sync.connect(mcp_sync.MemoryTransport(server)) as client:
            assert client.timeout == 0.25
            started = time.monotonic()
            with pytest.raises(RequestTimeout, match=r"after 0\.25 s"):
                client.call_tool("wait")
            assert time.monotonic() - started < 5
            release.set()
    finally:
        release.set()
    monkeypatch.setenv("MCP_SYNC_TIMEOUT", "0")
    assert mcp_sync.Client(StdioTransport(PY)).timeout is None


CTRL_C_SCRIPT = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, {root!r})
    import mcp_sync
    first = []
    def on_progress(progress, total, message):
        if not first:
            first.append(1)
            print("blocked", flush=True)
    with mcp_sync.connect({command!r}, timeout=30) as client:
        try:
            client.call_tool("slow", {{"seconds": 30, "progress_interval": 0.05}},
                             on_progress=on_progress)
        except KeyboardInterrupt:
            cancels = json.loads(client.call_tool("received",
                                 {{"method": "notifications/cancelled"}}).text)
            print("interrupted", json.dumps(cancels), flush=True)
            sys.exit(0)
    print("not interrupted", flush=True)
    sys.exit(1)
    """
)


def test_ctrl_c_cancels_on_the_wire_and_exits_cleanly() -> None:
    script = CTRL_C_SCRIPT.format(root=str(ROOT), command=fake_server_command())
    child = subprocess.Popen([PY, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             preexec_fn=default_ctrl_c)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == b"blocked"
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
    assert child.returncode == 0, err.decode()
    line = out.decode().strip()
    assert line.startswith("interrupted "), line
    cancels = json.loads(line.split(" ", 1)[1])
    assert len(cancels) == 1
    assert "KeyboardInterrupt" in cancels[0]["params"]["reason"]


def test_server_requests_with_and_without_handlers() -> None:
    def roots() -> List[Dict[str, str]]:
        return [{"uri": "file:///work", "name": "work"}]

    def sampling(params: Any) -> Dict[str, Any]:
        assert params.messages[0].content.text == "hi"
        return {"role": "assistant", "content": {"type": "text", "text": "sampled"},
                "model": "test-model"}

    def elicit(params: Any) -> Dict[str, Any]:
        raise ValueError("user went away")

    with connect(roots=roots, sampling_handler=sampling, elicitation_handler=elicit) as client:
        init = received(client, "initialize")[0]["params"]["capabilities"]
        assert set(init) == {"roots", "sampling", "elicitation"}
        answer = client.call_tool("ask", {"method": "roots/list"}).structured
        assert answer == {"result": {"roots": [{"uri": "file:///work", "name": "work"}]}}
        answer = client.call_tool("ask", {"method": "sampling/createMessage", "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
            "maxTokens": 10}}).structured
        assert answer["result"]["content"]["text"] == "sampled"
        answer = client.call_tool("ask", {"method": "elicitation/create", "params": {
            "message": "name?", "requestedSchema": {"type": "object", "properties": {}}}}
        ).structured
        # Only which handler failed: its exception's text stays in the client's log.
        assert answer["error"] == {"code": -32603,
                                   "message": "the client's elicitation handler failed"}
        answer = client.call_tool("ask", {"method": "ping"}).structured
        assert answer == {"result": {}}
    with connect() as client:
        assert "capabilities" in received(client, "initialize")[0]["params"]
        answer = client.call_tool("ask", {"method": "roots/list"}).structured
        assert answer["error"]["code"] == -32601


def test_malformed_lines_are_logged_and_skipped(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mcp_sync")
    with connect() as client:
        assert client.call_tool("malformed").text == "survived"
        assert client.call_tool("echo", {"text": "after"}).text == "after"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("not JSON" in w and "this is not json" in w for w in warnings)
    assert any("not JSON-RPC" in w and "just a string" in w for w in warnings)
    assert any("no" in w and "method or id" in w for w in warnings)


@pytest.mark.parametrize("line", [
    b'{"jsonrpc":"2.0","id":1,"result":{"text":"caf\xc3\xa9 \\ud83d\\ude00"}}\n',
    b'{"id":1,"result":{"lone":"\\ud800"}}\n',
    b'\xef\xbb\xbf{"id":2,"result":{}}\n',  # a UTF-8 byte order mark
    '{"id":3,"result":{}}\n'.encode("utf-16-le"),  # no BOM: told by its NUL bytes
    '{"id":4,"result":{}}\n'.encode("utf-32"),
    b'[{"id":5,"result":{}},{"id":6,"result":{}}]\n',
    b'  {"id":7,"result":{}}  \r\n',
    b'{"id":8,"result":"\xff\xfe not UTF-8"}\n',
    b'{"id":9,"result":',
    b" \t\r\n",
])
def test_a_line_decodes_as_json_loads_would(line: bytes) -> None:
    """The reader's decoding of a line (a fast path for the usual UTF-8 object) delivers
    what json.loads would, and skips what it refuses (pure logic: no child started)."""
    try:
        decoded: Any = json.loads(line)
    except ValueError:
        decoded = None
    expected = ([] if decoded is None else decoded if isinstance(decoded, list)
                else [decoded])
    delivered: List[Any] = []
    StdioTransport(PY, ["-c", "pass"])._deliver(line, delivered.append)
    assert delivered == expected


def test_banner_on_stdout_is_skipped(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mcp_sync")
    with connect("--banner") as client:
        assert client.call_tool("echo", {"text": "ok"}).text == "ok"
    assert any("Fake server starting up" in r.getMessage() for r in caplog.records)


def test_batched_notifications_are_unpacked() -> None:
    messages: List[str] = []
    with connect(logging_handler=lambda p: messages.append(p.data)) as client:
        assert client.call_tool("batch").text == "batched"
        client.ping()
    assert messages == ["batched 0", "batched 1"]


def test_ten_megabyte_result() -> None:
    with connect(timeout=60) as client:
        result = client.call_tool("big", {"size": 10 * 1024 * 1024})
        assert len(result.text) == 10 * 1024 * 1024
        assert client.call_tool("echo", {"text": "x" * 1_000_000}).text == "x" * 1_000_000


def test_oversized_message_is_skipped(caplog: pytest.LogCaptureFixture) -> None:
    """The response over the bound fails its call at once (its id starts the line); the
    line is skipped and the connection lives on."""
    caplog.set_level(logging.WARNING, logger="mcp_sync")
    transport = StdioTransport(PY, fake_server_command()[1:], max_message_size=100_000)
    with mcp_sync.Client(transport, timeout=10) as client:
        start = time.monotonic()
        with pytest.raises(mcp_sync.MessageTooLarge, match="max_message_size=100000"):
            client.call_tool("big", {"size": 200_000}, timeout=5.0)
        assert time.monotonic() - start < 2.0  # not at the deadline
        assert client.call_tool("echo", {"text": "fine"}).text == "fine"
    assert any("max_message_size" in r.getMessage() for r in caplog.records)


def test_server_crash_mid_request_fails_pending_fast_with_exit_code_and_stderr() -> None:
    client = connect()
    try:
        slow = client.call_tool_future("slow", {"seconds": 30}, timeout=30)
        started = time.monotonic()
        with pytest.raises(ConnectionClosed) as info:
            client.call_tool("crash", {"code": 3, "message": "fatal: disk on fire"})
        elapsed = time.monotonic() - started
        assert elapsed < 2.0
        error = info.value
        assert error.exit_code == 3
        assert "fatal: disk on fire" in error.stderr_tail
        assert "exit code 3" in str(error) and "disk on fire" in str(error)
        with pytest.raises(ConnectionClosed):
            slow.result(2)
        assert not client.connected
        started = time.monotonic()
        with pytest.raises(ConnectionClosed):
            client.call_tool("echo", {"text": "x"})
        assert time.monotonic() - started < 0.5
    finally:
        client.close()


def test_a_request_on_a_closed_or_unstarted_session_was_never_sent() -> None:
    session = RpcSession(StdioTransport(PY, fake_server_command()[1:]), default_timeout=10)
    with pytest.raises(ClientNotConnected):
        session.request("ping")
    session.start()
    try:
        assert session.request("ping") == {}
        with pytest.raises(ConnectionClosed) as crashed:
            session.request("tools/call", {"name": "crash", "arguments": {"code": 4}})
        assert crashed.value.exit_code == 4 and crashed.value.request_sent is not False
        assert session.wait_closed(10)
        for method in ("ping", "tools/call"):
            with pytest.raises(ConnectionClosed) as caught:
                session.request(method, {"name": "echo", "arguments": {"text": "x"}})
            # Refused before anything was written: safe to retry on a new connection.
            assert caught.value.request_sent is False and caught.value.exit_code == 4
            assert str(caught.value) == str(crashed.value)  # the close, not a failed write
            with pytest.raises(ConnectionClosed) as submitted:
                session.submit(method)
            assert submitted.value.request_sent is False
        assert len(session.table) == 0
    finally:
        session.close()


def test_server_exiting_at_start_is_a_clear_error() -> None:
    with pytest.raises(ConnectionClosed) as info:
        connect("--exit-at-start", "7")
    assert info.value.exit_code == 7
    assert "refusing to start" in str(info.value)


# A server that dies at once, saying why on stderr: the first write to it usually meets a
# broken pipe before any thread has seen the exit (a shell starts in a millisecond).
DIES_AT_START = ["sh", "-c", "echo 'missing API key' >&2; exit 2"]


@pytest.mark.parametrize("exit_seen_by", ["pidfd", "watcher thread"])
def test_a_server_dying_at_start_is_reported_with_exit_code_and_stderr_every_time(
        exit_seen_by: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Whichever thread meets the death first (the caller's write, the reader at EOF, the
    # thread watching for the exit), the error is the same, and complete, every time.
    if exit_seen_by == "watcher thread":  # the path of platforms without pidfd
        from mcp_sync.transports import stdio

        monkeypatch.setattr(stdio, "_exit_descriptor", lambda process: None)
    messages = set()
    for _ in range(20):
        with pytest.raises(ConnectionClosed) as info:
            mcp_sync.connect(DIES_AT_START, timeout=10.0)
        error = info.value
        assert error.exit_code == 2, str(error)
        assert error.stderr_tail == ["missing API key"], str(error)
        messages.add(str(error))
    assert messages == {"MCP server sh exited (exit code 2)\n"
                        "  last stderr lines:\n    missing API key"}


@pytest.mark.parametrize("exit_grace", [0.05, 0.6])
def test_a_write_to_a_server_that_closed_its_stdin_waits_exit_grace_once(
        exit_grace: float) -> None:
    # It lives on: the first failed write gives it exit_grace to exit, the next fail at once.
    code = ("import os, sys, time; os.close(0); "
            "print('{\"jsonrpc\": \"2.0\", \"method\": \"stdin/closed\"}', flush=True); "
            "time.sleep(30)")
    transport = StdioTransport(PY, ["-c", code], exit_grace=exit_grace, close_timeout=0.2)
    told = threading.Event()
    transport.start(lambda message: told.set(), lambda error: None, lambda *failed: None)
    try:
        assert told.wait(10)
        message = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        started = time.monotonic()
        with pytest.raises(ConnectionClosed, match=r"cannot write to python: .*Broken pipe"):
            transport.send(message)
        assert exit_grace * 0.9 <= time.monotonic() - started < exit_grace + 0.5
        started = time.monotonic()
        with pytest.raises(ConnectionClosed, match="cannot write"):
            transport.send(message)
        assert time.monotonic() - started < 0.05
    finally:
        transport.close()


def test_stderr_flood_does_not_block_and_keeps_the_tail() -> None:
    transport = StdioTransport(PY, fake_server_command()[1:])
    with mcp_sync.Client(transport, timeout=30) as client:
        assert client.call_tool("stderr_flood", {"lines": 200_000}).text == "wrote 200000"
        assert client.call_tool("echo", {"text": "ok"}).text == "ok"
        deadline = time.monotonic() + 5
        while list(transport.stderr_tail)[-1:] != ["last noise line"] and (
            time.monotonic() < deadline
        ):
            time.sleep(0.01)
        assert transport.stderr_tail[-1] == "last noise line"
        assert len(transport.stderr_tail) == 50


def test_many_threads_share_one_client() -> None:
    errors: List[BaseException] = []
    with connect(timeout=60) as client:

        def worker(n: int) -> None:
            try:
                for i in range(50):
                    text = f"{n}-{i}"
                    assert client.call_tool("echo", {"text": text}).text == text
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(32)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not any(t.is_alive() for t in threads)
        assert errors == []
        assert len(client._rpc.table) == 0  # type: ignore[union-attr]


def test_command_not_found_names_the_command() -> None:
    with pytest.raises(CommandNotFound) as info:
        mcp_sync.connect(["no-such-mcp-server-xyz", "--flag"])
    assert "no-such-mcp-server-xyz" in str(info.value)
    assert info.value.command == "no-such-mcp-server-xyz"


def test_child_environment_is_a_safe_subset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_API_TOKEN", "secret")
    with mcp_sync.connect(fake_server_command(), env={"EXTRA_VAR": "1"}) as client:
        names = json.loads(client.call_tool("environment").text)
        assert "MY_API_TOKEN" not in names
        assert "EXTRA_VAR" in names and "PATH" in names
    transport = StdioTransport(PY, fake_server_command()[1:], inherit_env=True)
    with mcp_sync.Client(transport) as client:
        assert "MY_API_TOKEN" in json.loads(client.call_tool("environment").text)


def test_connect_routes_every_stdio_option_to_the_transport(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setenv("MY_API_TOKEN", "secret")
    with connect(inherit_env=True, env={"EXTRA_VAR": "1"}, cwd=str(tmp_path),
                 close_timeout=0.7, max_message_size=1 << 20, stderr_lines=7,
                 max_write_backlog=1 << 21) as client:
        names = json.loads(client.call_tool("environment").text)
        assert "MY_API_TOKEN" in names and "EXTRA_VAR" in names
        transport = client.transport
        assert isinstance(transport, StdioTransport)
        assert (transport.inherit_env, transport.cwd, transport.close_timeout,
                transport.max_message_size, transport.stderr_tail.maxlen,
                transport.max_write_backlog) == (True, str(tmp_path), 0.7, 1 << 20, 7, 1 << 21)
    # An mcpServers entry takes them too; env= adds to the entry's own.
    command = fake_server_command()
    entry = {"command": command[0], "args": command[1:], "env": {"FROM_ENTRY": "1"}}
    with mcp_sync.connect(entry, inherit_env=True, env={"EXTRA_VAR": "1"},
                          timeout=10.0) as client:
        names = json.loads(client.call_tool("environment").text)
        assert {"MY_API_TOKEN", "FROM_ENTRY", "EXTRA_VAR"} <= set(names)
    # An option the target's transport does not take is an error, never dropped.
    with pytest.raises(ValueError, match="inherit_env apply to stdio servers"):
        mcp_sync.connect("http://127.0.0.1:9/mcp", inherit_env=True)
    with pytest.raises(ValueError, match="headers apply to URLs"):
        mcp_sync.connect(fake_server_command(), headers={"X-Key": "1"})
    with pytest.raises(ValueError, match="cannot apply to a transport built already"):
        mcp_sync.connect(StdioTransport(PY), max_message_size=10)
    # ... and headers add to a URL entry's own, as env does to a command entry's.
    built = make_transport({"url": "http://127.0.0.1:9/mcp", "headers": {"A": "1"}},
                           headers={"B": "2"})
    assert built.headers == {"A": "1", "B": "2"}  # type: ignore[attr-defined]


@pytest.mark.parametrize("given_to", ["connect", "Client", "StdioTransport"])
def test_close_timeout_bounds_each_step_of_stopping_a_stubborn_server(given_to: str) -> None:
    # The server ignores stdin's end and SIGTERM: close() waits close_timeout after each,
    # then SIGKILLs it. With the 2 s default that is over 4 s.
    command = fake_server_command("--stubborn")
    if given_to == "connect":
        client = mcp_sync.connect(command, timeout=10.0, close_timeout=0.3)
    elif given_to == "Client":
        client = mcp_sync.Client(StdioTransport(command[0], command[1:]), timeout=10.0,
                                 close_timeout=0.3).connect()
    else:
        client = mcp_sync.Client(StdioTransport(command[0], command[1:], close_timeout=0.3),
                                 timeout=10.0).connect()
    assert client.close_timeout == 0.3 and client.transport.close_timeout == 0.3
    started = time.monotonic()
    client.close()
    elapsed = time.monotonic() - started
    assert client.transport.returncode == -signal.SIGKILL  # type: ignore[attr-defined]
    assert elapsed < 1.8, f"close() took {elapsed:.1f} s with close_timeout=0.3"


def orphan_pid(error: ConnectionClosed) -> int:
    found = re.search(r"orphan pid (\d+)", "\n".join(error.stderr_tail))
    assert found, error.stderr_tail
    return int(found.group(1))


@pytest.mark.parametrize("own_session", [False, True])
def test_a_server_exiting_while_a_process_it_started_holds_stdout_fails_calls_at_once(
    own_session: bool,
) -> None:
    """The server starts a process that inherits its stdout and stderr, then exits: stdout
    never reaches EOF, yet pending calls fail at once with the exit code and the stderr
    tail, and close() does not wait on the pipe. An orphan left in the server's process
    group is stopped by close(); one in a session of its own is not ours to find."""
    client = connect(close_timeout=0.5)
    transport = client.transport
    assert isinstance(transport, StdioTransport)
    orphan: Optional[int] = None
    try:
        pending = client.call_tool_future("slow", {"seconds": 30})
        started = time.monotonic()
        with pytest.raises(ConnectionClosed) as info:
            client.call_tool("orphan", {"code": 5, "own_session": own_session})
        assert time.monotonic() - started < 1.5
        orphan = orphan_pid(info.value)
        assert info.value.exit_code == 5 and "exit code 5" in str(info.value)
        with pytest.raises(ConnectionClosed):
            pending.result(timeout=1.0)
        assert transport.returncode == 5
        assert running(orphan), "the orphan should still hold the pipe"
        started = time.monotonic()
        client.close()
        # Joining the pipe's threads (0.5 s), then, for an orphan in the group, SIGTERM
        # and its end; never waiting on a pipe that stays open.
        assert time.monotonic() - started < 2.0
        if not own_session:
            # Its pipes closed as it died; /proc may show it a moment longer.
            assert wait_gone([orphan], timeout=2.0) == [], "close() left the orphan running"
    finally:
        client.close()
        if orphan is not None and running(orphan):
            os.kill(orphan, signal.SIGKILL)  # its end closes the pipes: the threads end


def test_a_tool_call_before_the_first_connect_says_so_and_starts_nothing() -> None:
    client = mcp_sync.Client(StdioTransport(PY, fake_server_command()[1:]))
    with pytest.raises(ClientNotConnected, match="has not connected yet"):
        client.call_tool("echo", {"text": "x"})
    assert client.transport.pid is None  # type: ignore[attr-defined]


def test_close_is_idempotent_and_a_closed_client_reconnects() -> None:
    client = connect()
    first_pid = client.transport.pid  # type: ignore[attr-defined]
    client.close()
    client.close()
    with pytest.raises(ClientNotConnected):
        client.call_tool("echo", {"text": "x"})
    client.connect()
    try:
        assert client.transport.pid != first_pid  # type: ignore[attr-defined]
        assert client.call_tool("echo", {"text": "again"}).text == "again"
    finally:
        client.close()


def test_a_closed_client_serves_no_cached_list() -> None:
    client = connect()
    try:
        # The fake server promises list_changed notifications, so every list is cached.
        lists = (client.list_tools, client.list_resources, client.list_resource_templates,
                 client.list_prompts)
        for list_ in lists:
            list_()
            list_()
        assert all(len(received(client, method)) == 1 for method in (
            "tools/list", "resources/list", "resources/templates/list", "prompts/list"))
    finally:
        client.close()
    for list_ in lists:
        with pytest.raises(ClientNotConnected, match="closed"):
            list_()


def test_a_client_whose_server_died_serves_no_cached_list() -> None:
    with connect() as client:
        lists = (client.list_tools, client.list_resources, client.list_resource_templates,
                 client.list_prompts)
        for list_ in lists:
            list_()
        with pytest.raises(ConnectionClosed):
            client.call_tool("crash", {"code": 3})
        for list_ in lists:
            with pytest.raises(ConnectionClosed, match="exit code 3"):
                list_()


def test_unconnected_client_raises() -> None:
    client = mcp_sync.Client(StdioTransport(PY, fake_server_command()[1:]))
    with pytest.raises(ClientNotConnected):
        client.list_tools()


def test_older_protocol_version_is_accepted_unknown_rejected() -> None:
    with connect("--protocol-version", "2024-11-05") as client:
        assert client.protocol_version == "2024-11-05"
        assert client.call_tool("echo", {"text": "old"}).text == "old"
    with pytest.raises(UnsupportedProtocolVersion, match="1999-01-01"):
        connect("--protocol-version", "1999-01-01")


def test_pinned_protocol_version_is_offered() -> None:
    with connect(protocol_version="2025-03-26") as client:
        assert client.protocol_version == "2025-03-26"
        offered = received(client, "initialize")[0]["params"]["protocolVersion"]
        assert offered == "2025-03-26"
    with pytest.raises(ValueError):
        mcp_sync.Client(StdioTransport(PY), protocol_version="1.0")


def test_server_log_messages_go_to_python_logging(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sync.server")
    with connect(name="logsrv") as client:
        client.call_tool("log", {"level": "error", "data": "disk almost full"})
        client.ping()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not any(
            "disk almost full" in r.getMessage() for r in caplog.records
        ):
            time.sleep(0.01)
    record = next(r for r in caplog.records if r.getMessage() == "disk almost full")
    assert record.name == "mcp_sync.server.logsrv.tool"
    assert record.levelno == logging.ERROR


class _Records(logging.Handler):
    """Keeps the records it handles; ``done`` is set once ``count`` have arrived."""

    def __init__(self, count: int) -> None:
        super().__init__(logging.DEBUG)
        self.records: List[logging.LogRecord] = []
        self.count = count
        self.done = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        if len(self.records) >= self.count:
            self.done.set()


def test_every_mcp_log_level_reaches_python_logging_by_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sync.server.levels")
    levels = {"notice": ("NOTICE", 25), "critical": ("CRITICAL", logging.CRITICAL),
              "alert": ("ALERT", 55), "emergency": ("EMERGENCY", 60)}
    handler = _Records(len(levels))
    logger = logging.getLogger("mcp_sync.server.levels")
    logger.addHandler(handler)
    try:
        with connect(name="levels") as client:
            for level in levels:
                client.call_tool("log", {"level": level, "data": f"a {level} message"})
            assert handler.done.wait(5.0)
    finally:
        logger.removeHandler(handler)
    formatter = logging.Formatter("%(levelname)s %(message)s")
    seen = {r.getMessage().split()[1]: (r.levelname, r.levelno) for r in handler.records}
    assert seen == levels
    assert formatter.format(handler.records[0]) == "NOTICE a notice message"
    assert all(levelno >= logging.CRITICAL for name, (_, levelno) in seen.items()
               if name != "notice")


def test_max_total_timeout_stopping_a_call_says_so_and_gives_that_bound() -> None:
    # The server reports progress every 0.1 s, so the 0.5 s timeout keeps moving out
    # until max_total_timeout (1 s) stops the call.
    with connect(max_total_timeout=1.0) as client:
        started = time.monotonic()
        with pytest.raises(RequestTimeout) as info:
            client.call_tool("slow", {"seconds": 30, "progress_interval": 0.1}, timeout=0.5)
        assert 0.9 < time.monotonic() - started < 5.0
        assert (info.value.timeout, info.value.total) == (1.0, True)
        assert "max_total_timeout=1.0 s" in str(info.value)
        assert "0.5" not in str(info.value)


def test_list_changed_drops_the_cache_and_reaches_notification_handler() -> None:
    seen: List[str] = []
    got = threading.Event()

    def on_notification(method: str, params: Optional[Dict[str, Any]]) -> None:
        seen.append(method)
        if method == "notifications/tools/list_changed":
            got.set()

    with connect(notification_handler=on_notification) as client:
        client.list_tools()
        client.list_tools()
        assert len(received(client, "tools/list")) == 1  # cached: listChanged declared
        client.call_tool("notify", {"method": "notifications/tools/list_changed"})
        assert got.wait(5)
        client.ping()
        client.list_tools()
        assert len(received(client, "tools/list")) == 2
    assert "notifications/tools/list_changed" in seen


def test_capability_errors() -> None:
    with connect("--no-resources") as client:
        with pytest.raises(CapabilityError, match="resources"):
            client.subscribe_resource("test://hello")
        assert client.list_resources() == []  # a listing of what is not offered is empty
    with connect() as client:
        client.subscribe_resource("test://hello")
        client.unsubscribe_resource("test://hello")
        assert len(received(client, "resources/subscribe")) == 1


def test_is_error_result_is_a_result() -> None:
    with connect() as client:
        result = client.call_tool("fail", {"message": "nope"})
        assert result.is_error and result.text == "nope"
        with pytest.raises(ServerError) as info:
            client.call_tool("no_such_tool")
        assert info.value.code == -32602


def test_cancelled_request_raises_request_cancelled() -> None:
    with connect() as client:
        future = client.submit("tools/call", {"name": "slow", "arguments": {"seconds": 30}})
        client._rpc._outbound.cancel(future.request_id, "test")  # type: ignore[union-attr,attr-defined]
        with pytest.raises(RequestCancelled):
            future.result(5)


def test_use_after_fork_raises_in_the_child_and_parent_keeps_working() -> None:
    with connect() as client:
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: report what happened through the pipe, never return
            code = 1
            try:
                client.call_tool("echo", {"text": "child"})
                os.write(write_end, b"no error")
            except ForkedClientError as exc:
                os.write(write_end, f"ForkedClientError: {exc}".encode())
                code = 0
            except BaseException as exc:  # noqa: BLE001
                os.write(write_end, repr(exc).encode())
            finally:
                os._exit(code)
        os.close(write_end)
        report = os.read(read_end, 4096).decode()
        os.close(read_end)
        _, status = os.waitpid(pid, 0)
        assert report.startswith("ForkedClientError"), report
        assert os.WEXITSTATUS(status) == 0
        assert client.call_tool("echo", {"text": "parent"}).text == "parent"


def test_children_are_killed_at_interpreter_exit() -> None:
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        import mcp_sync
        client = mcp_sync.connect({fake_server_command()!r})
        print(client.transport.pid, flush=True)
        # no close(): the atexit hook must stop the server
        """
    )
    out = subprocess.run([PY, "-c", script], capture_output=True, timeout=30, check=True)
    server_pid = int(out.stdout.strip())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(server_pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        os.kill(server_pid, signal.SIGKILL)
        pytest.fail("the server outlived the client's interpreter")


def test_close_escalates_to_sigterm_for_a_server_that_ignores_stdin_eof() -> None:
    script = "import signal, sys, time\nsys.stdin.read()\nwhile True: time.sleep(1)\n"
    transport = StdioTransport(PY, ["-c", script], close_timeout=0.3)
    closed = threading.Event()
    transport.start(lambda message: None, lambda error: closed.set(),
                    lambda request_id, error: None)
    started = time.monotonic()
    transport.close()
    assert closed.is_set()
    assert time.monotonic() - started < 3.0
    assert transport.returncode == -signal.SIGTERM


def test_close_escalates_to_sigkill_when_sigterm_is_ignored() -> None:
    script = (
        "import signal, sys, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "sys.stdin.read()\nprint('{}', flush=True)\nwhile True: time.sleep(1)\n"
    )
    transport = StdioTransport(PY, ["-c", script], close_timeout=0.3)
    transport.start(lambda message: None, lambda error: None, lambda request_id, error: None)
    transport.close()
    assert transport.returncode == -signal.SIGKILL


def test_import_is_light() -> None:
    code = (
        "import sys, mcp_sync\n"
        "print(sorted(m for m in ('requests', 'pydantic', 'mcp_sync.types', 'mcp_sync.toolbox')\n"
        "             if m in sys.modules))"
    )
    out = python_stdout(code)
    assert out.strip() == "[]"


def test_stdio_connect_never_imports_requests() -> None:
    code = (
        "import sys, mcp_sync\n"
        f"with mcp_sync.connect({fake_server_command()!r}) as c:\n"
        "    c.list_tools(); c.call_tool('echo', {'text': 'x'})\n"
        "print('requests' in sys.modules)"
    )
    out = python_stdout(code)
    assert out.strip() == "False"


def test_library_writes_nothing_to_stdout() -> None:
    code = (
        "import logging, mcp_sync\n"
        f"with mcp_sync.connect({fake_server_command('--banner')!r}) as c:\n"
        "    c.call_tool('malformed'); c.call_tool('log', {'level': 'error', 'data': 'x'})\n"
    )
    out = python_stdout(code)
    assert out == ""


def test_a_transport_closed_before_it_started_still_stops_its_child_later() -> None:
    transport = StdioTransport(PY, fake_server_command()[1:], close_timeout=0.5)
    transport.close()
    closed = threading.Event()
    transport.start(lambda message: None, lambda error: closed.set(),
                    lambda request_id, error: None)
    assert transport.returncode is None
    transport.close()
    assert closed.is_set()
    assert transport.returncode is not None
