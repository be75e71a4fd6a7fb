#!/usr/bin/env python
"""stdio benchmark: mcp_sync against a bare pipe loop, a threaded floor and the official SDK.

    python bench/bench_stdio.py            # full run, ~3-4 minutes on a 2-core VM
    python bench/bench_stdio.py --quick    # ~30 s, fewer blocks and runs
    python bench/bench_stdio.py --only seq,thr --blocks 5

Every client talks to the same stdlib-only server (``bench/echo_server.py``). The client
process is pinned to one CPU and the server to another; the clients take turns in
interleaved blocks inside one process (the order rotates every block), and each figure is
quoted as the median over blocks of the per-block ratio to a reference (the bare pipe
loop; for throughput, the SDK) and, for sequential calls and throughput, to the threaded
floor too: the least a design with a reader thread can cost. Absolute figures are printed
too. See bench/README.md.

Writes a Markdown table to stdout and to ``bench/results/latest.md``, and the raw
numbers to ``bench/results/latest.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import gc
import itertools
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
SERVER = BENCH / "echo_server.py"
RESULTS = BENCH / "results"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the mcp_sync of this checkout, installed or not

CLIENT_CPU = 0
SERVER_CPU = 1

# Targets for mcp_sync (printed beside the figures as PASS/MISS).
TARGET_SEQ_P50_RATIO = 1.3       # sequential p50 <= 1.3x the bare loop
TARGET_THROUGHPUT_X_SDK = 3.0    # 8-thread throughput >= 3x the SDK's
TARGET_COLD_MS = 250.0           # cold start < 250 ms
TARGET_RSS_MIB = 35.0            # client peak RSS < 35 MiB
TARGET_10MB_RATIO = 1.5          # 10 MiB echo <= 1.5x the bare loop
TARGET_IMPORT_MS = 200.0         # import mcp_sync < 200 ms
# Issue #14: next to the threaded floor and the bare loop's cold start.
TARGET_SEQ_P50_X_FLOOR = 1.15    # sequential p50 <= 1.15x the threaded floor
TARGET_THROUGHPUT_X_FLOOR = 0.9  # 8-thread throughput >= 0.9x the threaded floor
TARGET_COLD_X_BARE = 2.2         # cold start <= 2.2x the bare loop's cold start
TARGET_RSS_FLOOR_MIB = 25.0      # client peak RSS (connect + 1,000 calls) <= 25 MiB
TARGET_IDLE_THREADS = {"stdio": 3, "http": 1}  # mcp-sync threads of an idle client

BARE, FLOOR, SYNC, SDK, SDK_THREAD = "bare", "floor", "mcp_sync", "sdk", "sdk_thread"
LABELS = {
    BARE: "bare pipe loop",
    FLOOR: "threaded floor",
    SYNC: "mcp_sync",
    SDK: "SDK (asyncio)",
    SDK_THREAD: "SDK (blocking, loop thread)",
}
CLIENTS = (BARE, FLOOR, SYNC, SDK, SDK_THREAD)
# Always run when they can: the others are measured against them.
REFERENCES = (BARE, FLOOR)
# The sections each client takes part in (the floor is a reference for sequential calls
# and throughput only).
# Information beside the cold-start and RSS figures, not a client: the bare loop that also
# imports pydantic and validates each result with a two-field model, the least any
# pydantic-based client pays (see PYDANTIC_FLOOR_SNIPPETS).
PYDANTIC_FLOOR = "pydantic_floor"
SECTION_CLIENTS = {"seq": CLIENTS, "thr": CLIENTS,
                   **{s: tuple(c for c in CLIENTS if c != FLOOR)
                      for s in ("payload", "cold", "rss", "import", "threads")}}

PAYLOAD_SIZES = {"1 KiB": 1 << 10, "1 MiB": 1 << 20, "10 MiB": 10 << 20}

# Set by main(): extra server arguments (the CPU pin).
SERVER_ARGS: List[str] = []


def server_argv() -> List[str]:
    return [sys.executable, str(SERVER), *SERVER_ARGS]


def make_text(size: int) -> str:
    """A deterministic ASCII payload of ``size`` characters (nothing for JSON to escape)."""
    unit = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return (unit * (size // len(unit) + 1))[:size]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------
# Clients. Each has start(), call(text) -> text (blocking), seq(texts) -> latencies (ns),
# concurrent(workers, per_worker) -> seconds, close().
# ---------------------------------------------------------------------------------------


class BareClient:
    """The limit: write a line, read a line, json.loads, match the id. One thread."""

    name = BARE

    def start(self) -> None:
        self.proc = subprocess.Popen(
            server_argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=1 << 16
        )
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        self.next_id = 0
        self._rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "bare", "version": "0"}})
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self._rpc("tools/list", {})

    def _send(self, message: Dict[str, Any]) -> None:
        self.stdin.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        self.stdin.flush()

    def _rpc(self, method: str, params: Dict[str, Any]) -> Any:
        self.next_id += 1
        request_id = self.next_id
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        while True:
            message = json.loads(self.stdout.readline())
            if message.get("id") == request_id:
                return message["result"]

    def call(self, text: str) -> str:
        result = self._rpc("tools/call", {"name": "echo", "arguments": {"text": text}})
        return result["content"][0]["text"]  # type: ignore[no-any-return]

    def seq(self, texts: Sequence[str]) -> List[int]:
        return _timed_loop(self.call, texts)

    def pipelined(self, in_flight: int, total: int) -> float:
        """Keep ``in_flight`` requests outstanding from one thread (informative limit)."""
        start = time.perf_counter()
        done = 0
        while done < total:
            batch = min(in_flight, total - done)
            ids = []
            chunks = []
            for k in range(batch):
                self.next_id += 1
                ids.append(self.next_id)
                chunks.append(json.dumps(
                    {"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                     "params": {"name": "echo", "arguments": {"text": f"p{k}"}}},
                    separators=(",", ":")).encode() + b"\n")
            self.stdin.write(b"".join(chunks))
            self.stdin.flush()
            pending = set(ids)
            while pending:
                message = json.loads(self.stdout.readline())
                pending.discard(message.get("id"))
            done += batch
        return time.perf_counter() - start

    def close(self) -> None:
        self.stdin.close()
        self.proc.wait(10)
        self.stdout.close()


class _Waiter:
    """One request's slot: a lock held until the reader thread drops the response in."""

    __slots__ = ("lock", "message")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.lock.acquire()
        self.message: Any = None


