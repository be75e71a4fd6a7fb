"""mcp_sync.auth: bearer tokens and the MCP OAuth 2.1 flow.

Three layers: the sans-I/O parts (challenge parsing, discovery URLs, scope selection,
``iss`` validation, PKCE) fed values; storage on a real file; whole clients against the
project's own authorization server and protected MCP server (``tests/servers/
oauth_server.py``, two threaded servers on 127.0.0.1, each its own origin), which approve
at once, so the headless flow (``follow_redirect``) stands in for the user's browser.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any, Iterator, List, Optional

import jwt
import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

import mcp_sync
from mcp_sync import AuthError
from mcp_sync.auth import (
    AuthorizationRequired,
    BearerAuth,
    FileTokenStorage,
    HeadlessFlow,
    LoopbackFlow,
    MemoryTokenStorage,
    OAuth,
    OAuthError,
    WebAppFlow,
    follow_redirect,
)
from mcp_sync.auth import metadata as md
from mcp_sync.auth.pkce import code_challenge, make_state, pkce_pair
from mcp_sync.auth.policy import FetchPolicy

from ..servers.oauth_server import OAuthTestServer

WAIT = 10.0
PINNED = "2025-11-25"


# -- helpers ------------------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[OAuthTestServer]:
    with OAuthTestServer() as running:
        yield running


def make_oauth(**kwargs: Any) -> OAuth:
    kwargs.setdefault("redirect_handler", follow_redirect)
    kwargs.setdefault("timeout", WAIT)
    kwargs.setdefault("authorization_timeout", WAIT)
    return OAuth(**kwargs)


def connect(server: OAuthTestServer, auth: Any, **kwargs: Any) -> mcp_sync.Client:
    kwargs.setdefault("protocol_version", PINNED)
    kwargs.setdefault("timeout", WAIT)
    return mcp_sync.connect(server.mcp_url, auth=auth, **kwargs)


def use(server: OAuthTestServer, auth: Any, tool: str = "echo", **kwargs: Any) -> str:
    """Connect, call one tool, close; returns the tool's text."""
    with connect(server, auth, **kwargs) as client:
        return client.call_tool(tool, {}).text


def grant_types(server: OAuthTestServer) -> List[Optional[str]]:
    return [request["form"].get("grant_type") for request in server.token_requests]


# -- the sans-I/O core --------------------------------------------------------------------


def test_www_authenticate_is_parsed() -> None:
    (challenge,) = md.parse_www_authenticate(
        'Bearer error="insufficient_scope", scope="files:read  files:write", '
        'resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", '
        'error_description="need \\"write\\""')
    assert challenge.scheme == "Bearer"
    assert challenge.error == "insufficient_scope"
    assert challenge.scope == "files:read files:write"
    assert challenge.resource_metadata == (
        "https://mcp.example.com/.well-known/oauth-protected-resource")
    assert challenge.error_description == 'need "write"'
    several = md.parse_www_authenticate('Basic realm="x", Bearer realm="y", error=invalid_token')
    assert [c.scheme for c in several] == ["Basic", "Bearer"]
    assert several[1].params == {"realm": "y", "error": "invalid_token"}
    assert md.bearer_challenge(['Negotiate abc==, Bearer scope="z"']).scope == "z"
    assert md.bearer_challenge(['Basic realm="x"']) is None
    assert md.parse_www_authenticate("Bearer")[0].params == {}
    for junk in ("", "=,,", 'realm="x"', "Bearer ,,, =="):
        md.parse_www_authenticate(junk)  # never raises


def test_pkce_matches_the_rfc_7636_example() -> None:
    verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    assert code_challenge(verifier) == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    verifier, challenge = pkce_pair()
    assert 43 <= len(verifier) <= 128 and challenge == code_challenge(verifier)
    assert make_state() != make_state()


