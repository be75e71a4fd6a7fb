"""Interop over HTTP against real MCP servers that nobody on this project wrote.

The same coverage as ``test_interop_stdio.py``, over the network transports. Servers:

* ``everything_http`` / ``everything_sse``: the reference server
  ``@modelcontextprotocol/server-everything`` (TypeScript SDK), run as
  ``node --require tests/servers/loopback.cjs index.js streamableHttp`` (``/mcp``) and
  ``... sse`` (``/sse``). It binds every interface and has no host option; the preload
  makes it bind 127.0.0.1 only.
* ``sdk_http`` / ``sdk_sse``: ``tests/servers/sdk_server.py`` (the official Python SDK)
  with ``--transport streamable-http`` (``/mcp``) and ``--transport sse`` (``/sse``).

Each server is a subprocess on a free port of 127.0.0.1, started once per module (a
module-scoped fixture, set up before the autouse leak check takes its baseline of child
processes) and stopped by PID at the end. Readiness is a successful TCP connect to the
port whose listening socket belongs to the process and is bound to 127.0.0.1 only.

Peers (client configurations, the ``peer`` parameter):

* ``everything-http``: ``connect(".../mcp")`` with the default negotiation (2025-11-25).
* ``everything-sse``: ``connect(".../sse", transport="sse")`` (2025-11-25).
* ``sdk-http-session``: pinned ``protocol_version="2025-11-25"``: initialize handshake,
  server-to-client requests on the POST's event stream.
* ``sdk-http-stateless``: the default negotiation, which finds 2026-07-28
  (``server/discover``, input_required round trips).
* ``sdk-sse-session``: legacy HTTP+SSE, pinned 2025-11-25.
* ``sdk-sse-stateless``: legacy HTTP+SSE with the default negotiation: the SDK answers
  ``server/discover`` on that transport too, so it lands on 2026-07-28.

Everything goes through the public API (``mcp_sync.connect(url, ...)`` as a context
manager) with a timeout on every call. A missing peer fails the test; nothing is skipped.
server-everything's ``get-env`` tool is never called (it prints the server's environment).
"""

from __future__ import annotations

import base64
import importlib.util
import logging
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import CancelledError
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple

import pytest

import mcp_sync
from mcp_sync import HTTPError, RequestTimeout, ServerError, types
from mcp_sync.client import forget_protocol_eras

from .conftest import PY, SERVERS, child_pids, require_everything

# Seconds for any single call that should be quick. Generous: the VM is small and noisy.
T = 20.0
LATEST = "2025-11-25"
MODERN = "2026-07-28"
LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

HOST = "127.0.0.1"
LOOPBACK_PRELOAD = SERVERS / "loopback.cjs"
#: How long a server may take to listen, and to stop after SIGTERM.
READY_TIMEOUT = 20.0
STOP_TIMEOUT = 5.0
#: Ports tried before giving up (a free port can be taken between probe and bind).
PORT_ATTEMPTS = 3


# -- server processes --------------------------------------------------------------------


def free_port() -> int:
    """A port free on 127.0.0.1 right now (the socket is closed again at once)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _decode_address(hex_address: str) -> str:
    """An address from /proc/net/tcp{,6}: 32-bit words in host (little-endian) order."""
    raw = bytes.fromhex(hex_address)
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    family = socket.AF_INET if len(words) == 4 else socket.AF_INET6
    return socket.inet_ntop(family, words)


def tcp_listeners(port: int) -> List[Tuple[str, int]]:
    """``(address, socket inode)`` of every TCP socket listening on ``port`` (v4 and v6)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue  # no IPv6 here
        for row in rows:
            fields = row.split()
            address, _, port_hex = fields[1].rpartition(":")
            if fields[3] == "0A" and int(port_hex, 16) == port:  # 0A: LISTEN
                found.append((_decode_address(address), int(fields[9])))
    return found


def socket_inodes(pid: int) -> Set[int]:
    """Inodes of the sockets process ``pid`` has open."""
    inodes = set()
    try:
        entries = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return inodes
    for entry in entries:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{entry}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[len("socket:["):-1]))
    return inodes


