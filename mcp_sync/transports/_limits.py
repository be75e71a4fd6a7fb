"""The size bound on what a server sends, shared by the transports.

Every transport reads at most ``max_message_size`` bytes (64 MiB by default) of one
message: a JSONL line (stdio), a JSON body or an SSE event (HTTP; decoded bytes, after
the body's ``Content-Encoding``: see ``http/_bodies.py``). Beyond that the message
is not assembled: stdio skips the rest of the line, HTTP drops the connection it came on.

A message that large is usually a response, and its caller should not wait for its
deadline: :func:`response_id_in` reads the id from the start of the message (a bounded
prefix, ``{"jsonrpc":"2.0","id":7,"result":...``), so that the transport can fail that
one request at once with :class:`~mcp_sync.MessageTooLarge`.
"""

from __future__ import annotations

import json
from typing import Optional, Union

from .._util.jsonwire import JSON_WHITESPACE

__all__ = ["DEFAULT_MAX_MESSAGE_SIZE", "ID_PREFIX", "response_id_in"]

DEFAULT_MAX_MESSAGE_SIZE = 64 * 1024 * 1024
#: How much of the start of a message :func:`response_id_in` looks at.
ID_PREFIX = 4096

_DECODER = json.JSONDecoder()


def _skip_space(text: str, pos: int) -> int:
    end = len(text)
    while pos < end and text[pos] in JSON_WHITESPACE:
        pos += 1
    return pos


def response_id_in(prefix: bytes) -> Optional[Union[int, str]]:
    """The id of the JSON-RPC response that ``prefix`` is the start of, if it says so.

    Only the first :data:`ID_PREFIX` bytes are read. The top-level object's members are
    read in order, each value only if it ends inside the prefix: the answer is the ``id``
    (an int or a string) once a ``result`` or ``error`` member has been seen too, before
    or after it. ``None`` when that cannot be known from the prefix: a ``method`` (a
    request or notification, whose ids are the server's), an id after a value that runs
    past the prefix, a batch, or anything that is not JSON.
    """
    text = prefix[:ID_PREFIX].decode("utf-8", "replace")
    pos = _skip_space(text, 0)
    if not text.startswith("{", pos):
        return None
    request_id: Optional[Union[int, str]] = None
    answers = False
    pos += 1
    while True:
        try:
            pos = _skip_space(text, pos)
            key, pos = _DECODER.raw_decode(text, pos)
            pos = _skip_space(text, pos)
            if not isinstance(key, str) or not text.startswith(":", pos) or key == "method":
                return None
            if key in ("result", "error"):
                answers = True
                if request_id is not None:
                    return request_id
            pos = _skip_space(text, pos + 1)
            value, pos = _DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError):  # the prefix ends inside it, or it is not JSON
            return None
        pos = _skip_space(text, pos)
        if pos >= len(text):
            return None  # a number may go on past the prefix: 12 of 123
        if key == "id":
            if not isinstance(value, (int, str)) or isinstance(value, bool):
                return None
            request_id = value
            if answers:
                return request_id
        if text[pos] != ",":
            return None  # the end of the object (no response after all), or not JSON
        pos += 1
