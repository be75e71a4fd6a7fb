"""An app loaded through a connected client: its tool called, its HTML read and checked.

Blocking, on the client's public methods (``list_tools``, ``read_resource``,
``call_tool``); what the server sends is bounded and checked before any of it reaches a
page.
"""

from __future__ import annotations

import base64
import binascii
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple

from .._protocol import DEFAULT, Timeout
from .._util.text import excerpt
from ._bridge import AppBridge, BridgeLimits
from ._csp import AppCsp
from ._errors import AppError
from ._extension import require_declared
from ._meta import APP_MIME_TYPE, UI_SCHEME, tool_resource_uri

if TYPE_CHECKING:
    from .. import types
    from ..client import Client

__all__ = ["MAX_HTML_BYTES", "App", "AppResource", "load_app", "read_app_resource"]

log = logging.getLogger(__name__)

#: The largest app document taken (UTF-8 bytes), by default.
MAX_HTML_BYTES = 4 << 20
# The permissions an app may ask for (``_meta.ui.permissions``); this host grants none.
_PERMISSIONS = ("camera", "microphone", "geolocation", "clipboardWrite")


@dataclass(frozen=True)
class AppResource:
    """An app's document, as its server serves it: ``html`` (checked: text of the app
    type, within the bound), its policy ``csp``, the ``permissions`` it asked for
    (never granted here) and whether it ``prefers_border`` (None: no preference)."""

    uri: str
    html: str
    csp: AppCsp = field(default_factory=AppCsp)
    permissions: Tuple[str, ...] = ()
    prefers_border: Optional[bool] = None


def _mime(value: Any) -> str:
    return "".join(value.split()).lower() if isinstance(value, str) else ""


def _ui_meta(meta: Any) -> Optional[Mapping[str, Any]]:
    ui = meta.get("ui") if isinstance(meta, Mapping) else None
    return ui if isinstance(ui, Mapping) else None


def read_app_resource(client: Client, uri: str, *, max_bytes: int = MAX_HTML_BYTES,
                      timeout: Timeout = DEFAULT) -> AppResource:
    """Read the app document ``uri`` (``resources/read``) and check it.

    The contents must be the app type (``text/html;profile=mcp-app``), as text or
    base64 UTF-8, of at most ``max_bytes``. Its ``_meta.ui`` (policy, permissions,
    border) is read from the contents; when they carry none, from the server's
    ``resources/list`` entry for ``uri``.

    Raises:
        AppError: ``uri`` is not a ``ui://`` URI, or the contents are missing, of
            another type, not UTF-8, or too large.
        MCPError: the read itself failed (the client's errors).
    """
    if not isinstance(uri, str) or not uri.startswith(UI_SCHEME):
        raise AppError(f"not an app resource URI: {excerpt(uri, 200)}")
    result = client.read_resource(uri, timeout=timeout)
    contents = [c for c in result.contents if c.uri == uri] or list(result.contents[:1])
    if not contents:
        raise AppError(f"app resource {excerpt(uri, 200)}: the server sent no contents")
    content = contents[0]
    if _mime(content.mime_type) != APP_MIME_TYPE:
        raise AppError(f"app resource {excerpt(uri, 200)} is {excerpt(content.mime_type, 80)}"
                       f", not {APP_MIME_TYPE}: not rendered")
    text = getattr(content, "text", None)
    blob = getattr(content, "blob", None)
    if isinstance(text, str):
        if len(text) > max_bytes or len(text.encode("utf-8", "surrogatepass")) > max_bytes:
            raise AppError(f"app resource {excerpt(uri, 200)} is larger than {max_bytes} bytes")
        html = text
    elif isinstance(blob, str):
        if len(blob) > (max_bytes + 2) // 3 * 4 + 4:
            raise AppError(f"app resource {excerpt(uri, 200)} is larger than {max_bytes} bytes")
        try:
            html = base64.b64decode(blob, validate=True).decode("utf-8")
        except (binascii.Error, ValueError) as exc:
            raise AppError(f"app resource {excerpt(uri, 200)}: its blob is not base64 "
                           "UTF-8 text") from exc
        if len(html.encode("utf-8")) > max_bytes:
            raise AppError(f"app resource {excerpt(uri, 200)} is larger than {max_bytes} bytes")
    else:
        raise AppError(f"app resource {excerpt(uri, 200)} holds neither text nor a blob")
    ui = _ui_meta(content.meta)
    if ui is None:
        listed = [r for r in client.list_resources(timeout=timeout) if r.uri == uri]
        ui = _ui_meta(listed[0].meta) if listed else None
    ui = ui or {}
    permissions = ui.get("permissions")
    asked = tuple(p for p in _PERMISSIONS if isinstance(permissions, Mapping)
                  and p in permissions)
    if asked:
        log.info("app %s asks for %s; this host grants no permission", excerpt(uri, 200),
                 ", ".join(asked))
    border = ui.get("prefersBorder")
    return AppResource(uri=uri, html=html, csp=AppCsp.from_meta(ui.get("csp"), uri=uri),
                       permissions=asked,
                       prefers_border=border if isinstance(border, bool) else None)