class _PortTaken(Exception):
    """Another process answered on the port picked for the server."""


class ServerProcess:
    """One peer server: a subprocess on a free 127.0.0.1 port, stopped by its PID.

    ``argv(port)`` builds the command line; ``PORT`` is set in its environment too.
    Its stdout and stderr go to ``log_path`` (quoted when something goes wrong).
    """

    def __init__(self, name: str, argv: Callable[[int], List[str]], path: str,
                 log_dir: Path) -> None:
        self.name = name
        self.argv = argv
        self.path = path
        self.log_path = log_dir / f"{name}.log"
        self.port = 0
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self._log_start = 0  # where the current attempt's output begins in the log

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}{self.path}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def log_tail(self, limit: int = 3000) -> str:
        """The end of the current attempt's output."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self._log_start)
                data = f.read()
        except OSError:
            return ""
        return data.decode(errors="replace")[-limit:]

    def start(self) -> ServerProcess:
        for attempt in range(1, PORT_ATTEMPTS + 1):
            self.port = free_port()
            env = {**os.environ, "PORT": str(self.port)}
            with open(self.log_path, "ab") as log:
                log.write(f"--- {self.name} on port {self.port}\n".encode())
                log.flush()
                self._log_start = log.tell()
                self.proc = subprocess.Popen(
                    self.argv(self.port), stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, env=env,
                )
            try:
                self._wait_ready()
                return self
            except _PortTaken:
                self.stop()
                if attempt == PORT_ATTEMPTS:
                    pytest.fail(f"{self.name}: {PORT_ATTEMPTS} ports were taken in a row")
            except BaseException:
                self.stop()
                raise
        raise AssertionError("unreachable")

    def _wait_ready(self) -> None:
        """Poll the port (connect attempts) until this process listens on it, bounded."""
        assert self.proc is not None
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            code = self.proc.poll()
            if code is not None:
                if "already in use" in self.log_tail().lower():  # EADDRINUSE
                    raise _PortTaken
                pytest.fail(f"{self.name} exited with {code} before listening:\n"
                            f"{self.log_tail()}")
            try:
                socket.create_connection((HOST, self.port), timeout=1.0).close()
            except OSError:
                pass
            else:
                listeners = tcp_listeners(self.port)
                ours = socket_inodes(self.pid)
                if any(inode in ours for _, inode in listeners):
                    addresses = sorted({address for address, _ in listeners})
                    assert addresses == [HOST], (
                        f"{self.name} listens on {addresses}, not on {HOST} only")
                    return
                if listeners:
                    raise _PortTaken  # someone else's listener answered
            if time.monotonic() > deadline:
                pytest.fail(f"{self.name} did not listen on {HOST}:{self.port} within "
                            f"{READY_TIMEOUT} s:\n{self.log_tail()}")
            try:
                self.proc.wait(0.05)  # the pause between attempts; notices an early exit
            except subprocess.TimeoutExpired:
                pass

    def stop(self) -> None:
        """SIGTERM, a bounded wait, then SIGKILL. Idempotent."""
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(STOP_TIMEOUT)


def node() -> str:
    found = shutil.which("node")
    assert found, "node is not on PATH: server-everything needs Node 20+"
    return found


def everything_argv(mode: str) -> Callable[[int], List[str]]:
    entry = require_everything()
    assert LOOPBACK_PRELOAD.exists(), f"{LOOPBACK_PRELOAD} is missing"
    command = [node(), "--require", str(LOOPBACK_PRELOAD), str(entry), mode]
    return lambda port: command  # the port goes in $PORT


def sdk_argv(transport: str) -> Callable[[int], List[str]]:
    script = SERVERS / "sdk_server.py"
    assert script.exists(), f"{script} is missing"
    assert importlib.util.find_spec("mcp") is not None, (
        "the official MCP Python SDK (PyPI `mcp`) is not installed: it is a test dependency")
    return lambda port: [PY, str(script), "--transport", transport, "--host", HOST,
                         "--port", str(port)]


def _serve(name: str, argv: Callable[[int], List[str]], path: str,
           factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = ServerProcess(name, argv, path, factory.mktemp(name)).start()
    try:
        yield server
    finally:
        server.stop()


# Module-scoped: each server starts once, before the first test that needs it takes its
# leak baseline (pytest sets up higher-scoped fixtures before function-scoped ones, the
# autouse no_leaks included), and stops after the last test's leak check.


@pytest.fixture(scope="module")
def everything_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    yield from _serve("everything-http", everything_argv("streamableHttp"), "/mcp",
                      tmp_path_factory)


@pytest.fixture(scope="module")
def everything_sse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    yield from _serve("everything-sse", everything_argv("sse"), "/sse", tmp_path_factory)


@pytest.fixture(scope="module")
def sdk_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    yield from _serve("sdk-http", sdk_argv("streamable-http"), "/mcp", tmp_path_factory)


@pytest.fixture(scope="module")
def sdk_sse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    yield from _serve("sdk-sse", sdk_argv("sse"), "/sse", tmp_path_factory)


# -- peers -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PeerSpec:
    server: str  # the fixture that runs it
    kind: str  # "everything" or "sdk"
    transport: Optional[str]  # forced transport, None: connect()'s default
    protocol_version: Optional[str]  # pinned, None: negotiate
    expected_version: str
    era: str


PEER_SPECS: Dict[str, PeerSpec] = {
    "everything-http": PeerSpec("everything_http", "everything", None, None, LATEST, "session"),
    "everything-sse": PeerSpec("everything_sse", "everything", "sse", None, LATEST, "session"),
    "sdk-http-session": PeerSpec("sdk_http", "sdk", None, LATEST, LATEST, "session"),
    "sdk-http-stateless": PeerSpec("sdk_http", "sdk", None, None, MODERN, "stateless"),
    "sdk-sse-session": PeerSpec("sdk_sse", "sdk", "sse", LATEST, LATEST, "session"),
    "sdk-sse-stateless": PeerSpec("sdk_sse", "sdk", "sse", None, MODERN, "stateless"),
}
EVERYTHING_PEERS = [name for name, spec in PEER_SPECS.items() if spec.kind == "everything"]
SDK_PEERS = [name for name, spec in PEER_SPECS.items() if spec.kind == "sdk"]


@dataclass
class Peer:
    """A server and how to connect to it."""

    name: str
    spec: PeerSpec
    server: ServerProcess

    @property
    def kind(self) -> str:
        return self.spec.kind

    @property
    def era(self) -> str:
        return self.spec.era

    def connect(self, **kwargs: Any) -> mcp_sync.Client:
        kwargs.setdefault("timeout", T)
        kwargs.setdefault("name", self.kind)
        kwargs.setdefault("protocol_version", self.spec.protocol_version)
        # The era probe gets the tests' patience: these tests are about each era's
        # features, and a server's first 2026-07-28 answer on a loaded machine can take
        # longer than the 1 s default. test_negotiation_finds_each_servers_era_without_
        # stalling holds the default to its promise.
        kwargs.setdefault("probe_timeout", T)
        if self.spec.transport is not None:
            kwargs.setdefault("transport", self.spec.transport)
        client = mcp_sync.connect(self.server.url, **kwargs)
        expected = kwargs["protocol_version"] or self.spec.expected_version
        if client.protocol_version != expected:
            client.close()
            pytest.fail(f"{self.name} negotiated {client.protocol_version}, not {expected}")
        return client


@pytest.fixture(scope="module")
def peer(request: pytest.FixtureRequest) -> Peer:
    """The peer named by the test's ``peer`` parameter (indirect), its server running.

    Module-scoped like the servers, so that the server it pulls in is started before the
    test's leak baseline.
    """
    spec = PEER_SPECS[request.param]
    return Peer(request.param, spec, request.getfixturevalue(spec.server))


def peers(*names: str) -> Any:
    return pytest.mark.parametrize("peer", list(names), indirect=True)


ALL = peers(*PEER_SPECS)
EVERYTHING = peers(*EVERYTHING_PEERS)
SDK = peers(*SDK_PEERS)


def wait_for(predicate: Callable[[], Any], timeout: float = T, what: str = "condition") -> Any:
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


class Recorder:
    """Thread-safe record of callback invocations (and the threads they ran on)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls: List[Tuple[Any, ...]] = []
        self.threads: List[str] = []

    def __call__(self, *args: Any) -> None:
        with self._lock:
            self.calls.append(args)
            self.threads.append(threading.current_thread().name)

    def snapshot(self) -> List[Tuple[Any, ...]]:
        with self._lock:
            return list(self.calls)


