"""The peer of tests/client/test_tasks_2026.py: a stateless (2026-07-28) FakeServer with the
tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663).

``python tests/servers/task_server_2026.py [--no-tasks]`` serves it over stdio; the
tests host the same server over Streamable HTTP in their own process
(``McpHttpServer(ExtensionTaskServer())`` with ``stateless`` set). It answers
``server/discover`` only (no ``initialize``) and advertises the extension under
``capabilities.extensions`` (``--no-tasks``: it does not, and runs every tool plainly).

The wire follows the conformance suite's server scenarios for the extension: the server
decides which ``tools/call`` becomes a task, for a request whose
``_meta["io.modelcontextprotocol/clientCapabilities"]`` declares the extension, and
answers it with a flat ``{"resultType": "task", "taskId", "status", "createdAt",
"lastUpdatedAt", "ttlMs", "pollIntervalMs"}``; ``tasks/get`` answers the task with
``resultType: "complete"`` and, once it ended, the inlined ``result`` (``completed``) or
``error`` (``failed``), or its ``inputRequests`` (``input_required``);
``tasks/update {taskId, inputResponses}`` and ``tasks/cancel`` answer an empty
``{"resultType": "complete"}``. ``tasks/get``, ``tasks/update`` and ``tasks/cancel``
from a request that does not declare the extension get -32021; an unknown id -32602;
``tasks/result`` and ``tasks/list`` -32601. Tasks are driven by the client's polls, not
by time: each ``tasks/get`` moves a task one step.

Task tools (plain calls when the extension is not declared):

* ``countdown(polls, text)``: ``working`` (``poll k of polls``) for ``polls`` polls,
  then ``completed`` with ``text`` and ``{"text": text, "polls": polls}`` as
  structuredContent (its outputSchema wants a string ``text``). ``misshapen()``:
  as a task, completes with structuredContent its outputSchema refuses.
* ``fails(message)``: ``failed`` at the first poll, with the error -32603 ``message``;
  ``fails_softly(message)``: ``completed`` with an ``isError: true`` result.
* ``dropped()``: the server cancels it at the first poll; ``forever()``: ``working``
  until cancelled; ``expires()``: its ``tasks/get`` answers -32602 "Task has expired".
* ``confirm(question)``: ``input_required`` at the first poll, asking one
  ``elicitation/create``; completes with ``answer: <content>`` when answered.
  ``two_inputs()``: asks an elicitation and a sampling at once, and completes with both
  answers when both are in (an answer to one keeps the other pending).
* ``escalates()``: a multi round-trip request first (``input_required`` with an
  elicitation and ``requestState``), then, on the round that carries the answer, a task
  that completes at the first poll with ``hello <the elicited content>``.

Plain tools: ``greet(name)``; ``task_state(task_id)`` (the status, or ``unknown``);
``wait_state(task_id, status)`` (waits, 10 s at most, until the task has ``status``);
``wait_polled(task_id)`` (waits, 10 s at most, until the client polled the task);
``count(method)`` (how many requests of ``method`` the server received);
``updates()`` (the ``inputResponses`` of every ``tasks/update``, in order);
``declared()`` (the extensions this request's envelope declares).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcp_sync.testing import RpcError
from tests.servers.task_server import (
    TERMINAL,
    WAIT,
    TaskConnectionBase,
    TaskRecord,
    TaskServerBase,
    _text,
    step_shared,
)

TASKS = "io.modelcontextprotocol/tasks"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
COMPLETE = {"resultType": "complete"}
TASK_TOOLS = ("countdown", "misshapen", "fails", "fails_softly", "dropped", "forever",
              "expires", "confirm", "two_inputs", "escalates")
SHAPE = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


def declares(params: Dict[str, Any]) -> bool:
    """Whether a request's envelope declares the tasks extension."""
    meta = params.get("_meta") or {}
    capabilities = meta.get(CLIENT_CAPABILITIES) or {}
    return TASKS in (capabilities.get("extensions") or {})


class _Task(TaskRecord):
    """An extension task: it may wait on input requests, answered by ``tasks/update``."""

    def __init__(self, task_id: str, tool: str, arguments: Dict[str, Any]) -> None:
        super().__init__(task_id, tool, arguments)
        self.inputs: Dict[str, Dict[str, Any]] = {}
        self.answers: Dict[str, Any] = {}

    def timing(self) -> Dict[str, Any]:
        return {"ttlMs": 60_000, "pollIntervalMs": 50}

    def detailed(self) -> Dict[str, Any]:
        """The ``tasks/get`` answer: the task, and what its status inlines."""
        answer = dict(self.wire(), **COMPLETE)
        if self.status == "completed" and self.result is not None:
            answer["result"] = self.result
        elif self.status == "failed" and self.error is not None:
            answer["error"] = self.error
        elif self.status == "input_required":
            answer["inputRequests"] = dict(self.inputs)
        return answer


