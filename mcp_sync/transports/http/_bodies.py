"""Reading a response body in bounded memory: bounds count what is decoded.

A server may encode its body (``Content-Encoding: gzip``): 2 MiB of gzip can inflate to
2 GiB. The size bound (``max_message_size``) is about what the client holds, so it counts
decoded bytes, and decoding itself must never produce more at once than the reader asked
for. urllib3 does the second only since 2.6 (before, one read of N raw bytes was inflated
whole: a 1 GiB bomb read with a 64 MiB bound took 2 GiB), so the HTTP transports decode
``gzip`` and ``deflate`` here, whatever urllib3 version is installed: raw bytes are read
as they come (at most 64 KiB at a time) and inflated with ``zlib``'s ``max_length``, so
each read returns at most the decoded bytes it asked for, and inflating more waits for the
next read. They ask for nothing else (``Accept-Encoding: gzip, deflate``); a body in
another encoding all the same is left to urllib3 to decode.

:func:`decoded_reader` gives a ``read(n)`` over a streamed response: up to ``n`` decoded
bytes, whatever is available (it blocks only until some bytes arrive), ``b""`` at the end
of the body. A body whose encoding is broken raises ``urllib3.exceptions.DecodeError``.
"""

from __future__ import annotations

import zlib
from typing import Any, Callable, Iterator, List, Optional

import urllib3.exceptions

from ._interrupt import plain_response

__all__ = ["ACCEPT_ENCODING", "decoded_reader", "read_decoded"]

#: What the HTTP transports accept: the encodings decoded here.
ACCEPT_ENCODING = "gzip, deflate"

# The most raw bytes one read asks the socket for.
_RAW_READ = 1 << 16
_GZIP_MAGIC = b"\x1f\x8b"


def _raw_reader(response: Any, decode: bool) -> Callable[[int], bytes]:
    """``read(n)``: up to ``n`` bytes of the body as they come, decoded by urllib3 or not."""
    raw = getattr(response, "raw", response)
    read1 = getattr(raw, "read1", None)
    if read1 is not None:  # urllib3 >= 2

        def read(n: int) -> bytes:
            data: bytes = read1(n, decode_content=decode)
            return data or b""

        return read
    if decode:  # urllib3 1.x: its own decoding of a read of at most n raw bytes
        return lambda n: bytes(raw.read(n, decode_content=True) or b"")
    # urllib3 1.x: the http.client response the transports' connections returned reads
    # whatever has arrived (read1); a chunked body read by urllib3 comes chunk by chunk.
    plain = plain_response(response) if response is not raw else None
    if plain is not None:
        plain_read1: Callable[[int], bytes] = plain.read1
        return plain_read1
    if getattr(raw, "chunked", False) and raw.supports_chunked_reads():
        return _ChunkReader(raw).read
    # Anything else with read(): one byte at a time never waits for bytes that are not
    # coming. Slow, but only for a session passed in, under urllib3 1.x, on a body that
    # is not chunked.
    raw_read: Callable[[int], bytes] = raw.read
    return lambda n: raw_read(1)


