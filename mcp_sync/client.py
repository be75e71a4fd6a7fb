"""The MCP client: the handshake, every MCP method, pagination, and the callbacks a
server can call back into.

``Client`` never touches a process or a socket itself; it drives a :class:`Session` over
a :class:`~mcp_sync.transports.base.Transport`.
"""

from __future__ import annotations

import enum
import logging
import os
import threading
from concurrent.futures import Future
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    List,
    Mapping,
    Optional,
    Sequence,
    Type,
    TypeVar,
    Union,
)

from . import __version__
from ._core import ProgressCallback
from .exceptions import (
    CapabilityError,
    ClientNotConnected,
    MCPError,
    ProtocolError,
    UnsupportedProtocolVersion,
)
from .session import RequestFuture, Session
from .transports.base import Transport

if TYPE_CHECKING:
    from . import types

__all__ = ["DEFAULT", "LATEST_PROTOCOL_VERSION", "SUPPORTED_PROTOCOL_VERSIONS", "Client"]

log = logging.getLogger(__name__)

LATEST_PROTOCOL_VERSION = "2025-11-25"
#: Session-era versions this client speaks, newest first.
SUPPORTED_PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")

T = TypeVar("T")


class _Default(enum.Enum):
    """Marks "use the client's default" where ``None`` already means "no limit"."""

    DEFAULT = "DEFAULT"

    def __repr__(self) -> str:
        return "DEFAULT"


#: Pass (or leave) ``timeout=DEFAULT`` to use the client's default timeout.
DEFAULT = _Default.DEFAULT
Timeout = Union[float, None, _Default]

# MCP logging levels (RFC 5424 names) to Python logging levels.
_LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO + 5,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL + 5,
    "emergency": logging.CRITICAL + 10,
}


def default_timeout_from_env(default: Optional[float] = 30.0) -> Optional[float]:
    """The default request timeout: ``MCP_SYNC_TIMEOUT`` seconds if set (0 = none)."""
    raw = os.environ.get("MCP_SYNC_TIMEOUT")
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"MCP_SYNC_TIMEOUT must be a number of seconds, got {raw!r}") from None
    return None if value <= 0 else value


class _State(enum.Enum):
    NEW = "new"
    CONNECTED = "connected"
    CLOSED = "closed"


def _parse(model: Any, data: Any, what: str) -> Any:
    """Validate server data into a pydantic model (or a union via TypeAdapter)."""
    from pydantic import TypeAdapter, ValidationError

    try:
        if hasattr(model, "model_validate"):
            return model.model_validate(data)
        return TypeAdapter(model).validate_python(data)
    except ValidationError as exc:
        raise ProtocolError(f"invalid {what} from server: {exc}") from exc


