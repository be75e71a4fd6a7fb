"""SSE parsing: the incremental decoder of ``mcp_sync/transports/http/_sse.py``.

Over real sockets, against the threaded servers of ``tests/servers/`` (Streamable HTTP and
legacy HTTP+SSE): the decoder keeps the ID and ``retry`` of a priming event without data,
strips a BOM, joins a ``\\r\\n`` split between reads, replaces invalid UTF-8 and parses an
event of many lines in linear time; and it is the only SSE parser: no third-party one is
ever imported.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
import threading
from typing import Any, Dict, Iterator, List

import pytest

import mcp_sync
from mcp_sync import HttpTransport, ProtocolError, SseTransport
from mcp_sync.transports.http._sse import SSEDecoder

from ..conftest import PY, ROOT
from ..helpers import assert_get_stream_resumes
from ..servers.http_server import McpHttpServer, Recorded, echo_fake
from ..servers.legacy_sse_server import LegacySseServer

WAIT = 10.0  # the bound for anything a test waits on; nothing should come near it
BOM = b"\xef\xbb\xbf"


@pytest.fixture
def server() -> Iterator[McpHttpServer]:
    with McpHttpServer(echo_fake("sse-parse")) as running:
        yield running


def connect(server: McpHttpServer, retry_delay: float = 1.0, **client_kwargs: Any,
            ) -> mcp_sync.Client:
    transport = HttpTransport(server.url, close_timeout=2.0, retry_delay=retry_delay)
    return mcp_sync.Client(transport, timeout=WAIT, close_timeout=2.0,
                           **client_kwargs).connect()


def response_to(message: Dict[str, Any], text: str) -> Dict[str, Any]:
    return {"jsonrpc": "2.0", "id": message["id"],
            "result": {"content": [{"type": "text", "text": text}]}}


def on_call(server: McpHttpServer, reply: Any) -> None:
    """``reply(handler, message)`` writes the whole SSE reply to every ``tools/call``."""

    def hook(handler: Any, message: Any) -> bool:
        if not (isinstance(message, dict) and message.get("method") == "tools/call"):
            return False
        handler.close_connection = True
        handler.start_events()
        reply(handler, message)
        handler.end_events()
        return True

    server.post_hook = hook


def pace(handler: Any) -> None:
    """A pause between two HTTP chunks, so that the client most likely reads them apart."""
    handler.mcp.stopping.wait(0.05)


def resumptions(server: McpHttpServer, prefix: str = "s") -> List[Recorded]:
    """The GETs that resumed a request's stream (its ids start with ``s``)."""
    return server.matching(lambda r: r.method == "GET"
                           and (r.header("Last-Event-ID") or "").startswith(prefix))


# -- one parser ------------------------------------------------------------------------------


def test_sse_replies_are_parsed_by_the_decoder_alone() -> None:
    """A JSON reply and an SSE reply, in a fresh interpreter: the events are parsed by
    ``SSEDecoder`` (counted), and no third-party SSE parser (sseclient-py) is imported,
    neither by ``import mcp_sync`` nor by the replies."""
    with McpHttpServer(echo_fake("json"), reply="json") as json_server, \
            McpHttpServer(echo_fake("sse")) as sse_server:
        code = textwrap.dedent(f"""
            import sys
            import mcp_sync
            from mcp_sync.transports.http import _sse
            fed = []
            feed = _sse.SSEDecoder.feed
            _sse.SSEDecoder.feed = lambda self, chunk: fed.append(len(chunk)) or feed(self, chunk)
            print('sseclient' in sys.modules, len(fed) > 0)
            with mcp_sync.connect({json_server.url!r}, timeout=10) as client:
                assert client.call_tool('echo', {{'text': 'json'}}).text == 'json'
            calls = len(fed)
            with mcp_sync.connect({sse_server.url!r}, timeout=10) as client:
                assert client.call_tool('echo', {{'text': 'sse'}}).text == 'sse'
            print('sseclient' in sys.modules, len(fed) > calls)
        """)
        out = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=60,
                             cwd=str(ROOT))
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["False", "False", "False", "True"]


# -- priming events: an id and a retry, no data ----------------------------------------------


def test_a_priming_event_without_data_is_resumed_from(server: McpHttpServer) -> None:
    server.priming_data = False  # "id: s2-0\nretry: 10\n\n": no data, an ID to resume from
    server.retry_ms = 10
    with connect(server) as client:
        client.list_tools()  # so that the call's is the next request (it lists them first)
        server.break_streams = 1  # the stream ends right after its priming event
        assert client.call_tool("echo", {"text": "resumed"}).text == "resumed"
    resumes = resumptions(server)
    assert len(resumes) == 1
    assert (resumes[0].header("Last-Event-ID") or "").endswith("-0")  # the priming event's


