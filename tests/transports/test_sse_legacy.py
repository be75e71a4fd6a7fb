"""The legacy HTTP+SSE transport (2024-11-05) against the project's threaded test server."""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, Iterator, List

import pytest
import requests

import mcp_sync
from mcp_sync import (
    Client,
    ConnectionClosed,
    HTTPError,
    ProtocolError,
    SseTransport,
    TransportError,
)
from mcp_sync.testing import FakeServer, ToolContext

from ..conftest import PY, SERVERS
from ..servers.legacy_sse_server import LegacySseServer


def make_fake() -> FakeServer:
    fake = FakeServer("legacy", instructions="A legacy SSE server.")

    @fake.tool()
    def echo(text: str) -> str:
        return text

    @fake.tool()
    def roots(ctx: ToolContext) -> Any:
        """Asks the client for its roots (a server-to-client request)."""
        return ctx.request("roots/list")

    @fake.tool()
    def chatty(ctx: ToolContext) -> str:
        """Logs and reports progress before answering."""
        ctx.log("warning", "disk almost full", "disk")
        ctx.progress(1, 2, "half way")
        return "done"

    return fake


@pytest.fixture
def server() -> Iterator[LegacySseServer]:
    with LegacySseServer(make_fake()) as running:
        yield running


def connect(server: LegacySseServer, **kwargs: Any) -> mcp_sync.Client:
    kwargs.setdefault("timeout", 10.0)
    return mcp_sync.connect(server.url, transport="sse", **kwargs)


