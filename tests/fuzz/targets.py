"""Fuzz targets: the entry points where untrusted bytes enter the client, each with the
properties it must keep. Shared by ``tests/security/test_fuzz.py`` (hypothesis) and
``tests/fuzz/atheris_harness.py`` (coverage-guided, libFuzzer).

Every target raises ``AssertionError`` when a property breaks; any other exception escaping
a target is a bug too (in the library it would kill a reader or dispatch thread).

* :func:`check_classify` - the message classifier on any JSON value.
* :func:`check_routing` - the session's delivery of one decoded message: the stdio fast
  path and the dispatch path must agree, and nothing may raise.
* :func:`check_jsonl` - the stdio reader (``StdioTransport._read_stdout``) on any bytes
  cut into any chunks: the same messages as a reference split, whatever the chunking.
* :func:`check_sse` - the SSE decoder, ``iter_events`` and the HTTP transport's event
  delivery on any bytes cut into any chunks: the same events as a reference parser.
* :func:`check_output_schema` - a server's outputSchema and a result checked against it:
  only ``ProtocolError`` (``InvalidToolSchema`` for the schema's own faults) escapes,
  with a short, printable message naming the tool.
"""

from __future__ import annotations

import io
import json
import queue
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from mcp_sync._protocol.messages import ANSWERS, Kind, classify
from mcp_sync._rpc.core import Waiter
from mcp_sync._rpc.session import RpcSession
from mcp_sync.transports.base import CloseCallback, MessageCallback, Transport
from mcp_sync.transports.http import HttpTransport
from mcp_sync.transports.http._exchange import Exchange
from mcp_sync.transports.http._sse import ServerSentEvent, SSEDecoder, iter_events
from mcp_sync.transports.stdio import StdioTransport

__all__ = ["check_classify", "check_jsonl", "check_output_schema", "check_routing",
           "check_sse", "split"]

#: Every execution of a target, by name (the figures in docs/reliability.md).
EXECUTIONS: Dict[str, int] = {}


def _count(name: str) -> None:
    EXECUTIONS[name] = EXECUTIONS.get(name, 0) + 1


def split(data: bytes, cuts: Sequence[int]) -> List[bytes]:
    """``data`` cut at the given offsets (taken modulo its length, in any order)."""
    if not data:
        return []
    points = sorted({cut % (len(data) + 1) for cut in cuts} | {0, len(data)})
    return [data[a:b] for a, b in zip(points, points[1:])]


def _is_id(value: Any) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


# -- the classifier ------------------------------------------------------------------------


def check_classify(value: Any) -> Kind:
    """``classify`` never raises, and what it says holds of the message."""
    _count("classify")
    kind = classify(value)
    assert isinstance(kind, Kind)
    if kind is Kind.INVALID:
        return kind
    assert isinstance(value, dict)
    if kind in (Kind.REQUEST, Kind.NOTIFICATION):
        assert isinstance(value.get("method"), str)
        assert value.get("params") is None or isinstance(value["params"], (dict, list))
        assert ("id" in value) is (kind is Kind.REQUEST)
        if kind is Kind.REQUEST:
            assert _is_id(value["id"])
    elif kind is Kind.RESPONSE:  # ("method": null counts as no method)
        assert value.get("method") is None and "result" in value and _is_id(value.get("id"))
        assert value.get("error") is None
    elif kind is Kind.ERROR:
        assert value.get("method") is None and "result" not in value
        code = value["error"]["code"] if isinstance(value["error"], dict) else None
        assert isinstance(code, int) and not isinstance(code, bool)
        assert value.get("id") is None or _is_id(value["id"])
    else:  # a response to a usable id, broken: its request fails with ProtocolError
        assert kind is Kind.MALFORMED_RESPONSE
        assert value.get("method") is None and _is_id(value.get("id"))
        error = value.get("error")
        code = error.get("code") if isinstance(error, dict) else None
        assert ("result" in value and error is not None) or (
            "result" not in value and not (isinstance(code, int) and not isinstance(code, bool)))
    return kind


# -- the session: fast path and dispatch path ------------------------------------------------


class _NullTransport(Transport):
    """Accepts everything, sends nowhere; one reader in wire order, like stdio."""

    single_reader = True

    def __init__(self) -> None:
        self.sent: List[Dict[str, Any]] = []

    def start(self, on_message: MessageCallback, on_close: CloseCallback) -> None:
        pass

    def send(self, message: Dict[str, Any], headers: Optional[Mapping[str, str]] = None) -> None:
        self.sent.append(message)

    def close(self) -> None:
        pass


PENDING_IDS = (1, 2, 3)


