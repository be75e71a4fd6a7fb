"""The sans-I/O JSON-RPC core: ids and the pending-Future table (what a message is, its
classification, is :mod:`mcp_sync._protocol.messages`').

Nothing here does I/O or starts a thread; the session drives it and the tests feed it
messages directly. Every pending request is popped from the table exactly once, by one
atomic ``dict.pop``, by whoever gets there first (its response, its deadline, its
cancellation, or the transport closing); the others find nothing and do nothing.
"""

from __future__ import annotations

import heapq
import itertools
import queue
import threading
from concurrent.futures import InvalidStateError
from typing import Any, Callable, Dict, List, Optional, Tuple

from .._protocol.messages import Kind, classify, malformation
from ..exceptions import ProtocolError, RequestTimeout, server_error

__all__ = ["Pending", "RequestTable", "Waiter"]

ProgressCallback = Callable[[float, Optional[float], Optional[str]], None]
# The parameter naming what a request is about, for its error messages.
_SUBJECT_PARAMS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri",
                   "resources/subscribe": "uri", "resources/unsubscribe": "uri"}
# Stale deadline-heap entries tolerated beyond twice the pending count (see _compact).
_STALE_SLACK = 64


class Pending:
    """One request waiting for its response."""

    __slots__ = (
        "cancellable",
        "deadline",
        "direct",
        "future",
        "id",
        "max_deadline",
        "max_total_timeout",
        "method",
        "on_progress",
        "reset_on_progress",
        "subject",
        "timeout",
    )

    def __init__(
        self,
        request_id: int,
        method: str,
        future: Any,
        timeout: Optional[float],
        deadline: Optional[float],
        max_deadline: Optional[float],
        on_progress: Optional[ProgressCallback],
        reset_on_progress: bool,
        cancellable: bool = True,
        direct: bool = False,
        subject: Optional[str] = None,
        max_total_timeout: Optional[float] = None,
    ) -> None:
        self.id = request_id
        self.method = method
        self.future = future
        self.timeout = timeout
        self.deadline = deadline
        self.max_deadline = max_deadline
        #: The bound behind ``max_deadline``, for the error when it is what ran out.
        self.max_total_timeout = max_total_timeout
        self.on_progress = on_progress
        self.reset_on_progress = reset_on_progress
        #: False for requests the server must never be told to cancel (``initialize``).
        self.cancellable = cancellable
        #: True for a blocking caller's future: it has no done-callbacks, so any thread
        #: (the transport's reader included) may resolve it without running user code.
        self.direct = direct
        #: What the request is about, for its timeout message: the tool or prompt name,
        #: the resource URI (from ``params``, by :meth:`RequestTable.open`).
        self.subject = subject


class Waiter:
    """A one-shot result slot for one blocked caller: the cheapest hand-off there is.

    Lighter than a :class:`~concurrent.futures.Future` (no Condition, no callbacks): the
    outcome is stored, then one item is put in a :class:`queue.SimpleQueue` that the
    caller waits on. (A lock taken at creation and released with the outcome does the
    same, but each of a lock's acquires parses its arguments with the keyword parser:
    twice per request, some 2,500 instructions more than the queue's put and get.)
    Only ever resolved once, by whoever popped its table entry.
    """

    __slots__ = ("_done", "_error", "_ready", "_result")

    def __init__(self) -> None:
        # Looked up on the module each time, as threading.Lock was: under gevent it is
        # the patched, cooperative queue.
        self._ready: queue.SimpleQueue[None] = queue.SimpleQueue()
        self._result: Any = None
        self._error: Optional[BaseException] = None
        self._done = False  # wait() returned True: it does at once from now on

    def set_result(self, result: Any) -> None:
        self._result = result
        self._ready.put(None)

    def set_exception(self, error: BaseException) -> None:
        self._error = error
        self._ready.put(None)

    def wait(self, timeout: Optional[float]) -> bool:
        """Block until resolved or ``timeout`` seconds pass; interruptible by Ctrl-C."""
        if self._done:
            return True
        try:
            # A conditional, not max(0.0, timeout): the same value, without a builtin's
            # argument parsing on every request.
            self._ready.get(True, None if timeout is None else (
                timeout if timeout > 0.0 else 0.0))
        except queue.Empty:
            return False
        self._done = True
        return True

    def outcome(self) -> Any:
        """The result, or raise the error. Call only after wait() returned True."""
        if self._error is not None:
            raise self._error
        return self._result


