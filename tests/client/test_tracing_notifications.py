"""OpenTelemetry for notifications, both ways, and ``mcp.server.operation.duration``
(mcp_sync/client/_tracing.py, the observer calls in mcp_sync/_rpc/session.py).

A notification the client sends gets a CLIENT span (``{mcp.method.name}``, no
``jsonrpc.request.id``) whose context goes in its ``params._meta`` (and, over HTTP, its
POST's headers), and a measurement of ``mcp.client.operation.duration``. A notification
from the server gets a SERVER span parented from its ``_meta``, and a measurement of
``mcp.server.operation.duration``, as does every request from the server.

Peers: the fake stdio server (its ``notify`` tool sends the notification the test gives,
its ``ask`` tool a request; ``received`` reports what it got), the threaded Streamable
HTTP server, and the flood server for the cost of a flood while no SDK is installed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any, Dict, List, Tuple

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import mcp_sync
from mcp_sync import RequestTimeout

from ..conftest import ROOT, SERVERS, fake_server_command
from ..helpers import wait_for
from ..servers.http_server import McpHttpServer, echo_fake
from .test_handlers import ANSWERS, KEYWORD, PARAMS
from .test_tracing import memory_tracer, one, spans_named, traceparent
from .test_tracing_metrics import BUCKETS, by_attributes, only, points
from .test_tracing_server import REMOTE, SPAN_ID, TRACE_ID, Seen, ask, failing_handler

T = 20.0
OPERATION = "mcp.client.operation.duration"
SERVED = "mcp.server.operation.duration"
ERA = "2025-11-25"
STDIO = {"mcp.protocol.version": ERA, "network.transport": "pipe"}


@pytest.fixture
def traced() -> Tuple[TracerProvider, InMemorySpanExporter]:
    return memory_tracer()


@pytest.fixture
def metered() -> Tuple[MeterProvider, InMemoryMetricReader]:
    reader = InMemoryMetricReader()
    return MeterProvider(metric_readers=[reader]), reader


def received(client: mcp_sync.Client, method: str) -> List[Dict[str, Any]]:
    found: List[Dict[str, Any]] = json.loads(
        client.call_tool("received", {"method": method}).text)
    return found


def settled(exporter: InMemorySpanExporter, name: str) -> ReadableSpan:
    """The one span ``name``, once ended: a notification is routed on the dispatch thread,
    which the answer to the call that caused it may overtake."""
    wait_for(lambda: spans_named(exporter, name), T, name)
    return one(exporter, name)


# -- notifications the client sends -----------------------------------------------------------


def test_notifications_sent_get_client_spans_and_carry_their_context(
        traced: Tuple[TracerProvider, InMemorySpanExporter],
        metered: Tuple[MeterProvider, InMemoryMetricReader]) -> None:
    provider, exporter = traced
    meters, reader = metered
    tracer = provider.get_tracer("test")
    with mcp_sync.connect(fake_server_command(), protocol_version=ERA, timeout=T,
                          tracing=True, tracer_provider=provider, meter_provider=meters,
                          roots=[]) as client:
        with tracer.start_as_current_span("caller") as caller:
            client.send_roots_list_changed()
        with pytest.raises(RequestTimeout):
            client.call_tool("slow", {"seconds": 5}, timeout=0.2)
        initialized = received(client, "notifications/initialized")
        changed = received(client, "notifications/roots/list_changed")
        cancelled = received(client, "notifications/cancelled")

    span = one(exporter, "notifications/initialized")
    assert span.kind is SpanKind.CLIENT
    assert dict(span.attributes or {}) == {"mcp.method.name": "notifications/initialized",
                                           **STDIO}  # no jsonrpc.request.id
    assert span.status.status_code is StatusCode.UNSET and span.end_time is not None
    ((message,),) = [initialized]
    assert message["params"]["_meta"]["traceparent"] == traceparent(span)

    span = one(exporter, "notifications/roots/list_changed")
    assert span.kind is SpanKind.CLIENT
    assert (span.attributes or {})["mcp.method.name"] == "notifications/roots/list_changed"
    assert span.parent is not None and span.parent.span_id == caller.get_span_context().span_id
    assert [m["params"]["_meta"]["traceparent"] for m in changed] == [traceparent(span)]

    span = one(exporter, "notifications/cancelled")
    (message,) = cancelled
    assert message["params"]["_meta"]["traceparent"] == traceparent(span)
    assert message["params"]["reason"] == "timed out"  # its own params are kept
    call = one(exporter, "tools/call slow")
    assert message["params"]["requestId"] == int(str((call.attributes or {})
                                                     ["jsonrpc.request.id"]))

    # Measured like requests: sent until written.
    assert only(reader, OPERATION, **{"mcp.method.name": "notifications/initialized"}) == {
        "mcp.method.name": "notifications/initialized", **STDIO}
    assert by_attributes(reader, OPERATION,
                         **{"mcp.method.name": "notifications/roots/list_changed"})
    assert by_attributes(reader, OPERATION, **{"mcp.method.name": "notifications/cancelled"})


def test_a_notification_over_http_carries_its_context_in_the_post(
        traced: Tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, exporter = traced
    with McpHttpServer(echo_fake("h")) as server:
        with mcp_sync.connect(server.url, protocol_version=ERA, timeout=T, tracing=True,
                              tracer_provider=provider) as client:
            session_id = client.transport.session_id  # type: ignore[attr-defined]
        posts = server.matching(lambda r: r.method == "POST"
                                and r.rpc_method == "notifications/initialized")

    span = one(exporter, "notifications/initialized")
    assert dict(span.attributes or {}) == {
        "mcp.method.name": "notifications/initialized", "mcp.protocol.version": ERA,
        "mcp.session.id": session_id, "network.transport": "tcp",
        "network.protocol.name": "http", "network.protocol.version": "1.1",
        "server.address": "127.0.0.1", "server.port": server.port}
    (post,) = posts
    assert post.header("traceparent") == traceparent(span)
    assert post.json["params"]["_meta"]["traceparent"] == traceparent(span)
    # Every request span over HTTP names the protocol's version too.
    assert (one(exporter, "initialize").attributes or {})["network.protocol.version"] == "1.1"


# -- notifications from the server ----------------------------------------------------------


def test_notifications_received_get_server_spans_parented_from_their_meta(
        traced: Tuple[TracerProvider, InMemorySpanExporter],
        metered: Tuple[MeterProvider, InMemoryMetricReader]) -> None:
    provider, exporter = traced
    meters, reader = metered
    with mcp_sync.connect(fake_server_command(), protocol_version=ERA, timeout=T,
                          tracing=True, tracer_provider=provider,
                          meter_provider=meters) as client:
        client.call_tool("notify", {"method": "notifications/tools/list_changed",
                                    "params": {"_meta": REMOTE}})
        client.call_tool("notify", {"method": "notifications/resources/updated",
                                    "params": {"uri": "file:///srv/report.pdf"}})
        listed = settled(exporter, "notifications/tools/list_changed")
        updated = settled(exporter, "notifications/resources/updated")

    assert listed.kind is SpanKind.SERVER
    assert listed.parent is not None and listed.parent.is_remote
    assert f"{listed.parent.trace_id:032x}" == TRACE_ID
    assert f"{listed.parent.span_id:016x}" == SPAN_ID
    assert dict(listed.attributes or {}) == {
        "mcp.method.name": "notifications/tools/list_changed", **STDIO}
    assert listed.status.status_code is StatusCode.UNSET

    # Without trace context: a trace of its own; the URI an attribute, never the name.
    assert updated.kind is SpanKind.SERVER and updated.parent is None
    assert dict(updated.attributes or {}) == {
        "mcp.method.name": "notifications/resources/updated",
        "mcp.resource.uri": "file:///srv/report.pdf", **STDIO}

    assert only(reader, SERVED,
                **{"mcp.method.name": "notifications/tools/list_changed"}) == {
        "mcp.method.name": "notifications/tools/list_changed", **STDIO}
    assert only(reader, SERVED,
                **{"mcp.method.name": "notifications/resources/updated"}) == {
        "mcp.method.name": "notifications/resources/updated", **STDIO}  # no URI


# -- mcp.server.operation.duration for the server's requests -----------------------------------


@pytest.mark.parametrize("method", list(PARAMS))
def test_each_server_request_is_measured(
        metered: Tuple[MeterProvider, InMemoryMetricReader], method: str) -> None:
    """Metrics alone (no tracer provider given, none installed): measured all the same."""
    meters, reader = metered
    with mcp_sync.connect(fake_server_command(), protocol_version=ERA, timeout=T,
                          tracing=True, meter_provider=meters,
                          **{KEYWORD[method]: Seen(ANSWERS[method])}) as client:
        assert "result" in ask(client, method, PARAMS[method])
        assert "result" in ask(client, "ping", {})

    assert only(reader, SERVED, **{"mcp.method.name": method}) == {
        "mcp.method.name": method, **STDIO}  # no request id, no session id
    assert only(reader, SERVED, **{"mcp.method.name": "ping"}) == {
        "mcp.method.name": "ping", **STDIO}
    for point in points(reader, SERVED):
        assert list(point.explicit_bounds) == BUCKETS and point.count == 1


def test_a_failed_server_request_is_measured_with_its_error(
        metered: Tuple[MeterProvider, InMemoryMetricReader]) -> None:
    meters, reader = metered
    with mcp_sync.connect(fake_server_command(), protocol_version=ERA, timeout=T,
                          tracing=True, meter_provider=meters,
                          sampling_handler=failing_handler) as client:
        assert ask(client, "sampling/createMessage",
                   PARAMS["sampling/createMessage"])["error"]["code"] == -32603
        assert ask(client, "elicitation/create",  # no handler: answered without one
                   PARAMS["elicitation/create"])["error"]["code"] == -32601

    assert only(reader, SERVED, **{"mcp.method.name": "sampling/createMessage"}) == {
        "mcp.method.name": "sampling/createMessage", "error.type": "-32603",
        "rpc.response.status_code": "-32603", **STDIO}
    assert only(reader, SERVED, **{"mcp.method.name": "elicitation/create"}) == {
        "mcp.method.name": "elicitation/create", "error.type": "-32601",
        "rpc.response.status_code": "-32601", **STDIO}


# -- the cost of a flood ----------------------------------------------------------------------


FLOOD = textwrap.dedent("""
    import json, sys, threading
    import mcp_sync
    from mcp_sync.client import _tracing as _otel
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanProcessor

    _otel._RECHECK = 0.0  # test only: see the SDK at the next message, not a second later
    told = {"started": 0, "serving": 0}
    for name in told:
        def counting(self, *args, _name=name, _real=getattr(_otel.Tracing, name)):
            told[_name] += 1
            return _real(self, *args)
        setattr(_otel.Tracing, name, counting)

    class Counting(SpanProcessor):
        def __init__(self, expected):
            self.expected, self.names, self.done = expected, [], threading.Event()
        def on_end(self, span):
            if span.name == "notifications/message":
                self.names.append(span.name)
                if len(self.names) >= self.expected:
                    self.done.set()

    def flood(client, count):
        client.call_tool("flood", {"kind": "log", "count": count, "size": 10})
        stats = json.loads(client.call_tool("stats", {"flood_done": True,
                                                      "timeout": 30}).text)
        assert stats["flood_done"], stats  # (sent: cumulative)

    report = {}
    with mcp_sync.connect(json.loads(sys.argv[1]), timeout=30, tracing=True,
                          logging_handler=lambda params: None) as client:
        client.call_tool("echo", {"text": "warm up"})
        before = dict(told)
        flood(client, 10000)
        client.call_tool("echo", {"text": "after"})
        report["inactive"] = {k: told[k] - before[k] for k in told}
        processor = Counting(1000)
        provider = TracerProvider()
        provider.add_span_processor(processor)
        trace.set_tracer_provider(provider)
        flood(client, 1000)
        report["spans"] = len(processor.names) if processor.done.wait(30) else -1
    print(json.dumps(report))
""")


def test_a_flood_costs_no_span_while_no_sdk_is_installed() -> None:
    """10,000 notifications from the server, and the observer is asked to do nothing for
    any of them while the global provider has no SDK (each costs the check of
    ``active()``); once one is installed, each notification is one span. A fresh process:
    the global provider can be set once."""
    command = [sys.executable, str(SERVERS / "flood_stdio.py")]
    done = subprocess.run([sys.executable, "-c", FLOOD, json.dumps(command)],
                          capture_output=True, text=True, timeout=120, cwd=str(ROOT))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["inactive"] == {"started": 0, "serving": 0}
    assert report["spans"] == 1000
