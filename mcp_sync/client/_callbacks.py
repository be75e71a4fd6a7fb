"""The server calling back: its requests answered by the user's handlers, its
notifications routed.

A server asks the client things (``roots/list``, ``sampling/createMessage``,
``elicitation/create``) as JSON-RPC requests in the session era and as the input
requests of an ``input_required`` result in the stateless era; it tells it things with
notifications (log messages, ``*/list_changed``, subscription acknowledgements, and what
belongs to an extension, task statuses included). :class:`ServerCallbacks` answers and
routes them all, for one client: its connection holds one, made with the connection
itself (of which it uses what :class:`CallbacksConnection` names), and registers its
methods as each session's handlers. This module imports no client.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Protocol, Tuple

from .._parsing import dump, parse
from .._protocol import INTERNAL_ERROR, INVALID_PARAMS, META_SUBSCRIPTION_ID
from .._rpc.session import RpcSession
from ..context import RequestContext, serving
from ..exceptions import (
    CallbackError,
    CapabilityError,
    MCPError,
    ProtocolError,
    ServerError,
    excerpt,
)
from ._settings import Handlers

if TYPE_CHECKING:
    from ._tasks.executor import TaskExecutor

__all__ = ["LOG_LEVELS", "CallbacksConnection", "ServerCallbacks"]

# The client's logger: these messages were always the client's.
log = logging.getLogger("mcp_sync.client")

# MCP logging levels (RFC 5424 names) to Python logging levels.
LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO + 5,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL + 5,
    "emergency": logging.CRITICAL + 10,
}
# Python names none of the levels MCP adds: name them (unless the application did), so
# that records show "NOTICE", "ALERT" and "EMERGENCY", not "Level 25".
for _mcp_level in ("notice", "alert", "emergency"):
    if logging.getLevelName(LOG_LEVELS[_mcp_level]) == f"Level {LOG_LEVELS[_mcp_level]}":
        logging.addLevelName(LOG_LEVELS[_mcp_level], _mcp_level.upper())

# The lists each */list_changed notification makes stale.
_LISTED = {
    "notifications/tools/list_changed": ("tools/list",),
    "notifications/prompts/list_changed": ("prompts/list",),
    "notifications/resources/list_changed": ("resources/list", "resources/templates/list"),
}


class ExtensionNotifications(Protocol):
    """The client's extensions, handed each notification first."""

    def notified(self, method: str, params: Optional[Dict[str, Any]]) -> bool:
        """True if an extension claimed it."""


class Acknowledged(Protocol):
    """The client's subscriptions, told of ``notifications/subscriptions/acknowledged``."""

    def acknowledged(self, subscription_id: Any, params: Dict[str, Any]) -> None: ...


class ListsChanged(Protocol):
    """The client's list cache, told of ``*/list_changed``."""

    def lists_changed(self, listed: Tuple[str, ...]) -> None: ...


class Notified(Protocol):
    """The client's response cache, told of the notifications that make results stale."""

    def notified(self, method: str, params: Optional[Dict[str, Any]]) -> None: ...


class CallbacksConnection(Protocol):
    """What answering and routing use of the client's connection (read at each use)."""

    @property
    def name(self) -> str: ...

    @property
    def handlers(self) -> Handlers:
        """The user's handlers, read at each request (they may be set after connecting)."""

    @property
    def session(self) -> Optional[RpcSession]:
        """The current session (its observer traces the stateless era's input requests)."""

    @property
    def executor(self) -> Optional[TaskExecutor]:
        """The current session's TaskExecutor (``handler_tasks``), or None."""

    @property
    def server_log(self) -> logging.Logger:
        """The logger of the server's log messages (``mcp_sync.server.<name>``)."""

    @property
    def extensions(self) -> ExtensionNotifications: ...

    @property
    def subscriptions(self) -> Acknowledged: ...

    @property
    def listings(self) -> ListsChanged: ...

    @property
    def caching(self) -> Notified: ...

    def stateless(self) -> bool: ...


