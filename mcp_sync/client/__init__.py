"""The MCP client: :class:`Client` and its private helpers, one module per responsibility."""

from ._client import (
    DEFAULT,
    DEFAULT_MAX_LIST_BYTES,
    DEFAULT_MAX_LIST_ITEMS,
    LATEST_PROTOCOL_VERSION,
    SESSION_PROTOCOL_VERSIONS,
    STATELESS_PROTOCOL_VERSIONS,
    SUPPORTED_PROTOCOL_VERSIONS,
    Client,
    forget_protocol_eras,
)

__all__ = [
    "DEFAULT",
    "DEFAULT_MAX_LIST_BYTES",
    "DEFAULT_MAX_LIST_ITEMS",
    "LATEST_PROTOCOL_VERSION",
    "SESSION_PROTOCOL_VERSIONS",
    "STATELESS_PROTOCOL_VERSIONS",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "Client",
    "forget_protocol_eras",
]