@dataclass(frozen=True)
class App:
    """A tool's app, loaded: the ``tool`` as listed, the ``arguments`` it was called
    with, its ``result``, and its ``resource`` (the document and its policy), from the
    server the client calls ``server``."""

    server: str
    tool: types.Tool
    arguments: Dict[str, Any]
    result: types.CallToolResult
    resource: AppResource

    def bridge(self, *, limits: Optional[BridgeLimits] = None,
               host_context: Optional[Mapping[str, Any]] = None) -> AppBridge:
        """A new :class:`AppBridge` for this app."""
        return AppBridge(self.tool, csp=self.resource.csp, limits=limits,
                         host_context=host_context, server=self.server)

    def tool_data(self) -> List[Dict[str, Any]]:
        """The tool's input and result notifications, for the initialised app."""
        return AppBridge.tool_data(self.arguments, self.result)


def find_tool(client: Client, name: str, *, timeout: Timeout = DEFAULT) -> types.Tool:
    """The tool ``name`` as ``client`` lists it now, with its app's ``ui://`` URI.

    Raises:
        AppError: the server lists no such tool, or the tool has no app.
    """
    for tool in client.list_tools(timeout=timeout):
        if tool.name == name:
            if tool_resource_uri(tool) is None:
                raise AppError(f"tool {excerpt(name, 100)} of {excerpt(client.name, 100)} "
                               "has no app (no _meta.ui.resourceUri with a ui:// URI)")
            return tool
    raise AppError(f"{excerpt(client.name, 100)} lists no tool {excerpt(name, 100)}")


def load_app(client: Client, tool: str, arguments: Optional[Mapping[str, Any]] = None, *,
             timeout: Timeout = DEFAULT, max_html_bytes: int = MAX_HTML_BYTES) -> App:
    """Load the app of ``tool``: find the tool, read and check its document, then call
    the tool with ``arguments`` (the document first: a tool whose app cannot be shown is
    not called). Blocks; each request is bounded by ``timeout`` (the client's default
    when not given).

    ``client`` must declare the extension (``extensions=[AppsExtension()]``): a server
    may keep its apps from a client that does not.

    Raises:
        AppError: the client does not declare MCP Apps, the tool is not listed, has no
            app, or its document is refused (see :func:`read_app_resource`).
        MCPError: a request failed (the client's errors: ``ServerError``,
            ``RequestTimeout``, ``ConnectionClosed``...).
    """
    require_declared(client)
    definition = find_tool(client, tool, timeout=timeout)
    uri = tool_resource_uri(definition)
    assert uri is not None  # find_tool checked it
    resource = read_app_resource(client, uri, max_bytes=max_html_bytes, timeout=timeout)
    given = dict(arguments or {})
    result = client.call_tool(tool, given, timeout=timeout)
    return App(server=client.name, tool=definition, arguments=given, result=result,
               resource=resource)
