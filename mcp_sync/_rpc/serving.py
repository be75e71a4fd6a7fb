"""Answering the server's requests: :class:`ServerRequests` (the user's handlers on the
session's handler pool, one :class:`~mcp_sync.context.RequestContext` each) and
:class:`Replies` (the reply thread, for the answers that run no user code).

Threads:

* ``mcp-sync-handler-<name>-<n>``: the session's handler pool (``_util/pool.py``; the
  session makes it, stops it and joins it in ``close()``). A handler runs there, not on
  the dispatch thread, because it may call the client again, whose response only the
  dispatch thread can deliver.
* ``mcp-sync-reply-<name>``, started with the first answer it sends: ``ping``, -32601
  for a method with no handler, "busy" for a request beyond the bound, so that they never
  wait behind busy handlers, and the dispatch thread still never writes to the transport.
  It also closes the transport when the session fails it (a flood of notifications that
  may not be lost). A daemon, like every thread of the library (``_util/threads.py``);
  it ends at :data:`~.queues.STOP` from :meth:`Replies.stop`, which ``close()`` calls
  before joining it with a bound.

A server request is registered (:attr:`ServerRequests.serving`) by the dispatch thread
before its handler is queued, so a ``notifications/cancelled`` the server sends after it,
which the same thread routes in wire order, always finds it: the handler's
:class:`RequestContext` is marked cancelled, and a cancelled request is never answered. A
handler may return a :class:`~concurrent.futures.Future` to answer later (the client's
``tasks/result`` of a task still running): the request stays registered until the future
is settled, and the thread that settles it sends the answer.

Bounds (docs/architecture.md, "Queues and their bounds"): at most ``max_server_requests``
requests wait for or run in a handler, beyond which a request is answered at once with an
error (-32603, "busy"); at most ``max_replies`` answers wait for the reply thread, and
while they do the dispatch thread waits for room (still expiring deadlines), so the inbox,
then the server, wait behind it.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Union

from .._protocol import INTERNAL_ERROR, METHOD_NOT_FOUND
from .._util.pool import ThreadPool
from .._util.threads import start_thread
from ..context import RequestContext, serving, valid_id
from ..exceptions import MCPError, RequestCancelled, ServerError, TransportError, excerpt
from .link import IDLE_WAIT
from .observer import ObservedSession, RequestObserver, observe_served, observe_serving
from .queues import STOP

if TYPE_CHECKING:
    from .link import Link
    from .outbound import Outbound

__all__ = ["Replies", "RequestHandler", "ServerRequests", "answer_error", "to_wire"]

log = logging.getLogger(__name__)

#: A server-request handler: takes the request's params, returns the result (a dict or a
#: pydantic model). Raising ``ServerError`` sends that error; any other exception is logged
#: and the server gets -32603 saying only which handler failed.
#: It runs with the request's :class:`RequestContext` current (``request_context()``).
RequestHandler = Callable[[Optional[Dict[str, Any]]], Any]

_ABORT = object()  # the reply thread closes the transport (the session failed it)
# What the server is told when a handler raises: the exception's text stays in the
# client's log (it may hold a key, a path, a stack).
_HANDLER_FAILED = {
    "sampling/createMessage": "the client's sampling handler failed",
    "elicitation/create": "the client's elicitation handler failed",
    "roots/list": "the client's roots handler failed",
}


def to_wire(value: Any) -> Any:
    """A result as JSON data: pydantic models are dumped by alias, None becomes {}."""
    if value is None:
        return {}
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        return dump(by_alias=True, exclude_none=True, mode="json")
    return value


def answer_error(response: Dict[str, Any]) -> Optional[ServerError]:
    """The error an answer to the server carries, as a :class:`ServerError`, or None."""
    error = response.get("error")
    if error is None:
        return None
    return ServerError(error["code"], error["message"])


class Replies:
    """The reply thread and the answers waiting for it (at most ``limit``).

    ``_lock`` guards ``_thread`` and ``_closed``: starting the thread against
    :meth:`stop` and :meth:`rename`. ``_warned`` is the reply thread's own.
    """

    def __init__(self, link: Link, outbound: Outbound, limit: int, close_timeout: float) -> None:
        self._link = link
        self._outbound = outbound
        self._close_timeout = close_timeout
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=limit)
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()
        self._closed = False  # stop() was called: no thread starts any more
        self._warned = False

    def reply(self, response: Dict[str, Any]) -> None:
        """Queue an answer that runs no user code (dispatch thread).

        While ``limit`` wait, this waits for the reply thread, still expiring deadlines,
        and the inbox fills behind it: the server is slowed to the pace at which it
        takes the answers it asked for.
        """
        link = self._link
        if link.closed_error is not None:
            return
        if self._thread is None and not self._start():
            return
        table = self._outbound.table
        while True:
            next_deadline = table.next_deadline()
            wait = IDLE_WAIT
            if next_deadline is not None:
                wait = min(wait, max(0.0, next_deadline - time.monotonic()))
            try:
                self._queue.put(response, timeout=wait)
                return
            except queue.Full:
                if link.stopped or link.closed_error is not None:
                    return
                self._outbound.expire_due()

    def abort(self) -> None:
        """Close the transport on the reply thread (the session failed it): closing may
        take seconds (a stdio child is given ``close_timeout`` to exit), and the
        dispatch thread, which calls this, must go on routing."""
        if not self._start():
            return
        try:
            self._queue.put(_ABORT, timeout=self._close_timeout)
        except queue.Full:
            log.warning("could not close the transport of %s: its reply thread is stuck",
                        self._link.name)

    def stop(self) -> Optional[threading.Thread]:
        """Start no thread any more and tell the running one to end; returns it, for the
        caller to join."""
        with self._lock:
            self._closed = True
            thread = self._thread
        try:
            self._queue.put_nowait(STOP)
        except queue.Full:
            pass  # the reply thread sees _closed after its current send
        return thread

    def rename(self, name: str) -> None:
        with self._lock:  # the thread is started under it, named after the link's name
            if self._thread is not None:
                self._thread.name = f"mcp-sync-reply-{name}"

    def _start(self) -> bool:
        """Start the reply thread unless it runs already; False once stopping."""
        with self._lock:
            if self._closed:
                return False
            if self._thread is None:
                # A daemon like the others; stop() ends it and close() joins it.
                self._thread = start_thread(self._loop, f"mcp-sync-reply-{self._link.name}")
            return True

    def _loop(self) -> None:
        replies = self._queue
        link = self._link
        while not self._closed:
            try:
                item = replies.get(timeout=IDLE_WAIT)
            except queue.Empty:
                continue
            if item is STOP:
                return
            if item is _ABORT:
                try:
                    link.transport.close()
                except Exception:
                    log.exception("closing the transport of %s failed", link.name)
                continue
            try:
                link.transport.send(item)
            except MCPError as exc:
                # Once at INFO: a server that stops reading would otherwise get a line
                # per answer in the application's log.
                level = logging.DEBUG if self._warned else logging.INFO
                self._warned = True
                log.log(level, "could not answer %s (id=%s): %r", link.name,
                        excerpt(repr(item.get("id")), 80), exc)
            except Exception:
                # Never let this thread die: the dispatch thread would wait for it.
                log.exception("sending an answer to %s failed", link.name)


class ServerRequests:
    """The server's requests: registered and routed by the dispatch thread, answered by
    a user handler on the handler pool, or at once on the reply thread.

    ``_lock`` guards ``serving`` (added by the dispatch thread, removed by the thread
    that answers). ``refused`` and ``_warned_refusal`` are the dispatch thread's.

    Args:
        link: the transport and its state.
        pool: the session's handler pool.
        replies: the reply thread.
        outbound: sends a handler's progress (``RequestContext.report_progress``).
        session: the :class:`~.session.RpcSession` the observer is told of.
        observer: told of every request answered (or None).
        handlers: the user's handlers by method (``ping`` is always answered, other
            methods with none get -32601).
        limit: ``max_server_requests``.
    """

    def __init__(self, link: Link, pool: ThreadPool, replies: Replies, outbound: Outbound,
                 session: ObservedSession, *, observer: Optional[RequestObserver],
                 handlers: Dict[str, RequestHandler], limit: int) -> None:
        self._link = link
        self._pool = pool
        self._replies = replies
        self._outbound = outbound
        self._session = session
        self._observer = observer
        self.handlers = handlers
        self.limit = limit
        #: The server's requests being answered, by their id.
        self.serving: Dict[Any, RequestContext] = {}
        self._lock = threading.Lock()
        #: Requests answered with "busy" because ``limit`` were waiting.
        self.refused = 0
        self._warned_refusal = False

    # -- the dispatch thread -------------------------------------------------------------

    def route(self, message: Dict[str, Any]) -> None:
        """A server request: answered on the reply thread when no user code is needed,
        else registered and queued for a handler thread, unless too many wait already."""
        method, request_id = message["method"], message["id"]
        handler = self.handlers.get(method)
        if handler is None:
            if method == "ping":
                self._reply_observed(message, {"jsonrpc": "2.0", "id": request_id,
                                               "result": {}})
            else:
                self._reply_observed(message, {"jsonrpc": "2.0", "id": request_id, "error": {
                    "code": METHOD_NOT_FOUND,
                    "message": f"Method not found: {excerpt(method, 100)}"}})
            return
        with self._lock:
            busy = len(self.serving) >= self.limit
        if busy:
            self.refused += 1
            if not self._warned_refusal:
                self._warned_refusal = True
                log.warning("mcp-sync %s: %d requests from the server are waiting for a "
                            "handler already; refusing more as busy (counted in "
                            "RpcSession.refused_requests)", self._link.name, self.limit)
            self._reply_observed(message, {"jsonrpc": "2.0", "id": request_id, "error": {
                "code": INTERNAL_ERROR,
                "message": "the client is busy: too many requests from this server are "
                           "waiting for its handlers"}})
            return
        context = self._context(message)
        with self._lock:
            self.serving[context.request_id] = context
        if not self._pool.submit(self.answer, message, context):
            with self._lock:  # closing: nothing will answer it
                self.serving.pop(context.request_id, None)

    def _reply_observed(self, request: Dict[str, Any], response: Dict[str, Any]) -> None:
        """Queue for the reply thread an answer to a server request that no handler
        answers, observed."""
        token = observe_serving(self._observer, self._session, request["method"],
                                request.get("params"), request["id"])
        self._replies.reply(response)
        if token is not None:
            observe_served(token, answer_error(response))

    def _context(self, message: Dict[str, Any]) -> RequestContext:
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        link = self._link
        return RequestContext(
            message["method"], message["id"],
            progress_token=meta.get("progressToken") if isinstance(meta, dict) else None,
            send_progress=self._outbound.send_progress,
            server_name=link.name, server_info=link.server_info(),
        )

    def cancelled(self, params: Dict[str, Any]) -> None:
        """The server cancelled one of its requests: mark its context (dispatch thread)."""
        request_id = params.get("requestId")
        if not valid_id(request_id):
            return  # a dict or list would not even hash
        with self._lock:
            context = self.serving.get(request_id)
        if context is None:
            log.debug("%s cancelled id=%r, which is not being answered", self._link.name,
                      request_id)
            return
        reason = params.get("reason")
        context.cancel(reason if isinstance(reason, str) else None)

    def cancel_all(self, reason: str) -> None:
        """Mark every request being answered cancelled (no answer can reach the server
        any more): running handlers may stop early."""
        with self._lock:
            serving_now = list(self.serving.values())
        for context in serving_now:
            context.cancel(reason)

    # -- the handler threads -------------------------------------------------------------

    def answer(self, message: Dict[str, Any], context: RequestContext) -> None:
        """Run the request's handler and send its answer (a handler thread)."""
        token = observe_serving(self._observer, self._session, message["method"],
                                message.get("params"), message["id"])
        error: Optional[BaseException] = None
        deferred = False
        try:
            response = self._answer_unless_cancelled(message, context)
            if isinstance(response, Future):
                # Answered later, by whichever thread settles it (_answer_later). The
                # observer hears of it now, on this thread, as it must (its context is
                # this thread's): the request was taken.
                deferred = True
                if token is not None:
                    observe_served(token, None)
                response.add_done_callback(
                    lambda settled: self._answer_later(message, context, settled))
                return
            if token is not None:
                error = (answer_error(response) if response is not None else RequestCancelled(
                    f"{excerpt(message['method'], 100)} (id={context.request_id}) cancelled"))
        except BaseException as exc:
            error = exc
            raise
        finally:
            if not deferred:
                self._served(context, token, error)

    def _served(self, context: RequestContext, token: Any,
                error: Optional[BaseException]) -> None:
        """A server request is answered (or never will be): tell the observer, forget it."""
        if token is not None:
            observe_served(token, error)
        with self._lock:
            if self.serving.get(context.request_id) is context:
                del self.serving[context.request_id]

    def _answer_later(self, message: Dict[str, Any], context: RequestContext,
                      settled: Future[Any]) -> None:
        """Send the answer a handler deferred (it returned a Future), once it is settled;
        on the thread that settled it. A cancelled future, or a request the server
        cancelled (or the closing link did) meanwhile, is not answered."""
        link = self._link
        try:
            response: Dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
            if settled.cancelled():
                return
            failure = settled.exception()
            if failure is None:
                response["result"] = to_wire(settled.result())
            elif isinstance(failure, ServerError):
                response["error"] = {"code": failure.code, "message": failure.message}
                if failure.data is not None:
                    response["error"]["data"] = failure.data
            else:
                log.error("the deferred answer to %s from %s failed: %r",
                          excerpt(message["method"], 100), link.name, failure)
                response["error"] = {"code": INTERNAL_ERROR,
                                     "message": "the client failed to answer"}
            if context.cancelled.is_set() or link.closed_error is not None:
                return
            try:
                link.transport.send(response)
            except TransportError as exc:
                log.info("could not answer %s id=%s from %s: %r",
                         excerpt(message["method"], 100),
                         excerpt(repr(message["id"]), 80), link.name, exc)
        finally:
            self._served(context, None, None)

    def _answer_unless_cancelled(self, message: Dict[str, Any], context: RequestContext,
                                 ) -> Optional[Union[Dict[str, Any], Future[Any]]]:
        """Run the handler and send its answer; returns the answer, or None when the
        request was cancelled (and not answered). A handler that returns a
        :class:`~concurrent.futures.Future` defers its answer: the future is returned
        unsent, and :meth:`_answer_later` sends what it settles with."""
        method = message["method"]
        request_id = message["id"]
        link = self._link
        if context.cancelled.is_set():
            log.debug("not answering %s id=%r from %s: cancelled before it started", method,
                      request_id, link.name)
            return None
        response: Dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        handler = self.handlers[method]
        try:
            with serving(context):
                result = handler(message.get("params"))
            if isinstance(result, Future):
                return result
            response["result"] = to_wire(result)
        except ServerError as exc:
            # Raised on purpose (a refusal): the handler chose what the server reads.
            response["error"] = {"code": exc.code, "message": exc.message}
            if exc.data is not None:
                response["error"]["data"] = exc.data
        except Exception:
            # Its text may hold a key, a path, a stack: it goes to the log, never to the
            # server, which reads only which handler failed.
            if not context.cancelled.is_set():
                log.exception("handler for %s from %s raised; the server is told only that "
                              "it failed", excerpt(method, 100), link.name)
            response["error"] = {"code": INTERNAL_ERROR, "message": _HANDLER_FAILED.get(
                method, "the client's handler failed")}
        if context.cancelled.is_set():
            # The server gave up on it (or the link is gone): an answer would be noise.
            log.debug("not answering %s id=%r from %s: cancelled (%s)", method, request_id,
                      link.name, context.cancel_reason or "no reason given")
            return None
        try:
            link.transport.send(response)
        except TransportError as exc:
            log.info("could not answer %s id=%s from %s: %r", excerpt(method, 100),
                     excerpt(repr(request_id), 80), link.name, exc)
        return response