class FloorClient:
    """The threaded floor: the least a design with a reader thread can cost.

    One reader thread reads lines from the server's stdout, parses them and hands each
    response to the waiter of its id; the caller writes its request (under a lock, so
    that threads can share the client) and blocks on that waiter. No MCP types, no
    dispatcher, no deadlines beyond the caller's bounded wait.
    """

    name = FLOOR

    def start(self) -> None:
        self.proc = subprocess.Popen(
            server_argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=1 << 16
        )
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        self.ids = itertools.count(1)
        self.waiting: Dict[int, _Waiter] = {}
        self.write_lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, name="floor-reader", daemon=True)
        self.reader.start()
        self._rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "floor", "version": "0"}})
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self._rpc("tools/list", {})

    def _read(self) -> None:
        for line in self.stdout:
            message = json.loads(line)
            waiter = self.waiting.pop(message.get("id"), None)
            if waiter is not None:
                waiter.message = message
                waiter.lock.release()

    def _send(self, message: Dict[str, Any]) -> None:
        data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        with self.write_lock:
            self.stdin.write(data)
            self.stdin.flush()

    def _rpc(self, method: str, params: Dict[str, Any]) -> Any:
        request_id = next(self.ids)
        waiter = self.waiting[request_id] = _Waiter()
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        if not waiter.lock.acquire(timeout=60):
            raise TimeoutError(f"no response to {method} #{request_id} within 60 s")
        return waiter.message["result"]

    def call(self, text: str) -> str:
        result = self._rpc("tools/call", {"name": "echo", "arguments": {"text": text}})
        return result["content"][0]["text"]  # type: ignore[no-any-return]

    def seq(self, texts: Sequence[str]) -> List[int]:
        return _timed_loop(self.call, texts)

    def concurrent(self, workers: int, per_worker: int) -> float:
        return _threaded(self.call, workers, per_worker)

    def close(self) -> None:
        self.stdin.close()
        self.proc.wait(10)
        self.reader.join(10)
        self.stdout.close()


class SyncClient:
    """mcp_sync: one Client; ``concurrent`` shares it between threads."""

    name = SYNC

    def start(self) -> None:
        import mcp_sync

        self.client = mcp_sync.connect(server_argv())
        self.client.list_tools()

    def call(self, text: str) -> str:
        return self.client.call_tool("echo", {"text": text}).text  # type: ignore[no-any-return]

    def seq(self, texts: Sequence[str]) -> List[int]:
        return _timed_loop(self.call, texts)

    def concurrent(self, workers: int, per_worker: int) -> float:
        return _threaded(self.call, workers, per_worker)

    def close(self) -> None:
        self.client.close()


class _SdkBase:
    """The official SDK's ClientSession over its stdio_client, owned by one task."""

    loop: asyncio.AbstractEventLoop

    async def _own(self, ready: Callable[[Optional[BaseException]], None]) -> None:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        argv = server_argv()
        params = StdioServerParameters(command=argv[0], args=argv[1:])
        self._stop = asyncio.Event()
        try:
            async with stdio_client(params) as (read, write), ClientSession(
                read, write
            ) as session:
                await session.initialize()
                await session.list_tools()  # call_tool would list once itself anyway
                self.session = session
                ready(None)
                await self._stop.wait()
        except BaseException as exc:  # handed to the waiting thread; re-raised
            ready(exc)
            raise

    async def _call(self, text: str) -> str:
        result = await self.session.call_tool("echo", {"text": text})
        return result.content[0].text  # type: ignore[no-any-return,union-attr]


class SdkClient(_SdkBase):
    """The SDK natively async: the calls are awaited on a loop run by this thread.

    One event loop lives for the whole benchmark; each block is one
    ``loop.run_until_complete(...)``, which is what ``asyncio.run`` around a
    ClientSession loop does, minus reconnecting for every block.
    """

    name = SDK

    def start(self) -> None:
        self.loop = asyncio.new_event_loop()
        ready = self.loop.create_future()

        def on_ready(exc: Optional[BaseException]) -> None:
            if not ready.done():
                ready.set_exception(exc) if exc else ready.set_result(None)

        self.owner = self.loop.create_task(self._own(on_ready))
        self.loop.run_until_complete(ready)

    def call(self, text: str) -> str:
        return self.loop.run_until_complete(self._call(text))

    def seq(self, texts: Sequence[str]) -> List[int]:
        async def run() -> List[int]:
            out = []
            clock = time.perf_counter_ns
            for text in texts:
                t0 = clock()
                got = await self._call(text)
                out.append(clock() - t0)
                if got != text:
                    raise AssertionError("wrong echo")
            return out

        return self.loop.run_until_complete(run())

    def concurrent(self, workers: int, per_worker: int) -> float:
        async def worker(w: int) -> None:
            for i in range(per_worker):
                text = f"w{w}-{i}"
                if await self._call(text) != text:
                    raise AssertionError("wrong echo")

        async def run() -> float:
            start = time.perf_counter()
            await asyncio.gather(*(worker(w) for w in range(workers)))
            return time.perf_counter() - start

        return self.loop.run_until_complete(run())

    def close(self) -> None:
        self.loop.call_soon(self._stop.set)
        self.loop.run_until_complete(self.owner)
        self.loop.close()


class SdkThreadClient(_SdkBase):
    """The SDK driven from blocking code: one event-loop thread, and every call is
    ``asyncio.run_coroutine_threadsafe(session.call_tool(...), loop).result()``."""

    name = SDK_THREAD

    def start(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="sdk-loop",
                                       daemon=True)
        self.thread.start()
        event = threading.Event()
        errors: List[BaseException] = []

        def on_ready(exc: Optional[BaseException]) -> None:
            if exc is not None:
                errors.append(exc)
            event.set()

        self.owner = asyncio.run_coroutine_threadsafe(self._own(on_ready), self.loop)
        event.wait(60)
        if errors:
            raise errors[0]

    def call(self, text: str) -> str:
        return asyncio.run_coroutine_threadsafe(self._call(text), self.loop).result()

    def seq(self, texts: Sequence[str]) -> List[int]:
        return _timed_loop(self.call, texts)

    def concurrent(self, workers: int, per_worker: int) -> float:
        return _threaded(self.call, workers, per_worker)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self._stop.set)
        try:
            self.owner.result(30)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            self.loop.close()


CLIENT_CLASSES = {BARE: BareClient, FLOOR: FloorClient, SYNC: SyncClient, SDK: SdkClient,
                  SDK_THREAD: SdkThreadClient}


def _timed_loop(call: Callable[[str], str], texts: Sequence[str]) -> List[int]:
    out = []
    clock = time.perf_counter_ns
    for text in texts:
        t0 = clock()
        got = call(text)
        out.append(clock() - t0)
        if got != text:
            raise AssertionError("wrong echo")
    return out


def _threaded(call: Callable[[str], str], workers: int, per_worker: int) -> float:
    barrier = threading.Barrier(workers + 1)
    errors: List[BaseException] = []

    def work(w: int) -> None:
        barrier.wait()
        try:
            for i in range(per_worker):
                text = f"w{w}-{i}"
                if call(text) != text:
                    raise AssertionError("wrong echo")
        except BaseException as exc:  # noqa: BLE001 - re-raised by the main thread below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(workers)]
    for thread in threads:
        thread.start()
    barrier.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise errors[0]
    return elapsed


# ---------------------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------------------


def quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    pos = q * (len(ordered) - 1)
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def rotate(items: Sequence[str], block: int) -> List[str]:
    k = block % len(items)
    return list(items[k:]) + list(items[:k])


def ratio_summary(ratios: Sequence[float]) -> Dict[str, float]:
    return {"median": median(ratios), "min": min(ratios), "max": max(ratios)}


