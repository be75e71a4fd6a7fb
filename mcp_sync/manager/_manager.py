"""The Manager: many servers behind one object (see the package's docstring)."""

from __future__ import annotations

import logging
import threading
import time
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
    overload,
)

from .._protocol import DEFAULT, Timeout
from .._util.threads import start_thread
from ..client import Client
from ..client._caching import cache_mode
from ..client._settings import TASK_START_OPTIONS, TOOL_CALL_OPTIONS, checked_options
from ..client._tasks.handles import FollowingTaskHandle, TaskHandle
from ..client._toolpins import ToolChange
from ..exceptions import (
    CapabilityError,
    ClientNotConnected,
    MCPError,
)
from ._server import (
    _IDLE_WAIT,
    _T,
    ServerState,
    ServerStatus,
    _always_safe,
    _join,
    _Server,
    _Settings,
)
from ._toolcache import DEFAULT_MAX_AGE, CacheOption, ToolCache

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .. import types
    from ..client._settings import TaskStartOptions, ToolCallOptions
    from ..config._format import Config, Source

__all__ = ["Manager"]

log = logging.getLogger(__name__)
















class _Refresher:
    """Fetches a server's tools again after ``notifications/tools/list_changed``, once
    per burst, on ``mcp-sync-refresh-manager``.

    ``_changed`` (a Condition) guards the schedule and ``_stopping``; it is never held
    while refreshing.
    """

    def __init__(self, debounce: float, refresh: Callable[[str], Any]) -> None:
        self._debounce = debounce
        self._refresh = refresh
        self._changed = threading.Condition()
        # server name -> (first notification, refresh due), monotonic seconds
        self._due: Dict[str, Tuple[float, float]] = {}
        self._stopping = False
        self._thread: Optional[threading.Thread] = None

    def schedule(self, name: str) -> None:
        """Refresh ``name`` once no notification has come for the debounce time, and
        never later than 5 times that after the first one."""
        with self._changed:
            now = time.monotonic()
            first, _ = self._due.get(name, (now, now))
            due = min(now + self._debounce, first + 5 * self._debounce)
            self._due[name] = (first, due)
            self._changed.notify_all()

    def start(self) -> None:
        with self._changed:
            if self._stopping or self._thread is not None:
                return
            self._thread = start_thread(self._run, "mcp-sync-refresh-manager")

    def stop(self) -> None:
        """Make the thread end (:meth:`join` waits)."""
        with self._changed:
            self._stopping = True
            self._changed.notify_all()

    def join(self, deadline: float, close_timeout: float) -> None:
        with self._changed:
            threads = [] if self._thread is None else [self._thread]
        _join(threads, deadline, close_timeout)

    def _run(self) -> None:
        while True:
            with self._changed:
                while True:
                    if self._stopping:
                        return
                    now = time.monotonic()
                    ready = [name for name, (_, due) in self._due.items() if due <= now]
                    if ready:
                        break
                    next_due = min((due for _, due in self._due.values()), default=None)
                    wait = _IDLE_WAIT if next_due is None else min(_IDLE_WAIT, next_due - now)
                    self._changed.wait(wait)
                for name in ready:
                    del self._due[name]
            for name in ready:
                try:
                    self._refresh(name)
                except Exception:  # the refresher must outlive any one server's trouble
                    log.exception("refreshing the tools of %s failed", name)


