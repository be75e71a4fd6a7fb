"""The Streamable HTTP transport against a real threaded HTTP server on 127.0.0.1.

The server (``tests/servers/http_server.py``) hosts a FakeServer and is scripted per test:
JSON or SSE replies, streams held open or broken before the response, a GET stream that
drops, expired sessions, and raw replies written by hand (``post_hook``).
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
import tracemalloc
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest
import requests

import mcp_sync
from mcp_sync import (
    ConnectionClosed,
    HTTPError,
    HttpTransport,
    ProtocolError,
    RequestTimeout,
    TransportError,
)
from mcp_sync._protocol import STATELESS_ERA
from mcp_sync.client._negotiation import Agreement
from mcp_sync.testing import FakeServer, ToolContext
from mcp_sync.transports.http._sse import EventTooLarge, ServerSentEvent, SSEDecoder, iter_events

from ..helpers import assert_get_stream_resumes
from ..servers.http_server import McpHttpServer, echo_fake

WAIT = 10.0  # the bound for anything a test waits on; nothing should come near it
ACCEPT = "application/json, text/event-stream"


def make_fake() -> Tuple[FakeServer, Dict[str, threading.Event]]:
    fake = FakeServer("http-test")
    gates = {"release": threading.Event(), "blocked": threading.Event()}

    @fake.tool()
    def echo(text: str) -> str:
        return text

    @fake.tool()
    def gated(ctx: ToolContext) -> str:
        """Answers once the test opens the gate (or gives up when cancelled)."""
        gates["blocked"].set()
        deadline = time.monotonic() + WAIT
        while not gates["release"].wait(0.02):
            if ctx.cancelled.is_set() or time.monotonic() > deadline:
                return "cancelled"
        return "released"

    @fake.tool()
    def block(ctx: ToolContext) -> str:
        """Runs until the client cancels it."""
        gates["blocked"].set()
        ctx.cancelled.wait(WAIT)
        return "not cancelled"

    @fake.tool()
    def chatty(ctx: ToolContext) -> str:
        ctx.log("info", "step 1")
        roots = ctx.request("roots/list")
        ctx.progress(1, 2, "half way")
        return ",".join(root["uri"] for root in roots["roots"])

    return fake, gates


@pytest.fixture
def fake() -> Tuple[FakeServer, Dict[str, threading.Event]]:
    return make_fake()


@pytest.fixture
def server(fake: Tuple[FakeServer, Dict[str, threading.Event]]) -> Iterator[McpHttpServer]:
    with McpHttpServer(fake[0]) as running:
        yield running
    fake[1]["release"].set()


@pytest.fixture
def gates(fake: Tuple[FakeServer, Dict[str, threading.Event]]) -> Dict[str, threading.Event]:
    return fake[1]


def is_rpc(method: str) -> Any:
    return lambda r: r.method == "POST" and r.rpc_method == method


def posted_ids(server: McpHttpServer, method: str) -> List[Any]:
    return [r.json.get("id") for r in server.matching(is_rpc(method))]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stream_threads() -> List[str]:
    return [t.name for t in threading.enumerate()
            if t.name.startswith(("mcp-sync-stream-", "mcp-sync-listener-"))]


# -- replies -------------------------------------------------------------------------------


@pytest.mark.parametrize("reply", ["json", "sse"])
def test_round_trip_and_wire_headers(server: McpHttpServer, reply: str) -> None:
    server.reply = reply
    with mcp_sync.connect(server.url) as client:
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        assert [tool.name for tool in client.list_tools()] == ["echo", "gated", "block",
                                                                "chatty"]
        session_id = client.transport.session_id  # type: ignore[attr-defined]
        assert session_id and server.sessions.keys() == {session_id}
        names = stream_threads()
        # Named after the server's serverInfo.name once the handshake gave it.
        assert client.name == "http-test"
        assert any(n.startswith("mcp-sync-stream-http-test") for n in names), names
        assert "mcp-sync-listener-http-test" in names
    posts = server.matching(lambda r: r.method == "POST")
    for r in posts:
        assert r.header("Accept") == ACCEPT and r.header("Content-Type") == "application/json"
    probes = [r for r in posts if r.rpc_method == "server/discover"]  # the era probe
    for probe in probes:  # a 2026-07-28 request: its fields are mirrored into headers
        assert probe.header("Mcp-Method") == "server/discover"
        assert probe.header("MCP-Protocol-Version") == "2026-07-28"
    posts = posts[len(probes):]
    # The call lists the tools first (for their output schemas); list_tools() is then
    # served from the cache, the server promising list_changed notifications.
    assert [r.rpc_method for r in posts] == [
        "initialize", "notifications/initialized", "tools/list", "tools/call"]
    init = posts[0]
    assert init.header("Mcp-Session-Id") is None and init.header("MCP-Protocol-Version") is None
    for r in server.requests[server.requests.index(init) + 1:]:  # everything after it
        assert r.header("Mcp-Session-Id") == session_id, r
        assert r.header("MCP-Protocol-Version") == "2025-11-25", r
    assert server.requests[-1].method == "DELETE"


def test_the_call_returns_before_its_stream_ends(
        server: McpHttpServer, gates: Dict[str, threading.Event]) -> None:
    server.hold_open = threading.Event()
    with mcp_sync.connect(server.url) as client:
        future = client.call_tool_future("gated")
        assert gates["blocked"].wait(WAIT)  # the POST's headers and priming event are out
        assert not future.done()
        gates["release"].set()  # the response comes now, long after the headers...
        assert future.result(WAIT).text == "released"
        stream_end = server.stream_end(posted_ids(server, "tools/call")[0])
        assert not stream_end.is_set()  # ...while the stream is still held open
        server.hold_open.set()
        assert stream_end.wait(WAIT)


def test_notifications_and_a_server_request_on_the_stream(server: McpHttpServer) -> None:
    seen: List[Tuple[str, Any]] = []
    both = threading.Event()

    def on_notification(method: str, params: Any) -> None:
        seen.append((method, params))
        if len(seen) == 2:
            both.set()

    with mcp_sync.connect(server.url, roots=[{"uri": "file:///work", "name": "work"}],
                          notification_handler=on_notification) as client:
        result = client.call_tool("chatty")
        assert result.text == "file:///work"  # the tool got the client's answer
        assert both.wait(WAIT)
    assert [method for method, _ in seen] == ["notifications/message", "notifications/progress"]
    assert seen[0][1]["data"] == "step 1" and seen[1][1]["message"] == "half way"
    # The answer to roots/list was POSTed back to the server, in the same session.
    answers = server.matching(lambda r: isinstance(r.json, dict) and "result" in r.json)
    assert [a.json["result"]["roots"][0]["uri"] for a in answers] == ["file:///work"]
    assert answers[0].header("Mcp-Session-Id") is not None


def test_json_reply_unparsable_is_a_protocol_error(server: McpHttpServer) -> None:
    def hook(handler: Any, message: Any) -> bool:
        if message.get("method") != "tools/call":
            return False
        handler.send_status(200, b'{"jsonrpc": "2.0", "id": ', content_type="application/json")
        return True

    server.reply = "json"
    server.post_hook = hook
    with mcp_sync.connect(server.url) as client:
        with pytest.raises(ProtocolError, match="not valid JSON"):
            client.call_tool("echo", {"text": "x"})
        assert client.list_tools()  # the connection lives on


def test_malformed_sse_data_is_skipped_with_a_warning(
        server: McpHttpServer, caplog: pytest.LogCaptureFixture) -> None:
    def hook(handler: Any, message: Any) -> bool:
        if message.get("method") != "tools/call":
            return False
        handler.start_events()
        handler.write_event("{this is not json", event_id="x-1")
        handler.write_event({"jsonrpc": "2.0", "id": message["id"],
                             "result": {"content": [{"type": "text", "text": "fine"}]}},
                            event_id="x-2")
        handler.end_events()
        return True

    server.post_hook = hook
    with mcp_sync.connect(server.url) as client, caplog.at_level(logging.WARNING):
        assert client.call_tool("echo", {"text": "x"}).text == "fine"
    assert any("skipping malformed message" in r.getMessage() and "{this is not json"
               in r.getMessage() for r in caplog.records)


def test_a_10_mib_event_in_small_chunks(server: McpHttpServer) -> None:
    text = "0123456789abcdef" * (10 * 1024 * 1024 // 16)

    def hook(handler: Any, message: Any) -> bool:
        if message.get("method") != "tools/call":
            return False
        handler.start_events()
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"],
                           "result": {"content": [{"type": "text", "text": text}]}})
        event = f"id: big-1\ndata: {body}\n\n".encode()
        for start in range(0, len(event), 4096):  # 2,560 HTTP chunks
            handler.write_raw(event[start:start + 4096])
        handler.end_events()
        return True

    server.post_hook = hook
    with mcp_sync.connect(server.url) as client:
        result = client.call_tool("echo", {"text": "x"}, timeout=60)
    assert result.text == text


def test_sse_parsing_is_linear_in_the_event_size() -> None:
    """The decoder joins a line once, when its end arrives: a parser that re-copied the
    event for each 1 KiB read (as sseclient-py did: 5 s for 10 MiB) would take 100x the
    time for 10x the size."""

    def parse_seconds(size: int) -> float:
        event = b"id: 1\ndata: " + b"x" * size + b"\n\n"
        chunks = [event[i:i + 1024] for i in range(0, len(event), 1024)]
        best = float("inf")
        for _ in range(5):
            decoder = SSEDecoder()
            start = time.thread_time()  # CPU time of this thread: a busy VM does not count
            events = [e for chunk in chunks for e in decoder.feed(chunk)]
            best = min(best, time.thread_time() - start)
            assert len(events) == 1 and len(events[0].data) == size
        return max(best, 1e-6)

    small, large = parse_seconds(1 << 20), parse_seconds(10 << 20)
    assert large / small < 40, (small, large)


def test_sse_decoder_follows_the_event_stream_rules() -> None:
    stream = (b"\xef\xbb\xbfid: 7\r\nretry: 250\r\ndata:\r\n\r\n: keep-alive\n\n"
              b"event: message\ndata: {\"a\":\ndata: 1}\r\rdata: no id change\n"
              b"id\n\nevent: other\ndata: x\n\ndata: unterminated")
    events: List[ServerSentEvent] = []
    decoder = SSEDecoder()
    for i in range(len(stream)):  # one byte at a time: every split point
        events.extend(decoder.feed(stream[i:i + 1]))
    decoder.end()
    assert [(e.event, e.data, e.id) for e in events] == [
        ("message", '{"a":\n1}', "7"), ("message", "no id change", ""), ("other", "x", "")]
    assert decoder.retry == 250 and decoder.comments == 1 and decoder.last_event_id == ""
    primed = SSEDecoder(include_empty=True).feed(b"id: 1\nretry: 5\ndata:\n\n")
    assert primed == [ServerSentEvent("", "message", "1", 5)]


def feed_all(decoder: SSEDecoder, chunks: List[bytes]) -> Tuple[List[ServerSentEvent],
                                                                 Optional[EventTooLarge]]:
    """The events ``chunks`` complete, up to the EventTooLarge (if any) that ends them."""
    events: List[ServerSentEvent] = []
    for chunk in chunks:
        try:
            events.extend(decoder.feed(chunk))
        except EventTooLarge as exc:
            return events + exc.events, exc
    return events, None


def test_sse_decoder_bounds_one_event_whatever_the_chunking() -> None:
    """The bound counts the lines of the event being assembled (the unfinished one too),
    not comments before it nor the events before it: at every split of the stream, the
    same events come out, then the same error."""
    big = b'data: {"jsonrpc":"2.0","id":7,\ndata: "result":"' + b"x" * 200
    stream = (b": comment\n\n" * 30 + b"data: one\n\n" + b"id: 3\ndata: " + b"y" * 89 + b"\n\n"
              + big)
    for split in range(1, len(stream)):
        events, error = feed_all(SSEDecoder(max_event_size=100),
                                 [stream[:split], stream[split:]])
        assert [e.data for e in events] == ["one", "y" * 89], split
        assert error is not None and error.limit == 100 and error.size > 100, split
        assert error.head == b'{"jsonrpc":"2.0","id":7,'
    # Under the bound, nothing changes.
    events, error = feed_all(SSEDecoder(max_event_size=10_000), [stream + b"\n\n"])
    assert error is None and len(events) == 3
    # One long line without a line end raises once it is past the bound, read by read.
    decoder = SSEDecoder(max_event_size=1000)
    assert decoder.feed(b"data: " + b"z" * 900) == []
    with pytest.raises(EventTooLarge) as caught:
        decoder.feed(b"z" * 200)
    assert caught.value.head.startswith(b"zzz") and caught.value.size == 1106


def test_sse_decoder_bound_keeps_the_line_readers_rules() -> None:
    """The bound is counted by the decoder after its own steps: a BOM is not part of
    the event, ``\r\n`` line ends do not count (split across reads or not), comments and
    ``id`` lines do; the ``id`` of the dropped event does not count either (it was cut),
    and events under the bound are still parsed."""
    event = b"id: 2\r\n: note\r\ndata: " + b"a" * 83 + b"\r\n\r\n"  # 5 + 6 + 89 = 100
    for stream in (b"\xef\xbb\xbf" + event, event.replace(b"\r\n", b"\r")):
        for split in range(1, len(stream)):
            events, error = feed_all(SSEDecoder(max_event_size=100),
                                     [stream[:split], stream[split:]])
            assert error is None and [(e.data, e.id) for e in events] == [("a" * 83, "2")]
    decoder = SSEDecoder(max_event_size=100)
    assert decoder.feed(b"id: 1\r\ndata: one\r\n\r\n") == [ServerSentEvent("one", id="1")]
    with pytest.raises(EventTooLarge) as caught:
        decoder.feed(event.replace(b"a" * 83, b"a" * 84))
    assert caught.value.size == 101 and caught.value.head == b"a" * 84
    assert decoder.last_event_id == "1"  # the dropped event's id: 2 never counted
    # A comment alone can take an event past the bound; it has no data to show.
    with pytest.raises(EventTooLarge) as caught:
        SSEDecoder(max_event_size=100).feed(b"data: x\n: " + b"c" * 100)
    assert caught.value.head == b"x"
    with pytest.raises(EventTooLarge) as caught:
        SSEDecoder(max_event_size=100).feed(b": " + b"c" * 100)
    assert caught.value.head == b""


def test_sse_decoder_never_holds_more_than_the_bound() -> None:
    """What an unfinished line has brought is checked before it is kept or joined: a line
    just under the bound, then a read that ends it far past the bound, costs the decoder
    no copy of the two together (before the check, it joined them: 7 + 4 MiB)."""
    mib = 1 << 20
    start = b"data: " + b"x" * (7 * mib)
    rest = b"x" * (4 * mib) + b"\n\n"
    decoder = SSEDecoder(max_event_size=8 * mib)
    assert decoder.feed(start) == []
    tracemalloc.start()
    try:
        with pytest.raises(EventTooLarge) as caught:
            decoder.feed(rest)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert caught.value.size == len(start) + 4 * mib
    assert peak < 5 * mib, peak  # the read split into its lines, no more
    # Read by read, a line without its end is never kept past the bound.
    decoder = SSEDecoder(max_event_size=8 * mib)
    block = b"x" * mib
    tracemalloc.start()
    try:
        with pytest.raises(EventTooLarge):
            for _ in range(100):
                decoder.feed(block)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < mib, peak  # the reads themselves are kept, never copied


def test_iter_events_yields_what_came_before_an_event_too_large() -> None:
    body = b"data: first\n\ndata: " + b"x" * 5000 + b"\n\n"

    class Raw:
        def __init__(self) -> None:
            self.left = body

        def read1(self, size: int, decode_content: bool = True) -> bytes:
            data, self.left = self.left[:size], self.left[size:]
            return data

    class Response:
        raw = Raw()

    seen: List[str] = []
    with pytest.raises(EventTooLarge):
        for event in iter_events(Response(), max_event_size=1000, read_size=1 << 16):
            seen.append(event.data)
    assert seen == ["first"]


def test_iter_events_reads_a_live_stream(server: McpHttpServer) -> None:
    def hook(handler: Any, message: Any) -> bool:
        handler.start_events()
        handler.write_event({"n": 1}, event_id="a")
        handler.write_raw(b": ping\n\n")
        handler.write_event("two", event="custom")
        handler.end_events()
        return True

    server.post_hook = hook
    seen: List[bytes] = []
    with requests.post(server.url, data=b"{}", stream=True, timeout=WAIT) as response:
        events = list(iter_events(response, on_bytes=seen.append))
    assert [(e.event, e.data, e.id) for e in events] == [
        ("message", '{"n": 1}', "a"), ("custom", "two", "a")]
    assert b": ping\n\n" in b"".join(seen)


# -- the session ---------------------------------------------------------------------------


def test_connect_gives_max_message_size_to_the_http_transport(server: McpHttpServer) -> None:
    """Like close_timeout, the bound goes to whatever transport connect() builds (before,
    connect() took it for a stdio option and refused it for a URL)."""
    with mcp_sync.connect(server.url, max_message_size=1 << 20) as client:
        assert isinstance(client.transport, HttpTransport)
        assert client.transport.max_message_size == 1 << 20
    with mcp_sync.connect({"url": server.url}, max_message_size=1 << 21) as client:
        assert client.transport.max_message_size == 1 << 21  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="cannot apply to a transport built already"):
        mcp_sync.connect(HttpTransport(server.url), max_message_size=10)


def test_a_lost_session_is_renewed_and_the_request_retried_once(server: McpHttpServer) -> None:
    """HTTP 404 on the session id: the transport reports SessionExpired, the client
    starts a new session itself (initialize, then notifications/initialized on the new
    id) and sends the request that met the 404 once more."""
    with mcp_sync.connect(server.url) as client:
        first = client.transport.session_id  # type: ignore[attr-defined]
        client.list_tools()
        assert client.call_tool("echo", {"text": "one"}).text == "one"
        server.expire_sessions()  # the server restarted: the session id is now unknown
        assert client.call_tool("echo", {"text": "two"}).text == "two"
        second = client.transport.session_id  # type: ignore[attr-defined]
        assert second and second != first
        assert client.connected
    initializes = server.matching(is_rpc("initialize"))
    assert [r.header("Mcp-Session-Id") for r in initializes] == [None, None]
    calls = server.matching(is_rpc("tools/call"))
    assert [(c.json["params"]["arguments"]["text"], c.header("Mcp-Session-Id"))
            for c in calls] == [("one", first), ("two", first), ("two", second)]
    renewed = server.matching(is_rpc("notifications/initialized"))[-1]
    assert renewed.header("Mcp-Session-Id") == second


@pytest.mark.parametrize("form", ["blocking", "future"])
def test_a_renewed_session_has_the_new_handshake_and_what_the_old_one_held(form: str) -> None:
    """After a 404 the client's agreement is the new handshake's (server_info,
    instructions), the resource subscriptions and the log level of the old session are
    repeated on the new one before the failed request is sent again, and both call forms
    behave the same."""
    fake = echo_fake("renewing")
    fake.version, fake.instructions = "1.0", "first life"
    fake.resource("note://a", "a")
    fake.resource("note://b", "b")
    with McpHttpServer(fake) as server, mcp_sync.connect(server.url) as client:
        client.subscribe_resource("note://a")
        client.subscribe_resource("note://b")
        client.unsubscribe_resource("note://b")
        client.set_logging_level("warning")
        assert (client.server_info.version, client.instructions) == ("1.0", "first life")
        first = client.transport.session_id  # type: ignore[attr-defined]
        fake.version, fake.instructions = "2.0", "second life"
        server.expire_sessions()
        if form == "blocking":
            result = client.call_tool("echo", {"text": "again"})
        else:
            result = client.call_tool_future("echo", {"text": "again"}).result(WAIT)
        assert result.text == "again"
        second = client.transport.session_id  # type: ignore[attr-defined]
        assert second not in (None, first)
        assert (client.server_info.version, client.instructions) == ("2.0", "second life")
        assert client.agreement is not None and client.agreement.server_info["version"] == "2.0"
    on_second = [r for r in server.requests
                 if r.method == "POST" and r.header("Mcp-Session-Id") == second]
    assert [(r.rpc_method, (r.json.get("params") or {}).get("uri") or
             (r.json.get("params") or {}).get("level")) for r in on_second[:3]] == [
        ("notifications/initialized", None), ("resources/subscribe", "note://a"),
        ("logging/setLevel", "warning")]
    # The first request after the expiry (the tool listing call_tool makes first on a
    # connection that has not listed yet) met the 404 and went again on the new session.
    assert [r.header("Mcp-Session-Id") for r in server.matching(is_rpc("tools/list"))] == [
        first, second]
    assert [c.header("Mcp-Session-Id") for c in server.matching(is_rpc("tools/call"))] == [
        second]


def test_a_404_on_the_get_stream_has_the_next_request_start_a_new_session(
        server: McpHttpServer) -> None:
    """The GET stream, re-opened after the server forgot the session, meets a 404: no
    request is there to fail, so the transport reports the loss as its close reason, and
    the next request starts a new session before it is sent (not sent into a 404)."""
    with mcp_sync.connect(server.url) as client:
        first = client.transport.session_id  # type: ignore[attr-defined]
        server.wait_for(lambda r: r.method == "GET")
        server.expire_sessions()  # ends the GET stream too: the transport re-opens it
        server.wait_for(lambda r: r.method == "GET" and r.header("Mcp-Session-Id") == first,
                        count=2)
        session = client._rpc  # the dying session (no public handle; test only)
        assert session is not None and session.wait_closed(WAIT)
        assert not client.connected
        assert client.call_tool("echo", {"text": "new"}).text == "new"
        assert client.connected
        second = client.transport.session_id  # type: ignore[attr-defined]
        assert second not in (None, first)
    calls = server.matching(is_rpc("tools/call"))
    assert [c.header("Mcp-Session-Id") for c in calls] == [second]


def test_a_request_in_flight_when_the_session_expires_fails_with_session_expired(
        server: McpHttpServer, gates: Dict[str, threading.Event]) -> None:
    """Only the request that met the 404 is sent again (the server never saw it); one
    that was running on the old session may have run, so it fails, with SessionExpired,
    and the client goes on with a new session."""
    with mcp_sync.connect(server.url) as client:
        running = client.call_tool_future("gated")
        assert gates["blocked"].wait(WAIT)
        server.expire_sessions()
        assert client.call_tool("echo", {"text": "after"}).text == "after"
        with pytest.raises(mcp_sync.SessionExpired, match="forgot MCP session"):
            running.result(WAIT)
        assert client.connected
        gates["release"].set()

def test_a_second_404_after_renewing_fails_the_request(server: McpHttpServer) -> None:
    def hook(handler: Any, message: Any) -> bool:
        if message.get("method") != "tools/call":
            return False
        handler.send_status(404, b"no such session", content_type="text/plain")
        return True

    with mcp_sync.connect(server.url) as client:
        client.list_tools()
        server.post_hook = hook
        with pytest.raises(mcp_sync.SessionExpired, match="HTTP 404 on tools/call"):
            client.call_tool("echo", {"text": "x"})
        assert len(server.matching(is_rpc("tools/call"))) == 2  # the request, one retry
        assert len(server.matching(is_rpc("initialize"))) == 2  # the first, one renewal
        # Still usable: the next request starts another session.
        server.post_hook = None
        assert client.call_tool("echo", {"text": "y"}).text == "y"
        assert len(server.matching(is_rpc("initialize"))) == 3


def test_close_deletes_the_session(server: McpHttpServer) -> None:
    client = mcp_sync.connect(server.url)
    session_id = client.transport.session_id  # type: ignore[attr-defined]
    client.close()
    client.close()  # idempotent
    deletes = server.matching(lambda r: r.method == "DELETE")
    assert [d.header("Mcp-Session-Id") for d in deletes] == [session_id]
    assert session_id not in server.sessions
    assert not stream_threads()


def test_a_closed_client_reconnects_with_a_new_session(server: McpHttpServer) -> None:
    client = mcp_sync.Client(HttpTransport(server.url))
    session_ids = []
    for text in ("first", "second"):
        client.connect()
        assert client.call_tool("echo", {"text": text}).text == text
        session_ids.append(client.transport.session_id)  # type: ignore[attr-defined]
        client.close()
    assert session_ids[0] != session_ids[1]
    deletes = server.matching(lambda r: r.method == "DELETE")
    assert [d.header("Mcp-Session-Id") for d in deletes] == session_ids


def test_the_transport_reports_its_close_once() -> None:
    transport = HttpTransport(f"http://127.0.0.1:{free_port()}/mcp")
    closes: List[ConnectionClosed] = []
    transport.start(lambda message: None, closes.append, lambda request_id, error: None)
    transport.close()
    transport.close()
    assert len(closes) == 1 and isinstance(closes[0], ConnectionClosed)
    with pytest.raises(ConnectionClosed) as caught:
        transport.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert caught.value.request_sent is False


# -- the GET stream ------------------------------------------------------------------------


def test_no_get_stream_405_is_quietly_accepted(server: McpHttpServer) -> None:
    server.get_status = 405
    with mcp_sync.connect(server.url) as client:
        assert client.call_tool("echo", {"text": "still fine"}).text == "still fine"
        assert not any(n.startswith("mcp-sync-listener-") for n in stream_threads())
    assert len(server.matching(lambda r: r.method == "GET")) == 1  # tried once, no retries


def test_a_get_stream_that_does_not_answer_is_given_up_quickly(server: McpHttpServer) -> None:
    server.get_gate = threading.Event()  # the server sits on the GET's headers
    transport = HttpTransport(server.url, timeout=0.4)  # the GET may take 0.1 s to start
    start = time.monotonic()
    with mcp_sync.Client(transport) as client:
        assert time.monotonic() - start < 2.0
        assert client.call_tool("echo", {"text": "ok"}).text == "ok"
        assert not any(n.startswith("mcp-sync-listener-") for n in stream_threads())
    server.get_gate.set()
    assert len(server.matching(lambda r: r.method == "GET")) == 1


def test_a_dropped_get_stream_is_reopened(server: McpHttpServer) -> None:
    server.retry_ms = 20  # the GET stream's priming event says: come back after 20 ms
    first, second, seen = assert_get_stream_resumes(
        server, lambda **kwargs: mcp_sync.connect(server.url, **kwargs), WAIT)
    assert second.header("Mcp-Session-Id") == first.header("Mcp-Session-Id")
    assert seen == [None]


# -- resumption ----------------------------------------------------------------------------


def test_a_broken_stream_is_resumed_with_last_event_id(server: McpHttpServer) -> None:
    server.retry_ms = 150
    with mcp_sync.connect(server.url) as client:
        client.list_tools()  # so that the call's is the next request (it lists them first)
        server.break_streams = 1  # the next request's stream ends after its priming event
        assert client.call_tool("echo", {"text": "resumed"}).text == "resumed"
    call = server.matching(is_rpc("tools/call"))[0]
    resumes = server.matching(lambda r: r.method == "GET" and r.header("Last-Event-ID"))
    assert len(resumes) == 1
    resume = resumes[0]
    assert resume.header("Last-Event-ID").endswith("-0")  # the priming event's id
    assert resume.header("Accept") == "text/event-stream"
    assert resume.header("Mcp-Session-Id") == call.header("Mcp-Session-Id")
    assert resume.time - call.time >= 0.14  # the server's retry interval was honoured


def test_a_stream_that_cannot_be_resumed_fails_its_request(server: McpHttpServer) -> None:
    server.retry_ms = 10
    server.get_status = 405  # no GET at all: neither a listener nor a resumption
    with mcp_sync.connect(server.url) as client:
        client.list_tools()  # so that the call's is the next request (it lists them first)
        server.break_streams = 1
        with pytest.raises(TransportError, match="No response received for request") as caught:
            client.call_tool("echo", {"text": "lost"})
        assert isinstance(caught.value.__cause__, HTTPError)
        assert client.call_tool("echo", {"text": "next"}).text == "next"


# -- errors --------------------------------------------------------------------------------


def test_401_carries_the_auth_hints(server: McpHttpServer) -> None:
    hint = 'Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource"'

    def hook(handler: Any, message: Any) -> bool:
        handler.send_status(401, b'{"error": "invalid_token"}', {"WWW-Authenticate": hint})
        return True

    server.post_hook = hook
    with pytest.raises(HTTPError) as caught:
        mcp_sync.connect(server.url)
    error = caught.value
    assert error.status == 401 and error.www_authenticate == hint
    assert "HTTP 401" in str(error) and "resource_metadata" in str(error)
    assert "invalid_token" in error.body and server.url in str(error)


def test_a_server_error_status_on_a_request(server: McpHttpServer) -> None:
    def hook(handler: Any, message: Any) -> bool:
        if message.get("method") != "tools/call":
            return False
        handler.send_status(500, b"database on fire", content_type="text/plain")
        return True

    with mcp_sync.connect(server.url) as client:
        server.post_hook = hook
        with pytest.raises(HTTPError, match="database on fire") as caught:
            client.call_tool("echo", {"text": "x"})
        assert caught.value.status == 500 and caught.value.method == "tools/call"


def test_a_rejected_notification_is_logged(
        server: McpHttpServer, caplog: pytest.LogCaptureFixture) -> None:
    def hook(handler: Any, message: Any) -> bool:
        if message.get("method") != "notifications/roots/list_changed":
            return False
        handler.send_status(400, b"not now", content_type="text/plain")
        return True

    with mcp_sync.connect(server.url, roots=[]) as client, caplog.at_level(logging.WARNING):
        server.post_hook = hook
        client.send_roots_list_changed()  # nobody waits for it: no exception
    assert any("did not accept notifications/roots/list_changed" in r.getMessage()
               and "not now" in r.getMessage() for r in caplog.records)


def test_a_refused_request_fails_through_on_request_failed(server: McpHttpServer) -> None:
    """send() never POSTs a request on the caller's thread: the POST runs on a stream
    thread, and its failure reaches the session through the callback given to start()."""
    transport = HttpTransport(server.url)
    failed: List[Tuple[Any, BaseException]] = []
    reported = threading.Event()

    def on_request_failed(request_id: Any, error: BaseException) -> None:
        failed.append((request_id, error))
        reported.set()

    transport.start(lambda message: None, lambda error: None, on_request_failed)
    try:
        transport.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})  # returns at once
        assert reported.wait(WAIT)
    finally:
        transport.close()
    [(request_id, error)] = failed
    assert request_id == 1 and isinstance(error, HTTPError)
    assert error.status == 400 and "No valid session ID" in error.body  # no session id yet


def test_connection_refused_names_the_url() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with pytest.raises(TransportError) as caught:
        mcp_sync.connect(url)
    assert not isinstance(caught.value, HTTPError)
    assert url in str(caught.value) and "cannot reach" in str(caught.value)
    assert isinstance(caught.value.__cause__, requests.ConnectionError)
    assert caught.value.request_sent is False


# -- timeouts and cancellation -------------------------------------------------------------


@pytest.mark.parametrize("reply", ["sse", "json"])
def test_timeout_while_the_server_trickles_keepalives(
        server: McpHttpServer, gates: Dict[str, threading.Event], reply: str) -> None:
    """SSE: comments every 50 ms do not extend the deadline. JSON: the server sits on
    its headers; the deadline holds all the same, and the blocked POST is interrupted."""
    server.reply = reply
    server.keepalive = 0.05
    with mcp_sync.connect(server.url) as client:
        start = time.monotonic()
        with pytest.raises(RequestTimeout):
            client.call_tool("block", timeout=0.5)
        elapsed = time.monotonic() - start
        assert 0.45 <= elapsed < 3.0, elapsed
        assert gates["blocked"].is_set()
        call_id = posted_ids(server, "tools/call")[0]
        cancel = server.wait_for(is_rpc("notifications/cancelled"), WAIT)
        assert cancel.json["params"]["requestId"] == call_id
        assert server.stream_end(call_id).wait(WAIT)  # the request's reply is over
        assert client.call_tool("echo", {"text": "after"}).text == "after"


def test_read_timeout_fails_a_request_whose_server_sits_on_its_headers(
        server: McpHttpServer) -> None:
    """``read_timeout`` bounds the wait for a request's reply, apart from the connect
    bound: with a connect bound longer than the call's deadline, the call fails with the
    transport's error, not the deadline's. Changed, it holds from the next request on."""
    release = threading.Event()

    def hook(handler: Any, message: Any) -> bool:
        if message.get("method") != "tools/call":
            return False
        release.wait(WAIT)  # no status line, no headers, until the test is over
        return True

    transport = HttpTransport(server.url, connect_timeout=WAIT, read_timeout=0.2)
    try:
        with mcp_sync.Client(transport, timeout=WAIT / 2) as client:
            server.post_hook = hook
            with pytest.raises(TransportError, match=r"no response from .* in time"):
                client.call_tool("echo", {"text": "held"})
            transport.read_timeout = None  # no bound of its own: the call's deadline ends it
            with pytest.raises(RequestTimeout):
                client.call_tool("echo", {"text": "held"}, timeout=0.5)
    finally:
        release.set()


def test_future_cancel_closes_the_stream(
        server: McpHttpServer, gates: Dict[str, threading.Event]) -> None:
    with mcp_sync.connect(server.url) as client:
        future = client.call_tool_future("block")
        assert gates["blocked"].wait(WAIT)
        assert future.cancel()
        call_id = posted_ids(server, "tools/call")[0]
        cancel = server.wait_for(is_rpc("notifications/cancelled"), WAIT)
        assert cancel.json["params"]["requestId"] == call_id
        assert server.stream_end(call_id).wait(WAIT)


def test_close_interrupts_requests_in_flight(
        server: McpHttpServer, gates: Dict[str, threading.Event]) -> None:
    server.reply = "json"  # the POST waits for its headers until the tool returns
    client = mcp_sync.connect(server.url)
    future = client.call_tool_future("gated")
    assert gates["blocked"].wait(WAIT)
    start = time.monotonic()
    client.close()
    assert time.monotonic() - start < 1.5
    with pytest.raises(ConnectionClosed):
        future.result(WAIT)
    assert not stream_threads()


# -- the stateless era on the wire ---------------------------------------------------------


def test_stateless_requests_mirror_their_fields_into_headers(server: McpHttpServer) -> None:
    """A request with the 2026-07-28 envelope carries Mcp-Method and Mcp-Name, and a
    4xx with a JSON-RPC error body is that error (the client reads its code)."""

    def hook(handler: Any, message: Any) -> bool:
        if message["params"]["name"] == "bad":
            handler.send_json({"jsonrpc": "2.0", "id": None,
                               "error": {"code": -32020, "message": "Header mismatch"}}, 400)
        else:
            handler.send_json({"jsonrpc": "2.0", "id": message["id"], "result": {}})
        return True

    server.post_hook = hook
    received: List[Any] = []
    both = threading.Event()
    failed: List[Any] = []

    def on_message(message: Any, first: bool = False) -> None:
        received.append(message)
        if len(received) == 2:
            both.set()

    transport = HttpTransport(server.url)
    transport.start(on_message, lambda error: None,
                    lambda request_id, error: failed.append(error))
    try:
        # The agreement decides the framing; the transport reads no message's _meta.
        transport.agree(Agreement(STATELESS_ERA, "2026-07-28"))
        for request_id, name in ((1, "h\u00e9llo"), (2, "bad")):
            transport.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                            "params": {"name": name}},
                           headers={"Mcp-Param-Region": "eu"})
        assert both.wait(WAIT)
        assert transport.cancel(3) is True  # the stateless era cancels by closing
    finally:
        transport.close()
    first = next(r for r in server.matching(is_rpc("tools/call")) if r.json["id"] == 1)
    assert first.header("Mcp-Method") == "tools/call"
    assert first.header("Mcp-Name") == "=?base64?aMOpbGxv?="
    assert first.header("MCP-Protocol-Version") == "2026-07-28"
    assert first.header("Mcp-Param-Region") == "eu"
    by_id = {message["id"]: message for message in received}
    assert by_id[1] == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert by_id[2]["error"]["code"] == -32020 and not failed
    assert not server.matching(lambda r: r.method == "GET")  # no GET stream in this era


def test_settings_from_the_environment_are_resolved_once(
        server: McpHttpServer, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: List[str] = []
    original = requests.Session.merge_environment_settings

    def counting(self: requests.Session, url: Any, *args: Any) -> Any:
        calls.append(str(url))
        return original(self, url, *args)

    monkeypatch.setattr(requests.Session, "merge_environment_settings", counting)
    with mcp_sync.connect(server.url) as client:
        for _ in range(5):
            client.ping()
    assert calls == [server.url]


def test_a_user_session_and_auth_are_used(server: McpHttpServer) -> None:
    session = requests.Session()
    session.headers["X-Team"] = "blue"
    transport = HttpTransport(server.url, headers={"X-Extra": "1"}, auth=("ada", "secret"),
                              session=session)
    try:
        with mcp_sync.Client(transport) as client:
            client.ping()
    finally:
        session.close()
    ping = server.matching(is_rpc("ping"))[0]
    assert ping.header("X-Team") == "blue" and ping.header("X-Extra") == "1"
    assert ping.header("Authorization") == "Basic YWRhOnNlY3JldA=="


def test_a_cookie_the_server_sets_comes_back_until_it_deletes_it(server: McpHttpServer) -> None:
    """As with any requests.Session (a load balancer's affinity cookie, say)."""
    cookies = iter(["affinity=node-7; Path=/", "affinity=; Path=/; Max-Age=0"])

    def hook(handler: Any, message: Any) -> bool:
        if message.get("method") != "tools/call":
            return False
        handler.send_json({"jsonrpc": "2.0", "id": message["id"], "result": {
            "content": [{"type": "text", "text": "ok"}]}}, headers={"Set-Cookie": next(cookies)})
        return True

    with mcp_sync.connect(server.url) as client:
        server.post_hook = hook
        client.call_tool("echo", {"text": "set"})
        client.ping()
        client.call_tool("echo", {"text": "delete"})
        client.ping()
    pings = server.matching(is_rpc("ping"))
    assert [r.header("Cookie") for r in pings] == ["affinity=node-7", None]
    calls = server.matching(is_rpc("tools/call"))
    assert [r.header("Cookie") for r in calls] == [None, "affinity=node-7"]


def test_the_adapter_looks_a_pool_up_once_and_never_reuses_a_closed_one(
    server: McpHttpServer,
) -> None:
    from mcp_sync.transports.http._interrupt import InterruptibleAdapter

    http = requests.Session()
    adapter = InterruptibleAdapter()
    http.mount("http://", adapter)
    lookups: List[Any] = []
    manager = adapter.poolmanager
    real = manager.connection_from_host

    def counted(*args: Any, **kwargs: Any) -> Any:
        pool = real(*args, **kwargs)
        lookups.append(pool)
        return pool

    manager.connection_from_host = counted  # type: ignore[method-assign]
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    try:
        for _ in range(3):
            assert http.post(server.url, json=ping, timeout=10).status_code in (200, 400)
        assert len(lookups) == 1  # the memo: one lookup for three requests
        first = lookups[0]
        manager.pools.clear()  # evicted, and closed (as urllib3 1.26 closes what it evicts)
        first.close()
        assert http.post(server.url, json=ping, timeout=10).status_code in (200, 400)
        assert len(lookups) == 2 and lookups[1] is not first  # a fresh pool, not the closed one
        http.close()  # the manager forgets its pools (open, in urllib3 2): so does the memo
        assert http.post(server.url, json=ping, timeout=10).status_code in (200, 400)
        assert len(lookups) == 3 and lookups[2] is not lookups[1]
        assert lookups[1].pool is None  # closed with the session, whatever the manager did
        # Through a proxy, requests' own lookup runs every time.
        proxies = {"http": "http://127.0.0.1:9"}
        for _ in range(2):
            with pytest.raises(requests.ConnectionError):
                http.post(server.url, json=ping, timeout=5, proxies=proxies)
        assert len(lookups) == 3  # a proxy's pools come from its own manager, every time
        assert adapter.request_url(http.prepare_request(
            requests.Request("POST", server.url + "?a=1")), {}) == "/mcp?a=1"
    finally:
        http.close()


def test_the_adapter_reads_the_cookies_of_a_response_that_sets_them(
        server: McpHttpServer) -> None:
    """The adapter leaves requests' reading of cookies whole: a response that sets a
    cookie has it in its own cookies and in the session's jar, one that sets none adds
    nothing."""
    from mcp_sync.transports.http._interrupt import InterruptibleAdapter

    def hook(handler: Any, message: Any) -> bool:
        if message.get("id") != 2:
            return False
        handler.send_json({"jsonrpc": "2.0", "id": 2, "result": {}},
                          headers={"Set-Cookie": "affinity=node-7; Path=/"})
        return True

    server.post_hook = hook
    http = requests.Session()
    http.mount("http://", InterruptibleAdapter())
    try:
        plain = http.post(server.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                          timeout=WAIT)
        assert not plain.cookies and not http.cookies
        setting = http.post(server.url, json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
                            timeout=WAIT)
        assert setting.cookies.get("affinity") == "node-7"
        assert http.cookies.get("affinity") == "node-7"
    finally:
        http.close()


def test_a_request_with_a_small_body_goes_out_in_one_write() -> None:
    """The transport's connections write a request's head and a body of up to 64 KiB
    in one call (one segment for the server to wake up for); a longer body after its
    head, as http.client does; a request without a body, its head alone."""
    from mcp_sync.transports.http._interrupt import _TrackedHTTPConnection

    writes: List[bytes] = []

    class Recording(socket.socket):
        def send(self, data: Any, *args: Any) -> int:
            writes.append(bytes(data))
            return super().send(data, *args)

        def sendall(self, data: Any, *args: Any) -> None:
            writes.append(bytes(data))
            super().sendall(data, *args)

    with socket.create_server(("127.0.0.1", 0)) as listener:
        connection = _TrackedHTTPConnection("127.0.0.1", listener.getsockname()[1],
                                            timeout=WAIT)
        try:
            connection.connect()
            assert connection.sock is not None
            connection.sock = Recording(fileno=connection.sock.detach())
            peer, _ = listener.accept()
            with peer:
                peer.settimeout(WAIT)
                for body, count in ((b'{"id":1}', 1), (None, 1), (b"x" * (64 * 1024 + 1), 2)):
                    writes.clear()
                    connection.request("POST", "/mcp", body=body,
                                       headers={"Content-Type": "application/json"})
                    sent = b"".join(writes)
                    assert len(writes) == count, [len(w) for w in writes]
                    assert writes[0].startswith(b"POST /mcp HTTP/1.1\r\n")
                    assert sent.endswith(b"\r\n\r\n" + (body or b""))
                    received = b""
                    while len(received) < len(sent):
                        received += peer.recv(1 << 20)
                    assert received == sent
                    peer.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")
                    response = connection.getresponse()
                    assert response.status == 204
                    # Read to its end, so that the connection takes the next request
                    # (urllib3 1.x leaves that to http.client, which insists).
                    assert response.read() == b""
        finally:
            connection.close()


def test_an_exchange_abort_flag_acts_as_an_event() -> None:
    from mcp_sync.transports.http._interrupt import Interruptible

    exchange = Interruptible()
    assert not exchange.aborted.is_set()
    assert exchange.aborted.wait(0.01) is False  # times out, as Event.wait does
    waiting = threading.Event()
    woken: List[bool] = []

    def waiter() -> None:
        waiting.set()
        woken.append(exchange.aborted.wait(10))

    thread = threading.Thread(target=waiter, name="mcp-sync-test-waiter")
    thread.start()
    assert waiting.wait(5)
    exchange.abort()  # wakes the waiter well before its 10 s
    thread.join(5)
    assert not thread.is_alive() and woken == [True]
    assert exchange.aborted.is_set() and exchange.aborted.wait(0) is True