def posts(server: LegacySseServer) -> List[Dict[str, Any]]:
    return [{"path": path, "headers": headers}
            for method, path, headers in server.requests if method == "POST"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_full_session_over_legacy_sse(server: LegacySseServer) -> None:
    logged: List[Any] = []
    notified: List[str] = []
    progress: List[Any] = []
    log_arrived = threading.Event()

    def on_log(params: Any) -> None:
        logged.append(params)
        log_arrived.set()

    with connect(server, roots=[{"uri": "file:///srv/project", "name": "project"}],
                 logging_handler=on_log,
                 notification_handler=lambda method, params: notified.append(method)) as client:
        assert client.server_info.name == "legacy"
        assert client.instructions == "A legacy SSE server."
        assert [tool.name for tool in client.list_tools()] == ["echo", "roots", "chatty"]
        assert client.call_tool("echo", {"text": "héllo"}).text == "héllo"
        # A server-to-client request arrives on the stream; the answer goes back by POST.
        listed = client.call_tool("roots").structured
        assert listed == {"roots": [{"uri": "file:///srv/project", "name": "project"}]}
        result = client.call_tool("chatty", on_progress=lambda *args: progress.append(args))
        assert result.text == "done"
        assert log_arrived.wait(5)
        client.ping()
        connection = server.fake.connections[0]
        assert connection.wait_for(lambda m: m.get("method") == "notifications/initialized")
        answer = connection.wait_for(lambda m: "result" in m and "roots" in m["result"])
        assert answer["result"]["roots"][0]["uri"] == "file:///srv/project"
    assert logged[0].level == "warning" and logged[0].data == "disk almost full"
    assert progress == [(1.0, 2.0, "half way")]
    assert "notifications/message" in notified
    # One GET for the stream, then POSTs to the endpoint the server named.
    assert [m for m, _, _ in server.requests].count("GET") == 1
    assert server.requests[0][2].get("Accept") == "text/event-stream"
    sent = posts(server)
    assert sent and all(p["path"].startswith("/messages?sessionId=") for p in sent)
    assert server.wait_streams(0) == []  # closing the client ended the stream


def test_relative_endpoint_is_resolved_against_the_stream_url(server: LegacySseServer) -> None:
    transport = SseTransport(server.url)
    with Client(transport, timeout=10) as client:
        client.ping()
        (stream,) = server.wait_streams(1)
        assert transport.endpoint == (
            f"http://127.0.0.1:{server.port}/messages?sessionId={stream.session_id}"
        )


def test_absolute_same_origin_endpoint_is_accepted(server: LegacySseServer) -> None:
    server.endpoint = lambda sid: f"http://127.0.0.1:{server.port}/messages?sessionId={sid}"
    with connect(server) as client:
        assert client.call_tool("echo", {"text": "ok"}).text == "ok"


@pytest.mark.parametrize("kind", ["host", "port", "scheme", "scheme-relative"])
def test_foreign_origin_endpoint_is_refused(server: LegacySseServer, kind: str) -> None:
    port = server.port
    other_port = port + 1 if port < 65535 else port - 1
    foreign = {
        "host": (f"http://127.0.0.2:{port}/x", f"http://127.0.0.2:{port}"),
        "port": (f"http://127.0.0.1:{other_port}/x", f"http://127.0.0.1:{other_port}"),
        "scheme": (f"https://127.0.0.1:{port}/x", f"https://127.0.0.1:{port}"),
        "scheme-relative": ("//evil.example/x", "http://evil.example:80"),
    }[kind]
    server.endpoint = lambda sid: foreign[0]
    started = time.monotonic()
    with pytest.raises(ProtocolError) as caught:
        connect(server)
    assert time.monotonic() - started < 5
    message = str(caught.value)
    assert foreign[1] in message, message
    assert f"http://127.0.0.1:{port}" in message, message
    assert "origin" in message
    assert posts(server) == []  # nothing was sent to the foreign endpoint
    assert server.wait_streams(0) == []  # and the stream was closed


def test_stream_ending_mid_request_fails_it_at_once(server: LegacySseServer) -> None:
    @server.fake.tool()
    def hang_up(ctx: ToolContext) -> str:
        server.end_streams()
        ctx.cancelled.wait(10)
        return "never delivered"

    with connect(server, timeout=30) as client:
        started = time.monotonic()
        with pytest.raises(ConnectionClosed, match="Legacy SSE stream closed"):
            client.call_tool("hang_up")
        assert time.monotonic() - started < 3
        assert not client.connected
        started = time.monotonic()
        with pytest.raises(ConnectionClosed, match="Legacy SSE stream closed"):
            client.ping()
        assert time.monotonic() - started < 0.5


def test_close_is_reported_exactly_once_and_send_then_fails(server: LegacySseServer) -> None:
    closes: List[ConnectionClosed] = []
    closed = threading.Event()

    def on_close(error: ConnectionClosed) -> None:
        closes.append(error)
        closed.set()

    transport = SseTransport(server.url, close_timeout=2.0)
    transport.start(lambda message: None, on_close, lambda request_id, error: None)
    server.wait_streams(1)
    server.end_streams()
    assert closed.wait(5)
    transport.close()
    transport.close()
    assert len(closes) == 1
    assert "Legacy SSE stream closed by the server" in str(closes[0])
    with pytest.raises(ConnectionClosed):
        transport.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


def test_close_is_bounded_idempotent_and_ends_the_stream(server: LegacySseServer) -> None:
    closes: List[ConnectionClosed] = []
    transport = SseTransport(server.url, close_timeout=1.0)
    transport.start(lambda message: None, closes.append, lambda request_id, error: None)
    server.wait_streams(1)
    started = time.monotonic()
    transport.close()
    assert time.monotonic() - started < 1.5
    transport.close()
    assert len(closes) == 1 and "closed by the client" in str(closes[0])
    assert server.wait_streams(0) == []


def test_a_closed_client_reconnects_with_a_new_stream(server: LegacySseServer) -> None:
    client = connect(server)
    try:
        first = transport_endpoint(client)
        client.close()
        client.connect()
        assert client.call_tool("echo", {"text": "again"}).text == "again"
        assert transport_endpoint(client) != first
    finally:
        client.close()
    assert [m for m, _, _ in server.requests].count("GET") == 2


def transport_endpoint(client: mcp_sync.Client) -> str:
    transport = client.transport
    assert isinstance(transport, SseTransport) and transport.endpoint
    return transport.endpoint


def test_post_error_status_is_an_http_error(server: LegacySseServer) -> None:
    with connect(server) as client:
        server.post_status = 500
        with pytest.raises(HTTPError) as caught:
            client.ping()
        assert caught.value.status == 500
        assert "the server broke" in caught.value.body
        assert caught.value.method == "ping"
        assert "/messages?sessionId=" in caught.value.url
        server.post_status = None
        client.ping()  # the connection lives on


def test_unauthorised_get_carries_the_auth_hints(server: LegacySseServer) -> None:
    server.get_status = 401
    server.get_headers = {
        "WWW-Authenticate": 'Bearer resource_metadata="http://127.0.0.1/.well-known/x"',
        "Mcp-Auth-Server": "http://auth.example",
    }
    with pytest.raises(HTTPError) as caught:
        connect(server)
    error = caught.value
    assert error.status == 401
    assert error.www_authenticate is not None and "resource_metadata" in error.www_authenticate
    assert error.auth_server == "http://auth.example"
    assert "refused" in error.body
    assert "resource_metadata" in str(error) and server.url in str(error)


def test_headers_and_auth_go_on_the_get_and_every_post(server: LegacySseServer) -> None:
    server.required_headers = {"X-Api-Key": "k1", "Authorization": "Basic dXNlcjpwdw=="}
    with pytest.raises(HTTPError) as caught:
        connect(server)
    assert caught.value.status == 401 and "invalid_token" in str(caught.value)
    server.requests.clear()
    with connect(server, headers={"X-Api-Key": "k1"}, auth=("user", "pw")) as client:
        assert client.call_tool("echo", {"text": "authorised"}).text == "authorised"
    assert len(server.requests) >= 4
    for _, _, headers in server.requests:
        assert headers.get("X-Api-Key") == "k1"
        assert headers.get("Authorization") == "Basic dXNlcjpwdw=="


def test_malformed_message_data_is_logged_and_skipped(
    server: LegacySseServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="mcp_sync")
    with connect(server) as client:
        server.send_raw("event: message\ndata: {not json at all\n\n")
        server.send_raw("event: surprise\ndata: ignored\n\n")
        server.send_raw(": a keep-alive comment\n\nevent: message\ndata:\n\n")
        server.send_raw('event: message\ndata: {"jsonrpc": "2.0", "id": 999,\r\n'
                        'data:  "result": {}}\r\n\r\n')  # two data lines, CRLF, unknown id
        assert client.call_tool("echo", {"text": "still here"}).text == "still here"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("malformed" in w and "{not json at all" in w for w in warnings), warnings
    assert len(warnings) == 1, warnings


def test_connect_with_transport_sse_and_an_mcp_servers_entry(server: LegacySseServer) -> None:
    with mcp_sync.connect(server.url, transport="sse", timeout=10) as client:
        assert isinstance(client.transport, SseTransport)
        assert client.call_tool("echo", {"text": "a"}).text == "a"
    entry = {"url": server.url, "type": "sse", "headers": {"X-Entry": "yes"}}
    with mcp_sync.connect(entry, timeout=10) as client:
        assert isinstance(client.transport, SseTransport)
        assert client.call_tool("echo", {"text": "b"}).text == "b"
    assert server.requests[-1][2].get("X-Entry") == "yes"


def test_connect_falls_back_to_legacy_sse_when_post_is_refused(server: LegacySseServer) -> None:
    # The server answers 404 to a Streamable HTTP initialize POST on /sse.
    with mcp_sync.connect(server.url, timeout=10) as client:
        assert isinstance(client.transport, SseTransport)
        assert client.call_tool("echo", {"text": "fallback"}).text == "fallback"
    # The bound on a message goes to the transport it falls back to, as to the first.
    with mcp_sync.connect(server.url, timeout=10, max_message_size=1 << 20) as client:
        assert isinstance(client.transport, SseTransport)
        assert client.transport.max_message_size == 1 << 20


def test_connect_gives_max_message_size_to_the_legacy_transport(
        server: LegacySseServer) -> None:
    with mcp_sync.connect(server.url, transport="sse", timeout=10,
                          max_message_size=1 << 20) as client:
        assert isinstance(client.transport, SseTransport)
        assert client.transport.max_message_size == 1 << 20
    entry = {"url": server.url, "type": "sse"}
    with mcp_sync.connect(entry, timeout=10, max_message_size=1 << 21) as client:
        assert client.transport.max_message_size == 1 << 21  # type: ignore[attr-defined]


def test_connection_refused_is_a_transport_error_naming_the_url() -> None:
    url = f"http://127.0.0.1:{free_port()}/sse"
    started = time.monotonic()
    with pytest.raises(TransportError) as caught:
        mcp_sync.connect(url, transport="sse", timeout=10)
    assert time.monotonic() - started < 5
    assert url in str(caught.value)
    assert caught.value.__cause__ is not None


def test_no_endpoint_event_times_out_at_start(server: LegacySseServer) -> None:
    server.endpoint = lambda sid: None
    transport = SseTransport(server.url, connect_timeout=0.3)
    started = time.monotonic()
    with pytest.raises(TransportError, match=r"no endpoint event within 0\.3 s"):
        Client(transport, timeout=10).connect()
    assert time.monotonic() - started < 3
    assert server.wait_streams(0) == []


def test_many_threads_share_one_client(server: LegacySseServer) -> None:
    with connect(server) as client, ThreadPoolExecutor(8) as pool:
        texts = [f"t{i}" for i in range(80)]
        results = list(pool.map(lambda t: client.call_tool("echo", {"text": t}).text, texts))
    assert results == texts


def test_batched_messages_on_the_stream_are_unpacked(server: LegacySseServer) -> None:
    seen: List[str] = []
    both = threading.Event()

    def on_notification(method: str, params: Any) -> None:
        seen.append(method)
        if len(seen) == 2:
            both.set()

    with connect(server, notification_handler=on_notification) as client:
        batch = [{"jsonrpc": "2.0", "method": "notifications/one"},
                 {"jsonrpc": "2.0", "method": "notifications/two"}]
        server.send_raw(f"event: message\ndata: {json.dumps(batch)}\n\n")
        assert both.wait(5)
        client.ping()
    assert seen == ["notifications/one", "notifications/two"]


def test_an_idle_stream_outlives_the_connect_timeout(server: LegacySseServer) -> None:
    # The GET waits at most connect_timeout for its headers; the open stream, no longer.
    transport = SseTransport(server.url, connect_timeout=0.3)
    with Client(transport, timeout=10) as client:
        time.sleep(1.0)  # idle: nothing arrives on the stream for over three timeouts
        assert client.connected
        assert client.call_tool("echo", {"text": "awake"}).text == "awake"


@pytest.mark.peer
@pytest.mark.parametrize("protocol_version", [None, "2024-11-05"])
def test_the_official_sdk_legacy_sse_server(protocol_version: Any) -> None:
    port = free_port()
    server = subprocess.Popen(
        [PY, str(SERVERS / "sdk_server.py"), "--transport", "sse", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        wait_listening(port, server)
        with mcp_sync.connect(f"http://127.0.0.1:{port}/sse", transport="sse", timeout=10,
                              protocol_version=protocol_version,
                              roots=[{"uri": "file:///srv/a", "name": "a"}]) as client:
            if protocol_version is not None:
                assert client.protocol_version == protocol_version
            assert client.server_info.name == "sdk-peer"
            assert "add" in {tool.name for tool in client.list_tools()}
            assert client.call_tool("add", {"a": 2, "b": 3}).text == "5"
            assert "file:///srv/a" in client.call_tool("roots").text
    finally:
        server.terminate()
        try:
            server.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.communicate()


def wait_listening(port: int, process: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the SDK server exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)  # polling a port: there is no event to wait on
    raise AssertionError(f"the SDK server did not listen on port {port} within {timeout} s")


class FlakySession(requests.Session):
    """A caller's own requests.Session whose POSTs can be made to fail."""

    def __init__(self) -> None:
        super().__init__()
        self.fail_posts = False
        self.closed = False

    def post(self, *args: Any, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        if self.fail_posts:
            raise requests.ConnectionError("connection reset by peer")
        return super().post(*args, **kwargs)

    def close(self) -> None:
        self.closed = True
        super().close()


def test_a_failed_post_is_a_transport_error_and_a_given_session_stays_open(
    server: LegacySseServer,
) -> None:
    session = FlakySession()
    try:
        with Client(SseTransport(server.url, session=session), timeout=10) as client:
            session.fail_posts = True
            with pytest.raises(TransportError) as caught:
                client.ping()
            assert not isinstance(caught.value, HTTPError)
            assert f"http://127.0.0.1:{server.port}/messages?sessionId=" in str(caught.value)
            assert isinstance(caught.value.__cause__, requests.ConnectionError)
            session.fail_posts = False
            client.ping()
        assert not session.closed  # the caller's session is the caller's to close
    finally:
        session.close()
