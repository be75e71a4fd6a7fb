"""The MCP Apps extension as a client declares it, and the check that a client did.

A client hosts apps only when its user says so: ``Client(extensions=[AppsExtension()])``
advertises ``io.modelcontextprotocol/ui`` with the MIME type this host renders, in both
eras. The helpers that show an app (:func:`~mcp_sync.apps.load_app` and what calls it)
refuse a client that does not declare it (:func:`require_declared`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util.text import excerpt
from ..extensions import Extension
from ._errors import AppError
from ._meta import EXTENSION_ID, client_settings

if TYPE_CHECKING:
    from ..client import Client

__all__ = ["AppsExtension", "require_declared"]


class AppsExtension(Extension):
    """MCP Apps (``io.modelcontextprotocol/ui``, SEP-1865), declared with the settings
    ``{"mimeTypes": ["text/html;profile=mcp-app"]}`` (:func:`client_settings`) in both
    eras. Give it to the client that shows apps::

        client = mcp_sync.connect(target, extensions=[mcp_sync.apps.AppsExtension()])

    A server may serve its UI tools only to a client that declares it.
    """

    def __init__(self) -> None:
        super().__init__(EXTENSION_ID, client_settings())


def require_declared(client: Client) -> None:
    """Raises ``AppError`` unless ``client`` declares the MCP Apps extension."""
    if any(extension.identifier == EXTENSION_ID for extension in client.extensions):
        return
    raise AppError(
        f"the client of {excerpt(client.name, 100)} does not declare MCP Apps "
        f"({EXTENSION_ID}); make it with extensions=[mcp_sync.apps.AppsExtension()]"
    )
