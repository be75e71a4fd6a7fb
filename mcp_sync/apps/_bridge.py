"""The host's side of one app's channel, sans I/O: each message from the app validated,
the host's replies and notifications built.

An :class:`AppBridge` does no I/O and starts no thread. Its owner feeds it what the app
posted (:meth:`AppBridge.receive`), checks a tool call against the server's current
listing (:meth:`AppBridge.authorize`), makes the call itself, and posts what the bridge
builds (:meth:`AppBridge.tool_reply`, :meth:`AppBridge.error_reply`,
:meth:`AppBridge.tool_data`). The rules it applies are written in the docstring of
:mod:`mcp_sync.apps`.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Union

from .._util.text import excerpt
from .._version import __version__
from ..exceptions import MCPError, RequestTimeout, ServerError
from ._csp import AppCsp
from ._meta import UI_PROTOCOL_VERSION, app_callable

__all__ = ["AppBridge", "BridgeLimits", "Step", "ToolCall"]

log = logging.getLogger(__name__)

RequestId = Union[int, str]

# JSON-RPC error codes the bridge answers with.
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_TIMEOUT = -32001  # the MCP SDKs' code for a request that timed out
# The longest method name, request id and tool name taken from an app.
_MAX_METHOD = 128
_MAX_ID = 200
_MAX_TOOL_NAME = 256
# How many refusals one bridge logs at WARNING (a hostile app may send nothing else).
_LOGGED_REFUSALS = 20


@dataclass(frozen=True)
class BridgeLimits:
    """The bounds on what an app may send and ask for.

    ``max_message_bytes``: one message from the app, as JSON text (UTF-8); a larger one
    is refused unread. ``max_width``, ``max_height``: the largest frame size, in CSS
    pixels, an app may ask for (``ui/notifications/size-changed`` is clamped to them;
    ``max_height`` is also told to the app as ``containerDimensions.maxHeight``).
    """

    max_message_bytes: int = 1 << 20
    max_width: int = 4096
    max_height: int = 4096

    def __post_init__(self) -> None:
        for name in ("max_message_bytes", "max_width", "max_height"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, not {value!r}")


@dataclass(frozen=True)
class ToolCall:
    """A ``tools/call`` the app asked for: answer it with :meth:`AppBridge.tool_reply`
    or :meth:`AppBridge.error_reply`."""

    request_id: RequestId
    name: str
    arguments: Dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Step:
    """What the host does with one message from the app.

    ``reply``: a JSON-RPC message to post back to the app now. ``call``: a tool call to
    make (after :meth:`AppBridge.authorize`), whose answer is posted later. ``deliver``:
    the app is initialised; post it :meth:`AppBridge.tool_data`. ``resize``: the frame
    size the app asked for, clamped (``{"width": w, "height": h}``, either may be
    absent). ``refused``: why the message was refused (None when accepted): a refused
    request gets an error ``reply``; a refused notification or response is dropped.
    ``method``: the message's method (``"response"`` for a response), for logs.
    """

    method: str = ""
    reply: Optional[Dict[str, Any]] = None
    call: Optional[ToolCall] = None
    deliver: bool = False
    resize: Optional[Dict[str, int]] = None
    refused: Optional[str] = None


def _error(request_id: Optional[RequestId], code: int, message: str) -> Dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _result(request_id: RequestId, result: Dict[str, Any]) -> Dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _valid_id(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, str) and len(value) <= _MAX_ID)


def _dimension(value: Any, bound: int) -> Optional[int]:
    """A size the app asked for, clamped to [0, bound]; None if it is not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value):
        return None
    return int(min(max(value, 0), bound))


