"""Bounds count what is decoded (issue 19 §3): gzip bombs over real HTTP.

A Streamable HTTP server on 127.0.0.1 answers a call with ``Content-Encoding: gzip``: about
1 MiB on the wire that inflates to 1 GiB (a JSON body, or one SSE ``data:`` line never
ended by a blank line). The default ``max_message_size`` (64 MiB) counts the decoded
bytes: the call fails at once with ``MessageTooLarge``, the process's peak grows by about
the bound (inflating goes only as far as it is read), and the next call works. A gzip
reply within the bound, in several gzip members, arrives whole. And the bound under both:
one read of a single-member bomb inflates no more than the read asked for.
"""

from __future__ import annotations

import gzip
import json
import time
import zlib
from typing import Any, Iterator

import pytest
import requests

import mcp_sync
from mcp_sync import HttpTransport, MessageTooLarge
from mcp_sync.transports.http._bodies import decoded_reader

from ..faults.workloads import PINNED, memory_kib, reset_peak_memory
from ..servers.http_server import McpHttpServer, echo_fake

MIB = 1 << 20
DEFAULT_BOUND = 64 * MIB
# 1 MiB of spaces is about 1 KiB of gzip; members may follow one another (RFC 1952).
SPACES_MEMBER = gzip.compress(b" " * MIB, 9)
BOMB_MIB = 1024  # inflates to 1 GiB


@pytest.fixture
def server() -> Iterator[McpHttpServer]:
    with McpHttpServer(echo_fake("bombs"), reply="json") as running:
        yield running


def connect(server: McpHttpServer) -> mcp_sync.Client:
    transport = HttpTransport(server.url, close_timeout=2.0, listen=False)
    return mcp_sync.Client(transport, timeout=30.0, close_timeout=2.0,
                           protocol_version=PINNED).connect()


def response_start(message: Any) -> bytes:
    return (b'{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"'
            % json.dumps(message["id"]).encode())


def on_tool(server: McpHttpServer, name: str, reply: Any) -> None:
    def hook(handler: Any, message: Any) -> bool:
        if not (isinstance(message, dict) and message.get("method") == "tools/call"
                and (message.get("params") or {}).get("name") == name):
            return False
        handler.close_connection = True
        try:
            reply(handler, message)
        except OSError:
            pass  # the client hung up: what it should do past the bound
        return True

    server.post_hook = hook


def send_json_gzip(handler: Any, members: bytes) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Encoding", "gzip")
    handler.send_header("Content-Length", str(len(members)))  # 1 MiB: under any bound
    handler.end_headers()
    handler.wfile.write(members)


@pytest.mark.parametrize("reply", ["json", "event"])
def test_a_gzip_bomb_fails_its_call_at_the_decoded_bound_in_bounded_memory(
        server: McpHttpServer, reply: str) -> None:
    """Before, with urllib3 < 2.6 (which pyproject.toml allows), one read of the body inflated
    whatever raw bytes it got: the JSON bomb took 2.1 GiB and 13 s, the SSE one 215 MiB
    and 35 s; with urllib3 2.7 the JSON body still took twice the bound (144 MiB)."""
    def bomb(handler: Any, message: Any) -> None:
        start = response_start(message)
        if reply == "json":
            send_json_gzip(handler, gzip.compress(start) + SPACES_MEMBER * BOMB_MIB)
            return
        handler.start_events({"Content-Encoding": "gzip"})
        handler.write_raw(gzip.compress(b"data: " + start))
        for _ in range(BOMB_MIB // 64):  # a data: line never ended, 64 MiB per chunk
            handler.write_raw(SPACES_MEMBER * 64)
        handler.end_events()

    on_tool(server, "bomb", bomb)
    with connect(server) as client:
        assert client.call_tool("echo", {"text": "warm"}).text == "warm"
        reset_peak_memory()
        before = memory_kib()["VmRSS"]
        started = time.monotonic()
        with pytest.raises(MessageTooLarge) as info:
            client.call_tool("bomb", {}, timeout=30.0)
        elapsed = time.monotonic() - started
        growth_mib = (memory_kib()["VmHWM"] - before) / 1024
        assert elapsed < 5.0, elapsed  # at once, not at the 30 s deadline
        assert "max_message_size=67108864" in str(info.value)
        assert info.value.request_id is not None  # the call itself failed
        assert growth_mib < 64 + 40, f"peak grew by {growth_mib:.0f} MiB"
        assert client.call_tool("echo", {"text": "after"}).text == "after"


@pytest.mark.parametrize("reply", ["json", "event"])
def test_a_gzip_reply_in_many_members_arrives_whole(server: McpHttpServer, reply: str) -> None:
    text = "abc " * 50_000  # 200 KB, over several reads and members
    def answer(handler: Any, message: Any) -> None:
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"],
                           "result": {"content": [{"type": "text", "text": text}]}}).encode()
        if reply == "event":
            body = b"data: " + body + b"\n\n"
        third = len(body) // 3
        members = b"".join(gzip.compress(body[i:i + third])
                           for i in range(0, len(body), third))
        if reply == "json":
            send_json_gzip(handler, members)
            return
        handler.start_events({"Content-Encoding": "gzip"})
        for i in range(0, len(members), 1000):  # the members cut across HTTP chunks
            handler.write_raw(members[i:i + 1000])
        handler.end_events()

    on_tool(server, "zipped", answer)
    with connect(server) as client:
        assert client.call_tool("zipped", {}).text == text
        assert server.requests[-1].header("Accept-Encoding") == "gzip, deflate"


