"""The response cache over the in-process store, on a clock the test moves: freshness,
scope, modes, invalidation and its races, and a store that fails (mcp_sync.cache)."""

from __future__ import annotations

import json
import logging
import threading
from typing import Any, Dict, List, Mapping, Sequence

import pytest

from mcp_sync.cache import (
    CacheInfo,
    MemoryStore,
    ResponseCache,
    ServerCache,
    credential_identity,
    url_identity,
)

from .._cache_contract import STATELESS, check_cache_over_store, check_store_contract, page

SERVER = url_identity("http://127.0.0.1:1/mcp")
ALICE = credential_identity(headers={"Authorization": "Bearer alice"})
BOB = credential_identity(headers={"Authorization": "Bearer bob"})


class Clock:
    """Seconds that move only when the test says so."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(clock: Clock) -> MemoryStore:
    return MemoryStore(clock=clock)


@pytest.fixture
def cache(store: MemoryStore, clock: Clock) -> ResponseCache:
    return ResponseCache(store, clock=clock)


def view(cache: ResponseCache, context: str = ALICE, version: str = STATELESS,
         server: str = SERVER) -> ServerCache:
    return cache.bind(server=server, version=version, context=context)


def fetch(server: ServerCache, method: str, result: Mapping[str, Any],
          params: Any = None, mode: str = "use") -> CacheInfo:
    """A miss (checked), then the result stored: what a client does on a miss."""
    ticket = server.lookup(method, params, mode=mode)
    assert ticket.hit is None
    return server.store(ticket, result)


def served(server: ServerCache, method: str, params: Any = None) -> Any:
    """The result the cache serves, or None."""
    hit = server.lookup(method, params).hit
    return None if hit is None else hit.result


# -- freshness ----------------------------------------------------------------------------


def test_a_result_is_fresh_for_its_ttl_then_fetched_again(cache: ResponseCache,
                                                          clock: Clock) -> None:
    alice = view(cache)
    result = page(60_000, "public", tools=[{"name": "echo"}])
    info = fetch(alice, "tools/list", result)
    assert info == CacheInfo(hit=False, age=0.0, ttl=60.0, scope="public", stored=True)
    clock.now += 59.9
    hit = alice.lookup("tools/list").hit
    assert hit is not None and hit.result == result
    assert hit.info.hit and hit.info.age == pytest.approx(59.9) and hit.info.scope == "public"
    assert hit.info.expires_in == pytest.approx(0.1)
    clock.now += 0.1  # now == received + ttl: stale
    assert served(alice, "tools/list") is None


@pytest.mark.parametrize("ttl_ms", [None, 0, -1, "60000"])
def test_a_result_without_a_positive_ttl_is_not_stored(cache: ResponseCache, store: MemoryStore,
                                                       ttl_ms: Any) -> None:
    alice = view(cache)
    info = fetch(alice, "tools/list", page(ttl_ms, "public", tools=[]))
    assert not info.stored and info.ttl == 0
    assert served(alice, "tools/list") is None
    # Nothing but the generation tokens went to the store.
    assert all(key.startswith("mcp-sync:c1:g:") for key in store._entries)


def test_the_age_counts_from_before_the_request(cache: ResponseCache, clock: Clock) -> None:
    """The freshness clock starts before the request is sent: a slow answer is never
    served past received + ttl."""
    alice = view(cache)
    ticket = alice.lookup("resources/read", {"uri": "a"})
    clock.now += 5  # the server took 5 s to answer
    info = alice.store(ticket, page(10_000, "private", contents=[]))
    assert info.age == pytest.approx(5) and info.expires_in == pytest.approx(5)
    clock.now += 4.9
    assert served(alice, "resources/read", {"uri": "a"}) is not None
    clock.now += 0.2
    assert served(alice, "resources/read", {"uri": "a"}) is None


def test_the_ttl_is_capped(store: MemoryStore, clock: Clock) -> None:
    alice = view(ResponseCache(store, clock=clock, max_ttl=10))
    assert fetch(alice, "prompts/list", page(10 ** 9, "public", prompts=[])).ttl == 10
    clock.now += 10
    assert served(alice, "prompts/list") is None


def test_an_entry_from_the_future_is_believed_no_further_than_its_ttl(
        cache: ResponseCache, clock: Clock) -> None:
    """Another machine's clock ahead of ours: its entry is served while within its TTL
    of our clock, age 0."""
    alice = view(cache)
    clock.now += 30
    fetch(alice, "tools/list", page(60_000, "public", tools=[]))
    clock.now -= 30
    hit = alice.lookup("tools/list").hit
    assert hit is not None and hit.info.age == 0
    clock.now -= 31  # 61 s behind the writer: more than the TTL
    assert served(alice, "tools/list") is None


def test_hints_are_honoured_in_the_stateless_era_only(cache: ResponseCache,
                                                      store: MemoryStore) -> None:
    session_era = view(cache, version="2025-11-25")
    assert not session_era.enabled
    ticket = session_era.lookup("tools/list")
    assert ticket.mode == "bypass"
    info = session_era.store(ticket, page(60_000, "public", tools=[]))
    assert not info.stored
    assert served(session_era, "tools/list") is None
    assert len(store) == 0  # the store was never asked


def test_entries_never_cross_protocol_versions(cache: ResponseCache) -> None:
    fetch(view(cache), "tools/list", page(60_000, "public", tools=[]))
    assert served(view(cache, version="2099-01-01"), "tools/list") is None


# -- listings -----------------------------------------------------------------------------


def test_a_listing_is_stored_whole_as_fresh_as_its_stalest_page(cache: ResponseCache,
                                                                clock: Clock) -> None:
    alice = view(cache)
    pages = [page(60_000, "public", tools=[{"name": "a"}], nextCursor="p2"),
             page(5_000, "public", tools=[{"name": "b"}], nextCursor="p3"),
             page(30_000, "public", tools=[{"name": "c"}])]
    ticket = alice.lookup("tools/list")
    info = alice.store_pages(ticket, pages)
    assert info.stored and info.ttl == 5 and info.scope == "public"
    hit = alice.lookup("tools/list").hit
    assert hit is not None and hit.pages == pages
    clock.now += 5
    assert alice.lookup("tools/list").hit is None


def test_a_listing_with_one_private_page_is_private(cache: ResponseCache) -> None:
    alice, bob = view(cache), view(cache, BOB)
    ticket = alice.lookup("resources/list")
    info = alice.store_pages(ticket, [page(60_000, "public", resources=[], nextCursor="2"),
                                      page(60_000, "private", resources=[])])
    assert info.scope == "private"
    assert served(alice, "resources/list") is not None
    assert served(bob, "resources/list") is None


def test_a_listing_with_one_page_that_may_not_be_cached_is_not(cache: ResponseCache) -> None:
    alice = view(cache)
    ticket = alice.lookup("tools/list")
    info = alice.store_pages(ticket, [page(60_000, "public", tools=[], nextCursor="2"),
                                      page(0, "public", tools=[])])
    assert not info.stored
    assert served(alice, "tools/list") is None


def test_the_params_that_affect_the_result_make_the_key(cache: ResponseCache) -> None:
    alice = view(cache)
    fetch(alice, "resources/read", page(60_000, "public", contents=["a"]), {"uri": "a"})
    fetch(alice, "resources/read", page(60_000, "public", contents=["b"]), {"uri": "b"})
    assert served(alice, "resources/read", {"uri": "a"})["contents"] == ["a"]
    assert served(alice, "resources/read", {"uri": "b"})["contents"] == ["b"]
    # _meta is not part of it.
    assert served(alice, "resources/read", {"uri": "a", "_meta": {"progressToken": 7}})
    # A cursor is: a page on its own is another entry.
    assert served(alice, "tools/list", {"cursor": "2"}) is None


# -- scope --------------------------------------------------------------------------------


def test_a_private_result_is_never_served_to_another_authorization_context(
        cache: ResponseCache) -> None:
    alice, bob, nobody = view(cache), view(cache, BOB), view(cache, "")
    fetch(alice, "resources/read", page(60_000, "private", contents=["alice's"]), {"uri": "me"})
    assert served(alice, "resources/read", {"uri": "me"}) is not None
    assert served(bob, "resources/read", {"uri": "me"}) is None
    assert served(nobody, "resources/read", {"uri": "me"}) is None
    # Bob's own is his, and alice still gets hers.
    fetch(bob, "resources/read", page(60_000, "private", contents=["bob's"]), {"uri": "me"})
    assert served(bob, "resources/read", {"uri": "me"})["contents"] == ["bob's"]
    assert served(alice, "resources/read", {"uri": "me"})["contents"] == ["alice's"]


def test_a_public_result_is_served_to_every_context_unless_told_not_to(
        store: MemoryStore, clock: Clock) -> None:
    shared = ResponseCache(store, clock=clock)
    fetch(view(shared), "tools/list", page(60_000, "public", tools=[]))
    assert served(view(shared, BOB), "tools/list") is not None
    assert served(view(shared, ""), "tools/list") is not None
    # Another server is another server.
    assert served(view(shared, server=url_identity("http://other/mcp")), "tools/list") is None

    kept = ResponseCache(MemoryStore(clock=clock), clock=clock, share_public=False)
    fetch(view(kept), "tools/list", page(60_000, "public", tools=[]))
    assert served(view(kept), "tools/list") is not None
    assert served(view(kept, BOB), "tools/list") is None


def test_a_scope_change_replaces_the_entry_of_the_other_scope(cache: ResponseCache) -> None:
    alice, bob = view(cache), view(cache, BOB)
    fetch(alice, "tools/list", page(60_000, "private", tools=[{"name": "old"}]))
    # The server now says public: alice's refresh stores it public, and her private
    # entry does not shadow it.
    fetch(alice, "tools/list", page(60_000, "public", tools=[{"name": "new"}]), mode="refresh")
    assert served(alice, "tools/list")["tools"] == [{"name": "new"}]
    assert served(bob, "tools/list")["tools"] == [{"name": "new"}]
    # And back to private: bob no longer gets the public one.
    fetch(alice, "tools/list", page(60_000, "private", tools=[{"name": "mine"}]),
          mode="refresh")
    assert served(alice, "tools/list")["tools"] == [{"name": "mine"}]
    assert served(bob, "tools/list") is None


# -- modes --------------------------------------------------------------------------------


def test_refresh_never_serves_and_replaces(cache: ResponseCache) -> None:
    alice = view(cache)
    fetch(alice, "tools/list", page(60_000, "public", tools=[{"name": "old"}]))
    ticket = alice.lookup("tools/list", mode="refresh")
    assert ticket.hit is None
    alice.store(ticket, page(60_000, "public", tools=[{"name": "new"}]))
    assert served(alice, "tools/list")["tools"] == [{"name": "new"}]


def test_a_refresh_that_may_not_be_stored_drops_what_it_supersedes(
        cache: ResponseCache) -> None:
    alice = view(cache)
    fetch(alice, "tools/list", page(60_000, "public", tools=[{"name": "old"}]))
    ticket = alice.lookup("tools/list", mode="refresh")
    assert not alice.store(ticket, page(0, "public", tools=[])).stored
    assert served(alice, "tools/list") is None
    # So does one that got no result at all.
    fetch(alice, "tools/list", page(60_000, "public", tools=[]))
    alice.discard(alice.lookup("tools/list", mode="refresh"))
    assert served(alice, "tools/list") is None


def test_bypass_neither_reads_nor_writes(cache: ResponseCache, store: MemoryStore) -> None:
    alice = view(cache)
    fetch(alice, "tools/list", page(60_000, "public", tools=[{"name": "old"}]))
    before = dict(store._entries)
    ticket = alice.lookup("tools/list", mode="bypass")
    assert ticket.hit is None and ticket.mode == "bypass"
    info = alice.store(ticket, page(60_000, "public", tools=[{"name": "new"}]))
    assert not info.stored and info.ttl == 60
    alice.discard(ticket)
    assert dict(store._entries) == before
    assert served(alice, "tools/list")["tools"] == [{"name": "old"}]


def test_lookup_refuses_what_it_cannot_cache(cache: ResponseCache) -> None:
    alice = view(cache)
    with pytest.raises(ValueError, match="not a cacheable method"):
        alice.lookup("tools/call", {"name": "x"})
    with pytest.raises(ValueError, match="cache mode"):
        alice.lookup("tools/list", mode="sometimes")
    other = view(ResponseCache())
    with pytest.raises(ValueError, match="another cache view"):
        other.store(alice.lookup("tools/list"), page())


def test_the_answer_of_input_rounds_is_never_cached(cache: ResponseCache) -> None:
    """A multi round-trip continuation is neither served nor stored; an input_required
    result is not stored either."""
    alice = view(cache)
    fetch(alice, "resources/read", page(60_000, "public", contents=["x"]), {"uri": "a"})
    continuation = alice.lookup("resources/read", {"uri": "a", "requestState": "s1"})
    assert continuation.hit is None and continuation.mode == "bypass"
    assert not alice.store(continuation, page(60_000, "public", contents=["y"])).stored
    assert served(alice, "resources/read", {"uri": "a"})["contents"] == ["x"]
    info = fetch(alice, "resources/read", {"resultType": "input_required", "ttlMs": 60_000,
                                           "cacheScope": "public"}, {"uri": "b"})
    assert not info.stored
    assert served(alice, "resources/read", {"uri": "b"}) is None


def test_many_resources_each_keep_their_own_entry(cache: ResponseCache) -> None:
    """More resources than a view remembers the keys of: each is still its own entry."""
    alice = view(cache)
    uris = [f"file:///{number}" for number in range(600)]
    for uri in uris:
        fetch(alice, "resources/read", page(60_000, "private", contents=[uri]), {"uri": uri})
    for uri in (uris[0], uris[299], uris[-1]):
        assert served(alice, "resources/read", {"uri": uri})["contents"] == [uri]
    alice.notified("notifications/resources/updated", {"uri": uris[0]})
    assert served(alice, "resources/read", {"uri": uris[0]}) is None
    assert served(alice, "resources/read", {"uri": uris[1]}) is not None


# -- invalidation -------------------------------------------------------------------------


def test_list_changed_drops_its_list_for_every_context(cache: ResponseCache) -> None:
    alice, bob = view(cache), view(cache, BOB)
    for method, key in (("tools/list", "tools"), ("prompts/list", "prompts"),
                        ("resources/list", "resources"),
                        ("resources/templates/list", "resourceTemplates")):
        fetch(alice, method, page(60_000, "private", **{key: []}))
        fetch(bob, method, page(60_000, "private", **{key: []}))
    alice.notified("notifications/resources/list_changed")
    for who in (alice, bob):
        assert served(who, "resources/list") is None
        assert served(who, "resources/templates/list") is None
        assert served(who, "tools/list") is not None
    bob.notified("notifications/tools/list_changed")
    assert served(alice, "tools/list") is None and served(alice, "prompts/list") is not None


def test_resources_updated_drops_that_resource_only(cache: ResponseCache) -> None:
    alice = view(cache)
    for uri in ("file:///a", "file:///b"):
        fetch(alice, "resources/read", page(60_000, "private", contents=[uri]), {"uri": uri})
    fetch(alice, "resources/list", page(60_000, "public", resources=[]))
    alice.notified("notifications/resources/updated", {"uri": "file:///a"})
    assert served(alice, "resources/read", {"uri": "file:///a"}) is None
    assert served(alice, "resources/read", {"uri": "file:///b"}) is not None
    assert served(alice, "resources/list") is not None
    # A resources/updated without a usable uri: every read.
    alice.notified("notifications/resources/updated", {})
    assert served(alice, "resources/read", {"uri": "file:///b"}) is None


def test_a_reconnect_drops_everything_of_that_server_only(cache: ResponseCache) -> None:
    alice = view(cache)
    elsewhere = view(cache, server=url_identity("http://127.0.0.1:2/mcp"))
    fetch(alice, "tools/list", page(60_000, "public", tools=[]))
    fetch(alice, "resources/read", page(60_000, "private", contents=[]), {"uri": "a"})
    fetch(elsewhere, "tools/list", page(60_000, "public", tools=[]))
    alice.reconnected()
    assert served(alice, "tools/list") is None
    assert served(alice, "resources/read", {"uri": "a"}) is None
    assert served(elsewhere, "tools/list") is not None


def test_a_result_fetched_across_an_invalidation_is_never_served(cache: ResponseCache) -> None:
    """The in-flight race: the request is sent, the server says the list changed, the
    (old) answer arrives. It must not be served after the notification."""
    alice, bob = view(cache), view(cache, BOB)
    for stale_by in (lambda: bob.notified("notifications/tools/list_changed"),
                     lambda: bob.reconnected(),
                     lambda: cache.invalidate(SERVER, "tools/list")):
        ticket = alice.lookup("tools/list")
        stale_by()
        alice.store(ticket, page(60_000, "public", tools=[{"name": "old"}]))
        assert served(alice, "tools/list") is None
        assert served(bob, "tools/list") is None
    # The next fetch, after the notification, is stored and served.
    fetch(alice, "tools/list", page(60_000, "public", tools=[{"name": "new"}]))
    assert served(bob, "tools/list")["tools"] == [{"name": "new"}]


def test_a_lost_generation_token_is_a_miss_never_a_stale_hit(
        cache: ResponseCache, store: MemoryStore) -> None:
    """The store dropped the tokens (an LRU eviction, a restart): entries that recorded
    them are misses, even though they are still held and within their TTL."""
    alice = view(cache)
    fetch(alice, "tools/list", page(60_000, "public", tools=[]))
    tokens = [key for key in store._entries if key.startswith("mcp-sync:c1:g:")]
    assert len(tokens) == 2  # the server's and the method's
    store.delete_many(tokens)
    assert any(key.startswith("mcp-sync:c1:e:") for key in store._entries)
    assert served(alice, "tools/list") is None
    # A token that comes back under its old value after an invalidation would be the
    # danger: an invalidated entry served again. It cannot, a new token is random.
    fetch(alice, "tools/list", page(60_000, "public", tools=[{"name": "x"}]))
    assert served(alice, "tools/list") is not None


def test_two_caches_over_one_store_share_entries_and_invalidations() -> None:
    shared = MemoryStore()
    check_cache_over_store(lambda: shared)


# -- what a store holds, and a store that fails -------------------------------------------


def test_entries_are_json_and_keep_no_credential(cache: ResponseCache, store: MemoryStore) -> None:
    alice = view(cache, credential_identity(headers={"Authorization": "Bearer tok-123456"}))
    fetch(alice, "resources/read", page(60_000, "private", contents=[{"text": "hi"}]),
          {"uri": "file:///x"})
    for key, (value, _) in store._entries.items():
        assert b"tok-123456" not in value and "tok-123456" not in key
        assert "file:///x" not in key
        if key.startswith("mcp-sync:c1:e:"):
            entry = json.loads(value)
            assert entry["pages"] == [page(60_000, "private", contents=[{"text": "hi"}])]
            assert entry["format"] == 1 and entry["scope"] == "private"


@pytest.mark.parametrize("damage", [
    lambda value: b"not json",
    lambda value: b"[" * 100_000,
    lambda value: value.replace(b'"format":1', b'"format":2'),
    lambda value: value.replace(b'"scope":"private"', b'"scope":"public"'),
    lambda value: value.replace(b'"method":"resources/read"', b'"method":"tools/list"'),
    lambda value: value.replace(b'"ttl":60.0', b'"ttl":1e400'),
    lambda value: value.replace(b'"ttl":60.0', b'"ttl":999999999'),
    lambda value: value.replace(b'"pages":[', b'"pages":[1,'),
    lambda value: value[:-1],
])
def test_a_damaged_entry_is_a_miss(cache: ResponseCache, store: MemoryStore, damage: Any) -> None:
    alice = view(cache)
    fetch(alice, "resources/read", page(60_000, "private", contents=[]), {"uri": "a"})
    [key] = [k for k in store._entries if k.startswith("mcp-sync:c1:e:")]
    value, _ = store._entries[key]
    store.set(key, damage(value), 60)
    assert served(alice, "resources/read", {"uri": "a"}) is None


def test_an_entry_over_the_bound_is_not_stored(store: MemoryStore, clock: Clock) -> None:
    small = view(ResponseCache(store, clock=clock, max_entry_bytes=1000))
    info = fetch(small, "resources/read", page(60_000, "public", contents=["x" * 2000]),
                 {"uri": "big"})
    assert not info.stored
    assert served(small, "resources/read", {"uri": "big"}) is None
    assert fetch(small, "resources/read", page(60_000, "public", contents=["x"]),
                 {"uri": "small"}).stored


class FailingStore:
    """A store whose every call raises while ``failing`` (Redis down, say)."""

    def __init__(self) -> None:
        self.inner = MemoryStore()
        self.failing = True

    def _check(self) -> None:
        if self.failing:
            raise ConnectionError("store down")

    def get_many(self, keys: Sequence[str]) -> Dict[str, bytes]:
        self._check()
        return self.inner.get_many(keys)

    def set(self, key: str, value: bytes, ttl: float) -> None:
        self._check()
        self.inner.set(key, value, ttl)

    def add(self, key: str, value: bytes, ttl: float) -> bool:
        self._check()
        return self.inner.add(key, value, ttl)

    def delete_many(self, keys: Sequence[str]) -> None:
        self._check()
        self.inner.delete_many(keys)


def test_a_failing_store_is_a_miss_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    store = FailingStore()
    alice = view(ResponseCache(store))
    with caplog.at_level(logging.DEBUG, logger="mcp_sync.cache"):
        for _ in range(3):
            info = fetch(alice, "tools/list", page(60_000, "public", tools=[]))
            assert not info.stored
            alice.notified("notifications/tools/list_changed")
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    # One warning per operation that failed (get_many, set), not one per call.
    assert sorted(r.getMessage() for r in warnings) == [
        "response cache: FailingStore.get_many failed; carrying on without the cache",
        "response cache: FailingStore.set failed; carrying on without the cache",
    ]
    assert all(r.exc_info and "store down" in str(r.exc_info[1]) for r in warnings)
    caplog.clear()
    store.failing = False
    with caplog.at_level(logging.WARNING, logger="mcp_sync.cache"):
        assert fetch(alice, "tools/list", page(60_000, "public", tools=[])).stored
    assert "FailingStore.get_many works again" in caplog.text
    assert served(alice, "tools/list") is not None


def test_what_is_not_a_store_is_refused_and_bounds_are_checked() -> None:
    with pytest.raises(TypeError, match="not a cache store"):
        ResponseCache({})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_ttl"):
        ResponseCache(max_ttl=0)
    with pytest.raises(ValueError, match="max_entry_bytes"):
        ResponseCache(max_entry_bytes=0)
    with pytest.raises(ValueError, match="secret"):
        ResponseCache(secret="")


def test_a_secret_keys_every_entry(clock: Clock) -> None:
    store = MemoryStore(clock=clock)
    fetch(view(ResponseCache(store, clock=clock, secret="one")), "tools/list",
          page(60_000, "public", tools=[]))
    assert served(view(ResponseCache(store, clock=clock, secret="one")), "tools/list")
    assert served(view(ResponseCache(store, clock=clock, secret="two")), "tools/list") is None
    assert served(view(ResponseCache(store, clock=clock)), "tools/list") is None


def test_many_threads_share_one_cache() -> None:
    """Threads looking up, storing and invalidating at once: every hit is a result that
    was stored for its key, nothing raises."""
    cache = ResponseCache(MemoryStore(max_entries=64))
    views = [view(cache, context) for context in (ALICE, BOB)]
    errors: List[BaseException] = []
    start = threading.Event()

    def work(number: int) -> None:
        start.wait(10)
        try:
            for round_ in range(200):
                server = views[round_ % 2]
                uri = f"file:///{number}/{round_ % 7}"
                ticket = server.lookup("resources/read", {"uri": uri})
                if ticket.hit is not None:
                    assert ticket.hit.result["contents"] == [uri]
                else:
                    server.store(ticket, page(60_000, "private", contents=[uri]))
                if round_ % 13 == 0:
                    server.notified("notifications/resources/updated", {"uri": uri})
        except BaseException as exc:  # noqa: BLE001 - reported to the test below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,), name=f"test-cache-{n}")
               for n in range(8)]
    for thread in threads:
        thread.start()
    start.set()
    for thread in threads:
        thread.join(30)
    assert not any(thread.is_alive() for thread in threads)
    assert errors == []


# -- the in-process store -----------------------------------------------------------------


def test_memory_store_keeps_the_store_contract() -> None:
    check_store_contract(MemoryStore())


def test_memory_store_is_bounded_by_entries_least_recently_used_out(clock: Clock) -> None:
    store = MemoryStore(max_entries=3, clock=clock)
    for key in "abc":
        store.set(key, key.encode(), 60)
    store.get_many(["a"])  # a is now the most recent
    store.set("d", b"d", 60)
    assert sorted(store.get_many(list("abcd"))) == ["a", "c", "d"]
    assert len(store) == 3


def test_memory_store_is_bounded_by_bytes(clock: Clock) -> None:
    store = MemoryStore(max_bytes=10, clock=clock)
    store.set("a", b"12345", 60)
    store.set("b", b"12345", 60)
    assert store.size == 10
    store.set("c", b"123", 60)
    assert sorted(store.get_many(["a", "b", "c"])) == ["b", "c"] and store.size == 8
    # A value over the whole bound is not stored, and what its key held is dropped.
    store.set("b", b"x" * 11, 60)
    assert sorted(store.get_many(["a", "b", "c"])) == ["c"] and store.size == 3
    assert store.add("big", b"x" * 11, 60) is False


def test_memory_store_expires_on_its_clock(clock: Clock) -> None:
    store = MemoryStore(clock=clock)
    store.set("a", b"1", 10)
    clock.now += 9.99
    assert store.get_many(["a"]) == {"a": b"1"}
    clock.now += 0.01
    assert store.get_many(["a"]) == {}
    assert len(store) == 0 and store.size == 0
    assert store.add("a", b"2", 10) is True
    store.clear()
    assert len(store) == 0


def test_memory_store_refuses_bounds_that_hold_nothing() -> None:
    with pytest.raises(ValueError, match="max_entries"):
        MemoryStore(max_entries=0)
    with pytest.raises(ValueError, match="max_bytes"):
        MemoryStore(max_bytes=0)