def test_discovery_urls_follow_the_specification_order() -> None:
    assert md.protected_resource_metadata_urls(
        "https://mcp.example.com/public/mcp", "https://mcp.example.com/meta.json") == [
        "https://mcp.example.com/meta.json",
        "https://mcp.example.com/.well-known/oauth-protected-resource/public/mcp",
        "https://mcp.example.com/.well-known/oauth-protected-resource",
    ]
    assert md.protected_resource_metadata_urls("https://mcp.example.com") == [
        "https://mcp.example.com/.well-known/oauth-protected-resource"]
    assert md.authorization_server_metadata_urls("https://auth.example.com/tenant1") == [
        "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
        "https://auth.example.com/.well-known/openid-configuration/tenant1",
        "https://auth.example.com/tenant1/.well-known/openid-configuration",
    ]
    assert md.authorization_server_metadata_urls("https://auth.example.com/") == [
        "https://auth.example.com/.well-known/oauth-authorization-server",
        "https://auth.example.com/.well-known/openid-configuration",
    ]
    assert md.default_endpoints("https://api.example.com/v1/mcp")["token_endpoint"] == (
        "https://api.example.com/token")


def test_resource_must_cover_the_server() -> None:
    assert md.canonical_resource("HTTPS://MCP.Example.com:8443/mcp/?x=1#f") == (
        "https://mcp.example.com:8443/mcp")
    assert md.resource_matches("https://mcp.example.com", "https://mcp.example.com/mcp")
    assert md.resource_matches("https://mcp.example.com/mcp", "https://MCP.example.com/mcp/")
    assert not md.resource_matches("https://mcp.example.com/mc", "https://mcp.example.com/mcp")
    assert not md.resource_matches("https://evil.example.com/mcp",
                                   "https://mcp.example.com/mcp")
    assert not md.resource_matches("http://mcp.example.com/mcp", "https://mcp.example.com/mcp")
    with pytest.raises(AuthError, match="refusing to authorize"):
        md.check_protected_resource_metadata(
            {"resource": "https://evil.example.com/mcp",
             "authorization_servers": ["https://as.example.com"]},
            "https://mcp.example.com/mcp", "prm",
            policy=FetchPolicy("https://mcp.example.com/mcp"))


def test_scope_selection() -> None:
    select = md.select_scope
    assert select(configured=None, challenged="a b", scopes_supported=["c"]) == "a b"
    assert select(configured=None, challenged=None, scopes_supported=["c", "d"]) == "c d"
    assert select(configured=None, challenged=None, scopes_supported=None) is None
    assert select(configured="x", challenged="a", scopes_supported=["c"]) == "x"
    assert select(configured=None, challenged="w", scopes_supported=None,
                  previous="r w2") == "r w2 w"
    assert select(configured=None, challenged="a", scopes_supported=None, offline_access=True,
                  as_scopes_supported=["a", "offline_access"]) == "a offline_access"
    assert select(configured=None, challenged="a", scopes_supported=None, offline_access=True,
                  as_scopes_supported=["a"]) == "a"
    assert select(configured=None, challenged=None, scopes_supported=None, offline_access=True,
                  as_scopes_supported=["offline_access"]) is None


@pytest.mark.parametrize(("supported", "iss", "accepted"), [
    (True, "https://as.example.com", True),
    (True, None, False),
    (False, "https://as.example.com", True),
    (False, None, True),
    (True, "https://evil.example.com", False),
    (False, "https://evil.example.com", False),
    (True, "https://as.example.com/", False),  # no normalization
    (True, "HTTPS://as.example.com", False),
])
def test_iss_is_validated_as_rfc_9207_says(supported: bool, iss: Optional[str],
                                           accepted: bool) -> None:
    params = {"code": "c0de", "state": "s"}
    if iss is not None:
        params["iss"] = iss
    check = md.check_authorization_response
    if accepted:
        assert check(params, expected_state="s", expected_issuer="https://as.example.com",
                     iss_supported=supported) == "c0de"
    else:
        with pytest.raises(AuthError, match="RFC 9207"):
            check(params, expected_state="s", expected_issuer="https://as.example.com",
                  iss_supported=supported)


def test_state_is_checked_before_anything_else() -> None:
    with pytest.raises(AuthError, match="state"):
        md.check_authorization_response({"code": "c", "state": "other"}, expected_state="s",
                                        expected_issuer=None, iss_supported=False)
    # An error response from the wrong issuer is not acted on (nor shown).
    with pytest.raises(AuthError, match="RFC 9207") as caught:
        md.check_authorization_response(
            {"error": "access_denied", "error_description": "SECRET-ISH", "state": "s",
             "iss": "https://evil.example.com"},
            expected_state="s", expected_issuer="https://as.example.com", iss_supported=True)
    assert "SECRET-ISH" not in str(caught.value)
    with pytest.raises(AuthError, match="access_denied"):
        md.check_authorization_response({"error": "access_denied", "state": "s"},
                                        expected_state="s", expected_issuer=None,
                                        iss_supported=False)


