"""The session's bounded queues: the inbox (transport readers -> dispatch thread) and the
notification callbacks (dispatch thread -> callback thread). No thread of their own.

**The inbox** (:class:`Inbox`) holds at most ``limit`` messages read but not yet routed.
A reader that finds it full waits for room (when its transport lets it wait): it stops
reading, so the pipe or the socket pushes back on the server. Only the dispatch thread
drains it, and it waits for user code at most ``CallbackQueue.grace`` per stall, so a
callback or a handler that calls the client cannot deadlock against a waiting reader.
The session's own markers (:data:`WAKE`, :data:`CLOSED`, :data:`STOP`) go past the bound:
they must never wait.

**The callbacks** (:class:`CallbackQueue`): the dispatch thread must never wait long for
user code: a callback that calls the client
waits for a response that only the dispatch thread can deliver. So putting waits for room
at most ``grace`` seconds: a callback thread that is merely behind (a burst of thousands
of log records, a busy machine) makes room within that and nothing is lost, the server's
stream slowing to the callbacks' pace instead. A callback thread that takes no entry for
``grace`` is stuck; the queue then stops waiting (until it has drained to half) and what
the server sent is sorted by what losing it costs:

* droppable (log messages, progress, cancellations: their effect on the session, a
  moved deadline or a cancelled handler, happened on the dispatch thread already; task
  status notifications: the task's next poll tells the same): the new one is dropped
  and counted;
* a change notification equal to one still waiting (the same ``*/list_changed``, the
  same resource's ``resources/updated``) is merged into it: the callback that will run
  says the same;
* anything else takes the place of the oldest droppable entry (dropped and counted);
* and when every entry is one that must not be lost, the queue refuses it (``FULL``):
  the session then fails the connection rather than lose it or grow.
"""

from __future__ import annotations

import collections
import enum
import queue
import threading
import time
from typing import TYPE_CHECKING, Any, Counter, Deque, Hashable, Optional, Tuple

from .link import IDLE_WAIT

if TYPE_CHECKING:
    from .link import Link

__all__ = ["CLOSED", "STOP", "WAKE", "Admission", "CallbackQueue", "Inbox"]

#: On the inbox: a new request's deadline is earlier than the dispatcher's next wake-up.
WAKE = object()
#: On the inbox: the transport closed; behind every message its reader delivered before.
CLOSED = object()
#: On the inbox or the callback queue: the thread that takes from it ends.
STOP = object()


class Inbox:
    """The messages the transport's reader(s) delivered that the dispatch thread has not
    routed yet: at most ``limit`` of them (see the module docstring).

    A plain holder of the inbox's state with its slow paths: the dispatcher reads and
    writes the counters and the queue itself on its fast paths (once per message).
    ``queued`` counts the messages readers put, ``routed`` the messages the dispatch
    thread finished routing. Each has one writer (``queued``: the transport's single
    reader, or any of several under ``_queued_lock``, :meth:`put_shared`), so neither
    needs a lock to be read, and equal counts mean that nothing delivered earlier is
    still on its way through dispatch (the reader's fast path relies on it). ``_room``
    guards ``readers_waiting`` (written under it, read without it: a stale count costs
    at most one wake-up, or a wait of ``IDLE_WAIT``) and is the readers' wake-up.
    """

    def __init__(self, limit: int, link: Link, *, readers_may_wait: bool = True) -> None:
        self.limit = limit
        self.queued = 0
        self.routed = 0
        #: Readers waiting for room.
        self.readers_waiting = 0
        #: When the dispatch thread will next look at deadlines (monotonic seconds). Read
        #: without a lock: a stale value at worst costs one extra wake-up.
        self.wake_at = 0.0
        #: Unbounded itself: the readers wait for room before they put (:meth:`room`),
        #: and the session's markers must never wait.
        self.messages: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._link = link
        # False for an in-process server, which may deliver on a caller's thread.
        self._readers_may_wait = readers_may_wait
        self._room = threading.Condition()
        self._queued_lock = threading.Lock()  # queued, when several readers put

    def room(self) -> bool:
        """Whether a reader may queue a message now: at once while the inbox has room or
        the readers may not wait, else once the dispatch thread made room. False when
        the session stopped or failed meanwhile (nothing will route the message: the
        caller drops it).

        A reader that waits stops reading, so the pipe or the socket pushes back on the
        server. Never called on the dispatch thread.
        """
        if self.queued - self.routed < self.limit or not self._readers_may_wait:
            return True
        link = self._link
        with self._room:
            self.readers_waiting += 1
            try:
                while self.queued - self.routed >= self.limit:
                    if link.stopped or link.closed_error is not None:
                        return False
                    self._room.wait(IDLE_WAIT)
            finally:
                self.readers_waiting -= 1
        return True

    def put_shared(self, message: Any) -> bool:
        """Queue a message from one of several reader threads, once there is
        :meth:`room`; False, nothing queued, when the session stopped meanwhile."""
        if not self.room():
            return False
        with self._queued_lock:
            self.queued += 1
        self.messages.put(message)
        return True

    def put_marker(self, marker: Any) -> None:
        """Queue one of the session's markers, whatever the bound; not counted."""
        self.messages.put(marker)

    def wake(self) -> None:
        """Wake the dispatch thread: a deadline comes before ``wake_at``."""
        self.messages.put(WAKE)

    def wake_readers(self) -> None:
        """Wake the readers waiting for room (the dispatch thread, once half the inbox is
        free: one wake-up per half inbox, not per message)."""
        with self._room:
            self._room.notify_all()

    def stop(self) -> None:
        """Queue :data:`STOP` and wake every reader waiting for room: they give up, as
        nothing will route what they hold."""
        self.messages.put(STOP)
        self.wake_readers()


