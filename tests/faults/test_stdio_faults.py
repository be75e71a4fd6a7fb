"""Fault injection over stdio, against ``tests/servers/fault_stdio.py`` (a real process).

Each case: the specific error within a bound (or the right result), then the client is
usable or reports itself closed; the autouse fixture checks that no ``mcp-sync*`` thread
and no child process outlives the case.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import threading
import time
from concurrent.futures import CancelledError
from typing import Any, Dict, List

import pytest

import mcp_sync
from mcp_sync import (
    ConnectionClosed,
    MessageTooLarge,
    ProtocolError,
    RequestTimeout,
    TransportError,
)
from mcp_sync._rpc.session import MAX_INBOX

from .helpers import (
    assert_reports_closed,
    assert_usable,
    expect,
    fault_client,
    record,
    timed,
)
from .workloads import PY, ROOT

WAIT = 10.0  # the bound for what a case waits on; nothing should come near it
MIB = 1024 * 1024


def stats(client: mcp_sync.Client) -> Dict[str, Any]:
    result: Dict[str, Any] = client.call_tool("stats", timeout=WAIT).structured
    return result


# -- the process dies or goes deaf --------------------------------------------------------


def test_sigkill_mid_request_fails_every_pending_request_at_once() -> None:
    client = fault_client()
    try:
        pending = client.call_tool_future("hang", timeout=60)
        pid = client.transport.pid  # type: ignore[attr-defined]
        assert pid is not None
        killer = threading.Timer(0.2, os.kill, args=(pid, signal.SIGKILL))
        killer.start()
        try:
            with expect(ConnectionClosed, 2.0, fault="stdio: SIGKILL mid-request") as outcome:
                client.call_tool("hang", timeout=60)
        finally:
            killer.join(WAIT)
        assert outcome.error.exit_code == -signal.SIGKILL  # type: ignore[attr-defined]
        assert "exited" in str(outcome.error)
        with pytest.raises(ConnectionClosed):
            pending.result(1.0)  # failed already, not at its 60 s deadline
        assert_reports_closed(client)
        client.connect()  # a closed client starts a new server
        assert_usable(client)
    finally:
        client.close()


def test_exiting_at_start_is_a_connection_error_with_exit_code_and_stderr() -> None:
    with expect(ConnectionClosed, 5.0, fault="stdio: exits at start") as outcome:
        fault_client("--exit-at-start", "7")
    assert outcome.error.exit_code == 7  # type: ignore[attr-defined]
    assert "refusing to start" in str(outcome.error)


def test_exiting_with_status_0_mid_request() -> None:
    with fault_client() as client:
        with expect(ConnectionClosed, 2.0, fault="stdio: exits (status 0) mid-request") as out:
            client.call_tool("exit", {"code": 0})
        assert out.error.exit_code == 0  # type: ignore[attr-defined]
        assert_reports_closed(client)


def test_closing_stdout_but_staying_alive() -> None:
    client = fault_client()
    try:
        transport = client.transport
        with expect(ConnectionClosed, 2.0, fault="stdio: closes stdout, stays alive",
                    match="closed its stdout") as outcome:
            client.call_tool("close_stdout")
        assert outcome.error.exit_code is None  # type: ignore[attr-defined]
        assert transport.returncode is None  # type: ignore[attr-defined]  # still running
        assert_reports_closed(client)
    finally:
        start = time.monotonic()
        client.close()  # stdin EOF ends it: it still reads stdin
        assert time.monotonic() - start < 3.0


def test_half_a_line_then_a_stall_times_out_then_the_torn_line_is_skipped(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mcp_sync")
    with fault_client() as client:
        with expect(RequestTimeout, 2.5, fault="stdio: half a line, then a stall"):
            client.call_tool("half_line", timeout=1.0)
        client.notify("fault/continue")  # the server ends the torn line, then goes on
        assert_usable(client)
    assert any("not JSON" in r.getMessage() for r in caplog.records)


def test_half_a_line_then_silence_forever_close_is_bounded() -> None:
    client = fault_client()
    try:
        with expect(RequestTimeout, 2.5, fault="stdio: half a line, then silence forever"):
            client.call_tool("half_line", timeout=1.0)
    finally:
        start = time.monotonic()
        client.close()
        assert time.monotonic() - start < 3.0


# -- oversized frames: bounded memory ------------------------------------------------------

MEMORY_PROBE = """
import json, resource, sys
sys.path.insert(0, sys.argv[1])
from tests.faults.helpers import fault_client
limit, size = int(sys.argv[2]), int(sys.argv[3])
client = fault_client(transport_kwargs={"max_message_size": limit} if limit else {},
                      timeout=60)
