"""The stateless 2026-07-28 era over Streamable HTTP, and era negotiation over HTTP.

Peers:

* the official SDK's server (``tests/servers/sdk_stateless_server.py streamable-http PORT``,
  ``mcp`` 2.3.0), dual-era, one process for the whole module;
* a scripted stateless server of our own (:class:`StatelessServer`: the threaded
  ``tests/servers/http_server.py`` with every POST answered by a hook), which records the
  headers of every request and can misbehave on purpose;
* session-era-only servers for the fallback: ``http_server.py`` hosting a FakeServer, and
  ``@modelcontextprotocol/server-everything`` in ``streamableHttp`` mode, held to 127.0.0.1
  by ``tests/servers/loopback.cjs``.
"""

from __future__ import annotations

import base64
import collections
import json
import logging
import os
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable, Deque, Dict, Iterator, List, Optional

import pytest
import requests
import requests.adapters

import mcp_sync
from mcp_sync import (
    HeaderMismatch,
    HttpTransport,
    MissingClientCapability,
    ProtocolError,
    ProtocolVersionRejected,
    RequestTimeout,
    TransportError,
    UnsupportedProtocolVersion,
)

from .._procs import free_port, stop_process
from ..conftest import PY, SERVERS, require_everything
from ..helpers import Notified, elicit, sample
from ..servers.http_server import McpHttpServer, Recorded, echo_fake

WAIT = 10.0  # the bound for anything a test waits on; nothing should come near it
STATELESS = "2026-07-28"
META_VERSION = "io.modelcontextprotocol/protocolVersion"



class ServerProcess:
    """A server child process on 127.0.0.1, ready once ``ready_line`` shows in its output.

    One thread (``test-peer-output-*``, outside the names the leak check watches) drains
    the output for the process's life, so the pipe never fills; ``stop()`` terminates the
    process by its PID and joins that thread.
    """

    def __init__(self, command: List[str], ready_line: str,
                 env: Optional[Dict[str, str]] = None) -> None:
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env=env, cwd=str(Path(__file__).resolve().parents[2]),
        )
        self.ready = threading.Event()
        self.output: Deque[str] = collections.deque(maxlen=200)
        self._ready_line = ready_line
        self._reader = threading.Thread(target=self._drain, daemon=True,
                                        name=f"test-peer-output-{self.process.pid}")
        self._reader.start()
        if not self.ready.wait(30.0):
            self.stop()
            raise AssertionError(f"{command[:3]} did not start:\n" + "".join(self.output))

    def _drain(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)
            if self._ready_line in line:
                self.ready.set()
        self.ready.set()  # exited: wake the waiter (who then sees no server)

    def stop(self) -> None:
        stop_process(self.process)
        self._reader.join(10)
        assert self.process.stdout is not None
        self.process.stdout.close()


@pytest.fixture(scope="module")
def sdk_url() -> Iterator[str]:
    """The official SDK server over Streamable HTTP (its default, dual-era mode)."""
    port = free_port()
    server = ServerProcess([PY, str(SERVERS / "sdk_stateless_server.py"), "streamable-http",
                            str(port)], "Uvicorn running on")
    try:
        assert server.process.poll() is None, "".join(server.output)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.stop()


def connect(url: str, **kwargs: Any) -> mcp_sync.Client:
    """``mcp_sync.connect`` with the tests' bounds. The era probe waits up to WAIT too:
    a freshly started SDK server's first answer can take more than the 1 s default on a
    loaded machine. Tests about the probe's timing pass their own ``probe_timeout``."""
    kwargs.setdefault("timeout", WAIT)
    kwargs.setdefault("probe_timeout", WAIT)
    return mcp_sync.connect(url, **kwargs)


def tag(name: str) -> str:
    """A tag unique to this run of the test (the SDK server lives for the whole module)."""
    return f"{name}-{time.monotonic_ns()}"


def decoded(header: str) -> str:
    """A header value as the spec encodes it: plain, or ``=?base64?...?=``."""
    if header.startswith("=?base64?") and header.endswith("?="):
        return base64.b64decode(header[len("=?base64?"):-2]).decode("utf-8")
    return header


# -- the official SDK server, stateless era -----------------------------------------------


