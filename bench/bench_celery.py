#!/usr/bin/env python
"""Celery: tool calls per second through ``mcp_sync.contrib.celery`` workers against
direct calls, what one task costs, and where each millisecond of CPU goes.

    python bench/bench_celery.py            # full run, ~1 minute on a 2-core VM
    python bench/bench_celery.py --quick    # ~15 s (noisier)

Everything runs on this machine: a private ``redis-server`` on 127.0.0.1 (a free port,
persistence off) is broker and result backend; the workers are real
``python -m celery -A celery_app worker`` processes (``tests/servers/celery_app.py``,
started and stopped by PID with the ``Cluster`` of ``tests/places/test_contrib_celery.py``),
each with its own node name; every tool is ``echo`` of the stdlib-only
``bench/echo_server.py`` on stdio. The kinds:

* **direct**: ``manager.call_tool("echo__echo", {"text": t})`` on one ``mcp_sync.Manager``
  in this process, shared by the callers' threads;
* **prefork-1**: one worker, ``-P prefork -c 1``: one process runs the tasks;
* **prefork-2**: one worker, ``-P prefork -c 2``: two pool processes, one node;
* **2-workers**: two workers (two node names, as two machines would be), each
  ``-P prefork -c 1``;
* **threads-8**: one worker, ``-P threads -c 8``: one process, one server child.

Each Celery kind has a Redis database of its own, so its workers take only its tasks;
all stay up for the whole run and the kinds take turns in blocks, in rotating order. In a
block each kind makes ``--seq`` calls one at a time (latency: p50 of the block), then
``--workers`` threads make ``--calls`` calls each at once (calls per second, and the
latency under that load). A call through Celery is
``caller.send_task("mcp_sync.call_tool", args=["echo__echo", {"text": t}]).get()`` from a
plain Celery app that knows the task only by its name. Every call sends a distinct text
and every answer is checked against it: a wrong or missing answer fails the run.

CPU: the utime + stime (``/proc/<pid>/stat``) of this process (the caller), of each
worker's processes (main and pool) and of the echo servers, and Redis's own
``used_cpu_user + used_cpu_sys`` and ``total_commands_processed`` (``INFO``), over each
kind's loaded phase, summed over blocks and divided by its calls. From those the report
works out, on paper, the tasks per second one worker core and one Redis could take.

Writes a Markdown table to stdout and to ``bench/results/latest-celery.md``, and the raw
numbers to ``bench/results/latest-celery.json``. Needs Linux (``/proc``), Celery, the
``redis`` client and ``redis-server``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import bench_stdio as common  # noqa: E402 - after the path tweak; puts this checkout on sys.path
from bench_stdio import NoiseMeter, log, median, quantile, ratio_summary, rotate  # noqa: E402

RESULTS = BENCH / "results"
TOOL = "echo__echo"
DIRECT = "direct"
# Celery kinds: (node name, pool, concurrency) of each worker.
CELERY_KINDS: Dict[str, List[Tuple[str, str, int]]] = {
    "prefork-1": [("bench-p1", "prefork", 1)],
    "prefork-2": [("bench-p2", "prefork", 2)],
    "2-workers": [("bench-w2a", "prefork", 1), ("bench-w2b", "prefork", 1)],
    "threads-8": [("bench-t8", "threads", 8)],
}
KINDS = (DIRECT, *CELERY_KINDS)
LABELS = {
    DIRECT: "direct `manager.call_tool`",
    "prefork-1": "1 worker, prefork -c 1",
    "prefork-2": "1 worker, prefork -c 2",
    "2-workers": "2 workers, prefork -c 1 each",
    "threads-8": "1 worker, threads -c 8",
}
RUNNERS = {DIRECT: "this process", "prefork-1": "1 process", "prefork-2": "2 processes",
           "2-workers": "2 processes", "threads-8": "1 process"}
GROUPS = ("caller", "worker", "server", "redis")
TICK = os.sysconf("SC_CLK_TCK")
OPTIONS = {"protocol_version": "2025-11-25"}  # pinned: no era probe at the first call


def echo_config() -> Dict[str, Any]:
    return {"echo": {"command": sys.executable, "args": [str(BENCH / "echo_server.py")]}}


def check(answer: Any, text: str) -> None:
    """A Celery answer (the CallToolResult's JSON data) must echo ``text``."""
    if not (isinstance(answer, dict) and answer.get("isError") is False
            and [c.get("text") for c in answer.get("content", [])] == [text]):
        raise AssertionError(f"wrong answer to {text!r}: {answer!r}")


# -- processes and their CPU -----------------------------------------------------------


def ticks(pid: int) -> int:
    """utime + stime of ``pid`` (all its threads, dead ones included), in clock ticks."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])


def is_echo_server(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"echo_server.py" in f.read()
    except OSError:
        return False


class Redis:
    """The broker's own figures, read with INFO: CPU seconds and commands processed."""

    def __init__(self, url: str, pid: int) -> None:
        import redis

        self.pid = pid
        self.client = redis.Redis.from_url(url)

    def snapshot(self) -> Tuple[float, int]:
        cpu = self.client.info("cpu")
        stats = self.client.info("stats")
        return (float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]),
                int(stats["total_commands_processed"]))

    def close(self) -> None:
        self.client.close()


