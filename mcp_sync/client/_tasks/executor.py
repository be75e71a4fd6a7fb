"""Tasks the client runs for the server (MCP 2025-11-25): the client as task *executor*.

A client built with ``handler_tasks`` declares ``tasks.requests.sampling.createMessage``
and/or ``tasks.requests.elicitation.create`` (with ``tasks.list`` and ``tasks.cancel``).
A ``sampling/createMessage`` or ``elicitation/create`` whose params carry
``task: {ttl?}`` is then answered at once with a ``CreateTaskResult`` and its handler
runs on the session's handler pool as a :class:`_ClientTask`; the server follows it with
``tasks/get``, ``tasks/result``, ``tasks/list`` and ``tasks/cancel``, which
:class:`TaskExecutor` answers. A request without ``task`` is answered as before.

* ``tasks/result`` of a task still running is answered later: the handler returns a
  :class:`~concurrent.futures.Future` that the session answers once it is settled
  (``ServerRequests._answer_later``, ``_rpc/serving.py``), so a waiting ``tasks/result``
  holds no thread.
* Each status change (``completed``, ``failed``, ``cancelled``) is sent as
  ``notifications/tasks/status``.
* ``tasks/cancel`` marks the task ``cancelled`` and sets its handler's
  ``RequestContext.cancelled``; what the handler returns afterwards is dropped.
* A task lives ``ttl`` milliseconds from its creation (the server's, within
  :data:`MIN_TTL_MS`..:data:`MAX_TTL_MS`; :data:`DEFAULT_TTL_MS` when it asks none),
  whatever its status: then it is freed, a handler still running sees its context
  cancelled, a waiting ``tasks/result`` gets -32602 "Task has expired", and so does any
  later request naming it (the last :data:`REMEMBERED_EXPIRED` expired ids are kept to
  tell "expired" from "not found").
* At most ``limit`` tasks exist at once (running or kept for their result): one more is
  refused with -32603 saying so.

Threads: the handlers run on the session's pool (``RpcSession.offload``). One
``mcp-sync-tasks-<server>`` thread frees tasks when their ttl passes; it starts with the
first task and ends when none is left, or at :meth:`TaskExecutor.close`, which cancels
every task, drops the answers of every waiting ``tasks/result`` and joins it within its
bound. A ``tasks/*`` request that reaches a closed executor (the session still reading
while the client closes) is left unanswered the same way, never told "not found": the
tasks still exist for the server until the link closes.
"""

from __future__ import annotations

import collections
import itertools
import logging
import threading
import time
from concurrent.futures import Future
from typing import Any, Callable, Dict, List, Optional, OrderedDict, Protocol, Tuple

from ..._protocol import INTERNAL_ERROR, INVALID_PARAMS
from ..._util.text import excerpt
from ..._util.threads import join_or_warn, start_thread
from ...context import RequestContext, request_context, serving, task_context
from ...exceptions import MCPError, ServerError
from .._settings import DEFAULT_HANDLER_TASKS

log = logging.getLogger(__name__)

#: The ``_meta`` key that ties a ``tasks/result`` answer to its task.
RELATED_TASK = "io.modelcontextprotocol/related-task"
#: A task's lifetime when the server asks none, and the bounds of what it may ask (ms).
DEFAULT_TTL_MS = 300_000
MIN_TTL_MS = 100
MAX_TTL_MS = 3_600_000
#: The ``pollInterval`` suggested to the server (ms).
POLL_INTERVAL_MS = 500
#: How many tasks one ``tasks/list`` page holds.
PAGE_SIZE = 50
#: How many expired task ids are remembered (to answer "expired" rather than "not found").
REMEMBERED_EXPIRED = 1024
#: The default bound on tasks that exist at once (``Client(max_handler_tasks=...)``).
DEFAULT_LIMIT = DEFAULT_HANDLER_TASKS

TERMINAL = ("completed", "failed", "cancelled")
_FAILED = {
    "sampling/createMessage": "the client's sampling handler failed",
    "elicitation/create": "the client's elicitation handler failed",
}


def _now() -> str:
    from datetime import datetime, timezone  # rare path: not paid at import

    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


