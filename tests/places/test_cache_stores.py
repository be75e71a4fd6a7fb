"""The response cache over the stores a web app already runs: a real ``redis-server`` and
Django's cache framework (its local-memory and file caches), in this process and shared by
two real processes (``tests/servers/cache_process.py``), as a web app's workers share them;
and two processes' clients sharing them against the official SDK's 2026-07-28 server
(``tests/servers/cache_client_process.py``, ``tests/servers/sdk_cache_server.py``).

Redis runs on 127.0.0.1 on a free port with persistence off (the helper the Celery tests
use), one database per test; it is stopped by its PID.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest
from django.test import override_settings

from mcp_sync.cache import RedisStore, ResponseCache, url_identity
from mcp_sync.contrib.django.cache import DjangoCacheStore

from .._cache_contract import (
    STATELESS,
    check_cache_over_store,
    check_store_contract,
    docs_example,
    page,
)
from .._peer_processes import ServerProcess, cache_server_argv, request_counts, serve
from .._procs import redis_server, stop_process, subprocess_env
from ..conftest import ROOT, SERVERS
from ._django import setup_django

setup_django()

WAIT = 30.0  # the bound on any answer of a peer process; nothing should come near it
_databases = itertools.count(1)


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A private redis-server on 127.0.0.1, persistence off; stopped by PID."""
    with redis_server(tmp_path_factory.mktemp("redis")) as (url, _):
        yield url


@pytest.fixture
def redis_db(redis_url: str) -> str:
    """A database of its own for each test."""
    database = next(_databases)
    assert database < 16, "redis-server has 16 databases by default"
    return f"{redis_url}/{database}"


class Stores:
    """RedisStores made for a test, closed after it."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.made: List[RedisStore] = []

    def __call__(self) -> RedisStore:
        store = RedisStore(self.url)
        self.made.append(store)
        return store

    def close(self) -> None:
        for store in self.made:
            store.close()


@pytest.fixture
def redis_stores(redis_db: str) -> Iterator[Stores]:
    stores = Stores(redis_db)
    try:
        yield stores
    finally:
        stores.close()


class Peer:
    """``tests/servers/cache_process.py`` (or another ``script`` of the kind) in a child
    process: a cache of its own over the shared store. One thread (``test-cache-peer-*``,
    outside the names the leak check watches) reads its answers, so each ``ask`` waits
    with a bound."""

    def __init__(self, *args: str, script: str = "cache_process.py") -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(SERVERS / script), *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, cwd=str(ROOT), env=subprocess_env())
        self.answers: queue.Queue[str] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True,
                                       name=f"test-cache-peer-{self.process.pid}")
        self.reader.start()
        assert self._answer() == {"ready": True}

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.answers.put(line)
        self.answers.put("")  # the process ended

    def _answer(self) -> Dict[str, Any]:
        try:
            line = self.answers.get(timeout=WAIT)
        except queue.Empty:
            raise AssertionError(f"no answer within {WAIT} s from {self.process.args}")
        if not line:
            assert self.process.stderr is not None
            raise AssertionError("the peer ended: " + self.process.stderr.read()[-2000:])
        answer: Dict[str, Any] = json.loads(line)
        return answer

    def ask(self, **command: Any) -> Dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        return self._answer()

    def fetch(self, method: str, result: Dict[str, Any], params: Any = None,
              context: str = "") -> bool:
        """A lookup that must miss, then ``result`` stored: whether it was."""
        ticket = os.urandom(4).hex()
        assert self.ask(op="begin", id=ticket, method=method, params=params,
                        context=context)["hit"] is None
        stored: bool = self.ask(op="finish", id=ticket, result=result)["stored"]
        return stored

    def served(self, method: str, params: Any = None, context: str = "") -> Any:
        return self.ask(op="begin", id=os.urandom(4).hex(), method=method, params=params,
                        context=context)["hit"]

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(WAIT)
        finally:
            if self.process.poll() is None:
                stop_process(self.process)
            self.reader.join(WAIT)
            for stream in (self.process.stdout, self.process.stderr):
                if stream is not None:
                    stream.close()


def two_processes_share_one_cache(first: Peer, second: Peer) -> None:
    """What two worker processes of one web app see through their shared store."""
    tools = page(60_000, "public", tools=[{"name": "echo"}])
    assert first.fetch("tools/list", tools)
    assert second.served("tools/list") == tools
    # A private read: served to the same authorization context in the other process only.
    mine = page(60_000, "private", contents=[{"uri": "me", "text": "alice's"}])
    assert first.fetch("resources/read", mine, {"uri": "me"}, context="alice")
    assert second.served("resources/read", {"uri": "me"}, context="bob") is None
    assert second.served("resources/read", {"uri": "me"}, context="alice") == mine
    # A list_changed one process received drops the list in the other.
    assert second.ask(op="notified", notification="notifications/tools/list_changed") == {
        "stale": [["tools/list", None]]}
    assert first.served("tools/list") is None
    # The in-flight race across processes: a request sent before another process heard
    # of the change is never served after it.
    assert first.ask(op="begin", id="slow", method="tools/list")["hit"] is None
    second.ask(op="notified", notification="notifications/tools/list_changed")
    first.ask(op="finish", id="slow", result=page(60_000, "public", tools=[{"name": "old"}]))
    assert first.served("tools/list") is None and second.served("tools/list") is None
    # A reconnect in one process drops everything of the server in both.
    assert second.fetch("tools/list", tools)
    first.ask(op="reconnected")
    assert second.served("tools/list") is None
    assert second.served("resources/read", {"uri": "me"}, context="alice") is None


# -- Redis --------------------------------------------------------------------------------


def test_redis_store_keeps_the_store_contract(redis_stores: Stores) -> None:
    check_store_contract(redis_stores())


def test_the_cache_over_redis_shares_entries_and_invalidations(redis_stores: Stores) -> None:
    check_cache_over_store(redis_stores)


def test_two_processes_share_a_cache_through_redis(redis_db: str) -> None:
    peers = [Peer("redis", redis_db), Peer("redis", redis_db)]
    try:
        two_processes_share_one_cache(*peers)
    finally:
        for peer in peers:
            peer.stop()


def test_entries_in_redis_expire_with_their_ttl(redis_stores: Stores) -> None:
    """The TTL the server gave is the key's own expiry in Redis (PX), not only a field."""
    store = redis_stores()
    view = ResponseCache(store).bind(server=url_identity("http://x/mcp"), version=STATELESS)
    ticket = view.lookup("tools/list")
    view.store(ticket, page(60_000, "public", tools=[]))
    entries = [key for key in store.client.keys("mcp-sync:c1:e:*")]
    assert len(entries) == 1
    assert 59_000 < store.client.pttl(entries[0]) <= 60_000
    # The generation tokens outlive every entry (twice the longest TTL).
    tokens = store.client.keys("mcp-sync:c1:g:*")
    assert len(tokens) == 2 and all(store.client.ttl(key) > 24 * 3600 for key in tokens)


