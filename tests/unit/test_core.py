"""The sans-I/O core fed messages directly: no threads, no I/O."""

from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import Future
from typing import List, Optional

import pytest

from mcp_sync import ProtocolError, RequestTimeout, ServerError
from mcp_sync._protocol.messages import Kind, classify
from mcp_sync._rpc.core import RequestTable, Waiter
from mcp_sync._rpc.session import future_wait_bound
from mcp_sync.exceptions import ConnectionClosed, MethodNotFound
from mcp_sync.transports._limits import ID_PREFIX, response_id_in


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ({"jsonrpc": "2.0", "id": 1, "result": {}}, Kind.RESPONSE),
        ({"jsonrpc": "2.0", "id": "a", "result": None}, Kind.RESPONSE),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "x"}}, Kind.ERROR),
        ({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "x"}}, Kind.ERROR),
        ({"jsonrpc": "2.0", "id": 3, "method": "ping"}, Kind.REQUEST),
        ({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}, Kind.NOTIFICATION),
        ({"id": 1, "result": {}}, Kind.RESPONSE),  # a missing "jsonrpc" is tolerated
        ({"jsonrpc": "2.0", "id": True, "result": {}}, Kind.INVALID),  # bool is no id
        ({"jsonrpc": "2.0", "id": 1.5, "method": "x"}, Kind.INVALID),
        ({"jsonrpc": "2.0", "method": 5}, Kind.INVALID),
        ({"jsonrpc": "2.0", "method": "x", "params": "str"}, Kind.INVALID),
        ({"jsonrpc": "2.0"}, Kind.INVALID),
        # Responses to a usable id that break the rules: their request fails at once.
        ({"jsonrpc": "2.0", "id": 1, "error": "boom"}, Kind.MALFORMED_RESPONSE),
        ({"jsonrpc": "2.0", "id": 1, "error": None}, Kind.MALFORMED_RESPONSE),
        ({"jsonrpc": "2.0", "id": 1, "error": {"message": "no code"}}, Kind.MALFORMED_RESPONSE),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": "1"}}, Kind.MALFORMED_RESPONSE),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": True}}, Kind.MALFORMED_RESPONSE),
        ({"jsonrpc": "2.0", "id": "a", "result": {}, "error": {"code": 1}},
         Kind.MALFORMED_RESPONSE),
        ({"jsonrpc": "2.0", "id": 1, "result": {}, "error": None}, Kind.RESPONSE),  # tolerated
        # ...but without a usable id there is no request to fail.
        ({"jsonrpc": "2.0", "id": None, "error": "boom"}, Kind.INVALID),
        ({"jsonrpc": "2.0", "id": 1.0, "error": "boom"}, Kind.INVALID),
        ({"jsonrpc": "2.0", "id": None, "result": {}}, Kind.INVALID),
        ("just a string", Kind.INVALID),
        ([1, 2], Kind.INVALID),
        (None, Kind.INVALID),
    ],
)
def test_classify(message: object, kind: Kind) -> None:
    assert classify(message) is kind


def open_request(table: RequestTable, method: str = "tools/call", **kwargs: object):
    future: Future[object] = Future()
    kwargs.setdefault("now", 0.0)
    kwargs.setdefault("timeout", 10.0)
    return table.open(method, future, **kwargs), future  # type: ignore[arg-type]


def test_ids_are_unique_and_increasing() -> None:
    table = RequestTable()
    ids = [open_request(table)[0].id for _ in range(100)]
    assert ids == sorted(set(ids))
    assert len(table) == 100


def test_response_resolves_its_future_once_and_late_ones_are_ignored() -> None:
    table = RequestTable()
    entry, future = open_request(table)
    _, other_future = open_request(table)
    assert table.resolve({"id": entry.id, "result": {"ok": 1}}) is entry
    assert future.result(0) == {"ok": 1}
    assert not other_future.done()
    # The same id again (a duplicate or late response) finds nothing.
    assert table.resolve({"id": entry.id, "result": {"ok": 2}}) is None
    assert future.result(0) == {"ok": 1}
    assert table.resolve({"id": 12345, "result": {}}) is None  # unknown id
    assert len(table) == 1


