"""OpenTelemetry SERVER spans for the requests a server sends the client (sampling,
elicitation, roots, ping): parented from the trace context in ``params._meta``, current
while the user's handler runs, ERROR when the handler fails or the client refuses.

Peer: the fake stdio server. Session era: its ``ask`` tool sends the client a request
(with the params the test gives, ``_meta`` included) and reports the answer; stateless
era: its ``needs_input`` tool asks for input requests. Spans go to an in-memory exporter.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Tuple

import pytest
from opentelemetry import baggage, trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import mcp_sync
from mcp_sync import CallbackError

from ..conftest import fake_server_command
from ..helpers import wait_for
from .test_handlers import ANSWERS, KEYWORD, PARAMS
from .test_tracing import memory_tracer, one

T = 20.0
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN_ID = "00f067aa0ba902b7"
REMOTE = {"traceparent": f"00-{TRACE_ID}-{SPAN_ID}-01", "baggage": "tenant=acme"}
SECRET = "sk-live-7f3a9c-NOT-FOR-THE-TRACE"


@pytest.fixture
def traced() -> Tuple[TracerProvider, InMemorySpanExporter]:
    return memory_tracer()


class Seen:
    """A handler's view of the tracing context it runs in."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.contexts: List[Tuple[Any, Optional[object]]] = []

    def __call__(self, params: Any = None) -> Any:
        self.contexts.append((trace.get_current_span().get_span_context(),
                              baggage.get_baggage("tenant")))
        return self.answer() if callable(self.answer) else self.answer


def ask(client: mcp_sync.Client, method: str, params: Dict[str, Any]) -> Dict[str, Any]:
    answer: Dict[str, Any] = json.loads(client.call_tool("ask", {"method": method,
                                                                 "params": params}).text)
    return answer


def strings(span: ReadableSpan) -> str:
    """Everything a span says, as text: to check that a secret is not in it."""
    return json.dumps([span.name, dict(span.attributes or {}), span.status.description,
                       [(e.name, dict(e.attributes or {})) for e in span.events]])


@pytest.mark.parametrize("method", list(PARAMS))
def test_a_server_request_gets_a_server_span_current_in_its_handler(
        traced: Tuple[TracerProvider, InMemorySpanExporter], method: str) -> None:
    provider, exporter = traced
    handler = Seen(ANSWERS[method])
    with mcp_sync.connect(fake_server_command(), timeout=T, tracing=True,
                          tracer_provider=provider, **{KEYWORD[method]: handler}) as client:
        answer = ask(client, method, {**PARAMS[method], "_meta": REMOTE})
    assert "result" in answer, answer

    span = one(exporter, method)
    assert span.kind is SpanKind.SERVER
    assert span.parent is not None and span.parent.is_remote
    assert f"{span.parent.trace_id:032x}" == TRACE_ID
    assert f"{span.parent.span_id:016x}" == SPAN_ID
    assert span.links == ()  # no span was active on the handler thread
    assert span.status.status_code is StatusCode.UNSET
    attributes = span.attributes or {}
    assert attributes["mcp.method.name"] == method
    assert attributes["jsonrpc.request.id"] == "s1"  # the fake server's first request
    assert attributes["mcp.protocol.version"] == "2025-11-25"
    assert attributes["network.transport"] == "pipe"
    # The handler ran inside it, with the request's baggage.
    ((context, tenant),) = handler.contexts
    assert context.span_id == span.context.span_id
    assert context.trace_id == span.context.trace_id
    assert tenant == "acme"


