"""OAuth discovery cannot be turned into a request forger (mcp_sync.auth.policy, .fetch).

The hostile peer is the project's own authorization server and protected MCP server
(``tests/servers/oauth_server.py``) told to send the client elsewhere: its metadata and
challenges name loopback, link-local and private addresses, its well-known documents
redirect down to plain http or onto other hosts. A second loopback server, the victim,
notes every connection it accepts: a refused fetch must leave it untouched.

A server is "remote" when its URL's host is not a loopback one. The tests make remote
servers out of names under ``.test`` (RFC 6761: never in real DNS) that this process
resolves to 127.0.0.1 (the ``test_names`` fixture wraps ``socket.getaddrinfo``): the
connections are real, and so is the check of the address each one reached. Remote
servers speak HTTPS, with a certificate made for those names and trusted through
``REQUESTS_CA_BUNDLE``.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator, List, Optional, Tuple

import pytest
import requests

import mcp_sync
from mcp_sync import AuthError
from mcp_sync.auth import IdJagExchange, OAuth, OAuthError, follow_redirect
from mcp_sync.auth.policy import MAX_REDIRECTS, FetchPolicy, address_class, host_class

from ..servers.oauth_server import OAuthTestServer
from ..servers.tls import Certificate, self_signed, server_context

WAIT = 10.0
PINNED = "2025-11-25"
MCP_HOST = "mcp.example.test"
AS_HOST = "sso.example.test"
OTHER_HOST = "other.example.test"
ADDRESS_RULE = "rule: no loopback, private or link-local address"
REDIRECT_RULE = "rule: a redirect never goes from https down to http"


# -- peers --------------------------------------------------------------------------------


class Victim:
    """A loopback HTTP server a hostile server would like the client to reach. It notes
    every connection it accepts (a TLS hello would count) and every request."""

    def __init__(self) -> None:
        self.connections = 0
        self.requests: List[str] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                self._answer()

            def _answer(self) -> None:
                with owner._lock:
                    owner.requests.append(f"{self.command} {self.path}")
                body = b'{"issuer": "x", "token_endpoint": "x", "access_token": "x"}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def get_request(self) -> Tuple[socket.socket, Any]:
                accepted = super().get_request()
                with owner._lock:
                    owner.connections += 1
                return accepted

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass

        self._server = Server(("127.0.0.1", 0), Handler)
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, name="victim-server",
                                        daemon=True)
        self._thread.start()

    def untouched(self) -> bool:
        with self._lock:
            return self.connections == 0 and not self.requests

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(WAIT)


@pytest.fixture
def victim() -> Iterator[Victim]:
    server = Victim()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def test_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """Names under ``.test`` resolve to 127.0.0.1 in this process (nowhere else)."""
    resolve = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(host, str) and host.lower().rstrip(".").endswith(".test"):
            host = "127.0.0.1"
        return resolve(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.fixture
def certificate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, test_names: None) -> Certificate:
    """A certificate for 127.0.0.1 and the test names, trusted by requests in this test."""
    made = self_signed(tmp_path / "tls", names=[MCP_HOST, AS_HOST, OTHER_HOST])
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(made.cert))
    return made


def remote_server(certificate: Certificate, **kwargs: Any) -> OAuthTestServer:
    """An HTTPS MCP server at mcp.example.test with its authorization server at
    sso.example.test: not on loopback, as far as its URLs say."""
    kwargs.setdefault("host", MCP_HOST)
    kwargs.setdefault("as_host", AS_HOST)
    return OAuthTestServer(tls=server_context(certificate), **kwargs)


def make_oauth(**kwargs: Any) -> OAuth:
    kwargs.setdefault("redirect_handler", follow_redirect)
    kwargs.setdefault("timeout", WAIT)
    kwargs.setdefault("authorization_timeout", WAIT)
    return OAuth(**kwargs)


def enterprise_oauth(**kwargs: Any) -> OAuth:
    """The OAuth of a user whose MCP and authorization servers are on the company
    network: both test names listed, nothing else."""
    return make_oauth(allowed_private_hosts=[MCP_HOST, AS_HOST], **kwargs)


def use(server: OAuthTestServer, oauth: OAuth) -> str:
    """Connect with ``oauth``, call ``echo``, close; the tool's text."""
    with oauth, mcp_sync.connect(server.mcp_url, auth=oauth, timeout=WAIT,
                                 protocol_version=PINNED) as client:
        return client.call_tool("echo", {}).text