def test_import_mcp_sync_loads_neither_auth_nor_requests() -> None:
    code = ("import sys, mcp_sync; "
            "assert 'mcp_sync.auth' not in sys.modules and 'requests' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    assert not hasattr(mcp_sync, "OAuth") and "OAuth" not in mcp_sync.__all__


# -- storage ------------------------------------------------------------------------------


def test_file_storage_is_private_and_survives_a_new_process(tmp_path: Path) -> None:
    path = tmp_path / "config" / "tokens.json"
    storage = FileTokenStorage(path)
    assert storage.load("tokens", "https://x") is None
    storage.save("tokens", "https://x", {"access_token": "a"})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    storage.save("client", "https://as", {"client_id": "c"})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = FileTokenStorage(str(path))
    assert again.load("tokens", "https://x") == {"access_token": "a"}
    assert json.loads(path.read_text())["client"] == {"https://as": {"client_id": "c"}}
    again.delete("tokens", "https://x")
    assert storage.load("tokens", "https://x") is None
    assert [p.name for p in path.parent.iterdir()] == ["tokens.json"]  # no temporary left
    path.write_text("{not json")
    with pytest.raises(AuthError, match="not JSON"):
        storage.load("tokens", "https://x")


def test_every_folder_the_library_makes_is_0700_under_umask_000(tmp_path: Path) -> None:
    """The token file's folders and the tool cache's, parents included, under the most
    permissive umask (set in a child process: the umask is the whole process's)."""
    code = textwrap.dedent("""
        import os, sys
        from pathlib import Path
        from mcp_sync.manager._toolcache import ToolCache
        from mcp_sync.auth import FileTokenStorage

        os.umask(0)
        root = Path(sys.argv[1])
        FileTokenStorage(root / "home" / "config" / "mcp" / "tokens.json").save(
            "tokens", "https://mcp.example.com/mcp", {"access_token": "at"})
        ToolCache(root / "cache" / "a" / "tools", max_age=60).store("key", "server", [])
    """)
    (tmp_path / "home").mkdir(mode=0o755)  # there already: left as it was
    os.chmod(tmp_path / "home", 0o755)
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True, timeout=60)
    modes = {str(path.relative_to(tmp_path)): stat.S_IMODE(path.stat().st_mode)
             for path in sorted(tmp_path.rglob("*"))}
    assert modes == {
        "cache": 0o700, "cache/a": 0o700, "cache/a/tools": 0o700,
        "cache/a/tools/key.json": 0o600,
        "home": 0o755, "home/config": 0o700, "home/config/mcp": 0o700,
        "home/config/mcp/tokens.json": 0o600,
    }, modes


def test_memory_storage_copies_values() -> None:
    storage = MemoryTokenStorage()
    value = {"access_token": "a"}
    storage.save("tokens", "k", value)
    value["access_token"] = "changed"
    assert storage.load("tokens", "k") == {"access_token": "a"}


# -- bearer tokens and static headers -------------------------------------------------------


def test_bearer_auth_with_a_token_a_callable_and_static_headers(
        server: OAuthTestServer) -> None:
    token = server.issue_token("tester", ["mcp:write"])
    assert use(server, BearerAuth(token), "write_note") == "write_note by tester with mcp:write"
    calls = []

    def current() -> str:
        calls.append(1)
        return token

    assert use(server, BearerAuth(current)) == "echo by tester with mcp:write"
    assert len(calls) >= 3  # once per request: initialize, initialized, the call
    with connect(server, None, headers={"Authorization": f"Bearer {token}"}) as client:
        assert client.call_tool("echo", {}).text.startswith("echo by tester")
    assert token not in repr(BearerAuth(token))
    with pytest.raises(AuthError, match="line break"):
        BearerAuth("a\r\nX-Evil: 1")(requests.Request("GET", server.mcp_url).prepare())


