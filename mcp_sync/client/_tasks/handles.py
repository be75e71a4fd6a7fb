"""A task on the server, seen from the client: :class:`TaskHandle` (and the
:class:`FollowingTaskHandle` of a :class:`~mcp_sync.Manager`, which follows its server
across reconnects), over the :class:`RemoteTask` that does the work.

A :class:`RemoteTask` is one task as the client asks about it: what was seen of it, the
requests about it (``tasks/get``, ``tasks/result``, ``tasks/cancel``, each through the
wire of the connection's era, :mod:`.wires`), and the waiting for it on the calling
thread, polling ``tasks/get`` and woken by status notifications (:mod:`.waiting`). A
handle is its public face; a call that is a task (:mod:`.calls`) waits on one for its
result. Both reach the client only through its tasks (:class:`HandleTasks`).
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Protocol, Set

from ..._protocol import DEFAULT, INVALID_PARAMS, Timeout
from ...exceptions import (
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
from .._toolcalls import ToolPlan, tool_result
from .waiting import (
    CANCEL_TIMEOUT,
    READY_STATUSES,
    TERMINAL_STATUSES,
    Clock,
    Stopped,
    TaskBoard,
    TaskProgress,
    Watch,
    because,
    guarded,
    poll_interval,
)
from .wires import TaskConnection, task_wire

if TYPE_CHECKING:
    from ... import types

__all__ = ["FollowingTaskHandle", "HandleTasks", "RemoteTask", "TaskHandle"]

log = logging.getLogger(__name__)

#: ``on_progress(progress, total, message)``.
ProgressReport = Callable[[float, Optional[float], Optional[str]], None]


class HandleTasks(Protocol):
    """What a task's handle uses of the client's tasks (``ClientTasks``): the
    connection its requests go to, the board its waits watch, and the threads of task
    futures."""

    @property
    def connection(self) -> TaskConnection: ...

    @property
    def board(self) -> TaskBoard: ...

    def on_thread(self, work: Callable[[Watch], Any]) -> Future[Any]:
        """A future for ``work(watch)``, run on an ``mcp-sync-task-<server>`` thread."""


class RemoteTask:
    """One task on the server, as the client asks about it and waits for it: its
    ``id``, the client's ``tasks`` it goes through (a manager's handle moves it to the
    server's client of the moment), the ``last`` state seen and, in the 2026-07-28 era,
    the last ``tasks/get`` answer as sent (``inline``: it inlines the result, the error
    or the input requests) with the input requests ``answered`` already; the tool it
    runs and the call's ``plan`` when the client started it (its result is then checked
    against the tool's outputSchema). The wires read and write it (``WireTask``)."""

    def __init__(self, tasks: HandleTasks, task_id: str, *, last: Optional[types.Task] = None,
                 tool: Optional[str] = None, plan: Optional[ToolPlan] = None) -> None:
        self.tasks = tasks
        self.id = task_id
        self.last = last
        self.tool = tool
        self.plan = plan
        self.inline: Dict[str, Any] = {}
        self.answered: Set[str] = set()
        # The last (status, statusMessage) seen, to tell changes apart from repeats.
        self._seen: Optional[tuple] = None  # type: ignore[type-arg]

    @property
    def connection(self) -> TaskConnection:
        return self.tasks.connection

    @property
    def where(self) -> str:
        """The task and its server, in words for an error."""
        return f"task {excerpt(repr(self.id), 80)} on {self.connection.name}"

    # -- the requests about it -------------------------------------------------------------

    def request(self, method: str, bound: Optional[float]) -> Any:
        """``method`` about this task (``{"taskId": id}``), within ``bound`` seconds."""
        return self.connection.request(method, {"taskId": self.id}, timeout=bound)

    def get(self, bound: Optional[float]) -> types.Task:
        """Ask the task's state (``tasks/get``) and keep it as :attr:`last`.

        Raises:
            TaskNotFound: the server does not know the id.
        """
        try:
            data = self.request("tasks/get", bound)
        except ServerError as exc:
            if exc.code == INVALID_PARAMS:
                raise self.not_found(exc) from exc
            raise
        task = task_wire(self.connection).task(self, data, "tasks/get result")
        self.last = task
        return task

    def parse(self, model: Any, data: Any, what: str) -> Any:
        """``data`` parsed as ``model``, a task checked to be this one."""
        from ..._parsing import parse

        return self.same(parse(model, data, what), what)

    def same(self, task: Any, what: str) -> Any:
        """``task``, after checking it is this one."""
        if task.task_id != self.id:
            raise ProtocolError(
                f"{what} from {self.connection.name} is about task "
                f"{excerpt(repr(task.task_id), 80)}, not {excerpt(repr(self.id), 80)}")
        return task

    def not_found(self, error: ServerError) -> TaskNotFound:
        return TaskNotFound(
            f"{self.connection.name} does not know task {excerpt(repr(self.id), 80)} "
            f"(unknown or expired): {excerpt(error.message, 200)}",
            task_id=self.id, task=self.last, error=error)

    def read_result(self, task: types.Task, clock: Clock) -> Dict[str, Any]:
        """``tasks/result`` (2025-11-25), or the error the task ends with."""
        try:
            data = self.request("tasks/result", clock.request_timeout(None))
        except ServerError as exc:
            raise self._failure(task, exc, clock) from exc
        if not isinstance(data, dict):
            raise ProtocolError(f"tasks/result from {self.connection.name} is not an object")
        return data

    def _failure(self, task: types.Task, error: ServerError, clock: Clock) -> TaskError:
        """What a ``tasks/result`` error means, by the task's status."""
        if task.status not in TERMINAL_STATUSES:  # input_required when asked: ask again
            try:
                task = self.get(clock.request_timeout(self.connection.timeouts.timeout))
            except TaskNotFound as exc:
                return exc
        if task.status == "cancelled":
            return TaskCancelled(f"{self.where} was cancelled" + because(task),
                                 task_id=self.id, task=task, error=error)
        if error.code == INVALID_PARAMS and task.status != "failed":
            return self.not_found(error)
        return TaskFailed(f"{self.where} failed: {excerpt(error.message, 300)}",
                          task_id=self.id, task=task, error=error)

    def cancel(self, bound: Optional[float]) -> types.Task:
        """``tasks/cancel`` (see ``TaskHandle.cancel``)."""
        return task_wire(self.connection).cancel(self, bound)

    def cancel_quietly(self, why: str) -> None:
        """Best-effort ``tasks/cancel`` within :data:`CANCEL_TIMEOUT` (when declared)."""
        connection = self.connection
        try:
            if not task_wire(connection).cancels(connection):
                log.info("%s: %s, but the server does not cancel tasks; task %s goes on",
                         connection.name, why, excerpt(repr(self.id), 80))
                return
            self.request("tasks/cancel", CANCEL_TIMEOUT)
        except MCPError as exc:
            log.info("%s: could not cancel task %s (%s): %s", connection.name,
                     excerpt(repr(self.id), 80), why, exc)

    # -- waiting for it ------------------------------------------------------------------

    def wait(self, clock: Clock, watch: Watch,
             on_status: Optional[Callable[[types.Task], None]]) -> types.Task:
        """Wait until the task is ready (``TaskHandle.wait``)."""
        task: types.Task = self._waiting(
            watch, lambda: self._wait_ready(clock, watch, on_status), clock, subject=self.id)
        return task

    def finish(self, clock: Clock, watch: Watch, *, on_progress: Optional[ProgressReport],
               raise_on_error: bool, give_up: Optional[Callable[[RequestTimeout], Any]],
               ) -> types.CallToolResult:
        """Wait for the task, read its result, and make it a CallToolResult.

        ``give_up`` (a call that is a task) makes a timeout, Ctrl-C or a cancelled future
        cancel the task; it returns the timeout to raise.
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
            self.cancel_quietly("the call timed out")
            raise give_up(exc) from exc
        except (KeyboardInterrupt, Stopped):
            if give_up is not None or watch.stopped:
                self.cancel_quietly("the caller gave up")
            raise
        return tool_result(self.connection.name, self.tool or "(task)", data, self.plan,
                           stateless=False, raise_on_error=raise_on_error)

    def _waiting(self, watch: Watch, work: Callable[[], Any], clock: Clock, *,
                 subject: Optional[str], method: str = "tasks/get") -> Any:
        """Run ``work`` with ``watch`` on the board: a wait's end, timeout and closing."""
        board = self.tasks.board
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
        return ConnectionClosed(f"the client for {self.connection.name} closed while "
                                f"waiting for task {excerpt(repr(self.id), 80)}")

    def _wait_ready(self, clock: Clock, watch: Watch,
                    on_status: Optional[Callable[[types.Task], None]],
                    answering: bool = False) -> types.Task:
        """Poll until the task is ready for its result (``answering``: the input it
        asks for is answered on the way, where the wire wants that); on the calling
        thread."""
        from ... import types

        connection = self.connection
        timeouts = connection.timeouts
        wire = task_wire(connection)
        task = self.last
        if task is None or task.status in READY_STATUSES:
            # Re-attached, or a state seen earlier: ask (a finished task may be gone).
            task = self.get(clock.request_timeout(timeouts.timeout))
        next_poll = time.monotonic() + poll_interval(task)
        while True:
            self._note(task, clock, on_status)
            if wire.settled(task, answering):
                return task
            if task.status == "input_required" and wire.answer(self, clock, watch):
                task = self.get(clock.request_timeout(timeouts.timeout))  # at once
                next_poll = time.monotonic() + poll_interval(task)
                continue
            remaining = clock.remaining()
            if remaining is not None and remaining <= 0:
                raise RequestTimeout("tasks/get", None, clock.timeout)
            pause = max(0.0, next_poll - time.monotonic())
            watch.event.wait(pause if remaining is None else min(pause, remaining))
            watch.event.clear()
            if watch.stopped:
                raise Stopped()
            if not connection.is_open:
                raise self._closed()
            note = watch.take()
            if note is not None:
                try:
                    task = self.parse(types.TaskStatusNotificationParams, note,
                                      "notifications/tasks/status")
                except ProtocolError as exc:
                    log.warning("%s: skipping a malformed task status notification: %s",
                                connection.name, excerpt(str(exc), 300))
                else:
                    self.last = task
                    self._note(task, clock, on_status)
                    if task.status in READY_STATUSES:
                        continue
            # A poll stays due however many notifications arrive: a server's notes may
            # be stale, its tasks/get answer is what counts.
            if time.monotonic() >= next_poll:
                task = self.get(clock.request_timeout(timeouts.timeout))
                next_poll = time.monotonic() + poll_interval(task)

    def _note(self, task: types.Task, clock: Clock,
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

    def _payload(self, task: types.Task, clock: Clock) -> Dict[str, Any]:
        """The tool's result of a ready task, or the error it ends with."""
        if task.status == "cancelled":
            raise TaskCancelled(f"{self.where} was cancelled" + because(task),
                                task_id=self.id, task=task)
        return task_wire(self.connection).payload(self, task, clock)


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

    def __init__(self, remote: RemoteTask) -> None:
        if not isinstance(remote.id, str) or not remote.id:
            raise TypeError(f"a task id is a non-empty string, not {excerpt(repr(remote.id), 80)}")
        # The task as the client asks about it: its requests, what was seen of it.
        self._remote = remote
        #: The task's id, given by the server.
        self.id = remote.id
        #: The tool the task runs, when this handle started it (else ``None``).
        self.tool = remote.tool

    def __repr__(self) -> str:
        last = self._remote.last
        status = last.status if last is not None else "unknown"
        return (f"<TaskHandle {excerpt(self.id, 80)} {status} on "
                f"{self._remote.connection.name}>")

    @property
    def last(self) -> Optional[types.Task]:
        """The last state of the task this handle saw (no request), or ``None``."""
        return self._remote.last

    # -- one request each ----------------------------------------------------------------

    def status(self, *, timeout: Timeout = DEFAULT) -> types.Task:
        """Ask the server for the task's current state (one ``tasks/get``).

        Raises:
            TaskNotFound: the server does not know the id (wrong, or expired).
            RequestTimeout, ConnectionClosed, ServerError: as for any request.
        """
        return self._remote.get(self._bound(timeout))

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
        return self._remote.cancel(self._bound(timeout))

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
        return self._remote.wait(self._clock(timeout), Watch(),
                                 None if on_status is None else guarded(on_status))

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
        return self._remote.finish(self._clock(timeout), Watch(), on_progress=None,
                                   raise_on_error=raise_on_error, give_up=None)

    def future(self, timeout: Timeout = DEFAULT, *,
               raise_on_error: bool = False) -> Future[types.CallToolResult]:
        """:meth:`result` as a :class:`concurrent.futures.Future`, at once.

        The waiting runs on an ``mcp-sync-task-<server>`` thread that ends with the
        future. ``future.cancel()`` stops it and cancels the task (``tasks/cancel``,
        best effort, within 2 s).
        """
        clock = self._clock(timeout)
        remote = self._remote
        return remote.tasks.on_thread(
            lambda watch: remote.finish(clock, watch, on_progress=None,
                                        raise_on_error=raise_on_error, give_up=None))

    def _bound(self, timeout: Timeout) -> Optional[float]:
        return self._remote.connection.timeouts.of(timeout)

    def _clock(self, timeout: Timeout) -> Clock:
        return Clock(self._bound(timeout), None, push=False)


class FollowingTaskHandle(TaskHandle):
    """A :class:`TaskHandle` whose requests go to the connection of the moment (a
    :class:`~mcp_sync.Manager`'s handles, which outlive a reconnect): before each one,
    ``current(task_id)`` gives a handle for the task on that connection (it sends
    nothing; what it raises, ``ServerUnavailable`` while there is none, the method
    raises). A handle on another client's connection takes the requests over (and
    ``moved(task_id)`` is told); this one keeps what it saw of the task."""

    def __init__(self, handle: TaskHandle, current: Callable[[str], TaskHandle],
                 moved: Callable[[str], None]) -> None:
        remote = handle._remote
        super().__init__(RemoteTask(remote.tasks, remote.id, last=remote.last, tool=remote.tool,
                                    plan=remote.plan))
        self._current = current
        self._moved = moved

    def _follow(self) -> None:
        tasks = self._current(self.id)._remote.tasks
        if tasks is not self._remote.tasks:
            self._moved(self.id)
            self._remote.tasks = tasks

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
