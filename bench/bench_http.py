#!/usr/bin/env python
"""Streamable HTTP benchmark: mcp_sync against bare ``requests`` loops and the official SDK.

    python bench/bench_http.py            # full run, ~2-3 minutes on a 2-core VM
    python bench/bench_http.py --quick    # ~30 s, fewer blocks (noisier)
    python bench/bench_http.py --only seq --modes sse --blocks 5

Every client talks to the same stdlib-only server (``bench/echo_server.py --http 0``), run
twice: once answering every request with a JSON body, once with an SSE stream holding one
event. The method is the stdio benchmark's (``bench_stdio.py``, whose helpers this script
imports): the client process is pinned to one CPU and the servers to another; all clients
stay connected to both servers inside one process and take turns in interleaved blocks
(the order rotates every block); each figure is quoted as the median over blocks of the
per-block ratio to the bare default ``requests`` loop on the same server. See
bench/README.md.

Writes a Markdown table to stdout and to ``bench/results/latest-http.md``, and the raw
numbers to ``bench/results/latest-http.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import bench_stdio as common  # noqa: E402 - after the path tweak; puts this checkout on sys.path
from bench_stdio import (  # noqa: E402
    NoiseMeter,
    _threaded,
    _timed_loop,
    log,
    make_text,
    median,
    quantile,
    ratio_summary,
    rotate,
    verdict,
)

SERVER = BENCH / "echo_server.py"
RESULTS = BENCH / "results"

# Targets for mcp_sync (printed beside the figures as PASS/MISS).
TARGET_JSON_P50_RATIO = 1.0   # JSON-reply p50 <= 1.0x the bare default requests loop
TARGET_SSE_P50_RATIO = 1.1    # SSE-reply p50 <= 1.1x it
# Issue #14's goal, in rows of their own: each reply mode's p50 <= 0.75x the bare default
# requests loop (what a loop that resolves its settings once gets near).
TARGET_ISSUE_P50_RATIO = 0.75
# A 10 MiB SSE echo in linear time: mcp_sync's growth (time per MiB at 10 MiB / at 1 MiB)
# at most 1.5x the bare loop's growth in the same block. Relative, because on a shared VM
# even linear code gets slower per MiB on 10 MiB buffers (caches); 1.5x, because a client
# faster than the loop at 1 MiB shows some growth relative to it, while an event re-copied
# per 64 KiB read (quadratic) doubles the 10 MiB time at least.
TARGET_LINEAR_FACTOR = 1.5

PINNED_VERSION = "2025-11-25"  # pinned, so that no era probe is timed
ACCEPT = "application/json, text/event-stream"

BARE, ONCE, SYNC, SDK = "bare", "requests_once", "mcp_sync", "sdk_thread"
LABELS = {
    BARE: "requests loop (default)",
    ONCE: "requests, settings once",
    SYNC: "mcp_sync",
    SDK: "SDK (blocking, loop thread)",
}
CLIENTS = (BARE, ONCE, SYNC, SDK)
MODES = ("json", "sse")
MODE_LABELS = {"json": "JSON reply", "sse": "SSE reply"}
# The large echoes: mcp_sync against the bare loop (the SDK refuses SSE events over 1 MiB
# by default: max_sse_event_size).
PAYLOAD_CLIENTS = (BARE, SYNC)
PAYLOAD_SIZES = {"1 MiB": 1 << 20, "10 MiB": 10 << 20}

Pair = Tuple[str, str]  # (client name, reply mode)


# ---------------------------------------------------------------------------------------
# Servers
# ---------------------------------------------------------------------------------------


class HttpServer:
    """``echo_server.py --http 0`` in a child process; ``url`` once it listens."""

    def __init__(self, reply: str, framing: str, extra: Sequence[str]) -> None:
        argv = [sys.executable, str(SERVER), "--http", "0", "--reply", reply,
                "--sse-framing", framing, *extra]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().decode().strip()
        if not line.startswith("http://"):
            self.close()
            raise RuntimeError(f"echo server ({reply}) did not start: {line!r}")
        self.url = line

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


# ---------------------------------------------------------------------------------------
# Clients. Each has start(), call(text) -> text (blocking), seq(texts) -> latencies (ns),
# concurrent(workers, per_worker) -> seconds, close().
# ---------------------------------------------------------------------------------------


def sse_data(body: bytes) -> bytes:
    """The data of the (one) event in an SSE body, minimally: its ``data:`` lines joined."""
    parts = [line[6:] if line[5:6] == b" " else line[5:]
             for line in body.splitlines() if line.startswith(b"data:")]
    return b"\n".join(parts)


class BareClient:
    """The reference: ``requests.Session().post(url, data=..., headers=...)`` per call, with
    default settings, the reply's JSON (or the SSE body's ``data:`` lines) parsed and the id
    matched. One shared RpcSession serves the 8 threads of the throughput runs."""

    name = BARE

    def __init__(self, url: str) -> None:
        self.url = url

    def start(self) -> None:
        import requests

        self.http = requests.Session()
        self.headers = {"Accept": ACCEPT, "Content-Type": "application/json"}
        self.ids = itertools.count(1)  # next() is atomic under the GIL
        self._rpc("initialize", {"protocolVersion": PINNED_VERSION, "capabilities": {},
                                 "clientInfo": {"name": "bare", "version": "0"}})
        self.headers["MCP-Protocol-Version"] = PINNED_VERSION
        self._post(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        self._rpc("tools/list", {})

    def _post(self, body: bytes) -> Any:
        return self.http.post(self.url, data=body, headers=self.headers)

    def _rpc(self, method: str, params: Dict[str, Any]) -> Any:
        request_id = next(self.ids)
        body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                           "params": params}, separators=(",", ":")).encode()
        response = self._post(body)
        if response.status_code != 200:
            raise RuntimeError(f"HTTP {response.status_code} for {method}")
        content = response.content
        if response.headers.get("Content-Type", "").startswith("text/event-stream"):
            content = sse_data(content)
        message = json.loads(content)
        if message.get("id") != request_id:
            raise AssertionError(f"reply to {message.get('id')!r}, not {request_id!r}")
        return message["result"]

    def call(self, text: str) -> str:
        result = self._rpc("tools/call", {"name": "echo", "arguments": {"text": text}})
        return result["content"][0]["text"]  # type: ignore[no-any-return]

    def seq(self, texts: Sequence[str]) -> List[int]:
        return _timed_loop(self.call, texts)

    def concurrent(self, workers: int, per_worker: int) -> float:
        return _threaded(self.call, workers, per_worker)

    def close(self) -> None:
        self.http.close()


class OnceClient(BareClient):
    """The bare loop minus what ``requests`` redoes on every call: the environment's
    proxies, CA bundle and ``.netrc`` and the merged headers are worked out once (still
    honoured), and each call is one prepared request and ``Session.send``. Shows what the
    per-call environment lookups cost; mcp_sync's transport does the same."""

    name = ONCE

    def start(self) -> None:
        import requests
        from requests.models import PreparedRequest
        from requests.structures import CaseInsensitiveDict
        from requests.utils import get_netrc_auth

        self.http = requests.Session()
        self.settings = self.http.merge_environment_settings(self.url, {}, None, None, None)
        auth = get_netrc_auth(self.url) if self.http.trust_env else None
        if auth:
            raise RuntimeError(f".netrc has credentials for {self.url}: not a fair comparison")
        prepared = PreparedRequest()
        prepared.prepare_url(self.url, None)
        self.prepared_url = prepared.url
        self.case_insensitive = CaseInsensitiveDict
        self.prepared_request = PreparedRequest
        super().start()

    def _post(self, body: bytes) -> Any:
        headers = self.case_insensitive(self.http.headers)
        headers.update(self.headers)
        headers["Content-Length"] = str(len(body))
        prepared = self.prepared_request()
        prepared.method = "POST"
        prepared.url = self.prepared_url
        prepared.headers = headers
        prepared.body = body
        prepared.hooks = self.http.hooks
        prepared._cookies = self.http.cookies  # type: ignore[attr-defined]
        return self.http.send(prepared, **self.settings)


