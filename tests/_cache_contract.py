"""The contract every response-cache store keeps, and the cache's rules over a store: one
set of checks run against each store (``MemoryStore`` in ``tests/unit``, ``RedisStore``
over a real ``redis-server`` and ``DjangoCacheStore`` over Django's caches in
``tests/places``), so that a promise of ``mcp_sync.cache.CacheStore`` holds for all.

Each check takes a store the test made empty for it (a fresh one, or a fresh database).
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict

from mcp_sync.cache import CacheStore, ResponseCache, credential_identity, url_identity

from .conftest import ROOT
from .helpers import wait_for

STATELESS = "2026-07-28"
SERVER = url_identity("http://127.0.0.1:1/mcp")


def page(ttl_ms: Any = 60_000, scope: Any = "public", **fields: Any) -> Dict[str, Any]:
    """A cacheable result as a 2026-07-28 server sends it."""
    result: Dict[str, Any] = {"resultType": "complete", **fields}
    if ttl_ms is not None:
        result["ttlMs"] = ttl_ms
    if scope is not None:
        result["cacheScope"] = scope
    return result


def check_store_contract(store: CacheStore, *, ttl: float = 0.3) -> None:
    """The four methods of ``CacheStore`` as its docstring promises them; an entry set for
    ``ttl`` seconds is gone within a bound after it (real time)."""
    assert isinstance(store, CacheStore)
    prefix = "mcp-sync:test:" + os.urandom(4).hex() + ":"
    one, two, three = prefix + "one", prefix + "two", prefix + "three"
    assert dict(store.get_many([one, two])) == {}
    assert dict(store.get_many([])) == {}
    # Bytes come back exactly, non-UTF-8 bytes included.
    raw = bytes(range(256))
    store.set(one, raw, 60)
    store.set(two, b"{}", 60)
    assert dict(store.get_many([one, two, three])) == {one: raw, two: b"{}"}
    store.set(two, b"replaced", 60)
    assert dict(store.get_many([two])) == {two: b"replaced"}
    # add sets only what holds nothing.
    assert store.add(two, b"added", 60) is False
    assert dict(store.get_many([two])) == {two: b"replaced"}
    assert store.add(three, b"added", 60) is True
    assert dict(store.get_many([three])) == {three: b"added"}
    # delete_many: a missing key and an empty list are no error.
    store.delete_many([one, two, prefix + "never"])
    store.delete_many([])
    assert dict(store.get_many([one, two, three])) == {three: b"added"}
    # Expiry: gone once its TTL passed (whole-second stores round up).
    short = prefix + "short"
    store.set(short, b"soon gone", ttl)
    wait_for(lambda: short not in store.get_many([short]), timeout=10,
             what="an entry to expire")
    # A key whose entry expired may be added again.
    assert store.add(short, b"again", 60) is True
    store.delete_many([three, short])


def check_cache_over_store(make_store: Callable[[], CacheStore]) -> None:
    """The cache's rules over a store, with two caches (as two processes would have) on
    two store objects over the same backend: a public entry is shared, a private one only
    within its context, an invalidation by one is seen by the other, a refresh replaces."""
    first = ResponseCache(make_store())
    second = ResponseCache(make_store())
    alice = credential_identity(headers={"Authorization": "Bearer alice-" + os.urandom(4).hex()})
    bob = credential_identity(headers={"Authorization": "Bearer bob-" + os.urandom(4).hex()})
    server = url_identity(f"http://127.0.0.1:1/mcp-{os.urandom(4).hex()}")
    a_view = first.bind(server=server, version=STATELESS, context=alice)
    b_view = second.bind(server=server, version=STATELESS, context=bob)
    a_again = second.bind(server=server, version=STATELESS, context=alice)

    # A public listing fetched by alice's process is served to bob's.
    ticket = a_view.lookup("tools/list")
    assert ticket.hit is None
    tools = [page(60_000, "public", tools=[{"name": "a"}], nextCursor="2"),
             page(30_000, "public", tools=[{"name": "b"}])]
    info = a_view.store_pages(ticket, tools)
    assert info.stored and info.ttl == 30.0 and info.scope == "public"
    hit = b_view.lookup("tools/list").hit
    assert hit is not None and hit.pages == tools and hit.info.hit

    # A private read is served to alice in the other process, never to bob.
    uri = "test://private/" + os.urandom(4).hex()
    ticket = a_view.lookup("resources/read", {"uri": uri})
    secret_result = page(60_000, "private", contents=[{"uri": uri, "text": "alice's"}])
    assert a_view.store(ticket, secret_result).stored
    assert b_view.lookup("resources/read", {"uri": uri}).hit is None
    served = a_again.lookup("resources/read", {"uri": uri}).hit
    assert served is not None and served.result == secret_result
    assert served.info.scope == "private"

    # An invalidation in one process is seen by the other at its next lookup.
    assert b_view.notified("notifications/tools/list_changed") == (("tools/list", None),)
    assert a_view.lookup("tools/list").hit is None
    assert a_again.lookup("resources/read", {"uri": uri}).hit is not None
    a_view.notified("notifications/resources/updated", {"uri": uri})
    assert a_again.lookup("resources/read", {"uri": uri}).hit is None

    # A refresh never serves, and replaces what was stored.
    ticket = a_view.lookup("resources/read", {"uri": uri})
    a_view.store(ticket, secret_result)
    refresh = a_again.lookup("resources/read", {"uri": uri}, mode="refresh")
    assert refresh.hit is None
    newer = page(60_000, "private", contents=[{"uri": uri, "text": "newer"}])
    a_again.store(refresh, newer)
    again = a_view.lookup("resources/read", {"uri": uri}).hit
    assert again is not None and again.result == newer

    # A reconnect drops everything of the server, everywhere.
    listing = b_view.lookup("prompts/list")
    b_view.store_pages(listing, [page(60_000, "public", prompts=[])])
    assert a_view.lookup("prompts/list").hit is not None
    a_view.reconnected()
    assert b_view.lookup("prompts/list").hit is None
    assert a_again.lookup("resources/read", {"uri": uri}).hit is None


def docs_example(heading: str) -> str:
    """The first Python block after ``heading`` in docs/caching.md: the page's examples
    are run by the tests, as written."""
    text = (ROOT / "docs" / "caching.md").read_text(encoding="utf-8")
    after = text[text.index(heading + "\n"):]
    start = after.index("```python\n") + len("```python\n")
    return after[start:after.index("```\n", start)]