def test_a_redis_that_goes_away_is_a_miss_never_a_failure(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with redis_server(tmp_path) as (url, _):
        store = RedisStore(url, timeout=2.0)
        view = ResponseCache(store).bind(server=url_identity("http://x/mcp"),
                                         version=STATELESS)
        ticket = view.lookup("tools/list")
        assert view.store(ticket, page(60_000, "public", tools=[])).stored
        assert view.lookup("tools/list").hit is not None
    # Stopped: every call fails fast (connection refused), within the store's timeout.
    try:
        with caplog.at_level(logging.WARNING, logger="mcp_sync.cache"):
            started = time.monotonic()
            ticket = view.lookup("tools/list")
            assert ticket.hit is None
            assert not view.store(ticket, page(60_000, "public", tools=[])).stored
            view.notified("notifications/tools/list_changed")
            assert time.monotonic() - started < 10
        assert "RedisStore.get_many failed; carrying on without the cache" in caplog.text
    finally:
        store.close()


def test_redis_store_needs_a_url_or_a_client_and_the_redis_package(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="url or a client"):
        RedisStore()
    with pytest.raises(ValueError, match="url or a client"):
        RedisStore("redis://127.0.0.1:1", client=object())
    monkeypatch.setitem(sys.modules, "redis", None)  # as if it were not installed
    with pytest.raises(ImportError, match=r"pip install 'mcp-sync-client\[redis\]'"):
        RedisStore("redis://127.0.0.1:1")


def test_a_redis_client_of_ones_own_is_used_and_left_open(redis_db: str) -> None:
    import redis

    client = redis.Redis.from_url(redis_db, socket_timeout=5, socket_connect_timeout=5)
    try:
        store = RedisStore(client=client)
        store.set("mcp-sync:test:own", b"v", 60)
        store.close()
        assert client.get("mcp-sync:test:own") == b"v"  # still open
    finally:
        client.close()


# -- Django -------------------------------------------------------------------------------


def locmem(name: str) -> Dict[str, Any]:
    return {"mcp": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache",
                    "LOCATION": f"{name}-{os.urandom(4).hex()}"}}


def file_cache(directory: Path) -> Dict[str, Any]:
    return {"mcp": {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
                    "LOCATION": str(directory)}}


def test_django_local_memory_cache_keeps_the_store_contract() -> None:
    with override_settings(CACHES=locmem("contract")):
        check_store_contract(DjangoCacheStore("mcp"), ttl=0.3)


