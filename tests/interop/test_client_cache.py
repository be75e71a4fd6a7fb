"""The client's own response cache against a real 2026-07-28 server: the official SDK
answering with caching hints (``tests/servers/sdk_cache_server.py``, ``mcp`` 2.3.0),
which counts the requests it receives, so each test counts round trips at the server.

``Client(cache=...)``: ``list_tools()``, ``read_resource()`` and the other cacheable
methods answered from the cache within the server's ``ttlMs``; per-call modes;
``cache_info``; invalidation by notifications, reconnects and a Manager's reconnect; the
authorization context; the tool pins' review of a cached listing.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, Optional

import pytest

import mcp_sync
from mcp_sync import Manager, ToolPins
from mcp_sync.cache import CacheInfo, MemoryStore, ResponseCache

from .._cache_contract import docs_example
from .._peer_processes import ServerProcess, cache_server_argv, request_counts, serve
from ..helpers import Notified

pytestmark = pytest.mark.peer

WAIT = 10.0  # the bound on any request; nothing should come near it
STATELESS = "2026-07-28"
GREETING = "test://greeting"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    yield from serve("sdk-cache", cache_server_argv(60_000), "/mcp", tmp_path_factory)


def connect(server: ServerProcess, token: Optional[str] = None, **kwargs: Any) -> mcp_sync.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return mcp_sync.connect(server.url, headers=headers, timeout=WAIT, probe_timeout=WAIT,
                            **kwargs)


class Counts:
    """The requests the server received since this was made, by method."""

    def __init__(self, server: ServerProcess) -> None:
        self.server = server
        self.before = request_counts(server)

    def __getitem__(self, method: str) -> int:
        return request_counts(self.server).get(method, 0) - self.before.get(method, 0)


def test_a_second_listing_and_read_within_the_ttl_make_no_request(
        server: ServerProcess) -> None:
    with connect(server) as client:  # the default: a cache of its own
        assert client.protocol_version == STATELESS
        assert isinstance(client.response_cache, ResponseCache)
        sent = Counts(server)
        first = client.list_tools()
        info = client.cache_info("tools/list")
        assert info is not None and not info.hit and info.stored
        assert (info.ttl, info.scope) == (60.0, "public")
        again = client.list_tools()
        assert [tool.name for tool in again] == [tool.name for tool in first]
        info = client.cache_info("tools/list")
        assert info is not None and info.hit and 0 <= info.age < info.ttl
        read = client.read_resource(GREETING)
        assert client.read_resource(GREETING) == read
        info = client.cache_info("resources/read", {"uri": GREETING})
        assert info is not None and info.hit and info.scope == "private"
        for listing in (client.list_prompts, client.list_resources,
                        client.list_resource_templates):
            assert listing() == listing()
        assert client.request("server/discover")["ttlMs"] == 60_000
        assert client.cache_info("server/discover") is not None
        client.request("server/discover")
        assert [sent[method] for method in (
            "tools/list", "resources/read", "prompts/list", "resources/list",
            "resources/templates/list", "server/discover")] == [1, 1, 1, 1, 1, 1]
        # request() of a listing gets its first page from the listing's entry; a ping
        # is never answered by the cache.
        assert client.request("tools/list")["tools"][0]["name"] == first[0].name
        client.ping()
        assert (sent["tools/list"], sent["server/discover"]) == (1, 2)


def test_refresh_fetches_and_stores_bypass_leaves_the_cache_alone(
        server: ServerProcess) -> None:
    with connect(server) as client:
        sent = Counts(server)
        client.read_resource(GREETING)
        client.read_resource(GREETING, cache="refresh")
        info = client.cache_info("resources/read", {"uri": GREETING})
        assert info is not None and not info.hit and info.stored
        client.read_resource(GREETING, cache="bypass")
        info = client.cache_info("resources/read", {"uri": GREETING})
        assert info == CacheInfo(False, 0.0, 60.0, "private", False)
        assert client.read_resource(GREETING) is not None  # the refreshed entry
        client.list_tools(cache="bypass")
        client.list_tools(cache="bypass")
        assert (sent["resources/read"], sent["tools/list"]) == (3, 2)
        with pytest.raises(ValueError, match="cache mode must be one of use, refresh"):
            client.list_tools(cache="sometimes")
        with pytest.raises(TypeError, match="cache= takes one of"):
            client.read_resource(GREETING, cache=True)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="cache mode"):
            client.request("tools/list", cache="never")
        assert (sent["resources/read"], sent["tools/list"]) == (3, 2)  # nothing sent


def test_cache_false_and_the_session_era_cache_nothing(server: ServerProcess) -> None:
    with connect(server, cache=False) as off, \
            connect(server, protocol_version="2025-11-25") as session:
        assert off.response_cache is None
        sent = Counts(server)
        for client in (off, session):
            client.list_tools()
            client.list_tools()
            client.read_resource(GREETING)
            client.read_resource(GREETING)
            assert client.cache_info("tools/list") is None
        assert (sent["tools/list"], sent["resources/read"]) == (4, 4)
    with pytest.raises(TypeError, match="cache must be None"):
        mcp_sync.Client(mcp_sync.HttpTransport(server.url), cache="yes")


def test_two_clients_share_a_memory_store(server: ServerProcess) -> None:
    cache = ResponseCache(MemoryStore())
    with connect(server, cache=cache) as first, connect(server, cache=cache) as second:
        sent = Counts(server)
        names = [tool.name for tool in first.list_tools()]
        assert [tool.name for tool in second.list_tools()] == names
        info = second.cache_info("tools/list")
        assert info is not None and info.hit
        assert sent["tools/list"] == 1


def test_a_private_read_is_served_to_its_credentials_only(server: ServerProcess) -> None:
    cache = ResponseCache()
    uri = "test://whoami/client"
    with connect(server, "alice-token", cache=cache) as alice, \
            connect(server, "bob-token", cache=cache) as bob, \
            connect(server, "alice-token", cache=cache) as alice_again:
        sent = Counts(server)
        alices = alice.read_resource(uri)
        assert alices.contents[0].text == "client: authorization=Bearer alice-token"
        bobs = bob.read_resource(uri)
        assert bobs.contents[0].text == "client: authorization=Bearer bob-token"
        info = bob.cache_info("resources/read", {"uri": uri})
        assert info is not None and not info.hit
        assert alice_again.read_resource(uri) == alices
        info = alice_again.cache_info("resources/read", {"uri": uri})
        assert info is not None and info.hit
        assert sent["resources/read"] == 2
        # A public listing is served to every context.
        alice.list_prompts()
        bob.list_prompts()
        info = bob.cache_info("prompts/list")
        assert info is not None and info.hit and info.scope == "public"


def test_a_list_changed_makes_the_listing_stale_for_every_client(
        server: ServerProcess) -> None:
    """One client hears of the change (its subscription); another one sharing the cache,
    with no subscription of its own, lists the new tool at once."""
    cache = ResponseCache()
    notified = Notified("notifications/tools/list_changed")
    with connect(server, cache=cache, notification_handler=notified) as client, \
            connect(server, cache=cache) as other:
        before = {tool.name for tool in other.list_tools()}
        client.list_tools()
        info = client.cache_info("tools/list")
        assert info is not None and info.hit
        name = f"extra_{id(client)}"
        with client.subscribe(tools=True, timeout=WAIT):
            client.call_tool("grow", {"name": name}, timeout=WAIT)
            notified.wait(WAIT)
        sent = Counts(server)
        after = {tool.name for tool in other.list_tools()}
        assert after - before == {name} and sent["tools/list"] == 1


def test_a_resource_update_makes_that_resource_stale(server: ServerProcess) -> None:
    notified = Notified("notifications/resources/updated")
    touched, kept = "test://whoami/touched-c", "test://whoami/kept-c"
    with connect(server, notification_handler=notified) as client:
        for uri in (touched, kept):
            client.read_resource(uri)
        client.subscribe_resource(touched)
        client.call_tool("touch", {"uri": touched}, timeout=WAIT)
        notified.wait(WAIT)
        sent = Counts(server)
        client.read_resource(touched)
        client.read_resource(kept)
        assert sent["resources/read"] == 1
        info = client.cache_info("resources/read", {"uri": kept})
        assert info is not None and info.hit
        client.unsubscribe_resource(touched)


def test_a_reconnect_and_invalidate_cache_make_the_server_stale(server: ServerProcess) -> None:
    cache = ResponseCache()
    with connect(server, cache=cache) as client, connect(server, cache=cache) as other:
        client.list_tools()
        other.read_resource(GREETING)
        client.close()
        client.connect()  # a session in place of the one it had: notifications missed
        sent = Counts(server)
        other.list_tools()
        other.read_resource(GREETING)
        assert (sent["tools/list"], sent["resources/read"]) == (1, 1)
        other.invalidate_cache("tools/list")
        other.list_tools()
        other.read_resource(GREETING)
        assert (sent["tools/list"], sent["resources/read"]) == (2, 1)
        other.invalidate_cache(uri=GREETING)
        other.read_resource(GREETING)
        assert sent["resources/read"] == 2


def test_a_manager_hands_its_cache_to_its_clients(server: ServerProcess) -> None:
    """(A manager's reconnect making the entries stale: tests/client/
    test_response_cache_stdio.py, where the server can die and start again.)"""
    cache = ResponseCache()
    config = {"mcpServers": {"sdk": {"url": server.url}}}
    with Manager(config, cache=cache, timeout=WAIT, probe_timeout=WAIT) as manager, \
            connect(server, cache=cache) as watcher:
        assert manager.wait_ready(timeout=WAIT)
        assert manager["sdk"].response_cache is cache
        sent = Counts(server)
        manager.read_resource("sdk", GREETING)
        manager.read_resource("sdk", GREETING)
        watcher.list_tools()  # the manager's listing at its connect
        watcher.read_resource(GREETING)  # the same (anonymous) authorization context
        for method, params in (("tools/list", None), ("resources/read", {"uri": GREETING})):
            info = watcher.cache_info(method, params)
            assert info is not None and info.hit
        assert (sent["tools/list"], sent["resources/read"]) == (0, 1)


def test_ping_and_submit_never_go_through_the_cache(server: ServerProcess) -> None:
    with connect(server) as client:
        client.list_tools()
        client.request("server/discover")
        sent = Counts(server)
        client.list_tools()
        client.request("server/discover")
        assert (sent["tools/list"], sent["server/discover"]) == (0, 0)  # both cached
        for _ in range(2):
            assert client.submit("tools/list").result(WAIT)["tools"]
            client.ping()
        assert (sent["tools/list"], sent["server/discover"]) == (2, 2)


def test_a_managers_listings_and_reads_take_a_cache_mode(server: ServerProcess) -> None:
    config = {"mcpServers": {"sdk": {"url": server.url}}}
    with Manager(config, cache=ResponseCache(), timeout=WAIT, probe_timeout=WAIT) as manager:
        assert manager.wait_ready(timeout=WAIT)
        sent = Counts(server)
        for mode in ("use", "use", "refresh", "bypass", "use"):
            assert [p.name for p in manager.list_prompts(cache=mode)] == ["sdk__review"]
            manager.list_resources(cache=mode)
            manager.list_resource_templates(cache=mode)
            assert manager.read_resource(GREETING, cache=mode).contents[0].text  # type: ignore[union-attr]
        # the first "use" fetched and stored, "refresh" fetched again, "bypass" too but
        # stored nothing, and the last "use" was served what "refresh" stored
        for method in ("prompts/list", "resources/list", "resources/templates/list",
                       "resources/read"):
            assert sent[method] == 3, method
        read = manager["sdk"].cache_info("resources/read", {"uri": GREETING})
        assert read is not None and read.hit
        with pytest.raises(ValueError, match="cache mode must be one of"):
            manager.list_prompts(cache="never")
        with pytest.raises(ValueError, match="cache mode must be one of"):
            manager.read_resource("sdk", GREETING, cache="never")
        assert sent["prompts/list"] == 3 and sent["resources/read"] == 3


def test_a_cached_listing_is_still_reviewed_against_the_pins(server: ServerProcess) -> None:
    """A tool whose definition differs from its pin is blocked, whether the listing came
    from the server or from the cache."""
    cache = ResponseCache()
    pins = ToolPins()
    with connect(server, cache=cache, tool_pins=pins) as first:
        first.list_tools()
    pinned: Dict[str, Dict[str, Any]] = pins.pinned()
    pinned["add"] = {**pinned["add"], "description": "Add two integers, as pinned."}
    with connect(server, cache=cache, tool_pins=ToolPins(pinned)) as second:
        sent = Counts(server)
        names = {tool.name for tool in second.list_tools()}
        info = second.cache_info("tools/list")
        assert info is not None and info.hit and sent["tools/list"] == 0
        assert "add" not in names and "grow" in names
        assert [change.tool for change in second.tool_changes()] == ["add"]
        with pytest.raises(mcp_sync.ToolChanged):
            second.call_tool("add", {"a": 1, "b": 2})
        second.accept_tool_changes("add")
        assert "add" in {tool.name for tool in second.list_tools()}


def test_the_client_example_of_the_docs_runs_against_the_server(
        server: ServerProcess, capsys: pytest.CaptureFixture[str]) -> None:
    namespace: Dict[str, Any] = {"url": server.url, "uri": GREETING}
    sent = Counts(server)
    try:
        exec(docs_example("## The client's cache"), namespace)
        assert capsys.readouterr().out == "True public 60.0\n"
        assert sent["tools/list"] == 2  # the first listing and the refresh
        assert sent["resources/read"] == 1
    finally:
        if "client" in namespace:
            namespace["client"].close()
