"""OpenTelemetry tracing and metrics of a client's MCP traffic (the ``[otel]`` extra).

Requests (and notifications) the client sends: one CLIENT span per JSON-RPC message, named
``{mcp.method.name} {target}`` (the tool or prompt name when the request has one; never
the resource URI, which stays an attribute: span names keep a low cardinality), started
on the calling thread (a child of the caller's active span) and ended when the request
settles (a notification: once written), on whatever thread settles it; and one
measurement of ``mcp.client.operation.duration``. The span's context goes with the
message as W3C trace context (``traceparent``, ``tracestate``, ``baggage``, through the
global propagator): in ``params._meta`` always, and over HTTP in the headers of the
message's POST too.

Requests the server sends (sampling, elicitation, roots, ping), and its notifications: one
SERVER span each, named ``{mcp.method.name}``, parented from the trace context in the
message's ``params._meta`` when it has one; it is the current span on the thread that runs
the handler while the handler runs (a notification: while it is routed); and one
measurement of ``mcp.server.operation.duration``.

Sessions: one measurement of ``mcp.client.session.duration`` per session, from its start
to its end.

Nothing here imports ``opentelemetry`` before :func:`observer_for` decides telemetry is
on: with it off (or the API not installed) the package never loads a module of it; on
the global providers (``tracing`` unset, no provider given) it waits for the process to
load the API itself (:class:`Dormant`), as nothing can be traced before.
docs/tracing.md lists the span, metric and attribute names.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
import threading
import time
from typing import Any, Dict, Mapping, Optional, Tuple, Union
from urllib.parse import urlsplit

from .._version import __version__
from ..exceptions import (
    CallbackError,
    CapabilityError,
    ConnectionClosed,
    HTTPError,
    ProtocolError,
    RequestCancelled,
    RequestTimeout,
    ServerError,
    SessionExpired,
    TransportError,
)

log = logging.getLogger(__name__)

#: ``MCP_SYNC_TRACING=0`` turns telemetry off for clients that leave ``tracing`` unset.
ENV_VAR = "MCP_SYNC_TRACING"
#: Seconds between looks at the global providers while no SDK is installed on one.
_RECHECK = 1.0
#: The bucket boundaries (seconds) the MCP semantic conventions advise for the durations.
DURATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0,
                    120.0, 300.0)

# The names an error gets in ``error.type`` (a server's JSON-RPC error: its code instead).
# Most specific first.
_ERROR_TYPES: Tuple[Tuple[type, str], ...] = (
    (RequestTimeout, "timeout"),
    (RequestCancelled, "cancelled"),
    (SessionExpired, "session_expired"),
    (ConnectionClosed, "connection_closed"),
    (HTTPError, "http_error"),
    (TransportError, "transport_error"),
    (ProtocolError, "protocol_error"),
    (CapabilityError, "capability_error"),
    (CallbackError, "handler_error"),
)

# The parameter that names a request's target, by method.
_TARGETS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri",
            "resources/subscribe": "uri", "resources/unsubscribe": "uri"}
# The trace context keys a server request's ``params._meta`` may carry.
_CONTEXT_KEYS = ("traceparent", "tracestate", "baggage")
# Span attributes that the duration metrics leave out: unbounded values.
_NOT_MEASURED = ("jsonrpc.request.id", "mcp.session.id", "mcp.resource.uri")
# What ``mcp.server.operation.duration`` has of a server message's span attributes (the
# conventions list no server address for it).
_SERVER_MEASURED = ("mcp.method.name", "mcp.protocol.version", "network.transport",
                    "network.protocol.name", "network.protocol.version")


def observer_for(tracing: Optional[bool], tracer_provider: Any = None,
                 meter_provider: Any = None) -> Optional[Union[Tracing, Dormant]]:
    """The observer a client hands its sessions, or None when telemetry is off.

    ``tracing=None``: on when ``opentelemetry-api`` is importable and ``MCP_SYNC_TRACING``
    is not ``0`` (on the global providers, a :class:`Dormant` observer until the process
    loads the API); ``False``: off, nothing imported; ``True``: on.

    Raises:
        ImportError: ``tracing=True`` without ``opentelemetry-api`` installed.
    """
    if tracing is False:
        return None
    if tracing is None and os.environ.get(ENV_VAR, "").strip() == "0":
        return None
    if (tracing is None and tracer_provider is None and meter_provider is None
            and not _api_loaded()):
        # Nothing can be traced before the application loads the API (installing an SDK
        # does, and so does any instrumentation): wait for that, not importing it.
        return Dormant() if importlib.util.find_spec("opentelemetry") is not None else None
    try:
        import opentelemetry.metrics
        import opentelemetry.propagate
        import opentelemetry.trace  # noqa: F401
    except ImportError:
        if tracing:
            raise ImportError("tracing=True needs the OpenTelemetry API: "
                              "pip install 'mcp-sync-client[otel]'") from None
        return None
    return Tracing(tracer_provider, meter_provider)


def _api_loaded() -> bool:
    """Whether the application (or anything in the process) loaded the OpenTelemetry API."""
    modules = sys.modules
    return "opentelemetry.trace" in modules or "opentelemetry.metrics" in modules


class Dormant:
    """The observer of ``tracing=None`` on the global providers while the process has not
    loaded the OpenTelemetry API: requests cost a clock read (as while no SDK is
    installed), and nothing of ``opentelemetry`` is imported. Looks again once a
    second; once the API is loaded, a :class:`Tracing` takes over (and an SDK installed
    by then is seen at once). Only :meth:`active` and :meth:`finished` (of a
    notification) are ever asked first: every other method is reached through an
    active observer."""

    def __init__(self) -> None:
        self._recheck_at = 0.0
        self._tracing: Optional[Tracing] = None
        self._lock = threading.Lock()

    def active(self) -> bool:
        tracing = self._tracing
        if tracing is not None:
            return tracing.active()
        now = time.monotonic()
        if now < self._recheck_at:
            return False
        with self._lock:
            if self._tracing is None:
                if now < self._recheck_at:
                    return False  # another thread just looked
                self._recheck_at = now + _RECHECK
                if not _api_loaded():
                    return False
        # Made outside the lock (it imports the rest of the API); two threads racing here
        # make one Tracing each over the same providers, and the first one filed stays.
        tracing = self._tracing
        if tracing is None:
            try:
                tracing = Tracing()
            except Exception:  # an observer never breaks a request (a broken install)
                log.exception("cannot trace with the OpenTelemetry API loaded here")
                self._recheck_at = float("inf")
                return False
        with self._lock:
            if self._tracing is None:
                self._tracing = tracing
            tracing = self._tracing
        return tracing.active()

    def finished(self, token: Any, result: Any, error: Optional[BaseException]) -> None:
        # Also called for a notification sent while no observer was active (token None).
        if self._tracing is not None:
            self._tracing.finished(token, result, error)

    def __getattr__(self, name: str) -> Any:
        # started, event, serving, served, opened, ended: only ever called after active()
        # said True, with what it returned, so there is a Tracing by then.
        tracing = self.__dict__.get("_tracing")
        if tracing is None:
            raise AttributeError(name)
        return getattr(tracing, name)


class Tracing:
    """A :class:`~mcp_sync._rpc.session.RequestObserver` that traces and measures every request
    and every session."""

    def __init__(self, tracer_provider: Any = None, meter_provider: Any = None) -> None:
        from opentelemetry import context, metrics, propagate, trace

        self._trace = trace
        self._metrics = metrics
        self._context = context
        self._propagate = propagate
        self._tracer = trace.get_tracer("mcp_sync", __version__, tracer_provider=tracer_provider)
        meter = metrics.get_meter("mcp_sync", __version__, meter_provider=meter_provider)
        self._operation = _histogram(
            meter, "mcp.client.operation.duration",
            "The duration of an MCP request as observed by the client, from the time it "
            "was sent until its response was received.")
        self._session = _histogram(
            meter, "mcp.client.session.duration",
            "The duration of an MCP session as observed by the client.")
        self._served = _histogram(
            meter, "mcp.server.operation.duration",
            "The duration of an MCP request or notification from the server as observed "
            "by the client, its receiver, from the time it was received until the result "
            "was sent or the notification handled.")
        # On the global providers, nothing is recorded until the application installs an
        # SDK (set_tracer_provider, set_meter_provider): until then a request costs a
        # clock read, not a span. Asking the API is slower (it reads the environment), so
        # the answers are kept for a second while an SDK is missing, and for good once
        # both are there (or were given).
        self._unset_tracer = (trace.ProxyTracerProvider,)
        self._unset_meter = _unset_meter_providers(metrics)
        self._given_tracer = tracer_provider is not None
        self._given_meter = meter_provider is not None
        self._tracing = self._given_tracer
        self._metering = self._given_meter
        self._active = self._tracing or self._metering
        self._recheck_at = float("inf") if self._tracing and self._metering else 0.0

    def active(self) -> bool:
        """Whether requests are observed now: always with a provider given; on the
        global ones, once the application installed an SDK (seen within a second)."""
        now = time.monotonic()
        if now < self._recheck_at:
            return self._active
        if not self._given_tracer:
            self._tracing = not isinstance(self._trace.get_tracer_provider(),
                                           self._unset_tracer)
        if not self._given_meter:
            self._metering = not isinstance(self._metrics.get_meter_provider(),
                                            self._unset_meter)
        self._active = self._tracing or self._metering
        self._recheck_at = float("inf") if self._tracing and self._metering else now + _RECHECK
        return self._active

    # -- requests the client sends -----------------------------------------------------

    def started(self, session: Any, method: str, params: Optional[Mapping[str, Any]],
                request_id: Any) -> Tuple[Any, Optional[Mapping[str, Any]],
                                          Optional[Mapping[str, str]]]:
        """Start the span of a request (or, ``request_id`` None, a notification) on the
        calling thread; returns it with the trace context for ``_meta`` and, over HTTP,
        for the POST's headers."""
        attributes = _session_attributes(session, with_session_id=True)
        attributes["mcp.method.name"] = method
        if request_id is not None:
            attributes["jsonrpc.request.id"] = str(request_id)
        key = _TARGETS.get(method)
        target = params.get(key) if key is not None and params else None
        if not isinstance(target, str):
            target = None
        if method == "tools/call" and target is not None:
            attributes["gen_ai.tool.name"] = target
            attributes["gen_ai.operation.name"] = "execute_tool"
        elif method == "prompts/get" and target is not None:
            attributes["gen_ai.prompt.name"] = target
        elif key == "uri" and target is not None:
            attributes["mcp.resource.uri"] = target
        measured = None
        if self._metering:
            measured = {k: v for k, v in attributes.items() if k not in _NOT_MEASURED}
        token = _Request(method, time.monotonic(), measured)
        if not self._tracing:
            return token, None, None
        named = target is not None and key == "name"
        token.span = self._tracer.start_span(
            f"{method} {target}" if named else method,
            kind=self._trace.SpanKind.CLIENT, attributes=attributes)
        carrier: Dict[str, str] = {}
        self._propagate.inject(carrier, context=self._trace.set_span_in_context(token.span))
        http = attributes.get("network.protocol.name") == "http"
        return token, carrier, (carrier if http else None)

    def finished(self, token: Any, result: Any, error: Optional[BaseException]) -> None:
        """End the request's span, and measure it: ``error.type`` (and status ERROR on
        the span) when it failed."""
        if token is None:
            return
        failure: Dict[str, str] = {}
        description = ""
        if error is not None:
            failure = _failure(error)
            description = str(error)[:200]
        elif (token.method == "tools/call" and isinstance(result, dict)
              and result.get("isError") is True):
            failure = {"error.type": "tool_error"}
            description = "the tool reported an error"
        if token.measured is not None:
            self._operation.record(time.monotonic() - token.started,
                                   {**token.measured, **failure})
        span = token.span
        if span is None:
            return
        if failure:
            span.set_attributes(failure)
            span.set_status(self._trace.StatusCode.ERROR, description)
        span.end()

    def event(self, token: Any, name: str, attributes: Mapping[str, Any]) -> None:
        """A span event on the request's span: its progress, its cancellation."""
        if token is not None and token.span is not None:
            token.span.add_event(name, dict(attributes))

    # -- requests the server sends -----------------------------------------------------

    def serving(self, session: Any, method: str, params: Any, request_id: Any) -> Any:
        """Start the SERVER span of a request from the server (``request_id`` None: of
        a notification), on the thread that answers it, and make it current there
        (until :meth:`served`): the handler runs in it; and start timing it.

        Its parent is the trace context in the message's ``params._meta`` when there is
        one (the span active on this thread, if any, is then linked), else the span
        active on this thread."""
        attributes = _session_attributes(session, with_session_id=True)
        attributes["mcp.method.name"] = method
        if request_id is not None:
            attributes["jsonrpc.request.id"] = str(request_id)
        measured = None
        if self._metering:
            measured = {k: attributes[k] for k in _SERVER_MEASURED if k in attributes}
        token = _Served(time.monotonic(), measured)
        if not self._tracing:
            return token
        if method == "notifications/resources/updated" and isinstance(params, dict):
            uri = params.get("uri")
            if isinstance(uri, str):
                attributes["mcp.resource.uri"] = uri
        trace = self._trace
        parent = self._context.get_current()
        links = []
        meta = params.get("_meta") if isinstance(params, dict) else None
        carrier = ({key: meta[key] for key in _CONTEXT_KEYS if isinstance(meta.get(key), str)}
                   if isinstance(meta, dict) else None)
        if carrier:
            remote = self._propagate.extract(carrier)
            if trace.get_current_span(remote).get_span_context().is_valid:
                ambient = trace.get_current_span(parent).get_span_context()
                if ambient.is_valid:
                    links.append(trace.Link(ambient))
                parent = remote
        token.span = self._tracer.start_span(method, context=parent,
                                             kind=trace.SpanKind.SERVER,
                                             attributes=attributes, links=links)
        token.attached = self._context.attach(trace.set_span_in_context(token.span, parent))
        return token

    def served(self, token: Any, error: Optional[BaseException]) -> None:
        """End the span :meth:`serving` started (on the same thread), and measure
        ``mcp.server.operation.duration``: status ERROR and ``error.type`` when the
        handler failed or the client refused, or the server cancelled the request.
        Nothing of a handler's own exception is recorded (its text may hold a secret: it
        goes to the client's log only)."""
        if token is None:
            return
        failure = _failure(error) if error is not None else {}
        if token.measured is not None:
            self._served.record(time.monotonic() - token.started,
                                {**token.measured, **failure})
        span = token.span
        if span is None:
            return
        try:
            if error is not None:
                span.set_attributes(failure)
                description = (error.message if isinstance(error, ServerError)
                               else _error_type(error))
                span.set_status(self._trace.StatusCode.ERROR, description[:200])
            span.end()
        finally:
            self._context.detach(token.attached)

    # -- sessions ----------------------------------------------------------------------

    def opened(self, session: Any) -> Any:
        """A session started: when it is measured."""
        return time.monotonic() if self._metering else None

    def ended(self, session: Any, token: Any, error: Optional[BaseException]) -> None:
        """A session ended (``error``: the failure that ended it, if one did): measure
        ``mcp.client.session.duration``."""
        if token is None:
            return
        attributes = _session_attributes(session, with_session_id=False)
        if error is not None:
            attributes["error.type"] = _failure(error)["error.type"]
        self._session.record(time.monotonic() - token, attributes)


