"""The response cache against a real 2026-07-28 server: the official SDK answering with
caching hints (``tests/servers/sdk_cache_server.py``, ``mcp`` 2.3.0), which counts the
requests it receives, so each test counts round trips.

The client here has no cache of its own (``cache=False``): a request goes through
``client.request()`` and a cache of the test's is asked before and told after
(``cached()``, the pattern of docs/caching.md's "A cache of your own"), its notifications
reach the cache through the public ``notification_handler``. The client's own caching
is ``test_client_cache.py``'s.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest

import mcp_sync
from mcp_sync.cache import (
    CacheInfo,
    ResponseCache,
    ServerCache,
    credential_identity,
    url_identity,
)

from .._cache_contract import docs_example
from .._peer_processes import ServerProcess, cache_server_argv, request_counts, serve
from ..helpers import Notified, wait_for

pytestmark = pytest.mark.peer

WAIT = 10.0  # the bound on any request; nothing should come near it
STATELESS = "2026-07-28"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    yield from serve("sdk-cache", cache_server_argv(60_000), "/mcp", tmp_path_factory)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def connect(server: ServerProcess, token: Optional[str] = None, **kwargs: Any) -> mcp_sync.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return mcp_sync.connect(server.url, headers=headers, timeout=WAIT, probe_timeout=WAIT,
                            cache=False, **kwargs)


def bind(cache: ResponseCache, client: mcp_sync.Client) -> ServerCache:
    """The view a client integration binds at connect: the server's URL, the agreed
    version, the credentials' digest."""
    transport = client.transport
    assert isinstance(transport, mcp_sync.HttpTransport)
    assert client.protocol_version is not None
    return cache.bind(server=url_identity(transport.url), version=client.protocol_version,
                      context=credential_identity(headers=transport.headers))


def cached(view: ServerCache, client: mcp_sync.Client, method: str,
           params: Optional[Dict[str, Any]] = None, mode: str = "use") -> Tuple[Any, CacheInfo]:
    """One cacheable request through the cache: served, or sent and stored."""
    ticket = view.lookup(method, params, mode=mode)
    if ticket.hit is not None:
        return ticket.hit.result, ticket.hit.info
    try:
        result = client.request(method, params, timeout=WAIT)
    except BaseException:
        view.discard(ticket)
        raise
    return result, view.store(ticket, result)


def sent(server: ServerProcess, before: Dict[str, int], method: str) -> int:
    return request_counts(server).get(method, 0) - before.get(method, 0)


def test_the_server_answers_each_cacheable_method_with_its_hints(server: ServerProcess) -> None:
    with connect(server) as client:
        assert client.protocol_version == STATELESS
        public = ["server/discover", "tools/list", "prompts/list", "resources/list",
                  "resources/templates/list"]
        for method in public:
            result = client.request(method, timeout=WAIT)
            assert (result["ttlMs"], result["cacheScope"]) == (60_000, "public"), method
        read = client.request("resources/read", {"uri": "test://greeting"}, timeout=WAIT)
        assert (read["ttlMs"], read["cacheScope"]) == (60_000, "private")
        before = request_counts(server)
        client.request("tools/list", timeout=WAIT)
        client.request("tools/list", timeout=WAIT)
        assert sent(server, before, "tools/list") == 2  # it counts what it receives


def test_a_second_listing_and_read_within_the_ttl_cost_no_round_trip(
        server: ServerProcess) -> None:
    clock = Clock()
    cache = ResponseCache(clock=clock)
    with connect(server) as client:
        view = bind(cache, client)
        before = request_counts(server)
        first, info = cached(view, client, "tools/list")
        assert not info.hit and info.stored and info.ttl == 60 and info.scope == "public"
        clock.now += 59
        again, info = cached(view, client, "tools/list")
        assert again == first and info.hit and info.age == pytest.approx(59)
        read, info = cached(view, client, "resources/read", {"uri": "test://greeting"})
        assert info.scope == "private" and info.stored
        assert cached(view, client, "resources/read", {"uri": "test://greeting"})[0] == read
        assert sent(server, before, "tools/list") == 1
        assert sent(server, before, "resources/read") == 1
        # Past the TTL: to the server again. A refresh goes there whatever the TTL.
        clock.now += 1
        assert not cached(view, client, "tools/list")[1].hit
        assert not cached(view, client, "tools/list", mode="refresh")[1].hit
        assert sent(server, before, "tools/list") == 3


