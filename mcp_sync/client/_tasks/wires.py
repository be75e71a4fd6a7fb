"""The two wires a task is followed over: the session era's tasks
(:class:`SessionTasks`, 2025-11-25) and the 2026-07-28 tasks extension
(:class:`ExtensionTasks`); :func:`task_wire` picks one by the connection's agreement.

A wire says what differs between the eras: how a created task and a ``tasks/get`` answer
read, when a task is ready for its result, how its input is answered, where its result
is, how it is cancelled and listed. It keeps no state: what it reads and writes of a task
is the task's (:class:`WireTask`, a handle's ``RemoteTask``), through its public members.
What this package uses of the client's connection is :class:`TaskConnection`.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Protocol, Set

from ..._protocol import DEFAULT, INVALID_PARAMS, TASKS_EXTENSION, Timeout
from ...exceptions import (
    CapabilityError,
    ProtocolError,
    ServerError,
    TaskFailed,
    TaskNotFound,
    excerpt,
)
from .._settings import Timeouts
from .._toolcalls import answered_with_task, tasks_capability
from .waiting import READY_STATUSES, TERMINAL_STATUSES, Clock, Stopped, Watch, because

if TYPE_CHECKING:
    from ... import types
    from ..._protocol.agreement import Agreement
    from ..._rpc.session import RpcSession

__all__ = ["ExtensionTasks", "SessionTasks", "TaskConnection", "WireTask", "task_wire"]


class TaskListings(Protocol):
    """The client's listings, as ``tasks/list`` pages through them (``Listings``)."""

    def paginate(self, method: str, key: str, model: Any, timeout: Timeout,
                 cache: bool) -> List[Any]: ...


class InputAnswers(Protocol):
    """The client's handlers, as a task's input requests reach them
    (``ServerCallbacks``)."""

    def fulfil_observed(self, request: Any, key: str, cancelled: threading.Event) -> Any: ...


class TaskConnection(Protocol):
    """What tasks use of the client's connection (read at each use, so a renamed client
    or a new session is seen)."""

    @property
    def name(self) -> str: ...

    @property
    def timeouts(self) -> Timeouts: ...

    @property
    def is_open(self) -> bool:
        """False once the client was closed: task waiters stop."""

    @property
    def listings(self) -> TaskListings: ...

    @property
    def callbacks(self) -> InputAnswers: ...

    def stateless(self) -> bool: ...

    def require_agreement(self) -> Agreement:
        """The agreement (``ClientNotConnected`` before the first connect)."""

    def live_session(self) -> RpcSession:
        """The live session (``ClientNotConnected`` when there is none)."""

    def offers(self, *path: str) -> bool:
        """Whether the server declared the capability at ``path`` (``ClientNotConnected``
        when closed)."""

    def require_capability(self, what: str, *path: str) -> None:
        """``CapabilityError`` naming ``what`` unless the server declared ``path``."""

    def request(self, method: str, params: Optional[Dict[str, Any]] = None, *,
                timeout: Timeout = DEFAULT) -> Any:
        """One request, blocking (with the client's retries)."""


class WireTask(Protocol):
    """What a wire reads and writes of one task (a handle's ``RemoteTask``)."""

    @property
    def id(self) -> str: ...

    @property
    def connection(self) -> TaskConnection: ...

    #: The last state seen.
    last: Optional[types.Task]
    #: The last ``tasks/get`` answer as sent (2026-07-28: it inlines the result, the
    #: error or the input requests).
    inline: Dict[str, Any]
    #: The input requests answered already (2026-07-28).
    answered: Set[str]

    @property
    def where(self) -> str:
        """The task and its server, in words for an error."""

    def request(self, method: str, bound: Optional[float]) -> Any:
        """``method`` about this task, within ``bound`` seconds."""

    def get(self, bound: Optional[float]) -> types.Task:
        """``tasks/get``, kept as :attr:`last`."""

    def parse(self, model: Any, data: Any, what: str) -> Any:
        """``data`` as ``model``, a task checked to be this one."""

    def same(self, task: Any, what: str) -> Any:
        """``task``, checked to be this one."""

    def not_found(self, error: ServerError) -> TaskNotFound: ...

    def read_result(self, task: types.Task, clock: Clock) -> Dict[str, Any]:
        """``tasks/result`` (2025-11-25), or the error the task ends with."""


