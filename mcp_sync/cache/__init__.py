"""Response caching for the 2026-07-28 era (SEP-2549): stores a web app can share.

A 2026-07-28 server puts two hints on the results of ``server/discover``,
``tools/list``, ``prompts/list``, ``resources/list``, ``resources/templates/list`` and
``resources/read``: ``ttlMs`` (how long the result may be treated as fresh, like HTTP's
``max-age``) and ``cacheScope`` (``"public"``: anyone may be served it; ``"private"``:
only the authorization context that fetched it). This package applies the
specification's caching page to them, independent of any client: a client asks it before
a request and hands it the result after.

The rules, as implemented here:

1. **Which results.** Those six methods, in the stateless era only (another era's
   ``ttlMs``, if a server sent one, is not honoured). A result whose ``resultType`` is
   not ``"complete"`` (``input_required``) is never stored, and neither is the result of
   a multi round-trip retry (a request carrying ``inputResponses`` or ``requestState``
   is neither looked up nor stored).
2. **Freshness.** ``ttlMs`` absent, 0, negative or not a number: stale at once, not
   stored. Positive: fresh while ``now < received + ttlMs`` on the wall clock, counting
   from before the request was sent (never younger than it says), at most ``max_ttl``
   (a day). The store's own expiry is set to the same TTL.
3. **Scope.** ``cacheScope: "public"`` is served to every authorization context of the
   same server (``share_public=False`` keeps it to the one that fetched it);
   ``"private"``, an unknown value or none is served to the same context only. The
   context is a digest of the credentials (headers, ``requests`` auth, a URL's
   user:password), never the token; a result whose scope changed replaces the entry of
   the other scope.
4. **Keys.** The server's identity (its URL without credentials, or a digest of its
   command line and environment), the protocol version, the scope and context, the
   method and the params that affect the result (all but ``_meta``: the ``uri``, a
   ``cursor``), hashed (HMAC with ``secret`` when one is given) under a prefix that names
   the format: a new format never reads an old entry.
5. **Listings.** A list is cached whole, all its pages in one entry: as fresh as its
   stalest page (the smallest TTL), private if any page is, not cached if any page may
   not be.
6. **Invalidation.** ``notifications/tools/list_changed`` and
   ``prompts/list_changed`` make their list stale; ``resources/list_changed`` the
   resources and the templates; ``resources/updated`` that resource's reads; a
   connection that replaces a lost one (a reconnect, a renewed session, a restarted
   server) everything of that server. Stale means stale in every process sharing the
   store, for every context: entries record generation tokens, and invalidating
   replaces a token (see :mod:`mcp_sync.cache._cache`). A result whose request was sent
   before an invalidation is never served after it.
7. **Per call.** ``"use"`` (the default) serves a fresh entry and stores what is
   fetched; ``"refresh"`` fetches, stores, and never serves; ``"bypass"`` neither reads
   nor writes. A refresh whose result may not be stored drops the entry it supersedes.
8. **What a user sees.** :class:`CacheInfo`: whether the result came from the cache,
   its age, its TTL and scope, whether it is held.
9. **Failures.** A store that fails (Redis down, a full disk) is logged once and taken
   for a miss: a call never fails because of its cache. An entry that is malformed,
   too large (``max_entry_bytes``) or of another format is a miss, never an error;
   entries are JSON, never pickles.

Stores: :class:`MemoryStore` (this process, bounded, least recently used out: the
default), :class:`RedisStore` (``pip install 'mcp-sync-client[redis]'``) and
:class:`mcp_sync.contrib.django.cache.DjangoCacheStore` (any cache of Django's cache
framework). A store of your own implements the four methods of :class:`CacheStore`.
See docs/caching.md.
"""

from __future__ import annotations

from ._cache import DEFAULT_MAX_ENTRY_BYTES, Cached, CacheInfo, ResponseCache, ServerCache, Ticket
from ._keys import FORMAT, command_identity, credential_identity, params_key, url_identity
from ._redis import RedisStore
from ._rules import (
    CACHE_MODES,
    CACHEABLE_METHODS,
    MAX_TTL,
    Hints,
    cacheable_params,
    check_mode,
    hints_honoured,
    hints_of,
    listing_hints,
    stale_after,
)
from ._stores import DEFAULT_MAX_BYTES, DEFAULT_MAX_ENTRIES, CacheStore, MemoryStore

__all__ = [
    "CACHEABLE_METHODS",
    "CACHE_MODES",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_ENTRIES",
    "DEFAULT_MAX_ENTRY_BYTES",
    "FORMAT",
    "MAX_TTL",
    "CacheInfo",
    "CacheStore",
    "Cached",
    "Hints",
    "MemoryStore",
    "RedisStore",
    "ResponseCache",
    "ServerCache",
    "Ticket",
    "cacheable_params",
    "check_mode",
    "command_identity",
    "credential_identity",
    "hints_honoured",
    "hints_of",
    "listing_hints",
    "params_key",
    "stale_after",
    "url_identity",
]
