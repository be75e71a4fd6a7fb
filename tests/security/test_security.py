"""The security review (SECURITY.md), one test (or a few) per point.

1. A stdio server gets no secret from the parent: not its environment, not its descriptors.
2. Tokens, passwords and ``Authorization`` headers never appear in logs, exception
   messages or ``repr()``.
3. No credential crosses origins (redirects, legacy endpoints).
4. The file token store is readable by its owner only (0600, folder 0700).
5. Untrusted server strings in exception messages are truncated and their control
   characters (C0, C1, bidi overrides) escaped (more in test_hostile_text.py).
6. A server cannot make the client write outside what the user asked (``--save-images``).
7. A server can make the client do nothing the user did not hand it a handler for.
8. Transport hygiene: TLS verification stays on; session ids cannot inject headers.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import socket
import stat
import subprocess
import unicodedata
from pathlib import Path
from typing import Any, Iterator, List, Union

import pytest
import requests
from hypothesis import given, settings
from hypothesis import strategies as st

import mcp_sync
from mcp_sync import (
    ConnectionClosed,
    HTTPError,
    HttpTransport,
    ProtocolError,
    RequestTimeout,
    ServerError,
    SseTransport,
    StdioTransport,
    TransportError,
)
from mcp_sync.auth import BearerAuth, FileTokenStorage
from mcp_sync.exceptions import excerpt
from mcp_sync.transports.http._requests import CrossOriginRedirect, refuse_cross_origin
from mcp_sync.transports.stdio import default_environment

from ..conftest import PY, ROOT, fake_server_command
from ..faults.helpers import fault_client
from ..faults.workloads import FAULT_SERVER, PINNED
from ..servers.http_server import McpHttpServer, echo_fake
from ..servers.legacy_sse_server import LegacySseServer
from ..servers.tls import Certificate, self_signed, server_context

SECRETS = {
    "header": "s3cr3t-authorization-header",
    "api_key": "s3cr3t-api-key-header",
    "bearer": "s3cr3t-bearer-auth",
    "password": "s3cr3t-url-password",
}
HEADERS = {"Authorization": f"Bearer {SECRETS['header']}", "X-Api-Key": SECRETS["api_key"]}


@pytest.fixture
def server() -> Iterator[McpHttpServer]:
    with McpHttpServer(echo_fake("security")) as running:
        yield running


@pytest.fixture
def certificate(tmp_path: Path) -> Certificate:
    """A self-signed certificate for 127.0.0.1 that nothing trusts unless told to."""
    return self_signed(tmp_path / "tls")


@pytest.fixture
def no_ca_bundle(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No CA bundle from the environment: requests would prefer it to a session's
    ``verify`` (and the machine's bundle must not decide a test)."""
    for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def tls_server(kind: str, certificate: Certificate) -> Union[McpHttpServer, LegacySseServer]:
    """An HTTPS server of ``kind`` ("http": Streamable HTTP, "sse": legacy HTTP+SSE)."""
    context = server_context(certificate)
    if kind == "http":
        return McpHttpServer(echo_fake("security"), tls=context)
    return LegacySseServer(echo_fake("security"), tls=context)


def error_text(error: BaseException) -> str:
    """Everything an exception shows: str and repr of it and of its causes."""
    parts: List[str] = []
    seen = 0
    current: Any = error
    while current is not None and seen < 10:
        parts += [str(current), repr(current)]
        current = current.__cause__ or current.__context__
        seen += 1
    return "\n".join(parts)


def logged_text(caplog: pytest.LogCaptureFixture) -> str:
    lines = []
    for record in caplog.records:
        lines.append(record.getMessage())
        if record.exc_info and record.exc_info[1] is not None:
            lines.append(error_text(record.exc_info[1]))
    return "\n".join(lines)


def assert_no_secret(text: str) -> None:
    for name, secret in SECRETS.items():
        assert secret not in text, f"the {name} secret leaked: ...{text[:300]}"


# -- 1. the stdio child's environment and descriptors --------------------------------------


