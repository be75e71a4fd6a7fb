"""The caching rules of SEP-2549 and the cache keys, as pure functions (mcp_sync.cache)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Optional

import pytest
import requests.auth

from mcp_sync.cache import (
    CACHEABLE_METHODS,
    MAX_TTL,
    Hints,
    cacheable_params,
    check_mode,
    command_identity,
    credential_identity,
    hints_honoured,
    hints_of,
    listing_hints,
    params_key,
    stale_after,
    url_identity,
)
from mcp_sync.cache._keys import KEY_PREFIX, KeyMaker

from .._cache_contract import page

SPEC_DIR = Path(__file__).resolve().parents[1] / "spec"  # copies, see tests/spec/README.md


def test_the_cacheable_methods_are_the_schemas() -> None:
    """The methods whose 2026-07-28 results carry ttlMs and cacheScope, read from the
    specification's schema (a copy of which the project keeps in tests/spec)."""
    schema = json.loads((SPEC_DIR / "2026-07-28" / "schema.json").read_text())
    definitions = schema.get("definitions") or schema["$defs"]
    results = {name for name, definition in definitions.items()
               if "ttlMs" in definition.get("properties", {}) and name.endswith("Result")}
    assert results == {"CacheableResult", "DiscoverResult", "ListPromptsResult",
                       "ListResourceTemplatesResult", "ListResourcesResult",
                       "ListToolsResult", "ReadResourceResult"}
    methods = {definitions[name[:-len("Result")] + "Request"]["properties"]["method"]["const"]
               for name in results - {"CacheableResult"}}
    assert methods == CACHEABLE_METHODS
    assert len(methods) == 6


@pytest.mark.parametrize(("result", "hints"), [
    (page(60_000, "public"), Hints(60.0, "public")),
    (page(1, "private"), Hints(0.001, "private")),
    (page(60_000, None), Hints(60.0, "private")),  # no scope: the one that shares nothing
    (page(60_000, "tenant"), Hints(60.0, "private")),  # an unknown scope too
    (page(2.5e3, "public"), Hints(2.5, "public")),
    (page(None, "public"), Hints(0.0, "private")),  # absent: stale at once
    (page(0, "public"), Hints(0.0, "private")),
    (page(-5, "public"), Hints(0.0, "private")),  # negative: treated as 0
    (page(True, "public"), Hints(0.0, "private")),  # a boolean is no number here
    (page("60000", "public"), Hints(0.0, "private")),
    (page(float("nan"), "public"), Hints(0.0, "private")),
    (page(float("inf"), "public"), Hints(0.0, "private")),
    (page(10 ** 12, "public"), Hints(MAX_TTL, "public")),  # capped at a day
    ({**page(), "resultType": "input_required"}, Hints(0.0, "private")),
    ({"ttlMs": 60_000, "cacheScope": "public"}, Hints(60.0, "public")),  # no resultType
    ([], Hints(0.0, "private")),
    (None, Hints(0.0, "private")),
])
def test_hints_of_a_result(result: Any, hints: Hints) -> None:
    assert hints_of(result) == hints
    assert hints.storable is (hints.ttl > 0)


def test_max_ttl_is_the_callers() -> None:
    assert hints_of(page(60_000), max_ttl=5.0) == Hints(5.0, "public")


def test_a_listing_is_as_fresh_as_its_stalest_page_and_private_if_any_page_is() -> None:
    pages = [page(60_000, "public"), page(10_000, "public"), page(30_000, "public")]
    assert listing_hints(pages) == Hints(10.0, "public")
    pages[2] = page(30_000, "private")
    assert listing_hints(pages) == Hints(10.0, "private")
    # One page that may not be cached: the listing is not cached.
    assert not listing_hints([page(60_000), page(0)]).storable
    assert not listing_hints([page(60_000), page(None)]).storable
    assert not listing_hints([]).storable


