"""The inbound side of a session (:class:`Dispatcher`): what the transport's reader hands
over, and the dispatch thread that routes it.

Thread: ``mcp-sync-dispatch-<name>``, started by ``RpcSession.start()``: it takes messages
off the :class:`~.queues.Inbox` the transport's reader fills, resolves response futures,
expires requests whose deadline passed (:meth:`~.outbound.Outbound.expire_due`), and
routes notifications (:class:`~.notifications.Notifications`) and server requests
(:class:`~.serving.ServerRequests`). It never runs user code and never writes to the
transport, so nothing a server or a callback does can stall it. A daemon, like every
thread of the library (``_util/threads.py``); it ends at :data:`~.queues.STOP`
(:meth:`Dispatcher.stop`), which ``close()`` sends before joining it with a bound.

The response to a blocked ``request()`` usually skips the thread: the reader resolves it
itself (:meth:`Dispatcher.deliver`, :meth:`Dispatcher.enqueue`), one thread hand-off fewer
per call, whenever wire order allows.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import TYPE_CHECKING, Any, Dict, Optional

from .._protocol.messages import ANSWERS, Kind, classify, malformation
from .._util.threads import start_thread
from ..exceptions import excerpt
from .core import RequestTable
from .link import IDLE_WAIT
from .queues import CLOSED, STOP, WAKE

if TYPE_CHECKING:
    from .link import Link
    from .notifications import Notifications
    from .outbound import Outbound
    from .queues import Inbox
    from .serving import ServerRequests

__all__ = ["Dispatcher"]

log = logging.getLogger(__name__)


class Dispatcher:
    """Takes what the transport's reader(s) deliver and routes it, on the dispatch
    thread or, for a response a blocked caller waits for, on the reader's own.

    No lock of its own: ``_thread`` is set by ``start()`` before the transport can
    deliver anything, and read by the session's own thread. The inbox's counters and
    the table have their own rules (:class:`~.queues.Inbox`,
    :class:`~.core.RequestTable`).
    """

    def __init__(self, link: Link, inbox: Inbox, table: RequestTable, outbound: Outbound,
                 server_requests: ServerRequests, notifications: Notifications) -> None:
        self._link = link
        self._inbox = inbox
        self._table = table
        self._outbound = outbound
        self._server_requests = server_requests
        self._notifications = notifications
        self._thread: Optional[threading.Thread] = None

    def start(self) -> None:
        """Start the dispatch thread."""
        # A daemon like the others; stop() ends it and close() joins it.
        self._thread = start_thread(self._loop, f"mcp-sync-dispatch-{self._link.name}")

    def stop(self) -> Optional[threading.Thread]:
        """Tell the dispatch thread to end (and readers waiting for room to give up);
        returns it, for the caller to join."""
        self._inbox.stop()
        return self._thread

    def rename(self, name: str) -> None:
        if self._thread is not None:
            self._thread.name = f"mcp-sync-dispatch-{name}"

    # -- the reader's thread -------------------------------------------------------------

    def deliver(self, message: Any, first: bool = False) -> None:
        """The reader's callback (single-reader transports): the response to a blocked
        ``request()`` is resolved right here, one thread hand-off fewer per call, when
        nothing delivered earlier is still waiting for dispatch; everything else goes
        through the inbox as usual.

        Wire order is kept: the fast path is taken only when every message this reader
        queued before has been routed (one stream: ``first`` adds nothing).
        """
        inbox = self._inbox
        if (inbox.queued == inbox.routed and type(message) is dict and "method" not in message
                and self._resolve_direct(message)):
            return
        if inbox.queued - inbox.routed >= inbox.limit and not inbox.room():
            log.debug("dropping a message from %s: the session is closing", self._link.name)
            return
        inbox.queued += 1  # this reader is its only writer
        inbox.messages.put(message)

    def enqueue(self, message: Any, first: bool = False) -> None:
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
        if not self._inbox.put_shared(message):
            log.debug("dropping a message from %s: the session is closing", self._link.name)

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
            return self._table.settle_direct(request_id, message["result"])
        entry = self._table.get(request_id)
        if entry is not None and entry.direct:
            kind = classify(message)
            if kind in ANSWERS and self._table.resolve(message, kind) is not None:
                return True
        return False

    # -- the dispatch thread -------------------------------------------------------------

    def _loop(self) -> None:
        inbox = self._inbox
        messages = inbox.messages
        table = self._table
        outbound = self._outbound
        while True:
            next_deadline = table.next_deadline()
            now = time.monotonic()
            wait = IDLE_WAIT
            if next_deadline is not None:
                wait = min(wait, max(0.0, next_deadline - now))
            inbox.wake_at = now + wait
            try:
                message = messages.get(timeout=wait)
            except queue.Empty:
                # Nothing came in time: a deadline may be due. (Not None: a message may
                # be any JSON value, null too, and each one is routed and counted.)
                message = WAKE
            if message is STOP:
                return
            if message is CLOSED:
                table.fail_all(self._link.closed_copy)
                self._notifications.connection_lost()
            elif message is not WAKE:
                try:
                    self.route(message)
                except Exception:
                    log.exception("error routing a message from %s", self._link.name)
                inbox.routed += 1
                if inbox.readers_waiting and inbox.queued - inbox.routed <= inbox.limit // 2:
                    inbox.wake_readers()
            # Deadlines are looked at only when the earliest may be due: not per message.
            if message is WAKE or (
                next_deadline is not None and time.monotonic() >= next_deadline
            ):
                outbound.expire_due()

    def route(self, message: Any) -> None:
        """Route one message from the inbox (dispatch thread)."""
        kind = classify(message)
        if kind in ANSWERS:
            if self._table.resolve(message, kind) is not None:
                return
            if kind is Kind.MALFORMED_RESPONSE:
                log.warning("mcp-sync %s: skipping a malformed response to unknown or late "
                            "id=%s: %s", self._link.name, excerpt(repr(message.get("id")), 80),
                            malformation(message))
            else:
                log.debug("ignoring response for unknown or late id=%s from %s",
                          excerpt(repr(message.get("id")), 80), self._link.name)
        elif kind is Kind.NOTIFICATION:
            self._notifications.route(message["method"], message.get("params"))
        elif kind is Kind.REQUEST:
            self._server_requests.route(message)
        else:
            log.warning("mcp-sync %s: skipping a message that is not JSON-RPC: %s",
                        self._link.name, excerpt(repr(message), 200))
