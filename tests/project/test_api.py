"""The public API: the names mcp_sync exports, pinned."""

from __future__ import annotations

import mcp_sync
from mcp_sync import RequestTimeout


def test_public_api_is_pinned() -> None:
    assert sorted(mcp_sync.__all__) == sorted([
        "DEFAULT", "AuthError", "CallbackError", "CapabilityError", "Client",
        "ClientNotConnected", "CommandNotFound", "ConnectionClosed", "ForkedClientError",
        "HTTPError", "InvalidToolSchema", "ListingTooLarge",
        "HttpTransport", "MCPError", "MemoryTransport", "MessageTooLarge", "MethodNotFound",
        "ProtocolError",
        "Manager", "HeaderMismatch", "MissingClientCapability", "ProtocolVersionRejected",
        "RequestCancelled", "RequestContext", "RequestTimeout", "ServerError", "SessionExpired",
        "SseTransport",
        "StdioTransport", "TaskCancelled", "TaskError", "TaskFailed", "TaskHandle",
        "TaskNotFound", "TaskStartOptions", "ToolCallOptions", "ToolChange", "ToolChanged",
        "ToolError", "ToolPins", "Toolbox",
        "InvalidToolCall", "Transport",
        "TransportError", "URLElicitationRequired",
        "UnsupportedProtocolVersion", "__version__", "call_tool", "connect", "request_context",
        "types",
    ])
    for name in mcp_sync.__all__:
        assert getattr(mcp_sync, name) is not None
    assert issubclass(RequestTimeout, TimeoutError)
    for name in mcp_sync.exceptions.__all__:
        assert issubclass(getattr(mcp_sync, name), mcp_sync.MCPError)


def test_config_api_is_pinned() -> None:
    import mcp_sync.config

    assert sorted(mcp_sync.config.__all__) == sorted([
        "MAX_FILE_BYTES", "Config", "ConfigError", "ConfigLocation", "ProjectFile",
        "ServerConfig", "config_locations", "discover_config", "expand", "load_config",
        "read_project_file",
    ])
    for name in mcp_sync.config.__all__:
        assert getattr(mcp_sync.config, name).__doc__, name


def test_trust_api_is_pinned() -> None:
    import mcp_sync.config.trust

    assert sorted(mcp_sync.config.trust.__all__) == sorted([
        "CHANGED", "MAX_FILE_BYTES", "TRUSTED", "UNTRUSTED", "Approval", "TrustStore",
        "config_directory", "current_digest", "file_digest", "file_key", "untrusted_reason",
    ])
    for name in mcp_sync.config.trust.__all__:
        assert getattr(mcp_sync.config.trust, name).__doc__, name


def test_extensions_api_is_pinned() -> None:
    import mcp_sync.apps
    import mcp_sync.extensions

    assert sorted(mcp_sync.extensions.__all__) == sorted([
        "MAX_IDENTIFIER_LENGTH", "MAX_SERVER_EXTENSIONS", "MAX_SETTINGS_BYTES", "Extension",
        "TasksExtension", "check_identifier", "extensions_of", "server_extensions",
    ])
    for name in ("Extension", "TasksExtension", "check_identifier", "extensions_of",
                 "server_extensions"):
        assert getattr(mcp_sync.extensions, name).__doc__, name
    assert "AppsExtension" in mcp_sync.apps.__all__
    assert issubclass(mcp_sync.apps.AppsExtension, mcp_sync.extensions.Extension)