class SessionTasks:
    """Tasks as 2025-11-25 has them (SEP-1686): asked for with a ``task`` param on
    ``tools/call``, a ``CreateTaskResult`` wrapping the task, ``tasks/result`` for the
    outcome (held open while the server asks the client's handlers for input),
    ``tasks/list``, and a ``tasks/cancel`` that answers with the task."""

    def created(self, data: Any) -> Optional[types.Task]:
        """The task a ``tools/call`` created, or None for a plain result."""
        from ... import types
        from ..._parsing import parse

        if isinstance(data, dict) and "task" not in data and "content" in data:
            return None
        created: types.CreateTaskResult = parse(
            types.CreateTaskResult, data, "tools/call result (a created task)")
        return created.task

    def task(self, remote: WireTask, data: Any, what: str) -> types.Task:
        """The task of a ``tasks/get`` answer (``data``)."""
        from ... import types

        task: types.Task = remote.parse(types.GetTaskResult, data, what)
        return task

    def settled(self, task: types.Task, answering: bool) -> bool:
        """Whether a waiter stops at ``task`` (``answering``: it answers input)."""
        # input_required: tasks/result is where the server asks for the input.
        return task.status in READY_STATUSES

    def answer(self, remote: WireTask, clock: Clock, watch: Watch) -> bool:
        """Answer the input the task asks for; whether something was sent."""
        return False  # never reached: input_required is settled

    def payload(self, remote: WireTask, task: types.Task, clock: Clock) -> Dict[str, Any]:
        """The tool's result of a ready task, or the error it ends with."""
        return remote.read_result(task, clock)

    def cancels(self, connection: TaskConnection) -> bool:
        """Whether the server cancels tasks."""
        return connection.offers("tasks", "cancel")

    def cancel(self, remote: WireTask, bound: Optional[float]) -> types.Task:
        """``tasks/cancel``; the task's state after."""
        from ... import types

        remote.connection.require_capability("tasks/cancel", "tasks", "cancel")
        try:
            data = remote.request("tasks/cancel", bound)
        except ServerError as exc:
            if exc.code != INVALID_PARAMS:
                raise
            ended = remote.get(bound)  # TaskNotFound when it is the id the server refused
            if ended.status in TERMINAL_STATUSES:
                return ended
            raise
        task: types.Task = remote.parse(types.CancelTaskResult, data, "tasks/cancel result")
        remote.last = task
        return task

    def list(self, connection: TaskConnection, timeout: Timeout) -> List[types.Task]:
        """Every task the server lists (``tasks/list``)."""
        from ... import types

        connection.require_capability("tasks/list", "tasks", "list")
        tasks: List[types.Task] = connection.listings.paginate(
            "tasks/list", "tasks", types.Task, timeout, False)
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

    def created(self, data: Any) -> Optional[types.Task]:
        if not answered_with_task(data):
            return None
        return _flat_task(data, "tools/call result (a created task)")

    def task(self, remote: WireTask, data: Any, what: str) -> types.Task:
        task: types.Task = remote.same(_flat_task(data, what), what)
        remote.inline = data
        return task

    def settled(self, task: types.Task, answering: bool) -> bool:
        if task.status == "input_required":
            return not answering  # a waiter that does not answer is told
        return task.status in TERMINAL_STATUSES

    def answer(self, remote: WireTask, clock: Clock, watch: Watch) -> bool:
        """Answer the input requests of the last ``tasks/get`` not answered yet with the
        client's handlers, in one ``tasks/update``; whether one was sent."""
        connection = remote.connection
        requests = remote.inline.get("inputRequests")
        if not isinstance(requests, dict):
            raise ProtocolError(f"tasks/get from {connection.name} says task "
                                f"{excerpt(repr(remote.id), 80)} needs input but lists no "
                                "inputRequests")
        pending = {key: request for key, request in requests.items()
                   if key not in remote.answered}
        if not pending:
            return False  # answered already; the server has not moved on yet
        fulfil = connection.callbacks.fulfil_observed
        responses = {key: fulfil(request, key, watch.cancelled)
                     for key, request in pending.items()}
        if watch.stopped:
            raise Stopped()
        connection.request("tasks/update", {"taskId": remote.id, "inputResponses": responses},
                           timeout=clock.request_timeout(connection.timeouts.timeout))
        remote.answered.update(responses)
        return True

    def payload(self, remote: WireTask, task: types.Task, clock: Clock) -> Dict[str, Any]:
        inline = remote.inline
        if task.status == "failed":
            error = inline.get("error")
            if not (isinstance(error, dict) and isinstance(error.get("code"), int)
                    and isinstance(error.get("message"), str)):
                raise TaskFailed(f"{remote.where} failed" + because(task), task_id=remote.id,
                                 task=task)
            failure = ServerError(error["code"], error["message"], error.get("data"),
                                  method="tools/call")
            raise TaskFailed(f"{remote.where} failed: {excerpt(failure.message, 300)}",
                             task_id=remote.id, task=task, error=failure) from failure
        result = inline.get("result")
        if not isinstance(result, dict):
            raise ProtocolError(f"tasks/get from {remote.connection.name} says {remote.where} "
                                "completed but inlines no result object")
        return result

    def cancels(self, connection: TaskConnection) -> bool:
        return connection.offers(*tasks_capability(True)[0])

    def cancel(self, remote: WireTask, bound: Optional[float]) -> types.Task:
        connection = remote.connection
        if not self.cancels(connection):
            raise CapabilityError(f"{connection.name} does not support tasks/cancel "
                                  f"({tasks_capability(True)[1]} not advertised)")
        try:
            remote.request("tasks/cancel", bound)
        except ServerError as exc:
            if exc.code == INVALID_PARAMS:
                raise remote.not_found(exc) from exc
            raise
        return remote.get(bound)  # the acknowledgement carries no state

    def list(self, connection: TaskConnection, timeout: Timeout) -> List[types.Task]:
        raise CapabilityError(f"{connection.name} lists no tasks: the 2026-07-28 era's "
                              f"{TASKS_EXTENSION} extension has no tasks/list")


_SESSION_TASKS = SessionTasks()
_EXTENSION_TASKS = ExtensionTasks()


def task_wire(connection: TaskConnection) -> SessionTasks:
    """The tasks wire of ``connection``'s agreement: the extension in the stateless era.

    Raises:
        ClientNotConnected: the client has not connected.
    """
    return _EXTENSION_TASKS if connection.require_agreement().stateless else _SESSION_TASKS


def _flat_task(data: Any, what: str) -> types.Task:
    """The task of an extension result (``CreateTaskResult`` or ``tasks/get``): its
    fields at the top level, ``ttlMs`` and ``pollIntervalMs`` read as the 2025-11-25
    ``ttl`` and ``pollInterval`` (milliseconds both), so one model serves both eras."""
    from ... import types
    from ..._parsing import parse

    if not isinstance(data, dict):
        raise ProtocolError(f"invalid {what} from server: not an object")
    fields = {key: data[key] for key in ("taskId", "status", "statusMessage", "createdAt",
                                         "lastUpdatedAt") if key in data}
    fields["ttl"] = data.get("ttlMs")
    if data.get("pollIntervalMs") is not None:
        fields["pollInterval"] = data["pollIntervalMs"]
    task: types.Task = parse(types.Task, fields, what)
    return task
