#!/usr/bin/env python
"""The response cache in a web app: requests per second and round trips per request of a
Flask view served by gunicorn, with the cache off, per process, and shared.

    python bench/bench_cache.py            # full run, ~2 minutes on a 2-core VM
    python bench/bench_cache.py --quick    # ~30 s (noisier)

Everything runs on this machine:

* the MCP server is ``tests/servers/sdk_cache_server.py`` (the official SDK, 2026-07-28 over
  Streamable HTTP) answering ``tools/list`` and ``resources/read`` with ``ttlMs`` 60000
  (``--ttl-ms``) and counting the requests it receives (``GET /counts``);
* each cache mode is one gunicorn (``--workers`` processes x ``--gunicorn-threads``
  threads) serving ``bench/cache_app.py``: a view that lists the server's tools
  (``mcp.get_client("sdk").list_tools()``) and reads a resource
  (``manager.read_resource("sdk", "test://greeting")``) through the worker's ``Manager``;
* the modes, each the ``cache=`` the worker's ``Manager`` hands its client: **off**
  (``cache=False``), **per-process** (the default: the client's own ``MemoryStore``, one per
  worker process), **shared** (one ``RedisStore`` for every worker: a private
  ``redis-server`` on 127.0.0.1, persistence off, stopped by PID).

The three gunicorns stay up for the whole run and take turns in blocks, in rotating order.
In a block each mode gets ``--seconds`` of load from ``--threads`` threads, each sending
``GET /`` on a keep-alive connection as soon as its last answer came; every answer is
checked. Figures per mode, over all its blocks: requests per second (median over blocks),
p50 latency, and round trips per request: the server's count of ``tools/list``,
``resources/read`` and of every HTTP request, before and after each block, divided by the
requests served in it.

Writes a Markdown table to stdout and to ``bench/results/latest-cache.md``, and the raw
numbers to ``bench/results/latest-cache.json``. Needs Linux, the ``mcp`` SDK, Flask,
gunicorn, the ``redis`` client and ``redis-server``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import bench_stdio as common  # noqa: E402 - after the path tweak; puts this checkout on sys.path
from bench_stdio import log, median, quantile, rotate  # noqa: E402

RESULTS = BENCH / "results"
ROOT = BENCH.parent
MODES = ("off", "process", "shared")
LABELS = {"off": "off (`cache=False`)",
          "process": "per-process (the default: each client's `MemoryStore`)",
          "shared": "shared (`RedisStore`)"}
COUNTED = ("tools/list", "resources/read", "http")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer and shorter blocks")
    p.add_argument("--blocks", type=int, default=None, help="blocks per mode (5; 2 quick)")
    p.add_argument("--seconds", type=float, default=None,
                   help="seconds of load per mode per block (5; 2 quick)")
    p.add_argument("--threads", type=int, default=8, help="concurrent load threads (8)")
    p.add_argument("--workers", type=int, default=2, help="gunicorn worker processes (2)")
    p.add_argument("--gunicorn-threads", type=int, default=4,
                   help="threads per gunicorn worker (4)")
    p.add_argument("--ttl-ms", type=int, default=60_000, help="the server's ttlMs (60000)")
    p.add_argument("--out", default=str(RESULTS),
                   help="directory for latest-cache.md and .json (bench/results)")
    args = p.parse_args()
    args.blocks = args.blocks or (2 if args.quick else 5)
    args.seconds = args.seconds or (2.0 if args.quick else 5.0)
    return args


# -- processes --------------------------------------------------------------------------


@contextlib.contextmanager
def mcp_server(ttl_ms: int, directory: Path) -> Iterator[Any]:
    from tests._peer_processes import ServerProcess, cache_server_argv

    server = ServerProcess("sdk-cache", cache_server_argv(ttl_ms), "/mcp", directory).start()
    try:
        yield server
    finally:
        server.stop()


@contextlib.contextmanager
def private_redis(directory: Path) -> Iterator[str]:
    from tests._procs import redis_server

    with redis_server(directory) as (url, _):
        yield url


class Gunicorn:
    """One gunicorn serving ``bench/cache_app.py`` in one cache mode; stopped by PID."""

    def __init__(self, mode: str, args: argparse.Namespace, url: str,
                 redis_url: Optional[str], directory: Path) -> None:
        from tests._procs import free_port, subprocess_env, wait_listening

        self.mode = mode
        self.port = free_port()
        self.log_path = directory / f"gunicorn-{mode}.log"
        env = subprocess_env(MCP_BENCH_URL=url, MCP_BENCH_CACHE=mode,
                             MCP_BENCH_REDIS=redis_url or "")
        with open(self.log_path, "wb") as log_file:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "--workers", str(args.workers),
                 "--threads", str(args.gunicorn_threads), "--bind", f"127.0.0.1:{self.port}",
                 "--pythonpath", str(BENCH), "--graceful-timeout", "10",
                 "--log-level", "warning", "cache_app:create_app()"],
                cwd=str(ROOT), env=env, stdin=subprocess.DEVNULL, stdout=log_file,
                stderr=subprocess.STDOUT)
        try:
            wait_listening(self.port, timeout=60)
        except BaseException:
            self.stop()
            raise

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def stop(self) -> None:
        from tests._procs import stop_process

        if self.process.poll() is None:
            stop_process(self.process, timeout=30)

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:]


def warm_up(gunicorn: Gunicorn, workers: int) -> None:
    """Until every worker has answered (each has connected its manager), bounded: rounds
    of concurrent requests on new connections (the kernel hands each to whichever worker
    accepts first)."""
    import requests

    seen = set()
    deadline = time.monotonic() + 120

    def get(_: int) -> int:
        reply = requests.get(gunicorn.url, headers={"Connection": "close"}, timeout=30)
        if reply.status_code != 200:
            raise SystemExit(f"{gunicorn.mode}: HTTP {reply.status_code}:\n"
                             f"{gunicorn.log_tail()}")
        return check(reply.json())

    with ThreadPoolExecutor(max_workers=16, thread_name_prefix="bench-warm-up") as pool:
        while len(seen) < workers:
            if time.monotonic() > deadline:
                raise SystemExit(f"{gunicorn.mode}: only {len(seen)} of {workers} workers "
                                 f"answered within 120 s:\n{gunicorn.log_tail()}")
            seen.update(pool.map(get, range(32)))


def check(answer: Dict[str, Any]) -> int:
    """The worker that answered, after checking the answer is the view's."""
    if answer.get("text") != "hello from the cache server" or answer.get("tools", 0) < 1:
        raise SystemExit(f"unexpected answer: {answer!r}")
    return int(answer["worker"])