def test_settle_direct_resolves_only_a_blocked_callers_request() -> None:
    table = RequestTable()
    waiter = Waiter()
    blocked = table.open("tools/call", waiter, now=0.0, timeout=10.0, direct=True)
    queued, future = open_request(table)
    # A future with done-callbacks is not the reader's to settle: left for dispatch.
    assert not table.settle_direct(queued.id, {"ok": 0})
    assert not future.done() and table.get(queued.id) is queued
    assert table.settle_direct(blocked.id, {"ok": 1})
    assert waiter.wait(0) and waiter.outcome() == {"ok": 1}
    # Popped: a late duplicate, or an unknown id, finds nothing.
    assert not table.settle_direct(blocked.id, {"ok": 2})
    assert not table.settle_direct(12345, {})
    assert waiter.outcome() == {"ok": 1} and len(table) == 1


def test_settle_direct_keeps_the_deadline_heap_bounded() -> None:
    table = RequestTable()
    for _ in range(1000):
        entry = table.open("tools/call", Waiter(), now=0.0, timeout=10.0, direct=True)
        assert table.settle_direct(entry.id, {})
    assert table.next_deadline() is None or len(table._deadlines) <= 2 + 64


def test_error_response_becomes_server_error_with_code_message_data() -> None:
    table = RequestTable()
    entry, future = open_request(table, "tools/call")
    table.resolve({"id": entry.id, "error": {"code": -32602, "message": "bad", "data": [1]}})
    error = future.exception(0)
    assert isinstance(error, ServerError)
    assert (error.code, error.message, error.data, error.method) == (
        -32602, "bad", [1], "tools/call")
    entry, future = open_request(table)
    table.resolve({"id": entry.id, "error": {"code": -32601, "message": "no"}})
    assert isinstance(future.exception(0), MethodNotFound)


@pytest.mark.parametrize(("message", "reason"), [
    ({"error": "boom"}, "its error is not an object: 'boom'"),
    ({"error": {"message": "x"}}, "its error has no integer code"),
    ({"result": {"ok": 1}, "error": {"code": -1, "message": "x"}}, "both a result and an error"),
])
def test_a_malformed_response_fails_its_request_with_a_protocol_error(
        message: dict, reason: str) -> None:  # type: ignore[type-arg]
    """Before, classify() called these INVALID: the request waited for its deadline."""
    table = RequestTable("srv")
    entry, future = open_request(table, "tools/call")
    assert table.resolve({"jsonrpc": "2.0", "id": entry.id, **message}) is entry
    error = future.exception(0)
    assert isinstance(error, ProtocolError)
    assert f"malformed response to tools/call (id={entry.id}) from srv" in str(error)
    assert reason in str(error)
    assert len(table) == 0


def test_a_malformed_response_is_described_in_bounded_words() -> None:
    table = RequestTable()
    entry, future = open_request(table)
    table.resolve({"id": entry.id, "error": "\x1b[2J" + "x" * 1_000_000})
    text = str(future.exception(0))
    assert len(text) < 500 and "\x1b" not in text


def test_deadline_expiry_and_progress_pushing_it_out() -> None:
    table = RequestTable()
    entry, future = open_request(table, now=0.0, timeout=1.0, max_total_timeout=2.5)
    assert table.next_deadline() == 1.0
    assert table.expire(0.9) == []
    table.progress(entry.id, now=0.9)  # deadline -> 1.9
    assert table.expire(1.5) == []
    assert not future.done()
    table.progress(entry.id, now=1.8)  # deadline -> min(2.8, 2.5) = 2.5
    assert table.expire(2.4) == []
    assert table.expire(2.5) == [entry]
    assert not future.done()  # the session fails it after telling the server
    error = RequestTable.timeout_error(entry)
    assert isinstance(error, RequestTimeout) and isinstance(error, TimeoutError)
    assert error.request_id == entry.id
    assert len(table) == 0


def test_the_timeout_error_names_the_bound_that_ran_out() -> None:
    table = RequestTable()
    # Progress pushed it out until max_total_timeout stopped it: that bound, not the 1 s.
    pushed, _ = open_request(table, now=0.0, timeout=1.0, max_total_timeout=2.5)
    table.progress(pushed.id, now=1.8)
    assert table.expire(2.5) == [pushed]
    error = RequestTable.timeout_error(pushed)
    assert (error.timeout, error.total) == (2.5, True)
    assert "max_total_timeout=2.5 s" in str(error) and "1.0" not in str(error)
    # A timeout longer than max_total_timeout: the total bound is what stops it.
    long, _ = open_request(table, now=0.0, timeout=30.0, max_total_timeout=5.0)
    assert table.expire(5.0) == [long]
    assert (RequestTable.timeout_error(long).timeout, RequestTable.timeout_error(long).total) \
        == (5.0, True)
    # Its own timeout ran out (no progress, or not enough): the per-call timeout.
    plain, _ = open_request(table, now=0.0, timeout=1.0, max_total_timeout=2.5)
    assert table.expire(1.0) == [plain]
    error = RequestTable.timeout_error(plain)
    assert (error.timeout, error.total) == (1.0, False)
    assert str(error) == "tools/call timed out after 1.0 s" and error.request_id == plain.id