# -- the servers themselves --------------------------------------------------------------


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
        monkeypatch.setattr(sys.modules[__name__], "free_port", lambda: next(ports))
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


# -- handshake and transport selection ---------------------------------------------------


@EVERYTHING
def test_everything_initialize(peer: Peer) -> None:
    transport = mcp_sync.SseTransport if peer.name.endswith("sse") else mcp_sync.HttpTransport
    with peer.connect() as client:
        assert client.connected
        assert isinstance(client.transport, transport)
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
    transport = mcp_sync.SseTransport if "-sse-" in peer.name else mcp_sync.HttpTransport
    with peer.connect() as client:
        assert isinstance(client.transport, transport)
        assert client.protocol_version == peer.spec.expected_version
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


def test_negotiation_finds_each_servers_era_without_stalling(
    everything_http: ServerProcess, sdk_http: ServerProcess,
) -> None:
    """With no pinned version (and nothing remembered) the client probes for 2026-07-28
    over HTTP and falls back to initialize at once when the server predates it."""
    forget_protocol_eras()
    started = time.monotonic()
    with mcp_sync.connect(everything_http.url, name="everything", timeout=T) as client:
        assert time.monotonic() - started < 5  # no multi-second stall on the probe
        assert client.protocol_version == LATEST
        assert client.call_tool("echo", {"message": "x"}, timeout=T).text == "Echo: x"
    started = time.monotonic()
    with mcp_sync.connect(sdk_http.url, name="sdk", timeout=T) as client:
        assert time.monotonic() - started < 5
        assert client.protocol_version == MODERN and client.era == "stateless"
        assert client.call_tool("add", {"a": 20, "b": 22}, timeout=T).text == "42"


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
    forget_protocol_eras()
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
            what="the capability-gated tools",
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

        client.list_tools(timeout=T)  # so the client knows the outputSchema and checks it
        weather = client.call_tool("get-structured-content", {"location": "Chicago"}, timeout=T)
        assert weather.structured == weather.structured_content
        assert weather.structured is not None
        assert set(weather.structured) == {"temperature", "conditions", "humidity"}
        assert isinstance(weather.structured["temperature"], (int, float))

        image = client.call_tool("get-tiny-image", timeout=T)
        assert len(image.images) == 1
        assert image.images[0].mime_type == "image/png"
        assert base64.b64decode(image.images[0].data).startswith(PNG_MAGIC)

        annotated = client.call_tool(
            "get-annotated-message", {"messageType": "error", "includeImage": True}, timeout=T
        )
        first = annotated.content[0]
        assert isinstance(first, types.TextContent) and first.annotations is not None
        assert first.annotations.priority == 1.0
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

        unknown = client.call_tool("nope", {"x": 1}, timeout=T)
        assert unknown.is_error is True and "Tool nope not found" in unknown.text


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

        unknown = client.call_tool("nope", {"x": 1}, timeout=T)
        assert unknown.is_error is True and "Unknown tool: nope" in unknown.text


