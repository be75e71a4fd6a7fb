"""The Celery app that the worker processes of tests/places/test_contrib_celery.py run
(``python -m celery -A celery_app worker``, with this folder on ``PYTHONPATH``).

Configured from the environment the test gives each worker:

* ``MCP_TEST_REDIS``: the Redis URL, broker and result backend;
* ``MCP_TEST_SERVERS``: the ``mcpServers`` mapping, as JSON (``${VAR}`` references are
  expanded by mcp_sync in the worker);
* ``MCP_TEST_OPTIONS``: ``app.conf.mcp_options``, as JSON (optional);
* ``MCP_TEST_TASK_OPTIONS``: the ``mcp_sync.call_tool`` task's options, as JSON (optional);
* ``MCP_TEST_SPANS``: a file: when set, the worker traces (an OpenTelemetry SDK whose spans
  go to that file, ``span_file.py``, and Celery instrumented). Only for ``solo``
  workers: a prefork pool would need the instrumentation in each pool process;
* ``MCP_TEST_CELERY_CONF``: more Celery settings, as JSON (optional).

Besides ``mcp_sync.call_tool`` it has one task of its own, ``tests.whoami``, which uses
``MCP.client()`` the way an application's tasks would.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional

from celery import Celery

from mcp_sync.contrib.celery import MCP
from mcp_sync.manager import ServerUnavailable

if os.environ.get("MCP_TEST_SPANS"):
    import span_file

    span_file.install(os.environ["MCP_TEST_SPANS"])

app = Celery("mcp_sync_tests", broker=os.environ["MCP_TEST_REDIS"],
             backend=os.environ["MCP_TEST_REDIS"])
app.conf.update(
    mcp_servers=json.loads(os.environ["MCP_TEST_SERVERS"]),
    mcp_options=json.loads(os.environ.get("MCP_TEST_OPTIONS") or "{}"),
    worker_prefetch_multiplier=1,
    broker_connection_retry_on_startup=True,
)
app.conf.update(json.loads(os.environ.get("MCP_TEST_CELERY_CONF") or "{}"))
mcp = MCP(app, task_options=json.loads(os.environ.get("MCP_TEST_TASK_OPTIONS") or "{}"))


# A server being reconnected fails at once with ServerUnavailable: retry the task later.
@app.task(name="tests.whoami", autoretry_for=(ServerUnavailable,), retry_backoff=1,
          max_retries=10)
def whoami(server: Optional[str] = None, a: float = 0, b: float = 0) -> Dict[str, Any]:
    """Add ``a`` and ``b`` through this process's client; say which process and server
    child did it."""
    client = mcp.client(server)
    result = client.call_tool("add", {"a": a, "b": b})
    return {"pid": os.getpid(), "server": client.transport.pid,  # type: ignore[attr-defined]
            "result": result.structured or result.text}