class Kind:
    """One way of calling the tool: ``call(text)`` returns the echoed text (checked)."""

    name: str

    def call(self, text: str) -> None:
        raise NotImplementedError

    def groups(self) -> Dict[str, List[int]]:
        """The worker-side processes, by group (the caller and Redis are common)."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class DirectKind(Kind):
    name = DIRECT

    def __init__(self) -> None:
        import mcp_sync

        self.manager = mcp_sync.Manager({"mcpServers": echo_config()}, **OPTIONS)
        self.manager.connect()

    def call(self, text: str) -> None:
        result = self.manager.call_tool(TOOL, {"text": text})
        if result.is_error or result.text != text:
            raise AssertionError(f"wrong answer to {text!r}: {result!r}")

    def groups(self) -> Dict[str, List[int]]:
        from tests.places.test_contrib_celery import children

        return {"worker": [], "server": [p for p in children(os.getpid()) if is_echo_server(p)]}

    def close(self) -> None:
        self.manager.close()


class CeleryKind(Kind):
    """A cluster of workers on a Redis database of its own, and a caller app for it."""

    def __init__(self, name: str, url: str, stack: contextlib.ExitStack) -> None:
        from celery import Celery

        from mcp_sync.contrib.celery import CALL_TOOL
        from tests.places.test_contrib_celery import Cluster

        self.name = name
        self.task = CALL_TOOL
        self.cluster = stack.enter_context(Cluster(url, echo_config(), CELERY_KINDS[name],
                                                   options=OPTIONS))
        self.app = Celery(f"bench-{name}", broker=url, backend=url, set_as_current=False)
        self.app.conf.broker_connection_retry_on_startup = True

    def call(self, text: str) -> None:
        check(self.app.send_task(self.task, args=[TOOL, {"text": text}]).get(timeout=60), text)

    def groups(self) -> Dict[str, List[int]]:
        from tests.places.test_contrib_celery import descendants

        worker, server = [], []
        for w in self.cluster.workers:
            worker.append(w.pid)
            for pid in descendants(w.pid):
                (server if is_echo_server(pid) else worker).append(pid)
        return {"worker": worker, "server": server}

    def executors_with_server(self) -> Tuple[int, int]:
        """(processes that run tasks, those of them that have started their server)."""
        from tests.places.test_contrib_celery import children

        executors = [pid for w in self.cluster.workers for pid in w.executors()]
        return len(executors), sum(any(is_echo_server(c) for c in children(pid))
                                   for pid in executors)

    def close(self) -> None:
        client = getattr(self.app.backend, "client", None)
        if client is not None:
            client.connection_pool.disconnect()
        self.app.pool.force_close_all()
        self.app.close()


# -- measuring ---------------------------------------------------------------------------


class Texts:
    """Distinct texts, safe to draw from many threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._n = 0

    def __call__(self, prefix: str) -> str:
        with self._lock:
            self._n += 1
            return f"{prefix} {self._n}"


def timed(call: Callable[[str], None], texts: Sequence[str]) -> List[float]:
    """Latency of each call, one at a time, in microseconds."""
    out = []
    for text in texts:
        start = time.perf_counter()
        call(text)
        out.append((time.perf_counter() - start) * 1e6)
    return out


def loaded(pool: ThreadPoolExecutor, kind: Kind, texts: Texts, workers: int,
           calls: int) -> Tuple[float, List[float]]:
    """``workers`` threads make ``calls`` calls each at once: (seconds, latencies in us)."""
    go = threading.Event()

    def worker() -> List[float]:
        mine = [texts(kind.name) for _ in range(calls)]
        if not go.wait(60):
            raise RuntimeError("the start signal never came")
        return timed(kind.call, mine)

    futures = [pool.submit(worker) for _ in range(workers)]
    start = time.perf_counter()
    go.set()
    latencies = [us for f in futures for us in f.result(600)]
    return time.perf_counter() - start, latencies


