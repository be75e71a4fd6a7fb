"""One deadline for a whole HTTP exchange, kept by one thread per transport.

``requests`` bounds each read of a socket (its read timeout), not the exchange: a server
that sends one byte of its headers or body a second never reaches a per-read timeout and
holds the thread reading it for as long as it likes. The HTTP transports therefore give
each exchange that no request deadline covers (a notification's POST and its ``202``
body, the session's ``DELETE`` in ``close()``, a legacy-SSE POST and its acknowledgement)
one deadline for everything (headers, body and drain), and a :class:`Watchdog` calls the
exchange's ``abort`` when it passes: that shuts its socket down, so whatever read the
exchange is in returns at once, and the code that started it sees :attr:`Deadline.expired`.

Thread: ``mcp-sync-deadline-<name>``, started by the first :meth:`Watchdog.watch`, retired
after a while without deadlines, and stopped and joined (bounded) by
:meth:`Watchdog.stop` in the transport's ``close()``. A daemon, like the transports' other
threads, so that a client nobody closed never keeps the interpreter alive. The aborts it
calls only shut sockets down; they never block.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from typing import Callable, List, Optional, Tuple

from ..._util.threads import join_or_warn, start_thread

__all__ = ["Deadline", "Watchdog"]

log = logging.getLogger(__name__)

# The watchdog thread retires after this long without a deadline to keep.
_IDLE = 30.0


class Deadline:
    """The deadline of one exchange.

    Attributes:
        timeout: the seconds it was given.
        expired: set (before ``abort`` is called) once the deadline passed; the exchange
            then ended because of it.
    """

    __slots__ = ("_abort", "at", "done", "expired", "timeout")

    def __init__(self, timeout: float, abort: Callable[[], None]) -> None:
        self.timeout = timeout
        self.at = time.monotonic() + timeout
        self._abort = abort
        self.expired = False
        self.done = False

    def cancel(self) -> None:
        """The exchange is over: the watchdog drops it (a plain flag, read under its lock)."""
        self.done = True

    def remaining(self) -> float:
        return max(0.0, self.at - time.monotonic())


class Watchdog:
    """Calls the ``abort`` of every exchange whose deadline passed. Thread-safe."""

    def __init__(self, thread_name: str) -> None:
        self._thread_name = thread_name
        # Guards _heap, _thread and _stopped; signalled when a nearer deadline arrives.
        self._cond = threading.Condition()
        self._heap: List[Tuple[float, int, Deadline]] = []
        self._ids = itertools.count()
        self._thread: Optional[threading.Thread] = None
        self._stopped = False

    def rename(self, thread_name: str) -> None:
        """Name the thread ``thread_name`` from now on (the one running, if any, too)."""
        with self._cond:
            self._thread_name = thread_name
            if self._thread is not None:
                self._thread.name = thread_name

    def watch(self, timeout: Optional[float], abort: Callable[[], None]) -> Optional[Deadline]:
        """Call ``abort()`` in ``timeout`` seconds unless the returned deadline is cancelled
        first. ``None`` (no timeout, or the watchdog stopped): nothing is watched."""
        if timeout is None:
            return None
        deadline = Deadline(timeout, abort)
        with self._cond:
            if self._stopped:
                return None
            heapq.heappush(self._heap, (deadline.at, next(self._ids), deadline))
            if self._thread is None or not self._thread.is_alive():  # (not after a fork)
                # A daemon (see the module docstring); stop() joins it.
                self._thread = start_thread(self._run, self._thread_name)
            elif self._heap[0][2] is deadline:
                self._cond.notify()
        return deadline

    def _run(self) -> None:
        while True:
            due: List[Deadline] = []
            with self._cond:
                while not due:
                    if self._stopped:
                        self._thread = None
                        return
                    while self._heap and self._heap[0][2].done:
                        heapq.heappop(self._heap)
                    if not self._heap:
                        if not self._cond.wait(_IDLE) and not self._heap:
                            self._thread = None  # idle: the next watch() starts another
                            return
                        continue
                    now = time.monotonic()
                    while self._heap and self._heap[0][0] <= now:
                        deadline = heapq.heappop(self._heap)[2]
                        if not deadline.done:
                            deadline.expired = True
                            due.append(deadline)
                    if not due:
                        self._cond.wait(self._heap[0][0] - now)
            for deadline in due:
                try:
                    deadline._abort()
                except Exception:  # an abort only shuts a socket down; never kill the thread
                    log.exception("aborting an exchange at its deadline failed")

    def stop(self, timeout: float) -> None:
        """Stop keeping deadlines and join the thread (at most ``timeout`` seconds)."""
        with self._cond:
            self._stopped = True
            self._heap.clear()
            thread = self._thread
            self._cond.notify_all()
        join_or_warn(thread, timeout, "closing the transport", log)
