"""Server-sent events, parsed incrementally and in linear time.

Two layers, usable separately:

* :class:`SSEDecoder` is sans-I/O: ``feed(chunk)`` takes whatever bytes arrived and returns
  the events they completed. It follows the WHATWG event-stream rules (``\\n``, ``\\r`` and
  ``\\r\\n`` line ends, ``:`` comments, ``data``/``event``/``id``/``retry`` fields, a
  leading BOM) and keeps the stream's ``last_event_id`` and ``retry`` for resumption.
* :func:`iter_events` reads a streamed ``requests`` response (``stream=True``) with
  ``response.raw.read1``, i.e. whatever the socket has, never waiting for a fixed-size
  block, and yields each event the moment its blank line arrives.

Why not ``sseclient-py``: it concatenates an event's bytes line by line (``data += line``),
which copies the whole event again for every chunk: quadratic for a multi-megabyte event
that arrives in small chunks. It also drops events without data together with their
``id``, which resumption needs, and reads its source in blocks. Here each chunk is
scanned once and an event's pieces are joined once, so the cost is linear in its size.

Usage::

    response = session.get(url, headers={"Accept": "text/event-stream"}, stream=True)
    for event in iter_events(response):
        handle(event.event, event.data)     # event.id, event.retry as well

**A bound on one event** (``max_event_size``): the bytes of the lines of the event being
assembled (line ends not counted), the unfinished line included, since the last blank
line. Past it the decoder raises :class:`EventTooLarge` (carrying the start of the
event's data, to read a response id from, and the events completed before it) instead of
keeping more, so a hostile server cannot make it hold more than the bound and one read.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, List, Optional, Union

__all__ = ["DEFAULT_READ_SIZE", "EventTooLarge", "SSEDecoder", "ServerSentEvent", "iter_events",
           "read1_of"]

#: The most bytes one read asks for; a read returns what is available, up to this.
DEFAULT_READ_SIZE = 1 << 16

_BOM = b"\xef\xbb\xbf"
# How much of an oversized event's data EventTooLarge keeps (to read a response id from).
_HEAD = 4096


class ServerSentEvent:
    """One dispatched event.

    Attributes:
        event: the event type (``"message"`` unless the server named one).
        data: the data, its lines joined with ``"\\n"`` (decoded as UTF-8, invalid bytes
            replaced). Empty for an event that had no ``data`` field.
        id: the stream's last event ID when the event was dispatched, as the HTML
            standard defines it: the latest ``id`` field seen on the stream so far, possibly
            from an earlier event; ``None`` if the server never sent one.
        retry: the ``retry`` field of this event in milliseconds, or ``None``.
    """

    __slots__ = ("data", "event", "id", "retry")

    def __init__(
        self, data: str = "", event: str = "message", id: Optional[str] = None,
        retry: Optional[int] = None,
    ) -> None:
        self.data = data
        self.event = event
        self.id = id
        self.retry = retry

    def __repr__(self) -> str:
        return (f"ServerSentEvent(event={self.event!r}, id={self.id!r}, retry={self.retry!r}, "
                f"data={self.data[:60]!r}{'...' if len(self.data) > 60 else ''})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ServerSentEvent):
            return NotImplemented
        return (self.data, self.event, self.id, self.retry) == (
            other.data, other.event, other.id, other.retry)

    __hash__ = None  # type: ignore[assignment]


class EventTooLarge(ValueError):
    """An event grew past the decoder's ``max_event_size`` before its blank line.

    The decoder dropped what it had of the event; the stream should be dropped too (the
    rest of the event would be read as new lines).

    Attributes:
        size: the event's bytes when the decoder gave up (more than ``limit``).
        limit: the decoder's ``max_event_size``.
        head: the start of the event's data (its first ``data`` line, at most 4 KiB; empty
            if no data came first): enough to read a JSON-RPC id from.
        events: the events the same :meth:`SSEDecoder.feed` call completed before this
            one, in order: deliver them first.
    """

    def __init__(self, size: int, limit: int, head: bytes,
                 events: List[ServerSentEvent]) -> None:
        self.size = size
        self.limit = limit
        self.head = head
        self.events = events
        super().__init__(f"an SSE event longer than {limit} bytes (at least {size})")


class SSEDecoder:
    """Turns event-stream bytes into :class:`ServerSentEvent` objects, incrementally.

    Not thread-safe: one decoder per stream, fed by one reader.

    Args:
        last_event_id: the ID to start from (a resumed stream continues the old one's).
        include_empty: also return events whose data is empty (a server's "priming"
            event, ``id: 7`` and ``data:`` with nothing after it, only carries an ID and a
            ``retry``). By default they are not returned (a browser would dispatch one
            with an empty ``data:`` line, which helps no one), but their ``id`` and
            ``retry`` still count.
        max_event_size: the most bytes one event may take (see the module docstring);
            ``feed()`` raises :class:`EventTooLarge` past it. ``None``: no bound.

    Attributes:
        last_event_id: the latest ``id`` field seen (``None`` before any); what a client
            sends as ``Last-Event-ID`` to resume. An empty ``id`` field resets it to ``""``.
        retry: the latest ``retry`` field in milliseconds, or ``None``.
        comments: how many comment lines (``: keep-alive``) arrived.
    """

    def __init__(self, *, last_event_id: Optional[str] = None, include_empty: bool = False,
                 max_event_size: Optional[int] = None) -> None:
        self.last_event_id = last_event_id
        self.retry: Optional[int] = None
        self.comments = 0
        self.include_empty = include_empty
        self.max_event_size = max_event_size
        # The current line's bytes so far (a line may span many chunks): joined once.
        self._partial: List[bytes] = []
        # The bytes of the event's complete lines, and of the unfinished one (_partial).
        self._event_size = 0
        self._partial_size = 0
        self._last_was_cr = False
        self._started = False
        # The event being assembled.
        self._data: List[Union[bytes, memoryview]] = []
        self._event_type = ""
        self._event_retry: Optional[int] = None
        self._dirty = False

    def feed(self, chunk: bytes) -> List[ServerSentEvent]:
        """Parse ``chunk`` (any size, any split) and return the events it completed.

        Raises:
            EventTooLarge: an event grew past ``max_event_size``.
        """
        if not chunk:
            return []
        if not self._started:
            head = b"".join(self._partial) + chunk if self._partial else chunk
            self._partial = []
            if len(head) < len(_BOM) and _BOM.startswith(head):
                self._partial.append(head)  # maybe a BOM cut short: decide on more bytes
                return []
            self._started = True
            chunk = head[len(_BOM):] if head.startswith(_BOM) else head
        if self._last_was_cr and chunk[:1] == b"\n":
            chunk = chunk[1:]  # the \n of a \r\n split across two chunks
        if b"\r" in chunk:
            self._last_was_cr = chunk.endswith(b"\r")
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        else:
            self._last_was_cr = False
        limit = self.max_event_size
        events: List[ServerSentEvent] = []
        if b"\n" not in chunk:  # the middle of a long line: keep it, copy nothing
            if chunk:
                self._partial.append(chunk)
                self._partial_size += len(chunk)
                if limit is not None and self._event_size + self._partial_size > limit:
                    raise self._too_large(events, None)
            return events
        lines = chunk.split(b"\n")
        tail = lines.pop()  # after the last line end: the start of an unfinished line
        if lines:
            if self._partial:
                self._partial.append(lines[0])
                lines[0] = b"".join(self._partial)
                self._partial = []
                self._partial_size = 0
            for line in lines:
                if line:
                    self._event_size += len(line)
                    if limit is not None and self._event_size > limit:
                        raise self._too_large(events, line)
                    self._field(line)
                else:
                    self._event_size = 0
                    if self._dirty:
                        event = self._dispatch()
                        if event is not None:
                            events.append(event)
        if tail:
            self._partial.append(tail)
            self._partial_size = len(tail)
            if limit is not None and self._event_size + self._partial_size > limit:
                raise self._too_large(events, None)
        return events

    def _too_large(self, events: List[ServerSentEvent], line: Optional[bytes]) -> EventTooLarge:
        """Drop the event being assembled and describe it (``line``: the complete line
        that took it past the bound; ``None``: the unfinished line did)."""
        assert self.max_event_size is not None
        size = self._event_size + self._partial_size
        if self._data:
            head = bytes(self._data[0][:_HEAD])
        else:
            first = line
            if first is None:  # the unfinished line: its start is enough
                pieces: List[bytes] = []
                length = 0
                for piece in self._partial:
                    pieces.append(piece[:_HEAD + 6])
                    length += len(pieces[-1])
                    if length > _HEAD + 6:
                        break
                first = b"".join(pieces)
            head = b""
            if first == b"data" or first.startswith(b"data:"):
                start = 6 if first[5:6] == b" " else 5
                head = bytes(first[start:start + _HEAD])
        self._partial = []
        self._partial_size = 0
        self._reset_event()
        return EventTooLarge(size, self.max_event_size, head, events)

    def end(self) -> None:
        """The stream ended: an unterminated event is discarded, as the standard says.

        ``last_event_id`` and ``retry`` stay, and the decoder is ready for the next stream:
        feed it the resumed stream of the same events.
        """
        self._partial = []
        self._partial_size = 0
        self._last_was_cr = False
        self._started = False
        self._reset_event()

    def _field(self, line: bytes) -> None:
        if line[0] == 0x3A:  # b":" - a comment, usually a keep-alive
            self.comments += 1
            return
        colon = line.find(b":")
        if colon < 0:
            name, start = line, len(line)
        else:
            name = line[:colon]
            start = colon + 2 if line[colon + 1:colon + 2] == b" " else colon + 1
        if name == b"data":
            # A view, not a slice: a multi-megabyte line is copied once, when decoded.
            self._data.append(memoryview(line)[start:])
            self._dirty = True
            return
        value = line[start:]
        if name == b"event":
            self._event_type = value.decode("utf-8", "replace")
            self._dirty = True
        elif name == b"id":
            if b"\x00" not in value:
                self.last_event_id = value.decode("utf-8", "replace")
            self._dirty = True
        elif name == b"retry":
            if value.isdigit():
                self.retry = self._event_retry = int(value)
            self._dirty = True
        # Any other field name is ignored, as the standard says.

    def _dispatch(self) -> Optional[ServerSentEvent]:
        data = self._data
        event: Optional[ServerSentEvent] = None
        if self.include_empty or any(data):
            text = str(data[0] if len(data) == 1 else b"\n".join(data), "utf-8", "replace")
            event = ServerSentEvent(text, self._event_type or "message", self.last_event_id,
                                    self._event_retry)
        self._reset_event()
        return event

    def _reset_event(self) -> None:
        self._data = []
        self._event_type = ""
        self._event_retry = None
        self._dirty = False
        self._event_size = 0


def read1_of(response: Any) -> Callable[[int], bytes]:
    """A function reading up to ``n`` bytes of ``response``'s body, whatever is available.

    ``response`` is a ``requests.Response`` opened with ``stream=True`` (or a urllib3
    response). The function blocks only until *some* bytes arrive (or the body ends, then
    it returns ``b""``), so an event is seen as soon as its last byte is. Content encodings
    (gzip) are decoded.
    """
    raw = getattr(response, "raw", response)
    read1 = getattr(raw, "read1", None)
    if read1 is not None:  # urllib3 >= 2

        def read(n: int) -> bytes:
            data: bytes = read1(n, decode_content=True)
            return data or b""

        return read
    fp = getattr(raw, "_fp", None)  # urllib3 1.x: the http.client response underneath
    if fp is not None and hasattr(fp, "read1"):
        fp_read1: Callable[[int], bytes] = fp.read1
        return fp_read1
    # Anything else with read(): one byte at a time never waits for bytes that are not
    # coming. Slow, but only for exotic adapters.
    raw_read: Callable[[int], bytes] = raw.read
    return lambda n: raw_read(1)


def iter_events(
    response: Any,
    on_bytes: Optional[Callable[[bytes], None]] = None,
    *,
    include_empty: bool = False,
    last_event_id: Optional[str] = None,
    read_size: int = DEFAULT_READ_SIZE,
    decoder: Optional[SSEDecoder] = None,
    max_event_size: Optional[int] = None,
) -> Iterator[ServerSentEvent]:
    """Yield the events of a streamed response as they arrive, until the body ends.

    Args:
        response: a ``requests.Response`` from a request made with ``stream=True``.
        on_bytes: called with every chunk read, before it is parsed (to note activity,
            count bytes, or see keep-alive comments that yield no event).
        include_empty: also yield events without data (see :class:`SSEDecoder`).
        last_event_id: the ID a resumed stream starts from.
        read_size: the most bytes one read asks for.
        decoder: a decoder to use (and inspect afterwards for ``last_event_id`` and
            ``retry``); by default a new one.
        max_event_size: the bound on one event for the new decoder (see
            :class:`SSEDecoder`): past it, the events before it are yielded, then
            :class:`EventTooLarge` is raised.

    The caller closes the response (closing it from another thread, or shutting its
    socket down, is how a blocked read is interrupted). Errors reading the body propagate
    as ``requests``/``urllib3`` raise them.
    """
    if decoder is None:
        decoder = SSEDecoder(last_event_id=last_event_id, include_empty=include_empty,
                             max_event_size=max_event_size)
    read = read1_of(response)
    while True:
        chunk = read(read_size)
        if not chunk:
            break
        if on_bytes is not None:
            on_bytes(chunk)
        try:
            events = decoder.feed(chunk)
        except EventTooLarge as exc:
            events, exc.events = exc.events, []
            yield from events
            raise
        yield from events
    decoder.end()
