"""The client's side of tasks: :class:`ClientTasks`, the tool calls that are tasks from
their start to their result, the waiters' board and the threads of task futures (see
the package's docstring).

A tool call comes here made ready (``_toolcalls.ToolCall``) when it runs as a task, or
once the server answered a plain call with a task (the 2026-07-28 tasks extension); a
plain call never does. Its task is then waited for on a :class:`~.handles.RemoteTask`.
"""

from __future__ import annotations

import itertools
import logging
import threading
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Protocol, Union

from ..._protocol import Timeout
from ..._util.threads import start_thread
from ...exceptions import ClientNotConnected, ProtocolError, RequestTimeout, excerpt
from .._rounds import RoundsRunner
from .._toolcalls import ToolCall, tool_result
from .handles import RemoteTask, TaskHandle
from .waiting import Clock, TaskBoard, TaskFuture, TaskProgress, Watch, drive
from .wires import TaskConnection, task_wire

if TYPE_CHECKING:
    from ... import types
    from ..._rpc.core import ProgressCallback

__all__ = ["CallTasksConnection", "ClientTasks"]

# The client's logger: these messages were always the client's.
log = logging.getLogger("mcp_sync.client")


class CallTasksConnection(TaskConnection, Protocol):
    """What the client's tasks use of its connection: what handles and wires use, and
    the rounds a task-augmented ``tools/call`` is sent through."""

    @property
    def rounds(self) -> RoundsRunner: ...


