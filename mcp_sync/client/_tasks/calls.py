"""The client's side of tasks: :class:`ClientTasks`, whether a ``tools/call`` runs as a
task, a task-augmented call from its start to its result, a task's handle
(:class:`TaskHandle`) and the two wires it speaks (see the package's docstring).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Callable, Dict, List, NamedTuple, Optional, Tuple, Union

from ..._protocol import DEFAULT, INVALID_PARAMS, TASKS_EXTENSION, Timeout
from ..._rpc.core import ProgressCallback
from ..._util.threads import start_thread
from ...exceptions import (
    CapabilityError,
    ClientNotConnected,
    ConnectionClosed,
    MCPError,
    ProtocolError,
    RequestTimeout,
    ServerError,
    TaskCancelled,
    TaskError,
    TaskFailed,
    TaskNotFound,
    excerpt,
)
from .._toolcalls import ToolCalls, ToolPlan, call_tool_params
from .waiting import (
    _READY,
    CANCEL_TIMEOUT,
    TERMINAL_STATUSES,
    TaskBoard,
    TaskFuture,
    TaskProgress,
    Watch,
    _because,
    _Clock,
    _guarded,
    _Stopped,
    drive,
    poll_interval,
)

if TYPE_CHECKING:
    from ... import types
    from ..._protocol.agreement import Agreement

__all__ = ["TaskHandle"]

log = logging.getLogger(__name__)
# The client's logger: these messages were always the client's.
client_log = logging.getLogger("mcp_sync.client")













class TaskHandle:
    """One task on the server, seen from the client: its ``id``, and the means to ask
    its state, wait for it, read its result or cancel it. Can be shared between threads;
    every method blocks at most its ``timeout`` (by default the client's ``timeout``;
    ``None``: no limit).

    Made by :meth:`Client.start_tool_task` (which knows the tool, so a result is checked
    against its ``outputSchema`` as a plain call's is) or :meth:`Client.task` (re-attach
    by id, from another request or process: no tool known, no check). The handle holds
    no resource: dropping it leaves the task to the server (which deletes it after its
    ``ttl``). A :meth:`wait` or :meth:`result` that runs out of time raises
    :class:`~mcp_sync.RequestTimeout` and leaves the task running; wait again later.

    Waiting polls ``tasks/get`` at the server's ``pollInterval`` (kept between 0.05 and
    5 s; 1 s when none is given), and wakes at once on a ``notifications/tasks/status``
    for the task. The same handle serves the 2026-07-28 era's tasks extension, where
    ``tasks/get`` inlines the result and input is answered with ``tasks/update``. A
    client closed (or a connection lost) while a handle waits fails the wait with
    :class:`~mcp_sync.ConnectionClosed`.
    """

    def __init__(self, client: ClientTasks, task_id: str, *, task: Optional[types.Task] = None,
                 tool: Optional[str] = None, definition: Optional[types.Tool] = None,
                 schema: Any = None) -> None:
        if not isinstance(task_id, str) or not task_id:
            raise TypeError(f"a task id is a non-empty string, not {excerpt(repr(task_id), 80)}")
        self._client = client
        #: The task's id, given by the server.
        self.id = task_id
        #: The tool the task runs, when this handle started it (else ``None``).
        self.tool = tool
        self._definition = definition
        self._schema = schema
        self._last = task
        # The last tasks/get answer as sent (2026-07-28: it inlines the result, the error
        # or the input requests), and the input requests already answered.
        self._inline: Dict[str, Any] = {}
        self._answered: set = set()  # type: ignore[type-arg]
        # The last (status, statusMessage) seen, to tell changes apart from repeats.
        self._seen: Optional[tuple] = None  # type: ignore[type-arg]

    def __repr__(self) -> str:
        status = self._last.status if self._last is not None else "unknown"
        return f"<TaskHandle {excerpt(self.id, 80)} {status} on {self._client.name}>"

    @property
    def last(self) -> Optional[types.Task]:
        """The last state of the task this handle saw (no request), or ``None``."""
        return self._last

    # -- one request each ----------------------------------------------------------------

    def status(self, *, timeout: Timeout = DEFAULT) -> types.Task:
        """Ask the server for the task's current state (one ``tasks/get``).

        Raises:
            TaskNotFound: the server does not know the id (wrong, or expired).
            RequestTimeout, ConnectionClosed, ServerError: as for any request.
        """
        return self._get(self._client.bound(timeout))

    def cancel(self, *, timeout: Timeout = DEFAULT) -> types.Task:
        """Cancel the task (``tasks/cancel``); returns its state after (``cancelled``).

        A task that had ended already is left as it is, and its state returned (the
        server refuses to cancel it; the client then asks for its state). In the
        2026-07-28 era the server acknowledges the cancel with nothing more and settles
        the task itself: the state returned (one ``tasks/get``) may still be ``working``.

        Raises:
            CapabilityError: the server did not declare ``tasks.cancel`` (2026-07-28:
                does not advertise the tasks extension).
            TaskNotFound: the server does not know the id.
            RequestTimeout, ConnectionClosed, ServerError: as for any request.
        """
        return task_wire(self._client).cancel(self, self._client.bound(timeout))

    # -- waiting -------------------------------------------------------------------------

    def wait(self, timeout: Timeout = DEFAULT, *,
             on_status: Optional[Callable[[types.Task], None]] = None) -> types.Task:
        """Block until the task is terminal (``completed``, ``failed``, ``cancelled``) or
        needs input (``input_required``); returns its state then.

        ``on_status(task)`` is called on the waiting thread with each new state seen
        (the first one, then each change of status or message); what it raises is
        logged, not raised.

        Raises:
            RequestTimeout: not within ``timeout`` (the task goes on; wait again).
            TaskNotFound: the server does not know the id (wrong, or expired).
            ConnectionClosed: the client closed, or its connection was lost, meanwhile.
        """
        clock = self._clock(timeout)
        watch = Watch()
        told = None if on_status is None else _guarded(on_status)
        task: types.Task = self._waiting(watch, lambda: self._wait_ready(clock, watch, told),
                                         clock, subject=self.id)
        return task

    def result(self, timeout: Timeout = DEFAULT, *,
               raise_on_error: bool = False) -> types.CallToolResult:
        """Block until the task ends and return the tool's result (``tasks/result``;
        2026-07-28: inlined on ``tasks/get``), as :meth:`Client.call_tool` would: a
        result with ``isError: true`` is returned (raised as
        :class:`~mcp_sync.ToolError` with ``raise_on_error``), and checked against the
        tool's ``outputSchema`` when this handle knows the tool.

        A task that needs input (``input_required``) is answered by the client's
        handlers (elicitation, sampling) while ``tasks/result`` is open (2026-07-28:
        with ``tasks/update``).

        Raises:
            RequestTimeout: not within ``timeout`` (the task goes on; ask again).
            TaskFailed: the task failed with a JSON-RPC error (``error``).
            CallbackError: a handler answering the task's input raised (2026-07-28).
            TaskCancelled: the task was cancelled.
            TaskNotFound: the server does not know the id (wrong, or expired).
            ConnectionClosed: the client closed, or its connection was lost, meanwhile.
            ProtocolError, ToolError, InvalidToolSchema: as for ``call_tool``.
        """
        return self._finish(self._clock(timeout), Watch(), on_progress=None,
                            raise_on_error=raise_on_error, give_up=None)

    def future(self, timeout: Timeout = DEFAULT, *,
               raise_on_error: bool = False) -> Future[types.CallToolResult]:
        """:meth:`result` as a :class:`concurrent.futures.Future`, at once.

        The waiting runs on an ``mcp-sync-task-<server>`` thread that ends with the
        future. ``future.cancel()`` stops it and cancels the task (``tasks/cancel``,
        best effort, within 2 s).
        """
        clock = self._clock(timeout)
        return self._client.future(
            lambda watch: self._finish(clock, watch, on_progress=None,
                                       raise_on_error=raise_on_error, give_up=None))

    # -- the machinery -------------------------------------------------------------------

    def _clock(self, timeout: Timeout) -> _Clock:
        client = self._client
        return _Clock(client.bound(timeout), None, push=False)

    def _get(self, bound: Optional[float]) -> types.Task:
        try:
            data = self._client.request("tasks/get", {"taskId": self.id}, timeout=bound)
        except ServerError as exc:
            if exc.code == INVALID_PARAMS:
                raise self._not_found(exc) from exc
            raise
        task: types.Task = task_wire(self._client).task(self, data, "tasks/get result")
        self._last = task
        return task

    def _parse(self, model: Any, data: Any, what: str) -> Any:
        from ..._types.parsing import parse as _parse

        return self._same(_parse(model, data, what), what)

    def _same(self, task: Any, what: str) -> Any:
        """``task``, after checking it is this handle's."""
        if task.task_id != self.id:
            raise ProtocolError(
                f"{what} from {self._client.name} is about task "
                f"{excerpt(repr(task.task_id), 80)}, not {excerpt(repr(self.id), 80)}")
        return task

    def _not_found(self, error: ServerError) -> TaskNotFound:
        return TaskNotFound(
            f"{self._client.name} does not know task {excerpt(repr(self.id), 80)} "
            f"(unknown or expired): {excerpt(error.message, 200)}",
            task_id=self.id, task=self._last, error=error)

    def _waiting(self, watch: Watch, work: Callable[[], Any], clock: _Clock, *,
                 subject: Optional[str], method: str = "tasks/get") -> Any:
        """Run ``work`` with ``watch`` on the board: a wait's end, timeout and closing."""
        client = self._client
        board = client.board
        board.watch(watch, self.id)
        try:
            return work()
        except RequestTimeout as exc:
            raise clock.expired(method, None, subject) from exc
        except ClientNotConnected as exc:
            raise self._closed() from exc
        finally:
            board.unwatch(watch)

    def _closed(self) -> ConnectionClosed:
        return ConnectionClosed(f"the client for {self._client.name} closed while waiting for "
                                f"task {excerpt(repr(self.id), 80)}")

    def _wait_ready(self, clock: _Clock, watch: Watch,
                    on_status: Optional[Callable[[types.Task], None]],
                    answering: bool = False) -> types.Task:
        """Poll until the task is ready for its result (``answering``: the input it
        asks for is answered on the way, where the wire wants that); on the calling
        thread."""
        from ... import types

        client = self._client
        wire = task_wire(client)
        task = self._last
        if task is None or task.status in _READY:
            # Re-attached, or a state seen earlier: ask (a finished task may be gone).
            task = self._get(clock.request_timeout(client.timeout))
        next_poll = time.monotonic() + poll_interval(task)
        while True:
            self._note(task, clock, on_status)
            if wire.settled(task, answering):
                return task
            if task.status == "input_required" and wire.answer(self, clock, watch):
                task = self._get(clock.request_timeout(client.timeout))  # at once
                next_poll = time.monotonic() + poll_interval(task)
                continue
            remaining = clock.remaining()
            if remaining is not None and remaining <= 0:
                raise RequestTimeout("tasks/get", None, clock.timeout)
            pause = max(0.0, next_poll - time.monotonic())
            watch.event.wait(pause if remaining is None else min(pause, remaining))
            watch.event.clear()
            if watch.stopped:
                raise _Stopped()
            if not client.host.open():
                raise self._closed()
            note = watch.take()
            if note is not None:
                try:
                    task = self._parse(types.TaskStatusNotificationParams, note,
                                       "notifications/tasks/status")
                except ProtocolError as exc:
                    log.warning("%s: skipping a malformed task status notification: %s",
                                client.name, excerpt(str(exc), 300))
                else:
                    self._last = task
                    self._note(task, clock, on_status)
                    if task.status in _READY:
                        continue
            # A poll stays due however many notifications arrive: a server's notes may
            # be stale, its tasks/get answer is what counts.
            if time.monotonic() >= next_poll:
                task = self._get(clock.request_timeout(client.timeout))
                next_poll = time.monotonic() + poll_interval(task)

    def _note(self, task: types.Task, clock: _Clock,
              on_status: Optional[Callable[[types.Task], None]]) -> None:
        seen = (task.status, task.status_message)
        if seen == self._seen:
            return
        if self._seen is not None:
            clock.push()
        told = self._seen is not None and (task.status_message or task.status) == (
            self._seen[1] or self._seen[0])
        self._seen = seen
        if on_status is not None and not told:  # the same words once
            on_status(task)

    def _payload(self, task: types.Task, clock: _Clock) -> Dict[str, Any]:
        """The tool's result of a ready task, or the error it ends with."""
        if task.status == "cancelled":
            raise TaskCancelled(
                f"task {excerpt(repr(self.id), 80)} on {self._client.name} was cancelled"
                + _because(task), task_id=self.id, task=task)
        return task_wire(self._client).payload(self, task, clock)

    def _read_result(self, task: types.Task, clock: _Clock) -> Dict[str, Any]:
        """``tasks/result`` (2025-11-25), or the error the task ends with."""
        try:
            data = self._client.request("tasks/result", {"taskId": self.id},
                                        timeout=clock.request_timeout(None))
        except ServerError as exc:
            raise self._failure(task, exc, clock) from exc
        if not isinstance(data, dict):
            raise ProtocolError(f"tasks/result from {self._client.name} is not an object")
        return data

    def _failure(self, task: types.Task, error: ServerError, clock: _Clock) -> TaskError:
        """What a ``tasks/result`` error means, by the task's status."""
        if task.status not in TERMINAL_STATUSES:  # input_required when asked: ask again
            try:
                task = self._get(clock.request_timeout(self._client.timeout))
            except TaskNotFound as exc:
                return exc
        where = f"task {excerpt(repr(self.id), 80)} on {self._client.name}"
        if task.status == "cancelled":
            return TaskCancelled(f"{where} was cancelled" + _because(task),
                                 task_id=self.id, task=task, error=error)
        if error.code == INVALID_PARAMS and task.status != "failed":
            return self._not_found(error)
        return TaskFailed(f"{where} failed: {excerpt(error.message, 300)}",
                          task_id=self.id, task=task, error=error)

    def _finish(self, clock: _Clock, watch: Watch, *,
                on_progress: Optional[Callable[[float, Optional[float], Optional[str]], None]],
                raise_on_error: bool, give_up: Optional[Callable[[RequestTimeout], Any]],
                ) -> types.CallToolResult:
        """Wait for the task, read its result, and make it a CallToolResult.

        ``give_up`` (a task-augmented ``call_tool``) makes a timeout, Ctrl-C or a
        cancelled future cancel the task; it returns the timeout to raise.
        """
        on_status = None
        if on_progress is not None:
            reporter = on_progress if isinstance(on_progress, TaskProgress) else TaskProgress(
                on_progress)
            on_status = reporter.status

        def work() -> Any:
            task = self._wait_ready(clock, watch, on_status, answering=True)
            return self._payload(task, clock)

        try:
            data = self._waiting(watch, work, clock, subject=self.id, method="tasks/result")
        except RequestTimeout as exc:
            if give_up is None:
                raise
            self._cancel_quietly("the call timed out")
            raise give_up(exc) from exc
        except (KeyboardInterrupt, _Stopped):
            if give_up is not None or watch.stopped:
                self._cancel_quietly("the caller gave up")
            raise
        return self._client.host.tool_calls.result(self.tool or "(task)", data, self._definition,
                                         self._schema, False, raise_on_error)

    def _cancel_quietly(self, why: str) -> None:
        """Best-effort ``tasks/cancel`` within :data:`CANCEL_TIMEOUT` (when declared)."""
        client = self._client
        try:
            if not task_wire(client).cancels(client):
                log.info("%s: %s, but the server does not cancel tasks; task %s goes on",
                         client.name, why, excerpt(repr(self.id), 80))
                return
            client.request("tasks/cancel", {"taskId": self.id}, timeout=CANCEL_TIMEOUT)
        except MCPError as exc:
            log.info("%s: could not cancel task %s (%s): %s", client.name,
                     excerpt(repr(self.id), 80), why, exc)


