"""Load, leak and soak workloads, shared by the CI tests (small sizes) and by
``bench/reliability.py`` (full sizes, figures table).

Everything here measures the current process from ``/proc`` (Linux): its ``mcp-sync*``
threads, its open file descriptors, its child processes and its resident set size.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import mcp_sync
from mcp_sync._rpc.session import MAX_SERVER_REQUESTS

ROOT = Path(__file__).resolve().parents[2]
SERVERS = ROOT / "tests" / "servers"
PY = sys.executable
FAULT_SERVER = SERVERS / "fault_stdio.py"
# The version the workloads pin: no era probe, so a connect is one round trip.
PINNED = "2025-11-25"


# -- measuring the process ---------------------------------------------------------------


def child_pids() -> List[int]:
    """Processes (zombies included) whose parent is this process."""
    me = os.getpid()
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'.
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 1 and int(fields[1]) == me:
            pids.append(int(entry))
    return pids


def mcp_threads() -> List[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("mcp-sync")]


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def rss_kib() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


@dataclass
class Snapshot:
    """What the process holds at one moment."""

    mcp_threads: int
    threads: int
    fds: int
    children: int
    rss_kib: int

    @classmethod
    def take(cls) -> Snapshot:
        return cls(len(mcp_threads()), threading.active_count(), open_fds(),
                   len(child_pids()), rss_kib())


def settle(baseline: Snapshot, timeout: float = 10.0) -> Snapshot:
    """Wait (bounded) for threads and children to finish exiting; return the snapshot.

    Closing joins every thread with a bound and reaps every child, but a thread that was
    joined may take a moment to leave ``threading.enumerate()``.
    """
    deadline = time.monotonic() + timeout
    while True:
        now = Snapshot.take()
        done = (now.mcp_threads <= baseline.mcp_threads and now.children <= baseline.children
                and now.fds <= baseline.fds and now.threads <= baseline.threads)
        if done or time.monotonic() > deadline:
            return now
        for thread in threading.enumerate():
            if thread.name.startswith("mcp-sync"):
                thread.join(0.05)
                break
        else:
            time.sleep(0.02)  # a child being reaped: nothing to wait on but the clock


# -- servers -----------------------------------------------------------------------------


def stdio_client(**kwargs: object) -> mcp_sync.Client:
    """A connected client of the fault server (its ``echo`` tool answers normally)."""
    transport = mcp_sync.StdioTransport(PY, [str(FAULT_SERVER)], close_timeout=2.0)
    kwargs.setdefault("timeout", 60.0)
    return mcp_sync.Client(transport, protocol_version=PINNED, **kwargs).connect()  # type: ignore[arg-type]


class HttpServerProcess:
    """``tests/servers/http_process.py`` running in a child process; ``url`` to connect."""

    def __init__(self, reply: str = "json") -> None:
        self.process = subprocess.Popen(
            [PY, str(SERVERS / "http_process.py"), "--reply", reply],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=str(ROOT),
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().decode().strip()
        if not line.startswith("http://"):
            self.close()
            raise RuntimeError(f"the HTTP test server did not start: {line!r}")
        self.url = line

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        if self.process.stdout is not None:
            self.process.stdout.close()

    def __enter__(self) -> HttpServerProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def http_client(url: str, **kwargs: object) -> mcp_sync.Client:
    kwargs.setdefault("timeout", 60.0)
    transport = mcp_sync.HttpTransport(url, close_timeout=2.0)
    return mcp_sync.Client(transport, protocol_version=PINNED, **kwargs).connect()  # type: ignore[arg-type]


# -- load ----------------------------------------------------------------------------------


@dataclass
class LoadResult:
    """``threads`` x ``calls`` echo calls on one client."""

    threads: int
    calls: int
    ok: int = 0
    lost: int = 0  # raised, or never finished
    mismatched: int = 0  # answered with another call's text
    seconds: float = 0.0
    errors: List[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.threads * self.calls

    @property
    def rate(self) -> float:
        return self.ok / self.seconds if self.seconds else 0.0


def hammer(client: mcp_sync.Client, threads: int, calls: int, *, timeout: float = 600.0,
           payload: int = 16) -> LoadResult:
    """``threads`` threads each make ``calls`` echo calls on ``client``, all at once.

    Every call sends a text naming its thread and index, so an answer meant for another
    call is caught. Bounded: threads still running after ``timeout`` count their missing
    calls as lost.
    """
    result = LoadResult(threads, calls)
    lock = threading.Lock()
    start = threading.Barrier(threads + 1)
    padding = "p" * payload

    def worker(number: int) -> None:
        ok = mismatched = 0
        errors: List[str] = []
        try:
            start.wait(60)
        except threading.BrokenBarrierError:
            return
        for index in range(calls):
            text = f"{number}:{index}:{padding}"
            try:
                answer = client.call_tool("echo", {"text": text}).text
            except Exception as exc:  # noqa: BLE001 - counted and reported
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            if answer == text:
                ok += 1
            else:
                mismatched += 1
        with lock:
            result.ok += ok
            result.mismatched += mismatched
            result.errors.extend(errors[:3])

    workers = [threading.Thread(target=worker, args=(n,), name=f"load-{n}", daemon=True)
               for n in range(threads)]
    for thread in workers:
        thread.start()
    start.wait(60)
    began = time.monotonic()
    deadline = began + timeout
    for thread in workers:
        thread.join(max(0.0, deadline - time.monotonic()))
    result.seconds = time.monotonic() - began
    with lock:
        result.lost = result.total - result.ok - result.mismatched
    return result


# -- leaks -----------------------------------------------------------------------------------


@dataclass
class CycleResult:
    cycles: int
    before: Snapshot
    after: Snapshot
    seconds: float
    failures: List[str] = field(default_factory=list)

    @property
    def leaked(self) -> bool:
        return (self.after.mcp_threads > self.before.mcp_threads
                or self.after.threads > self.before.threads
                or self.after.fds > self.before.fds
                or self.after.children > self.before.children)


def cycle(connect: Callable[[], mcp_sync.Client], cycles: int) -> CycleResult:
    """Connect, call once, close, ``cycles`` times; compare the process before and after."""
    before = Snapshot.take()
    failures: List[str] = []
    began = time.monotonic()
    for index in range(cycles):
        try:
            client = connect()
        except Exception as exc:  # noqa: BLE001 - counted and reported
            failures.append(f"connect {index}: {type(exc).__name__}: {exc}")
            continue
        try:
            if client.call_tool("echo", {"text": str(index)}).text != str(index):
                failures.append(f"cycle {index}: wrong answer")
        except Exception as exc:  # noqa: BLE001
            failures.append(f"cycle {index}: {type(exc).__name__}: {exc}")
        finally:
            client.close()
    seconds = time.monotonic() - began
    return CycleResult(cycles, before, settle(before), seconds, failures)


# -- soak ------------------------------------------------------------------------------------


@dataclass
class SoakResult:
    seconds: float
    calls: int
    failures: int
    samples: List[int]  # RSS in KiB, one per interval after the warm-up

    @property
    def growth_kib(self) -> int:
        """RSS at the end (median of the last quarter of samples) minus at the start
        (median of the first quarter): robust to one allocator burst either way."""
        if len(self.samples) < 4:
            return 0
        quarter = max(1, len(self.samples) // 4)
        first = sorted(self.samples[:quarter])[quarter // 2]
        last = sorted(self.samples[-quarter:])[quarter // 2]
        return last - first


def soak(client: mcp_sync.Client, seconds: float, *, threads: int = 8, warmup: float = 5.0,
         interval: float = 1.0) -> SoakResult:
    """Keep ``threads`` threads calling ``client`` for ``warmup + seconds``; sample RSS every
    ``interval`` after the warm-up."""
    stop = threading.Event()
    counts = {"calls": 0, "failures": 0}
    lock = threading.Lock()

    def worker(number: int) -> None:
        calls = failures = 0
        index = 0
        while not stop.is_set():
            text = f"soak {number} {index}"
            index += 1
            try:
                if client.call_tool("echo", {"text": text}).text != text:
                    failures += 1
            except Exception:  # noqa: BLE001 - counted
                failures += 1
            calls += 1
        with lock:
            counts["calls"] += calls
            counts["failures"] += failures

    workers = [threading.Thread(target=worker, args=(n,), name=f"soak-{n}", daemon=True)
               for n in range(threads)]
    for thread in workers:
        thread.start()
    samples: List[int] = []
    try:
        stop.wait(warmup)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            samples.append(rss_kib())
            stop.wait(interval)
    finally:
        stop.set()
        for thread in workers:
            thread.join(60)
    return SoakResult(seconds, counts["calls"], counts["failures"], samples)


def describe(result: Optional[LoadResult]) -> str:
    if result is None:
        return "not run"
    return (f"{result.threads}x{result.calls}: {result.ok} ok, {result.lost} lost, "
            f"{result.mismatched} mismatched in {result.seconds:.1f} s "
            f"({result.rate:.0f} calls/s)")


# -- floods ----------------------------------------------------------------------------------

FLOOD_SERVER = SERVERS / "flood_stdio.py"


def memory_kib() -> Dict[str, int]:
    """This process's resident set (``VmRSS``) and its peak (``VmHWM``), in KiB."""
    with open("/proc/self/status", encoding="ascii") as f:
        return {key: int(value) for key, value
                in re.findall(r"^(VmRSS|VmHWM):\s+(\d+)", f.read(), re.MULTILINE)}