class Manager:
    """Clients for every enabled server of an ``mcpServers`` configuration.

    Can be shared between threads. Use it as a context manager, or call :meth:`connect`
    and :meth:`close`. A closed manager cannot connect again.

    Args:
        config: a file path, an ``{"mcpServers": {...}}`` dict, or a
            :class:`~mcp_sync.config.Config`.
        separator: joins server and tool names (``"<server>__<tool>"``); a server name may
            not contain it.
        reconnect: reconnect lost or failed servers in the background (default True).
        backoff: seconds to wait before each reconnect attempt; the last value repeats.
        breaker_failures, breaker_window: more than ``breaker_failures`` failures within
            ``breaker_window`` seconds stop the reconnects (state ``failed``).
        refresh_debounce: after ``tools/list_changed``, wait this long for the burst to
            end before fetching the tools once (never more than 5 times this after the
            first notification).
        connect_timeout: how long :meth:`connect` waits for the first attempts (``0``:
            it returns at once and the servers connect in the background; ``None``: no
            limit).
        retry_wait: how long a call whose connection broke waits for the reconnect before
            its error surfaces (when a retry is safe).
        close_timeout: the bound on :meth:`close`. Each client's close steps (waiting
            for a stdio server after closing its stdin, after SIGTERM, after SIGKILL,
            joining threads) get a quarter of it, 2 s at most, so that a server that must
            be killed still stops within it.
        on_status: ``on_status(status: ServerStatus)``, called on a manager or client
            thread whenever a server's state changes. Must not block.
        on_tools_changed: ``on_tools_changed(server: str, tools: list[types.Tool])``
            (unqualified names), called whenever a server's tool list is fetched.
        environ: the variables for ``${VAR}`` expansion (default ``os.environ``, read at
            every (re)connect).
        tool_cache: save each server's tool listing on disk and list the saved tools
            while the server is still connecting: ``True`` for the user's cache
            directory (``$XDG_CACHE_HOME/mcp_sync/tools`` or ``~/.cache/mcp_sync/tools``
            on Linux, ``~/Library/Caches/mcp_sync/tools`` on macOS,
            ``%LOCALAPPDATA%\\mcp_sync\\Cache\\tools`` on Windows), or a directory.
            Off by default.
        tool_cache_max_age: seconds after which a saved listing is no longer used
            (default 7 days). The pins saved with it (below) do not expire.
        on_tool_change: (a client keyword argument) what happens to a tool whose
            definition changed since it was first seen, on any server: ``"block"`` (the
            default), ``"warn"`` or a callable (see :class:`~mcp_sync.Client`). The
            manager keeps each server's pins across reconnects and, with
            ``tool_cache``, across runs (in the cache files), so a tool changed between
            yesterday's run and today's is blocked too; :meth:`tool_changes` lists the
            blocked changes, :meth:`accept_tool_changes` accepts them.
        **client_kwargs: for every :class:`~mcp_sync.Client` (``timeout``, handlers,
            ``max_list_items``, ``max_list_bytes``...); a server's ``timeout`` in the
            configuration overrides ``timeout``. The handlers are shared by the servers:
            inside one, ``mcp_sync.request_context().server_name`` is the key of the
            server that asks.

    Raises:
        ConfigError: the configuration is invalid.
        ValueError: a server name contains the separator.
    """

    def __init__(
        self,
        config: Source,
        *,
        separator: str = "__",
        reconnect: bool = True,
        backoff: Sequence[float] = (0.5, 1.0, 2.0, 4.0),
        breaker_failures: int = 5,
        breaker_window: float = 30.0,
        refresh_debounce: float = 0.2,
        connect_timeout: Optional[float] = 60.0,
        retry_wait: float = 10.0,
        close_timeout: float = 10.0,
        on_status: Optional[Callable[[ServerStatus], None]] = None,
        on_tools_changed: Optional[Callable[[str, List[types.Tool]], None]] = None,
        environ: Optional[Mapping[str, str]] = None,
        tool_cache: CacheOption = None,
        tool_cache_max_age: float = DEFAULT_MAX_AGE,
        **client_kwargs: Any,
    ) -> None:
        from ..config import load_config

        if not separator:
            raise ValueError("separator must be a non-empty string")
        if not backoff or any(delay < 0 for delay in backoff):
            raise ValueError("backoff must be a non-empty sequence of seconds >= 0")
        self.config: Config = load_config(config, environ=environ)
        #: The on-disk tool cache (``None``: off).
        self.tool_cache = ToolCache.from_option(tool_cache, tool_cache_max_age)
        self.separator = separator
        self.reconnect_enabled = reconnect
        self.backoff = tuple(float(delay) for delay in backoff)
        self.breaker_failures = breaker_failures
        self.breaker_window = breaker_window
        self.refresh_debounce = refresh_debounce
        self.connect_timeout = connect_timeout
        self.retry_wait = retry_wait
        self.close_timeout = close_timeout
        self.on_status = on_status
        self.on_tools_changed = on_tools_changed
        self.environ = environ
        notification_handler = client_kwargs.pop("notification_handler", None)
        on_connection_lost = client_kwargs.pop("on_connection_lost", None)
        client_kwargs.pop("name", None)  # each client is named after its server
        if "tool_pins" in client_kwargs:
            raise TypeError("a Manager keeps the pins of each server itself (tool_pins= is "
                            "for a Client); save them across runs with tool_cache=")
        self.client_kwargs = client_kwargs
        self._refresher = _Refresher(refresh_debounce, self._refresh)
        settings = _Settings(
            config=self.config, environ=environ, client_kwargs=client_kwargs,
            reconnect=reconnect, backoff=self.backoff, breaker_failures=breaker_failures,
            breaker_window=breaker_window, close_timeout=close_timeout, on_status=on_status,
            on_tools_changed=on_tools_changed, notification_handler=notification_handler,
            on_connection_lost=on_connection_lost, on_list_changed=self._refresher.schedule,
            tool_cache=self.tool_cache,
        )
        # in configuration order; fixed at construction
        self._servers: Dict[str, _Server] = {}
        for name in self.config.names:
            if separator in name:
                raise ValueError(
                    f"server name {name!r} contains the separator {separator!r}; rename it "
                    "or choose another separator"
                )
            shape = self.config.resolve(name, environ, lenient=True)
            self._servers[name] = _Server(name, shape.type, shape.enabled, settings,
                                          shape.tool_hidden)
        self._lock = threading.Lock()  # guards _started and _closing
        self._started = False
        self._closing = False
        # uri -> server, from the last list_resources()
        self._resource_owner: Dict[str, str] = {}

    @classmethod
    def from_config(cls, config: Optional[Source] = None, *, trust_project: bool = False,
                    **kwargs: Any) -> Manager:
        """A manager for ``config`` (a file path, a dict, or a ``Config``); not connected
        yet: use it in a ``with`` block or call :meth:`connect`. Keyword arguments are the
        constructor's (manager options and client keyword arguments).

        Without ``config``, the configuration is found by
        :func:`mcp_sync.config.discover_config`: the project's ``.mcp.json``,
        ``.cursor/mcp.json`` and ``.vscode/mcp.json``, then the user's Claude Desktop,
        Cursor and VS Code files, merged by server name (``environ``, when given, also
        places the user's files and their approvals). A project file is someone else's
        writing: its servers are started only once the user has trusted the file
        (``mcp-sync trust``, :mod:`mcp_sync.config.trust`), and are otherwise left out with a
        WARNING saying how to trust it (they are in ``manager.config.untrusted``); an
        untrusted project server never takes the place of the user's server of the same
        name. ``trust_project=True`` starts them all: the caller's explicit choice.
        A ``config`` you give is used as it is: naming it is the choice.

        Raises:
            ConfigError: the configuration is invalid, none was found, or every server
                found is in a project file that is not trusted (the error says how to
                trust it).
            ValueError: ``trust_project`` with a ``config`` (which needs no approval).
        """
        if config is None:
            from ..config import ConfigError, discover_config
            from ..config.trust import TRUSTED, untrusted_reason

            config = discover_config(environ=kwargs.get("environ"),
                                     trust_project=trust_project)
            if not config.names:
                why = "; ".join(f"{path} {untrusted_reason(state)}" for path, state
                                in config.project_files.items() if state != TRUSTED)
                raise ConfigError(
                    f"no MCP server to start: the servers found are in project files "
                    f"that need your approval ({why}); read them, then run `mcp-sync "
                    "trust FILE`, or pass trust_project=True")
        elif trust_project:
            raise ValueError("trust_project is for a discovered configuration; the "
                             "configuration you give needs no approval")
        return cls(config, **kwargs)

    # -- lifecycle -----------------------------------------------------------------------

    def __enter__(self) -> Manager:
        return self.connect()

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        states = ", ".join(f"{s.name}={s.state.value}" for s in self._servers.values())
        return f"<mcp_sync.Manager {states}>"

    def connect(self) -> Manager:
        """Connect every enabled server, in parallel; returns ``self``.

        Blocks until each server's first attempt has finished (at most
        ``connect_timeout``; not at all with ``0``). A server that fails does not stop the
        others: see :meth:`status`; with ``reconnect`` it keeps being retried in the
        background. Connecting a connected manager does nothing. With ``tool_cache``, a
        server's saved tools are read first, and listed until it has connected.

        Raises:
            ClientNotConnected: the manager was closed.
        """
        with self._lock:
            if self._closing:
                raise ClientNotConnected("this Manager is closed; create a new one")
            if self._started:
                return self
        for server in self._servers.values():
            server.load_cached_tools()  # file I/O: outside the lock
        with self._lock:
            if self._closing:
                raise ClientNotConnected("this Manager is closed; create a new one")
            if self._started:
                return self
            self._started = True
            starting = [server for server in self._servers.values() if server.start()]
            self._refresher.start()
        if self.connect_timeout == 0:
            return self
        deadline = None if self.connect_timeout is None else (
            time.monotonic() + self.connect_timeout)
        for server in starting:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not server.wait_first_attempt(remaining):
                log.warning("%s is still connecting after %s s", server.name,
                            self.connect_timeout)
        return self

    def close(self) -> None:
        """Close every client and stop every thread. Idempotent.

        Returns within ``close_timeout`` (a connect attempt stuck in its handshake is left
        to finish, bounded by the client's timeout, and is closed then).
        """
        with self._lock:
            if self._closing:
                return
            self._closing = True
        deadline = time.monotonic() + self.close_timeout
        # every server begins closing before any is waited for: they stop at once
        self._refresher.stop()
        for server in self._servers.values():
            server.begin_close()
        for server in self._servers.values():
            server.join(deadline)
        self._refresher.join(deadline, self.close_timeout)

    # -- servers and their state ---------------------------------------------------------

    @property
    def servers(self) -> List[str]:
        """Every configured server's name, in configuration order (disabled ones too)."""
        return list(self._servers)

    def __iter__(self) -> Iterator[str]:
        return iter(self._servers)

    def __len__(self) -> int:
        return len(self._servers)

    def __contains__(self, name: object) -> bool:
        return name in self._servers

    def __getitem__(self, name: str) -> Client:
        """The connected :class:`~mcp_sync.Client` of server ``name``.

        The object changes when the server reconnects: do not keep it.

        Raises:
            KeyError: no such server.
            ServerUnavailable: the server is not connected now.
        """
        return self._client_for(self._server(name))

    def _server(self, name: str) -> _Server:
        server = self._servers.get(name)
        if server is None:
            raise KeyError(f"no server {name!r} in the configuration "
                           f"(servers: {', '.join(self._servers) or 'none'})")
        return server

    def status(self) -> Dict[str, ServerStatus]:
        """A snapshot of every configured server, in configuration order."""
        return {name: server.status() for name, server in self._servers.items()}

    def reconnect(self, name: str) -> ServerStatus:
        """Reset the breaker of server ``name`` and, if it is down, reconnect it now.

        Blocks until that attempt has finished (at most ``connect_timeout``); returns the
        server's status. A connected server is left alone.

        Raises:
            KeyError: no such server.
            ClientNotConnected: the manager is not connected, or closed.
        """
        server = self._server(name)
        self._require_started()
        return server.reconnect(self.connect_timeout)

    def wait_ready(self, name: Optional[str] = None, timeout: Optional[float] = None) -> bool:
        """Block until server ``name`` (with ``None``: every enabled server) is connected,
        at most ``timeout`` seconds (``None``: no limit); True when it is.

        Returns False at once for a server that will not connect soon (failed, disabled,
        or the manager closed), and False when ``timeout`` passed first. A server that is
        connecting or reconnecting is waited for. Can be called from any thread; the
        server may be down again by the time the caller uses it.

        Raises:
            KeyError: no such server.
            ClientNotConnected: the manager is not connected, or closed.
        """
        servers = [self._server(name)] if name is not None else [
            s for s in self._servers.values() if s.state is not ServerState.DISABLED]
        self._require_started()
        deadline = None if timeout is None else time.monotonic() + timeout
        ready = True
        for server in servers:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready = server.wait_ready(remaining) and ready
        return ready

    def _require_started(self) -> None:
        with self._lock:
            closing, started = self._closing, self._started
        if closing:
            raise ClientNotConnected("this Manager is closed")
        if not started:
            raise ClientNotConnected("this Manager is not connected: call connect() or use "
                                     "it in a with block")

    def _refresh(self, name: str) -> None:
        """Fetch ``name``'s tools again (the refresher, after ``tools/list_changed``)."""
        self._servers[name].refresh_tools()

    # -- names ---------------------------------------------------------------------------

    def qualify(self, server: str, name: str) -> str:
        """``"<server><separator><name>"``."""
        return f"{server}{self.separator}{name}"

    def split_name(self, qualified: str) -> Tuple[str, str]:
        """``(server, name)`` from a qualified name.

        Raises:
            ValueError: it has no separator. KeyError: no such server.
        """
        server, separator, name = qualified.partition(self.separator)
        if not separator or not name:
            raise ValueError(f"{qualified!r} is not a qualified name "
                             f"('<server>{self.separator}<name>')")
        self._server(server)
        return server, name

    def _route(self, first: str, second: Any, rest: Any) -> Tuple[str, str, Any]:
        """``(server, name, arguments)`` from ``(qualified, arguments)`` or
        ``(server, name, arguments)``."""
        if isinstance(second, str):
            return first, second, rest
        if rest is not None:
            raise TypeError("give (qualified_name, arguments) or (server, name, arguments)")
        server, name = self.split_name(first)
        return server, name, second

    def _client_for(self, server: _Server) -> Client:
        """The server's connected client, or ServerUnavailable at once."""
        self._require_started()
        return server.client()

    # -- calls with one safe retry -------------------------------------------------------

    def _with_retry(self, server: _Server, safe: Callable[[BaseException], bool],
                    call: Callable[[Client], _T], timeout: Timeout) -> _T:
        self._require_started()
        bound = self.retry_wait
        if isinstance(timeout, (int, float)):
            bound = min(bound, float(timeout))
        return server.call(call, safe, bound)

    def safe_to_retry(self, server: str, tool: str,
                      error: Optional[BaseException] = None) -> bool:
        """Whether a call of ``tool`` on ``server`` that failed may be sent again: the rule
        :meth:`call_tool` applies to its own retry, for callers that retry on their own
        (a task queue's retry, a redelivered message).

        True when ``error`` says the request never reached the server (its
        ``request_sent`` is False), or when the tool is annotated ``readOnlyHint`` or
        ``idempotentHint`` in the server's last known tool list. With no ``error`` (the
        call's fate is unknown: the process that made it was lost), only the annotations
        count. Never blocks on the server.

        Raises:
            KeyError: no such server.
        """
        return self._server(server).retry_rule(tool)(error)

    # -- tools ---------------------------------------------------------------------------

    def tool_changes(self, server: Optional[str] = None) -> List[ToolChange]:
        """The tools (of ``server``, or of every server) whose definition changed since it
        was pinned and whose change ``on_tool_change`` blocked: not listed, and refused
        with :class:`~mcp_sync.ToolChanged`, until :meth:`accept_tool_changes`. Never
        blocks.

        Raises:
            KeyError: no such server.
        """
        servers = [self._server(server)] if server is not None else list(
            self._servers.values())
        return [change for item in servers for change in item.blocked_changes()]

    def accept_tool_changes(self, server: str, tool: Optional[str] = None
                            ) -> List[ToolChange]:
        """Accept the blocked change of ``tool`` of ``server`` (of every blocked tool of
        it with None): the new definition becomes the tool's pin (saved in the tool
        cache, when there is one), and the tool is listed and callable again. A
        connected server's tools are listed again before this returns (blocking, bounded
        by the client's timeout). Returns the changes accepted.

        Raises:
            KeyError: no such server.
        """
        return self._server(server).accept_changes(tool)

    def list_tools(self, *, refresh: bool = False) -> types.ToolList:
        """Every server's tools, named ``<server><separator><tool>``, in configuration order,
        as a list (a ``types.ToolList``, which Jupyter shows as a table).

        Served from the cache: fetched at connect and after ``tools/list_changed``; a
        server that is reconnecting keeps its last known tools listed; a failed or
        disabled one lists none. ``refresh=True`` asks every connected client for its list
        now (a client itself caches the list while its server promises
        ``list_changed`` notifications).

        Raises:
            ClientNotConnected: the manager is not connected.
        """
        self._require_started()
        from .. import types

        tools = types.ToolList()
        for server in self._servers.values():
            tools.extend(
                tool.model_copy(update={"name": self.qualify(server.name, tool.name)})
                for tool in server.listed_tools(refresh)
            )
        return tools

    @overload
    def call_tool(
        self, name: str, arguments: Optional[Mapping[str, Any]] = None, /,
        **options: Unpack[ToolCallOptions],
    ) -> types.CallToolResult: ...

    @overload
    def call_tool(
        self, server: str, tool: str, arguments: Optional[Mapping[str, Any]] = None, /,
        **options: Unpack[ToolCallOptions],
    ) -> types.CallToolResult: ...

    def call_tool(
        self,
        name: str,
        tool_or_arguments: Union[str, Mapping[str, Any], None] = None,
        arguments: Optional[Mapping[str, Any]] = None,
        /,
        **options: Unpack[ToolCallOptions],
    ) -> types.CallToolResult:
        """Call a tool: ``call_tool("server__tool", args)`` or
        ``call_tool("server", "tool", args)``. Blocks for the result.

        ``options`` are :meth:`Client.call_tool`'s (:class:`~mcp_sync.ToolCallOptions`:
        ``timeout``, ``on_progress``, ``meta``, ``raise_on_error``, ``task``, ``ttl``). A
        task tool runs as a task (2025-11-25), polled until its result (see
        docs/tasks.md); to start one and collect its result later, use
        :meth:`start_tool_task`.

        A result with ``isError: true`` is returned, as by :meth:`Client.call_tool`;
        ``raise_on_error=True`` raises :class:`~mcp_sync.ToolError` instead (never retried:
        the tool ran).

        A server that is down fails at once (:class:`ServerUnavailable`). If the connection
        breaks during the call, the call waits for one reconnect attempt (at most
        ``retry_wait``) and is retried once when safe: the request never reached the
        server, or the tool is annotated ``readOnlyHint`` or ``idempotentHint``.

        A tool the configuration hides (``enabledTools``, ``disabledTools``) is refused
        with :class:`~mcp_sync.InvalidToolCall`; nothing is sent.

        Raises:
            KeyError: unknown server. InvalidToolCall: the tool is disabled by the
            configuration. ServerUnavailable, ConnectionClosed, RequestTimeout,
            ServerError, ProtocolError, ToolError, TypeError: as :meth:`Client.call_tool`.
        """
        checked_options(options, TOOL_CALL_OPTIONS, "call_tool")
        server_name, tool, args = self._route(name, tool_or_arguments, arguments)
        server = self._server(server_name)
        server.refuse_hidden(tool, self.qualify(server_name, tool))
        return self._with_retry(
            server, server.retry_rule(tool),
            lambda client: client.call_tool(tool, args, **options),
            options.get("timeout", DEFAULT),
        )

    # -- tasks (2025-11-25) ----------------------------------------------------------------

    @overload
    def start_tool_task(
        self, name: str, arguments: Optional[Mapping[str, Any]] = None, /,
        **options: Unpack[TaskStartOptions],
    ) -> TaskHandle: ...

    @overload
    def start_tool_task(
        self, server: str, tool: str, arguments: Optional[Mapping[str, Any]] = None, /,
        **options: Unpack[TaskStartOptions],
    ) -> TaskHandle: ...

    def start_tool_task(
        self,
        name: str,
        tool_or_arguments: Union[str, Mapping[str, Any], None] = None,
        arguments: Optional[Mapping[str, Any]] = None,
        /,
        **options: Unpack[TaskStartOptions],
    ) -> TaskHandle:
        """Start a tool as a task and return at once with its :class:`~mcp_sync.TaskHandle`:
        ``start_tool_task("server__tool", args)`` or
        ``start_tool_task("server", "tool", args)`` (see :meth:`Client.start_tool_task`;
        ``options`` are its :class:`~mcp_sync.TaskStartOptions`: ``ttl``, ``timeout``,
        ``meta``).

        The handle belongs to the server, not to one connection: each of its requests
        goes to the server's client of the moment. After a reconnect the server may not
        know the task any more (a new stdio process, or a server that keeps tasks per
        MCP session): the handle's next request raises :class:`~mcp_sync.TaskNotFound`;
        a wait that was under way when the connection was lost raises
        :class:`~mcp_sync.ConnectionClosed`, and a request while the server is down
        :class:`ServerUnavailable`. Keep ``handle.id`` (and the server's name) to
        re-attach with :meth:`task`.

        The ``tools/call`` is retried after a lost connection by :meth:`call_tool`'s
        rule (the request never reached the server, or the tool is annotated read-only
        or idempotent).

        Raises:
            KeyError: unknown server. InvalidToolCall: the configuration hides the tool.
            ServerUnavailable, CapabilityError, ValueError, ProtocolError, RequestTimeout,
            ServerError, ConnectionClosed: as :meth:`Client.start_tool_task`.
        """
        checked_options(options, TASK_START_OPTIONS, "start_tool_task")
        server_name, tool, args = self._route(name, tool_or_arguments, arguments)
        server = self._server(server_name)
        server.refuse_hidden(tool, self.qualify(server_name, tool))
        handle = self._with_retry(
            server, server.retry_rule(tool),
            lambda client: client.start_tool_task(tool, args, **options),
            options.get("timeout", DEFAULT),
        )
        return _server_task(server, handle)

    def task(self, server: str, task_id: str) -> TaskHandle:
        """A :class:`~mcp_sync.TaskHandle` for task ``task_id`` of ``server``, started
        earlier (by this manager, another process, an earlier request). Sends nothing;
        the handle follows the server across reconnects, as :meth:`start_tool_task`'s
        does (the server may not know the id over a new connection:
        :class:`~mcp_sync.TaskNotFound`).

        Raises:
            KeyError: no such server. ServerUnavailable: the server is not connected now.
            ClientNotConnected: the manager is not connected, or closed.
        """
        entry = self._server(server)
        return _server_task(entry, self._client_for(entry).task(task_id))

    def list_tasks(self, server: Optional[str] = None, *,
                   timeout: Timeout = DEFAULT) -> List[Tuple[str, types.Task]]:
        """The tasks servers list (``tasks/list``), as ``(server, task)`` pairs: the tasks
        of ``server``, or with ``None`` those of every connected server that lists tasks
        (in configuration order; a server that fails is logged and skipped, one that does
        not declare ``tasks.list`` lists none). Retried once after a lost connection.

        Raises:
            KeyError: no such server. ServerUnavailable: ``server`` is not connected.
            CapabilityError: ``server`` does not declare ``tasks.list``.
            ClientNotConnected: the manager is not connected, or closed.
        """
        if server is not None:
            entry = self._server(server)
            tasks = self._with_retry(entry, _always_safe,
                                     lambda client: client.list_tasks(timeout=timeout),
                                     timeout)
            return [(server, task) for task in tasks]
        self._require_started()
        listed: List[Tuple[str, types.Task]] = []
        for entry in self._servers.values():
            if entry.state is not ServerState.CONNECTED:
                continue
            try:
                tasks = entry.client().list_tasks(timeout=timeout)
            except CapabilityError:
                continue
            except MCPError as exc:
                log.warning("tasks/list of %s failed: %s", entry.name, exc)
                continue
            listed.extend((entry.name, task) for task in tasks)
        return listed

    def cancel_task(self, server: str, task_id: str, *,
                    timeout: Timeout = DEFAULT) -> types.Task:
        """Cancel task ``task_id`` of ``server`` (``tasks/cancel``); returns its state after
        (see :meth:`TaskHandle.cancel`). Retried once after a lost connection.

        Raises:
            KeyError: no such server. ServerUnavailable: the server is not connected.
            CapabilityError, TaskNotFound, RequestTimeout, ConnectionClosed, ServerError:
            as :meth:`Client.cancel_task`.
        """
        return self._with_retry(
            self._server(server), _always_safe,
            lambda client: client.cancel_task(task_id, timeout=timeout), timeout)

    # -- resources -----------------------------------------------------------------------

    def _gather(self, method: str, cache: str) -> List[Tuple[str, Any]]:
        """``(server, item)`` for ``method`` of every connected server; a server that fails
        is logged and skipped, one that lacks the capability lists nothing (the client's
        listing is empty). ``cache`` is checked before any server is asked."""
        cache_mode(cache)
        self._require_started()
        servers = [s for s in self._servers.values() if s.state is ServerState.CONNECTED]
        items: List[Tuple[str, Any]] = []
        for server in servers:
            try:
                client = server.client()
                items.extend((server.name, item) for item in getattr(client, method)(
                    cache=cache))
            except MCPError as exc:
                log.warning("%s of %s failed: %s", method, server.name, exc)
        return items

    def list_resources(self, *, cache: str = "use") -> List[types.Resource]:
        """Every connected server's resources; ``name`` is qualified, ``uri`` unchanged.
        ``cache``: ``"use"``, ``"refresh"`` or ``"bypass"``, as for
        :meth:`Client.read_resource <mcp_sync.Client.read_resource>`."""
        gathered = self._gather("list_resources", cache)
        owners: Dict[str, str] = {}
        for server, resource in gathered:
            owners.setdefault(resource.uri, server)
        self._resource_owner = owners
        return [r.model_copy(update={"name": self.qualify(s, r.name)}) for s, r in gathered]

    def list_resource_templates(self, *, cache: str = "use") -> List[types.ResourceTemplate]:
        """Every connected server's resource templates, ``name`` qualified. ``cache``: as
        for :meth:`list_resources`."""
        return [t.model_copy(update={"name": self.qualify(s, t.name)})
                for s, t in self._gather("list_resource_templates", cache)]

    def read_resource(self, uri_or_server: str, uri: Optional[str] = None, *,
                      timeout: Timeout = DEFAULT, cache: str = "use") -> types.ReadResourceResult:
        """Read a resource: ``read_resource(uri)`` asks the server that lists ``uri``;
        ``read_resource(server, uri)`` asks ``server``. Retried once after a lost
        connection (reading is safe). ``cache``: as for :meth:`list_resources` (the
        listing ``read_resource(uri)`` may need to find the server takes it too).

        Raises:
            KeyError: no server lists ``uri`` (give the server), or no such server.
        """
        cache_mode(cache)
        if uri is None:
            uri = uri_or_server
            owner = self._resource_owner.get(uri)
            if owner is None:
                self.list_resources(cache=cache)
                owner = self._resource_owner.get(uri)
            if owner is None:
                raise KeyError(f"no connected server lists the resource {uri!r}; use "
                               "read_resource(server, uri)")
        else:
            owner = uri_or_server
        target = uri
        return self._with_retry(
            self._server(owner), _always_safe,
            lambda client: client.read_resource(target, timeout=timeout, cache=cache), timeout,
        )

    # -- prompts -------------------------------------------------------------------------

    def list_prompts(self, *, cache: str = "use") -> List[types.Prompt]:
        """Every connected server's prompts, named ``<server><separator><prompt>``.
        ``cache``: as for :meth:`list_resources`."""
        return [p.model_copy(update={"name": self.qualify(s, p.name)})
                for s, p in self._gather("list_prompts", cache)]

    @overload
    def get_prompt(self, name: str, arguments: Optional[Mapping[str, str]] = None, /, *,
                   timeout: Timeout = DEFAULT) -> types.GetPromptResult: ...

    @overload
    def get_prompt(self, server: str, prompt: str,
                   arguments: Optional[Mapping[str, str]] = None, /, *,
                   timeout: Timeout = DEFAULT) -> types.GetPromptResult: ...

    def get_prompt(
        self,
        name: str,
        prompt_or_arguments: Union[str, Mapping[str, str], None] = None,
        arguments: Optional[Mapping[str, str]] = None,
        /,
        *,
        timeout: Timeout = DEFAULT,
    ) -> types.GetPromptResult:
        """Get a prompt: ``get_prompt("server__prompt", args)`` or
        ``get_prompt("server", "prompt", args)``. Retried once after a lost connection."""
        server_name, prompt, args = self._route(name, prompt_or_arguments, arguments)
        return self._with_retry(
            self._server(server_name), _always_safe,
            lambda client: client.get_prompt(prompt, args, timeout=timeout), timeout,
        )


def _server_task(server: _Server, handle: TaskHandle) -> TaskHandle:
    """A :class:`TaskHandle` of a manager's server: each request goes to the server's
    client of the moment (``ServerUnavailable`` while it is down), so the handle outlives
    a reconnect; whether the server still knows the task is the server's affair."""

    def moved(task_id: str) -> None:
        log.debug("task %s of %s: now on a new connection", task_id, server.name)

    return FollowingTaskHandle(handle, lambda task_id: server.client().task(task_id), moved)