def test_a_stdio_server_gets_no_secret_from_the_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    planted = {"OPENAI_API_KEY": "sk-planted", "AWS_SECRET_ACCESS_KEY": "planted",
               "GITHUB_TOKEN": "ghp_planted", "DATABASE_URL": "postgres://u:p@h/db",
               "MCP_SYNC_TEST_PASSWORD": "planted", "HTTPS_PROXY": "http://u:p@proxy:1",
               # locale variables other than LC_ALL and LC_CTYPE: a smuggling channel
               "LC_SECRET": "planted", "LC_MESSAGES": "C", "LC_TIME": "C"}
    monkeypatch.setenv("LC_CTYPE", "C.UTF-8")
    for name, value in planted.items():
        monkeypatch.setenv(name, value)
    allowed = set(default_environment())
    with mcp_sync.connect(fake_server_command(), timeout=10, env={"GIVEN": "yes"}) as client:
        names = set(json.loads(client.call_tool("environment").text))
    assert not names & set(planted)
    assert "LC_CTYPE" in names
    # Only the allow-list and what was given (and what Python adds itself).
    extra = names - allowed - {"GIVEN"}
    assert extra <= {"PWD", "SHLVL", "_"}, extra
    with mcp_sync.connect({"command": PY, "args": fake_server_command()[1:],
                           "env": {"GIVEN": "yes"}}, timeout=10) as client:
        assert not set(json.loads(client.call_tool("environment").text)) & set(planted)