def reset_peak_memory() -> None:
    """Make ``VmHWM`` start again from the current RSS (Linux 4.0 and later), so that the
    peak measured next is the workload's own."""
    with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
        f.write("5")


class _Records(logging.Handler):
    """Keeps the WARNING records of ``mcp_sync`` loggers while a flood runs."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@dataclass
class FloodResult:
    """One flood against a client whose callbacks or handlers are stuck meanwhile."""

    kind: str
    count: int
    seconds: float = 0.0  # from asking for the flood until the client read all of it
    growth_kib: int = 0  # peak RSS during the flood minus RSS before it
    call_during: str = ""  # what an echo call made during the flood returned
    answered: int = 0  # pings: answers the server counted
    refused: int = 0  # requests the client answered with an error
    dropped: int = 0  # notifications the client dropped
    delivered: int = 0  # log records the logging_handler got once it was released
    warnings: List[str] = field(default_factory=list)
    stats: Dict[str, Any] = field(default_factory=dict)


def flood_client(**kwargs: Any) -> mcp_sync.Client:
    """A connected client of ``tests/servers/flood_stdio.py``."""
    transport = mcp_sync.StdioTransport(PY, [str(FLOOD_SERVER)], close_timeout=2.0)
    kwargs.setdefault("timeout", 60.0)
    return mcp_sync.Client(transport, protocol_version=PINNED, **kwargs).connect()


def tool_json(client: mcp_sync.Client, name: str, arguments: Dict[str, Any]) -> Any:
    return json.loads(client.call_tool(name, arguments).text)


@contextlib.contextmanager
def _watching_warnings(result: FloodResult) -> Iterator[None]:
    records = _Records()
    logger = logging.getLogger("mcp_sync")
    logger.addHandler(records)
    try:
        yield
    finally:
        logger.removeHandler(records)
        result.warnings = records.messages


def log_flood(count: int, *, size: int = 100, timeout: float = 60.0) -> FloodResult:
    """``count`` log notifications while the client's ``logging_handler`` is stuck on
    the first one, until the whole flood has been read; then the handler is released and
    gets what the client kept."""
    result = FloodResult("log", count)
    gate = threading.Event()
    delivered = [0]
    lock = threading.Lock()
    drained = threading.Event()
    expected = [count]

    def logging_handler(params: Any) -> None:
        with lock:
            delivered[0] += 1
            if delivered[0] >= expected[0]:
                drained.set()
        gate.wait(timeout)

    with _watching_warnings(result):
        client = flood_client(logging_handler=logging_handler, timeout=timeout)
        try:
            client.call_tool("echo", {"text": "warm up"})
            reset_peak_memory()
            before = memory_kib()["VmRSS"]
            began = time.monotonic()
            client.call_tool("flood", {"kind": "log", "count": count, "size": size})
            result.call_during = client.call_tool("echo", {"text": "during"}).text
            # Answered after the last record of the flood: the client has read it all.
            result.stats = tool_json(client, "stats", {"flood_done": True,
                                                        "timeout": timeout / 2})
            result.seconds = time.monotonic() - began
            result.growth_kib = memory_kib()["VmHWM"] - before
            result.dropped = getattr(client, "dropped_notifications", 0)
            with lock:
                expected[0] = count - result.dropped
                if delivered[0] >= expected[0]:
                    drained.set()
            gate.set()
            drained.wait(timeout)
            with lock:
                result.delivered = delivered[0]
        finally:
            gate.set()
            client.close()
    return result


def _handlers_busy(count: int, timeout: float) -> Tuple[threading.Event, threading.Event,
                                                       Callable[[], List[Dict[str, str]]]]:
    """A ``roots`` callable that blocks until released; ``busy`` is set once ``count``
    calls are blocked in it."""
    gate, busy = threading.Event(), threading.Event()
    lock = threading.Lock()
    running = [0]

    def roots() -> List[Dict[str, str]]:
        with lock:
            running[0] += 1
            if running[0] >= count:
                busy.set()
        gate.wait(timeout)
        return [{"uri": "file:///flood", "name": "flood"}]

    return gate, busy, roots


def request_flood(count: int, *, kind: str = "ping", handler_threads: int = 4,
                  timeout: float = 60.0) -> FloodResult:
    """``count`` server requests (``ping`` or ``roots``) while every handler thread is
    busy with a ``roots/list`` that does not return until the flood has been answered."""
    result = FloodResult(kind, count)
    gate, busy, roots = _handlers_busy(handler_threads, timeout)
    with _watching_warnings(result):
        client = flood_client(roots=roots, timeout=timeout)
        try:
            client.call_tool("ask", {"method": "roots/list", "count": handler_threads})
            busy.wait(timeout)
            reset_peak_memory()
            before = memory_kib()["VmRSS"]
            began = time.monotonic()
            client.call_tool("flood", {"kind": kind, "count": count})
            result.call_during = client.call_tool("echo", {"text": "during"}).text
            # Pings are all answered at once; of the roots/list requests, those admitted
            # wait for the busy handlers.
            waiting = 0 if kind == "ping" else MAX_SERVER_REQUESTS - handler_threads
            result.stats = tool_json(client, "stats", {
                "flood_done": True, "prefix": kind, "count": count - waiting,
                "timeout": timeout / 2})
            result.seconds = time.monotonic() - began
            result.growth_kib = memory_kib()["VmHWM"] - before
            answers = result.stats["answers"].get(kind, {})
            result.answered = answers.get("ok", 0)
            result.refused = answers.get("error_count", 0)
            gate.set()
            result.stats["after"] = tool_json(client, "stats", {
                "prefix": "ask", "count": handler_threads, "timeout": timeout / 2})["answers"]
            if waiting:
                result.stats["after"] = tool_json(client, "stats", {
                    "prefix": kind, "count": count, "timeout": timeout / 2})["answers"]
        finally:
            gate.set()
            client.close()
    return result
