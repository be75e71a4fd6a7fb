"""``DjangoCacheStore``: the response cache in one of Django's caches (``CACHES``).

Settings::

    CACHES = {
        "default": {...},
        "mcp": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                "LOCATION": "redis://127.0.0.1:6379/3"},
    }

and the cache ``ResponseCache(DjangoCacheStore("mcp"))`` (see docs/caching.md).
Which processes share the entries is the
backend's answer: ``LocMemCache`` is this process only; ``FileBasedCache`` every process
with the same directory on the same machine; Redis, memcached and the database cache
every process that reaches them.
"""

from __future__ import annotations

import math
from typing import Any, Dict, Sequence

__all__ = ["DjangoCacheStore"]


class DjangoCacheStore:
    """A :class:`~mcp_sync.cache.CacheStore` over ``django.core.cache.caches[alias]``.

    The cache is looked up at each call, as Django wants (its cache objects belong to
    one thread each). Values are bytes, which every backend stores as they are given
    (pickled, as Django does); Django's ``KEY_PREFIX``, ``VERSION`` and key function
    apply. TTLs are rounded up to whole seconds (some backends know no finer), which the
    response cache's own freshness check, to the millisecond, makes harmless. ``add`` is
    the backend's: atomic on Redis, memcached and the local-memory cache, not across
    processes on the file cache, where a race costs a miss, never a stale answer.

    Thread-safe, as Django's caches are. Blocks as long as the backend does: bound a
    network backend with its ``OPTIONS`` (socket timeouts).
    """

    def __init__(self, alias: str = "default") -> None:
        self.alias = alias

    def _cache(self) -> Any:
        from django.core.cache import caches

        return caches[self.alias]

    def get_many(self, keys: Sequence[str]) -> Dict[str, bytes]:
        found = self._cache().get_many(list(keys))
        return {key: value for key, value in found.items() if isinstance(value, bytes)}

    def set(self, key: str, value: bytes, ttl: float) -> None:
        self._cache().set(key, value, timeout=_seconds(ttl))

    def add(self, key: str, value: bytes, ttl: float) -> bool:
        return bool(self._cache().add(key, value, timeout=_seconds(ttl)))

    def delete_many(self, keys: Sequence[str]) -> None:
        if keys:
            self._cache().delete_many(list(keys))

    def __repr__(self) -> str:
        return f"DjangoCacheStore({self.alias!r})"


def _seconds(ttl: float) -> int:
    # Rounded up: the backend never expires an entry before the cache itself would (and
    # a timeout of 0 would mean "expire at once" to Django).
    return max(1, math.ceil(ttl))
