#!/usr/bin/env python
"""What tracing costs a call: sequential ``tools/call`` p50 over stdio, in four setups.

    python bench/bench_tracing.py            # 20 blocks of 500 calls per setup
    python bench/bench_tracing.py --quick    # 6 blocks of 200 calls (noisier)

Every setup is a client process of its own (the global OpenTelemetry providers and what
is importable differ), each with its own ``bench/echo_server.py``:

* ``no-api``: ``opentelemetry`` cannot be imported (a meta path finder in that process
  refuses it), so mcp_sync has no observer at all;
* ``api-no-sdk``: the API is importable, no SDK installed (the default ``tracing=None``:
  an observer that stays inactive, a request costs its ``active()`` check);
* ``off``: ``MCP_SYNC_TRACING=0`` (no observer, nothing imported);
* ``sdk``: an SDK ``TracerProvider`` whose spans go to an exporter that drops them
  (``SimpleSpanProcessor``: every span is recorded and exported, synchronously) and an
  SDK ``MeterProvider`` with a reader nobody collects (every call measured).

The four processes are driven in interleaved blocks (the order rotates every block): in a
block each runs the same number of sequential calls, and reports each call's latency.
Clients are pinned to CPU 0 and servers to CPU 1 (Linux; ``--no-pin`` to leave them be).
Each figure is the median over blocks of the block's p50; the ratios are the median over
blocks of the per-block ratio to ``no-api``. Progress goes to stderr, the Markdown table
to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Sequence

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "bench" / "echo_server.py"
CLIENT_CPU = 0
SERVER_CPU = 1

SETUPS = ("no-api", "api-no-sdk", "off", "sdk")
LABELS = {
    "no-api": "no `opentelemetry` importable",
    "api-no-sdk": "API installed, no SDK configured",
    "off": "`MCP_SYNC_TRACING=0`",
    "sdk": "SDK configured, no-op exporter (spans and metrics recorded)",
}

# The client process: sets itself up as its setup says, connects, then answers each line
# "<n>" on stdin with the latencies (ns) of n sequential calls, as one JSON line.
CHILD = r'''
import json, os, sys, time
setup, root, server, pin = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
if pin == "1" and hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {%(client_cpu)d})
sys.path.insert(0, root)

if setup == "no-api":
    class Refuse:
        def find_spec(self, name, path=None, target=None):
            if name == "opentelemetry" or name.startswith("opentelemetry."):
                raise ImportError(f"{name} is hidden by bench_tracing.py")
            return None
    sys.meta_path.insert(0, Refuse())
elif setup == "sdk":
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (SimpleSpanProcessor, SpanExporter,
                                                SpanExportResult)

    class Drop(SpanExporter):
        def export(self, spans):
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(Drop()))
    trace.set_tracer_provider(provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))

import mcp_sync

with mcp_sync.connect(server, timeout=30) as client:
    observer = client._rpc.observer  # what the setup gave the session
    client.call_tool("echo", {"text": "warm up"})
    print(json.dumps({"observer": type(observer).__name__ if observer else None,
                      "active": bool(observer and observer.active()),
                      "otel_loaded": any(m.startswith("opentelemetry") for m in sys.modules)}),
          flush=True)
    for line in sys.stdin:
        n = int(line)
        if n <= 0:
            break
        out = []
        for _ in range(n):
            began = time.perf_counter_ns()
            client.call_tool("echo", {"text": "x"})
            out.append(time.perf_counter_ns() - began)
        print(json.dumps(out), flush=True)
'''


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Child:
    def __init__(self, setup: str, pin: bool) -> None:
        self.setup = setup
        server = [sys.executable, str(SERVER)]
        if pin:
            server += ["--cpu", str(SERVER_CPU)]
        env = dict(os.environ)
        env.pop("MCP_SYNC_TRACING", None)
        if setup == "off":
            env["MCP_SYNC_TRACING"] = "0"
        code = CHILD % {"client_cpu": CLIENT_CPU}
        self.process = subprocess.Popen(
            [sys.executable, "-c", code, setup, str(ROOT), json.dumps(server),
             "1" if pin else "0"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.state = json.loads(self._line())

    def _line(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.setup} client exited ({self.process.wait(10)})")
        return line

    def run(self, calls: int) -> List[int]:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{calls}\n")
        self.process.stdin.flush()
        latencies: List[int] = json.loads(self._line())
        return latencies

    def close(self) -> None:
        try:
            if self.process.stdin is not None:
                self.process.stdin.write("0\n")
                self.process.stdin.close()
            self.process.wait(30)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait(10)


def p50(values: Sequence[int]) -> float:
    return float(statistics.median(values))


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main(argv: Sequence[str] = ()) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="6 blocks of 200 calls")
    parser.add_argument("--blocks", type=int)
    parser.add_argument("--calls", type=int, help="calls per setup per block")
    parser.add_argument("--no-pin", action="store_true")
    args = parser.parse_args(list(argv) or None)
    blocks = args.blocks or (6 if args.quick else 20)
    calls = args.calls or (200 if args.quick else 500)
    pin = not args.no_pin and hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1

    children: Dict[str, Child] = {}
    try:
        for setup in SETUPS:
            children[setup] = Child(setup, pin)
            log(f"{setup}: {children[setup].state}")
        # The setups are what they claim to be.
        assert children["no-api"].state == {"observer": None, "active": False,
                                            "otel_loaded": False}
        assert children["off"].state["observer"] is None
        assert children["api-no-sdk"].state["observer"] == "Tracing"
        assert not children["api-no-sdk"].state["active"]
        assert children["sdk"].state["active"]
        for child in children.values():  # warm-up block, not counted
            child.run(min(calls, 100))
        medians: Dict[str, List[float]] = {s: [] for s in SETUPS}
        ratios: Dict[str, List[float]] = {s: [] for s in SETUPS}
        began = time.monotonic()
        for block in range(blocks):
            order = SETUPS[block % len(SETUPS):] + SETUPS[:block % len(SETUPS)]
            figures = {setup: p50(children[setup].run(calls)) for setup in order}
            for setup in SETUPS:
                medians[setup].append(figures[setup])
                ratios[setup].append(figures[setup] / figures["no-api"])
            log(f"block {block + 1}/{blocks}: " + ", ".join(
                f"{s} {figures[s] / 1000:.1f} us" for s in SETUPS))
    finally:
        for child in children.values():
            child.close()

    print(f"Sequential `tools/call` over stdio, p50 per call ({blocks} blocks x {calls} "
          f"calls per setup, {time.monotonic() - began:.0f} s; Python "
          f"{platform.python_version()}, {cpu_model()}, {os.cpu_count()} CPUs"
          f"{', client and server pinned' if pin else ''}):\n")
    print("| setup | p50 (us) | ratio to no API (median, min-max over blocks) |")
    print("| --- | ---: | ---: |")
    for setup in SETUPS:
        r = ratios[setup]
        print(f"| {LABELS[setup]} | {statistics.median(medians[setup]) / 1000:.1f} | "
              f"{statistics.median(r):.3f} ({min(r):.2f}-{max(r):.2f}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
