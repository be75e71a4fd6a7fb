"""The peer of tests/client/test_tasks.py: a FakeServer that runs tools as tasks (2025-11-25).

``python tests/servers/task_server.py [--no-tasks] [--no-cancel]`` serves it over stdio;
the tests host the same server over Streamable HTTP in their own process
(``McpHttpServer(TaskServer())``). It declares ``tasks.list``, ``tasks.cancel`` and
``tasks.requests.tools.call`` (``--no-tasks``: none of them; ``--no-cancel``: no
``tasks.cancel``). Tasks are driven by the client's polls, not by time: each
``tasks/get`` moves a task one step, so a test decides what happens by what it asks.

Tools (``execution.taskSupport`` in brackets):

* ``countdown(polls, text)`` [required]: ``working`` (message ``poll k of polls``) for
  ``polls`` ``tasks/get``, then ``completed``: ``text`` as content and
  ``{"text": text, "polls": polls}`` as structuredContent (its outputSchema wants a
  string ``text``). ``misshapen()`` [required]: completes at once with structuredContent
  that does not match its outputSchema.
* ``fails(message)`` [required]: ``failed`` at the first poll; ``tasks/result`` is the
  JSON-RPC error -32603 ``message``. ``fails_softly(message)`` [optional]: ``failed``,
  and ``tasks/result`` is a result with ``isError: true``.
* ``dropped()`` [required]: the server cancels it at the first poll ("stopped by the
  operator").
* ``forever()`` [required]: ``working`` until cancelled (pollInterval 50 ms);
  ``ticking()`` [required]: the same, with a new status message at every poll.
* ``flood(count)`` [required]: answers its first ``tasks/get`` ``working`` (pollInterval
  60 s, where the other tasks ask for 50 ms), after ``count``
  ``notifications/tasks/status`` (``working``, ``step k``) and a last one saying
  ``completed``: only the notifications can end the wait early.
* ``expires()`` [required]: ``tasks/get`` and ``tasks/result`` answer -32602 "Task has
  expired".
* ``confirm(question)`` [required]: ``input_required`` at the first poll; ``tasks/result``
  then sends ``elicitation/create`` (with the related-task ``_meta``) and completes with
  ``answer: <the elicited content>``.
* ``maybe(text)`` [optional]: ``plain: text`` as a plain call, ``task: text`` as a task
  (completed at the first poll). ``echo(text)`` [no execution] and
  ``never_task(text)`` [forbidden]: plain tools.
* ``ask(method, params, timeout)``: sends the client ``method`` and answers
  ``{"result": ...}`` or ``{"error": ...}`` as structuredContent (the tests of the client
  as task executor drive ``tasks/*`` with it); ``client_capabilities()``: what the
  client declared; ``wait_pending(count)``: waits until ``count`` of the server's
  requests await the client's answer; ``notes(method)``: the params of the client's notifications of
  ``method``.
* ``received(method)``: how many messages of ``method`` the server received;
  ``wait_for(method, count)``: blocks (10 s at most) until it has received ``count``
  of them, then answers how many; ``task_state(task_id)``: the task's status.

A plain ``tools/call`` of a ``required`` tool is refused with -32601, as MCP asks.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Type

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcp_sync.testing import FakeServer, RpcError, ServerConnection

RELATED_TASK = "io.modelcontextprotocol/related-task"
TERMINAL = ("completed", "failed", "cancelled")
WAIT = 10.0


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


class TaskRecord:
    """What both task servers (this one and the 2026-07-28 extension's) keep of a task;
    the server's ``lock`` guards it. Each era's subclass names its timing fields."""

    def __init__(self, task_id: str, tool: str, arguments: Dict[str, Any]) -> None:
        self.task_id = task_id
        self.tool = tool
        self.arguments = arguments
        self.status = "working"
        self.message: Optional[str] = "started"
        self.created = self.updated = _now()
        self.polls = 0
        self.result: Optional[Dict[str, Any]] = None
        self.error: Optional[Dict[str, Any]] = None

    def set(self, status: str, message: Optional[str]) -> None:
        self.status, self.message, self.updated = status, message, _now()

    def timing(self) -> Dict[str, Any]:
        """The era's ttl and poll interval fields."""
        raise NotImplementedError

    def wire(self) -> Dict[str, Any]:
        task: Dict[str, Any] = {"taskId": self.task_id, "status": self.status,
                                "createdAt": self.created, "lastUpdatedAt": self.updated,
                                **self.timing()}
        if self.message is not None:
            task["statusMessage"] = self.message
        return task


class _Task(TaskRecord):
    """A 2025-11-25 task: the client may ask for its ttl."""

    def __init__(self, task_id: str, tool: str, arguments: Dict[str, Any],
                 ttl: Optional[int]) -> None:
        super().__init__(task_id, tool, arguments)
        self.ttl = ttl if ttl is not None else 60_000
        self.poll_interval = 50
        self.expired = False
        self.cancel_requests = 0

    def timing(self) -> Dict[str, Any]:
        return {"ttl": self.ttl, "pollInterval": self.poll_interval}


def _text(text: str, **extra: Any) -> Dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], **extra}


