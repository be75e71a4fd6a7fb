"""The client's connection: what its helpers share, and the life of its sessions.

A :class:`~mcp_sync.Client` owns one :class:`Connection` and gives it, and nothing else,
to its helpers. The connection holds the client's settings (its name and info, the
version pinned, the log level, and the four groups of :mod:`._settings`), the session of
the moment and the agreement negotiated on it, its state and its lock; and the helpers
that live as long as it does, each made with the connection itself: the listings
(:mod:`._listing`), the subscriptions (:mod:`._subscriptions`), the callbacks the
server reaches (:mod:`._callbacks`), the rounds every request goes through
(:mod:`._rounds`), the tasks (:mod:`._tasks`) and the extensions (:mod:`._extensions`).
Each helper sees the connection through a small Protocol in its own module that names
what it uses (``ListingConnection`` ...); none imports this module.

The connection opens each session (:meth:`Connection.connect`, and
:meth:`Connection.renew` after the server forgot its MCP session), negotiates on it,
reports its loss, and closes it (:meth:`Connection.close`). Can be shared between
threads: ``lock`` serialises connecting, renewing and closing.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Sequence

from .._parsing import load_models
from .._protocol import DEFAULT, Timeout
from .._rpc.core import ProgressCallback
from .._rpc.session import RpcSession
from .._util.threads import join_or_warn
from ..exceptions import (
    CapabilityError,
    ClientNotConnected,
    ForkedClientError,
    MCPError,
    RequestTimeout,
    SessionExpired,
    excerpt,
)
from ..transports.base import Transport, server_label
from ._caching import CacheOption, ClientCache
from ._callbacks import ServerCallbacks
from ._extensions import ClientExtensions
from ._listing import Listings
from ._negotiation import client_offer, negotiate
from ._rounds import RoundsRunner
from ._settings import Handlers, Limits, Timeouts, ToolChecks
from ._subscriptions import ClientSubscriptions
from ._tasks.calls import ClientTasks
from ._tasks.executor import TaskExecutor

if TYPE_CHECKING:
    from .._protocol.agreement import Agreement
    from .._rpc.session import RequestObserver
    from ..extensions import Extension

__all__ = ["Connection", "State", "stop_share"]

# The client's logger: these messages were always the client's.
log = logging.getLogger("mcp_sync.client")

# The share of a connect's timeout (never more than close_timeout) kept to stop a server
# that did not answer, so that the stop fits inside the timeout too (Connection.connect).
_STOP_SHARE = 0.1


def stop_share(timeout: float, close_timeout: float) -> float:
    """What a connect's ``timeout`` keeps to stop a server that did not answer."""
    return min(close_timeout, timeout * _STOP_SHARE)


class State(enum.Enum):
    NEW = "new"
    CONNECTED = "connected"
    CLOSED = "closed"


