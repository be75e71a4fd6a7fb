"""Helpers for the fault cases: timing an expected error and recording what was observed."""

from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager
from typing import Any, Dict, Iterator, List, Optional, Type

import pytest

import mcp_sync
from mcp_sync import StdioTransport

from .workloads import FAULT_SERVER, PINNED, PY

#: What each fault case observed, in order: written out by conftest.py at the end of the
#: session when MCP_SYNC_FAULT_LOG names a file (bench/reliability.py does that).
OBSERVED: List[Dict[str, Any]] = []


class Outcome:
    """Filled in by :func:`expect` once the block has raised."""

    error: BaseException
    elapsed: float


def _test_name() -> str:
    current = os.environ.get("PYTEST_CURRENT_TEST", "?")
    return current.split(" ")[0].split("::", 1)[-1]


def record(fault: str, observed: str, elapsed: float, bound: float) -> None:
    OBSERVED.append({"test": _test_name(), "fault": fault, "observed": observed,
                     "elapsed": round(elapsed, 3), "bound": bound})


@contextmanager
def expect(error: Type[BaseException], within: float, *, fault: str = "",
           match: Optional[str] = None) -> Iterator[Outcome]:
    """The block must raise ``error`` (matching ``match``) in less than ``within`` seconds.

    With a ``fault`` label, what was observed is recorded for the figures table.
    """
    outcome = Outcome()
    start = time.monotonic()
    with pytest.raises(error, match=match) as info:
        yield outcome
    outcome.elapsed = time.monotonic() - start
    outcome.error = info.value
    assert outcome.elapsed < within, (
        f"{type(info.value).__name__} after {outcome.elapsed:.2f} s, bound {within} s")
    if fault:  # a labelled fault case (not a follow-up check): goes in the figures table
        shown = f"{type(info.value).__name__}: {info.value}".rstrip(": ")
        record(fault, shown[:160], outcome.elapsed, within)


@contextmanager
def timed(within: float, *, fault: str = "", observed: str = "result") -> Iterator[None]:
    """The block must finish (without raising) in less than ``within`` seconds."""
    start = time.monotonic()
    yield
    elapsed = time.monotonic() - start
    assert elapsed < within, f"took {elapsed:.2f} s, bound {within} s"
    record(fault or _test_name(), observed, elapsed, within)


def fault_transport(*args: str, **kwargs: Any) -> StdioTransport:
    kwargs.setdefault("close_timeout", 1.0)
    return StdioTransport(PY, [str(FAULT_SERVER), *args], **kwargs)


def fault_client(*args: str, transport_kwargs: Optional[Dict[str, Any]] = None,
                 **kwargs: Any) -> mcp_sync.Client:
    """A connected client of ``tests/servers/fault_stdio.py`` (version pinned: no probe)."""
    kwargs.setdefault("timeout", 10.0)
    kwargs.setdefault("close_timeout", 1.0)
    kwargs.setdefault("protocol_version", PINNED)
    return mcp_sync.Client(fault_transport(*args, **(transport_kwargs or {})),
                           **kwargs).connect()


def assert_usable(client: mcp_sync.Client, text: str = "still here") -> None:
    """The client answers a plain call correctly."""
    assert client.call_tool("echo", {"text": text}, timeout=10).text == text


def assert_reports_closed(client: mcp_sync.Client) -> None:
    """The client says it is not connected, and a call fails at once, not at a deadline."""
    assert not client.connected
    start = time.monotonic()
    with pytest.raises(mcp_sync.ConnectionClosed):
        client.call_tool("echo", {"text": "x"}, timeout=10)
    assert time.monotonic() - start < 0.5


def write_log(path: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(OBSERVED, f, indent=1)
