"""The client's side of a session (:class:`Outbound`): its requests and notifications,
their deadlines, progress tokens and cancellation.

No thread of its own: a request is written on its caller's thread, and blocks it in
:meth:`Outbound.request` (a future from :meth:`Outbound.submit` does not). The dispatch
thread enforces deadlines (:meth:`Outbound.expire_due`) and hands each expired request to
the session's handler pool (``mcp-sync-handler-<name>-<n>``), where :meth:`Outbound.expire`
tells the server (``notifications/cancelled``) before the request fails, so that a slow
send never holds the dispatch thread.

The pending requests themselves live in the sans-I/O :class:`~.core.RequestTable`: each
is popped from it exactly once, by whoever settles it first (its response, its deadline,
its cancellation, the transport's failure or the close).
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Callable, Dict, Mapping, Optional, TypedDict

from .._protocol import DEFAULT, Timeout
from .._util.pool import ThreadPool
from ..exceptions import ConnectionClosed, MCPError, RequestCancelled, RequestTimeout
from .core import Pending, ProgressCallback, RequestTable, Waiter, settle
from .observer import ObservedFuture, ObservedSession, RequestObserver

if TYPE_CHECKING:
    from .link import Link
    from .queues import Inbox

__all__ = ["CANCEL_GRACE", "Outbound", "RareRequestOptions", "RequestFuture",
           "RequestOptions", "converted", "future_wait_bound"]

log = logging.getLogger(__name__)

# Requests that may run long: they carry a progress token even without an on_progress
# callback, so that the server's progress can push their deadline out.
_LONG_RUNNING = frozenset({"tools/call", "prompts/get", "resources/read", "sampling/createMessage"})
#: A timed-out request's caller waits at most this long (seconds) for its cancellation to
#: be sent: an HTTP server slow to take the notifications/cancelled POST must not hold a
#: RequestTimeout back for the POST's own timeout.
CANCEL_GRACE = 0.1


class RareRequestOptions(TypedDict, total=False):
    """The options of a request that :meth:`RpcSession.request` takes by keyword only
    (see :class:`RequestOptions`)."""

    reset_timeout_on_progress: Optional[bool]
    max_total_timeout: Timeout
    cancellable: bool


class RequestOptions(RareRequestOptions, total=False):
    """The keyword arguments of :meth:`RpcSession.submit` and :meth:`RpcSession.request`
    (each left out takes its default, from :meth:`Outbound.start`).

    ``timeout``: seconds the request may wait for its response (``None``: no limit);
    ``DEFAULT``, the session's ``default_timeout``. ``on_progress``: called with each
    progress notification of the request. ``reset_timeout_on_progress``: progress pushes
    the deadline out (``None``: the session's setting). ``max_total_timeout``: progress
    never pushes it past this many seconds (``DEFAULT``: the session's).
    ``cancellable=False`` (``initialize``, the era probe): never cancelled on the wire.
    ``headers``: extra transport headers (HTTP only).
    """

    timeout: Timeout
    on_progress: Optional[ProgressCallback]
    headers: Optional[Mapping[str, str]]


class RequestFuture(Future):  # type: ignore[type-arg]
    """A :class:`concurrent.futures.Future` for one request.

    ``cancel()`` cancels the request on the wire (``notifications/cancelled``) as well as
    locally, when its response has not arrived yet.
    """

    def __init__(self) -> None:
        super().__init__()
        self._outbound: Optional[Outbound] = None
        self.request_id: Optional[int] = None
        self.method: str = ""

    def follow(self, other: RequestFuture) -> None:
        """Stand for ``other``'s request: its id and method, and ``cancel()`` cancels it
        on the wire (a future derived from ``other``, converting its result)."""
        self._outbound, self.request_id, self.method = (
            other._outbound, other.request_id, other.method)

    def cancel(self) -> bool:
        if not super().cancel():
            return False  # finished already: nothing to cancel on the wire
        outbound, request_id = self._outbound, self.request_id
        if outbound is not None and request_id is not None:
            outbound.cancel(request_id, "cancelled by the client")
        return True


def converted(future: Future[Any], convert: Callable[[Any], Any]) -> Future[Any]:
    """A future for ``convert(result)`` of ``future``; cancelling it cancels ``future``."""
    outer = RequestFuture()
    if isinstance(future, RequestFuture):
        outer.follow(future)

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


def future_wait_bound(timeout: Optional[float], max_total: Optional[float]) -> Optional[float]:
    """How long a caller blocks on a future whose deadline the dispatch thread enforces.

    A second of grace past the longest the deadline can be pushed, so the dispatch thread
    always answers first; the bound only matters if it cannot.
    """
    if timeout is None:
        return None if max_total is None else max_total + 1.0
    if max_total is None:
        return None  # progress may extend it without limit
    # max(timeout, max_total), spelled out: this runs once per blocking request.
    return (max_total if max_total > timeout else timeout) + 1.0


class Outbound:
    """Sends a session's requests and notifications and gives up on them: deadlines,
    progress tokens, cancellation on the wire.

    Thread-safe, and without a lock of its own: any number of threads may send at once
    (the table and the transport's ``send`` are thread-safe); the dispatch thread and
    the handler pool expire and cancel concurrently, and each request is settled by
    whoever pops it from the table.

    Args:
        link: the transport and its state, shared with the session's other parts.
        table: the pending requests.
        inbox: the dispatch thread's inbox, woken when a new deadline comes first.
        pool: the session's handler pool, which sends the cancellation of an expired
            request.
        session: the :class:`~.session.RpcSession` the observer is told of.
        observer: told of every request and notification sent (or None).
        default_timeout, reset_timeout_on_progress, max_total_timeout: the defaults of
            :class:`RequestOptions`.
        close_timeout: how long a caller whose wait ran out waits for an outcome that
            another thread is settling.
    """

    def __init__(self, link: Link, table: RequestTable, inbox: Inbox, pool: ThreadPool,
                 session: ObservedSession, *, observer: Optional[RequestObserver],
                 default_timeout: Optional[float], reset_timeout_on_progress: bool,
                 max_total_timeout: Optional[float], close_timeout: float) -> None:
        self._link = link
        self.table = table
        self._inbox = inbox
        self._pool = pool
        self._session = session
        self._observer = observer
        self.default_timeout = default_timeout
        self.reset_timeout_on_progress = reset_timeout_on_progress
        self.max_total_timeout = max_total_timeout
        self._close_timeout = close_timeout

    # -- sending -------------------------------------------------------------------------

    def submit(self, method: str, params: Optional[Dict[str, Any]],
               options: RequestOptions) -> RequestFuture:
        """:meth:`RpcSession.submit`: send a request, return a future for its result
        (``options`` passed as the dict they came in: one unpacking fewer)."""
        future = RequestFuture()
        entry = self.start(method, params, future, False, **options)
        future.request_id, future.method = entry.id, method
        if entry.cancellable:
            future._outbound = self
        return future

    def start(
        self,
        method: str,
        params: Optional[Dict[str, Any]],
        future: Any,
        direct: bool,
        timeout: Timeout = DEFAULT,
        on_progress: Optional[ProgressCallback] = None,
        headers: Optional[Mapping[str, str]] = None,
        *,
        reset_timeout_on_progress: Optional[bool] = None,
        max_total_timeout: Timeout = DEFAULT,
        cancellable: bool = True,
    ) -> Pending:
        """Register ``future`` under a new id and write the request (see
        :meth:`RpcSession.submit`); ``direct``: a blocked ``request()`` waits on it (its
        response may be settled on the reader's thread).

        The one home of the defaults of :class:`RequestOptions`: ``submit()`` and
        ``request()`` pass on only what their caller gave (``request()`` the common
        three by position).
        """
        link = self._link
        if link.forked or link.closed_error is not None or not link.started:
            try:
                link.check_usable()
            except ConnectionClosed as exc:
                exc.request_sent = False
                raise
        if timeout is DEFAULT:
            timeout = self.default_timeout
        if max_total_timeout is DEFAULT:
            max_total_timeout = self.max_total_timeout
        if reset_timeout_on_progress is None:
            reset_timeout_on_progress = self.reset_timeout_on_progress
        observer = self._observer
        observed = (ObservedFuture(future, observer)
                    if observer is not None and observer.active() else None)
        # By position (keywords cost more, once per request): method, future, now,
        # timeout, max_total_timeout, on_progress, reset_on_progress, cancellable,
        # direct, params.
        entry = self.table.open(
            method, observed or future, time.monotonic(), timeout, max_total_timeout,
            on_progress, reset_timeout_on_progress, cancellable, direct, params)
        if entry.deadline is not None and entry.deadline < self._inbox.wake_at:
            self._inbox.wake()  # it comes before the dispatch thread's next look
        message: Dict[str, Any] = {"jsonrpc": "2.0", "id": entry.id, "method": method}
        meta: Optional[Dict[str, Any]] = None
        if link.envelope is not None:
            meta = dict(link.envelope)
        if observed is not None:
            meta, headers = observed.start(self._session, method, params, entry.id, meta,
                                           headers)
        if on_progress is not None or (
            reset_timeout_on_progress and method in _LONG_RUNNING and timeout is not None
        ):
            # The request id doubles as progress token: progress then finds its request
            # without a second table.
            meta = meta if meta is not None else {}
            meta["progressToken"] = entry.id
        if meta is not None:  # a dict of our own: the caller's _meta keys win over it
            params = dict(params) if params else {}
            given = params.get("_meta")
            params["_meta"] = {**meta, **given} if given else meta
        if params is not None:
            message["params"] = params
        # Closed while we registered: fail now rather than lose the request.
        if link.closed_error is not None and self.table.pop(entry.id) is not None:
            closed = link.closed_copy()
            closed.request_sent = False
            if observed is not None:
                observed.observe_outcome(None, closed)
            raise closed
        try:
            if headers:
                link.transport.send(message, headers=headers)
            else:
                link.transport.send(message)
        except MCPError as exc:
            if self.table.pop(entry.id) is None:
                # Settled while send() was blocked (a transport that writes on the
                # caller's thread: its deadline passed, and cutting the write short is
                # what failed it): that outcome stands, and the caller waits for it.
                log.debug("sending %s id=%s to %s ended after it was settled: %r", method,
                          entry.id, link.name, exc)
                return entry
            if isinstance(exc, ConnectionClosed) and exc.request_sent is None:
                exc.request_sent = False  # the transport was closed: nothing went out
            if observed is not None:
                observed.observe_outcome(None, exc)
            raise
        if link.closed_error is not None and self.table.pop(entry.id) is not None:
            settle(future, error=link.closed_copy())
        if log.isEnabledFor(logging.DEBUG):
            log.debug("sent %s id=%s to %s", method, entry.id, link.name)
        return entry

    def request(self, method: str, params: Optional[Dict[str, Any]], timeout: Timeout,
                on_progress: Optional[ProgressCallback],
                headers: Optional[Mapping[str, str]],
                options: Optional[RareRequestOptions] = None) -> Any:
        """:meth:`RpcSession.request`: send a request and block until its result
        (``options`` passed as the dict they came in, if any: one unpacking fewer)."""
        waiter = Waiter()
        if options:
            entry = self.start(method, params, waiter, True, timeout, on_progress, headers,
                               **options)
        else:
            entry = self.start(method, params, waiter, True, timeout, on_progress, headers)
        # The dispatch thread enforces the deadline; this wait is a safety bound on top.
        bound = future_wait_bound(entry.timeout, entry.max_total_timeout)
        try:
            if waiter.wait(bound):
                return waiter.outcome()
        except KeyboardInterrupt:
            if entry.cancellable:
                self.cancel(entry.id, "interrupted by the user (KeyboardInterrupt)")
            else:
                self._give_up(self.table.pop(entry.id),
                              RequestCancelled(f"{method} (id={entry.id}) interrupted"))
            raise
        # If someone else popped it just now (its response, its deadline, the close), the
        # outcome is a moment away.
        popped = self.table.pop(entry.id)
        if popped is None and waiter.wait(self._close_timeout):
            return waiter.outcome()
        if entry.cancellable:
            self.send_cancel(entry.id, "timed out")
        timed_out = RequestTimeout(method, entry.id, bound, entry.subject)
        self._give_up(popped, timed_out)
        raise timed_out

    @staticmethod
    def _give_up(entry: Optional[Pending], error: BaseException) -> None:
        """A blocking caller gives up on a request it popped: its observer (if any) is
        told of ``error``; the caller raises it."""
        if entry is not None and isinstance(entry.future, ObservedFuture):
            entry.future.observe_outcome(None, error)

    def notify(self, method: str, params: Optional[Dict[str, Any]] = None) -> None:
        """:meth:`RpcSession.notify`: send a notification."""
        link = self._link
        link.check_usable()
        observer = self._observer
        token: Any = None
        headers: Optional[Mapping[str, str]] = None
        if observer is not None and observer.active():
            try:
                token, meta, headers = observer.started(self._session, method, params, None)
            except Exception:  # an observer never stops a notification
                log.exception("request observer failed on %s", method)
                observer = None
            else:
                if meta:
                    params = dict(params) if params else {}
                    params["_meta"] = {**meta, **(params.get("_meta") or {})}
        message: Dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        error: Optional[BaseException] = None
        try:
            if headers:
                link.transport.send(message, headers=headers)
            else:
                link.transport.send(message)
        except BaseException as exc:
            error = exc
            raise
        finally:
            if observer is not None:
                try:
                    observer.finished(token, None, error)
                except Exception:  # an observer never breaks a notification
                    log.exception("request observer failed after %s", method)

    def send_progress(self, params: Dict[str, Any]) -> None:
        """Send ``notifications/progress`` (a handler's ``RequestContext.report_progress``)."""
        self.notify("notifications/progress", params)

    # -- giving up -----------------------------------------------------------------------

    def cancel(self, request_id: Any, reason: str) -> None:
        """Forget a request, fail its future with RequestCancelled, tell the server."""
        entry = self.table.pop(request_id)
        if entry is None:
            return
        if type(entry.future) is ObservedFuture:
            entry.future.note("notifications/cancelled", {"reason": reason})
        settle(entry.future, error=RequestCancelled(f"{entry.method} (id={request_id}) {reason}"))
        self.send_cancel(request_id, reason)

    def fail(self, request_id: Any, error: BaseException) -> None:
        """The transport's ``on_request_failed`` hook: fail one request it cannot answer.

        Called from a transport thread (an HTTP POST that failed, or an event stream that
        ended for good before the response). Pops the request, so a late response or the
        deadline finds nothing; an id that is gone already is ignored.
        """
        entry = self.table.pop(request_id)
        if entry is None:
            log.debug("transport failed id=%r of %s, which is no longer pending: %r",
                      request_id, self._link.name, error)
            return
        settle(entry.future, error=error)

    def expire_due(self) -> None:
        """Hand every request whose deadline passed to the pool (dispatch thread)."""
        for entry in self.table.expire(time.monotonic()):
            log.info("%s id=%s to %s timed out after %s s", entry.method, entry.id,
                     self._link.name, entry.timeout)
            self._pool.submit(self.expire, entry)

    def expire(self, entry: Pending) -> None:
        """Tell the server a request timed out, then fail its future (in that order, but
        the future waits at most ``CANCEL_GRACE`` for the cancellation to be sent).

        A request that must not be cancelled on the wire (``initialize``, the era probe)
        is only dropped by the transport: HTTP closes its response stream, so a server
        that never answers does not hold a connection and a thread for the session's life.
        """
        if not entry.cancellable:
            self._abandon(entry.id)
        else:
            if type(entry.future) is ObservedFuture:
                entry.future.note("notifications/cancelled", {"reason": "timed out"})
            sent = threading.Event()

            def cancel() -> None:
                try:
                    self.send_cancel(entry.id, "timed out")
                finally:
                    sent.set()

            # On a second pool thread, so that a slow send delays the caller by at most
            # CANCEL_GRACE; the cancellation still goes out.
            if self._pool.submit(cancel):
                sent.wait(CANCEL_GRACE)
        settle(entry.future, error=RequestTable.timeout_error(entry))

    def _abandon(self, request_id: Any) -> None:
        """Let the transport stop reading a request's reply; the server is told nothing."""
        link = self._link
        if link.closed_error is not None:
            return
        try:
            link.transport.cancel(request_id)
        except MCPError as exc:
            log.debug("could not abandon id=%s: %r", request_id, exc)

    def send_cancel(self, request_id: Any, reason: str) -> None:
        """Tell the server the client gave up on a request: the transport's own way
        (HTTP in the stateless era closes the response stream), else
        ``notifications/cancelled``. Nothing once the transport closed."""
        link = self._link
        if link.closed_error is not None:
            return
        try:
            if link.transport.cancel(request_id):
                return
            self.notify("notifications/cancelled", {"requestId": request_id, "reason": reason})
        except MCPError as exc:
            log.debug("could not send cancellation for id=%s: %r", request_id, exc)
