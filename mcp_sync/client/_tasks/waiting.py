"""Waiting for a task: the poll intervals and their bounds, the clock of one wait, status
notifications waking the waiters, and the futures of task calls.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future
from typing import Any, Callable, Dict, List, Optional

from ..._rpc.core import settle
from ...exceptions import (
    RequestTimeout,
    excerpt,
)

__all__ = [
    "CANCEL_TIMEOUT",
    "DEFAULT_POLL_INTERVAL",
    "MAX_POLL_INTERVAL",
    "MIN_POLL_INTERVAL",
    "READY_STATUSES",
    "TERMINAL_STATUSES",
    "Clock",
    "Stopped",
    "TaskBoard",
    "TaskFuture",
    "TaskProgress",
    "Watch",
    "because",
    "drive",
    "guarded",
    "poll_interval",
]

log = logging.getLogger(__name__)


#: The shortest wait between two ``tasks/get`` of one task, seconds, whatever
#: ``pollInterval`` the server asks for (a server cannot make the client spin).
MIN_POLL_INTERVAL = 0.05


#: The longest wait between two ``tasks/get``, seconds: a server asking for hours is
#: still polled this often, so a lost status notification costs at most this much.
MAX_POLL_INTERVAL = 5.0


#: The wait between polls when the server gives no ``pollInterval``, seconds.
DEFAULT_POLL_INTERVAL = 1.0


#: The bound on the best-effort ``tasks/cancel`` sent when a call gives up (a timeout,
#: Ctrl-C, ``future.cancel()``), seconds.
CANCEL_TIMEOUT = 2.0


#: The statuses a task never leaves.
TERMINAL_STATUSES = frozenset({"completed", "failed", "cancelled"})


#: The statuses at which the requestor reads ``tasks/result`` (``input_required``: the
#: server asks for the input while that request is open).
READY_STATUSES = TERMINAL_STATUSES | {"input_required"}


def poll_interval(task: Any) -> float:
    """Seconds to the next ``tasks/get``: the task's ``pollInterval`` (ms), bounded."""
    given = getattr(task, "poll_interval", None)
    if not isinstance(given, (int, float)) or isinstance(given, bool) or given != given:
        return DEFAULT_POLL_INTERVAL
    return min(MAX_POLL_INTERVAL, max(MIN_POLL_INTERVAL, given / 1000.0))


class Stopped(Exception):
    """The owner of a task's future cancelled it: stop waiting (raised and caught inside
    this package; :func:`drive` ends the thread on it)."""


class Watch:
    """One waiter's view of a task: the latest status notification not yet seen, and
    whether its future was cancelled. ``event`` wakes the waiter for either (and for the
    client closing). Can be shared between threads; ``_lock`` guards ``_note``."""

    def __init__(self) -> None:
        self.task_id: Optional[str] = None
        self.event = threading.Event()
        self.stopped = False
        #: Set with ``stopped``: the ``request_context().cancelled`` of the handlers that
        #: answer the task's input requests (2026-07-28).
        self.cancelled = threading.Event()
        self._lock = threading.Lock()
        self._note: Optional[Dict[str, Any]] = None

    def offer(self, params: Dict[str, Any]) -> None:
        with self._lock:
            self._note = params
        self.event.set()

    def take(self) -> Optional[Dict[str, Any]]:
        with self._lock:
            note, self._note = self._note, None
        return note

    def stop(self) -> None:
        self.stopped = True
        self.cancelled.set()
        self.event.set()