def refused(server: OAuthTestServer, oauth: OAuth) -> str:
    """Connect with ``oauth``, which must fail with an AuthError: its text."""
    with oauth, pytest.raises(AuthError) as caught:
        use(server, oauth)
    return str(caught.value)


# -- the rule, as pure logic --------------------------------------------------------------


@pytest.mark.parametrize(("address", "kind"), [
    ("127.0.0.1", "loopback"), ("127.8.9.10", "loopback"), ("::1", "loopback"),
    ("::ffff:127.0.0.1", "loopback"), ("2002:7f00:1::", "loopback"),  # mapped, 6to4
    ("169.254.169.254", "link-local"), ("fe80::1", "link-local"),
    ("64:ff9b::a9fe:a9fe", "link-local"),  # NAT64 of the cloud's metadata service
    ("10.1.2.3", "private"), ("172.16.0.1", "private"), ("192.168.1.1", "private"),
    ("fc00::1", "private"), ("fd12:3456::1", "private"),
    ("0.0.0.0", "non-public"), ("::", "non-public"), ("100.64.0.1", "non-public"),
    ("224.0.0.1", "non-public"), ("240.0.0.1", "non-public"),
    ("93.184.216.34", "public"), ("2606:4700::1111", "public"),
    ("::ffff:93.184.216.34", "public"),
])
def test_every_address_has_its_class(address: str, kind: str) -> None:
    assert address_class(ipaddress.ip_address(address)) == kind


def test_the_class_of_a_host_as_a_url_writes_it() -> None:
    assert host_class("localhost") == host_class("app.localhost") == "loopback"
    assert host_class("[::1]") == host_class("127.0.0.1") == "loopback"
    assert host_class("169.254.169.254") == "link-local"
    assert host_class("mcp.example.com") == host_class(MCP_HOST) == "public"  # until connected


REMOTE = "https://mcp.example.com/mcp"
LOCAL = "http://127.0.0.1:8000/mcp"


@pytest.mark.parametrize(("server", "url", "options", "refusal"), [
    (REMOTE, "https://as.example.com/token", {}, None),
    (REMOTE, "http://as.example.com/token", {}, "rule: https only"),
    (REMOTE, "http://as.example.com/token", {"allow_insecure_http": True}, None),
    (REMOTE, "http://127.0.0.1:9000/token", {}, "rule: https only"),
    (REMOTE, "https://127.0.0.1:9000/token", {}, ADDRESS_RULE),
    (REMOTE, "https://localhost/token", {}, ADDRESS_RULE),
    (REMOTE, "https://[::ffff:127.0.0.1]/token", {}, ADDRESS_RULE),
    (REMOTE, "https://169.254.169.254/latest/meta-data/", {}, ADDRESS_RULE),
    (REMOTE, "https://10.0.0.1/token", {}, ADDRESS_RULE),
    (REMOTE, "https://10.0.0.1/token", {"allowed_private_hosts": ["10.0.0.1"]}, None),
    (REMOTE, "https://10.0.0.2/token", {"allowed_private_hosts": ["10.0.0.1"]}, ADDRESS_RULE),
    (REMOTE, "ftp://as.example.com/token", {}, "rule: an absolute http or https URL"),
    (REMOTE, "https://as.example.com/authorize#x", {}, "rule: an absolute http or https URL"),
    (REMOTE, "https://[::1/token", {}, "not a valid URL"),
    (REMOTE, "https://as.example.com:99999/token", {}, "not a valid URL"),
    (LOCAL, "http://127.0.0.1:9000/token", {}, None),
    (LOCAL, "http://localhost:9000/token", {}, None),
    (LOCAL, "https://10.0.0.1/token", {}, None),
    (LOCAL, "http://as.example.com/token", {}, "rule: https only"),
    ("http://localhost:3000/mcp", "http://[::1]:9000/token", {}, None),
])
def test_the_url_rule(server: str, url: str, options: Any, refusal: Optional[str]) -> None:
    policy = FetchPolicy(server, **options)
    if refusal is None:
        policy.check_url(url, "token endpoint")
    else:
        with pytest.raises(AuthError, match=refusal):
            policy.check_url(url, "token endpoint")