client.call_tool("echo", {"text": "warm up"})
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
text = client.call_tool("huge_line", {"size": size, "newline": True}, timeout=60).text
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
after = client.call_tool("echo", {"text": "after"}).text
client.close()
print(json.dumps({"growth_kib": peak - base, "text": text, "after": after}))
"""


@pytest.mark.parametrize("limit, bound_mib", [(0, 160), (1 * MIB, 16)],
                         ids=["default-64MiB", "1MiB"])
def test_100_mb_without_a_newline_is_skipped_in_bounded_memory(limit: int,
                                                                bound_mib: int) -> None:
    """In a fresh process, so that its peak RSS is this case's alone: the peak grows by
    about twice the limit (the line is read up to the limit, then skipped in 1 MiB reads),
    not by the 100 MB the server sent; the call's answer after the line still arrives."""
    size = 100 * 1000 * 1000
    start = time.monotonic()
    probe = subprocess.run([PY, "-c", MEMORY_PROBE, str(ROOT), str(limit), str(size)],
                           capture_output=True, text=True, timeout=120, cwd=str(ROOT))
    elapsed = time.monotonic() - start
    assert probe.returncode == 0, probe.stderr[-2000:]
    report = json.loads(probe.stdout.strip().splitlines()[-1])
    assert report["text"] == f"after {size} bytes" and report["after"] == "after"
    assert report["growth_kib"] < bound_mib * 1024, report
    record(f"stdio: 100 MB without a newline (max_message_size "
           f"{'64 MiB default' if not limit else '1 MiB'})",
           f"skipped with a warning; peak RSS +{report['growth_kib'] // 1024} MiB; "
           f"the call still answered", elapsed, 120)


def test_an_oversized_response_fails_its_call_at_once() -> None:
    """Its id is read from the start of the line: before, the line was skipped like any
    malformed frame and the call waited for its deadline."""
    with fault_client(transport_kwargs={"max_message_size": MIB}) as client:
        other = client.call_tool_future("hang", timeout=30)
        with expect(MessageTooLarge, 2.0, fault="stdio: a 20 MB response (max_message_size "
                    "1 MiB)", match="longer than max_message_size=1048576") as outcome:
            client.call_tool("huge_result", {"size": 20 * 1000 * 1000}, timeout=30)
        error = outcome.error
        assert isinstance(error, MessageTooLarge) and error.limit == MIB
        assert error.request_id == other.request_id + 1  # type: ignore[attr-defined]
        assert not other.done()  # only the call it answered
        assert_usable(client)  # the rest of the line was skipped: the next one is read


def test_an_endless_line_times_out_and_close_is_bounded() -> None:
    client = fault_client(transport_kwargs={"max_message_size": MIB})
    try:
        with expect(RequestTimeout, 2.5, fault="stdio: 20 MB without a newline, then silence"):
            client.call_tool("huge_line", {"size": 20 * 1000 * 1000}, timeout=1.0)
        # The reader is still inside the endless line: every answer is part of it.
        with expect(RequestTimeout, 2.5):
            client.call_tool("echo", {"text": "lost in the line"}, timeout=0.5)
    finally:
        start = time.monotonic()
        client.close()
        assert time.monotonic() - start < 3.0


def test_a_line_nested_past_the_parser_limit_is_skipped(caplog: pytest.LogCaptureFixture) -> None:
    """Before the fix its RecursionError (not a ValueError) killed the reader: the whole
    connection was lost to one malformed line."""
    caplog.set_level(logging.WARNING, logger="mcp_sync")
    with fault_client() as client, timed(5.0, fault="stdio: a line nested 100,000 deep",
                                         observed="skipped with a warning; the call answered"):
        assert client.call_tool("deep", {"depth": 100_000}).text == "after a 100000-deep array"
        assert client.connected
        assert_usable(client)
    assert any("maximum recursion depth" in r.getMessage() for r in caplog.records)


# -- noise and nonsense on stdout ----------------------------------------------------------


