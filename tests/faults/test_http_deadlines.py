"""Every HTTP wait has one deadline for the whole exchange (issue 19 §2).

``requests`` bounds each read of a socket, not the exchange: a server that sends one byte
every half second never reaches a per-read timeout. Against real servers on 127.0.0.1
that trickle the bodies nobody needs (the ``202`` answering ``notifications/initialized``,
the reply to the session's ``DELETE``, a legacy-SSE ``202``), each operation ends within
its timeout and a small slack, with its documented outcome; the autouse fixture checks
that no thread is left behind.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterator

import pytest

import mcp_sync
from mcp_sync import HttpTransport, RequestTimeout, SseTransport

from ..servers.http_server import McpHttpServer, echo_fake
from ..servers.legacy_sse_server import LegacySseServer
from .helpers import assert_usable, expect, timed
from .workloads import PINNED

# What each trickled body declares, sent one byte every TRICKLE_GAP seconds: 15 s in all,
# far past every bound below, and far below the 30 s read timeout that never fires.
TRICKLE_BYTES = 30
TRICKLE_GAP = 0.5
# What an operation may take beyond its timeout (a loaded 2-core machine).
SLACK = 1.5


def trickle(handler: Any, status: int, stopping: Any) -> None:
    """A reply whose body comes one byte every TRICKLE_GAP seconds."""
    handler.send_response(status)
    handler.send_header("Content-Type", "text/plain")
    handler.send_header("Content-Length", str(TRICKLE_BYTES))
    handler.end_headers()
    try:
        for _ in range(TRICKLE_BYTES):
            handler.wfile.write(b".")
            if stopping.wait(TRICKLE_GAP):
                return
    except OSError:
        pass  # the client dropped the connection: what the deadline does
    handler.close_connection = True


@pytest.fixture
def server() -> Iterator[McpHttpServer]:
    with McpHttpServer(echo_fake("deadlines"), reply="json") as running:
        yield running


def test_connect_ends_within_its_timeout_when_the_202_to_initialized_trickles(
        server: McpHttpServer) -> None:
    """Before, ``connect(url, timeout=2)`` waited for the whole trickled body (the timeout
    never reached the transport, whose reads were bounded at 30 s each)."""
    def hook(handler: Any, message: Any) -> bool:
        if not (isinstance(message, dict)
                and message.get("method") == "notifications/initialized"):
            return False
        session = handler.mcp.sessions[handler.headers["Mcp-Session-Id"]]
        session.connection.receive(message)  # accepted: only the body trickles
        trickle(handler, 202, handler.mcp.stopping)
        return True

    server.post_hook = hook
    with timed(2.0 + SLACK, fault="http: the 202 to notifications/initialized trickles "
               "(connect timeout 2 s)", observed="connected at the deadline"):
        client = mcp_sync.connect(server.url, timeout=2.0, protocol_version=PINNED,
                                  close_timeout=1.0)
    with client:
        # The server accepted the notification: the client is connected and usable.
        assert client.connected
        assert_usable(client)


def test_close_ends_within_its_bound_when_the_reply_to_delete_trickles(
        server: McpHttpServer) -> None:
    """Before, ``close()`` read the trickled reply to its DELETE one byte at a time, each
    read within the per-read bound, for as long as the server liked."""
    server.delete_hook = lambda handler: (trickle(handler, 200, handler.mcp.stopping), True)[1]
    transport = HttpTransport(server.url, close_timeout=1.0, listen=False)
    client = mcp_sync.Client(transport, timeout=5.0, protocol_version=PINNED).connect()
    assert_usable(client)
    with timed(1.0 + SLACK, fault="http: the reply to the session DELETE trickles "
               "(close_timeout 1 s)", observed="closed at the deadline"):
        client.close()
    assert server.matching(lambda r: r.method == "DELETE")
    assert not client.connected


@pytest.fixture
def legacy() -> Iterator[LegacySseServer]:
    with LegacySseServer(echo_fake("legacy-deadlines")) as running:
        yield running


def assert_legacy_call_ends_at_its_deadline(legacy: LegacySseServer,
                                            fault: Callable[[Any], None], label: str) -> None:
    """With ``fault(handler)`` answering the POST of a call to the tool ``fault`` (and
    never answering the call), the call fails with RequestTimeout at its 1.5 s deadline,
    not before and not much after; then the client answers a plain call."""
    def hook(handler: Any, message: Any) -> bool:
        if not (isinstance(message, dict) and message.get("method") == "tools/call"
                and (message.get("params") or {}).get("name") == "fault"):
            return False
        fault(handler)
        return True

    legacy.post_hook = hook
    transport = SseTransport(legacy.url, close_timeout=1.0)
    with mcp_sync.Client(transport, timeout=5.0, close_timeout=1.0).connect() as client:
        with expect(RequestTimeout, 1.5 + SLACK, fault=label) as out:
            client.call_tool("fault", {}, timeout=1.5)
        assert out.elapsed >= 1.4
        assert_usable(client)


def test_a_legacy_call_ends_at_its_deadline_when_its_202_trickles(
        legacy: LegacySseServer) -> None:
    """Before, the call's deadline only started to count once the whole POST reply was
    read: a trickled 202 held the caller for as long as the server liked."""
    assert_legacy_call_ends_at_its_deadline(
        legacy, lambda handler: trickle(handler, 202, handler.server.owner.stopping),
        "legacy sse: the 202 to a call trickles (deadline 1.5 s)")


def test_a_legacy_notification_post_ends_at_post_timeout(legacy: LegacySseServer) -> None:
    """connect(url, transport="sse", timeout=2): the POST of notifications/initialized,
    acknowledged but trickling its body, ends at that timeout; the client is connected."""
    def hook(handler: Any, message: Any) -> bool:
        if not (isinstance(message, dict)
                and message.get("method") == "notifications/initialized"):
            return False
        stream = handler.server.owner.streams[
            handler.path.split("sessionId=", 1)[1]]
        stream.connection.receive(message)
        trickle(handler, 202, handler.server.owner.stopping)
        return True

    legacy.post_hook = hook
    started = time.monotonic()
    with mcp_sync.connect(legacy.url, transport="sse", timeout=2.0,
                          close_timeout=1.0) as client:
        assert time.monotonic() - started < 2.0 + SLACK
        assert_usable(client)


def trickle_headers(handler: Any, stopping: Any) -> None:
    """A reply whose status line and headers come one byte every TRICKLE_GAP seconds."""
    head = b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"
    try:
        for index in range(len(head)):
            handler.wfile.write(head[index:index + 1])
            handler.wfile.flush()
            if stopping.wait(TRICKLE_GAP):
                return
    except OSError:
        pass  # the client dropped the connection: what the deadline does
    handler.close_connection = True


def test_a_legacy_call_ends_at_its_deadline_when_its_post_headers_trickle(
        legacy: LegacySseServer) -> None:
    """The POST's own connection hands its socket to the POST before it waits for the
    response headers, so the call's deadline cuts that wait short too. Before, the caller
    sat in the POST until the last header byte came (about 20 s here), each byte within
    the per-read bound."""
    assert_legacy_call_ends_at_its_deadline(
        legacy, lambda handler: trickle_headers(handler, handler.server.owner.stopping),
        "legacy sse: a call's POST headers trickle (deadline 1.5 s)")


def test_a_legacy_notification_post_whose_headers_trickle_fails_at_post_timeout(
        legacy: LegacySseServer) -> None:
    """connect(url, transport="sse", timeout=2) while the POST of
    notifications/initialized gets its status line a byte at a time: connect fails at
    that timeout, saying so, instead of waiting for the server."""
    def hook(handler: Any, message: Any) -> bool:
        if not (isinstance(message, dict)
                and message.get("method") == "notifications/initialized"):
            return False
        trickle_headers(handler, handler.server.owner.stopping)
        return True

    legacy.post_hook = hook
    with expect(mcp_sync.TransportError, 2.0 + SLACK,
                fault="legacy sse: the POST of notifications/initialized trickles its "
                      "headers (timeout 2 s)") as out:
        mcp_sync.connect(legacy.url, transport="sse", timeout=2.0, close_timeout=1.0)
    assert "within its deadline" in str(out.error)
