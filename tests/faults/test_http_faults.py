"""Fault injection over HTTP, against real sockets on 127.0.0.1.

Streamable HTTP: ``tests/servers/http_server.py`` serves the handshake normally, and a
``post_hook`` takes over one ``tools/call`` to misbehave at the byte level (resets, error
statuses, wrong bodies, stalled or trickling or cut event streams, redirects). Legacy
HTTP+SSE: ``tests/servers/legacy_sse_server.py`` with its endpoint and redirect knobs.
Each case: the specific error within a bound, then the client is usable (or reports
itself closed); the autouse fixture checks for leaked threads.
"""

from __future__ import annotations

import http.client
import json
import select
import socket
import struct
import threading
import time
from contextlib import contextmanager
from http import HTTPStatus
from typing import Any, Callable, Dict, Iterator, List, Optional, Type

import pytest

import mcp_sync
from mcp_sync import (
    ConnectionClosed,
    HTTPError,
    HttpTransport,
    MessageTooLarge,
    ProtocolError,
    RequestTimeout,
    SseTransport,
    TransportError,
)
from mcp_sync.transports.http._interrupt import _TrackedHTTPConnection, reuse_window

from ..servers.http_server import McpHttpServer, echo_fake
from ..servers.keepalive_server import KeepAliveServer
from ..servers.legacy_sse_server import LegacySseServer
from .helpers import Outcome, assert_reports_closed, assert_usable, expect, timed
from .workloads import PINNED, HttpServerProcess

WAIT = 10.0
SECRET_HEADERS = {"Authorization": "Bearer secret-token", "X-Api-Key": "secret-key"}
Hook = Callable[[Any, Dict[str, Any]], None]


@pytest.fixture
def server() -> Iterator[McpHttpServer]:
    with McpHttpServer(echo_fake("http-faults")) as running:
        yield running


@pytest.fixture
def other_origin() -> Iterator[McpHttpServer]:
    """A second server on another port: another origin, recording what reaches it."""
    with McpHttpServer(echo_fake("http-faults")) as running:
        yield running


def on_fault_call(server: McpHttpServer, fault: Hook) -> None:
    """Let ``fault(handler, message)`` answer every ``tools/call`` of the tool ``fault``."""

    def hook(handler: Any, message: Any) -> bool:
        if not (isinstance(message, dict) and message.get("method") == "tools/call"
                and (message.get("params") or {}).get("name") == "fault"):
            return False
        handler.close_connection = True  # whatever the fault did, this connection is done
        try:
            fault(handler, message)
        except OSError:
            pass  # the client hung up (a deadline, a cancellation)
        return True

    server.post_hook = hook


def connect(url: str, transport_kwargs: Optional[Dict[str, Any]] = None,
            **kwargs: Any) -> mcp_sync.Client:
    kwargs.setdefault("timeout", 5.0)
    kwargs.setdefault("protocol_version", PINNED)
    headers = kwargs.pop("headers", None)
    transport = HttpTransport(url, headers=headers, close_timeout=1.0, retry_delay=0.2,
                              **(transport_kwargs or {}))
    return mcp_sync.Client(transport, close_timeout=1.0, **kwargs).connect()


def call_fault(client: mcp_sync.Client, timeout: float = 5.0) -> Any:
    return client.call_tool("fault", {}, timeout=timeout)


@contextmanager
def fault_fails_the_call(server: McpHttpServer, fault: Hook, error: Type[BaseException],
                         within: float, *, label: str, match: Optional[str] = None,
                         timeout: float = 5.0, transport_kwargs: Optional[Dict[str, Any]] = None,
                         **kwargs: Any) -> Iterator[Outcome]:
    """With ``fault`` answering the tool ``fault``, a call to it raises ``error`` (matching
    ``match``) within ``within`` seconds; the ``with`` body checks the outcome while the
    client is still open, then the client must answer a plain call.

    ``label`` is the case's line in the figures table; ``kwargs`` go to :func:`connect`.
    """
    on_fault_call(server, fault)
    with connect(server.url, transport_kwargs, **kwargs) as client:
        with expect(error, within, fault=label, match=match) as outcome:
            call_fault(client, timeout=timeout)
        yield outcome
        assert_usable(client)