class FollowingTaskHandle(TaskHandle):
    """A :class:`TaskHandle` whose requests go to the connection of the moment (a
    :class:`~mcp_sync.Manager`'s handles, which outlive a reconnect): before each one,
    ``current(task_id)`` gives a handle for the task on that connection (it sends
    nothing; what it raises, ``ServerUnavailable`` while there is none, the method
    raises). A handle on another client's connection takes the requests over (and
    ``moved(task_id)`` is told); this one keeps what it saw of the task."""

    def __init__(self, handle: TaskHandle, current: Callable[[str], TaskHandle],
                 moved: Callable[[str], None]) -> None:
        super().__init__(handle._client, handle.id, task=handle.last, tool=handle.tool,
                         definition=handle._definition, schema=handle._schema)
        self._current = current
        self._moved = moved

    def _follow(self) -> None:
        client = self._current(self.id)._client
        if client is not self._client:
            self._moved(self.id)
            self._client = client

    def status(self, *, timeout: Timeout = DEFAULT) -> types.Task:
        self._follow()
        return super().status(timeout=timeout)

    def cancel(self, *, timeout: Timeout = DEFAULT) -> types.Task:
        self._follow()
        return super().cancel(timeout=timeout)

    def wait(self, timeout: Timeout = DEFAULT, *,
             on_status: Optional[Callable[[types.Task], None]] = None) -> types.Task:
        self._follow()
        return super().wait(timeout, on_status=on_status)

    def result(self, timeout: Timeout = DEFAULT, *,
               raise_on_error: bool = False) -> types.CallToolResult:
        self._follow()
        return super().result(timeout, raise_on_error=raise_on_error)

    def future(self, timeout: Timeout = DEFAULT, *,
               raise_on_error: bool = False) -> Future[types.CallToolResult]:
        self._follow()
        return super().future(timeout, raise_on_error=raise_on_error)