def _route_once(message: Any, fast: bool) -> Tuple[Any, ...]:
    transport = _NullTransport()
    session = RpcSession(transport, name="fuzz")
    requests: List[Any] = []
    session._pool.submit = (  # type: ignore[method-assign]
        lambda fn, *args: requests.append(args) or True)
    # The reply thread's job (answers that run no user code: ping, -32601), done here.
    session._replies.reply = transport.send  # type: ignore[method-assign,assignment]
    waiters: Dict[int, Waiter] = {}
    for _ in PENDING_IDS:
        waiter = Waiter()
        entry = session.table.open("tools/call", waiter, now=0.0, timeout=None, direct=True)
        waiters[entry.id] = waiter
    if not fast:
        session._inbox.queued = 1  # something "awaits dispatch": the reader may not resolve
    session._dispatcher.deliver(message)
    while True:
        try:
            item = session._inbox.messages.get_nowait()
        except queue.Empty:
            break
        session._dispatcher.route(item)
    for request in requests:  # the handler pool's job, done here (no threads)
        session._server_requests.answer(*request)
    resolved = {}
    for request_id, waiter in waiters.items():
        if waiter.wait(0):
            try:
                resolved[request_id] = ("result", json.dumps(waiter.outcome(), sort_keys=True))
            except Exception as exc:  # noqa: BLE001 - an error outcome is an outcome
                resolved[request_id] = ("error", type(exc).__name__)
    return (resolved, len(requests), len(session._notifications.callbacks),
            json.dumps(transport.sent, sort_keys=True))


def check_routing(message: Any) -> None:
    """One decoded message through the session: the stdio fast path (the reader resolves
    a blocked caller itself) and the dispatch path must do exactly the same, never raise,
    and settle a pending request only with a response to its id: its result or error,
    or a ``ProtocolError`` for a malformed one."""
    _count("routing")
    fast, dispatched = _route_once(message, True), _route_once(message, False)
    assert fast == dispatched, (message, fast, dispatched)
    resolved = fast[0]
    kind = classify(message)
    if kind in ANSWERS and type(message.get("id")) is int and message["id"] in PENDING_IDS:
        assert list(resolved) == [message["id"]]
        if kind is Kind.MALFORMED_RESPONSE:
            assert resolved[message["id"]] == ("error", "ProtocolError"), resolved
    else:
        assert resolved == {}, (message, resolved)


# -- the stdio framer ---------------------------------------------------------------------------


class _ChunkedRaw(io.RawIOBase):
    """A raw stream handing out exactly the given chunks, one per read (then EOF)."""

    def __init__(self, chunks: Sequence[bytes]) -> None:
        self._chunks = list(chunks)
        self._current = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if not self._current:
            if not self._chunks:
                return 0
            self._current = self._chunks.pop(0)
        size = min(len(buffer), len(self._current))
        buffer[:size] = self._current[:size]
        self._current = self._current[size:]
        return size


class _FakeProcess:
    """What the stdio reader asks of its child process (one that has exited)."""

    returncode: Optional[int] = 0

    def __init__(self, stdout: Any) -> None:
        self.stdout = stdout

    def wait(self, timeout: Optional[float] = None) -> int:
        return 0

    def poll(self) -> int:
        return 0


def jsonl_reference(data: bytes, limit: int) -> List[Any]:
    """What newline-delimited JSON ``data`` holds: one message per line; a line longer than
    ``limit`` bytes, a blank line or one that is not JSON is skipped; an array is a batch."""
    messages: List[Any] = []
    segments = data.split(b"\n")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if len(segment) > limit or not segment.strip():
            continue
        try:
            message = json.loads(segment if last else segment + b"\n")
        except (ValueError, RecursionError):
            continue
        messages.extend(message if isinstance(message, list) else [message])
    return messages


def run_stdio_reader(chunks: Sequence[bytes], limit: int) -> Tuple[List[Any], List[Any]]:
    """Run the real reader loop over ``chunks``; returns (messages, close reports)."""
    transport = StdioTransport("mcp-fuzz-no-such-command", max_message_size=limit)
    stdout = io.BufferedReader(_ChunkedRaw(chunks), buffer_size=64)
    process = transport._process = _FakeProcess(stdout)  # type: ignore[assignment]
    # What the watcher thread would have seen, and the stderr drain (there is no stderr).
    transport._exited.set()
    transport._stderr_drained.set()
    closes: List[Any] = []
    transport._on_close = closes.append
    messages: List[Any] = []
    transport._read_stdout(process, messages.append)  # type: ignore[arg-type]
    return messages, closes


def check_jsonl(data: bytes, cuts: Sequence[int], limit: int = 64) -> None:
    """The stdio reader on ``data`` in any chunks: the reference's messages, one close
    report, caused by nothing (a reader that crashed would report its exception)."""
    _count("jsonl")
    messages, closes = run_stdio_reader(split(data, cuts), limit)
    expected = jsonl_reference(data, limit)
    # Compared as JSON text: NaN (which json.loads accepts) is never equal to itself.
    assert json.dumps(messages) == json.dumps(expected), (data, messages, expected)
    assert len(closes) == 1 and closes[0].__cause__ is None, closes


# -- server-sent events -------------------------------------------------------------------------


_LINE_END = re.compile(rb"\r\n|\r|\n")