def assert_fault_answers(server: McpHttpServer, fault: Hook, text: str, within: float, *,
                         label: str, observed: str) -> None:
    """With ``fault`` answering the tool ``fault``, a call to it still gets ``text``, and a
    plain call after it works, all within ``within`` seconds."""
    on_fault_call(server, fault)
    with connect(server.url) as client, timed(within, fault=label, observed=observed):
        assert call_fault(client).text == text
        assert_usable(client)


def response_to(message: Dict[str, Any], text: str = "from the fault") -> Dict[str, Any]:
    return {"jsonrpc": "2.0", "id": message["id"],
            "result": {"content": [{"type": "text", "text": text}]}}


def event_bytes(message: Dict[str, Any]) -> bytes:
    return ("data: " + json.dumps(message) + "\n\n").encode()


# -- the connection breaks ---------------------------------------------------------------


def test_a_connection_reset_mid_request(server: McpHttpServer) -> None:
    def reset(handler: Any, message: Dict[str, Any]) -> None:
        handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                      struct.pack("ii", 1, 0))
        handler.connection.close()  # RST, not FIN

    with fault_fails_the_call(server, reset, TransportError, 2.0, match="cannot reach",
                              label="http: connection reset (RST) mid-request") as outcome:
        assert not isinstance(outcome.error, HTTPError)


def test_a_connection_closed_without_a_response(server: McpHttpServer) -> None:
    def hang_up(handler: Any, message: Dict[str, Any]) -> None:
        handler.connection.shutdown(socket.SHUT_RDWR)

    with fault_fails_the_call(server, hang_up, TransportError, 2.0,
                              label="http: connection closed, no response"):
        pass
    # It reached the server: it is never sent again.
    assert len(server.matching(lambda r: r.rpc_method == "tools/call"
                               and r.json["params"]["name"] == "fault")) == 1


@pytest.mark.parametrize("status", [500, 502, 503])
def test_an_error_status_with_an_html_page(server: McpHttpServer, status: int) -> None:
    title = HTTPStatus(status).phrase.encode()
    page = (b"<html><head><title>" + title + b"</title></head><body>\x1b[2J\x1b[31mupstream "
            b"died\x07\x00</body></html>" + b"<!-- padding -->" * 500)
    def error_page(handler: Any, message: Dict[str, Any]) -> None:
        handler.send_status(status, page, {"Connection": "close"}, content_type="text/html")

    with fault_fails_the_call(server, error_page, HTTPError, 2.0,
                              label=f"http: HTTP {status} with an HTML error page") as out:
        error = out.error
        assert error.status == status and error.method == "tools/call"  # type: ignore[attr-defined]
        assert "upstream died" in str(error)
        assert not any(ch in str(error) for ch in "\x1b\x07\x00")  # control characters gone
        assert len(error.body) < 600  # type: ignore[attr-defined]  # an excerpt, not 8 KB


def test_an_html_page_with_status_200(server: McpHttpServer) -> None:
    def login_page(handler: Any, message: Dict[str, Any]) -> None:
        handler.send_status(200, b"<html>Please log in</html>", {"Connection": "close"},
                            content_type="text/html")

    with fault_fails_the_call(server, login_page, ProtocolError, 2.0, match="text/html",
                              label="http: 200 with an HTML page (a captive portal)"):
        pass


def test_json_with_the_wrong_content_type(server: McpHttpServer) -> None:
    def plain_text(handler: Any, message: Dict[str, Any]) -> None:
        handler.send_status(200, json.dumps(response_to(message)).encode(),
                            {"Connection": "close"}, content_type="text/plain")

    with fault_fails_the_call(server, plain_text, ProtocolError, 2.0, match="text/plain",
                              label="http: JSON body labelled text/plain"):
        pass


