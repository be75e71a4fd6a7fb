"""MCP servers in a Flask app: one :class:`~mcp_sync.Manager` per process.

::

    from flask import Flask, jsonify
    from mcp_sync.contrib.flask import MCP

    app = Flask(__name__)
    app.config["MCP_SERVERS"] = {                     # the mcpServers format
        "demo": {"command": "python", "args": ["-m", "mcp_sync.demo_server"]},
    }
    app.config["MCP_OPTIONS"] = {"timeout": 20}        # optional: Manager/Client arguments
    mcp = MCP(app)                                     # or MCP() + mcp.init_app(app)

    @app.get("/add")
    def add():
        result = mcp.get_client("demo").call_tool("add", {"a": 2, "b": 3})
        return jsonify(result.structured)

``MCP_SERVERS`` may also be a whole ``{"mcpServers": {...}}`` document or the path of an
``mcp.json`` file. The manager is built and connected on first use (importing the app, or
``flask routes``, starts no server), shared by every request thread of the process
(``flask run`` is threaded; so is gunicorn with ``--threads``), and closed when the process
exits. A process forked after it was built (gunicorn's workers, also with ``--preload``)
builds its own: a client inherited over ``fork()`` is never used.

Inside a request (or any app context) the module functions :func:`get_client` and
:func:`get_manager` find the app through ``flask.current_app``, so blueprints need no
reference to the extension object. Flask is imported only by this module, never by
``mcp_sync``.

MCP Apps (a tool's interactive interface, see :mod:`mcp_sync.apps` and docs/apps.md):
:class:`AppViews` registers the app's frame and bridge endpoint, behind the site's own
decorators, and renders an app page from a view of the site's::

    apps = AppViews(mcp, decorators=[login_required])   # needs app.config["SECRET_KEY"]

    @app.get("/board")
    @login_required
    def board():
        return apps.render("demo", "show_board", {"title": "Groceries"})
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple

from flask import Blueprint, Flask, Response, current_app, has_app_context, request, url_for

from ..client import Client
from ..config._format import ConfigError, Source, load_config
from ..manager import Manager
from ._process import ProcessManager, server_name, servers_source

__all__ = ["EXTENSION_KEY", "MCP", "AppViews", "get_client", "get_manager"]

#: The key of this extension's state in ``app.extensions``.
EXTENSION_KEY = "mcp_sync"


class MCP:
    """The Flask extension: ``MCP(app)``, or ``MCP()`` then :meth:`init_app` (app
    factories; one extension object may serve several apps, each with its own manager).

    Args:
        app: the app, to initialise at once.
        **options: default :class:`~mcp_sync.Manager` (and Client) keyword arguments;
            ``app.config["MCP_OPTIONS"]`` overrides them.

    Can be shared between threads.
    """

    def __init__(self, app: Optional[Flask] = None, **options: Any) -> None:
        self.options = options
        self._app = app
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        """Register with ``app``; nothing connects until first use.

        Raises:
            ValueError, ConfigError: ``MCP_SERVERS`` is set but invalid.
        """
        if app.config.get("MCP_SERVERS") is not None:
            try:
                load_config(servers_source(app.config["MCP_SERVERS"]))
            except ConfigError as exc:
                raise ConfigError(f"MCP_SERVERS of app {app.name!r}: {exc}") from exc

        def load() -> Tuple[Source, Dict[str, Any]]:
            source = servers_source(app.config.get("MCP_SERVERS"))
            options = dict(self.options)
            options.update(app.config.get("MCP_OPTIONS") or {})
            return source, options

        app.extensions[EXTENSION_KEY] = ProcessManager(load, label=f"flask:{app.name}")

    def _process_manager(self, app: Optional[Flask]) -> ProcessManager:
        if app is None:
            if has_app_context():
                app = current_app
            elif self._app is not None:
                app = self._app
            else:
                raise RuntimeError("no app: call this inside an app context or a request, "
                                   "pass app=, or create the extension with MCP(app)")
        return _state(app)

    def get_manager(self, app: Optional[Flask] = None) -> Manager:
        """The app's :class:`~mcp_sync.Manager` for this process, connected; built on first
        use. Thread-safe: concurrent first calls build one manager.

        The app is ``app``, else the current app, else the one given to ``MCP(app)``.

        Raises:
            ValueError: ``MCP_SERVERS`` is missing; ConfigError: it is invalid.
            RuntimeError: no app (see above), or the extension was not initialised on it.
        """
        return self._process_manager(app).get()

    def get_client(self, name: Optional[str] = None, app: Optional[Flask] = None) -> Client:
        """The connected :class:`~mcp_sync.Client` of server ``name`` (may be omitted when
        ``MCP_SERVERS`` has one server). Fetch it per request rather than keeping it: the
        object changes when the manager reconnects a server that died.

        Raises:
            KeyError: no such server.
            ValueError: ``name`` omitted, and there is not exactly one server.
            mcp_sync.manager.ServerUnavailable: the server is not connected now.
        """
        manager = self.get_manager(app)
        return manager[server_name(manager, name)]

    def close(self, app: Optional[Flask] = None) -> None:
        """Close the app's manager in this process (stopping its servers); the next use
        builds a new one. Done at process exit by itself."""
        self._process_manager(app).close()


def _state(app: Flask) -> ProcessManager:
    state = app.extensions.get(EXTENSION_KEY)
    if not isinstance(state, ProcessManager):
        raise RuntimeError(f"mcp_sync's Flask extension is not initialised on app {app.name!r}: "
                           "call MCP(app) or mcp.init_app(app)")
    return state


def get_manager() -> Manager:
    """The current app's :class:`~mcp_sync.Manager` (see :meth:`MCP.get_manager`).

    Raises:
        RuntimeError: outside an app context, or the extension is not initialised.
    """
    return _state(current_app).get()


def get_client(name: Optional[str] = None) -> Client:
    """The current app's client for server ``name`` (see :meth:`MCP.get_client`)."""
    manager = get_manager()
    return manager[server_name(manager, name)]


