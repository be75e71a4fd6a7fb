"""OpenTelemetry tracing of the requests a client sends (the ``[otel]`` extra).

One CLIENT span per JSON-RPC request, named ``{mcp.method.name} {target}`` (the tool or
prompt name, or the resource URI, when the request has one), started on the calling
thread (a child of the caller's active span) and ended when the request settles, on
whatever thread settles it. The span's context goes with the request as W3C trace
context (``traceparent``, ``tracestate``, ``baggage``, through the global propagator): in
``params._meta`` always, and over HTTP in the headers of the request's POST too.

Nothing here imports ``opentelemetry`` before :func:`observer_for` decides tracing is
on: with it off (or the API not installed) the package never loads a module of it.
docs/tracing.md lists the span and attribute names.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any, Dict, Mapping, Optional, Tuple
from urllib.parse import urlsplit

from ._version import __version__
from .exceptions import (
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

#: ``MCP_SYNC_TRACING=0`` turns tracing off for clients that leave ``tracing`` unset.
ENV_VAR = "MCP_SYNC_TRACING"
#: Seconds between looks at the global tracer provider while no SDK is installed.
_RECHECK = 1.0

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
)

# The parameter that names a request's target, by method.
_TARGETS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri",
            "resources/subscribe": "uri", "resources/unsubscribe": "uri"}


def observer_for(tracing: Optional[bool], tracer_provider: Any = None) -> Optional[Tracing]:
    """The observer a client hands its sessions, or None when tracing is off.

    ``tracing=None``: on when ``opentelemetry-api`` is importable and ``MCP_SYNC_TRACING``
    is not ``0``; ``False``: off, nothing imported; ``True``: on.

    Raises:
        ImportError: ``tracing=True`` without ``opentelemetry-api`` installed.
    """
    if tracing is False:
        return None
    if tracing is None and os.environ.get(ENV_VAR, "").strip() == "0":
        return None
    try:
        import opentelemetry.propagate
        import opentelemetry.trace  # noqa: F401
    except ImportError:
        if tracing:
            raise ImportError("tracing=True needs the OpenTelemetry API: "
                              "pip install 'mcp-sync[otel]'") from None
        return None
    return Tracing(tracer_provider)


class Tracing:
    """A :class:`~mcp_sync.rpc.RequestObserver` that traces every request."""

    def __init__(self, tracer_provider: Any = None) -> None:
        from opentelemetry import propagate, trace

        self._trace = trace
        self._propagate = propagate
        self._tracer = trace.get_tracer("mcp_sync", __version__, tracer_provider=tracer_provider)
        # On the global provider, nothing is recorded until the application installs an
        # SDK (set_tracer_provider): until then a request costs a clock read, not a span.
        # Asking the API is slower (it reads the environment), so the answer is kept for
        # a second while no SDK is there, and for good once one is.
        self._unset = trace.ProxyTracerProvider
        self._active = tracer_provider is not None
        self._recheck_at = float("inf") if self._active else 0.0

    def active(self) -> bool:
        """Whether requests are traced now: always with a ``tracer_provider`` given; on
        the global one, once the application installed an SDK (seen within a second)."""
        now = time.monotonic()
        if now < self._recheck_at:
            return self._active
        self._active = not isinstance(self._trace.get_tracer_provider(), self._unset)
        self._recheck_at = float("inf") if self._active else now + _RECHECK
        return self._active

    def started(self, session: Any, method: str, params: Optional[Mapping[str, Any]],
                request_id: Any) -> Tuple[Any, Optional[Mapping[str, Any]],
                                          Optional[Mapping[str, str]]]:
        """Start the request's span on the calling thread; returns it with the trace
        context for ``_meta`` and, over HTTP, for the POST's headers."""
        attributes: Dict[str, Any] = {"mcp.method.name": method,
                                      "jsonrpc.request.id": str(request_id)}
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
        agreement = session.agreement
        version = agreement.protocol_header if agreement is not None else None
        if version is not None:
            attributes["mcp.protocol.version"] = version
        transport = session.transport
        url = getattr(transport, "url", None)
        if isinstance(url, str):
            attributes["network.transport"] = "tcp"
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
            if isinstance(session_id, str):
                attributes["mcp.session.id"] = session_id
        elif type(transport).__name__ == "StdioTransport":
            attributes["network.transport"] = "pipe"
        span = self._tracer.start_span(
            f"{method} {target}" if target is not None else method,
            kind=self._trace.SpanKind.CLIENT, attributes=attributes)
        carrier: Dict[str, str] = {}
        self._propagate.inject(carrier, context=self._trace.set_span_in_context(span))
        return (span, method), carrier, (carrier if isinstance(url, str) else None)

    def finished(self, token: Any, result: Any, error: Optional[BaseException]) -> None:
        """End the request's span: status ERROR and ``error.type`` when it failed."""
        if token is None:
            return
        span, method = token
        status_code = self._trace.StatusCode
        if error is not None:
            if isinstance(error, ServerError):
                span.set_attribute("error.type", str(error.code))
                span.set_attribute("rpc.response.status_code", str(error.code))
            else:
                span.set_attribute("error.type", _error_type(error))
            span.set_status(status_code.ERROR, str(error)[:200])
        elif (method == "tools/call" and isinstance(result, dict)
              and result.get("isError") is True):
            span.set_attribute("error.type", "tool_error")
            span.set_status(status_code.ERROR, "the tool reported an error")
        span.end()


def _error_type(error: BaseException) -> str:
    for kind, name in _ERROR_TYPES:
        if isinstance(error, kind):
            return name
    return f"{type(error).__module__}.{type(error).__qualname__}"