def _dump(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        return dump(by_alias=True, exclude_none=True, mode="json")
    return value


class Client:
    """A connection to one MCP server. Can be shared between threads.

    Every method blocks until its answer arrives or its timeout passes; nothing needs an
    event loop. Use it as a context manager, or call :meth:`connect` and :meth:`close`.

    Args:
        transport: how to reach the server (:class:`~mcp_sync.StdioTransport`, ...).
        name: a label for the server in thread names, loggers and errors (default: the
            transport's).
        client_info: ``{"name": ..., "version": ...}`` sent in the handshake.
        timeout: default seconds a request may take (``None``: no limit); by default 30,
            or ``MCP_SYNC_TIMEOUT`` from the environment (``0`` means no limit).
        protocol_version: the protocol version to offer (default: the newest).
        sampling_handler: answers ``sampling/createMessage``; called with
            ``types.CreateMessageRequestParams``, returns ``types.CreateMessageResult`` or
            an equivalent dict. Declares the ``sampling`` capability.
        elicitation_handler: answers ``elicitation/create``; called with the request
            params, returns ``types.ElicitResult`` or a dict. Declares ``elicitation``.
        roots: a list of ``types.Root`` or dicts (``{"uri": "file:///..."}``), or a callable
            returning one; answers ``roots/list``. Declares ``roots``.
        logging_handler: receives ``types.LoggingMessageNotificationParams``; without it
            server log messages go to the logger ``mcp_sync.server.<name>``.
        notification_handler: called as ``handler(method, params)`` for every notification.
        reset_timeout_on_progress: progress from the server pushes a request's deadline out.
        max_total_timeout: ...but never past this many seconds (default 600).
        close_timeout: bound for each step of :meth:`close` (and of stopping a stdio child).
        max_pages: the most pages a ``list_*`` method follows before it gives up.

    Callbacks run on the session's callback thread or handler pool, never on a reader
    thread, and may call the client.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        name: Optional[str] = None,
        client_info: Optional[Mapping[str, Any]] = None,
        timeout: Timeout = DEFAULT,
        protocol_version: Optional[str] = None,
        sampling_handler: Optional[Callable[[Any], Any]] = None,
        elicitation_handler: Optional[Callable[[Any], Any]] = None,
        roots: Union[Sequence[Any], Callable[[], Sequence[Any]], None] = None,
        logging_handler: Optional[Callable[[Any], None]] = None,
        notification_handler: Optional[Callable[[str, Optional[Dict[str, Any]]], None]] = None,
        reset_timeout_on_progress: bool = True,
        max_total_timeout: Optional[float] = 600.0,
        close_timeout: float = 2.0,
        max_pages: int = 1000,
    ) -> None:
        if protocol_version is not None and protocol_version not in SUPPORTED_PROTOCOL_VERSIONS:
            raise ValueError(
                f"protocol_version {protocol_version!r} is not one of "
                f"{', '.join(SUPPORTED_PROTOCOL_VERSIONS)}"
            )
        self.transport = transport
        self.name = name or transport.name
        self.client_info = dict(client_info or {"name": "mcp-sync", "version": __version__})
        self.timeout: Optional[float] = (
            default_timeout_from_env() if timeout is DEFAULT else timeout
        )
        self.requested_protocol_version = protocol_version
        self.sampling_handler = sampling_handler
        self.elicitation_handler = elicitation_handler
        self.roots = roots
        self.logging_handler = logging_handler
        self.notification_handler = notification_handler
        self.reset_timeout_on_progress = reset_timeout_on_progress
        self.max_total_timeout = max_total_timeout
        self.close_timeout = close_timeout
        self.max_pages = max_pages
        self._server_log = logging.getLogger(f"mcp_sync.server.{self.name}")
        # Guards the connection state: connect() and close() run one at a time.
        self._lock = threading.RLock()
        self._state = _State.NEW
        self._session: Optional[Session] = None
        self._init_result: Optional[Dict[str, Any]] = None
        self._server_info: Any = None
        self._server_capabilities: Any = None
        # Cached lists, dropped on the matching */list_changed notification.
        self._cache: Dict[str, List[Any]] = {}
        self._cache_lock = threading.Lock()

    # -- lifecycle -----------------------------------------------------------------------

    def __enter__(self) -> Client:
        if self._state is not _State.CONNECTED:
            self.connect()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<mcp_sync.Client {self.name} {self._state.value}>"

    @property
    def connected(self) -> bool:
        """True between a successful :meth:`connect` and :meth:`close` (or the link dying)."""
        session = self._session
        return self._state is _State.CONNECTED and session is not None and not session.closed

    def connect(self) -> Client:
        """Start the transport and perform the handshake. Returns ``self``.

        Connecting a connected client does nothing; a closed client connects afresh.

        Raises:
            CommandNotFound: the stdio command does not exist.
            TransportError: the server could not be reached, or it died during the handshake.
            UnsupportedProtocolVersion: the server speaks no version this client does.
            RequestTimeout: the server did not answer ``initialize`` in time.
        """
        with self._lock:
            if self.connected:
                return self
            if self._session is not None:
                self._session.close()
            self._cache.clear()
            session = Session(
                self.transport,
                name=self.name,
                request_handlers=self._request_handlers(),
                on_notification=self._on_notification,
                default_timeout=self.timeout,
                reset_timeout_on_progress=self.reset_timeout_on_progress,
                max_total_timeout=self.max_total_timeout,
                close_timeout=self.close_timeout,
            )
            self._session = session
            try:
                session.start()
                self._handshake(session)
            except BaseException:
                session.close()
                self._state = _State.CLOSED
                raise
            self._state = _State.CONNECTED
            return self

    def close(self) -> None:
        """Close the connection: stop the server (stdio) and every thread. Idempotent.

        Requests still pending fail with :class:`~mcp_sync.ConnectionClosed`.
        """
        with self._lock:
            session = self._session
            self._state = _State.CLOSED
        if session is not None:
            session.close()

    def _capabilities(self) -> Dict[str, Any]:
        capabilities: Dict[str, Any] = {}
        if self.roots is not None:
            capabilities["roots"] = {"listChanged": True}
        if self.sampling_handler is not None:
            capabilities["sampling"] = {}
        if self.elicitation_handler is not None:
            capabilities["elicitation"] = {"form": {}, "url": {}}
        return capabilities

    def _handshake(self, session: Session) -> None:
        offered = self.requested_protocol_version or LATEST_PROTOCOL_VERSION
        result = session.request(
            "initialize",
            {
                "protocolVersion": offered,
                "capabilities": self._capabilities(),
                "clientInfo": self.client_info,
            },
            cancellable=False,
        )
        if not isinstance(result, dict):
            raise ProtocolError(f"initialize result from {self.name} is not an object")
        version = result.get("protocolVersion")
        if version not in SUPPORTED_PROTOCOL_VERSIONS:
            raise UnsupportedProtocolVersion(
                f"{self.name} answered protocol version {version!r}; this client speaks "
                f"{', '.join(SUPPORTED_PROTOCOL_VERSIONS)}"
            )
        for key in ("capabilities", "serverInfo"):
            if not isinstance(result.get(key), dict):
                raise ProtocolError(f"initialize result from {self.name} has no {key!r}")
        self._init_result = result
        self._server_info = None
        self._server_capabilities = None
        self.transport.set_protocol_version(version)
        session.notify("notifications/initialized")
        log.debug("connected to %s, protocol %s", self.name, version)

    # -- properties ----------------------------------------------------------------------

    def _require_init(self) -> Dict[str, Any]:
        if self._init_result is None:
            raise ClientNotConnected(f"client for {self.name} has not connected yet")
        return self._init_result

    @property
    def protocol_version(self) -> Optional[str]:
        """The protocol version agreed in the handshake (``None`` before it)."""
        return self._init_result.get("protocolVersion") if self._init_result else None

    @property
    def server_info(self) -> types.Implementation:
        """The server's name and version (``types.Implementation``)."""
        if self._server_info is None:
            from . import types

            self._server_info = _parse(
                types.Implementation, self._require_init()["serverInfo"], "serverInfo"
            )
        return self._server_info  # type: ignore[no-any-return]

    @property
    def server_capabilities(self) -> types.ServerCapabilities:
        """What the server declared it can do (``types.ServerCapabilities``)."""
        if self._server_capabilities is None:
            from . import types

            self._server_capabilities = _parse(
                types.ServerCapabilities, self._require_init()["capabilities"], "capabilities"
            )
        return self._server_capabilities  # type: ignore[no-any-return]

    @property
    def instructions(self) -> Optional[str]:
        """The server's usage instructions from the handshake, if any."""
        value = self._require_init().get("instructions")
        return value if isinstance(value, str) else None

    def _has_capability(self, *path: str) -> bool:
        node: Any = self._require_init().get("capabilities", {})
        for key in path:
            if not isinstance(node, dict) or key not in node:
                return False
            node = node[key]
        return node is not None and node is not False

    def _require_capability(self, what: str, *path: str) -> None:
        if not self._has_capability(*path):
            raise CapabilityError(
                f"{self.name} does not support {what} (capability {'.'.join(path)!r} "
                "not declared)"
            )

    # -- requests ------------------------------------------------------------------------

    def _live_session(self) -> Session:
        session = self._session
        if session is None or self._state is _State.NEW:
            raise ClientNotConnected(f"client for {self.name} is not connected; call connect()")
        if self._state is _State.CLOSED:
            raise ClientNotConnected(f"client for {self.name} is closed; call connect() again")
        return session

    def _timeout(self, timeout: Timeout) -> Optional[float]:
        return self.timeout if timeout is DEFAULT else timeout

    def request(
        self,
        method: str,
        params: Optional[Dict[str, Any]] = None,
        *,
        timeout: Timeout = DEFAULT,
        result_type: Optional[Type[T]] = None,
        on_progress: Optional[ProgressCallback] = None,
    ) -> Any:
        """Send any request and block for its result.

        Returns the result as a dict, or validated into ``result_type`` (a pydantic model).

        Raises:
            RequestTimeout, ServerError, ConnectionClosed, ProtocolError, ClientNotConnected.
        """
        result = self._live_session().request(
            method, params, timeout=self._timeout(timeout), on_progress=on_progress
        )
        if result_type is not None:
            return _parse(result_type, result, f"{method} result")
        return result

    def submit(
        self,
        method: str,
        params: Optional[Dict[str, Any]] = None,
        *,
        timeout: Timeout = DEFAULT,
        result_type: Optional[Type[T]] = None,
        on_progress: Optional[ProgressCallback] = None,
    ) -> Future[Any]:
        """Send any request without blocking; returns a :class:`concurrent.futures.Future`.

        The future's ``cancel()`` cancels the request on the wire. Its result is a dict,
        or a ``result_type`` model; a timeout fails it with ``RequestTimeout``.
        """
        future = self._live_session().submit(
            method, params, timeout=self._timeout(timeout), on_progress=on_progress
        )
        if result_type is None:
            return future
        return _converted(future, lambda data: _parse(result_type, data, f"{method} result"))

    def notify(self, method: str, params: Optional[Dict[str, Any]] = None) -> None:
        """Send a notification to the server."""
        self._live_session().notify(method, params)

    def ping(self, *, timeout: Timeout = DEFAULT) -> None:
        """Check that the server answers. Raises on timeout or a closed connection."""
        self.request("ping", timeout=timeout)

    def _paginate(
        self, method: str, key: str, model: Any, timeout: Timeout, cache: bool
    ) -> List[Any]:
        if cache:
            with self._cache_lock:
                cached = self._cache.get(method)
            if cached is not None:
                return list(cached)
        items: List[Any] = []
        cursor: Optional[str] = None
        seen_cursors = set()
        for _ in range(self.max_pages):
            params = {"cursor": cursor} if cursor is not None else None
            page = self.request(method, params, timeout=timeout)
            if not isinstance(page, dict) or not isinstance(page.get(key), list):
                raise ProtocolError(f"{method} result from {self.name} has no list {key!r}")
            items.extend(_parse(model, item, f"{method} item") for item in page[key])
            cursor = page.get("nextCursor")
            if not cursor:
                break
            if cursor in seen_cursors:
                raise ProtocolError(f"{self.name} repeated the cursor {cursor!r} in {method}")
            seen_cursors.add(cursor)
        else:
            raise ProtocolError(
                f"{method} from {self.name} did not end after {self.max_pages} pages"
            )
        if cache:
            with self._cache_lock:
                self._cache[method] = items
        return list(items)

    def list_tools(self, *, timeout: Timeout = DEFAULT) -> List[types.Tool]:
        """Every tool the server offers (all pages).

        Cached while the server promises ``notifications/tools/list_changed``.
        """
        from . import types

        self._require_capability("tools", "tools")
        cache = self._has_capability("tools", "listChanged")
        return self._paginate("tools/list", "tools", types.Tool, timeout, cache)

    def _tool(self, name: str) -> Optional[types.Tool]:
        with self._cache_lock:
            tools = self._cache.get("tools/list")
        for tool in tools or ():
            if tool.name == name:
                found: types.Tool = tool
                return found
        return None

    def _call_tool_params(
        self, name: str, arguments: Optional[Mapping[str, Any]], meta: Optional[Mapping[str, Any]]
    ) -> Dict[str, Any]:
        params: Dict[str, Any] = {"name": name, "arguments": dict(arguments or {})}
        if meta:
            params["_meta"] = dict(meta)
        return params

    def _tool_result(self, name: str, data: Any) -> types.CallToolResult:
        from . import types

        result: types.CallToolResult = _parse(types.CallToolResult, data, "tools/call result")
        tool = self._tool(name)
        if tool is not None and tool.output_schema and not result.is_error:
            if result.structured_content is None:
                raise ProtocolError(
                    f"tool {name!r} of {self.name} declares an outputSchema but returned no "
                    "structuredContent"
                )
            _validate_schema(result.structured_content, tool.output_schema, name)
        return result

    def call_tool(
        self,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Timeout = DEFAULT,
        on_progress: Optional[ProgressCallback] = None,
        meta: Optional[Mapping[str, Any]] = None,
    ) -> types.CallToolResult:
        """Call a tool and block for its result.

        ``on_progress(progress, total, message)`` is called for each progress notification;
        progress also pushes the deadline out (never past ``max_total_timeout``). A result
        with ``isError: true`` is returned, not raised.

        Raises:
            RequestTimeout: no result before the deadline; the call was cancelled on the wire.
            ServerError: the server answered with a JSON-RPC error (an unknown tool, say).
            ProtocolError: the result is malformed or does not match the tool's outputSchema.
        """
        data = self.request(
            "tools/call", self._call_tool_params(name, arguments, meta),
            timeout=timeout, on_progress=on_progress,
        )
        return self._tool_result(name, data)

    def call_tool_future(
        self,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Timeout = DEFAULT,
        on_progress: Optional[ProgressCallback] = None,
        meta: Optional[Mapping[str, Any]] = None,
    ) -> Future[types.CallToolResult]:
        """Like :meth:`call_tool` but returns at once with a Future.

        ``future.cancel()`` cancels the call on the wire.
        """
        future = self.submit(
            "tools/call", self._call_tool_params(name, arguments, meta),
            timeout=timeout, on_progress=on_progress,
        )
        return _converted(future, lambda data: self._tool_result(name, data))

    def list_resources(self, *, timeout: Timeout = DEFAULT) -> List[types.Resource]:
        """Every resource the server lists (all pages)."""
        from . import types

        self._require_capability("resources", "resources")
        cache = self._has_capability("resources", "listChanged")
        return self._paginate("resources/list", "resources", types.Resource, timeout, cache)

    def list_resource_templates(
        self, *, timeout: Timeout = DEFAULT
    ) -> List[types.ResourceTemplate]:
        """Every resource template the server lists (all pages)."""
        from . import types

        self._require_capability("resources", "resources")
        cache = self._has_capability("resources", "listChanged")
        return self._paginate(
            "resources/templates/list", "resourceTemplates", types.ResourceTemplate, timeout, cache
        )

    def read_resource(self, uri: str, *, timeout: Timeout = DEFAULT) -> types.ReadResourceResult:
        """Read a resource by URI."""
        from . import types

        return self.request(  # type: ignore[no-any-return]
            "resources/read", {"uri": str(uri)}, timeout=timeout,
            result_type=types.ReadResourceResult,
        )

    def subscribe_resource(self, uri: str, *, timeout: Timeout = DEFAULT) -> None:
        """Ask for ``notifications/resources/updated`` when the resource changes.

        Raises:
            CapabilityError: the server did not declare ``resources.subscribe``.
        """
        self._require_capability("resource subscriptions", "resources", "subscribe")
        self.request("resources/subscribe", {"uri": str(uri)}, timeout=timeout)

    def unsubscribe_resource(self, uri: str, *, timeout: Timeout = DEFAULT) -> None:
        """Stop updates for a resource subscribed with :meth:`subscribe_resource`."""
        self._require_capability("resource subscriptions", "resources", "subscribe")
        self.request("resources/unsubscribe", {"uri": str(uri)}, timeout=timeout)

    def list_prompts(self, *, timeout: Timeout = DEFAULT) -> List[types.Prompt]:
        """Every prompt the server offers (all pages)."""
        from . import types

        self._require_capability("prompts", "prompts")
        cache = self._has_capability("prompts", "listChanged")
        return self._paginate("prompts/list", "prompts", types.Prompt, timeout, cache)

    def get_prompt(
        self,
        name: str,
        arguments: Optional[Mapping[str, str]] = None,
        *,
        timeout: Timeout = DEFAULT,
    ) -> types.GetPromptResult:
        """Get a prompt filled in with ``arguments`` (string values)."""
        from . import types

        params: Dict[str, Any] = {"name": name}
        if arguments:
            params["arguments"] = {key: str(value) for key, value in arguments.items()}
        return self.request(  # type: ignore[no-any-return]
            "prompts/get", params, timeout=timeout, result_type=types.GetPromptResult
        )

    def complete(
        self,
        ref: Union[Mapping[str, Any], Any],
        argument: Mapping[str, str],
        context: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Timeout = DEFAULT,
    ) -> types.CompleteResult:
        """Ask for completions of a prompt or resource-template argument.

        ``ref`` is ``{"type": "ref/prompt", "name": ...}`` or
        ``{"type": "ref/resource", "uri": ...}`` (or the matching model); ``argument`` is
        ``{"name": ..., "value": ...}``; ``context`` may hold ``{"arguments": {...}}``.
        """
        from . import types

        self._require_capability("completion", "completions")
        params: Dict[str, Any] = {"ref": _dump(ref), "argument": dict(argument)}
        if context:
            params["context"] = _dump(context)
        return self.request(  # type: ignore[no-any-return]
            "completion/complete", params, timeout=timeout, result_type=types.CompleteResult
        )

    def set_logging_level(self, level: str, *, timeout: Timeout = DEFAULT) -> None:
        """Ask the server to send log messages at ``level`` and above."""
        if level not in _LOG_LEVELS:
            raise ValueError(f"unknown logging level {level!r}; use one of {list(_LOG_LEVELS)}")
        self._require_capability("logging", "logging")
        self.request("logging/setLevel", {"level": level}, timeout=timeout)

    def send_roots_list_changed(self) -> None:
        """Tell the server the roots changed (it will ask for them again)."""
        self.notify("notifications/roots/list_changed")

    # -- the server calling back ---------------------------------------------------------

    def _request_handlers(self) -> Dict[str, Callable[[Optional[Dict[str, Any]]], Any]]:
        handlers: Dict[str, Callable[[Optional[Dict[str, Any]]], Any]] = {}
        if self.roots is not None:
            handlers["roots/list"] = self._answer_roots
        if self.sampling_handler is not None:
            handlers["sampling/createMessage"] = self._answer_sampling
        if self.elicitation_handler is not None:
            handlers["elicitation/create"] = self._answer_elicitation
        return handlers

    def _answer_roots(self, params: Optional[Dict[str, Any]]) -> Dict[str, Any]:
        roots = self.roots() if callable(self.roots) else self.roots
        return {"roots": [_dump(root) for root in roots or ()]}

    def _answer_sampling(self, params: Optional[Dict[str, Any]]) -> Any:
        from . import types

        assert self.sampling_handler is not None
        parsed = _parse(types.CreateMessageRequestParams, params or {}, "sampling request")
        return _dump(self.sampling_handler(parsed))

    def _answer_elicitation(self, params: Optional[Dict[str, Any]]) -> Any:
        from . import types

        assert self.elicitation_handler is not None
        parsed = _parse(types.ElicitRequestParams, params or {}, "elicitation request")
        return _dump(self.elicitation_handler(parsed))

    def _on_notification(self, method: str, params: Optional[Dict[str, Any]]) -> None:
        if method == "notifications/message":
            self._on_log_message(params or {})
        elif method.endswith("/list_changed"):
            listed = {
                "notifications/tools/list_changed": ("tools/list",),
                "notifications/prompts/list_changed": ("prompts/list",),
                "notifications/resources/list_changed": (
                    "resources/list", "resources/templates/list",
                ),
            }.get(method, ())
            with self._cache_lock:
                for key in listed:
                    self._cache.pop(key, None)
        if self.notification_handler is not None:
            try:
                self.notification_handler(method, params)
            except Exception:
                log.exception("notification_handler raised for %s from %s", method, self.name)

    def _on_log_message(self, params: Dict[str, Any]) -> None:
        if self.logging_handler is not None:
            from . import types

            try:
                parsed = _parse(types.LoggingMessageNotificationParams, params, "log message")
                self.logging_handler(parsed)
            except Exception:
                log.exception("logging_handler raised for a message from %s", self.name)
            return
        level = _LOG_LEVELS.get(str(params.get("level")), logging.INFO)
        logger = self._server_log
        if params.get("logger"):
            logger = logger.getChild(str(params["logger"]))
        logger.log(level, "%s", params.get("data"))


def _converted(future: Future[Any], convert: Callable[[Any], Any]) -> Future[Any]:
    """A future for ``convert(result)`` of ``future``; cancelling it cancels ``future``."""
    outer: RequestFuture = RequestFuture()
    if isinstance(future, RequestFuture):
        outer._session, outer.request_id, outer.method = (
            future._session, future.request_id, future.method
        )

    def relay(inner: Future[Any]) -> None:
        if outer.done():
            return
        if inner.cancelled():
            outer.cancel()
            return
        error = inner.exception()
        try:
            if error is not None:
                outer.set_exception(error)
            else:
                outer.set_result(convert(inner.result()))
        except MCPError as exc:
            outer.set_exception(exc)
        except Exception as exc:  # noqa: BLE001 - e.g. InvalidStateError after a cancel race
            if not outer.done():
                outer.set_exception(exc)

    future.add_done_callback(relay)
    return outer


def _validate_schema(instance: Any, schema: Mapping[str, Any], tool: str) -> None:
    """Check structured content against the tool's outputSchema when jsonschema is installed."""
    try:
        import jsonschema
    except ImportError:
        return
    try:
        jsonschema.validate(instance, schema)
    except jsonschema.ValidationError as exc:
        raise ProtocolError(
            f"structuredContent of tool {tool!r} does not match its outputSchema: {exc.message}"
        ) from exc
    except jsonschema.SchemaError as exc:
        log.warning("outputSchema of tool %r is not a valid JSON schema: %s", tool, exc.message)
