#!/usr/bin/env python
"""Where does a sequential mcp_sync ``tools/call`` spend its time? (diagnostics)

    python bench/profile_stdio.py            # ~15 s
    python bench/profile_stdio.py --blocks 4 --calls 300

Peels the layers off one call against ``bench/echo_server.py`` (client on one CPU, server
on the other, interleaved blocks, medians of per-block ratios to the bare loop, as in
``bench_stdio.py``) and counts, per call, the client's CPU time and its context switches:

* ``bare``: write a line, read a line, ``json.loads`` (the limit);
* ``session.request(timeout=None)``: the JSON-RPC engine alone, no deadline bookkeeping;
* ``session.request``: ... with the default deadline (progress token + deadline heap);
* ``client.request``: ... plus the Client layer, no pydantic;
* ``call_tool``: the public call (plus ``CallToolResult`` validation and ``.text``);
* ``threaded floor``: ``bench_stdio.FloorClient``, the least a reader-thread design can
  cost (one reader thread resolving a per-id waiter, the caller blocked on it).

This script reaches into private attributes (``Client._rpc``, ``Session.table``) on
purpose; if the library's internals move, adjust it. It changes no library file.

For a sampling profile of the same loop::

    py-spy record -r 1000 --threads -f raw -o /tmp/seq.txt -- \\
        python bench/profile_stdio.py --loop 10
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_stdio as B

import mcp_sync


def context_switches() -> Tuple[int, int]:
    voluntary = involuntary = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches"):
                        voluntary += int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches"):
                        involuntary += int(line.split()[1])
        except OSError:
            pass  # a thread that just ended
    return voluntary, involuntary


def thread_cpu_ns() -> Dict[str, int]:
    names = {t.native_id: t.name for t in threading.enumerate()}
    out: Dict[str, int] = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                out[f"{names.get(int(tid), '?')}:{tid}"] = int(f.read().split()[0])
        except OSError:
            pass
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--blocks", type=int, default=20)
    p.add_argument("--calls", type=int, default=500)
    p.add_argument("--loop", type=float, default=0.0,
                   help="instead: run call_tool in a loop for this many seconds (for py-spy)")
    args = p.parse_args()
    B.pin(False)
    argv = B.server_argv()

    if args.loop:
        client = mcp_sync.connect(argv)
        end = time.monotonic() + args.loop
        n = 0
        while time.monotonic() < end:
            client.call_tool("echo", {"text": "hello"})
            n += 1
        client.close()
        print(f"{n} calls in {args.loop:g} s")
        return 0

    bare = B.BareClient()
    bare.start()
    client = mcp_sync.connect(argv)
    client.list_tools()
    session = client._rpc
    floor = B.FloorClient()
    floor.start()

    params = {"name": "echo", "arguments": {"text": "hello"}}
    tests: Dict[str, Callable[[], Any]] = {
        "bare": lambda: bare.call("hello"),
        "session.request(timeout=None)": lambda: session.request(
            "tools/call", params, timeout=None, max_total_timeout=None),
        "session.request": lambda: session.request("tools/call", params),
        "client.request": lambda: client.request("tools/call", params),
        "call_tool": lambda: client.call_tool("echo", {"text": "hello"}).text,
        "threaded floor": lambda: floor.call("hello"),
    }
    names = list(tests)
    p50: Dict[str, List[float]] = {n: [] for n in names}
    cpu: Dict[str, List[float]] = {n: [] for n in names}
    switches: Dict[str, List[Tuple[float, float]]] = {n: [] for n in names}
    for fn in tests.values():
        for _ in range(200):
            fn()
    for block in range(args.blocks):
        for name in B.rotate(names, block):
            fn = tests[name]
            gc.collect()
            lat = []
            clock = time.perf_counter_ns
            s0, c0 = context_switches(), time.process_time()
            for _ in range(args.calls):
                t0 = clock()
                fn()
                lat.append(clock() - t0)
            c1, s1 = time.process_time(), context_switches()
            p50[name].append(statistics.median(lat))
            cpu[name].append((c1 - c0) / args.calls * 1e6)
            switches[name].append(((s1[0] - s0[0]) / args.calls, (s1[1] - s0[1]) / args.calls))
    print(f"{args.blocks} blocks x {args.calls} calls, pinning: client CPU {B.CLIENT_CPU}, "
          f"server CPU {B.SERVER_CPU}\n")
    print("| layer | p50 | x bare (median of blocks) | client CPU/call | "
          "voluntary / involuntary switches per call |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name in names:
        ratio = statistics.median(a / b for a, b in zip(p50[name], p50["bare"]))
        vol = statistics.median(s[0] for s in switches[name])
        inv = statistics.median(s[1] for s in switches[name])
        print(f"| {name} | {statistics.median(p50[name]) / 1e3:.1f} µs | {ratio:.2f}x | "
              f"{statistics.median(cpu[name]):.1f} µs | {vol:.2f} / {inv:.2f} |")

    print("\nCPU per call by thread (schedstat, 3000 calls):")
    for name in ("bare", "threaded floor", "call_tool"):
        fn = tests[name]
        before = thread_cpu_ns()
        for _ in range(3000):
            fn()
        after = thread_cpu_ns()
        parts: Dict[str, float] = {}
        for key, value in after.items():  # both clients' threads share names: add them up
            thread = key.split(":")[0]
            parts[thread] = parts.get(thread, 0.0) + (value - before.get(key, 0)) / 3000 / 1e3
        shown = ", ".join(f"{k} {v:.1f} µs" for k, v in parts.items() if v > 0.5)
        print(f"  {name}: {shown}")
    client.close()
    floor.close()
    bare.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