#: What each kind of peer answers ``prompts/get`` of an unknown prompt with, per era:
#: (code, message). The SDK's answers are its own: code 0 in the session era, and in the
#: stateless era its handler's error masked as an internal error.
UNKNOWN_PROMPT = {
    ("everything", "session"): (-32602, "MCP error -32602: Prompt no-such-prompt not found"),
    ("sdk", "session"): (0, "Unknown prompt: no-such-prompt"),
    ("sdk", "stateless"): (-32603, "Internal server error"),
}


@ALL
def test_unknown_resource_and_prompt_raise_server_error(peer: Peer) -> None:
    with peer.connect() as client:
        with pytest.raises(ServerError) as resource_error:
            client.read_resource("nope://nothing", timeout=T)
        assert resource_error.value.code == -32602
        assert "nope://nothing" in resource_error.value.message

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


# -- progress and timeouts ---------------------------------------------------------------


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
        calls = wait_for(lambda: len(progress.snapshot()) == 4 and progress.snapshot(),
                         what="four progress notifications")
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
        calls = wait_for(lambda: len(progress.snapshot()) == 6 and progress.snapshot(),
                         what="six progress notifications")
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
    tool, args, duration, expected, echo = {
        "everything": ("trigger-long-running-operation", {"duration": 2, "steps": 8}, 2.0,
                       "Long running operation completed. Duration: 2 seconds, Steps: 8.",
                       ("echo", {"message": "alive"}, "Echo: alive")),
        "sdk": ("slow", {"seconds": 2.0, "interval": 0.25}, 2.0, "slept 2.0 s in 8 steps",
                ("echo", {"text": "alive"}, "alive")),
    }[peer.kind]
    with peer.connect() as client:
        seen = Recorder()
        started = time.monotonic()
        # Progress every 0.25 s; each one pushes the 1 s deadline out again.
        result = client.call_tool(tool, args, timeout=1.0, on_progress=seen)
        assert time.monotonic() - started >= duration - 0.1  # it really outlived its timeout
        assert result.text == expected
        values = [c[0] for c in wait_for(lambda: len(seen.snapshot()) == 8 and seen.snapshot(),
                                         what="eight progress notifications")]
        assert values == sorted(values) and len(set(values)) == 8  # strictly increasing
        assert values[-1] == 8.0

        assert client.call_tool(tool, args, timeout=1.0).text == expected  # no callback

    with peer.connect(reset_timeout_on_progress=False) as client:
        started = time.monotonic()
        with pytest.raises(RequestTimeout):
            client.call_tool(tool, args, timeout=1.0)
        assert time.monotonic() - started < duration
        assert client.call_tool(echo[0], echo[1], timeout=T).text == echo[2]