def ttl_of(params: Dict[str, Any]) -> int:
    """The ttl (ms) a task-augmented request gets: the one asked, within the bounds."""
    task = params.get("task")
    asked = task.get("ttl") if isinstance(task, dict) else None
    if not isinstance(asked, int) or isinstance(asked, bool):
        return DEFAULT_TTL_MS
    return max(MIN_TTL_MS, min(MAX_TTL_MS, asked))


class _ClientTask:
    """One task the client runs; the executor's lock guards its mutable state."""

    def __init__(self, task_id: str, seq: int, method: str, ttl: int,
                 context: RequestContext) -> None:
        self.task_id = task_id
        self.seq = seq
        self.method = method
        self.ttl = ttl
        self.expires_at = time.monotonic() + ttl / 1000.0
        self.context = context
        self.status = "working"
        self.message: Optional[str] = None
        self.created = self.updated = _now()
        # ("result", dict) or ("error", dict): what the request would have returned.
        self.outcome: Optional[Tuple[str, Dict[str, Any]]] = None
        self.waiters: List[Future[Any]] = []

    def wire(self) -> Dict[str, Any]:
        task: Dict[str, Any] = {"taskId": self.task_id, "status": self.status,
                                "createdAt": self.created, "lastUpdatedAt": self.updated,
                                "ttl": self.ttl, "pollInterval": POLL_INTERVAL_MS}
        if self.message is not None:
            task["statusMessage"] = self.message
        return task


class ExecutorSession(Protocol):
    """What the executor uses of its session (an ``RpcSession``)."""

    @property
    def name(self) -> str:
        """The server's current name, for threads and messages."""

    def offload(self, fn: Callable[..., None], *args: Any) -> bool:
        """Run a job on the session's handler pool (False once it stopped)."""

    def notify(self, method: str, params: Optional[Dict[str, Any]] = None) -> None:
        """Send a notification."""