def single_member_bomb(mib: int) -> bytes:
    """One gzip member inflating to ``mib`` MiB of spaces (about 1 KiB of gzip per MiB),
    compressed a MiB at a time: the test never holds what it inflates to."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = b" " * MIB
    return b"".join([compressor.compress(chunk) for _ in range(mib)] + [compressor.flush()])


def test_one_read_of_a_single_member_bomb_inflates_only_what_it_asks(
        server: McpHttpServer) -> None:
    """The per-read limit itself (zlib's max_length). The bombs above are made of 1 MiB
    members, and zlib stops at each member's end anyway; a single 256 MiB member is not:
    without the limit, the first read(65536) inflated the first 64 KiB of gzip whole
    (67 MB)."""
    bomb = single_member_bomb(256)
    on_tool(server, "bomb", lambda handler, message: send_json_gzip(handler, bomb))
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "bomb"}}
    with requests.post(server.url, json=call, stream=True, timeout=10.0) as response:
        assert response.headers["Content-Encoding"] == "gzip"
        read = decoded_reader(response)
        pieces = [read(65536) for _ in range(3)]
    # However the raw bytes arrive, no read returns more than it asked for.
    assert all(0 < len(piece) <= 65536 for piece in pieces), [len(p) for p in pieces]
    assert set(b"".join(pieces)) == {ord(" ")}


def test_a_plain_json_reply_is_read_whole_and_its_connection_kept(
        server: McpHttpServer) -> None:
    """A JSON reply of a declared length, not encoded, is read in one call to its end:
    the connection goes back to the pool, and five calls in a row take one connection."""
    ports = []

    def hook(handler: Any, message: Any) -> bool:
        if isinstance(message, dict) and message.get("method") == "tools/call":
            ports.append(handler.client_address[1])
        return False  # answered as usual

    server.post_hook = hook
    with connect(server) as client:
        for n in range(5):
            assert client.call_tool("echo", {"text": f"call {n}"}).text == f"call {n}"
    assert len(ports) == 5 and len(set(ports)) == 1, ports


def test_a_declared_length_does_not_bound_a_chunked_body(server: McpHttpServer) -> None:
    """A reply that declares ``Content-Length: 64`` but is chunked (the length is then
    ignored, RFC 9112 6.3) is read to the bound, not to its end: 128 MiB of it fails the
    call at 1 MiB, and the process's peak grows by far less than the body."""
    def chunked(handler: Any, message: Any) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", "64")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        piece = b"x" * MIB
        handler.wfile.write(b"%x\r\n%s\r\n" % (len(response_start(message)),
                                                response_start(message)))
        for _ in range(128):
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        handler.wfile.write(b"0\r\n\r\n")

    on_tool(server, "chunked", chunked)
    transport = HttpTransport(server.url, close_timeout=2.0, listen=False,
                              max_message_size=MIB)
    with mcp_sync.Client(transport, timeout=30.0, close_timeout=2.0,
                         protocol_version=PINNED).connect() as client:
        assert client.call_tool("echo", {"text": "warm"}).text == "warm"
        reset_peak_memory()
        before = memory_kib()["VmRSS"]
        with pytest.raises(MessageTooLarge) as info:
            client.call_tool("chunked", {}, timeout=30.0)
        growth_mib = (memory_kib()["VmHWM"] - before) / 1024
        assert info.value.request_id is not None and info.value.limit == MIB
        assert growth_mib < 48, f"peak grew by {growth_mib:.0f} MiB"
        assert client.call_tool("echo", {"text": "after"}).text == "after"