class SyncClient:
    """mcp_sync: ``mcp_sync.connect(url, protocol_version=...)`` (Streamable HTTP, the
    transport the URL implies), one Client shared by the 8 threads of the throughput runs."""

    name = SYNC

    def __init__(self, url: str) -> None:
        self.url = url

    def start(self) -> None:
        import mcp_sync

        self.client = mcp_sync.connect(self.url, protocol_version=PINNED_VERSION)
        self.client.list_tools()

    def call(self, text: str) -> str:
        return self.client.call_tool("echo", {"text": text}).text  # type: ignore[no-any-return]

    def seq(self, texts: Sequence[str]) -> List[int]:
        return _timed_loop(self.call, texts)

    def concurrent(self, workers: int, per_worker: int) -> float:
        return _threaded(self.call, workers, per_worker)

    def close(self) -> None:
        self.client.close()


class SdkThreadClient:
    """The official SDK driven from blocking code: its ``ClientSession`` over
    ``streamable_http_client`` lives on one event-loop thread, and every call is
    ``asyncio.run_coroutine_threadsafe(session.call_tool(...), loop).result()``; for
    concurrency, 8 threads do that."""

    name = SDK

    def __init__(self, url: str) -> None:
        self.url = url

    async def _own(self, ready: Callable[[Optional[BaseException]], None]) -> None:
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        self._stop = asyncio.Event()
        try:
            async with streamable_http_client(self.url) as (read, write), ClientSession(
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
        if not event.wait(60):
            raise RuntimeError("the SDK did not connect within 60 s")
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


CLIENT_CLASSES = {BARE: BareClient, ONCE: OnceClient, SYNC: SyncClient, SDK: SdkThreadClient}


# ---------------------------------------------------------------------------------------
# Sections: every (client, reply mode) pair stays connected; blocks interleave them all.
# ---------------------------------------------------------------------------------------


def section_sequential(clients: Dict[Pair, Any], blocks: int, calls: int) -> Dict[str, Any]:
    pairs = list(clients)
    texts = [f"hello {i}" for i in range(calls)]
    per_block: Dict[Pair, List[Dict[str, float]]] = {p: [] for p in pairs}
    samples: Dict[Pair, List[int]] = {p: [] for p in pairs}
    for block in range(blocks):
        for pair in rotate(pairs, block):  # type: ignore[arg-type]
            gc.collect()
            cpu0 = time.process_time()
            lat = clients[pair].seq(texts)
            cpu = (time.process_time() - cpu0) / len(texts)
            samples[pair].extend(lat)
            per_block[pair].append({"p50": quantile(lat, 0.5), "p99": quantile(lat, 0.99),
                                    "cpu_us": cpu * 1e6})
        log(f"  sequential block {block + 1}/{blocks}: " + ", ".join(
            f"{n}/{m} {per_block[(n, m)][-1]['p50'] / 1e3:.0f}" for n, m in pairs) + " µs")
    out: Dict[str, Any] = {}
    for name, mode in pairs:
        base = per_block[(BARE, mode)]
        mine = per_block[(name, mode)]
        out.setdefault(mode, {})[name] = {
            "p50_us": quantile(samples[(name, mode)], 0.5) / 1e3,
            "p99_us": quantile(samples[(name, mode)], 0.99) / 1e3,
            "ratio_p50": ratio_summary([b["p50"] / r["p50"] for b, r in zip(mine, base)]),
            "ratio_p99": ratio_summary([b["p99"] / r["p99"] for b, r in zip(mine, base)]),
            "cpu_us_per_call": median([b["cpu_us"] for b in mine]),
            "blocks": mine,
        }
    return out


def section_throughput(clients: Dict[Pair, Any], blocks: int, workers: int,
                       per_worker: int) -> Dict[str, Any]:
    pairs = list(clients)
    total = workers * per_worker
    rates: Dict[Pair, List[float]] = {p: [] for p in pairs}
    cpus: Dict[Pair, List[float]] = {p: [] for p in pairs}
    for block in range(blocks):
        for pair in rotate(pairs, block):  # type: ignore[arg-type]
            gc.collect()
            cpu0 = time.process_time()
            elapsed = clients[pair].concurrent(workers, per_worker)
            cpus[pair].append((time.process_time() - cpu0) / total * 1e6)
            rates[pair].append(total / elapsed)
        log(f"  throughput block {block + 1}/{blocks}: " + ", ".join(
            f"{n}/{m} {rates[(n, m)][-1]:.0f}/s" for n, m in pairs))
    out: Dict[str, Any] = {"_meta": {"workers": workers, "calls_per_block": total}}
    for name, mode in pairs:
        mine = rates[(name, mode)]
        entry: Dict[str, Any] = {
            "calls_per_s": median(mine), "blocks": mine,
            "cpu_us_per_call": median(cpus[(name, mode)]),
            "x_bare": ratio_summary([a / b for a, b in zip(mine, rates[(BARE, mode)])]),
        }
        if (SDK, mode) in rates:
            entry["x_sdk"] = ratio_summary([a / b for a, b in zip(mine, rates[(SDK, mode)])])
        out.setdefault(mode, {})[name] = entry
    return out


def section_payload(clients: Dict[Pair, Any], blocks: int,
                    calls: Dict[str, int]) -> Dict[str, Any]:
    """Large echoes. Every block measures every (client, mode, size), in rotating order,
    so that the per-block ratios (to the bare loop; 10 MiB to 1 MiB) compare figures
    taken close together in time."""
    pairs = [p for p in clients if p[0] in PAYLOAD_CLIENTS]
    texts = {label: [make_text(size)] * calls[label] for label, size in PAYLOAD_SIZES.items()}
    slots = [(pair, label) for label in PAYLOAD_SIZES for pair in pairs]
    meds: Dict[Tuple[Pair, str], List[float]] = {slot: [] for slot in slots}
    for block in range(blocks):
        for slot in rotate(slots, block):  # type: ignore[arg-type]
            (pair, label) = slot
            gc.collect()
            meds[slot].append(median(clients[pair].seq(texts[label])))
        log(f"  payload block {block + 1}/{blocks}: " + ", ".join(
            f"{n}/{m} {label} {meds[((n, m), label)][-1] / 1e6:.1f} ms"
            for (n, m), label in slots))
    out: Dict[str, Any] = {}
    for (name, mode), label in slots:
        mine = meds[((name, mode), label)]
        size = PAYLOAD_SIZES[label]
        out.setdefault(mode, {}).setdefault(label, {})[name] = {
            "median_ms": median(mine) / 1e6,
            "ms_per_mib": median(mine) / 1e6 / (size / (1 << 20)),
            "ratio": ratio_summary([m / b for m, b in
                                    zip(mine, meds[((BARE, mode), label)])]),
            "blocks_ms": [m / 1e6 for m in mine],
        }
        out[mode][label]["_meta"] = {"bytes": size, "calls_per_block": calls[label],
                                     "blocks": blocks}
    # Linearity: per block, time per MiB at 10 MiB / time per MiB at 1 MiB (1.0 = linear).
    small, big = "1 MiB", "10 MiB"
    scale = PAYLOAD_SIZES[big] / PAYLOAD_SIZES[small]
    growth: Dict[Pair, List[float]] = {}
    for name, mode in pairs:
        growth[(name, mode)] = [b / scale / s for b, s in zip(meds[((name, mode), big)],
                                                              meds[((name, mode), small)])]
        out[mode].setdefault("linearity", {})[name] = ratio_summary(growth[(name, mode)])
    for name, mode in pairs:  # the same, over the bare loop's growth in the same block
        out[mode].setdefault("linearity_x_bare", {})[name] = ratio_summary(
            [g / b for g, b in zip(growth[(name, mode)], growth[(BARE, mode)])])
    return out


# ---------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------


def fmt_x(summary: Optional[Dict[str, float]]) -> str:
    return "" if not summary else f"{summary['median']:.2f}x"


def render(results: Dict[str, Any]) -> str:
    meta = results["meta"]
    names = [n for n in CLIENTS if n in meta["clients"]]
    lines = [
        "# mcp_sync Streamable HTTP benchmark",
        "",
        f"{meta['date']} · Python {meta['python']} · {meta['cpu']} · {meta['nproc']} CPUs · "
        f"mcp {meta['mcp_version']} · mcp_sync {meta['mcp_sync_version']} "
        f"({meta['git']}) · requests {meta['requests_version']} · pinning: {meta['pinning']} · "
        f"SSE framing: {meta['config']['sse_framing']}",
        "",
        "Ratios (in brackets) are medians of per-block ratios to the default `requests` loop "
        "on the same server (blocks interleave every client on both servers in rotating "
        "order); absolute figures are over all blocks. Lower is better except throughput.",
        "",
        "| metric | " + " | ".join(LABELS[n] for n in names) + " |",
        "| --- | " + " | ".join("---:" for _ in names) + " |",
    ]

    def row(metric: str, cells: Dict[str, str]) -> None:
        lines.append(f"| {metric} | " + " | ".join(cells.get(n, "") for n in names) + " |")

    seq = results.get("sequential") or {}
    for mode in MODES:
        if mode not in seq:
            continue
        s = seq[mode]
        what = MODE_LABELS[mode]
        row(f"{what}: sequential tools/call p50", {
            n: f"{s[n]['p50_us']:.0f} µs ({fmt_x(s[n]['ratio_p50'])})" for n in s})
        row(f"{what}: sequential tools/call p99", {
            n: f"{s[n]['p99_us']:.0f} µs ({fmt_x(s[n]['ratio_p99'])})" for n in s})
        row(f"{what}: client CPU per sequential call", {
            n: f"{s[n]['cpu_us_per_call']:.0f} µs" for n in s})
    thr = results.get("throughput") or {}
    workers = thr.get("_meta", {}).get("workers")
    for mode in MODES:
        if mode not in thr:
            continue
        t = thr[mode]
        cells = {}
        for n in t:
            extra = f"{fmt_x(t[n]['x_bare'])}"
            if "x_sdk" in t[n] and n != SDK:
                extra += f"; {fmt_x(t[n]['x_sdk'])} SDK"
            cells[n] = f"{t[n]['calls_per_s']:.0f}/s ({extra})"
        row(f"{MODE_LABELS[mode]}: {workers}-way throughput", cells)
        row(f"{MODE_LABELS[mode]}: client CPU per call, {workers}-way", {
            n: f"{t[n]['cpu_us_per_call']:.0f} µs" for n in t})
    payload = results.get("payload") or {}
    for mode in MODES:
        if mode not in payload:
            continue
        for label in PAYLOAD_SIZES:
            section = payload[mode].get(label)
            if not section:
                continue
            row(f"{MODE_LABELS[mode]}: echo {label}", {
                n: f"{section[n]['median_ms']:.1f} ms ({fmt_x(section[n]['ratio'])})"
                for n in PAYLOAD_CLIENTS if n in section})
        if "linearity" in payload[mode]:
            small, big = payload[mode]["1 MiB"], payload[mode]["10 MiB"]
            row(f"{MODE_LABELS[mode]}: ms per MiB at 1 / 10 MiB (growth)", {
                n: f"{small[n]['ms_per_mib']:.1f} / {big[n]['ms_per_mib']:.1f} "
                   f"({fmt_x(payload[mode]['linearity'][n])})"
                for n in payload[mode]["linearity"]})
    lines.append("")
    if thr:
        lines.append(f"Throughput: {workers} threads calling at once (the SDK: {workers} "
                     "threads each waiting on `run_coroutine_threadsafe`); the `requests` "
                     f"loops share one `Session` between the {workers} threads, mcp_sync one "
                     "`Client`. In brackets: ratio to the default `requests` loop; then to "
                     "the SDK.")
        lines.append("")
    if payload:
        lines.append("Large echoes (mcp_sync and the default `requests` loop only: the SDK "
                     "refuses SSE events over 1 MiB by default): the request carries the text "
                     "and so does the reply. Growth = median over blocks of (time per MiB at "
                     "10 MiB / time per MiB at 1 MiB); 1.00x = linear, a quadratic cost would "
                     "double it at least. Fixed costs push it below 1, caches and page faults "
                     "on 10 MiB buffers above.")
        lines.append("")
    lines += ["## mcp_sync targets", "", "| target | measured | verdict |",
              "| --- | ---: | :---: |"]
    for target in results["targets"]:
        lines.append(f"| {target['name']} | {target['measured']} | {target['verdict']} |")
    lines.append("")
    notes = results.get("notes") or []
    if notes:
        lines += ["## Notes", ""] + [f"* {note}" for note in notes] + [""]
    return "\n".join(lines)


def targets(results: Dict[str, Any]) -> List[Dict[str, str]]:
    out = []
    seq = results.get("sequential") or {}
    for mode, limit, shown in (
        ("json", TARGET_JSON_P50_RATIO, f"{TARGET_JSON_P50_RATIO:.1f}"),
        ("sse", TARGET_SSE_P50_RATIO, f"{TARGET_SSE_P50_RATIO:.1f}"),
        ("json", TARGET_ISSUE_P50_RATIO, f"{TARGET_ISSUE_P50_RATIO:.2f}"),
        ("sse", TARGET_ISSUE_P50_RATIO, f"{TARGET_ISSUE_P50_RATIO:.2f}"),
    ):
        if mode in seq and SYNC in seq[mode]:
            r = seq[mode][SYNC]["ratio_p50"]
            out.append({
                "name": f"{MODE_LABELS[mode]} p50 <= {shown}x the default requests loop",
                "measured": f"{r['median']:.2f}x (blocks {r['min']:.2f}-{r['max']:.2f})",
                "verdict": verdict(r["median"] <= limit)})
    payload = results.get("payload") or {}
    if "sse" in payload and "linearity" in payload["sse"] and SYNC in payload["sse"]["linearity"]:
        growth = payload["sse"]["linearity"][SYNC]
        bare_growth = payload["sse"]["linearity"][BARE]
        relative = payload["sse"]["linearity_x_bare"][SYNC]
        big = payload["sse"]["10 MiB"][SYNC]
        out.append({
            "name": "10 MiB SSE event in linear time: growth (ms/MiB at 10 MiB / at 1 MiB) "
                    f"<= {TARGET_LINEAR_FACTOR}x the requests loop's",
            "measured": f"{relative['median']:.2f}x (blocks {relative['min']:.2f}-"
                        f"{relative['max']:.2f}; growth {growth['median']:.2f}x vs "
                        f"{bare_growth['median']:.2f}x); {big['median_ms']:.0f} ms for "
                        f"10 MiB, {fmt_x(big['ratio'])} the requests loop",
            "verdict": verdict(relative["median"] <= TARGET_LINEAR_FACTOR)})
    return out


# ---------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------

SECTIONS = ("seq", "thr", "payload")


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="fewer blocks and calls (~30 s); numbers are noisier")
    p.add_argument("--only", default=",".join(SECTIONS),
                   help=f"comma-separated sections to run, from {','.join(SECTIONS)}")
    p.add_argument("--clients", default=",".join(CLIENTS),
                   help=f"comma-separated clients, from {','.join(CLIENTS)} (bare is always run)")
    p.add_argument("--modes", default=",".join(MODES),
                   help="reply modes of the server, from json,sse")
    p.add_argument("--sse-framing", choices=("chunked", "length"), default="chunked",
                   help="how the SSE server frames its body (chunked, as a streaming server "
                        "does; or with a Content-Length)")
    p.add_argument("--blocks", type=int,
                   help="interleaved blocks for the sequential and throughput sections (16); "
                        "the large echoes use half as many")
    p.add_argument("--calls", type=int, help="sequential calls per block per client (300)")
    p.add_argument("--workers", type=int, default=8, help="concurrent callers (8)")
    p.add_argument("--thr-calls", type=int, help="calls per worker per throughput block (50)")
    p.add_argument("--no-pin", action="store_true", help="do not pin client and server to CPUs")
    p.add_argument("--out", default=str(RESULTS),
                   help="directory for latest-http.md and latest-http.json (bench/results)")
    args = p.parse_args(argv)
    quick = args.quick
    defaults = {"blocks": 6 if quick else 16, "calls": 100 if quick else 300,
                "thr_calls": 20 if quick else 50}
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.payload_blocks = max(3, args.blocks // 2)
    args.payload_calls = {"1 MiB": 5 if quick else 9, "10 MiB": 2 if quick else 3}
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    sections = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        raise SystemExit(f"unknown sections: {sorted(unknown)}")
    modes = [m for m in MODES if m in {x.strip() for x in args.modes.split(",")}]
    if not modes:
        raise SystemExit("--modes: json, sse or both")
    wanted = {c.strip() for c in args.clients.split(",") if c.strip()}
    names = [c for c in CLIENTS if c == BARE or c in wanted]
    try:
        import mcp  # noqa: F401
    except ImportError:
        log("the official SDK (pip install mcp) is not installed: its column is skipped")
        names = [n for n in names if n != SDK]
    pinning = common.pin(args.no_pin)  # before any thread exists
    server_extra = list(common.SERVER_ARGS)  # ["--cpu", N] when pinned
    log(f"pinning: {pinning}; clients: {', '.join(names)}; modes: {', '.join(modes)}; "
        f"sections: {', '.join(sections)}")
    load = common.load_average()
    if load is not None and load > 0.5 * (os.cpu_count() or 1):
        log(f"warning: the 1-minute load average is {load:.1f} on {os.cpu_count()} CPUs: "
            "other processes are busy and the figures will be noisy")
    started = time.perf_counter()
    meta = common.machine_meta(args, names, pinning)
    import requests

    meta["requests_version"] = requests.__version__
    results: Dict[str, Any] = {"meta": meta}
    noise: Dict[str, Any] = {}
    results["noise"] = noise

    servers: Dict[str, HttpServer] = {}
    clients: Dict[Pair, Any] = {}
    try:
        for mode in modes:
            servers[mode] = HttpServer(mode, args.sse_framing, server_extra)
            log(f"  {mode} server at {servers[mode].url}")
        for mode in modes:
            for name in names:
                client = CLIENT_CLASSES[name](servers[mode].url)
                client.start()
                clients[(name, mode)] = client
                client.seq([f"warm {i}" for i in range(100)])
        if "seq" in sections:
            log("sequential tools/call ...")
            meter = NoiseMeter()
            results["sequential"] = section_sequential(clients, args.blocks, args.calls)
            noise["sequential"] = meter.stop()
        if "thr" in sections:
            log(f"{args.workers}-way throughput ...")
            for client in clients.values():  # warm the thread paths and the pools
                client.concurrent(args.workers, 5)
            meter = NoiseMeter()
            results["throughput"] = section_throughput(clients, args.blocks, args.workers,
                                                       args.thr_calls)
            noise["throughput"] = meter.stop()
        if "payload" in sections:
            log("large echoes ...")
            meter = NoiseMeter()
            results["payload"] = section_payload(clients, args.payload_blocks,
                                                 args.payload_calls)
            noise["payload"] = meter.stop()
    finally:
        for client in clients.values():
            try:
                client.close()
            except Exception as exc:  # noqa: BLE001 - report and go on closing
                log(f"closing {client.name}: {exc!r}")
        for server in servers.values():
            server.close()

    results["targets"] = targets(results)
    notes = []
    measured = {k: v for k, v in noise.items() if v}
    if measured:
        notes.append("other processes kept " + ", ".join(
            f"{v['foreign_cpus']:.2f} CPUs busy during {k}" for k, v in measured.items())
            + " (hypervisor steal " + ", ".join(f"{v['steal_cpus']:.2f}" for v in measured.values())
            + "); above ~0.2 the absolute figures are disturbed, the per-block ratios less so.")
    results["notes"] = notes
    results["meta"]["duration_s"] = round(time.perf_counter() - started, 1)

    text = render(results) + f"\nTotal run time: {results['meta']['duration_s']:.0f} s.\n"
    print(text)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "latest-http.md").write_text(text, encoding="utf-8")
    (out / "latest-http.json").write_text(json.dumps(results, indent=2, default=str) + "\n",
                                          encoding="utf-8")
    log(f"wrote {out / 'latest-http.md'} and {out / 'latest-http.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