def test_a_private_read_is_served_to_its_credentials_only(server: ServerProcess) -> None:
    cache = ResponseCache()
    uri = "test://whoami/private"
    with connect(server, "alice-token") as alice, connect(server, "bob-token") as bob, \
            connect(server, "alice-token") as alice_again:
        before = request_counts(server)
        alices, info = cached(bind(cache, alice), alice, "resources/read", {"uri": uri})
        assert info.stored and info.scope == "private"
        assert alices["contents"][0]["text"] == "private: authorization=Bearer alice-token"
        # Bob's read goes to the server and gets his own answer...
        bobs, info = cached(bind(cache, bob), bob, "resources/read", {"uri": uri})
        assert not info.hit
        assert bobs["contents"][0]["text"] == "private: authorization=Bearer bob-token"
        # ...another client with alice's credentials is served hers.
        served, info = cached(bind(cache, alice_again), alice_again, "resources/read",
                              {"uri": uri})
        assert info.hit and served == alices
        assert sent(server, before, "resources/read") == 2
        # A public listing is served to every context.
        cached(bind(cache, alice), alice, "prompts/list")
        assert cached(bind(cache, bob), bob, "prompts/list")[1].hit


def test_a_list_changed_from_the_server_drops_the_listing(server: ServerProcess) -> None:
    """The server adds a tool and tells its subscribers; the notification reaches the
    cache through the client's notification_handler, and the next listing has the tool."""
    cache = ResponseCache()
    notified = Notified("notifications/tools/list_changed")
    views: List[ServerCache] = []

    def on_notification(method: str, params: Optional[Dict[str, Any]]) -> None:
        for view in views:
            view.notified(method, params)
        notified(method, params)

    with connect(server, notification_handler=on_notification) as client, \
            connect(server) as other:
        view = bind(cache, client)
        views.append(view)
        other_view = bind(cache, other)  # another client, no subscription of its own
        before, _ = cached(view, client, "tools/list")
        assert cached(other_view, other, "tools/list")[1].hit
        name = f"extra_{id(client)}"
        with client.subscribe(tools=True, timeout=WAIT):
            client.call_tool("grow", {"name": name}, timeout=WAIT)
            notified.wait(WAIT)
        after, info = cached(other_view, other, "tools/list")
        assert not info.hit
        assert name in {tool["name"] for tool in after["tools"]}
        assert name not in {tool["name"] for tool in before["tools"]}


def test_a_resource_update_drops_that_resource(server: ServerProcess) -> None:
    cache = ResponseCache()
    notified = Notified("notifications/resources/updated")
    views: List[ServerCache] = []

    def on_notification(method: str, params: Optional[Dict[str, Any]]) -> None:
        for view in views:
            view.notified(method, params)
        notified(method, params)

    with connect(server, notification_handler=on_notification) as client:
        view = bind(cache, client)
        views.append(view)
        touched, kept = "test://whoami/touched", "test://whoami/kept"
        for uri in (touched, kept):
            cached(view, client, "resources/read", {"uri": uri})
        with client.subscribe(resource_uris=[touched], timeout=WAIT):
            client.call_tool("touch", {"uri": touched}, timeout=WAIT)
            notified.wait(WAIT)
        assert not cached(view, client, "resources/read", {"uri": touched})[1].hit
        assert cached(view, client, "resources/read", {"uri": kept})[1].hit



def test_the_pattern_of_the_docs_runs_against_the_server(
        server: ServerProcess, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/caching.md's "A cache of your own", as written: the second listing is served from the
    cache, and a list_changed the server sends reaches the view."""
    namespace: Dict[str, Any] = {"url": server.url, "uri": "test://greeting",
                                 "headers": {"Authorization": "Bearer docs"}}
    # The page connects with the default 1 s era probe: a freshly started SDK server's
    # first answer can take longer on a loaded machine, so it answers one first.
    with connect(server) as warm:
        warm.request("server/discover", timeout=WAIT)
    before = request_counts(server)
    try:
        exec(docs_example("## A cache of your own"), namespace)
        client = namespace["client"]
        # The page's print: the read was fetched (not a hit), private, fresh for 60 s.
        printed = capsys.readouterr().out
        assert printed.startswith("False ") and printed.endswith(" 60.0 private\n"), printed
        _, info = namespace["cached"]("tools/list")
        assert info.hit and info.scope == "public" and info.ttl == 60
        assert sent(server, before, "tools/list") == 1
        assert sent(server, before, "resources/read") == 1
        _, info = namespace["cached"]("tools/list", mode="refresh")
        assert not info.hit and sent(server, before, "tools/list") == 2
        with client.subscribe(tools=True, timeout=WAIT):
            client.call_tool("grow", {"name": f"docs_{id(client)}"}, timeout=WAIT)
            wait_for(lambda: namespace["view"].lookup("tools/list").hit is None,
                     timeout=WAIT, what="the list_changed to reach the cache")
    finally:
        if "client" in namespace:
            namespace["client"].close()