@pytest.mark.parametrize(("method", "params", "subject"), [
    ("tools/call", {"name": "slow", "arguments": {}}, "slow"),
    ("prompts/get", {"name": "greet"}, "greet"),
    ("resources/read", {"uri": "file:///a"}, "file:///a"),
    ("resources/subscribe", {"uri": "file:///b"}, "file:///b"),
    ("resources/unsubscribe", {"uri": "file:///c"}, "file:///c"),
    ("tools/call", {"name": 5}, None),  # not a string: no subject
    ("tools/call", ["slow"], None),
    ("tools/call", None, None),
    ("tools/list", {"name": "slow"}, None),  # a method without a subject
])
def test_a_request_is_named_by_its_subject_when_it_times_out(
        method: str, params: object, subject: Optional[str]) -> None:
    table = RequestTable()
    entry, _ = open_request(table, method, params=params, timeout=1.0)
    assert entry.subject == subject
    assert table.expire(1.0) == [entry]
    error = RequestTable.timeout_error(entry)
    assert error.subject == subject
    named = method if subject is None else f"{method} {subject!r}"
    assert str(error) == f"{named} timed out after 1.0 s"


def test_progress_does_not_extend_when_reset_is_off() -> None:
    table = RequestTable()
    entry, _ = open_request(table, now=0.0, timeout=1.0, reset_on_progress=False)
    table.progress(entry.id, now=0.9)
    assert table.expire(1.0) == [entry]


def test_progress_for_unknown_token_is_ignored() -> None:
    table = RequestTable()
    assert table.progress("nope", now=0.0) is None


def test_no_timeout_never_expires() -> None:
    table = RequestTable()
    entry, _ = open_request(table, timeout=None)
    assert table.next_deadline() is None
    assert table.expire(1e9) == []
    assert table.pop(entry.id) is entry


def test_cancelled_future_then_response_raises_nothing() -> None:
    """A caller cancels its future; the response arriving later must not blow up."""
    table = RequestTable()
    entry, future = open_request(table)
    assert future.cancel()
    assert table.resolve({"id": entry.id, "result": {}}) is entry
    assert future.cancelled()


def test_pop_then_response_is_late() -> None:
    table = RequestTable()
    entry, future = open_request(table)
    assert table.pop(entry.id) is entry
    assert table.pop(entry.id) is None
    assert table.resolve({"id": entry.id, "result": {}}) is None
    assert not future.done()


def test_fail_all_fails_every_pending_with_a_fresh_error() -> None:
    table = RequestTable()
    futures = [open_request(table)[1] for _ in range(5)]
    failed = table.fail_all(lambda: ConnectionClosed("gone", exit_code=1))
    assert len(failed) == 5 and len(table) == 0
    errors = [f.exception(0) for f in futures]
    assert all(isinstance(e, ConnectionClosed) and e.exit_code == 1 for e in errors)
    assert len({id(e) for e in errors}) == 5
    assert table.next_deadline() is None