def test_the_retry_of_a_priming_event_without_data_is_honoured(server: McpHttpServer) -> None:
    server.priming_data = False
    server.retry_ms = 400
    # Without the server's retry the transport would come back after 10 ms.
    with connect(server, retry_delay=0.01) as client:
        client.list_tools()  # so that the call's is the next request (it lists them first)
        server.break_streams = 1
        assert client.call_tool("echo", {"text": "after 400 ms"}).text == "after 400 ms"
    call = server.matching(lambda r: r.rpc_method == "tools/call")[0]
    resumes = resumptions(server)
    assert len(resumes) == 1
    assert resumes[0].time - call.time >= 0.39


def test_a_dropped_get_stream_resumes_after_a_priming_event_without_data(
        server: McpHttpServer) -> None:
    server.priming_data = False
    server.retry_ms = 20
    assert_get_stream_resumes(server, lambda **kwargs: connect(server, **kwargs), WAIT)


def test_the_id_of_an_event_cut_short_is_not_resumed_from(server: McpHttpServer) -> None:
    """An ID counts once its event is received whole: resuming after the ID of an event
    cut short would tell the server it arrived, and the response in it would be lost."""
    server.retry_ms = 10
    with connect(server) as client:
        client.list_tools()  # so that the call's is the next request (it lists them first)
        server.cut_events = True  # "id: s2-1\ndata: {half of the response" then the end
        server.break_streams = 1
        assert client.call_tool("echo", {"text": "whole"}).text == "whole"
    resumes = resumptions(server)
    assert len(resumes) == 1
    assert (resumes[0].header("Last-Event-ID") or "").endswith("-0")


# -- what the decoder does with the bytes ----------------------------------------------


def test_a_byte_order_mark_split_across_chunks(server: McpHttpServer) -> None:
    def reply(handler: Any, message: Dict[str, Any]) -> None:
        body = BOM + handler.event_bytes(response_to(message, "after a BOM"))  # "data: ..."
        handler.write_raw(body[:2])  # the BOM cut in two
        pace(handler)
        handler.write_raw(body[2:])

    on_call(server, reply)
    with connect(server) as client:
        assert client.call_tool("echo", {"text": "x"}).text == "after a BOM"


def test_crlf_line_ends_split_across_chunks(server: McpHttpServer) -> None:
    def reply(handler: Any, message: Dict[str, Any]) -> None:
        text = json.dumps(response_to(message, "crlf"))
        cut = text.index('"result"')  # two data lines, joined by "\n": still JSON
        body = f"id: c-1\r\ndata: {text[:cut]}\r\ndata: {text[cut:]}\r\n\r\n".encode()
        pieces = body.split(b"\r\n")
        # Every \r\n split: "...\r" in one chunk, "\n..." in the next.
        handler.write_raw(pieces[0] + b"\r")
        for piece in pieces[1:-1]:
            pace(handler)
            handler.write_raw(b"\n" + piece + b"\r")
        pace(handler)
        handler.write_raw(b"\n")

    on_call(server, reply)
    with connect(server) as client:
        assert client.call_tool("echo", {"text": "x"}).text == "crlf"


def test_invalid_utf8_is_replaced_not_fatal(server: McpHttpServer) -> None:
    def reply(handler: Any, message: Dict[str, Any]) -> None:
        handler.write_raw(b'data: {"jsonrpc": "2.0", "method": "notifications/message", '
                          b'"params": {"level": "info", "data": "bad \xff byte"}}\n\n')
        handler.write_event(response_to(message, "still parsed"))

    on_call(server, reply)
    logged: List[Any] = []
    with connect(server, logging_handler=lambda params: logged.append(params.data)) as client:
        assert client.call_tool("echo", {"text": "x"}).text == "still parsed"
    assert logged == ["bad \ufffd byte"]


def test_an_event_of_many_lines_is_parsed_whole_in_linear_time(server: McpHttpServer) -> None:
    """A notification of 8 MiB in 40,000 ``data`` lines (JSON may break lines anywhere
    between its tokens), then the response: the notification reaches its handler whole,
    and the call returns well within its timeout (a parser that re-copied the event per
    line, as sseclient-py did, would copy about 160 GB: minutes)."""
    items = ["x" * 200] * 40_000

    def reply(handler: Any, message: Dict[str, Any]) -> None:
        note = {"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": items}}
        lines = json.dumps(note, indent=0).split("\n")
        assert len(lines) > 40_000
        handler.write_raw(b"".join(b"data: " + line.encode() + b"\n" for line in lines)
                          + b"\n")
        handler.write_event(response_to(message, "after the long event"))

    on_call(server, reply)
    logged: List[Any] = []
    with connect(server, logging_handler=lambda params: logged.append(params.data)) as client:
        assert client.call_tool("echo", {"text": "x"}, timeout=WAIT).text == (
            "after the long event")
    assert logged == [items]


