"""The exceptions mcp_sync raises.

Every exception the library raises on purpose derives from :class:`MCPError`, so one
``except mcp_sync.MCPError`` catches them all. Foreign exceptions (``OSError``,
``requests`` errors, ``json`` errors) are translated where they happen and kept as
``__cause__``::

    MCPError
    ├── TransportError                  the link to the server failed
    │   ├── ConnectionClosed            the transport closed; carries exit code and stderr tail
    │   │   ├── ForkedClientError       a client inherited over fork() was used in the child
    │   │   ├── SessionExpired          the server forgot the MCP session (HTTP 404)
    │   │   └── ServerUnavailable       a Manager's server is down (mcp_sync.manager)
    │   ├── CommandNotFound             the stdio command does not exist
    │   └── HTTPError                   a non-2xx HTTP status; carries status, body, auth hints
    ├── RequestTimeout                  no answer before the deadline (also a TimeoutError)
    ├── RequestCancelled                the request was cancelled by the caller
    ├── ServerError                     the server answered with a JSON-RPC error
    │   ├── MethodNotFound              ... -32601
    │   ├── HeaderMismatch              ... -32020: HTTP headers disagree with the body
    │   ├── MissingClientCapability     ... -32021: the call needs a capability not declared
    │   ├── ProtocolVersionRejected     ... -32022: unsupported version (also an
    │   │                                   UnsupportedProtocolVersion)
    │   └── URLElicitationRequired      ... -32042: the user must first visit the URLs it
    │                                       carries (URL-mode elicitation, 2025-11-25)
    ├── ProtocolError                   a malformed or schema-invalid reply, a bad handshake
    │   ├── MessageTooLarge             a message longer than the transport's max_message_size
    │   ├── UnsupportedProtocolVersion  the server speaks no protocol version we do
    │   ├── ListingTooLarge             a list_* call passed max_list_items, max_list_bytes
    │   │                               or max_pages
    │   └── InvalidToolSchema           a tool's outputSchema cannot check its results
    │                                   (refers outside itself, loops, too large or costly)
    ├── CapabilityError                 the server did not declare the capability a call needs
    ├── CallbackError                   a handler given to the client raised while answering
    │                                   the server (2026-07-28 input requests)
    ├── ToolError                       a tool result with ``isError: true``, raised only for
    │                                   ``call_tool(..., raise_on_error=True)`` or a Toolbox
    │                                   with ``raise_errors=True``; carries it
    ├── TaskError                       a task (a tool call run as a task) ended without a
    │   │                               result; carries task_id and the last Task seen
    │   ├── TaskFailed                  the task failed; carries the server's error, if any
    │   ├── TaskCancelled               the task was cancelled (by the server, or tasks/cancel)
    │   └── TaskNotFound                the server does not know the task id: unknown or
    │                                   expired (-32602 to tasks/get or tasks/result)
    ├── InvalidToolCall                 a model asked a Toolbox for a call it cannot make
    │                                   (unknown name, arguments not an object), or a
    │                                   Manager's tool is disabled by the configuration
    ├── ToolChanged                     the tool's definition changed since it was pinned,
    │                                   and the change is blocked until accepted
    ├── ClientNotConnected              the client is not connected (before connect, after close)
    ├── CallToolFailed                  the mcp_sync.call_tool Celery task failed (carries a JSON
    │                                   payload; mcp_sync.contrib.celery)
    ├── AppError                        a tool's app cannot be shown, or a page token was
    │                                   refused (mcp_sync.apps)
    ├── ConfigError                     an invalid mcpServers configuration (mcp_sync.config;
    │                                   also a ValueError)
    └── AuthError                       authorization failed
        ├── OAuthError                  an authorization server refused a request
        │                               (mcp_sync.auth)
        └── AuthorizationRequired       the user must authorize in a browser first
                                        (mcp_sync.auth)

A tool result with ``isError: true`` is a result, not an exception, unless the call asked
for ``raise_on_error=True`` (then :class:`ToolError`, which carries the result).

Every one of them pickles with its attributes and message intact, so errors cross
process boundaries (``multiprocessing``, ``concurrent.futures.ProcessPoolExecutor``)
like results do. (``__cause__`` and the traceback do not travel, as for any exception.)

Messages never hold more of what a server sent than a short excerpt made printable
(:func:`excerpt`; :func:`body_excerpt` for HTTP bodies, markup stripped).
"""

