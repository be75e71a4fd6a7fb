"""``RedisStore``: the cache in a Redis server, shared by every process that reaches it
(``pip install 'mcp-sync-client[redis]'``, the ``redis`` client)."""

from __future__ import annotations

import math
from typing import Any, Dict, Optional, Sequence

__all__ = ["RedisStore"]


class RedisStore:
    """A :class:`~mcp_sync.cache.CacheStore` over Redis: every process (every gunicorn
    worker, every Celery worker, every machine) whose cache uses the same Redis database
    shares its entries, and an invalidation in one reaches them all.

    Give it a URL (``redis://host:6379/2``; the ``redis`` client is then made here, with
    ``timeout`` on connecting and on every command, and closed by :meth:`close`) or a
    ``redis.Redis`` client of your own (``client=``: its settings apply, bound its
    timeouts yourself; :meth:`close` leaves it open). Values are stored as they are
    (bytes), each key with Redis's own expiry (``PX``); :meth:`add` is ``SET NX``, atomic.
    Keys start with ``mcp-sync:``: the database can be shared with other data.

    Thread-safe: the ``redis`` client takes a connection from its pool for each command.

    Raises:
        ValueError: neither or both of ``url`` and ``client``.
        ImportError: the ``redis`` package is not installed.
    """

    def __init__(self, url: Optional[str] = None, *, client: Any = None,
                 timeout: float = 5.0) -> None:
        if (url is None) == (client is None):
            raise ValueError("RedisStore needs a url or a client (one of them)")
        self._owned = client is None
        if client is None:
            try:
                import redis
            except ImportError as exc:
                raise ImportError(
                    "RedisStore needs the redis client: pip install 'mcp-sync-client[redis]'"
                ) from exc
            client = redis.Redis.from_url(str(url), socket_timeout=timeout,
                                          socket_connect_timeout=timeout)
        self.client = client

    def get_many(self, keys: Sequence[str]) -> Dict[str, bytes]:
        if not keys:
            return {}
        values = self.client.mget(list(keys))
        return {key: bytes(value) for key, value in zip(keys, values) if value is not None}

    def set(self, key: str, value: bytes, ttl: float) -> None:
        self.client.set(key, value, px=_milliseconds(ttl))

    def add(self, key: str, value: bytes, ttl: float) -> bool:
        return bool(self.client.set(key, value, px=_milliseconds(ttl), nx=True))

    def delete_many(self, keys: Sequence[str]) -> None:
        if keys:
            self.client.delete(*keys)

    def close(self) -> None:
        """Close the client this store made (a client given to it is left open)."""
        if self._owned:
            self.client.close()


def _milliseconds(ttl: float) -> int:
    # Rounded up: Redis never expires an entry before the cache itself would.
    return max(1, math.ceil(ttl * 1000))
