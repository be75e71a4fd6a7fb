"""One configured server of a Manager: its state, its client of the moment, its reconnects and
circuit breaker, its last known tools and pins, its one safe retry of a call.
"""

from __future__ import annotations

import collections
import enum
import logging
import threading
import time
from dataclasses import dataclass
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Deque,
    Dict,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
)

from .._util.threads import join_or_warn, start_thread
from ..client import Client
from ..client._connect import make_transport
from ..client._toolpins import ToolChange, ToolPins
from ..exceptions import (
    ClientNotConnected,
    ConnectionClosed,
    HTTPError,
    InvalidToolCall,
    ListingTooLarge,
    MCPError,
    TransportError,
)
from ._toolcache import ToolCache, cache_key

if TYPE_CHECKING:
    from .. import types
    from ..config import Config, ServerConfig

__all__ = ["ServerState", "ServerStatus", "ServerUnavailable"]

log = logging.getLogger(__name__)


_T = TypeVar("_T")


# The refresher and idle waits wake at least this often; nothing is polled, this only
# bounds every wait in the module.
_IDLE_WAIT = 5.0


# The longest step of a client's close() (the client's default): a manager with a short
# close_timeout gives its clients shorter steps (see Manager's close_timeout).
_CLIENT_CLOSE_TIMEOUT = 2.0


class ServerState(str, enum.Enum):
    """Where a managed server stands."""

    DISABLED = "disabled"          #: disabled in the configuration; never connected
    CONNECTING = "connecting"      #: the first connection attempt is under way
    CONNECTED = "connected"
    RECONNECTING = "reconnecting"  #: down; a background thread is reconnecting it
    FAILED = "failed"              #: down for good: the breaker opened (or reconnect=False,
                                   #: a configuration error, a tool list past its bounds)
    CLOSED = "closed"              #: the manager was closed

    def __str__(self) -> str:
        return self.value


class ServerUnavailable(ConnectionClosed):
    """The managed server is not connected (reconnecting, failed, disabled or closed).

    Raised at once, without waiting; the request was never sent (``request_sent`` is
    False). ``server`` and ``state`` say which and why; the last connection error is the
    ``__cause__``.
    """

    request_sent = False

    def __init__(self, message: str, *, server: str, state: ServerState,
                 exit_code: Optional[int] = None, stderr_tail: Sequence[str] = ()) -> None:
        self.server = server
        self.state = state
        super().__init__(message, exit_code=exit_code, stderr_tail=stderr_tail)


@dataclass(frozen=True)
class ServerStatus:
    """A snapshot of one managed server (see :meth:`Manager.status`)."""

    name: str
    state: ServerState
    #: ``"stdio"``, ``"http"`` or ``"sse"``.
    transport: str
    #: The last connection error (``None`` once connected again).
    error: Optional[BaseException]
    #: How many tools are listed for it (the last known list while it reconnects).
    tools: int
    #: Failures (failed connects, lost connections) inside the breaker's window.
    recent_failures: int
    #: When the current connection was made (``time.time()``), if connected.
    connected_since: Optional[float]
    server_name: Optional[str] = None
    server_version: Optional[str] = None
    protocol_version: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        """A JSON-ready dict (the error as its message)."""
        return {
            "name": self.name,
            "state": self.state.value,
            "transport": self.transport,
            "error": None if self.error is None else str(self.error),
            "tools": self.tools,
            "recentFailures": self.recent_failures,
            "connectedSince": self.connected_since,
            "serverName": self.server_name,
            "serverVersion": self.server_version,
            "protocolVersion": self.protocol_version,
        }


@dataclass(frozen=True)
class _Settings:
    """What every server of one manager shares: the manager's options and hooks."""

    config: Config
    environ: Optional[Mapping[str, str]]
    client_kwargs: Mapping[str, Any]
    reconnect: bool
    backoff: Tuple[float, ...]
    breaker_failures: int
    breaker_window: float
    close_timeout: float  # the manager's: its clients get a quarter of it, 2 s at most
    on_status: Optional[Callable[[ServerStatus], None]]
    on_tools_changed: Optional[Callable[[str, List[types.Tool]], None]]
    notification_handler: Optional[Callable[[str, Optional[Dict[str, Any]]], Any]]
    on_connection_lost: Optional[Callable[[Any], Any]]
    on_list_changed: Callable[[str], None]  # the manager's refresher, given the server name
    tool_cache: Optional[ToolCache]