def test_a_server_request_without_trace_context_starts_a_trace(
        traced: Tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, exporter = traced
    handler = Seen(ANSWERS["roots/list"])
    with mcp_sync.connect(fake_server_command(), timeout=T, tracing=True,
                          tracer_provider=provider, roots=handler) as client:
        ask(client, "roots/list", {})
        ask(client, "ping", {"_meta": REMOTE})
    roots = one(exporter, "roots/list")
    assert roots.kind is SpanKind.SERVER and roots.parent is None
    ((context, tenant),) = handler.contexts
    assert context.span_id == roots.context.span_id and tenant is None
    # A ping from the server (answered without a handler) gets its span too.
    ping = one(exporter, "ping")
    assert ping.kind is SpanKind.SERVER
    assert ping.parent is not None and f"{ping.parent.span_id:016x}" == SPAN_ID
    assert (ping.attributes or {})["mcp.method.name"] == "ping"
    assert ping.status.status_code is StatusCode.UNSET


def failing_handler(params: Any = None) -> Any:
    raise RuntimeError(f"could not use key {SECRET}")


@pytest.mark.parametrize("method", list(PARAMS))
def test_a_failing_handler_makes_the_span_an_error_without_its_text(
        traced: Tuple[TracerProvider, InMemorySpanExporter], method: str) -> None:
    provider, exporter = traced
    with mcp_sync.connect(fake_server_command(), timeout=T, tracing=True,
                          tracer_provider=provider,
                          **{KEYWORD[method]: failing_handler}) as client:
        answer = ask(client, method, {**PARAMS[method], "_meta": REMOTE})
    assert answer["error"]["code"] == -32603

    span = one(exporter, method)
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == answer["error"]["message"]  # the generic one
    assert (span.attributes or {})["error.type"] == "-32603"
    assert (span.attributes or {})["rpc.response.status_code"] == "-32603"
    assert SECRET not in strings(span)


def test_refusals_make_the_span_an_error(
        traced: Tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, exporter = traced
    sampling = Seen(ANSWERS["sampling/createMessage"])
    with mcp_sync.connect(fake_server_command(), timeout=T, tracing=True,
                          tracer_provider=provider, sampling_handler=sampling) as client:
        # Sampling with tools, which the client did not declare: refused, -32602.
        with_tools = {**PARAMS["sampling/createMessage"], "tools": [
            {"name": "t", "inputSchema": {"type": "object"}}]}
        assert ask(client, "sampling/createMessage", with_tools)["error"]["code"] == -32602
        # No elicitation handler: the method is not found, -32601.
        assert ask(client, "elicitation/create",
                   PARAMS["elicitation/create"])["error"]["code"] == -32601
    assert sampling.contexts == []

    refused = one(exporter, "sampling/createMessage")
    assert refused.status.status_code is StatusCode.ERROR
    assert (refused.attributes or {})["error.type"] == "-32602"
    assert "sampling.tools" in str(refused.status.description)
    unknown = one(exporter, "elicitation/create")
    assert unknown.kind is SpanKind.SERVER
    assert unknown.status.status_code is StatusCode.ERROR
    assert (unknown.attributes or {})["error.type"] == "-32601"
    assert (unknown.attributes or {})["rpc.response.status_code"] == "-32601"


def test_a_request_the_server_cancels_ends_its_span_as_cancelled(
        traced: Tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, exporter = traced

    def elicit(params: Any) -> Dict[str, Any]:
        mcp_sync.request_context().cancelled.wait(T)  # the server cancels it at once
        return {"action": "decline"}

    with mcp_sync.connect(fake_server_command(), timeout=T, tracing=True,
                          tracer_provider=provider, elicitation_handler=elicit) as client:
        client.call_tool("ask_and_cancel", {"method": "elicitation/create",
                                            "params": PARAMS["elicitation/create"]})
        span = wait_for(lambda: [s for s in exporter.get_finished_spans()
                                 if s.name == "elicitation/create"], T, "the span's end")[0]
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})["error.type"] == "cancelled"
    assert "rpc.response.status_code" not in (span.attributes or {})


# -- the stateless era: input requests, answered on the calling thread -----------------------


def test_stateless_input_requests_get_server_spans(
        traced: Tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, exporter = traced
    tracer = provider.get_tracer("test")
    sampling = Seen(ANSWERS["sampling/createMessage"])
    elicit = Seen(ANSWERS["elicitation/create"])
    requests = {
        "traced": {"method": "sampling/createMessage",
                   "params": {**PARAMS["sampling/createMessage"], "_meta": REMOTE}},
        "plain": {"method": "elicitation/create", "params": PARAMS["elicitation/create"]},
    }
    with mcp_sync.connect(fake_server_command("--stateless"), timeout=T, tracing=True,
                          tracer_provider=provider, sampling_handler=sampling,
                          elicitation_handler=elicit) as client:
        assert client.era == "stateless"
        with tracer.start_as_current_span("caller") as caller:
            client.call_tool("needs_input", {"input_requests": requests})

    caller_context = caller.get_span_context()
    traced_span = one(exporter, "sampling/createMessage")
    assert traced_span.kind is SpanKind.SERVER
    assert traced_span.parent is not None
    assert f"{traced_span.parent.span_id:016x}" == SPAN_ID
    # The caller's span, active where the handler ran, is linked.
    (link,) = traced_span.links
    assert link.context.span_id == caller_context.span_id
    attributes = traced_span.attributes or {}
    assert attributes["jsonrpc.request.id"] == "traced"  # the input request's key
    assert attributes["mcp.protocol.version"] == "2026-07-28"
    assert attributes["network.transport"] == "pipe"
    assert traced_span.status.status_code is StatusCode.UNSET
    ((context, tenant),) = sampling.contexts
    assert context.span_id == traced_span.context.span_id and tenant == "acme"

    plain = one(exporter, "elicitation/create")
    assert plain.parent is not None and plain.parent.span_id == caller_context.span_id
    assert plain.links == ()
    ((context, tenant),) = elicit.contexts
    assert context.span_id == plain.context.span_id and tenant is None


def test_a_failing_stateless_handler_makes_the_span_an_error_without_its_text(
        traced: Tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, exporter = traced
    requests = {"q": {"method": "roots/list", "params": {}}}
    with mcp_sync.connect(fake_server_command("--stateless"), timeout=T, tracing=True,
                          tracer_provider=provider, roots=failing_handler) as client, \
            pytest.raises(CallbackError):
        client.call_tool("needs_input", {"input_requests": requests})
    span = one(exporter, "roots/list")
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})["error.type"] == "handler_error"
    assert SECRET not in strings(span)
