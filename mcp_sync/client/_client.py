"""The MCP client: :class:`Client`, the public face of one connection to a server.

``Client`` never touches a process or a socket itself, nor holds the state of its
connection: it owns a :class:`~._connection.Connection` (the session of the moment over
its :class:`~mcp_sync.transports.base.Transport`, the agreement, the settings, the
listings, the subscriptions, the callbacks the server reaches, the rounds of a request,
the tasks) and hands each MCP method to the part that does it. A tool call goes to
:class:`~._toolcalls.ToolCalls` (its plan, its send, its result; a call that is a task to
:mod:`._tasks`), a listing to :mod:`._listing`, a subscription to :mod:`._subscriptions`;
its offer in the negotiation is :mod:`._negotiation`'s, its display
:mod:`mcp_sync._types.display`'s. Its public settings are the connection's settings
groups (:mod:`._settings`), read and written through the client's attributes.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Type,
    TypeVar,
    Union,
)

from .._parsing import dump as _dump
from .._parsing import parse as _parse
from .._protocol import (
    DEFAULT,
    LATEST_PROTOCOL_VERSION,
    SESSION_PROTOCOL_VERSIONS,
    STATELESS_PROTOCOL_VERSIONS,
    SUPPORTED_PROTOCOL_VERSIONS,
    Timeout,
    _Default,
)
from .._rpc.core import ProgressCallback
from .._rpc.outbound import converted
from .._rpc.session import RpcSession
from .._version import __version__
from ..exceptions import excerpt
from ..extensions import Extension, ExtensionsArgument, extensions_of
from ..transports.base import Transport
from ._caching import CacheOption, cache_mode
from ._callbacks import LOG_LEVELS
from ._connection import Connection, State
from ._negotiation import Agreement, forget_protocol_eras
from ._settings import (
    DEFAULT_HANDLER_TASKS,
    DEFAULT_MAX_LIST_BYTES,
    DEFAULT_MAX_LIST_ITEMS,
    Handlers,
    Limits,
    Timeouts,
    ToolChecks,
    default_timeout_from_env,
)
from ._settings import (
    ConnectionSetting as _Setting,
)
from ._tasks.handles import TaskHandle
from ._toolcalls import ToolCalls, check_arguments
from ._toolpins import ToolChange, ToolChangePolicy, ToolPins
from ._tracing import observer_for

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .. import types
    from .._types.display import ClientFacts
    from ..cache import CacheInfo, ResponseCache
    from ._settings import TaskStartOptions, ToolCallOptions
    from ._subscriptions import Subscription

__all__ = [
    "DEFAULT",
    "DEFAULT_MAX_LIST_BYTES",
    "DEFAULT_MAX_LIST_ITEMS",
    "LATEST_PROTOCOL_VERSION",
    "SESSION_PROTOCOL_VERSIONS",
    "STATELESS_PROTOCOL_VERSIONS",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "Client",
    "forget_protocol_eras",
]

T = TypeVar("T")
V = TypeVar("V")


class Client:
    """A connection to one MCP server. Can be shared between threads.

    Every method blocks until its answer arrives or its timeout passes; nothing needs an
    event loop. Use it as a context manager, or call :meth:`connect` and :meth:`close`.

    Args:
        transport: how to reach the server (:class:`~mcp_sync.StdioTransport`, ...).
        name: a label for the server in thread names, loggers and errors. By default
            the transport's; when that was derived from the command or URL too, the
            server's own ``serverInfo.name`` replaces it once the handshake tells it
            (letters, digits, ``.``, ``_`` and ``-`` kept, at most 40 characters).
        client_info: ``{"name": ..., "version": ...}`` sent in the handshake.
        timeout: default seconds a request may take (``None``: no limit); by default 30,
            or ``MCP_SYNC_TIMEOUT`` from the environment (``0`` means no limit). It also
            bounds the whole of :meth:`connect`, the stop of a server that did not
            answer included.
        protocol_version: pin a protocol version; ``None`` (the default) negotiates: it
            probes with ``server/discover`` for the stateless 2026-07-28 era and falls back
            to the ``initialize`` handshake at once when the server answers like an older
            one (or not within ``probe_timeout``). The era found is remembered per server
            for the life of the process, except a fallback over Streamable HTTP after
            mere silence (older servers refuse the probe at once there, so a silent one
            was busy and is probed again next time). A pinned version skips the probe.
        probe_timeout: how long the era probe waits for an answer (default 1 s; never
            more than half of what is left of the connect's ``timeout``: see
            :meth:`connect`). A server silent that long that then refuses ``initialize``
            is asked ``server/discover`` again, with the time left.
        max_input_rounds: the most ``input_required`` rounds (2026-07-28 multi round-trip
            requests) one call may take before it fails with ``ProtocolError``.
        sampling_handler: answers ``sampling/createMessage``; called with
            ``types.CreateMessageRequestParams``, returns ``types.CreateMessageResult`` or
            an equivalent dict. Declares the ``sampling`` capability. It answers a server
            that asks the way of the connection's era: mid-call requests in the session
            era, ``input_required`` in 2026-07-28. A tool that sends a mid-call request
            fails over 2026-07-28 (the server has no channel for it), so for such a server
            pin ``protocol_version="2025-11-25"``: giving a handler does not change the
            era negotiated (README, "Which era your handlers serve").
        sampling_features: what the sampling handler supports beyond plain messages:
            ``"tools"`` (``tools``/``toolChoice`` in the request) and/or ``"context"``
            (``includeContext``); declared as ``sampling.tools`` / ``sampling.context``.
            A request with ``tools`` or ``toolChoice`` when ``"tools"`` is not declared is
            refused (-32602; ``CapabilityError`` in the stateless era), as MCP requires.
        elicitation_handler: answers ``elicitation/create``; called with the request
            params (``types.ElicitRequestFormParams`` or ``types.ElicitRequestURLParams``),
            returns ``types.ElicitResult`` or a dict. Declares ``elicitation``. Like
            ``sampling_handler``, it serves the connection's era only: a tool that asks
            with a mid-call request (the Python SDK's ``ctx.elicit()``) needs
            ``protocol_version="2025-11-25"``, one that answers ``input_required`` needs
            2026-07-28, which ``connect()`` takes from a server that speaks it.
        elicitation_modes: the modes the elicitation handler supports, ``"form"`` and/or
            ``"url"`` (default: form only); declared as ``elicitation.form`` /
            ``elicitation.url``. A request in another mode never reaches the handler: it
            gets -32602 (the stateless era: the client declines it). Nor does a URL-mode
            request whose ``url`` no one may be asked to open: only an absolute
            ``https`` URL (``http`` only to this machine) with a plain host and no user
            info reaches it, with its host apart (``params.host``), to show the user
            before they consent; any other is refused the same way and logged
            (WARNING).
        handler_tasks: let the server run the sampling and elicitation handlers as tasks
            (MCP 2025-11-25, session era): ``True`` for every one of the two that is
            set, or a sequence of ``"sampling"`` and/or ``"elicitation"``. Declares
            ``tasks.requests.sampling.createMessage`` / ``tasks.requests.elicitation.create``
            with ``tasks.list`` and ``tasks.cancel``. A request whose params carry
            ``task: {ttl}`` is then answered at once with a ``CreateTaskResult``; the
            handler runs on the handler pool, and the server asks ``tasks/get``,
            ``tasks/result``, ``tasks/list`` and ``tasks/cancel`` (which sets the
            handler's ``request_context().cancelled``). A request without ``task`` is
            answered as always. See docs/tasks.md. Default: off (no ``tasks``
            capability).
        max_handler_tasks: the most handler tasks that exist at once (running, or kept
            for their result until their ttl passes); one more is refused with -32603.
        on_elicitation_complete: called on the callback thread with
            ``types.ElicitationCompleteNotificationParams`` when the server sends
            ``notifications/elicitation/complete`` (a URL-mode elicitation finished out of
            band); ``notification_handler`` sees the notification too.
        roots: a list of ``types.Root`` or dicts (``{"uri": "file:///..."}``), or a callable
            returning one; answers ``roots/list``. Declares ``roots``. A sampling,
            elicitation or roots handler that raises ``ServerError`` sends the server that
            error; any other exception is logged (with its traceback) and the server gets
            -32603 saying only which handler failed ("the client's sampling handler
            failed"), never the exception's text. In the stateless era the call raises
            ``CallbackError`` instead.
        logging_handler: receives ``types.LoggingMessageNotificationParams``; without it
            server log messages go to the logger ``mcp_sync.server.<name>``.
        notification_handler: called as ``handler(method, params)`` for every notification.
            Notification callbacks (these two, ``on_progress``...) wait for the callback
            thread in a queue of 1024: when it is full, log messages, progress,
            cancellations and task status notifications are dropped (one warning;
            ``dropped_notifications`` counts them), a repeated ``*/list_changed`` or
            ``resources/updated`` is merged into the one waiting, and any other
            notification fails the connection.
        reset_timeout_on_progress: progress from the server pushes a request's deadline out.
        max_total_timeout: ...but never past this many seconds (default 600).
        close_timeout: bound for each step of :meth:`close`, the transport's included
            (stopping a stdio child: after stdin closes, after SIGTERM, after SIGKILL);
            given, it is set on the transport too; by default the transport's own
            ``close_timeout`` (2 s unless the transport was built with another) is used.
        max_pages: the most pages a ``list_*`` method follows before it gives up
            (default 1000).
        max_list_items, max_list_bytes: the most items, and bytes of items (measured as
            compact JSON), one ``list_*`` call collects, all pages together (defaults
            10,000 and 64 MiB; ``None``: no limit). A server past a bound (or past
            ``max_pages``) fails the call with :class:`~mcp_sync.ListingTooLarge`, which
            names the bound; nothing of that listing is kept, and the client stays usable.
        validate_output: check each tool result against the ``outputSchema`` the tool
            declares (default ``True``): a result whose ``structuredContent`` is missing
            or does not match raises :class:`~mcp_sync.ProtocolError`. A call to a tool
            this connection has not listed lists the tools first (once; again after
            ``notifications/tools/list_changed``). The schema is the server's: one that
            refers outside itself (never fetched) or to nothing, loops, is invalid or too
            large fails the call with :class:`~mcp_sync.InvalidToolSchema` before it is
            sent, and each check has a bounded budget (see SECURITY.md). ``False`` turns
            the checks off on purpose (no listing).
        on_tool_change: what happens when a tool's definition (name, title, description,
            input or output schema, annotations) differs from the one pinned when the
            client first saw it (a "rug pull": a trusted tool that now tells the model to
            do something else): ``"block"`` (the default) leaves it out of
            :meth:`list_tools` and refuses a call to it with
            :class:`~mcp_sync.ToolChanged` until :meth:`accept_tool_changes`; ``"warn"``
            lists it with its new definition, which becomes its pin; a callable
            ``on_tool_change(change: ToolChange) -> bool`` decides (True: as
            ``"warn"``; False or an exception: as ``"block"``), once per new definition,
            on the thread that lists the tools. Each change is logged at WARNING on
            ``mcp_sync.client._toolpins``, with the server, the tool and what changed. A change
            is seen when the tools are listed (``list_tools()``, or a call after
            ``tools/list_changed`` with ``validate_output``). See docs/toolbox.md.
        tool_pins: the :class:`~mcp_sync.ToolPins` to check listings against (default: a
            new, empty one); pins shared by the clients of one server outlive each
            connection (a :class:`~mcp_sync.Manager` does this, and saves them in its
            tool cache).
        on_connection_lost: called once per connection, as ``on_connection_lost(error)``
            with the :class:`~mcp_sync.ConnectionClosed`, on the session's callback thread,
            when a connected client's link closes without :meth:`close` (the server exited,
            the socket broke). Not called for :meth:`close`, nor when :meth:`connect`
            fails. The client never reconnects by itself: call :meth:`connect` again, or
            let a :class:`~mcp_sync.Manager` do it. (If the link dies while
            :meth:`connect` is returning, the hook may be skipped: check
            :attr:`connected`.)
        tracing: OpenTelemetry tracing and metrics: a CLIENT span for every request
            sent (its W3C trace context sent in ``params._meta`` and, over HTTP, in the
            headers), a SERVER span for every request from the server, and the
            ``mcp.client.operation.duration`` and ``mcp.client.session.duration``
            histograms; see docs/tracing.md. ``None`` (the default): on when
            ``opentelemetry-api`` is installed (the ``[otel]`` extra) and
            ``MCP_SYNC_TRACING`` is not ``0``; ``False``: off, and no ``opentelemetry``
            module is imported; ``True``: on (``ImportError`` without the API).
        tracer_provider: the OpenTelemetry ``TracerProvider`` the spans go to (default:
            the global one).
        meter_provider: the OpenTelemetry ``MeterProvider`` the measurements go to
            (default: the global one).
        extensions: the extensions the client advertises under
            ``capabilities.extensions`` (:class:`mcp_sync.extensions.Extension` objects,
            identifiers, or a dict of identifier to settings), besides the tasks
            extension every client has; see docs/extensions.md. ``ValueError`` for an
            identifier not of the ``vendor-prefix/name`` form.
        cache: the response cache of the 2026-07-28 era (docs/caching.md): ``None`` (the
            default) a cache of this client's own (a bounded ``MemoryStore``); ``False``
            none; a :class:`~mcp_sync.cache.ResponseCache` to share (with other clients,
            and over a shared store other processes). The listings and
            :meth:`read_resource` are served from it while the server's ``ttlMs`` says
            they are fresh; in the session era it is not used.

    Callbacks run on the session's callback thread or handler pool, never on a reader or
    dispatch thread, and may call the client. In the stateless era a blocking call's
    handlers (answering ``input_required``) run on the calling thread itself, between
    rounds; ``call_tool_future`` runs them on the handler pool.

    Handlers answering the server (sampling, elicitation, roots) are called with the
    params alone; inside one, :func:`mcp_sync.request_context` returns the request's
    :class:`~mcp_sync.RequestContext`: the server asking (``server_name``: this client's
    ``name``, a Manager's key for the server; ``server_info``), its id,
    ``report_progress()`` (when the server gave a progress token) and ``cancelled``, an
    event set when the server cancels the request.
    A request the server cancelled is never answered. In the stateless era the id is the
    input request's key, there is no progress, and ``cancelled`` follows
    ``call_tool_future().cancel()``.
    """

    # The public settings, each kept by the connection (see _Setting): its own, and
    # those of its groups (timeouts, limits, handlers, checks of tools).
    transport: _Setting[Transport] = _Setting()
    name: _Setting[str] = _Setting()
    client_info: _Setting[Mapping[str, Any]] = _Setting()
    requested_protocol_version: _Setting[Optional[str]] = _Setting()
    #: The log level sent in every request's envelope (2026-07-28), set by
    #: set_logging_level(). A server sends log messages only to requests that name one,
    #: so a client with a logging_handler asks for "info" and up by itself, as
    #: session-era servers log without being asked.
    log_level: _Setting[Optional[str]] = _Setting()
    timeout: _Setting[Optional[float]] = _Setting("timeouts")
    close_timeout: _Setting[float] = _Setting("timeouts")
    probe_timeout: _Setting[float] = _Setting("timeouts")
    reset_timeout_on_progress: _Setting[bool] = _Setting("timeouts")
    max_total_timeout: _Setting[Optional[float]] = _Setting("timeouts")
    max_pages: _Setting[int] = _Setting("limits")
    max_list_items: _Setting[Optional[int]] = _Setting("limits")
    max_list_bytes: _Setting[Optional[int]] = _Setting("limits")
    max_input_rounds: _Setting[int] = _Setting("limits")
    max_handler_tasks: _Setting[int] = _Setting("limits")
    sampling_handler: _Setting[Optional[Callable[[Any], Any]]] = _Setting("handlers")
    sampling_features: _Setting[Tuple[str, ...]] = _Setting("handlers")
    elicitation_handler: _Setting[Optional[Callable[[Any], Any]]] = _Setting("handlers")
    elicitation_modes: _Setting[Tuple[str, ...]] = _Setting("handlers")
    on_elicitation_complete: _Setting[Optional[Callable[[Any], None]]] = _Setting("handlers")
    roots: _Setting[
        Union[Sequence[Any], Callable[[], Sequence[Any]], None]] = _Setting("handlers")
    logging_handler: _Setting[Optional[Callable[[Any], None]]] = _Setting("handlers")
    notification_handler: _Setting[
        Optional[Callable[[str, Optional[Dict[str, Any]]], None]]] = _Setting("handlers")
    on_connection_lost: _Setting[Optional[Callable[[Any], None]]] = _Setting("handlers")
    validate_output: _Setting[bool] = _Setting("tool_checks")
    on_tool_change: _Setting[ToolChangePolicy] = _Setting("tool_checks")
    #: Each tool's definition as first seen, and the blocked changes (ToolPins).
    tool_pins: _Setting[ToolPins] = _Setting("tool_checks")

    def __init__(
        self,
        transport: Transport,
        *,
        name: Optional[str] = None,
        client_info: Optional[Mapping[str, Any]] = None,
        timeout: Timeout = DEFAULT,
        protocol_version: Optional[str] = None,
        sampling_handler: Optional[Callable[[Any], Any]] = None,
        sampling_features: Sequence[str] = (),
        elicitation_handler: Optional[Callable[[Any], Any]] = None,
        elicitation_modes: Sequence[str] = ("form",),
        on_elicitation_complete: Optional[Callable[[Any], None]] = None,
        handler_tasks: Union[bool, Sequence[str]] = False,
        max_handler_tasks: int = DEFAULT_HANDLER_TASKS,
        roots: Union[Sequence[Any], Callable[[], Sequence[Any]], None] = None,
        logging_handler: Optional[Callable[[Any], None]] = None,
        notification_handler: Optional[Callable[[str, Optional[Dict[str, Any]]], None]] = None,
        reset_timeout_on_progress: bool = True,
        max_total_timeout: Optional[float] = 600.0,
        close_timeout: Union[float, _Default] = DEFAULT,
        max_pages: int = 1000,
        max_list_items: Optional[int] = DEFAULT_MAX_LIST_ITEMS,
        max_list_bytes: Optional[int] = DEFAULT_MAX_LIST_BYTES,
        probe_timeout: float = 1.0,
        max_input_rounds: int = 10,
        on_connection_lost: Optional[Callable[[Any], None]] = None,
        validate_output: bool = True,
        on_tool_change: ToolChangePolicy = "block",
        tool_pins: Optional[ToolPins] = None,
        tracing: Optional[bool] = None,
        tracer_provider: Any = None,
        meter_provider: Any = None,
        extensions: ExtensionsArgument = None,
        cache: CacheOption = None,
    ) -> None:
        if not isinstance(transport, Transport):
            raise TypeError(_not_a_transport(transport))
        if protocol_version is not None and protocol_version not in SUPPORTED_PROTOCOL_VERSIONS:
            raise ValueError(
                f"protocol_version {protocol_version!r} is not one of "
                f"{', '.join(SUPPORTED_PROTOCOL_VERSIONS)}"
            )
        if close_timeout is DEFAULT:
            close_timeout = transport.close_timeout
        else:
            # One bound for the whole close(): the transport's steps are close()'s steps.
            transport.close_timeout = close_timeout
        self._connection = Connection(
            transport,
            name=name or transport.name,
            # A label derived from the target gives way to the server's own name.
            name_derived=not name and transport.named_by_default,
            client_info=dict(client_info or {"name": "mcp-sync", "version": __version__}),
            requested_protocol_version=protocol_version,
            log_level="info" if logging_handler is not None else None,
            timeouts=Timeouts(
                timeout=default_timeout_from_env() if timeout is DEFAULT else timeout,
                close_timeout=close_timeout, probe_timeout=probe_timeout,
                reset_timeout_on_progress=reset_timeout_on_progress,
                max_total_timeout=max_total_timeout),
            limits=Limits(max_pages=max_pages, max_list_items=max_list_items,
                          max_list_bytes=max_list_bytes, max_input_rounds=max_input_rounds,
                          max_handler_tasks=max_handler_tasks),
            handlers=Handlers.of(
                sampling_handler=sampling_handler, sampling_features=sampling_features,
                elicitation_handler=elicitation_handler, elicitation_modes=elicitation_modes,
                on_elicitation_complete=on_elicitation_complete, handler_tasks=handler_tasks,
                roots=roots, logging_handler=logging_handler,
                notification_handler=notification_handler,
                on_connection_lost=on_connection_lost),
            tool_checks=ToolChecks(
                validate_output=validate_output, on_tool_change=on_tool_change,
                tool_pins=tool_pins),
            observer=observer_for(tracing, tracer_provider, meter_provider),
            extensions=extensions_of(extensions),
            cache=cache,
        )
        # A call's plan, its send and its result; a call that is a task to the tasks.
        self._tool_calls = ToolCalls(self._connection)
        # The server's info and capabilities as models, parsed when first asked, with the
        # agreement they were parsed from, by field (see _parse_once).
        self._parsed: Dict[str, Tuple[Agreement, Any]] = {}

    # -- lifecycle -----------------------------------------------------------------------

    def __enter__(self) -> Client:
        if self._connection.state is not State.CONNECTED:
            self.connect()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<mcp_sync.Client {self.name} {self._connection.state.value}>"

    def _repr_html_(self) -> str:
        """Jupyter: server, version, protocol era and version, capabilities."""
        from .._types.display import client_html

        return client_html(self._facts())

    def _repr_markdown_(self) -> str:
        from .._types.display import client_markdown

        return client_markdown(self._facts())

    def _facts(self) -> ClientFacts:
        from .._types.display import ClientFacts

        connection = self._connection
        state = "connected" if connection.connected else connection.state.value
        return ClientFacts(self.name, state, self.transport.target, connection.agreement)

    @property
    def connected(self) -> bool:
        """True between a successful :meth:`connect` and :meth:`close` (or the link dying).

        False in a process forked after connecting: the connection is the parent's.
        """
        return self._connection.connected

    @property
    def dropped_notifications(self) -> int:
        """Notifications of the current connection dropped because the callbacks fell
        1024 behind: log messages, progress, cancellations and task status notifications
        only (the first drop is logged as a warning). See "Queues and their bounds" in
        docs/architecture.md.
        """
        session = self._connection.session
        return session.dropped_notifications if session is not None else 0

    def connect(self, timeout: Timeout = DEFAULT) -> Client:
        """Start the transport and perform the handshake. Returns ``self``.

        Connecting a connected client does nothing; a closed client connects afresh.

        ``timeout`` (default: the client's ``timeout``; ``None``: no bound) bounds the
        whole connect: it returns or raises within about that many seconds (plus 0.1 s),
        even against a server that never answers. Out of it, the era probe waits at most
        ``probe_timeout`` and never more than half of what is left; the handshake waits
        the rest but a tenth of ``timeout`` (at most ``close_timeout``), kept to stop a
        server that did not answer (a stdio child: a third of it after its stdin's end,
        a third after SIGTERM, then SIGKILL). A connect that fails for another reason
        stops the server within what is left of ``timeout`` (each step at most
        ``close_timeout``). A :class:`~mcp_sync.RequestTimeout` here has the whole
        ``timeout`` as its ``timeout``.

        Raises:
            ForkedClientError: this process was forked after the client connected: its
                connection (a stdio child, an HTTP session) belongs to the parent. Create a
                new client in the child (``mcp_sync.connect(...)``).
            CommandNotFound: the stdio command does not exist.
            TransportError: the server could not be reached, or it died during the handshake.
            UnsupportedProtocolVersion: the server speaks no version this client does.
            RequestTimeout: the server did not answer the handshake (``initialize`` or
                ``server/discover``) within ``timeout``.
        """
        connection = self._connection
        connection.connect(connection.timeouts.of(timeout))
        return self

    @property
    def _rpc(self) -> Optional[RpcSession]:
        """The session of the moment (for tests and diagnostics: no public contract)."""
        return self._connection.session

    def close(self) -> None:
        """Close the connection: stop the server (stdio) and every thread. Idempotent.

        Requests still pending fail with :class:`~mcp_sync.ConnectionClosed`.
        """
        self._connection.close()

    # -- properties ----------------------------------------------------------------------

    @property
    def agreement(self) -> Optional[Agreement]:
        """What this connection settled on with the server (era, version, server info,
        capabilities, instructions); ``None`` before the first connect."""
        return self._connection.agreement

    @property
    def era(self) -> Optional[str]:
        """``"session"`` (initialize handshake, 2024-11-05 ... 2025-11-25) or
        ``"stateless"`` (2026-07-28); ``None`` before connecting."""
        agreement = self._connection.agreement
        return agreement.era if agreement is not None else None

    @property
    def extensions(self) -> Tuple[Extension, ...]:
        """The extensions this client supports: the tasks extension, then those given."""
        return self._connection.extensions.all

    @property
    def server_extensions(self) -> Mapping[str, Mapping[str, Any]]:
        """What the server advertised under ``capabilities.extensions`` (identifier to
        settings; read-only), bounded: at most 64 entries, each with a valid identifier
        and settings that are an object of at most 16 KiB; the rest is skipped and
        logged. Raises ``ClientNotConnected`` before the first connect."""
        return self._connection.extensions.of_server()

    def extension_agreed(self, identifier: str) -> bool:
        """Whether both sides advertised extension ``identifier`` on this connection (the
        client in the era agreed). Raises ``ClientNotConnected`` before connecting."""
        return self._connection.extensions.agreed(identifier)

    @property
    def protocol_version(self) -> Optional[str]:
        """The protocol version agreed in the handshake (``None`` before it)."""
        agreement = self._connection.agreement
        return agreement.version if agreement is not None else None

    @property
    def server_info(self) -> types.Implementation:
        """The server's name and version (``types.Implementation``)."""
        from .. import types

        info: types.Implementation = self._parse_once(types.Implementation, "serverInfo")
        return info

    @property
    def server_capabilities(self) -> types.ServerCapabilities:
        """What the server declared it can do (``types.ServerCapabilities``)."""
        from .. import types

        capabilities: types.ServerCapabilities = self._parse_once(types.ServerCapabilities,
                                                                  "capabilities")
        return capabilities

    def _parse_once(self, model: Any, field: str) -> Any:
        """The agreement's ``serverInfo`` or ``capabilities`` as ``model``, parsed once per
        agreement."""
        agreement = self._connection.require_agreement()
        kept = self._parsed.get(field)
        if kept is None or kept[0] is not agreement:
            raw = agreement.server_info if field == "serverInfo" else agreement.capabilities
            kept = self._parsed[field] = (agreement, _parse(model, dict(raw), field))
        return kept[1]

    @property
    def instructions(self) -> Optional[str]:
        """The server's usage instructions from the handshake, if any."""
        return self._connection.require_agreement().instructions

    # -- the response cache (2026-07-28) -------------------------------------------------

    @property
    def response_cache(self) -> Optional[ResponseCache]:
        """The :class:`~mcp_sync.cache.ResponseCache` this client uses (``None``:
        ``cache=False``)."""
        return self._connection.caching.cache

    def cache_info(self, method: str, params: Optional[Mapping[str, Any]] = None
                   ) -> Optional[CacheInfo]:
        """What the response cache did for this client's last answer to ``method`` with
        ``params`` (``cache_info("resources/read", {"uri": uri})``; a listing is
        ``cache_info("tools/list")``): a :class:`~mcp_sync.cache.CacheInfo` (``hit``,
        ``age``, ``ttl``, ``scope``, ``stored``, ``expires_in``), or ``None`` when it
        had no say (no such answer yet, the session era, ``cache=False``, or a listing
        this client kept while a subscription would tell it of a change). Never
        blocks."""
        return self._connection.caching.info(method, params)

    def invalidate_cache(self, method: Optional[str] = None, uri: Optional[str] = None) -> None:
        """Make this server's cached results stale, in every process sharing the cache:
        all of them, one method's (``"tools/list"``), or one resource's reads
        (``uri``). Does nothing where nothing is cached (the session era, before
        connecting, ``cache=False``). A store error is logged, never raised."""
        self._connection.caching.invalidate(method, uri)

    # -- requests ------------------------------------------------------------------------

    def request(
        self,
        method: str,
        params: Optional[Dict[str, Any]] = None,
        *,
        timeout: Timeout = DEFAULT,
        result_type: Optional[Type[T]] = None,
        on_progress: Optional[ProgressCallback] = None,
        cache: str = "use",
    ) -> Any:
        """Send any request and block for its result.

        Returns the result as a dict, or validated into ``result_type`` (a pydantic model).
        The cacheable methods (``server/discover``, the four lists, ``resources/read``)
        go through the response cache: ``cache`` is ``"use"``, ``"refresh"`` or
        ``"bypass"``, as for :meth:`read_resource`.

        Raises:
            RequestTimeout, ServerError, ConnectionClosed, ProtocolError, ClientNotConnected.
            ValueError, TypeError: ``cache`` is not one of the three (nothing sent).
        """
        connection = self._connection
        result = connection.caching.through(
            method, params, cache_mode(cache),
            lambda sends: connection.rounds.round_trip(
                method, params, timeout=timeout, on_progress=on_progress, headers=sends,
                inputs=False))
        if result_type is not None:
            return _parse(result_type, result, f"{method} result")
        return result

    def submit(
        self,
        method: str,
        params: Optional[Dict[str, Any]] = None,
        *,
        timeout: Timeout = DEFAULT,
        result_type: Optional[Type[T]] = None,
        on_progress: Optional[ProgressCallback] = None,
    ) -> Future[Any]:
        """Send any request without blocking; returns a :class:`concurrent.futures.Future`.

        The future's ``cancel()`` cancels the request on the wire. Its result is a dict or
        a ``result_type`` model; a timeout fails it with ``RequestTimeout``. Never cached.
        """
        connection = self._connection
        future = connection.live_session().submit(
            method, params, timeout=connection.timeouts.of(timeout), on_progress=on_progress
        )
        if result_type is None:
            return future
        return converted(future, lambda data: _parse(result_type, data, f"{method} result"))

    def notify(self, method: str, params: Optional[Dict[str, Any]] = None) -> None:
        """Send a notification to the server."""
        self._connection.live_session().notify(method, params)

    def ping(self, *, timeout: Timeout = DEFAULT) -> None:
        """Check that the server answers. Raises on timeout or a closed connection.

        The stateless era has no ``ping``: ``server/discover`` serves instead.
        """
        method = "server/discover" if self._connection.stateless() else "ping"
        self._connection.request(method, timeout=timeout)  # never from the cache

    def list_tools(self, *, timeout: Timeout = DEFAULT, cache: str = "use") -> types.ToolList:
        """Every tool the server offers (all pages), as a list (a ``types.ToolList``,
        which Jupyter shows as a table).

        Cached while the server promises ``notifications/tools/list_changed``; the cache
        (of every ``list_*`` method) is served only while connected. A server that does
        not declare the ``tools`` capability lists none: every ``list_*`` method returns
        an empty list for a capability the server lacks, without asking it (the calls
        that need one, such as :meth:`subscribe_resource`, raise ``CapabilityError``).
        A 2026-07-28 listing is served from the response cache while its ``ttlMs`` says
        it is fresh (``cache``: ``"use"``, ``"refresh"``, ``"bypass"``; see
        :meth:`read_resource`); the tools' pins review it all the same.

        Raises:
            ClientNotConnected: the client is not connected, or closed.
            ConnectionClosed: the link to the server is gone.
        """
        return self._connection.listings.tools(timeout, cache_mode(cache))

    def tool_changes(self) -> List[ToolChange]:
        """The tools whose definition changed since it was pinned and whose change
        ``on_tool_change`` blocked: not listed, and refused with
        :class:`~mcp_sync.ToolChanged`, until accepted. Never blocks."""
        return self.tool_pins.changes()

    def accept_tool_changes(self, tool: Optional[str] = None) -> List[ToolChange]:
        """Accept the blocked change of ``tool`` (of every blocked tool with None): its
        new definition becomes its pin, and it is listed and callable again. Returns the
        changes accepted. Never blocks (the next call of the tool lists the tools
        first)."""
        accepted = self.tool_pins.accept(tool)
        if accepted:
            self._connection.listings.reviewed()
        return accepted

    def call_tool(
        self,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        **options: Unpack[ToolCallOptions],
    ) -> types.CallToolResult:
        """Call a tool and block for its result.

        ``arguments`` is a mapping of argument names to values (``{"text": "hi"}``).
        ``options`` are :class:`~mcp_sync.ToolCallOptions` (``timeout``, ``on_progress``,
        ``meta``, ``raise_on_error``, ``task``, ``ttl``), as keywords or one mapping made
        once (``**options``); another keyword raises ``TypeError``, nothing sent.
        ``on_progress(progress, total, message)`` is called for each progress notification;
        progress also pushes the deadline out (never past ``max_total_timeout``). With
        ``validate_output`` (the default) the result is checked against the tool's
        ``outputSchema``; if this connection has not listed its tools yet (or they changed),
        they are listed first.

        A result with ``isError: true`` (the tool ran and failed) is returned by default,
        not raised: it is an answer, and its text is what an agent hands back to its model
        so that the model can correct itself. ``raise_on_error=True`` raises
        :class:`~mcp_sync.ToolError` instead, carrying the result (handy in scripts).

        Tasks (2025-11-25, servers that declare ``tasks.requests.tools.call``): a tool
        whose ``execution.taskSupport`` is ``"required"`` runs as a task, and so does an
        ``"optional"`` one with ``task=True`` or a ``ttl`` (seconds the server should keep
        the task); ``task=False`` never asks for one. The call then polls the task (see
        docs/tasks.md) and returns its result like a plain call's. ``timeout`` bounds
        each request, and the wait for the task from one change of its status to the next
        (never past ``max_total_timeout``); running out of it, or Ctrl-C, cancels the
        task (``tasks/cancel``, best effort). ``on_progress`` gets the server's progress
        for the task's whole life, and until its first progress each new status message,
        as ``on_progress(n, None, message)`` for the n-th one seen. In the
        2026-07-28 era (the ``io.modelcontextprotocol/tasks`` extension) the server
        decides which call becomes a task, whatever ``task`` says; such a call is
        followed the same way (see docs/tasks.md).

        Raises:
            TypeError: ``arguments`` is not a mapping (nothing was sent).
            ValueError: ``ttl`` is not a positive number of seconds.
            CapabilityError: ``task=True`` (or a ``ttl``) for a tool or server that does
                not run tools as tasks (nothing was sent).
            TaskFailed, TaskCancelled, TaskNotFound: the task ended without a result.
            RequestTimeout: no result before the deadline; the call was cancelled on the wire.
            ServerError: the server answered with a JSON-RPC error (an unknown tool, say).
            ProtocolError: the result is malformed, or its ``structuredContent`` is missing
                or does not match the tool's outputSchema.
            ToolError: the result has ``isError: true`` and ``raise_on_error`` is set.
            InvalidToolSchema: the tool's outputSchema cannot check results (then the
                call is not sent), or checking this result would pass the check's bound.
        """
        return self._tool_calls.result_of(name, arguments, options)

    def call_tool_future(
        self,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        **options: Unpack[ToolCallOptions],
    ) -> Future[types.CallToolResult]:
        """Like :meth:`call_tool` but returns with a Future as soon as the call is sent.

        ``future.cancel()`` cancels the call on the wire. (Listing the tools first, when
        :meth:`call_tool` would, happens before it returns, and so does the
        :class:`~mcp_sync.InvalidToolSchema` of a tool whose outputSchema cannot check
        results.) A result to check against an outputSchema is checked on the session's
        handler pool. With ``raise_on_error=True`` a result with ``isError: true`` fails
        the future with :class:`~mcp_sync.ToolError`.

        A call that runs as a task (``task``, ``ttl``: see :meth:`call_tool`) is sent,
        and its task polled, on an ``mcp-sync-task-<name>`` thread that ends with the
        future; ``future.cancel()`` cancels the task too (``tasks/cancel``). A call the
        server answers with a task (2026-07-28) is followed on such a thread from then.
        """
        return self._tool_calls.future_of(name, arguments, options)

    # -- tasks (2025-11-25; the tasks extension in 2026-07-28) ----------------------------

    def start_tool_task(
        self,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        **options: Unpack[TaskStartOptions],
    ) -> TaskHandle:
        """Start tool ``name`` as a task and return at once with its :class:`TaskHandle`
        (``handle.id`` is the task's id: keep it to re-attach later with :meth:`task`).

        ``options`` are :class:`~mcp_sync.TaskStartOptions`: ``ttl``, the seconds the
        server should keep the task and its result (it may keep them for less, or more);
        ``timeout``, the bound of the ``tools/call`` that creates it; ``meta``. The
        handle's :meth:`~TaskHandle.result` checks the result against the tool's
        ``outputSchema``, as :meth:`call_tool` does.

        In the 2026-07-28 era (the ``io.modelcontextprotocol/tasks`` extension) the
        server alone decides whether a call becomes a task, and no ``ttl`` is sent: a
        server that answers with the result at once makes this raise ``ProtocolError``
        (use :meth:`call_tool`, which takes either).

        Raises:
            CapabilityError: the server does not run tools as tasks
                (``tasks.requests.tools.call``; 2026-07-28: it does not advertise the
                tasks extension), or this tool's ``execution.taskSupport`` is
                ``"forbidden"`` or absent (nothing was sent).
            ValueError: ``ttl`` is not a positive number of seconds.
            ProtocolError: the server answered with no task.
            RequestTimeout, ServerError, ConnectionClosed: as for any request.
        """
        return self._connection.tasks.start_task(
            self._tool_calls.prepare_task(name, arguments, options))

    def task(self, task_id: str) -> TaskHandle:
        """A :class:`TaskHandle` for a task started earlier (by this client, another one
        on the same server, or another process that kept the id). Sends nothing.

        The handle does not know the tool, so its result is not checked against an
        ``outputSchema``. A server may keep tasks per session: over a new MCP session
        (another client, a renewed session) it may not know the id
        (:class:`~mcp_sync.TaskNotFound`).
        """
        return self._connection.tasks.handle(task_id)

    def list_tasks(self, *, timeout: Timeout = DEFAULT) -> List[types.Task]:
        """Every task the server lists for this client (``tasks/list``, following
        pagination within ``max_pages``, ``max_list_items`` and ``max_list_bytes``).

        Raises:
            CapabilityError: the server did not declare ``tasks.list``; and always in
                the 2026-07-28 era, whose tasks extension has no ``tasks/list``.
            ListingTooLarge, RequestTimeout, ServerError, ConnectionClosed.
        """
        return self._connection.tasks.list(timeout)

    def cancel_task(self, task_id: str, *, timeout: Timeout = DEFAULT) -> types.Task:
        """Cancel task ``task_id``: ``self.task(task_id).cancel()`` (see
        :meth:`TaskHandle.cancel`)."""
        return self.task(task_id).cancel(timeout=timeout)

    def list_resources(self, *, timeout: Timeout = DEFAULT,
                       cache: str = "use") -> List[types.Resource]:
        """Every resource the server lists (all pages); none (``[]``) when the server
        does not declare the ``resources`` capability. ``cache``: as for
        :meth:`read_resource`."""
        from .. import types

        return self._connection.listings.listing("resources", "resources/list", "resources",
                                                 types.Resource, timeout, cache_mode(cache))

    def list_resource_templates(
        self, *, timeout: Timeout = DEFAULT, cache: str = "use"
    ) -> List[types.ResourceTemplate]:
        """Every resource template the server lists (all pages); none (``[]``) when the
        server does not declare the ``resources`` capability. ``cache``: as for
        :meth:`read_resource`."""
        from .. import types

        return self._connection.listings.listing(
            "resources", "resources/templates/list", "resourceTemplates",
            types.ResourceTemplate, timeout, cache_mode(cache))

    def read_resource(self, uri: str, *, timeout: Timeout = DEFAULT,
                      cache: str = "use") -> types.ReadResourceResult:
        """Read a resource by URI.

        In the 2026-07-28 era the answer comes from the response cache while the
        server's ``ttlMs`` says it is fresh (:meth:`cache_info` tells). ``cache``:
        ``"use"`` (serve a fresh entry, store what is fetched), ``"refresh"`` (fetch and
        store, never serve) or ``"bypass"`` (neither); another value raises
        ``ValueError`` (``TypeError`` for a non-string), nothing sent. An answer that
        took input rounds is never stored.
        """
        from .. import types

        connection, params = self._connection, {"uri": str(uri)}
        data = connection.caching.through(
            "resources/read", params, cache_mode(cache),
            lambda sends: connection.rounds.round_trip("resources/read", params,
                                                       timeout=timeout, headers=sends))
        return _parse(types.ReadResourceResult, data, "resources/read result")  # type: ignore[no-any-return]

    def subscribe_resource(self, uri: str, *, timeout: Timeout = DEFAULT) -> None:
        """Ask for ``notifications/resources/updated`` when the resource changes.

        In the stateless era this (re)opens the client's resource subscription stream
        (``subscriptions/listen``) with the URI added.

        Raises:
            CapabilityError: the server did not declare ``resources.subscribe``.
        """
        self._connection.subscriptions.subscribe_resource(str(uri), timeout)

    def unsubscribe_resource(self, uri: str, *, timeout: Timeout = DEFAULT) -> None:
        """Stop updates for a resource subscribed with :meth:`subscribe_resource`."""
        self._connection.subscriptions.unsubscribe_resource(str(uri), timeout)

    def subscribe(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Sequence[str] = (),
        timeout: Timeout = DEFAULT,
    ) -> Subscription:
        """Subscribe to change notifications; returns a :class:`Subscription` to close.

        ``tools``/``prompts``/``resources`` ask for ``notifications/*/list_changed``;
        ``resource_uris`` for ``notifications/resources/updated`` of those resources.
        They arrive at ``notification_handler`` and keep the list caches fresh. In the
        stateless era this opens a ``subscriptions/listen`` stream, waits for the server's
        acknowledgement (within ``timeout``) and re-opens the stream if it drops; in the
        session era list changes need no request and resources use
        ``resources/subscribe``.

        Raises:
            ValueError: nothing was asked for.
            RequestTimeout: the server did not acknowledge in time.
        """
        notifications: Dict[str, Any] = {}
        if tools:
            notifications["toolsListChanged"] = True
        if prompts:
            notifications["promptsListChanged"] = True
        if resources:
            notifications["resourcesListChanged"] = True
        if resource_uris:
            notifications["resourceSubscriptions"] = [str(uri) for uri in resource_uris]
        return self._connection.subscriptions.subscribe(notifications, timeout)

    def list_prompts(self, *, timeout: Timeout = DEFAULT,
                     cache: str = "use") -> List[types.Prompt]:
        """Every prompt the server offers (all pages); none (``[]``) when the server does
        not declare the ``prompts`` capability. ``cache``: as for :meth:`read_resource`."""
        from .. import types

        return self._connection.listings.listing("prompts", "prompts/list", "prompts",
                                                 types.Prompt, timeout, cache_mode(cache))

    def get_prompt(
        self,
        name: str,
        arguments: Optional[Mapping[str, str]] = None,
        *,
        timeout: Timeout = DEFAULT,
    ) -> types.GetPromptResult:
        """Get a prompt filled in with ``arguments`` (string values).

        Raises:
            TypeError: ``arguments`` is not a mapping (nothing was sent).
        """
        from .. import types

        check_arguments("prompt", name, arguments)
        params: Dict[str, Any] = {"name": name}
        if arguments:
            params["arguments"] = {key: str(value) for key, value in arguments.items()}
        data = self._connection.rounds.round_trip("prompts/get", params, timeout=timeout)
        return _parse(types.GetPromptResult, data, "prompts/get result")  # type: ignore[no-any-return]

    def complete(
        self,
        ref: Union[Mapping[str, Any], Any],
        argument: Mapping[str, str],
        context: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Timeout = DEFAULT,
    ) -> types.CompleteResult:
        """Ask for completions of a prompt or resource-template argument.

        ``ref`` is ``{"type": "ref/prompt", "name": ...}`` or
        ``{"type": "ref/resource", "uri": ...}`` (or the matching model); ``argument`` is
        ``{"name": ..., "value": ...}``; ``context`` may hold ``{"arguments": {...}}``.
        """
        from .. import types

        self._connection.require_capability("completion", "completions")
        params: Dict[str, Any] = {"ref": _dump(ref), "argument": dict(argument)}
        if context:
            params["context"] = _dump(context)
        return self.request(  # type: ignore[no-any-return]
            "completion/complete", params, timeout=timeout, result_type=types.CompleteResult
        )

    def set_logging_level(self, level: str, *, timeout: Timeout = DEFAULT) -> None:
        """Ask the server to send log messages at ``level`` and above.

        In the stateless era there is no ``logging/setLevel``: the level travels in every
        later request's ``_meta`` (``io.modelcontextprotocol/logLevel``). There a client
        with a ``logging_handler`` asks for ``"info"`` and up until this is called, so the
        handler receives the server's logs in both eras without further calls.
        """
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown logging level {level!r}; use one of {list(LOG_LEVELS)}")
        self._connection.require_capability("logging", "logging")
        self._connection.set_log_level(level, timeout)

    def send_roots_list_changed(self) -> None:
        """Tell the server the roots changed (it will ask for them again).

        Does nothing in the stateless era, where the server asks for roots with each
        request that needs them.
        """
        if self._connection.stateless():
            return
        self.notify("notifications/roots/list_changed")


def _not_a_transport(value: Any) -> str:
    kind = type(value).__name__
    if isinstance(value, (str, bytes, Sequence, Mapping)):
        return (f"Client() takes a transport, not a {kind}: for a URL, a command or an "
                f"mcpServers entry use mcp_sync.connect({excerpt(repr(value), 100)}), which "
                "builds the transport and connects")
    return ("Client() takes a transport (StdioTransport, HttpTransport, SseTransport, "
            f"MemoryTransport), not a {kind}")
