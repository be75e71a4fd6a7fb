"""Server-sent events, parsed incrementally as the bytes arrive: the one SSE parser of the
HTTP transports.

The decoder follows the WHATWG event-stream rules: ``\\n``, ``\\r`` and ``\\r\\n`` line ends
(one split between two reads is still one line end), a leading BOM, ``:`` comments, the
``data``, ``event``, ``id`` and ``retry`` fields (any other is ignored), an event dispatched
by its blank line and discarded when the stream ends first, invalid UTF-8 replaced. It keeps
the stream's last event ID and ``retry`` from every event, with data or not: a server's
priming event (an ``id`` and a ``retry``, sent first so that the client can resume with
``Last-Event-ID``) usually has no data. An event's ``id`` counts once its blank line
arrives: the ID of an event cut short was not received.

Its cost is linear in the bytes, however they are chunked and however many lines an event
has: a line that spans many reads is joined once, when its end arrives, and the values of
an event's ``data`` lines once, when it is dispatched (10 MiB in 1 KiB reads, or in 40,000
lines, costs a few copies of 10 MiB).

**A bound on one event** (``max_event_size``), kept by the decoder: it counts the bytes
of every line since the last blank line (line ends not counted; comments, ``id`` and
``retry`` lines too), the unfinished line included. Past the bound it raises
:class:`EventTooLarge` (carrying up to 4 KiB of the start of the event's data, to read a
response id from, and the events the same read completed before it) and drops the event,
instead of keeping more: it never holds more of an event than the bound (the read that
takes it past is checked before it is kept or joined), so a hostile server cannot make it
hold more than the bound and one read.

Two layers, usable separately:

* :class:`SSEDecoder` is sans-I/O: ``feed(chunk)`` takes whatever bytes arrived and returns
  the events they completed, keeping the stream's ``last_event_id`` and ``retry`` for
  resumption.
* :func:`iter_events` reads a streamed ``requests`` response (``stream=True``) with
  ``response.raw.read1``, i.e. whatever the socket has, never waiting for a fixed-size
  block, and yields each event the moment its blank line arrives.

Usage::

    response = session.get(url, headers={"Accept": "text/event-stream"}, stream=True)
    for event in iter_events(response):
        handle(event.event, event.data)     # event.id, event.retry as well
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterator, List, Optional

__all__ = ["DEFAULT_READ_SIZE", "EventTooLarge", "SSEDecoder", "ServerSentEvent", "iter_events",
           "read1_of"]

log = logging.getLogger(__name__)

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
        head: the start of the event's data (the value of its first ``data`` line, at most
            4 KiB; empty if no data came first): enough to read a JSON-RPC id from.
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
    """Event-stream bytes in, :class:`ServerSentEvent` objects out.

    Splits whatever bytes arrive into whole lines, parses each line's field, keeps the
    stream's state (last event ID, ``retry``) and returns each event when its blank line
    arrives; an event longer than ``max_event_size`` raises :class:`EventTooLarge`. Not
    thread-safe: one decoder per stream, fed by one reader.

    Args:
        last_event_id: the ID to start from (a resumed stream continues the old one's).
        include_empty: also return events whose data is empty (a server's "priming"
            event, ``id: 7`` and ``data:`` with nothing after it, or no ``data`` at all,
            only carries an ID and a ``retry``). By default they are not returned (a
            browser would dispatch one with an empty ``data:`` line, which helps no one),
            but their ``id`` and ``retry`` still count.
        max_event_size: the most bytes one event may take (see the module docstring);
            ``feed()`` raises :class:`EventTooLarge` past it. ``None``: no bound.

    Attributes:
        last_event_id: the ID of the latest finished event that had an ``id`` field
            (``None`` before any); what a client sends as ``Last-Event-ID`` to resume. An
            empty ``id`` field resets it to ``""``. The ``id`` of an event cut short by the
            end of the stream does not count: that event was not received.
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
        self._partial_size = 0
        # The bytes of the event's finished lines, every field and comment, line ends not
        # counted (what max_event_size bounds, with _partial_size).
        self._event_bytes = 0
        # The value of the event's first data line, up to _HEAD bytes (EventTooLarge.head).
        self._first_data: Optional[bytes] = None
        self._last_was_cr = False
        self._started = False
        # The event being assembled: the values of its data lines (views of the lines,
        # joined once when it is dispatched), its type, ID and retry.
        self._data: List[memoryview] = []
        self._has_data = False
        self._event_type: Optional[bytes] = None
        self._event_id: Optional[str] = None
        self._event_retry: Optional[int] = None
        self._dirty = False

    def feed(self, chunk: bytes) -> List[ServerSentEvent]:
        """Parse ``chunk`` (any size, any split) and return the events it completed.

        Raises:
            EventTooLarge: an event grew past ``max_event_size``; it was dropped, and the
                events ``chunk`` completed before it are in the exception's ``events``.
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
        # Every bound check comes before the bytes are kept or joined: the decoder never
        # holds more of an event than the bound.
        if b"\n" not in chunk:  # the middle of a long line: keep it, copy nothing
            if chunk:
                size = self._event_bytes + self._partial_size + len(chunk)
                if limit is not None and size > limit:
                    raise self._too_large(events, size, [*self._partial, chunk])
                self._partial.append(chunk)
                self._partial_size += len(chunk)
            return events
        # Only b"\n" ends a line now; each line keeps it.
        lines = chunk.splitlines(True)
        tail = b"" if lines[-1].endswith(b"\n") else lines.pop()
        if self._partial:
            size = self._event_bytes + self._partial_size + len(lines[0]) - 1
            if limit is not None and size > limit:
                raise self._too_large(events, size, [*self._partial, lines[0]])
            self._partial.append(lines[0])
            lines[0] = b"".join(self._partial)
            self._partial = []
            self._partial_size = 0
        for line in lines:
            if line != b"\n":
                self._event_bytes += len(line) - 1
                if limit is not None and self._event_bytes > limit:
                    raise self._too_large(events, self._event_bytes, [line])
                self._field(line)
            else:
                self._event_bytes = 0  # even after comments alone, which dispatch nothing
                if self._dirty:
                    event = self._dispatch()
                    if event is not None:
                        events.append(event)
        if tail:
            size = self._event_bytes + len(tail)
            if limit is not None and size > limit:
                raise self._too_large(events, size, [tail])
            self._partial.append(tail)
            self._partial_size = len(tail)
        return events

    def _too_large(self, events: List[ServerSentEvent], size: int,
                   line: List[bytes]) -> EventTooLarge:
        """Drop the event being assembled and describe it.

        ``size`` is the event's bytes with the line that took it past the bound; ``line``
        that line's pieces (finished or not), read only for the head of the event's data
        when no ``data`` line came before it.
        """
        assert self.max_event_size is not None
        head = self._first_data
        if head is None:
            # Only the start of the line: at most the head and its field name are copied.
            pieces: List[bytes] = []
            length = 0
            for piece in line:
                pieces.append(piece[:_HEAD + 6])
                length += len(pieces[-1])
                if length > _HEAD + 6:
                    break
            start = b"".join(pieces).rstrip(b"\n")
            head = b""
            if start == b"data" or start.startswith(b"data:"):
                offset = 6 if start[5:6] == b" " else 5
                head = start[offset:offset + _HEAD]
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
        """One line of the event being assembled (``line`` ends with ``b"\\n"``)."""
        if line[0] == 0x3A:  # b":" - a comment, usually a keep-alive
            self.comments += 1
            return
        colon = line.find(b":")
        if colon < 0:
            name, start = line[:-1], len(line) - 1
        else:
            name = line[:colon]
            start = colon + 2 if line[colon + 1:colon + 2] == b" " else colon + 1
        if name == b"data":
            end = len(line) - 1
            if start < end or self.include_empty:
                self._has_data = True
            if self._first_data is None:
                self._first_data = line[start:min(end, start + _HEAD)]
            self._data.append(memoryview(line)[start:end])  # no copy of a long line
        elif name == b"event":
            self._event_type = line[start:-1]
        elif name == b"id":
            value = line[start:-1]
            if b"\x00" not in value:
                self._event_id = value.decode("utf-8", "replace")
        elif name == b"retry":
            value = line[start:-1]
            if value.isdigit():
                self.retry = self._event_retry = int(value)
        else:
            return  # any other field name is ignored, as the standard says
        self._dirty = True

    def _dispatch(self) -> Optional[ServerSentEvent]:
        """The blank line after an event: note its ID, and return it if it has data."""
        if self._event_id is not None:
            self.last_event_id = self._event_id
        values, event_type, retry = self._data, self._event_type, self._event_retry
        has_data = self._has_data or self.include_empty
        self._reset_event()
        if not has_data:
            return None
        if len(values) == 1:
            data = str(values[0], "utf-8", "replace")
        else:
            data = b"\n".join(values).decode("utf-8", "replace")
        kind = event_type.decode("utf-8", "replace") if event_type else "message"
        return ServerSentEvent(data, kind, self.last_event_id, retry)

    def _reset_event(self) -> None:
        self._data = []
        self._has_data = False
        self._event_type = None
        self._event_id = None
        self._event_retry = None
        self._dirty = False
        self._event_bytes = 0
        self._first_data = None


def read1_of(response: Any) -> Callable[[int], bytes]:
    """A function reading up to ``n`` bytes of ``response``'s body, whatever is available.

    ``response`` is a ``requests.Response`` opened with ``stream=True`` (or a urllib3
    response). The function blocks only until *some* bytes arrive (or the body ends, then
    it returns ``b""``), so an event is seen as soon as its last byte is. Content encodings
    (gzip, deflate) are decoded, never more than ``n`` decoded bytes per call: the event
    bound counts decoded bytes, and a gzip bomb is inflated only as far as it is read
    (``_bodies.py``).
    """
    from ._bodies import decoded_reader

    return decoded_reader(response)


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