# -- the client's side: its tasks and its task-augmented calls ------------------------------


class TasksHost(NamedTuple):
    """What tasks need of the client (the client builds it once; read at each use, so
    a renamed client or a new connection is seen)."""

    name: Callable[[], str]
    #: ``Client.timeout``: the bound of one request when a method is given none.
    timeout: Callable[[], Optional[float]]
    #: ``Client.max_total_timeout`` and ``Client.reset_timeout_on_progress``: how long
    #: a task-augmented call may wait for its task.
    max_total_timeout: Callable[[], Optional[float]]
    reset_timeout_on_progress: Callable[[], bool]
    #: Whether task waiters may go on: the client was not closed.
    open: Callable[[], bool]
    stateless: Callable[[], bool]
    #: The connection's agreement (``ClientNotConnected`` before the first connect).
    agreement: Callable[[], Agreement]
    #: What a kept plan of a plain call depends on, read in one call (every
    #: ``call_tool`` reads it): ``(agreement, the tools listed or None,
    #: validate_output)`` (``ClientNotConnected`` before the first connect).
    plan_key: Callable[[], Tuple[Agreement, Any, bool]]
    #: Whether the server declared the capability at a path (``ClientNotConnected``
    #: when the client is closed).
    offers: Callable[..., bool]
    #: ``require_capability(what, *path)``: ``CapabilityError`` naming ``what`` unless
    #: the server declared the capability at ``path``.
    require_capability: Callable[..., None]
    #: ``Client.request``: one request, blocking.
    request: Callable[..., Any]
    #: One request to its result with the client's retries (a renewed session, a
    #: version switch, the ``input_required`` rounds): ``call(method, params, *,
    #: timeout, on_progress, headers)``.
    call: Callable[..., Any]
    #: ``paginate(method, key, model, timeout, cache)``: every item of a listing.
    paginate: Callable[[str, str, Any, Timeout, bool], List[Any]]
    #: ``follow_progress(token, callback)`` on the live session: the server's progress
    #: for ``token`` goes to ``callback`` until the function returned is called.
    follow_progress: Callable[[str, ProgressCallback], Callable[[], None]]
    #: Answer one input request (2026-07-28) with the client's handlers:
    #: ``fulfil(request, key, cancelled)``.
    fulfil: Callable[[Any, str, threading.Event], Any]
    #: The client's tool-call plumbing: a call's plan, its result checked.
    tool_calls: ToolCalls


