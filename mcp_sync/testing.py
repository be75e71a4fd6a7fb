"""A small, scriptable MCP server for tests and demos: in process or over stdio.

``FakeServer`` speaks the session era of MCP (initialize, tools, resources, prompts,
completion, logging, progress, cancellation, server-to-client requests) with the standard
library only. Applications test their MCP code against it without subprocesses::

    from mcp_sync import Client, MemoryTransport
    from mcp_sync.testing import FakeServer

    server = FakeServer("weather")

    @server.tool(description="Forecast for a city")
    def forecast(city: str) -> str:
        return f"sunny in {city}"

    with Client(MemoryTransport(server)) as client:
        assert client.call_tool("forecast", {"city": "Oslo"}).text == "sunny in Oslo"

The same object serves a real pipe with :meth:`FakeServer.serve_stdio`; the
``mcp-sync demo`` command runs one that ships in the package.

A tool function receives its arguments as keyword arguments, plus ``ctx``
(a :class:`ToolContext`) if it has a parameter of that name. It returns a string (one
text block), a list of content blocks, a dict with a ``"content"`` key (a whole result),
or any other JSON value (echoed as JSON text; a dict is also the structured content).
Raising :class:`ToolError`
(or any exception) produces a result with ``isError: true``.

A tool registered with ``task_support="required"`` (or ``"optional"``) runs as a task
(MCP 2025-11-25) when the client asks for one: the ``tools/call`` is answered at once
with the task, the function runs on its own thread, and the server answers ``tasks/get``,
``tasks/result``, ``tasks/cancel`` and ``tasks/list`` for it (see :meth:`FakeServer.tool`).
"""

from __future__ import annotations

import inspect
import json
import logging
import sys
import threading
import time
from datetime import datetime, timezone
from typing import IO, Any, Callable, Dict, List, Optional, Sequence

from ._util.threads import join_or_warn, start_thread

__all__ = ["FakeServer", "RpcError", "ServerConnection", "ToolContext", "ToolError"]

log = logging.getLogger(__name__)

_KNOWN_METHODS = frozenset({
    "initialize", "ping", "tools/list", "tools/call", "resources/list",
    "resources/templates/list", "resources/read", "resources/subscribe",
    "resources/unsubscribe", "prompts/list", "prompts/get", "completion/complete",
    "logging/setLevel",
})
SESSION_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
#: ``execution.taskSupport`` values (2025-11-25).
_TASK_SUPPORT = ("required", "optional", "forbidden")
_TASK_METHODS = frozenset({"tasks/get", "tasks/result", "tasks/cancel", "tasks/list"})
_TERMINAL = ("completed", "failed", "cancelled")
_RELATED_TASK = "io.modelcontextprotocol/related-task"
#: A task is kept this long (ms) when the client asks no ttl, and within these bounds.
TASK_TTL, MIN_TASK_TTL, MAX_TASK_TTL = 300_000, 100, 3_600_000
#: The ``pollInterval`` (ms) the server suggests; a change of status is also notified.
TASK_POLL_INTERVAL = 500
#: The most tasks one connection keeps at once (running, or ended and kept for their
#: result); a call that would make one more is refused with -32603.
MAX_TASKS = 100
_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


class ToolError(Exception):
    """Raised by a tool to return a result with ``isError: true``."""


class RpcError(Exception):
    """Raised by a custom method handler (or seen by ``ctx.request``): a JSON-RPC error."""

    def __init__(self, error: Dict[str, Any]) -> None:
        self.error = error
        super().__init__(error.get("message", "error"))