class NoiseMeter:
    """How busy the machine was with *other* processes while a section ran.

    Linux only: total busy CPU time from /proc/stat, minus this process and its
    descendants (the servers, and their own children). Reported in CPUs (0.5 = half a
    core busy with something else) plus the hypervisor's steal time, so a noisy run can
    be told from a slow client.
    """

    def __init__(self) -> None:
        self.tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self.start = self._snapshot()
        self.wall = time.perf_counter()

    def _snapshot(self) -> Optional[List[float]]:
        try:
            with open("/proc/stat") as f:
                vals = [int(v) for v in f.readline().split()[1:]]
            busy = vals[0] + vals[1] + vals[2] + vals[5] + vals[6]
            steal = vals[7] if len(vals) > 7 else 0
            # This process and its descendants (servers, and what they start: a Celery
            # worker's pool processes and their servers).
            cpu: Dict[int, int] = {}
            kids: Dict[int, List[int]] = {}
            for entry in os.listdir("/proc"):
                if not entry.isdigit():
                    continue
                try:
                    with open(f"/proc/{entry}/stat") as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                cpu[int(entry)] = int(fields[11]) + int(fields[12])  # utime + stime
                kids.setdefault(int(fields[1]), []).append(int(entry))  # fields[1]: ppid
            ours = 0
            tree = [os.getpid()]
            while tree:
                pid = tree.pop()
                ours += cpu.get(pid, 0)
                tree += kids.get(pid, [])
            # Children that ran and were reaped in between (cold-start runs and, through
            # them, their servers) count too.
            import resource

            reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
            ours += (reaped.ru_utime + reaped.ru_stime) * self.tick
            return [busy, steal, ours]
        except (OSError, ValueError, IndexError):
            return None

    def stop(self) -> Optional[Dict[str, float]]:
        end = self._snapshot()
        wall = time.perf_counter() - self.wall
        if self.start is None or end is None or wall <= 0:
            return None
        d_busy, d_steal, d_ours = (b - a for a, b in zip(self.start, end))
        return {"foreign_cpus": max(0.0, (d_busy - d_ours) / self.tick / wall),
                "steal_cpus": d_steal / self.tick / wall, "seconds": wall}


# ---------------------------------------------------------------------------------------
# In-process sections: the clients stay connected; blocks interleave them.
# ---------------------------------------------------------------------------------------


def section_sequential(clients: Dict[str, Any], blocks: int, calls: int) -> Dict[str, Any]:
    names = list(clients)
    texts = [f"hello {i}" for i in range(calls)]
    per_block: Dict[str, List[Dict[str, float]]] = {n: [] for n in names}
    samples: Dict[str, List[int]] = {n: [] for n in names}
    for block in range(blocks):
        for name in rotate(names, block):
            gc.collect()
            cpu0 = time.process_time()
            lat = clients[name].seq(texts)
            cpu = (time.process_time() - cpu0) / len(texts)
            samples[name].extend(lat)
            per_block[name].append({"p50": quantile(lat, 0.5), "p99": quantile(lat, 0.99),
                                    "cpu_us": cpu * 1e6})
        log(f"  sequential block {block + 1}/{blocks}: " + ", ".join(
            f"{n} p50 {per_block[n][-1]['p50'] / 1e3:.0f} us" for n in names))
    out: Dict[str, Any] = {}
    for name in names:
        r50 = [b["p50"] / base["p50"] for b, base in zip(per_block[name], per_block[BARE])]
        r99 = [b["p99"] / base["p99"] for b, base in zip(per_block[name], per_block[BARE])]
        out[name] = {
            "p50_us": quantile(samples[name], 0.5) / 1e3,
            "p99_us": quantile(samples[name], 0.99) / 1e3,
            "mean_us": statistics.fmean(samples[name]) / 1e3,
            "ratio_p50": ratio_summary(r50),
            "ratio_p99": ratio_summary(r99),
            "cpu_us_per_call": median([b["cpu_us"] for b in per_block[name]]),
            "blocks": per_block[name],
        }
        if FLOOR in per_block and name not in REFERENCES:
            out[name]["ratio_p50_floor"] = ratio_summary(
                [b["p50"] / base["p50"] for b, base in zip(per_block[name], per_block[FLOOR])])
    return out


def section_throughput(clients: Dict[str, Any], blocks: int, workers: int,
                       per_worker: int) -> Dict[str, Any]:
    names = [n for n in clients if n != BARE] + ([BARE] if BARE in clients else [])
    total = workers * per_worker
    rates: Dict[str, List[float]] = {n: [] for n in names}
    cpus: Dict[str, List[float]] = {n: [] for n in names}
    for block in range(blocks):
        for name in rotate(names, block):
            gc.collect()
            cpu0 = time.process_time()
            if name == BARE:
                elapsed = clients[BARE].pipelined(workers, total)
            else:
                elapsed = clients[name].concurrent(workers, per_worker)
            cpus[name].append((time.process_time() - cpu0) / total * 1e6)
            rates[name].append(total / elapsed)
        log(f"  throughput block {block + 1}/{blocks}: " + ", ".join(
            f"{n} {rates[n][-1]:.0f}/s" for n in names))
    out: Dict[str, Any] = {}
    ref = SDK if SDK in rates else None
    for name in names:
        entry: Dict[str, Any] = {"calls_per_s": median(rates[name]), "blocks": rates[name],
                                 "cpu_us_per_call": median(cpus[name])}
        if ref is not None:
            entry["x_sdk"] = ratio_summary([a / b for a, b in zip(rates[name], rates[ref])])
        if FLOOR in rates and name not in REFERENCES:
            entry["x_floor"] = ratio_summary([a / b for a, b in zip(rates[name], rates[FLOOR])])
        out[name] = entry
    out["_meta"] = {"workers": workers, "calls_per_block": total}
    return out


def section_payload(clients: Dict[str, Any], blocks: int,
                    calls: Dict[str, int]) -> Dict[str, Any]:
    names = list(clients)
    out: Dict[str, Any] = {}
    for label, size in PAYLOAD_SIZES.items():
        text = make_text(size)
        texts = [text] * calls[label]
        meds: Dict[str, List[float]] = {n: [] for n in names}
        for block in range(blocks):
            for name in rotate(names, block):
                gc.collect()
                meds[name].append(median(clients[name].seq(texts)))
        log(f"  payload {label}: " + ", ".join(
            f"{n} {median(meds[n]) / 1e6:.2f} ms" for n in names))
        section: Dict[str, Any] = {}
        for name in names:
            ratios = [m / b for m, b in zip(meds[name], meds[BARE])]
            section[name] = {"median_ms": median(meds[name]) / 1e6,
                             "ratio": ratio_summary(ratios),
                             "blocks_ms": [m / 1e6 for m in meds[name]]}
        section["_meta"] = {"bytes": size, "calls_per_block": calls[label], "blocks": blocks}
        out[label] = section
    return out


# ---------------------------------------------------------------------------------------
# Subprocess sections: cold start, peak RSS, import time.
# ---------------------------------------------------------------------------------------

_PRELUDE = "import sys\nSERVER = {argv!r}\n"

COLD_SNIPPETS = {
    BARE: """
import json, subprocess
p = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def rpc(i, method, params):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method,
                              "params": params}).encode() + b"\\n")
    p.stdin.flush()
    while True:
        m = json.loads(p.stdout.readline())
        if m.get("id") == i:
            return m["result"]
rpc(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                      "clientInfo": {"name": "bare", "version": "0"}})
p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\\n')
r = rpc(2, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
assert r["content"][0]["text"] == "hi"
print("ok", flush=True)
p.stdin.close(); p.wait()
""",
    SYNC: """
import mcp_sync
client = mcp_sync.connect(SERVER)
assert client.call_tool("echo", {"text": "hi"}).text == "hi"
print("ok", flush=True)
client.close()
""",
    SDK: """
import asyncio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
async def main():
    params = StdioServerParameters(command=SERVER[0], args=SERVER[1:])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            r = await session.call_tool("echo", {"text": "hi"})
            assert r.content[0].text == "hi"
            print("ok", flush=True)
asyncio.run(main())
""",
    SDK_THREAD: """
import asyncio, threading
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
loop = asyncio.new_event_loop()
threading.Thread(target=loop.run_forever, daemon=True).start()
ready, stop = threading.Event(), None
holder = {}
async def own():
    global stop
    stop = asyncio.Event()
    params = StdioServerParameters(command=SERVER[0], args=SERVER[1:])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            holder["s"] = session
            ready.set()
            await stop.wait()
owner = asyncio.run_coroutine_threadsafe(own(), loop)
ready.wait(60)
r = asyncio.run_coroutine_threadsafe(holder["s"].call_tool("echo", {"text": "hi"}), loop).result()
assert r.content[0].text == "hi"
print("ok", flush=True)
loop.call_soon_threadsafe(stop.set); owner.result(30)
""",
}