def test_bearer_auth_over_the_legacy_sse_transport() -> None:
    from ..servers.http_server import echo_fake
    from ..servers.legacy_sse_server import LegacySseServer

    with LegacySseServer(echo_fake("legacy")) as legacy:
        legacy.required_headers = {"Authorization": "Bearer legacy-token"}
        with mcp_sync.connect(legacy.url, transport="sse", timeout=WAIT,
                              auth=BearerAuth(lambda: "legacy-token")) as client:
            assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        with mcp_sync.connect(legacy.url, transport="sse", timeout=WAIT,
                              headers={"Authorization": "Bearer legacy-token"}) as client:
            assert client.call_tool("echo", {"text": "ho"}).text == "ho"
        assert all(headers.get("Authorization") == "Bearer legacy-token"
                   for _, _, headers in legacy.requests)
        with pytest.raises(mcp_sync.HTTPError) as caught:
            mcp_sync.connect(legacy.url, transport="sse", timeout=WAIT,
                             auth=BearerAuth("wrong"))
        assert caught.value.status == 401


def test_without_a_token_the_401_carries_the_hints(server: OAuthTestServer) -> None:
    with pytest.raises(mcp_sync.HTTPError) as caught:
        connect(server, None)
    assert caught.value.status == 401
    assert "resource_metadata" in (caught.value.www_authenticate or "")


# -- the OAuth flow --------------------------------------------------------------------------


@pytest.mark.parametrize(("prm", "metadata", "issuer_path"), [
    ("header", "oauth", ""),
    ("path", "openid", ""),
    ("root", "oauth", "/tenant1"),
    ("path", "openid", "/tenant1"),
    ("header", "openid-append", "/tenant1"),
    ("none", "oauth", ""),   # 2025-03-26: metadata at the MCP server's root
    ("none", "none", ""),    # 2025-03-26: default /authorize, /token, /register
])
def test_discovery_variants(prm: str, metadata: str, issuer_path: str) -> None:
    with OAuthTestServer(prm=prm, metadata=metadata, issuer_path=issuer_path) as server:
        with make_oauth() as oauth:
            assert use(server, oauth).startswith("echo by client-")
        (registration,) = server.registrations
        assert registration["application_type"] == "native"
        assert registration["redirect_uris"] == ["http://127.0.0.1/callback"]
        assert set(registration["grant_types"]) == {"authorization_code", "refresh_token"}
        (authorization,) = server.authorizations
        assert authorization["code_challenge_method"] == "S256"
        assert authorization["resource"] == server.mcp_url
        assert authorization["state"]
        assert "scope" not in authorization  # nothing challenged, nothing supported
        assert grant_types(server) == ["authorization_code"]
        assert server.token_requests[0]["form"]["resource"] == server.mcp_url
        # Only the metadata documents that exist were tried, and each in turn.
        as_server = "mcp" if prm == "none" else "as"
        fetched = [r.path for r in server.seen(as_server) if ".well-known" in r.path]
        if metadata != "none":
            assert fetched[-1] in server._metadata_paths()
        if issuer_path:
            assert "/.well-known/oauth-authorization-server" not in fetched
        prm_fetched = [r.path for r in server.seen("mcp") if "protected-resource" in r.path]
        if prm == "path":
            assert prm_fetched == ["/.well-known/oauth-protected-resource/mcp"]
        if prm == "header":
            assert prm_fetched == []  # the challenge named the document


def test_every_request_after_the_login_carries_the_token(server: OAuthTestServer) -> None:
    with make_oauth() as oauth, connect(server, oauth) as client:
        for _ in range(3):
            client.call_tool("echo", {})
        client.ping()
    posts = server.seen("mcp", "/mcp")
    assert posts[0].headers.get("authorization") is None  # the first one gets the 401
    assert all(r.headers.get("authorization", "").startswith("Bearer ") for r in posts[1:])
    assert len(server.authorizations) == 1


def test_a_cookie_set_with_the_401_goes_with_the_request_sent_again(
        server: OAuthTestServer) -> None:
    """A cookie the MCP server sets with its 401 (a load balancer's affinity, say) comes
    back with the request sent again after the login, and with every later request."""
    server.challenge_cookie = "affinity=node-7; Path=/"
    with make_oauth() as oauth, connect(server, oauth) as client:
        client.ping()
    posts = server.seen("mcp", "/mcp")
    assert posts[0].headers.get("cookie") is None  # the first one gets the 401
    assert len(posts) >= 3  # initialize again, notifications/initialized, ping
    assert [r.headers.get("cookie") for r in posts[1:]] == ["affinity=node-7"] * (
        len(posts) - 1)