@pytest.mark.parametrize(("notification", "params", "stale"), [
    ("notifications/tools/list_changed", None, (("tools/list", None),)),
    ("notifications/prompts/list_changed", {}, (("prompts/list", None),)),
    ("notifications/resources/list_changed", None,
     (("resources/list", None), ("resources/templates/list", None))),
    ("notifications/resources/updated", {"uri": "file:///a"}, (("resources/read", "file:///a"),)),
    # Without a usable uri: every read of the server.
    ("notifications/resources/updated", {"uri": 5}, (("resources/read", None),)),
    ("notifications/resources/updated", None, (("resources/read", None),)),
    ("notifications/message", {"level": "info"}, ()),
    ("notifications/progress", None, ()),
])
def test_what_a_notification_makes_stale(notification: str, params: Optional[Dict[str, Any]],
                                         stale: Any) -> None:
    assert stale_after(notification, params) == stale


def test_modes_and_eras() -> None:
    assert [check_mode(mode) for mode in ("use", "refresh", "bypass")] == [
        "use", "refresh", "bypass"]
    for wrong in ("USE", "off", None, True):
        with pytest.raises(ValueError, match="cache mode"):
            check_mode(wrong)
    assert hints_honoured("2026-07-28")
    assert not any(hints_honoured(v) for v in ("2025-11-25", "2024-11-05", None, "2099-01-01"))


def test_a_multi_round_trip_continuation_is_never_cacheable() -> None:
    assert cacheable_params(None) and cacheable_params({}) and cacheable_params({"uri": "x"})
    assert not cacheable_params({"uri": "x", "inputResponses": {}})
    assert not cacheable_params({"uri": "x", "requestState": "opaque"})


def test_params_key_keeps_what_affects_the_result() -> None:
    assert params_key(None) == params_key({}) == ""
    # _meta (a progress token, trace context) never changes the answer.
    assert params_key({"_meta": {"progressToken": 1}}) == ""
    assert params_key({"uri": "a", "_meta": {"x": 1}}) == params_key({"uri": "a"})
    # The uri and the cursor do; the order of the keys does not.
    assert params_key({"uri": "a"}) != params_key({"uri": "b"})
    assert params_key({"cursor": "2"}) != params_key({})
    assert params_key({"a": 1, "b": 2}) == params_key({"b": 2, "a": 1})
    with pytest.raises(ValueError, match="not JSON"):
        params_key({"uri": {1, 2}})


def test_url_identity_leaves_the_credentials_out() -> None:
    plain = url_identity("https://Example.COM:8443/mcp?tenant=1")
    assert plain == "url:https://example.com:8443/mcp?tenant=1"
    assert url_identity("https://user:hunter2@example.com:8443/mcp?tenant=1#x") == plain
    assert "hunter2" not in url_identity("https://user:hunter2@example.com/mcp")
    # Path and query select the server.
    assert url_identity("https://example.com/a") != url_identity("https://example.com/b")
    assert url_identity("https://example.com/?t=1") != url_identity("https://example.com/?t=2")
    assert url_identity("http://[::1]:80/mcp") == "url:http://[::1]:80/mcp"


def test_command_identity_hashes_the_environment() -> None:
    base = command_identity(["python", "server.py"], env={"API_KEY": "s3cret"}, cwd="/srv")
    assert "s3cret" not in base and base.startswith("command:")
    assert base == command_identity(["python", "server.py"], env={"API_KEY": "s3cret"},
                                    cwd="/srv")
    assert base != command_identity(["python", "server.py"], env={"API_KEY": "other"},
                                    cwd="/srv")
    assert base != command_identity(["python", "server.py"], env={"API_KEY": "s3cret"})
    assert base != command_identity(["python", "other.py"], env={"API_KEY": "s3cret"},
                                    cwd="/srv")
    assert command_identity("npx server") == command_identity(["npx server"])


class DeclaredAuth(requests.auth.AuthBase):
    """An auth that names its principal, as a self-refreshing token's auth should."""

    def __init__(self, principal: str, token: str) -> None:
        self.principal = principal
        self.token = token

    def cache_identity(self) -> str:
        return self.principal


