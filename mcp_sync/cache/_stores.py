"""Where cached results live: the :class:`CacheStore` protocol a store implements, and
:class:`MemoryStore`, the bounded in-process store that is the default.

A store is a dumb key-value map with expiry. It knows nothing of MCP: the keys are
opaque ASCII strings, the values opaque bytes (JSON written by
:class:`~mcp_sync.cache.ResponseCache`), and every rule (freshness, scope, invalidation)
is applied by the cache above it. That keeps a store small enough to write over anything
a web app already runs (Django's cache framework, Redis, memcached, a database table).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Callable, Dict, Mapping, Protocol, Sequence, Tuple, runtime_checkable

__all__ = ["DEFAULT_MAX_BYTES", "DEFAULT_MAX_ENTRIES", "CacheStore", "MemoryStore"]

#: :class:`MemoryStore`'s default bound on its entries.
DEFAULT_MAX_ENTRIES = 4096
#: :class:`MemoryStore`'s default bound on the bytes of its values (64 MiB).
DEFAULT_MAX_BYTES = 64 * 1024 * 1024


@runtime_checkable
class CacheStore(Protocol):
    """What :class:`~mcp_sync.cache.ResponseCache` needs of a store: four methods.

    The contract:

    * **Keys** are ASCII strings of at most 100 characters (letters, digits, ``:`` and
      ``-``); **values** are ``bytes``. A store may hold them as they are, or prefix the
      keys (Django's ``KEY_PREFIX``), but returns exactly the bytes it was given.
    * **TTL** is in seconds, always positive. A store must not return a value much past
      its TTL (the cache checks freshness itself too, to the millisecond, so a store
      with whole-second expiry is fine); it may drop any value earlier (an LRU bound, a
      restart): a missing value is a miss, never an error.
    * :meth:`add` sets a value only if the key holds none. Atomic where the backend can
      (``SET NX``, memcached's ``add``); a store that cannot make it atomic costs a few
      extra misses under a race, never a stale answer.
    * **Thread-safe**: one store is called from every thread of a process (and, for a
      shared store, from every process).
    * **Bounded**: every call returns or raises within the store's own timeout; a store
      that can block (a network) must have one.
    * **Errors** may be any exception: the cache logs it (once until the store works
      again) and carries on as if the value were missing. A call to the server never
      fails because of its cache.
    """

    def get_many(self, keys: Sequence[str]) -> Mapping[str, bytes]:
        """The values of those ``keys`` that hold one (a missing or expired key is
        left out)."""
        ...

    def set(self, key: str, value: bytes, ttl: float) -> None:
        """Store ``value`` under ``key`` for ``ttl`` seconds, replacing any value."""
        ...

    def add(self, key: str, value: bytes, ttl: float) -> bool:
        """Store ``value`` under ``key`` for ``ttl`` seconds if the key holds no value;
        whether it was stored."""
        ...

    def delete_many(self, keys: Sequence[str]) -> None:
        """Remove these keys (a missing key is no error)."""
        ...


class MemoryStore:
    """The default store: this process's memory, bounded, least recently used first out.

    At most ``max_entries`` entries and ``max_bytes`` bytes of values: storing past
    either bound drops the entries used longest ago; a value larger than ``max_bytes``
    is not stored (and whatever the key held is dropped). Expired entries are dropped
    when met, or when their turn to go comes. Only this process sees it: every cache
    given the same ``MemoryStore`` shares it.

    Thread-safe: one lock guards the map, held for no I/O. Never blocks otherwise.

    Raises:
        ValueError: a bound that is not positive.
    """

    def __init__(
        self,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_bytes: int = DEFAULT_MAX_BYTES,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, not {max_entries!r}")
        if max_bytes < 1:
            raise ValueError(f"max_bytes must be at least 1, not {max_bytes!r}")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._clock = clock
        # key -> (value, expiry on self._clock); the order is the LRU ledger, oldest
        # first. Guarded by _lock, as is _bytes (the sum of the values' lengths).
        self._entries: OrderedDict[str, Tuple[bytes, float]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    @property
    def size(self) -> int:
        """The bytes of the values held now."""
        with self._lock:
            return self._bytes

    def get_many(self, keys: Sequence[str]) -> Dict[str, bytes]:
        """The unexpired values of ``keys``; each one found becomes the most recent."""
        now = self._clock()
        found: Dict[str, bytes] = {}
        with self._lock:
            for key in keys:
                held = self._entries.get(key)
                if held is None:
                    continue
                if held[1] <= now:
                    self._drop(key)
                    continue
                self._entries.move_to_end(key)
                found[key] = held[0]
        return found

    def set(self, key: str, value: bytes, ttl: float) -> None:
        """Store ``value`` for ``ttl`` seconds, dropping the oldest entries past a bound."""
        with self._lock:
            self._put(key, value, ttl)

    def add(self, key: str, value: bytes, ttl: float) -> bool:
        """Store ``value`` unless ``key`` holds an unexpired value; atomic."""
        with self._lock:
            held = self._entries.get(key)
            if held is not None and held[1] > self._clock():
                return False
            return self._put(key, value, ttl)

    def delete_many(self, keys: Sequence[str]) -> None:
        with self._lock:
            for key in keys:
                self._drop(key)

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def _put(self, key: str, value: bytes, ttl: float) -> bool:
        # Caller holds _lock.
        self._drop(key)
        size = len(value)
        if size > self.max_bytes or not ttl > 0:
            return False
        now = self._clock()
        self._entries[key] = (bytes(value), now + ttl)
        self._bytes += size
        # Past a bound, the least recently used go (O(1) each; an expired entry is
        # dropped when met, or when its turn in this order comes).
        while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
            self._drop(next(iter(self._entries)))
        return True

    def _drop(self, key: str) -> None:
        # Caller holds _lock.
        held = self._entries.pop(key, None)
        if held is not None:
            self._bytes -= len(held[0])
