"""MCP Apps (the ``io.modelcontextprotocol/ui`` extension, SEP-1865): a tool's
interactive HTML interface, hosted in a notebook or on a web page.

::

    from mcp_sync.apps import show
    show(client, "show_board", {"title": "Groceries"})    # Jupyter: the app, inline

    # Flask: mcp_sync.contrib.flask.AppViews; Django: mcp_sync.contrib.django.views

The rules this host implements, from the specification (ext-apps, 2026-01-26):

**What a tool and its resource say.** A tool has an app when its
``_meta.ui.resourceUri`` (or the deprecated ``_meta["ui/resourceUri"]``) is a ``ui://``
URI. ``_meta.ui.visibility`` lists who may use it: ``"model"`` (offered to a model) and
``"app"`` (callable by an app of the same server); absent means both, the default. A
visibility that is not a list of strings means nobody. The resource is read with
``resources/read``; its contents must be ``text/html;profile=mcp-app`` (text, or a
base64 blob of UTF-8), at most ``max_html_bytes``; its ``_meta.ui`` (from the contents,
else from the ``resources/list`` entry) carries ``csp`` (``connectDomains``,
``resourceDomains``, ``frameDomains``, ``baseUriDomains``), ``permissions`` (camera,
microphone, geolocation, clipboardWrite: this host grants none), ``domain`` (ignored:
the frame's origin is always opaque) and ``prefersBorder``.

**The policy** (:class:`AppCsp`): ``default-src 'none'``; inline scripts and styles and
``data:`` images and media; each declared origin in its directives only (``connect-src``
for connectDomains; ``script-src``, ``style-src``, ``img-src``, ``font-src``,
``media-src`` for resourceDomains; ``frame-src``, ``base-uri``); ``'none'`` where nothing
is declared; no ``'self'``, no ``eval``, no ``object``, no form submission. A declared
entry that is not a plain origin (``https://host``, ``https://*.host``, ``wss://host:port``)
is dropped: a server can narrow its app's reach, never widen it.

**The frame.** The app runs in ``<iframe sandbox="allow-scripts">`` without
``allow-same-origin`` (an opaque origin: no access to the host page, its cookies or its
storage; no popups, forms or top navigation), with ``allow`` denying every permission.
In Jupyter its document is the frame's ``srcdoc``, the policy first as a ``<meta
http-equiv>``; on a web site it has a URL of its own, served with the policy, the
``sandbox`` directive and ``frame-ancestors 'self'`` as response headers. The host page
takes messages only from that frame (``event.source``, origin ``"null"``), at most
``max_message_bytes`` each and 8 in flight, and stops bridging when the frame loads a
second document.

**The channel** (JSON-RPC 2.0 over ``postMessage``; :class:`AppBridge`). From the app,
the host takes the requests ``ui/initialize`` (answered with the host's info, its
capabilities ``serverTools``, ``logging`` and ``sandbox`` — the approved origins, no
permission — and the host context: ``toolInfo.tool``, ``theme``, ``displayMode``
``"inline"``, ``containerDimensions.maxHeight``, ``platform`` ``"web"``), ``ping``,
``ui/request-display-mode`` (answered ``"inline"``, the one mode) and ``tools/call``;
and the notifications ``ui/notifications/initialized`` (then the host posts
``ui/notifications/tool-input`` with the tool's arguments and
``ui/notifications/tool-result`` with its result), ``ui/notifications/size-changed``
(the frame resized, clamped to ``max_width`` and ``max_height``),
``notifications/message`` (logged at DEBUG) and ``ui/notifications/request-teardown``
(noted); and responses to the host's own requests (``ui/resource-teardown``, sent
before a view is removed). Every other request (``ui/open-link``, ``ui/message``,
``ui/update-model-context``, ``ui/download-file``, ``resources/read``, ``tools/list``,
``sampling/createMessage``...) is answered ``-32601``; every other notification, a
batch, a message that is not JSON-RPC 2.0, over the size bound, or with params that are
not an object, is refused (a request still gets its error). Refusals are logged
(WARNING, the first 20 of a bridge; then DEBUG), with the app's text excerpted.

**The door** (:meth:`AppBridge.authorize`). ``tools/call`` reaches one server: the one
that served the app. The tool must be listed by it now, and its visibility must hold
``"app"``; its arguments must be an object. The call goes through the client like any
other (its bounds, validation and timeout apply); its result, or its error (the
server's code and an excerpt of its message; a timeout is ``-32001``; the library's own
failures name only their kind), is posted back. On the web, each bridge request carries
the page's signed token (:class:`PageTokens`: server, tool, resource, expiry), which
decides the server; Django's CSRF protection applies; the user's own decorators wrap
the views. Tools whose visibility lacks ``"model"`` are never offered to a model by
:class:`mcp_sync.Toolbox`.

**The capability.** A client that hosts apps declares
``capabilities.extensions["io.modelcontextprotocol/ui"] = {"mimeTypes":
["text/html;profile=mcp-app"]}`` (:func:`client_settings`); a server may serve its UI
tools only then. The client declares it when given :class:`AppsExtension`
(``Client(extensions=[AppsExtension()])``, in both eras), and only then:
:func:`load_app` (which :func:`show` and the web views go through) refuses a client
that does not, with :class:`AppError`.

Each name here is loaded on first use; :func:`show` and :class:`AppView` need
``anywidget`` (``pip install 'mcp-sync-client[jupyter]'``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Dict, List

if TYPE_CHECKING:
    from ._bridge import AppBridge, BridgeLimits, Step, ToolCall
    from ._csp import AppCsp
    from ._errors import AppError
    from ._extension import AppsExtension
    from ._jupyter import AppView, show
    from ._load import MAX_HTML_BYTES, App, AppResource, load_app, read_app_resource
    from ._meta import (
        APP_MIME_TYPE,
        EXTENSION_ID,
        UI_PROTOCOL_VERSION,
        app_callable,
        client_settings,
        model_visible,
        tool_resource_uri,
        tool_visibility,
    )
    from ._session import AppSession
    from ._tokens import PageClaims, PageTokens
    from ._web import WebApps, WebResponse

__all__ = [
    "APP_MIME_TYPE",
    "EXTENSION_ID",
    "MAX_HTML_BYTES",
    "UI_PROTOCOL_VERSION",
    "App",
    "AppBridge",
    "AppCsp",
    "AppError",
    "AppResource",
    "AppSession",
    "AppView",
    "AppsExtension",
    "BridgeLimits",
    "PageClaims",
    "PageTokens",
    "Step",
    "ToolCall",
    "WebApps",
    "WebResponse",
    "app_callable",
    "client_settings",
    "load_app",
    "model_visible",
    "read_app_resource",
    "show",
    "tool_resource_uri",
    "tool_visibility",
]

# Each public name's module, loaded on first use (PEP 562): the Toolbox reads visibility
# from ._meta without loading the rest, and anywidget (under ._jupyter) is imported by
# AppView and show only.
_LAZY: Dict[str, str] = {
    "AppBridge": "_bridge", "BridgeLimits": "_bridge", "Step": "_bridge",
    "ToolCall": "_bridge", "AppCsp": "_csp", "AppError": "_errors",
    "AppsExtension": "_extension",
    "AppView": "_jupyter", "show": "_jupyter", "MAX_HTML_BYTES": "_load", "App": "_load",
    "AppResource": "_load", "load_app": "_load", "read_app_resource": "_load",
    "APP_MIME_TYPE": "_meta", "EXTENSION_ID": "_meta", "UI_PROTOCOL_VERSION": "_meta",
    "app_callable": "_meta", "client_settings": "_meta", "model_visible": "_meta",
    "tool_resource_uri": "_meta", "tool_visibility": "_meta", "AppSession": "_session",
    "PageClaims": "_tokens", "PageTokens": "_tokens", "WebApps": "_web",
    "WebResponse": "_web",
}


def __getattr__(name: str) -> Any:
    home = _LAZY.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(__all__))
