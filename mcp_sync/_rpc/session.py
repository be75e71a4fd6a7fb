"""The JSON-RPC session (:class:`RpcSession`): requests, responses, notifications and
server requests over a transport, with deadlines, progress and cancellation.

Three things are called "session" around here, and each has its own name: this one, the
JSON-RPC conversation over one transport start (``RpcSession``, the client's ``_rpc``);
the MCP session a session-era server keeps (its ``Mcp-Session-Id``, ``SessionExpired``
when it is forgotten); and ``requests.Session``, the HTTP connection pool an HTTP
transport sends through (``HttpTransport(session=...)``).

Threads (all daemons, so a session nobody closed never keeps the interpreter alive;
``close()`` stops and joins each with a bound):

* ``mcp-sync-dispatch-<name>``: takes messages off the queue the transport's reader fills,
  resolves response futures, expires requests whose deadline passed, and routes
  notifications and server requests. It never runs user code and never writes to the
  transport, so nothing a server or a callback does can stall it.
* ``mcp-sync-callback-<name>``, started with the first one: runs notification callbacks
  (progress, logging, list changes), one at a time, in the order the server sent them.
* ``mcp-sync-handler-<name>-<n>``: a small pool that answers server-to-client requests
  (a handler may call the client again; on the dispatch thread that would deadlock) and
  sends ``notifications/cancelled`` for requests that timed out. The client also runs
  the steps of ``call_tool_future`` that follow a response on it (the next input round,
  checking the result against an outputSchema).
* ``mcp-sync-reply-<name>``, started with the first one: sends the answers that run no
  user code (``ping``, a method with no handler, a request refused because too many
  wait), so that they never wait behind busy handlers, and the dispatch thread still
  never writes to the transport.

A server request is registered (``_serving``) by the dispatch thread before its handler is
queued, so a ``notifications/cancelled`` the server sends after it, which the same thread
routes in wire order, always finds it: the handler's :class:`RequestContext` is marked
cancelled, and a cancelled request is never answered. A handler may return a
:class:`~concurrent.futures.Future` to answer later (the client's ``tasks/result`` of a
task still running): the request stays registered until the future is settled, and the
thread that settles it sends the answer.

Every queue between the transport and user code is bounded (docs/architecture.md,
"Queues and their bounds", gives each one's most memory and what stalls while it is full):

* the inbox (reader -> dispatch), ``max_inbox`` messages: a full inbox makes the
  transport's reader wait, so the pipe or the socket pushes back on the server. Only
  the dispatch thread drains it, and it waits for user code at most ``CALLBACK_GRACE``
  per stall, so a callback or a handler that calls the client cannot deadlock against
  a waiting reader.
* the callbacks (dispatch -> callback thread), ``max_callbacks`` notifications: full,
  the dispatch thread waits up to ``CALLBACK_GRACE`` for room (callbacks that are only
  behind lose nothing); once they take none in that time they are stuck, and then
  log messages, progress and cancellations are dropped (one warning, then counted in
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
import queue
import threading
import time
import weakref
from concurrent.futures import Future
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Mapping,
    Optional,
    Protocol,
    Tuple,
    TypedDict,
    Union,
)

from .._protocol import DEFAULT, INTERNAL_ERROR, METHOD_NOT_FOUND, Timeout
from .._util.pool import ThreadPool
from .._util.threads import join_or_warn, start_thread
from ..context import RequestContext, serving, valid_id
from ..exceptions import (
    ClientNotConnected,
    ConnectionClosed,
    ForkedClientError,
    MCPError,
    RequestCancelled,
    RequestTimeout,
    ServerError,
    TransportError,
    excerpt,
)
from ..transports.base import Transport
from .core import (
    ANSWERS,
    Kind,
    Pending,
    ProgressCallback,
    RequestTable,
    Waiter,
    classify,
    malformation,
    settle,
)
from .queues import Admission, CallbackQueue

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .._protocol.agreement import Agreement

__all__ = ["RequestFuture", "RpcSession"]

log = logging.getLogger(__name__)

#: A server-request handler: takes the request's params, returns the result (a dict or a
#: pydantic model). Raising ``ServerError`` sends that error; any other exception is logged
#: and the server gets -32603 saying only which handler failed.
#: It runs with the request's :class:`RequestContext` current (``request_context()``).
RequestHandler = Callable[[Optional[Dict[str, Any]]], Any]
#: Called on the callback thread for every notification: ``(method, params)``.
NotificationCallback = Callable[[str, Optional[Dict[str, Any]]], None]

_STOP = object()
_CLOSED = object()
_WAKE = object()  # a new request's deadline is earlier than the dispatcher's next wake-up
_ABORT = object()  # the reply thread closes the transport (the session failed it)
# The dispatch thread wakes at least this often while idle; it has nothing to poll, this
# only bounds its wait (no wait in the library is unbounded).
_IDLE_WAIT = 5.0
# Requests that may run long: they carry a progress token even without an on_progress
# callback, so that the server's progress can push their deadline out.
_LONG_RUNNING = frozenset({"tools/call", "prompts/get", "resources/read", "sampling/createMessage"})
# A timed-out request's caller waits at most this long (seconds) for its cancellation to
# be sent: an HTTP server slow to take the notifications/cancelled POST must not hold a
# RequestTimeout back for the POST's own timeout.
CANCEL_GRACE = 0.1

#: Messages read but not yet routed by the dispatch thread.
MAX_INBOX = 256
#: Notification callbacks waiting for the callback thread.
MAX_CALLBACKS = 1024
#: How long the dispatch thread waits for room in a full callback queue before it takes
#: the callbacks for stuck and starts dropping (``_queues.CallbackQueue``).
CALLBACK_GRACE = 1.0
#: Server requests waiting for a handler thread or running in one.
MAX_SERVER_REQUESTS = 64
#: Answers waiting for the reply thread.
MAX_REPLIES = 64
# Notifications the callback queue may drop when it is full: what they do to the session
# (move a deadline, cancel a handler) is done on the dispatch thread already. A task's
# status notification only wakes its poller early: the next tasks/get tells the same.
_DROPPABLE = frozenset({"notifications/message", "notifications/progress",
                        "notifications/cancelled", "notifications/tasks/status"})
# What the server is told when a handler raises: the exception's text stays in the
# client's log (it may hold a key, a path, a stack).
_HANDLER_FAILED = {
    "sampling/createMessage": "the client's sampling handler failed",
    "elicitation/create": "the client's elicitation handler failed",
    "roots/list": "the client's roots handler failed",
}


# Sessions alive in this process, so that a fork() marks them unusable in the child.
_live_sessions: weakref.WeakSet[RpcSession] = weakref.WeakSet()


def _mark_forked() -> None:
    for session in list(_live_sessions):
        session._forked = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_mark_forked)


class RequestObserver(Protocol):
    """Watches a session (tracing and metrics, ``_otel.py``): told of each request it
    sends before it is written, and of its outcome once it settles, on whatever thread;
    of each notification it sends, around its write; of each request from the server
    around the work that answers it, and of each notification from the server around its
    routing; and of the session's start and end. Whatever it raises is logged, never the
    session's failure."""

    def started(self, session: RpcSession, method: str, params: Optional[Mapping[str, Any]],
                request_id: Any) -> Tuple[Any, Optional[Mapping[str, Any]],
                                          Optional[Mapping[str, str]]]:
        """Called on the sending thread; returns ``(token, meta, headers)``: ``meta`` is
        merged into the message's ``params._meta`` and ``headers`` into its transport
        headers (either may be None); ``token`` is handed back to :meth:`finished`.
        ``request_id`` is None for a notification."""

    def finished(self, token: Any, result: Any, error: Optional[BaseException]) -> None:
        """Called once per message :meth:`started` returned for: a request with its
        result or its error; a notification once written (result None), or with the
        error that stopped its write."""

    def active(self) -> bool:
        """Whether to observe requests now (checked per request, before anything else:
        it must be cheap); an inactive observer costs a request nothing more."""

    def event(self, token: Any, name: str, attributes: Mapping[str, Any]) -> None:
        """Something happened to a request still in flight (``token`` from
        :meth:`started`): ``notifications/progress`` from the server, or
        ``notifications/cancelled`` when the client gives it up. On the dispatch
        thread (or the thread that cancels), before :meth:`finished`."""

    def serving(self, session: RpcSession, method: str, params: Any, request_id: Any) -> Any:
        """Called on the thread that answers a request from the server, before the
        handler runs; returns a token for :meth:`served`, which that thread calls once
        it answered (the handler runs between the two, in whatever context this set).
        For a notification from the server (``request_id`` None): on the dispatch
        thread, around its routing (its callbacks are queued, not run, in between)."""

    def served(self, token: Any, error: Optional[BaseException]) -> None:
        """The request :meth:`serving` was told of is answered: ``error`` is None, or
        the :class:`ServerError` sent back, or why it was not answered (cancelled)."""

    def opened(self, session: RpcSession) -> Any:
        """The session started; returns a token for :meth:`ended`."""

    def ended(self, session: RpcSession, token: Any, error: Optional[BaseException]) -> None:
        """The session ended: ``error`` is None after :meth:`RpcSession.close`, else the
        failure that ended it."""