def test_auto_negotiation_lands_on_the_stateless_era(sdk_url: str) -> None:
    with connect(sdk_url) as client:
        assert client.era == "stateless"
        assert client.protocol_version == STATELESS
        assert isinstance(client.transport, HttpTransport)
        assert client.transport.session_id is None
        assert client.server_info.name == "sdk-stateless"
        assert client.instructions == "Stateless test server."
        names = {tool.name for tool in client.list_tools()}
        assert {"add", "slow", "confirm", "ask_llm", "regional", "grow"} <= names
        assert client.call_tool("add", {"a": 2, "b": 40}).structured == {"result": 42}
        assert [r.uri for r in client.list_resources()] == ["test://greeting"]
        assert client.read_resource("test://greeting").text == "hello from the stateless server"
        assert [p.name for p in client.list_prompts()] == ["review"]
        prompt = client.get_prompt("review", {"code": "x = 1"})
        assert "Please review: x = 1" in prompt.messages[0].content.text
        client.ping()  # server/discover stands in for ping


def test_multi_round_trip_requests_are_answered_by_the_handlers(sdk_url: str) -> None:
    with connect(sdk_url, elicitation_handler=elicit, sampling_handler=sample,
                 roots=[{"uri": "file:///a"}, {"uri": "file:///b"}]) as client:
        assert client.call_tool("confirm").text == "confirmed=True name=ada"
        assert client.call_tool("ask_llm").text == "llm said: Paris"
        assert client.call_tool("roots_count").text == "2 roots: file:///a,file:///b"
        future = client.call_tool_future("ask_llm")
        assert future.result(WAIT).text == "llm said: Paris"


def test_a_missing_client_capability_is_a_readable_error(sdk_url: str) -> None:
    with connect(sdk_url) as client:
        with pytest.raises(MissingClientCapability) as info:
            client.call_tool("ask_llm")
        assert info.value.code == -32021
        assert "sampling" in str(info.value)
        assert client.call_tool("add", {"a": 1, "b": 1}).structured == {"result": 2}


def test_progress_reaches_on_progress(sdk_url: str) -> None:
    seen: List[float] = []
    last = threading.Event()

    def on_progress(progress: float, total: Optional[float], message: Optional[str]) -> None:
        seen.append(progress)
        if progress == 5:
            last.set()

    with connect(sdk_url) as client:
        result = client.call_tool("slow", {"seconds": 0.6}, timeout=WAIT,
                                  on_progress=on_progress)
        assert result.text == "done"
        assert last.wait(WAIT)  # callbacks run on the callback thread, maybe after the result
    assert seen == [0, 1, 2, 3, 4, 5]


def test_a_timeout_closes_the_stream_and_the_server_sees_it(sdk_url: str) -> None:
    timed_out = tag("timeout")
    with connect(sdk_url, reset_timeout_on_progress=False) as client:
        started = time.monotonic()
        with pytest.raises(RequestTimeout):
            client.call_tool("slow", {"seconds": 30, "tag": timed_out}, timeout=0.5)
        assert time.monotonic() - started < 0.5 + 3.0
        # The server's handler was cancelled: it saw the response stream close.
        seen = client.call_tool("was_cancelled", {"tag": timed_out, "wait": WAIT})
        assert seen.structured == {"result": True}
        assert client.call_tool("add", {"a": 1, "b": 2}).structured == {"result": 3}
        assert client.connected


def test_cancelling_a_future_closes_its_stream(sdk_url: str) -> None:
    cancelled = tag("future")
    running = threading.Event()
    with connect(sdk_url) as client:
        future = client.call_tool_future(
            "slow", {"seconds": 30, "tag": cancelled},
            on_progress=lambda p, total, message: running.set())
        assert running.wait(WAIT)
        assert future.cancel()
        seen = client.call_tool("was_cancelled", {"tag": cancelled, "wait": WAIT})
        assert seen.structured == {"result": True}
        assert client.call_tool("add", {"a": 2, "b": 2}).structured == {"result": 4}


def test_a_subscription_receives_tools_list_changed(sdk_url: str) -> None:
    tools_changed = Notified("notifications/tools/list_changed")
    fresh = tag("fresh").replace("-", "_")

    with connect(sdk_url, notification_handler=tools_changed) as client, \
            client.subscribe(tools=True) as subscription:
        assert subscription.acknowledged == {"toolsListChanged": True}
        assert fresh not in {tool.name for tool in client.list_tools()}
        assert client.call_tool("grow", {"name": fresh}).text == f"added {fresh}"
        tools_changed.wait(WAIT)
        # The notification dropped the cached list: the next listing is fresh.
        assert fresh in {tool.name for tool in client.list_tools()}


