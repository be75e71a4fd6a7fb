"""Interop against real MCP servers that nobody on this project wrote, over each transport.

Servers (how they run: ``_peer_processes.py``):

* server-everything: the reference server ``@modelcontextprotocol/server-everything``
  (TypeScript SDK). It speaks the 2025-11-25 era only.
* ``tests/servers/sdk_server.py``: a server built on the official Python SDK (PyPI
  ``mcp``); only its tool bodies are ours, the protocol side is the SDK's. It speaks both
  eras, so its tests run twice on each transport: ``session`` (pinned 2025-11-25,
  ``initialize`` handshake, server-to-client requests) and ``stateless`` (the default
  negotiation, which finds 2026-07-28: ``server/discover``, input_required round trips,
  ``subscriptions/listen``; over legacy HTTP+SSE too).
* the project's fake server (``tests/servers/fake_stdio.py``): the baseline the peers'
  error answers are held against.

A peer (the ``peer`` parameter) is a server, a transport and an era:
``everything-{stdio,http,sse}``, ``sdk-{stdio,http,sse}-{session,stateless}`` and
``fake-stdio``. Over stdio the client starts the server itself. ``http`` is
``connect(".../mcp")`` (Streamable HTTP, connect()'s default) and ``sse`` is
``connect(".../sse", transport="sse")`` (legacy HTTP+SSE); each HTTP server is a subprocess
on a free port of 127.0.0.1, started once per module (a module-scoped fixture, set up
before the autouse leak check takes its baseline of child processes), shared by the tests
of the module and stopped by PID at the end.

Each scenario runs on every transport unless its parameters say otherwise: some need one
transport (a server slow to start over stdio, transport selection over HTTP), and the rest
run where the suite has run them so far.

Everything goes through the public API (``mcp_sync.connect(...)`` as a context manager)
with a timeout on every call. A missing peer fails the test; nothing is skipped.
server-everything's ``get-env`` tool is never called (it prints the server's environment).
"""

from __future__ import annotations

import base64
import logging
import socket
import subprocess
import threading
import time
from concurrent.futures import CancelledError
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest

import mcp_sync
from mcp_sync import HTTPError, RequestTimeout, ServerError, types

from .. import _peer_processes
from .._peer_processes import (
    HOST,
    LOOPBACK_PRELOAD,
    ServerProcess,
    everything_argv,
    everything_command,
    node,
    sdk_argv,
    sdk_command,
    serve,
    socket_inodes,
    tcp_listeners,
)
from .._procs import free_port
from ..conftest import child_pids, fake_server_command
from ..helpers import Recorder, wait_for

# Seconds for any single call that should be quick. Generous: the VM is small and noisy.
T = 20.0
LATEST = "2025-11-25"
STATELESS = "2026-07-28"
LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
TRANSPORTS = ["stdio", "http", "sse"]
ERAS = ["session", "stateless"]
TRANSPORT_CLASS = {"stdio": mcp_sync.StdioTransport, "http": mcp_sync.HttpTransport,
                   "sse": mcp_sync.SseTransport}
#: How long close() may take with calls abandoned on the server: over stdio it may have to
#: wait for the server's exit (and escalate to signals).
CLOSE_BOUND = {"stdio": 15.0, "http": 5.0, "sse": 5.0}


# -- HTTP servers ------------------------------------------------------------------------

# Module-scoped: each server starts once, before the first test that needs it takes its
# leak baseline (pytest sets up higher-scoped fixtures before function-scoped ones, the
# autouse no_leaks included), and stops after the last test's leak check.


@pytest.fixture(scope="module")
def everything_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    yield from serve("everything-http", everything_argv("streamableHttp"), "/mcp",
                     tmp_path_factory)


@pytest.fixture(scope="module")
def everything_sse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    yield from serve("everything-sse", everything_argv("sse"), "/sse", tmp_path_factory)


@pytest.fixture(scope="module")
def sdk_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    yield from serve("sdk-http", sdk_argv("streamable-http"), "/mcp", tmp_path_factory)


@pytest.fixture(scope="module")
def sdk_sse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    yield from serve("sdk-sse", sdk_argv("sse"), "/sse", tmp_path_factory)


# -- peers -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PeerSpec:
    """What a peer is: a server, the transport to it and the protocol era."""

    kind: str  # "everything", "sdk" or "fake"
    transport: str  # "stdio", "http" (Streamable HTTP) or "sse" (legacy HTTP+SSE)
    era: str = "session"  # "session" (2025-11-25) or "stateless" (2026-07-28)

    @property
    def name(self) -> str:
        return "-".join([self.kind, self.transport] + ([self.era] if self.kind == "sdk" else []))

    @property
    def server_fixture(self) -> Optional[str]:
        """The fixture that runs the server; None over stdio, where the client starts it."""
        return None if self.transport == "stdio" else f"{self.kind}_{self.transport}"

    @property
    def protocol_version(self) -> Optional[str]:
        """Pinned for the SDK's session era; the client negotiates everything else."""
        return LATEST if self.kind == "sdk" and self.era == "session" else None

    @property
    def expected_version(self) -> str:
        return STATELESS if self.era == "stateless" else LATEST


PEER_SPECS: Dict[str, PeerSpec] = {spec.name: spec for spec in [
    *(PeerSpec("everything", transport) for transport in TRANSPORTS),
    *(PeerSpec("sdk", transport, era) for transport in TRANSPORTS for era in ERAS),
    PeerSpec("fake", "stdio"),
]}


def named(kind: Optional[str] = None, transport: Optional[str] = None) -> List[str]:
    """The names of the peers of that kind on that transport (the fake server only when
    asked for by kind)."""
    return [name for name, spec in PEER_SPECS.items()
            if (spec.kind == kind if kind else spec.kind != "fake")
            and transport in (None, spec.transport)]


@dataclass(frozen=True)
class Peer(PeerSpec):
    """A server and how to connect to it."""

    server: Optional[ServerProcess] = None  # None over stdio

    @property
    def target(self) -> Any:
        """What ``connect()`` is given: the server's URL, or the command that starts it."""
        if self.server is not None:
            return self.server.url
        return {"everything": everything_command, "sdk": sdk_command,
                "fake": fake_server_command}[self.kind]()

    def connect(self, **kwargs: Any) -> mcp_sync.Client:
        kwargs.setdefault("timeout", T)
        kwargs.setdefault("name", self.kind)
        kwargs.setdefault("protocol_version", self.protocol_version)
        # The era probe gets the tests' patience: these tests are about each era's
        # features, and a server's first 2026-07-28 answer on a loaded machine (the SDK
        # peer imports for about a second before it answers over stdio) can take longer
        # than the 1 s default. The negotiation tests hold the default to its promise.
        kwargs.setdefault("probe_timeout", T)
        if self.transport == "sse":
            kwargs.setdefault("transport", "sse")
        client = mcp_sync.connect(self.target, **kwargs)
        expected = kwargs["protocol_version"] or self.expected_version
        if client.protocol_version != expected:
            client.close()
            pytest.fail(f"{self.name} negotiated {client.protocol_version}, not {expected}")
        return client