class TaskCall:
    """A ``tools/call`` made ready on the caller's thread, before anything is sent: its
    params and :class:`~._toolcalls.ToolPlan`, the ``task`` param when it runs as a task
    (None for a plain call, which the server may still make a task in 2026-07-28),
    whether the era is stateless, and the clock of the task it may become (started
    now; None for a plain call that cannot become one: only where the server decides,
    2026-07-28, can it). Made once per call: a class with slots (a frozen dataclass
    spends a microsecond of every call setting its fields)."""

    __slots__ = ("clock", "name", "params", "plan", "stateless", "task_params", "timeout")

    def __init__(self, name: str, params: Dict[str, Any], plan: ToolPlan,
                 task_params: Optional[Dict[str, Any]], timeout: Timeout, stateless: bool,
                 clock: Optional[_Clock]) -> None:
        self.name = name
        self.params = params
        self.plan = plan
        self.task_params = task_params
        self.timeout = timeout
        self.stateless = stateless
        self.clock = clock

    def with_params(self, params: Dict[str, Any]) -> TaskCall:
        """This call with other params (a progress token of its own, say)."""
        return TaskCall(self.name, params, self.plan, self.task_params, self.timeout,
                        self.stateless, self.clock)


# Most names a client's memo of plain plans keeps for one listing (see ClientTasks).
_PLAIN_PLANS_MAX = 1024