class ClientTasks:
    """One client's tasks: the :class:`TaskBoard` of its waiters, the
    ``mcp-sync-task-<server>`` threads of its task futures, the progress tokens of its
    task-augmented calls, and the tool calls that are tasks, from start to result. The
    client's connection holds one, made with the connection itself (of which it uses what
    :class:`CallTasksConnection` names); its task handles reach the client through it
    alone. Can be shared between threads."""

    def __init__(self, connection: CallTasksConnection) -> None:
        self.connection = connection
        #: The waiters of tasks, woken by notifications/tasks/status and by closing.
        self.board = TaskBoard()
        # Progress tokens of task-augmented calls (_run): next() is atomic.
        self._tokens = itertools.count(1)
        # The mcp-sync-task-<name> threads of task futures; the client's close() joins
        # them. Guarded by _threads_lock.
        self._threads: List[threading.Thread] = []
        self._threads_lock = threading.Lock()

    # -- what the connection tells them --------------------------------------------------

    def status(self, params: Any) -> None:
        """A ``notifications/tasks/status`` arrived (the callback thread)."""
        self.board.status(params)

    def wake_all(self) -> None:
        """The connection was lost: every waiter's next poll meets the loss."""
        self.board.wake_all()

    def closing(self) -> List[threading.Thread]:
        """The client is closing (its connection is no longer open): every waiter
        wakes, sees it closed and fails with ``ConnectionClosed``, so a future's thread
        ends. Returns the threads to join."""
        self.board.wake_all()
        with self._threads_lock:
            threads, self._threads = self._threads, []
        return threads

    # -- handles -------------------------------------------------------------------------

    def handle(self, task_id: str) -> TaskHandle:
        """A handle for task ``task_id`` (no tool known)."""
        return TaskHandle(RemoteTask(self, task_id))

    def list(self, timeout: Timeout) -> List[types.Task]:
        """``Client.list_tasks``."""
        return task_wire(self.connection).list(self.connection, timeout)

    def on_thread(self, work: Callable[[Watch], Any]) -> Future[Any]:
        """A future for ``work(watch)``, run on an ``mcp-sync-task-<name>`` thread that
        the client's ``close()`` joins (:meth:`closing`); cancelling the future stops
        ``watch``.

        Raises:
            ClientNotConnected: the client is closed.
        """
        watch = Watch()
        future = TaskFuture(watch)
        name = self.connection.name
        with self._threads_lock:
            if not self.connection.is_open:
                raise ClientNotConnected(f"client for {name} is closed; call connect() again")
            self._threads = [t for t in self._threads if t.is_alive()]
            thread = start_thread(drive, f"mcp-sync-task-{name}", future, lambda: work(watch))
            self._threads.append(thread)
        return future

    # -- the tool calls that are tasks (ToolCalls hands them over) -------------------------

    def run_task(self, call: ToolCall) -> types.CallToolResult:
        """A task-augmented ``tools/call`` from start to result, on the caller's thread."""
        return self._run(call, Watch())

    def task_future(self, call: ToolCall) -> Future[types.CallToolResult]:
        """:meth:`run_task` on an ``mcp-sync-task-<name>`` thread that ends with the
        future; cancelling the future cancels the call, or the task once there is one."""
        return self.on_thread(lambda watch: self._run(call, watch))

    def start_task(self, call: ToolCall) -> TaskHandle:
        """Send a task-augmented ``tools/call`` and return the task's handle.

        Raises:
            ProtocolError: the server answered with a result, not a task.
        """
        assert call.task_params is not None  # task=True: a task, or CapabilityError
        created = self._create(call, None)
        if not isinstance(created, RemoteTask):
            raise ProtocolError(f"{self.connection.name} answered tools/call {call.name!r} "
                                "with a result, not the task it was asked to create")
        return TaskHandle(created)

    def follow_task(self, call: ToolCall, data: Any) -> types.CallToolResult:
        """A plain ``tools/call`` the server answered with a task (``data``, 2026-07-28):
        the task's result, waited for on the caller's thread."""
        return self._outcome(call, data, Watch())

    def follow_task_future(self, call: ToolCall, data: Any) -> Future[types.CallToolResult]:
        """:meth:`follow_task` on an ``mcp-sync-task-<name>`` thread that ends with the
        future (the answer came to ``call_tool_future``); cancelling the future cancels
        the task."""
        return self.on_thread(lambda watch: self._outcome(call, data, watch))

    def _run(self, call: ToolCall, watch: Watch) -> types.CallToolResult:
        """A task-augmented ``tools/call`` from start to result (``call_tool`` and the
        thread of ``call_tool_future``).

        With ``on_progress``, in the session era, the call carries a progress token of
        the client's own (not its request id): MCP keeps it valid for the task's life,
        so the server's progress notifications reach ``on_progress`` after the task is
        created too, until its result is in.
        """
        on_progress = call.on_progress
        reporter: Optional[TaskProgress] = None
        stop: Optional[Callable[[], None]] = None
        params = call.params
        meta = params.get("_meta")
        if on_progress is not None and not call.stateless and not (
                isinstance(meta, dict) and "progressToken" in meta):
            reporter = TaskProgress(on_progress)
            token = f"mcp-sync-task-{next(self._tokens)}"
            stop = self.connection.live_session().follow_progress(token, reporter)
            call = call.with_params(
                {**params, "_meta": {**(meta or {}), "progressToken": token}})
        try:
            created = self._create(call, None if reporter else on_progress)
            if not isinstance(created, RemoteTask):
                return created  # the server ran it as a plain call
            clock = self._clock(call)
            return created.finish(clock, watch, on_progress=reporter or on_progress,
                                  raise_on_error=call.raise_on_error,
                                  give_up=_give_up(clock, call))
        finally:
            if stop is not None:
                stop()

    def _create(self, call: ToolCall, on_progress: Optional[ProgressCallback],
                ) -> Union[RemoteTask, types.CallToolResult]:
        """Send the task-augmented ``tools/call``: the task created, or the result of a
        server that ran the call plainly after all."""
        data = self.connection.rounds.round_trip("tools/call", call.params,
                                                 timeout=call.timeout, on_progress=on_progress,
                                                 headers=call.plan.request_headers)
        created = self._adopt(call, data)
        if created is None:
            log.info("%s ran tool %s plainly, not as the task asked for",
                     self.connection.name, excerpt(repr(call.name), 80))
            return tool_result(self.connection.name, call.name, data, call.plan,
                               stateless=call.stateless, raise_on_error=call.raise_on_error)
        return created

    def _outcome(self, call: ToolCall, data: Any, watch: Watch) -> types.CallToolResult:
        """The result of a plain ``tools/call`` answered with ``data``: the result, or
        the task's, when the server made the call a task."""
        adopted = self._adopt(call, data)
        if adopted is None:
            return tool_result(self.connection.name, call.name, data, call.plan,
                               stateless=call.stateless, raise_on_error=call.raise_on_error)
        clock = self._clock(call)
        return adopted.finish(clock, watch, on_progress=call.on_progress,
                              raise_on_error=call.raise_on_error, give_up=_give_up(clock, call))

    def _adopt(self, call: ToolCall, data: Any) -> Optional[RemoteTask]:
        """The task a ``tools/call`` answered with, or None for a result."""
        task: Optional[types.Task] = task_wire(self.connection).created(data)
        if task is None:
            return None
        log.debug("%s runs tool %s as task %s", self.connection.name,
                  excerpt(repr(call.name), 80), excerpt(repr(task.task_id), 80))
        return RemoteTask(self, task.task_id, last=task, tool=call.name, plan=call.plan)

    def _clock(self, call: ToolCall) -> Clock:
        """The clock of the wait for the task of ``call``, from when the call started:
        its ``timeout`` from one change of the task to the next, never past
        ``max_total_timeout``."""
        timeouts = self.connection.timeouts
        return Clock(timeouts.of(call.timeout), timeouts.max_total_timeout,
                     push=timeouts.reset_timeout_on_progress, started=call.started)


def _give_up(clock: Clock, call: ToolCall) -> Callable[[RequestTimeout], RequestTimeout]:
    """The timeout a call that is a task raises when the wait on ``clock`` runs out."""
    return lambda expired: clock.expired("tools/call", expired.request_id, call.name)
