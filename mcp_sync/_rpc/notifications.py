"""The server's notifications (:class:`Notifications`): what each does to the session,
done by the dispatch thread as it routes it, and the callbacks it calls, run in wire
order on the callback thread.

Thread: ``mcp-sync-callback-<name>``, started with the first callback it must run (a
notification with a callback, or the connection-lost report): it runs notification
callbacks (progress, logging, list changes, ``on_notification``) one at a time, in the
order the server sent them, each inside its own ``try``. A daemon, like every thread of
the library (``_util/threads.py``); it ends at :data:`~.queues.STOP` from
:meth:`Notifications.stop`, which ``close()`` calls before joining it with a bound.

Its queue is a :class:`~.queues.CallbackQueue` of ``max_callbacks`` entries: full, the
dispatch thread waits up to ``grace`` for room (callbacks that are only behind lose
nothing); once they take none in that time they are stuck, and then log messages,
progress and cancellations are dropped (one warning, then counted in
:attr:`Notifications.dropped`), a repeated change notification is merged, and a
notification that may not be lost, with nothing droppable to make room for it, fails the
connection.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional

from .._util.threads import start_thread
from ..exceptions import ConnectionClosed, excerpt
from .core import ProgressCallback, RequestTable
from .link import IDLE_WAIT
from .observer import (
    ObservedFuture,
    ObservedSession,
    RequestObserver,
    observe_served,
    observe_serving,
    progress_attributes,
)
from .queues import STOP, Admission, CallbackQueue

if TYPE_CHECKING:
    from .link import Link
    from .serving import ServerRequests

__all__ = ["NotificationCallback", "Notifications", "merge_key"]

log = logging.getLogger(__name__)

#: Called on the callback thread for every notification: ``(method, params)``.
NotificationCallback = Callable[[str, Optional[Dict[str, Any]]], None]

# Notifications the callback queue may drop when it is full: what they do to the session
# (move a deadline, cancel a handler) is done on the dispatch thread already. A task's
# status notification only wakes its poller early: the next tasks/get tells the same.
_DROPPABLE = frozenset({"notifications/message", "notifications/progress",
                        "notifications/cancelled", "notifications/tasks/status"})


def merge_key(method: str, params: Any) -> Optional[Any]:
    """What makes two change notifications say the same, or None (never merged)."""
    if method.endswith("/list_changed"):
        return method
    if method == "notifications/resources/updated" and isinstance(params, dict):
        uri = params.get("uri")
        if isinstance(uri, str):
            return (method, uri)
    return None


def _run_progress(on_progress: ProgressCallback, params: Dict[str, Any]) -> None:
    total = params.get("total")
    on_progress(
        float(params.get("progress", 0)),
        None if total is None else float(total),
        params.get("message"),
    )


class Notifications:
    """Routes the server's notifications (dispatch thread) and runs their callbacks (the
    callback thread).

    ``_lock`` guards ``_thread`` and ``_closed``: starting the callback thread against
    :meth:`stop` and :meth:`rename`. ``_followed_lock`` guards writes of ``_followed``,
    which is copied on write and read without it. ``_warned_drop`` is the dispatch
    thread's.

    Args:
        link: the transport and its state.
        table: the pending requests (progress pushes their deadlines out).
        server_requests: the server's requests being answered (a cancellation marks one).
        session: the :class:`~.session.RpcSession` the observer is told of.
        observer: told of each notification around its routing (or None).
        on_notification: called with every notification.
        on_close: called once with the error, after every notification that came
            before it, when the connection was lost (:meth:`connection_lost`).
        limit, grace: the callback queue's bound and its wait for room.
        fail: fails the connection (``RpcSession``), when a notification that may not be
            lost finds the callbacks stuck.
    """

    def __init__(self, link: Link, table: RequestTable, server_requests: ServerRequests,
                 session: ObservedSession, *, observer: Optional[RequestObserver],
                 on_notification: Optional[NotificationCallback],
                 on_close: Optional[Callable[[ConnectionClosed], None]],
                 limit: int, grace: float,
                 fail: Callable[[ConnectionClosed], None]) -> None:
        self._link = link
        self._table = table
        self._server_requests = server_requests
        self._session = session
        self._observer = observer
        self.on_notification = on_notification
        self.on_close = on_close
        self._fail = fail
        #: The callbacks waiting for the callback thread.
        self.callbacks = CallbackQueue(limit, grace=grace)
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()
        self._closed = False  # stop() was called: no thread starts any more
        self._warned_drop = False
        # Progress tokens of the client's own choosing (not request ids) and who gets
        # their notifications: follow_progress().
        self._followed: Dict[str, ProgressCallback] = {}
        self._followed_lock = threading.Lock()

    @property
    def dropped(self) -> int:
        """Notifications dropped because the callbacks were ``limit`` behind."""
        return self.callbacks.dropped

    # -- the dispatch thread -------------------------------------------------------------

    def route(self, method: str, params: Any) -> None:
        """Do what a notification does to the session and queue its callbacks."""
        token = observe_serving(self._observer, self._session, method, params, None)
        if token is None:
            self._handle(method, params)
            return
        error: Optional[BaseException] = None
        try:
            self._handle(method, params)
        except BaseException as exc:
            error = exc
            raise
        finally:
            observe_served(token, error)

    def _handle(self, method: str, params: Any) -> None:
        if method == "notifications/cancelled" and isinstance(params, dict):
            self._server_requests.cancelled(params)
        if method == "notifications/progress" and isinstance(params, dict):
            token = params.get("progressToken")
            entry = self._table.progress(token, time.monotonic())
            if entry is not None and type(entry.future) is ObservedFuture:
                entry.future.note(method, progress_attributes(params))
            if entry is not None and entry.on_progress is not None:
                self._queue(_run_progress, (entry.on_progress, params), method, params)
            elif entry is None and self._followed and type(token) is str:
                follower = self._followed.get(token)
                if follower is not None:
                    self._queue(_run_progress, (follower, params), method, params)
        if self.on_notification is not None:
            self._queue(self.on_notification, (method, params), method, params)

    def connection_lost(self) -> None:
        """The transport closed: if it was lost (not closed by ``close()``), report it
        to ``on_close`` on the callback thread, behind the notifications queued before
        it."""
        if self.on_close is not None and self._link.lost and self._start():
            self.callbacks.put_control((self.on_close, (self._link.closed_copy(),)))

    def _queue(self, callback: Callable[..., None], args: Any, method: str,
               params: Any) -> None:
        """Queue a callback for a notification; on a full queue, apply the policy of
        :class:`CallbackQueue`."""
        if self._thread is None and not self._start():
            return  # closing: no callback runs any more
        admission = self.callbacks.put((callback, args), droppable=method in _DROPPABLE,
                                       key=merge_key(method, params))
        if admission is Admission.QUEUED or admission is Admission.MERGED:
            if self.callbacks.dropped and not self._warned_drop:
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
                    self._link.name, self.callbacks.limit, self.callbacks.grace)

    def _fail_overloaded(self, method: str) -> None:
        """The callbacks are ``limit`` behind with notifications that must not be lost:
        fail the connection rather than lose one or grow."""
        if self._link.closed_error is not None:
            return  # failed already; the transport is closing
        error = ConnectionClosed(
            f"{self._link.name} sent more notifications than the client's callbacks could "
            f"take: {self.callbacks.limit} were waiting, none of them droppable, when "
            f"{excerpt(method, 100)} arrived; the connection was closed")
        log.error("mcp-sync %s", error)
        self._fail(error)

    # -- any thread ----------------------------------------------------------------------

    def follow_progress(self, token: str, on_progress: ProgressCallback) -> Callable[[], None]:
        """:meth:`RpcSession.follow_progress`: route progress carrying ``token`` to
        ``on_progress`` until the returned function is called."""
        with self._followed_lock:
            self._followed = {**self._followed, token: on_progress}

        def stop() -> None:
            with self._followed_lock:
                if token in self._followed:
                    followed = dict(self._followed)
                    del followed[token]
                    self._followed = followed

        return stop

    def stop(self) -> Optional[threading.Thread]:
        """Start no thread any more and tell the running one to end once it ran the
        callbacks queued before; returns it, for the caller to join."""
        self.callbacks.put_control(STOP)
        with self._lock:
            self._closed = True
            return self._thread

    def rename(self, name: str) -> None:
        with self._lock:  # the thread is started under it, named after the link's name
            if self._thread is not None:
                self._thread.name = f"mcp-sync-callback-{name}"

    # -- the callback thread -------------------------------------------------------------

    def _start(self) -> bool:
        """Start the callback thread unless it runs already; False once the session's
        threads are stopping (nothing would run the callback)."""
        with self._lock:
            if self._closed:
                return False
            if self._thread is None:
                # A daemon like the others; stop() ends it and close() joins it.
                self._thread = start_thread(self._loop, f"mcp-sync-callback-{self._link.name}")
            return True

    def _loop(self) -> None:
        while True:
            ready, item = self.callbacks.get(IDLE_WAIT)
            if not ready:
                continue
            if item is STOP:
                return
            callback, args = item
            try:
                callback(*args)
            except Exception:
                log.exception("notification callback %s raised",
                              getattr(callback, "__qualname__", repr(callback)))