class _Observed:
    """Stands for a request's future in the table: tells the observer of the outcome
    before the future's owner can see it, and exactly once."""

    __slots__ = ("_done", "_lock", "_observer", "_outcome", "_token", "future")

    def __init__(self, future: Any, observer: RequestObserver) -> None:
        self.future = future
        self._observer = observer
        self._lock = threading.Lock()
        self._token: Any = _UNSET
        self._outcome: Optional[Tuple[Any, Optional[BaseException]]] = None
        self._done = False

    def begin(self, token: Any) -> None:
        """The observer's token, known once the request has an id; an outcome that came
        first is reported now."""
        with self._lock:
            self._token = token
            outcome = self._outcome if self._done else None
        if outcome is not None:
            self._report(token, *outcome)

    def set_result(self, result: Any) -> None:
        self._settled(result, None)
        self.future.set_result(result)

    def set_exception(self, error: BaseException) -> None:
        self._settled(None, error)
        self.future.set_exception(error)

    def _settled(self, result: Any, error: Optional[BaseException]) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
            token = self._token
            if token is _UNSET:
                self._outcome = (result, error)
                return
        self._report(token, result, error)

    def note(self, name: str, attributes: Mapping[str, Any]) -> None:
        """Tell the observer of an event of the request while it is in flight."""
        with self._lock:
            token = self._token
            if self._done or token is _UNSET or token is _BROKEN:
                return
        try:
            self._observer.event(token, name, attributes)
        except Exception:  # an observer never breaks a request
            log.exception("request observer failed")

    def _report(self, token: Any, result: Any, error: Optional[BaseException]) -> None:
        if token is _BROKEN:
            return  # started() failed: nothing to finish
        try:
            self._observer.finished(token, result, error)
        except Exception:  # an observer never breaks a request
            log.exception("request observer failed")


_UNSET = object()
_BROKEN = object()


class RareRequestOptions(TypedDict, total=False):
    """The options of a request that :meth:`RpcSession.request` takes by keyword only
    (see :class:`RequestOptions`)."""

    reset_timeout_on_progress: Optional[bool]
    max_total_timeout: Timeout
    cancellable: bool