def test_banners_and_log_lines_on_stdout_are_skipped(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mcp_sync")
    with timed(5.0, fault="stdio: banners and log lines on stdout",
               observed="skipped with a warning each; calls answered"), \
            fault_client("--banner", "5") as client:
        assert client.call_tool("banners", {"count": 30}).text == "after banners"
        assert_usable(client)
    messages = [r.getMessage() for r in caplog.records]
    assert any("fault server banner 0" in m for m in messages)
    assert any("not JSON-RPC" in m and "structured log" in m for m in messages)


def test_null_lines_on_stdout_are_skipped_and_take_no_room_for_good(
        caplog: pytest.LogCaptureFixture) -> None:
    """``null`` is JSON, but no JSON-RPC message: each line is skipped with a warning.
    Before the fix the dispatch thread took a null message for "nothing came" and never
    counted it routed: each kept a place in the inbox for good, so that after
    ``MAX_INBOX`` of them the reader waited for room forever and every call timed out."""
    caplog.set_level(logging.WARNING, logger="mcp_sync")
    count = MAX_INBOX + 44
    with timed(10.0, fault=f"stdio: {count} lines of null on stdout",
               observed="skipped with a warning each; calls answered"), \
            fault_client() as client:
        assert client.call_tool("nulls", {"count": count}, timeout=5).text == "after nulls"
        assert_usable(client)
    skipped = [r for r in caplog.records if "not JSON-RPC: None" in r.getMessage()]
    assert len(skipped) == count


@pytest.mark.parametrize("mode", ["offset", "string", "null", "bool", "float", "object",
                                  "list"])
def test_a_response_with_the_wrong_id_is_ignored(mode: str) -> None:
    """The call times out; a response with an id that only looks like another pending
    request's (``"7"``, ``7.0``) resolves nothing; an unhashable id (an object, a list)
    does not crash the reader (it did: the fast path hashed it)."""
    with fault_client() as client:
        other = client.call_tool_future("hang", timeout=30)
        assert other.request_id is not None  # type: ignore[attr-defined]
        with expect(RequestTimeout, 2.0, fault=f"stdio: response with a wrong id ({mode})"):
            client.call_tool("wrong_id", {"mode": mode,
                                          "target": other.request_id},  # type: ignore[attr-defined]
                             timeout=0.7)
        assert not other.done()
        assert_usable(client)
        assert client.connected


@pytest.mark.parametrize("mode", ["string", "no_code", "both"])
def test_a_malformed_response_fails_its_call_at_once(mode: str) -> None:
    """Before, it was skipped like any malformed frame: the call waited for its deadline."""
    with fault_client() as client:
        with expect(ProtocolError, 1.0, fault=f"stdio: malformed response ({mode})",
                    match="malformed response to tools/call"):
            client.call_tool("malformed", {"mode": mode}, timeout=5.0)
        assert_usable(client)


def test_duplicate_responses_resolve_once() -> None:
    errors: List[BaseException] = []
    with fault_client() as client, timed(10.0, fault="stdio: every response sent 3 times",
                                         observed="first one delivered, the rest ignored"):

        def worker() -> None:
            try:
                for _ in range(20):
                    assert client.call_tool("duplicate", {"times": 3}).text == "first"
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        threads = [threading.Thread(target=worker, name=f"dup-{n}") for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT)
        assert not errors and not any(t.is_alive() for t in threads)
        assert_usable(client)


def test_a_response_to_a_cancelled_request_is_ignored() -> None:
    with fault_client() as client:
        future = client.call_tool_future("ignore_cancel", timeout=30)
        assert future.cancel()
        with expect(CancelledError, 1.0, fault="stdio: answers a cancelled request anyway"):
            future.result(WAIT)
        assert stats(client)["cancelled"] == [future.request_id]  # type: ignore[attr-defined]
        client.notify("fault/continue")  # now the server answers it
        with expect(RequestTimeout, 2.0, fault="stdio: answers a timed-out request late"):
            client.call_tool("ignore_cancel", timeout=0.5)
        client.notify("fault/continue")
        assert_usable(client)
        assert len(client._rpc.table) == 0  # type: ignore[union-attr]


# -- floods --------------------------------------------------------------------------------


def test_a_flood_of_10000_notifications_is_delivered_in_order() -> None:
    received: List[Any] = []
    all_received = threading.Event()

    def on_log(params: Any) -> None:
        received.append(params.data)
        if len(received) == 10_000:
            all_received.set()

    with fault_client(logging_handler=on_log) as client:
        with timed(20.0, fault="stdio: 10,000 notifications in one burst",
                   observed="all delivered, in order; the call answered"):
            assert client.call_tool("flood", {"count": 10_000}).text == "flooded 10000"
            assert_usable(client)  # the callback thread still runs behind: that is fine
        assert all_received.wait(WAIT), f"{len(received)} of 10,000 notifications delivered"
    assert received == [f"flood {i}" for i in range(10_000)]


def test_a_storm_of_2000_server_requests_is_answered() -> None:
    with fault_client() as client, timed(25.0, fault="stdio: 2,000 server requests at once",
                                         observed="all 2,000 answered; calls still work"):
        result = client.call_tool("storm", {"count": 2000}, timeout=30)
        assert result.structured == {"answered": 2000, "sent": 2000}
        handlers = [t for t in threading.enumerate() if t.name.startswith("mcp-sync-handler-")]
        assert len(handlers) <= 4  # a bounded pool, not a thread per request
        assert_usable(client)


# -- a server that does not read its stdin -------------------------------------------------


def test_a_full_stdin_pipe_never_blocks_callers_past_their_deadline() -> None:
    """Before the fix the writer held the write lock inside a blocking write() for as long
    as the server did not read: every caller (deadline or not) and close() hung."""
    client = fault_client(transport_kwargs={"max_write_backlog": 4 * MIB})
    try:
        assert client.call_tool("stop_reading").text == "not reading"
        outcomes: Dict[int, Any] = {}

        def big_call(number: int) -> None:
            start = time.monotonic()
            try:
                client.call_tool("echo", {"text": str(number) * MIB}, timeout=1.0)
                outcomes[number] = ("answered", time.monotonic() - start)
            except Exception as exc:  # noqa: BLE001
                outcomes[number] = (type(exc).__name__, time.monotonic() - start)

        start = time.monotonic()
        threads = [threading.Thread(target=big_call, args=(n,), name=f"big-{n}")
                   for n in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT)
        assert not any(t.is_alive() for t in threads)
        assert all(kind == "RequestTimeout" and elapsed < 2.5
                   for kind, elapsed in outcomes.values()), outcomes
        record("stdio: server stops reading stdin (pipe full), 3 x 1 MiB requests",
               "RequestTimeout for each at its 1 s deadline", time.monotonic() - start, 2.5)
        # The backlog is bounded: once 4 MiB wait, a send fails at once, nothing written.
        with expect(TransportError, 1.0, fault="stdio: write backlog full",
                    match="not reading its stdin") as outcome:
            client.call_tool("echo", {"text": "x" * (2 * MIB)}, timeout=5.0)
        assert outcome.error.request_sent is False  # type: ignore[attr-defined]
    finally:
        start = time.monotonic()
        client.close()  # before the fix: hung until the server read again
        elapsed = time.monotonic() - start
        assert elapsed < 3.0, elapsed
        record("stdio: close() while the server does not read stdin",
               "closed (stdin EOF unread -> SIGTERM)", elapsed, 3.0)


def test_a_slow_stdin_reader_gets_every_message_in_order() -> None:
    with fault_client() as client:
        assert client.call_tool("stop_reading").text == "not reading"
        pending = [client.call_tool_future("echo", {"text": f"{n}:" + "y" * MIB}, timeout=30)
                   for n in range(3)]
        pid = client.transport.pid  # type: ignore[attr-defined]
        os.kill(pid, signal.SIGUSR1)  # the server reads again
        with timed(10.0, fault="stdio: server reads stdin again after a pause",
                   observed="the backlog written in order; every call answered"):
            texts = [future.result(WAIT).text for future in pending]
        assert [text.split(":")[0] for text in texts] == ["0", "1", "2"]
        assert all(len(text) == MIB + 2 for text in texts)
        assert_usable(client)


def test_a_server_closing_its_stdin_fails_the_queued_requests() -> None:
    client = fault_client()
    try:
        assert client.call_tool("stop_reading", {"then": "close_stdin"}).text == "not reading"
        queued = client.call_tool_future("echo", {"text": "z" * (2 * MIB)}, timeout=30)
        os.kill(client.transport.pid, signal.SIGUSR1)  # type: ignore[attr-defined]
        with expect(ConnectionClosed, 3.0, fault="stdio: server closes its stdin mid-write",
                    match="cannot write"):
            queued.result(WAIT)
        with expect(ConnectionClosed, 0.5, match="cannot write"):
            client.call_tool("echo", {"text": "after"})
    finally:
        client.close()
