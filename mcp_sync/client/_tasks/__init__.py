"""Tasks (MCP 2025-11-25): a tool call the server runs in the background, polled for.

The client is the *requestor*: a ``tools/call`` carrying ``task: {ttl?}`` is answered at
once with a ``CreateTaskResult`` (the task's id and ``working`` status); the client then
asks ``tasks/get`` until the task is terminal (``completed``, ``failed``,
``cancelled``) or ``input_required``, and reads the tool's result with ``tasks/result``
(for ``input_required`` the server holds that request open while it asks the client's
handlers for input, then answers with the result). A :class:`~.handles.TaskHandle` is one
task seen from the client; ``Client.call_tool`` drives one to its result for a tool whose
``execution.taskSupport`` is ``"required"`` (or ``"optional"`` with ``task=True``).

In the 2026-07-28 era tasks are the ``io.modelcontextprotocol/tasks`` extension
(SEP-2663) instead: the client declares it in every request's capabilities, the server
advertises it under ``capabilities.extensions`` and decides itself which ``tools/call``
becomes a task (a flat result with ``resultType: "task"``); ``tasks/get`` inlines the
tool's result (or the JSON-RPC ``error``) once the task ends, and a task that needs input
lists ``inputRequests`` there, answered with ``tasks/update``. There is no
``tasks/result`` and no ``tasks/list``. The two wires differ only in the small adapters
of :mod:`.wires` (``task_wire`` picks one by the agreement's era); the handle, its
waiting (:mod:`.waiting`) and its errors are the same.

Polling follows the server's ``pollInterval``, kept between
:data:`~.waiting.MIN_POLL_INTERVAL` and :data:`~.waiting.MAX_POLL_INTERVAL`
(:data:`~.waiting.DEFAULT_POLL_INTERVAL` when the server gives none). A
``notifications/tasks/status`` for a watched task wakes its poller at once and stands for
a poll (the notification carries the whole task); the next ``tasks/get`` is still sent on
time, since a server need not notify. The notifications are coalesced: a poller sees the
latest one, however many arrived while it was busy.

Threads: none of its own for the blocking forms (``call_tool``, ``TaskHandle.wait``,
``TaskHandle.result``): they poll on the caller's thread. The future forms
(``call_tool_future`` of a task, ``TaskHandle.future``) run the same code on one
short-lived ``mcp-sync-task-<server>`` thread each, which ends with its future; the
client's ``close()`` wakes and joins them (``close_timeout``).

The modules, from the bottom: :mod:`.waiting` (poll intervals, the clock of a wait, the
board of waiters, task futures), :mod:`.wires` (what differs between the eras),
:mod:`.handles` (``RemoteTask``, a task as the client asks about it and waits for it,
and its public face ``TaskHandle``), :mod:`.calls` (``ClientTasks``: the client's tasks,
and the tool calls that are tasks from start to result). The client's connection holds
one ``ClientTasks``, made with the connection (of which this package uses what
``wires.TaskConnection`` and ``calls.CallTasksConnection`` name); a tool call reaches it
only when it runs as a task, or once the server answered it with one (``_toolcalls``
hands it over). This package imports no client.

The tasks the client runs for the server (``handler_tasks``) are :mod:`.executor`'s.
"""