def step_shared(task: Any) -> bool:
    """One poll's step of the tools both task servers (this one and the 2026-07-28
    extension's) run alike; False for a tool that is not one of them."""
    tool, arguments, polls = task.tool, task.arguments, task.polls
    if tool == "countdown":
        target = int(arguments.get("polls", 1))
        if polls >= target:
            text = str(arguments.get("text", ""))
            task.result = _text(text, structuredContent={"text": text, "polls": target})
            task.set("completed", "done")
        else:
            task.set("working", f"poll {polls} of {target}")
    elif tool == "misshapen":
        task.result = _text("42", structuredContent={"text": 42})
        task.set("completed", None)
    elif tool == "fails":
        task.error = {"code": -32603, "message": str(arguments.get("message", "failed"))}
        task.set("failed", "it broke")
    elif tool == "dropped":
        task.set("cancelled", "stopped by the operator")
    else:
        return False
    return True


class TaskServerBase(FakeServer):
    """What both task servers share: the tasks by id under one lock, the ids they are
    given, the connection class that speaks the era's task methods, and the tool
    ``task_state`` (each server registers it among its own tools)."""

    #: The era's connection: it answers the ``tasks/*`` methods.
    connection_class: Type[ServerConnection]
    tasks: Dict[str, Any]

    def __init__(self, name: str, protocol_version: str) -> None:
        super().__init__(name, "1.0.0", protocol_versions=(protocol_version,))
        # Guards tasks and the task records (and what a subclass says); signals every change.
        self.lock = threading.Condition()
        self.tasks = {}
        self._ids = itertools.count(1)

    def task_state(self, task_id: str) -> str:
        """The status of a task."""
        with self.lock:
            task = self.tasks.get(task_id)
            return "unknown" if task is None else str(task.status)

    def next_id(self) -> str:
        return f"task-{next(self._ids)}"

    def open_connection(self, send: Callable[[Dict[str, Any]], None]) -> ServerConnection:
        connection = self.connection_class(self, send)
        with self._lock:
            self.connections.append(connection)
        return connection