from __future__ import annotations

import logging
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

# The one helper that makes server text safe for a message (bounded, escaped); imported
# from here by the rest of the library.
from ._protocol import (
    HEADER_MISMATCH,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
    URL_ELICITATION_REQUIRED,
)
from ._util.text import excerpt as excerpt
from ._util.text import pattern

__all__ = [
    "AuthError",
    "CallbackError",
    "CapabilityError",
    "ClientNotConnected",
    "CommandNotFound",
    "ConnectionClosed",
    "ForkedClientError",
    "HTTPError",
    "HeaderMismatch",
    "InvalidToolCall",
    "InvalidToolSchema",
    "ListingTooLarge",
    "MCPError",
    "MessageTooLarge",
    "MethodNotFound",
    "MissingClientCapability",
    "ProtocolError",
    "ProtocolVersionRejected",
    "RequestCancelled",
    "RequestTimeout",
    "ServerError",
    "SessionExpired",
    "TaskCancelled",
    "TaskError",
    "TaskFailed",
    "TaskNotFound",
    "ToolChanged",
    "ToolError",
    "TransportError",
    "URLElicitationRequired",
    "UnsupportedProtocolVersion",
]

log = logging.getLogger(__name__)


def _unpickle(cls: type, args: Tuple[Any, ...], state: Dict[str, Any]) -> BaseException:
    """Rebuild a pickled :class:`MCPError` without calling its ``__init__``.

    The constructors take their fields (``status``, ``code``...) and build the message
    from them, so the message alone (``args``) cannot rebuild the error; the fields are
    in ``state``.
    """
    error: BaseException = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error


_MARKUP_SKIPPED = r"<(script|style)\b.*?</\1\s*>"
# What a browser does not show in the page either: the head, whose title most error
# pages repeat as their first heading ("Error response Error response").
_MARKUP_HEAD = r"<head\b.*?</head\s*>|<title\b.*?</title\s*>"
_MARKUP_TAG = r"<[^>]*>"
_WHITESPACE = r"\s+"


def body_excerpt(body: Any, limit: int = 200) -> str:
    """A short, printable, one-line excerpt of an HTTP body for an error message.

    An HTML page (a web server's 404 page, a proxy's error page) is reduced to the text a
    browser shows: no tags, scripts or styles, nor the head and its title (unless the page
    has no other text); whitespace is collapsed; then :func:`excerpt` applies.
    """
    if isinstance(body, (bytes, bytearray)):
        body = bytes(body).decode("utf-8", "replace")
    text = str(body)
    if "<" in text and ">" in text:
        page = pattern(_MARKUP_SKIPPED, re.I | re.S).sub(" ", text)
        shown = pattern(_MARKUP_TAG).sub(" ", pattern(_MARKUP_HEAD, re.I | re.S).sub(" ", page))
        text = shown if shown.strip() else pattern(_MARKUP_TAG).sub(" ", page)
    return excerpt(pattern(_WHITESPACE).sub(" ", text).strip(), limit)


class MCPError(Exception):
    """Root of every exception mcp_sync raises."""

    def __reduce__(self) -> Tuple[Any, ...]:
        # Exception's own __reduce__ calls cls(*args) when unpickling: that fails for a
        # constructor with required fields, or garbles the message of one that builds it.
        return (_unpickle, (type(self), self.args, dict(self.__dict__)))


class TransportError(MCPError):
    """The link to the server failed (process, pipe, socket or HTTP).

    ``request_sent`` says whether the request that failed reached the transport's wire:
    ``False`` when it certainly did not (the session raises ``ConnectionClosed`` with
    ``request_sent=False`` from ``submit()`` when the link was closed before the request
    was written), ``True`` when it was written, ``None`` when unknown. Only a ``False``
    makes a retry on a new connection safe for any request.
    """

    #: See the class docstring; set by the session or the transport, None when unknown.
    request_sent: Optional[bool] = None


class ConnectionClosed(TransportError):
    """The transport is closed; pending and later requests fail with this.

    ``exit_code`` is the stdio child's exit status when known, ``stderr_tail`` the last
    lines the child wrote to stderr (most recent last).
    """

    def __init__(
        self,
        message: str = "connection closed",
        *,
        exit_code: Optional[int] = None,
        stderr_tail: Sequence[str] = (),
    ) -> None:
        self.reason = message
        self.exit_code = exit_code
        self.stderr_tail = list(stderr_tail)
        details = message
        if exit_code is not None:
            details += f" (exit code {exit_code})"
        if self.stderr_tail:
            tail = "\n".join("    " + excerpt(line, 300) for line in self.stderr_tail[-10:])
            details += "\n  last stderr lines:\n" + tail
        super().__init__(details)


