"""OpenTelemetry metrics (``meter_provider=``, mcp_sync/client/_tracing.py): the histograms
``mcp.client.operation.duration`` (one measurement per request sent) and
``mcp.client.session.duration`` (one per session, at its end), with the attributes of the
MCP semantic conventions.

Peers: the fake stdio server (both eras) and the threaded Streamable HTTP server. The
measurements go to an in-memory reader of the OpenTelemetry SDK.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any, Dict, List, Tuple

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader

import mcp_sync
from mcp_sync import ConnectionClosed, RequestTimeout, ServerError
from mcp_sync.client._tracing import DURATION_BUCKETS

from ..conftest import ROOT, fake_server_command, fake_server_for
from ..servers.http_server import McpHttpServer, echo_fake
from .test_tracing import memory_tracer, stateless_fake

T = 20.0
OPERATION = "mcp.client.operation.duration"
SESSION = "mcp.client.session.duration"
BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]  # the advice


@pytest.fixture
def metered() -> Tuple[MeterProvider, InMemoryMetricReader]:
    reader = InMemoryMetricReader()
    return MeterProvider(metric_readers=[reader]), reader


def points(reader: InMemoryMetricReader, name: str) -> List[HistogramDataPoint]:
    """The data points of the histogram ``name`` (checking its unit and buckets)."""
    found: List[HistogramDataPoint] = []
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data is not None else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name != name:
                    continue
                assert scope.scope.name == "mcp_sync"
                assert metric.unit == "s"
                for point in metric.data.data_points:
                    assert isinstance(point, HistogramDataPoint)
                    assert list(point.explicit_bounds) == BUCKETS
                    found.append(point)
    return found


def by_attributes(reader: InMemoryMetricReader, name: str,
                  **match: Any) -> List[HistogramDataPoint]:
    return [p for p in points(reader, name)
            if all((p.attributes or {}).get(k) == v for k, v in match.items())]


def only(reader: InMemoryMetricReader, name: str, **match: Any) -> Dict[str, Any]:
    """The attributes of the one data point of ``name`` matching ``match``."""
    found = by_attributes(reader, name, **match)
    assert len(found) == 1, [dict(p.attributes or {}) for p in points(reader, name)]
    return dict(found[0].attributes or {})


def test_the_bucket_advice_is_the_conventions() -> None:
    assert list(DURATION_BUCKETS) == BUCKETS


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
def test_every_request_is_measured_over_stdio(
        metered: Tuple[MeterProvider, InMemoryMetricReader], era: str) -> None:
    provider, reader = metered
    command = fake_server_for(era)
    with mcp_sync.connect(command, protocol_version=era, timeout=T, tracing=True,
                          meter_provider=provider) as client:
        for _ in range(3):
            assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        client.get_prompt("greet", {"who": "ada"})
        client.read_resource("test://hello")
        with pytest.raises(ServerError):
            client.read_resource("test://missing")
        assert client.call_tool("fail", {"message": "no"}).is_error
        with pytest.raises(RequestTimeout):
            client.call_tool("slow", {"seconds": 5.0}, timeout=0.3)

    echo = by_attributes(reader, OPERATION, **{"gen_ai.tool.name": "echo"})
    assert len(echo) == 1 and echo[0].count == 3  # one series, three measurements
    assert 0 < echo[0].min <= echo[0].max < 5
    assert dict(echo[0].attributes or {}) == {
        "mcp.method.name": "tools/call", "gen_ai.tool.name": "echo",
        "gen_ai.operation.name": "execute_tool", "mcp.protocol.version": era,
        "network.transport": "pipe"}
    assert only(reader, OPERATION, **{"mcp.method.name": "prompts/get"}) == {
        "mcp.method.name": "prompts/get", "gen_ai.prompt.name": "greet",
        "mcp.protocol.version": era, "network.transport": "pipe"}
    # A resource's URI is left out (unbounded): its reads differ only by the outcome.
    assert only(reader, OPERATION, **{"mcp.method.name": "resources/read"},
                **{"error.type": None}) == {
        "mcp.method.name": "resources/read", "mcp.protocol.version": era,
        "network.transport": "pipe"}
    missing = only(reader, OPERATION, **{"error.type": "-32002"})
    assert missing["mcp.method.name"] == "resources/read"
    assert missing["rpc.response.status_code"] == "-32002"
    failed = only(reader, OPERATION, **{"error.type": "tool_error"})
    assert failed["gen_ai.tool.name"] == "fail" and "rpc.response.status_code" not in failed
    slow = only(reader, OPERATION, **{"error.type": "timeout"})
    assert slow["gen_ai.tool.name"] == "slow"
    (slow_point,) = by_attributes(reader, OPERATION, **{"error.type": "timeout"})
    assert 0.3 <= slow_point.sum < 5
    first = "initialize" if era == "2025-11-25" else "server/discover"
    assert by_attributes(reader, OPERATION, **{"mcp.method.name": first})
    for point in points(reader, OPERATION):
        attributes = point.attributes or {}
        assert "jsonrpc.request.id" not in attributes and "mcp.resource.uri" not in attributes

    # The session, measured once, at its close: no error.
    assert only(reader, SESSION) == {"mcp.protocol.version": era, "network.transport": "pipe"}
    (session,) = points(reader, SESSION)
    assert session.count == 1 and session.sum >= slow_point.sum


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
def test_http_requests_and_sessions_name_the_server(
        metered: Tuple[MeterProvider, InMemoryMetricReader], era: str) -> None:
    provider, reader = metered
    stateless = era == "2026-07-28"
    with McpHttpServer(stateless_fake() if stateless else echo_fake("h")) as server:
        server.stateless = stateless
        with mcp_sync.connect(server.url, protocol_version=era, timeout=T, tracing=True,
                              meter_provider=provider) as client:
            assert client.call_tool("echo", {"text": "x"}).text == "x"

    where = {"mcp.protocol.version": era, "network.transport": "tcp",
             "network.protocol.name": "http", "network.protocol.version": "1.1",
             "server.address": "127.0.0.1",
             "server.port": server.port}
    assert only(reader, OPERATION, **{"gen_ai.tool.name": "echo"}) == {
        **where, "mcp.method.name": "tools/call", "gen_ai.tool.name": "echo",
        "gen_ai.operation.name": "execute_tool"}
    assert only(reader, SESSION) == where  # no mcp.session.id: one per session


def test_a_lost_connection_ends_the_session_with_an_error(
        metered: Tuple[MeterProvider, InMemoryMetricReader]) -> None:
    provider, reader = metered
    with mcp_sync.connect(fake_server_command(), timeout=T, tracing=True,
                          meter_provider=provider) as client, pytest.raises(ConnectionClosed):
        client.call_tool("crash")
    session = only(reader, SESSION)
    assert session["error.type"] == "connection_closed"
    crash = only(reader, OPERATION, **{"gen_ai.tool.name": "crash"})
    assert crash["error.type"] == "connection_closed"


def test_a_failed_handshake_ends_the_session_with_an_error(
        metered: Tuple[MeterProvider, InMemoryMetricReader]) -> None:
    provider, reader = metered
    with pytest.raises(RequestTimeout):
        mcp_sync.connect(fake_server_command("--ignore-unknown", "--protocol-version",
                                             "1999-01-01"),
                         protocol_version="2026-07-28", timeout=0.5, tracing=True,
                         meter_provider=provider)
    assert only(reader, SESSION)["error.type"] == "timeout"


def test_an_expired_mcp_session_is_one_session_ended_and_another_begun(
        metered: Tuple[MeterProvider, InMemoryMetricReader]) -> None:
    provider, reader = metered
    with McpHttpServer(echo_fake("h")) as server, mcp_sync.connect(
            server.url, timeout=T, tracing=True, meter_provider=provider) as client:
        client.call_tool("echo", {"text": "one"})
        server.expire_sessions()
        assert client.call_tool("echo", {"text": "two"}).text == "two"
    expired = only(reader, SESSION, **{"error.type": "session_expired"})
    assert expired["network.transport"] == "tcp"
    assert only(reader, SESSION, **{"error.type": None})["server.port"] == server.port
    assert len(points(reader, SESSION)) == 2


def test_tracing_false_measures_nothing(
        metered: Tuple[MeterProvider, InMemoryMetricReader]) -> None:
    provider, reader = metered
    with mcp_sync.connect(fake_server_command(), timeout=T, tracing=False,
                          meter_provider=provider) as client:
        client.call_tool("echo", {"text": "x"})
    assert points(reader, OPERATION) == [] and points(reader, SESSION) == []


def test_metrics_alone_send_no_trace_context() -> None:
    """A meter provider without a tracer one, and no SDK on the global tracer provider
    (a fresh process): measurements, but no span to carry."""
    code = textwrap.dedent("""
        import json, sys
        import mcp_sync
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        reader = InMemoryMetricReader()
        with mcp_sync.connect(json.loads(sys.argv[1]), timeout=20,
                              meter_provider=MeterProvider(metric_readers=[reader])) as client:
            client.call_tool("echo", {"text": "x"})
            calls = json.loads(client.call_tool("received", {"method": "tools/call"}).text)
        names = [m.name for r in reader.get_metrics_data().resource_metrics
                 for s in r.scope_metrics for m in s.metrics]
        print(json.dumps({"meta": [c["params"].get("_meta") or {} for c in calls],
                          "names": names}))
    """)
    done = subprocess.run([sys.executable, "-c", code, json.dumps(fake_server_command())],
                          capture_output=True, text=True, timeout=60, cwd=str(ROOT))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert OPERATION in report["names"]
    assert report["meta"] and all("traceparent" not in meta for meta in report["meta"])


def test_with_no_sdk_installed_nothing_is_measured_until_one_is() -> None:
    """On the global meter provider: inactive (a request costs a clock read) until the
    application installs an SDK, then measured within a second. A fresh process: the
    global provider can be set once."""
    script = textwrap.dedent("""
        import json, sys, time
        import mcp_sync
        from opentelemetry import metrics
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader

        def measured(reader):
            data = reader.get_metrics_data()
            return sorted({m.name for r in (data.resource_metrics if data else ())
                           for s in r.scope_metrics for m in s.metrics})

        with mcp_sync.connect(json.loads(sys.argv[1])) as client:
            client.call_tool("echo", {"text": "before"})
            active_before = client._rpc.observer.active()  # test only
            reader = InMemoryMetricReader()
            metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
            deadline = time.monotonic() + 10
            while not measured(reader) and time.monotonic() < deadline:
                client.call_tool("echo", {"text": "after"})  # the check comes each second
            calls = json.loads(client.call_tool("received", {"method": "tools/call"}).text)
        print(json.dumps({"active_before": active_before, "names": measured(reader),
                          "traced": ["traceparent" in (c["params"].get("_meta") or {})
                                     for c in calls]}))
    """)
    done = subprocess.run([sys.executable, "-c", script, json.dumps(fake_server_command())],
                          capture_output=True, text=True, timeout=60, cwd=str(ROOT))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["active_before"] is False
    assert report["names"] == [OPERATION]  # the session began before the SDK: not measured
    assert not any(report["traced"])  # no tracer SDK: no trace context


def test_a_manager_hands_the_providers_to_its_clients(
        metered: Tuple[MeterProvider, InMemoryMetricReader]) -> None:
    provider, reader = metered
    tracer_provider, exporter = memory_tracer()
    command, *args = fake_server_command()
    config = {"mcpServers": {"fake": {"command": command, "args": args}}}
    with mcp_sync.Manager(config, timeout=T, meter_provider=provider,
                          tracer_provider=tracer_provider) as manager:
        assert manager.call_tool("fake", "echo", {"text": "x"}).content[0].text == "x"
    assert only(reader, OPERATION, **{"gen_ai.tool.name": "echo"})["network.transport"] == "pipe"
    assert only(reader, SESSION) == {"mcp.protocol.version": "2025-11-25",
                                     "network.transport": "pipe"}
    assert [s.name for s in exporter.get_finished_spans()].count("tools/call echo") == 1