def test_inheriting_the_environment_is_an_explicit_choice(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_SYNC_TEST_PASSWORD", "planted")
    transport = StdioTransport(PY, fake_server_command()[1:], inherit_env=True)
    with mcp_sync.Client(transport, timeout=10) as client:
        assert "MCP_SYNC_TEST_PASSWORD" in json.loads(client.call_tool("environment").text)


def test_a_stdio_server_inherits_no_descriptor() -> None:
    """Even a descriptor marked inheritable (a token file, a socket) stays in the client."""
    descriptor = os.open(os.devnull, os.O_RDONLY)
    sock = socket.socket()
    try:
        os.set_inheritable(descriptor, True)
        sock.set_inheritable(True)
        with fault_client() as client:
            fds = client.call_tool("fds").structured["fds"]
        assert set(fds) <= {0, 1, 2, 3}, fds  # 3: the listing's own handle on /proc/self/fd
    finally:
        os.close(descriptor)
        sock.close()


# -- 2. credentials never in logs, exception messages or repr() ----------------------------


def http_scenarios(server: McpHttpServer, caplog: pytest.LogCaptureFixture) -> List[str]:
    """Run a session and its failures with every kind of credential; return all the text
    the errors showed."""
    shown: List[str] = []
    url = server.url.replace("http://", f"http://alice:{SECRETS['password']}@")
    statuses = {"unauthorized": 401, "broken": 500}

    def hook(handler: Any, message: Any) -> bool:
        name = ((message or {}).get("params") or {}).get("name") if isinstance(
            message, dict) else None
        if name in statuses:
            handler.send_status(statuses[name], b"go away",
                                {"WWW-Authenticate": 'Bearer error="invalid_token"'},
                                content_type="text/plain")
            return True
        if name == "elsewhere":
            handler.send_status(307, b"", {"Location": "http://127.0.0.1:9/mcp"})
            return True
        return False

    server.post_hook = hook
    for auth in (BearerAuth(SECRETS["bearer"]), None):
        transport = HttpTransport(url, headers=HEADERS, auth=auth)
        shown += [repr(transport), transport.target, str(transport.era_key)]
        with mcp_sync.Client(transport, timeout=5, protocol_version=PINNED) as client:
            shown.append(repr(client))
            assert client.call_tool("echo", {"text": "ok"}).text == "ok"
            for name, error in (("unauthorized", HTTPError), ("broken", HTTPError),
                                ("elsewhere", TransportError)):
                with pytest.raises(error) as caught:
                    client.call_tool(name, {})
                shown.append(error_text(caught.value))
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    for kind in ("http", "sse"):
        with pytest.raises(TransportError) as refused:
            mcp_sync.connect(f"http://alice:{SECRETS['password']}@127.0.0.1:{port}/mcp",
                             transport=kind, headers=HEADERS, timeout=2)
        shown.append(error_text(refused.value))
    shown.append(logged_text(caplog))
    return shown


def test_credentials_never_appear_in_errors_logs_or_repr(
        server: McpHttpServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, requests' and urllib3's too
    shown = http_scenarios(server, caplog)
    assert_no_secret("\n".join(shown))
    # ...while the credentials did reach the server that was meant to get them.
    seen = server.matching(lambda r: r.rpc_method == "tools/call")
    assert {r.header("x-api-key") for r in seen} == {SECRETS["api_key"]}
    basic = base64.b64encode(f"alice:{SECRETS['password']}".encode()).decode()
    assert {r.header("authorization") for r in seen} == {
        f"Bearer {SECRETS['bearer']}", f"Basic {basic}"}


def test_url_credentials_reach_a_legacy_server_as_basic_auth() -> None:
    basic = base64.b64encode(f"alice:{SECRETS['password']}".encode()).decode()
    with LegacySseServer(echo_fake("security")) as server:
        server.required_headers = {"Authorization": f"Basic {basic}"}
        url = server.url.replace("http://", f"http://alice:{SECRETS['password']}@")
        transport = SseTransport(url)
        assert_no_secret(repr(transport) + transport.url)
        client = mcp_sync.Client(transport, timeout=5, protocol_version="2024-11-05")
        with client:
            assert client.call_tool("echo", {"text": "ok"}).text == "ok"


def test_a_stdio_servers_env_values_stay_out_of_errors(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    transport = StdioTransport(PY, [str(FAULT_SERVER)], env={"API_KEY": SECRETS["api_key"]})
    client = mcp_sync.Client(transport, timeout=5, protocol_version=PINNED).connect()
    try:
        with pytest.raises(ConnectionClosed) as caught:
            client.call_tool("exit", {"code": 9})
    finally:
        client.close()
    assert_no_secret(error_text(caught.value) + repr(transport) + logged_text(caplog))


# -- 3. no credential crosses origins ------------------------------------------------------


def test_no_credential_follows_a_redirect_to_another_origin(server: McpHttpServer) -> None:
    with McpHttpServer(echo_fake("security")) as elsewhere:
        def hook(handler: Any, message: Any) -> bool:
            handler.send_status(307, b"", {"Location": elsewhere.url})
            return True

        url = server.url.replace("http://", f"http://alice:{SECRETS['password']}@")
        for auth in (BearerAuth(SECRETS["bearer"]), ("bob", SECRETS["bearer"]), None):
            server.post_hook = hook
            with pytest.raises(TransportError, match="refusing to follow a redirect"):
                mcp_sync.Client(HttpTransport(url, headers=HEADERS, auth=auth), timeout=5,
                                protocol_version=PINNED).connect()
        assert elsewhere.requests == []


def test_a_legacy_endpoint_on_another_origin_is_refused() -> None:
    with LegacySseServer(echo_fake("security")) as server, \
            McpHttpServer(echo_fake("security")) as elsewhere:
        server.endpoint = lambda sid: f"{elsewhere.url}?sessionId={sid}"
        with pytest.raises(ProtocolError, match="refusing the endpoint"):
            mcp_sync.Client(SseTransport(server.url, headers=HEADERS, connect_timeout=3),
                            timeout=5, protocol_version="2024-11-05").connect()
        assert elsewhere.requests == []


def redirect(source: str, location: str, status: int = 307) -> requests.Response:
    """A redirect response as requests hands it to a response hook (no I/O)."""
    response = requests.Response()
    response.status_code = status
    response.url = source
    response.headers["Location"] = location
    response.raw = io.BytesIO()  # what the hook closes when it refuses
    return response


@pytest.mark.parametrize("source, location", [
    ("https://mcp.example.com/mcp", "http://mcp.example.com/mcp"),  # default ports
    ("https://mcp.example.com:8443/mcp", "http://mcp.example.com:8443/mcp"),  # same port
], ids=["default-ports", "same-port"])
def test_a_redirect_from_https_down_to_http_is_refused(source: str, location: str) -> None:
    """The only scheme change the redirect rule allows is the upgrade (http -> https on
    the default ports); the way down, on the same host, is another origin."""
    with pytest.raises(CrossOriginRedirect, match="refusing to follow a redirect"):
        refuse_cross_origin(redirect(source, location))
    # the same hop upwards is the one change of scheme that is followed
    refuse_cross_origin(redirect("http://mcp.example.com/mcp", "https://mcp.example.com/mcp"))


def test_an_https_server_redirecting_to_http_on_its_own_port(
        certificate: Certificate, no_ca_bundle: pytest.MonkeyPatch) -> None:
    no_ca_bundle.setenv("REQUESTS_CA_BUNDLE", str(certificate.cert))
    with tls_server("http", certificate) as server:
        assert isinstance(server, McpHttpServer)
        clear = server.url.replace("https://", "http://")

        def hook(handler: Any, message: Any) -> bool:
            if not (isinstance(message, dict) and message.get("method") == "tools/call"):
                return False
            handler.send_status(307, b"", {"Location": clear})
            return True

        with mcp_sync.connect(server.url, timeout=5, protocol_version=PINNED,
                              headers=HEADERS) as client:
            server.post_hook = hook
            with pytest.raises(TransportError, match="refusing to follow a redirect") as caught:
                client.call_tool("echo", {"text": "in clear?"})
            assert clear in str(caught.value)
        # one tools/call, over TLS: the redirected one was never sent in clear
        assert len(server.matching(lambda r: r.rpc_method == "tools/call")) == 1


def test_a_legacy_endpoint_switching_from_https_to_http_is_refused(
        certificate: Certificate, no_ca_bundle: pytest.MonkeyPatch) -> None:
    no_ca_bundle.setenv("REQUESTS_CA_BUNDLE", str(certificate.cert))
    with tls_server("sse", certificate) as server:
        assert isinstance(server, LegacySseServer)
        server.endpoint = lambda sid: f"http://127.0.0.1:{server.port}/messages?sessionId={sid}"
        with pytest.raises(ProtocolError, match="refusing the endpoint") as caught:
            mcp_sync.Client(SseTransport(server.url, headers=HEADERS, connect_timeout=3),
                            timeout=5, protocol_version="2024-11-05").connect()
        assert (f"its origin http://127.0.0.1:{server.port} differs from the SSE stream's "
                f"origin https://127.0.0.1:{server.port}") in str(caught.value)
        assert [method for method, _, _ in server.requests] == ["GET"]  # nothing POSTed


# -- 4. the file token store ---------------------------------------------------------------


def test_the_file_token_store_is_for_its_owner_only(tmp_path: Path) -> None:
    old_umask = os.umask(0)  # the most permissive umask: the store must not rely on it
    try:
        path = tmp_path / "config" / "mcp" / "tokens.json"
        store = FileTokenStorage(path)
        store.save("tokens", "https://mcp.example.com/mcp",
                   {"access_token": "at", "refresh_token": "rt"})
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        path.chmod(0o644)  # loosened by hand: the next save tightens it again
        store.save("tokens", "https://mcp.example.com/mcp", {"access_token": "at2"})
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert store.load("tokens", "https://mcp.example.com/mcp") == {"access_token": "at2"}
        assert sorted(p.name for p in path.parent.iterdir()) == ["tokens.json"]  # no temp
        assert "at2" not in repr(store)
    finally:
        os.umask(old_umask)


def test_a_bearer_token_stays_out_of_repr() -> None:
    assert SECRETS["bearer"] not in repr(BearerAuth(SECRETS["bearer"]))


# -- 5. untrusted strings in exception messages --------------------------------------------


def assert_clean(text: str, limit: int) -> None:
    assert len(text) <= limit, len(text)
    bad = [ch for ch in text if ch not in "\n\t" and (
        unicodedata.category(ch) == "Cc" or "\u202a" <= ch <= "\u202e"
        or "\u2066" <= ch <= "\u2069")]
    assert not bad, bad[:5]


@pytest.mark.parametrize("code", [-32000, -32022, -32021, -32601])
def test_a_hostile_server_error_is_truncated_and_stripped(code: int) -> None:
    with fault_client() as client:
        with pytest.raises(ServerError) as caught:
            client.call_tool("hostile_error", {"code": code})
        assert_clean(str(caught.value), 1200)
        assert caught.value.code == code
        assert "\x1b" in caught.value.message  # the raw text stays available to code


def test_a_hostile_stderr_tail_is_truncated_and_stripped() -> None:
    client = fault_client()
    try:
        with pytest.raises(ConnectionClosed) as caught:
            client.call_tool("hostile_stderr")
    finally:
        client.close()
    assert_clean(str(caught.value), 4000)
    assert caught.value.exit_code == 3


def test_a_hostile_http_error_page_is_truncated_and_stripped(server: McpHttpServer) -> None:
    hostile = "\x1b[2J\x1b]0;owned\x07\x9b31m\u202eevil\u202c\x00"
    in_headers = "\x1b[2J\x1b]0;owned\x07\x9b31m\x7f"  # what HTTP headers can carry

    def hook(handler: Any, message: Any) -> bool:
        if not (isinstance(message, dict) and message.get("method") == "tools/call"):
            return False
        handler.send_status(500, (hostile * 2000).encode(), {
            "WWW-Authenticate": in_headers * 50, "Mcp-Auth-Server": in_headers * 50,
            "Connection": "close"}, content_type="text/html")
        return True

    with mcp_sync.connect(server.url, timeout=5, protocol_version=PINNED) as client:
        server.post_hook = hook
        with pytest.raises(HTTPError) as caught:
            client.call_tool("echo", {"text": "x"})
    assert_clean(str(caught.value), 1400)


def test_a_hostile_protocol_version_is_truncated_and_stripped() -> None:
    with pytest.raises(mcp_sync.UnsupportedProtocolVersion) as caught:
        mcp_sync.connect(fake_server_command("--protocol-version", "\x1b[31m\x9b" + "v" * 50_000),
                         timeout=10, protocol_version="2025-11-25")
    assert_clean(str(caught.value), 400)


@settings(max_examples=300, deadline=None, database=None)
@given(st.one_of(st.text(), st.binary().map(lambda b: b.decode("latin-1"))),
       st.integers(1, 300))
def test_excerpt_never_lets_a_control_character_through(text: str, limit: int) -> None:
    clean = excerpt(text, limit)
    assert_clean(clean, limit + len(f"… ({len(text)} characters in all)"))


# -- 6. files only where the user asked ----------------------------------------------------


def test_saved_media_stay_in_the_folder_whatever_the_server_names(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    outside = tmp_path / "outside.png"
    (folder / "thing-3.png").symlink_to(outside)  # planted: the file must not be followed
    server = [PY, str(FAULT_SERVER)]
    printed = ""
    for command in (["call", "images"], ["read", "res://any/thing"]):
        result = subprocess.run(
            [PY, "-m", "mcp_sync", *command, "--save-images", str(folder), "--", *server],
            capture_output=True, text=True, timeout=60, cwd=str(tmp_path))
        assert result.returncode == 0, result.stderr
        printed += result.stdout
    assert not outside.exists()
    assert "not saved: refusing to write outside" in printed  # through the planted link
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    for path in folder.iterdir():
        assert path.parent == folder and not path.name.startswith(".")
        assert all(ch.isalnum() or ch in "._-" for ch in path.name), path.name
    # Of the tool's media only the PNG resource is an allowed type; the 7 PNG blobs are
    # named after the URI asked for (not the server's), one refused; the planted link is
    # left alone.
    assert sorted(p.name for p in folder.iterdir()) == [
        "images.png", "thing-1.png", "thing-2.png", "thing-3.png", "thing-4.png",
        "thing-5.png", "thing-6.png", "thing-7.png"]
    assert (folder / "thing-3.png").is_symlink()
    assert printed.count("not saved: only PNG, JPEG, GIF, WebP and BMP images") == 3


def test_the_library_writes_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with fault_client() as client:
        client.call_tool("images")
        client.read_resource("res://any/thing")
    assert list(tmp_path.iterdir()) == []


# -- 7. nothing without a handler ----------------------------------------------------------


def test_server_requests_without_a_handler_are_refused() -> None:
    with mcp_sync.connect(fake_server_command(), timeout=10,
                          protocol_version="2025-11-25") as client:
        initialize = json.loads(client.call_tool("received", {"method": "initialize"}).text)
        assert initialize[0]["params"]["capabilities"] == {}
        for method in ("sampling/createMessage", "elicitation/create", "roots/list"):
            answer = client.call_tool("ask", {"method": method, "params": {}}).structured
            assert answer["error"]["code"] == -32601, (method, answer)


# -- 8. transport hygiene ------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["http", "sse"])
def test_tls_verification_stays_on(kind: str, certificate: Certificate,
                                   no_ca_bundle: pytest.MonkeyPatch) -> None:
    """A real handshake with a server whose certificate nobody vouched for fails, before
    any request is read; the same server works once its certificate is trusted (a
    session's ``verify``, or ``REQUESTS_CA_BUNDLE``)."""
    with tls_server(kind, certificate) as server:
        assert server.url.startswith("https://127.0.0.1:")
        with pytest.raises(TransportError, match="CERTIFICATE_VERIFY_FAILED") as caught:
            mcp_sync.connect(server.url, transport=kind, timeout=5)
        assert not isinstance(caught.value, HTTPError)
        assert isinstance(caught.value.__cause__, requests.exceptions.SSLError)
        assert server.requests == []  # the handshake failed: not one request was read

        session = requests.Session()
        session.verify = str(certificate.cert)
        transport = (HttpTransport(server.url, session=session) if kind == "http"
                     else SseTransport(server.url, session=session))
        try:
            with mcp_sync.Client(transport, timeout=5, protocol_version=PINNED) as client:
                assert client.call_tool("echo", {"text": "trusted"}).text == "trusted"
        finally:
            session.close()

        no_ca_bundle.setenv("REQUESTS_CA_BUNDLE", str(certificate.cert))
        with mcp_sync.connect(server.url, transport=kind, timeout=5,
                              protocol_version=PINNED) as client:
            assert client.call_tool("echo", {"text": "bundle"}).text == "bundle"


def test_a_session_id_that_could_inject_headers_is_refused(server: McpHttpServer) -> None:
    def hook(handler: Any, message: Any) -> bool:
        if not (isinstance(message, dict) and message.get("method") == "initialize"):
            return False
        handler.send_json({"jsonrpc": "2.0", "id": message["id"], "result": {
            "protocolVersion": PINNED, "capabilities": {},
            "serverInfo": {"name": "x", "version": "1"}}},
            headers={"Mcp-Session-Id": "abc X-Injected: 1"})
        return True

    server.post_hook = hook
    with pytest.raises(ProtocolError, match="invalid Mcp-Session-Id"):
        mcp_sync.connect(server.url, timeout=5, protocol_version=PINNED)


MIB = 1024 * 1024
#: Run in a fresh process, so that its peak RSS (ru_maxrss) is the case's alone: a client
#: of the fault server with the stdio transport's defaults, then the hostile part.
MEMORY_PROBE = """
import json, resource, sys
sys.path.insert(0, sys.argv[1])
import mcp_sync
from tests.faults.helpers import fault_client
case, size = sys.argv[2], int(sys.argv[3])
if case.startswith("http"):
    client = mcp_sync.connect(sys.argv[4], timeout=60, protocol_version=sys.argv[5])
else:
    client = fault_client(timeout=60)
client.call_tool("echo", {"text": "warm up"})
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
report = {"error": None, "sent": 0}
if case.startswith("http"):
    try:
        client.call_tool("huge", {}, timeout=60)
    except mcp_sync.MCPError as exc:
        report["error"] = [type(exc).__name__, str(exc), getattr(exc, "request_id", None)]
    report["after"] = client.call_tool("echo", {"text": "after"}).text
elif case == "line":
    report["text"] = client.call_tool("huge_line", {"size": size, "newline": True},
                                      timeout=60).text
    report["after"] = client.call_tool("echo", {"text": "after"}).text
else:
    client.call_tool("stop_reading")
    pad = "x" * (4 << 20)
    try:
        while report["sent"] < size:
            client.notify("fault/pad", {"pad": pad})
            report["sent"] += len(pad)
    except mcp_sync.MCPError as exc:
        report["error"] = [type(exc).__name__, str(exc), exc.request_sent]
report["growth_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base
client.close()
print(json.dumps(report))
"""


def memory_probe(case: str, size: int, *http: str) -> Any:
    probe = subprocess.run([PY, "-c", MEMORY_PROBE, str(ROOT), case, str(size), *http],
                           capture_output=True, text=True, timeout=120, cwd=str(ROOT))
    assert probe.returncode == 0, probe.stderr[-2000:]
    return json.loads(probe.stdout.strip().splitlines()[-1])


def test_a_line_past_the_default_bound_is_skipped_in_bounded_memory() -> None:
    """A stdio server sends a 100 MB line: by default (max_message_size 64 MiB) it is read
    up to the bound and skipped, so the client's peak grows by about twice the bound (the
    reader's buffer), not by the line's size (read whole, it costs three times that);
    the call's answer after the line still arrives. The HTTP transports have the same
    default bound (next test)."""
    size = 100 * 1000 * 1000
    report = memory_probe("line", size)
    assert report["text"] == f"after {size} bytes" and report["after"] == "after"
    assert report["growth_kib"] < (2 * 64 + 32) * 1024, report


@pytest.mark.parametrize("reply", ["json", "event"])
def test_a_reply_past_the_default_bound_fails_its_call_in_bounded_memory(
        server: McpHttpServer, reply: str) -> None:
    """A Streamable HTTP server answers with a 100 MB JSON body (chunked: no
    Content-Length to refuse it by), or a 100 MB SSE event: by default (max_message_size
    64 MiB) the client reads up to the bound, drops the connection and fails the call at
    once with MessageTooLarge; its peak grows by about the bound (twice it for a body
    joined once read), not by the reply's size. The next call works."""
    size = 100 * 1000 * 1000
    block = b"x" * MIB

    def huge(handler: Any, message: Any) -> bool:
        if not (isinstance(message, dict) and message.get("method") == "tools/call"
                and message["params"]["name"] == "huge"):
            return False
        handler.close_connection = True
        start = (b'{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"'
                 % json.dumps(message["id"]).encode())
        if reply == "event":
            handler.start_events()
            start = b"data: " + start
        else:
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Transfer-Encoding", "chunked")
            handler.end_headers()
        try:
            handler.write_raw(start)
            for _ in range(size // MIB):
                handler.write_raw(block)
        except OSError:
            pass  # the client hung up: what it should do past the bound
        return True

    server.post_hook = huge
    report = memory_probe(f"http_{reply}", size, server.url, PINNED)
    assert report["error"] is not None, report
    kind, message, request_id = report["error"]
    assert kind == "MessageTooLarge" and "max_message_size=67108864" in message, message
    assert request_id is not None  # the call itself failed, not another request
    assert report["after"] == "after"
    bound = (2 * 64 if reply == "json" else 64) + 32
    assert report["growth_kib"] < bound * 1024, report


def test_writes_to_a_server_that_stops_reading_are_bounded_by_default() -> None:
    """A stdio server stops reading its stdin: by default (max_write_backlog 64 MiB) the
    client queues 64 MiB for it, then refuses the next message with the specific error;
    it does not grow with what the caller goes on sending (here up to 160 MiB)."""
    report = memory_probe("backlog", 160 * MIB)
    assert report["error"] is not None, report  # never refused: the backlog grew unbounded
    kind, message, request_sent = report["error"]
    assert kind == "TransportError" and request_sent is False
    assert "is not reading its stdin" in message and "max_write_backlog=67108864" in message
    assert report["sent"] == 64 * MIB  # sixteen 4 MiB messages wait; the 17th is refused
    assert report["growth_kib"] < (64 + 32) * 1024, report


def test_a_late_answer_never_lands_on_a_newer_request() -> None:
    """Ids are never reused: the answer to a timed-out call, arriving late, is dropped."""
    with fault_client() as client:
        with pytest.raises(RequestTimeout):
            client.call_tool("ignore_cancel", timeout=0.3)
        client.notify("fault/continue")  # the late answer ("answered anyway") arrives now
        assert client.call_tool("echo", {"text": "mine"}).text == "mine"