def test_truncated_json(server: McpHttpServer) -> None:
    def truncated(handler: Any, message: Dict[str, Any]) -> None:
        body = json.dumps(response_to(message)).encode()
        handler.send_status(200, body[:len(body) // 2], {"Connection": "close"})

    with fault_fails_the_call(server, truncated, ProtocolError, 2.0, match="not valid JSON",
                              label="http: truncated JSON body"):
        pass


def test_a_body_shorter_than_its_content_length(server: McpHttpServer) -> None:
    def short(handler: Any, message: Dict[str, Any]) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", "5000")
        handler.end_headers()
        handler.wfile.write(json.dumps(response_to(message)).encode()[:40])
        handler.wfile.flush()
        handler.connection.shutdown(socket.SHUT_RDWR)

    with fault_fails_the_call(server, short, TransportError, 2.0, match="IncompleteRead",
                              label="http: body cut short of its Content-Length"):
        pass


MALFORMED = {
    "string": {"error": "boom"},
    "no_code": {"error": {"message": "an error without a code"}},
    "both": {"result": {"content": []}, "error": {"code": -32000, "message": "and an error"}},
}


@pytest.mark.parametrize("reply", ["json", "sse"])
@pytest.mark.parametrize("mode", sorted(MALFORMED))
def test_a_malformed_response_fails_its_call_at_once(server: McpHttpServer, reply: str,
                                                     mode: str) -> None:
    """Before, the transport took it for the answer and the session dropped it: the call
    waited for its deadline."""
    def malformed(handler: Any, message: Dict[str, Any]) -> None:
        answer = {"jsonrpc": "2.0", "id": message["id"], **MALFORMED[mode]}
        if reply == "json":
            handler.send_json(answer, headers={"Connection": "close"})
            return
        handler.start_events({"Connection": "close"})
        handler.write_event(None, event_id="s1-0")  # resumable: the stream ending is no error
        handler.write_event(answer, event_id="s1-1")
        handler.end_events()

    with fault_fails_the_call(server, malformed, ProtocolError, 1.0, timeout=5.0,
                              label=f"http: malformed response ({mode}, {reply})",
                              match="malformed response to tools/call"):
        pass


# -- event streams that misbehave ---------------------------------------------------------


def test_an_event_stream_that_stalls_forever(server: McpHttpServer) -> None:
    def stall(handler: Any, message: Dict[str, Any]) -> None:
        handler.start_events()
        handler.write_raw(b": stream open\n\n")
        handler.mcp.stopping.wait(60)  # until the test server stops

    with fault_fails_the_call(server, stall, RequestTimeout, 2.0, timeout=1.0,
                              label="http: SSE stream that stalls forever") as out:
        assert out.elapsed >= 0.9
        call_id = out.error.request_id  # type: ignore[attr-defined]
        cancel = server.wait_for(lambda r: r.rpc_method == "notifications/cancelled", WAIT)
        assert cancel.json["params"]["requestId"] == call_id


def test_an_event_stream_at_one_byte_per_100_ms_cannot_stretch_the_deadline(
        server: McpHttpServer) -> None:
    def trickle(handler: Any, message: Dict[str, Any]) -> None:
        handler.start_events()
        for byte in event_bytes(response_to(message)):
            handler.write_raw(bytes([byte]))
            if handler.mcp.stopping.wait(0.1):
                return

    with fault_fails_the_call(server, trickle, RequestTimeout, 2.5, timeout=1.5,
                              label="http: SSE at 1 byte per 100 ms (deadline 1.5 s)"):
        pass


def test_an_event_stream_one_byte_at_a_time_is_parsed_whole(server: McpHttpServer) -> None:
    def trickle(handler: Any, message: Dict[str, Any]) -> None:
        handler.start_events()
        for byte in b": comment\r\n" + event_bytes(response_to(message, "byte by byte")):
            handler.write_raw(bytes([byte]))
            handler.mcp.stopping.wait(0.002)
        handler.end_events()

    assert_fault_answers(server, trickle, "byte by byte", 5.0,
                         label="http: SSE one byte per chunk", observed="the right result")


def test_an_event_stream_that_ends_without_the_response(server: McpHttpServer) -> None:
    def notifications_only(handler: Any, message: Dict[str, Any]) -> None:
        handler.start_events({"Connection": "close"})
        handler.write_event({"jsonrpc": "2.0", "method": "notifications/message",
                             "params": {"level": "info", "data": "working"}})
        handler.end_events()

    logged: List[Any] = []
    with fault_fails_the_call(server, notifications_only, TransportError, 2.0,
                              label="http: SSE stream ends without the response",
                              match="ended the event stream first",
                              logging_handler=lambda p: logged.append(p.data)):
        pass
    assert logged == ["working"]


def test_an_event_stream_that_ends_and_cannot_be_resumed(server: McpHttpServer) -> None:
    def ends_with_an_id(handler: Any, message: Dict[str, Any]) -> None:
        handler.start_events({"Connection": "close"})
        handler.write_event(None, event_id="unknown-stream-1", retry=100)
        handler.end_events()

    with fault_fails_the_call(server, ends_with_an_id, TransportError, 3.0,
                              label="http: SSE stream ends; resumption refused",
                              match="would not resume"):
        resumed = server.matching(lambda r: r.method == "GET"
                                  and r.header("last-event-id") == "unknown-stream-1")
        assert len(resumed) == 1


def test_an_event_stream_that_never_sends_the_response(server: McpHttpServer) -> None:
    def chatter(handler: Any, message: Dict[str, Any]) -> None:
        handler.start_events()
        for index in range(600):
            handler.write_event({"jsonrpc": "2.0", "method": "notifications/message",
                                 "params": {"level": "info", "data": f"still busy {index}"}})
            if handler.mcp.stopping.wait(0.05):
                return

    logged: List[Any] = []
    with fault_fails_the_call(server, chatter, RequestTimeout, 2.0, timeout=1.0,
                              label="http: SSE notifications every 50 ms, never the response",
                              logging_handler=lambda p: logged.append(p.data)):
        pass
    assert len(logged) >= 5


def test_chunked_encoding_cut_mid_event(server: McpHttpServer) -> None:
    def cut(handler: Any, message: Dict[str, Any]) -> None:
        handler.start_events()
        event = event_bytes(response_to(message))
        # A chunk announcing the whole event, then the connection dies half-way through it.
        handler.wfile.write(b"%x\r\n" % len(event) + event[:len(event) // 2])
        handler.wfile.flush()
        handler.connection.shutdown(socket.SHUT_RDWR)

    with fault_fails_the_call(server, cut, TransportError, 2.0, match="No response received",
                              label="http: chunked encoding cut mid-event"):
        pass


def test_an_event_nested_past_the_parser_limit_is_skipped(server: McpHttpServer) -> None:
    """Before the fix its RecursionError failed the request, and the valid response right
    after it on the same stream was lost."""
    def deep_then_answer(handler: Any, message: Dict[str, Any]) -> None:
        handler.start_events({"Connection": "close"})
        handler.write_raw(b"data: " + b"[" * 100_000 + b"]" * 100_000 + b"\n\n")
        handler.write_event(response_to(message, "after the deep event"))
        handler.end_events()

    assert_fault_answers(server, deep_then_answer, "after the deep event", 5.0,
                         label="http: SSE event nested 100,000 deep",
                         observed="skipped; the next event answered")


def test_a_json_body_nested_past_the_parser_limit(server: McpHttpServer) -> None:
    def deep(handler: Any, message: Dict[str, Any]) -> None:
        handler.send_status(200, b"[" * 100_000 + b"]" * 100_000, {"Connection": "close"})

    with fault_fails_the_call(server, deep, ProtocolError, 2.0, match="not valid JSON",
                              label="http: JSON body nested 100,000 deep"):
        pass


# -- messages over max_message_size --------------------------------------------------------

MIB = 1024 * 1024
HUGE = 100 * 1000 * 1000  # what the server tries to send
# What the kernel may buffer between the two ends of a loopback connection (the client's
# receive buffer, the server's send buffer, at their largest): on top of the bound, the
# most a server can write before a client that stopped reading makes it fail.
SOCKET_BUFFERS = 16 * MIB


class HugeWriter:
    """A post hook's writer of one huge message; records how much of it went out."""

    def __init__(self) -> None:
        self.written = 0
        self.done = threading.Event()

    def write(self, handler: Any, head: bytes, chunked: bool) -> None:
        """``head``, then ``HUGE`` bytes of ``x``, in 1 MiB writes until the client hangs up."""
        block = b"x" * MIB
        try:
            for index, piece in enumerate([head] + [block] * (HUGE // MIB)):
                if chunked:
                    handler.write_raw(piece)
                else:
                    handler.wfile.write(piece)
                self.written += len(piece)
                if index % 8 == 0 and handler.mcp.stopping.is_set():
                    return
        finally:
            self.done.set()


def response_head(message: Dict[str, Any]) -> bytes:
    """The start of a response to ``message`` whose text then runs on and on."""
    return (b'{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"'
            % json.dumps(message["id"]).encode())


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_a_json_body_over_max_message_size(server: McpHttpServer, framing: str) -> None:
    """The call fails at once and the connection is dropped: before, the whole body was
    read into memory, whatever its size (and then failed as invalid JSON)."""
    writer = HugeWriter()

    def huge(handler: Any, message: Dict[str, Any]) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        if framing == "chunked":
            handler.send_header("Transfer-Encoding", "chunked")
        else:
            handler.send_header("Content-Length", str(HUGE + 100))
        handler.end_headers()
        writer.write(handler, response_head(message), chunked=framing == "chunked")

    with fault_fails_the_call(
            server, huge, MessageTooLarge, 2.0, timeout=30,
            transport_kwargs={"max_message_size": MIB},
            match="longer than max_message_size=1048576",
            label=f"http: a 100 MB JSON body ({framing}; max_message_size 1 MiB)") as outcome:
        error = outcome.error
        assert isinstance(error, MessageTooLarge) and error.limit == MIB
        assert writer.done.wait(WAIT), "the server is still writing: the client reads on"
        assert writer.written < MIB + SOCKET_BUFFERS, writer.written


def test_an_event_over_max_message_size(server: McpHttpServer) -> None:
    """The call fails at once and its stream is dropped: before, the event was assembled
    in memory whatever its size."""
    writer = HugeWriter()

    def huge(handler: Any, message: Dict[str, Any]) -> None:
        handler.start_events()
        handler.write_event(None, event_id="s1-0")
        writer.write(handler, b"data: " + response_head(message), chunked=True)

    with fault_fails_the_call(server, huge, MessageTooLarge, 2.0, timeout=30,
                              transport_kwargs={"max_message_size": MIB},
                              match="an event on the stream of tools/call",
                              label="http: a 100 MB event (max_message_size 1 MiB)") as outcome:
        assert outcome.error.request_id is not None  # type: ignore[attr-defined]
        assert writer.done.wait(WAIT), "the server is still writing: the client reads on"
        assert writer.written < MIB + SOCKET_BUFFERS, writer.written


# -- redirects: no credential crosses origins ---------------------------------------------


def test_a_redirect_to_another_origin_is_not_followed(
        server: McpHttpServer, other_origin: McpHttpServer) -> None:
    def redirect(handler: Any, message: Dict[str, Any]) -> None:
        handler.send_status(307, b"", {"Location": other_origin.url, "Connection": "close"})

    with fault_fails_the_call(server, redirect, TransportError, 2.0, headers=SECRET_HEADERS,
                              label="http: 307 to another origin",
                              match="refusing to follow a redirect") as outcome:
        assert other_origin.url in str(outcome.error)
    assert other_origin.requests == []  # nothing at all went there: no header, no body


def test_a_redirect_to_another_origin_on_initialize(
        server: McpHttpServer, other_origin: McpHttpServer) -> None:
    def hook(handler: Any, message: Any) -> bool:
        handler.send_status(308, b"", {"Location": other_origin.url, "Connection": "close"})
        return True

    server.post_hook = hook
    with expect(TransportError, 3.0, fault="http: 308 to another origin on initialize",
                match="refusing to follow a redirect"):
        connect(server.url, headers=SECRET_HEADERS)
    assert other_origin.requests == []


def test_a_redirect_within_the_origin_is_followed(server: McpHttpServer) -> None:
    def hook(handler: Any, message: Any) -> bool:
        if handler.path != "/mcp" or not isinstance(message, dict) or (
                message.get("method") != "tools/call"):
            return False
        handler.send_status(307, b"", {"Location": "/mcp/"})
        return True

    server.post_hook = hook
    with connect(server.url, headers=SECRET_HEADERS) as client:
        assert client.call_tool("echo", {"text": "moved"}).text == "moved"
    calls = server.matching(lambda r: r.rpc_method == "tools/call")
    assert [(r.path, r.header("x-api-key")) for r in calls] == [
        ("/mcp", "secret-key"), ("/mcp/", "secret-key")]


# -- the server goes away -------------------------------------------------------------------


def test_an_error_status_on_initialize() -> None:
    with McpHttpServer(echo_fake("http-faults")) as server:
        def hook(handler: Any, message: Any) -> bool:
            handler.send_status(503, b"<html>maintenance</html>", content_type="text/html")
            return True

        server.post_hook = hook
        with expect(HTTPError, 3.0, fault="http: 503 on initialize", match="maintenance"):
            connect(server.url)


@contextmanager
def closed_quickly(client: mcp_sync.Client, bound: float = 3.0) -> Iterator[mcp_sync.Client]:
    """Yields ``client``; closing it at the end (whatever happened) takes less than
    ``bound`` seconds, though its server may be gone."""
    try:
        yield client
    finally:
        start = time.monotonic()
        client.close()
        assert time.monotonic() - start < bound


def test_the_server_process_killed_mid_session() -> None:
    with HttpServerProcess() as server, closed_quickly(connect(server.url)) as client:
        assert_usable(client)
        pending = client.call_tool_future("echo", {"text": "in flight?"}, timeout=30)
        pending.result(WAIT)
        server.process.kill()  # every socket of the server closes with it
        server.process.wait(WAIT)
        with expect(TransportError, 3.0, fault="http: server process SIGKILLed mid-session",
                    match="cannot reach"):
            client.call_tool("echo", {"text": "anyone?"}, timeout=5.0)


def test_the_server_process_killed_while_a_call_waits_on_its_event_stream() -> None:
    """The stream breaks; resuming it finds the port refused: the server is gone, and the
    call fails at the first attempt (the default retry_delay: 1 s). Before, the resumption
    backoff ran its course against the refused port: 1 + 2 + 4 s."""
    with HttpServerProcess(reply="sse") as server:
        transport = HttpTransport(server.url, close_timeout=1.0)  # the default backoff
        client = mcp_sync.Client(transport, timeout=5.0, protocol_version=PINNED,
                                 close_timeout=1.0).connect()
        with closed_quickly(client):
            holding = threading.Event()
            pending = client.call_tool_future("hold", timeout=30,
                                              on_progress=lambda *args: holding.set())
            assert holding.wait(WAIT)  # its stream is open, past its priming event
            server.process.kill()
            server.process.wait(WAIT)
            with expect(TransportError, 2.0, match="refused the connection to resume",
                        fault="http: server SIGKILLed while a call waits on its event stream"):
                pending.result(WAIT)


# -- kept-alive connections the server closed ----------------------------------------------


def call_body(request_id: int, text: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                       "params": {"name": "echo", "arguments": {"text": text}}}).encode()


def echoed(response: Any) -> str:
    """The text of an echo answered on a connection used directly: urllib3 2's response
    (preloaded, ``data``), or under urllib3 1.x the ``http.client`` one (read here)."""
    body = response.data if hasattr(response, "data") else response.read()
    text: str = json.loads(body)["result"]["content"][0]["text"]
    return text


@contextmanager
def kept_alive_then_closed(server: KeepAliveServer, how: str
                           ) -> Iterator[_TrackedHTTPConnection]:
    """The transport's connection class, used directly: one echo ("first", id 1) answered
    on it, then the server closes it idle (``how``: "fin" or "rst") and the close has
    arrived (the socket is readable). Yields the connection; closes it at the end."""
    connection = _TrackedHTTPConnection("127.0.0.1", server.port, timeout=WAIT)
    try:
        connection.request("POST", "/mcp", body=call_body(1, "first"))
        assert echoed(connection.getresponse()) == "first"
        server.close_idle(how)
        assert select.select([connection.sock], [], [], WAIT)[0]
        yield connection
    finally:
        connection.close()


@pytest.mark.parametrize("how", ["fin", "rst"])
def test_a_kept_alive_connection_the_server_closed_is_not_written_to(how: str) -> None:
    """The next call goes out once, on a new connection. urllib3 checks a pooled socket
    before reusing it (readable: the server's close or reset has arrived); this guards
    the whole path, with the transport's own connection classes."""
    with KeepAliveServer(PINNED) as server:
        transport = HttpTransport(server.url, listen=False, close_timeout=1.0)
        with mcp_sync.Client(transport, timeout=5.0, protocol_version=PINNED,
                             close_timeout=1.0).connect() as client:
            assert_usable(client, "first")
            assert server.close_idle(how) >= 1
            with timed(2.0, fault=f"http: an idle kept-alive connection closed ({how.upper()})",
                       observed="the next call on a new connection"):
                assert_usable(client, "second")
        calls = server.messages("tools/call")
        assert [m["params"]["arguments"]["text"] for _, m in calls] == ["first", "second"]
        assert calls[1][0] > calls[0][0]


def test_a_connection_is_not_reused_near_the_end_of_the_servers_keep_alive() -> None:
    """The server says ``Keep-Alive: timeout=2`` and closes a connection idle that long,
    reading nothing in its last 0.8 s (as when its close is already on the wire): a
    call sent then crosses the close and meets a reset, after its bytes went out, so it
    cannot be sent again. The client reuses a connection for at most 1 s of idleness
    (2 s less a second); before, it reused it and the call failed."""
    with KeepAliveServer(PINNED, keep_alive=2, deaf=0.8) as server:
        transport = HttpTransport(server.url, listen=False, close_timeout=1.0)
        with mcp_sync.Client(transport, timeout=5.0, protocol_version=PINNED,
                             close_timeout=1.0).connect() as client:
            assert_usable(client, "first")
            assert_usable(client, "at once")
            # Idle into the server's last 0.8 s: the clock is what this test is about.
            time.sleep(1.5)
            assert_usable(client, "after 1.5 s")
        calls = server.messages("tools/call")
        numbers = [number for number, _ in calls]
        assert numbers[0] == numbers[1] < numbers[2], calls  # reused at once, not then
        assert server.crossed == 0


@pytest.mark.parametrize(("header", "window"), [
    ("timeout=5", 4.0), ("timeout=5, max=1000", 4.0), ("max=100, Timeout = 15", 14.0),
    ("timeout=1", 0.5), ("timeout=1.9", 0.5), ("timeout=0", 0.0),
    (None, None), ("", None), ("max=100", None), ("timeouts=5", None), ("timeout=soon", None),
    ("x" * 300 + "timeout=5", None),  # past the 200 characters looked at
])
def test_the_reuse_window_of_a_keep_alive_header(header: Any, window: Any) -> None:
    assert reuse_window(header) == window


def test_a_request_whose_first_write_fails_on_a_reused_connection_goes_on_a_new_one() -> None:
    """The window urllib3's check cannot close: a reset arrives after the pooled socket
    was checked, before the request is written. The first write fails, so not one byte
    went out: the request is written on a new connection. Before, it failed."""
    with KeepAliveServer(PINNED) as server:
        # The reset has arrived: the socket the request will be written to is dead.
        with kept_alive_then_closed(server, "rst") as connection:
            connection.request("POST", "/mcp", body=call_body(2, "second"))
            assert echoed(connection.getresponse()) == "second"
        calls = server.messages("tools/call")
        assert [(number, m["id"]) for number, m in calls] == [(1, 1), (2, 2)]


def test_a_request_written_into_a_closing_connection_is_not_sent_again() -> None:
    """The server's close (FIN) had arrived, but a half-closed socket still takes the
    request: bytes went out, and nothing tells this server from one that read them and
    failed. The request fails; it is never written again."""
    with KeepAliveServer(PINNED) as server:
        with kept_alive_then_closed(server, "fin") as connection, pytest.raises(
                (OSError, http.client.HTTPException)):
            # The headers go out; the server resets; the body's write or the read of
            # the reply fails (urllib3 would read on after a broken pipe).
            connection.request("POST", "/mcp", body=call_body(2, "second"))
            connection.getresponse()
        assert server.connections == 1
        assert [m["id"] for _, m in server.messages("tools/call")] == [1]


# -- legacy HTTP+SSE -------------------------------------------------------------------------


def legacy(url: str, **kwargs: Any) -> mcp_sync.Client:
    transport = SseTransport(url, headers=SECRET_HEADERS, connect_timeout=3.0,
                             close_timeout=1.0)
    return mcp_sync.Client(transport, timeout=5.0, protocol_version="2024-11-05",
                           **kwargs).connect()


@pytest.mark.parametrize("endpoint", ["other", "scheme-relative", "https"])
def test_a_legacy_endpoint_on_another_origin_is_refused(
        other_origin: McpHttpServer, endpoint: str) -> None:
    port = other_origin.port
    with LegacySseServer(echo_fake("http-faults")) as server:
        server.endpoint = {
            "other": lambda sid: f"{other_origin.url}?sessionId={sid}",
            "scheme-relative": lambda sid: f"//127.0.0.1:{port}/mcp?sessionId={sid}",
            "https": lambda sid: f"https://127.0.0.1:{server.port}/messages?sessionId={sid}",
        }[endpoint]
        with expect(ProtocolError, 4.0, fault=f"legacy sse: endpoint event on another origin "
                                              f"({endpoint})", match="refusing the endpoint"):
            legacy(server.url)
    assert other_origin.requests == []


def test_a_legacy_stream_redirected_to_another_origin(other_origin: McpHttpServer) -> None:
    with LegacySseServer(echo_fake("http-faults")) as server:
        server.get_status = 307
        server.get_headers = {"Location": other_origin.url}
        with expect(TransportError, 4.0, fault="legacy sse: GET redirected to another origin",
                    match="refusing to follow a redirect"):
            legacy(server.url)
    assert other_origin.requests == []


def test_a_legacy_post_redirected_to_another_origin(other_origin: McpHttpServer) -> None:
    with LegacySseServer(echo_fake("http-faults")) as server:
        client = legacy(server.url)
        try:
            client.list_tools()  # a first call would list them itself, before the fault
            server.post_status = 307
            server.post_headers = {"Location": other_origin.url}
            with expect(TransportError, 2.0, fault="legacy sse: POST redirected to another "
                        "origin", match="refusing to follow a redirect"):
                client.call_tool("echo", {"text": "x"})
            server.post_status = None
            assert_usable(client)
        finally:
            client.close()
    assert other_origin.requests == []


def test_a_legacy_event_over_max_message_size() -> None:
    """The call it answers fails at once (its id starts the event); the stream is dropped,
    so the other call fails with ConnectionClosed. Before, the event was read whole."""
    with LegacySseServer(echo_fake("http-faults")) as server:
        transport = SseTransport(server.url, connect_timeout=3.0, close_timeout=1.0,
                                 max_message_size=64 * 1024)
        client = mcp_sync.Client(transport, timeout=5.0, protocol_version="2024-11-05")
        client.connect()
        try:
            client.list_tools()  # a first call would list them itself, before the fault
            server.post_status = 202  # accepted, never answered
            answered = client.call_tool_future("echo", {"text": "x"}, timeout=30)
            other = client.call_tool_future("echo", {"text": "y"}, timeout=30)
            head = response_head({"id": answered.request_id})  # type: ignore[attr-defined]
            server.send_raw("event: message\ndata: " + head.decode() + "x" * MIB + '"}]}}\n\n')
            with expect(MessageTooLarge, 2.0, match="max_message_size=65536",
                        fault="legacy sse: a 1 MB event (max_message_size 64 KiB)") as outcome:
                answered.result(WAIT)
            assert outcome.error.request_id == answered.request_id  # type: ignore[attr-defined]
            with expect(ConnectionClosed, 2.0):
                other.result(WAIT)
            assert_reports_closed(client)
        finally:
            client.close()


def test_a_legacy_stream_that_ends_mid_request(other_origin: McpHttpServer) -> None:
    with LegacySseServer(echo_fake("http-faults")) as server:
        client = legacy(server.url)
        try:
            client.list_tools()  # a first call would list them itself, before the fault
            server.post_status = 202  # accepted, never answered
            pending = client.call_tool_future("echo", {"text": "x"}, timeout=30)
            server.end_streams()
            with expect(ConnectionClosed, 2.0, fault="legacy sse: stream ends mid-request"):
                pending.result(WAIT)
            assert_reports_closed(client)
        finally:
            client.close()