class ForkedClientError(ConnectionClosed):
    """A client created before ``os.fork()`` was used in the child process.

    The child shares the parent's pipes and sockets; using them would corrupt both
    processes' conversations. Create a new client in the child instead.
    """


class SessionExpired(ConnectionClosed):
    """The server forgot the MCP session it kept (a restart, an expiry): over HTTP, a 404
    on the session's ``Mcp-Session-Id``.

    The client starts a new session by itself (a handshake, then the resource
    subscriptions and the log level the old one held) and sends a request that met the
    404 once more: the server did not process it (its ``request_sent`` is False). Other
    requests in flight on the old session fail with this error.
    """


class CommandNotFound(TransportError):
    """The command for a stdio server could not be found or executed."""

    def __init__(self, command: str, detail: str = "") -> None:
        self.command = command
        message = f"MCP server command not found: {command!r}"
        if detail:
            message += f" ({detail})"
        super().__init__(message)


class HTTPError(TransportError):
    """A non-2xx HTTP status from the server.

    Carries ``status``, ``body`` (an excerpt), ``url``, ``method`` (the MCP method, or
    what the request was for), and the auth hints a caller needs to log in:
    ``www_authenticate`` and ``auth_server`` (the ``Mcp-Auth-Server`` header).

    The message reads ``<during>: HTTP <status> <reason> from <verb> <url>: <body>``, with
    at most a short excerpt of the body (markup stripped, made printable). ``during``
    names what the caller was doing (``"connect"`` for the handshake's requests; by
    default ``method``); ``verb`` is the HTTP method; ``hint``, when given, says what to
    try (the usual endpoint path after a 404 at connect) on a line of its own.
    """

    def __init__(
        self,
        status: int,
        *,
        url: str = "",
        body: str = "",
        www_authenticate: Optional[str] = None,
        auth_server: Optional[str] = None,
        method: Optional[str] = None,
        verb: Optional[str] = None,
        during: Optional[str] = None,
        hint: Optional[str] = None,
    ) -> None:
        self.status = status
        self.url = url
        self.body = excerpt(body, 500)
        self.www_authenticate = www_authenticate
        self.auth_server = auth_server
        self.method = method
        self.hint = hint
        label = during or method
        message = f"{label}: " if label else ""
        message += f"HTTP {status}"
        from http import HTTPStatus  # HTTP errors only: not paid by a stdio client

        try:
            message += f" {HTTPStatus(status).phrase}"
        except ValueError:
            pass  # a status with no standard reason phrase
        if url:
            # a legacy endpoint or an auth URL is the server's choice
            message += f" from {verb} {excerpt(url, 300)}" if verb else f" from {excerpt(url, 300)}"
        short = body_excerpt(body)
        if short:
            message += f": {short}"
        if www_authenticate:
            message += f" [WWW-Authenticate: {excerpt(www_authenticate, 300)}]"
        if auth_server:
            message += f" [Mcp-Auth-Server: {excerpt(auth_server, 200)}]"
        if hint:
            message += f"\n  hint: {hint}"
        super().__init__(message)


class RequestTimeout(MCPError, TimeoutError):
    """No response arrived before the request's deadline. The request was cancelled.

    ``method``, ``request_id`` and ``timeout`` (seconds) describe the request; ``subject``
    is what it was about when that has a name: the tool (``tools/call``), the prompt
    (``prompts/get``) or the resource URI (``resources/read``). The message names both:
    ``tools/call 'slow' timed out after 1.0 s``.

    ``timeout`` is the bound that ran out: the request's timeout or, when ``total`` is
    true, the client's ``max_total_timeout``, the limit on a request however long the
    server's progress notifications keep pushing its deadline out.
    """

    def __init__(
        self, method: str, request_id: Any, timeout: Optional[float],
        subject: Optional[str] = None, *, total: bool = False,
    ) -> None:
        self.method = method
        self.request_id = request_id
        self.timeout = timeout
        self.subject = subject
        self.total = total
        what = method if subject is None else f"{method} {excerpt(repr(subject), 120)}"
        if total:
            message = (f"{what} ran out of max_total_timeout={_seconds(timeout)} s (its "
                       "limit however much progress the server reports)")
        else:
            message = f"{what} timed out after {_seconds(timeout)} s"
        super().__init__(message)