def _elicit(question: str) -> Dict[str, Any]:
    return {"method": "elicitation/create", "params": {
        "mode": "form", "message": question,
        "requestedSchema": {"type": "object", "properties": {"answer": {"type": "string"}}}}}


def _sample(text: str) -> Dict[str, Any]:
    return {"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
        "maxTokens": 10}}


class ExtensionTaskServer(TaskServerBase):
    """The FakeServer above; ``tasks`` says whether it advertises the extension."""

    tasks: Dict[str, _Task]

    def __init__(self, *, tasks: bool = True) -> None:
        super().__init__("task-server-2026", "2026-07-28")
        self.advertise = tasks
        self.updates: List[Dict[str, Any]] = []  # guarded by lock, like tasks
        self.methods["server/discover"] = self.discover
        self._define()

    def capabilities(self) -> Dict[str, Any]:
        capabilities = super().capabilities()
        if self.advertise:
            capabilities["extensions"] = {TASKS: {}}
        return capabilities

    def discover(self, params: Dict[str, Any]) -> Dict[str, Any]:
        return {"resultType": "complete", "supportedVersions": ["2026-07-28"],
                "capabilities": self.capabilities(),
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": self.name,
                                                                 "version": self.version}}}

    # -- definitions ---------------------------------------------------------------------

    def _define(self) -> None:
        @self.tool(output_schema=SHAPE)
        def countdown(polls: int, text: str) -> Dict[str, Any]:
            """Completes after `polls` polls (at once when not a task)."""
            return _text(text, structuredContent={"text": text, "polls": 0})

        @self.tool(output_schema=SHAPE)
        def misshapen() -> Dict[str, Any]:
            """As a task, completes with a result its outputSchema refuses."""
            return _text("plain", structuredContent={"text": "plain"})

        for name in TASK_TOOLS[2:]:
            def plain(**arguments: Any) -> str:
                return f"plain: {sorted(arguments)}"

            plain.__name__ = name
            plain.__doc__ = f"{name} (a task tool)."
            self.tool(input_schema={"type": "object"})(plain)

        @self.tool()
        def greet(name: str) -> str:
            """A plain tool."""
            return f"Hello, {name}!"

        self.tool()(self.task_state)

        @self.tool()
        def wait_state(task_id: str, status: str) -> str:
            """Wait (10 s at most) until a task has `status`; its status then."""
            with self.lock:
                self.lock.wait_for(lambda: task_id in self.tasks
                                   and self.tasks[task_id].status == status, WAIT)
                task = self.tasks.get(task_id)
                return "unknown" if task is None else task.status

        @self.tool()
        def wait_polled(task_id: str) -> str:
            """Wait (10 s at most) until the client polled a task; how often it did."""
            with self.lock:
                self.lock.wait_for(lambda: task_id in self.tasks
                                   and self.tasks[task_id].polls > 0, WAIT)
                task = self.tasks.get(task_id)
                return "0" if task is None else str(task.polls)

        @self.tool()
        def count(method: str, ctx: Any) -> str:
            """How many requests of `method` the server received."""
            return str(sum(1 for m in list(ctx.connection.received)
                           if m.get("method") == method and "id" in m))

        @self.tool()
        def updates() -> Dict[str, Any]:
            """The inputResponses of every tasks/update, in order."""
            with self.lock:
                return {"updates": list(self.updates)}

        @self.tool()
        def declared() -> Dict[str, Any]:
            """The extensions this request's envelope declares (answered by the
            connection, which sees the request)."""
            raise AssertionError("answered by ExtensionConnection")

    # -- tasks ---------------------------------------------------------------------------

    def create(self, params: Dict[str, Any]) -> Dict[str, Any]:
        arguments = dict(params.get("arguments") or {})
        if params["name"] == "escalates":
            answers = params.get("inputResponses") or {}
            if "who" not in answers or params.get("requestState") != "asked-who":
                return {"resultType": "input_required", "requestState": "asked-who",
                        "inputRequests": {"who": _elicit("who?")}}
            arguments["answer"] = (answers["who"] or {}).get("content")
        with self.lock:
            task = _Task(self.next_id(), params["name"], arguments)
            self.tasks[task.task_id] = task
            self.lock.notify_all()
            return dict(task.wire(), resultType="task")

    def find(self, params: Dict[str, Any]) -> _Task:
        task = self.tasks.get(params.get("taskId", ""))
        if task is None:
            raise RpcError({"code": -32602, "message": "Task not found"})
        if task.tool == "expires":
            raise RpcError({"code": -32602, "message": "Task has expired"})
        return task

    def poll(self, params: Dict[str, Any]) -> Dict[str, Any]:
        """``tasks/get``: one step of the task's plan."""
        with self.lock:
            task = self.find(params)
            task.polls += 1
            if task.status == "working":
                self._step(task)
            self.lock.notify_all()
            return task.detailed()

    def _step(self, task: _Task) -> None:
        tool, arguments = task.tool, task.arguments
        if step_shared(task):
            return
        if tool == "fails_softly":
            task.result = _text(str(arguments.get("message", "failed")), isError=True)
            task.set("completed", "the tool reported an error")
        elif tool == "escalates":
            task.result = _text(f"hello {arguments.get('answer')}")
            task.set("completed", None)
        elif tool == "confirm" and not task.answers:
            task.inputs = {"confirm-1": _elicit(str(arguments.get("question", "?")))}
            task.set("input_required", "waiting for an answer")
        elif tool == "two_inputs" and not task.answers:
            task.inputs = {"ask-1": _elicit("name?"), "ask-2": _sample("capital?")}
            task.set("input_required", "waiting for two answers")

    def update(self, params: Dict[str, Any]) -> Dict[str, Any]:
        """``tasks/update``: the answers to the task's pending input requests."""
        responses = params.get("inputResponses")
        if not isinstance(responses, dict):
            raise RpcError({"code": -32602, "message": "inputResponses must be an object"})
        with self.lock:
            task = self.find(params)
            self.updates.append(responses)
            for key, answer in responses.items():
                if key in task.inputs:  # unknown keys are ignored
                    del task.inputs[key]
                    task.answers[key] = answer
            if task.status == "input_required" and not task.inputs:
                if task.tool == "confirm":
                    answer = task.answers["confirm-1"]
                    task.result = _text(f"answer: {(answer or {}).get('content')}")
                else:
                    named = (task.answers["ask-1"] or {}).get("content")
                    said = ((task.answers["ask-2"] or {}).get("content") or {}).get("text")
                    task.result = _text(f"name={named} llm={said}")
                task.set("completed", "answered")
            self.lock.notify_all()
        return dict(COMPLETE)

    def cancel(self, params: Dict[str, Any]) -> Dict[str, Any]:
        with self.lock:
            task = self.find(params)
            if task.status not in TERMINAL:  # a terminal task: the same ack, no change
                task.set("cancelled", "cancelled by the client")
            self.lock.notify_all()
        return dict(COMPLETE)


