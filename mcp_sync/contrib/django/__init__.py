"""MCP servers in a Django project: one :class:`~mcp_sync.Manager` per process.

Settings::

    INSTALLED_APPS = [..., "mcp_sync.contrib.django"]
    MCP_SERVERS = {                                   # the mcpServers format
        "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem",
                                             "/srv/docs"]},
        "search": {"url": "https://search.example.com/mcp",
                   "headers": {"Authorization": "Bearer ${SEARCH_TOKEN}"}},
    }
    MCP_OPTIONS = {"timeout": 20}                     # optional: Manager/Client arguments

A view::

    from mcp_sync.contrib.django import get_client

    def search(request):
        result = get_client("search").call_tool("search", {"q": request.GET["q"]})
        return JsonResponse({"answer": result.text})

``MCP_SERVERS`` may also be a whole ``{"mcpServers": {...}}`` document or the path of an
``mcp.json`` file. The manager is built and connected on first use (not at start-up, so
``manage.py`` commands that never call a tool start no server), shared by every request
thread of the process (the threaded ``runserver``, gunicorn's ``--threads``), and closed
when the process exits. A process forked after it was built (gunicorn's workers, with or
without ``--preload``) builds its own: a client inherited over ``fork()`` is never used.

The app config (``mcp_sync.contrib.django.apps.MCPConfig``) checks ``MCP_SERVERS`` at
start-up and, when a test changes ``MCP_SERVERS`` or ``MCP_OPTIONS`` with
``override_settings``, closes the manager so the next use builds one from the new settings.
Django itself is imported only by this package, never by ``mcp_sync``.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from ...client import Client
from ...config._format import Source
from ...manager import Manager
from .._process import ProcessManager, server_name, servers_source

__all__ = ["close", "get_client", "get_manager", "load_settings"]


def load_settings() -> Tuple[Source, Dict[str, Any]]:
    """``(config, manager options)`` from the settings ``MCP_SERVERS`` and ``MCP_OPTIONS``.

    Raises:
        django.core.exceptions.ImproperlyConfigured: either setting is missing or invalid.
    """
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    try:
        source = servers_source(getattr(settings, "MCP_SERVERS", None), "MCP_SERVERS")
    except ValueError as exc:
        raise ImproperlyConfigured(str(exc)) from exc
    options = getattr(settings, "MCP_OPTIONS", None) or {}
    if not isinstance(options, dict):
        raise ImproperlyConfigured("MCP_OPTIONS must be a dict of mcp_sync.Manager arguments")
    return source, dict(options)


_process_manager = ProcessManager(load_settings, label="django")


def get_manager() -> Manager:
    """This process's :class:`~mcp_sync.Manager`, connected; built on first use.

    Thread-safe; concurrent first calls build one manager.

    Raises:
        django.core.exceptions.ImproperlyConfigured: ``MCP_SERVERS`` is missing.
        mcp_sync.config.ConfigError: ``MCP_SERVERS`` is not a valid configuration.
    """
    return _process_manager.get()


def get_client(name: Optional[str] = None) -> Client:
    """The connected :class:`~mcp_sync.Client` of server ``name`` (may be omitted when
    ``MCP_SERVERS`` has one server).

    Fetch it per request rather than keeping it: the object changes when the manager
    reconnects a server that died.

    Raises:
        KeyError: no such server.
        ValueError: ``name`` omitted, and there is not exactly one server.
        mcp_sync.manager.ServerUnavailable: the server is not connected (being
            reconnected, failed, or disabled).
    """
    manager = get_manager()
    return manager[server_name(manager, name, "MCP_SERVERS")]


def close() -> None:
    """Close this process's manager and stop its servers; the next use builds a new one.

    Called at process exit by itself; call it in tests, or after changing the settings.
    """
    _process_manager.close()

