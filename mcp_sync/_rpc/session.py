"""The JSON-RPC session (:class:`RpcSession`): requests, responses, notifications and
server requests over a transport, with deadlines, progress and cancellation.

Three things are called "session" around here, and each has its own name: this one, the
JSON-RPC conversation over one transport start (``RpcSession``, the client's ``_rpc``);
the MCP session a session-era server keeps (its ``Mcp-Session-Id``, ``SessionExpired``
when it is forgotten); and ``requests.Session``, the HTTP connection pool an HTTP
transport sends through (``HttpTransport(session=...)``).

Threads (all daemons, so a session nobody closed never keeps the interpreter alive;
``close()`` stops and joins each with a bound), each started and ended by the part that
owns it:

* ``mcp-sync-dispatch-<name>`` (:mod:`.dispatch`): takes messages off the inbox the
  transport's reader fills, resolves response futures, expires requests whose deadline
  passed, and routes notifications and server requests. It never runs user code and never
  writes to the transport, so nothing a server or a callback does can stall it.
* ``mcp-sync-callback-<name>`` (:mod:`.notifications`), started with the first one: runs
  notification callbacks (progress, logging, list changes), one at a time, in the order
  the server sent them.
* ``mcp-sync-handler-<name>-<n>``: the session's handler pool, a small one, made and
  stopped here and shared by the parts: it answers server-to-client requests
  (:mod:`.serving`; a handler may call the client again, on the dispatch thread that
  would deadlock) and sends ``notifications/cancelled`` for requests that timed out
  (:mod:`.outbound`). The client also runs on it (:meth:`RpcSession.offload`) the steps
  of ``call_tool_future`` that follow a response (the next input round, checking the
  result against an outputSchema).
* ``mcp-sync-reply-<name>`` (:mod:`.serving`), started with the first one: sends the
  answers that run no user code (``ping``, a method with no handler, a request refused
  because too many wait), so that they never wait behind busy handlers, and the dispatch
  thread still never writes to the transport.

The parts, by composition: each is handed the :class:`~.link.Link` (the transport, its
name, the agreement, whether it may be used and the error that closed it) and the parts
it calls, and :class:`RpcSession` alone makes them, starts them, renames them and stops
them.

* :class:`~.outbound.Outbound`: the client's requests and notifications, their deadlines,
  progress tokens and cancellation, over the sans-I/O :class:`~.core.RequestTable`.
* :class:`~.dispatch.Dispatcher`: the reader's hand-off (with the fast path for a blocked
  caller's response), the dispatch thread, the routing.
* :class:`~.serving.ServerRequests` and :class:`~.serving.Replies`: the server's
  requests, their :class:`~mcp_sync.context.RequestContext` and handlers, the reply
  thread.
* :class:`~.notifications.Notifications`: what the server's notifications do, and their
  callbacks on the callback thread.
* :mod:`.observer`: the :class:`~.observer.RequestObserver` seam (tracing and metrics).

Every queue between the transport and user code is bounded (docs/architecture.md,
"Queues and their bounds", gives each one's most memory and what stalls while it is full):

* the inbox (reader -> dispatch, :class:`~.queues.Inbox`), ``max_inbox`` messages: a full
  inbox makes the transport's reader wait, so the pipe or the socket pushes back on the
  server. Only the dispatch thread drains it, and it waits for user code at most
  ``CALLBACK_GRACE`` per stall, so a callback or a handler that calls the client cannot
  deadlock against a waiting reader.
* the callbacks (dispatch -> callback thread, :class:`~.queues.CallbackQueue`),
  ``max_callbacks`` notifications: full, the dispatch thread waits up to
  ``CALLBACK_GRACE`` for room (callbacks that are only behind lose nothing); once they
  take none in that time they are stuck, and then log messages, progress and
  cancellations are dropped (one warning, then counted in
  :attr:`RpcSession.dropped_notifications`), a repeated change notification is merged,
  and a notification that may not be lost, with nothing droppable to make room for it,
  fails the connection.
* the server requests waiting for or running in a handler, ``max_server_requests``:
  beyond, a request is answered at once with an error (-32603, "busy").
* the answers for the reply thread, ``max_replies``: full, the dispatch thread waits
  for the transport to take them (deadlines are still enforced meanwhile), and the
  inbox, then the server, wait behind it.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, Mapping, Optional

from .._protocol import DEFAULT, Timeout
from .._util.pool import ThreadPool
from .._util.threads import join_or_warn
from ..exceptions import ConnectionClosed
from ..transports.base import Transport
from .core import ProgressCallback, RequestTable
from .dispatch import Dispatcher
from .link import Link
from .notifications import NotificationCallback, Notifications
from .observer import RequestObserver, ServingToken, observe_served, observe_serving
from .outbound import (
    CANCEL_GRACE,
    Outbound,
    RareRequestOptions,
    RequestFuture,
    RequestOptions,
    future_wait_bound,
)
from .queues import CLOSED, Inbox
from .serving import Replies, RequestHandler, ServerRequests, to_wire

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .._protocol.agreement import Agreement

# Re-exported: the names other layers import from here.
__all__ = ["CALLBACK_GRACE", "CANCEL_GRACE", "MAX_CALLBACKS", "MAX_INBOX", "MAX_REPLIES",
           "MAX_SERVER_REQUESTS", "NotificationCallback", "RareRequestOptions",
           "RequestFuture", "RequestHandler", "RequestObserver", "RequestOptions",
           "RpcSession", "future_wait_bound", "to_wire"]

log = logging.getLogger(__name__)

#: Messages read but not yet routed by the dispatch thread.
MAX_INBOX = 256
#: Notification callbacks waiting for the callback thread.
MAX_CALLBACKS = 1024
#: How long the dispatch thread waits for room in a full callback queue before it takes
#: the callbacks for stuck and starts dropping (``queues.CallbackQueue``).
CALLBACK_GRACE = 1.0
#: Server requests waiting for a handler thread or running in one.
MAX_SERVER_REQUESTS = 64
#: Answers waiting for the reply thread.
MAX_REPLIES = 64


class RpcSession:
    """A JSON-RPC 2.0 conversation with one server over one transport.

    Can be shared between threads: any number of threads may call :meth:`request` at once.

    Args:
        transport: the (not yet started) transport.
        name: the server's label for thread names and loggers.
        request_handlers: server-to-client request handlers by method; ``ping`` is always
            answered; unknown methods get -32601.
        on_notification: called on the callback thread with every notification.
        default_timeout: seconds a request may wait for its response (``None``: no limit).
        reset_timeout_on_progress: progress notifications push a request's deadline out.
        max_total_timeout: progress never pushes a deadline past this many seconds.
        close_timeout: bound for joining each thread in :meth:`close`.
        handler_threads: size of the server-request handler pool.
        max_inbox, max_callbacks, max_server_requests, max_replies: the bounds of the
            session's queues (see the module docstring).
        on_close: called once, as ``on_close(error)`` on the callback thread (after every
            notification that arrived before it), when the transport closed without
            :meth:`close` having been called: the server exited or the link broke. Never
            called for :meth:`close`. (The client's ``on_connection_lost`` hook.)
        observer: a :class:`RequestObserver` told of every request sent and of its
            outcome, of every request from the server around its answer, and of the
            session's start and end (the client's tracing and metrics); what it returns
            for a request sent joins the request's ``_meta`` and transport headers.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        name: Optional[str] = None,
        request_handlers: Optional[Mapping[str, RequestHandler]] = None,
        on_notification: Optional[NotificationCallback] = None,
        default_timeout: Optional[float] = 30.0,
        reset_timeout_on_progress: bool = True,
        max_total_timeout: Optional[float] = 600.0,
        close_timeout: float = 2.0,
        handler_threads: int = 4,
        on_close: Optional[Callable[[ConnectionClosed], None]] = None,
        max_inbox: int = MAX_INBOX,
        max_callbacks: int = MAX_CALLBACKS,
        max_server_requests: int = MAX_SERVER_REQUESTS,
        max_replies: int = MAX_REPLIES,
        observer: Optional[RequestObserver] = None,
    ) -> None:
        self.transport = transport
        self.observer = observer
        self.close_timeout = close_timeout
        name = name or transport.name
        link = self._link = Link(transport, name)
        self.table = RequestTable(name)
        self._inbox = Inbox(max_inbox, link, readers_may_wait=transport.reader_may_wait)
        self._pool = ThreadPool(f"mcp-sync-handler-{name}", max_threads=handler_threads)
        self._outbound = Outbound(
            link, self.table, self._inbox, self._pool, self, observer=observer,
            default_timeout=default_timeout,
            reset_timeout_on_progress=reset_timeout_on_progress,
            max_total_timeout=max_total_timeout, close_timeout=close_timeout)
        self._replies = Replies(link, self._outbound, max_replies, close_timeout)
        self._server_requests = ServerRequests(
            link, self._pool, self._replies, self._outbound, self, observer=observer,
            handlers=dict(request_handlers or {}), limit=max_server_requests)
        self._notifications = Notifications(
            link, self.table, self._server_requests, self, observer=observer,
            on_notification=on_notification, on_close=on_close, limit=max_callbacks,
            # An in-process server may deliver on the callback thread itself: never wait.
            grace=CALLBACK_GRACE if transport.reader_may_wait else 0.0,
            fail=self._fail)
        self._dispatcher = Dispatcher(link, self._inbox, self.table, self._outbound,
                                      self._server_requests, self._notifications)
        self._closed_event = threading.Event()
        # The observer's token for this session (opened at start, ended once, when the
        # transport closes).
        self._observed: Any = None

    # -- lifecycle -----------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The server's label, in thread names, log lines and error messages."""
        return self._link.name

    def rename(self, name: str) -> None:
        """Use ``name`` from now on: in messages, in the names of the session's threads
        (the running ones included) and of its transport's (:meth:`Transport.rename`)."""
        self._link.name = name  # first: a thread starting from now on takes it
        self._dispatcher.rename(name)
        self._notifications.rename(name)
        self._replies.rename(name)
        self._pool.rename(f"mcp-sync-handler-{name}")
        self.transport.rename(name)

    def start(self) -> None:
        """Start the transport and the session's threads."""
        self._dispatcher.start()
        self._link.started = True
        # The callback thread starts with the first callback, the reply thread with the
        # first answer: a session that is never sent a notification never has one.
        dispatcher = self._dispatcher
        try:
            deliver = dispatcher.deliver if self.transport.single_reader else dispatcher.enqueue
            self.transport.start(deliver, self._transport_closed, self._outbound.fail)
        except BaseException:
            self._stop_threads()
            raise
        observer = self.observer
        if observer is not None and observer.active():
            try:
                self._observed = observer.opened(self)
            except Exception:  # an observer never breaks a session
                log.exception("session observer failed on the start of %s", self.name)

    def offload(self, fn: Callable[..., None], *args: Any) -> bool:
        """Run ``fn(*args)`` on the handler pool (work that may block or run user code,
        kept off the dispatch thread). False, and nothing run, once the session stopped."""
        return self._pool.submit(fn, *args)

    def agree(self, agreement: Agreement) -> None:
        """Adopt ``agreement`` (the negotiator's, or a change of it): later requests carry
        its envelope, and the transport frames messages by it from now on."""
        link = self._link
        link.agreement = agreement
        link.envelope = agreement.envelope
        self.transport.agree(agreement)

    @property
    def agreement(self) -> Optional[Agreement]:
        """What the client and the server settled on (:meth:`agree`); None until then."""
        return self._link.agreement

    def server_info(self) -> Optional[Mapping[str, Any]]:
        """The server's ``serverInfo`` as the agreement holds it, or None before one is
        settled (a request sent during the handshake)."""
        return self._link.server_info()

    @property
    def forked(self) -> bool:
        """True in a process forked after this session started: its link is the parent's."""
        return self._link.forked

    @property
    def closed(self) -> bool:
        """True once the transport has closed; every request now fails at once."""
        return self._link.closed_error is not None

    @property
    def dropped_notifications(self) -> int:
        """Notifications dropped because the callbacks were ``max_callbacks`` behind."""
        return self._notifications.dropped

    @property
    def refused_requests(self) -> int:
        """Server requests answered with "busy" because ``max_server_requests`` were
        waiting."""
        return self._server_requests.refused

    @property
    def request_handlers(self) -> Dict[str, RequestHandler]:
        """The server-to-client request handlers by method (read at each request)."""
        return self._server_requests.handlers

    @property
    def default_timeout(self) -> Optional[float]:
        """Seconds a request may wait for its response by default (``None``: no limit)."""
        return self._outbound.default_timeout

    @property
    def reset_timeout_on_progress(self) -> bool:
        """Whether progress pushes a request's deadline out by default."""
        return self._outbound.reset_timeout_on_progress

    @property
    def max_total_timeout(self) -> Optional[float]:
        """Progress never pushes a deadline past this many seconds, by default."""
        return self._outbound.max_total_timeout

    def wait_closed(self, timeout: Optional[float]) -> bool:
        """Block until the transport closed; True if it did within ``timeout``."""
        return self._closed_event.wait(timeout)

    def close(self, error: Optional[BaseException] = None,
              within: Optional[float] = None) -> None:
        """Close the transport, fail what is pending, stop and join the threads.

        Idempotent. Each step is bounded by ``close_timeout``. ``error``: the failure
        that ends the session (a failed handshake, an expired MCP session), for the
        observer; None for a session closed because its user is done with it.
        ``within``: close the transport in about that many seconds
        (:meth:`~mcp_sync.transports.base.Transport.close_within`): a failed connect
        stops its server inside the connect's timeout.
        """
        if not self._link.stop(error):
            return
        if os.getpid() != self._link.pid:
            return  # forked child: the threads and the server belong to the parent
        try:
            if within is None:
                self.transport.close()
            else:
                self.transport.close_within(within)
        finally:
            # If the transport never reported (it failed to start), report for it.
            self._transport_closed(ConnectionClosed(f"connection to {self.name} closed"))
            self._stop_threads()

    def _stop_threads(self) -> None:
        threads = (self._dispatcher.stop(), self._notifications.stop(), self._replies.stop())
        for thread in threads:
            join_or_warn(thread, self.close_timeout, "closing the session", log)
        self._pool.stop(self.close_timeout)
        if self.dropped_notifications or self.refused_requests:
            log.info("%s: %d notifications dropped and %d requests refused while the "
                     "client's callbacks or handlers were behind", self.name,
                     self.dropped_notifications, self.refused_requests)
        # Whatever is still pending now can never be answered.
        self.table.fail_all(self._link.closed_copy)

    def _transport_closed(self, error: ConnectionClosed) -> None:
        """The transport's ``on_close`` hook (and close()'s): record the error once, stop
        the answers to the server, and fail what is pending behind what already came."""
        link = self._link
        if not link.mark_closed(error):
            return
        self._closed_event.set()
        # No answer can reach the server now: let running handlers stop early.
        self._server_requests.cancel_all("the connection closed")
        # Queued behind every message the reader delivered before it saw the close, so
        # responses that did arrive are still delivered before the rest fail.
        self._inbox.put_marker(CLOSED)
        if self._observed is not None:
            assert self.observer is not None
            try:
                self.observer.ended(self, self._observed, link.ending_error())
            except Exception:  # an observer never breaks a session
                log.exception("session observer failed on the end of %s", self.name)

    def _fail(self, error: ConnectionClosed) -> None:
        """Fail the connection (a flood the callbacks could not take; dispatch thread):
        every request fails with ``error``, and the transport is closed on the reply
        thread, so that this thread goes on routing."""
        self._transport_closed(error)
        self._replies.abort()

    # -- the client's requests (Outbound) -------------------------------------------------

    def submit(self, method: str, params: Optional[Dict[str, Any]] = None,
               **options: Unpack[RequestOptions]) -> RequestFuture:
        """Send a request and return at once with a future for its result (a dict).

        ``options`` are the keyword arguments of :class:`RequestOptions` (``timeout``,
        ``on_progress``, ``cancellable``, ``headers``, ...). The deadline is enforced by
        the dispatch thread: the future fails with :class:`RequestTimeout` once the server
        has been told (``notifications/cancelled``, or the transport's own cancellation).
        ``future.cancel()`` cancels on the wire (unless ``cancellable=False``).

        Raises:
            ConnectionClosed: the transport is closed.
            TransportError: the request could not be sent.

        A ``ConnectionClosed`` raised here (not through the future) means the request was
        never written: its ``request_sent`` is False, so a caller may safely retry it on
        a new connection. A transport that may have delivered the message before failing
        marks its error ``request_sent = True`` (or leaves another TransportError's at
        ``None``, unknown).
        """
        return self._outbound.submit(method, params, options)

    def request(self, method: str, params: Optional[Dict[str, Any]] = None,
                timeout: Timeout = DEFAULT, on_progress: Optional[ProgressCallback] = None,
                headers: Optional[Mapping[str, str]] = None,
                **options: Unpack[RareRequestOptions]) -> Any:
        """Send a request and block until its result arrives; returns the result dict.

        ``timeout``, ``on_progress``, ``headers`` and ``options`` are the keyword
        arguments of :class:`RequestOptions`, as for :meth:`submit`; the first three may
        also go by position.

        Ctrl-C (``KeyboardInterrupt``) while blocked cancels the request on the wire and
        re-raises; the session stays usable.

        Raises:
            RequestTimeout: no response before the deadline (the request was cancelled).
            ServerError: the server answered with a JSON-RPC error.
            ConnectionClosed: the transport closed before the response arrived.
        """
        if options:
            return self._outbound.request(method, params, timeout, on_progress, headers,
                                          options)
        return self._outbound.request(method, params, timeout, on_progress, headers)

    def notify(self, method: str, params: Optional[Dict[str, Any]] = None) -> None:
        """Send a notification.

        Raises:
            ConnectionClosed: the transport is closed.
        """
        self._outbound.notify(method, params)

    # -- the server's notifications and requests ---------------------------------------

    def follow_progress(self, token: str, on_progress: ProgressCallback) -> Callable[[], None]:
        """Route ``notifications/progress`` carrying ``token`` (a progress token the
        caller put in a request's ``_meta``, not a request id) to ``on_progress``, on the
        callback thread, until the returned function is called: progress that outlives
        its request's response (a task's). Returns the function that stops it."""
        return self._notifications.follow_progress(token, on_progress)

    def observe_serving(self, method: str, params: Any, request_id: Any) -> Any:
        """Tell the observer (if active) that this thread answers a request from the
        server: its handler runs next, in the observer's context. Returns the token for
        :meth:`observe_served` (this thread calls it), or None: nothing to tell it."""
        return observe_serving(self.observer, self, method, params, request_id)

    @staticmethod
    def observe_served(token: ServingToken, error: Optional[BaseException]) -> None:
        """The request :meth:`observe_serving` returned ``token`` for is answered (or
        not: ``error`` says why)."""
        observe_served(token, error)