def settle(future: Any, result: Any = None, error: Optional[BaseException] = None) -> None:
    """Resolve ``future`` unless the caller already cancelled it (then nobody is listening)."""
    try:
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)
    except InvalidStateError:
        pass  # cancelled by its owner between our pop and now: nothing to deliver


class RequestTable:
    """Request ids and the futures waiting on them. Can be shared between threads.

    ``name`` (the server's) goes into the errors it makes. ``_lock`` guards
    ``_deadlines``, and ``_pending`` but for one thing: an entry leaves ``_pending`` only
    by ``dict.pop``, one atomic step (one C call under the GIL), which the reader's
    :meth:`settle_direct` takes without the lock; so what holds the lock copies
    ``_pending`` before it walks it, and takes entries out by ``pop`` too. Ids come from
    ``_ids``, whose ``next()`` is atomic as well, so an entry is made before the lock is
    taken and the lock is held only to file it.
    """

    def __init__(self, name: str = "the server") -> None:
        self.name = name
        self._lock = threading.Lock()
        self._pending: Dict[Any, Pending] = {}
        self._deadlines: List[Tuple[float, int]] = []  # heap; entries may be stale
        self._ids = itertools.count(1)

    def __len__(self) -> int:
        return len(self._pending)

    def open(
        self,
        method: str,
        future: Any,
        now: float,
        timeout: Optional[float],
        max_total_timeout: Optional[float] = None,
        on_progress: Optional[ProgressCallback] = None,
        reset_on_progress: bool = True,
        cancellable: bool = True,
        direct: bool = False,
        params: Any = None,
    ) -> Pending:
        """Allocate an id and register ``future`` under it.

        ``params``: the request's, for what it is about (its ``subject``: the tool or
        prompt name, the resource URI). Every argument may be given by position: the
        session does, once per request.
        """
        field = _SUBJECT_PARAMS.get(method)
        subject = params.get(field) if field is not None and isinstance(params, dict) else None
        if not isinstance(subject, str):
            subject = None
        deadline = None if timeout is None else now + timeout
        max_deadline = None if max_total_timeout is None else now + max_total_timeout
        if deadline is not None and max_deadline is not None and max_deadline < deadline:
            deadline = max_deadline
        request_id = next(self._ids)
        entry = Pending(
            request_id, method, future, timeout, deadline, max_deadline,
            on_progress, reset_on_progress, cancellable, direct, subject, max_total_timeout,
        )
        with self._lock:
            self._pending[request_id] = entry
            if deadline is not None:
                heapq.heappush(self._deadlines, (deadline, request_id))
        return entry

    def pop(self, request_id: Any) -> Optional[Pending]:
        """Remove and return the entry for ``request_id``; ``None`` if it is gone already."""
        with self._lock:
            entry = self._pending.pop(request_id, None)
            if len(self._deadlines) > 2 * len(self._pending) + _STALE_SLACK:
                self._compact()
            return entry

    def settle_direct(self, request_id: int, result: Any) -> bool:
        """Pop the request ``request_id`` and hand its waiting caller ``result``, if it is
        pending and ``direct`` (a blocked caller's :class:`Waiter`, which runs no
        callbacks, so any thread may resolve it); False, and nothing done, otherwise.

        The reader's path for the usual response: :meth:`get`, :meth:`resolve`,
        :meth:`pop` and :func:`settle` in one step, without the lock (see the class
        docstring).
        """
        entry = self._pending.get(request_id)
        if entry is None or not entry.direct:
            return False
        # Without the lock: the pop is atomic, so of everyone who may take this entry
        # (its deadline, a cancellation, the close) exactly one gets it.
        if self._pending.pop(request_id, None) is None:
            return False
        if len(self._deadlines) > 2 * len(self._pending) + _STALE_SLACK:
            with self._lock:
                if len(self._deadlines) > 2 * len(self._pending) + _STALE_SLACK:
                    self._compact()
        entry.future.set_result(result)
        return True

    def _compact(self) -> None:
        """Rebuild the deadline heap from the pending requests alone (lock held).

        An answered request's heap entry would otherwise stay until its deadline: under
        steady load the heap held rate x timeout stale entries (some 140 bytes each: 60 MB
        at 15,000 calls/s with 30 s timeouts). Rebuilt once stale entries outnumber live
        ones, it stays under twice the pending count, at amortised O(1) per request.
        """
        self._deadlines = [(entry.deadline, entry.id)
                           for entry in list(self._pending.values())  # a copy: see above
                           if entry.deadline is not None]
        heapq.heapify(self._deadlines)

    def get(self, request_id: Any) -> Optional[Pending]:
        return self._pending.get(request_id)

    def resolve(self, message: Dict[str, Any], kind: Optional[Kind] = None) -> Optional[Pending]:
        """Deliver a response (``kind``, from :func:`classify`, one of :data:`ANSWERS`)
        to its future: its result, a ``ServerError``, or for a malformed response a
        ``ProtocolError``.

        Returns the entry, or ``None`` for an unknown or late id (the caller logs it).
        """
        entry = self.pop(message.get("id"))
        if entry is None:
            return None
        if kind is None:
            kind = classify(message)
        if kind is Kind.RESPONSE:
            settle(entry.future, message["result"])
        elif kind is Kind.ERROR:
            error = message["error"]
            settle(
                entry.future,
                error=server_error(
                    error["code"],
                    str(error.get("message", "")),
                    error.get("data"),
                    method=entry.method,
                ),
            )
        else:
            settle(entry.future, error=ProtocolError(
                f"malformed response to {entry.method} (id={entry.id}) from "
                f"{self.name}: {malformation(message)}"))
        return entry

    def progress(self, token: Any, now: float) -> Optional[Pending]:
        """Note progress for the request whose progress token is ``token``.

        Pushes its deadline out by its timeout, never past its ``max_deadline``.
        """
        if type(token) is not int:
            # Our tokens are request ids. Anything else is no one's: a dict or list would
            # not even hash, and true or 1.0 would match request 1.
            return None
        entry = self._pending.get(token)
        if entry is None:
            return None
        if entry.reset_on_progress and entry.timeout is not None:
            deadline = now + entry.timeout
            if entry.max_deadline is not None:
                deadline = min(deadline, entry.max_deadline)
            entry.deadline = deadline  # the heap entry is re-pushed lazily in expire()
        return entry

    def next_deadline(self) -> Optional[float]:
        """The earliest deadline that may be due (possibly stale-early), or ``None``."""
        with self._lock:
            return self._deadlines[0][0] if self._deadlines else None

    def expire(self, now: float) -> List[Pending]:
        """Pop and return every request whose deadline has passed.

        The caller fails each with :func:`timeout_error` once it has told the server, so
        that a caller seeing ``RequestTimeout`` knows the cancellation is on the wire (the
        session waits a short grace for that, no longer, so a slow server cannot hold
        the timeout back).
        """
        expired: List[Pending] = []
        with self._lock:
            while self._deadlines and self._deadlines[0][0] <= now:
                _, request_id = heapq.heappop(self._deadlines)
                entry = self._pending.get(request_id)
                if entry is None or entry.deadline is None:
                    continue
                if entry.deadline > now:  # pushed out by progress since it was queued
                    heapq.heappush(self._deadlines, (entry.deadline, request_id))
                    continue
                if self._pending.pop(request_id, None) is entry:  # else settled just now
                    expired.append(entry)
            if not self._pending:
                self._deadlines.clear()
        return expired

    @staticmethod
    def timeout_error(entry: Pending) -> RequestTimeout:
        """The error for an expired entry: which bound ran out, its own or the total."""
        if (entry.max_deadline is not None and entry.deadline == entry.max_deadline
                and entry.timeout != entry.max_total_timeout):
            return RequestTimeout(entry.method, entry.id, entry.max_total_timeout,
                                  entry.subject, total=True)
        return RequestTimeout(entry.method, entry.id, entry.timeout, entry.subject)

    def fail_all(self, make_error: Callable[[], BaseException]) -> List[Pending]:
        """Pop every pending request and fail it with a fresh ``make_error()``."""
        with self._lock:
            # One pop per entry, not clear(): one the reader pops meanwhile is its own.
            entries = [entry for entry in (self._pending.pop(request_id, None)
                                           for request_id in list(self._pending))
                       if entry is not None]
            self._deadlines.clear()
        for entry in entries:
            settle(entry.future, error=make_error())
        return entries