# -- timeouts and cancellation -----------------------------------------------------------


def _long_call(peer: Peer, interval: float) -> Tuple[str, Dict[str, Any]]:
    """A 10 s call (progress every ``interval`` s) that does not block the server."""
    if peer.kind == "everything":
        return "trigger-long-running-operation", {"duration": 10, "steps": round(10 / interval)}
    return "slow", {"seconds": 10, "interval": interval}


def _quick_call(client: mcp_sync.Client, peer: Peer, a: int, b: int) -> str:
    if peer.kind == "everything":
        return client.call_tool("get-sum", {"a": a, "b": b}, timeout=T).text
    return client.call_tool("add", {"a": a, "b": b}, timeout=T).text


@ALL
def test_timeout_cancels_then_keep_working(peer: Peer) -> None:
    """A call past its timeout raises RequestTimeout (a TimeoutError) at its deadline, is
    cancelled on the wire, and the client goes on working: the late answer (if any) is
    dropped, and neither the next calls nor close() wait for it."""
    tool, args = _long_call(peer, interval=5.0)  # no progress to push the deadline out
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

        client.ping(timeout=T)
        expected = "The sum of 1 and 2 is 3." if peer.kind == "everything" else "3"
        assert _quick_call(client, peer, 1, 2) == expected
        assert client.connected
        closing = time.monotonic()
    assert time.monotonic() - closing < 5  # close() did not wait for the abandoned calls
    assert not client.connected