def test_the_cache_over_django_local_memory(tmp_path: Path) -> None:
    with override_settings(CACHES=locmem("rules")):
        check_cache_over_store(lambda: DjangoCacheStore("mcp"))


def test_django_file_cache_keeps_the_store_contract(tmp_path: Path) -> None:
    with override_settings(CACHES=file_cache(tmp_path)):
        check_store_contract(DjangoCacheStore("mcp"), ttl=0.3)


def test_the_cache_over_the_django_file_cache(tmp_path: Path) -> None:
    with override_settings(CACHES=file_cache(tmp_path)):
        check_cache_over_store(lambda: DjangoCacheStore("mcp"))


def test_two_processes_share_a_cache_through_the_django_file_cache(tmp_path: Path) -> None:
    peers = [Peer("django-file", str(tmp_path)), Peer("django-file", str(tmp_path))]
    try:
        two_processes_share_one_cache(*peers)
    finally:
        for peer in peers:
            peer.stop()
    # What they shared is on disk, in Django's cache files.
    assert list(tmp_path.glob("*.djcache"))


def test_django_store_follows_the_settings_and_threads() -> None:
    """The cache is looked up at each call (Django's caches belong to a thread each):
    a store made before the settings changed uses the new cache, and threads share a
    local-memory cache through it."""
    store = DjangoCacheStore("mcp")
    with override_settings(CACHES=locmem("first")):
        store.set("mcp-sync:test:k", b"first", 60)
        seen: List[Any] = []
        thread = threading.Thread(
            target=lambda: seen.append(store.get_many(["mcp-sync:test:k"])),
            name="test-django-cache")
        thread.start()
        thread.join(WAIT)
        assert seen == [{"mcp-sync:test:k": b"first"}]
    with override_settings(CACHES=locmem("second")):
        assert store.get_many(["mcp-sync:test:k"]) == {}
    assert repr(store) == "DjangoCacheStore('mcp')"


# -- a store of one's own -----------------------------------------------------------------


def test_the_sqlite_store_of_the_docs_keeps_the_contract(tmp_path: Path) -> None:
    """docs/caching.md's example of a store of one's own, as written: the store contract,
    and the cache's rules over two stores on one database file."""
    namespace: Dict[str, Any] = {}
    exec(docs_example("### Writing a store"), namespace)
    store_class = namespace["SqliteStore"]
    check_store_contract(store_class(str(tmp_path / "cache.db")))
    check_cache_over_store(lambda: store_class(str(tmp_path / "cache.db")))


# -- two processes' clients ---------------------------------------------------------------


@pytest.fixture(scope="module")
def mcp_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    yield from serve("sdk-cache", cache_server_argv(60_000), "/mcp", tmp_path_factory)


def two_clients_share_one_cache(store: List[str], server: ServerProcess) -> None:
    """Two processes' ``Client(cache=ResponseCache(store))``: what one fetched the other
    is served, with no request to the server; a private read only with the same
    credentials; an invalidation in one is seen by the other."""
    uri = "test://whoami/shared"
    peers = [Peer(*store, server.url, "alice", script="cache_client_process.py"),
             Peer(*store, server.url, "alice", script="cache_client_process.py"),
             Peer(*store, server.url, "bob", script="cache_client_process.py")]
    first, second, bob = peers
    try:
        before = request_counts(server)

        def sent(method: str) -> int:
            return request_counts(server).get(method, 0) - before.get(method, 0)

        listed = first.ask(op="list_tools")
        assert not listed["hit"] and "add" in listed["names"]
        assert second.ask(op="list_tools") == {"names": listed["names"], "hit": True}
        assert bob.ask(op="list_tools")["hit"]  # public: every credential
        assert sent("tools/list") == 1
        alices = first.ask(op="read", uri=uri)
        assert alices == {"text": "shared: authorization=Bearer alice", "hit": False}
        assert second.ask(op="read", uri=uri) == {**alices, "hit": True}
        assert bob.ask(op="read", uri=uri) == {
            "text": "shared: authorization=Bearer bob", "hit": False}
        assert sent("resources/read") == 2
        assert first.ask(op="invalidate") == {}
        assert not second.ask(op="list_tools")["hit"]
        assert not second.ask(op="read", uri=uri)["hit"]
        assert sent("tools/list") == 2
    finally:
        for peer in peers:
            peer.stop()


def test_two_processes_clients_share_a_cache_through_redis(
        redis_db: str, mcp_server: ServerProcess) -> None:
    two_clients_share_one_cache(["redis", redis_db], mcp_server)


def test_two_processes_clients_share_a_cache_through_the_django_file_cache(
        tmp_path: Path, mcp_server: ServerProcess) -> None:
    two_clients_share_one_cache(["django-file", str(tmp_path)], mcp_server)