class TaskExecutor:
    """The tasks one session runs for its server (see the module docstring).

    Made before its session (whose request handlers are the executor's methods), it
    serves that session from :meth:`serve` on, which comes before the session starts.
    """

    def __init__(self, *, limit: int = DEFAULT_LIMIT, close_timeout: float = 2.0) -> None:
        self._session: Optional[ExecutorSession] = None
        self.limit = limit
        self.close_timeout = close_timeout
        # Guards everything below; signalled when a task is added or the executor closes.
        self._lock = threading.Condition()
        self._tasks: Dict[str, _ClientTask] = {}
        self._expired: OrderedDict[str, None] = collections.OrderedDict()
        self._seq = itertools.count(1)
        self._closed = False
        self._reaper: Optional[threading.Thread] = None

    def serve(self, session: ExecutorSession) -> None:
        """Run this session's tasks: its handler pool runs them, it sends their status
        notifications. Called once, before the session starts (no request before)."""
        self._session = session

    @property
    def _name(self) -> str:
        return self._served().name

    def _served(self) -> ExecutorSession:
        session = self._session
        assert session is not None, "serve() comes before the session starts"
        return session

    # -- creating and running ------------------------------------------------------------

    def create(self, method: str, params: Dict[str, Any],
               run: Callable[[], Any]) -> Dict[str, Any]:
        """Accept a task-augmented request: its ``CreateTaskResult``, with ``run`` (the
        handler's answer) queued on the handler pool.

        Raises:
            ServerError: -32603 when ``limit`` tasks exist already, or the session is
                closing.
        """
        outer = _current_context()
        with self._lock:
            if self._closed:
                raise ServerError(INTERNAL_ERROR, "the client is closing")
            if len(self._tasks) >= self.limit:
                raise ServerError(
                    INTERNAL_ERROR,
                    f"the client holds {self.limit} tasks already (its limit); wait for "
                    "one to end or expire, or cancel one")
            seq = next(self._seq)
            task_id = f"client-task-{seq}"
            context = task_context(method, task_id, outer)
            task = _ClientTask(task_id, seq, method, ttl_of(params), context)
            self._tasks[task_id] = task
            self._start_reaper()
            self._lock.notify_all()
            answer = {"task": task.wire()}
        if not self._served().offload(self._run, task, run):
            with self._lock:
                self._tasks.pop(task_id, None)
            raise ServerError(INTERNAL_ERROR, "the client is closing")
        log.debug("%s: running %s as task %s", self._name, method, task_id)
        return answer

    def _run(self, task: _ClientTask, run: Callable[[], Any]) -> None:
        """A handler pool job: run the handler in the task's context, keep its outcome."""
        context = task.context
        if context.cancelled.is_set():
            return  # cancelled (or expired, or closed) before it started
        outcome: Tuple[str, Dict[str, Any]]
        try:
            with serving(context):
                result = run()
            from ..._rpc.session import to_wire

            outcome = ("result", to_wire(result))
        except ServerError as exc:
            error: Dict[str, Any] = {"code": exc.code, "message": exc.message}
            if exc.data is not None:
                error["data"] = exc.data
            outcome = ("error", error)
        except Exception:
            # As for a plain request: the text goes to the log, never to the server.
            if not context.cancelled.is_set():
                log.exception("handler for %s (task %s) from %s raised; the server is "
                              "told only that it failed", task.method, task.task_id,
                              self._name)
            outcome = ("error", {"code": INTERNAL_ERROR,
                                 "message": _FAILED.get(task.method,
                                                        "the client's handler failed")})
        self._finish(task, outcome)

    def _finish(self, task: _ClientTask, outcome: Tuple[str, Dict[str, Any]]) -> None:
        with self._lock:
            if task.status in TERMINAL or self._tasks.get(task.task_id) is not task:
                return  # cancelled, expired or closed meanwhile: the outcome is dropped
            task.outcome = outcome
            kind, value = outcome
            task.status = "completed" if kind == "result" else "failed"
            task.message = None if kind == "result" else excerpt(
                str(value.get("message", "")), 300)
            task.updated = _now()
            waiters, task.waiters = task.waiters, []
            note = task.wire()
        self._tell(note)  # before the answers: a server that reads both sees it first
        for waiter in waiters:
            self._settle(waiter, task, outcome)

    # -- the server's requests -----------------------------------------------------------

    def get(self, params: Optional[Dict[str, Any]]) -> Any:
        """``tasks/get``: the task's state."""
        with self._lock:
            if self._closed:
                return _unanswered()
            return self._find(params).wire()

    def result(self, params: Optional[Dict[str, Any]]) -> Any:
        """``tasks/result``: what the request returns, at once for a finished task; a
        Future the session answers later for one still running."""
        with self._lock:
            if self._closed:
                return _unanswered()
            task = self._find(params)
            if task.status not in TERMINAL:
                waiter: Future[Any] = Future()
                task.waiters.append(waiter)
                return waiter
            outcome = task.outcome
        done: Future[Any] = Future()
        self._settle(done, task, outcome)
        return done  # settled already: the session answers at once

    def list(self, params: Optional[Dict[str, Any]]) -> Any:
        """``tasks/list``: the tasks in creation order, :data:`PAGE_SIZE` a page."""
        cursor = (params or {}).get("cursor")
        start = 0
        if cursor is not None:
            if not isinstance(cursor, str) or not cursor.isdigit():
                raise ServerError(INVALID_PARAMS, "Invalid cursor")
            start = int(cursor)
        with self._lock:
            if self._closed:
                return _unanswered()
            tasks = [task for task in self._tasks.values() if task.seq >= start]
            page = tasks[:PAGE_SIZE]
            answer: Dict[str, Any] = {"tasks": [task.wire() for task in page]}
            if len(tasks) > PAGE_SIZE:
                answer["nextCursor"] = str(tasks[PAGE_SIZE].seq)
        return answer

    def cancel(self, params: Optional[Dict[str, Any]]) -> Any:
        """``tasks/cancel``: the task ``cancelled``, its handler's context cancelled."""
        with self._lock:
            if self._closed:
                return _unanswered()
            task = self._find(params)
            if task.status in TERMINAL:
                raise ServerError(INVALID_PARAMS,
                                  f"Cannot cancel task in terminal status {task.status}")
            task.status = "cancelled"
            task.message = "cancelled by the server"
            task.updated = _now()
            waiters, task.waiters = task.waiters, []
            answer = task.wire()
        task.context.cancel("tasks/cancel")
        self._tell(answer)
        for waiter in waiters:
            self._settle(waiter, task, None)
        return answer

    def _find(self, params: Optional[Dict[str, Any]]) -> _ClientTask:
        """The task ``params.taskId`` names (the lock held)."""
        task_id = (params or {}).get("taskId")
        task = self._tasks.get(task_id) if isinstance(task_id, str) else None
        if task is not None:
            return task
        if isinstance(task_id, str) and task_id in self._expired:
            raise ServerError(INVALID_PARAMS, "Failed to retrieve task: Task has expired")
        raise ServerError(INVALID_PARAMS, "Failed to retrieve task: Task not found")

    def _settle(self, waiter: Future[Any], task: _ClientTask,
                outcome: Optional[Tuple[str, Dict[str, Any]]]) -> None:
        """Answer one ``tasks/result`` with the task's outcome (None: cancelled)."""
        if not waiter.set_running_or_notify_cancel():
            return
        if outcome is None:
            waiter.set_exception(ServerError(
                INTERNAL_ERROR, f"task {task.task_id} was cancelled"))
            return
        kind, value = outcome
        if kind == "error":
            waiter.set_exception(ServerError(int(value.get("code", INTERNAL_ERROR)),
                                             str(value.get("message", "")),
                                             value.get("data")))
            return
        answer = dict(value)
        meta = dict(answer.get("_meta") or {})
        meta[RELATED_TASK] = {"taskId": task.task_id}
        answer["_meta"] = meta
        waiter.set_result(answer)

    def _tell(self, task: Dict[str, Any]) -> None:
        """``notifications/tasks/status`` for a task whose status changed."""
        try:
            self._served().notify("notifications/tasks/status", task)
        except MCPError as exc:
            log.debug("%s: could not send the status of task %s: %r", self._name,
                      task.get("taskId"), exc)

    # -- expiry and closing --------------------------------------------------------------

    def _start_reaper(self) -> None:
        """Start the expiry thread if it is not running (the lock held)."""
        if self._reaper is None:
            self._reaper = start_thread(self._reap, f"mcp-sync-tasks-{self._name}")

    def _reap(self) -> None:
        """Free each task when its ttl passes; end when none is left."""
        while True:
            with self._lock:
                if self._closed or not self._tasks:
                    self._reaper = None
                    return
                now = time.monotonic()
                due = [task for task in self._tasks.values() if task.expires_at <= now]
                if not due:
                    earliest = min(task.expires_at for task in self._tasks.values())
                    self._lock.wait(earliest - now)
                    continue
                expired = []
                for task in due:
                    del self._tasks[task.task_id]
                    self._remember(task.task_id)
                    waiters, task.waiters = task.waiters, []
                    expired.append((task, waiters))
            for task, waiters in expired:
                log.debug("%s: task %s expired (%s)", self._name, task.task_id, task.status)
                task.context.cancel("the task's ttl passed")
                for waiter in waiters:
                    if waiter.set_running_or_notify_cancel():
                        waiter.set_exception(ServerError(
                            INVALID_PARAMS, "Failed to retrieve task: Task has expired"))

    def _remember(self, task_id: str) -> None:
        expired = self._expired
        expired[task_id] = None
        while len(expired) > REMEMBERED_EXPIRED:
            expired.popitem(last=False)

    def close(self, reason: str = "the client closed") -> None:
        """Cancel every task (their handlers see it, with ``reason``), drop the answers of
        those waiting for ``tasks/result``, and join the expiry thread within
        ``close_timeout``. Idempotent."""
        with self._lock:
            self._closed = True
            tasks, self._tasks = list(self._tasks.values()), {}
            reaper = self._reaper
            self._lock.notify_all()
        for task in tasks:
            task.context.cancel(reason)
            waiters, task.waiters = task.waiters, []
            for waiter in waiters:
                waiter.cancel()
        if reaper is not None and reaper is not threading.current_thread():
            join_or_warn(reaper, self.close_timeout, "closing the client", log)

    @property
    def count(self) -> int:
        """How many tasks exist (running, or kept for their result)."""
        with self._lock:
            return len(self._tasks)


def _unanswered() -> Future[Any]:
    """The answer of a request a closed executor leaves unanswered: a cancelled Future,
    which the session never sends (as for the ``tasks/result`` waiters dropped at close)."""
    never: Future[Any] = Future()
    never.cancel()
    return never


def _current_context() -> Optional[RequestContext]:
    try:
        return request_context()
    except LookupError:
        return None


__all__ = ["TaskExecutor", "ttl_of"]