@pytest.mark.parametrize("region", ["eu-west-1", "Zürich", " padded ", "line1\nline2"])
def test_an_x_mcp_header_parameter_travels_in_its_header(sdk_url: str, region: str) -> None:
    with connect(sdk_url) as client:
        text = client.call_tool("regional", {"region": region, "query": "q"}).text
    seen = text.split(" header=", 1)[1].rsplit(" query=", 1)[0]
    plain = region.isascii() and region.isprintable() and region == region.strip()
    assert seen == region if plain else seen.startswith("=?base64?")
    assert decoded(seen) == region


class TamperingAdapter(requests.adapters.HTTPAdapter):
    """Rewrites ``Mcp-Param-Region`` on the way out, so the header disagrees with the body."""

    def __init__(self) -> None:
        super().__init__()
        self.tampered = 0

    def send(self, request: requests.PreparedRequest, *args: Any,
             **kwargs: Any) -> requests.Response:
        if "Mcp-Param-Region" in request.headers:
            request.headers["Mcp-Param-Region"] = "elsewhere"
            self.tampered += 1
        return super().send(request, *args, **kwargs)


def test_a_header_mismatch_from_the_server_is_a_header_mismatch_error(sdk_url: str) -> None:
    adapter = TamperingAdapter()
    with requests.Session() as http:
        http.mount("http://", adapter)
        with mcp_sync.Client(HttpTransport(sdk_url, session=http), timeout=WAIT,
                             probe_timeout=WAIT) as client:
            with pytest.raises(HeaderMismatch) as info:
                client.call_tool("regional", {"region": "home", "query": "q"})
            assert info.value.code == -32020
            assert "server error -32020 for tools/call" in str(info.value)
            assert adapter.tampered == 2  # refreshed the tool list and retried once
            assert client.call_tool("add", {"a": 3, "b": 4}).structured == {"result": 7}


def test_the_same_server_pinned_to_the_session_era(sdk_url: str) -> None:
    with connect(sdk_url, protocol_version="2025-11-25", elicitation_handler=elicit) as client:
        assert client.era == "session"
        assert client.protocol_version == "2025-11-25"
        assert isinstance(client.transport, HttpTransport)
        assert client.transport.session_id is not None
        assert client.call_tool("add", {"a": 1, "b": 2}).structured == {"result": 3}
        assert client.call_tool("confirm").text == "confirmed=True name=ada"
        assert client.read_resource("test://greeting").text == "hello from the stateless server"


# -- a scripted stateless server ------------------------------------------------------------

Reply = Optional[Dict[str, Any]]
CallHandler = Callable[[Any, Dict[str, Any]], Reply]


class StatelessServer:
    """A 2026-07-28 Streamable HTTP server whose every POST a hook answers, recording all.

    ``tools`` are listed as given; ``calls[name](handler, message)`` answers a
    ``tools/call`` of that tool: it returns the result, or None once it has written the
    whole reply itself with the handler's helpers. Discovery replies carry an
    ``Mcp-Session-Id`` that a stateless client must ignore.
    """

    def __init__(self, tools: List[Dict[str, Any]],
                 calls: Optional[Dict[str, CallHandler]] = None) -> None:
        self.tools = tools
        self.calls = calls or {}
        self.http = McpHttpServer()
        self.http.post_hook = self._post

    def __enter__(self) -> StatelessServer:
        self.http.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.http.stop()

    @property
    def url(self) -> str:
        return self.http.url

    @property
    def requests(self) -> List[Recorded]:
        return list(self.http.requests)

    def _post(self, handler: Any, message: Any) -> bool:
        if not isinstance(message, dict) or "id" not in message:
            handler.send_status(202)
            return True
        method, params = message.get("method"), message.get("params") or {}
        if method == "server/discover":
            result: Reply = {
                "resultType": "complete", "supportedVersions": [STATELESS],
                "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
                "serverInfo": {"name": "stateless-test", "version": "1"},
            }
            handler.send_json({"jsonrpc": "2.0", "id": message["id"], "result": result},
                              headers={"Mcp-Session-Id": "not-for-the-stateless-era"})
            return True
        if method == "tools/list":
            result = {"tools": self.tools}
        elif method == "tools/call" and params.get("name") in self.calls:
            result = self.calls[params["name"]](handler, message)
            if result is None:
                return True
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": json.dumps(params.get("arguments"))}]}
        elif method == "resources/read":
            result = {"contents": [{"uri": params.get("uri"), "text": "contents"}]}
        elif method == "prompts/get":
            result = {"messages": []}
        else:
            handler.send_json({"jsonrpc": "2.0", "id": message["id"], "error": {
                "code": -32601, "message": f"Method not found: {method}"}}, 404)
            return True
        handler.send_json({"jsonrpc": "2.0", "id": message["id"], "result": result})
        return True


