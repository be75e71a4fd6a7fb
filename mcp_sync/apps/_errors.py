"""The exception of :mod:`mcp_sync.apps`."""

from __future__ import annotations

from ..exceptions import MCPError

__all__ = ["AppError"]


class AppError(MCPError):
    """A tool's app cannot be shown (the tool has no app, its resource is missing, not
    of the app type, or too large), or a page token was refused (forged, expired, or
    for another page). The message says which; what the server sent is excerpted."""