class _Request:
    """What :meth:`Tracing.started` hands :meth:`Tracing.finished`."""

    __slots__ = ("measured", "method", "span", "started")

    def __init__(self, method: str, started: float,
                 measured: Optional[Dict[str, Any]]) -> None:
        self.method = method
        self.started = started
        self.measured = measured
        self.span: Any = None


class _Served:
    """What :meth:`Tracing.serving` hands :meth:`Tracing.served`."""

    __slots__ = ("attached", "measured", "span", "started")

    def __init__(self, started: float, measured: Optional[Dict[str, Any]]) -> None:
        self.started = started
        self.measured = measured
        self.span: Any = None
        self.attached: Any = None


def _session_attributes(session: Any, *, with_session_id: bool) -> Dict[str, Any]:
    """The attributes a session gives each of its spans and measurements: the protocol
    version agreed, and the transport (the server's address over HTTP)."""
    attributes: Dict[str, Any] = {}
    agreement = session.agreement
    version = agreement.protocol_header if agreement is not None else None
    if version is not None:
        attributes["mcp.protocol.version"] = version
    transport = session.transport
    url = getattr(transport, "url", None)
    if isinstance(url, str):
        attributes["network.transport"] = "tcp"
        attributes["network.protocol.name"] = "http"
        attributes["network.protocol.version"] = "1.1"  # requests speaks HTTP/1.1
        parts = urlsplit(url)
        if parts.hostname:
            attributes["server.address"] = parts.hostname
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            port = None
        if port is not None:
            attributes["server.port"] = port
        session_id = getattr(transport, "session_id", None)
        if with_session_id and isinstance(session_id, str):
            attributes["mcp.session.id"] = session_id
    elif type(transport).__name__ == "StdioTransport":
        attributes["network.transport"] = "pipe"
    return attributes