class ToolContext:
    """What a running tool can do: report progress, log, call the client, see cancellation."""

    def __init__(self, connection: ServerConnection, request: Dict[str, Any]) -> None:
        self.connection = connection
        self.request_id = request.get("id")
        params = request.get("params") or {}
        self.progress_token = (params.get("_meta") or {}).get("progressToken")
        #: Set when the client sends ``notifications/cancelled`` for this call (for a
        #: call run as a task: ``tasks/cancel``, or the task's ttl passing), or the
        #: connection closes.
        self.cancelled = threading.Event()
        #: The task's id when the call runs as a task, else None.
        self.task_id: Optional[str] = None

    def status(self, message: str) -> None:
        """Set the status message of the task this call runs as, and send it to the
        client (``notifications/tasks/status``). A plain call has no status: nothing is
        sent."""
        if self.task_id is not None:
            self.connection._set_task_message(self.task_id, message)

    def progress(self, progress: float, total: Optional[float] = None,
                 message: Optional[str] = None) -> None:
        """Send ``notifications/progress`` (only if the client asked with a token)."""
        if self.progress_token is None:
            return
        params: Dict[str, Any] = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        self.connection.notify("notifications/progress", params)

    def log(self, level: str, data: Any, logger: Optional[str] = None) -> None:
        """Send ``notifications/message`` if ``level`` passes the client's logging level."""
        self.connection.log(level, data, logger)

    def request(self, method: str, params: Optional[Dict[str, Any]] = None,
                timeout: float = 10.0) -> Any:
        """Send a request to the client and wait for its result (raises on error/timeout)."""
        return self.connection.request(method, params, timeout)


class _Tool:
    def __init__(self, fn: Callable[..., Any], definition: Dict[str, Any]) -> None:
        self.fn = fn
        self.definition = definition
        self.wants_ctx = "ctx" in inspect.signature(fn).parameters


def _schema_for(fn: Callable[..., Any]) -> Dict[str, Any]:
    kinds = {int: "integer", float: "number", str: "string", bool: "boolean",
             list: "array", dict: "object", "int": "integer", "float": "number",
             "str": "string", "bool": "boolean", "list": "array", "dict": "object"}
    properties: Dict[str, Any] = {}
    required: List[str] = []
    for param in inspect.signature(fn).parameters.values():
        if param.name == "ctx" or param.kind in (param.VAR_KEYWORD, param.VAR_POSITIONAL):
            continue
        kind = kinds.get(param.annotation)
        properties[param.name] = {"type": kind} if kind else {}
        if param.default is param.empty:
            required.append(param.name)
    schema: Dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _content(value: Any) -> Dict[str, Any]:
    if isinstance(value, dict) and "content" in value:
        return value
    if isinstance(value, str):
        return {"content": [{"type": "text", "text": value}]}
    blocks = isinstance(value, list) and value
    if blocks and all(isinstance(b, dict) and "type" in b for b in value):
        return {"content": value}
    result: Dict[str, Any] = {"content": [{"type": "text", "text": json.dumps(value)}]}
    if isinstance(value, dict):
        result["structuredContent"] = value
    return result