def test_events_of_thousands_of_lines_are_kept_whole() -> None:
    """About 800 KiB in 400 lines and 10 MiB in 5,000 lines: each is returned, its data
    lines joined with ``\\n``, its ID counted."""
    def event(lines: int) -> bytes:
        return b"".join(b"data: " + b"y" * (2048 - 7) + b"\n" for _ in range(lines)) + b"\n"

    kept = SSEDecoder().feed(b"id: 1\n" + event(400))
    assert len(kept) == 1 and len(kept[0].data) == 400 * (2048 - 7) + 399
    decoder = SSEDecoder()
    [large] = decoder.feed(b"id: 2\n" + event(5000))
    assert large.data == "\n".join(["y" * (2048 - 7)] * 5000) and large.id == "2"
    assert decoder.last_event_id == "2"


def test_events_arriving_in_one_chunk_are_returned_in_order() -> None:
    """Several events (and the start of the next) in one read: each is returned, in wire
    order, and the unfinished one waits for its blank line."""
    decoder = SSEDecoder()
    events = decoder.feed(b"id: 1\ndata: first\n\nevent: note\ndata: second\n\n"
                          b"id: 3\ndata: third\n\ndata: fou")
    assert [(e.data, e.event, e.id) for e in events] == [
        ("first", "message", "1"), ("second", "note", "1"), ("third", "message", "3")]
    assert [e.data for e in decoder.feed(b"rth\n\n")] == ["fourth"]


def test_events_arriving_in_one_chunk_are_delivered_in_order_over_http(
        server: McpHttpServer) -> None:
    """Two notifications and the response in one HTTP chunk, through HttpTransport over a
    real socket: the transport hands all three to the session, in wire order, and marks
    only the first as its stream's first (the response behind them must wait for them)."""
    def reply(handler: Any, message: Dict[str, Any]) -> None:
        notes = [{"jsonrpc": "2.0", "method": "notifications/message",
                  "params": {"level": "info", "data": f"note {n}"}} for n in (1, 2)]
        handler.write_raw(b"".join(handler.event_bytes(m) for m in notes)
                          + handler.event_bytes(response_to(message, "last")))

    on_call(server, reply)
    received: List[Any] = []
    firsts: List[bool] = []
    all_in = threading.Event()

    def on_message(message: Any, first: bool = False) -> None:
        received.append(message)
        firsts.append(first)
        if len(received) == 3:
            all_in.set()

    transport = HttpTransport(server.url, close_timeout=2.0, listen=False)
    transport.start(on_message, lambda error: None, lambda request_id, error: None)
    try:
        transport.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": {"name": "echo", "arguments": {"text": "x"}}})
        assert all_in.wait(WAIT), received
    finally:
        transport.close()
    assert [m.get("params", {}).get("data") for m in received[:2]] == ["note 1", "note 2"]
    assert received[2]["id"] == 1 and received[2]["result"]["content"][0]["text"] == "last"
    assert len(received) == 3
    assert firsts == [True, False, False]


# -- the legacy HTTP+SSE transport reads with the same decoder ---------------------------


@pytest.fixture
def legacy() -> Iterator[LegacySseServer]:
    with LegacySseServer(echo_fake("legacy-parse")) as running:
        yield running


def test_legacy_stream_starting_with_a_byte_order_mark(legacy: LegacySseServer) -> None:
    legacy.preamble = BOM  # right before "event: endpoint"
    with mcp_sync.connect(legacy.url, transport="sse", timeout=WAIT) as client:
        assert client.call_tool("echo", {"text": "bom"}).text == "bom"


def test_legacy_endpoint_event_without_data_is_reported(legacy: LegacySseServer) -> None:
    """An event without data is reported to the legacy transport (``include_empty``): it
    must see this one to say what is wrong, rather than wait for an endpoint until its
    timeout."""
    legacy.endpoint = lambda sid: None
    legacy.preamble = b"event: endpoint\n\n"
    with pytest.raises(ProtocolError, match="invalid endpoint event"):  # not a timeout
        mcp_sync.Client(SseTransport(legacy.url, connect_timeout=WAIT), timeout=WAIT).connect()


def test_legacy_10_mib_message(legacy: LegacySseServer) -> None:
    text = "0123456789abcdef" * (10 * 1024 * 1024 // 16)
    with mcp_sync.connect(legacy.url, transport="sse", timeout=60) as client:
        assert client.call_tool("echo", {"text": text}, timeout=60).text == text
