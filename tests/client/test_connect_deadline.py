"""``connect(..., timeout=T)`` bounds the whole connect: against a server that never
answers, the era probe, the handshake and the stop of the server all fit in about T.

Real processes that never answer (``sleep 30``; a Python process that also ignores
SIGTERM) and a real socket on 127.0.0.1 that accepts connections and never replies."""

from __future__ import annotations

import contextlib
import logging
import re
import socket
import threading
import time
from typing import Any, Iterator, List

import pytest

import mcp_sync
from mcp_sync import RequestTimeout, TransportError

from ..conftest import PY, fake_server_command

T = 2.0
# What the library promises beyond T (thread joins after the stop), and what a loaded
# machine may add to it before the test calls it a failure.
SLACK = 0.1
LOAD = 0.6

IGNORES_SIGTERM = [PY, "-c", "import signal, time; signal.signal(signal.SIGTERM, "
                   "signal.SIG_IGN); time.sleep(30)"]


@contextlib.contextmanager
def silent_server(refuse_posts: bool = False) -> Iterator[str]:
    """A TCP server on 127.0.0.1 that accepts every connection and never sends a byte
    (``refuse_posts``: but answers a POST with 404 at once, as a legacy HTTP+SSE server
    does at a Streamable HTTP client)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.1)  # so that the accept loop sees the stop
    stop = threading.Event()
    held: List[socket.socket] = []

    def accept() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            held.append(connection)
            if refuse_posts:
                connection.settimeout(5)
                if connection.recv(65536).startswith(b"POST"):
                    connection.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n"
                                       b"Connection: close\r\n\r\n")

    thread = threading.Thread(target=accept, name="silent-http", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        listener.close()
        for connection in held:
            connection.close()


@pytest.fixture
def silent_url() -> Iterator[str]:
    with silent_server() as url:
        yield url


def timed_connect(target: Any, **kwargs: Any) -> tuple[BaseException, float]:
    started = time.monotonic()
    with pytest.raises((RequestTimeout, TransportError)) as info:
        mcp_sync.connect(target, timeout=T, **kwargs)
    return info.value, time.monotonic() - started


@pytest.mark.parametrize("server", [["sleep", "30"], IGNORES_SIGTERM],
                         ids=["sleep", "ignores-SIGTERM"])
@pytest.mark.parametrize("protocol_version", [None, "2025-11-25"])
def test_a_stdio_server_that_never_answers_is_given_up_and_stopped_within_the_timeout(
        server: List[str], protocol_version: Any) -> None:
    # Before: the probe (1 s), then the whole timeout, then close()'s steps (2 s after
    # stdin's end, 2 s after SIGTERM) came on top of each other.
    error, elapsed = timed_connect(server, protocol_version=protocol_version)
    assert isinstance(error, RequestTimeout)
    assert (error.method, error.timeout) == ("initialize", T)
    assert str(error) == f"initialize timed out after {T} s"
    assert T * 0.8 < elapsed < T + SLACK + LOAD, elapsed
    # The no_leaks fixture checks that the server is gone, SIGKILLed if need be.


def test_a_streamable_http_server_that_never_answers(silent_url: str) -> None:
    error, elapsed = timed_connect(f"{silent_url}/mcp")
    assert isinstance(error, RequestTimeout) and error.timeout == T
    assert T * 0.8 < elapsed < T + SLACK + LOAD, elapsed


def test_a_legacy_sse_server_that_never_sends_its_endpoint(silent_url: str) -> None:
    # The wait for the endpoint event is part of the connect too (it was 10 s).
    error, elapsed = timed_connect(f"{silent_url}/sse", transport="sse")
    assert isinstance(error, TransportError)
    assert "sent no endpoint event within 2.0 s" in str(error)
    assert T * 0.8 < elapsed < T + SLACK + LOAD, elapsed


def test_a_fallback_to_legacy_sse_shares_the_timeout() -> None:
    # POSTs are refused with 404 (a legacy server, it seems), the SSE GET never answers:
    # the fallback's wait for the endpoint event is inside the same timeout.
    with silent_server(refuse_posts=True) as url:
        error, elapsed = timed_connect(f"{url}/mcp")
    assert isinstance(error, mcp_sync.HTTPError) and error.status == 404
    assert elapsed < T + SLACK + LOAD, elapsed


def test_the_probe_takes_at_most_half_of_a_short_timeout(
        caplog: pytest.LogCaptureFixture) -> None:
    # A session-era server that never answers server/discover: with timeout=1.5 the
    # probe gives up after half of what is left (1.5 less the stop's 0.15, less the
    # start), leaving the handshake the other half; probe_timeout (1 s) would have left
    # it a third.
    caplog.set_level(logging.DEBUG, logger="mcp_sync.client")
    with mcp_sync.connect(fake_server_command("--ignore-unknown"), timeout=1.5) as client:
        assert client.era == "session"
    waited = [float(match.group(1)) for match in (
        re.search(r"no answer to server/discover within ([0-9.]+) s", record.getMessage())
        for record in caplog.records) if match]
    assert len(waited) == 1 and 0.3 < waited[0] <= (1.5 - 0.15) / 2, waited


def test_a_connect_that_fails_otherwise_still_stops_its_server_in_the_time_left() -> None:
    # The server answers with a version this client does not speak, then ignores its
    # stdin's end and SIGTERM: the stop shares what is left of the timeout (close()'s
    # own steps, 2 s each, would take over 4 s).
    started = time.monotonic()
    with pytest.raises(mcp_sync.UnsupportedProtocolVersion):
        mcp_sync.connect(fake_server_command("--stubborn", "--protocol-version", "2020-01-01"),
                         timeout=T)
    assert time.monotonic() - started < T + SLACK + LOAD


def test_a_client_connect_takes_its_own_timeout() -> None:
    client = mcp_sync.Client(mcp_sync.StdioTransport("sleep", ["30"]), timeout=30.0)
    started = time.monotonic()
    with pytest.raises(RequestTimeout) as info:
        client.connect(timeout=T)
    assert info.value.timeout == T
    assert T * 0.8 < time.monotonic() - started < T + SLACK + LOAD
    assert client.timeout == 30.0  # the calls' default is the client's, unchanged
