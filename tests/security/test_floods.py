"""A server that floods the client while its callbacks or handlers are stuck: every queue
between the reader and user code is bounded, pings and responses still get through, and
each queue's policy when full (docs/architecture.md, "Queues and their bounds") holds.

The hostile server is ``tests/servers/flood_stdio.py``: it writes its floods from a
thread of its own as fast as the pipe takes them, and counts the client's answers. The
workloads (``tests/faults/workloads.py``) are the ones ``bench/reliability.py`` measures
at full size. Unbounded, the queues held every message: 300,000 log records with a slow
``logging_handler`` grew the process by about 500 MiB, 300,000 pings while the handler
threads were busy by about 660 MiB, with not one ping answered.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Dict, List, Optional

import pytest

from mcp_sync import ConnectionClosed
from mcp_sync._rpc.queues import Admission, CallbackQueue
from mcp_sync._rpc.session import MAX_CALLBACKS, MAX_SERVER_REQUESTS

from ..faults import workloads

T = 30.0  # bound for what should be quick; generous for a small, loaded VM
MIB = 1024


def dropping_warnings(result: workloads.FloodResult) -> List[str]:
    return [message for message in result.warnings if "dropping" in message]


def test_a_log_flood_while_the_logging_handler_is_stuck_is_dropped_and_counted() -> None:
    """300,000 log records while the logging_handler is stuck on the first: the client
    keeps 1024 of them, drops the rest with one warning and a counter, and reads on."""
    count = 300_000
    result = workloads.log_flood(count, timeout=T)
    assert result.stats["sent"] == {"log": count}
    assert result.call_during == "during"  # a call made during the flood was answered
    # One record runs in the stuck handler (unless the flood outran the callback thread
    # to it), the queue holds MAX_CALLBACKS, the rest is dropped.
    assert count - MAX_CALLBACKS - 1 <= result.dropped <= count - MAX_CALLBACKS
    assert result.delivered == count - result.dropped  # once the handler was released
    assert len(dropping_warnings(result)) == 1, result.warnings
    # Unbounded, this flood grows the process by about 500 MiB.
    assert result.growth_kib < 48 * MIB, f"peak RSS grew by {result.growth_kib} KiB"


def test_a_ping_flood_while_every_handler_is_busy_is_answered_in_bounded_memory() -> None:
    """150,000 pings while the four handler threads are stuck in roots/list: every ping is
    answered (the server counts the answers), in bounded memory, and the roots/list
    requests are answered once their handler returns."""
    count = 150_000
    result = workloads.request_flood(count, kind="ping", timeout=T)
    assert result.call_during == "during"
    assert (result.answered, result.refused) == (count, 0)
    assert result.stats["after"]["ask"] == {"ok": 4, "error_count": 0, "errors": []}
    assert result.warnings == []
    # Unbounded (every ping queued behind the busy handlers), about 330 MiB.
    assert result.growth_kib < 32 * MIB, f"peak RSS grew by {result.growth_kib} KiB"


def test_requests_beyond_the_bound_are_refused_as_busy() -> None:
    """20,000 roots/list requests while the handlers are stuck: MAX_SERVER_REQUESTS are
    admitted (four running, the rest waiting), the others are answered at once with a
    "busy" error, and the admitted ones are answered once the handlers return."""
    count = 20_000
    result = workloads.request_flood(count, kind="roots", timeout=T)
    admitted = MAX_SERVER_REQUESTS - 4
    assert result.call_during == "during"
    assert (result.answered, result.refused) == (0, count - admitted)
    error = result.stats["answers"]["roots"]["errors"][0]
    assert error["code"] == -32603 and "busy" in error["message"]
    assert result.stats["after"]["roots"]["ok"] == admitted
    assert result.stats["after"]["ask"]["ok"] == 4
    assert len([m for m in result.warnings if "refusing" in m]) == 1, result.warnings
    assert result.growth_kib < 32 * MIB, f"peak RSS grew by {result.growth_kib} KiB"


class StuckHandler:
    """A notification_handler stuck on the first notification of ``method`` until
    released; keeps what it got, and in ``later`` the other methods that came after."""

    def __init__(self, method: str) -> None:
        self.method = method
        self.release = threading.Event()
        self.drained = threading.Event()
        self.other = threading.Event()
        self.expected: Optional[int] = None
        self.seen: List[Any] = []
        self.later: List[str] = []
        self._lock = threading.Lock()

    def __call__(self, method: str, params: Optional[Dict[str, Any]]) -> None:
        if method != self.method:
            if self.seen:
                self.later.append(method)
                self.other.set()
            return
        with self._lock:
            self.seen.append(params)
            if self.expected is not None and len(self.seen) >= self.expected:
                self.drained.set()
        self.release.wait(T)

    def expect(self, count: int) -> bool:
        """Release the handler; wait (bounded) until it got ``count`` notifications."""
        with self._lock:
            self.expected = count
            if len(self.seen) >= count:
                self.drained.set()
        self.release.set()
        return self.drained.wait(T)


def test_repeated_change_notifications_are_merged_while_the_callbacks_are_stuck() -> None:
    """20,000 tools/list_changed while the notification_handler is stuck: none is
    dropped (they are not droppable), the repeats are merged into the one waiting, and
    the connection lives on."""
    handler = StuckHandler("notifications/tools/list_changed")
    client = workloads.flood_client(notification_handler=handler, timeout=T)
    try:
        client.call_tool("flood", {"kind": "list_changed", "count": 20_000})
        stats = workloads.tool_json(client, "stats", {"flood_done": True, "timeout": T / 2})
        assert stats["sent"] == {"list_changed": 20_000}
        assert client.connected and client.dropped_notifications == 0
        assert client.call_tool("echo", {"text": "alive"}).text == "alive"
        # The one running, and the queue's worth that waited before the merging began;
        # a notification behind them, in wire order, shows that nothing else follows.
        assert handler.expect(MAX_CALLBACKS + 1), len(handler.seen)
        client.call_tool("flood", {"kind": "updated", "count": 1})
        assert handler.other.wait(T)
        assert len(handler.seen) == MAX_CALLBACKS + 1
    finally:
        handler.release.set()
        client.close()


def test_a_flood_of_notifications_that_may_not_be_lost_fails_the_connection() -> None:
    """Distinct resources/updated notifications while the notification_handler is stuck:
    once MAX_CALLBACKS wait and nothing may be dropped, the connection fails (it neither
    loses one nor grows); pending calls fail with a ConnectionClosed that says why, and
    on_connection_lost runs once the callbacks before it have."""
    handler = StuckHandler("notifications/resources/updated")
    lost: List[BaseException] = []
    reported = threading.Event()

    def on_connection_lost(error: BaseException) -> None:
        lost.append(error)
        reported.set()

    client = workloads.flood_client(notification_handler=handler, timeout=T,
                                    on_connection_lost=on_connection_lost)
    try:
        client.call_tool("flood", {"kind": "updated", "count": 5_000})
        with pytest.raises(ConnectionClosed, match="none of them droppable"):
            client.call_tool("stats", {"flood_done": True, "timeout": T / 2})
        assert not client.connected
        with pytest.raises(ConnectionClosed):
            client.call_tool("echo", {"text": "no"})
        assert handler.expect(MAX_CALLBACKS + 1), len(handler.seen)
        assert reported.wait(T) and "resources/updated" in str(lost[0])
        # Nothing was dropped: what did not fit was refused with the connection.
        assert client.dropped_notifications == 0
    finally:
        handler.release.set()
        client.close()


def test_a_stderr_line_without_end_is_cut_in_bounded_memory() -> None:
    """64 MiB on stderr without a newline: the client keeps 16 KiB of the line in its
    stderr tail, skips the rest as it reads, and stays usable."""
    size = 64 * 1024 * 1024
    client = workloads.flood_client(timeout=T)
    try:
        client.call_tool("echo", {"text": "warm up"})
        workloads.reset_peak_memory()
        before = workloads.memory_kib()["VmRSS"]
        client.call_tool("flood", {"kind": "stderr", "count": size})
        stats = workloads.tool_json(client, "stats", {"flood_done": True, "timeout": T / 2})
        growth = workloads.memory_kib()["VmHWM"] - before
        assert stats["sent"] == {"stderr": size}
        # Unbounded, the line is held whole (and copied): well over 64 MiB.
        assert growth < 24 * MIB, f"peak RSS grew by {growth} KiB"
        assert client.call_tool("echo", {"text": "alive"}).text == "alive"
        tail = list(client.transport.stderr_tail)  # type: ignore[attr-defined]
        assert tail and tail[0].startswith("e" * 1000) and "line cut at" in tail[0]
        assert len(tail[0]) < 17 * 1024
    finally:
        client.close()


# -- the callback queue's policy, fed directly (pure logic) ----------------------------------


def test_a_full_callback_queue_drops_merges_makes_room_or_refuses() -> None:
    queue = CallbackQueue(3)
    assert queue.put("log 1", droppable=True) is Admission.QUEUED
    assert queue.put("custom", droppable=False) is Admission.QUEUED
    assert queue.put("tools changed", droppable=False, key="tools") is Admission.QUEUED
    # Full: a droppable one is dropped, a repeat merged, another takes a droppable's place.
    assert queue.put("log 2", droppable=True) is Admission.DROPPED
    assert queue.put("tools changed again", droppable=False, key="tools") is Admission.MERGED
    assert queue.put("updated", droppable=False, key=("updated", "a")) is Admission.QUEUED
    assert queue.dropped == 2  # "log 2", and "log 1" to make room
    # Nothing droppable left: refused, and the caller must act.
    assert queue.put("other", droppable=False) is Admission.FULL
    queue.put_control("stop")  # the session's own entries always go in
    taken = [queue.get(0.0) for _ in range(5)]
    assert taken == [(True, "custom"), (True, "tools changed"), (True, "updated"),
                     (True, "stop"), (False, None)]
    # The waiting "tools" entry is gone: a new one queues rather than merges.
    assert queue.put("tools changed later", droppable=False, key="tools") is Admission.QUEUED
    assert len(queue) == 1


def test_a_full_callback_queue_waits_for_a_consumer_that_is_behind_but_not_a_stuck_one() -> None:
    """With a grace period, a full queue waits for room: a consumer that keeps taking
    entries loses none, however far behind; one that takes nothing for the grace period
    is taken for stuck, and then puts drop at once until it has drained to half."""
    grace = 0.5
    queue = CallbackQueue(4, grace=grace)
    taken: List[Any] = []
    go = threading.Event()

    def consume(count: int) -> None:
        go.wait(T)
        for _ in range(count):
            ready, entry = queue.get(T)
            assert ready
            taken.append(entry)

    # Behind but moving: 200 entries through a queue of 4, every put admitted.
    consumer = threading.Thread(target=consume, args=(200,))
    consumer.start()
    go.set()
    admissions = [queue.put(n, droppable=True) for n in range(200)]
    consumer.join(T)
    assert not consumer.is_alive()
    assert set(admissions) == {Admission.QUEUED} and queue.dropped == 0
    assert taken == list(range(200))

    # Stuck: the first put that finds the queue full waits out the grace period, the
    # next ones drop at once.
    for n in range(4):
        assert queue.put(n, droppable=True) is Admission.QUEUED
    started = time.monotonic()
    assert queue.put("late", droppable=True) is Admission.DROPPED
    assert grace <= time.monotonic() - started < T
    started = time.monotonic()
    assert [queue.put(n, droppable=True) for n in range(100)] == [Admission.DROPPED] * 100
    assert time.monotonic() - started < grace
    # A repeat of a waiting change notification is merged without waiting.
    assert queue.get(0.0) == (True, 0)
    assert queue.put("tools", droppable=False, key="tools") is Admission.QUEUED
    assert queue.put("tools again", droppable=False, key="tools") is Admission.MERGED
    # Drained to half: the consumer is no longer taken for stuck, and a full queue waits.
    assert [queue.get(0.0)[1] for _ in range(2)] == [1, 2]
    assert queue.put(4, droppable=True) is Admission.QUEUED
    assert queue.put(5, droppable=True) is Admission.QUEUED
    waiter = threading.Thread(target=lambda: taken.append(queue.get(T)))
    timer = threading.Timer(0.05, waiter.start)  # a consumer that takes one, a bit later
    timer.start()
    assert queue.put(6, droppable=True) is Admission.QUEUED
    timer.join(T)
    waiter.join(T)
    assert taken[-1] == (True, 3) and queue.dropped == 101
