"""One client under gevent, in a process of its own: ``python tests/_gevent_probe.py stdio|http``.

``gevent.monkey.patch_all()`` runs first, before anything imports ``threading``: that is
why tests/places/test_gevent.py runs this file as a subprocess and never patches pytest's own
process. It connects one client (to tests/servers/fake_stdio.py, or to
tests/servers/http_process.py over Streamable HTTP), runs the scenarios below on greenlets
and prints one JSON report on stdout, which the test asserts on:

* ``echo``: 100 greenlets call ``echo`` on the one client at once; each result must be
  its own argument (``mismatches`` lists the others, ``errors`` the failures);
* ``big_echo``: the length of the echo of a 512 KiB text, more than a pipe holds;
* ``ticks_during_call``: a greenlet ticks every 10 ms while the main greenlet waits on a
  call the server holds for ``HOLD`` seconds; a hub blocked by the client ticks not at all;
* ``timeout``: what a call held longer than its 0.5 s timeout raised, and when;
* ``cancel``: a ``call_tool_future`` cancelled once its progress arrived: what
  ``result()`` raised, and whether the client still answers afterwards;
* ``after_close``: the mcp-sync threads left after ``close()``, and whether the stdio
  server's process still exists.

Every wait has a bound; a scenario that fails records its error instead of ending the
report.
"""

from gevent import monkey

monkey.patch_all()

import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable, Dict, List, Optional  # noqa: E402

import gevent  # noqa: E402
import gevent.event  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import mcp_sync  # noqa: E402

SERVERS = ROOT / "tests" / "servers"
CALLS = 100
HOLD = 0.5
BOUND = 20.0
BIG = "x" * (512 * 1024)


def pid_exists(pid: int) -> bool:
    """A process that exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def scenario(report: Dict[str, Any], name: str, run: Callable[[], Any]) -> None:
    try:
        report[name] = run()
    except Exception as exc:  # noqa: BLE001 (the report says what broke; the test fails on it)
        report[name] = {"failed": f"{type(exc).__name__}: {exc}",
                        "traceback": traceback.format_exc()[-2000:]}


def echo_all(client: mcp_sync.Client) -> Dict[str, Any]:
    def one(index: int) -> str:
        return client.call_tool("echo", {"text": f"message {index}"}).text

    started = time.monotonic()
    greenlets = [gevent.spawn(one, index) for index in range(CALLS)]
    gevent.joinall(greenlets, timeout=BOUND)
    mismatches: List[Any] = []
    errors: List[str] = []
    for index, greenlet in enumerate(greenlets):
        if not greenlet.ready():
            errors.append(f"{index}: still running after {BOUND} s")
        elif not greenlet.successful():
            errors.append(f"{index}: {greenlet.exception!r}")
        elif greenlet.value != f"message {index}":
            mismatches.append([index, greenlet.value])
    gevent.killall([g for g in greenlets if not g.ready()], timeout=1)
    return {"calls": CALLS, "mismatches": mismatches, "errors": errors,
            "seconds": time.monotonic() - started}


def ticking(call: Callable[[], Any]) -> Dict[str, Any]:
    """Run ``call`` on this greenlet while another one ticks every 10 ms."""
    ticks = [0]
    stop = gevent.event.Event()

    def tick() -> None:
        while not stop.wait(0.01):
            ticks[0] += 1

    ticker = gevent.spawn(tick)
    started = time.monotonic()
    outcome: Dict[str, Any] = {}
    try:
        outcome["result"] = repr(call())
    except Exception as exc:  # noqa: BLE001 (reported: the test says which it expects)
        outcome["raised"] = type(exc).__name__
    outcome["seconds"] = time.monotonic() - started
    stop.set()
    ticker.join(BOUND)
    outcome["ticks"] = ticks[0]
    return outcome


def main() -> None:
    kind = sys.argv[1]
    report: Dict[str, Any] = {"kind": kind, "patched": monkey.is_module_patched("threading")}
    server: Optional[subprocess.Popen[bytes]] = None
    if kind == "stdio":
        target: Any = [sys.executable, str(SERVERS / "fake_stdio.py")]
        hold_tool, hold_args = "slow", {"seconds": HOLD}
        long_args: Dict[str, Any] = {"seconds": 30}
        cancel_args: Dict[str, Any] = {"seconds": 30, "progress_interval": 0.05}
    else:
        # SSE replies: `hold` reports progress before it waits, as the cancel case needs.
        server = subprocess.Popen(
            [sys.executable, str(SERVERS / "http_process.py"), "--reply", "sse"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert server.stdout is not None
        with gevent.Timeout(BOUND):
            target = server.stdout.readline().decode().strip()
        # `hold` answers only when cancelled: a call held for HOLD s is one timing out then.
        hold_tool, hold_args = "hold", {}
        long_args = cancel_args = {}
    client = mcp_sync.connect(target, timeout=BOUND, close_timeout=5)
    stdio_pid = getattr(client.transport, "pid", None)
    try:
        scenario(report, "echo", lambda: echo_all(client))
        # Larger than a pipe holds (64 KiB): the stdio transport's writer thread writes the
        # rest as the server reads, waiting in select.poll.
        scenario(report, "big_echo", lambda: len(client.call_tool("echo", {"text": BIG}).text))
        if kind == "stdio":
            scenario(report, "ticks_during_call", lambda: ticking(
                lambda: client.call_tool(hold_tool, hold_args).text))
        else:
            scenario(report, "ticks_during_call", lambda: ticking(
                lambda: client.call_tool(hold_tool, hold_args, timeout=HOLD)))
        long_tool = "slow" if kind == "stdio" else "hold"
        scenario(report, "timeout", lambda: ticking(
            lambda: client.call_tool(long_tool, long_args, timeout=0.5)))

        def cancel() -> Dict[str, Any]:
            progressed = threading.Event()
            future = client.call_tool_future(long_tool, cancel_args,
                                              on_progress=lambda *_: progressed.set())
            outcome: Dict[str, Any] = {"progressed": progressed.wait(BOUND)}
            started = time.monotonic()
            outcome["cancelled"] = future.cancel()
            try:
                future.result(BOUND)
                outcome["raised"] = None
            except Exception as exc:  # noqa: BLE001 (reported, as above)
                outcome["raised"] = type(exc).__name__
            outcome["seconds"] = time.monotonic() - started
            outcome["echo_after"] = client.call_tool("echo", {"text": "still here"}).text
            return outcome

        scenario(report, "cancel", cancel)
    finally:
        started = time.monotonic()
        client.close()
        closed_in = time.monotonic() - started
    # Daemon threads end on their own once close() joined them: nothing left to wait for.
    report["after_close"] = {
        "seconds": closed_in,
        "threads": [t.name for t in threading.enumerate() if t.name.startswith("mcp-sync")],
        "server_alive": stdio_pid is not None and pid_exists(stdio_pid),
        "stdio_pid": stdio_pid,
    }
    if server is not None:
        assert server.stdin is not None
        server.stdin.close()
        report["http_server_exit"] = server.wait(BOUND)
    sys.stdout.write(json.dumps(report) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