@pytest.mark.parametrize(("source", "target", "refusal"), [
    ("https://mcp.example.com/a", "https://mcp.example.com/b", None),
    ("https://mcp.example.com/a", "https://cdn.example.net/b", None),
    ("http://mcp.example.com/a", "https://mcp.example.com/a", None),
    ("https://mcp.example.com/a", "http://mcp.example.com/a", REDIRECT_RULE),
    ("https://mcp.example.com/a", "http://other.example.com/a", REDIRECT_RULE),
    ("https://mcp.example.com/a", "https://127.0.0.1/a", "to a loopback one"),
    ("https://mcp.example.com/a", "https://169.254.169.254/a", "to a link-local one"),
    ("https://10.0.0.1/a", "https://10.0.0.2/a", None),  # both allowed, same class
    ("https://10.0.0.1/a", "https://mcp.example.com/a", "a private host, to a public one"),
    ("https://mcp.example.com/a", "https://[::1/a", "to no valid URL"),
])
def test_the_redirect_rule(source: str, target: str, refusal: Optional[str]) -> None:
    policy = FetchPolicy(REMOTE, allowed_private_hosts=["10.0.0.1", "10.0.0.2"],
                         allow_insecure_http=True)
    if refusal is None:
        policy.check_redirect(source, target, "metadata")
    else:
        with pytest.raises(AuthError, match=refusal):
            policy.check_redirect(source, target, "metadata")


# -- a remote server pointing the flow at private addresses -------------------------------


def _target(kind: str, victim: Victim) -> str:
    return {
        "loopback": f"https://127.0.0.1:{victim.port}/x",
        "localhost": f"https://localhost:{victim.port}/x",
        "mapped": f"https://[::ffff:127.0.0.1]:{victim.port}/x",
        "link-local": "https://169.254.169.254/latest/meta-data/iam/",
        "private": "https://10.0.0.1/x",
    }[kind]


@pytest.mark.parametrize("kind", ["loopback", "localhost", "mapped", "link-local", "private"])
@pytest.mark.parametrize("field", ["resource_metadata", "authorization_servers",
                                   "token_endpoint", "registration_endpoint"])
def test_a_remote_server_cannot_point_the_flow_at_a_private_address(
        field: str, kind: str, certificate: Certificate, victim: Victim) -> None:
    """The challenge's resource_metadata, the resource metadata's authorization server,
    the authorization server's token and registration endpoints: each refused before
    anything is sent, and the error says which URL and which rule."""
    target = _target(kind, victim)
    with remote_server(certificate) as server:
        if field == "resource_metadata":
            server.challenge_resource_metadata = target
        elif field == "authorization_servers":
            server.prm_authorization_servers = [target]
        else:
            server.metadata_overrides = {field: target}
        message = refused(server, enterprise_oauth())
        assert ADDRESS_RULE in message
        shown = target.split("//", 1)[1].split("/", 1)[0]
        assert shown in message, message
        assert not server.token_requests and not server.registrations
    assert victim.untouched()


