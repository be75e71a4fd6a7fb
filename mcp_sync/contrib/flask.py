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
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from flask import Flask, current_app, has_app_context

from ..client import Client
from ..config._format import ConfigError, Source, load_config
from ..manager import Manager
from ._process import ProcessManager, server_name, servers_source

__all__ = ["EXTENSION_KEY", "MCP", "get_client", "get_manager"]

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