class AppViews:
    """MCP Apps on a Flask site: the frame and bridge views, and :meth:`render` for the
    site's own app pages (see :mod:`mcp_sync.apps._web` for the three requests).

    Args:
        mcp: the site's :class:`MCP` extension: the app's calls reach its manager's
            servers.
        app: the app to register on (default: the one given to ``MCP(app)``, if any;
            else call :meth:`init_app`).
        url_prefix: where the frame (``<prefix>/frame/<token>``) and the bridge
            (``<prefix>/bridge``) are served.
        decorators: the site's own view decorators (``login_required``...), applied to
            both views, outermost first; decorate the pages that call :meth:`render`
            the same way.
        name: the blueprint's name (endpoints ``<name>.frame`` and ``<name>.bridge``).
        **options: :class:`~mcp_sync.apps.WebApps` arguments (``max_age``, ``limits``,
            ``timeout``, ``max_concurrent``, ``height``, ``host_context``).

    The page tokens are signed with ``app.config["SECRET_KEY"]`` (required). The bridge
    takes only ``application/json`` POSTs carrying the page's token, so another site's
    form cannot reach it. Can be shared between threads.
    """

    def __init__(self, mcp: MCP, app: Optional[Flask] = None, *,
                 url_prefix: str = "/mcp-apps",
                 decorators: Sequence[Callable[[Callable[..., Any]], Callable[..., Any]]] = (),
                 name: str = "mcp_sync_apps", **options: Any) -> None:
        self.mcp = mcp
        self.name = name
        self.options = options
        self._webs: Dict[Any, Any] = {}  # secret -> WebApps, built on first use
        self.blueprint = Blueprint(name, __name__, url_prefix=url_prefix)

        def wrap(view: Callable[..., Any]) -> Callable[..., Any]:
            for decorator in reversed(tuple(decorators)):
                view = decorator(view)
            return view

        self.blueprint.add_url_rule("/frame/<token>", "frame", wrap(self._frame),
                                    methods=["GET"])
        self.blueprint.add_url_rule("/bridge", "bridge", wrap(self._bridge), methods=["POST"])
        app = app if app is not None else mcp._app
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        """Register the frame and bridge views on ``app``."""
        app.register_blueprint(self.blueprint)

    def _web(self) -> Any:
        from ..apps import WebApps

        secret = current_app.config.get("SECRET_KEY")
        if not secret:
            raise RuntimeError("MCP Apps pages sign their tokens with the app's SECRET_KEY: "
                               "set app.config['SECRET_KEY']")
        web = self._webs.get(secret)
        if web is None:
            web = self._webs.setdefault(secret, WebApps(secret, **self.options))
        return web

    @staticmethod
    def _response(answer: Any) -> Response:
        return Response(answer.body, status=answer.status, headers=answer.headers)

    def render(self, server: Optional[str], tool: str,
               arguments: Optional[Mapping[str, Any]] = None, *,
               title: Optional[str] = None) -> Response:
        """The app page of ``tool`` on ``server`` (may be None when there is one server),
        called with ``arguments``: call it from a view of the site's, inside a request.
        Blocks while the tool runs and its document is read.

        Raises:
            mcp_sync.apps.AppError: the tool has no app, or its document is refused.
            MCPError: a request to the server failed (``ServerUnavailable``...).
            RuntimeError: no ``SECRET_KEY``.
        """
        web = self._web()
        manager = self.mcp.get_manager()
        name = server_name(manager, server)
        answer = web.page(
            manager[name], name, tool, arguments,
            frame_url=lambda token: url_for(f"{self.name}.frame", token=token),
            bridge_url=url_for(f"{self.name}.bridge"), title=title)
        return self._response(answer)

    def _frame(self, token: str) -> Response:
        manager = self.mcp.get_manager()
        return self._response(self._web().frame(token, lambda server: manager[server]))

    def _bridge(self) -> Response:
        from ..apps import WebResponse
        from ..apps._web import MAX_BODY_BYTES

        if request.mimetype != "application/json":
            return self._response(WebResponse(415, '{"error": "UnsupportedMediaType"}',
                                              {"Content-Type": "application/json"}))
        body = request.stream.read(MAX_BODY_BYTES + 1)
        manager = self.mcp.get_manager()
        return self._response(self._web().bridge(body, lambda server: manager[server]))
