#!/usr/bin/env python
"""Connect-to-first-result: what the protocol-era probe costs a stdio connect.

    python bench/bench_connect.py            # full run, ~1 minute
    python bench/bench_connect.py --quick    # ~15 s (noisier)

Times ``mcp_sync.connect(...)`` up to the first ``call_tool`` result against the stdio echo
server (``bench/echo_server.py``) in two guises: session-era (answers ``server/discover`` with
``-32601``, as a server predating 2026-07-28 does) and ``--stateless`` (answers it as a
2026-07-28 server). For each: auto mode (``mcp_sync.client.forget_protocol_eras()`` first,
so the probe runs), auto mode again right after (the era cached), and pinned
(``protocol_version="2025-11-25"`` resp. ``"2026-07-28"``, no probe).

Spawning the server (a fresh Python) dominates and varies by milliseconds, far more than a
round trip. So the server stamps the moment it is ready to read (``--stamp``:
``time.monotonic()``, a system-wide clock on Linux) and every connect is split into
"spawn -> server ready" and "server ready -> first result"; the second holds the protocol's
round trips and the client's work on them, without the spawn. The extra cost of auto mode
is the paired difference (same repetition) of that second part, in milliseconds and in
round trips of one ``tools/call`` on a connected client. The cases rotate from repetition
to repetition, in one process; client and server are pinned to different CPUs.

Writes a Markdown table to stdout and to ``bench/results/latest-connect.md``, and the raw
numbers to ``bench/results/latest-connect.json``.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import bench_stdio as common  # noqa: E402 - after the path tweak; puts this checkout on sys.path
from bench_stdio import NoiseMeter, log, median, rotate, verdict  # noqa: E402

SERVER = BENCH / "echo_server.py"
RESULTS = BENCH / "results"

SESSION_VERSION = "2025-11-25"
STATELESS_VERSION = "2026-07-28"
# Target: against a server that answers unknown methods with an error, auto mode costs at
# most one round trip (plus noise) over a pinned version.
TARGET_EXTRA_ROUND_TRIPS = 1.0

# Cases: (server kind, how the client connects).
PINNED, AUTO, CACHED = "pinned", "auto", "auto, era cached"
KINDS = ("session", "stateless")
CASES: List[Tuple[str, str]] = [(k, m) for k in KINDS for m in (PINNED, AUTO, CACHED)]
FLOOR = ("bare", "spawn + one ping")
CASE_LABELS = {
    ("session", PINNED): f"session-era server, pinned {SESSION_VERSION}",
    ("session", AUTO): "session-era server, auto (probe, then initialize)",
    ("session", CACHED): "session-era server, auto, era cached",
    ("stateless", PINNED): f"stateless-era server, pinned {STATELESS_VERSION}",
    ("stateless", AUTO): "stateless-era server, auto (probe = server/discover)",
    ("stateless", CACHED): "stateless-era server, auto, era cached",
    FLOOR: "bare pipe: spawn + one `ping` (floor)",
}
# Calls timed on each connected client after its first result: the round trip.
RTT_CALLS = 20


def read_stamp(path: Path) -> float:
    for _ in range(100):
        try:
            return float(path.read_text())
        except (OSError, ValueError):
            time.sleep(0.001)  # written, not yet flushed: cannot happen after a reply
    raise RuntimeError(f"the echo server left no stamp in {path}")


def one_connect(argv: List[str], stamp: Path, mode: str, version: str) -> Dict[str, Any]:
    """Connect, first result, a few more calls (the round trip), close."""
    import mcp_sync
    from mcp_sync.client import forget_protocol_eras

    if mode == AUTO:
        forget_protocol_eras()
    kwargs: Dict[str, Any] = {} if mode in (AUTO, CACHED) else {"protocol_version": version}
    try:
        stamp.unlink()
    except FileNotFoundError:
        pass
    clock = time.monotonic
    t0 = clock()
    client = mcp_sync.connect(argv, **kwargs)
    try:
        t_connected = clock()
        result = client.call_tool("echo", {"text": "first"}).text
        t_result = clock()
        if result != "first":
            raise AssertionError("wrong echo")
        rtts = []
        for i in range(RTT_CALLS):
            c0 = time.perf_counter_ns()
            if client.call_tool("echo", {"text": f"rt {i}"}).text != f"rt {i}":
                raise AssertionError("wrong echo")
            rtts.append(time.perf_counter_ns() - c0)
        era, negotiated = client.era, client.protocol_version
    finally:
        client.close()
    ready = read_stamp(stamp)
    return {"total_ms": (t_result - t0) * 1e3, "connect_ms": (t_connected - t0) * 1e3,
            "spawn_to_ready_ms": (ready - t0) * 1e3, "after_ready_ms": (t_result - ready) * 1e3,
            "rtt_us": median(rtts) / 1e3, "era": era, "version": negotiated}


def bare_floor(argv: List[str], stamp: Path) -> Dict[str, Any]:
    """Spawn the server, write one ping, read its reply: no client library at all."""
    try:
        stamp.unlink()
    except FileNotFoundError:
        pass
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    proc.stdin.flush()
    reply = json.loads(proc.stdout.readline())
    t_result = time.monotonic()
    proc.stdin.close()
    proc.wait(10)
    proc.stdout.close()
    if reply.get("id") != 1:
        raise AssertionError(f"bad ping reply {reply!r}")
    ready = read_stamp(stamp)
    return {"total_ms": (t_result - t0) * 1e3, "spawn_to_ready_ms": (ready - t0) * 1e3,
            "after_ready_ms": (t_result - ready) * 1e3}


def median_ci(values: Sequence[float]) -> Dict[str, float]:
    """Median and a distribution-free ~95% confidence interval for it (order statistics)."""
    ordered = sorted(values)
    n = len(ordered)
    k = max(1, int((n - 1.96 * math.sqrt(n)) / 2))
    low, high = (ordered[k - 1], ordered[n - k]) if n >= 6 else (ordered[0], ordered[-1])
    return {"median": median(ordered), "ci_low": low, "ci_high": high,
            "half_width": (high - low) / 2, "n": n}


def run(reps: int, server_extra: Sequence[str], workdir: Path) -> Dict[str, Any]:
    stamps = {k: workdir / f"ready-{k}" for k in (*KINDS, "bare")}
    argvs = {
        "session": [sys.executable, str(SERVER), *server_extra, "--stamp", str(stamps["session"])],
        "stateless": [sys.executable, str(SERVER), *server_extra, "--stateless", "--stamp",
                   str(stamps["stateless"])],
        "bare": [sys.executable, str(SERVER), *server_extra, "--stamp", str(stamps["bare"])],
    }
    versions = {"session": SESSION_VERSION, "stateless": STATELESS_VERSION}
    # One unit per rotation slot; "auto" is followed at once by the cached connect.
    units = [("session", PINNED), ("session", AUTO), ("stateless", PINNED),
             ("stateless", AUTO), FLOOR]
    samples: Dict[Tuple[str, str], List[Dict[str, Any]]] = {c: [] for c in [*CASES, FLOOR]}

    def do(unit: Tuple[str, str], keep: bool) -> None:
        kind, mode = unit
        if unit == FLOOR:
            outcome = [(FLOOR, bare_floor(argvs["bare"], stamps["bare"]))]
        else:
            outcome = [(unit, one_connect(argvs[kind], stamps[kind], mode, versions[kind]))]
            if mode == AUTO:  # the second auto connect: the era is cached now
                outcome.append(((kind, CACHED),
                                one_connect(argvs[kind], stamps[kind], CACHED, versions[kind])))
        if keep:
            for case, sample in outcome:
                samples[case].append(sample)

    for unit in units:  # warm-up: imports, .pyc, page cache
        do(unit, keep=False)
    for rep in range(reps):
        for unit in rotate(units, rep):  # type: ignore[arg-type]
            gc.collect()
            do(unit, keep=True)
        if (rep + 1) % 10 == 0 or rep + 1 == reps:
            log(f"  repetition {rep + 1}/{reps}: " + ", ".join(
                f"{k}/{m} {samples[(k, m)][-1]['after_ready_ms']:.2f}"
                for k, m in CASES) + " ms after ready")

    out: Dict[str, Any] = {"cases": {}, "differences": {}}
    for case, rows in samples.items():
        entry: Dict[str, Any] = {
            key: median([r[key] for r in rows])
            for key in ("total_ms", "spawn_to_ready_ms", "after_ready_ms", "connect_ms",
                        "rtt_us") if key in rows[0]}
        if "era" in rows[0]:
            entry["era"] = sorted({r["era"] for r in rows})
            entry["version"] = sorted({r["version"] for r in rows})
        entry["runs"] = rows
        out["cases"][" / ".join(case)] = entry
    for kind in KINDS:
        rtt_us = median([r["rtt_us"] for m in (PINNED, AUTO, CACHED)
                         for r in samples[(kind, m)]])
        pinned = samples[(kind, PINNED)]
        for mode in (AUTO, CACHED):
            rows = samples[(kind, mode)]
            after = median_ci([(a["after_ready_ms"] - p["after_ready_ms"]) * 1e3
                               for a, p in zip(rows, pinned)])
            total = median_ci([(a["total_ms"] - p["total_ms"]) * 1e3
                               for a, p in zip(rows, pinned)])
            out["differences"][f"{kind} / {mode}"] = {
                "after_ready_us": after, "total_us": total, "rtt_us": rtt_us,
                "round_trips": after["median"] / rtt_us}
        out.setdefault("rtt_us", {})[kind] = rtt_us
    return out


def fmt_ci(d: Dict[str, float], unit: str = "µs") -> str:
    return f"{d['median']:+.0f} {unit} [{d['ci_low']:+.0f}, {d['ci_high']:+.0f}]"


def render(results: Dict[str, Any]) -> str:
    meta = results["meta"]
    data = results["connect"]
    rtt = data["rtt_us"]
    lines = [
        "# mcp_sync connect-to-first-result benchmark (stdio)",
        "",
        f"{meta['date']} · Python {meta['python']} · {meta['cpu']} · {meta['nproc']} CPUs · "
        f"mcp_sync {meta['mcp_sync_version']} ({meta['git']}) · pinning: {meta['pinning']} · "
        f"{meta['config']['reps']} repetitions",
        "",
        "Medians over repetitions (the cases rotate within each). \"server ready\" is the "
        "moment the freshly spawned server starts reading stdin (stamped by the server on "
        "the same monotonic clock). Δ = median of the paired differences (same repetition) "
        "to the pinned case on the same server, with a ~95% confidence interval; in round "
        "trips of one `tools/call` on a connected client.",
        "",
        "| case | connect → first result | spawn → server ready | server ready → first result "
        "| Δ after ready vs pinned | Δ in round trips | Δ total vs pinned |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for case in [*CASES, FLOOR]:
        key = " / ".join(case)
        entry = data["cases"].get(key)
        if entry is None:
            continue
        diff = data["differences"].get(key)
        cells = [CASE_LABELS[case], f"{entry['total_ms']:.1f} ms",
                 f"{entry['spawn_to_ready_ms']:.1f} ms", f"{entry['after_ready_ms']:.2f} ms"]
        if diff:
            cells += [fmt_ci(diff["after_ready_us"]), f"{diff['round_trips']:.1f}",
                      fmt_ci(diff["total_us"])]
        else:
            cells += ["—", "—", "—"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        f"One `tools/call` round trip on a connected client (median of {RTT_CALLS} calls per "
        f"connection, over all connections): session-era server {rtt['session']:.0f} µs, stateless "
        f"server {rtt['stateless']:.0f} µs.",
        "",
    ]
    eras = {key: (e.get("era"), e.get("version")) for key, e in data["cases"].items()
            if "era" in e}
    lines.append("Negotiated: " + "; ".join(
        f"{key}: {', '.join(map(str, era))} {', '.join(map(str, version))}"
        for key, (era, version) in eras.items()) + ".")
    lines += ["", "## mcp_sync targets", "", "| target | measured | verdict |",
              "| --- | ---: | :---: |"]
    for target in results["targets"]:
        lines.append(f"| {target['name']} | {target['measured']} | {target['verdict']} |")
    lines.append("")
    notes = results.get("notes") or []
    if notes:
        lines += ["## Notes", ""] + [f"* {note}" for note in notes] + [""]
    return "\n".join(lines)


def targets(data: Dict[str, Any]) -> List[Dict[str, str]]:
    out = []
    diff = data["differences"].get(f"session / {AUTO}")
    if diff:
        d, rtt = diff["after_ready_us"], diff["rtt_us"]
        limit = TARGET_EXTRA_ROUND_TRIPS * rtt
        out.append({
            "name": "auto - pinned, session-era server (answers server/discover with -32601): "
                    f"<= {TARGET_EXTRA_ROUND_TRIPS:g} round trip + noise",
            "measured": f"{d['median']:.0f} µs = {diff['round_trips']:.1f} round trips of "
                        f"{rtt:.0f} µs (noise ±{d['half_width']:.0f} µs)",
            "verdict": verdict(d["median"] - d["half_width"] <= limit)})
    return out


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="fewer repetitions (~15 s)")
    p.add_argument("--reps", type=int, help="repetitions of every case (60; quick 15)")
    p.add_argument("--no-pin", action="store_true", help="do not pin client and server to CPUs")
    p.add_argument("--out", default=str(RESULTS),
                   help="directory for latest-connect.md and .json (bench/results)")
    args = p.parse_args(argv)
    if args.reps is None:
        args.reps = 15 if args.quick else 60
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    pinning = common.pin(args.no_pin)  # before any thread exists
    server_extra = list(common.SERVER_ARGS)
    log(f"pinning: {pinning}; {args.reps} repetitions")
    load = common.load_average()
    if load is not None and load > 0.5 * (os.cpu_count() or 1):
        log(f"warning: the 1-minute load average is {load:.1f} on {os.cpu_count()} CPUs: "
            "other processes are busy and the figures will be noisy")
    started = time.perf_counter()
    meta = common.machine_meta(args, ["mcp_sync"], pinning)
    results: Dict[str, Any] = {"meta": meta}
    meter = NoiseMeter()
    with tempfile.TemporaryDirectory(prefix="mcp-sync-bench-") as tmp:
        results["connect"] = run(args.reps, server_extra, Path(tmp))
    noise = meter.stop()
    results["noise"] = noise
    results["targets"] = targets(results["connect"])
    notes = []
    if noise:
        notes.append(f"other processes kept {noise['foreign_cpus']:.2f} CPUs busy during the "
                     f"run (hypervisor steal {noise['steal_cpus']:.2f}); the spawn times "
                     "suffer most, the after-ready differences least.")
    results["notes"] = notes
    meta["duration_s"] = round(time.perf_counter() - started, 1)
    text = render(results) + f"\nTotal run time: {meta['duration_s']:.0f} s.\n"
    print(text)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "latest-connect.md").write_text(text, encoding="utf-8")
    (out / "latest-connect.json").write_text(json.dumps(results, indent=2, default=str) + "\n",
                                             encoding="utf-8")
    log(f"wrote {out / 'latest-connect.md'} and {out / 'latest-connect.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