def _peer(request: pytest.FixtureRequest) -> Peer:
    spec = PEER_SPECS[request.param]
    server = None if spec.server_fixture is None else request.getfixturevalue(spec.server_fixture)
    return Peer(spec.kind, spec.transport, spec.era, server)


@pytest.fixture(scope="module")
def peer(request: pytest.FixtureRequest) -> Peer:
    """The peer named by the test's ``peer`` parameter (indirect), its server running.

    Module-scoped like the servers, so that the server it pulls in is started before the
    test's leak baseline.
    """
    return _peer(request)


@pytest.fixture(scope="module")
def sdk_peer(request: pytest.FixtureRequest) -> Peer:
    """A second peer, for a test that talks to two (see ``peer``)."""
    return _peer(request)


def peers(*names: str) -> Any:
    return pytest.mark.parametrize("peer", list(names), indirect=True)


ALL = peers(*named())
EVERYTHING = peers(*named("everything"))
SDK = peers(*named("sdk"))


def assert_echoes(client: mcp_sync.Client, peer: Peer, text: str) -> None:
    """The client still works: an echo of ``text`` comes back."""
    if peer.kind == "everything":
        assert client.call_tool("echo", {"message": text}, timeout=T).text == f"Echo: {text}"
    else:
        assert client.call_tool("echo", {"text": text}, timeout=T).text == text


def assert_adds(client: mcp_sync.Client, peer: Peer, a: int, b: int) -> None:
    """The client still works: the peer's sum of ``a`` and ``b`` comes back."""
    if peer.kind == "everything":
        assert client.call_tool("get-sum", {"a": a, "b": b}, timeout=T).text == (
            f"The sum of {a} and {b} is {a + b}.")
    else:
        assert client.call_tool("add", {"a": a, "b": b}, timeout=T).text == str(a + b)


def assert_carries_on(client: mcp_sync.Client, peer: Peer) -> None:
    """After a call given up on (timed out, cancelled) that the server may still be
    running: the client goes on working, and close() does not wait for that call."""
    client.ping(timeout=T)
    assert_adds(client, peer, 2, 2)
    assert_echoes(client, peer, "after")
    assert client.connected
    closing = time.monotonic()
    client.close()
    assert time.monotonic() - closing < CLOSE_BOUND[peer.transport]
    assert not client.connected


def long_call(peer: Peer, interval: float) -> Tuple[str, Dict[str, Any]]:
    """A 10 s call (progress every ``interval`` s) that does not block the server."""
    if peer.kind == "everything":
        return "trigger-long-running-operation", {"duration": 10, "steps": round(10 / interval)}
    return "slow", {"seconds": 10, "interval": interval}


def roundtrips(model: Any, raw: Dict[str, Any]) -> None:
    """``raw`` from a real server parses into ``model`` and serialises back unchanged
    (bar defaults the model adds, such as ``isError: false``)."""
    parsed = model.model_validate(raw)
    wire = parsed.to_wire()
    if "isError" in wire and "isError" not in raw:
        assert wire.pop("isError") is False
    assert wire == raw


# -- the HTTP servers themselves ---------------------------------------------------------


def test_servers_listen_on_loopback_only(
    everything_http: ServerProcess, everything_sse: ServerProcess,
    sdk_http: ServerProcess, sdk_sse: ServerProcess,
) -> None:
    """Each server's listening socket is its own and bound to 127.0.0.1, not 0.0.0.0/::;
    and the servers started before the leak check's baseline (they are no new children)."""
    children = set(child_pids())
    for server in (everything_http, everything_sse, sdk_http, sdk_sse):
        listeners = tcp_listeners(server.port)
        assert listeners, f"nothing listens on port {server.port} ({server.name})"
        assert {address for address, _ in listeners} == {HOST}, (server.name, listeners)
        assert {inode for _, inode in listeners} <= socket_inodes(server.pid)
        assert server.pid in children