def test_a_refusal_names_the_url_escaped_without_credentials(
        certificate: Certificate, victim: Victim) -> None:
    with remote_server(certificate) as server:
        server.metadata_overrides = {
            "token_endpoint": f"https://admin:hunter2@127.0.0.1:{victim.port}/token\x1b[2J"}
        message = refused(server, enterprise_oauth())
    assert f"token endpoint https://127.0.0.1:{victim.port}/token\\x1b[2J" in message
    assert "hunter2" not in message and "\x1b" not in message
    assert ADDRESS_RULE in message
    assert victim.untouched()


def test_a_remote_servers_jwks_uri_is_never_fetched(
        certificate: Certificate, victim: Victim) -> None:
    """JWKS is not used: a jwks_uri at a loopback address neither fails the flow nor
    gets a request."""
    with remote_server(certificate) as server:
        server.metadata_overrides = {"jwks_uri": f"https://127.0.0.1:{victim.port}/jwks"}
        assert use(server, enterprise_oauth()).startswith("echo by client-")
    assert victim.untouched()


# -- redirects ----------------------------------------------------------------------------

PRM_PATH = "/.well-known/oauth-protected-resource/mcp"
AS_METADATA_PATH = "/.well-known/oauth-authorization-server"


def test_a_well_known_redirect_down_to_http_on_another_host_is_refused(
        certificate: Certificate, victim: Victim) -> None:
    """The server's own /.well-known/oauth-protected-resource/... answers 302 to plain
    http on another host: not followed."""
    with remote_server(certificate, prm="path") as server:
        location = f"http://{OTHER_HOST}:{victim.port}/prm"
        server.redirects = {("mcp", PRM_PATH): location}
        message = refused(server, enterprise_oauth())
        assert f"refusing the protected resource metadata {location}" in message
        assert f"a redirect from {server.mcp_origin}{PRM_PATH} down from https" in message
        assert REDIRECT_RULE in message
        assert [seen.path for seen in server.seen("mcp", PRM_PATH)] == [PRM_PATH]
    assert victim.untouched()


@pytest.mark.parametrize("hop", ["down-same-host", "to-loopback", "to-link-local",
                                 "not-a-url"])
def test_a_redirect_hop_is_checked_like_the_first_url(
        hop: str, certificate: Certificate, victim: Victim) -> None:
    """The authorization server's metadata redirects down to http on its own name, or
    (the resource metadata) onto a loopback or link-local address, or to no URL at all:
    refused."""
    with remote_server(certificate, prm="path") as server:
        if hop == "down-same-host":
            location = f"http://{AS_HOST}:{victim.port}{AS_METADATA_PATH}"
            server.redirects = {("as", AS_METADATA_PATH): location}
            expected = REDIRECT_RULE
        elif hop == "to-loopback":
            location = f"https://127.0.0.1:{victim.port}/prm"
            server.redirects = {("mcp", PRM_PATH): location}
            expected = "a public host, to a loopback one"
        elif hop == "to-link-local":
            location = "https://169.254.169.254/latest/meta-data/"
            server.redirects = {("mcp", PRM_PATH): location}
            expected = "a public host, to a link-local one"
        else:
            location = f"https://[::1:{victim.port}/prm"
            server.redirects = {("mcp", PRM_PATH): location}
            expected = "to no valid URL (rule: an absolute http or https URL"
        message = refused(server, enterprise_oauth())
        assert expected in message and location in message, message
    assert victim.untouched()


def test_redirects_are_followed_within_the_rule_and_bounded(certificate: Certificate) -> None:
    with remote_server(certificate, prm="path") as server:
        # Moved within the same class of host, over https: followed.
        server.redirects = {("mcp", PRM_PATH): f"{server.mcp_origin}/moved/prm"}
        server.prm_paths = {"/moved/prm"}
        assert use(server, enterprise_oauth()).startswith("echo by client-")
        assert server.seen("mcp", "/moved/prm")
        # An endless chain: MAX_REDIRECTS hops are sent, the next is refused.
        server.redirects = {("mcp", PRM_PATH): f"{server.mcp_origin}/loop",
                            ("mcp", "/loop"): f"{server.mcp_origin}/loop"}
        message = refused(server, enterprise_oauth())
        assert f"rule: at most {MAX_REDIRECTS} redirects" in message
        assert len(server.seen("mcp", "/loop")) == MAX_REDIRECTS


