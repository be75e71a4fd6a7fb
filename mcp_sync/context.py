"""What a handler answering the server can know and do: :class:`RequestContext`.

A sampling, elicitation or roots handler is called with the request's params only
(``handler(params)``; a ``roots`` callable with nothing). The rest of the request, the
server that sent it, its id, its progress token and its cancellation, is reached from
inside the handler with :func:`request_context`, on the thread that runs the handler::

    def sampling(params):
        ctx = mcp_sync.request_context()
        show_user(f"{ctx.server_name} asks the model")  # which server asks
        ctx.report_progress(0, 2, "asking the model")
        ...
        if ctx.cancelled.is_set():
            ...  # the server no longer wants the answer; it will not be sent

Handlers are shared: one handler given to a :class:`~mcp_sync.Manager` answers all of its
servers, and the params do not say which server asks: ``server_name`` and
``server_info`` do, in both eras, for every request a server sends to a handler (MCP
requires a client to show clearly which server is requesting information).

What applies depends on the protocol era:

* **session era** (2024-11-05 ... 2025-11-25): ``request_id`` is the JSON-RPC id of the
  server's request; ``report_progress`` sends ``notifications/progress`` when the server
  gave ``params._meta.progressToken``; ``cancelled`` is set when the server sends
  ``notifications/cancelled`` for the request, or the connection closes. A cancelled
  request is never answered, whatever the handler returns or raises.
* **stateless era** (2026-07-28): the server asks inside an ``input_required`` result.
  ``request_id`` is the key of the input request in ``inputRequests`` (the answer goes
  back under it); there is no progress token, so ``report_progress`` sends nothing and
  returns False; ``cancelled`` is set when the ``call_tool_future()`` the input is for is
  cancelled (a blocking call runs the handler on the caller's own thread: never set).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, Mapping, Optional, Union

from .exceptions import MCPError

if TYPE_CHECKING:
    from .types import Implementation

__all__ = ["RequestContext", "request_context"]

log = logging.getLogger(__name__)

#: A server-assigned request id or progress token (JSON-RPC: a string or an integer).
RequestId = Union[str, int]

_current: contextvars.ContextVar[Optional[RequestContext]] = contextvars.ContextVar(
    "mcp_sync_request_context", default=None
)


def valid_id(value: Any) -> bool:
    """A JSON-RPC id or progress token: a string or an integer (not a bool)."""
    return isinstance(value, (str, int)) and not isinstance(value, bool)


class RequestContext:
    """One request from the server, as its handler sees it. Can be shared between threads.

    Attributes:
        method: ``"sampling/createMessage"``, ``"elicitation/create"``, ``"roots/list"``...
        server_name: the server that sent the request, by the client's name for it: its
            key in the :class:`~mcp_sync.Manager`'s configuration, else the client's
            ``name`` (given, or derived from the target and then the server's own
            ``serverInfo.name``). The names the application chose: show this one.
        request_id: the server's id for the request (see the module docstring per era).
        progress_token: ``params._meta.progressToken``, or ``None`` when the server
            asked for no progress.
        cancelled: a :class:`threading.Event` the client sets when the server cancels
            the request (or the connection closes); check it, or ``wait()`` on it.
        cancel_reason: the ``reason`` the server gave with its cancellation, if any.
    """

    def __init__(
        self,
        method: str,
        request_id: Optional[RequestId],
        *,
        progress_token: Optional[RequestId] = None,
        send_progress: Optional[Callable[[Dict[str, Any]], None]] = None,
        cancelled: Optional[threading.Event] = None,
        server_name: str = "",
        server_info: Optional[Mapping[str, Any]] = None,
    ) -> None:
        self.method = method
        self.server_name = server_name
        self.request_id = request_id
        self.progress_token = progress_token if valid_id(progress_token) else None
        self.cancelled = cancelled if cancelled is not None else threading.Event()
        self.cancel_reason: Optional[str] = None
        self._send_progress = send_progress
        # The serverInfo as the server sent it; parsed at the first read of server_info.
        self._server_info_sent = server_info
        self._server_info: Optional[Implementation] = None

    def __repr__(self) -> str:
        state = " cancelled" if self.cancelled.is_set() else ""
        return (f"<RequestContext {self.method} id={self.request_id!r} "
                f"from {self.server_name!r}{state}>")

    @property
    def server_info(self) -> Optional[Implementation]:
        """The requesting server's ``serverInfo`` (``types.Implementation``: ``name``,
        ``version``...) from the handshake (``initialize``) or ``server/discover``, or
        None for a request sent before the handshake ended. Its name is the server's
        word about itself, unchecked: :attr:`server_name` is the application's.

        Raises:
            ProtocolError: the server's ``serverInfo`` is not a valid Implementation
                (as :attr:`Client.server_info <mcp_sync.Client.server_info>` raises).
        """
        if self._server_info is None and self._server_info_sent is not None:
            from . import types
            from ._parsing import parse

            self._server_info = parse(types.Implementation, dict(self._server_info_sent),
                                      "serverInfo")
        return self._server_info

    def cancel(self, reason: Optional[str] = None) -> None:
        """Mark the request cancelled (the client calls this; handlers only read it)."""
        if reason is not None and self.cancel_reason is None:
            self.cancel_reason = reason
        self.cancelled.set()

    def report_progress(
        self, progress: float, total: Optional[float] = None, message: Optional[str] = None
    ) -> bool:
        """Tell the server how far the handler got (``notifications/progress``).

        ``progress`` should grow with every call. Returns True when the notification was
        sent; False when the server gave no progress token (or the era has none), or the
        connection is gone. Never raises for either: progress is optional in MCP.
        """
        if self.progress_token is None or self._send_progress is None:
            return False
        params: Dict[str, Any] = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        try:
            self._send_progress(params)
        except MCPError as exc:
            log.debug("could not report progress for %s id=%r: %r", self.method,
                      self.request_id, exc)
            return False
        return True


def request_context() -> RequestContext:
    """The :class:`RequestContext` of the server request the calling thread is answering.

    Call it from a sampling or elicitation handler, or a ``roots`` callable, on the thread
    the client called it on (hand the object itself to any thread the handler starts).

    Raises:
        LookupError: the calling thread is not running a handler for a server request.
    """
    context = _current.get()
    if context is None:
        raise LookupError(
            "mcp_sync.request_context() is only available inside a handler answering a "
            "server request (sampling, elicitation, roots)"
        )
    return context


@contextlib.contextmanager
def serving(context: RequestContext) -> Iterator[RequestContext]:
    """Make ``context`` what :func:`request_context` returns on this thread, for a while."""
    token = _current.set(context)
    try:
        yield context
    finally:
        _current.reset(token)


def task_context(method: str, task_id: str,
                 outer: Optional[RequestContext]) -> RequestContext:
    """The context of a task the client runs for the server (``handler_tasks``), made
    while answering the request that created it (``outer``: that request's context, if
    any): the task's handler reports progress with the request's progress token."""
    if outer is None:
        return RequestContext(method, task_id)
    return RequestContext(method, task_id, progress_token=outer.progress_token,
                          send_progress=outer._send_progress,
                          server_name=outer.server_name,
                          server_info=outer._server_info_sent)