def cpu_snapshot(kind: Kind, redis: Redis) -> Dict[str, float]:
    """CPU seconds of each group so far, and Redis's command count."""
    groups = kind.groups()
    redis_cpu, commands = redis.snapshot()
    return {"caller": ticks(os.getpid()) / TICK,
            "worker": sum(ticks(p) for p in groups["worker"]) / TICK,
            "server": sum(ticks(p) for p in groups["server"]) / TICK,
            "redis": redis_cpu, "commands": float(commands)}


def warm_up(kind: Kind, pool: ThreadPoolExecutor, texts: Texts, workers: int) -> None:
    """Until every process that runs tasks has its server (bounded)."""
    for _ in range(20):
        loaded(pool, kind, texts, workers, 5)
        if not isinstance(kind, CeleryKind):
            return
        total, ready = kind.executors_with_server()
        if ready == total:
            return
    raise RuntimeError(f"{kind.name}: not every worker process got a task to start its server")


def run_blocks(kinds: Dict[str, Kind], redis: Redis, args: argparse.Namespace
               ) -> Dict[str, Any]:
    texts = Texts()
    names = list(kinds)
    seq: Dict[str, List[float]] = {n: [] for n in names}        # p50 per block, us
    seq_all: Dict[str, List[float]] = {n: [] for n in names}
    rate: Dict[str, List[float]] = {n: [] for n in names}       # calls/s per block
    load_p50: Dict[str, List[float]] = {n: [] for n in names}   # p50 under load per block
    load_all: Dict[str, List[float]] = {n: [] for n in names}
    cpu: Dict[str, Dict[str, float]] = {n: {g: 0.0 for g in (*GROUPS, "commands")}
                                        for n in names}
    loaded_calls = {n: 0 for n in names}
    with ThreadPoolExecutor(args.workers, thread_name_prefix="bench-caller") as pool:
        for name, kind in kinds.items():
            log(f"  warming up {name} ...")
            warm_up(kind, pool, texts, args.workers)
        for block in range(args.blocks):
            for name in rotate(names, block):
                kind = kinds[name]
                gc.collect()
                latencies = timed(kind.call, [texts(name) for _ in range(args.seq)])
                seq[name].append(median(latencies))
                seq_all[name] += latencies
                before = cpu_snapshot(kind, redis)
                seconds, latencies = loaded(pool, kind, texts, args.workers, args.calls)
                after = cpu_snapshot(kind, redis)
                for key in cpu[name]:
                    cpu[name][key] += after[key] - before[key]
                n = args.workers * args.calls
                loaded_calls[name] += n
                rate[name].append(n / seconds)
                load_p50[name].append(median(latencies))
                load_all[name] += latencies
            log(f"  block {block + 1}/{args.blocks}: " + ", ".join(
                f"{n} {seq[n][-1] / 1000:.2f} ms, {rate[n][-1]:.0f}/s" for n in names))
    out: Dict[str, Any] = {}
    for name in names:
        per_call = {key: value / loaded_calls[name] for key, value in cpu[name].items()}
        entry: Dict[str, Any] = {
            "seq_p50_us": median(seq[name]),
            "seq_p99_us": quantile(seq_all[name], 0.99),
            "calls_per_s": median(rate[name]),
            "loaded_p50_us": median(load_p50[name]),
            "loaded_p99_us": quantile(load_all[name], 0.99),
            "cpu_ms_per_call": {g: per_call[g] * 1e3 for g in GROUPS},
            "redis_commands_per_call": per_call["commands"],
            "cpu_seconds": cpu[name],
            "loaded_calls": loaded_calls[name],
            "blocks": {"seq_p50_us": seq[name], "calls_per_s": rate[name],
                       "loaded_p50_us": load_p50[name]},
        }
        if name != DIRECT and DIRECT in names:
            entry["overhead_us"] = median([a - b for a, b in zip(seq[name], seq[DIRECT])])
            entry["vs_direct"] = ratio_summary([a / b for a, b in zip(rate[name], rate[DIRECT])])
        if name == "2-workers" and "prefork-1" in names:
            entry["vs_prefork_1"] = ratio_summary(
                [a / b for a, b in zip(rate[name], rate["prefork-1"])])
        out[name] = entry
    out["_meta"] = {"blocks": args.blocks, "seq_calls": args.seq, "workers": args.workers,
                    "calls_per_worker": args.calls}
    return out