def _seconds(timeout: Optional[float]) -> str:
    """``1`` -> ``1.0``, ``0.25`` -> ``0.25``, ``1/3`` -> ``0.333``: readable seconds."""
    if timeout is None:
        return "None"
    text = f"{timeout:.3f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


class RequestCancelled(MCPError):
    """The request was cancelled by the caller before its response arrived."""


class ServerError(MCPError):
    """The server answered with a JSON-RPC error: ``code``, ``message``, ``data``."""

    def __init__(
        self, code: int, message: str, data: Any = None, *, method: Optional[str] = None
    ) -> None:
        self.code = code
        self.message = message
        self.data = data
        self.method = method
        where = f" for {method}" if method else ""
        super().__init__(f"server error {code}{where}: {excerpt(message, 500)}")


class MethodNotFound(ServerError):
    """The server does not implement the method (JSON-RPC -32601)."""


class ProtocolError(MCPError):
    """The server broke the protocol: a malformed or schema-invalid reply, a bad handshake."""


class MessageTooLarge(ProtocolError):
    """The server sent a message longer than the transport's ``max_message_size``.

    The transport did not read it whole: stdio skipped the rest of the line, HTTP dropped
    the connection it came on. The request it answered fails with this at once when its
    id could be read from the start of the message; ``request_id`` is then that id.
    ``limit`` is the bound, ``size`` the bytes seen when the transport gave up (more than
    ``limit``; the whole size when the server declared it, as in ``Content-Length``).
    """

    def __init__(self, message: str, *, limit: int, size: Optional[int] = None,
                 request_id: Any = None) -> None:
        self.limit = limit
        self.size = size
        self.request_id = request_id
        super().__init__(message)


class UnsupportedProtocolVersion(ProtocolError):
    """The server offered a protocol version this client does not speak."""


class ListingTooLarge(ProtocolError):
    """A ``list_*`` call collected more than the client allows: more items than
    ``max_list_items``, more bytes than ``max_list_bytes``, or more pages than
    ``max_pages`` (a server that sends too much, or never stops paging).

    ``method`` is the list method (``"tools/list"``...), ``bound`` the name of the
    :class:`~mcp_sync.Client` keyword that sets the limit (also a ``connect()`` and
    ``Manager`` keyword), ``limit`` its value. Nothing of the listing is kept; the
    client stays usable.
    """

    def __init__(self, message: str, *, method: str, bound: str, limit: int) -> None:
        super().__init__(message)
        self.method = method
        self.bound = bound
        self.limit = limit


class InvalidToolSchema(ProtocolError):
    """A tool's ``outputSchema`` cannot be used to check its results, so the client takes
    none: it is not a valid JSON schema, a ``$ref`` leads outside it (a URL, a file: the
    client never fetches or reads one) or to nothing, it refers to itself without end, it
    is larger or deeper than the client allows, it uses a regular expression the bounded
    matcher cannot run, or checking one result against it would take more steps than the
    client allows for a result of that size.

    ``tool`` and ``server`` name the tool and its server; ``reason`` says what is wrong
    (server text in it is excerpted and escaped). A fault of the schema itself is found
    before the call is sent, so the call never reaches the server; a result too costly to
    check is refused after it. ``validate_output=False`` calls the tool unchecked.
    """

    def __init__(self, message: str, *, tool: str, server: str, reason: str) -> None:
        super().__init__(message)
        self.tool = tool
        self.server = server
        self.reason = reason


class CapabilityError(MCPError):
    """The server did not declare the capability the call needs."""


class CallbackError(MCPError):
    """A handler given to the client (sampling, elicitation, roots) raised while the client
    was answering the server's input request; the handler's exception is ``__cause__``.

    In the session era the server is answered -32603 instead, with a generic message
    ("the client's sampling handler failed"; the exception itself goes to the client's
    log, never to the server); the stateless era has no error answer for input requests,
    so the call fails here, and nothing of the exception is sent.
    """