class ClientTasks:
    """One client's tasks: the :class:`TaskBoard` of its waiters, the
    ``mcp-sync-task-<server>`` threads of its task futures, the progress tokens of its
    task-augmented calls, and those calls from start to result. The client builds it
    once, with a :class:`TasksHost`; its task handles and the wires use it (and never
    the client). Can be shared between threads."""

    def __init__(self, host: TasksHost) -> None:
        self.host = host
        #: The waiters of tasks, woken by notifications/tasks/status and by closing.
        self.board = TaskBoard()
        # Progress tokens of task-augmented calls (call_as_task): next() is atomic.
        self._tokens = itertools.count(1)
        # The mcp-sync-task-<name> threads of task futures; the client's close() joins
        # them. Guarded by _threads_lock.
        self._threads: List[threading.Thread] = []
        self._threads_lock = threading.Lock()
        # The plans of plain calls (no task asked for, none required, none the server
        # may make one: the session era), by tool name, for the agreement, the listing
        # and the validate_output they were made under: a steady call to a listed tool
        # makes its plan once per listing, not once per call. One tuple, replaced whole
        # (a new dict whenever any of the three changes), so a thread never files a plan
        # where another listing's calls would find it.
        self._plain: Tuple[Any, Any, bool, Dict[str, Tuple[ToolPlan, bool]]] = (
            None, None, False, {})

    @property
    def name(self) -> str:
        return self.host.name()

    @property
    def timeout(self) -> Optional[float]:
        return self.host.timeout()

    def bound(self, timeout: Timeout) -> Optional[float]:
        """``timeout``, or the client's for ``DEFAULT``."""
        return self.host.timeout() if timeout is DEFAULT else timeout

    def request(self, method: str, params: Optional[Dict[str, Any]] = None, *,
                timeout: Timeout = DEFAULT) -> Any:
        return self.host.request(method, params, timeout=timeout)

    def handle(self, task_id: str) -> TaskHandle:
        """A handle for task ``task_id`` (no tool known)."""
        return TaskHandle(self, task_id)

    def list(self, timeout: Timeout) -> List[types.Task]:
        return task_wire(self).list(self, timeout)

    def adopts_plain_calls(self) -> bool:
        """Whether any ``tools/call`` may come back as a task: the server decides
        (2026-07-28) and runs tools as tasks."""
        wire = task_wire(self)
        return wire.adopts_plain_calls and wire.runs_tools(self)

    # -- threads -------------------------------------------------------------------------

    def future(self, work: Callable[[Watch], Any]) -> Future[Any]:
        """A future for ``work(watch)``, run on an ``mcp-sync-task-<name>`` thread that
        the client's ``close()`` joins (:meth:`closing`); cancelling the future stops
        ``watch``."""
        watch = Watch()
        future = TaskFuture(watch)
        with self._threads_lock:
            if not self.host.open():
                raise ClientNotConnected(
                    f"client for {self.name} is closed; call connect() again")
            self._threads = [t for t in self._threads if t.is_alive()]
            thread = start_thread(drive, f"mcp-sync-task-{self.name}", future,
                                  lambda: work(watch))
            self._threads.append(thread)
        return future

    def closing(self) -> List[threading.Thread]:
        """The client is closing (its ``open()`` is false by now): every waiter wakes,
        sees it closed and fails with ``ConnectionClosed``, so a future's thread ends.
        Returns the threads to join."""
        self.board.wake_all()
        with self._threads_lock:
            threads, self._threads = self._threads, []
        return threads

    # -- task-augmented calls ------------------------------------------------------------

    def planned(self, name: str) -> Optional[Tuple[ToolPlan, bool]]:
        """The kept plan of a plain call to tool ``name`` (no task asked for) and whether
        the era is stateless, or None when none is kept (then :meth:`prepare` plans the
        call, and keeps the plan when it can).

        What ``call_tool`` looks at first: a call with a kept plan cannot become a task
        (see :meth:`prepare`), so it needs no :class:`TaskCall`; its result is the
        parsed, checked answer (``ToolCalls.result``).

        Raises:
            ClientNotConnected: the client has not connected.
        """
        return self._plain_plans().get(name)

    def prepare(self, name: str, arguments: Optional[Any], meta: Optional[Any],
                task: Optional[bool], ttl: Optional[float], timeout: Timeout) -> TaskCall:
        """A ``tools/call`` of tool ``name`` made ready (see :class:`TaskCall`).

        Raises:
            TypeError: ``arguments`` is not a mapping. ValueError: a bad ``ttl``.
            CapabilityError: a task asked for that the server or tool cannot run.
            InvalidToolSchema: the tool's outputSchema cannot check results.
        """
        return self.prepare_params(name, call_tool_params(name, arguments, meta), task, ttl,
                                   timeout)

    def prepare_params(self, name: str, params: Dict[str, Any], task: Optional[bool],
                       ttl: Optional[float], timeout: Timeout) -> TaskCall:
        """:meth:`prepare`, the params made already (``call_tool_params``)."""
        host = self.host
        plans: Optional[Dict[str, Tuple[ToolPlan, bool]]] = None
        if task is None and ttl is None:
            plans = self._plain_plans()
            known = plans.get(name)
            if known is not None:
                return TaskCall(name, params, known[0], None, timeout, known[1], None)
        plan = ToolPlan(host.tool_calls, name, params["arguments"], timeout)
        task_params = self._task_params(name, task, ttl, timeout)
        clock = None
        stateless = host.stateless()
        if task_params is not None or task_wire(self).adopts_plain_calls:
            clock = _Clock(self.bound(timeout), host.max_total_timeout(),
                           push=host.reset_timeout_on_progress())
        elif plans is not None and len(plans) < _PLAIN_PLANS_MAX and (
                plan.headers is None and plan.refresh is None):
            # A plain call that nothing can turn into a task, whose plan depends on the
            # tool's listed definition alone (no Mcp-Param headers to make per call).
            plans[name] = (plan, stateless)
        return TaskCall(name, params, plan, task_params, timeout, stateless, clock)

    def _plain_plans(self) -> Dict[str, Tuple[ToolPlan, bool]]:
        """The memo of plain plans for the current agreement, listing and
        ``validate_output`` (a new, empty one when any of them changed).

        Raises:
            ClientNotConnected: the client has not connected.
        """
        agreement, known, validate = self.host.plan_key()
        memo = self._plain
        if memo[0] is agreement and memo[1] is known and memo[2] is validate:
            return memo[3]
        plans: Dict[str, Tuple[ToolPlan, bool]] = {}
        self._plain = (agreement, known, validate, plans)
        return plans

    def _task_params(self, name: str, task: Optional[bool], ttl: Optional[float],
                     timeout: Timeout) -> Optional[Dict[str, Any]]:
        """The ``task`` param of a call to tool ``name``, or None for a plain call.

        Asked for (``task`` or ``ttl``), a task needs the server's
        ``tasks.requests.tools.call`` and a tool whose ``execution.taskSupport`` is
        ``"required"`` or ``"optional"``; not asked for, a ``"required"`` tool gets one.
        In the 2026-07-28 era a task needs the tasks extension, and there is nothing to
        ask with: the server decides (``{}`` for "expect one", None for a plain call that
        may still come back as a task).
        """
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, (int, float))
                                or not 0 < ttl < float("inf")):
            raise ValueError(f"ttl is a positive number of seconds, not {ttl!r}")
        wanted = task if task is not None else (True if ttl is not None else None)
        if wanted is False:
            return None
        wire = task_wire(self)
        if not wire.runs_tools(self):
            if wanted:
                raise CapabilityError(
                    f"{self.name} does not run tools as tasks ({wire.capability} not "
                    f"declared); call {name!r} without task= or ttl=")
            return None
        if not wire.checks_tool_support:
            return {} if wanted else None
        support = self._task_support(name, timeout)
        if wanted is None and support != "required":
            return None
        if wanted and support not in ("required", "optional"):
            raise CapabilityError(
                f"tool {excerpt(repr(name), 80)} of {self.name} cannot run as a task (its "
                f"execution.taskSupport is {excerpt(repr(support), 40) if support else 'absent'}"
                f"); call it without task= or ttl=")
        params: Dict[str, Any] = {}
        if ttl is not None:
            params["ttl"] = max(1, round(ttl * 1000))
        return params

    def _task_support(self, name: str, timeout: Timeout) -> Optional[str]:
        """Tool ``name``'s ``execution.taskSupport`` (listing the tools first if this
        connection has not), or None when the tool is not listed or says nothing."""
        tools = self.host.tool_calls.host

        def listed() -> Optional[types.Tool]:
            known = tools.known_tools()
            tool: Optional[types.Tool] = known.get(name) if known is not None else None
            return tool

        tool = listed()
        if tool is None and tools.has_tools():
            tools.list_tools(timeout)
            tool = listed()
        execution = tool.execution if tool is not None else None
        support: Optional[str] = execution.task_support if execution is not None else None
        return support

    def start(self, call: TaskCall) -> TaskHandle:
        """Send a task-augmented ``tools/call`` and return the task's handle.

        Raises:
            ProtocolError: the server answered with a result, not a task.
        """
        assert call.task_params is not None  # task=True: a task, or CapabilityError
        created = self._create(call, None, False)
        if not isinstance(created, TaskHandle):
            raise ProtocolError(f"{self.name} answered tools/call {call.name!r} with a "
                                "result, not the task it was asked to create")
        return created

    def run(self, call: TaskCall, on_progress: Optional[ProgressCallback],
            raise_on_error: bool, watch: Watch) -> types.CallToolResult:
        """A task-augmented ``tools/call`` from start to result (``call_tool`` and the
        thread of ``call_tool_future``).

        With ``on_progress``, in the session era, the call carries a progress token of
        the client's own (not its request id): MCP keeps it valid for the task's life,
        so the server's progress notifications reach ``on_progress`` after the task is
        created too, until its result is in.
        """
        reporter: Optional[TaskProgress] = None
        stop: Optional[Callable[[], None]] = None
        params = call.params
        meta = params.get("_meta")
        if on_progress is not None and not self.host.stateless() and not (
                isinstance(meta, dict) and "progressToken" in meta):
            reporter = TaskProgress(on_progress)
            token = f"mcp-sync-task-{next(self._tokens)}"
            stop = self.host.follow_progress(token, reporter)
            call = call.with_params(
                {**params, "_meta": {**(meta or {}), "progressToken": token}})
        try:
            created = self._create(call, None if reporter else on_progress, raise_on_error)
            if not isinstance(created, TaskHandle):
                return created  # the server ran it as a plain call
            assert call.clock is not None  # a task-augmented call has one
            return created._finish(call.clock, watch, on_progress=reporter or on_progress,
                                   raise_on_error=raise_on_error, give_up=_give_up(call))
        finally:
            if stop is not None:
                stop()

    def _create(self, call: TaskCall, on_progress: Optional[ProgressCallback],
                raise_on_error: bool) -> Union[TaskHandle, types.CallToolResult]:
        """Send the task-augmented ``tools/call``: a handle for the task created, or the
        result of a server that ran the call plainly after all."""
        assert call.task_params is not None
        wire = task_wire(self)
        plan = call.plan
        data = self.host.call("tools/call", wire.call_params(call.params, call.task_params),
                              timeout=call.timeout, on_progress=on_progress,
                              headers=lambda: plan.headers)
        created = self._adopt(call, data, wire)
        if created is None:
            client_log.info("%s ran tool %s plainly, not as the task asked for", self.name,
                            excerpt(repr(call.name), 80))
            return self.host.tool_calls.result(call.name, data, plan.tool, plan.schema,
                                               self.host.stateless(), raise_on_error)
        return created

    def outcome(self, call: TaskCall, data: Any, watch: Optional[Watch],
                on_progress: Optional[ProgressCallback],
                raise_on_error: bool) -> types.CallToolResult:
        """The result of a plain ``tools/call`` answered with ``data``: the result, or,
        when the server made the call a task (2026-07-28), the task's, waited for with
        ``watch`` (None: one is made only then, as a plain result needs none)."""
        # Without a clock the call cannot have become a task (see prepare()).
        adopted = self._adopt(call, data) if call.clock is not None else None
        if adopted is None:
            return self.result(call, data, raise_on_error)
        assert call.clock is not None
        return adopted._finish(call.clock, watch or Watch(), on_progress=on_progress,
                               raise_on_error=raise_on_error, give_up=_give_up(call))

    def result(self, call: TaskCall, data: Any, raise_on_error: bool) -> types.CallToolResult:
        """The result of a plain ``tools/call``, parsed and checked."""
        plan = call.plan
        return self.host.tool_calls.result(call.name, data, plan.tool, plan.schema,
                                           call.stateless, raise_on_error)

    def _adopt(self, call: TaskCall, data: Any,
               wire: Optional[SessionTasks] = None) -> Optional[TaskHandle]:
        """A handle for the task a ``tools/call`` answered with, or None for a result.
        Without ``wire`` (a plain call) only where the server decides (2026-07-28)."""
        if wire is None:
            wire = task_wire(self)
            if not wire.adopts_plain_calls:
                return None
        task: Optional[types.Task] = wire.created(data)
        if task is None:
            return None
        client_log.debug("%s runs tool %s as task %s", self.name, excerpt(repr(call.name), 80),
                         excerpt(repr(task.task_id), 80))
        return TaskHandle(self, task.task_id, task=task, tool=call.name,
                          definition=call.plan.tool, schema=call.plan.schema)


