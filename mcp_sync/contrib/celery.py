"""MCP servers in Celery workers: one :class:`~mcp_sync.Manager` per worker process, and
a task any caller can send.

::

    from celery import Celery
    from mcp_sync.contrib.celery import MCP

    app = Celery("proj", broker="redis://broker:6379/0", backend="redis://broker:6379/1")
    app.conf.mcp_servers = {                           # the mcpServers format
        "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem",
                                             "/srv/docs"]},
        "search": {"url": "https://search.example.com/mcp",
                   "headers": {"Authorization": "Bearer ${SEARCH_TOKEN}"}},
    }
    app.conf.mcp_options = {"timeout": 20}             # optional: Manager/Client arguments
    mcp = MCP(app)                                     # registers "mcp_sync.call_tool"

    @app.task
    def summarise(path):                               # your own tasks use the same manager
        return mcp.client("files").call_tool("read_file", {"path": path}).text

Any process that can reach the broker can then call a tool on a worker, without
importing mcp_sync or having it installed::

    result = celery_app.send_task("mcp_sync.call_tool", args=["search__query", {"q": "mcp"}])
    result.get(timeout=30)    # {"content": [...], "structuredContent": {...}, "isError": False}

``mcp_servers`` may also be a whole ``{"mcpServers": {...}}`` document or the path of an
``mcp.json`` file; ``${VAR}`` references are expanded in the worker, from its environment,
each time a server (re)connects.

**One manager per worker process.** The manager is built and connected in the process that
first uses it (the first task that needs a server), never at import, never in the
worker's main process of a prefork pool (unless your own code uses it there), and never
inherited over ``fork()``: a pool process forked from a parent that had one builds its
own. Every thread of a process shares it (the ``threads`` pool; ``solo`` runs tasks in the
main process). It is closed when the pool process exits (Celery's
``worker_process_shutdown``: prefork pool processes end with ``os._exit()``, which runs no
exit hook) and when the worker shuts down (``worker_shutdown``), stopping the servers'
processes. The ``gevent`` pool works like ``threads``, with greenlets for threads
(docs/scale-out.md, "gevent"); the ``eventlet`` pool is not supported yet.

**The task** ``mcp_sync.call_tool(name, arguments=None, timeout=None)`` returns the
:class:`~mcp_sync.types.CallToolResult` as JSON data with its wire names
(``content``, ``structuredContent``, ``isError``): a tool result with ``isError: true`` is
a result, not a failure. ``name`` is ``"<server>__<tool>"``, or the bare tool name when
``mcp_servers`` has one server. ``timeout`` is the request timeout in seconds (None: the
configured one). Every failure is raised as :class:`CallToolFailed`, whose arguments are
a message and a JSON payload, so it survives the JSON result serializer (see its
docstring for the payload and how a caller sees it).

**Safe redelivery and retries.** The task is registered with ``acks_late=True`` and
``reject_on_worker_lost=True``: the broker keeps a message until its task has finished, so
a worker process that dies mid-call has its message delivered again. The tool is called
again only when that is safe by the :class:`~mcp_sync.Manager`'s rule
(:meth:`~mcp_sync.Manager.safe_to_retry`): the request never reached the server, or the
tool is annotated ``readOnlyHint`` or ``idempotentHint``. To know whether an earlier
delivery got as far as sending the request, the task records the state ``CALLING`` in the
result backend just before it calls the tool (meta: ``tool``, ``hostname``, ``pid``,
``retries``, ``delivery``); a delivery that finds ``CALLING`` left by an earlier delivery
of the same message (the same count of retries) calls a tool without those hints no
more, and fails with ``CallToolFailed`` (type ``WorkerLost``). One that finds ``SUCCESS``
returns the stored result without calling again. Without a result backend that can be
read back (none, or ``rpc://``), the broker's ``redelivered`` flag stands in for the
record, more cautiously: any redelivered message counts as lost mid-call.

When the connection to a server is lost (its process died, the network broke), the
manager first reconnects and retries once by the same rule; if that does not settle the
call, the task is retried with Celery's retry, with exponential backoff, when safe
(``ServerUnavailable``, a request that was never sent, a hinted tool), at most
``max_retries`` times; otherwise it fails at once with a ``CallToolFailed`` that says
why. Timeouts and the server's own errors are never retried.

Task options (``MCP(app, task_options={...})``, or Celery's ``task_annotations`` for
``"mcp_sync.call_tool"``) override the defaults in :data:`TASK_OPTIONS`.

Celery is imported only by this module, never by ``mcp_sync``
(``pip install 'mcp-sync-client[celery]'``). See ``docs/scale-out.md``.
"""

