"""Load, leaks and soak, CI size. The full sizes (64 x 2,000 calls, 1,000 connect/close
cycles, a 10-minute soak) run in ``bench/reliability.py --full``, which writes the figures
table in docs/reliability.md; both use ``tests/faults/workloads.py``.

Every figure is printed (``pytest -s`` shows them) and checked: zero lost, zero mismatched,
threads, descriptors and child processes back to where they were, RSS flat.
"""

from __future__ import annotations

import os
from typing import Iterator

import pytest

from ..faults import workloads
from ..faults.workloads import HttpServerProcess, describe

THREADS = 64
CALLS = int(os.environ.get("MCP_SYNC_LOAD_CALLS", "200"))
HTTP_CALLS = int(os.environ.get("MCP_SYNC_LOAD_HTTP_CALLS", "60"))
STDIO_CYCLES = int(os.environ.get("MCP_SYNC_STDIO_CYCLES", "200"))
HTTP_CYCLES = int(os.environ.get("MCP_SYNC_HTTP_CYCLES", "300"))
SOAK_SECONDS = float(os.environ.get("MCP_SYNC_SOAK_SECONDS", "15"))


@pytest.fixture(scope="module")
def http_json() -> Iterator[HttpServerProcess]:
    with HttpServerProcess("json") as server:
        yield server


def test_stdio_64_threads_on_one_client() -> None:
    client = workloads.stdio_client()
    try:
        result = workloads.hammer(client, THREADS, CALLS, timeout=300)
        print(f"\nstdio load {describe(result)}")
        assert (result.ok, result.lost, result.mismatched) == (result.total, 0, 0), result.errors
        assert len(client._rpc.table) == 0  # type: ignore[union-attr]
    finally:
        client.close()


@pytest.mark.parametrize("reply", ["json", "sse"])
def test_http_64_threads_on_one_client(reply: str) -> None:
    with HttpServerProcess(reply) as server:
        client = workloads.http_client(server.url)
        try:
            result = workloads.hammer(client, THREADS, HTTP_CALLS, timeout=300)
            print(f"\nhttp ({reply}) load {describe(result)}")
            assert (result.ok, result.lost, result.mismatched) == (result.total, 0, 0), (
                result.errors)
            assert len(client._rpc.table) == 0  # type: ignore[union-attr]
        finally:
            client.close()


def test_stdio_connect_close_cycles_leave_nothing_behind() -> None:
    result = workloads.cycle(workloads.stdio_client, STDIO_CYCLES)
    print(f"\nstdio {result.cycles} cycles in {result.seconds:.1f} s: before {result.before}, "
          f"after {result.after}")
    assert result.failures == []
    assert not result.leaked, (result.before, result.after)


def test_http_connect_close_cycles_leave_nothing_behind() -> None:
    with HttpServerProcess("sse") as server:
        result = workloads.cycle(lambda: workloads.http_client(server.url), HTTP_CYCLES)
    print(f"\nhttp {result.cycles} cycles in {result.seconds:.1f} s: before {result.before}, "
          f"after {result.after}")
    assert result.failures == []
    assert not result.leaked, (result.before, result.after)


def test_short_soak_keeps_rss_flat() -> None:
    client = workloads.stdio_client()
    try:
        result = workloads.soak(client, SOAK_SECONDS, threads=8, warmup=3.0, interval=0.5)
    finally:
        client.close()
    print(f"\nsoak {result.seconds:.0f} s: {result.calls} calls, {result.failures} failures, "
          f"RSS {result.samples[0] // 1024}-{max(result.samples) // 1024} MiB, "
          f"growth {result.growth_kib} KiB")
    assert result.failures == 0 and result.calls > 1000
    assert result.growth_kib < 8 * 1024, result.samples