class TaskServer(TaskServerBase):
    """The FakeServer above; ``tasks`` and ``cancel`` say what it declares."""

    tasks: Dict[str, _Task]

    def __init__(self, *, tasks: bool = True, cancel: bool = True) -> None:
        super().__init__("task-server", "2025-11-25")
        self.declare_tasks = tasks
        self.declare_cancel = cancel
        self.support: Dict[str, Optional[str]] = {}
        self._define()

    # -- definitions ---------------------------------------------------------------------

    def _task_tool(self, support: Optional[str], **options: Any) -> Callable[..., Any]:
        register = self.tool(**options)

        def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
            register(fn)
            name = fn.__name__
            self.support[name] = support
            if support is not None:
                self.tools[name].definition["execution"] = {"taskSupport": support}
            return fn

        return decorate

    def _define(self) -> None:
        shape = {"type": "object", "properties": {"text": {"type": "string"}},
                 "required": ["text"]}

        @self._task_tool("required", output_schema=shape)
        def countdown(polls: int, text: str) -> str:
            """Completes after `polls` polls."""
            raise RpcError({"code": -32601, "message": "countdown runs as a task only"})

        @self._task_tool("required", output_schema=shape)
        def misshapen() -> str:
            """Completes with a result its outputSchema refuses."""
            raise RpcError({"code": -32601, "message": "runs as a task only"})

        for name, support in (("fails", "required"), ("fails_softly", "optional"),
                              ("dropped", "required"), ("forever", "required"),
                              ("ticking", "required"), ("flood", "required"),
                              ("expires", "required"), ("confirm", "required")):
            def plain(**_: Any) -> str:
                raise RpcError({"code": -32601, "message": "runs as a task only"})

            plain.__name__ = name
            plain.__doc__ = f"{name} (a task tool)."
            self._task_tool(support, input_schema={"type": "object"})(plain)

        @self._task_tool("optional")
        def maybe(text: str) -> str:
            """Plain or as a task."""
            return f"plain: {text}"

        @self._task_tool(None)
        def echo(text: str) -> str:
            """A plain tool."""
            return text

        @self._task_tool("forbidden")
        def never_task(text: str) -> str:
            """A tool that must not run as a task."""
            return text

        @self._task_tool(None)
        def received(method: str) -> str:
            """How many messages of `method` the server received (answered by the
            connection)."""
            raise AssertionError("answered by TaskConnection")

        @self._task_tool(None)
        def wait_for(method: str, count: int) -> str:
            """Wait until the server received `count` messages of `method`."""
            raise AssertionError("answered by TaskConnection")

        @self._task_tool(None)
        def ask(method: str, params: dict, ctx: Any, timeout: float = WAIT) -> Any:
            """Send the client a request (the client as task executor: a task-augmented
            sampling or elicitation, tasks/get...); its result or error."""
            try:
                return {"result": ctx.request(method, params, timeout)}
            except RpcError as exc:
                return {"error": exc.error}
            except (TimeoutError, ConnectionError) as exc:
                return {"error": {"code": 0, "message": f"no answer: {exc}"}}

        @self._task_tool(None)
        def client_capabilities(ctx: Any) -> Any:
            """The capabilities the client declared in initialize."""
            return {"capabilities": ctx.connection.client_capabilities}

        @self._task_tool(None)
        def wait_pending(count: int, ctx: Any) -> str:
            """Wait (10 s at most) until `count` requests to the client await an answer;
            how many do."""
            connection = ctx.connection
            with connection._changed:
                connection._changed.wait_for(
                    lambda: len(connection._waiting) >= count or connection.closed.is_set(),
                    WAIT)
                return str(len(connection._waiting))

        @self._task_tool(None)
        def notes(method: str, ctx: Any) -> Any:
            """The params of every notification of `method` the client sent."""
            return {"params": [m.get("params") for m in list(ctx.connection.received)
                               if m.get("method") == method and "id" not in m]}

        self._task_tool(None)(self.task_state)

    def capabilities(self) -> Dict[str, Any]:
        capabilities = super().capabilities()
        if self.declare_tasks:
            tasks: Dict[str, Any] = {"list": {}, "requests": {"tools": {"call": {}}}}
            if self.declare_cancel:
                tasks["cancel"] = {}
            capabilities["tasks"] = tasks
        return capabilities

    # -- tasks ---------------------------------------------------------------------------

    def create(self, params: Dict[str, Any]) -> Dict[str, Any]:
        name = params.get("name", "")
        if self.support.get(name) not in ("required", "optional"):
            raise RpcError({"code": -32601, "message": f"{name} cannot run as a task"})
        ttl = (params.get("task") or {}).get("ttl")
        with self.lock:
            task = _Task(self.next_id(), name, dict(params.get("arguments") or {}), ttl)
            self.tasks[task.task_id] = task
            self.lock.notify_all()
            return {"task": task.wire()}

    def find(self, params: Dict[str, Any]) -> _Task:
        task = self.tasks.get(params.get("taskId", ""))
        if task is None:
            raise RpcError({"code": -32602, "message": "Failed to retrieve task: Task not found"})
        if task.expired or task.tool == "expires":
            raise RpcError({"code": -32602,
                            "message": "Failed to retrieve task: Task has expired"})
        return task

    def poll(self, connection: ServerConnection, params: Dict[str, Any]) -> Dict[str, Any]:
        """``tasks/get``: one step of the task's plan."""
        notes: List[Dict[str, Any]] = []
        with self.lock:
            task = self.find(params)
            task.polls += 1
            if task.status not in TERMINAL:
                self._step(task, notes)
            answer = task.wire()
            if task.tool == "flood" and task.polls == 1:
                answer = dict(answer, status="working", statusMessage="flooding",
                              pollInterval=60_000)
            self.lock.notify_all()
        for note in notes:
            connection.notify("notifications/tasks/status", note)
        return answer

    def _step(self, task: _Task, notes: List[Dict[str, Any]]) -> None:
        tool, arguments, polls = task.tool, task.arguments, task.polls
        if step_shared(task):
            return
        if tool == "maybe":
            task.result = _text(f"task: {arguments.get('text')}")
            task.set("completed", None)
        elif tool == "fails_softly":
            task.result = _text(str(arguments.get("message", "failed")), isError=True)
            task.set("failed", "the tool reported an error")
        elif tool == "ticking":
            task.set("working", f"tick {polls}")
        elif tool == "flood":
            count = int(arguments.get("count", 100))
            for step in range(1, count + 1):
                notes.append(dict(task.wire(), statusMessage=f"step {step}"))
            task.result = _text(f"flooded {count}")
            task.set("completed", "all steps done")
            notes.append(task.wire())
        elif tool == "confirm":
            task.set("input_required", "waiting for an answer")

    def cancel(self, params: Dict[str, Any]) -> Dict[str, Any]:
        with self.lock:
            task = self.find(params)
            task.cancel_requests += 1
            self.lock.notify_all()
            if task.status in TERMINAL:
                raise RpcError({"code": -32602,
                                "message": f"Cannot cancel task in terminal status {task.status}"})
            task.set("cancelled", "cancelled by the client")
            return task.wire()

    def listing(self, params: Dict[str, Any]) -> Dict[str, Any]:
        with self.lock:
            tasks = [task.wire() for task in self.tasks.values()]
        start = int(params.get("cursor") or 0)
        page: Dict[str, Any] = {"tasks": tasks[start:start + 2]}
        if start + 2 < len(tasks):
            page["nextCursor"] = str(start + 2)
        return page

    def payload(self, connection: ServerConnection, params: Dict[str, Any]) -> Dict[str, Any]:
        """``tasks/result``: blocks while the task is not terminal (asking for input)."""
        with self.lock:
            task = self.find(params)
            if task.status == "input_required":
                task.set("working", "asking")
                ask = True
            else:
                ask = False
        if ask:
            answer = connection.request("elicitation/create", {
                "mode": "form", "message": str(task.arguments.get("question", "?")),
                "requestedSchema": {"type": "object",
                                    "properties": {"answer": {"type": "string"}}},
                "_meta": {RELATED_TASK: {"taskId": task.task_id}}}, WAIT)
            with self.lock:
                task.result = _text(f"answer: {(answer or {}).get('content')}")
                task.set("completed", "answered")
                self.lock.notify_all()
        with self.lock:
            if not self.lock.wait_for(lambda: task.status in TERMINAL, WAIT):
                raise RpcError({"code": -32603, "message": "task still running"})
            if task.error is not None:
                raise RpcError(task.error)
            if task.result is None:
                raise RpcError({"code": -32603, "message": f"task {task.status}"})
            result = dict(task.result)
        result["_meta"] = {RELATED_TASK: {"taskId": task.task_id}}
        return result

    def count(self, connection: ServerConnection, method: str) -> int:
        return sum(1 for m in connection.received if m.get("method") == method)