from __future__ import annotations

import logging
import os
import random
from typing import Any, Dict, List, Mapping, NoReturn, Optional, Tuple

from celery import Celery, Task, signals
from celery.backends.base import DisabledBackend

from .._util.text import excerpt
from ..client import DEFAULT, Client
from ..config._format import Source
from ..exceptions import ConnectionClosed, MCPError, RequestTimeout, TransportError
from ..manager import Manager, ServerState, ServerUnavailable
from ._process import ProcessManager, server_name, servers_source

__all__ = ["CALLING", "CALL_TOOL", "MCP", "TASK_OPTIONS", "CallToolFailed"]

log = logging.getLogger(__name__)

#: The name of the task :class:`MCP` registers.
CALL_TOOL = "mcp_sync.call_tool"

#: The task state recorded in the result backend just before the tool is called.
CALLING = "CALLING"

#: The defaults of the ``mcp_sync.call_tool`` task's options. ``retry_backoff`` is the
#: first retry's delay in seconds, doubled at each retry up to ``retry_backoff_max``;
#: with ``retry_jitter`` each delay is drawn between half of it and all of it.
#: ``max_retries`` also bounds how often a message lost mid-call is called again.
TASK_OPTIONS: Dict[str, Any] = {
    "acks_late": True,
    "reject_on_worker_lost": True,
    # Celery 5.7's retry after a lost worker would overwrite the CALLING record with
    # RETRY, and the next delivery could no longer tell that the tool may have run.
    "retry_on_worker_lost": False,
    "max_retries": 5,
    "retry_backoff": 1.0,
    "retry_backoff_max": 30.0,
    "retry_jitter": True,
}


class CallToolFailed(MCPError):
    """The ``mcp_sync.call_tool`` task failed; ``AsyncResult.get()`` raises it again in
    the caller.

    Its arguments are ``(message, payload)``, both JSON, so it survives any result
    serializer. A caller that has imported ``mcp_sync.contrib.celery`` gets this class;
    one that has not (Celery rebuilds an exception only from a module the caller has
    already imported) gets an exception that Celery makes up, of the same name
    (``CallToolFailed``) and the same ``args``: read the payload as ``exc.args[1]``.

    The payload (``payload``) has:

    * ``type``: the kind of failure: the name of the mcp_sync exception
      (``RequestTimeout``, ``ServerError``, ``ConnectionClosed``, ``ServerUnavailable``,
      ``ConfigError``...), ``ValueError`` for a malformed task call or an unknown server,
      or ``WorkerLost``: an earlier delivery of the task was lost mid-call, so the tool may
      have run, and it is not safe to call it again;
    * ``classes``: that exception's classes from the most specific to ``MCPError``
      (``["ServerUnavailable", "ConnectionClosed", "TransportError", "MCPError"]``), so a
      caller can test for a family without mcp_sync;
    * ``message``: what went wrong; ``tool``: the name as given (made printable, at most
      200 characters); ``server``: the server, when known; ``retries``: how often the
      task had been retried;
    * when they apply: ``code`` and ``data`` (the server's JSON-RPC error), ``status`` (an
      HTTP status), ``exitCode`` (a stdio server's exit status), ``requestSent`` (whether
      the request reached the server, as far as the client knows), ``mayHaveRun``
      (True when the tool may have run before the failure), ``retryable`` (whether
      calling again would have been safe; False in every failure the task gave up on).
    """

    def __init__(self, message: str, payload: Optional[Mapping[str, Any]] = None) -> None:
        super().__init__(message, dict(payload or {}))

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""

    @property
    def payload(self) -> Dict[str, Any]:
        """The JSON payload (see the class docstring)."""
        value = self.args[1] if len(self.args) > 1 else {}
        return value if isinstance(value, dict) else {}

    @property
    def error_type(self) -> str:
        """``payload["type"]``: the name of the error behind the failure."""
        return str(self.payload.get("type", ""))


