#!/usr/bin/env python
"""Toolbox: what running a model's tool calls through ``mcp_sync.Toolbox`` costs, and what
the tool cache saves a script whose servers start slowly.

    python bench/bench_toolbox.py            # full run, ~1-2 minutes on a 2-core VM
    python bench/bench_toolbox.py --quick    # ~20 s (noisier)

Two sections, both against the stdlib-only ``bench/echo_server.py`` on stdio:

* **turn**: one connected client. A turn of 8 ``echo`` calls run by
  ``toolbox.answer_openai(message)`` (sent as 8 futures from the caller, arguments parsed from JSON,
  results turned into tool messages) against the same 8 calls made directly with
  ``client.call_tool`` from a pool of 8 threads that lives for the whole run; and one call
  (the toolbox runs it on the caller's thread) against one direct call. The kinds take
  turns in blocks, in rotating order; each figure is the median over blocks of the
  per-block ratio of the medians. Every answer is checked.
* **cold**: a fresh script process (``python -c``) whose one server waits
  ``--start-delay`` seconds before it serves (as one started by ``npx`` does): the time
  from spawning the script to its tools in hand (``toolbox.to_openai()``), and to the
  result of its first call, without the cache (``Manager(config)``: ``connect()`` waits for
  the server) and with it (``Manager(config, tool_cache=DIR, connect_timeout=0)``: the
  tools come from the saved listing; the call waits for the server). The two kinds
  alternate after one untimed run that fills the cache and one untimed run each; ratios
  are taken
  per pair of runs. The protocol version is pinned in both, so that no era probe (which
  waits up to a second for a server that does not answer yet) blurs the comparison.

Writes a Markdown table to stdout and to ``bench/results/latest-toolbox.md``, and the raw
numbers to ``bench/results/latest-toolbox.json``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import bench_stdio as common  # noqa: E402 - after the path tweak; puts this checkout on sys.path
from bench_stdio import NoiseMeter, log, median, ratio_summary, rotate  # noqa: E402

RESULTS = BENCH / "results"
WORKERS = 8
TOOLBOX8, DIRECT8, TOOLBOX1, DIRECT1 = "toolbox-8", "direct-8", "toolbox-1", "direct-1"
TURN_KINDS = (TOOLBOX8, DIRECT8, TOOLBOX1, DIRECT1)
NO_CACHE, CACHE = "no-cache", "cache"

# The script process of the cold section; its one argument is a JSON object.
_CHILD = r'''
import json, sys
P = json.loads(sys.argv[1])
import mcp_sync
config = {"mcpServers": {"echo": {"command": P["argv"][0], "args": P["argv"][1:]}}}
options = {"tool_cache": P["cache"], "connect_timeout": P["connect_timeout"]} if (
    P["cache"]) else {}
with mcp_sync.Manager(config, protocol_version="2025-11-25", **options) as manager:
    toolbox = mcp_sync.Toolbox(manager)
    tools = toolbox.to_openai()
    assert [t["function"]["name"] for t in tools] == ["echo__echo"], manager.status()
    print("tools", flush=True)
    answer = toolbox.answer_openai({"tool_calls": [{"id": "1", "function": {
        "name": "echo__echo", "arguments": '{"text": "cold"}'}}]})
    assert answer[0]["content"] == "cold", answer
    print("result", flush=True)
'''


def turn_message(texts: Sequence[str]) -> Dict[str, Any]:
    return {"role": "assistant", "tool_calls": [
        {"id": f"c{i}", "type": "function",
         "function": {"name": "echo__echo", "arguments": json.dumps({"text": text})}}
        for i, text in enumerate(texts)]}


def section_turn(blocks: int, turns: int) -> Dict[str, Any]:
    import mcp_sync

    client = mcp_sync.connect(common.server_argv(), name="echo")
    pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="bench-direct")
    toolbox = mcp_sync.Toolbox(client, max_workers=WORKERS)
    counter = iter(range(10**9))

    def texts(n: int) -> List[str]:
        return [f"t{next(counter)}" for _ in range(n)]

    def via_toolbox(n: int) -> None:
        sent = texts(n)
        answers = toolbox.answer_openai(turn_message(sent))
        assert [a["content"] for a in answers] == sent, answers

    def direct(n: int) -> None:
        sent = texts(n)
        if n == 1:
            got = [client.call_tool("echo", {"text": sent[0]}).text]
        else:
            futures = [pool.submit(client.call_tool, "echo", {"text": t}) for t in sent]
            got = [f.result(60).text for f in futures]
        assert got == sent, got

    runs: Dict[str, Callable[[], None]] = {
        TOOLBOX8: lambda: via_toolbox(WORKERS), DIRECT8: lambda: direct(WORKERS),
        TOOLBOX1: lambda: via_toolbox(1), DIRECT1: lambda: direct(1)}
    try:
        toolbox.to_openai()
        for run in runs.values():  # warm-up: imports, thread paths, the client's caches
            for _ in range(10):
                run()
        per_block: Dict[str, List[float]] = {k: [] for k in TURN_KINDS}
        for block in range(blocks):
            for kind in rotate(TURN_KINDS, block):
                gc.collect()
                times = []
                for _ in range(turns):
                    start = time.perf_counter()
                    runs[kind]()
                    times.append((time.perf_counter() - start) * 1e6)
                per_block[kind].append(median(times))
            log(f"  block {block + 1}/{blocks}: " + ", ".join(
                f"{k} {per_block[k][-1]:.0f} us" for k in TURN_KINDS))
    finally:
        pool.shutdown(wait=True)
        client.close()
    return {
        "us": {k: median(v) for k, v in per_block.items()},
        "blocks_us": per_block,
        "ratios": {
            "turn8": ratio_summary([a / b for a, b in zip(per_block[TOOLBOX8],
                                                          per_block[DIRECT8])]),
            "call1": ratio_summary([a / b for a, b in zip(per_block[TOOLBOX1],
                                                          per_block[DIRECT1])]),
        },
        "_meta": {"blocks": blocks, "turns_per_block": turns, "workers": WORKERS},
    }


def cold_run(cache: Optional[str], delay: float, fill: bool = False) -> Dict[str, float]:
    """Spawn the script; ms from the spawn to its tools in hand and to its first result.
    ``fill``: with the cache, but connecting first (the run that saves the listing)."""
    argv = [*common.server_argv(), "--start-delay", str(delay)]
    params = json.dumps({"argv": argv, "cache": cache, "connect_timeout": 60 if fill else 0})
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, params], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=common.child_env(),
                            cwd=str(common.ROOT))
    assert proc.stdout is not None
    marks = {}
    for expected in ("tools", "result"):
        line = proc.stdout.readline().decode().strip()
        marks[expected] = (time.perf_counter() - start) * 1e3
        if line != expected:
            break
    _, err = proc.communicate(timeout=120)
    if proc.returncode != 0 or len(marks) != 2:
        raise RuntimeError(f"cold script failed ({proc.returncode}): {err.decode()[-3000:]}")
    return {"tools_ms": marks["tools"], "result_ms": marks["result"]}


def section_cold(runs: int, delay: float) -> Dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="mcp-sync-bench-cache-") as directory:
        caches = {NO_CACHE: None, CACHE: directory}
        cold_run(directory, delay, fill=True)  # saves the listing; warms .pyc, page cache
        for kind in (NO_CACHE, CACHE):  # warm-up
            cold_run(caches[kind], delay)
        samples: Dict[str, List[Dict[str, float]]] = {NO_CACHE: [], CACHE: []}
        for run in range(runs):
            for kind in rotate((NO_CACHE, CACHE), run):
                samples[kind].append(cold_run(caches[kind], delay))
            log(f"  run {run + 1}/{runs}: " + ", ".join(
                f"{k} tools {samples[k][-1]['tools_ms']:.0f} ms, result "
                f"{samples[k][-1]['result_ms']:.0f} ms" for k in (NO_CACHE, CACHE)))
    out: Dict[str, Any] = {
        kind: {key: median([r[key] for r in rows]) for key in ("tools_ms", "result_ms")}
        for kind, rows in samples.items()}
    out["runs"] = samples
    out["ratios"] = {key: ratio_summary([c[key] / n[key] for c, n in zip(
        samples[CACHE], samples[NO_CACHE])]) for key in ("tools_ms", "result_ms")}
    out["_meta"] = {"runs": runs, "start_delay_s": delay}
    return out


def render(results: Dict[str, Any]) -> str:
    meta = results["meta"]
    lines = [
        "# mcp_sync Toolbox benchmark (stdio)",
        "",
        f"{meta['date']} · Python {meta['python']} · {meta['cpu']} · {meta['nproc']} CPUs · "
        f"mcp_sync {meta['mcp_sync_version']} ({meta['git']}) · pinning: {meta['pinning']}",
        "",
    ]
    turn = results.get("turn")
    if turn:
        us, r = turn["us"], turn["ratios"]
        m = turn["_meta"]
        lines += [
            f"## A model's turn ({m['blocks']} blocks of {m['turns_per_block']} turns)",
            "",
            "| turn | Toolbox.answer_openai | direct client.call_tool | ratio (median of "
            "blocks; min-max) |",
            "| --- | ---: | ---: | ---: |",
            f"| {m['workers']} calls in parallel | {us[TOOLBOX8]:.0f} us | {us[DIRECT8]:.0f} us "
            f"| {r['turn8']['median']:.2f}x ({r['turn8']['min']:.2f}-{r['turn8']['max']:.2f}) |",
            f"| 1 call | {us[TOOLBOX1]:.0f} us | {us[DIRECT1]:.0f} us | "
            f"{r['call1']['median']:.2f}x ({r['call1']['min']:.2f}-{r['call1']['max']:.2f}) |",
            "",
        ]
    cold = results.get("cold")
    if cold:
        r = cold["ratios"]
        m = cold["_meta"]
        lines += [
            f"## A cold script, server start delayed {m['start_delay_s']:g} s "
            f"({m['runs']} runs each)",
            "",
            "| from spawn to | no cache | tool cache | ratio (median of pairs; min-max) |",
            "| --- | ---: | ---: | ---: |",
            f"| tools in hand (`to_openai()`) | {cold[NO_CACHE]['tools_ms']:.0f} ms | "
            f"{cold[CACHE]['tools_ms']:.0f} ms | {r['tools_ms']['median']:.2f}x "
            f"({r['tools_ms']['min']:.2f}-{r['tools_ms']['max']:.2f}) |",
            f"| first call's result | {cold[NO_CACHE]['result_ms']:.0f} ms | "
            f"{cold[CACHE]['result_ms']:.0f} ms | {r['result_ms']['median']:.2f}x "
            f"({r['result_ms']['min']:.2f}-{r['result_ms']['max']:.2f}) |",
            "",
            "With the cache the script has its tools while the server is still starting (a "
            "model request can go out then); its first call still waits for the server.",
            "",
        ]
    notes = results.get("notes") or []
    if notes:
        lines += ["## Notes", ""] + [f"* {note}" for note in notes] + [""]
    return "\n".join(lines)


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="fewer blocks and runs (~20 s)")
    p.add_argument("--only", default="turn,cold", help="sections: turn,cold")
    p.add_argument("--blocks", type=int, help="blocks of the turn section (20; quick 5)")
    p.add_argument("--turns", type=int, help="turns per block and kind (50; quick 20)")
    p.add_argument("--cold-runs", type=int, help="cold scripts of each kind (11; quick 3)")
    p.add_argument("--start-delay", type=float, default=1.0,
                   help="seconds the server waits before serving, cold section (1.0)")
    p.add_argument("--no-pin", action="store_true", help="do not pin client and server to CPUs")
    p.add_argument("--out", default=str(RESULTS),
                   help="directory for latest-toolbox.md and .json (bench/results)")
    args = p.parse_args(argv)
    args.blocks = args.blocks or (5 if args.quick else 20)
    args.turns = args.turns or (20 if args.quick else 50)
    args.cold_runs = args.cold_runs or (3 if args.quick else 11)
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    sections = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(sections) - {"turn", "cold"}
    if unknown:
        raise SystemExit(f"unknown sections: {sorted(unknown)}")
    pinning = common.pin(args.no_pin)  # before any thread exists
    log(f"pinning: {pinning}; sections: {', '.join(sections)}")
    load = common.load_average()
    if load is not None and load > 0.5 * (os.cpu_count() or 1):
        log(f"warning: the 1-minute load average is {load:.1f} on {os.cpu_count()} CPUs: "
            "other processes are busy and the figures will be noisy")
    started = time.perf_counter()
    meta = common.machine_meta(args, ["mcp_sync"], pinning)
    results: Dict[str, Any] = {"meta": meta}
    noise: Dict[str, Any] = {}
    if "turn" in sections:
        log(f"a turn of {WORKERS} calls and of 1 call ...")
        meter = NoiseMeter()
        results["turn"] = section_turn(args.blocks, args.turns)
        noise["turn"] = meter.stop()
    if "cold" in sections:
        log(f"cold scripts, server start delayed {args.start_delay:g} s ...")
        meter = NoiseMeter()
        results["cold"] = section_cold(args.cold_runs, args.start_delay)
        noise["cold"] = meter.stop()
    results["noise"] = noise
    measured = {k: v for k, v in noise.items() if v}
    results["notes"] = [
        f"other processes kept {v['foreign_cpus']:.2f} CPUs busy during {k} (hypervisor "
        f"steal {v['steal_cpus']:.2f}); above ~0.2 the absolute figures are disturbed."
        for k, v in measured.items()]
    meta["duration_s"] = round(time.perf_counter() - started, 1)
    text = render(results) + f"\nTotal run time: {meta['duration_s']:.0f} s.\n"
    print(text)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "latest-toolbox.md").write_text(text, encoding="utf-8")
    (out / "latest-toolbox.json").write_text(json.dumps(results, indent=2, default=str) + "\n",
                                             encoding="utf-8")
    log(f"wrote {out / 'latest-toolbox.md'} and {out / 'latest-toolbox.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