def _give_up(call: TaskCall) -> Callable[[RequestTimeout], RequestTimeout]:
    """The timeout a task-augmented call raises when its wait runs out."""
    clock = call.clock
    assert clock is not None  # only a call that became a task gives up this way
    return lambda expired: clock.expired("tools/call", expired.request_id, call.name)


# -- the wires: what differs between the eras' tasks ---------------------------------------


class SessionTasks:
    """Tasks as 2025-11-25 has them (SEP-1686): asked for with a ``task`` param on
    ``tools/call``, a ``CreateTaskResult`` wrapping the task, ``tasks/result`` for the
    outcome (held open while the server asks the client's handlers for input),
    ``tasks/list``, and a ``tasks/cancel`` that answers with the task."""

    #: What the server declares when it runs tools as tasks (for error messages).
    capability = "capability 'tasks.requests.tools.call'"
    #: Whether a tool's ``execution.taskSupport`` says if it may run as a task.
    checks_tool_support = True
    #: Whether any ``tools/call`` may come back as a task (the server decides).
    adopts_plain_calls = False

    def runs_tools(self, client: ClientTasks) -> bool:
        return client.host.offers("tasks", "requests", "tools", "call")

    def call_params(self, params: Dict[str, Any], task_params: Dict[str, Any],
                    ) -> Dict[str, Any]:
        return dict(params, task=task_params)

    def created(self, data: Any) -> Optional[types.Task]:
        """The task a ``tools/call`` created, or None for a plain result."""
        from ... import types
        from ..._types.parsing import parse as _parse

        if isinstance(data, dict) and "task" not in data and "content" in data:
            return None
        created: types.CreateTaskResult = _parse(
            types.CreateTaskResult, data, "tools/call result (a created task)")
        return created.task

    def task(self, handle: TaskHandle, data: Any, what: str) -> types.Task:
        from ... import types

        task: types.Task = handle._parse(types.GetTaskResult, data, what)
        return task

    def settled(self, task: types.Task, answering: bool) -> bool:
        # input_required: tasks/result is where the server asks for the input.
        return task.status in _READY

    def answer(self, handle: TaskHandle, clock: _Clock, watch: Watch) -> bool:
        return False  # never reached: input_required is settled

    def payload(self, handle: TaskHandle, task: types.Task, clock: _Clock) -> Dict[str, Any]:
        return handle._read_result(task, clock)

    def cancels(self, client: ClientTasks) -> bool:
        return client.host.offers("tasks", "cancel")

    def cancel(self, handle: TaskHandle, bound: Optional[float]) -> types.Task:
        from ... import types

        client = handle._client
        client.host.require_capability("tasks/cancel", "tasks", "cancel")
        try:
            data = client.request("tasks/cancel", {"taskId": handle.id}, timeout=bound)
        except ServerError as exc:
            if exc.code != INVALID_PARAMS:
                raise
            ended = handle._get(bound)  # TaskNotFound when it is the id the server refused
            if ended.status in TERMINAL_STATUSES:
                return ended
            raise
        task: types.Task = handle._parse(types.CancelTaskResult, data, "tasks/cancel result")
        handle._last = task
        return task

    def list(self, client: ClientTasks, timeout: Timeout) -> List[types.Task]:
        from ... import types

        client.host.require_capability("tasks/list", "tasks", "list")
        tasks: List[types.Task] = client.host.paginate("tasks/list", "tasks", types.Task,
                                                      timeout, False)
        return tasks