def test_loopback_preload_covers_every_listen_form(tmp_path: Path) -> None:
    """``listen(port)``, ``listen(port, cb)``, ``listen(port, host, ...)``,
    ``listen(options)`` (a host of 0.0.0.0 or :: included), ``listen()`` and
    ``listen(cb)`` all bind 127.0.0.1; a Unix socket path is left alone."""
    script = tmp_path / "forms.js"
    sock = tmp_path / "unix.sock"
    script.write_text(
        """
const net = require('net'); const http = require('http');
const forms = [
  s => s.listen(0), s => s.listen(0, () => {}), s => s.listen('0'),
  s => s.listen(0, '0.0.0.0'), s => s.listen(0, '::', 5, () => {}), s => s.listen(0, 7),
  s => s.listen({port: 0}), s => s.listen({port: 0, host: '0.0.0.0'}, () => {}),
  s => s.listen({port: 0, host: '::', ipv6Only: true}), s => s.listen(), s => s.listen(() => {}),
];
(async () => {
  for (const [i, form] of forms.entries()) {
    const server = i % 2 ? http.createServer() : net.createServer();
    await new Promise((resolve) => { server.on('listening', resolve); form(server); });
    console.log(server.address().address);
    await new Promise((resolve) => server.close(resolve));
  }
  const unix = net.createServer();
  await new Promise((resolve) => unix.listen(process.argv[2], resolve));
  console.log(unix.address());
  unix.close();
})();
"""
    )
    done = subprocess.run(
        [node(), "--require", str(LOOPBACK_PRELOAD), str(script), str(sock)],
        capture_output=True, text=True, timeout=T, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [HOST] * 11 + [str(sock)]


def test_a_taken_port_is_retried_on_another(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    """When the port picked is taken before the server binds it (here: by a listener of
    this process), the start notices that the socket answering is not the server's (or
    that the server failed with EADDRINUSE) and tries a fresh port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as squatter:
        squatter.bind((HOST, 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        ports = iter([taken, free_port()])
        monkeypatch.setattr(_peer_processes, "free_port", lambda: next(ports))
        server = ServerProcess("retry", everything_argv("streamableHttp"), "/mcp", tmp_path)
        try:
            server.start()
            assert server.port != taken
            assert {address for address, _ in tcp_listeners(server.port)} == {HOST}
            with mcp_sync.connect(server.url, name="retry", timeout=T) as client:
                assert client.call_tool("echo", {"message": "x"}, timeout=T).text == "Echo: x"
        finally:
            server.stop()
    log = (tmp_path / "retry.log").read_text()
    assert f"--- retry on port {taken}" in log and f"--- retry on port {server.port}" in log


# -- handshake and negotiation -----------------------------------------------------------


@EVERYTHING
def test_everything_initialize(peer: Peer) -> None:
    with peer.connect() as client:
        assert client.connected
        assert isinstance(client.transport, TRANSPORT_CLASS[peer.transport])
        assert client.protocol_version == LATEST and client.era == "session"
        assert client.server_info.name == "mcp-servers/everything"
        assert client.server_info.title == "Everything Reference Server"
        assert client.server_info.version
        caps = client.server_capabilities
        assert isinstance(caps, types.ServerCapabilities)
        assert caps.tools is not None and caps.tools.list_changed is True
        assert caps.prompts is not None and caps.prompts.list_changed is True
        assert caps.resources is not None and caps.resources.subscribe is True
        assert caps.logging is not None and caps.completions is not None
        assert client.instructions and "Everything Server" in client.instructions
        client.ping(timeout=T)
    assert not client.connected


@SDK
def test_sdk_initialize(peer: Peer) -> None:
    with peer.connect() as client:
        assert isinstance(client.transport, TRANSPORT_CLASS[peer.transport])
        assert client.protocol_version == peer.expected_version
        assert client.era == peer.era
        assert client.server_info.name == "sdk-peer"
        assert client.server_info.version == "1.0.0"
        caps = client.server_capabilities
        assert caps.tools is not None and caps.prompts is not None
        assert caps.resources is not None and caps.resources.subscribe is True
        assert caps.logging is not None and caps.completions is not None
        assert client.instructions == "A test peer built on the official MCP Python SDK."
        client.ping(timeout=T)
    assert not client.connected


@peers("everything-stdio", "sdk-stdio-session")
@pytest.mark.parametrize("version", ["2025-06-18", "2025-03-26", "2024-11-05"])
def test_pinned_older_protocol_version(peer: Peer, version: str) -> None:
    with peer.connect(protocol_version=version) as client:
        assert client.protocol_version == version
        assert_echoes(client, peer, "old")


#: How long connecting with the default negotiation may take: over stdio it includes
#: starting the server (the SDK peer imports for about a second).
STALL_BOUND = {"stdio": 10.0, "http": 5.0}


@pytest.mark.parametrize(
    ("peer", "sdk_peer"),
    [("everything-stdio", "sdk-stdio-stateless"), ("everything-http", "sdk-http-stateless")],
    ids=["stdio", "http"], indirect=True,
)
def test_negotiation_finds_each_servers_era_without_stalling(
    peer: Peer, sdk_peer: Peer,
) -> None:
    """With no pinned version (and nothing remembered) the client probes for 2026-07-28
    and falls back to the initialize handshake at once when the server predates it."""
    bound = STALL_BOUND[peer.transport]
    started = time.monotonic()
    with mcp_sync.connect(peer.target, name="everything", timeout=T) as client:
        assert time.monotonic() - started < bound  # no multi-second stall on the probe
        assert client.protocol_version == LATEST
        assert client.call_tool("echo", {"message": "x"}, timeout=T).text == "Echo: x"
    started = time.monotonic()
    with mcp_sync.connect(sdk_peer.target, name="sdk", timeout=T) as client:
        assert time.monotonic() - started < bound
        assert client.protocol_version == STATELESS and client.era == "stateless"
        assert client.server_info.name == "sdk-peer"
        assert client.call_tool("add", {"a": 20, "b": 22}, timeout=T).text == "42"


def test_negotiation_with_a_slow_starting_stateless_server() -> None:
    """The era probe's short timeout runs from the spawn, so a server slower to start
    than that (the SDK alone takes about a second to import) answers the probe late and
    rejects the fallback initialize with -32022: the client must then take the stateless
    era the server offers, not fail."""
    command = [*sdk_command(), "--startup-delay", "1.5"]
    for _ in range(2):  # the second client must not inherit a wrong verdict
        with mcp_sync.connect(command, name="slow-sdk", timeout=T, probe_timeout=0.5) as client:
            assert client.protocol_version == STATELESS
            assert client.call_tool("add", {"a": 1, "b": 2}, timeout=T).text == "3"


@peers(*named(transport="stdio"))
def test_real_results_parse_and_roundtrip(peer: Peer) -> None:
    """mcp_sync.types models accept what real servers send, and lose nothing of it."""
    calls = {
        "everything": [
            ("get-structured-content", {"location": "Chicago"}),
            ("get-annotated-message", {"messageType": "error", "includeImage": True}),
            ("get-resource-links", {"count": 4}),
            ("get-resource-reference", {"resourceType": "Blob", "resourceId": 2}),
            ("get-tiny-image", {}),
        ],
        "sdk": [
            ("add", {"a": 1, "b": 2}), ("weather", {"city": "Oslo"}), ("tiny_image", {}),
            ("link", {}), ("fail", {}),
        ],
    }[peer.kind]
    with peer.connect() as client:
        if client.protocol_version == LATEST:  # a real initialize result, not a discover one
            roundtrips(types.InitializeResult, dict(client.agreement.result))  # type: ignore[union-attr]
        for method, model in [
            ("tools/list", types.ListToolsResult),
            ("resources/list", types.ListResourcesResult),
            ("resources/templates/list", types.ListResourceTemplatesResult),
            ("prompts/list", types.ListPromptsResult),
        ]:
            roundtrips(model, client.request(method, timeout=T))
        for name, args in calls:
            raw = client.request("tools/call", {"name": name, "arguments": args}, timeout=T)
            roundtrips(types.CallToolResult, raw)


# -- transport selection over HTTP -------------------------------------------------------


@pytest.mark.peer
def test_legacy_sse_calls_spaced_across_everythings_idle_close(
    everything_sse: ServerProcess, caplog: pytest.LogCaptureFixture,
) -> None:
    """Node closes a connection idle for 5 s, and says so in ``Keep-Alive: timeout=5`` on
    each reply to a POST; a call sent on a pooled connection just before then crossed the
    close and failed (``connection reset by the server``, about once in 50). Calls spaced
    4.5 s and 4.9 s apart go on new connections (the client reuses one for at most 4 s
    of idleness), one right after another on the same one, and every call succeeds."""
    caplog.set_level(logging.DEBUG, logger="mcp_sync.transports.http._interrupt")
    with mcp_sync.connect(everything_sse.url, transport="sse", timeout=T) as client:
        for pause in (4.5, 0.0, 4.9, 0.0):
            # The idle time is what this test is about: a wait on the clock, no event.
            time.sleep(pause)
            text = f"after {pause} s"
            assert client.call_tool("echo", {"message": text}, timeout=T).text == (
                f"Echo: {text}")
    dropped = [record.getMessage() for record in caplog.records
               if "not reusing the connection" in record.getMessage()]
    assert len(dropped) >= 2, dropped


@pytest.mark.parametrize("server_name", ["everything_sse", "sdk_sse"])
def test_sse_url_falls_back_to_legacy_sse(
    server_name: str, everything_sse: ServerProcess, sdk_sse: ServerProcess,
) -> None:
    """``connect(".../sse")`` with no transport forced tries Streamable HTTP first; the
    server rejects the POST (404 from Express, 405 from Starlette) and the client goes on
    to legacy HTTP+SSE by itself, without a stall. ``transport="sse"`` goes there at once."""
    server = {"everything_sse": everything_sse, "sdk_sse": sdk_sse}[server_name]
    tool, args, text = {
        "everything_sse": ("echo", {"message": "fell back"}, "Echo: fell back"),
        "sdk_sse": ("add", {"a": 40, "b": 2}, "42"),
    }[server_name]
    started = time.monotonic()
    with mcp_sync.connect(server.url, name="fallback", timeout=T) as client:
        assert time.monotonic() - started < 5
        assert isinstance(client.transport, mcp_sync.SseTransport)
        assert client.transport.endpoint and client.transport.endpoint.startswith(
            f"http://{HOST}:{server.port}/")
        assert client.call_tool(tool, args, timeout=T).text == text
    with mcp_sync.connect(server.url, transport="sse", name="forced", timeout=T) as client:
        assert isinstance(client.transport, mcp_sync.SseTransport)
        assert client.call_tool(tool, args, timeout=T).text == text
    # Forcing Streamable HTTP on the legacy endpoint fails instead of falling back.
    with pytest.raises(HTTPError) as error:
        mcp_sync.connect(server.url, transport="http", name="forced-http", timeout=T)
    assert error.value.status in (404, 405)


def test_legacy_sse_forced_on_a_streamable_http_endpoint_fails(
    everything_http: ServerProcess,
) -> None:
    """The GET that opens a legacy stream is refused with the server's 400, reported as
    such: not taken for an event stream, not retried as something else."""
    with pytest.raises(HTTPError) as caught:
        mcp_sync.connect(everything_http.url, transport="sse", name="wrong", timeout=T)
    error = caught.value
    assert error.status == 400 and error.method == "GET (SSE stream)"
    assert error.url == everything_http.url
    assert "No valid session ID" in error.body
    assert str(error).startswith(f"connect: HTTP 400 Bad Request from GET {everything_http.url}")


# -- tools -------------------------------------------------------------------------------

EVERYTHING_TOOLS = {
    "echo", "get-sum", "get-tiny-image", "get-structured-content", "get-annotated-message",
    "get-resource-links", "get-resource-reference", "trigger-long-running-operation",
    "toggle-simulated-logging", "toggle-subscriber-updates", "gzip-file-as-resource",
}
CAPABILITY_TOOLS = {"trigger-sampling-request", "trigger-elicitation-request", "get-roots-list"}


@EVERYTHING
def test_everything_lists_tools_by_declared_capabilities(peer: Peer) -> None:
    with peer.connect() as client:
        tools = client.list_tools(timeout=T)
        assert all(isinstance(tool, types.Tool) for tool in tools)
        names = {tool.name for tool in tools}
        assert names >= EVERYTHING_TOOLS
        assert not CAPABILITY_TOOLS & names  # nothing declared, nothing offered
        by_name = {tool.name: tool for tool in tools}
        assert set(by_name["get-sum"].input_schema["properties"]) == {"a", "b"}
        assert by_name["get-sum"].input_schema["required"] == ["a", "b"]
        schema = by_name["get-structured-content"].output_schema
        assert schema is not None and set(schema["required"]) == {
            "temperature", "conditions", "humidity"
        }
        assert by_name["echo"].annotations is not None
        assert by_name["echo"].annotations.read_only_hint is True

    def answer(params: Any) -> Any:
        raise AssertionError("not called in this test")

    with peer.connect(
        sampling_handler=answer, elicitation_handler=answer, roots=[{"uri": "file:///x"}]
    ) as client:
        # The server registers these tools once it has seen the client's capabilities
        # (and says so with tools/list_changed, which drops the client's cached list).
        assert wait_for(
            lambda: {t.name for t in client.list_tools(timeout=T)} >= CAPABILITY_TOOLS,
            T, "the capability-gated tools",
        )


@EVERYTHING
def test_everything_call_tools(peer: Peer) -> None:
    with peer.connect() as client:
        echo = client.call_tool("echo", {"message": "héllo wörld"}, timeout=T)
        assert isinstance(echo, types.CallToolResult)
        assert echo.text == "Echo: héllo wörld" and not echo.is_error

        assert client.call_tool("get-sum", {"a": 2, "b": 3.5}, timeout=T).text == (
            "The sum of 2 and 3.5 is 5.5."
        )
        assert "is 40" in client.call_tool("get-sum", {"a": -2, "b": 42}, timeout=T).text

        client.list_tools(timeout=T)  # so the client knows the outputSchema and checks it
        weather = client.call_tool("get-structured-content", {"location": "Chicago"}, timeout=T)
        assert weather.structured == weather.structured_content
        assert weather.structured is not None
        assert set(weather.structured) == {"temperature", "conditions", "humidity"}
        assert isinstance(weather.structured["temperature"], (int, float))
        assert isinstance(weather.structured["conditions"], str)

        image = client.call_tool("get-tiny-image", timeout=T)
        assert len(image.images) == 1
        assert image.images[0].mime_type == "image/png"
        assert base64.b64decode(image.images[0].data).startswith(PNG_MAGIC)
        assert "image" in image.text  # the text blocks around it

        annotated = client.call_tool(
            "get-annotated-message", {"messageType": "error", "includeImage": True}, timeout=T
        )
        first = annotated.content[0]
        assert isinstance(first, types.TextContent) and first.annotations is not None
        assert first.annotations.priority == 1.0
        assert set(first.annotations.audience or ()) == {"user", "assistant"}
        assert len(annotated.images) == 1

        links = client.call_tool("get-resource-links", {"count": 3}, timeout=T)
        resource_links = [c for c in links.content if isinstance(c, types.ResourceLink)]
        assert len(resource_links) == 3
        for link in resource_links:
            assert link.uri.startswith("demo://resource/dynamic/")
            contents = client.read_resource(link.uri, timeout=T).contents
            assert contents and contents[0].uri == link.uri

        reference = client.call_tool(
            "get-resource-reference", {"resourceType": "Text", "resourceId": 4}, timeout=T
        )
        embedded = [c for c in reference.content if isinstance(c, types.EmbeddedResource)]
        assert len(embedded) == 1
        assert isinstance(embedded[0].resource, types.TextResourceContents)
        assert embedded[0].resource.uri == "demo://resource/dynamic/text/4"
        assert embedded[0].resource.text.startswith("Resource 4:")


@SDK
def test_sdk_call_tools(peer: Peer) -> None:
    with peer.connect() as client:
        tools = {tool.name: tool for tool in client.list_tools(timeout=T)}
        assert {"add", "echo", "weather", "tiny_image", "link", "fail", "slow", "sample",
                "ask_user", "roots", "log", "changes"} <= set(tools)
        assert tools["add"].input_schema["required"] == ["a", "b"]
        assert tools["weather"].output_schema is not None

        added = client.call_tool("add", {"a": 2, "b": 40}, timeout=T)
        assert added.text == "42" and added.structured == {"result": 42}
        assert client.call_tool("echo", {"text": "héllo"}, timeout=T).text == "héllo"

        weather = client.call_tool("weather", {"city": "Oslo"}, timeout=T)
        assert weather.structured == {"city": "Oslo", "temperature": 21.5, "conditions": "sunny"}

        image = client.call_tool("tiny_image", timeout=T)
        assert [i.mime_type for i in image.images] == ["image/png"]
        assert base64.b64decode(image.images[0].data).startswith(PNG_MAGIC)

        link = client.call_tool("link", timeout=T).content[0]
        assert isinstance(link, types.ResourceLink) and link.uri == "res://greeting"

        failed = client.call_tool("fail", {"message": "kaput"}, timeout=T)
        assert failed.is_error is True  # a result, not an exception
        assert "Error executing tool fail" in failed.text


@ALL
def test_unknown_tool_is_an_error_result(peer: Peer) -> None:
    """Both SDKs answer an unknown tool with an ``isError`` result, not a JSON-RPC error."""
    expected = "Tool nope not found" if peer.kind == "everything" else "Unknown tool: nope"
    with peer.connect() as client:
        result = client.call_tool("nope", {"x": 1}, timeout=T)
        assert result.is_error is True
        assert expected in result.text
        assert client.call_tool("echo", {"message": "ok", "text": "ok"}, timeout=T)


#: What each kind of peer answers ``prompts/get`` of an unknown prompt with, per era:
#: (code, message). The SDK's answers are its own: code 0 in the session era, and in the
#: stateless era its handler's error masked as an internal error.
UNKNOWN_PROMPT = {
    ("everything", "session"): (-32602, "MCP error -32602: Prompt no-such-prompt not found"),
    ("sdk", "session"): (0, "Unknown prompt: no-such-prompt"),
    ("sdk", "stateless"): (-32603, "Internal server error"),
    ("fake", "session"): (-32602, "Unknown prompt: no-such-prompt"),
}


@ALL
def test_unknown_resource_raises_server_error(peer: Peer) -> None:
    with peer.connect() as client:
        with pytest.raises(ServerError) as resource_error:
            client.read_resource("nope://nothing", timeout=T)
        assert resource_error.value.code == -32602
        assert "nope://nothing" in resource_error.value.message
        assert resource_error.value.method == "resources/read"
        client.ping(timeout=T)  # the connection lives on


@peers(*named(), *named("fake"))
def test_unknown_prompt_raises_server_error(peer: Peer) -> None:
    with peer.connect() as client:
        with pytest.raises(ServerError) as prompt_error:
            client.get_prompt("no-such-prompt", timeout=T)
        error = prompt_error.value
        assert error.method == "prompts/get"
        assert (error.code, error.message) == UNKNOWN_PROMPT[peer.kind, peer.era]
        assert f"server error {error.code} for prompts/get" in str(error)
        client.ping(timeout=T)  # the connection lives on


# -- resources ---------------------------------------------------------------------------


@EVERYTHING
def test_everything_resources(peer: Peer) -> None:
    with peer.connect() as client:
        resources = client.list_resources(timeout=T)
        assert len(resources) == 7
        assert all(isinstance(r, types.Resource) for r in resources)
        assert "demo://resource/static/document/features.md" in {r.uri for r in resources}

        doc = client.read_resource("demo://resource/static/document/features.md", timeout=T)
        assert isinstance(doc, types.ReadResourceResult)
        (text,) = doc.contents
        assert isinstance(text, types.TextResourceContents)
        assert text.mime_type == "text/markdown"
        assert text.text.startswith("# Everything Server - Features")

        templates = client.list_resource_templates(timeout=T)
        assert {t.uri_template for t in templates} == {
            "demo://resource/dynamic/text/{resourceId}",
            "demo://resource/dynamic/blob/{resourceId}",
        }
        assert all(isinstance(t, types.ResourceTemplate) for t in templates)

        (dynamic,) = client.read_resource("demo://resource/dynamic/text/3", timeout=T).contents
        assert isinstance(dynamic, types.TextResourceContents)
        assert dynamic.text.startswith("Resource 3: This is a plaintext resource")

        (blob,) = client.read_resource("demo://resource/dynamic/blob/3", timeout=T).contents
        assert isinstance(blob, types.BlobResourceContents)
        assert base64.b64decode(blob.blob).decode().startswith("Resource 3: This is a base64 blob")


@SDK
def test_sdk_resources(peer: Peer) -> None:
    with peer.connect() as client:
        resources = {r.uri: r for r in client.list_resources(timeout=T)}
        assert set(resources) == {"res://greeting", "res://blob"}
        assert resources["res://blob"].mime_type == "application/octet-stream"

        (greeting,) = client.read_resource("res://greeting", timeout=T).contents
        assert isinstance(greeting, types.TextResourceContents)
        assert greeting.text == "Hello from the SDK peer"

        (blob,) = client.read_resource("res://blob", timeout=T).contents
        assert isinstance(blob, types.BlobResourceContents)
        assert base64.b64decode(blob.blob) == bytes(range(256))

        (template,) = client.list_resource_templates(timeout=T)
        assert template.uri_template == "res://items/{item_id}"
        (item,) = client.read_resource("res://items/7", timeout=T).contents
        assert isinstance(item, types.TextResourceContents) and item.text == "item number 7"


# -- prompts and completion --------------------------------------------------------------


@EVERYTHING
def test_everything_prompts(peer: Peer) -> None:
    with peer.connect() as client:
        prompts = {p.name: p for p in client.list_prompts(timeout=T)}
        assert {"simple-prompt", "args-prompt", "completable-prompt", "resource-prompt"} <= set(
            prompts
        )
        args = {a.name: a.required for a in prompts["args-prompt"].arguments or ()}
        assert args == {"city": True, "state": False}

        simple = client.get_prompt("simple-prompt", timeout=T)
        assert isinstance(simple, types.GetPromptResult)
        (message,) = simple.messages
        assert message.role == "user" and isinstance(message.content, types.TextContent)
        assert message.content.text == "This is a simple prompt without arguments."

        filled = client.get_prompt("args-prompt", {"city": "Oslo", "state": "Viken"}, timeout=T)
        assert filled.messages[0].content.text == "What's weather in Oslo, Viken?"  # type: ignore[union-attr]

        embedded = client.get_prompt(
            "resource-prompt", {"resourceType": "Text", "resourceId": "2"}, timeout=T
        )
        resources = [m.content for m in embedded.messages
                     if isinstance(m.content, types.EmbeddedResource)]
        assert len(resources) == 1
        assert resources[0].resource.uri == "demo://resource/dynamic/text/2"


@SDK
def test_sdk_prompts(peer: Peer) -> None:
    with peer.connect() as client:
        (prompt,) = client.list_prompts(timeout=T)
        assert prompt.name == "review" and prompt.description == "Ask for a code review."
        assert {a.name: a.required for a in prompt.arguments or ()} == {
            "code": True, "language": False
        }
        result = client.get_prompt("review", {"code": "x = 1", "language": "rust"}, timeout=T)
        assert result.messages[0].content.text == (  # type: ignore[union-attr]
            "Please review this rust code:\n\nx = 1"
        )
        default = client.get_prompt("review", {"code": "y"}, timeout=T)
        assert "python code" in default.messages[0].content.text  # type: ignore[union-attr]


@EVERYTHING
def test_everything_completion(peer: Peer) -> None:
    ref = {"type": "ref/prompt", "name": "completable-prompt"}
    with peer.connect() as client:
        department = client.complete(ref, {"name": "department", "value": "E"}, timeout=T)
        assert isinstance(department, types.CompleteResult)
        assert department.completion.values == ["Engineering"]

        # The second argument's values depend on the first, passed as context.
        names = client.complete(
            ref, {"name": "name", "value": ""}, {"arguments": {"department": "Sales"}}, timeout=T
        )
        assert names.completion.values == ["David", "Eve", "Frank"]
        none = client.complete(ref, {"name": "name", "value": "Z"},
                               {"arguments": {"department": "Sales"}}, timeout=T)
        assert none.completion.values == []

        template = {"type": "ref/resource", "uri": "demo://resource/dynamic/text/{resourceId}"}
        ids = client.complete(template, {"name": "resourceId", "value": "5"}, timeout=T)
        assert ids.completion.values == ["5"]


@SDK
def test_sdk_completion(peer: Peer) -> None:
    with peer.connect() as client:
        languages = client.complete(
            types.PromptReference(name="review"), {"name": "language", "value": "p"}, timeout=T
        )
        assert languages.completion.values == ["python", "perl", "php"]
        assert languages.completion.total == 3 and languages.completion.has_more is False

        items = client.complete(
            {"type": "ref/resource", "uri": "res://items/{item_id}"},
            {"name": "item_id", "value": "4"}, timeout=T,
        )
        assert items.completion.values == ["40", "41", "42"]


# -- progress ----------------------------------------------------------------------------


@EVERYTHING
def test_everything_progress(peer: Peer) -> None:
    progress = Recorder()
    with peer.connect() as client:
        result = client.call_tool(
            "trigger-long-running-operation", {"duration": 1.2, "steps": 4},
            timeout=T, on_progress=progress,
        )
        assert result.text == "Long running operation completed. Duration: 1.2 seconds, Steps: 4."
        # Progress is delivered on the callback thread; the last one may trail the result.
        calls = progress.wait_for(lambda calls: len(calls) == 4 and calls, T,
                                  "four progress notifications")
        assert [c[0] for c in calls] == [1.0, 2.0, 3.0, 4.0]
        assert all(c[1] == 4.0 for c in calls)
        assert all(name.startswith("mcp-sync-callback-") for name in progress.threads)


@SDK
def test_sdk_progress(peer: Peer) -> None:
    progress = Recorder()
    with peer.connect() as client:
        result = client.call_tool("slow", {"seconds": 0.6, "interval": 0.1}, timeout=T,
                                  on_progress=progress)
        assert result.text == "slept 0.6 s in 6 steps"
        calls = progress.wait_for(lambda calls: len(calls) == 6 and calls, T,
                                  "six progress notifications")
        values = [c[0] for c in calls]
        assert values == sorted(values) and len(set(values)) == 6  # strictly increasing
        assert values[-1] == 6.0 and all(c[1] == 6.0 for c in calls)
        assert calls[-1][2] == "step 6/6"
        assert all(name.startswith("mcp-sync-callback-") for name in progress.threads)


@ALL
def test_progress_extends_a_short_timeout(peer: Peer) -> None:
    """A per-call timeout shorter than the operation but longer than its progress interval
    succeeds (with and without an on_progress callback); without the extension the same
    call times out, and the client carries on."""
    tool, args, duration, expected = {
        "everything": ("trigger-long-running-operation", {"duration": 2, "steps": 8}, 2.0,
                       "Long running operation completed. Duration: 2 seconds, Steps: 8."),
        "sdk": ("slow", {"seconds": 2.0, "interval": 0.25}, 2.0, "slept 2.0 s in 8 steps"),
    }[peer.kind]
    with peer.connect() as client:
        seen = Recorder()
        started = time.monotonic()
        # Progress every 0.25 s; each one pushes the 1 s deadline out again.
        result = client.call_tool(tool, args, timeout=1.0, on_progress=seen)
        assert time.monotonic() - started >= duration - 0.1  # it really outlived its timeout
        assert result.text == expected
        values = [c[0] for c in seen.wait_for(lambda calls: len(calls) == 8 and calls, T,
                                              "eight progress notifications")]
        assert values == sorted(values) and len(set(values)) == 8  # strictly increasing
        assert values[-1] == 8.0

        assert client.call_tool(tool, args, timeout=1.0).text == expected  # no callback

    with peer.connect(reset_timeout_on_progress=False) as client:
        started = time.monotonic()
        with pytest.raises(RequestTimeout):
            client.call_tool(tool, args, timeout=1.0)
        assert time.monotonic() - started < duration
        assert_echoes(client, peer, "alive")


# -- timeouts and cancellation -----------------------------------------------------------


@ALL
def test_timeout_cancels_then_keep_working(peer: Peer) -> None:
    """A call past its timeout raises RequestTimeout (a TimeoutError) at its deadline, is
    cancelled on the wire, and the client goes on working: the late answer (if any) is
    dropped, and neither the next calls nor close() wait for it."""
    tool, args = long_call(peer, interval=5.0)  # no progress to push the deadline out
    with peer.connect() as client:
        started = time.monotonic()
        with pytest.raises(RequestTimeout) as timed_out:
            client.call_tool(tool, args, timeout=0.5, on_progress=lambda *a: None)
        elapsed = time.monotonic() - started
        assert isinstance(timed_out.value, TimeoutError)
        assert 0.45 <= elapsed < 3.0

        future = client.call_tool_future(tool, args, timeout=0.5)
        with pytest.raises(RequestTimeout):
            future.result(timeout=T)

        assert_carries_on(client, peer)


@ALL
def test_cancel_a_long_call_then_keep_working(peer: Peer) -> None:
    """``future.cancel()`` on a long call cancels it on the wire (``notifications/cancelled``
    in the session era, closing the request's stream in the stateless one over Streamable
    HTTP); server-everything never answers a cancelled request, so nothing may wait for
    that answer (not the next call, not close())."""
    tool, args = long_call(peer, interval=0.5)
    started = threading.Event()
    with peer.connect(notification_handler=Recorder()) as client:
        future = client.call_tool_future(tool, args, timeout=60,
                                         on_progress=lambda *a: started.set())
        assert started.wait(T), "the long operation never reported progress"
        assert not future.done()
        assert future.cancel() is True
        assert future.cancelled()
        with pytest.raises(CancelledError):
            future.result(timeout=T)
        assert_carries_on(client, peer)


# -- sampling ----------------------------------------------------------------------------


@EVERYTHING
def test_everything_sampling(peer: Peer) -> None:
    seen = Recorder()

    def sampling(params: Any) -> types.CreateMessageResult:
        seen(params)
        return types.CreateMessageResult(
            role="assistant", model="stub-model",
            content=types.TextContent(text="The answer is 42, from the handler."),
        )

    with peer.connect(sampling_handler=sampling) as client:
        result = client.call_tool("trigger-sampling-request",
                                  {"prompt": "What is the answer?", "maxTokens": 33}, timeout=T)
        assert not result.is_error
        assert "The answer is 42, from the handler." in result.text
        assert "stub-model" in result.text
        ((params,),) = seen.snapshot()
        assert isinstance(params, types.CreateMessageRequestParams)
        assert params.max_tokens == 33
        assert params.system_prompt == "You are a helpful test server."
        (message,) = params.messages
        assert message.role == "user" and isinstance(message.content, types.TextContent)
        assert message.content.text.endswith("What is the answer?")
        assert seen.threads[0].startswith("mcp-sync-handler-")


@SDK
def test_sdk_sampling_with_a_dict_answer(peer: Peer) -> None:
    seen = Recorder()

    def sampling(params: Any) -> Dict[str, Any]:
        seen(params)
        return {"role": "assistant", "model": "dict-model",
                "content": {"type": "text", "text": "forty-two"}}

    with peer.connect(sampling_handler=sampling) as client:
        result = client.call_tool("sample", {"prompt": "6 * 7?"}, timeout=T)
        assert result.text == "model dict-model said: forty-two"
        ((params,),) = seen.snapshot()
        assert isinstance(params, types.CreateMessageRequestParams)
        assert params.messages[0].content.text == "6 * 7?"
        assert params.max_tokens == 50 and params.system_prompt == "You are a test."
        # Session era: a server request, answered on the handler pool. Stateless era: an
        # input_required round trip, fulfilled by the calling thread before its retry.
        expected = ("mcp-sync-handler-" if peer.era == "session"
                    else threading.current_thread().name)
        assert seen.threads[0].startswith(expected)


@peers("sdk-stdio-session")
def test_sampling_handler_that_raises_becomes_an_error_for_the_server(
    peer: Peer, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.CRITICAL, logger="mcp_sync._rpc")  # the expected traceback
    def sampling(params: Any) -> Any:
        raise RuntimeError("no model available")

    with peer.connect(sampling_handler=sampling) as client:
        # The client answers sampling/createMessage with -32603 and a generic message (the
        # handler's own text stays in the client's log); the SDK server re-raises that MCP
        # error out of its tool as the call's own error.
        with pytest.raises(ServerError) as error:
            client.call_tool("sample", {"prompt": "?"}, timeout=T)
        assert error.value.code == -32603
        assert error.value.message == "the client's sampling handler failed"
        assert client.call_tool("add", {"a": 2, "b": 2}, timeout=T).text == "4"


# -- elicitation -------------------------------------------------------------------------


@EVERYTHING
def test_everything_elicitation(peer: Peer) -> None:
    seen = Recorder()

    def elicit(params: Any) -> Dict[str, Any]:
        seen(params)
        return {"action": "accept", "content": {"name": "Ada", "check": True, "integer": 7}}

    with peer.connect(elicitation_handler=elicit) as client:
        result = client.call_tool("trigger-elicitation-request", timeout=T)
        assert "User provided the requested information" in result.text
        assert "- Name: Ada" in result.text
        assert "- Agreed to terms: true" in result.text
        assert "- Favorite Integer: 7" in result.text
        ((params,),) = seen.snapshot()
        assert isinstance(params, types.ElicitRequestFormParams)
        assert params.message == "Please provide inputs for the following fields:"
        schema = params.requested_schema
        assert schema.required == ["name"]
        props = schema.properties
        assert isinstance(props["name"], types.StringSchema)
        assert isinstance(props["check"], types.BooleanSchema)
        assert isinstance(props["integer"], types.NumberSchema)
        assert isinstance(props["untitledSingleSelectEnum"], types.UntitledSingleSelectEnumSchema)
        assert isinstance(props["titledMultipleSelectEnum"], types.TitledMultiSelectEnumSchema)
        assert isinstance(props["legacyTitledEnum"], types.LegacyTitledEnumSchema)
        assert seen.threads[0].startswith("mcp-sync-handler-")


@EVERYTHING
def test_everything_elicitation_declined(peer: Peer) -> None:
    with peer.connect(elicitation_handler=lambda params: types.ElicitResult(action="decline")) \
            as client:
        result = client.call_tool("trigger-elicitation-request", timeout=T)
        assert "User declined to provide the requested information" in result.text


@SDK
def test_sdk_elicitation(peer: Peer) -> None:
    def elicit(params: Any) -> types.ElicitResult:
        assert params.message == "Who goes there?"
        assert set(params.requested_schema.properties) == {"name", "age", "subscribe"}
        return types.ElicitResult(action="accept",
                                  content={"name": "Bob", "age": 7, "subscribe": True})

    with peer.connect(elicitation_handler=elicit) as client:
        result = client.call_tool("ask_user", {"question": "Who goes there?"}, timeout=T)
        assert result.text == "accepted: name=Bob age=7 subscribe=True"

    with peer.connect(elicitation_handler=lambda params: {"action": "cancel"}) as client:
        assert client.call_tool("ask_user", timeout=T).text == "action: cancel"


# -- roots -------------------------------------------------------------------------------


@EVERYTHING
def test_everything_roots_and_list_changed(peer: Peer) -> None:
    roots: List[Any] = [
        types.Root(uri="file:///srv/project", name="Project"),
        {"uri": "file:///home/me/notes", "name": "Notes"},
    ]
    with peer.connect(roots=lambda: list(roots)) as client:
        text = client.call_tool("get-roots-list", timeout=T).text
        assert "Current MCP Roots (2 total)" in text
        assert "1. Project\n   URI: file:///srv/project" in text
        assert "2. Notes\n   URI: file:///home/me/notes" in text

        # The server caches the roots and asks again after roots/list_changed.
        roots.append({"uri": "file:///tmp/scratch"})
        client.send_roots_list_changed()
        text = wait_for(
            lambda: (lambda t: "file:///tmp/scratch" in t and t)(
                client.call_tool("get-roots-list", timeout=T).text
            ),
            T, "the server to fetch the changed roots",
        )
        assert "Current MCP Roots (3 total)" in text


@SDK
def test_sdk_roots(peer: Peer) -> None:
    """The SDK asks for the roots on every call (a request mid-call in the session era,
    an input_required round trip in the stateless one), so a changed list shows at once."""
    roots: List[Dict[str, str]] = [{"uri": "file:///a", "name": "A"}]
    with peer.connect(roots=lambda: roots) as client:
        assert client.call_tool("roots", timeout=T).text == "file:///a A"
        roots.append({"uri": "file:///b/c"})
        client.send_roots_list_changed()
        assert client.call_tool("roots", timeout=T).text == "file:///a A\nfile:///b/c"


# -- logging -----------------------------------------------------------------------------


@EVERYTHING
def test_everything_logging_handler(peer: Peer) -> None:
    logs = Recorder()
    with peer.connect(logging_handler=logs) as client:
        client.set_logging_level("debug", timeout=T)
        assert "Started simulated" in client.call_tool("toggle-simulated-logging", timeout=T).text
        try:
            # One message right away (then one every 5 s), at a random level.
            ((params,),) = logs.wait_for(lambda calls: calls[:1], T, "a log message")
        finally:
            assert "Stopped simulated" in client.call_tool(
                "toggle-simulated-logging", timeout=T).text
        assert isinstance(params, types.LoggingMessageNotificationParams)
        assert params.level in LEVELS
        assert isinstance(params.data, str) and "message" in params.data
        assert params.data.lower().startswith(params.level)
        assert logs.threads[0].startswith("mcp-sync-callback-")


@EVERYTHING
def test_everything_logging_without_handler_goes_to_python_logging(
    peer: Peer, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sync.server.everything")
    python_levels = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
                     "error": logging.ERROR, "critical": logging.CRITICAL}

    def server_records() -> List[logging.LogRecord]:
        return [r for r in caplog.records if r.name == "mcp_sync.server.everything"]

    with peer.connect() as client:
        client.set_logging_level("debug", timeout=T)
        client.call_tool("toggle-simulated-logging", timeout=T)
        try:
            records = wait_for(server_records, T, "a log record from the server")
        finally:
            client.call_tool("toggle-simulated-logging", timeout=T)
    record = records[0]
    message = record.getMessage()
    assert "message" in message
    level = message.split("-")[0].split(" ")[0].lower()  # "Warning-level message" -> warning
    assert level in LEVELS
    if level in python_levels:
        assert record.levelno == python_levels[level]
    else:  # notice, alert, emergency sit between/above the standard levels
        assert record.levelno > logging.INFO


@SDK
def test_sdk_logging_handler_and_level(peer: Peer) -> None:
    """The level reaches the server (logging/setLevel in the session era, the request
    envelope in the stateless one) and only messages at or above it come back."""
    logs = Recorder()
    with peer.connect(logging_handler=logs) as client:
        client.set_logging_level("debug", timeout=T)
        client.call_tool("log", {"message": "hi"}, timeout=T)
        calls = logs.wait_for(lambda calls: len(calls) == 8 and calls, T, "eight log messages")
        assert all(isinstance(c[0], types.LoggingMessageNotificationParams) for c in calls)
        assert [c[0].level for c in calls] == LEVELS  # in order, on one callback thread
        assert [c[0].data for c in calls] == [f"{level}: hi" for level in LEVELS]
        assert {c[0].logger for c in calls} == {"peer"}
        assert all(name.startswith("mcp-sync-callback-") for name in logs.threads)

        try:
            client.set_logging_level("error", timeout=T)
            client.call_tool("log", {"message": "late"}, timeout=T)
            client.call_tool("add", {"a": 1, "b": 1}, timeout=T)
            later = logs.wait_for(lambda calls: len(calls) >= 12 and calls[8:], T,
                                  "four more log messages")
            assert [c[0].data for c in later] == [
                f"{level}: late" for level in ("error", "critical", "alert", "emergency")
            ]
            with pytest.raises(ValueError):
                client.set_logging_level("verbose", timeout=T)
        finally:
            # Over HTTP the server keeps the session-era level process-wide, and the next
            # test's clients share this process.
            client.set_logging_level("debug", timeout=T)


@SDK
def test_sdk_logging_without_handler_goes_to_python_logging(
    peer: Peer, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sync.server.sdk")

    def server_records() -> List[logging.LogRecord]:
        return [r for r in caplog.records if r.name.startswith("mcp_sync.server.sdk")]

    with peer.connect() as client:
        client.set_logging_level("debug", timeout=T)
        client.call_tool("log", {"message": "to python", "logger": "peer"}, timeout=T)
        records = wait_for(lambda: len(server_records()) == 8 and server_records(), T,
                           "eight log records")
    assert {r.name for r in records} == {"mcp_sync.server.sdk.peer"}
    by_message = {r.getMessage(): r.levelno for r in records}
    assert by_message["debug: to python"] == logging.DEBUG
    assert by_message["info: to python"] == logging.INFO
    assert by_message["warning: to python"] == logging.WARNING
    assert by_message["error: to python"] == logging.ERROR
    assert by_message["critical: to python"] == logging.CRITICAL
    assert logging.INFO < by_message["notice: to python"] < logging.WARNING
    assert by_message["alert: to python"] > logging.CRITICAL
    assert by_message["emergency: to python"] > by_message["alert: to python"]


# -- notifications -----------------------------------------------------------------------


@peers("everything-stdio")
def test_everything_notifications_list_changed_and_resource_updates(peer: Peer) -> None:
    seen = Recorder()
    uri = "demo://resource/static/document/features.md"
    with peer.connect(notification_handler=seen, sampling_handler=lambda p: {}) as client:
        # The server registers capability-gated tools after the handshake and says so.
        seen.wait_for(lambda calls: "notifications/tools/list_changed" in seen.methods(), T,
                      "tools/list_changed")
        client.subscribe_resource(uri, timeout=T)
        assert "Started" in client.call_tool("toggle-subscriber-updates", timeout=T).text
        try:
            updated = seen.wait_for(
                lambda calls: seen.with_method("notifications/resources/updated"), T,
                "resources/updated")
        finally:
            client.call_tool("toggle-subscriber-updates", timeout=T)
            client.unsubscribe_resource(uri, timeout=T)
        assert updated[0] == {"uri": uri}
        assert all(name.startswith("mcp-sync-callback-") for name in seen.threads)


@peers(*named("sdk", "stdio"))
def test_sdk_notifications(peer: Peer) -> None:
    """resources/updated for subscribed resources only (resources/subscribe in the session
    era, subscriptions/listen in the stateless one); list_changed in the session era."""
    seen = Recorder()
    updated = "notifications/resources/updated"

    def updated_uris() -> List[str]:
        return [params["uri"] for params in seen.with_method(updated)]

    with peer.connect(notification_handler=seen) as client:
        client.subscribe_resource("res://greeting", timeout=T)
        client.call_tool("changes", timeout=T)
        seen.wait_for(lambda calls: "res://greeting" in updated_uris(), T, "resources/updated")
        if peer.era == "session":
            wanted = ["notifications/tools/list_changed", "notifications/prompts/list_changed",
                      "notifications/resources/list_changed", updated]
            seen.wait_for(lambda calls: all(m in seen.methods() for m in wanted), T,
                          f"all of {wanted}")
            # Notifications reach the handler in the order the server sent them.
            assert [m for m in seen.methods() if m in wanted] == wanted
            assert seen.with_method(updated) == [{"uri": "res://greeting"}]

        client.unsubscribe_resource("res://greeting", timeout=T)
        client.subscribe_resource("res://blob", timeout=T)
        client.call_tool("changes", timeout=T)
        seen.wait_for(lambda calls: "res://blob" in updated_uris(), T,
                      "resources/updated for the blob")
        assert updated_uris().count("res://greeting") == 1  # no longer subscribed
        assert all(name.startswith("mcp-sync-callback-") for name in seen.threads)


@peers(*named("sdk", "stdio"))
def test_notification_handler_can_call_the_client(peer: Peer) -> None:
    """A callback may call back into the client (it runs on the callback thread)."""
    answers: List[Optional[str]] = []
    done = threading.Event()
    holder: Dict[str, mcp_sync.Client] = {}

    def on_notification(method: str, params: Optional[Dict[str, Any]]) -> None:
        if method == "notifications/resources/updated" and not done.is_set():
            contents = holder["client"].read_resource(params["uri"], timeout=T).contents  # type: ignore[index]
            answers.append(getattr(contents[0], "text", None))
            done.set()

    with peer.connect(notification_handler=on_notification) as client:
        holder["client"] = client
        client.subscribe_resource("res://greeting", timeout=T)
        client.call_tool("changes", timeout=T)
        assert done.wait(T)
    assert answers == ["Hello from the SDK peer"]