# -- the address a name leads to ----------------------------------------------------------


@pytest.mark.parametrize("scheme", ["https", "http"])
def test_a_name_that_leads_to_loopback_is_refused_on_the_connected_socket(
        scheme: str, certificate: Certificate) -> None:
    """mcp.example.test is no loopback name, but this process resolves it to 127.0.0.1:
    the connection reaches loopback, and the metadata request is never written. (The
    MCP requests themselves go where the user said.)"""
    server = (remote_server(certificate) if scheme == "https"
              else OAuthTestServer(host=MCP_HOST, as_host=AS_HOST))
    with server:
        message = refused(server, make_oauth(allow_insecure_http=scheme == "http"))
        assert f"{MCP_HOST} led to 127.0.0.1, a loopback address" in message, message
        assert f"the MCP server {scheme}://{MCP_HOST}:" in message
        assert ADDRESS_RULE in message
        assert server.seen("mcp", "/mcp")  # the transport's POST, answered 401
        assert not [seen for seen in server.requests if seen.path != "/mcp"]


def test_allowed_private_hosts_admits_exactly_the_hosts_listed(
        certificate: Certificate) -> None:
    with remote_server(certificate) as server:
        # The MCP server's host only: its metadata is read, the authorization server's
        # connection (to 127.0.0.1 behind sso.example.test) is refused.
        message = refused(server, make_oauth(allowed_private_hosts=[MCP_HOST]))
        assert f"{AS_HOST} led to 127.0.0.1" in message and ADDRESS_RULE in message
        assert server.seen("mcp", "/meta/resource.json")
        assert not server.seen("as")
        # Both, written as a user might: the login completes.
        oauth = make_oauth(allowed_private_hosts=[MCP_HOST, "SSO.Example.Test."])
        assert use(server, oauth).startswith("echo by client-")
        assert server.token_requests
    with pytest.raises(ValueError, match="a list of hosts"):
        OAuth(allowed_private_hosts=MCP_HOST)  # a string would be a list of letters


def test_the_idps_token_endpoint_is_the_users_choice(certificate: Certificate) -> None:
    """IdJagExchange's endpoint, given by the user, may be on the company network (here
    a name that leads to 127.0.0.1); plain http to it is still refused."""
    with remote_server(certificate) as server:
        exchange = IdJagExchange(f"{server.as_origin}/token", "an-id-token",
                                 client_id="idp-client", timeout=WAIT)
        with pytest.raises(OAuthError) as caught:  # the IdP's answer: it was reached
            exchange.assertion(issuer=server.issuer, resource=server.mcp_url, scope=None)
        assert caught.value.status == 401
        (request,) = server.token_requests
        assert request["form"]["grant_type"].endswith(":token-exchange")
        clear = server.as_origin.replace("https://", "http://", 1)
        insecure = IdJagExchange(f"{clear}/token", "an-id-token", timeout=WAIT)
        with pytest.raises(AuthError, match="rule: https only"):
            insecure.assertion(issuer=server.issuer, resource=server.mcp_url, scope=None)
        assert len(server.token_requests) == 1


def test_the_flows_requests_carry_no_credential_of_the_users(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither the auth of a session given to OAuth nor a .netrc password for the host:
    a server-chosen URL must not make the client send the user's credentials there."""
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login someone password netrc-secret\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    session = requests.Session()
    session.auth = ("someone", "session-secret")
    with OAuthTestServer() as server:
        assert use(server, make_oauth(session=session)).startswith("echo by client-")
        flow = [seen for seen in server.requests if seen.path != "/mcp"]
    assert {seen.server for seen in flow} == {"mcp", "as"}  # metadata, register, token
    assert [seen.path for seen in flow if "authorization" in seen.headers] == []