class ExtensionTasks(SessionTasks):
    """Tasks as the ``io.modelcontextprotocol/tasks`` extension has them (SEP-2663, the
    2026-07-28 era): the server decides which ``tools/call`` becomes a task and answers
    it with a flat ``resultType: "task"`` result; ``ttlMs`` and ``pollIntervalMs`` name
    their unit; ``tasks/get`` inlines the tool's ``result`` (``completed``), the JSON-RPC
    ``error`` (``failed``) or the ``inputRequests`` (``input_required``), which
    ``tasks/update`` answers with ``inputResponses``; ``tasks/cancel`` and
    ``tasks/update`` are acknowledged with an empty result. No ``tasks/result``, no
    ``tasks/list``."""

    capability = f"the {TASKS_EXTENSION} extension"
    checks_tool_support = False  # a 2026-07-28 tool says nothing about tasks
    adopts_plain_calls = True

    def runs_tools(self, client: ClientTasks) -> bool:
        return client.host.offers("extensions", TASKS_EXTENSION)

    def call_params(self, params: Dict[str, Any], task_params: Dict[str, Any],
                    ) -> Dict[str, Any]:
        if task_params:
            log.debug("the tasks extension has no ttl to ask for; not sent")
        return params  # the server decides; there is nothing to ask with

    def created(self, data: Any) -> Optional[types.Task]:
        if not (isinstance(data, dict) and data.get("resultType") == "task"):
            return None
        return _flat_task(data, "tools/call result (a created task)")

    def task(self, handle: TaskHandle, data: Any, what: str) -> types.Task:
        task: types.Task = handle._same(_flat_task(data, what), what)
        handle._inline = data
        return task

    def settled(self, task: types.Task, answering: bool) -> bool:
        if task.status == "input_required":
            return not answering  # a waiter that does not answer is told
        return task.status in TERMINAL_STATUSES

    def answer(self, handle: TaskHandle, clock: _Clock, watch: Watch) -> bool:
        """Answer the input requests of the last ``tasks/get`` not answered yet with the
        client's handlers, in one ``tasks/update``; whether one was sent."""
        client = handle._client
        requests = handle._inline.get("inputRequests")
        if not isinstance(requests, dict):
            raise ProtocolError(f"tasks/get from {client.name} says task "
                                f"{excerpt(repr(handle.id), 80)} needs input but lists no "
                                "inputRequests")
        pending = {key: request for key, request in requests.items()
                   if key not in handle._answered}
        if not pending:
            return False  # answered already; the server has not moved on yet
        responses = {key: client.host.fulfil(request, key, watch.cancelled)
                     for key, request in pending.items()}
        if watch.stopped:
            raise _Stopped()
        client.request("tasks/update", {"taskId": handle.id, "inputResponses": responses},
                       timeout=clock.request_timeout(client.timeout))
        handle._answered.update(responses)
        return True

    def payload(self, handle: TaskHandle, task: types.Task, clock: _Clock) -> Dict[str, Any]:
        client, inline = handle._client, handle._inline
        where = f"task {excerpt(repr(handle.id), 80)} on {client.name}"
        if task.status == "failed":
            error = inline.get("error")
            if not (isinstance(error, dict) and isinstance(error.get("code"), int)
                    and isinstance(error.get("message"), str)):
                raise TaskFailed(f"{where} failed" + _because(task), task_id=handle.id,
                                 task=task)
            failure = ServerError(error["code"], error["message"], error.get("data"),
                                  method="tools/call")
            raise TaskFailed(f"{where} failed: {excerpt(failure.message, 300)}",
                             task_id=handle.id, task=task, error=failure) from failure
        result = inline.get("result")
        if not isinstance(result, dict):
            raise ProtocolError(f"tasks/get from {client.name} says {where} completed but "
                                "inlines no result object")
        return result

    def cancels(self, client: ClientTasks) -> bool:
        return self.runs_tools(client)

    def cancel(self, handle: TaskHandle, bound: Optional[float]) -> types.Task:
        client = handle._client
        if not self.cancels(client):
            raise CapabilityError(f"{client.name} does not support tasks/cancel "
                                  f"({self.capability} not advertised)")
        try:
            client.request("tasks/cancel", {"taskId": handle.id}, timeout=bound)
        except ServerError as exc:
            if exc.code == INVALID_PARAMS:
                raise handle._not_found(exc) from exc
            raise
        return handle._get(bound)  # the acknowledgement carries no state

    def list(self, client: ClientTasks, timeout: Timeout) -> List[types.Task]:
        raise CapabilityError(f"{client.name} lists no tasks: the 2026-07-28 era's "
                              f"{TASKS_EXTENSION} extension has no tasks/list")