class ToolError(MCPError):
    """A tool reported failure (a result with ``isError: true``) and the call was made
    with ``raise_on_error=True`` (or through a :class:`~mcp_sync.Toolbox` made with
    ``raise_errors=True``, which names the tool as the model knows it).

    ``result`` is the whole :class:`~mcp_sync.types.CallToolResult` and ``tool`` the
    tool's name; the message is the result's text, excerpted and made printable.

    It derives from :class:`MCPError` directly, not from :class:`ServerError`: the
    server answered the request (no JSON-RPC error, so no ``code``); it is the tool that
    failed, and says why in its result. ``except ServerError`` keeps meaning "the server
    refused the request". Picklable with its result (for process pools and task queues).
    """

    def __init__(self, tool: str, result: Any) -> None:
        self.tool = tool
        self.result = result
        text = getattr(result, "text", "") or "(no text content)"
        super().__init__(f"tool {excerpt(repr(tool), 120)} reported an error: "
                         f"{excerpt(text, 500)}")

    def __reduce__(self) -> Any:
        return (type(self), (self.tool, self.result))


class TaskError(MCPError):
    """A task (a ``tools/call`` the server runs as a task: MCP 2025-11-25, or the
    2026-07-28 tasks extension) ended without a result to return.

    ``task_id`` is the task's id; ``task`` the last :class:`~mcp_sync.types.Task` the
    client saw (``None`` when it saw none); ``error`` the :class:`ServerError` the server
    answered, when there was one (also ``__cause__``). Picklable with all three.
    """

    def __init__(self, message: str, *, task_id: str, task: Any = None,
                 error: Optional[BaseException] = None) -> None:
        super().__init__(message)
        self.task_id = task_id
        self.task = task
        self.error = error


class TaskFailed(TaskError):
    """The task ended ``failed`` and ``tasks/result`` answered with a JSON-RPC error
    (``error``; 2026-07-28: ``tasks/get`` inlined it), or gave nothing to return. A
    failed tool whose result has ``isError: true`` is a result instead, returned like a
    plain call's."""


class TaskCancelled(TaskError):
    """The task ended ``cancelled``: the server cancelled it, or a ``tasks/cancel`` from
    anyone did. (A caller's own ``future.cancel()`` raises ``CancelledError`` as usual.)"""


class TaskNotFound(TaskError):
    """The server does not know the task: the id is wrong, or the task expired (its
    ``ttl`` passed) and the server deleted it. The server's -32602 is ``error``."""


class InvalidToolCall(MCPError):
    """A model asked a :class:`~mcp_sync.Toolbox` for a tool call it cannot make: no tool
    has the name the model used, or the arguments are not a JSON object. Nothing was sent
    to a server.

    Raised by a toolbox made with ``raise_errors=True``; by default the model gets an
    error result saying the same. ``tool`` is the name the model used.

    A :class:`~mcp_sync.Manager` raises it too, for a call to a tool that the server's
    ``enabledTools`` or ``disabledTools`` hide (``tool`` is then ``server__tool``); nothing
    is sent to the server either.
    """

    def __init__(self, message: str, *, tool: str) -> None:
        super().__init__(message)
        self.tool = tool