class OpaqueAuth(requests.auth.AuthBase):
    def __call__(self, r: Any) -> Any:
        return r


def test_credential_identity_is_a_digest_never_the_token() -> None:
    token = "tok-" + "x" * 40
    alice = credential_identity(headers={"Authorization": f"Bearer {token}"})
    assert token not in alice and alice.startswith("cred:") and len(alice) == 5 + 64
    # Same credentials, same context (header names in any case); others, another.
    assert alice == credential_identity(headers={"authorization": f"Bearer {token}"})
    assert alice != credential_identity(headers={"Authorization": "Bearer other"})
    # No credentials at all: the one anonymous context.
    assert credential_identity() == credential_identity(headers={}) == ""
    # A (user, password) pair and requests' basic auth are looked into...
    pair = credential_identity(auth=("ann", "pw1"))
    assert pair == credential_identity(auth=("ann", "pw1"))
    assert pair != credential_identity(auth=("ann", "pw2"))
    basic = credential_identity(auth=requests.auth.HTTPBasicAuth("ann", "pw1"))
    assert basic == credential_identity(auth=requests.auth.HTTPBasicAuth("ann", "pw1"))
    assert basic != credential_identity(auth=requests.auth.HTTPBasicAuth("ann", "pw2"))
    assert basic != credential_identity(auth=requests.auth.HTTPDigestAuth("ann", "pw1"))
    # ...an auth that declares its principal keeps it across a token refresh...
    declared = credential_identity(auth=DeclaredAuth("ann@issuer", "token-1"))
    assert declared == credential_identity(auth=DeclaredAuth("ann@issuer", "token-2"))
    assert declared != credential_identity(auth=DeclaredAuth("bob@issuer", "token-1"))
    # ...and any other auth object is a context of its own, stable while it lives.
    opaque = OpaqueAuth()
    assert credential_identity(auth=opaque) == credential_identity(auth=opaque)
    assert credential_identity(auth=opaque) != credential_identity(auth=OpaqueAuth())
    assert credential_identity(secrets=["user:pw"]) != credential_identity(secrets=["u:p"])


def test_a_cache_identity_that_is_no_string_is_refused() -> None:
    with pytest.raises(ValueError, match="cache_identity"):
        credential_identity(auth=DeclaredAuth("", "token"))


def test_keys_name_their_format_and_hide_their_material() -> None:
    keys = KeyMaker()
    server = url_identity("https://example.com/mcp")
    entry = keys.entry(server, "2026-07-28", ("public", ""), "resources/read",
                       params_key({"uri": "file:///secret-name"}))
    assert entry.startswith(KEY_PREFIX) and KEY_PREFIX == "mcp-sync:c1:"
    assert "example" not in entry and "secret-name" not in entry
    # Short, ASCII, no space: memcached's and Django's key rules.
    assert len(entry) < 100 and entry.isascii() and " " not in entry
    # Every part of the material counts.
    variants = {
        keys.entry(server, "2026-07-28", ("public", ""), "resources/read", "a"),
        keys.entry(server, "2099-01-01", ("public", ""), "resources/read", "a"),
        keys.entry(server, "2026-07-28", ("private", ""), "resources/read", "a"),
        keys.entry(server, "2026-07-28", ("private", "cred:1"), "resources/read", "a"),
        keys.entry(server, "2026-07-28", ("public", ""), "tools/list", "a"),
        keys.entry(server, "2026-07-28", ("public", ""), "resources/read", "b"),
        keys.entry(server, "2026-07-28", ("public", ""), "resources/read", "a", "v2"),
        keys.entry("url:other", "2026-07-28", ("public", ""), "resources/read", "a"),
    }
    assert len(variants) == 8
    assert len({keys.generation(server), keys.generation(server, "tools/list"),
                keys.generation(server, "resources/read", "a")}) == 3
    # A secret keys every digest: another secret, other keys.
    keyed = KeyMaker(b"one").generation(server)
    assert keyed != keys.generation(server) and keyed != KeyMaker(b"two").generation(server)
    assert keyed == KeyMaker(b"one").generation(server)
