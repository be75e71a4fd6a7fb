"""The protocol's names, in one place: versions and their eras, error codes, ``_meta``
keys, and the one "use the default" sentinel.

Two eras, one word each, everywhere (code, logs, docs):

* the **session** era, 2024-11-05 ... 2025-11-25: an ``initialize`` handshake opens an
  MCP session that the server keeps (over HTTP, an ``Mcp-Session-Id``);
* the **stateless** era, 2026-07-28: no handshake, ``server/discover``, and a ``_meta``
  envelope on every request.

Nothing here imports the rest of the package: every layer may import it.
"""

from __future__ import annotations

import enum
from typing import Any, Union

__all__ = [
    "DEFAULT",
    "LATEST_PROTOCOL_VERSION",
    "LATEST_SESSION_VERSION",
    "SESSION_ERA",
    "SESSION_PROTOCOL_VERSIONS",
    "STATELESS_ERA",
    "STATELESS_PROTOCOL_VERSIONS",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "Timeout",
    "era_of",
    "json_type",
]

#: The era of the ``initialize`` handshake and a server-kept session.
SESSION_ERA = "session"
#: The era of ``server/discover`` and the per-request ``_meta`` envelope.
STATELESS_ERA = "stateless"

#: Stateless-era versions, newest first.
STATELESS_PROTOCOL_VERSIONS = ("2026-07-28",)
#: Session-era versions, newest first.
SESSION_PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
#: Every version this client speaks, newest first.
SUPPORTED_PROTOCOL_VERSIONS = STATELESS_PROTOCOL_VERSIONS + SESSION_PROTOCOL_VERSIONS
#: What the client proposes first (the stateless era's probe).
LATEST_PROTOCOL_VERSION = STATELESS_PROTOCOL_VERSIONS[0]
#: What the client proposes in ``initialize`` when nothing is pinned.
LATEST_SESSION_VERSION = SESSION_PROTOCOL_VERSIONS[0]


def era_of(version: str) -> str:
    """The era of a supported ``version`` (``SESSION_ERA`` or ``STATELESS_ERA``).

    Raises:
        ValueError: not a version this client speaks.
    """
    if version in STATELESS_PROTOCOL_VERSIONS:
        return STATELESS_ERA
    if version in SESSION_PROTOCOL_VERSIONS:
        return SESSION_ERA
    raise ValueError(f"unsupported protocol version {version!r}")


JSONRPC_VERSION = "2.0"

# JSON-RPC's own error codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# The request needs a URL-mode elicitation first (2025-11-25).
URL_ELICITATION_REQUIRED = -32042
# Resource not found: 2025-11-25 and earlier send -32002; 2026-07-28 servers send
# INVALID_PARAMS instead, and clients should still accept -32002 from older servers.
LEGACY_RESOURCE_NOT_FOUND = -32002
RESOURCE_NOT_FOUND_CODES = (INVALID_PARAMS, LEGACY_RESOURCE_NOT_FOUND)
# The range -32020..-32099 that 2026-07-28 reserves; only a stateless-era server sends
# these, so seeing one during the era probe means "stateless".
HEADER_MISMATCH = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022
STATELESS_ERROR_CODES = (HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY,
                         UNSUPPORTED_PROTOCOL_VERSION)

# Reserved ``_meta`` keys (2026-07-28). Requests carry the protocol version, client info,
# client capabilities and log level; results the server info; notifications on a
# ``subscriptions/listen`` stream (and that stream's final result) the subscription id.
META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
META_PROGRESS_TOKEN = "progressToken"
# The tasks extension (SEP-2663): tasks in the 2026-07-28 era, declared under
# ``capabilities.extensions`` by both sides.
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"


def json_type(value: Any) -> str:
    """The JSON Schema type name (a word of the ``type`` keyword) of a decoded JSON
    value: ``"integer"`` for 1, never ``"number"``; a bool is ``"boolean"``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "object" if isinstance(value, dict) else "array"


class _Default(enum.Enum):
    """Marks "use the configured default" where ``None`` already means "no limit"."""

    DEFAULT = "DEFAULT"

    def __repr__(self) -> str:
        return "DEFAULT"


#: Pass (or leave) ``timeout=DEFAULT`` to use the client's default timeout.
DEFAULT = _Default.DEFAULT
#: A timeout argument: seconds, ``None`` for no limit, or ``DEFAULT``.
Timeout = Union[float, None, _Default]