# Peak RSS: connect, then 1000 calls (each snippet defines connect/call/close as it must).
RSS_SNIPPETS = {
    BARE: COLD_SNIPPETS[BARE].split("\nprint(")[0] + """
for i in range(N):
    assert rpc(3 + i, "tools/call", {"name": "echo", "arguments": {"text": f"hi {i}"}})
""",
    SYNC: """
import mcp_sync
client = mcp_sync.connect(SERVER)
client.list_tools()
for i in range(N):
    assert client.call_tool("echo", {"text": f"hi {i}"}).text == f"hi {i}"
client.close()
""",
    SDK: """
import asyncio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
async def main():
    params = StdioServerParameters(command=SERVER[0], args=SERVER[1:])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for i in range(N):
                r = await session.call_tool("echo", {"text": f"hi {i}"})
                assert r.content[0].text == f"hi {i}"
asyncio.run(main())
""",
    SDK_THREAD: COLD_SNIPPETS[SDK_THREAD].split("\nr = asyncio")[0] + """
for i in range(N):
    r = asyncio.run_coroutine_threadsafe(
        holder["s"].call_tool("echo", {"text": f"hi {i}"}), loop).result()
    assert r.content[0].text == f"hi {i}"
loop.call_soon_threadsafe(stop.set); owner.result(30)
""",
}

# The pydantic floor: the bare loop, plus pydantic imported (once the server is spawning,
# as a lazy client does) and every tools/call result validated with a small model.
_PYDANTIC_MODELS = """
from typing import List
from pydantic import BaseModel
class Text(BaseModel):
    type: str
    text: str
class Result(BaseModel):
    content: List[Text]
"""
_BARE_CALL = """r = rpc(2, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
assert r["content"][0]["text"] == "hi"
"""
_BARE_RSS_CALL = ('    assert rpc(3 + i, "tools/call", '
                  '{"name": "echo", "arguments": {"text": f"hi {i}"}})\n')
_SPAWN = "p = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE)\n"
assert _BARE_CALL in COLD_SNIPPETS[BARE] and _BARE_RSS_CALL in RSS_SNIPPETS[BARE]
PYDANTIC_FLOOR_SNIPPETS = {
    "cold": COLD_SNIPPETS[BARE].replace(_SPAWN, _SPAWN + _PYDANTIC_MODELS).replace(
        _BARE_CALL, """r = Result.model_validate(
    rpc(2, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}))
assert r.content[0].text == "hi"
"""),
    "rss": RSS_SNIPPETS[BARE].replace(_SPAWN, _SPAWN + _PYDANTIC_MODELS).replace(
        _BARE_CALL, """r = Result.model_validate(
    rpc(2, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}))
assert r.content[0].text == "hi"
""").replace(_BARE_RSS_CALL, """    r = Result.model_validate(
        rpc(3 + i, "tools/call", {"name": "echo", "arguments": {"text": f"hi {i}"}}))
    assert r.content[0].text == f"hi {i}"
"""),
}

_RSS_EPILOGUE = """
import json, re, resource
try:
    with open("/proc/self/status") as f:
        hwm = int(re.search(r"VmHWM:\\s+(\\d+)", f.read()).group(1))
except (OSError, AttributeError):
    hwm = None
print(json.dumps({"maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "vmhwm_kib": hwm,
                  "modules": {m: m in sys.modules for m in MODULES}}), flush=True)
"""

# Linux keeps a process's ru_maxrss across execve, and subprocess starts children with
# vfork, so a child spawned straight from this (large) process would report this
# process's peak. A child forked by a small shell starts afresh. ("$@"; exit: dash must
# fork rather than exec the last command.)
_FRESH_RSS = ["/bin/sh", "-c", '"$@"; exit $?', "sh"] if os.path.exists("/bin/sh") else []

WATCHED_MODULES = ("requests", "pydantic", "urllib3", "mcp_sync.types",
                   "mcp_sync.transports.http", "asyncio", "anyio")


def child_env() -> Dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    env.pop("PYTHONSTARTUP", None)
    return env


def run_python(code: str, *, timeout: float = 120, prefix: Sequence[str] = (),
               args: Sequence[str] = ()) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    return subprocess.run([*prefix, sys.executable, "-c", code, *args], capture_output=True,
                          text=True, env=child_env(), cwd=str(ROOT), timeout=timeout)


