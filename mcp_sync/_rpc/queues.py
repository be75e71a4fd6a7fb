"""The bounded queue of notification callbacks (dispatch thread -> callback thread).

The dispatch thread must never wait long for user code: a callback that calls the client
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
import threading
import time
from typing import Any, Counter, Deque, Hashable, Optional, Tuple

__all__ = ["Admission", "CallbackQueue"]


class Admission(enum.Enum):
    """What :meth:`CallbackQueue.put` did with an entry."""

    QUEUED = "queued"
    DROPPED = "dropped"  # a droppable entry met a full queue
    MERGED = "merged"  # an equal change notification is waiting already
    FULL = "full"  # nothing may be dropped to make room: the caller must act


class CallbackQueue:
    """At most ``limit`` entries, taken in order by one consumer; ``put`` waits at most
    ``grace`` seconds for room, and not at all while the consumer is stuck.

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