def error_reply(code: int, message: str, data: Any = None) -> CallHandler:
    """A ``tools/call`` answer: HTTP 400 whose body is the JSON-RPC error."""

    def reply(handler: Any, request: Dict[str, Any]) -> Reply:
        error: Dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        handler.send_json({"jsonrpc": "2.0", "id": request["id"], "error": error}, 400)
        return None

    return reply


def wait_for_disconnect(handler: Any, disconnected: threading.Event) -> None:
    """Block until the client closes the connection (a read sees EOF), at most WAIT."""
    handler.connection.settimeout(WAIT)
    try:
        if handler.connection.recv(1) == b"":
            disconnected.set()
    except socket.timeout:
        return  # still open: the waiter's assertion fails
    except OSError:
        disconnected.set()  # reset by the client: closed all the same


def tool(name: str, properties: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object", "properties": properties or {}}}


def test_the_2026_http_binding_on_the_wire() -> None:
    tools = [tool("lookup", {"region": {"type": "string", "x-mcp-header": "Region"},
                             "query": {"type": "string"}})]
    with StatelessServer(tools) as server:
        with connect(server.url) as client:
            assert client.era == "stateless" and client.server_info.name == "stateless-test"
            assert client.call_tool("lookup", {"region": "eu", "query": "q"}).text
            client.read_resource("test://café/menu")
            client.get_prompt("greeting")
            client.ping()
        recorded = server.requests
    assert [r.method for r in recorded] == ["POST"] * len(recorded)  # no GET, no DELETE
    methods = [r.rpc_method for r in recorded]
    assert methods == ["server/discover", "tools/list", "tools/call", "resources/read",
                       "prompts/get", "server/discover"]
    for request in recorded:
        assert request.header("mcp-session-id") is None
        assert request.header("mcp-protocol-version") == STATELESS
        assert request.json["params"]["_meta"][META_VERSION] == STATELESS
        assert request.header("mcp-method") == request.rpc_method
    call, read, prompt = recorded[2], recorded[3], recorded[4]
    assert call.header("mcp-name") == "lookup"
    assert call.header("mcp-param-region") == "eu"
    assert call.header("mcp-param-query") is None
    assert read.header("mcp-name").startswith("=?base64?")
    assert decoded(read.header("mcp-name")) == "test://café/menu"
    assert prompt.header("mcp-name") == "greeting"
    assert recorded[0].header("mcp-name") is None


def test_tools_with_invalid_x_mcp_header_annotations_are_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tools = [
        tool("valid", {"region": {"type": "string", "x-mcp-header": "Region"}}),
        tool("empty_name", {"value": {"type": "string", "x-mcp-header": ""}}),
        tool("on_a_number", {"score": {"type": "number", "x-mcp-header": "Score"}}),
        tool("on_an_object", {"data": {"type": "object", "x-mcp-header": "Data"}}),
        tool("twice", {"a": {"type": "string", "x-mcp-header": "Same"},
                       "b": {"type": "string", "x-mcp-header": "same"}}),
        tool("with_space", {"value": {"type": "string", "x-mcp-header": "My Region"}}),
        tool("non_ascii", {"value": {"type": "string", "x-mcp-header": "Région"}}),
    ]
    with StatelessServer(tools) as server, caplog.at_level(logging.WARNING, "mcp_sync"):
        with connect(server.url) as client:
            assert [t.name for t in client.list_tools()] == ["valid"]
            assert client.call_tool("valid", {"region": "us"}).text == '{"region": "us"}'
            # A dropped tool is refused, not sent without its headers.
            with pytest.raises(ProtocolError, match=r"refusing to call tool 'twice'.*used twice"):
                client.call_tool("twice", {"a": "x", "b": "y"})
            with pytest.raises(ProtocolError, match="refusing to call tool 'on_a_number'"):
                client.call_tool_future("on_a_number", {"score": 1.5})
        call = server.http.wait_for(lambda r: r.rpc_method == "tools/call", WAIT)
    assert call.header("mcp-param-region") == "us"
    calls = [r.json["params"]["name"] for r in server.requests if r.rpc_method == "tools/call"]
    assert calls == ["valid"]
    warned = " ".join(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    for dropped in tools[1:]:
        assert f"dropping tool {dropped['name']!r}" in warned


def test_a_timeout_closes_the_stream_and_sends_no_cancel_notification() -> None:
    disconnected = threading.Event()

    def hang(handler: Any, message: Dict[str, Any]) -> Reply:
        handler.start_events()
        wait_for_disconnect(handler, disconnected)
        return None

    with StatelessServer([tool("hang"), tool("echo")], {"hang": hang}) as server:
        with connect(server.url) as client:
            started = time.monotonic()
            with pytest.raises(RequestTimeout):
                client.call_tool("hang", timeout=0.3)
            assert time.monotonic() - started < 0.3 + 3.0
            assert disconnected.wait(WAIT)
            assert client.call_tool("echo", {"text": "after"}).text == '{"text": "after"}'
        methods = [r.rpc_method for r in server.requests]
    assert "notifications/cancelled" not in methods


def test_a_broken_stream_fails_the_request_and_the_client_stays_usable() -> None:
    def cut_short(handler: Any, message: Dict[str, Any]) -> Reply:
        handler.start_events()
        handler.write_event({"jsonrpc": "2.0", "method": "notifications/message",
                             "params": {"level": "info", "data": "working"}})
        handler.end_events()  # the stream ends before the response
        return None

    def hang_up(handler: Any, message: Dict[str, Any]) -> Reply:
        handler.close_connection = True
        handler.connection.shutdown(socket.SHUT_RDWR)  # no status line at all
        return None

    calls = {"cut_short": cut_short, "hang_up": hang_up}
    with StatelessServer([tool("cut_short"), tool("hang_up"), tool("echo")], calls) as server:
        errors: Dict[str, TransportError] = {}
        with connect(server.url) as client:
            for name in calls:
                started = time.monotonic()
                with pytest.raises(TransportError) as info:
                    client.call_tool(name)
                errors[name] = info.value
                assert time.monotonic() - started < 3.0  # failed at once, not timed out
                assert client.connected
                assert client.call_tool("echo", {"text": name}).text == json.dumps(
                    {"text": name})
        assert {r.method for r in server.requests} == {"POST"}  # no resumption GET
    assert "ended the event stream first" in str(errors["cut_short"])
    assert "cannot be resumed in this protocol version" in str(errors["cut_short"])
    assert "tools/call" in str(errors["hang_up"])


def test_the_2026_error_codes_in_400_bodies_are_specific_errors() -> None:
    calls = {
        "mismatch": error_reply(-32020, "Mcp-Param-Region does not match the body"),
        "needs_sampling": error_reply(-32021, "Missing required client capability",
                                      {"requiredCapabilities": {"sampling": {}}}),
        "future_only": error_reply(-32022, "Unsupported protocol version",
                                   {"supported": ["2099-01-01"], "requested": STATELESS}),
    }
    tools = [tool(name) for name in calls] + [tool("echo")]
    with StatelessServer(tools, calls) as server:
        with connect(server.url) as client:
            with pytest.raises(HeaderMismatch, match="does not match the body"):
                client.call_tool("mismatch")
            with pytest.raises(MissingClientCapability) as missing:
                client.call_tool("needs_sampling")
            assert missing.value.required_capabilities == {"sampling": {}}
            assert "needs client capabilities: sampling" in str(missing.value)
            with pytest.raises(ProtocolVersionRejected) as rejected:
                client.call_tool("future_only")
            assert isinstance(rejected.value, UnsupportedProtocolVersion)
            assert rejected.value.supported == ["2099-01-01"]
            assert "server supports: 2099-01-01" in str(rejected.value)
            assert client.call_tool("echo", {}).text == "{}"
        calls_seen = [r.json["params"]["name"] for r in server.requests
                      if r.rpc_method == "tools/call"]
    # A header mismatch refreshes the tool list and retries once; the others do not retry.
    assert calls_seen == ["mismatch", "mismatch", "needs_sampling", "future_only", "echo"]


def test_a_server_sharing_no_version_refuses_the_connection_with_its_own_error() -> None:
    def future_only(handler: Any, message: Any) -> bool:
        error = {"code": -32022, "message": "Unsupported protocol version",
                 "data": {"supported": ["2099-01-01"], "requested": STATELESS}}
        handler.send_json({"jsonrpc": "2.0", "id": message.get("id"), "error": error}, 400)
        return True

    with McpHttpServer() as server:
        server.post_hook = future_only
        with pytest.raises(ProtocolVersionRejected) as info:
            connect(server.url)
        requests_seen = server.requests
    assert info.value.supported == ["2099-01-01"]
    assert "server error -32022 for server/discover" in str(info.value)
    assert [r.rpc_method for r in requests_seen] == ["server/discover"]  # no initialize


# -- falling back to the session era over HTTP --------------------------------------------


def test_fallback_against_a_session_era_http_server() -> None:
    with McpHttpServer(echo_fake("session-only")) as server:
        started = time.monotonic()
        with connect(server.url, probe_timeout=5.0) as client:
            elapsed = time.monotonic() - started
            assert client.era == "session"
            assert client.protocol_version == "2025-11-25"
            assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        # A second client remembers the era: no probe at all.
        with connect(server.url, probe_timeout=5.0) as client:
            assert client.era == "session"
        probes = server.matching(lambda r: r.rpc_method == "server/discover")
    # The server refused the probe at once (HTTP 400): no waiting for the probe deadline.
    assert elapsed < 5.0
    assert len(probes) == 1


def test_fallback_against_a_silent_http_server_costs_no_more_than_the_probe() -> None:
    probe_closed = threading.Event()

    def silent_probe(handler: Any, message: Any) -> bool:
        if isinstance(message, dict) and message.get("method") == "server/discover":
            wait_for_disconnect(handler, probe_closed)  # never answers
            return True
        return False

    with McpHttpServer(echo_fake("session-only")) as server:
        server.post_hook = silent_probe
        started = time.monotonic()
        with connect(server.url, probe_timeout=0.5) as client:
            elapsed = time.monotonic() - started
            assert client.era == "session"
            assert client.call_tool("echo", {"text": "hi"}).text == "hi"
            # The abandoned probe's connection is closed, not held for the session's life.
            assert probe_closed.wait(WAIT)
    assert 0.5 <= elapsed < 0.5 + 3.0


def busy_on_the_first_probe(
    server: StatelessServer, on_initialize: Callable[[Any, Dict[str, Any]], bool],
) -> threading.Event:
    """Make ``server`` too busy to answer its first ``server/discover`` (it answers
    nothing until the client hangs up) and let ``on_initialize`` answer ``initialize``
    (returning False leaves it to the server). Returns the Event set once the client has
    closed the probe's connection."""
    probe_closed = threading.Event()
    first_probe = threading.Lock()  # taken by the first server/discover, never given back
    answer = server._post

    def post(handler: Any, message: Any) -> bool:
        method = message.get("method") if isinstance(message, dict) else None
        # The first probe only: a client quick to probe again may do so before this
        # thread has seen the first probe's connection close.
        if method == "server/discover" and first_probe.acquire(blocking=False):
            wait_for_disconnect(handler, probe_closed)
            return True
        if method == "initialize" and on_initialize(handler, message):
            return True
        return answer(handler, message)

    server.http.post_hook = post
    return probe_closed


@pytest.mark.parametrize("refusal", ["method not found", "HTTP 404", "-32022"])
def test_a_stateless_server_slow_to_answer_the_probe_is_not_mistaken(refusal: str) -> None:
    """The probe times out (the server is busy), so the client falls back to initialize;
    a stateless-only server refuses that, however it does, and the client asks
    server/discover again with its full timeout instead of failing to connect."""
    def refuse(handler: Any, message: Dict[str, Any]) -> bool:
        if refusal == "HTTP 404":
            handler.send_status(404, b"Not Found")
            return True
        if refusal == "-32022":
            handler.send_json({"jsonrpc": "2.0", "id": message["id"], "error": {
                "code": -32022, "message": "Unsupported protocol version",
                "data": {"supported": [STATELESS], "requested": "2025-11-25"}}}, 400)
            return True
        return False  # the stateless server's own answer: method not found

    server = StatelessServer([tool("echo")])
    probe_closed = busy_on_the_first_probe(server, refuse)
    with server, connect(server.url, probe_timeout=0.3) as client:
        assert client.era == "stateless" and client.protocol_version == STATELESS
        assert client.server_info.name == "stateless-test"
        assert client.call_tool("echo", {"text": "hi"}).text == '{"text": "hi"}'
        methods = [r.rpc_method for r in server.requests]
    assert probe_closed.wait(WAIT)  # the timed-out probe's connection was closed
    assert methods[:4] == ["server/discover", "initialize", "server/discover", "tools/list"]


def test_a_silent_probe_over_http_is_not_remembered() -> None:
    """A server that serves both eras but is too busy to answer the first probe gets the
    initialize handshake; over Streamable HTTP silence is no proof of age (older servers
    refuse server/discover at once), so the next client probes again and finds 2026-07-28.
    A refusal, by contrast, is remembered (test_fallback_against_a_session_era_http_server)."""
    def accept(handler: Any, message: Dict[str, Any]) -> bool:
        handler.send_json({"jsonrpc": "2.0", "id": message["id"], "result": {
            "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
            "serverInfo": {"name": "both-eras", "version": "1"}}})
        return True

    server = StatelessServer([tool("echo")])
    probe_closed = busy_on_the_first_probe(server, accept)
    with server:
        with connect(server.url, probe_timeout=0.3) as client:
            assert client.era == "session" and client.protocol_version == "2025-11-25"
        assert probe_closed.wait(WAIT)
        with connect(server.url, probe_timeout=0.3) as client:
            assert client.era == "stateless" and client.protocol_version == STATELESS
            assert client.call_tool("echo", {"text": "hi"}).text == '{"text": "hi"}'
        methods = [r.rpc_method for r in server.requests if r.rpc_method]
    assert methods[:2] == ["server/discover", "initialize"]
    assert methods.count("server/discover") == 2 and methods.count("initialize") == 1


def test_a_refused_initialize_after_a_silent_probe_still_fails_clearly() -> None:
    """A server that stays silent on server/discover and refuses initialize: the
    initialize refusal is what the caller sees, once discover has failed again."""
    probe_closed = threading.Event()
    first_probe = threading.Lock()  # taken by the first server/discover, never given back

    def refuse(handler: Any, message: Any) -> bool:
        method = message.get("method") if isinstance(message, dict) else None
        if method == "server/discover":
            # Silent on the first probe only (the second may come before this thread has
            # seen the first one's connection close).
            if first_probe.acquire(blocking=False):
                wait_for_disconnect(handler, probe_closed)
            else:
                handler.send_status(404, b"Not Found")
            return True
        handler.send_status(405, b"Method Not Allowed")
        return True

    with McpHttpServer(echo_fake("session-only")) as server:
        server.post_hook = refuse
        with pytest.raises(mcp_sync.HTTPError) as caught:  # no legacy SSE fallback:
            connect(server.url, probe_timeout=0.3, transport="http")
        methods = [r.rpc_method for r in server.requests]
    assert caught.value.status == 405 and caught.value.method == "initialize"
    assert isinstance(caught.value.__cause__, mcp_sync.HTTPError)
    assert caught.value.__cause__.status == 404  # the second discover
    assert methods == ["server/discover", "initialize", "server/discover"]


def test_fallback_against_server_everything_over_http() -> None:
    node = shutil.which("node")
    assert node, "node is not on PATH: server-everything needs Node 20+"
    port = free_port()
    server = ServerProcess(
        [node, "--require", str(SERVERS / "loopback.cjs"), str(require_everything()),
         "streamableHttp"],
        "listening on port", env={**os.environ, "PORT": str(port)})
    try:
        started = time.monotonic()
        with connect(f"http://127.0.0.1:{port}/mcp", probe_timeout=5.0) as client:
            elapsed = time.monotonic() - started
            assert client.era == "session"
            assert client.protocol_version == "2025-11-25"
            assert client.server_info.name == "mcp-servers/everything"
            assert client.call_tool("echo", {"message": "hi"}).text == "Echo: hi"
        assert elapsed < 5.0  # refused at once: no waiting for the probe deadline
    finally:
        server.stop()
