"""The client's cache wiring as pure logic (``mcp_sync/client/_caching.py``): the per-call
modes and the ``cache=`` option checked, the server's identity and the authorization
context taken from a transport (never started here: nothing is sent). The behaviour
against real servers is in tests/interop/test_client_cache.py and
tests/client/test_response_cache_stdio.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from requests.auth import HTTPBasicAuth

from mcp_sync import HttpTransport, MemoryTransport, StdioTransport
from mcp_sync.cache import (
    CACHE_MODES,
    ResponseCache,
    command_identity,
    credential_identity,
    url_identity,
)
from mcp_sync.client._caching import ClientCache, cache_mode, check_option
from mcp_sync.testing import FakeServer


class Holder:
    """What the wiring reads of a connection: its transport."""

    def __init__(self, transport: Any) -> None:
        self.transport = transport


def test_the_modes_are_the_cache_packages() -> None:
    for mode in CACHE_MODES:
        assert cache_mode(mode) == mode
    with pytest.raises(ValueError, match="cache mode must be one of use, refresh, bypass"):
        cache_mode("USE")
    for wrong in (True, None, ["use"], b"use"):
        with pytest.raises(TypeError, match="cache= takes one of 'use', 'refresh', 'bypass'"):
            cache_mode(wrong)


def test_the_cache_option() -> None:
    for fine in (None, True, False, ResponseCache()):
        check_option(fine)
    for wrong in ("yes", 1, object()):
        with pytest.raises(TypeError, match="cache must be None"):
            check_option(wrong)
    assert ClientCache(Holder(None), False).cache is None
    own = ClientCache(Holder(None), None)
    assert isinstance(own.cache, ResponseCache) and own.cache is own.cache
    given = ResponseCache()
    assert ClientCache(Holder(None), given).cache is given


def test_an_http_server_is_its_url_and_the_credentials_its_requests_carry() -> None:
    transport = HttpTransport("https://alice:secret@Example.COM/mcp",
                              headers={"Authorization": "Bearer t1", "X-Trace": "1"})
    headers, auth = transport.credentials()
    assert headers == {"Authorization": "Bearer t1", "X-Trace": "1"}
    assert isinstance(auth, HTTPBasicAuth)
    assert (auth.username, auth.password) == ("alice", "secret")
    server, context = ClientCache(Holder(transport), None).identity()
    assert server == url_identity("https://example.com/mcp")
    assert context == credential_identity(headers=headers, auth=auth)
    assert "t1" not in context and "secret" not in context
    other = HttpTransport("https://alice:secret@example.com/mcp",
                          headers={"Authorization": "Bearer t2", "X-Trace": "1"})
    assert ClientCache(Holder(other), None).identity() == (server, credential_identity(
        headers={"Authorization": "Bearer t2", "X-Trace": "1"}, auth=auth))
    assert ClientCache(Holder(other), None).identity()[1] != context
    anonymous = HttpTransport("https://example.com/mcp")
    assert ClientCache(Holder(anonymous), None).identity() == (server, "")


def test_a_stdio_server_is_its_command_line() -> None:
    transport = StdioTransport("python", ["server.py"], env={"API_KEY": "k"}, cwd="/srv")
    assert ClientCache(Holder(transport), None).identity() == (
        command_identity(["python", "server.py"], env={"API_KEY": "k"}, cwd="/srv"), "")


def test_a_server_it_cannot_name_is_its_own() -> None:
    transport = MemoryTransport(FakeServer("memory"))
    first = ClientCache(Holder(transport), None).identity()
    second = ClientCache(Holder(transport), None).identity()
    assert first[0].startswith("client:") and first != second
