"""MCP Apps in a Django project: the app page, its frame and its bridge endpoint.

URLs (the frame and the bridge, behind the project's own decorators)::

    from django.contrib.auth.decorators import login_required
    from mcp_sync.contrib.django.views import app_urls

    urlpatterns = [..., path("mcp-apps/", include(app_urls(decorators=[login_required])))]

A page of the project's (decorated the same way)::

    from mcp_sync.contrib.django.views import render_app

    @login_required
    def board(request):
        return render_app(request, "board", "show_board", {"title": "Groceries"})

The page tokens are signed with ``SECRET_KEY``; the optional setting ``MCP_APPS`` holds
:class:`~mcp_sync.apps.WebApps` arguments (``{"max_age": 600, "timeout": 20}``). The
bridge is a POST that Django's CSRF protection checks (``CsrfViewMiddleware``; the page
sends the token in the CSRF header); the frame is served ``X-Frame-Options:
SAMEORIGIN``, so ``XFrameOptionsMiddleware`` lets the project's own pages frame it. See
:mod:`mcp_sync.apps._web` for what each request does.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import get_token
from django.urls import path, reverse
from django.views.decorators.clickjacking import xframe_options_sameorigin
from django.views.decorators.http import require_GET, require_POST

from .._process import server_name
from . import get_manager

__all__ = ["APP_NAMESPACE", "app_bridge", "app_frame", "app_urls", "render_app"]

#: The URL namespace of :func:`app_urls` (``reverse("mcp_sync_apps:frame", ...)``).
APP_NAMESPACE = "mcp_sync_apps"

_webs: Dict[Tuple[str, str], Any] = {}  # (secret, options) -> WebApps, built on first use


def _web() -> Any:
    from ...apps import WebApps

    options = dict(getattr(settings, "MCP_APPS", None) or {})
    key = (str(settings.SECRET_KEY), repr(sorted(options.items())))
    web = _webs.get(key)
    if web is None:
        web = _webs.setdefault(key, WebApps(settings.SECRET_KEY, **options))
    return web


def _response(answer: Any) -> HttpResponse:
    response = HttpResponse(answer.body, status=answer.status)
    for name, value in answer.headers.items():
        response[name] = value
    return response


def _csrf_header() -> str:
    # Django names it as WSGI does (HTTP_X_CSRFTOKEN); a browser sends X-CSRFTOKEN.
    name = str(settings.CSRF_HEADER_NAME)
    return (name[5:] if name.startswith("HTTP_") else name).replace("_", "-")


def render_app(request: HttpRequest, server: Optional[str], tool: str,
               arguments: Optional[Mapping[str, Any]] = None, *,
               title: Optional[str] = None) -> HttpResponse:
    """The app page of ``tool`` on ``server`` (may be None when ``MCP_SERVERS`` has one
    server), called with ``arguments``: return it from a view of the project's. Blocks
    while the tool runs and its document is read.

    Raises:
        mcp_sync.apps.AppError: the tool has no app, or its document is refused.
        MCPError: a request to the server failed (``ServerUnavailable``...).
        django.urls.NoReverseMatch: :func:`app_urls` is not in the URLconf.
    """
    manager = get_manager()
    name = server_name(manager, server, "MCP_SERVERS")
    answer = _web().page(
        manager[name], name, tool, arguments,
        frame_url=lambda token: reverse(f"{APP_NAMESPACE}:frame", kwargs={"token": token}),
        bridge_url=reverse(f"{APP_NAMESPACE}:bridge"),
        csrf=(_csrf_header(), get_token(request)), title=title)
    return _response(answer)


View = Callable[..., HttpResponse]


def _app_frame(request: HttpRequest, token: str) -> HttpResponse:
    """The app's document for the page whose token is ``token`` (GET only; framed by the
    project's own pages only)."""
    manager = get_manager()
    return _response(_web().frame(token, lambda server: manager[server]))


def _app_bridge(request: HttpRequest) -> HttpResponse:
    """One message of an app (a POST of ``application/json``: the page's token and the
    message), under Django's CSRF protection."""
    from ...apps import WebResponse
    from ...apps._web import MAX_BODY_BYTES

    if request.content_type != "application/json":
        return _response(WebResponse(415, '{"error": "UnsupportedMediaType"}',
                                     {"Content-Type": "application/json"}))
    body = request.read(MAX_BODY_BYTES + 1)
    manager = get_manager()
    return _response(_web().bridge(body, lambda server: manager[server]))


# Django's decorators ship no type hints: applied here, not with "@", so the views keep theirs.
app_frame: View = xframe_options_sameorigin(require_GET(_app_frame))
app_bridge: View = require_POST(_app_bridge)


def app_urls(decorators: Sequence[Callable[[View], View]] = ()) -> Tuple[List[Any], str]:
    """The frame and bridge URLs, for ``include()``, each view wrapped by
    ``decorators`` (the project's own: ``login_required``..., outermost first)."""

    def wrap(view: View) -> View:
        for decorator in reversed(tuple(decorators)):
            view = decorator(view)
        return view

    return ([path("frame/<str:token>", wrap(app_frame), name="frame"),
             path("bridge", wrap(app_bridge), name="bridge")], APP_NAMESPACE)