def sse_reference(data: bytes, include_empty: bool = False) -> Tuple[List[ServerSentEvent],
                                                                      Optional[str],
                                                                      Optional[int]]:
    """The WHATWG event-stream rules applied to the whole of ``data`` at once; returns the
    events, the last event ID and the last retry. An ``id`` field fills the event's ID
    buffer; it becomes the last event ID when its event is dispatched (its blank line)."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    lines = _LINE_END.split(data)[:-1]  # what follows the last line end is unfinished
    events: List[ServerSentEvent] = []
    last_id: Optional[str] = None
    retry: Optional[int] = None
    buffer: List[bytes] = []
    kind, event_retry, dirty = "", None, False
    event_id: Optional[str] = None
    for line in lines:
        if not line:
            if event_id is not None:
                last_id, event_id = event_id, None
            if dirty and (include_empty or any(buffer)):
                events.append(ServerSentEvent(b"\n".join(buffer).decode("utf-8", "replace"),
                                              kind or "message", last_id, event_retry))
            buffer, kind, event_retry, dirty = [], "", None, False
            continue
        if line.startswith(b":"):
            continue
        name, colon, value = line.partition(b":")
        if colon and value.startswith(b" "):
            value = value[1:]
        if name == b"data":
            buffer.append(value)
        elif name == b"event":
            kind = value.decode("utf-8", "replace")
        elif name == b"id":
            if b"\x00" not in value:
                event_id = value.decode("utf-8", "replace")
        elif name == b"retry":
            if value.isdigit():
                retry = event_retry = int(value)
        else:
            continue
        dirty = True
    return events, last_id, retry


class _FakeRaw:
    """A streamed response body handing out the given chunks (``read1`` semantics)."""

    def __init__(self, chunks: Sequence[bytes]) -> None:
        self._chunks = [c for c in chunks if c]

    def read1(self, size: int = -1, decode_content: bool = True) -> bytes:
        if not self._chunks:
            return b""
        chunk = self._chunks[0]
        if 0 <= size < len(chunk):
            self._chunks[0] = chunk[size:]
            return chunk[:size]
        self._chunks.pop(0)
        return chunk


class _FakeResponse:
    def __init__(self, chunks: Sequence[bytes]) -> None:
        self.raw = _FakeRaw(chunks)


def check_sse(data: bytes, cuts: Sequence[int], read_size: int = 7) -> None:
    """Event-stream ``data`` in any chunks: the decoder, ``iter_events`` (small reads) and
    the HTTP transport's delivery agree with the reference, and nothing raises."""
    _count("sse")
    chunks = split(data, cuts)
    expected, last_id, retry = sse_reference(data)
    decoder = SSEDecoder()
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    assert events == expected, (data, chunks, events, expected)
    assert (decoder.last_event_id, decoder.retry) == (last_id, retry)
    whole = SSEDecoder()
    assert whole.feed(data) == expected
    decoder.end()
    assert decoder.feed(b"data: after the end\n\n") == [
        ServerSentEvent("after the end", "message", last_id, None)]
    # The reading path: read1 of at most read_size bytes at a time.
    assert list(iter_events(_FakeResponse(chunks), read_size=read_size)) == expected
    with_empty = SSEDecoder(include_empty=True)
    assert [e for c in chunks for e in with_empty.feed(c)] == sse_reference(data, True)[0]
    # What the HTTP transport does with each event: decode it, hand it to the session.
    transport = HttpTransport("http://127.0.0.1:9/mcp")
    delivered: List[Any] = []
    firsts: List[bool] = []

    def on_message(message: Any, first: bool = False) -> None:
        delivered.append(message)
        firsts.append(first)

    transport._on_message = on_message
    stream = Exchange(1, "tools/call", None)  # every event on one request's stream
    for event in expected:
        transport._deliver_event(event.data, event.event, stream)
    assert firsts[1:] == [False] * (len(firsts) - 1), firsts  # only its first is first


# -- a server's output schema ---------------------------------------------------------------


def check_output_schema(schema: Any, instance: Any) -> Optional[str]:
    """Build the check of ``schema`` (any JSON value: a tool's outputSchema is an object,
    so anything else is wrapped into one) and run it on ``instance``. Whatever the
    schema -- references anywhere, loops, backtracking patterns, invalid keywords -- the
    only exceptions are ``ProtocolError`` and its ``InvalidToolSchema``, whose message
    names the tool and is bounded and printable. Returns the class name of what was
    raised, or None for a result that matched."""
    _count("schema")
    from mcp_sync._schema.checker import OutputSchema
    from mcp_sync.exceptions import InvalidToolSchema, ProtocolError

    if not isinstance(schema, dict):
        schema = {"allOf": [schema]}
    try:
        OutputSchema(schema, "fuzzed", "server").check(instance)
    except InvalidToolSchema as exc:
        assert exc.tool == "fuzzed" and exc.server == "server"
        _assert_shown_safely(str(exc))
        return "InvalidToolSchema"
    except ProtocolError as exc:
        _assert_shown_safely(str(exc))
        return "ProtocolError"
    return None


def _assert_shown_safely(message: str) -> None:
    assert "'fuzzed'" in message and len(message) < 2000, message[:300]
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", message), (
        message[:300])