class ToolChanged(MCPError):
    """The tool's definition (description, title, schemas, annotations) changed since
    the client pinned it, and the client's ``on_tool_change`` policy blocked the change:
    the tool is not listed, and a call to it is refused, before anything is sent, until
    the change is accepted (``Client.accept_tool_changes``,
    ``Manager.accept_tool_changes``, or ``mcp-sync tools --changes --accept``).

    ``tool`` and ``server`` name it; ``differences`` says what changed, in words (the
    server's text excerpted and escaped). A :class:`~mcp_sync.Toolbox` answers the model
    with an error result instead (without the differences: they are the server's words).
    """

    def __init__(self, message: str, *, tool: str, server: str,
                 differences: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.tool = tool
        self.server = server
        self.differences = tuple(differences)


class ClientNotConnected(MCPError):
    """The client is not connected: call ``connect()`` first, or it was closed."""


class AuthError(MCPError):
    """Authorization with the server failed."""


class HeaderMismatch(ServerError):
    """The server found the HTTP headers disagreeing with the body (-32020, 2026-07-28)."""


class MissingClientCapability(ServerError):
    """The call needs a client capability that was not declared (-32021, 2026-07-28).

    ``required_capabilities`` lists them, e.g. ``{"sampling": {}}``: pass the matching
    handler (``sampling_handler=``...) to the client to declare it.
    """

    @property
    def required_capabilities(self) -> Any:
        """The capabilities the server said the call needs (``data.requiredCapabilities``)."""
        return self.data.get("requiredCapabilities") if isinstance(self.data, dict) else None

    def __str__(self) -> str:
        required = self.required_capabilities
        if isinstance(required, dict) and required:
            return (f"{super().__str__()} (needs client capabilities: "
                    f"{', '.join(excerpt(name, 40) for name in required)})")
        return super().__str__()


class ProtocolVersionRejected(ServerError, UnsupportedProtocolVersion):
    """The server does not support the requested protocol version (-32022, 2026-07-28).

    ``supported`` lists the versions it does.
    """

    @property
    def supported(self) -> Any:
        """The protocol versions the server said it supports (``data.supported``)."""
        return self.data.get("supported") if isinstance(self.data, dict) else None

    def __str__(self) -> str:
        if isinstance(self.supported, list):
            versions = ", ".join(excerpt(v, 20) for v in self.supported[:10])
            return f"{super().__str__()} (server supports: {versions})"
        return super().__str__()


class URLElicitationRequired(ServerError):
    """The request needs the user to complete URL-mode elicitations first (-32042).

    ``elicitations`` lists them (``types.ElicitRequestURLParams``: ``url``, its ``host``,
    ``message``, ``elicitation_id``): show each URL and its host to the user, wait for
    ``notifications/elicitation/complete`` (the client's ``on_elicitation_complete=``)
    and retry. The URLs come from the server: present them as links to vet, never open
    them unasked. Only URLs a user may be asked to open are listed (absolute ``https``,
    ``http`` only to this machine, no user info: see ``ElicitRequestURLParams``); the
    others are left out, with a warning logged, and the message names none of them.
    """

    def _raw_elicitations(self) -> List[Any]:
        raw = self.data.get("elicitations") if isinstance(self.data, dict) else None
        return raw if isinstance(raw, list) else []

    @property
    def elicitations(self) -> List[Any]:
        """The valid URL elicitations in ``data.elicitations``: malformed ones, and those
        whose URL no one may be asked to open, skipped (logged)."""
        from ._protocol.links import link_refusal
        from .types import ElicitRequestURLParams

        parsed: List[Any] = []
        for item in self._raw_elicitations():
            try:
                elicitation = ElicitRequestURLParams.model_validate(item)
            except ValueError:  # pydantic's ValidationError
                log.warning("skipping a malformed URL elicitation in a -32042 error: %s",
                            excerpt(repr(item), 200))
                continue
            refusal = link_refusal(elicitation.url)
            if refusal is not None:
                log.warning("skipping a URL elicitation in a -32042 error: the client "
                            "refuses the URL %s: %s", excerpt(repr(elicitation.url), 300),
                            refusal)
                continue
            parsed.append(elicitation)
        return parsed

    def __str__(self) -> str:
        from ._protocol.links import link_refusal

        urls = [excerpt(item["url"], 200) for item in self._raw_elicitations()[:5]
                if isinstance(item, dict) and isinstance(item.get("url"), str)
                and link_refusal(item["url"]) is None]
        if urls:
            return f"{super().__str__()} (open: {', '.join(urls)})"
        return super().__str__()

    def __reduce__(self) -> Any:
        # args hold the formatted message, not the constructor's arguments: rebuild from
        # those (an error may cross a process pool or a task queue), then restore the rest.
        return (_rebuild_server_error,
                (type(self), self.code, self.message, self.data, self.method), self.__dict__)


def _rebuild_server_error(cls: Any, code: int, message: str, data: Any,
                          method: Optional[str]) -> Any:
    """Unpickle a :class:`ServerError` subclass from its constructor's arguments."""
    return cls(code, message, data, method=method)


_ERRORS_BY_CODE = {
    METHOD_NOT_FOUND: MethodNotFound,
    HEADER_MISMATCH: HeaderMismatch,
    MISSING_REQUIRED_CLIENT_CAPABILITY: MissingClientCapability,
    UNSUPPORTED_PROTOCOL_VERSION: ProtocolVersionRejected,
    URL_ELICITATION_REQUIRED: URLElicitationRequired,
}


def server_error(
    code: int, message: str, data: Any = None, *, method: Optional[str] = None
) -> ServerError:
    """The most specific :class:`ServerError` subclass for a JSON-RPC error code."""
    cls = _ERRORS_BY_CODE.get(code, ServerError)
    return cls(code, message, data, method=method)