class _ChunkReader:
    """``read(n)`` over urllib3 1.x's ``read_chunked``: each chunk as soon as it is whole
    (at most ``n`` bytes of it at a time; the size of the first read holds for all)."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw
        self._chunks: Optional[Iterator[bytes]] = None

    def read(self, n: int) -> bytes:
        if self._chunks is None:
            self._chunks = iter(self._raw.read_chunked(n, decode_content=False))
        for chunk in self._chunks:
            if chunk:
                return bytes(chunk)
        return b""


class _Inflater:
    """``read(n)`` over a gzip (possibly many members) or deflate body: at most ``n``
    decoded bytes per call."""

    def __init__(self, read_raw: Callable[[int], bytes], encoding: str) -> None:
        self._read_raw = read_raw
        self._gzip = encoding in ("gzip", "x-gzip")
        self._inflater: Optional[Any] = None
        self._pending = b""  # raw bytes not given to an inflater yet
        self._ended = False
        self._members = 0

    def _new_inflater(self, data: bytes) -> Any:
        if self._gzip:
            return zlib.decompressobj(16 + zlib.MAX_WBITS)
        # "deflate" is meant to be zlib-wrapped; some servers send it raw.
        first = data[:1]
        zlib_wrapped = bool(first) and (first[0] & 0x0F) == 8 and (
            int.from_bytes(data[:2], "big") % 31 == 0 if len(data) >= 2 else True)
        return zlib.decompressobj(zlib.MAX_WBITS if zlib_wrapped else -zlib.MAX_WBITS)

    def read(self, n: int) -> bytes:
        try:
            return self._read(n)
        except zlib.error as exc:
            raise urllib3.exceptions.DecodeError(
                f"the body's Content-Encoding is broken: {exc}") from exc

    def _read(self, n: int) -> bytes:
        n = max(1, n)
        while not self._ended:
            inflater = self._inflater
            # At a member's end its rest is in unused_data (and unconsumed_tail too).
            if inflater is not None and not inflater.eof and inflater.unconsumed_tail:
                out: bytes = inflater.decompress(inflater.unconsumed_tail, n)
            else:
                if inflater is not None and inflater.eof:
                    self._pending = inflater.unused_data + self._pending
                    self._inflater = inflater = None
                data = self._pending
                self._pending = b""
                if not data:
                    data = self._read_raw(_RAW_READ)
                    if not data:
                        self._ended = True  # a stream cut short just ends here
                        break
                if inflater is None:
                    if self._gzip and not _GZIP_MAGIC.startswith(data[:2]):
                        if not self._members:
                            raise zlib.error("not gzip data")
                        continue  # not another member: padding after the last one, ignored
                    if len(data) < 2:  # decide on the header with its second byte
                        self._pending = data
                        more = self._read_raw(_RAW_READ)
                        if not more:
                            self._ended = True
                            break
                        self._pending += more
                        continue
                    self._inflater = inflater = self._new_inflater(data)
                    self._members += 1
                out = inflater.decompress(data, n)
            if out:
                return out
        return b""


def decoded_reader(response: Any) -> Callable[[int], bytes]:
    """A function reading up to ``n`` decoded bytes of ``response``'s body, whatever is
    available (``b""`` at its end). ``response`` is a ``requests.Response`` opened with
    ``stream=True`` (or a urllib3 response). See the module docstring.
    """
    headers = getattr(response, "headers", None) or {}
    encoding = str(headers.get("Content-Encoding", "") or "").strip().lower()
    if encoding in ("", "identity"):
        return _raw_reader(response, decode=False)
    if encoding in ("gzip", "x-gzip", "deflate"):
        return _Inflater(_raw_reader(response, decode=False), encoding).read
    return _raw_reader(response, decode=True)  # not asked for: urllib3's own decoding


def read_decoded(response: Any, limit: int) -> List[bytes]:
    """Up to ``limit`` decoded bytes of the body, in pieces (join them once), stopping
    there or at the end of the body; the response stays open."""
    headers = getattr(response, "headers", None) or {}
    declared = str(headers.get("Content-Length", "") or "")
    if (declared.isdigit() and int(declared) <= limit and "Transfer-Encoding" not in headers
            and str(headers.get("Content-Encoding", "") or "").strip().lower()
            in ("", "identity")):
        # A plain body of a length within the bound: read whole in one call (which ends
        # at that length whatever the server sends after it, and hands the connection
        # back to the pool).
        raw = getattr(response, "raw", response)
        whole: bytes = raw.read(decode_content=False) or b""
        return [whole]
    read = decoded_reader(response)
    pieces: List[bytes] = []
    left = limit
    while left > 0:
        piece = read(min(left, _RAW_READ))
        if not piece:
            break
        pieces.append(piece)
        left -= len(piece)
    return pieces
