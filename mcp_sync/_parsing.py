"""Server data into pydantic models, and models back into JSON data.

Shared by the client and the modules it hands work to
(:mod:`mcp_sync.client._callbacks`, :mod:`mcp_sync.client._toolcalls`,
:mod:`mcp_sync.client._tasks`) and by :mod:`mcp_sync.context`; imports no client. It
stands above both the models (:mod:`mcp_sync._types`) and the exceptions, which it joins:
the models know no exception, and only this module turns invalid server data into a
:class:`~mcp_sync.ProtocolError`.
"""

from __future__ import annotations

import functools
import importlib
import sys
from typing import Any

from .exceptions import ProtocolError, excerpt

__all__ = ["dump", "invalid", "load_models", "parse"]


def parse(model: Any, data: Any, what: str) -> Any:
    """Validate server data into a pydantic model (or a union via a cached TypeAdapter).

    On the hot path of every call: no imports here (pydantic resolves its top-level names
    lazily, which costs microseconds per lookup); pydantic's ValidationError is a
    ValueError. Its text names the server's keys and values raw, so the ProtocolError
    carries an excerpt of it and does not chain it (a traceback would print it whole).
    """
    try:
        validate = getattr(model, "model_validate", None)
        if validate is not None:
            return validate(data)
        return _adapter(model).validate_python(data)
    except ValueError as exc:
        raise invalid(what, exc) from None


def load_models() -> None:
    """Load the models of a tool call (``mcp_sync._types.core``, and pydantic with them)
    if no one has yet. The client calls this while a stdio server it has just started
    is still starting: the first result then finds them loaded, and the process spent
    that wait loading them rather than idle."""
    if "mcp_sync._types.core" not in sys.modules:
        importlib.import_module("mcp_sync._types.core")


def invalid(what: str, error: ValueError) -> ProtocolError:
    """The error for server data that failed validation (pydantic's ValidationError, a
    ValueError): its text names the server's keys and values raw, so the ProtocolError
    carries an excerpt of it; raise it ``from None`` (a traceback would print it whole)."""
    return ProtocolError(f"invalid {what} from server: {excerpt(error, 1000)}")


@functools.lru_cache(maxsize=64)
def _adapter(model: Any) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(model)


def dump(value: Any) -> Any:
    """A model as the JSON data the wire carries (aliases, no nulls); anything else as is."""
    dump_model = getattr(value, "model_dump", None)
    if dump_model is not None:
        return dump_model(by_alias=True, exclude_none=True, mode="json")
    return value