def _classes(error: BaseException) -> List[str]:
    names = []
    for cls in type(error).__mro__:
        names.append(cls.__name__)
        if cls is MCPError:
            break
    else:
        return [type(error).__name__]
    return names


def _failure(error: BaseException, *, tool: str, server: Optional[str], retries: int,
             note: Optional[str] = None, retryable: bool = False) -> CallToolFailed:
    """A :class:`CallToolFailed` describing ``error``."""
    payload: Dict[str, Any] = {
        "type": type(error).__name__,
        "classes": _classes(error),
        "message": str(error),
        "tool": tool,
        "server": server,
        "retries": retries,
        "retryable": retryable,
    }
    code = getattr(error, "code", None)
    if isinstance(code, int) and hasattr(error, "data"):
        payload["code"] = code
        payload["data"] = getattr(error, "data", None)
    status = getattr(error, "status", None)
    if isinstance(status, int):
        payload["status"] = status
    if isinstance(error, ConnectionClosed) and error.exit_code is not None:
        payload["exitCode"] = error.exit_code
    if isinstance(error, TransportError):
        payload["requestSent"] = error.request_sent
        payload["mayHaveRun"] = error.request_sent is not False
    elif isinstance(error, RequestTimeout):
        payload["mayHaveRun"] = True
    return _failed(payload, note)


def _failed(payload: Dict[str, Any], note: Optional[str] = None) -> CallToolFailed:
    message = f"{CALL_TOOL} {payload['tool']!r}: {payload['type']}: {payload['message']}"
    if note:
        message += f" ({note})"
    return CallToolFailed(message, payload)


