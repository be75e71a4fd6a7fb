"""Many MCP servers behind one object: connected in parallel, kept connected.

::

    with mcp_sync.Manager.from_config("mcp.json", timeout=20) as manager:
        for tool in manager.list_tools():            # "<server>__<tool>" names
            print(tool.name)
        result = manager.call_tool("files__read", {"path": "a.txt"})
        result = manager.call_tool("files", "read", {"path": "a.txt"})   # the same
        manager.status()                              # every server's state and last error

The manager owns one :class:`~mcp_sync.Client` per enabled server. When a connection
closes unexpectedly it reconnects in the background with a backoff (0.5, 1, 2, 4 s, then
every 4 s), resolving the configuration again (``${VAR}`` values are read anew) each time,
until a circuit breaker opens: more than 5 failures (failed connects and lost connections)
within 30 s stop the retries, and the server is reported ``failed``. Meanwhile its last
known tools stay listed and calls to it fail fast with :class:`ServerUnavailable` (a
caller that would rather wait uses :meth:`Manager.wait_ready`, as a
:class:`~mcp_sync.Toolbox` does).

With ``tool_cache`` (opt-in), each server's tool listing is also saved on disk (see
:mod:`mcp_sync.manager._toolcache`: keyed by a hash of the server's configuration, no secret
values, mode 0600) at every successful listing, including those that follow
``notifications/tools/list_changed``; the next manager of the same configuration lists a
server's saved tools while that server is still connecting. With ``connect_timeout=0``,
:meth:`Manager.connect` returns at once, so a script has its tools in hand before its
servers are up.

A server entry's ``enabledTools`` and ``disabledTools`` (see :mod:`mcp_sync.config`) hide
tools: a hidden tool is left out of every listing (and of :attr:`ServerStatus.tools`) and a
call to it raises :class:`~mcp_sync.InvalidToolCall` without reaching the server.

Each server's tools are pinned when first seen (``mcp_sync.client._toolpins``): a tool whose
definition (description, title, schemas, annotations) changes afterwards, after a
``notifications/tools/list_changed``, a reconnect or between two runs with
``tool_cache``, follows the ``on_tool_change`` policy (by default it is blocked: not
listed, and a call to it raises :class:`~mcp_sync.ToolChanged`, until
:meth:`Manager.accept_tool_changes`).

Every listing is bounded by each client's ``max_list_items`` and ``max_list_bytes``
(client keyword arguments, given to the manager): an aggregated listing holds at most the
bound times the number of servers. A server whose tool list (fetched at connect) passes a
bound is reported ``failed`` at once with the :class:`~mcp_sync.ListingTooLarge` (retrying
would fetch it again); one whose resources or prompts pass it is logged and left out of
those listings.

Tasks (MCP 2025-11-25) are routed by server too: :meth:`Manager.start_tool_task`,
:meth:`Manager.task`, :meth:`Manager.list_tasks` (``(server, task)`` pairs) and
:meth:`Manager.cancel_task`. A handle they give follows its server across reconnects;
whether the new connection's server still knows the task is the server's affair (see
docs/tasks.md).

A tool call that fails because the connection broke waits for one reconnect attempt and
is retried once, but only when that is safe: the request never reached the server (the
error's ``request_sent`` is ``False``), or the tool is annotated ``readOnlyHint`` or
``idempotentHint``. Otherwise the error surfaces.

Threads (daemons, so that a manager nobody closed never keeps the interpreter alive;
cleanup does not rely on that: :meth:`Manager.close` stops and joins each one with a
bound):

* ``mcp-sync-reconnect-<server>``: connects one server, with the backoff between
  attempts; alive only while that server is connecting or reconnecting. At most one per
  server.
* ``mcp-sync-refresh-manager``: fetches a server's tools again after
  ``notifications/tools/list_changed``, once per burst (debounced).
* ``mcp-sync-close-<server>``: short-lived, so that :meth:`Manager.close` stops every
  server at once instead of one after another.

Who owns what: each configured server is one ``_Server``, which owns everything about
it: its state, its :class:`~mcp_sync.Client`, its reconnect thread and the backoff between
attempts, its circuit breaker, its last known tools, and the lock (a Condition) that
guards them, never held while talking to the server or calling user code. The
``_Refresher`` owns the refresh schedule and its thread. The :class:`Manager` keeps only
those objects and the routing: which server a qualified name or a resource's URI goes to,
and the listings gathered from every server.
"""

from ._manager import Manager
from ._server import ServerState, ServerStatus, ServerUnavailable

__all__ = [
    "Manager",
    "ServerState",
    "ServerStatus",
    "ServerUnavailable",
]