def test_the_client_negotiates_the_era_through_the_login(server: OAuthTestServer) -> None:
    with make_oauth() as oauth, connect(server, oauth, protocol_version=None) as client:
        assert client.protocol_version == "2025-11-25"
        assert client.call_tool("echo", {}).text.startswith("echo by")
    assert len(server.authorizations) == 1


def test_scope_comes_from_the_challenge_else_scopes_supported(
        server: OAuthTestServer) -> None:
    server.scopes_supported = ["mcp:read", "mcp:list"]
    with make_oauth() as oauth:
        use(server, oauth)
    assert server.authorizations[-1]["scope"] == "mcp:read mcp:list"
    server.challenge_scope = "mcp:basic"
    server.as_scopes_supported = ["mcp:basic", "offline_access"]
    with make_oauth() as oauth:
        use(server, oauth)
    assert server.authorizations[-1]["scope"] == "mcp:basic offline_access"
    with make_oauth(offline_access=False, scope="mcp:custom") as oauth:
        use(server, oauth)
    assert server.authorizations[-1]["scope"] == "mcp:custom"


def test_authorize_logs_in_before_the_first_request(server: OAuthTestServer) -> None:
    server.prm = "path"  # no challenge to learn the metadata from: the well-known URL
    server.scopes_supported = ["mcp:read"]
    with make_oauth() as oauth:
        oauth.authorize(server.mcp_url)
        assert oauth.authorized and len(server.authorizations) == 1
        oauth.authorize()  # a token is at hand: nothing to do
        assert len(server.authorizations) == 1
        assert use(server, oauth).endswith("with mcp:read")
        with pytest.raises(ValueError, match="bound to"):
            oauth.authorize("https://other.example.com/mcp")
    assert len(server.authorizations) == 1
    assert server.seen("mcp", "/mcp")[0].headers["authorization"].startswith("Bearer ")


def test_a_tampered_state_is_refused_before_the_code_is_redeemed(
        server: OAuthTestServer) -> None:
    def tamper(url: str) -> str:
        return follow_redirect(url).replace("state=", "state=x")

    with make_oauth(redirect_handler=tamper) as oauth, pytest.raises(AuthError, match="state"):
        connect(server, oauth)
    assert server.token_requests == []


@pytest.mark.parametrize(("iss_mode", "supported"), [
    ("wrong", True), ("wrong", None), ("normalized", True), ("omit", True),
])
def test_a_wrong_or_missing_iss_is_refused(iss_mode: str, supported: Optional[bool]) -> None:
    with OAuthTestServer() as server:
        server.iss_mode, server.iss_supported = iss_mode, supported
        with make_oauth() as oauth, pytest.raises(AuthError, match="RFC 9207"):
            connect(server, oauth)
        assert len(server.authorizations) == 1
        assert server.token_requests == []


def test_no_iss_is_fine_when_none_is_advertised(server: OAuthTestServer) -> None:
    server.iss_mode, server.iss_supported = "omit", None
    with make_oauth() as oauth:
        assert use(server, oauth).startswith("echo by")


def test_a_mismatched_resource_is_refused(server: OAuthTestServer) -> None:
    server.prm_resource = "https://evil.example.com/mcp"
    with make_oauth() as oauth, pytest.raises(AuthError, match="refusing to authorize"):
        connect(server, oauth)
    assert server.registrations == [] and server.authorizations == []
    assert server.seen("as") == []


def test_metadata_for_another_issuer_is_not_used(server: OAuthTestServer) -> None:
    server.metadata_issuer = "https://attacker.example.com"
    with make_oauth() as oauth, pytest.raises(AuthError, match="not using it"):
        connect(server, oauth)
    assert server.registrations == [] and server.authorizations == []


def test_an_authorization_server_without_pkce_is_refused(server: OAuthTestServer) -> None:
    server.pkce_methods = None
    with make_oauth() as oauth, pytest.raises(AuthError, match="PKCE"):
        connect(server, oauth)
    assert server.authorizations == []


# -- tokens over time ---------------------------------------------------------------------


def test_refresh_on_401(server: OAuthTestServer) -> None:
    with make_oauth() as oauth, connect(server, oauth) as client:
        client.call_tool("echo", {})
        server.revoke_access_tokens()
        assert client.call_tool("echo", {}).text.startswith("echo by")
        assert grant_types(server) == ["authorization_code", "refresh_token"]
        assert len(server.authorizations) == 1
        refresh = server.token_requests[1]["form"]
        assert refresh["resource"] == server.mcp_url
        # The refresh token was refused too: a new authorization follows.
        server.revoke_access_tokens()
        server._refresh.clear()
        assert client.call_tool("echo", {}).text.startswith("echo by")
    assert grant_types(server) == ["authorization_code", "refresh_token", "refresh_token",
                                   "authorization_code"]
    assert len(server.authorizations) == 2


