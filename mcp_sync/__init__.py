"""mcp_sync: a synchronous, thread-based Model Context Protocol client.

For code that blocks (Django and Flask views, notebooks, cron jobs, scripts): every call
blocks until its answer arrives or its timeout passes, and no event loop is involved::

    import mcp_sync

    with mcp_sync.connect(["python", "server.py"]) as client:
        for tool in client.list_tools():
            print(tool.name)
        print(client.call_tool("echo", {"text": "hi"}).text)

The package is silent unless the application configures logging (a ``NullHandler`` sits
on the ``mcp_sync`` logger). Tool results are checked against the ``outputSchema`` their
tool declares (``jsonschema`` is a dependency; ``validate_output=False`` turns the check
off). ``import mcp_sync`` loads only what :func:`connect` to a stdio server and a call
need: pydantic models (:mod:`mcp_sync.types`), ``jsonschema`` (for the first tool with an
``outputSchema``), ``requests`` and the HTTP transports, :class:`Manager`,
:class:`Toolbox` and the configuration files' code load on first use.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ._version import __version__
from .client import DEFAULT, Client
from .client._connect import call_tool, connect
from .client._settings import TaskStartOptions, ToolCallOptions
from .client._tasks.handles import TaskHandle
from .client._toolpins import ToolChange, ToolPins
from .context import RequestContext, request_context
from .exceptions import (
    AuthError,
    CallbackError,
    CapabilityError,
    ClientNotConnected,
    CommandNotFound,
    ConnectionClosed,
    ForkedClientError,
    HeaderMismatch,
    HTTPError,
    InvalidToolCall,
    InvalidToolSchema,
    ListingTooLarge,
    MCPError,
    MessageTooLarge,
    MethodNotFound,
    MissingClientCapability,
    ProtocolError,
    ProtocolVersionRejected,
    RequestCancelled,
    RequestTimeout,
    ServerError,
    SessionExpired,
    TaskCancelled,
    TaskError,
    TaskFailed,
    TaskNotFound,
    ToolChanged,
    ToolError,
    TransportError,
    UnsupportedProtocolVersion,
    URLElicitationRequired,
)
from .transports.base import Transport
from .transports.stdio import StdioTransport

if TYPE_CHECKING:
    from . import types
    from .manager import Manager
    from .toolbox import Toolbox
    from .transports.http import HttpTransport
    from .transports.memory import MemoryTransport
    from .transports.sse import SseTransport

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "DEFAULT",
    "AuthError",
    "CallbackError",
    "CapabilityError",
    "Client",
    "ClientNotConnected",
    "CommandNotFound",
    "ConnectionClosed",
    "ForkedClientError",
    "HTTPError",
    "HeaderMismatch",
    "HttpTransport",
    "InvalidToolCall",
    "InvalidToolSchema",
    "ListingTooLarge",
    "MCPError",
    "Manager",
    "MemoryTransport",
    "MessageTooLarge",
    "MethodNotFound",
    "MissingClientCapability",
    "ProtocolError",
    "ProtocolVersionRejected",
    "RequestCancelled",
    "RequestContext",
    "RequestTimeout",
    "ServerError",
    "SessionExpired",
    "SseTransport",
    "StdioTransport",
    "TaskCancelled",
    "TaskError",
    "TaskFailed",
    "TaskHandle",
    "TaskNotFound",
    "TaskStartOptions",
    "ToolCallOptions",
    "ToolChange",
    "ToolChanged",
    "ToolError",
    "ToolPins",
    "Toolbox",
    "Transport",
    "TransportError",
    "URLElicitationRequired",
    "UnsupportedProtocolVersion",
    "__version__",
    "call_tool",
    "connect",
    "request_context",
    "types",
]

# Names loaded on first use (PEP 562): what a stdio connect and call never touch.
_LAZY = {
    "types": (".types", None),
    "Manager": (".manager", "Manager"),
    "MemoryTransport": (".transports.memory", "MemoryTransport"),
    "Toolbox": (".toolbox", "Toolbox"),
    "HttpTransport": (".transports.http", "HttpTransport"),
    "SseTransport": (".transports.sse", "SseTransport"),
}


def __getattr__(name: str) -> Any:
    # Heavy modules (pydantic models, requests, the manager) load on first use, not at
    # import; the import lock makes a race of two first uses import the module once.
    if name in _LAZY:
        import importlib

        module_name, attribute = _LAZY[name]
        module = importlib.import_module(module_name, __name__)
        value = module if attribute is None else getattr(module, attribute)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