class TaskConnectionBase(ServerConnection):
    """What the connections of both task servers share: recording a request they answer
    themselves, and answering it with what a handler returns, or with the JSON-RPC error
    it raised."""

    def _record_and_answer(self, message: Dict[str, Any], handler: Callable[[], Any]) -> None:
        with self._changed:
            self.received.append(message)
            self._changed.notify_all()  # wakes the tools that wait for what was received
        self._answer(message, handler)

    def _answer(self, message: Dict[str, Any], handler: Callable[[], Any]) -> None:
        try:
            result = handler()
        except RpcError as exc:
            self.send({"jsonrpc": "2.0", "id": message["id"], "error": exc.error})
            return
        except (TimeoutError, ConnectionError) as exc:
            self.send({"jsonrpc": "2.0", "id": message["id"],
                       "error": {"code": -32603, "message": str(exc)}})
            return
        self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})


class TaskConnection(TaskConnectionBase):
    """One client's conversation with a :class:`TaskServer`."""

    server: TaskServer

    def receive(self, message: Any) -> None:
        if not isinstance(message, dict):
            return
        method = message.get("method")
        params = message.get("params") or {}
        if "id" not in message or method is None:
            super().receive(message)
            return
        server = self.server
        handlers: Dict[str, Callable[[], Any]] = {
            "tasks/get": lambda: server.poll(self, params),
            "tasks/cancel": lambda: server.cancel(params),
            "tasks/list": lambda: server.listing(params),
        }
        if method == "tools/call" and params.get("name") in ("received", "wait_for"):
            with self._changed:
                self.received.append(message)
            threading.Thread(target=self._count, args=(message,), name="task-server-count",
                             daemon=True).start()
            return
        if method == "tools/call" and "task" in params and server.declare_tasks:
            handlers["tools/call"] = lambda: server.create(params)
        elif method == "tools/call" and server.support.get(params.get("name")) == "required":
            with self._changed:
                self.received.append(message)
            self.send({"jsonrpc": "2.0", "id": message["id"], "error": {
                "code": -32601, "message": "this tool runs as a task only"}})
            return
        if method == "tasks/result":
            with self._changed:
                self.received.append(message)
                self._changed.notify_all()
            # Off the reading thread: it may block, and ask the client for input.
            threading.Thread(target=self._answer, args=(message, lambda: server.payload(
                self, params)), name="task-server-result", daemon=True).start()
            return
        handler = handlers.get(method)
        if handler is None:
            super().receive(message)
            return
        self._record_and_answer(message, handler)

    def _count(self, message: Dict[str, Any]) -> None:
        params = message.get("params") or {}
        arguments = params.get("arguments") or {}
        method = str(arguments.get("method"))
        wanted = int(arguments.get("count", 0))

        def enough() -> bool:
            return self.server.count(self, method) >= wanted

        if params.get("name") == "wait_for":
            with self._changed:
                self._changed.wait_for(lambda: enough() or self.closed.is_set(), WAIT)
        count = self.server.count(self, method)
        self.send({"jsonrpc": "2.0", "id": message["id"],
                   "result": {"content": [{"type": "text", "text": str(count)}]}})


TaskServer.connection_class = TaskConnection


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-tasks", action="store_true", help="declare no tasks capability")
    parser.add_argument("--no-cancel", action="store_true", help="declare no tasks.cancel")
    options = parser.parse_args(argv)
    TaskServer(tasks=not options.no_tasks, cancel=not options.no_cancel).serve_stdio()


if __name__ == "__main__":
    main()