@ALL
def test_cancel_a_long_call_then_keep_working(peer: Peer) -> None:
    """``future.cancel()`` on a long call cancels it on the wire (``notifications/cancelled``
    in the session era, closing the request's stream in the stateless one over Streamable
    HTTP); server-everything never answers a cancelled request, so nothing may wait for
    that answer."""
    tool, args = _long_call(peer, interval=0.5)
    started = threading.Event()
    with peer.connect() as client:
        future = client.call_tool_future(tool, args, timeout=60,
                                         on_progress=lambda *a: started.set())
        assert started.wait(T), "the long operation never reported progress"
        assert not future.done()
        assert future.cancel() is True
        assert future.cancelled()
        with pytest.raises(CancelledError):
            future.result(timeout=T)
        expected = "The sum of 2 and 2 is 4." if peer.kind == "everything" else "4"
        assert _quick_call(client, peer, 2, 2) == expected
        assert client.connected
        closing = time.monotonic()
    assert time.monotonic() - closing < 5
    assert not client.connected


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
        assert isinstance(schema.properties["name"], types.StringSchema)
        assert isinstance(schema.properties["check"], types.BooleanSchema)
        assert isinstance(schema.properties["integer"], types.NumberSchema)
        assert seen.threads[0].startswith("mcp-sync-handler-")

    with peer.connect(elicitation_handler=lambda p: types.ElicitResult(action="decline")) \
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
            what="the server to fetch the changed roots",
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
            ((params,),) = wait_for(lambda: logs.snapshot()[:1], what="a log message")
        finally:
            assert "Stopped simulated" in client.call_tool(
                "toggle-simulated-logging", timeout=T).text
        assert isinstance(params, types.LoggingMessageNotificationParams)
        assert params.level in LEVELS
        assert isinstance(params.data, str) and "message" in params.data
        assert params.data.lower().startswith(params.level)
        assert logs.threads[0].startswith("mcp-sync-callback-")


@SDK
def test_sdk_logging_handler_and_level(peer: Peer) -> None:
    """The level reaches the server (logging/setLevel in the session era, the request
    envelope in the stateless one) and only messages at or above it come back."""
    logs = Recorder()
    with peer.connect(logging_handler=logs) as client:
        client.set_logging_level("debug", timeout=T)
        client.call_tool("log", {"message": "hi"}, timeout=T)
        calls = wait_for(lambda: len(logs.snapshot()) == 8 and logs.snapshot(),
                         what="eight log messages")
        assert all(isinstance(c[0], types.LoggingMessageNotificationParams) for c in calls)
        assert [c[0].level for c in calls] == LEVELS  # in order, on one callback thread
        assert [c[0].data for c in calls] == [f"{level}: hi" for level in LEVELS]
        assert {c[0].logger for c in calls} == {"peer"}
        assert all(name.startswith("mcp-sync-callback-") for name in logs.threads)

        try:
            client.set_logging_level("error", timeout=T)
            client.call_tool("log", {"message": "late"}, timeout=T)
            client.call_tool("add", {"a": 1, "b": 1}, timeout=T)
            later = wait_for(lambda: len(logs.snapshot()) >= 12 and logs.snapshot()[8:],
                             what="four more log messages")
            assert [c[0].data for c in later] == [
                f"{level}: late" for level in ("error", "critical", "alert", "emergency")
            ]
        finally:
            # The server keeps the session-era level process-wide; the next test's
            # clients share this process.
            client.set_logging_level("debug", timeout=T)


@ALL
def test_logging_without_handler_goes_to_python_logging(
    peer: Peer, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger=f"mcp_sync.server.{peer.kind}")
    prefix = f"mcp_sync.server.{peer.kind}"

    def records() -> List[logging.LogRecord]:
        return [r for r in caplog.records if r.name.startswith(prefix)]

    with peer.connect() as client:
        client.set_logging_level("debug", timeout=T)
        if peer.kind == "sdk":
            client.call_tool("log", {"message": "to python", "logger": "peer"}, timeout=T)
            found = wait_for(lambda: len(records()) == 8 and records(), what="eight records")
            by_message = {r.getMessage(): r.levelno for r in found}
            assert by_message["debug: to python"] == logging.DEBUG
            assert by_message["error: to python"] == logging.ERROR
            assert by_message["emergency: to python"] > logging.CRITICAL
            assert {r.name for r in found} == {f"{prefix}.peer"}
            return
        client.call_tool("toggle-simulated-logging", timeout=T)
        try:
            found = wait_for(records, what="a log record from the server")
        finally:
            client.call_tool("toggle-simulated-logging", timeout=T)
    message = found[0].getMessage()
    level = message.split("-")[0].split(" ")[0].lower()  # "Warning-level message" -> warning
    assert level in LEVELS and "message" in message
