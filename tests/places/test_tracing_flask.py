"""Trace propagation with real instrumentation: a Flask app instrumented by
``opentelemetry-instrumentation-flask``, served over a real socket, whose view calls a
tool over stdio and over Streamable HTTP. One trace: the Flask SERVER span, the MCP
CLIENT spans its children, and the MCP servers receive that trace's context; a server that
passes it on in its own request to the client (sampling) gets the client's SERVER span,
and the sampling handler runs in it, in the same trace.

Peers: werkzeug's server (127.0.0.1, a thread) for the Flask app; the fake stdio server
(it reports the ``_meta`` it received) and the threaded Streamable HTTP server (it records
each POST's headers and body; its ``consult`` tool asks the client for a sampling with
the trace context its own call came with).
"""

from __future__ import annotations

import json
from typing import Any, Dict, Iterator, List, Tuple

import flask
import pytest
import requests
from opentelemetry import trace
from opentelemetry.instrumentation.flask import FlaskInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanContext, SpanKind

import mcp_sync
from mcp_sync.testing import FakeServer, ToolContext

from ..client.test_tracing import memory_tracer, one, traceparent
from ..conftest import fake_server_command
from ..helpers import serve_wsgi
from ..servers.http_server import McpHttpServer, echo_fake

T = 20.0


@pytest.fixture
def traced() -> Tuple[TracerProvider, InMemorySpanExporter]:
    return memory_tracer()


def propagating_fake() -> FakeServer:
    """``echo``, and ``consult``: a sampling request to the client carrying the
    ``traceparent`` the call came with, as an instrumented server would."""
    fake = echo_fake("http-peer")

    @fake.tool()
    def consult(question: str, ctx: ToolContext) -> str:
        """Ask the client's model."""
        call = next(m for m in ctx.connection.received
                    if m.get("id") == ctx.request_id and m.get("method") == "tools/call")
        meta = {"traceparent": call["params"]["_meta"]["traceparent"]}
        result = ctx.request("sampling/createMessage", {
            "messages": [{"role": "user", "content": {"type": "text", "text": question}}],
            "maxTokens": 10, "_meta": meta}, timeout=T)
        return str(result["content"]["text"])

    return fake


@pytest.fixture
def mcp_http() -> Iterator[McpHttpServer]:
    with McpHttpServer(propagating_fake()) as server:
        yield server


#: What the sampling handler saw: the span current while it ran.
sampled_in: List[SpanContext] = []


def sample(params: Any) -> Dict[str, Any]:
    sampled_in.append(trace.get_current_span().get_span_context())
    return {"role": "assistant", "model": "m", "content": {"type": "text", "text": "sunny"}}


def make_app(provider: TracerProvider, http_url: str) -> flask.Flask:
    app = flask.Flask("traced_app")

    @app.get("/weather")
    def weather() -> Dict[str, Any]:
        with mcp_sync.connect(fake_server_command(), timeout=T,
                              tracer_provider=provider) as stdio:
            stdio_text = stdio.call_tool("echo", {"text": "over stdio"}).text
            received = json.loads(stdio.call_tool("received", {"method": "tools/call"}).text)
        with mcp_sync.connect(http_url, timeout=T, tracer_provider=provider,
                              sampling_handler=sample) as http:
            http_text = http.call_tool("echo", {"text": "over http"}).text
            sampled = http.call_tool("consult", {"question": "weather?"}).text
        echo_meta = [m["params"].get("_meta") or {} for m in received
                     if m["params"]["name"] == "echo"]
        return {"texts": [stdio_text, http_text, sampled], "stdio_meta": echo_meta}

    FlaskInstrumentor().instrument_app(app, tracer_provider=provider)
    return app


@pytest.fixture
def served(traced: Tuple[TracerProvider, InMemorySpanExporter],
           mcp_http: McpHttpServer) -> Iterator[str]:
    """The instrumented app on a real socket; its base URL."""
    provider, _ = traced
    app = make_app(provider, mcp_http.url)
    try:
        with serve_wsgi(app, threaded=False, timeout=T) as url:
            yield url
    finally:
        FlaskInstrumentor().uninstrument_app(app)


def test_a_flask_request_and_its_mcp_calls_are_one_trace(
        traced: Tuple[TracerProvider, InMemorySpanExporter], served: str,
        mcp_http: McpHttpServer) -> None:
    _, exporter = traced
    answer = requests.get(f"{served}/weather", timeout=T)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["texts"] == ["over stdio", "over http", "sunny"]

    flask_span = one(exporter, "GET /weather")
    assert flask_span.kind is SpanKind.SERVER
    trace_id = flask_span.context.trace_id
    calls = [s for s in exporter.get_finished_spans() if s.name == "tools/call echo"]
    stdio_span, http_span = sorted(calls, key=lambda s: s.start_time or 0)
    for span in (stdio_span, http_span):
        assert span.kind is SpanKind.CLIENT
        assert span.context.trace_id == trace_id
        assert span.parent is not None and span.parent.span_id == flask_span.context.span_id
    assert (stdio_span.attributes or {})["network.transport"] == "pipe"
    assert (http_span.attributes or {})["network.transport"] == "tcp"
    # Every MCP span of the view (the handshakes and listings too) is in the Flask trace.
    mcp_spans = [s for s in exporter.get_finished_spans() if s is not flask_span]
    assert len(mcp_spans) >= 6
    assert {s.context.trace_id for s in mcp_spans} == {trace_id}

    # What the servers received: the CLIENT span's context, in the Flask request's trace.
    (stdio_meta,) = body["stdio_meta"]
    assert stdio_meta["traceparent"] == traceparent(stdio_span)
    (post,) = mcp_http.matching(lambda r: r.method == "POST" and r.rpc_method == "tools/call"
                                and r.json["params"]["name"] == "echo")
    assert post.header("traceparent") == traceparent(http_span)
    assert post.json["params"]["_meta"]["traceparent"] == traceparent(http_span)
    assert f"{trace_id:032x}" in str(post.header("traceparent"))

    # The server's sampling request, parented from the context it carried: the client's
    # SERVER span is a child of its own tools/call span, and the handler ran in it.
    consult = one(exporter, "tools/call consult")
    sampling = one(exporter, "sampling/createMessage")
    assert sampling.kind is SpanKind.SERVER
    assert sampling.parent is not None and sampling.parent.span_id == consult.context.span_id
    assert sampling.context.trace_id == trace_id
    (handler_span,) = sampled_in
    assert handler_span.span_id == sampling.context.span_id
