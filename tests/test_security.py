"""The security review (SECURITY.md), one test (or a few) per point.

1. A stdio server gets no secret from the parent: not its environment, not its descriptors.
2. Tokens, passwords and ``Authorization`` headers never appear in logs, exception
   messages or ``repr()``.
3. No credential crosses origins (redirects, legacy endpoints).
4. The file token store is readable by its owner only (0600, folder 0700).
5. Untrusted server strings in exception messages are truncated and stripped of control
   characters (C0, C1, bidi overrides).
6. A server cannot make the client write outside what the user asked (``--save-images``).
7. A server can make the client do nothing the user did not hand it a handler for.
8. Transport hygiene: TLS verification stays on; session ids cannot inject headers.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import socket
import stat
import subprocess
import unicodedata
from pathlib import Path
from typing import Any, Iterator, List

import pytest
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
from mcp_sync.transports.stdio import default_environment

from .conftest import PY, fake_server_command
from .faults.helpers import fault_client
from .faults.workloads import FAULT_SERVER, PINNED
from .servers.http_server import McpHttpServer, echo_fake
from .servers.legacy_sse_server import LegacySseServer

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
               "MCP_SYNC_TEST_PASSWORD": "planted", "HTTPS_PROXY": "http://u:p@proxy:1"}
    for name, value in planted.items():
        monkeypatch.setenv(name, value)
    allowed = set(default_environment())
    with mcp_sync.connect(fake_server_command(), timeout=10, env={"GIVEN": "yes"}) as client:
        names = set(json.loads(client.call_tool("environment").text))
    assert not names & set(planted)
    # Only the allow-list, the locale and what was given (and what Python adds itself).
    extra = names - allowed - {"GIVEN"}
    assert all(name.startswith("LC_") or name in {"PWD", "SHLVL", "_"} for name in extra), extra
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
    assert_clean(clean, limit + len(f"... ({len(text)} more chars)"))


# -- 6. files only where the user asked ----------------------------------------------------


def test_saved_media_stay_in_the_folder_whatever_the_server_names(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    outside = tmp_path / "outside.png"
    (folder / "bashrc.png").symlink_to(outside)  # planted: the file must not be followed
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
    # 4 media from the tool, 7 blobs from the resource, one of which was refused; and the
    # planted link, left alone.
    assert len(list(folder.iterdir())) == 11 and (folder / "bashrc.png").is_symlink()


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


def test_tls_verification_stays_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    transport = HttpTransport("https://mcp.example.com/mcp")
    transport.start(lambda message: None, lambda error: None)
    try:
        assert transport._send_kwargs["verify"] is True
    finally:
        transport.close()


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


def test_hostile_servers_meet_memory_bounds_by_default() -> None:
    """The bounds are on by default (tests/faults sends 100 MB lines, bodies and events,
    and fills the stdin pipe)."""
    transport = StdioTransport(PY, ["-c", "pass"])
    assert transport.max_message_size == 64 * 1024 * 1024
    assert transport.max_write_backlog == 64 * 1024 * 1024
    assert HttpTransport("http://127.0.0.1:9/mcp").max_message_size == 64 * 1024 * 1024
    assert SseTransport("http://127.0.0.1:9/sse").max_message_size == 64 * 1024 * 1024


def test_a_late_answer_never_lands_on_a_newer_request() -> None:
    """Ids are never reused: the answer to a timed-out call, arriving late, is dropped."""
    with fault_client() as client:
        with pytest.raises(RequestTimeout):
            client.call_tool("ignore_cancel", timeout=0.3)
        client.notify("fault/continue")  # the late answer ("answered anyway") arrives now
        assert client.call_tool("echo", {"text": "mine"}).text == "mine"