@pytest.mark.parametrize(("prefix", "request_id"), [
    (b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"xxx', 7),
    (b' {\n "id" : "a7" ,\t"error": {"code": -1, "message": "xx', "a7"),
    (b'{"result":{"ok":true},"id":12,"jsonrpc":"2.0"', 12),  # the id after a small result
    (b'{"id":7,"params":{"a":[1,2]},"result":"xx', 7),  # other members are skipped
    (b'{"jsonrpc":"2.0","id":7,"method":"x","params":{"a":"xx', None),  # the server's id
    (b'{"jsonrpc":"2.0","method":"x","id":7,"result":"', None),
    (b'{"result":"' + b"x" * 100, None),  # the id would come after the big value
    (b'{"result":{"ok":true},"id":12', None),  # 12 of 123?
    (b'{"id":true,"result":"', None),
    (b'{"id":7.0,"result":"', None),
    (b'{"id":null,"error":{"', None),
    (b'{"id":7}', None),  # a whole object that answers nothing
    (b'[{"id":1,"result":"', None),  # a batch
    (b"xxxxxxxxxxx", None),
    (b"", None),
    # Bytes that are not UTF-8, or a character cut at the end of the prefix, are read
    # around, never raised.
    (b'{"id":7,"result":"\xff\xfe', 7),
    (b'{"id":"\xe2\x82","result":"', "\ufffd"),
    (b'{"id":7,"result":"' + "\u20ac".encode() * ID_PREFIX, 7),
    (b'{7:1,"id":7,"result":"', None),  # a key that is not a string: not JSON
    (b'{"id" 7,"result":"', None),  # no colon after a key: not JSON
])
def test_the_id_of_an_oversized_response_is_read_from_its_start(
        prefix: bytes, request_id: object) -> None:
    assert response_id_in(prefix) == request_id


def test_only_a_bounded_prefix_is_read_for_an_id() -> None:
    padding = b'{"jsonrpc":"2.0","pad":"' + b"p" * ID_PREFIX + b'","id":7,"result":"'
    assert response_id_in(padding) is None


def test_a_waiter_never_waits_past_a_bound_already_gone() -> None:
    waiter = Waiter()
    # A bound that is negative, zero or NaN returns at once (as max(0.0, bound) would);
    # only None waits without a bound.
    for bound in (-5.0, -0.0, 0.0, float("nan"), -1):
        started = time.monotonic()
        assert not waiter.wait(bound)
        assert time.monotonic() - started < 1.0
    waiter.set_result("done")
    assert waiter.wait(None) and waiter.wait(-1.0) and waiter.outcome() == "done"


@pytest.mark.parametrize(("timeout", "max_total", "bound"), [
    (None, None, None), (None, 5.0, 6.0), (3.0, None, None), (3.0, 5.0, 6.0),
    (7.0, 5.0, 8.0), (5.0, 5.0, 6.0), (0, 0.0, 1.0),
])
def test_the_blocking_bound_is_the_longest_deadline_plus_a_second(
        timeout: Optional[float], max_total: Optional[float], bound: Optional[float]) -> None:
    assert future_wait_bound(timeout, max_total) == bound


def test_a_waiter_hands_its_outcome_across_threads_once_resolved() -> None:
    waiter, failed = Waiter(), Waiter()
    waiting = threading.Event()

    def resolve() -> None:
        assert waiting.wait(10)
        waiter.set_result({"ok": 1})
        failed.set_exception(ServerError(-1, "no"))

    thread = threading.Thread(target=resolve)
    thread.start()
    waiting.set()
    try:
        assert waiter.wait(10) and waiter.outcome() == {"ok": 1}
        assert failed.wait(10)
        with pytest.raises(ServerError, match="no"):
            failed.outcome()
        # Resolved stays resolved: a later wait() returns at once, whatever its bound.
        assert waiter.wait(0) and failed.wait(None)
    finally:
        thread.join(10)


class Counted:
    """A direct request's future that counts how often it is settled."""

    def __init__(self) -> None:
        self.outcomes: List[object] = []

    def set_result(self, result: object) -> None:
        self.outcomes.append(result)

    def set_exception(self, error: BaseException) -> None:
        self.outcomes.append(error)


def race_the_reader(rival: str) -> None:
    """One round: the reader settles 300 direct requests while ``rival`` takes them."""
    table = RequestTable()
    futures = [Counted() for _ in range(300)]
    entries = [table.open("tools/call", future, now=0.0, timeout=1.0, direct=True)
               for future in futures]
    start = threading.Barrier(2, timeout=10)
    errors: List[BaseException] = []

    def reader() -> None:
        start.wait()
        for entry in entries:
            table.settle_direct(entry.id, "answered")

    def other() -> None:
        start.wait()
        try:
            if rival == "expire":
                for entry in table.expire(5.0):
                    entry.future.set_exception(RequestTable.timeout_error(entry))
            elif rival == "fail_all":
                table.fail_all(lambda: ConnectionClosed("closed"))
            else:
                for entry in reversed(entries):
                    popped = table.pop(entry.id)
                    if popped is not None:
                        popped.future.set_exception(RuntimeError("cancelled"))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader), threading.Thread(target=other)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert not errors
    assert [len(future.outcomes) for future in futures] == [1] * len(futures)
    assert len(table) == 0


@pytest.mark.parametrize("rival", ["expire", "fail_all", "pop"])
def test_the_reader_and_its_rivals_settle_each_request_once(rival: str) -> None:
    # The reader pops without the lock (settle_direct); the deadline, the close and a
    # cancellation pop under it. Whoever gets an entry settles it, and only they do.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    try:
        for _ in range(20):
            race_the_reader(rival)
    finally:
        sys.setswitchinterval(interval)