_SESSION_TASKS = SessionTasks()
_EXTENSION_TASKS = ExtensionTasks()


def task_wire(client: ClientTasks) -> SessionTasks:
    """The tasks wire of ``client``'s agreement: the extension in the stateless era.

    Raises:
        ClientNotConnected: the client has not connected.
    """
    return _EXTENSION_TASKS if client.host.agreement().stateless else _SESSION_TASKS


def _flat_task(data: Any, what: str) -> types.Task:
    """The task of an extension result (``CreateTaskResult`` or ``tasks/get``): its
    fields at the top level, ``ttlMs`` and ``pollIntervalMs`` read as the 2025-11-25
    ``ttl`` and ``pollInterval`` (milliseconds both), so one model serves both eras."""
    from ... import types
    from ..._types.parsing import parse as _parse

    if not isinstance(data, dict):
        raise ProtocolError(f"invalid {what} from server: not an object")
    fields = {key: data[key] for key in ("taskId", "status", "statusMessage", "createdAt",
                                         "lastUpdatedAt") if key in data}
    fields["ttl"] = data.get("ttlMs")
    if data.get("pollIntervalMs") is not None:
        fields["pollInterval"] = data["pollIntervalMs"]
    task: types.Task = _parse(types.Task, fields, what)
    return task