class MCP:
    """The Celery integration: ``MCP(celery_app)``.

    Reads ``celery_app.conf.mcp_servers`` (and ``mcp_options``) when a worker process
    first needs a server, gives each worker process its own manager, closes it when the
    process shuts down, and registers the task ``mcp_sync.call_tool`` on ``celery_app``
    (one ``MCP`` per app).

    Args:
        app: the Celery app.
        task_options: options of the ``mcp_sync.call_tool`` task, over
            :data:`TASK_OPTIONS` (``max_retries``, ``retry_backoff``, ``queue``...).
        **options: default :class:`~mcp_sync.Manager` (and Client) keyword arguments;
            ``celery_app.conf.mcp_options`` overrides them.

    Can be shared between threads.
    """

    def __init__(self, app: Celery, *, task_options: Optional[Mapping[str, Any]] = None,
                 **options: Any) -> None:
        self.app = app
        self.options = options
        self._process_manager = ProcessManager(self._load, label=f"celery:{app.main}")
        settings = dict(TASK_OPTIONS)
        settings.update(task_options or {})
        mcp = self

        def call_tool(task: Task, name: str, arguments: Optional[Dict[str, Any]] = None,
                      timeout: Optional[float] = None) -> Dict[str, Any]:
            """Call the MCP tool ``name`` (``"<server>__<tool>"``) with ``arguments``;
            returns the CallToolResult as JSON data (wire names). Failures raise
            mcp_sync.contrib.celery.CallToolFailed(message, payload)."""
            return mcp._call_tool(task, name, arguments, timeout)

        #: The registered ``mcp_sync.call_tool`` task.
        self.call_tool = app.task(name=CALL_TOOL, bind=True, shared=False,
                                  **settings)(call_tool)
        # Weak references to bound methods: they go when this object does.
        signals.worker_process_shutdown.connect(self._on_shutdown)
        signals.worker_shutdown.connect(self._on_shutdown)

    def __repr__(self) -> str:
        return f"<mcp_sync.contrib.celery.MCP {self.app.main}>"

    def _load(self) -> Tuple[Source, Dict[str, Any]]:
        conf = self.app.conf
        source = servers_source(conf.get("mcp_servers"), "mcp_servers")
        options = dict(self.options)
        extra = conf.get("mcp_options") or {}
        if not isinstance(extra, Mapping):
            raise ValueError("mcp_options must be a dict of mcp_sync.Manager arguments")
        options.update(extra)
        return source, options

    def manager(self) -> Manager:
        """This worker process's :class:`~mcp_sync.Manager`, connected; built on first use.

        Thread-safe: concurrent first calls build one manager. A server that cannot be
        reached does not fail this call (the manager keeps reconnecting it; using it
        raises :class:`~mcp_sync.manager.ServerUnavailable`).

        Raises:
            ValueError: ``mcp_servers`` is missing; ConfigError: it is invalid.
        """
        return self._process_manager.get()

    def client(self, name: Optional[str] = None) -> Client:
        """The connected :class:`~mcp_sync.Client` of server ``name`` in this worker
        process (may be omitted when ``mcp_servers`` has one server). Fetch it in each
        task rather than keeping it: the object changes when the manager reconnects a
        server that died.

        Raises:
            KeyError: no such server.
            ValueError: ``name`` omitted, and there is not exactly one server.
            mcp_sync.manager.ServerUnavailable: the server is not connected now.
        """
        manager = self.manager()
        return manager[server_name(manager, name, "mcp_servers")]

    def close(self) -> None:
        """Close this process's manager, stopping its servers; the next use builds a new
        one. Done by itself when a worker process shuts down."""
        self._process_manager.close()

    def _on_shutdown(self, sender: Any = None, **kwargs: Any) -> None:
        try:
            self.close()
        except Exception:  # a signal receiver must not break the worker's shutdown
            log.exception("closing the MCP servers of %r failed", self)

    # -- the task ------------------------------------------------------------------------

    def _call_tool(self, task: Task, name: Any, arguments: Any, timeout: Any) -> Dict[str, Any]:
        request = task.request
        retries = int(request.retries or 0)
        # The name comes from whoever sent the task: printable and bounded in messages.
        tool_label = excerpt(name if isinstance(name, str) else repr(name), 200)
        server: Optional[str] = None
        try:
            _check_call(name, arguments, timeout)
            manager = self.manager()
            server, tool = _route(manager, name)
        except (MCPError, ValueError) as exc:  # ConfigError is both
            raise _failure(exc, tool=tool_label, server=server, retries=retries) from exc

        record = _CallRecord(task)
        state, previous = record.previous(retries)
        if state == "SUCCESS":
            log.info("%s[%s] %s: an earlier delivery succeeded; not calling again",
                     CALL_TOOL, request.id, tool_label)
            return previous  # type: ignore[no-any-return]
        delivery = 1
        if state == CALLING:
            delivery = int(previous.get("delivery", 1)) + 1 if isinstance(previous, dict) else 2
            limit = task.max_retries
            lost = f"an earlier delivery was lost while calling the tool ({_where(previous)})"
            if not manager.safe_to_retry(server, tool):
                raise _failed({
                    "type": "WorkerLost", "classes": ["WorkerLost"], "message": lost,
                    "tool": tool_label, "server": server, "retries": retries,
                    "retryable": False, "mayHaveRun": True,
                }, "not called again: the tool is not annotated readOnlyHint or "
                   "idempotentHint")
            if limit is not None and delivery > limit + 1:
                raise _failed({
                    "type": "WorkerLost", "classes": ["WorkerLost"],
                    "message": f"{lost}, {delivery - 1} times", "tool": tool_label,
                    "server": server, "retries": retries, "retryable": False,
                    "mayHaveRun": True,
                }, f"gave up after {delivery - 1} lost deliveries")
            log.warning("%s[%s] %s: %s; calling it again (safe)", CALL_TOOL, request.id,
                        tool_label, lost)
        record.calling({"tool": tool_label, "hostname": request.hostname,
                        "pid": os.getpid(), "retries": retries, "delivery": delivery})

        try:
            result = manager.call_tool(server, tool, arguments,
                                       timeout=DEFAULT if timeout is None else float(timeout))
        except ConnectionClosed as exc:
            disabled = isinstance(exc, ServerUnavailable) and exc.state is ServerState.DISABLED
            if disabled or not manager.safe_to_retry(server, tool, exc):
                note = None if disabled else (
                    "not retried: the request may have reached the server, and the tool is "
                    "not annotated readOnlyHint or idempotentHint")
                raise _failure(exc, tool=tool_label, server=server, retries=retries,
                               note=note) from exc
            self._retry(task, exc, tool_label, server, retries)
        except MCPError as exc:
            raise _failure(exc, tool=tool_label, server=server, retries=retries) from exc
        return result.to_wire()

    @staticmethod
    def _retry(task: Task, error: BaseException, tool: str, server: str,
               retries: int) -> NoReturn:
        """Retry ``task`` with backoff, or fail when it ran out of retries; never returns."""
        limit = task.max_retries
        if limit is not None and retries >= limit:
            raise _failure(error, tool=tool, server=server, retries=retries,
                           note=f"gave up after {retries} retries") from error
        countdown = _backoff(task, retries)
        log.info("%s[%s] %s: %s; retrying in %.2f s", CALL_TOOL, task.request.id, tool,
                 error, countdown)
        failure = _failure(error, tool=tool, server=server, retries=retries,
                           note=f"retrying in {countdown:.2f} s", retryable=True)
        raise task.retry(exc=failure, countdown=countdown)


