"""Integrations for the places blocking code lives: Django and Flask.

Both follow one pattern: **one** :class:`~mcp_sync.Manager` per process, configured with an
``MCP_SERVERS`` setting in the ``mcpServers`` format, built on first use, shared by every
request thread, and closed when the process exits. A process forked after the manager was
built (a pre-fork server such as gunicorn) never uses the parent's: it builds its own on
first use.

* :mod:`mcp_sync.contrib.django`: add ``"mcp_sync.contrib.django"`` to ``INSTALLED_APPS``,
  set ``MCP_SERVERS``, call ``get_client(name)`` in a view.
* :mod:`mcp_sync.contrib.flask`: ``MCP(app)`` (or ``init_app``), ``app.config["MCP_SERVERS"]``,
  ``mcp.get_client(name)`` in a view.

Django and Flask are optional (``pip install 'mcp-sync-client[django]'`` or ``[flask]``);
``import mcp_sync`` never imports this package. See ``docs/web-apps.md``.
"""