class RequestOptions(RareRequestOptions, total=False):
    """The keyword arguments of :meth:`RpcSession.submit` and :meth:`RpcSession.request`
    (each left out takes its default, from :meth:`RpcSession._start`).

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
        self._session: Optional[RpcSession] = None
        self.request_id: Optional[int] = None
        self.method: str = ""

    def follow(self, other: RequestFuture) -> None:
        """Stand for ``other``'s request: its id and method, and ``cancel()`` cancels it
        on the wire (a future derived from ``other``, converting its result)."""
        self._session, self.request_id, self.method = (
            other._session, other.request_id, other.method)

    def cancel(self) -> bool:
        if not super().cancel():
            return False  # finished already: nothing to cancel on the wire
        session, request_id = self._session, self.request_id
        if session is not None and request_id is not None:
            session._cancel(request_id, "cancelled by the client")
        return True


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
        self.name = name or transport.name
        self.request_handlers: Dict[str, RequestHandler] = dict(request_handlers or {})
        self.on_notification = on_notification
        self.on_close = on_close
        self.default_timeout = default_timeout
        self.reset_timeout_on_progress = reset_timeout_on_progress
        self.max_total_timeout = max_total_timeout
        self.close_timeout = close_timeout
        self.table = RequestTable(self.name)
        # Unbounded itself: the readers wait for room (_wait_for_room), and the session's
        # own markers (_WAKE, _CLOSED, _STOP) must never wait.
        self._inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._max_inbox = max_inbox
        # Readers waiting for room in the inbox (guarded by _room), and their wake-up.
        self._room = threading.Condition()
        self._readers_waiting = 0
        self._queued_lock = threading.Lock()  # _queued, when several threads deliver
        # An in-process server may deliver on the callback thread itself: never wait.
        self._callbacks = CallbackQueue(
            max_callbacks, grace=CALLBACK_GRACE if transport.reader_may_wait else 0.0)
        self._pool = ThreadPool(f"mcp-sync-handler-{self.name}", max_threads=handler_threads)
        self._max_server_requests = max_server_requests
        self._replies: queue.Queue[Any] = queue.Queue(maxsize=max_replies)
        self._reply_thread: Optional[threading.Thread] = None
        # Guards starting the reply and callback threads against _stop_threads (and
        # _replies_closed: True once stopping).
        self._reply_lock = threading.Lock()
        self._replies_closed = False
        #: Server requests answered with "busy" because max_server_requests were waiting.
        self.refused_requests = 0
        # Each overload is reported once per session (dispatch thread only).
        self._warned_drop = False
        self._warned_refusal = False
        self._warned_reply = False
        self._dispatcher: Optional[threading.Thread] = None
        self._callback_thread: Optional[threading.Thread] = None
        # Set once when the transport reports it closed (or close() is called); from then
        # on every request fails at once with an error built from it.
        self._closed_error: Optional[ConnectionClosed] = None
        self._closed_event = threading.Event()
        self._close_lock = threading.Lock()
        self._stopped = False
        # True when the transport closed before close() was called (guarded by _close_lock).
        self._lost = False
        self._pid = os.getpid()
        # Set in a forked child (see _mark_forked): cheaper than os.getpid() per request.
        self._forked = False
        # Messages the transport's single reader queued, and messages the dispatch thread
        # finished routing. Each has one writer, so no lock; equal means nothing delivered
        # earlier is still on its way through dispatch (see _deliver).
        self._queued = 0
        self._routed = 0
        _live_sessions.add(self)
        #: What the client and the server settled on (:meth:`agree`); None until then.
        self.agreement: Optional[Agreement] = None
        # The agreement's envelope, merged into every request's ``params._meta`` (the
        # stateless era's protocol version, client info and capabilities); None otherwise.
        self._request_meta: Optional[Mapping[str, Any]] = None
        # When the dispatch thread will next look at deadlines (monotonic seconds). Read
        # without a lock: a stale value at worst costs one extra wake-up.
        self._wake_at = 0.0
        # The server's requests being answered, by their id: added by the dispatch thread,
        # removed by the handler thread that answers. Guarded by _serving_lock.
        self._serving: Dict[Any, RequestContext] = {}
        self._serving_lock = threading.Lock()
        # Progress tokens of the client's own choosing (not request ids) and who gets
        # their notifications: follow_progress(). Copied on write, read without a lock.
        self._followed: Dict[str, ProgressCallback] = {}
        self._followed_lock = threading.Lock()
        # The observer's token for this session (opened at start, ended once, when the
        # transport closes), and the failure close() was told ended it.
        self._observed: Any = None
        self._end_error: Optional[BaseException] = None

    # -- lifecycle -----------------------------------------------------------------------

    def rename(self, name: str) -> None:
        """Use ``name`` from now on: in messages, in the names of the session's threads
        (the running ones included) and of its transport's (:meth:`Transport.rename`)."""
        with self._reply_lock:  # the reply thread is started under it, named after self.name
            self.name = name
            for role, thread in (("dispatch", self._dispatcher),
                                 ("callback", self._callback_thread),
                                 ("reply", self._reply_thread)):
                if thread is not None:
                    thread.name = f"mcp-sync-{role}-{name}"
        self._pool.rename(f"mcp-sync-handler-{name}")
        self.transport.rename(name)

    def start(self) -> None:
        """Start the transport and the session's threads."""
        self._dispatcher = start_thread(self._dispatch_loop, f"mcp-sync-dispatch-{self.name}")
        # The callback thread starts with the first callback (_start_callback_thread): a
        # session that is never sent a notification never has one.
        try:
            deliver = self._deliver if self.transport.single_reader else self._enqueue
            self.transport.start(deliver, self._transport_closed, self._request_failed)
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
        self.agreement = agreement
        self._request_meta = agreement.envelope
        self.transport.agree(agreement)

    @property
    def forked(self) -> bool:
        """True in a process forked after this session started: its link is the parent's."""
        return self._forked

    @property
    def closed(self) -> bool:
        """True once the transport has closed; every request now fails at once."""
        return self._closed_error is not None

    @property
    def dropped_notifications(self) -> int:
        """Notifications dropped because the callbacks were ``max_callbacks`` behind."""
        return self._callbacks.dropped

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
        with self._close_lock:
            if self._stopped:
                return
            self._stopped = True
            self._end_error = error
        if os.getpid() != self._pid:
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
        self._inbox.put(_STOP)
        self._callbacks.put_control(_STOP)
        with self._room:  # a reader waiting for room gives up: nothing will route it
            self._room.notify_all()
        with self._reply_lock:
            self._replies_closed = True
            reply_thread = self._reply_thread
            callback_thread = self._callback_thread
        try:
            self._replies.put_nowait(_STOP)
        except queue.Full:
            pass  # the reply thread sees _replies_closed after its current send
        for thread in (self._dispatcher, callback_thread, reply_thread):
            join_or_warn(thread, self.close_timeout, "closing the session", log)
        self._pool.stop(self.close_timeout)
        if self.dropped_notifications or self.refused_requests:
            log.info("%s: %d notifications dropped and %d requests refused while the "
                     "client's callbacks or handlers were behind", self.name,
                     self.dropped_notifications, self.refused_requests)
        # Whatever is still pending now can never be answered.
        self.table.fail_all(self._make_closed_error)

    def _transport_closed(self, error: ConnectionClosed) -> None:
        with self._close_lock:
            if self._closed_error is not None:
                return
            self._closed_error = error
            self._lost = not self._stopped
        self._closed_event.set()
        # No answer can reach the server now: let running handlers stop early.
        with self._serving_lock:
            serving_now = list(self._serving.values())
        for context in serving_now:
            context.cancel("the connection closed")
        # Queued behind every message the reader delivered before it saw the close, so
        # responses that did arrive are still delivered before the rest fail.
        self._inbox.put(_CLOSED)
        if self._observed is not None:
            assert self.observer is not None
            try:
                self.observer.ended(self, self._observed,
                                    error if self._lost else self._end_error)
            except Exception:  # an observer never breaks a session
                log.exception("session observer failed on the end of %s", self.name)

    def _request_failed(self, request_id: Any, error: BaseException) -> None:
        """The transport's ``on_request_failed`` hook: fail one request it cannot answer.

        Called from a transport thread (an HTTP POST that failed, or an event stream that
        ended for good before the response). Pops the request, so a late response or the
        deadline finds nothing; an id that is gone already is ignored.
        """
        entry = self.table.pop(request_id)
        if entry is None:
            log.debug("transport failed id=%r of %s, which is no longer pending: %r",
                      request_id, self.name, error)
            return
        settle(entry.future, error=error)

    def _make_closed_error(self) -> ConnectionClosed:
        base = self._closed_error
        if base is None:
            return ConnectionClosed(f"connection to {self.name} closed")
        error = type(base)(base.reason, exit_code=base.exit_code, stderr_tail=base.stderr_tail)
        error.__cause__ = base.__cause__
        return error

    def _check_usable(self) -> None:
        if self._forked:
            raise ForkedClientError(
                f"this client's connection to {self.name} belongs to the parent process; "
                "create a new client after fork()"
            )
        if self._closed_error is not None:
            raise self._make_closed_error()
        if self._dispatcher is None:
            raise ClientNotConnected(f"session with {self.name} is not started")

    # -- outbound ------------------------------------------------------------------------

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
        future = RequestFuture()
        entry = self._start(method, params, future, False, **options)
        future.request_id, future.method = entry.id, method
        if entry.cancellable:
            future._session = self
        return future

    def _start(
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
        """Register ``future`` under a new id and write the request (see :meth:`submit`).

        The one home of the defaults of :class:`RequestOptions`: ``submit()`` and
        ``request()`` pass on only what their caller gave (``request()`` the common
        three by position).
        """
        if self._forked or self._closed_error is not None or self._dispatcher is None:
            try:
                self._check_usable()
            except ConnectionClosed as exc:
                exc.request_sent = False
                raise
        if timeout is DEFAULT:
            timeout = self.default_timeout
        if max_total_timeout is DEFAULT:
            max_total_timeout = self.max_total_timeout
        if reset_timeout_on_progress is None:
            reset_timeout_on_progress = self.reset_timeout_on_progress
        observer = self.observer
        observed = (_Observed(future, observer)
                    if observer is not None and observer.active() else None)
        # By position (keywords cost more, once per request): method, future, now,
        # timeout, max_total_timeout, on_progress, reset_on_progress, cancellable,
        # direct, params.
        entry = self.table.open(
            method, observed or future, time.monotonic(), timeout, max_total_timeout,
            on_progress, reset_timeout_on_progress, cancellable, direct, params)
        if entry.deadline is not None and entry.deadline < self._wake_at:
            self._inbox.put(_WAKE)
        message: Dict[str, Any] = {"jsonrpc": "2.0", "id": entry.id, "method": method}
        meta: Optional[Dict[str, Any]] = None
        if self._request_meta is not None:
            meta = dict(self._request_meta)
        if observed is not None:
            meta, headers = self._observe(observed, method, params, entry.id, meta, headers)
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
        if self._closed_error is not None and self.table.pop(entry.id) is not None:
            closed = self._make_closed_error()
            closed.request_sent = False
            if observed is not None:
                observed._settled(None, closed)
            raise closed
        try:
            if headers:
                self.transport.send(message, headers=headers)
            else:
                self.transport.send(message)
        except MCPError as exc:
            if self.table.pop(entry.id) is None:
                # Settled while send() was blocked (a transport that writes on the
                # caller's thread: its deadline passed, and cutting the write short is
                # what failed it): that outcome stands, and the caller waits for it.
                log.debug("sending %s id=%s to %s ended after it was settled: %r", method,
                          entry.id, self.name, exc)
                return entry
            if isinstance(exc, ConnectionClosed) and exc.request_sent is None:
                exc.request_sent = False  # the transport was closed: nothing went out
            if observed is not None:
                observed._settled(None, exc)
            raise
        if self._closed_error is not None and self.table.pop(entry.id) is not None:
            settle(future, error=self._make_closed_error())
        if log.isEnabledFor(logging.DEBUG):
            log.debug("sent %s id=%s to %s", method, entry.id, self.name)
        return entry

    def _observe(self, observed: _Observed, method: str, params: Optional[Dict[str, Any]],
                 request_id: Any, meta: Optional[Dict[str, Any]],
                 headers: Optional[Mapping[str, str]],
                 ) -> Tuple[Optional[Dict[str, Any]], Optional[Mapping[str, str]]]:
        """Tell the observer of a request about to be sent; returns its ``_meta`` and
        headers with what the observer adds (the caller's own headers win)."""
        assert self.observer is not None
        try:
            token, extra_meta, extra_headers = self.observer.started(
                self, method, params, request_id)
        except Exception:  # an observer never stops a request
            log.exception("request observer failed on %s", method)
            observed.begin(_BROKEN)
            return meta, headers
        observed.begin(token)
        if extra_meta:
            meta = {**extra_meta, **(meta or {})}
        if extra_headers:
            headers = {**extra_headers, **(headers or {})}
        return meta, headers

    def request(self, method: str, params: Optional[Dict[str, Any]] = None,
                timeout: Timeout = DEFAULT, on_progress: Optional[ProgressCallback] = None,
                headers: Optional[Mapping[str, str]] = None,
                **options: Unpack[RareRequestOptions]) -> Any:
        """Send a request and block until its result arrives; returns the result dict.

        ``timeout``, ``on_progress``, ``headers`` and ``options`` are the keyword
        arguments of :class:`RequestOptions`, as for :meth:`submit`; the first three may
        also go by position (the client's calls pass them so: keywords cost more, on
        every request).

        Ctrl-C (``KeyboardInterrupt``) while blocked cancels the request on the wire and
        re-raises; the session stays usable.

        Raises:
            RequestTimeout: no response before the deadline (the request was cancelled).
            ServerError: the server answered with a JSON-RPC error.
            ConnectionClosed: the transport closed before the response arrived.
        """
        waiter = Waiter()
        if options:
            entry = self._start(method, params, waiter, True, timeout, on_progress, headers,
                                **options)
        else:
            entry = self._start(method, params, waiter, True, timeout, on_progress, headers)
        # The dispatch thread enforces the deadline; this wait is a safety bound on top.
        bound = future_wait_bound(entry.timeout, entry.max_total_timeout)
        try:
            if waiter.wait(bound):
                return waiter.outcome()
        except KeyboardInterrupt:
            if entry.cancellable:
                self._cancel(entry.id, "interrupted by the user (KeyboardInterrupt)")
            else:
                self._give_up(self.table.pop(entry.id),
                              RequestCancelled(f"{method} (id={entry.id}) interrupted"))
            raise
        # If someone else popped it just now (its response, its deadline, the close), the
        # outcome is a moment away.
        popped = self.table.pop(entry.id)
        if popped is None and waiter.wait(self.close_timeout):
            return waiter.outcome()
        if entry.cancellable:
            self._send_cancel(entry.id, "timed out")
        timed_out = RequestTimeout(method, entry.id, bound, entry.subject)
        self._give_up(popped, timed_out)
        raise timed_out

    @staticmethod
    def _give_up(entry: Optional[Pending], error: BaseException) -> None:
        """A blocking caller gives up on a request it popped: its observer (if any) is
        told of ``error``; the caller raises it."""
        if entry is not None and isinstance(entry.future, _Observed):
            entry.future._settled(None, error)

    def notify(self, method: str, params: Optional[Dict[str, Any]] = None) -> None:
        """Send a notification.

        Raises:
            ConnectionClosed: the transport is closed.
        """
        self._check_usable()
        observer = self.observer
        token: Any = None
        headers: Optional[Mapping[str, str]] = None
        if observer is not None and observer.active():
            try:
                token, meta, headers = observer.started(self, method, params, None)
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
                self.transport.send(message, headers=headers)
            else:
                self.transport.send(message)
        except BaseException as exc:
            error = exc
            raise
        finally:
            if observer is not None:
                try:
                    observer.finished(token, None, error)
                except Exception:  # an observer never breaks a notification
                    log.exception("request observer failed after %s", method)

    def _cancel(self, request_id: Any, reason: str) -> None:
        """Forget a request, fail its future with RequestCancelled, tell the server."""
        entry = self.table.pop(request_id)
        if entry is None:
            return
        if type(entry.future) is _Observed:
            entry.future.note("notifications/cancelled", {"reason": reason})
        settle(entry.future, error=RequestCancelled(f"{entry.method} (id={request_id}) {reason}"))
        self._send_cancel(request_id, reason)

    def _expire(self, entry: Pending) -> None:
        """Tell the server a request timed out, then fail its future (in that order, but
        the future waits at most ``CANCEL_GRACE`` for the cancellation to be sent).

        A request that must not be cancelled on the wire (``initialize``, the era probe)
        is only dropped by the transport: HTTP closes its response stream, so a server
        that never answers does not hold a connection and a thread for the session's life.
        """
        if not entry.cancellable:
            self._abandon(entry.id)
        else:
            if type(entry.future) is _Observed:
                entry.future.note("notifications/cancelled", {"reason": "timed out"})
            sent = threading.Event()

            def cancel() -> None:
                try:
                    self._send_cancel(entry.id, "timed out")
                finally:
                    sent.set()

            # On a second pool thread, so that a slow send delays the caller by at most
            # CANCEL_GRACE; the cancellation still goes out.
            if self._pool.submit(cancel):
                sent.wait(CANCEL_GRACE)
        settle(entry.future, error=RequestTable.timeout_error(entry))

    def _abandon(self, request_id: Any) -> None:
        """Let the transport stop reading a request's reply; the server is told nothing."""
        if self._closed_error is not None:
            return
        try:
            self.transport.cancel(request_id)
        except MCPError as exc:
            log.debug("could not abandon id=%s: %r", request_id, exc)

    def _send_cancel(self, request_id: Any, reason: str) -> None:
        if self._closed_error is not None:
            return
        try:
            if self.transport.cancel(request_id):
                return
            self.notify("notifications/cancelled", {"requestId": request_id, "reason": reason})
        except MCPError as exc:
            log.debug("could not send cancellation for id=%s: %r", request_id, exc)

    # -- inbound -------------------------------------------------------------------------

    def _dispatch_loop(self) -> None:
        inbox = self._inbox
        table = self.table
        while True:
            next_deadline = table.next_deadline()
            now = time.monotonic()
            wait = _IDLE_WAIT
            if next_deadline is not None:
                wait = min(wait, max(0.0, next_deadline - now))
            self._wake_at = now + wait
            try:
                message = inbox.get(timeout=wait)
            except queue.Empty:
                message = None
            if message is _STOP:
                return
            if message is _WAKE:
                message = None
            elif message is _CLOSED:
                table.fail_all(self._make_closed_error)
                if self._lost and self.on_close is not None and self._start_callback_thread():
                    # On the callback thread, behind the notifications queued before it.
                    self._callbacks.put_control((self.on_close, (self._make_closed_error(),)))
            elif message is not None:
                try:
                    self._route(message)
                except Exception:
                    log.exception("error routing a message from %s", self.name)
                self._routed += 1
                # Wake a reader waiting for room once half the inbox is free: one wake-up
                # per half inbox, not per message.
                if self._readers_waiting and (
                    self._queued - self._routed <= self._max_inbox // 2
                ):
                    with self._room:
                        self._room.notify_all()
            # Deadlines are looked at only when the earliest may be due: not per message.
            if message is None or (
                next_deadline is not None and time.monotonic() >= next_deadline
            ):
                self._expire_due()

    def _expire_due(self) -> None:
        """Hand every request whose deadline passed to the pool (dispatch thread)."""
        for entry in self.table.expire(time.monotonic()):
            log.info("%s id=%s to %s timed out after %s s", entry.method, entry.id,
                     self.name, entry.timeout)
            self._pool.submit(self._expire, entry)

    def _wait_for_room(self) -> bool:
        """A reader waits here while ``max_inbox`` messages wait for dispatch: it stops
        reading, so the pipe or the socket pushes back on the server.

        Returns False when the session stopped or failed meanwhile (nothing will route the
        message: the caller drops it). Never called on the dispatch thread, and the
        dispatch thread waits for user code at most ``CALLBACK_GRACE``, so the inbox always
        drains.
        """
        with self._room:
            self._readers_waiting += 1
            try:
                while self._queued - self._routed >= self._max_inbox:
                    if self._stopped or self._closed_error is not None:
                        return False
                    self._room.wait(_IDLE_WAIT)
            finally:
                self._readers_waiting -= 1
        return True

    def _enqueue(self, message: Any, first: bool = False) -> None:
        """The ``on_message`` of transports with several reader threads (HTTP streams,
        the legacy SSE stream): queue for dispatch, waiting for room when the transport
        lets its readers wait (an in-process server may deliver on a caller's thread).

        A stream's ``first`` message (HTTP: a JSON reply, or an event stream whose first
        event is the response) that answers a blocked ``request()`` is resolved right
        here instead, one thread hand-off fewer per call (:meth:`_resolve_direct`):
        nothing from its own stream waits for dispatch before it, and separate streams
        keep no order between them. A response behind notifications or server requests
        on its stream is queued behind them, so that they are routed first.
        """
        if first and type(message) is dict and "method" not in message and (
                self._resolve_direct(message)):
            return
        if (self._queued - self._routed >= self._max_inbox and self.transport.reader_may_wait
                and not self._wait_for_room()):
            log.debug("dropping a message from %s: the session is closing", self.name)
            return
        with self._queued_lock:
            self._queued += 1
        self._inbox.put(message)

    def _deliver(self, message: Any, first: bool = False) -> None:
        """The reader's callback (single-reader transports): the response to a blocked
        ``request()`` is resolved right here, one thread hand-off fewer per call, when
        nothing delivered earlier is still waiting for dispatch; everything else goes
        through the inbox as usual.

        Wire order is kept: the fast path is taken only when every message this reader
        queued before has been routed (one stream: ``first`` adds nothing).
        """
        if (self._queued == self._routed and type(message) is dict and "method" not in message
                and self._resolve_direct(message)):
            return
        if (self._queued - self._routed >= self._max_inbox and self.transport.reader_may_wait
                and not self._wait_for_room()):
            log.debug("dropping a message from %s: the session is closing", self.name)
            return
        self._queued += 1
        self._inbox.put(message)

    def _resolve_direct(self, message: Dict[str, Any]) -> bool:
        """Resolve a response on the transport's thread if it answers a blocked
        ``request()``; False (nothing done) for anything else, which then goes through
        dispatch. The caller has checked that wire order allows it.

        The transport's thread runs no user code: a blocking ``request()``'s future has
        no callbacks (``direct``), so resolving it only wakes the caller.
        """
        # Resolve here exactly what dispatch would, nothing else. Our ids are ints: a dict
        # or list id is unhashable (the lookup would kill the reader), and true or 1.0
        # equal an int key. And classify() vets the rest ("error": null would raise in
        # resolve(), on the reader thread).
        request_id = message.get("id")
        if type(request_id) is not int:
            return False
        if "result" in message and message.get("error") is None:
            # The usual answer, a result with no error beside it, is a RESPONSE without
            # asking classify() (a dict with an int id and no method, checked above).
            return self.table.settle_direct(request_id, message["result"])
        entry = self.table.get(request_id)
        if entry is not None and entry.direct:
            kind = classify(message)
            if kind in ANSWERS and self.table.resolve(message, kind) is not None:
                return True
        return False

    def _route(self, message: Any) -> None:
        kind = classify(message)
        if kind in ANSWERS:
            if self.table.resolve(message, kind) is not None:
                return
            if kind is Kind.MALFORMED_RESPONSE:
                log.warning("mcp-sync %s: skipping a malformed response to unknown or late "
                            "id=%s: %s", self.name, excerpt(repr(message.get("id")), 80),
                            malformation(message))
            else:
                log.debug("ignoring response for unknown or late id=%s from %s",
                          excerpt(repr(message.get("id")), 80), self.name)
        elif kind is Kind.NOTIFICATION:
            self._route_notification(message["method"], message.get("params"))
        elif kind is Kind.REQUEST:
            self._route_request(message)
        else:
            log.warning("mcp-sync %s: skipping a message that is not JSON-RPC: %s",
                        self.name, excerpt(repr(message), 200))

    def _route_request(self, message: Dict[str, Any]) -> None:
        """A server request: answered on the reply thread when no user code is needed,
        else registered and queued for a handler thread, unless too many wait already."""
        method, request_id = message["method"], message["id"]
        handler = self.request_handlers.get(method)
        if handler is None:
            if method == "ping":
                self._reply_observed(message, {"jsonrpc": "2.0", "id": request_id,
                                               "result": {}})
            else:
                self._reply_observed(message, {"jsonrpc": "2.0", "id": request_id, "error": {
                    "code": METHOD_NOT_FOUND,
                    "message": f"Method not found: {excerpt(method, 100)}"}})
            return
        with self._serving_lock:
            busy = len(self._serving) >= self._max_server_requests
        if busy:
            self.refused_requests += 1
            if not self._warned_refusal:
                self._warned_refusal = True
                log.warning("mcp-sync %s: %d requests from the server are waiting for a "
                            "handler already; refusing more as busy (counted in "
                            "RpcSession.refused_requests)", self.name, self._max_server_requests)
            self._reply_observed(message, {"jsonrpc": "2.0", "id": request_id, "error": {
                "code": INTERNAL_ERROR,
                "message": "the client is busy: too many requests from this server are "
                           "waiting for its handlers"}})
            return
        context = self._serving_context(message)
        with self._serving_lock:
            self._serving[context.request_id] = context
        if not self._pool.submit(self._answer, message, context):
            with self._serving_lock:  # closing: nothing will answer it
                self._serving.pop(context.request_id, None)

    def _reply_observed(self, request: Dict[str, Any], response: Dict[str, Any]) -> None:
        """:meth:`_reply` to a server request that no handler answers, observed."""
        token = self.observe_serving(request["method"], request.get("params"), request["id"])
        self._reply(response)
        if token is not None:
            self.observe_served(token, _answer_error(response))

    def observe_serving(self, method: str, params: Any, request_id: Any) -> Any:
        """Tell the observer (if active) that this thread answers a request from the
        server: its handler runs next, in the observer's context. Returns the token for
        :meth:`observe_served` (this thread calls it), or None: nothing to tell it."""
        observer = self.observer
        if observer is None or not observer.active():
            return None
        try:
            token = observer.serving(self, method, params, request_id)
        except Exception:  # an observer never stops an answer
            log.exception("request observer failed on %s from %s", excerpt(method, 100),
                          self.name)
            return None
        return _Serving(observer, token) if token is not None else None

    @staticmethod
    def observe_served(token: Any, error: Optional[BaseException]) -> None:
        """The request :meth:`observe_serving` returned ``token`` for is answered (or
        not: ``error`` says why)."""
        try:
            token.observer.served(token.token, error)
        except Exception:  # an observer never stops an answer
            log.exception("request observer failed after answering the server")

    # -- the reply thread ----------------------------------------------------------------

    def _reply(self, response: Dict[str, Any]) -> None:
        """Queue an answer that runs no user code for the reply thread (dispatch thread).

        While ``max_replies`` wait, this waits for the reply thread, still expiring
        deadlines, and the inbox fills behind it: the server is slowed to the pace at
        which it takes the answers it asked for.
        """
        if self._closed_error is not None:
            return
        if self._reply_thread is None and not self._start_reply_thread():
            return
        while True:
            next_deadline = self.table.next_deadline()
            wait = _IDLE_WAIT
            if next_deadline is not None:
                wait = min(wait, max(0.0, next_deadline - time.monotonic()))
            try:
                self._replies.put(response, timeout=wait)
                return
            except queue.Full:
                if self._stopped or self._closed_error is not None:
                    return
                self._expire_due()

    def _start_reply_thread(self) -> bool:
        with self._reply_lock:
            if self._replies_closed:
                return False
            if self._reply_thread is None:
                # A daemon like the others; _stop_threads stops and joins it.
                self._reply_thread = start_thread(self._reply_loop, f"mcp-sync-reply-{self.name}")
            return True

    def _reply_loop(self) -> None:
        replies = self._replies
        while not self._replies_closed:
            try:
                item = replies.get(timeout=_IDLE_WAIT)
            except queue.Empty:
                continue
            if item is _STOP:
                return
            if item is _ABORT:
                try:
                    self.transport.close()
                except Exception:
                    log.exception("closing the transport of %s failed", self.name)
                continue
            try:
                self.transport.send(item)
            except MCPError as exc:
                # Once at INFO: a server that stops reading would otherwise get a line
                # per answer in the application's log.
                level = logging.DEBUG if self._warned_reply else logging.INFO
                self._warned_reply = True
                log.log(level, "could not answer %s (id=%s): %r", self.name,
                        excerpt(repr(item.get("id")), 80), exc)
            except Exception:
                # Never let this thread die: the dispatch thread would wait for it.
                log.exception("sending an answer to %s failed", self.name)

    # -- notifications -------------------------------------------------------------------

    def _route_notification(self, method: str, params: Any) -> None:
        token = self.observe_serving(method, params, None)
        if token is None:
            self._handle_notification(method, params)
            return
        error: Optional[BaseException] = None
        try:
            self._handle_notification(method, params)
        except BaseException as exc:
            error = exc
            raise
        finally:
            self.observe_served(token, error)

    def _handle_notification(self, method: str, params: Any) -> None:
        if method == "notifications/cancelled" and isinstance(params, dict):
            self._server_cancelled(params)
        if method == "notifications/progress" and isinstance(params, dict):
            token = params.get("progressToken")
            entry = self.table.progress(token, time.monotonic())
            if entry is not None and type(entry.future) is _Observed:
                entry.future.note(method, _progress_event(params))
            if entry is not None and entry.on_progress is not None:
                self._queue_callback(_run_progress, (entry.on_progress, params), method, params)
            elif entry is None and self._followed and type(token) is str:
                follower = self._followed.get(token)
                if follower is not None:
                    self._queue_callback(_run_progress, (follower, params), method, params)
        if self.on_notification is not None:
            self._queue_callback(self.on_notification, (method, params), method, params)

    def _queue_callback(self, callback: Callable[..., None], args: Any, method: str,
                        params: Any) -> None:
        """Queue a callback for a notification; on a full queue, apply the policy of
        :class:`CallbackQueue` (dispatch thread)."""
        if self._callback_thread is None and not self._start_callback_thread():
            return  # closing: no callback runs any more
        admission = self._callbacks.put((callback, args), droppable=method in _DROPPABLE,
                                        key=_merge_key(method, params))
        if admission is Admission.QUEUED or admission is Admission.MERGED:
            if self._callbacks.dropped and not self._warned_drop:
                self._warn_dropping()  # an older droppable one made room for this one
            return
        if admission is Admission.DROPPED:
            if not self._warned_drop:
                self._warn_dropping()
            return
        self._fail_overloaded(method)

    def _warn_dropping(self) -> None:
        self._warned_drop = True
        log.warning("mcp-sync %s: the notification callbacks are stuck (%d waiting, none "
                    "taken for %s s); dropping log, progress and cancellation notifications "
                    "until they catch up (counted in Client.dropped_notifications)",
                    self.name, self._callbacks.limit, self._callbacks.grace)

    def _fail_overloaded(self, method: str) -> None:
        """The callbacks are ``max_callbacks`` behind with notifications that must not be
        lost: fail the connection rather than lose one or grow (dispatch thread)."""
        if self._closed_error is not None:
            return  # failed already; the transport is closing
        error = ConnectionClosed(
            f"{self.name} sent more notifications than the client's callbacks could take: "
            f"{self._callbacks.limit} were waiting, none of them droppable, when "
            f"{excerpt(method, 100)} arrived; the connection was closed")
        log.error("mcp-sync %s", error)
        self._transport_closed(error)
        # The transport is closed on the reply thread: closing may take seconds (a stdio
        # child is given close_timeout to exit), and this thread must go on routing.
        if self._start_reply_thread():
            try:
                self._replies.put(_ABORT, timeout=self.close_timeout)
            except queue.Full:
                log.warning("could not close the transport of %s: its reply thread is "
                            "stuck", self.name)

    def follow_progress(self, token: str, on_progress: ProgressCallback) -> Callable[[], None]:
        """Route ``notifications/progress`` carrying ``token`` (a progress token the
        caller put in a request's ``_meta``, not a request id) to ``on_progress``, on the
        callback thread, until the returned function is called: progress that outlives
        its request's response (a task's). Returns the function that stops it."""
        with self._followed_lock:
            self._followed = {**self._followed, token: on_progress}

        def stop() -> None:
            with self._followed_lock:
                if token in self._followed:
                    followed = dict(self._followed)
                    del followed[token]
                    self._followed = followed

        return stop

    def _start_callback_thread(self) -> bool:
        """Start the callback thread unless it runs already; False once the session's
        threads are stopping (nothing would run the callback)."""
        with self._reply_lock:
            if self._replies_closed:
                return False
            if self._callback_thread is None:
                # A daemon like the others; _stop_threads stops and joins it.
                self._callback_thread = start_thread(self._callback_loop,
                                                     f"mcp-sync-callback-{self.name}")
            return True

    def _callback_loop(self) -> None:
        while True:
            ready, item = self._callbacks.get(_IDLE_WAIT)
            if not ready:
                continue
            if item is _STOP:
                return
            callback, args = item
            try:
                callback(*args)
            except Exception:
                log.exception("notification callback %s raised",
                              getattr(callback, "__qualname__", repr(callback)))

    def _serving_context(self, message: Dict[str, Any]) -> RequestContext:
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        return RequestContext(
            message["method"], message["id"],
            progress_token=meta.get("progressToken") if isinstance(meta, dict) else None,
            send_progress=self._send_progress,
            server_name=self.name, server_info=self.server_info(),
        )

    def server_info(self) -> Optional[Mapping[str, Any]]:
        """The server's ``serverInfo`` as the agreement holds it, or None before one is
        settled (a request sent during the handshake)."""
        agreement = self.agreement
        if agreement is None or not agreement.settled or not agreement.server_info:
            return None
        return agreement.server_info

    def _send_progress(self, params: Dict[str, Any]) -> None:
        self.notify("notifications/progress", params)

    def _server_cancelled(self, params: Dict[str, Any]) -> None:
        """The server cancelled one of its requests: mark its context (dispatch thread)."""
        request_id = params.get("requestId")
        if not valid_id(request_id):
            return  # a dict or list would not even hash
        with self._serving_lock:
            context = self._serving.get(request_id)
        if context is None:
            log.debug("%s cancelled id=%r, which is not being answered", self.name, request_id)
            return
        reason = params.get("reason")
        context.cancel(reason if isinstance(reason, str) else None)

    def _answer(self, message: Dict[str, Any], context: RequestContext) -> None:
        token = self.observe_serving(message["method"], message.get("params"), message["id"])
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
                    self.observe_served(token, None)
                response.add_done_callback(
                    lambda settled: self._answer_later(message, context, settled))
                return
            if token is not None:
                error = (_answer_error(response) if response is not None else RequestCancelled(
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
            self.observe_served(token, error)
        with self._serving_lock:
            if self._serving.get(context.request_id) is context:
                del self._serving[context.request_id]

    def _answer_later(self, message: Dict[str, Any], context: RequestContext,
                      settled: Future[Any]) -> None:
        """Send the answer a handler deferred (it returned a Future), once it is settled;
        on the thread that settled it. A cancelled future, or a request the server
        cancelled (or the closing link did) meanwhile, is not answered."""
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
                          excerpt(message["method"], 100), self.name, failure)
                response["error"] = {"code": INTERNAL_ERROR,
                                     "message": "the client failed to answer"}
            if context.cancelled.is_set() or self._closed_error is not None:
                return
            try:
                self.transport.send(response)
            except TransportError as exc:
                log.info("could not answer %s id=%s from %s: %r",
                         excerpt(message["method"], 100),
                         excerpt(repr(message["id"]), 80), self.name, exc)
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
        if context.cancelled.is_set():
            log.debug("not answering %s id=%r from %s: cancelled before it started", method,
                      request_id, self.name)
            return None
        response: Dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        handler = self.request_handlers[method]
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
                              "it failed", excerpt(method, 100), self.name)
            response["error"] = {"code": INTERNAL_ERROR, "message": _HANDLER_FAILED.get(
                method, "the client's handler failed")}
        if context.cancelled.is_set():
            # The server gave up on it (or the link is gone): an answer would be noise.
            log.debug("not answering %s id=%r from %s: cancelled (%s)", method, request_id,
                      self.name, context.cancel_reason or "no reason given")
            return None
        try:
            self.transport.send(response)
        except TransportError as exc:
            log.info("could not answer %s id=%s from %s: %r", excerpt(method, 100),
                     excerpt(repr(request_id), 80), self.name, exc)
        return response


class _Serving:
    """An observer's token for a server request, with the observer it belongs to."""

    __slots__ = ("observer", "token")

    def __init__(self, observer: RequestObserver, token: Any) -> None:
        self.observer = observer
        self.token = token


def _answer_error(response: Dict[str, Any]) -> Optional[ServerError]:
    """The error an answer to the server carries, as a :class:`ServerError`, or None."""
    error = response.get("error")
    if error is None:
        return None
    return ServerError(error["code"], error["message"])


def _merge_key(method: str, params: Any) -> Optional[Any]:
    """What makes two change notifications say the same, or None (never merged)."""
    if method.endswith("/list_changed"):
        return method
    if method == "notifications/resources/updated" and isinstance(params, dict):
        uri = params.get("uri")
        if isinstance(uri, str):
            return (method, uri)
    return None


def _progress_event(params: Dict[str, Any]) -> Dict[str, Any]:
    """A progress notification's fields as span event attributes (numbers and a cut
    message; whatever else the server sent is left out)."""
    attributes: Dict[str, Any] = {}
    for key in ("progress", "total"):
        value = params.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            attributes[key] = value
    message = params.get("message")
    if isinstance(message, str):
        attributes["message"] = excerpt(message, 200)
    return attributes


def _run_progress(on_progress: ProgressCallback, params: Dict[str, Any]) -> None:
    total = params.get("total")
    on_progress(
        float(params.get("progress", 0)),
        None if total is None else float(total),
        params.get("message"),
    )


def to_wire(value: Any) -> Any:
    """A result as JSON data: pydantic models are dumped by alias, None becomes {}."""
    if value is None:
        return {}
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        return dump(by_alias=True, exclude_none=True, mode="json")
    return value


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
