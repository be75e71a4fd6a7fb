"""JSON-RPC messages as the wire carries them: what one is (a response, an error, a request, a
notification, or none of them), and what is wrong with a broken response. Sans-I/O: the
session's dispatch and the HTTP transport both read messages with it.
"""

from __future__ import annotations

import enum
import reprlib
from typing import Any, Dict

from .._util.text import excerpt

__all__ = ["ANSWERS", "Kind", "classify", "malformation"]


class Kind(enum.Enum):
    """What an inbound JSON-RPC message is."""

    RESPONSE = "response"
    ERROR = "error"
    #: Shaped like a response to the request ``id`` (no ``method``; ``result`` or
    #: ``error``; a valid id), but broken: ``result`` and ``error`` both, or an ``error``
    #: that is not an object with an integer ``code``. It fails its request with
    #: :class:`~mcp_sync.ProtocolError` rather than leave it to its deadline.
    MALFORMED_RESPONSE = "malformed response"
    REQUEST = "request"
    NOTIFICATION = "notification"
    INVALID = "invalid"

    # Members are compared by identity: hash them so too, in C (Enum's own hash is a
    # Python method, and every message's kind is looked up in ANSWERS).
    __hash__ = object.__hash__


#: The kinds that settle the request their ``id`` names.
ANSWERS = frozenset({Kind.RESPONSE, Kind.ERROR, Kind.MALFORMED_RESPONSE})


# Bounded reprs of server data for error messages: never a whole multi-megabyte value.
_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 80
_SHORT.maxlevel = 3


def _is_id(value: Any) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def _is_error_object(error: Any) -> bool:
    code = error.get("code") if isinstance(error, dict) else None
    return isinstance(code, int) and not isinstance(code, bool)


def classify(message: Any) -> Kind:
    """Classify one decoded JSON value as a JSON-RPC message, or ``INVALID``.

    Tolerant where being strict helps no one (a missing ``"jsonrpc": "2.0"`` is accepted,
    and so is ``"error": null`` beside a ``result``), strict where a wrong guess would
    misroute a message. A response to a valid id that breaks the rules is
    ``MALFORMED_RESPONSE``: its request can be failed at once; with no usable id it is
    ``INVALID``.
    """
    if not isinstance(message, dict):
        return Kind.INVALID
    method = message.get("method")
    if method is not None:
        if not isinstance(method, str):
            return Kind.INVALID
        params = message.get("params")
        if params is not None and not isinstance(params, (dict, list)):
            return Kind.INVALID
        if "id" in message:
            return Kind.REQUEST if _is_id(message["id"]) else Kind.INVALID
        return Kind.NOTIFICATION
    if "result" not in message and "error" not in message:
        return Kind.INVALID
    error = message.get("error")
    if not _is_id(message.get("id")):
        # An error with "id": null answers a request the server could not parse.
        if message.get("id") is None and "result" not in message and _is_error_object(error):
            return Kind.ERROR
        return Kind.INVALID
    if "result" in message:
        return Kind.RESPONSE if error is None else Kind.MALFORMED_RESPONSE
    return Kind.ERROR if _is_error_object(error) else Kind.MALFORMED_RESPONSE


def malformation(message: Dict[str, Any]) -> str:
    """What is wrong with a ``MALFORMED_RESPONSE`` (bounded, printable)."""
    error = message.get("error")
    if "result" in message:
        what = f"it has both a result and an error ({_SHORT.repr(error)})"
    elif not isinstance(error, dict):
        what = f"its error is not an object: {_SHORT.repr(error)}"
    else:
        what = f"its error has no integer code: {_SHORT.repr(error)}"
    return excerpt(what, 300)
