#!/usr/bin/env python
"""Many servers: a ``mcp_sync.Manager`` of 20 stdio echo servers against one server.

    python bench/bench_manager.py            # full run, ~40 s on a 2-core VM
    python bench/bench_manager.py --quick    # ~15 s (noisier)

Every run is a fresh client process (``python -c``) that imports ``mcp_sync``, then times
one of three connects against ``bench/echo_server.py`` on stdio:

* ``mcp_sync.connect(argv)`` and ``list_tools()``: one plain client;
* ``Manager({"mcpServers": {...}}).connect()`` with one server (the manager lists each
  server's tools as it connects);
* the same with ``--servers`` (20) servers, connected in parallel.

Before the timed connect, the child makes one untimed ``connect`` + ``list_tools`` + ``close``
(the first connect of a process imports what the library loads lazily: pydantic, the MCP
types; ~250 ms, several times a warm connect) and forgets the protocol eras it learnt, so
that the timed connect probes as a fresh process's does.

After the connect it calls ``echo`` once on every server (checked), joins the managers'
``mcp-sync-reconnect-*`` threads (they end once their server is connected; bounded), and
then, idle, counts the process's ``mcp-sync*`` threads and reads its RSS. Each server
stamps the moment it is ready to read stdin (``--stamp``: ``time.monotonic()``, a
system-wide clock on Linux), so a connect splits into "spawn -> last server ready" (process
start-up, 20 Pythons competing for the CPU) and "last server ready -> connected" (the
round trips and the client's work after it). The three kinds rotate from run to run, after
one untimed warm-up of each; the client process is pinned to one CPU and every server to
another, as in ``bench_stdio.py``. A child is started through ``/bin/sh`` so that its
``ru_maxrss`` is its own (see bench/README.md).

Writes a Markdown table to stdout and to ``bench/results/latest-manager.md``, and the raw
numbers to ``bench/results/latest-manager.json``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import bench_stdio as common  # noqa: E402 - after the path tweak; puts this checkout on sys.path
from bench_stdio import NoiseMeter, log, median, ratio_summary, rotate, verdict  # noqa: E402

RESULTS = BENCH / "results"

# Target (issue #14): connecting every server costs at most twice one server's connect.
TARGET_CONNECT_ALL_X_ONE = 2.0

CONNECT, ONE, ALL = "connect", "manager-1", "manager-N"
KINDS = (CONNECT, ONE, ALL)

# The client process. Its one argument is a JSON object: kind, servers, argv, stamps.
_CHILD = r'''
import json, re, resource, sys, threading, time
P = json.loads(sys.argv[1])
import mcp_sync
from mcp_sync.manager import ServerState

def ours():
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("mcp-sync"))

def status_kib(key):
    try:
        with open("/proc/self/status") as f:
            return int(re.search(key + r":\s+(\d+)", f.read()).group(1))
    except (OSError, AttributeError):
        return None

names = [f"echo{i}" for i in range(P["servers"])]
argvs = {n: P["argv"] + ["--stamp", f"{P['stamps']}/{n}"] for n in names}
rss_before = status_kib("VmRSS")
clock = time.monotonic
# Untimed: the process's first connect, which also imports what the library loads lazily
# (pydantic, the MCP types). Then the protocol eras it learnt are forgotten, so that the
# timed connect probes as a fresh process's does.
from mcp_sync.client import forget_protocol_eras
t = clock()
warm = mcp_sync.connect(P["argv"])
warm.list_tools()
first_ms = (clock() - t) * 1e3
warm.close()
forget_protocol_eras()
if P["kind"] == "connect":
    t0 = clock()
    client = mcp_sync.connect(argvs[names[0]])
    client.list_tools()
    t1 = clock()
    assert client.call_tool("echo", {"text": "hi"}).text == "hi"
    close = client.close
else:
    config = {"mcpServers": {n: {"command": a[0], "args": a[1:]} for n, a in argvs.items()}}
    manager = mcp_sync.Manager(config)
    t0 = clock()
    manager.connect()
    t1 = clock()
    down = {n: str(s.state) for n, s in manager.status().items()
            if s.state is not ServerState.CONNECTED}
    assert not down, f"not connected: {down}"
    for n in names:
        assert manager.call_tool(n, "echo", {"text": n}).text == n
    close = manager.close
# Idle: nothing in flight, and the reconnect threads (one per server while it connects)
# have ended.
for thread in threading.enumerate():
    if thread.name.startswith("mcp-sync-reconnect-"):
        thread.join(10)
threads = ours()
rss = status_kib("VmRSS")
ready = []
for n in names:
    with open(f"{P['stamps']}/{n}") as f:
        ready.append(float(f.read()))
t2 = clock()
close()
t3 = clock()
print(json.dumps({
    "first_connect_ms": first_ms,
    "connect_ms": (t1 - t0) * 1e3,
    "spawn_to_last_ready_ms": (max(ready) - t0) * 1e3,
    "last_ready_to_connected_ms": (t1 - max(ready)) * 1e3,
    "close_ms": (t3 - t2) * 1e3,
    "threads": len(threads), "thread_names": threads,
    "rss_mib": rss / 1024 if rss else None,
    "rss_before_mib": rss_before / 1024 if rss_before else None,
    "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}), flush=True)
'''


def one_run(kind: str, servers: int, workdir: Path) -> Dict[str, Any]:
    stamps = Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=workdir))  # no stale stamps
    params = {"kind": kind, "servers": servers if kind == ALL else 1,
              "argv": common.server_argv(), "stamps": str(stamps)}
    proc = common.run_python(_CHILD + "\n", timeout=300, prefix=common._FRESH_RSS,
                             args=[json.dumps(params)])
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} child failed ({proc.returncode}): {proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def run(runs: int, servers: int, workdir: Path) -> Dict[str, Any]:
    samples: Dict[str, List[Dict[str, Any]]] = {k: [] for k in KINDS}
    for kind in KINDS:  # warm-up: .pyc, page cache
        one_run(kind, servers, workdir)
    for rep in range(runs):
        for kind in rotate(KINDS, rep):
            gc.collect()
            samples[kind].append(one_run(kind, servers, workdir))
        log(f"  run {rep + 1}/{runs}: " + ", ".join(
            f"{k} {samples[k][-1]['connect_ms']:.0f} ms" for k in KINDS))
    out: Dict[str, Any] = {}
    for kind, rows in samples.items():
        entry: Dict[str, Any] = {
            key: median([r[key] for r in rows if r[key] is not None])
            for key in ("first_connect_ms", "connect_ms", "spawn_to_last_ready_ms",
                        "last_ready_to_connected_ms",
                        "close_ms", "threads", "rss_mib", "rss_before_mib", "peak_rss_mib")}
        entry["thread_names"] = rows[-1]["thread_names"]
        entry["runs"] = rows
        out[kind] = entry
    # paired: the same run of the rotation
    out["ratios"] = {
        "all_x_one": ratio_summary([a["connect_ms"] / b["connect_ms"]
                                    for a, b in zip(samples[ALL], samples[ONE])]),
        "all_x_connect": ratio_summary([a["connect_ms"] / b["connect_ms"]
                                        for a, b in zip(samples[ALL], samples[CONNECT])]),
        # what is left once the servers' start-up is out: the client's side
        "after_ready_all_x_one": ratio_summary([
            a["last_ready_to_connected_ms"] / b["last_ready_to_connected_ms"]
            for a, b in zip(samples[ALL], samples[ONE])]),
    }
    out["_meta"] = {"servers": servers, "runs": runs}
    return out


def thread_roles(names: Sequence[str]) -> str:
    """``mcp-sync-reader-echo3`` -> ``reader``; counted: ``20 reader, ...``."""
    counts: Dict[str, int] = {}
    for name in names:
        role = name[len("mcp-sync-"):].split("-", 1)[0]
        counts[role] = counts.get(role, 0) + 1
    return ", ".join(f"{n} {role}" for role, n in sorted(counts.items()))


def render(results: Dict[str, Any]) -> str:
    meta = results["meta"]
    data = results["manager"]
    n = data["_meta"]["servers"]
    labels = {CONNECT: "`mcp_sync.connect` + `list_tools`", ONE: "Manager, 1 server",
              ALL: f"Manager, {n} servers"}
    lines = [
        "# mcp_sync many-servers benchmark (Manager, stdio)",
        "",
        f"{meta['date']} · Python {meta['python']} · {meta['cpu']} · {meta['nproc']} CPUs · "
        f"mcp_sync {meta['mcp_sync_version']} ({meta['git']}) · pinning: {meta['pinning']} · "
        f"{data['_meta']['runs']} runs",
        "",
        "Medians over runs, each a fresh client process (the kinds rotate from run to run). "
        "\"ready\" is the moment a freshly spawned server starts reading stdin (stamped by the "
        "server on the same monotonic clock). Threads and RSS: once idle, after one `echo` "
        "call to every server.",
        "",
        "| metric | " + " | ".join(labels[k] for k in KINDS) + " |",
        "| --- | " + " | ".join("---:" for _ in KINDS) + " |",
    ]

    def row(metric: str, fmt: str, key: str) -> None:
        lines.append(f"| {metric} | " + " | ".join(
            fmt.format(data[k][key]) for k in KINDS) + " |")

    ratios = data["ratios"]
    cells = [f"{data[k]['connect_ms']:.0f} ms" for k in KINDS]
    cells[-1] += (f" ({ratios['all_x_one']['median']:.2f}x one server's; "
                  f"{ratios['all_x_connect']['median']:.2f}x a plain connect)")
    lines.append("| connect (all servers, tools listed) | " + " | ".join(cells) + " |")
    row("spawn → last server ready", "{:.0f} ms", "spawn_to_last_ready_ms")
    cells = [f"{data[k]['last_ready_to_connected_ms']:.1f} ms" for k in KINDS]
    cells[-1] += f" ({ratios['after_ready_all_x_one']['median']:.2f}x one server's)"
    lines.append("| last server ready → connected | " + " | ".join(cells) + " |")
    row("process's first connect (untimed warm-up: lazy imports)", "{:.0f} ms",
        "first_connect_ms")
    row("mcp-sync threads, idle", "{:.0f}", "threads")
    row("client RSS, idle", "{:.1f} MiB", "rss_mib")
    row("client RSS after `import mcp_sync`", "{:.1f} MiB", "rss_before_mib")
    row("client peak RSS", "{:.1f} MiB", "peak_rss_mib")
    row("close", "{:.0f} ms", "close_ms")
    per_server = (data[ALL]["rss_mib"] - data[ONE]["rss_mib"]) / max(1, n - 1)
    lines += [
        "",
        f"Threads of the {n}-server manager, by role: {thread_roles(data[ALL]['thread_names'])}."
        f" RSS per extra server: {per_server:.2f} MiB.",
        "",
        "## mcp_sync targets", "", "| target | measured | verdict |", "| --- | ---: | :---: |",
    ]
    for target in results["targets"]:
        lines.append(f"| {target['name']} | {target['measured']} | {target['verdict']} |")
    lines.append("")
    notes = results.get("notes") or []
    if notes:
        lines += ["## Notes", ""] + [f"* {note}" for note in notes] + [""]
    return "\n".join(lines)


def machine_bound_ms(data: Dict[str, Any], server_cpus: int) -> float:
    """The least time in which ``n`` servers can all be ready on this machine: each needs
    one server's start-up (spawn -> ready, measured alone) of CPU, and they share
    ``server_cpus`` CPUs. No client can connect them all sooner."""
    n = data["_meta"]["servers"]
    return float(n * data[ONE]["spawn_to_last_ready_ms"] / max(1, server_cpus))


def targets(data: Dict[str, Any], server_cpus: int) -> List[Dict[str, str]]:
    r = data["ratios"]["all_x_one"]
    after = data["ratios"]["after_ready_all_x_one"]
    n = data["_meta"]["servers"]
    bound = machine_bound_ms(data, server_cpus)
    return [{
        "name": f"connect-all ({n} servers) <= {TARGET_CONNECT_ALL_X_ONE:g}x one server's "
                f"connect (Manager of 1); the servers' own start-up alone needs {bound:.0f} ms "
                f"here ({n} x one start-up on {server_cpus} CPU(s)), "
                f"{bound / data[ONE]['connect_ms']:.1f}x one connect",
        "measured": f"{r['median']:.2f}x (runs {r['min']:.2f}-{r['max']:.2f}); "
                    f"{data[ALL]['connect_ms'] / bound:.2f}x the start-up bound",
        "verdict": verdict(r["median"] <= TARGET_CONNECT_ALL_X_ONE)}, {
        "name": f"the client's share: last server ready -> all {n} connected <= "
                f"{TARGET_CONNECT_ALL_X_ONE:g}x the same for one server",
        "measured": f"{after['median']:.2f}x (runs {after['min']:.2f}-{after['max']:.2f})",
        "verdict": verdict(after["median"] <= TARGET_CONNECT_ALL_X_ONE)}]


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="fewer runs (~15 s)")
    p.add_argument("--runs", type=int, help="runs of every kind (11; quick 3)")
    p.add_argument("--servers", type=int, default=20, help="servers in the big manager (20)")
    p.add_argument("--no-pin", action="store_true", help="do not pin client and server to CPUs")
    p.add_argument("--out", default=str(RESULTS),
                   help="directory for latest-manager.md and .json (bench/results)")
    args = p.parse_args(argv)
    if args.runs is None:
        args.runs = 3 if args.quick else 11
    if args.servers < 2:
        p.error("--servers must be at least 2")
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    pinning = common.pin(args.no_pin)  # before any thread exists
    log(f"pinning: {pinning}; {args.runs} runs; {args.servers} servers")
    load = common.load_average()
    if load is not None and load > 0.5 * (os.cpu_count() or 1):
        log(f"warning: the 1-minute load average is {load:.1f} on {os.cpu_count()} CPUs: "
            "other processes are busy and the figures will be noisy")
    started = time.perf_counter()
    meta = common.machine_meta(args, ["mcp_sync"], pinning)
    results: Dict[str, Any] = {"meta": meta}
    meter = NoiseMeter()
    with tempfile.TemporaryDirectory(prefix="mcp-sync-bench-") as tmp:
        results["manager"] = run(args.runs, args.servers, Path(tmp))
    noise = meter.stop()
    results["noise"] = noise
    # pinned, every server runs on the one server CPU; else they share all of them
    server_cpus = 1 if pinning.startswith("client CPU") else (os.cpu_count() or 1)
    results["targets"] = targets(results["manager"], server_cpus)
    notes = []
    if noise:
        notes.append(f"other processes kept {noise['foreign_cpus']:.2f} CPUs busy during the "
                     f"run (hypervisor steal {noise['steal_cpus']:.2f}); the spawn times "
                     "suffer most.")
    results["notes"] = notes
    meta["duration_s"] = round(time.perf_counter() - started, 1)
    text = render(results) + f"\nTotal run time: {meta['duration_s']:.0f} s.\n"
    print(text)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "latest-manager.md").write_text(text, encoding="utf-8")
    (out / "latest-manager.json").write_text(json.dumps(results, indent=2, default=str) + "\n",
                                             encoding="utf-8")
    log(f"wrote {out / 'latest-manager.md'} and {out / 'latest-manager.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