class TaskBoard:
    """The client's watches by task id: ``notifications/tasks/status`` (on the callback
    thread) wakes the waiters of that task; a closing client wakes them all. Holds only
    the watches of tasks someone waits for, so a server's notifications about other ids
    cost nothing. ``_lock`` guards ``_watches``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watches: Dict[str, List[Watch]] = {}

    def watch(self, watch: Watch, task_id: str) -> None:
        watch.task_id = task_id
        with self._lock:
            self._watches.setdefault(task_id, []).append(watch)

    def unwatch(self, watch: Watch) -> None:
        with self._lock:
            watches = self._watches.get(watch.task_id or "")
            if watches is not None and watch in watches:
                watches.remove(watch)
                if not watches:
                    del self._watches[watch.task_id or ""]

    def status(self, params: Any) -> None:
        """A ``notifications/tasks/status`` arrived (callback thread)."""
        task_id = params.get("taskId") if isinstance(params, dict) else None
        if not isinstance(task_id, str):
            return
        with self._lock:
            watches = list(self._watches.get(task_id, ()))
        for watch in watches:
            watch.offer(params)

    def wake_all(self) -> None:
        with self._lock:
            watches = [w for ws in self._watches.values() for w in ws]
        for watch in watches:
            watch.event.set()


class Clock:
    """The deadline of one wait: ``timeout`` from the start (``started``, a
    ``time.monotonic()``; now by default), pushed out by each change of the task (with
    ``push``) but never past ``max_total`` from the start."""

    def __init__(self, timeout: Optional[float], max_total: Optional[float],
                 push: bool, started: Optional[float] = None) -> None:
        now = time.monotonic() if started is None else started
        self.timeout = timeout
        self.max_total = max_total
        self._push = push and timeout is not None
        self._pushed = False
        self._total_end = None if max_total is None else now + max_total
        end = None if timeout is None else now + timeout
        if end is not None and self._total_end is not None:
            end = min(end, self._total_end)
        self._end = self._total_end if end is None else end

    def push(self) -> None:
        if self._push:
            assert self.timeout is not None
            end = time.monotonic() + self.timeout
            self._pushed = True
            self._end = end if self._total_end is None else min(end, self._total_end)

    def remaining(self) -> Optional[float]:
        return None if self._end is None else self._end - time.monotonic()

    def request_timeout(self, default: Optional[float]) -> Optional[float]:
        """The bound of one request within this wait (at most ``default``).

        Raises:
            RequestTimeout: the wait is over (``Clock`` callers convert it).
        """
        remaining = self.remaining()
        if remaining is None:
            return default
        if remaining <= 0:
            raise RequestTimeout("tasks/get", None, self.timeout)
        return remaining if default is None else min(default, remaining)

    def expired(self, method: str, request_id: Any, subject: Optional[str]) -> RequestTimeout:
        """The timeout to raise: ``total`` when ``max_total`` is the bound that ran out."""
        total = self._end is not None and self._end == self._total_end and (
            self.timeout is None or self._pushed
            or (self.max_total is not None and self.max_total < self.timeout))
        return RequestTimeout(method, request_id, self.max_total if total else self.timeout,
                              subject, total=total)


def because(task: Any) -> str:
    message = getattr(task, "status_message", None)
    return f": {excerpt(message, 300)}" if message else ""


def guarded(on_status: Callable[[Any], None]) -> Callable[[Any], None]:
    """``on_status`` with what it raises logged."""

    def call(task: Any) -> None:
        try:
            on_status(task)
        except Exception:
            log.exception("on_status raised for a task status")

    return call


class TaskProgress:
    """What a task-augmented call reports to its ``on_progress``: the server's progress
    notifications for the call's progress token (when called, on the callback
    thread), and, while the server sends none, each new status message of the task as
    ``on_progress(n, None, statusMessage)`` for the n-th one seen (:meth:`status`, on
    the thread that polls; the status itself when the task has no message)."""

    def __init__(self, on_progress: Callable[[float, Optional[float], Optional[str]], None]
                 ) -> None:
        self.on_progress = on_progress
        self.notified = False
        self._statuses = 0
        # Held while on_progress runs: the two threads never call it at once, and no
        # status is reported once the server's first progress has been.
        self._lock = threading.Lock()

    def __call__(self, progress: float, total: Optional[float], message: Optional[str]) -> None:
        """A progress notification of the server's (the callback thread)."""
        with self._lock:
            self.notified = True
            self.on_progress(progress, total, message)

    def status(self, task: Any) -> None:
        with self._lock:
            if self.notified:
                return  # the server reports progress itself: counting statuses mixes scales
            self._statuses += 1
            message = task.status_message
            try:
                self.on_progress(float(self._statuses), None,
                                 message if message is not None else task.status)
            except Exception:
                log.exception("on_progress raised for a task status")


class TaskFuture(Future):  # type: ignore[type-arg]
    """The future of a task driven on an ``mcp-sync-task-<server>`` thread;
    ``cancel()`` wakes that thread, which cancels the task."""

    def __init__(self, watch: Watch) -> None:
        super().__init__()
        self._watch = watch

    def cancel(self) -> bool:
        if not super().cancel():
            return False
        self._watch.stop()
        return True


def drive(future: TaskFuture, work: Callable[[], Any]) -> None:
    """The body of an ``mcp-sync-task-<server>`` thread."""
    try:
        result = work()
    except Stopped:
        return  # the future was cancelled; the task with it
    except BaseException as exc:  # noqa: BLE001 - delivered to the future's owner
        settle(future, error=exc)
    else:
        settle(future, result)