class _Server:
    """One configured server and everything about it: its state, its client, its
    reconnect thread with the backoff between attempts, its circuit breaker and its last
    known tools.

    Can be shared between threads. ``_changed`` (a Condition) guards every field below
    and is notified whenever one changes; it is never held while talking to the server
    or calling user code (``on_status``, ``on_tools_changed``).

    Threads: ``mcp-sync-reconnect-<server>`` connects, with the backoff between
    attempts; at most one attempts at a time (``_worker``), though one that has just
    given up may still be reporting its last status when the next starts.
    :meth:`begin_close` starts ``mcp-sync-close-<server>`` to close the client, and
    :meth:`join` joins every thread started with a bound.
    """

    def __init__(self, name: str, transport: str, enabled: bool, settings: _Settings,
                 hidden: Callable[[str], Optional[str]] = lambda tool: None) -> None:
        self.name = name
        self.transport = transport
        self._settings = settings
        # enabledTools/disabledTools: why the configuration hides a tool, or None
        self._hidden = hidden
        self._changed = threading.Condition()
        self._state = ServerState.CONNECTING if enabled else ServerState.DISABLED
        self._client: Optional[Client] = None
        # Whether a client of this server connected before (a reconnect invalidates).
        self._connected_before = False
        self._error: Optional[BaseException] = None
        self._tools: Optional[List[types.Tool]] = None
        self._connected_since: Optional[float] = None
        # the breaker: failures inside its window (monotonic), and ever, so that a waiter
        # can tell "an attempt failed since"
        self._failures: Deque[float] = collections.deque()
        self._failure_count = 0
        self._worker: Optional[threading.Thread] = None  # the one attempting to connect
        self._threads: List[threading.Thread] = []  # started and maybe alive: for join()
        self._closed = False
        self._wake = threading.Event()  # cuts a backoff wait short (close, reconnect())
        self._first_attempt = threading.Event()
        # the key of its tool-cache file: the configuration as written, no secret values
        self._cache_key = cache_key(settings.config.raw(name)) if (
            settings.tool_cache is not None and enabled) else None
        #: Each tool's definition as first seen, shared by every client of this server
        #: (so a reconnect forgets none) and saved with its tool cache file.
        self.pins = ToolPins()
        # Makes the tool-cache writes one at a time, each of the state as it is then:
        # a listing's write and an accepted change's may come from two threads.
        self._saving = threading.Lock()

    @property
    def state(self) -> ServerState:
        with self._changed:
            return self._state

    # -- connecting ----------------------------------------------------------------------

    def start(self) -> bool:
        """Start the first connection attempt in the background; False when there is none
        to make (disabled, closed, or already started)."""
        with self._changed:
            if self._closed or self._worker is not None or (
                    self._state is not ServerState.CONNECTING):
                return False
            self._start_worker(first_delay=0.0)
            return True

    def load_cached_tools(self) -> None:
        """List the tools saved in the tool cache until the first connection lists the
        live ones, and pin the definitions saved with them (nothing without a cache, or
        once tools are known)."""
        cache, key = self._settings.tool_cache, self._cache_key
        if cache is None or key is None:
            return
        with self._changed:
            if self._tools is not None or self._state is not ServerState.CONNECTING:
                return
        saved = cache.read(key, self.name)  # file I/O: outside the lock
        if saved is None:
            return
        self.pins.seed(saved.pins)
        tools = saved.tools
        if tools is None:
            return
        # saved as offered then; enabledTools/disabledTools (not in the key) apply as now
        tools = self._offered(tools)
        with self._changed:
            if self._tools is None and self._state is ServerState.CONNECTING:
                self._tools = tools
                self._changed.notify_all()

    def wait_ready(self, timeout: Optional[float]) -> bool:
        """Wait until the server is connected (True), or will not be soon: failed,
        disabled or closed (False at once), or until ``timeout`` passed (False)."""
        with self._changed:
            self._changed.wait_for(
                lambda: self._closed or self._state not in (
                    ServerState.CONNECTING, ServerState.RECONNECTING),
                timeout,
            )
            return not self._closed and self._state is ServerState.CONNECTED

    def wait_first_attempt(self, timeout: Optional[float]) -> bool:
        """Wait until the first attempt has finished (or the server closed); False if
        ``timeout`` passed first."""
        return self._first_attempt.wait(timeout)

    def reconnect(self, timeout: Optional[float]) -> ServerStatus:
        """Reset the breaker and, if the server is down, attempt to connect now; wait for
        that attempt (at most ``timeout``) and return the status.

        Raises:
            ClientNotConnected: the manager was closed.
        """
        with self._changed:
            self._require_open()
            if self._state in (ServerState.CONNECTED, ServerState.DISABLED):
                return self._status()
            self._failures.clear()
            failures_before = self._failure_count
            self._state = ServerState.RECONNECTING
            if self._worker is None:
                self._start_worker(first_delay=0.0)
            else:
                self._wake.set()
            self._changed.wait_for(
                lambda: self._state is not ServerState.RECONNECTING
                or self._failure_count > failures_before or self._closed,
                timeout,
            )
            return self._status()

    def _start_worker(self, first_delay: float) -> None:
        """Start the reconnect thread. Caller holds ``_changed``."""
        assert self._worker is None
        self._wake.clear()
        # Started under _changed, which the worker holds whenever it sets _worker.
        thread = start_thread(self._run_worker, f"mcp-sync-reconnect-{self.name}", first_delay)
        self._worker = thread
        self._threads = [t for t in self._threads if t.is_alive()]
        self._threads.append(thread)

    def _delays(self, first_delay: float) -> Iterator[float]:
        backoff = self._settings.backoff
        yield first_delay
        index = 0 if first_delay == 0 else 1
        while True:
            yield backoff[min(index, len(backoff) - 1)]
            index += 1

    def _run_worker(self, first_delay: float) -> None:
        """Attempt to connect until connected, the breaker opens, or the server closes."""
        for delay in self._delays(first_delay):
            if delay > 0:
                self._wake.wait(delay)
            self._wake.clear()
            with self._changed:
                if self._closed:
                    self._worker = None
                    return
            try:
                client, tools = self._attempt()
            except Exception as exc:  # noqa: BLE001 - any failure is one failed attempt
                from ..config import ConfigError

                log.info("connecting %s failed: %s", self.name, exc)
                with self._changed:
                    if self._closed:
                        self._worker = None
                        return
                    stop = self._record_failure(exc)
                    if isinstance(exc, (ConfigError, ListingTooLarge)) and not stop:
                        # waiting will not fix the configuration, nor a listing past the
                        # client's bounds (a retry would fetch it again); reconnect()
                        # after fixing
                        self._state, stop = ServerState.FAILED, True
                    if stop:
                        self._worker = None
                    self._first_attempt.set()
                    self._changed.notify_all()
                self._notify_status()
                if stop:
                    return
                continue
            with self._changed:
                closed = self._closed
                self._worker = None
                if not closed:
                    self._client = client
                    self._connected_before = True
                    self._tools = tools
                    self._error = None
                    self._state = ServerState.CONNECTED
                    self._connected_since = time.time()
                    self._first_attempt.set()
                    self._changed.notify_all()
            if closed:
                _close_quietly(client)
                return
            log.info("connected %s (%s, protocol %s)", self.name, self.transport,
                     client.protocol_version)
            self._notify_status()
            self._tools_changed(tools)
            if not client.connected:  # died before its loss could be reported to us
                self.connection_lost(client, ConnectionClosed(
                    f"connection to {self.name} closed right after connecting"))
            return

    def _attempt(self) -> Tuple[Client, List[types.Tool]]:
        """One connection attempt, with the configuration resolved now."""
        resolved = self._settings.config.resolve(self.name, self._settings.environ)
        client = self._new_client(resolved, None)
        try:
            client.connect()
        except HTTPError as exc:
            if resolved.type != "http" or resolved.type_given or exc.status not in (
                    400, 404, 405):
                raise
            log.info("%s answered HTTP %s; trying the legacy HTTP+SSE transport",
                     self.name, exc.status)
            client = self._new_client(resolved, "sse")
            client.connect()
        if self._connected_before:
            # A client in place of a lost one (the server may have restarted): what it
            # notified meanwhile was missed, so every cached result of it is stale.
            client.invalidate_cache()
        try:
            return client, self._offered(_fetch_tools(client))
        except BaseException:
            _close_quietly(client)
            raise

    def _new_client(self, resolved: ServerConfig, kind: Optional[str]) -> Client:
        settings = self._settings
        entry = resolved.to_entry()
        if kind is not None:
            entry["type"] = kind
        transport = make_transport(entry, name=self.name)
        kwargs = dict(settings.client_kwargs)
        if resolved.timeout is not None:
            kwargs["timeout"] = resolved.timeout
        kwargs["close_timeout"] = min(_CLIENT_CLOSE_TIMEOUT, settings.close_timeout / 4)

        def on_notification(method: str, params: Optional[Dict[str, Any]]) -> None:
            if method == "notifications/tools/list_changed":
                settings.on_list_changed(self.name)
            if settings.notification_handler is not None:
                settings.notification_handler(method, params)

        def on_lost(error: Any) -> None:
            self.connection_lost(client, error)
            if settings.on_connection_lost is not None:
                settings.on_connection_lost(error)

        client = Client(transport, name=self.name, notification_handler=on_notification,
                        on_connection_lost=on_lost, tool_pins=self.pins, **kwargs)
        return client

    # -- the breaker and lost connections ------------------------------------------------

    def _prune_failures(self, now: float) -> None:
        while self._failures and self._failures[0] < now - self._settings.breaker_window:
            self._failures.popleft()

    def _record_failure(self, error: BaseException) -> bool:
        """Count a failure; True when the server must stop reconnecting. Caller holds
        ``_changed`` and sets the state."""
        settings = self._settings
        now = time.monotonic()
        self._failures.append(now)
        self._failure_count += 1
        self._prune_failures(now)
        if not settings.reconnect:
            self._state = ServerState.FAILED
            self._error = error
            return True
        if len(self._failures) > settings.breaker_failures:
            self._state = ServerState.FAILED
            message = (f"{self.name} failed {len(self._failures)} times in "
                       f"{settings.breaker_window:g} s; not reconnecting (last error: {error})")
            breaker = ServerUnavailable(message, server=self.name, state=ServerState.FAILED)
            breaker.__cause__ = error
            self._error = breaker
            log.error("%s", message)
            return True
        self._state = ServerState.RECONNECTING
        self._error = error
        return False

    def connection_lost(self, client: Client, error: BaseException) -> None:
        """``client`` lost its connection: count it, close it, reconnect in the background.

        Called from the dead client's callback thread (``on_connection_lost``) or from a
        caller that saw the connection error first; only the first report counts.
        """
        with self._changed:
            if self._closed or self._client is not client or (
                    self._state is not ServerState.CONNECTED):
                return
            log.warning("lost the connection to %s: %s", self.name, error)
            stop = self._record_failure(error)
            if not stop and self._worker is None:
                self._start_worker(first_delay=self._settings.backoff[0])
            self._changed.notify_all()
        _close_quietly(client)
        self._notify_status()

    def _await_reconnect(self, old: Client, bound: float) -> Optional[Client]:
        """Wait for the next connect attempt; the new client, or None if that attempt
        failed, the server gave up or closed, or ``bound`` passed."""
        with self._changed:
            failures_before = self._failure_count

            def settled() -> bool:
                return self._closed or self._failure_count > failures_before or (
                    self._state is ServerState.FAILED) or (
                    self._state is ServerState.CONNECTED and self._client is not old)

            self._changed.wait_for(settled, bound)
            if self._state is ServerState.CONNECTED and self._client is not old:
                return self._client
            return None

    # -- calls ---------------------------------------------------------------------------

    def client(self) -> Client:
        """The connected client, or an error at once.

        Raises:
            ServerUnavailable: the server is not connected now.
            ClientNotConnected: the manager was closed.
        """
        with self._changed:
            self._require_open()
            client = self._client
            if self._state is ServerState.CONNECTED and client is not None:
                return client
            state, error = self._state, self._error
        reason = error.reason if isinstance(error, ConnectionClosed) else error
        detail = f" (last error: {_first_line(reason)})" if reason is not None else ""
        what = {
            ServerState.RECONNECTING: "is down and reconnecting",
            ServerState.CONNECTING: "is still connecting",
            ServerState.FAILED: "failed and is not being reconnected",
            ServerState.DISABLED: "is disabled in the configuration",
            ServerState.CLOSED: "is closed",
        }.get(state, f"is {state.value}")
        closed = error if isinstance(error, ConnectionClosed) else None
        unavailable = ServerUnavailable(
            f"server {self.name!r} {what}{detail}", server=self.name, state=state,
            exit_code=closed.exit_code if closed else None,
            stderr_tail=closed.stderr_tail if closed else (),
        )
        unavailable.__cause__ = error
        raise unavailable

    def call(self, call: Callable[[Client], _T], safe: Callable[[BaseException], bool],
             bound: float) -> _T:
        """``call(client)`` on the connected client; if the connection breaks meanwhile,
        wait (at most ``bound``) for one reconnect and call once more when ``safe(error)``
        (or when nothing was sent).

        Raises:
            ServerUnavailable: the server is not connected now. ClientNotConnected: the
            manager was closed. Whatever ``call`` raises.
        """
        client = self.client()
        try:
            return call(client)
        except ClientNotConnected:
            with self._changed:
                replaced = not self._closed and (
                    self._client is not client or self._state is not ServerState.CONNECTED)
            if not replaced:
                raise
            # This server closed the client (its link had died) between the lookup and
            # the call: nothing was sent, so any call may wait for the reconnect.
            replacement = self._await_reconnect(client, bound)
            return call(replacement or self.client())
        except TransportError as exc:
            if not isinstance(exc, ConnectionClosed) and client.connected:
                raise  # an error on a live link (an HTTP status): not a lost connection
            self.connection_lost(client, exc)
            if not safe(exc):
                raise
            replacement = self._await_reconnect(client, bound)
            if replacement is None:
                raise
            log.info("retrying on the new connection to %s after: %s", self.name, exc)
            return call(replacement)

    def retry_rule(self, tool: str) -> Callable[[Optional[BaseException]], bool]:
        """Whether a failed call of ``tool`` may be sent again, given its error: the
        tool's last known annotations say it is read-only or idempotent, or the error
        says the request never reached the server."""
        with self._changed:
            known = {t.name: t for t in self._tools or ()}
        annotations = getattr(known.get(tool), "annotations", None)
        hinted = annotations is not None and bool(
            annotations.read_only_hint or annotations.idempotent_hint)

        def safe(error: Optional[BaseException]) -> bool:
            return hinted or getattr(error, "request_sent", None) is False

        return safe

    def _require_open(self) -> None:
        """Caller holds ``_changed``."""
        if self._closed:
            raise ClientNotConnected("this Manager is closed")

    # -- tools ---------------------------------------------------------------------------

    def listed_tools(self, refresh: bool) -> List[types.Tool]:
        """The tools to list (unqualified): the last known ones while connected,
        reconnecting or still connecting (then only cached ones are known), fetched now
        with ``refresh`` if connected; none otherwise."""
        if self.state not in _LISTED:
            return []
        current = self.refresh_tools() if refresh else None
        if current is None:
            with self._changed:
                current = list(self._tools or ())
        return current

    def refresh_tools(self) -> Optional[List[types.Tool]]:
        """Fetch the tools again, if connected; None when not connected or the fetch
        failed (logged)."""
        with self._changed:
            client = self._client if self._state is ServerState.CONNECTED else None
        if client is None:
            return None
        try:
            tools = self._offered(_fetch_tools(client))
        except MCPError as exc:
            log.warning("could not refresh the tools of %s: %s", self.name, exc)
            return None
        with self._changed:
            if self._client is not client:
                return None
            self._tools = tools
        self._tools_changed(tools)
        return tools

    def _offered(self, tools: List[types.Tool]) -> List[types.Tool]:
        """``tools`` less those the configuration hides (enabledTools/disabledTools)."""
        offered = []
        for tool in tools:
            reason = self._hidden(tool.name)
            if reason is None:
                offered.append(tool)
            else:
                log.debug("%s: hiding the tool %r (%s)", self.name, tool.name, reason)
        return offered

    def refuse_hidden(self, tool: str, called_as: str) -> None:
        """Refuse a call to a tool the configuration hides.

        Raises:
            InvalidToolCall: ``tool`` is hidden by enabledTools/disabledTools.
        """
        reason = self._hidden(tool)
        if reason is not None:
            raise InvalidToolCall(
                f"tool {tool!r} of server {self.name!r} is disabled by the configuration "
                f"({reason})", tool=called_as)

    def blocked_changes(self) -> List[ToolChange]:
        """The blocked changes of the tools the configuration does not hide."""
        return [change for change in self.pins.changes() if self._hidden(change.tool) is None]

    def accept_changes(self, tool: Optional[str]) -> List[ToolChange]:
        """Accept the blocked change of ``tool`` (every one with None) and, when
        connected, list the tools again so that the tool is listed (and saved with the
        new pins); the changes accepted."""
        with self._changed:
            client = self._client if self._state is ServerState.CONNECTED else None
        if client is None:
            accepted = self.pins.accept(tool)
            if accepted:
                self._save(None)
            return accepted
        accepted = client.accept_tool_changes(tool)
        if accepted:
            self.refresh_tools()
        return accepted

    def _save(self, listed: Optional[List[types.Tool]]) -> None:
        """Save the tools (the last known ones; ``listed`` when none are known) and the
        pins in the tool cache, as they are now. Called outside ``_changed``."""
        cache, key = self._settings.tool_cache, self._cache_key
        if cache is None or key is None:
            return
        with self._saving:
            with self._changed:
                tools = list(self._tools) if self._tools is not None else listed
            if tools is not None:
                cache.store(key, self.name, tools, self.pins.pinned())

    def _tools_changed(self, tools: List[types.Tool]) -> None:
        """A listing was fetched: save it in the tool cache (with the pins), tell
        ``on_tools_changed``. Called outside the lock."""
        self._save(tools)
        on_tools_changed = self._settings.on_tools_changed
        if on_tools_changed is None:
            return
        try:
            on_tools_changed(self.name, list(tools))
        except Exception:
            log.exception("on_tools_changed raised for %s", self.name)

    # -- status --------------------------------------------------------------------------

    def status(self) -> ServerStatus:
        """A snapshot of this server."""
        with self._changed:
            return self._status()

    def _status(self) -> ServerStatus:
        """Caller holds ``_changed``."""
        self._prune_failures(time.monotonic())
        client = self._client
        connected = self._state is ServerState.CONNECTED and client is not None
        info = _server_info(client) if connected and client is not None else {}
        return ServerStatus(
            name=self.name,
            state=self._state,
            transport=self.transport,
            error=self._error,
            tools=len(self._tools or ()) if self._state in _LISTED else 0,
            recent_failures=len(self._failures),
            connected_since=self._connected_since if connected else None,
            server_name=info.get("name"),
            server_version=info.get("version"),
            protocol_version=client.protocol_version if connected and client else None,
        )

    def _notify_status(self) -> None:
        """Call on_status (outside the lock)."""
        on_status = self._settings.on_status
        if on_status is None:
            return
        status = self.status()
        try:
            on_status(status)
        except Exception:
            log.exception("on_status raised for %s", self.name)

    # -- closing -------------------------------------------------------------------------

    def begin_close(self) -> None:
        """Stop reconnecting and start closing the client on ``mcp-sync-close-<server>``,
        without waiting (:meth:`join` waits). Idempotent."""
        with self._changed:
            if self._closed:
                return
            self._closed = True
            self._wake.set()
            if self._state is not ServerState.DISABLED:
                self._state = ServerState.CLOSED
            self._first_attempt.set()
            self._changed.notify_all()
            if self._client is not None:
                self._threads.append(start_thread(
                    _close_quietly, f"mcp-sync-close-{self._client.name}", self._client))

    def join(self, deadline: float) -> None:
        """Join this server's threads until ``deadline`` (monotonic); log those still
        running then."""
        with self._changed:
            threads = list(self._threads)
        _join(threads, deadline, self._settings.close_timeout)


# The states whose last known tools are listed.
_LISTED = (ServerState.CONNECTED, ServerState.RECONNECTING, ServerState.CONNECTING)


def _close_quietly(client: Client) -> None:
    try:
        client.close()
    except Exception:
        log.exception("error closing the client of %s", client.name)


def _always_safe(error: BaseException) -> bool:
    return True


def _fetch_tools(client: Client) -> List[types.Tool]:
    return client.list_tools()  # empty for a server without the tools capability


def _join(threads: Sequence[threading.Thread], deadline: float, close_timeout: float) -> None:
    """Join each thread until ``deadline`` (monotonic); log those still running then."""
    for thread in threads:
        join_or_warn(thread, close_timeout, "closing the manager", log, deadline=deadline)


def _first_line(error: Any) -> str:
    text = str(error) or type(error).__name__
    return text.splitlines()[0]


def _server_info(client: Client) -> Dict[str, Any]:
    try:
        info = client.server_info
    except MCPError:
        return {}
    return {"name": info.name, "version": info.version}
