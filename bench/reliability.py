#!/usr/bin/env python
"""Reliability figures: faults survived, fuzz executions, load held, leaks after N
connect/close cycles, RSS over a soak, peak RSS under floods. Writes the table in
docs/reliability.md.

    python bench/reliability.py            # CI sizes, ~4 minutes on a 2-core VM
    python bench/reliability.py --full     # 64 x 2,000 calls, 1,000 cycles, a 10-minute
                                           # soak, long fuzzing: ~35 minutes
    python bench/reliability.py --only load,leaks --no-write

What runs (each part can be sized by hand, see --help):

* faults: ``pytest tests/faults``; every case records the error it observed and how long
  it took against its bound (``MCP_SYNC_FAULT_LOG``).
* fuzz: ``pytest tests/security/test_fuzz.py`` with ``MCP_SYNC_FUZZ_EXAMPLES`` examples per
  hypothesis property and ``MCP_SYNC_ATHERIS_SECONDS`` per atheris target; counts every
  execution of every target.
* load: 64 threads share one client; each makes N echo calls (stdio; HTTP with JSON
  replies; HTTP with SSE replies). Every answer is checked against its call.
* leaks: N connect / call / close cycles (stdio, HTTP); mcp-sync threads, all threads,
  open descriptors and child processes before and after.
* soak: 4 threads on a stdio client and 4 on an HTTP client at once, for S seconds; the
  process's RSS sampled every few seconds.
* floods: a stdio server floods N log records while the client's ``logging_handler`` is
  stuck, then N pings while every handler thread is stuck in ``roots/list``; the peak
  RSS growth of the process (``VmHWM``, reset before each flood), what was dropped, and
  how many pings were answered.

The table goes between the ``figures`` markers in docs/reliability.md (the prose around
it is left alone); every raw number goes to bench/results/reliability.json (git-ignored).
Progress goes to stderr. Needs Linux (``/proc``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any, Dict, List, Optional

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.faults import workloads  # noqa: E402 - after the path tweak

DOC = ROOT / "docs" / "reliability.md"
RESULTS = ROOT / "bench" / "results"
BEGIN, END = "<!-- figures:begin -->", "<!-- figures:end -->"

QUICK = {"calls": 200, "http_calls": 60, "stdio_cycles": 200, "http_cycles": 300,
         "soak": 30.0, "examples": 300, "atheris": 10, "flood": 300_000}
FULL = {"calls": 2000, "http_calls": 2000, "stdio_cycles": 1000, "http_cycles": 1000,
        "soak": 600.0, "examples": 5000, "atheris": 300, "flood": 1_000_000}
PARTS = ("faults", "fuzz", "load", "leaks", "soak", "floods")


def log(message: str) -> None:
    sys.stderr.write(f"[reliability {time.strftime('%H:%M:%S')}] {message}\n")
    sys.stderr.flush()


def pytest(args: List[str], env: Dict[str, str], junit: Path) -> Dict[str, Any]:
    """Run pytest in a child process; returns its counts from the JUnit report."""
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", f"--junitxml={junit}",
                             *args], cwd=str(ROOT), env={**os.environ, **env},
                            capture_output=True, text=True)
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    if junit.exists():
        suite = ElementTree.parse(junit).getroot()
        suite = suite if suite.tag == "testsuite" else suite[0]
        for key in counts:
            counts[key] = int(suite.get(key, 0))
    counts["seconds"] = round(time.monotonic() - started, 1)
    counts["exit"] = result.returncode
    if result.returncode != 0:
        log(f"pytest {' '.join(args)} failed:\n{result.stdout[-3000:]}")
    return counts


# -- the parts ---------------------------------------------------------------------------------


def run_faults(work: Path) -> Dict[str, Any]:
    log("faults: pytest tests/faults")
    path = work / "faults.json"
    counts = pytest(["tests/faults"], {"MCP_SYNC_FAULT_LOG": str(path)}, work / "faults.xml")
    observed = json.loads(path.read_text()) if path.exists() else []
    return {"counts": counts, "observed": observed}


def run_fuzz(work: Path, examples: int, atheris_seconds: int) -> Dict[str, Any]:
    log(f"fuzz: hypothesis {examples} examples per property, atheris {atheris_seconds} s "
        f"per target")
    hypothesis_log, atheris_log = work / "fuzz.json", work / "atheris.json"
    # Three atheris targets run inside one test: lift pytest-timeout's per-test bound.
    counts = pytest(["tests/security/test_fuzz.py", f"--timeout={3 * atheris_seconds + 900}"], {
        "MCP_SYNC_FUZZ_EXAMPLES": str(examples), "MCP_SYNC_FUZZ_LOG": str(hypothesis_log),
        "MCP_SYNC_ATHERIS_SECONDS": str(atheris_seconds),
        "MCP_SYNC_ATHERIS_LOG": str(atheris_log)}, work / "fuzz.xml")
    return {"counts": counts, "examples": examples,
            "hypothesis": json.loads(hypothesis_log.read_text())
            if hypothesis_log.exists() else {},
            "atheris": json.loads(atheris_log.read_text()) if atheris_log.exists() else {}}


def load_figures(result: workloads.LoadResult) -> Dict[str, Any]:
    return {"threads": result.threads, "calls": result.calls, "total": result.total,
            "ok": result.ok, "lost": result.lost, "mismatched": result.mismatched,
            "seconds": round(result.seconds, 1), "rate": round(result.rate),
            "errors": result.errors[:5]}


def run_load(calls: int, http_calls: int) -> Dict[str, Any]:
    figures: Dict[str, Any] = {}
    log(f"load: stdio, 64 threads x {calls} calls")
    client = workloads.stdio_client()
    try:
        figures["stdio"] = load_figures(workloads.hammer(client, 64, calls, timeout=3600))
    finally:
        client.close()
    for reply in ("json", "sse"):
        log(f"load: HTTP ({reply} replies), 64 threads x {http_calls} calls")
        with workloads.HttpServerProcess(reply) as server:
            client = workloads.http_client(server.url)
            try:
                figures[f"http-{reply}"] = load_figures(
                    workloads.hammer(client, 64, http_calls, timeout=3600))
            finally:
                client.close()
    return figures


def snapshot(value: workloads.Snapshot) -> Dict[str, int]:
    return {"mcp_threads": value.mcp_threads, "threads": value.threads, "fds": value.fds,
            "children": value.children, "rss_kib": value.rss_kib}


def run_leaks(stdio_cycles: int, http_cycles: int) -> Dict[str, Any]:
    figures: Dict[str, Any] = {}
    log(f"leaks: {stdio_cycles} stdio connect/close cycles")
    result = workloads.cycle(workloads.stdio_client, stdio_cycles)
    figures["stdio"] = {"cycles": stdio_cycles, "before": snapshot(result.before),
                        "after": snapshot(result.after), "seconds": round(result.seconds, 1),
                        "failures": result.failures[:5], "leaked": result.leaked}
    log(f"leaks: {http_cycles} HTTP connect/close cycles")
    with workloads.HttpServerProcess("sse") as server:
        result = workloads.cycle(lambda: workloads.http_client(server.url), http_cycles)
    figures["http"] = {"cycles": http_cycles, "before": snapshot(result.before),
                       "after": snapshot(result.after), "seconds": round(result.seconds, 1),
                       "failures": result.failures[:5], "leaked": result.leaked}
    return figures


def run_soak(seconds: float) -> Dict[str, Any]:
    """4 threads on a stdio client and 4 on an HTTP client, at once."""
    import threading

    log(f"soak: {seconds:.0f} s, stdio and HTTP at once")
    interval = 1.0 if seconds < 120 else 5.0
    with workloads.HttpServerProcess("sse") as server:
        stdio_client = workloads.stdio_client()
        http_client = workloads.http_client(server.url)
        outcome: Dict[str, workloads.SoakResult] = {}
        try:
            http_soak = threading.Thread(
                target=lambda: outcome.__setitem__("http", workloads.soak(
                    http_client, seconds, threads=4, warmup=10.0, interval=interval)),
                name="soak-http")
            http_soak.start()
            outcome["stdio"] = workloads.soak(stdio_client, seconds, threads=4, warmup=10.0,
                                              interval=interval)
            http_soak.join(seconds + 120)
        finally:
            stdio_client.close()
            http_client.close()
    samples = outcome["stdio"].samples  # the process's RSS: both clients in it
    return {"seconds": seconds, "interval": interval,
            "calls": {name: result.calls for name, result in outcome.items()},
            "failures": {name: result.failures for name, result in outcome.items()},
            "rss_first_mib": round(samples[0] / 1024, 1) if samples else None,
            "rss_max_mib": round(max(samples) / 1024, 1) if samples else None,
            "rss_last_mib": round(samples[-1] / 1024, 1) if samples else None,
            "growth_kib": outcome["stdio"].growth_kib, "samples_kib": samples}


def run_floods(count: int) -> Dict[str, Any]:
    """Peak RSS while a server floods a client whose callbacks or handlers are stuck."""
    figures: Dict[str, Any] = {}
    log(f"floods: {count:,} log records, logging_handler stuck")
    logs = workloads.log_flood(count, timeout=600.0)
    figures["log"] = {"count": count, "seconds": round(logs.seconds, 1),
                      "growth_kib": logs.growth_kib, "dropped": logs.dropped,
                      "delivered": logs.delivered, "call_during": logs.call_during == "during",
                      "warnings": len(logs.warnings)}
    log(f"floods: {count:,} pings, every handler thread busy")
    pings = workloads.request_flood(count, kind="ping", timeout=600.0)
    figures["ping"] = {"count": count, "seconds": round(pings.seconds, 1),
                       "growth_kib": pings.growth_kib, "answered": pings.answered,
                       "refused": pings.refused, "call_during": pings.call_during == "during",
                       "warnings": len(pings.warnings)}
    return figures


# -- the table -----------------------------------------------------------------------------------


def _mib(kib: int) -> str:
    return f"{kib / 1024:.1f}"


def render(figures: Dict[str, Any]) -> str:
    meta = figures["meta"]
    lines = [f"Measured {meta['date']} on {meta['machine']} (Python {meta['python']}, "
             f"{meta['cpus']} CPUs), commit `{meta['commit']}`, `{meta['command']}`."]
    if meta.get("carried_over"):
        lines[0] += f" Kept from earlier runs: {', '.join(meta['carried_over'])}."
    lines.append("")
    faults = figures.get("faults")
    if faults:
        counts = faults["counts"]
        passed = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
        lines += [f"**Faults**: {passed} of {counts['tests']} fault cases survived "
                  f"({counts['failures'] + counts['errors']} failed, {counts['skipped']} "
                  f"skipped) in {counts['seconds']} s.", "",
                  "| fault | observed | after | bound |", "| --- | --- | --- | --- |"]
        for row in faults["observed"]:
            observed = re.sub(r"(https?)://127\.0\.0\.1:\d+", r"\1://…", row["observed"])
            observed = observed.replace("|", "\\|").replace("\n", " ")
            if len(observed) > 110:
                observed = observed[:107] + "..."
            lines.append(f"| {row['fault']} | {observed} | {row['elapsed']:.2f} s | "
                         f"{row['bound']:g} s |")
        lines.append("")
    fuzz = figures.get("fuzz")
    if fuzz:
        counts = fuzz["counts"]
        hypothesis = fuzz["hypothesis"]
        atheris = fuzz["atheris"]
        lines += ["**Fuzzing** (no failure means every property held on every input):", "",
                  "| target | hypothesis executions | atheris runs | result |",
                  "| --- | --- | --- | --- |"]
        runs = atheris.get("runs", {})
        for target in ("classify", "routing", "jsonl", "sse", "schema"):
            ran = runs.get(target)
            shown = "" if ran is None else f"{ran:,}"
            if target == "classify" and "routing" in runs:  # run on every routing input
                shown = f"{runs['routing']:,} (with routing)"
            lines.append(f"| {target} | {hypothesis.get(target, 0):,} | {shown} | "
                         f"{'held' if counts['exit'] == 0 else 'FAILED (see log)'} |")
        lines += ["", f"hypothesis: {fuzz['examples']:,} examples per property; atheris: "
                  f"{atheris.get('seconds_per_target', '?')} s per target "
                  f"({counts['seconds']} s in all).", ""]
    load = figures.get("load")
    if load:
        lines += ["**Load** (64 threads on one client, every answer checked against its "
                  "call):", "", "| transport | calls | ok | lost | mismatched | time | rate |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for name, row in load.items():
            lines.append(f"| {name} | {row['threads']} x {row['calls']:,} | {row['ok']:,} | "
                         f"{row['lost']} | {row['mismatched']} | {row['seconds']} s | "
                         f"{row['rate']:,}/s |")
        lines.append("")
    leaks = figures.get("leaks")
    if leaks:
        lines += ["**Leaks** (connect, one call, close; the process before and after):", "",
                  "| transport | cycles | mcp-sync threads | all threads | open fds | "
                  "children | RSS MiB | failures |", "| --- | --- | --- | --- | --- | --- | "
                  "--- | --- |"]
        for name, row in leaks.items():
            before, after = row["before"], row["after"]
            lines.append(
                f"| {name} | {row['cycles']:,} in {row['seconds']} s | "
                f"{before['mcp_threads']} → {after['mcp_threads']} | "
                f"{before['threads']} → {after['threads']} | {before['fds']} → {after['fds']} | "
                f"{before['children']} → {after['children']} | "
                f"{_mib(before['rss_kib'])} → {_mib(after['rss_kib'])} | {len(row['failures'])} |")
        lines.append("")
    soak = figures.get("soak")
    if soak:
        calls = soak["calls"]
        lines += [f"**Soak**: {soak['seconds']:.0f} s with 4 threads on a stdio client and 4 "
                  f"on an HTTP client at once: {calls.get('stdio', 0):,} + "
                  f"{calls.get('http', 0):,} calls, {sum(soak['failures'].values())} "
                  f"failures; RSS {soak['rss_first_mib']} MiB at the start, "
                  f"{soak['rss_max_mib']} MiB at most, {soak['rss_last_mib']} MiB at the end "
                  f"(growth, median of the last quarter minus the first: "
                  f"{soak['growth_kib']} KiB).", ""]
    floods = figures.get("floods")
    if floods:
        lines += ["**Floods** (stdio; peak RSS of the process over its RSS before the flood; "
                  "a call made during each flood is answered):", "",
                  "| flood | while | time | peak RSS growth | outcome |",
                  "| --- | --- | --- | --- | --- |"]
        logs, pings = floods.get("log"), floods.get("ping")
        if logs:
            lines.append(f"| {logs['count']:,} log records | the logging_handler is stuck | "
                         f"{logs['seconds']} s | {_mib(logs['growth_kib'])} MiB | "
                         f"{logs['dropped']:,} dropped (one warning), {logs['delivered']:,} "
                         f"delivered |")
        if pings:
            lines.append(f"| {pings['count']:,} pings | every handler thread is busy | "
                         f"{pings['seconds']} s | {_mib(pings['growth_kib'])} MiB | "
                         f"{pings['answered']:,} answered |")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def write_doc(table: str) -> None:
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else f"{BEGIN}\n{END}\n"
    if BEGIN not in text or END not in text:
        text += f"\n{BEGIN}\n{END}\n"
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(f"{head}{BEGIN}\n{table}{END}{tail}", encoding="utf-8")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="the full sizes")
    parser.add_argument("--only", default=",".join(PARTS),
                        help=f"comma-separated parts: {', '.join(PARTS)}")
    parser.add_argument("--calls", type=int, help="calls per thread over stdio")
    parser.add_argument("--http-calls", type=int, help="calls per thread over HTTP")
    parser.add_argument("--stdio-cycles", type=int)
    parser.add_argument("--http-cycles", type=int)
    parser.add_argument("--soak", type=float, help="soak seconds")
    parser.add_argument("--examples", type=int, help="hypothesis examples per property")
    parser.add_argument("--atheris", type=int, help="atheris seconds per target")
    parser.add_argument("--flood", type=int, help="messages per flood")
    parser.add_argument("--no-write", action="store_true", help="do not touch docs/")
    options = parser.parse_args(argv)
    sizes = dict(FULL if options.full else QUICK)
    for key in sizes:
        value = getattr(options, key, None)
        if value is not None:
            sizes[key] = value
    parts = [part for part in options.only.split(",") if part]
    unknown = set(parts) - set(PARTS)
    if unknown:
        parser.error(f"unknown parts: {', '.join(sorted(unknown))}")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=str(ROOT),
                            capture_output=True, text=True).stdout.strip() or "?"
    dirty = subprocess.run(["git", "status", "--porcelain", "mcp_sync"], cwd=str(ROOT),
                           capture_output=True, text=True).stdout.strip()
    figures: Dict[str, Any] = {"meta": {
        "date": datetime.date.today().isoformat(), "python": platform.python_version(),
        "machine": f"{platform.system()} {platform.machine()}", "cpus": os.cpu_count(),
        "commit": commit + ("+changes" if dirty else ""),
        "command": " ".join(["python bench/reliability.py", *(argv if argv is not None
                                                                else sys.argv[1:])]),
        "sizes": sizes}}
    with tempfile.TemporaryDirectory(prefix="mcp-sync-reliability-") as scratch:
        work = Path(scratch)
        if "faults" in parts:
            figures["faults"] = run_faults(work)
        if "fuzz" in parts:
            figures["fuzz"] = run_fuzz(work, sizes["examples"], sizes["atheris"])
    if "load" in parts:
        figures["load"] = run_load(sizes["calls"], sizes["http_calls"])
    if "leaks" in parts:
        figures["leaks"] = run_leaks(sizes["stdio_cycles"], sizes["http_cycles"])
    if "soak" in parts:
        figures["soak"] = run_soak(sizes["soak"])
    if "floods" in parts:
        figures["floods"] = run_floods(sizes["flood"])
    # Which command measured each part: a partial run keeps the other parts' figures
    # from the runs that measured them.
    figures["provenance"] = {part: figures["meta"]["command"] for part in parts}
    carried = []
    previous_path = RESULTS / "reliability.json"
    if set(parts) != set(PARTS) and previous_path.exists():
        previous = json.loads(previous_path.read_text(encoding="utf-8"))
        for part in PARTS:
            if part not in parts and part in previous:
                figures[part] = previous[part]
                source = previous.get("provenance", {}).get(part, previous["meta"]["command"])
                figures["provenance"][part] = source
                carried.append(f"{part} (`{source}`)")
    figures["meta"]["carried_over"] = carried
    missing = [part for part in PARTS if part not in figures]
    if missing and not options.no_write:
        # The figures block is written whole: a partial run with nothing to carry over
        # (bench/results/ is not kept in git) would wipe the other parts' tables.
        sys.stderr.write(f"not writing {DOC.name}: no figures for {', '.join(missing)} "
                         "(run every part once, or pass --no-write)\n")
        options.no_write = True
    table = render(figures)
    sys.stdout.write(table)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "reliability.json").write_text(json.dumps(figures, indent=1), encoding="utf-8")
    if not options.no_write:
        write_doc(table)
        log(f"wrote the table to {DOC.relative_to(ROOT)}")
    failed = any(figures.get(part, {}).get("counts", {}).get("exit", 0) for part in
                 ("faults", "fuzz"))
    failed = failed or any(row["lost"] or row["mismatched"] for row in
                           figures.get("load", {}).values())
    failed = failed or any(row["leaked"] or row["failures"] for row in
                           figures.get("leaks", {}).values())
    pings = figures.get("floods", {}).get("ping")
    failed = failed or bool(pings and pings["answered"] != pings["count"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
