"""Integrations for the places blocking code lives: Django, Flask and Celery workers.

All follow one pattern: **one** :class:`~mcp_sync.Manager` per process, configured with an
``mcpServers`` setting, built on first use, shared by every thread of the process, and
closed when the process exits. A process forked after the manager was built (a pre-fork
server such as gunicorn, Celery's prefork pool) never uses the parent's: it builds its own
on first use.

* :mod:`mcp_sync.contrib.django`: add ``"mcp_sync.contrib.django"`` to ``INSTALLED_APPS``,
  set ``MCP_SERVERS``, call ``get_client(name)`` in a view.
* :mod:`mcp_sync.contrib.flask`: ``MCP(app)`` (or ``init_app``), ``app.config["MCP_SERVERS"]``,
  ``mcp.get_client(name)`` in a view.
* :mod:`mcp_sync.contrib.celery`: ``MCP(celery_app)``, ``celery_app.conf.mcp_servers``,
  ``mcp.client(name)`` in a task; registers the task ``mcp_sync.call_tool`` that any
  caller can send by name.

Django, Flask and Celery are optional (``pip install 'mcp-sync-client[django]'``,
``[flask]`` or ``[celery]``); ``import mcp_sync`` never imports this package. See
``docs/web-apps.md`` and ``docs/scale-out.md``.
"""
