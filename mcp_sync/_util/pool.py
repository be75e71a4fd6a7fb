"""An on-demand pool of named daemon threads.

The session answers server-to-client requests on one (``mcp-sync-handler-*``, at most a
few threads, kept for the session's life); the HTTP transport runs each exchange in
flight on one (``mcp-sync-stream-*``, as many as there are exchanges, retired when idle).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Any, Callable, List, Optional

from .threads import join_or_warn, start_thread

__all__ = ["ThreadPool"]

log = logging.getLogger("mcp_sync")


class ThreadPool:
    """Runs submitted callables on named daemon threads, started only when none is idle.

    Args:
        prefix: thread names are ``<prefix>-<n>``.
        max_threads: at most this many threads; beyond, jobs wait in the queue. ``None``:
            no bound (a thread per job running at once). The queue has no length bound
            of its own: each owner bounds what it submits (the session admits at most
            ``max_server_requests`` server requests; its other jobs, and the HTTP
            transport's, are one per request of the user's in flight).
        idle_timeout: a thread with no job for this many seconds retires. ``None``: threads
            live until :meth:`stop`.

    Daemon threads, so that an owner nobody closed never keeps the interpreter alive; the
    owner's close() calls :meth:`stop`, which joins them all the same. ``_lock`` guards
    ``_threads``, ``_idle``, ``_count`` and ``_stopped``; jobs are queued under it too, so
    a thread deciding to retire never strands one.
    """

    def __init__(self, prefix: str, *, max_threads: Optional[int] = None,
                 idle_timeout: Optional[float] = None) -> None:
        self._prefix = prefix
        self._max_threads = max_threads
        self._idle_timeout = idle_timeout
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: List[threading.Thread] = []
        self._idle = 0  # threads waiting for a job, minus jobs queued for them
        self._count = 0
        self._stopped = False

    def submit(self, fn: Callable[..., Any], *args: Any) -> bool:
        """Run ``fn(*args)`` on a pool thread; ``False`` (and nothing runs) once stopped."""
        with self._lock:
            if self._stopped:
                return False
            if self._idle <= 0 and (
                self._max_threads is None or len(self._threads) < self._max_threads
            ):
                self._count += 1
                thread = start_thread(self._work, f"{self._prefix}-{self._count}")
                self._threads.append(thread)
                self._idle += 1
            self._idle -= 1
            self._queue.put((fn, args))
        return True

    def rename(self, prefix: str) -> None:
        """Name the threads ``<prefix>-<n>`` from now on, the running ones included."""
        with self._lock:
            for thread in self._threads:
                thread.name = prefix + thread.name[len(self._prefix):]
            self._prefix = prefix

    def _work(self) -> None:
        me = threading.current_thread()
        while True:
            try:
                item = self._queue.get(timeout=self._idle_timeout)
            except queue.Empty:
                with self._lock:
                    if self._queue.empty():  # nothing was handed to us meanwhile: retire
                        self._idle -= 1
                        self._threads.remove(me)
                        return
                continue
            if item is None:
                return
            fn, args = item
            try:
                fn(*args)
            except Exception:
                log.exception("%s: unexpected error in %r", me.name, fn)
            with self._lock:
                self._idle += 1

    def stop(self, timeout: float) -> None:
        """Refuse new jobs, wake every thread and join them all within ``timeout``.

        Jobs already queued run first (the wake-ups queue behind them).
        """
        with self._lock:
            self._stopped = True
            threads = list(self._threads)
            for _ in threads:
                self._queue.put(None)
        deadline = time.monotonic() + timeout
        for thread in threads:
            join_or_warn(thread, timeout, "stopping its pool", log, deadline=deadline)
