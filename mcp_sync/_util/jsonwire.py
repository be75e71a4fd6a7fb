"""JSON for the wire: one message to compact text, one line of text (or of bytes, as a
transport reads it) back, as ``json.dumps`` and ``json.loads`` would, without their
per-call Python frames.

``json``'s encoder and decoder are C, but reaching them costs two Python frames a message
each way (``JSONEncoder.encode`` / ``iterencode``, ``JSONDecoder.decode`` /
``raw_decode``) and two regular-expression matches; on a small request that is a third
of the work. Here each direction is one call into C and back (a request's envelope,
four keys and three values, is written around its encoded params, the same text the
encoder would make). The output, the errors (``TypeError`` for what JSON cannot hold,
``ValueError`` for a circular structure or malformed text) and the circular-reference
check are ``json``'s own. Where ``json`` has no
C encoder (an interpreter built without ``_json``), its Python one is used.
"""

from __future__ import annotations

import json
from json.decoder import JSONDecodeError
from typing import Any, List

__all__ = ["JSON_WHITESPACE", "decode_line", "decode_object", "encode"]

_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_DEFAULT = _ENCODER.default
# Not in the type stubs: the C encoder json's one-shot encoding makes (None without _json).
c_make_encoder = json.encoder.c_make_encoder  # type: ignore[attr-defined]
encode_basestring = json.encoder.encode_basestring


# C encoders not in use. Each is taken by one encoding at a time (list.pop and append are
# atomic), so threads and a nested encoding never share one: there are at most as many
# as encodings ever ran at once.
_IDLE: List[Any] = []


def _new_encoder() -> Any:
    # Its own markers dict, as json's one-shot encoding makes: what finds a circular
    # structure (ValueError).
    return c_make_encoder({}, _DEFAULT, encode_basestring, None, ":", ",", False, False,
                          True)


# The keys of a request, in the order the session writes them.
_REQUEST_KEYS = ["jsonrpc", "id", "method", "params"]


def encode(message: Any) -> str:
    """``message`` as compact JSON text (``separators=(",", ":")``, UTF-8 kept as is)."""
    if c_make_encoder is None:  # pragma: no cover - CPython always has _json
        return _ENCODER.encode(message)
    if type(message) is dict and len(message) == 4 and list(message) == _REQUEST_KEYS:
        # A request: its envelope is written here, the same text the encoder would make
        # (an int's digits, a str escaped by the encoder's own function), and only its
        # params go through the encoder. A third of a small request's encoding was
        # its envelope's four keys and two values.
        version, request_id, method = message["jsonrpc"], message["id"], message["method"]
        if type(version) is str and type(request_id) is int and type(method) is str:
            return (f'{{"jsonrpc":{encode_basestring(version)},"id":{request_id},'
                    f'"method":{encode_basestring(method)},"params":'
                    f'{_encode(message["params"])}}}')
    return _encode(message)


def _encode(value: Any) -> str:
    try:
        encoder = _IDLE.pop()
    except IndexError:
        encoder = _new_encoder()
    chunks = encoder(value, 0)
    # Only after a success: its markers are empty again. A failed encoding may leave
    # them dirty (the encoder is dropped), and json's own one-shot makes a new one per
    # call, at a cost that was a tenth of a small request's.
    _IDLE.append(encoder)
    return "".join(chunks)


_SCAN = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
JSON_WHITESPACE = " \t\n\r"


def decode_object(text: str) -> Any:
    """The JSON value of ``text``, which starts with ``{`` (a JSON-RPC message's line).

    Raises:
        ValueError: ``text`` is not one JSON value (``json.JSONDecodeError``, with
            ``json.loads``' message), RecursionError: nested beyond the parser.
    """
    try:
        value, end = _SCAN(text, 0)
    except StopIteration as exc:  # not a value at all (text that does not start with "{")
        raise JSONDecodeError("Expecting value", text, exc.value) from None
    if end != len(text):
        rest = text[end:].lstrip(JSON_WHITESPACE)
        if rest:
            raise JSONDecodeError("Extra data", text, len(text) - len(rest))
    return value


def decode_line(data: bytes) -> Any:
    """The JSON value of ``data``, one message as a transport read it (a line of a stdio
    child's stdout, an HTTP reply's body): what ``json.loads(data)`` returns, with the same
    exception types and messages, for any bytes.

    ``json.loads`` guesses the encoding of bytes (a BOM, or the NUL bytes that UTF-16 and
    UTF-32 put beside ASCII). A message that starts with ``{`` and whose second byte is not
    NUL can only be UTF-8, so it skips the guess and ``json``'s Python frames; anything else
    (leading whitespace, a BOM, UTF-16/32, no object at all) is ``json.loads``' own.

    Raises:
        ValueError: ``data`` is not one JSON value (``json.JSONDecodeError``) or not text
            in its encoding (``UnicodeDecodeError``), RecursionError: nested beyond the
            parser.
    """
    if data[:1] == b"{" and data[1:2] != b"\x00":
        return decode_object(data.decode("utf-8", "surrogatepass"))
    return json.loads(data)