def _failure(error: BaseException) -> Dict[str, str]:
    """``error.type`` for ``error``, and ``rpc.response.status_code`` for a JSON-RPC
    error."""
    if isinstance(error, ServerError):
        return {"error.type": str(error.code), "rpc.response.status_code": str(error.code)}
    return {"error.type": _error_type(error)}


def _error_type(error: BaseException) -> str:
    for kind, name in _ERROR_TYPES:
        if isinstance(error, kind):
            return name
    return f"{type(error).__module__}.{type(error).__qualname__}"


def _histogram(meter: Any, name: str, description: str) -> Any:
    try:
        return meter.create_histogram(name, unit="s", description=description,
                                      explicit_bucket_boundaries_advisory=DURATION_BUCKETS)
    except TypeError:  # an API older than bucket advice (before 1.23)
        return meter.create_histogram(name, unit="s", description=description)


def _unset_meter_providers(metrics: Any) -> Tuple[type, ...]:
    """The global meter provider's types while no SDK is installed: the API's proxy (a
    private name, looked up defensively) and its no-op."""
    kinds = [metrics.NoOpMeterProvider]
    internal = getattr(metrics, "_internal", None)
    proxy = getattr(internal, "_ProxyMeterProvider", None)
    if isinstance(proxy, type):
        kinds.append(proxy)
    return tuple(kinds)