# -- load -------------------------------------------------------------------------------


def load(url: str, threads: int, seconds: float) -> Tuple[int, List[float], float]:
    """``threads`` threads sending ``GET url`` back to back for ``seconds``: the answers,
    their latencies (s) and the elapsed time."""
    import requests

    latencies: List[List[float]] = [[] for _ in range(threads)]
    failures: List[BaseException] = []
    start = threading.Event()
    deadline_box: List[float] = []

    def run(index: int) -> None:
        start.wait(30)
        deadline = deadline_box[0]
        try:
            with requests.Session() as http:
                while time.monotonic() < deadline:
                    began = time.perf_counter()
                    reply = http.get(url, timeout=30)
                    reply.raise_for_status()
                    check(reply.json())
                    latencies[index].append(time.perf_counter() - began)
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    workers = [threading.Thread(target=run, args=(i,), name=f"bench-load-{i}")
               for i in range(threads)]
    for worker in workers:
        worker.start()
    began = time.monotonic()
    deadline_box.append(began + seconds)
    start.set()
    for worker in workers:
        worker.join(seconds + 60)
    elapsed = time.monotonic() - began
    if failures:
        raise SystemExit(f"a request failed: {failures[0]!r}")
    flat = [value for per_thread in latencies for value in per_thread]
    return len(flat), flat, elapsed


def run(args: argparse.Namespace) -> Dict[str, Any]:
    from tests._peer_processes import request_counts

    modes = list(MODES)
    results: Dict[str, Any] = {
        "meta": {"blocks": args.blocks, "seconds": args.seconds, "threads": args.threads,
                 "workers": args.workers, "gunicorn_threads": args.gunicorn_threads,
                 "ttl_ms": args.ttl_ms,
                 "python": sys.version.split()[0]},
        "modes": {mode: {"rps": [], "latencies": [], "requests": 0,
                         "counts": dict.fromkeys(COUNTED, 0)} for mode in modes},
    }
    with tempfile.TemporaryDirectory(prefix="mcp-sync-bench-cache-") as tmp, \
            contextlib.ExitStack() as stack:
        directory = Path(tmp)
        server = stack.enter_context(mcp_server(args.ttl_ms, directory))
        redis_url = stack.enter_context(private_redis(directory))
        gunicorns: Dict[str, Gunicorn] = {}
        for mode in modes:
            gunicorns[mode] = Gunicorn(mode, args, server.url, redis_url, directory)
            stack.callback(gunicorns[mode].stop)
        for mode in modes:
            log(f"warming up {mode}")
            warm_up(gunicorns[mode], args.workers)
        for block in range(args.blocks):
            for mode in rotate(modes, block):
                before = request_counts(server)
                served, latencies, elapsed = load(gunicorns[mode].url, args.threads,
                                                  args.seconds)
                after = request_counts(server)
                record = results["modes"][mode]
                record["rps"].append(served / elapsed)
                record["latencies"].extend(latencies)
                record["requests"] += served
                for name in COUNTED:
                    record["counts"][name] += after.get(name, 0) - before.get(name, 0)
                log(f"block {block + 1}/{args.blocks} {mode}: {served / elapsed:.0f} req/s, "
                    f"{(after.get('http', 0) - before.get('http', 0)) / max(served, 1):.3f} "
                    "round trips per request")
    return results


def report(results: Dict[str, Any]) -> str:
    meta = results["meta"]
    lines = [
        "# Response cache in a web app (bench/bench_cache.py)",
        "",
        f"gunicorn {meta['workers']} workers x {meta['gunicorn_threads']} threads per mode, "
        f"{meta['threads']} load threads, {meta['blocks']} blocks x {meta['seconds']} s per "
        f"mode; server ttlMs {meta['ttl_ms']}; Python {meta['python']}.",
        "",
        "| cache | requests/s | p50 ms | `tools/list` per request | `resources/read` per "
        "request | HTTP requests to the server per request |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for mode, record in results["modes"].items():
        requests_served = max(record["requests"], 1)
        per = {name: record["counts"][name] / requests_served for name in COUNTED}
        lines.append(
            f"| {LABELS[mode]} | {median(record['rps']):.0f} | "
            f"{quantile(record['latencies'], 0.5) * 1000:.1f} | {per['tools/list']:.3f} | "
            f"{per['resources/read']:.3f} | {per['http']:.3f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    args = parse_args()
    assert common  # imported for its sys.path set-up
    results = run(args)
    text = report(results)
    print(text)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for record in results["modes"].values():
        record["p50_ms"] = quantile(record.pop("latencies"), 0.5) * 1000
    (out / "latest-cache.md").write_text(text, encoding="utf-8")
    (out / "latest-cache.json").write_text(json.dumps(results, indent=2) + "\n",
                                           encoding="utf-8")
    log(f"wrote {out / 'latest-cache.md'} and {out / 'latest-cache.json'}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
