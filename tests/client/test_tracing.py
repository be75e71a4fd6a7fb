"""OpenTelemetry tracing (``tracing=``, mcp_sync/client/_tracing.py): one CLIENT span per request
sent, its trace context carried to the server in ``_meta`` and, over HTTP, in headers.

Peers: the fake stdio server (both eras) and the threaded Streamable HTTP server with a
FakeServer (both eras). The spans go to an in-memory exporter of the OpenTelemetry SDK.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any, Dict, Iterator, List, Tuple
from urllib.parse import urlsplit

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import mcp_sync
from mcp_sync import RequestTimeout, ServerError
from mcp_sync.testing import FakeServer

from ..conftest import PY, ROOT, fake_server_command, fake_server_for
from ..servers.http_server import McpHttpServer, echo_fake
from ..servers.legacy_sse_server import LegacySseServer

T = 20.0


def memory_tracer() -> Tuple[TracerProvider, InMemorySpanExporter]:
    """A TracerProvider of its own, whose spans go to the exporter returned with it."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


@pytest.fixture
def traced() -> Tuple[TracerProvider, InMemorySpanExporter]:
    return memory_tracer()


def spans_named(exporter: InMemorySpanExporter, name: str) -> List[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def one(exporter: InMemorySpanExporter, name: str) -> ReadableSpan:
    found = spans_named(exporter, name)
    names = [s.name for s in exporter.get_finished_spans()]
    assert len(found) == 1, f"{name!r} in {names}"
    return found[0]


def traceparent(span: ReadableSpan) -> str:
    context = span.get_span_context()
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"


def received_calls(client: mcp_sync.Client, tool: str) -> List[Dict[str, Any]]:
    """The tools/call messages for ``tool`` the fake stdio server received."""
    messages = json.loads(client.call_tool("received", {"method": "tools/call"}).text)
    return [m for m in messages if m["params"]["name"] == tool]


# -- stdio -----------------------------------------------------------------------------------


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
def test_each_request_gets_a_client_span_over_stdio(
        traced: Tuple[TracerProvider, InMemorySpanExporter], era: str) -> None:
    provider, exporter = traced
    command = fake_server_for(era)
    with mcp_sync.connect(command, protocol_version=era, timeout=T, tracing=True,
                          tracer_provider=provider) as client:
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        assert client.read_resource("test://hello").text == "hello world"
        client.get_prompt("greet", {"who": "ada"})
        client.ping()

    call = one(exporter, "tools/call echo")
    assert call.kind is SpanKind.CLIENT
    attributes = call.attributes or {}
    assert attributes["mcp.method.name"] == "tools/call"
    assert str(attributes["jsonrpc.request.id"]).isdigit()
    assert attributes["mcp.protocol.version"] == era
    assert attributes["gen_ai.tool.name"] == "echo"
    assert attributes["gen_ai.operation.name"] == "execute_tool"
    assert attributes["network.transport"] == "pipe"
    assert "server.address" not in attributes and "mcp.session.id" not in attributes
    assert call.status.status_code is StatusCode.UNSET
    assert call.end_time is not None

    read = one(exporter, "resources/read")
    assert (read.attributes or {})["mcp.resource.uri"] == "test://hello"
    assert (read.attributes or {})["mcp.method.name"] == "resources/read"
    prompt = one(exporter, "prompts/get greet")
    assert (prompt.attributes or {})["gen_ai.prompt.name"] == "greet"
    assert "gen_ai.tool.name" not in (prompt.attributes or {})
    ping_name = "ping" if era == "2025-11-25" else "server/discover"
    assert spans_named(exporter, ping_name)
    assert spans_named(exporter, "tools/list")  # the call listed the tools first
    if era == "2025-11-25":
        assert spans_named(exporter, "initialize")
    requests = [s for s in exporter.get_finished_spans()
                if not s.name.startswith("notifications/")]
    ids = [(s.attributes or {})["jsonrpc.request.id"] for s in requests]
    assert len(ids) == len(set(ids))  # one span per request
    assert not [s.name for s in exporter.get_finished_spans() if "://" in s.name]  # no URIs


def test_progress_and_cancellation_are_events_of_the_request_span(
        traced: Tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, exporter = traced
    seen: List[Any] = []
    with mcp_sync.connect(fake_server_command(), timeout=T, tracing=True,
                          tracer_provider=provider) as client:
        client.call_tool("slow", {"seconds": 0.3, "progress_interval": 0.1},
                         on_progress=lambda *update: seen.append(update))
        with pytest.raises(RequestTimeout):
            client.call_tool("slow", {"seconds": 30.0}, timeout=0.3)
        future = client.call_tool_future("slow", {"seconds": 30.0})
        assert future.cancel()

    first, timed_out, cancelled = spans_named(exporter, "tools/call slow")
    progress = [e for e in first.events if e.name == "notifications/progress"]
    assert len(progress) == len(seen) >= 2
    assert [dict(e.attributes or {}) for e in progress][:2] == [
        {"progress": 1, "message": "step 1"}, {"progress": 2, "message": "step 2"}]
    assert all(e.timestamp <= (first.end_time or 0) for e in progress)
    assert [(e.name, dict(e.attributes or {})) for e in timed_out.events] == [
        ("notifications/cancelled", {"reason": "timed out"})]
    assert [(e.name, dict(e.attributes or {})) for e in cancelled.events] == [
        ("notifications/cancelled", {"reason": "cancelled by the client"})]
    assert (cancelled.attributes or {})["error.type"] == "cancelled"


def test_failures_set_the_status_and_error_type(
        traced: Tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, exporter = traced
    with mcp_sync.connect(fake_server_command(), timeout=T, tracing=True,
                          tracer_provider=provider) as client:
        with pytest.raises(ServerError):
            client.read_resource("test://missing")
        assert client.call_tool("fail", {"message": "no"}).is_error
        with pytest.raises(RequestTimeout):
            client.call_tool("slow", {"seconds": 5.0}, timeout=0.3)
        assert client.call_tool("echo", {"text": "still fine"}).text == "still fine"

    missing = one(exporter, "resources/read")
    assert missing.status.status_code is StatusCode.ERROR
    assert (missing.attributes or {})["error.type"] == "-32002"
    assert (missing.attributes or {})["rpc.response.status_code"] == "-32002"
    failed = one(exporter, "tools/call fail")
    assert failed.status.status_code is StatusCode.ERROR
    assert (failed.attributes or {})["error.type"] == "tool_error"
    slow = one(exporter, "tools/call slow")
    assert slow.status.status_code is StatusCode.ERROR
    assert (slow.attributes or {})["error.type"] == "timeout"
    fine = one(exporter, "tools/call echo")
    assert fine.status.status_code is StatusCode.UNSET
    assert "error.type" not in (fine.attributes or {})


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
def test_the_callers_span_is_the_parent_and_reaches_the_stdio_server(
        traced: Tuple[TracerProvider, InMemorySpanExporter], era: str) -> None:
    provider, exporter = traced
    tracer = provider.get_tracer("test")
    command = fake_server_for(era)
    with mcp_sync.connect(command, protocol_version=era, timeout=T, tracing=True,
                          tracer_provider=provider) as client:
        with tracer.start_as_current_span("caller") as caller:
            future = client.call_tool_future("echo", {"text": "one"})
            assert future.result(T).text == "one"
        messages = received_calls(client, "echo")

    span = one(exporter, "tools/call echo")
    assert span.parent is not None
    assert span.parent.span_id == caller.get_span_context().span_id
    assert span.context.trace_id == caller.get_span_context().trace_id
    (message,) = messages
    meta = message["params"]["_meta"]
    assert meta["traceparent"] == traceparent(span)
    assert meta["traceparent"].split("-")[1] == f"{caller.get_span_context().trace_id:032x}"
    if era == "2026-07-28":  # the envelope is kept beside the trace context
        assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"


# -- Streamable HTTP -------------------------------------------------------------------------


def stateless_fake() -> FakeServer:
    fake = echo_fake("stateless-http")

    @fake.method("server/discover")
    def discover(params: Dict[str, Any]) -> Dict[str, Any]:
        return {"resultType": "complete", "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "h", "version": "1"}}}

    return fake


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
def test_http_spans_and_headers(traced: Tuple[TracerProvider, InMemorySpanExporter],
                                era: str) -> None:
    provider, exporter = traced
    tracer = provider.get_tracer("test")
    stateless = era == "2026-07-28"
    with McpHttpServer(stateless_fake() if stateless else echo_fake("h")) as server:
        server.stateless = stateless
        with mcp_sync.connect(server.url, protocol_version=era, timeout=T, tracing=True,
                              tracer_provider=provider) as client:
            session_id = client.transport.session_id  # type: ignore[attr-defined]
            with tracer.start_as_current_span("caller") as caller:
                assert client.call_tool("echo", {"text": "x"}).text == "x"
        posts = server.matching(lambda r: r.method == "POST" and r.rpc_method == "tools/call")

    span = one(exporter, "tools/call echo")
    attributes = span.attributes or {}
    assert attributes["network.transport"] == "tcp"
    assert attributes["server.address"] == "127.0.0.1"
    assert attributes["server.port"] == server.port
    assert attributes["mcp.protocol.version"] == era
    assert attributes["gen_ai.tool.name"] == "echo"
    if stateless:
        assert session_id is None and "mcp.session.id" not in attributes
    else:
        assert session_id and attributes["mcp.session.id"] == session_id
    assert span.parent is not None and span.parent.span_id == caller.get_span_context().span_id
    (post,) = posts
    assert post.header("traceparent") == traceparent(span)
    assert post.json["params"]["_meta"]["traceparent"] == traceparent(span)
    assert f"{caller.get_span_context().trace_id:032x}" in str(post.header("traceparent"))


def test_legacy_sse_posts_carry_the_trace_context(
        traced: Tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, exporter = traced
    with LegacySseServer(echo_fake("legacy")) as legacy:
        with mcp_sync.connect(legacy.url, transport="sse", timeout=T, tracing=True,
                              tracer_provider=provider) as client:
            assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        sent = [{k.lower(): v for k, v in headers.items()}.get("traceparent")
                for method, _, headers in legacy.requests if method == "POST"]

    span = one(exporter, "tools/call echo")
    attributes = span.attributes or {}
    assert attributes["network.transport"] == "tcp"
    assert attributes["network.protocol.name"] == "http"
    assert attributes["server.address"] == "127.0.0.1"
    assert attributes["server.port"] == urlsplit(legacy.url).port
    assert attributes["mcp.protocol.version"] == client.protocol_version
    assert attributes["gen_ai.tool.name"] == "echo"
    assert "mcp.session.id" not in attributes  # the legacy transport has none
    assert traceparent(span) in sent
    requests = [s for s in exporter.get_finished_spans() if s.name != "tools/call echo"]
    assert all(traceparent(s) in sent for s in requests)  # initialize, tools/list


# -- the switch ------------------------------------------------------------------------------


def test_tracing_false_emits_nothing(traced: Tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, exporter = traced
    with mcp_sync.connect(fake_server_command(), timeout=T, tracing=False,
                          tracer_provider=provider) as client:
        assert client.call_tool("echo", {"text": "x"}).text == "x"
        (message,) = received_calls(client, "echo")
    assert exporter.get_finished_spans() == ()
    assert "traceparent" not in (message["params"].get("_meta") or {})


@pytest.fixture
def global_provider() -> Iterator[InMemorySpanExporter]:
    """The process's global TracerProvider with an exporter of its own; afterwards the
    global is unset again, so that later tests in this process see no SDK (the API lets a
    program set it only once: the reset reaches into its internals, as its own test
    utilities do)."""
    provider = TracerProvider()
    trace.set_tracer_provider(provider)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield exporter
    exporter.shutdown()
    trace._TRACER_PROVIDER_SET_ONCE = trace.Once()  # type: ignore[attr-defined]
    trace._TRACER_PROVIDER = None


def test_on_by_default_with_the_global_provider_and_off_by_environment(
        global_provider: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCP_SYNC_TRACING", raising=False)
    with mcp_sync.connect(fake_server_command(), timeout=T) as client:
        client.call_tool("echo", {"text": "x"})
    assert one(global_provider, "tools/call echo").kind is SpanKind.CLIENT
    global_provider.clear()
    monkeypatch.setenv("MCP_SYNC_TRACING", "0")
    with mcp_sync.connect(fake_server_command(), timeout=T) as client:
        client.call_tool("echo", {"text": "x"})
    assert global_provider.get_finished_spans() == ()


def run_python(code: str, **env: str) -> None:
    result = subprocess.run(
        [PY, "-c", textwrap.dedent(code), *fake_server_command()],
        env={**os.environ, **env}, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


CONNECT_AND_CALL = """
    import sys
    {prelude}
    import mcp_sync
    with mcp_sync.connect(sys.argv[1:], timeout=20{kwargs}) as client:
        assert client.call_tool("echo", {{"text": "x"}}).text == "x"
    loaded = [m for m, v in sys.modules.items() if m.startswith("opentelemetry") and v]
    assert not loaded, loaded
"""


def test_nothing_is_imported_when_tracing_is_off() -> None:
    run_python(CONNECT_AND_CALL.format(prelude="", kwargs=", tracing=False"))
    run_python(CONNECT_AND_CALL.format(prelude="", kwargs=""), MCP_SYNC_TRACING="0")


def test_nothing_is_needed_without_the_api() -> None:
    # The API made unimportable: the default switch finds it missing and stays off...
    hide = "sys.modules['opentelemetry'] = None"
    run_python(CONNECT_AND_CALL.format(prelude=hide, kwargs=""))
    # ...and asking for tracing says what to install.
    with pytest.raises(subprocess.CalledProcessError) as failed:
        subprocess.run([PY, "-c", textwrap.dedent(f"""
            import sys
            {hide}
            import mcp_sync
            mcp_sync.Client(mcp_sync.StdioTransport(sys.argv[1], sys.argv[2:]), tracing=True)
        """), *fake_server_command()], capture_output=True, text=True, timeout=60,
            check=True)
    assert "mcp-sync-client[otel]" in failed.value.stderr


def test_the_import_follows_the_switch() -> None:
    """With the API installed, ``tracing=True`` loads it: the checks above are not
    vacuous. (The default waits for the application to load it first:
    tests/project/test_lazy_imports.py.)"""
    code = """
        import sys, mcp_sync
        assert not [m for m in sys.modules if m.startswith("opentelemetry")]
        with mcp_sync.connect(sys.argv[1:], timeout=20, tracing=True) as client:
            client.ping()
        assert "opentelemetry.trace" in sys.modules
    """
    env = {k: v for k, v in os.environ.items() if k != "MCP_SYNC_TRACING"}
    result = subprocess.run([PY, "-c", textwrap.dedent(code), *fake_server_command()],
                            env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert sys.modules.get("opentelemetry.trace") is not None


# -- the session's observer seam (mcp_sync/_rpc/session.py) ------------------------------


class Recorder:
    """A RequestObserver that records what it is told, and fails when asked to."""

    def __init__(self, fail_on: str = "") -> None:
        self.fail_on = fail_on
        self.finished_calls: List[Tuple[str, Any, Any]] = []
        self.sessions: List[Tuple[str, Any]] = []

    def started(self, session: Any, method: str, params: Any, request_id: Any) -> Any:
        if method == self.fail_on:
            raise RuntimeError("observer broke")
        return method, {"observed": True}, None

    def finished(self, token: Any, result: Any, error: Any) -> None:
        self.finished_calls.append((token, result, error))
        if token == "tools/call":
            raise RuntimeError("observer broke at the end")

    def active(self) -> bool:
        return True

    def event(self, token: Any, name: str, attributes: Any) -> None:
        pass

    def serving(self, session: Any, method: str, params: Any, request_id: Any) -> Any:
        return None

    def served(self, token: Any, error: Any) -> None:
        pass

    def opened(self, session: Any) -> Any:
        self.sessions.append(("opened", session))
        return "session"

    def ended(self, session: Any, token: Any, error: Any) -> None:
        self.sessions.append((token, error))
        raise RuntimeError("observer broke at the session's end")


def test_a_failing_observer_never_breaks_a_request(caplog: pytest.LogCaptureFixture) -> None:
    from mcp_sync import StdioTransport
    from mcp_sync._rpc.session import RpcSession

    recorder = Recorder(fail_on="ping")
    command, *args = fake_server_command()
    session = RpcSession(StdioTransport(command, args), default_timeout=T,
                         observer=recorder)
    session.start()
    try:
        session.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                       "clientInfo": {"name": "t", "version": "1"}})
        session.notify("notifications/initialized")
        assert session.request("ping") == {}
        answer = session.request("tools/call", {"name": "received",
                                                "arguments": {"method": "initialize"}})
        with pytest.raises(ServerError):
            session.request("resources/read", {"uri": "test://missing"})
    finally:
        session.close()
    (initialize,) = json.loads(answer["content"][0]["text"])
    assert initialize["params"]["_meta"] == {"observed": True}  # what started() returned
    tokens = [token for token, _, _ in recorder.finished_calls]
    # Once each; not ping; the notification once written.
    assert tokens == ["initialize", "notifications/initialized", "tools/call",
                      "resources/read"]
    assert recorder.finished_calls[1][1:] == (None, None)
    assert isinstance(recorder.finished_calls[3][2], ServerError)
    assert "request observer failed on ping" in caplog.text
    assert "observer broke at the end" in caplog.text
    # The session: opened at start, ended once at close (no error: closed by its user).
    assert recorder.sessions == [("opened", session), ("session", None)]
    assert "observer broke at the session's end" in caplog.text


def test_with_no_sdk_installed_requests_carry_nothing_until_one_is() -> None:
    """opentelemetry-api alone (a dependency of many packages) records nothing: until the
    application installs an SDK on the global provider, a request gets no span and no
    traceparent (it costs a clock read); once one is installed, tracing starts within a
    second. A fresh process: the global provider can be set once."""
    script = textwrap.dedent("""
        import json, sys, time
        import mcp_sync
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter)

        def sent(client):
            calls = json.loads(client.call_tool("received", {"method": "tools/call"}).text)
            return [("traceparent" in (m.get("params", {}).get("_meta") or {}))
                    for m in calls if m["params"]["name"] == "echo"]

        with mcp_sync.connect(json.loads(sys.argv[1])) as client:
            client.call_tool("echo", {"text": "before"})
            before = sent(client)
            observer = client._rpc.observer  # test only: is the session observing?
            active_before = observer is not None and observer.active()
            exporter = InMemorySpanExporter()
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(exporter))
            trace.set_tracer_provider(provider)
            deadline = time.monotonic() + 10
            while not exporter.get_finished_spans() and time.monotonic() < deadline:
                client.call_tool("echo", {"text": "after"})  # the check comes each second
            after = sent(client)
        print(json.dumps({"before": before, "active_before": active_before,
                          "after": after[-1:],
                          "spans": sorted({s.name for s in exporter.get_finished_spans()})}))
    """)
    done = subprocess.run([sys.executable, "-c", script, json.dumps(fake_server_command())],
                          capture_output=True, text=True, timeout=60, cwd=str(ROOT))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["before"] == [False] and report["active_before"] is False
    assert report["after"] == [True] and "tools/call echo" in report["spans"]