class ExtensionConnection(TaskConnectionBase):
    """One client's conversation with an :class:`ExtensionTaskServer`."""

    server: ExtensionTaskServer

    def receive(self, message: Any) -> None:
        if not isinstance(message, dict) or "id" not in message:
            super().receive(message)
            return
        method = message.get("method")
        params = message.get("params") or {}
        server = self.server
        handlers: Dict[str, Callable[[], Any]] = {
            "tasks/get": lambda: server.poll(params),
            "tasks/update": lambda: server.update(params),
            "tasks/cancel": lambda: server.cancel(params),
        }
        negotiated = server.advertise and declares(params)
        if method == "tools/call" and params.get("name") in TASK_TOOLS and negotiated:
            handlers["tools/call"] = lambda: server.create(params)
        elif method == "tools/call" and params.get("name") == "declared":
            meta = params.get("_meta") or {}
            extensions = (meta.get(CLIENT_CAPABILITIES) or {}).get("extensions")
            handlers["tools/call"] = lambda: _text(json.dumps(extensions),
                                                   structuredContent={"extensions": extensions})
        handler = handlers.get(method)  # type: ignore[arg-type]
        if handler is None:
            super().receive(message)
            return

        def negotiated_first() -> Any:
            if method != "tools/call" and not negotiated:
                raise RpcError({"code": -32021, "message": "Missing required client capability",
                                "data": {"requiredCapabilities": {"extensions": {TASKS: {}}}}})
            return handler()

        self._record_and_answer(message, negotiated_first)


ExtensionTaskServer.connection_class = ExtensionConnection


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-tasks", action="store_true",
                        help="do not advertise the tasks extension")
    options = parser.parse_args(argv)
    ExtensionTaskServer(tasks=not options.no_tasks).serve_stdio()


if __name__ == "__main__":
    main()