def test_refresh_before_expiry_and_tokens_kept_in_a_file(
        server: OAuthTestServer, tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    with make_oauth(storage=FileTokenStorage(path)) as oauth:
        use(server, oauth)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # A later run of the script: no new login.
    with make_oauth(storage=FileTokenStorage(path)) as oauth:
        use(server, oauth)
    assert len(server.authorizations) == 1 and grant_types(server) == ["authorization_code"]
    # Later still, the token is about to expire: it is refreshed before it is used.
    storage = FileTokenStorage(path)
    (key,) = json.loads(path.read_text())["tokens"]
    record = storage.load("tokens", key)
    assert record is not None
    now = time.time()
    record["issued_at"], record["expires_at"] = now - 3590, now + 10  # within the margin
    storage.save("tokens", key, record)
    with make_oauth(storage=FileTokenStorage(path)) as oauth:
        use(server, oauth)
    assert grant_types(server) == ["authorization_code", "refresh_token"]
    posts = server.seen("mcp", "/mcp")
    assert posts[-1].headers["authorization"] != f"Bearer {record['access_token']}"
    text = path.read_text()
    assert record["access_token"] not in text  # replaced by the refreshed one
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_step_up_asks_for_the_union_of_the_scopes(server: OAuthTestServer) -> None:
    server.challenge_scope = "mcp:read"
    with make_oauth() as oauth, connect(server, oauth) as client:
        text = client.call_tool("write_note", {}).text
        assert text.endswith("with mcp:read mcp:write")
        client.call_tool("write_note", {})  # the new token suffices now
    assert [a.get("scope") for a in server.authorizations] == ["mcp:read",
                                                               "mcp:read mcp:write"]


def test_step_up_gives_up_after_three_authorizations(server: OAuthTestServer) -> None:
    with make_oauth() as oauth, connect(server, oauth) as client:
        assert len(server.authorizations) == 1
        with pytest.raises(AuthError, match=r"insufficient_scope.*after 3 authorizations"):
            client.call_tool("admin", {})
        # Three authorizations for that one call (the one made at connect() aside).
        assert len(server.authorizations) == 4
        assert all("mcp:admin" in a["scope"] for a in server.authorizations[1:])
        assert client.call_tool("echo", {}).text.startswith("echo by")  # still connected


# -- client identity -------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
def test_pre_registered_client(server: OAuthTestServer, method: str) -> None:
    server.registration = False
    server.auth_methods = [method]
    server.add_client("pre-registered", "s3cret:+/", ["http://127.0.0.1/callback"])
    with make_oauth(client_id="pre-registered", client_secret="s3cret:+/") as oauth:
        assert use(server, oauth) == "echo by pre-registered with "
    assert server.token_requests[0]["auth_method"] == method
    assert server.registrations == []


def test_pre_registered_credentials_stay_with_their_issuer(server: OAuthTestServer) -> None:
    server.add_client("pre-registered", "s3cret")
    oauth = make_oauth(client_id="pre-registered", client_secret="s3cret",
                       client_issuer="https://other-as.example.com")
    with oauth, pytest.raises(AuthError, match="not sending its credentials"):
        connect(server, oauth)
    assert server.authorizations == [] and server.token_requests == []


def test_client_id_metadata_document_when_supported(server: OAuthTestServer) -> None:
    server.cimd_supported = True
    url = "https://app.example.com/oauth/client.json"
    with make_oauth(client_metadata_url=url) as oauth:
        assert use(server, oauth) == f"echo by {url} with "
    assert server.authorizations[0]["client_id"] == url
    assert server.registrations == []
    server.cimd_supported = False  # another server: dynamic registration then
    with make_oauth(client_metadata_url=url) as oauth:
        use(server, oauth)
    assert len(server.registrations) == 1


def test_a_registration_is_kept_per_authorization_server(server: OAuthTestServer) -> None:
    storage = MemoryTokenStorage()
    with make_oauth(storage=storage) as oauth:
        use(server, oauth)
    with make_oauth(storage=storage) as oauth:
        oauth.logout()
        use(server, oauth)
    assert len(server.registrations) == 1 and len(server.authorizations) == 2
    client = storage.load("client", server.issuer)
    assert client is not None and client["client_id"].startswith("client-")


def test_client_credentials_with_a_secret(server: OAuthTestServer) -> None:
    server.auth_methods = ["client_secret_basic"]
    server.add_client("backend", "b4ckend")
    server.scopes_supported = ["mcp:write"]
    with OAuth.client_credentials("backend", "b4ckend", timeout=WAIT) as oauth:
        assert use(server, oauth, "write_note") == "write_note by backend with mcp:write"
    assert server.authorizations == []
    (request,) = server.token_requests
    assert request["form"]["grant_type"] == "client_credentials"
    assert request["form"]["resource"] == server.mcp_url
    assert request["auth_method"] == "client_secret_basic"


def test_client_credentials_with_private_key_jwt(server: OAuthTestServer) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    server.auth_methods = ["private_key_jwt"]
    server.add_client("signer", public_key=key.public_key())
    with OAuth.client_credentials("signer", private_key=pem, timeout=WAIT) as oauth:
        assert use(server, oauth) == "echo by signer with "
    assert server.token_requests[0]["auth_method"] == "private_key_jwt"


def test_jwt_bearer_grant_for_a_workload(server: OAuthTestServer) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    server.workload_key = key.public_key()
    server.scopes_supported = ["mcp:write"]
    now = int(time.time())

    def workload_token() -> str:  # what a workload reads from its identity provider
        claims = {"iss": "https://idp.example.com", "sub": "workload-7", "aud": server.issuer,
                  "iat": now, "exp": now + 300}
        return str(jwt.encode(claims, key, algorithm="ES256"))

    with OAuth.jwt_bearer(workload_token, timeout=WAIT) as oauth:
        assert use(server, oauth, "write_note") == "write_note by workload-7 with mcp:write"
    (request,) = server.token_requests
    assert request["form"]["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"
    assert "client_id" not in request["form"]
    # A refused assertion fails the call, and is not retried nor replaced by another grant.
    with OAuth.jwt_bearer("not-a-jwt", timeout=WAIT) as oauth, pytest.raises(
            OAuthError, match="invalid_grant"):
        connect(server, oauth)
    assert len(server.token_requests) == 2 and server.authorizations == []


# -- the user-facing part ---------------------------------------------------------------


def test_loopback_flow_receives_the_redirect_once(server: OAuthTestServer) -> None:
    browsers: List[threading.Thread] = []

    def fake_browser(url: str) -> None:
        # What a browser does: follow the authorization server's redirect to the loopback.
        thread = threading.Thread(target=requests.get, args=(url,), kwargs={"timeout": WAIT},
                                  name="fake-browser")
        browsers.append(thread)
        thread.start()

    flow = LoopbackFlow(open_browser=False, on_authorization_url=fake_browser)
    with OAuth(flow=flow, authorization_timeout=WAIT, timeout=WAIT) as oauth:
        assert use(server, oauth).startswith("echo by")
        port = flow.port
    for thread in browsers:
        thread.join(WAIT)
    redirect = server.authorizations[0]["redirect_uri"]
    assert redirect == f"http://127.0.0.1:{port}/callback"
    with pytest.raises(requests.ConnectionError):  # closed after its one request
        requests.get(redirect, timeout=WAIT)


def test_loopback_flow_gives_up_after_authorization_timeout(
        server: OAuthTestServer, caplog: pytest.LogCaptureFixture) -> None:
    flow = LoopbackFlow(open_browser=False)
    with OAuth(flow=flow, authorization_timeout=0.2, timeout=WAIT) as oauth, \
            caplog.at_level(logging.WARNING, "mcp_sync"), \
            pytest.raises(AuthError, match=r"within 0\.2 s"):
        connect(server, oauth)
    assert "open this URL in a browser" in caplog.text


def test_web_app_flow_is_completed_by_the_callback_view(server: OAuthTestServer) -> None:
    seen_urls: List[str] = []
    flow = WebAppFlow("https://app.example.com/oauth/callback",
                      on_authorization_url=seen_urls.append)
    storage = MemoryTokenStorage()
    with OAuth(flow=flow, storage=storage, timeout=WAIT) as oauth:
        with pytest.raises(AuthorizationRequired) as caught:
            connect(server, oauth)
        assert seen_urls == [caught.value.authorization_url]
        # The user's browser goes there and comes back to the callback view:
        callback = follow_redirect(caught.value.authorization_url)
        assert callback.startswith("https://app.example.com/oauth/callback?")
    # The callback view builds its own OAuth over the same (per-user) storage.
    with OAuth(flow=flow, storage=storage, timeout=WAIT) as oauth:
        oauth.complete_authorization(callback)
        with pytest.raises(AuthError, match="no authorization in progress"):
            oauth.complete_authorization(callback)  # a state is used once
    with OAuth(flow=flow, storage=storage, timeout=WAIT) as oauth:
        assert use(server, oauth).startswith("echo by")
    assert server.registrations[0]["application_type"] == "web"
    assert len(server.authorizations) == 1


def test_one_login_for_many_threads(server: OAuthTestServer) -> None:
    threads_waiting = 4

    def approve_once_all_wait(url: str) -> str:
        # Hold the login until every client has been refused: they all need this token.
        assert server.wait_for(lambda s: sum(
            1 for r in s.seen("mcp", "/mcp") if "authorization" not in r.headers)
            >= threads_waiting, WAIT)
        return follow_redirect(url)

    oauth = make_oauth(redirect_handler=approve_once_all_wait)
    results: List[Any] = []

    def work() -> None:
        try:
            results.append(use(server, oauth))
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            results.append(exc)

    workers = [threading.Thread(target=work, name=f"worker-{n}")
               for n in range(threads_waiting)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(WAIT * 2)
    oauth.close()
    assert all(isinstance(r, str) and r.startswith("echo by") for r in results), results
    assert len(results) == threads_waiting
    assert len(server.authorizations) == 1 and len(server.registrations) == 1


# -- secrets --------------------------------------------------------------------------------


def test_secrets_stay_out_of_urls_logs_and_other_origins(
        server: OAuthTestServer, caplog: pytest.LogCaptureFixture) -> None:
    server.auth_methods = ["client_secret_post"]
    with caplog.at_level(logging.DEBUG), make_oauth() as oauth:
        with connect(server, oauth) as client:
            client.call_tool("echo", {})
            server.revoke_access_tokens()
            client.call_tool("echo", {})  # refreshed
        other = requests.Request("GET", server.as_origin + "/anything").prepare()
        assert "Authorization" not in oauth(other).headers  # another origin: untouched
        assert repr(oauth).count("secret") == 0
    tokens = [t for r in server.token_requests for t in (r["form"].get("code"),
                                                         r["form"].get("refresh_token"),
                                                         r["form"].get("client_secret"))
              if t]
    issued = [r.headers.get("authorization", "")[7:] for r in server.seen("mcp", "/mcp")]
    secrets_seen = [*tokens, *[t for t in issued if t]]
    assert len(set(secrets_seen)) >= 4
    for secret in secrets_seen:
        assert secret not in caplog.text
        for request in server.requests:
            assert secret not in request.target  # never in a URL
    # The authorization server never saw the MCP server's token.
    assert not any(r.headers.get("authorization", "").startswith("Bearer ")
                   for r in server.seen("as"))


def test_errors_from_the_token_endpoint_are_scrubbed(server: OAuthTestServer) -> None:
    server.registration = False
    server.auth_methods = ["client_secret_post"]
    server.add_client("pre-registered", "right-secret")
    oauth = make_oauth(client_id="pre-registered", client_secret="wrong-secret-value")
    with oauth, pytest.raises(AuthError, match="invalid_client") as caught:
        connect(server, oauth)
    assert "wrong-secret-value" not in str(caught.value)
    assert "wrong-secret-value" not in repr(oauth)


def test_headless_flow_errors_become_auth_errors(server: OAuthTestServer) -> None:
    def broken(url: str) -> str:
        raise RuntimeError("no browser")

    with OAuth(flow=HeadlessFlow(broken), timeout=WAIT) as oauth, pytest.raises(
            AuthError, match="redirect handler raised RuntimeError"):
        connect(server, oauth)


def test_file_storage_path_expands_the_home_folder(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    storage = FileTokenStorage("~/tokens.json")
    storage.save("tokens", "k", {"access_token": "a"})
    assert (tmp_path / "tokens.json").exists()
    assert oct(os.stat(tmp_path / "tokens.json").st_mode & 0o777) == "0o600"
