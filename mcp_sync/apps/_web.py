"""MCP Apps on a web site, whatever the framework: the app page, its frame, its bridge
endpoint. :mod:`mcp_sync.contrib.flask` and :mod:`mcp_sync.contrib.django.views` wrap it.

Three requests show one app:

1. **the page**, the site's own view (behind the site's own authentication): it calls
   the tool, checks the app's document, signs a page token, and answers the host page
   (:func:`~mcp_sync.apps._page.host_page`) under a strict policy of its own;
2. **the frame**, ``GET <frame URL>/<token>``: the app's document, read again from the
   server named by the token, under the app's policy as response headers, with the
   ``sandbox`` directive (an opaque origin) and ``frame-ancestors 'self'``;
3. **the bridge**, ``POST <bridge URL>`` with ``{"token": ..., "message": ...}``: one
   message of the app, through :class:`~mcp_sync.apps.AppBridge`, answered with a host
   reply; a tool call reaches the token's server only.

Nothing is kept between requests: the token carries, signed, what the frame and the
bridge may do, so any worker process of the site answers them.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, Mapping, Optional, Tuple

from .._protocol import DEFAULT, Timeout
from .._util.text import excerpt
from ..exceptions import MCPError
from ._bridge import AppBridge, BridgeLimits
from ._csp import AppCsp
from ._errors import AppError
from ._load import MAX_HTML_BYTES, find_tool, load_app, read_app_resource
from ._page import PERMISSIONS_DENIED, frame_headers, host_page, page_csp
from ._session import AppSession
from ._tokens import PageTokens

if TYPE_CHECKING:
    from ..client import Client

__all__ = ["MAX_BODY_BYTES", "WebApps", "WebResponse"]

log = logging.getLogger(__name__)

#: The largest bridge request body read (the app's message, its token, the JSON around).
MAX_BODY_BYTES = (1 << 20) + 16384


@dataclass(frozen=True)
class WebResponse:
    """A framework-neutral response: ``status``, ``headers``, and a ``body`` (text)."""

    status: int
    body: str
    headers: Dict[str, str] = field(default_factory=dict)


def _json(status: int, value: Any) -> WebResponse:
    return WebResponse(status, json.dumps(value), {"Content-Type": "application/json",
                                                   "Cache-Control": "no-store"})


def _error(status: int, kind: str, message: str) -> WebResponse:
    return _json(status, {"error": kind, "message": message})


class WebApps:
    """What the views of a site's MCP Apps do, on the process's clients.

    Args:
        secret: the site's secret key, which signs the page tokens.
        max_age: seconds a page's token stays valid (its frame and bridge calls work that
            long after the page was served).
        limits: the bounds on what an app sends (:class:`~mcp_sync.apps.BridgeLimits`).
        timeout: seconds each request to the server may take (the client's default
            when not given).
        max_concurrent: the most bridge requests this process serves at once; past it a
            request is answered 503 at once (a busy app cannot take every thread).
        height: the frame's height, in pixels, until the app asks for another.
        host_context: more of the ``hostContext`` the app gets (``theme``, ``locale``...).
        max_html_bytes: the largest app document taken.

    Can be shared between threads.
    """

    def __init__(self, secret: Any, *, max_age: float = 3600.0,
                 limits: Optional[BridgeLimits] = None, timeout: Timeout = DEFAULT,
                 max_concurrent: int = 16, height: int = 360,
                 host_context: Optional[Mapping[str, Any]] = None,
                 max_html_bytes: int = MAX_HTML_BYTES) -> None:
        if max_concurrent < 1:
            raise ValueError("max_concurrent must be at least 1")
        self.tokens = PageTokens(secret, max_age=max_age)
        self.limits = limits or BridgeLimits()
        self.timeout = timeout
        self.height = height
        self.host_context = dict(host_context or {})
        self.max_html_bytes = max_html_bytes
        self._slots = threading.BoundedSemaphore(max_concurrent)

    def page(self, client: Client, server: str, tool: str,
             arguments: Optional[Mapping[str, Any]], *, frame_url: Callable[[str], str],
             bridge_url: str, csrf: Optional[Tuple[str, str]] = None,
             title: Optional[str] = None) -> WebResponse:
        """The host page of the app of ``tool`` on ``server`` (whose connected client is
        ``client``), called with ``arguments``. ``frame_url(token)`` and ``bridge_url``
        are the site's URLs of the other two views; ``csrf`` is the header name and
        value the bridge requests carry (Django's CSRF protection).

        Raises:
            AppError: the tool has no app, or its document is refused.
            MCPError: a request to the server failed.
        """
        app = load_app(client, tool, arguments, timeout=self.timeout,
                       max_html_bytes=self.max_html_bytes)
        token = self.tokens.issue(server, tool, app.resource.uri)
        nonce = secrets.token_urlsafe(16)
        config = {
            "title": title or app.tool.title or tool,
            "frameUrl": frame_url(token),
            "bridgeUrl": bridge_url,
            "token": token,
            "csrfHeader": csrf[0] if csrf else None,
            "csrfToken": csrf[1] if csrf else None,
            "toolData": app.tool_data(),
            "maxMessageBytes": self.limits.max_message_bytes,
            "maxInFlight": 8,
            "height": self.height,
            "border": app.resource.prefers_border is not False,
            "allow": PERMISSIONS_DENIED,
        }
        body = host_page(title=str(config["title"]), nonce=nonce, config=config)
        return WebResponse(200, body, {
            "Content-Type": "text/html; charset=utf-8",
            "Content-Security-Policy": page_csp(nonce),
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "same-origin",
            "Cache-Control": "no-store",
        })

    def frame(self, token: str, client_for: Callable[[str], Client]) -> WebResponse:
        """The app's document for the page whose token is ``token``, read again from its
        server (``client_for(server)`` gives the connected client): 403 for a refused
        token, 502 for a document the server no longer serves as an app, 503 when the
        server is not reachable."""
        try:
            claims = self.tokens.verify(token)
        except AppError as exc:
            return WebResponse(403, str(exc), {"Content-Type": "text/plain; charset=utf-8"})
        try:
            resource = read_app_resource(client_for(claims.server), claims.uri,
                                         max_bytes=self.max_html_bytes, timeout=self.timeout)
        except AppError as exc:
            log.warning("app frame refused: %s", exc)
            return WebResponse(502, "the app's document was refused",
                               {"Content-Type": "text/plain; charset=utf-8"})
        except (MCPError, KeyError) as exc:
            log.warning("app frame of %s: %s", excerpt(claims.server, 100), excerpt(exc, 300))
            return WebResponse(503, "the app's server is not available",
                               {"Content-Type": "text/plain; charset=utf-8"})
        return WebResponse(200, resource.html, frame_headers(resource.csp))

    def bridge(self, body: bytes, client_for: Callable[[str], Client]) -> WebResponse:
        """The host reply to one message of an app: ``body`` is the request's JSON,
        ``{"token": ..., "message": <the app's message as JSON text>}``. 400 for a body
        that is not that, 403 for a refused token, 413 past :data:`MAX_BODY_BYTES`, 503
        when this process serves ``max_concurrent`` bridge requests already or the
        server is not reachable; otherwise 200 with the reply (a refused message is a
        200 too: its refusal, and the app's error, are in the reply)."""
        if len(body) > MAX_BODY_BYTES:
            return _error(413, "TooLarge", f"bodies are at most {MAX_BODY_BYTES} bytes")
        try:
            request = json.loads(body)
        except (ValueError, RecursionError):
            return _error(400, "BadRequest", "the body is not JSON")
        if not isinstance(request, dict) or not isinstance(request.get("message"), str):
            return _error(400, "BadRequest", 'the body is {"token": ..., "message": "..."}')
        try:
            claims = self.tokens.verify(request.get("token"))
        except AppError as exc:
            return _error(403, "Forbidden", str(exc))
        if not self._slots.acquire(blocking=False):
            return _error(503, "Busy", "too many app requests at once; try again")
        try:
            return self._answer(claims.server, claims.tool, claims.uri, request["message"],
                                client_for)
        finally:
            self._slots.release()

    def _answer(self, server: str, tool: str, uri: str, message: str,
                client_for: Callable[[str], Client]) -> WebResponse:
        try:
            client = client_for(server)
            definition: Any = {"name": tool, "inputSchema": {"type": "object"}}
            csp = AppCsp()
            if _is_initialize(message, self.limits.max_message_bytes):
                # The host context names the tool and the approved origins: read both.
                definition = find_tool(client, tool, timeout=self.timeout)
                csp = read_app_resource(client, uri, max_bytes=self.max_html_bytes,
                                        timeout=self.timeout).csp
        except AppError as exc:
            log.warning("app bridge of %s: %s", excerpt(server, 100), exc)
            return _error(502, "AppRefused", "the app is no longer served")
        except (MCPError, KeyError) as exc:
            log.warning("app bridge of %s: %s", excerpt(server, 100), excerpt(exc, 300))
            return _error(503, "Unavailable", "the app's server is not available")
        bridge = AppBridge(definition, csp=csp, limits=self.limits,
                           host_context=self.host_context, server=server)
        return _json(200, AppSession(client, bridge, timeout=self.timeout).handle(message))


def _is_initialize(message: str, limit: int) -> bool:
    """Whether ``message`` (within ``limit``) is a ``ui/initialize`` request; the bridge
    validates it in full."""
    if len(message) > limit:
        return False
    try:
        parsed = json.loads(message)
    except (ValueError, RecursionError):
        return False
    return isinstance(parsed, dict) and parsed.get("method") == "ui/initialize"