class FakeServer:
    """An in-process MCP server definition; each client gets a :class:`ServerConnection`.

    Args:
        name, version: the ``serverInfo`` it reports.
        instructions: the ``instructions`` it sends in the handshake.
        page_size: split list results into pages of this size (tests pagination).
        protocol_versions: the versions it accepts, newest first; it answers the
            client's version if listed, else its newest.
    """

    def __init__(
        self,
        name: str = "fake",
        version: str = "0.1.0",
        *,
        instructions: Optional[str] = None,
        page_size: Optional[int] = None,
        protocol_versions: Sequence[str] = SESSION_VERSIONS,
        ignore_unknown: bool = False,
    ) -> None:
        self.name = name
        self.version = version
        self.instructions = instructions
        self.page_size = page_size
        self.protocol_versions = tuple(protocol_versions)
        self.tools: Dict[str, _Tool] = {}
        self.resources: Dict[str, Dict[str, Any]] = {}
        self.prompts: Dict[str, Any] = {}
        self.completions: Dict[str, Callable[[str, str], List[str]]] = {}
        self.connections: List[ServerConnection] = []
        #: The ``task_support`` of each tool registered with one.
        self.task_tools: Dict[str, str] = {}
        #: Handlers for extra request methods: ``fn(params) -> result`` (raise RpcError).
        self.methods: Dict[str, Callable[[Dict[str, Any]], Any]] = {}
        #: Never answer unknown methods (like some servers do), instead of -32601.
        self.ignore_unknown = ignore_unknown
        self._lock = threading.Lock()

    # -- definitions ---------------------------------------------------------------------

    def tool(
        self,
        name: Optional[str] = None,
        *,
        description: Optional[str] = None,
        input_schema: Optional[Dict[str, Any]] = None,
        output_schema: Optional[Dict[str, Any]] = None,
        annotations: Optional[Dict[str, Any]] = None,
        task_support: Optional[str] = None,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register a tool (decorator).

        ``task_support`` (``"required"``, ``"optional"``, ``"forbidden"``) is listed as
        the tool's ``execution.taskSupport``; a server with a ``"required"`` or
        ``"optional"`` tool declares ``tasks.list``, ``tasks.cancel`` and
        ``tasks.requests.tools.call``. Such a tool runs as a task when the call asks for
        one (``params.task``): the ``tools/call`` is answered at once with the task
        (``working``), the function runs on its own thread and its return value (or
        error) becomes the task's result: ``completed``, or ``failed`` for a result with
        ``isError`` or a raised :class:`RpcError` (then ``tasks/result`` answers that
        JSON-RPC error). ``ctx.status(message)`` sets the task's status message;
        ``ctx.cancelled`` is set by ``tasks/cancel``, by the task's ttl passing and by
        the connection closing. A plain call of a ``"required"`` tool is refused with
        -32601. Tasks belong to the connection (one MCP session) that started them and
        end with it; each is kept for its ttl (the client's, within 0.1 s .. 1 h; 5
        minutes when it asks none), and a connection keeps at most :data:`MAX_TASKS`.
        """
        if task_support is not None and task_support not in _TASK_SUPPORT:
            raise ValueError(f"task_support is one of {_TASK_SUPPORT}, not {task_support!r}")

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            definition: Dict[str, Any] = {
                "name": name or fn.__name__,
                "inputSchema": input_schema or _schema_for(fn),
            }
            doc = description or inspect.getdoc(fn)
            if doc:
                definition["description"] = doc
            if output_schema:
                definition["outputSchema"] = output_schema
            if annotations:
                definition["annotations"] = annotations
            if task_support is not None:
                definition["execution"] = {"taskSupport": task_support}
                self.task_tools[definition["name"]] = task_support
            self.tools[definition["name"]] = _Tool(fn, definition)
            return fn

        return register

    def resource(self, uri: str, text: Optional[str] = None, *, name: Optional[str] = None,
                 mime_type: str = "text/plain", blob: Optional[str] = None) -> None:
        """Register a static resource with text (or base64 ``blob``) contents."""
        self.resources[uri] = {"uri": uri, "name": name or uri.rsplit("/", 1)[-1],
                               "mimeType": mime_type, "text": text, "blob": blob}

    def prompt(self, name: Optional[str] = None, *, description: Optional[str] = None,
               arguments: Sequence[Dict[str, Any]] = ()) -> Callable[[Callable[..., Any]], Any]:
        """Register a prompt (decorator); the function returns a string or messages."""

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            definition: Dict[str, Any] = {"name": name or fn.__name__}
            if description or inspect.getdoc(fn):
                definition["description"] = description or inspect.getdoc(fn)
            if arguments:
                definition["arguments"] = list(arguments)
            self.prompts[definition["name"]] = (fn, definition)
            return fn

        return register

    def method(self, name: str) -> Callable[[Callable[[Dict[str, Any]], Any]], Any]:
        """Handle requests of method ``name`` (decorator): ``fn(params) -> result``."""

        def register(fn: Callable[[Dict[str, Any]], Any]) -> Callable[[Dict[str, Any]], Any]:
            self.methods[name] = fn
            return fn

        return register

    def completion(self, prompt: str, fn: Callable[[str, str], List[str]]) -> None:
        """Complete arguments of ``prompt``: ``fn(argument_name, value) -> values``."""
        self.completions[prompt] = fn

    def capabilities(self) -> Dict[str, Any]:
        capabilities: Dict[str, Any] = {"logging": {}}
        if self.tools:
            capabilities["tools"] = {"listChanged": True}
        if self.resources:
            capabilities["resources"] = {"subscribe": True, "listChanged": True}
        if self.prompts:
            capabilities["prompts"] = {"listChanged": True}
        if self.completions:
            capabilities["completions"] = {}
        if self.runs_tasks():
            capabilities["tasks"] = {"list": {}, "cancel": {},
                                     "requests": {"tools": {"call": {}}}}
        return capabilities

    def runs_tasks(self) -> bool:
        """Whether a tool was registered with ``task_support`` ``"required"`` or
        ``"optional"``: the server then answers ``tasks/*`` and declares them."""
        return any(support != "forbidden" for support in self.task_tools.values())

    # -- connections ---------------------------------------------------------------------

    def open_connection(self, send: Callable[[Dict[str, Any]], None]) -> ServerConnection:
        """A new connection that answers through ``send``."""
        connection = ServerConnection(self, send)
        with self._lock:
            self.connections.append(connection)
        return connection

    def notify_all(self, method: str, params: Optional[Dict[str, Any]] = None) -> None:
        """Send a notification to every open connection."""
        with self._lock:
            connections = list(self.connections)
        for connection in connections:
            connection.notify(method, params)

    def serve_stdio(self, stdin: Optional[IO[bytes]] = None,
                    stdout: Optional[IO[bytes]] = None) -> None:
        """Serve one client over newline-delimited JSON until stdin closes."""
        stdin = stdin or sys.stdin.buffer
        stdout = stdout or sys.stdout.buffer
        write_lock = threading.Lock()

        def send(message: Dict[str, Any]) -> None:
            data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
            with write_lock:
                stdout.write(data)
                stdout.flush()

        connection = self.open_connection(send)
        connection.write_lock = write_lock
        connection.stdout = stdout
        for line in stdin:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                send({"jsonrpc": "2.0", "id": None,
                      "error": {"code": -32700, "message": "Parse error"}})
                continue
            connection.receive(message)
        connection.close()


def _utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class _ServedTask:
    """A tool call that runs as a task; its connection's ``_changed`` guards its state."""

    def __init__(self, task_id: str, ttl: int, ctx: ToolContext) -> None:
        self.task_id = task_id
        self.ttl = ttl
        self.ctx = ctx
        self.status = "working"
        self.message: Optional[str] = None
        self.created = self.updated = _utc_now()
        self.expires = time.monotonic() + ttl / 1000
        #: The tools/call response it ends with: ``{"result": ...}`` or ``{"error": ...}``.
        self.response: Optional[Dict[str, Any]] = None

    def set(self, status: str, message: Optional[str]) -> None:
        self.status, self.message, self.updated = status, message, _utc_now()

    def wire(self) -> Dict[str, Any]:
        task: Dict[str, Any] = {"taskId": self.task_id, "status": self.status,
                                "createdAt": self.created, "lastUpdatedAt": self.updated,
                                "ttl": self.ttl, "pollInterval": TASK_POLL_INTERVAL}
        if self.message is not None:
            task["statusMessage"] = self.message
        return task


class ServerConnection:
    """One client's conversation with a :class:`FakeServer`. Records what it received."""

    def __init__(self, server: FakeServer, send: Callable[[Dict[str, Any]], None]) -> None:
        self.server = server
        self._send = send
        #: Every message received from the client, in order.
        self.received: List[Dict[str, Any]] = []
        self.log_level = "debug"
        self.protocol_version: Optional[str] = None
        self.client_capabilities: Dict[str, Any] = {}
        self.subscriptions: set = set()  # type: ignore[type-arg]
        self.closed = threading.Event()
        self.write_lock: Optional[Any] = None
        self.stdout: Optional[IO[bytes]] = None
        # Guards received, _running and _waiting, and signals _changed.
        self._changed = threading.Condition()
        self._running: Dict[Any, ToolContext] = {}
        self._waiting: Dict[Any, Any] = {}
        self._next_id = 0
        self._threads: List[threading.Thread] = []
        # The tasks of this connection, by id (guarded by _changed); expired ones are
        # dropped whenever the table is used.
        self._tasks: Dict[str, _ServedTask] = {}
        self._task_count = 0

    # -- plumbing ------------------------------------------------------------------------

    def send(self, message: Dict[str, Any]) -> None:
        if not self.closed.is_set():
            self._send(message)

    def notify(self, method: str, params: Optional[Dict[str, Any]] = None) -> None:
        message: Dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def log(self, level: str, data: Any, logger: Optional[str] = None) -> None:
        if _LEVELS.index(level) < _LEVELS.index(self.log_level):
            return
        params: Dict[str, Any] = {"level": level, "data": data}
        if logger:
            params["logger"] = logger
        self.notify("notifications/message", params)

    def request(self, method: str, params: Optional[Dict[str, Any]], timeout: float) -> Any:
        with self._changed:
            self._next_id += 1
            request_id = f"s{self._next_id}"
            self._waiting[request_id] = None
            self._changed.notify_all()  # a test may wait for requests in flight
        message: Dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        with self._changed:
            if not self._changed.wait_for(
                lambda: self._waiting.get(request_id) is not None or self.closed.is_set(),
                timeout,
            ):
                self._waiting.pop(request_id, None)
                raise TimeoutError(f"client did not answer {method} in {timeout} s")
            reply = self._waiting.pop(request_id, None)
        if reply is None:
            raise ConnectionError("connection closed")
        if "error" in reply:
            raise RpcError(reply["error"])
        return reply.get("result")

    def wait_for(
        self, predicate: Callable[[Dict[str, Any]], bool], timeout: float = 5.0
    ) -> Dict[str, Any]:
        """Block until a received message matches ``predicate``; return it.

        Raises ``TimeoutError`` after ``timeout`` seconds.
        """
        found: List[Dict[str, Any]] = []

        def match() -> bool:
            found[:] = [m for m in self.received if predicate(m)][:1]
            return bool(found)

        with self._changed:
            if not self._changed.wait_for(match, timeout):
                raise TimeoutError("no matching message received")
        return found[0]

    def close(self) -> None:
        """End the connection: running tools see cancellation; waiting requests fail."""
        self.closed.set()
        with self._changed:
            for ctx in self._running.values():
                ctx.cancelled.set()
            for task in self._tasks.values():
                task.ctx.cancelled.set()
            self._changed.notify_all()
            threads = list(self._threads)
        for thread in threads:
            join_or_warn(thread, 5.0, "closing the in-process connection", log)
        with self.server._lock:
            if self in self.server.connections:
                self.server.connections.remove(self)

    # -- receiving -----------------------------------------------------------------------

    def receive(self, message: Any) -> None:
        """Handle one message from the client."""
        if not isinstance(message, dict):
            return
        with self._changed:
            self.received.append(message)
            self._changed.notify_all()
        method = message.get("method")
        if method is None:  # a response to one of our requests
            with self._changed:
                if message.get("id") in self._waiting:
                    self._waiting[message["id"]] = message
                    self._changed.notify_all()
            return
        if "id" not in message:
            self._on_notification(method, message.get("params") or {})
            return
        if method == "tools/call":
            self._start_tool(message)
            return
        runs_tasks = self.server.runs_tasks() and method not in self.server.methods
        if method == "tasks/result" and runs_tasks:  # waits: off the reading thread
            self._start_thread(self._answer_task_result, message)
            return
        if self.server.ignore_unknown and method not in self.server.methods and (
            method not in _KNOWN_METHODS and not (runs_tasks and method in _TASK_METHODS)
        ):
            return
        try:
            result = self._handle(method, message.get("params") or {})
        except RpcError as exc:
            self.send({"jsonrpc": "2.0", "id": message["id"], "error": exc.error})
            return
        self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})

    def _on_notification(self, method: str, params: Dict[str, Any]) -> None:
        if method == "notifications/cancelled":
            with self._changed:
                ctx = self._running.get(params.get("requestId"))
            if ctx is not None:
                ctx.cancelled.set()

    def _page(self, items: List[Any], key: str, params: Dict[str, Any]) -> Dict[str, Any]:
        size = self.server.page_size
        if not size:
            return {key: items}
        try:
            start = int(params.get("cursor") or 0)
        except ValueError:
            raise RpcError({"code": -32602, "message": "Invalid cursor"}) from None
        result: Dict[str, Any] = {key: items[start:start + size]}
        if start + size < len(items):
            result["nextCursor"] = str(start + size)
        return result

    def _handle(self, method: str, params: Dict[str, Any]) -> Any:
        server = self.server
        if method in server.methods:
            return server.methods[method](params)
        if method == "initialize":
            offered = params.get("protocolVersion")
            self.protocol_version = (
                offered if offered in server.protocol_versions else server.protocol_versions[0]
            )
            self.client_capabilities = params.get("capabilities") or {}
            result: Dict[str, Any] = {
                "protocolVersion": self.protocol_version,
                "capabilities": server.capabilities(),
                "serverInfo": {"name": server.name, "version": server.version},
            }
            if server.instructions:
                result["instructions"] = server.instructions
            return result
        if method == "ping":
            return {}
        if method == "tools/list":
            return self._page([t.definition for t in server.tools.values()], "tools", params)
        if method == "resources/list":
            listed = [{k: v for k, v in r.items() if k in ("uri", "name", "mimeType")}
                      for r in server.resources.values()]
            return self._page(listed, "resources", params)
        if method == "resources/templates/list":
            return self._page([], "resourceTemplates", params)
        if method == "resources/read":
            resource = server.resources.get(params.get("uri", ""))
            if resource is None:
                raise RpcError({"code": -32002, "message": "Resource not found",
                                    "data": {"uri": params.get("uri")}})
            contents = {k: v for k, v in resource.items()
                        if k in ("uri", "mimeType", "text", "blob") and v is not None}
            return {"contents": [contents]}
        if method in ("resources/subscribe", "resources/unsubscribe"):
            uri = params.get("uri")
            if method.endswith("/subscribe"):
                self.subscriptions.add(uri)
            else:
                self.subscriptions.discard(uri)
            return {}
        if method == "prompts/list":
            return self._page([d for _, d in server.prompts.values()], "prompts", params)
        if method == "prompts/get":
            if params.get("name") not in server.prompts:
                raise RpcError(
                    {"code": -32602, "message": f"Unknown prompt: {params.get('name')}"}
                )
            fn, _ = server.prompts[params["name"]]
            value = fn(**(params.get("arguments") or {}))
            if isinstance(value, str):
                value = [{"role": "user", "content": {"type": "text", "text": value}}]
            return {"messages": value}
        if method == "completion/complete":
            ref = params.get("ref") or {}
            argument = params.get("argument") or {}
            complete = server.completions.get(ref.get("name", ""))
            values = (
                complete(argument.get("name", ""), argument.get("value", "")) if complete else []
            )
            return {"completion": {"values": values[:100], "total": len(values),
                                   "hasMore": len(values) > 100}}
        if method in _TASK_METHODS and server.runs_tasks():
            return self._task_request(method, params)
        if method == "logging/setLevel":
            if params.get("level") not in _LEVELS:
                raise RpcError({"code": -32602, "message": "Invalid level"})
            self.log_level = params["level"]
            return {}
        raise RpcError({"code": -32601, "message": f"Method not found: {method}"})

    def _start_thread(self, target: Callable[..., None], *args: Any) -> None:
        # Started outside _changed, which the thread takes when it ends: a quick tool
        # answers at once, before the reply that carries the answer is over.
        thread = start_thread(target, f"mcp-sync-fakeserver-{self.server.name}", *args)
        with self._changed:
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)

    def _start_tool(self, message: Dict[str, Any]) -> None:
        params = message.get("params") or {}
        support = self.server.task_tools.get(params.get("name", ""))
        if support in ("required", "optional") and isinstance(params.get("task"), dict):
            self._start_task(message)
            return
        if support == "required":
            self.send({"jsonrpc": "2.0", "id": message["id"], "error": {
                "code": -32601, "message": f"tool {params.get('name')} runs as a task only"}})
            return
        ctx = ToolContext(self, message)
        with self._changed:
            self._running[message["id"]] = ctx
        self._start_thread(self._run_tool, message, ctx)

    def _call(self, message: Dict[str, Any], ctx: ToolContext) -> Dict[str, Any]:
        """Run the tool ``message`` calls: the response's ``result`` or ``error``."""
        params = message.get("params") or {}
        tool = self.server.tools.get(params.get("name", ""))
        try:
            if tool is None:
                raise RpcError(
                    {"code": -32602, "message": f"Unknown tool: {params.get('name')}"}
                )
            arguments = dict(params.get("arguments") or {})
            if tool.wants_ctx:
                arguments["ctx"] = ctx
            try:
                return {"result": _content(tool.fn(**arguments))}
            except RpcError:
                raise
            except Exception as exc:  # noqa: BLE001 - a failing tool is an isError result
                return {"result": {"content": [{"type": "text", "text": str(exc)}],
                                   "isError": True}}
        except RpcError as exc:
            return {"error": exc.error}

    def _run_tool(self, message: Dict[str, Any], ctx: ToolContext) -> None:
        try:
            response = self._call(message, ctx)
        finally:
            with self._changed:
                self._running.pop(message["id"], None)
        if not ctx.cancelled.is_set():  # a cancelled request gets no response
            self.send({"jsonrpc": "2.0", "id": message["id"], **response})

    # -- tasks (2025-11-25) --------------------------------------------------------------

    def _start_task(self, message: Dict[str, Any]) -> None:
        asked = (message.get("params") or {})["task"].get("ttl")
        ttl = TASK_TTL
        if (isinstance(asked, (int, float)) and not isinstance(asked, bool)
                and 0 < asked < float("inf")):  # not NaN either
            ttl = int(min(max(asked, MIN_TASK_TTL), MAX_TASK_TTL))
        ctx = ToolContext(self, message)
        with self._changed:
            self._drop_expired()
            full = len(self._tasks) >= MAX_TASKS
            if not full:
                self._task_count += 1
                task = _ServedTask(f"task-{self._task_count}", ttl, ctx)
                ctx.task_id = task.task_id
                self._tasks[task.task_id] = task
                created = task.wire()
        if full:
            self.send({"jsonrpc": "2.0", "id": message["id"], "error": {
                "code": -32603, "message": f"the server holds {MAX_TASKS} tasks already"}})
            return
        self.send({"jsonrpc": "2.0", "id": message["id"], "result": {"task": created}})
        self._start_thread(self._run_task, message, task)

    def _run_task(self, message: Dict[str, Any], task: _ServedTask) -> None:
        response = self._call(message, task.ctx)
        with self._changed:
            if task.status in _TERMINAL:  # cancelled meanwhile: the outcome is dropped
                return
            task.response = response
            failed = "error" in response or response["result"].get("isError")
            task.set("failed" if failed else "completed", task.message)
            self._changed.notify_all()
            note = task.wire()
        self.notify("notifications/tasks/status", note)

    def _set_task_message(self, task_id: str, message: str) -> None:
        with self._changed:
            task = self._tasks.get(task_id)
            if task is None or task.status in _TERMINAL:
                return
            task.set(task.status, message)
            note = task.wire()
        self.notify("notifications/tasks/status", note)

    def _drop_expired(self) -> None:
        """Forget the tasks whose ttl passed (a running one sees ``cancelled``); called
        with ``_changed`` held."""
        now = time.monotonic()
        for task_id, task in list(self._tasks.items()):
            if task.expires <= now:
                task.ctx.cancelled.set()
                del self._tasks[task_id]
                self._changed.notify_all()

    def _find_task(self, params: Dict[str, Any]) -> _ServedTask:
        """The task ``params`` names; called with ``_changed`` held."""
        self._drop_expired()
        task = self._tasks.get(params.get("taskId", ""))
        if task is None:
            raise RpcError({"code": -32602, "message": "Failed to retrieve task: Task not found"})
        return task

    def _task_request(self, method: str, params: Dict[str, Any]) -> Any:
        note = None
        with self._changed:
            if method == "tasks/list":
                self._drop_expired()
                return self._page([t.wire() for t in self._tasks.values()], "tasks", params)
            task = self._find_task(params)
            if method == "tasks/get":
                return task.wire()
            if task.status in _TERMINAL:  # tasks/cancel
                raise RpcError({"code": -32602, "message":
                                f"Cannot cancel task in terminal status {task.status}"})
            task.set("cancelled", "cancelled by the client")
            task.ctx.cancelled.set()
            self._changed.notify_all()
            note = task.wire()
        self.notify("notifications/tasks/status", note)
        return note

    def _answer_task_result(self, message: Dict[str, Any]) -> None:
        """``tasks/result``: once the task ends, what its ``tools/call`` would have
        answered (with the related-task ``_meta``); waits at most until its ttl passes."""
        params = message.get("params") or {}
        response: Optional[Dict[str, Any]] = None
        with self._changed:
            try:
                task = self._find_task(params)
                self._changed.wait_for(
                    lambda: task.status in _TERMINAL or self.closed.is_set(),
                    max(0.0, task.expires - time.monotonic()))
                if self.closed.is_set():
                    return
                if task.status not in _TERMINAL:
                    self._drop_expired()
                    raise RpcError({"code": -32602,
                                    "message": "Failed to retrieve task: Task has expired"})
                response = task.response
                if response is None:  # cancelled
                    raise RpcError({"code": -32603, "message": f"task {task.status}"})
            except RpcError as exc:
                response = {"error": exc.error}
        if "result" in response:
            meta = dict(response["result"].get("_meta") or {})
            meta[_RELATED_TASK] = {"taskId": params.get("taskId")}
            response = {"result": dict(response["result"], _meta=meta)}
        self.send({"jsonrpc": "2.0", "id": message["id"], **response})