class ServerCallbacks:
    """Answers the server's requests with the user's handlers (or the spec's refusal)
    and routes its notifications; see the module docstring."""

    def __init__(self, connection: CallbacksConnection) -> None:
        self._connection = connection

    # -- requests, session era -----------------------------------------------------------

    def request_handlers(self, executor: Optional[TaskExecutor],
                         ) -> Dict[str, Callable[[Optional[Dict[str, Any]]], Any]]:
        """The session's request handlers: what the client declared it answers."""
        handlers: Dict[str, Callable[[Optional[Dict[str, Any]]], Any]] = {}
        if executor is not None:
            handlers["tasks/get"] = executor.get
            handlers["tasks/result"] = executor.result
            handlers["tasks/list"] = executor.list
            handlers["tasks/cancel"] = executor.cancel
        settings = self._connection.handlers
        if settings.roots is not None:
            handlers["roots/list"] = self.answer_roots
        if settings.sampling_handler is not None:
            handlers["sampling/createMessage"] = self.answer_sampling
        if settings.elicitation_handler is not None:
            handlers["elicitation/create"] = self.answer_elicitation
        return handlers

    def answer_roots(self, params: Optional[Dict[str, Any]]) -> Dict[str, Any]:
        given = self._connection.handlers.roots
        roots = given() if callable(given) else given
        return {"roots": [dump(root) for root in roots or ()]}

    def answer_sampling(self, params: Optional[Dict[str, Any]]) -> Any:
        from .. import types

        handler = self._connection.handlers.sampling_handler
        assert handler is not None
        return self._answer(handler, params or {}, self._sampling_refusal,
                            types.CreateMessageRequestParams2026
                            if self._connection.stateless() else types.CreateMessageRequestParams,
                            "sampling request", "sampling/createMessage")

    def answer_elicitation(self, params: Optional[Dict[str, Any]]) -> Any:
        from .. import types

        handler = self._connection.handlers.elicitation_handler
        assert handler is not None
        return self._answer(handler, params or {}, self._elicitation_refusal,
                            types.ElicitRequestParams2026
                            if self._connection.stateless() else types.ElicitRequestParams,
                            "elicitation request", "elicitation/create")

    def _answer(self, handler: Callable[[Any], Any], params: Dict[str, Any],
                refusal_of: Callable[[Dict[str, Any]], Optional[str]], model: Any,
                what: str, method: str) -> Any:
        """A handler's answer to a server request: refused (-32602) when the client did
        not declare what it needs, else its params parsed into ``model`` for it."""
        connection = self._connection
        refusal = refusal_of(params)
        if refusal is not None:
            log.warning("refusing %s from %s: %s", method, connection.name, refusal)
            raise ServerError(INVALID_PARAMS, refusal)
        parsed = self._parse_request(model, params, what, method)
        executor = connection.executor
        if (executor is not None and isinstance(params.get("task"), dict)
                and method in connection.handlers.task_methods
                and not connection.stateless()):
            # Task-augmented: a CreateTaskResult now, the handler on the pool.
            return executor.create(method, params, lambda: dump(handler(parsed)))
        return dump(handler(parsed))

    def _parse_request(self, model: Any, params: Any, what: str, method: str) -> Any:
        """A server request's params as ``model``.

        Raises:
            ServerError: (session era) they do not parse: the server is answered -32603
                with what was wrong (its own data, excerpted). Only what the user's
                handler raises is hidden from the server.
            ProtocolError: (stateless era) they do not parse; the call fails locally.
        """
        try:
            return parse(model, params, what)
        except ProtocolError as exc:
            if self._connection.stateless():
                raise
            log.warning("the handler for %s from %s refuses it: %s", method,
                        self._connection.name, exc)
            raise ServerError(INTERNAL_ERROR, str(exc)) from None

    def _sampling_refusal(self, params: Dict[str, Any]) -> Optional[str]:
        """Why a sampling request must be refused unanswered (MCP: tools need
        ``sampling.tools``), or None."""
        if "tools" in self._connection.handlers.sampling_features:
            return None
        if params.get("tools") is not None or params.get("toolChoice") is not None:
            return ("sampling with tools or toolChoice needs the sampling.tools capability, "
                    "which this client did not declare")
        return None

    def _elicitation_refusal(self, params: Any) -> Optional[str]:
        """Why an elicitation request must be refused (a mode not declared, a URL no one
        may be asked to open: ``_protocol/links.py``), or None."""
        mode = _elicitation_mode(params)
        modes = self._connection.handlers.elicitation_modes
        if mode not in modes:
            return (f"{mode}-mode elicitation is not supported by this client (it "
                    f"declared {', '.join(modes)})")
        url = params.get("url") if mode == "url" else None
        if isinstance(url, str):  # another type fails to parse, as any malformed params
            from .._protocol.links import link_refusal

            reason = link_refusal(url)
            if reason is not None:
                return f"the client refuses the URL {excerpt(repr(url), 300)}: {reason}"
        return None

    # -- input requests, stateless era ---------------------------------------------------

    def fulfil_observed(self, request: Any, key: str, cancelled: threading.Event) -> Any:
        """:meth:`fulfil`, with a handler's failure made a ``CallbackError``, told to the
        session's observer (tracing) like a request from the server in the session era:
        the handler runs in its context."""
        session = self._connection.session
        method = request.get("method") if isinstance(request, dict) else None
        token = (session.observe_serving(method, request.get("params"), key)
                 if session is not None and isinstance(method, str) else None)
        if token is None:
            return self._fulfil_safely(request, key, cancelled)
        try:
            answer = self._fulfil_safely(request, key, cancelled)
        except BaseException as exc:
            RpcSession.observe_served(token, exc)
            raise
        RpcSession.observe_served(token, None)
        return answer

    def _fulfil_safely(self, request: Any, key: str, cancelled: threading.Event) -> Any:
        try:
            return self.fulfil(request, key, cancelled)
        except MCPError:
            raise
        except Exception as exc:
            method = request.get("method") if isinstance(request, dict) else None
            raise CallbackError(
                f"the handler answering {excerpt(method, 100)} for {self._connection.name} "
                f"raised {excerpt(repr(exc), 500)}"
            ) from exc

    def fulfil(self, request: Any, key: str, cancelled: threading.Event) -> Any:
        """Answer one input request with the user's handler (or the spec's refusal).

        The stateless era has no error answer to an input request: what the session era
        refuses with -32602 is declined (elicitation) or fails the call (sampling).
        """
        connection = self._connection
        settings, name = connection.handlers, connection.name
        if not isinstance(request, dict) or not isinstance(request.get("method"), str):
            raise ProtocolError(
                f"malformed input request from {name}: {excerpt(repr(request), 200)}")
        method, params = request["method"], request.get("params")
        session = connection.session
        server_info = session.server_info() if session is not None else None
        context = RequestContext(method, key, cancelled=cancelled, server_name=name,
                                 server_info=server_info)
        if method == "elicitation/create":
            if settings.elicitation_handler is None:
                log.warning("%s asked for elicitation but no elicitation_handler is set; "
                            "declining", name)
                return {"action": "decline"}
            refusal = self._elicitation_refusal(params)
            if refusal is not None:
                log.warning("%s asked for elicitation; declining: %s", name, refusal)
                return {"action": "decline"}
            with serving(context):
                return self.answer_elicitation(params)
        if method == "sampling/createMessage":
            if settings.sampling_handler is None:
                raise CapabilityError(
                    f"{name} asked for sampling/createMessage, but this client has no "
                    "sampling_handler (and did not declare the sampling capability)"
                )
            refusal = self._sampling_refusal(params if isinstance(params, dict) else {})
            if refusal is not None:
                raise CapabilityError(f"{name} asked for sampling/createMessage; {refusal}")
            with serving(context):
                return self.answer_sampling(params)
        if method == "roots/list":
            if settings.roots is None:
                log.warning("%s asked for roots but none are configured; answering none",
                            name)
                return {"roots": []}
            with serving(context):
                return self.answer_roots(params)
        raise ProtocolError(f"{name} sent an input request of unknown method "
                            f"{excerpt(repr(method), 100)}")

    # -- notifications -------------------------------------------------------------------

    def on_notification(self, method: str, params: Optional[Dict[str, Any]]) -> None:
        """Route a notification from the server (the session's callback thread)."""
        connection = self._connection
        if connection.extensions.notified(method, params):
            pass  # an extension's (the tasks extension's task statuses, say)
        elif method == "notifications/subscriptions/acknowledged":
            meta = (params or {}).get("_meta") or {}
            connection.subscriptions.acknowledged(meta.get(META_SUBSCRIPTION_ID), params or {})
        elif method == "notifications/message":
            self._on_log_message(params or {})
        elif method == "notifications/elicitation/complete":
            self._on_elicitation_complete(params or {})
        elif method.endswith("/list_changed"):
            connection.listings.lists_changed(_LISTED.get(method, ()))
            connection.caching.notified(method, params)
        elif method == "notifications/resources/updated":
            connection.caching.notified(method, params)
        handler = connection.handlers.notification_handler
        if handler is not None:
            try:
                handler(method, params)
            except Exception:
                log.exception("notification_handler raised for %s from %s",
                              excerpt(method, 100), connection.name)

    def _on_elicitation_complete(self, params: Dict[str, Any]) -> None:
        callback = self._connection.handlers.on_elicitation_complete
        if callback is None:
            return
        from .. import types

        try:
            parsed = parse(types.ElicitationCompleteNotificationParams, params,
                           "elicitation/complete notification")
        except ProtocolError as exc:
            log.warning("%s: skipping a malformed notifications/elicitation/complete: %s",
                        self._connection.name, excerpt(str(exc), 300))
            return
        try:
            callback(parsed)
        except Exception:
            log.exception("on_elicitation_complete raised for a notification from %s",
                          self._connection.name)

    def _on_log_message(self, params: Dict[str, Any]) -> None:
        handler = self._connection.handlers.logging_handler
        if handler is not None:
            from .. import types

            try:
                parsed = parse(types.LoggingMessageNotificationParams, params, "log message")
                handler(parsed)
            except Exception:
                log.exception("logging_handler raised for a message from %s",
                              self._connection.name)
            return
        level = LOG_LEVELS.get(str(params.get("level")), logging.INFO)
        logger = self._connection.server_log
        if params.get("logger"):
            logger = logger.getChild(excerpt(params["logger"], 100))
        if logger.isEnabledFor(level):  # excerpt() only what is logged
            logger.log(level, "%s", excerpt(params.get("data"), 2000))


def _elicitation_mode(params: Any) -> str:
    """An elicitation request's mode: ``mode`` is optional and means form when absent."""
    mode = params.get("mode") if isinstance(params, dict) else None
    return "url" if mode == "url" else "form" if mode in (None, "form") else excerpt(mode, 40)