class Connection:
    """The link to one server, as a client's helpers share it; see the module docstring.

    Settings are read at each use: an application may change one after the client is
    made (``client.timeout = 5`` sets ``connection.timeouts.timeout``).
    """

    def __init__(
        self,
        transport: Transport,
        *,
        name: str,
        name_derived: bool,
        client_info: Mapping[str, Any],
        requested_protocol_version: Optional[str],
        log_level: Optional[str],
        timeouts: Timeouts,
        limits: Limits,
        handlers: Handlers,
        tool_checks: ToolChecks,
        observer: Optional[RequestObserver],
        extensions: Sequence[Extension] = (),
        cache: CacheOption = None,
    ) -> None:
        self.transport = transport
        self.name = name
        # A label derived from the target gives way to the server's own name.
        self._name_derived = name_derived
        self.client_info = client_info
        self.requested_protocol_version = requested_protocol_version
        #: The log level sent in every request's envelope (2026-07-28).
        self.log_level = log_level
        self.timeouts = timeouts
        self.limits = limits
        self.handlers = handlers
        self.tool_checks = tool_checks
        # Told of each session's requests and of its start and end (tracing and
        # metrics); None when they are off.
        self._observer = observer
        #: The logger of the server's log messages (``mcp_sync.server.<name>``).
        self.server_log = logging.getLogger(f"mcp_sync.server.{name}")
        #: Guards the connection state: connecting, renewing and closing run one at a
        #: time (an RLock: a renewal opens a session as a connect does).
        self.lock = threading.RLock()
        self.state = State.NEW
        #: The session of the moment (a new one on each connect and renewal).
        self.session: Optional[RpcSession] = None
        #: What the session settled on with the server; None before the first connect.
        self.agreement: Optional[Agreement] = None
        #: The tasks the current session runs for the server (``handler_tasks``); a new
        #: one with each session.
        self.executor: Optional[TaskExecutor] = None
        # The session whose handshake succeeded; only its loss is reported.
        self._connected_session: Optional[RpcSession] = None
        # What a session-era session holds that a new one must be told again (renew):
        # the level set (the resources subscribed are counted by the subscriptions).
        self._session_log_level: Optional[str] = None
        #: The response cache (2026-07-28) and its view of the moment.
        self.caching = ClientCache(self, cache)
        self.listings = Listings(self)
        self.subscriptions = ClientSubscriptions(self)
        self.callbacks = ServerCallbacks(self)
        self.rounds = RoundsRunner(self)
        self.tasks = ClientTasks(self)
        #: The tasks extension and the user's: what is advertised, what the server's
        #: notifications and unusual results belong to.
        self.extensions = ClientExtensions(self, extensions)

    # -- what the helpers ask ------------------------------------------------------------

    @property
    def connected(self) -> bool:
        """True between a successful connect and a close (or the link dying); False in
        a process forked after connecting."""
        session = self.session
        return (self.state is State.CONNECTED and session is not None
                and not session.closed and not session.forked)

    @property
    def is_open(self) -> bool:
        """False once closed (task waiters stop)."""
        return self.state is not State.CLOSED

    @property
    def carries_headers(self) -> bool:
        """Whether the transport's messages carry headers (``Mcp-Param-*``)."""
        return self.transport.carries_headers

    def live_session(self) -> RpcSession:
        """The session of the moment.

        Raises:
            ClientNotConnected: never connected, or closed.
        """
        session = self.session
        if session is None or self.state is State.NEW:
            raise ClientNotConnected(f"client for {self.name} is not connected; call connect()")
        if self.state is State.CLOSED:
            raise ClientNotConnected(f"client for {self.name} is closed; call connect() again")
        return session

    def require_agreement(self) -> Agreement:
        """The agreement.

        Raises:
            ClientNotConnected: the client has not connected yet.
        """
        agreement = self.agreement
        if agreement is None:
            raise ClientNotConnected(f"client for {self.name} has not connected yet")
        return agreement

    def stateless(self) -> bool:
        agreement = self.agreement
        return agreement is not None and agreement.stateless

    def has_capability(self, *path: str) -> bool:
        """Whether the server declared the capability at ``path`` (``"tools",
        "listChanged"``).

        Raises:
            ClientNotConnected: the client has not connected yet.
        """
        node: Any = self.require_agreement().capabilities
        for key in path:
            if not isinstance(node, dict) or key not in node:
                return False
            node = node[key]
        return node is not None and node is not False

    def offers(self, *path: str) -> bool:
        """Whether the server declared the capability at ``path``. A closed client raises
        (``ClientNotConnected``), saying so rather than what its last server could do.

        Listings of what the server does not offer are empty; calls that need it raise
        (:meth:`require_capability`).
        """
        self.live_session()
        return self.has_capability(*path)

    def require_capability(self, what: str, *path: str) -> None:
        """Raises ``CapabilityError`` naming ``what`` unless the server declared the
        capability at ``path``."""
        if not self.offers(*path):
            raise CapabilityError(
                f"{self.name} does not support {what} (capability {'.'.join(path)!r} "
                "not declared)"
            )

    def request(self, method: str, params: Optional[Dict[str, Any]] = None, *,
                timeout: Timeout = DEFAULT,
                on_progress: Optional[ProgressCallback] = None) -> Any:
        """Send a request and block for its result (a dict), with the retries of
        :mod:`._rounds` (a renewed session, a version switch); no input rounds.

        Raises:
            RequestTimeout, ServerError, ConnectionClosed, ProtocolError, ClientNotConnected.
        """
        return self.rounds.round_trip(method, params, timeout=timeout, on_progress=on_progress,
                                      inputs=False)

    def adopt(self, agreement: Agreement, session: RpcSession) -> None:
        """Make ``agreement`` the connection's (a version switch, a log level in the
        stateless era's envelope), and hand it down to ``session``."""
        self.agreement = agreement
        session.agree(agreement)
        self.caching.rebind(agreement)

    def set_log_level(self, level: str, timeout: Timeout) -> None:
        """``Client.set_logging_level``: in the envelope of every later request
        (stateless era), or with ``logging/setLevel``, which a renewed session is told
        again."""
        if self.stateless():
            self.log_level = level
            self.adopt(self.require_agreement().with_log_level(level), self.live_session())
            return
        self.request("logging/setLevel", {"level": level}, timeout=timeout)
        self._session_log_level = level

    # -- the sessions ----------------------------------------------------------------------

    def connect(self, timeout: Optional[float]) -> None:
        """Start the transport and negotiate, within ``timeout`` seconds (see
        ``Client.connect``); nothing when connected already.

        Raises:
            ForkedClientError, CommandNotFound, TransportError,
            UnsupportedProtocolVersion, RequestTimeout: see ``Client.connect``.
        """
        with self.lock:
            if self.connected:
                return
            session = self.session
            if session is not None and session.forked:
                # The transport still holds the parent's process or HTTP session; starting
                # it again here would signal, or end, what the parent is using.
                raise ForkedClientError(
                    f"this client's connection to {self.name} was made in the parent process "
                    "before fork(); create a new client in this process"
                )
            if session is not None:
                session.close()
            self._open(timeout)

    def _open(self, timeout: Optional[float]) -> RpcSession:
        """A new session on the transport, negotiated within ``timeout`` seconds, the
        stop of the server after a failure included (see ``Client.connect``);
        ``self.lock`` held."""
        started = time.monotonic()
        close_timeout = self.timeouts.close_timeout
        deadline: Optional[float] = None
        if timeout is not None:
            deadline = started + timeout - stop_share(timeout, close_timeout)
        self.listings.forget()

        def lost(error: Any) -> None:
            if executor is not None:
                # No answer can reach the server now: end its tasks.
                executor.close("the connection to the server was lost")
            self._lost(session, error)

        if self.executor is not None:
            self.executor.close()
            self.executor = None
        executor = None
        if self.handlers.task_methods:
            executor = self.executor = TaskExecutor(limit=self.limits.max_handler_tasks,
                                                    close_timeout=close_timeout)
        timeouts = self.timeouts
        session = RpcSession(
            self.transport,
            name=self.name,
            request_handlers=self.callbacks.request_handlers(executor),
            on_notification=self.callbacks.on_notification,
            default_timeout=timeouts.timeout,
            reset_timeout_on_progress=timeouts.reset_timeout_on_progress,
            max_total_timeout=timeouts.max_total_timeout,
            close_timeout=close_timeout,
            on_close=lost,
            observer=self._observer,
        )
        if executor is not None:
            executor.serve(session)
        self.session = session
        try:
            session.start()
            if self.transport.starts_server:
                load_models()  # while the server starts (see load_models)
            self.agreement = None
            self.agreement = negotiate(session, client_offer(self, deadline))
            # A session that replaces one of this connection's: what the server notified
            # meanwhile was missed, so its cached results are stale.
            self.caching.bind(self.agreement, replaced=self._connected_session is not None)
        except BaseException as exc:
            within: Optional[float] = None
            if timeout is not None:  # what is left, and at least the stop's share
                within = max(started + timeout - time.monotonic(),
                             stop_share(timeout, close_timeout))
            session.close(error=exc, within=within)
            self.state = State.CLOSED
            if timeout is not None and isinstance(exc, RequestTimeout) and not exc.total:
                # The bound that ran out is the connect's, whichever request met it.
                raise RequestTimeout(exc.method, exc.request_id, timeout,
                                     exc.subject) from exc
            raise
        self._adopt_server_name(session)
        self.state = State.CONNECTED
        self._connected_session = session
        return session

    def renew(self, dead: RpcSession, cause: SessionExpired) -> RpcSession:
        """The server forgot the MCP session of ``dead`` (``cause``): start a new one on
        the same transport, as :meth:`connect` would, and replay what the old one held:
        the resources subscribed with ``resources/subscribe`` and the level set with
        ``logging/setLevel``. The agreement (server info, capabilities, instructions) is
        the new handshake's. Returns the live session; another thread that met the same
        loss meanwhile finds it renewed already.

        Raises:
            SessionExpired: the client was closed meanwhile (``cause``).
            MCPError: no new session (the client is then closed, and
                ``on_connection_lost`` told).
        """
        with self.lock:
            if self.session is not dead:
                return self.live_session()
            if self.state is not State.CONNECTED:
                raise cause
            uris = self.subscriptions.subscribed_uris()
            level = self._session_log_level
            log.info("mcp-sync %s: %s; starting a new session", self.name, cause.reason)
            dead.close(error=cause)
            try:
                session = self._open(self.timeouts.timeout)
            except MCPError as exc:
                log.warning("mcp-sync %s: no new session after the old one expired: %s",
                            self.name, exc)
                self._report_lost(exc)
                raise
            for uri in uris:
                self._replay(session, "resources/subscribe", {"uri": uri})
            if level is not None:
                self._replay(session, "logging/setLevel", {"level": level})
            return session

    def _replay(self, session: RpcSession, method: str, params: Dict[str, Any]) -> None:
        try:
            session.request(method, params)
        except MCPError as exc:
            log.warning("mcp-sync %s: could not repeat %s %s on the new session: %s",
                        self.name, method, excerpt(repr(params), 200), exc)

    def _adopt_server_name(self, session: RpcSession) -> None:
        """Name a server whose label was derived from its command or URL after the
        ``serverInfo.name`` it gave in the handshake (made a label: letters, digits,
        ``._-``), so that later messages, loggers and threads say which server it is."""
        if not self._name_derived:
            return
        info = self.agreement.server_info if self.agreement is not None else None
        given = info.get("name") if isinstance(info, dict) else None
        name = server_label(given) if isinstance(given, str) else ""
        if not name or name == self.name:
            return
        log.debug("%s calls itself %s: naming it so", self.name, name)
        self.name = name
        self.server_log = logging.getLogger(f"mcp_sync.server.{name}")
        session.rename(name)

    def _lost(self, session: RpcSession, error: Any) -> None:
        # On the dead session's callback thread; reads state without the lock (connect()
        # may hold it) and reports only a session that connected and was not closed.
        self.tasks.wake_all()  # a waiting task's next poll meets the loss
        if self._connected_session is not session or self.state is not State.CONNECTED:
            return
        if isinstance(error, SessionExpired):
            return  # not a dead connection: the next request starts a new session (renew)
        self._report_lost(error)

    def _report_lost(self, error: BaseException) -> None:
        callback = self.handlers.on_connection_lost
        if callback is None:
            return
        try:
            callback(error)
        except Exception:
            log.exception("on_connection_lost raised for %s", self.name)

    def close(self) -> None:
        """Close the session and every thread of the connection's (see
        ``Client.close``). Idempotent."""
        with self.lock:
            session = self.session
            self.state = State.CLOSED
            subscriptions = self.subscriptions.detach()
            self.listings.forget()
            executor, self.executor = self.executor, None
        for subscription in subscriptions:
            subscription.close(unsubscribe=False)  # no round trips: the client is closing
        if executor is not None:
            executor.close()  # the handlers of its tasks see their context cancelled
        if session is not None:
            session.close()
        # Task waiters wake, see the client closed and fail with ConnectionClosed; a
        # future's thread then ends.
        threads = self.tasks.closing()
        close_timeout = self.timeouts.close_timeout
        deadline = time.monotonic() + close_timeout
        for thread in threads:
            join_or_warn(thread, close_timeout, "closing the client", log, deadline=deadline)