class AppBridge:
    """The host's side of the channel of one app, of one tool, of one server.

    Args:
        tool: the definition of the tool whose app this is (a ``types.Tool`` or its wire
            dict), told to the app in ``hostContext.toolInfo``.
        csp: the app's policy (what ``hostCapabilities.sandbox.csp`` reports).
        limits: the bounds on what the app sends.
        host_context: more of ``hostContext`` for ``ui/initialize`` (``theme``,
            ``locale``, ``styles``...), over the defaults.
        server: the server's name, for logs.

    Thread-safe: the only state is the ids of the host's own requests, under a lock.
    """

    def __init__(self, tool: Any, *, csp: Optional[AppCsp] = None,
                 limits: Optional[BridgeLimits] = None,
                 host_context: Optional[Mapping[str, Any]] = None,
                 server: str = "") -> None:
        self.tool: Dict[str, Any] = (
            dict(tool) if isinstance(tool, Mapping) else tool.to_wire())
        self.csp = csp or AppCsp()
        self.limits = limits or BridgeLimits()
        self.server = server
        self.host_context = dict(host_context or {})
        self._lock = threading.Lock()  # guards _next_id, _pending and _refusals
        self._next_id = 0
        self._pending: Dict[str, str] = {}  # the host's request ids awaiting the app: method
        self._refusals = 0

    # -- from the app --------------------------------------------------------------------

    def receive(self, message: Union[str, bytes, Mapping[str, Any]]) -> Step:
        """Validate one message the app posted (JSON text, or the object itself) and
        say what to do with it. Never raises: what is wrong is refused."""
        size_error = self._oversized(message)
        if size_error is not None:
            return self._refuse(Step(refused=size_error))
        if isinstance(message, Mapping):
            parsed: Any = message
        else:
            try:
                parsed = json.loads(message)
            except (ValueError, RecursionError):
                return self._refuse(Step(refused="not JSON"))
        if not isinstance(parsed, dict):
            return self._refuse(Step(refused="not a JSON-RPC message object (batches are "
                                             "not taken)"))
        if parsed.get("jsonrpc") != "2.0":
            return self._refuse(Step(refused='"jsonrpc" is not "2.0"'))
        method = parsed.get("method")
        has_id = "id" in parsed
        request_id = parsed.get("id")
        if method is None:
            return self._response(parsed)
        if has_id and not _valid_id(request_id):
            return self._refuse(Step(refused="an id that is not an integer or a short string",
                                     reply=_error(None, INVALID_REQUEST, "Invalid request id")))
        if not isinstance(method, str) or not method or len(method) > _MAX_METHOD:
            return self._refuse(Step(
                refused="a method that is not a short string",
                reply=_error(request_id, INVALID_REQUEST, "Invalid method") if has_id
                else None))
        params = parsed.get("params", {})
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return self._refuse(Step(
                method=method, refused="params that are not an object",
                reply=_error(request_id, INVALID_PARAMS, "params must be an object")
                if has_id else None))
        if has_id:
            assert request_id is not None  # _valid_id checked it
            return self._request(method, request_id, params)
        return self._notification(method, params)

    def _oversized(self, message: Union[str, bytes, Mapping[str, Any]]) -> Optional[str]:
        limit = self.limits.max_message_bytes
        if isinstance(message, Mapping):
            try:
                size = len(json.dumps(message, ensure_ascii=False).encode("utf-8"))
            except (TypeError, ValueError, RecursionError):
                return "not JSON"
        elif isinstance(message, (bytes, bytearray)):
            size = len(message)
        elif isinstance(message, str):
            # A UTF-8 character takes at most 4 bytes: count exactly only near the bound.
            size = len(message) if 4 * len(message) <= limit else len(
                message.encode("utf-8", "surrogatepass"))
        else:
            return "not JSON text"
        if size > limit:
            return f"a message of {size} bytes, over the bound of {limit}"
        return None

    def _request(self, method: str, request_id: RequestId, params: Dict[str, Any]) -> Step:
        if method == "ui/initialize":
            return Step(method, reply=_result(request_id, self.initialize_result()))
        if method == "ping":
            return Step(method, reply=_result(request_id, {}))
        if method == "tools/call":
            name = params.get("name")
            arguments = params.get("arguments", {})
            if not isinstance(name, str) or not name or len(name) > _MAX_TOOL_NAME:
                return self._refuse(Step(method, refused="a tool name that is not a short "
                                         "string", reply=_error(request_id, INVALID_PARAMS,
                                                                "Invalid tool name")))
            if arguments is None:
                arguments = {}
            if not isinstance(arguments, dict):
                return self._refuse(Step(method, refused="tool arguments that are not an "
                                         "object", reply=_error(request_id, INVALID_PARAMS,
                                                                "arguments must be an object")))
            return Step(method, call=ToolCall(request_id, name, arguments))
        if method == "ui/request-display-mode":
            # The one mode this host has; the specification asks for the resulting mode.
            return Step(method, reply=_result(request_id, {"mode": "inline"}))
        return self._refuse(Step(
            method, refused=f"a request this host does not take ({excerpt(method, 80)})",
            reply=_error(request_id, METHOD_NOT_FOUND, "Method not found")))

    def _notification(self, method: str, params: Dict[str, Any]) -> Step:
        if method == "ui/notifications/initialized":
            return Step(method, deliver=True)
        if method == "ui/notifications/size-changed":
            resize: Dict[str, int] = {}
            for key, bound in (("width", self.limits.max_width),
                               ("height", self.limits.max_height)):
                if key in params:
                    value = _dimension(params[key], bound)
                    if value is None:
                        return self._refuse(Step(method, refused=f"a {key} that is not a "
                                                 "finite number"))
                    resize[key] = value
            return Step(method, resize=resize or None)
        if method == "notifications/message":
            log.debug("app of %s logged (%s): %s", excerpt(self.server, 100),
                      excerpt(params.get("level"), 20), excerpt(params.get("data"), 300))
            return Step(method)
        if method == "ui/notifications/request-teardown":
            log.debug("app of %s asked to be torn down", excerpt(self.server, 100))
            return Step(method)
        return self._refuse(Step(
            method, refused=f"a notification this host does not take ({excerpt(method, 80)})"))

    def _response(self, parsed: Dict[str, Any]) -> Step:
        request_id = parsed.get("id")
        if not ("result" in parsed) ^ ("error" in parsed) or not isinstance(request_id, str):
            return self._refuse(Step("response", refused="neither a request, a notification "
                                     "nor a response"))
        with self._lock:
            method = self._pending.pop(request_id, None)
        if method is None:
            return self._refuse(Step("response", refused="a response to no request of the "
                                     "host's"))
        return Step(f"response to {method}")

    def _refuse(self, step: Step) -> Step:
        with self._lock:
            self._refusals += 1
            count = self._refusals
        if count <= _LOGGED_REFUSALS:
            log.warning("refused from the app of %s: %s%s", excerpt(self.server, 100),
                        step.refused, " (further refusals of this app are logged at DEBUG)"
                        if count == _LOGGED_REFUSALS else "")
        else:
            log.debug("refused from the app of %s: %s", excerpt(self.server, 100),
                      step.refused)
        return step

    # -- a tool call, checked and answered -------------------------------------------------

    def authorize(self, call: ToolCall, tools: Iterable[Any]) -> Step:
        """Check ``call`` against ``tools``, the server's tools as listed now: the app
        may call a tool of this server only, and only one whose visibility holds
        ``"app"``. Returns ``Step(call=call)`` to go on, or a refusal whose ``reply`` is
        the error to post."""
        wanted = None
        for tool in tools:
            name = tool.get("name") if isinstance(tool, Mapping) else getattr(tool, "name", None)
            if name == call.name:
                wanted = tool
                break
        if wanted is None:
            return self._refuse(Step("tools/call", refused=f"a call of {excerpt(call.name, 80)}, "
                                     "a tool this server does not list",
                                     reply=_error(call.request_id, INVALID_PARAMS,
                                                  f"Unknown tool: {excerpt(call.name, 80)}")))
        if not app_callable(wanted):
            return self._refuse(Step("tools/call", refused=f"a call of {excerpt(call.name, 80)}, "
                                     "a tool whose visibility does not hold \"app\"",
                                     reply=_error(call.request_id, INVALID_PARAMS,
                                                  f"Tool {excerpt(call.name, 80)} may not be "
                                                  "called by an app")))
        return Step("tools/call", call=call)

    def tool_reply(self, call: ToolCall, result: Any) -> Dict[str, Any]:
        """The reply to ``call``: the tool's result (a ``types.CallToolResult`` or its
        wire dict), as the server sent it."""
        wire = dict(result) if isinstance(result, Mapping) else result.to_wire()
        return _result(call.request_id, wire)

    def error_reply(self, call: ToolCall, error: BaseException) -> Dict[str, Any]:
        """The reply to ``call`` when it failed with ``error``: the server's JSON-RPC
        error (its message excerpted), a timeout, or an internal error that names only
        the kind of failure of the library's own exceptions."""
        if isinstance(error, ServerError):
            return _error(call.request_id, error.code, excerpt(error.message, 500))
        if isinstance(error, RequestTimeout):
            return _error(call.request_id, REQUEST_TIMEOUT, "The tool call timed out")
        if isinstance(error, MCPError):
            return _error(call.request_id, INTERNAL_ERROR,
                          f"The tool call failed ({type(error).__name__})")
        return _error(call.request_id, INTERNAL_ERROR, "The tool call failed")

    # -- from the host ---------------------------------------------------------------------

    def initialize_result(self) -> Dict[str, Any]:
        """The result of ``ui/initialize``: this host, what it offers the app (its
        server's tools, logging; the sandbox's approved origins and no permission), and
        the host context (the tool, the inline display mode, the size bound)."""
        context: Dict[str, Any] = {
            "toolInfo": {"tool": self.tool},
            "theme": "light",
            "displayMode": "inline",
            "availableDisplayModes": ["inline"],
            "containerDimensions": {"maxHeight": self.limits.max_height},
            "platform": "web",
            "userAgent": f"mcp-sync/{__version__}",
        }
        context.update(self.host_context)
        return {
            "protocolVersion": UI_PROTOCOL_VERSION,
            "hostInfo": {"name": "mcp-sync", "version": __version__},
            "hostCapabilities": {
                "serverTools": {},
                "logging": {},
                "sandbox": {"permissions": {}, "csp": self.csp.approved()},
            },
            "hostContext": context,
        }

    @staticmethod
    def tool_data(arguments: Optional[Mapping[str, Any]], result: Any) -> List[Dict[str, Any]]:
        """The notifications an initialised app gets, in order: the tool's input
        (``ui/notifications/tool-input``) and its result (``ui/notifications/tool-result``,
        a ``types.CallToolResult`` or its wire dict)."""
        wire = dict(result) if isinstance(result, Mapping) else result.to_wire()
        return [
            {"jsonrpc": "2.0", "method": "ui/notifications/tool-input",
             "params": {"arguments": dict(arguments or {})}},
            {"jsonrpc": "2.0", "method": "ui/notifications/tool-result", "params": wire},
        ]

    def teardown_request(self, reason: str = "") -> Dict[str, Any]:
        """A ``ui/resource-teardown`` request to post before the app is removed; its
        response from the app is then taken (and only then)."""
        with self._lock:
            self._next_id += 1
            request_id = f"mcp-sync-host-{self._next_id}"
            self._pending[request_id] = "ui/resource-teardown"
        params = {"reason": reason} if reason else {}
        return {"jsonrpc": "2.0", "id": request_id, "method": "ui/resource-teardown",
                "params": params}