def time_to_ok(code: str) -> Dict[str, float]:
    """Wall time from spawning ``python -c code`` to its "ok" line, and to its exit."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=child_env(), cwd=str(ROOT))
    assert proc.stdout is not None
    line = proc.stdout.readline()
    first = time.perf_counter() - start
    _, err = proc.communicate(timeout=60)
    total = time.perf_counter() - start
    if line.strip() != b"ok" or proc.returncode != 0:
        raise RuntimeError(f"cold-start child failed ({proc.returncode}): {err.decode()[-2000:]}")
    return {"first_result_ms": first * 1e3, "exit_ms": total * 1e3}


def section_cold(names: Sequence[str], runs: int) -> Dict[str, Any]:
    prelude = _PRELUDE.format(argv=server_argv())
    codes = {n: prelude + COLD_SNIPPETS[n] for n in names}
    codes[PYDANTIC_FLOOR] = prelude + PYDANTIC_FLOOR_SNIPPETS["cold"]
    codes["python -c pass"] = "pass"
    order = list(codes)
    for name in order:  # warm the page cache and the .pyc files
        time_to_ok(codes[name] + ("\nprint('ok')" if name == "python -c pass" else ""))
    times: Dict[str, List[Dict[str, float]]] = {n: [] for n in order}
    for run in range(runs):
        for name in rotate(order, run):
            code = codes[name] + ("\nprint('ok')" if name == "python -c pass" else "")
            times[name].append(time_to_ok(code))
    out: Dict[str, Any] = {}
    for name in order:
        first = [t["first_result_ms"] for t in times[name]]
        out[name] = {"median_ms": median(first), "min_ms": min(first), "max_ms": max(first),
                     "exit_median_ms": median([t["exit_ms"] for t in times[name]])}
    for name in names:
        out[name]["ratio"] = (out[name]["median_ms"] / out[BARE]["median_ms"]
                              if BARE in out else None)
        if BARE in out:  # paired: the same run of the rotation
            out[name]["ratio_per_run"] = ratio_summary([
                t["first_result_ms"] / b["first_result_ms"]
                for t, b in zip(times[name], times[BARE])])
    for name in names:  # information: how far above what pydantic alone costs
        out[name]["ratio_pydantic_floor_per_run"] = ratio_summary([
            t["first_result_ms"] / f["first_result_ms"]
            for t, f in zip(times[name], times[PYDANTIC_FLOOR])])
    if BARE in out:
        out[PYDANTIC_FLOOR]["ratio_per_run"] = ratio_summary([
            f["first_result_ms"] / b["first_result_ms"]
            for f, b in zip(times[PYDANTIC_FLOOR], times[BARE])])
    log("  cold start: " + ", ".join(f"{n} {out[n]['median_ms']:.0f} ms" for n in order))
    return out


def section_rss(names: Sequence[str], runs: int, calls: int) -> Dict[str, Any]:
    prelude = _PRELUDE.format(argv=server_argv()) + f"N = {calls}\nMODULES = {WATCHED_MODULES!r}\n"
    out: Dict[str, Any] = {}
    snippets = {**{n: RSS_SNIPPETS[n] for n in names},
                PYDANTIC_FLOOR: PYDANTIC_FLOOR_SNIPPETS["rss"]}
    for name, snippet in snippets.items():
        values = []
        hwms = []
        modules: Dict[str, bool] = {}
        for _ in range(runs):
            proc = run_python(prelude + snippet + _RSS_EPILOGUE, prefix=_FRESH_RSS)
            if proc.returncode != 0:
                raise RuntimeError(f"RSS child {name} failed: {proc.stderr[-2000:]}")
            data = json.loads(proc.stdout.strip().splitlines()[-1])
            values.append(data["maxrss_kib"] / 1024)
            if data.get("vmhwm_kib"):
                hwms.append(data["vmhwm_kib"] / 1024)
            modules = data["modules"]
        out[name] = {"mib": median(values), "runs_mib": values,
                     "vmhwm_mib": median(hwms) if hwms else None, "modules": modules}
    log("  peak RSS: " + ", ".join(f"{n} {out[n]['mib']:.1f} MiB" for n in snippets))
    return out


_IMPORT_LINE = re.compile(r"^import time:\s*(\d+)\s*\|\s*(\d+)\s*\|(\s*)(\S+)\s*$")


def importtime_ms(module: str) -> float:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"],
                          capture_output=True, text=True, env=child_env(), cwd=str(ROOT),
                          timeout=60)
    if proc.returncode != 0:
        raise RuntimeError(f"import {module} failed: {proc.stderr[-2000:]}")
    for line in proc.stderr.splitlines():
        match = _IMPORT_LINE.match(line)
        if match and match.group(4) == module and len(match.group(3)) == 1:
            return int(match.group(2)) / 1e3
    raise RuntimeError(f"no importtime line for {module}")


def wall_ms(code: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, env=child_env(),
                          cwd=str(ROOT), timeout=60)
    elapsed = (time.perf_counter() - start) * 1e3
    if proc.returncode != 0:
        raise RuntimeError(f"{code!r} failed: {proc.stderr.decode()[-2000:]}")
    return elapsed


def section_import(runs: int, with_sdk: bool) -> Dict[str, Any]:
    modules = ["mcp_sync"] + (["mcp"] if with_sdk else [])
    out: Dict[str, Any] = {}
    for module in modules:
        importtime_ms(module)  # warm .pyc and page cache
        n = runs if module == "mcp_sync" else max(3, runs // 3)  # the SDK's is only context
        cumulative = [importtime_ms(module) for _ in range(n)]
        walls = []
        bases = []
        for _ in range(n):
            bases.append(wall_ms("pass"))
            walls.append(wall_ms(f"import {module}"))
        out[module] = {"importtime_ms": median(cumulative),
                       "wall_ms": median(walls),
                       "wall_minus_bare_python_ms": median(walls) - median(bases)}
    probe = ("import json, sys, mcp_sync\n"
             f"print(json.dumps({{m: m in sys.modules for m in {WATCHED_MODULES!r}}}))")
    proc = run_python(probe)
    out["modules_after_import"] = json.loads(proc.stdout.strip().splitlines()[-1])
    log("  import: " + ", ".join(f"{m} {out[m]['importtime_ms']:.0f} ms" for m in modules))
    return out


# Threads of an idle client: connect, one call, the names of the mcp-sync threads alive in
# the process; then again after IDLE seconds without a call.
_THREADS_SNIPPET = """
import json, threading, time
import mcp_sync
def ours():
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("mcp-sync"))
client = mcp_sync.connect(TARGET)
assert client.call_tool("echo", {"text": "hi"}).text == "hi"
print(json.dumps(ours()), flush=True)
time.sleep(IDLE)  # the measurement is "after IDLE seconds idle": nothing to wait for
print(json.dumps(ours()), flush=True)
client.close()
"""


def start_http_server() -> Tuple[subprocess.Popen, str]:  # type: ignore[type-arg]
    """``echo_server.py --http 0`` on the server CPU; the process and its URL."""
    proc = subprocess.Popen([*server_argv(), "--http", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url.startswith("http://"):
        proc.kill()
        proc.wait(10)
        raise RuntimeError(f"the HTTP echo server printed {url!r} instead of its URL")
    return proc, url


class ThreadsProbe:
    """mcp-sync threads of an idle stdio client and an idle Streamable HTTP client.

    Each in a fresh process (so that no other client's threads count), both at once; the
    HTTP one talks to ``echo_server.py --http``. The constructor returns once both have
    connected, made their call and counted their threads; then they only wait, so the
    benchmark runs its subprocess sections meanwhile, and :meth:`finish` collects the
    counts taken ``idle`` seconds after the call.
    """

    KINDS = ("stdio", "http")

    def __init__(self, idle: float) -> None:
        self.idle = idle
        self.server, url = start_http_server()
        self.children: Dict[str, subprocess.Popen] = {}  # type: ignore[type-arg]
        self.after_call: Dict[str, List[str]] = {}
        try:
            for kind, target in zip(self.KINDS, (server_argv(), url)):
                self.children[kind] = subprocess.Popen(
                    [sys.executable, "-c", f"TARGET = {target!r}\nIDLE = {idle!r}\n"
                     + _THREADS_SNIPPET],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                    env=child_env(), cwd=str(ROOT))
            for kind, child in self.children.items():
                assert child.stdout is not None
                self.after_call[kind] = self._names(kind, child.stdout.readline())
        except BaseException:
            self.kill()
            raise
        self.started = time.monotonic()

    def _names(self, kind: str, line: str) -> List[str]:
        if not line.strip():  # the child failed: EOF
            child = self.children[kind]
            child.kill()
            _, stderr = child.communicate(timeout=30)
            raise RuntimeError(f"threads child ({kind}) failed: {stderr[-2000:]}")
        return json.loads(line)  # type: ignore[no-any-return]

    def finish(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        try:
            for kind, child in self.children.items():
                left = self.idle - (time.monotonic() - self.started)
                stdout, stderr = child.communicate(timeout=max(0.0, left) + 120)
                if child.returncode != 0:
                    raise RuntimeError(f"threads child ({kind}) failed: {stderr[-2000:]}")
                idle = self._names(kind, stdout)
                after = self.after_call[kind]
                out[kind] = {"idle": len(idle), "after_call": len(after),
                             "idle_names": idle, "after_call_names": after}
        finally:
            self.kill()
        out["_meta"] = {"idle_wait_s": self.idle}
        log("  idle threads: " + ", ".join(
            f"{k} {out[k]['idle']} ({', '.join(out[k]['idle_names'])})" for k in self.KINDS))
        return out

    def kill(self) -> None:
        for child in self.children.values():
            if child.poll() is None:
                child.kill()
                child.communicate(timeout=30)
        if self.server.poll() is None:
            self.server.kill()
        self.server.wait(10)


# ---------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------


def verdict(ok: Optional[bool]) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "MISS")


def fmt_ratio(summary: Optional[Dict[str, float]], suffix: str = "x") -> str:
    if not summary:
        return ""
    return f"{summary['median']:.2f}{suffix}"


def render(results: Dict[str, Any]) -> str:
    meta = results["meta"]
    names = [n for n in CLIENTS if n in meta["clients"]]
    lines = [
        "# mcp_sync stdio benchmark",
        "",
        f"{meta['date']} · Python {meta['python']} · {meta['cpu']} · {meta['nproc']} CPUs · "
        f"mcp {meta['mcp_version']} · mcp_sync {meta['mcp_sync_version']} "
        f"({meta['git']}) · pinning: {meta['pinning']}",
        "",
        "Ratios are medians of per-block ratios (blocks interleave the clients in rotating "
        "order); absolute figures are over all blocks. Lower is better except throughput.",
        "",
        "| metric | " + " | ".join(LABELS[n] for n in names) + " |",
        "| --- | " + " | ".join("---:" for _ in names) + " |",
    ]

    def row(metric: str, cells: Dict[str, str]) -> None:
        lines.append(f"| {metric} | " + " | ".join(cells.get(n, "") for n in names) + " |")

    seq = results.get("sequential")
    if seq:
        row("sequential tools/call p50", {
            n: f"{seq[n]['p50_us']:.0f} µs ({fmt_ratio(seq[n]['ratio_p50'])}"
               + (f"; {fmt_ratio(seq[n]['ratio_p50_floor'])} floor"
                  if "ratio_p50_floor" in seq[n] else "") + ")" for n in seq})
        row("sequential tools/call p99", {
            n: f"{seq[n]['p99_us']:.0f} µs ({fmt_ratio(seq[n]['ratio_p99'])})" for n in seq})
        row("client CPU per sequential call", {
            n: f"{seq[n]['cpu_us_per_call']:.0f} µs" for n in seq})
    thr = results.get("throughput")
    if thr:
        cells = {}
        for n in names:
            if n not in thr:
                continue
            x = thr[n].get("x_sdk")
            ratios = ([f"{fmt_ratio(x)} SDK"] if x else []) + (
                [f"{fmt_ratio(thr[n]['x_floor'])} floor"] if "x_floor" in thr[n] else [])
            extra = f" ({'; '.join(ratios)})" if ratios else ""
            if n == BARE:
                extra += " ¹"
            cells[n] = f"{thr[n]['calls_per_s']:.0f}/s{extra}"
        row(f"{thr['_meta']['workers']}-way concurrent throughput", cells)
        row(f"client CPU per call, {thr['_meta']['workers']}-way", {
            n: f"{thr[n]['cpu_us_per_call']:.0f} µs" for n in names if n in thr})
    cold = results.get("cold_start")
    if cold:
        row("cold start to first result", {
            n: f"{cold[n]['median_ms']:.0f} ms ({cold[n]['ratio']:.2f}x)" for n in names
            if n in cold})
    rss = results.get("rss")
    if rss:
        row(f"peak RSS, connect + {meta['config']['rss_calls']} calls",
            {n: f"{rss[n]['mib']:.1f} MiB" for n in rss})
    payload = results.get("payload")
    if payload:
        for label, section in payload.items():
            row(f"echo {label}", {
                n: f"{section[n]['median_ms']:.2f} ms ({fmt_ratio(section[n]['ratio'])})"
                for n in names if n in section})
    imp = results.get("import")
    if imp:
        row("import time (-X importtime)", {
            SYNC: f"{imp['mcp_sync']['importtime_ms']:.0f} ms",
            **({SDK: f"{imp['mcp']['importtime_ms']:.0f} ms (import mcp)"} if "mcp" in imp
               else {})})
    threads = results.get("threads")
    if threads:
        row("mcp-sync threads, idle client", {
            SYNC: f"stdio {threads['stdio']['idle']}, HTTP {threads['http']['idle']}"})
    lines.append("")
    if thr and BARE in thr:
        workers = thr["_meta"]["workers"]
        lines.append("¹ the bare loop cannot share itself between threads: its figure is one "
                     f"thread keeping {workers} requests in flight (write {workers}, read "
                     f"{workers}), the pipe's limit.")
        lines.append("")
    if cold:
        bare_python = cold["python -c pass"]["median_ms"]
        lines.append(f"Cold start of a bare `python -c pass`: {bare_python:.0f} ms "
                     "(included in every cold-start figure).")
        lines.append("")
    lines += pydantic_floor_lines(results)

    # Targets
    lines += ["## mcp_sync targets", "", "| target | measured | verdict |",
              "| --- | ---: | :---: |"]
    for target in results["targets"]:
        lines.append(f"| {target['name']} | {target['measured']} | {target['verdict']} |")
    lines.append("")
    notes = results.get("notes") or []
    if notes:
        lines += ["## Notes", ""] + [f"* {note}" for note in notes] + [""]
    return "\n".join(lines)


def pydantic_floor_lines(results: Dict[str, Any]) -> List[str]:
    """The pydantic floor beside the bare loop and mcp_sync: information, not a target."""
    cold, rss = results.get("cold_start") or {}, results.get("rss") or {}
    rows = []
    if PYDANTIC_FLOOR in cold and BARE in cold and SYNC in cold:
        floor, sync = cold[PYDANTIC_FLOOR], cold[SYNC]
        rows.append(f"| cold start to first result | {cold[BARE]['median_ms']:.0f} ms | "
                    f"{floor['median_ms']:.0f} ms ({floor['ratio_per_run']['median']:.2f}x bare) | "
                    f"{sync['median_ms']:.0f} ms | "
                    f"{sync['ratio_pydantic_floor_per_run']['median']:.2f}x |")
    if PYDANTIC_FLOOR in rss and BARE in rss and SYNC in rss:
        floor_mib, sync_mib = rss[PYDANTIC_FLOOR]["mib"], rss[SYNC]["mib"]
        rows.append(f"| peak RSS, connect + {results['meta']['config']['rss_calls']} calls | "
                    f"{rss[BARE]['mib']:.1f} MiB | {floor_mib:.1f} MiB "
                    f"(+{floor_mib - rss[BARE]['mib']:.1f} MiB) | {sync_mib:.1f} MiB | "
                    f"{sync_mib / floor_mib:.2f}x (+{sync_mib - floor_mib:.1f} MiB) |")
    if not rows:
        return []
    return ["## What pydantic alone costs (information)", "",
            "The pydantic floor is the bare loop that also imports pydantic and validates "
            "each result with a two-field model: the least any pydantic-based client pays. "
            "Cold-start ratios are medians of per-run ratios.", "",
            "| metric | bare pipe loop | pydantic floor | mcp_sync | mcp_sync / floor |",
            "| --- | ---: | ---: | ---: | ---: |", *rows, ""]


def targets(results: Dict[str, Any]) -> List[Dict[str, str]]:
    out = []
    seq = results.get("sequential")
    if seq and SYNC in seq:
        r = seq[SYNC]["ratio_p50"]
        out.append({"name": f"sequential p50 <= {TARGET_SEQ_P50_RATIO}x bare",
                    "measured": f"{r['median']:.2f}x (blocks {r['min']:.2f}-{r['max']:.2f})",
                    "verdict": verdict(r["median"] <= TARGET_SEQ_P50_RATIO)})
    if seq and SYNC in seq and "ratio_p50_floor" in seq[SYNC]:
        r = seq[SYNC]["ratio_p50_floor"]
        out.append({"name": f"sequential p50 <= {TARGET_SEQ_P50_X_FLOOR}x threaded floor",
                    "measured": f"{r['median']:.2f}x (blocks {r['min']:.2f}-{r['max']:.2f})",
                    "verdict": verdict(r["median"] <= TARGET_SEQ_P50_X_FLOOR)})
    thr = results.get("throughput")
    if thr and SYNC in thr and "x_sdk" in thr[SYNC]:
        r = thr[SYNC]["x_sdk"]
        out.append({"name": f"8-thread throughput >= {TARGET_THROUGHPUT_X_SDK:g}x SDK",
                    "measured": f"{r['median']:.2f}x (blocks {r['min']:.2f}-{r['max']:.2f})",
                    "verdict": verdict(r["median"] >= TARGET_THROUGHPUT_X_SDK)})
    if thr and SYNC in thr and "x_floor" in thr[SYNC]:
        r = thr[SYNC]["x_floor"]
        out.append({"name": f"8-thread throughput >= {TARGET_THROUGHPUT_X_FLOOR:g}x threaded floor",
                    "measured": f"{r['median']:.2f}x (blocks {r['min']:.2f}-{r['max']:.2f})",
                    "verdict": verdict(r["median"] >= TARGET_THROUGHPUT_X_FLOOR)})
    cold = results.get("cold_start")
    if cold and SYNC in cold:
        v = cold[SYNC]["median_ms"]
        out.append({"name": f"cold start < {TARGET_COLD_MS:g} ms", "measured": f"{v:.0f} ms",
                    "verdict": verdict(v < TARGET_COLD_MS)})
    if cold and SYNC in cold and "ratio_per_run" in cold[SYNC]:
        r = cold[SYNC]["ratio_per_run"]
        out.append({"name": f"cold start <= {TARGET_COLD_X_BARE:g}x the bare loop's",
                    "measured": f"{r['median']:.2f}x (runs {r['min']:.2f}-{r['max']:.2f})",
                    "verdict": verdict(r["median"] <= TARGET_COLD_X_BARE)})
    rss = results.get("rss")
    if rss and SYNC in rss:
        v = rss[SYNC]["mib"]
        out.append({"name": f"client peak RSS < {TARGET_RSS_MIB:g} MiB",
                    "measured": f"{v:.1f} MiB", "verdict": verdict(v < TARGET_RSS_MIB)})
        calls = results["meta"]["config"]["rss_calls"]
        out.append({"name": f"client peak RSS (connect + {calls:,} calls) "
                            f"<= {TARGET_RSS_FLOOR_MIB:g} MiB",
                    "measured": f"{v:.1f} MiB", "verdict": verdict(v <= TARGET_RSS_FLOOR_MIB)})
    payload = results.get("payload")
    if payload and "10 MiB" in payload:
        r = payload["10 MiB"][SYNC]["ratio"]
        out.append({"name": f"10 MiB echo <= {TARGET_10MB_RATIO}x bare",
                    "measured": f"{r['median']:.2f}x (blocks {r['min']:.2f}-{r['max']:.2f})",
                    "verdict": verdict(r["median"] <= TARGET_10MB_RATIO)})
    imp = results.get("import")
    if imp:
        v = imp["mcp_sync"]["importtime_ms"]
        out.append({"name": f"import mcp_sync < {TARGET_IMPORT_MS:g} ms",
                    "measured": f"{v:.0f} ms", "verdict": verdict(v < TARGET_IMPORT_MS)})
        mods = imp["modules_after_import"]
        out.append({"name": "`import mcp_sync` loads neither requests nor pydantic",
                    "measured": f"requests={mods['requests']}, pydantic={mods['pydantic']}",
                    "verdict": verdict(not mods["requests"] and not mods["pydantic"])})
    if rss and SYNC in rss:
        mods = rss[SYNC]["modules"]
        out.append({"name": "stdio-only run (connect + calls) does not import requests",
                    "measured": f"requests={mods['requests']} (pydantic={mods['pydantic']})",
                    "verdict": verdict(not mods["requests"])})
    threads = results.get("threads")
    if threads:
        idle = threads["_meta"]["idle_wait_s"]
        for kind, label in (("stdio", "stdio"), ("http", "HTTP")):
            limit = TARGET_IDLE_THREADS[kind]
            n = threads[kind]["idle"]
            out.append({"name": f"mcp-sync threads of an idle {label} client <= {limit}",
                        "measured": f"{n} after {idle:g} s idle "
                                    f"({threads[kind]['after_call']} right after the call)",
                        "verdict": verdict(n <= limit)})
    return out


def machine_meta(args: argparse.Namespace, clients: Sequence[str], pinning: str) -> Dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        git = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "mcp_sync"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        git = (git or "?") + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        git = "?"
    try:
        from importlib.metadata import version

        mcp_version = version("mcp")
    except Exception:  # noqa: BLE001 - not installed
        mcp_version = "not installed"
    import mcp_sync

    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "cpu": cpu,
        "nproc": os.cpu_count(),
        "mcp_version": mcp_version,
        "mcp_sync_version": mcp_sync.__version__,
        "git": git,
        "pinning": pinning,
        "load_average_at_start": load_average(),
        "clients": list(clients),
        "config": {k: v for k, v in vars(args).items() if k != "out"},
    }


# ---------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------

SECTIONS = ("seq", "thr", "payload", "cold", "rss", "import", "threads")


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="fewer blocks and runs (~30 s); numbers are noisier")
    p.add_argument("--only", default=",".join(SECTIONS),
                   help=f"comma-separated sections to run, from {','.join(SECTIONS)}")
    p.add_argument("--clients", default=",".join(CLIENTS),
                   help=f"comma-separated clients, from {','.join(CLIENTS)} "
                        "(bare and floor, the references, are always run)")
    p.add_argument("--blocks", type=int,
                   help="interleaved blocks for the sequential and throughput sections (30); "
                        "the large echoes use half as many")
    p.add_argument("--calls", type=int, help="sequential calls per block per client (300)")
    p.add_argument("--workers", type=int, default=8, help="concurrent callers (8)")
    p.add_argument("--thr-calls", type=int,
                   help="calls per worker per throughput block (300)")
    p.add_argument("--cold-runs", type=int, help="cold-start runs per client (21)")
    p.add_argument("--rss-runs", type=int, help="peak-RSS runs per client (3)")
    p.add_argument("--rss-calls", type=int, default=1000, help="calls in the RSS child (1000)")
    p.add_argument("--import-runs", type=int, help="import-time runs (15)")
    p.add_argument("--idle-wait", type=float,
                   help="seconds an idle client waits after its call before its threads are "
                        "counted again (65: long enough for the HTTP client's idle threads to "
                        "retire; 0 with --quick); overlaps the subprocess sections")
    p.add_argument("--no-pin", action="store_true", help="do not pin client and server to CPUs")
    p.add_argument("--out", default=str(RESULTS),
                   help="directory for latest.md and latest.json (bench/results)")
    args = p.parse_args(argv)
    quick = args.quick
    defaults = {
        "blocks": 6 if quick else 30,
        "calls": 100 if quick else 300,
        # A throughput block of 8 x 100 calls lasted 25 ms at the floor's rate, short enough
        # for one scheduler hiccup of the VM to move its ratio by half (blocks ranged
        # 0.47x-1.57x): 8 x 300 calls make a block of ~80 ms.
        "thr_calls": 50 if quick else 300,
        "cold_runs": 5 if quick else 21,
        "rss_runs": 1 if quick else 3,
        "import_runs": 5 if quick else 15,
        "idle_wait": 0.0 if quick else 65.0,
    }
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.payload_blocks = max(3, args.blocks // 2)
    args.payload_calls = {"1 KiB": 50 if quick else 100, "1 MiB": 3 if quick else 8,
                          "10 MiB": 1 if quick else 4}
    return args


def load_average() -> Optional[float]:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def pin(no_pin: bool) -> str:
    if no_pin:
        return "off (--no-pin)"
    if not hasattr(os, "sched_setaffinity"):
        return "unavailable on this platform"
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return f"off (only CPU {cpus} available)"
    global CLIENT_CPU, SERVER_CPU
    CLIENT_CPU, SERVER_CPU = cpus[0], cpus[1]
    # Before any thread exists: every thread (and child) inherits the client's CPU; the
    # server pins itself to its own CPU at start (echo_server.py --cpu).
    os.sched_setaffinity(0, {CLIENT_CPU})
    SERVER_ARGS[:] = ["--cpu", str(SERVER_CPU)]
    return f"client CPU {CLIENT_CPU}, server CPU {SERVER_CPU}"


def run_subprocess_sections(args: argparse.Namespace, sections: Sequence[str],
                            names: Sequence[str], results: Dict[str, Any],
                            noise: Dict[str, Any]) -> None:
    """Cold start, peak RSS and import time: each in fresh processes."""
    if "cold" in sections:
        log("cold start ...")
        meter = NoiseMeter()
        results["cold_start"] = section_cold(
            [n for n in names if n in SECTION_CLIENTS["cold"]], args.cold_runs)
        noise["cold_start"] = meter.stop()
    if "rss" in sections:
        log("peak RSS ...")
        results["rss"] = section_rss([n for n in names if n in SECTION_CLIENTS["rss"]],
                                     args.rss_runs, args.rss_calls)
    if "import" in sections:
        log("import time ...")
        results["import"] = section_import(args.import_runs, with_sdk=SDK in names)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    sections = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        raise SystemExit(f"unknown sections: {sorted(unknown)}")
    wanted = [c.strip() for c in args.clients.split(",") if c.strip()]
    names = [c for c in CLIENTS if c in REFERENCES or c in wanted]
    names = [c for c in names if any(c in SECTION_CLIENTS[s] for s in sections)]
    try:
        import mcp  # noqa: F401
    except ImportError:
        log("the official SDK (pip install mcp) is not installed: its columns are skipped")
        names = [n for n in names if n not in (SDK, SDK_THREAD)]
    pinning = pin(args.no_pin)
    log(f"pinning: {pinning}; clients: {', '.join(names)}; sections: {', '.join(sections)}")
    load = load_average()
    if load is not None and load > 0.5 * (os.cpu_count() or 1):
        log(f"warning: the 1-minute load average is {load:.1f} on {os.cpu_count()} CPUs: "
            "other processes are busy and the figures will be noisy")
    started = time.perf_counter()
    results: Dict[str, Any] = {"meta": machine_meta(args, names, pinning)}
    noise: Dict[str, Any] = {}
    results["noise"] = noise

    in_process = [s for s in ("seq", "thr", "payload") if s in sections]
    if in_process:
        clients: Dict[str, Any] = {}
        try:
            for name in names:
                if not any(name in SECTION_CLIENTS[s] for s in in_process):
                    continue
                client = CLIENT_CLASSES[name]()
                client.start()
                clients[name] = client
                client.seq([f"warm {i}" for i in range(100)])  # imports, caches, JIT-less warmup
            if "seq" in sections:
                log("sequential tools/call ...")
                meter = NoiseMeter()
                results["sequential"] = section_sequential(clients, args.blocks, args.calls)
                noise["sequential"] = meter.stop()
            if "thr" in sections:
                log(f"{args.workers}-way throughput ...")
                for name, client in clients.items():  # warm the thread paths
                    if name == BARE:
                        client.pipelined(args.workers, args.workers * 10)
                    else:
                        client.concurrent(args.workers, 10)
                meter = NoiseMeter()
                results["throughput"] = section_throughput(
                    clients, args.blocks, args.workers, args.thr_calls)
                noise["throughput"] = meter.stop()
            if "payload" in sections:
                log("large echoes ...")
                meter = NoiseMeter()
                results["payload"] = section_payload(
                    {n: c for n, c in clients.items() if n in SECTION_CLIENTS["payload"]},
                    args.payload_blocks, args.payload_calls)
                noise["payload"] = meter.stop()
        finally:
            for client in clients.values():
                try:
                    client.close()
                except Exception as exc:  # noqa: BLE001 - report and go on closing
                    log(f"closing {client.name}: {exc!r}")
    probe = None
    if "threads" in sections:  # its clients then idle while the subprocess sections run
        log(f"threads of an idle client: connecting; counted again after {args.idle_wait:g} s")
        probe = ThreadsProbe(args.idle_wait)
    try:
        run_subprocess_sections(args, sections, names, results, noise)
        if probe is not None:
            log("threads of an idle client ...")
            results["threads"] = probe.finish()
    finally:
        if probe is not None:
            probe.kill()

    results["targets"] = targets(results)
    notes = []
    if "import" in results:
        mods = results["import"]["modules_after_import"]
        notes.append("after `import mcp_sync`: " + ", ".join(
            f"{m} {'loaded' if v else 'not loaded'}" for m, v in mods.items()))
    if "rss" in results and SYNC in results["rss"]:
        mods = results["rss"][SYNC]["modules"]
        notes.append("after a stdio-only connect + calls with mcp_sync: " + ", ".join(
            f"{m} {'loaded' if v else 'not loaded'}" for m, v in mods.items()))
    if "threads" in results:
        threads = results["threads"]
        notes.append(f"mcp-sync threads {threads['_meta']['idle_wait_s']:g} s after one call: "
                     + "; ".join(f"{label} client {', '.join(threads[k]['idle_names']) or 'none'}"
                                 for k, label in (("stdio", "stdio"), ("http", "HTTP"))))
    measured = {k: v for k, v in noise.items() if v}
    if measured:
        notes.append("other processes kept " + ", ".join(
            f"{v['foreign_cpus']:.2f} CPUs busy during {k.replace('_', ' ')}"
            for k, v in measured.items())
            + " (hypervisor steal " + ", ".join(f"{v['steal_cpus']:.2f}" for v in measured.values())
            + "); above ~0.2 the absolute figures are disturbed, the per-block ratios less so.")
    results["notes"] = notes
    results["meta"]["duration_s"] = round(time.perf_counter() - started, 1)

    text = render(results) + f"\nTotal run time: {results['meta']['duration_s']:.0f} s.\n"
    print(text)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "latest.md").write_text(text, encoding="utf-8")
    (out / "latest.json").write_text(json.dumps(results, indent=2, default=str) + "\n",
                                     encoding="utf-8")
    log(f"wrote {out / 'latest.md'} and {out / 'latest.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