def _check_call(name: Any, arguments: Any, timeout: Any) -> None:
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a tool name (a non-empty string), not {name!r}")
    if arguments is not None and not isinstance(arguments, dict):
        raise ValueError("arguments must be an object (a dict) or None, not "
                         f"{type(arguments).__name__}")
    if timeout is not None and (isinstance(timeout, bool)
                                or not isinstance(timeout, (int, float)) or timeout < 0):
        raise ValueError(f"timeout must be a number of seconds >= 0 or None, not {timeout!r}")


def _route(manager: Manager, name: str) -> Tuple[str, str]:
    """``(server, tool)`` for ``"<server>__<tool>"``, or a bare tool name when there is
    one server."""
    server, separator, tool = name.partition(manager.separator)
    if separator and tool and server in manager:
        return server, tool
    servers = manager.servers
    if len(servers) == 1:
        return servers[0], name
    raise ValueError(f"no configured server in {name!r}: name the tool "
                     f"'<server>{manager.separator}<tool>' (servers: "
                     f"{', '.join(servers) or 'none'})")


def _backoff(task: Task, retries: int) -> float:
    factor = float(getattr(task, "retry_backoff", TASK_OPTIONS["retry_backoff"]))
    maximum = float(getattr(task, "retry_backoff_max", TASK_OPTIONS["retry_backoff_max"]))
    delay = min(maximum, factor * 2.0 ** min(retries, 30))
    if getattr(task, "retry_jitter", True):
        delay = random.uniform(delay / 2, delay)
    return max(0.0, delay)


def _where(previous: Any) -> str:
    if isinstance(previous, dict) and previous.get("hostname"):
        return f"on {previous['hostname']}, process {previous.get('pid')}"
    return "on an unknown worker"


class _CallRecord:
    """The ``CALLING`` record of one task in the result backend (see the module
    docstring): whether an earlier delivery of the same message got as far as calling."""

    def __init__(self, task: Task) -> None:
        self.task = task
        backend = task.backend
        self.readable = not isinstance(backend, DisabledBackend) and (
            type(backend).__name__ != "RPCBackend")  # rpc:// results go to the caller only

    def previous(self, retries: int) -> Tuple[Optional[str], Any]:
        """``(state, result or meta)`` that earlier deliveries of this message (this
        round of retries) left, as far as known."""
        request = self.task.request
        if not self.readable:
            delivery_info = request.delivery_info or {}
            if delivery_info.get("redelivered"):
                return CALLING, {}
            return None, None
        meta = self.task.backend.get_task_meta(request.id, cache=False)
        state, result = meta.get("status"), meta.get("result")
        if state == CALLING and isinstance(result, dict) and isinstance(
                result.get("retries"), int) and result["retries"] < retries:
            # The earlier round's call ended, and it sent this retry: Celery publishes the
            # retry before it records RETRY, so this delivery may come first.
            return None, None
        return state, result

    def calling(self, meta: Dict[str, Any]) -> None:
        if self.readable:
            self.task.update_state(state=CALLING, meta=meta)

