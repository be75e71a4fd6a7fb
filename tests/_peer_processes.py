"""Peer MCP servers as processes, for the interop tests.

Over HTTP, the servers run on 127.0.0.1 (``ServerProcess``, ``serve``):

* server-everything (``@modelcontextprotocol/server-everything``, TypeScript SDK), run as
  ``node --require tests/servers/loopback.cjs index.js streamableHttp`` (``/mcp``) or
  ``... sse`` (``/sse``). It binds every interface and has no host option; the preload
  makes it bind 127.0.0.1 only.
* ``tests/servers/sdk_server.py`` (the official Python SDK) with ``--transport
  streamable-http`` (``/mcp``) or ``--transport sse`` (``/sse``).
* ``tests/servers/sdk_cache_server.py`` (the official Python SDK with caching hints,
  counting what it receives) at ``/mcp``.

Each server is a subprocess on a free port of 127.0.0.1, stopped by PID. Readiness is a
successful TCP connect to the port whose listening socket belongs to the process and is
bound to 127.0.0.1 only.

Over stdio, the client starts the same servers itself from ``everything_command()`` and
``sdk_command()``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Set, Tuple

import pytest

from ._procs import free_port, stop_process
from .conftest import PY, SERVERS, require_everything

HOST = "127.0.0.1"
LOOPBACK_PRELOAD = SERVERS / "loopback.cjs"
#: How long a server may take to listen, and to stop after SIGTERM.
READY_TIMEOUT = 20.0
STOP_TIMEOUT = 5.0
#: Ports tried before giving up (a free port can be taken between probe and bind).
PORT_ATTEMPTS = 3


# -- over HTTP: a server on a free port --------------------------------------------------


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
            stop_process(proc, STOP_TIMEOUT)


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


def cache_server_argv(ttl_ms: int = 60_000,
                      read_ttl_ms: Optional[int] = None) -> Callable[[int], List[str]]:
    """``tests/servers/sdk_cache_server.py``: the official SDK answering with caching
    hints (``ttl_ms`` on discover and the lists, ``read_ttl_ms`` on reads) and counting
    the requests it receives (:func:`request_counts`)."""
    script = SERVERS / "sdk_cache_server.py"
    assert importlib.util.find_spec("mcp") is not None, (
        "the official MCP Python SDK (PyPI `mcp`) is not installed: it is a test dependency")
    extra = [] if read_ttl_ms is None else ["--read-ttl-ms", str(read_ttl_ms)]
    return lambda port: [PY, str(script), str(port), "--ttl-ms", str(ttl_ms), *extra]


def request_counts(server: ServerProcess) -> Dict[str, int]:
    """The requests ``sdk_cache_server.py`` received so far, by JSON-RPC method, and
    ``"http"``: every HTTP request to its MCP endpoint."""
    with urllib.request.urlopen(f"http://{HOST}:{server.port}/counts", timeout=10) as reply:
        counts: Dict[str, int] = json.loads(reply.read())
    return counts


def serve(name: str, argv: Callable[[int], List[str]], path: str,
          factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A fixture's body: the server runs for as long as the fixture."""
    server = ServerProcess(name, argv, path, factory.mktemp(name)).start()
    try:
        yield server
    finally:
        server.stop()


# -- over stdio: the client starts the process ------------------------------------------


def everything_command() -> List[str]:
    return [node(), str(require_everything()), "stdio"]


def sdk_command() -> List[str]:
    script = SERVERS / "sdk_server.py"
    assert script.exists(), f"{script} is missing"
    return [PY, str(script)]