def paper(results: Dict[str, Any]) -> Dict[str, Any]:
    """Capacity on paper, from the measured CPU per task."""
    out: Dict[str, Any] = {}
    one = results.get("prefork-1")
    if one:
        cpu = one["cpu_ms_per_call"]
        out["worker_ms"] = cpu["worker"]
        out["server_ms"] = cpu["server"]
        out["tasks_per_core"] = 1e3 / cpu["worker"] if cpu["worker"] else None
        both = cpu["worker"] + cpu["server"]
        out["tasks_per_core_with_server"] = 1e3 / both if both else None
        out["caller_ms"] = cpu["caller"]
    celery = [v for k, v in results.items() if k in CELERY_KINDS]
    if celery:
        redis_ms = median([v["cpu_ms_per_call"]["redis"] for v in celery])
        out["redis_ms"] = redis_ms
        out["redis_commands"] = median([v["redis_commands_per_call"] for v in celery])
        out["redis_tasks_per_s"] = 1e3 / redis_ms if redis_ms else None
    return out


# -- output ----------------------------------------------------------------------------


def render(results: Dict[str, Any]) -> str:
    meta = results["meta"]
    calls = results["calls"]
    m = calls["_meta"]
    names = [k for k in KINDS if k in calls]
    lines = [
        "# mcp_sync through Celery benchmark",
        "",
        f"{meta['date']} · Python {meta['python']} · {meta['cpu']} · {meta['nproc']} CPUs · "
        f"mcp_sync {meta['mcp_sync_version']} ({meta['git']}) · Celery {meta['celery']} · "
        f"redis-server {meta['redis_server']} · no pinning",
        "",
        f"## Tool calls ({m['blocks']} blocks; per kind and block: {m['seq_calls']} calls one "
        f"at a time, then {m['workers']} threads x {m['calls_per_worker']} calls)",
        "",
        "| kind | tasks run by | p50, 1 in flight | overhead per task (- direct p50) | "
        f"calls/s, {m['workers']} in flight | vs direct (median of blocks; min-max) | "
        f"p50 / p99, {m['workers']} in flight |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name in names:
        r = calls[name]
        overhead = f"{r['overhead_us'] / 1000:.2f} ms" if "overhead_us" in r else ""
        vs = r.get("vs_direct")
        ratio = f"{vs['median']:.2f}x ({vs['min']:.2f}-{vs['max']:.2f})" if vs else ""
        lines.append(
            f"| {LABELS[name]} | {RUNNERS[name]} | {r['seq_p50_us'] / 1000:.2f} ms | {overhead} "
            f"| {r['calls_per_s']:.0f} | {ratio} | {r['loaded_p50_us'] / 1000:.1f} / "
            f"{r['loaded_p99_us'] / 1000:.1f} ms |")
    two = calls.get("2-workers", {}).get("vs_prefork_1")
    if two:
        lines += ["", f"2 workers against 1 (prefork -c 1): {two['median']:.2f}x the calls per "
                  f"second (blocks {two['min']:.2f}-{two['max']:.2f})."]
    lines += [
        "",
        f"## CPU per call, {m['workers']} in flight (all blocks)",
        "",
        "| kind | caller | worker processes (Celery + mcp_sync) | echo server | Redis | "
        "Redis commands per call |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name in names:
        c = calls[name]["cpu_ms_per_call"]
        redis = f"{c['redis']:.3f} ms" if name != DIRECT else ""
        commands = f"{calls[name]['redis_commands_per_call']:.1f}" if name != DIRECT else ""
        worker = f"{c['worker']:.2f} ms" if name != DIRECT else ""
        lines.append(f"| {LABELS[name]} | {c['caller']:.2f} ms | {worker} | "
                     f"{c['server']:.2f} ms | {redis} | {commands} |")
    p = results.get("paper") or {}
    if p.get("tasks_per_core"):
        lines += [
            "",
            "## On paper",
            "",
            f"* One worker core (prefork -c 1): {p['worker_ms']:.2f} ms of CPU per task in the "
            f"worker's processes, {p['server_ms']:.2f} ms in the echo server: about "
            f"{p['tasks_per_core']:.0f} tasks/s per core for Celery + mcp_sync alone, "
            f"{p['tasks_per_core_with_server']:.0f} with this (trivial) tool's server.",
        ]
    if p.get("redis_tasks_per_s"):
        lines.append(
            f"* Redis: {p['redis_ms'] * 1000:.0f} us of CPU and {p['redis_commands']:.0f} "
            f"commands per task (broker and result backend in one instance, median of the "
            f"Celery kinds): one instance's core would be full at about "
            f"{p['redis_tasks_per_s']:.0f} tasks/s, if its cost per task stayed as measured "
            "(assumed, not measured: it was far from full here).")
    if p.get("caller_ms"):
        lines.append(f"* The caller spent {p['caller_ms']:.2f} ms of CPU per task (send, "
                     "wait for the result, and reading the workers' INFO log lines).")
    notes = results.get("notes") or []
    if notes:
        lines += ["", "## Notes", ""] + [f"* {note}" for note in notes]
    return "\n".join(lines) + "\n"


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="fewer blocks and calls (~15 s)")
    p.add_argument("--kinds", default=",".join(KINDS),
                   help=f"comma-separated kinds, from {','.join(KINDS)} (direct always runs)")
    p.add_argument("--blocks", type=int, help="interleaved blocks (8; quick 3)")
    p.add_argument("--seq", type=int, help="calls one at a time per kind and block (50; quick 20)")
    p.add_argument("--workers", type=int, default=8, help="caller threads, calls in flight (8)")
    p.add_argument("--calls", type=int,
                   help="calls per caller thread per kind and block (40; quick 15)")
    p.add_argument("--out", default=str(RESULTS),
                   help="directory for latest-celery.md and .json (bench/results)")
    args = p.parse_args(argv)
    args.blocks = args.blocks or (3 if args.quick else 8)
    args.seq = args.seq or (20 if args.quick else 50)
    args.calls = args.calls or (15 if args.quick else 40)
    return args


@contextlib.contextmanager
def private_redis() -> Iterator[Tuple[str, int]]:
    from tests._procs import redis_server

    with tempfile.TemporaryDirectory(prefix="mcp-sync-bench-redis-") as directory, \
            redis_server(Path(directory)) as (url, pid):
        yield url, pid


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    wanted = [k.strip() for k in args.kinds.split(",") if k.strip()]
    unknown = set(wanted) - set(KINDS)
    if unknown:
        raise SystemExit(f"unknown kinds: {sorted(unknown)}")
    names = [k for k in KINDS if k == DIRECT or k in wanted]
    load = common.load_average()
    if load is not None and load > 0.5 * (os.cpu_count() or 1):
        log(f"warning: the 1-minute load average is {load:.1f} on {os.cpu_count()} CPUs: "
            "other processes are busy and the figures will be noisy")
    import celery

    started = time.perf_counter()
    meta = common.machine_meta(args, names, "off")
    meta["celery"] = celery.__version__
    results: Dict[str, Any] = {"meta": meta}
    kinds: Dict[str, Kind] = {}
    with contextlib.ExitStack() as stack:
        url, redis_pid = stack.enter_context(private_redis())
        meta["redis_server"] = subprocess.run(
            ["redis-server", "--version"], capture_output=True, text=True, timeout=10
        ).stdout.split(" v=")[-1].split()[0]
        redis = Redis(url, redis_pid)
        stack.callback(redis.close)
        try:
            log(f"redis-server pid {redis_pid} at {url}; starting the workers ...")
            for database, name in enumerate(names):
                if name == DIRECT:
                    kinds[name] = DirectKind()
                else:
                    kinds[name] = CeleryKind(name, f"{url}/{database}", stack)
            meter = NoiseMeter()
            results["calls"] = run_blocks(kinds, redis, args)
            noise = meter.stop()
        finally:
            for kind in kinds.values():
                try:
                    kind.close()
                except Exception as exc:  # noqa: BLE001 - report and go on closing
                    log(f"closing {kind.name}: {exc!r}")
        # Leaving the stack stops the workers (and their pool processes and servers) and
        # Redis, by PID, on success, failure and Ctrl-C alike.
    results["paper"] = paper(results["calls"])
    results["noise"] = noise
    results["notes"] = [
        "no CPU pinning: the caller, Redis, the workers and the servers share the "
        f"{os.cpu_count()} CPUs, as on one machine; a kind with two processes running tasks "
        "competes with the caller and Redis for them.",
        "workers run with `--loglevel INFO` (two log lines per task, read by the caller), "
        "`-O fair`, `worker_prefetch_multiplier = 1`, without gossip, mingle and heartbeat; "
        "the task's default `acks_late` and its CALLING record are on.",
    ]
    if noise:
        results["notes"].append(
            f"other processes kept {noise['foreign_cpus']:.2f} CPUs busy during the run "
            f"(hypervisor steal {noise['steal_cpus']:.2f}); above ~0.2 the absolute figures "
            "are disturbed, the per-block ratios less so.")
    meta["duration_s"] = round(time.perf_counter() - started, 1)
    text = render(results) + f"\nTotal run time: {meta['duration_s']:.0f} s.\n"
    print(text)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "latest-celery.md").write_text(text, encoding="utf-8")
    (out / "latest-celery.json").write_text(json.dumps(results, indent=2, default=str) + "\n",
                                            encoding="utf-8")
    log(f"wrote {out / 'latest-celery.md'} and {out / 'latest-celery.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