class Admission(enum.Enum):
    """What :meth:`CallbackQueue.put` did with an entry."""

    QUEUED = "queued"
    DROPPED = "dropped"  # a droppable entry met a full queue
    MERGED = "merged"  # an equal change notification is waiting already
    FULL = "full"  # nothing may be dropped to make room: the caller must act


class CallbackQueue:
    """The notification callbacks waiting for the callback thread: at most ``limit``
    entries, taken in order by one consumer; ``put`` waits at most ``grace`` seconds for
    room, and not at all while the consumer is stuck (see the module docstring).

    Thread-safe: ``_lock`` guards every field. ``dropped`` counts the entries dropped
    (new ones refused and queued ones pushed out), for the session's counter.
    """

    def __init__(self, limit: int, grace: float = 0.0) -> None:
        if limit < 1:
            raise ValueError("a CallbackQueue holds at least one entry")
        self.limit = limit
        self.grace = grace
        self.dropped = 0
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._room = threading.Condition(self._lock)
        # Set when the consumer took nothing for ``grace``; cleared once half drained.
        self._stuck = False
        # (entry, droppable, merge key); control entries have droppable None.
        self._entries: Deque[Tuple[Any, Optional[bool], Optional[Hashable]]] = (
            collections.deque())
        self._droppable = 0  # droppable entries waiting
        self._keys: Counter[Hashable] = collections.Counter()  # merge keys waiting

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def put(self, entry: Any, *, droppable: bool, key: Optional[Hashable] = None) -> Admission:
        """Queue ``entry`` unless the queue is full; see the module docstring.

        ``key`` names a change notification whose repeats may be merged while full.
        """
        with self._lock:
            if len(self._entries) >= self.limit and not (
                    key is not None and not droppable and self._keys[key]):
                self._wait_for_room()
            if len(self._entries) >= self.limit:
                if droppable:
                    self.dropped += 1
                    return Admission.DROPPED
                if key is not None and self._keys[key]:
                    return Admission.MERGED
                if not self._droppable:
                    return Admission.FULL
                self._drop_oldest_droppable()
            self._entries.append((entry, droppable, key))
            if droppable:
                self._droppable += 1
            if key is not None:
                self._keys[key] += 1
            self._ready.notify()
            return Admission.QUEUED

    def put_control(self, entry: Any) -> None:
        """Queue ``entry`` whatever the bound (one-off entries of the session: the
        connection-lost report, the stop sentinel)."""
        with self._lock:
            self._entries.append((entry, None, None))
            self._ready.notify()

    def get(self, timeout: float) -> Tuple[bool, Any]:
        """The oldest entry as ``(True, entry)``, or ``(False, None)`` after ``timeout``."""
        with self._lock:
            if not self._entries and not self._ready.wait(timeout):
                return False, None
            if not self._entries:
                return False, None
            entry, droppable, key = self._entries.popleft()
            if self._stuck and len(self._entries) <= self.limit // 2:
                self._stuck = False
            self._room.notify()
            if droppable:
                self._droppable -= 1
            if key is not None:
                self._forget_key(key)
            return True, entry

    def _wait_for_room(self) -> None:
        """Wait (lock held) up to ``grace`` for the consumer to take an entry; mark the
        consumer stuck if it took none."""
        if self._stuck or self.grace <= 0:
            return
        deadline = time.monotonic() + self.grace
        while len(self._entries) >= self.limit:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._stuck = True
                return
            self._room.wait(remaining)

    def _drop_oldest_droppable(self) -> None:
        for index, (_, droppable, _) in enumerate(self._entries):
            if droppable:
                del self._entries[index]
                self._droppable -= 1
                self.dropped += 1
                return

    def _forget_key(self, key: Hashable) -> None:
        self._keys[key] -= 1
        if not self._keys[key]:
            del self._keys[key]
