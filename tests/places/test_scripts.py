"""Plain scripts (a cron job: ``examples/script.py``) and blocking calls from asyncio code.

A script's server child and threads are gone when it ends: normally, on an uncaught
exception, and on SIGTERM.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
import threading
from typing import List

import pytest

import mcp_sync

from .._procs import EXAMPLES, LineWatcher, subprocess_env, wait_gone
from ..conftest import ROOT

SCRIPT = EXAMPLES / "script.py"
DEMO = [sys.executable, "-m", "mcp_sync.demo_server"]


def server_pid(stderr: str) -> int:
    match = re.search(r"server pid (\d+)", stderr)
    assert match, stderr
    return int(match.group(1))


def reaped(pid: int) -> bool:
    # Stopped and waited for by the script itself, not left for init to find.
    try:
        open(f"/proc/{pid}/stat").close()
    except OSError:
        return True
    return False


def run_script(*args: str) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT,
                          env=subprocess_env(), capture_output=True, text=True, timeout=60)


def test_a_cron_job_script_prints_the_result_and_leaves_nothing_behind() -> None:
    result = run_script()
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"sum": 5}
    assert reaped(server_pid(result.stderr))


def test_an_uncaught_exception_still_stops_the_server() -> None:
    result = run_script("--tool", "nosuchtool")
    assert result.returncode == 1
    assert "ServerError" in result.stderr and "nosuchtool" in result.stderr
    assert reaped(server_pid(result.stderr))


def test_sigterm_during_a_call_stops_the_server() -> None:
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--tool", "count", "--args", '{"n": 1000}'],
        cwd=ROOT, env=subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )
    stderr = LineWatcher(process.stderr, "script")  # type: ignore[arg-type]
    try:
        # Blocked in call_tool once the server reports progress.
        stderr.wait_for(lambda lines: any("counted to 2" in line for line in lines), 30)
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 128 + signal.SIGTERM
        stderr.join()
        assert reaped(server_pid(stderr.text)), stderr.text
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        stderr.join()
        for pipe in (process.stdout, process.stderr):
            pipe.close()  # type: ignore[union-attr]


def test_sigterm_without_a_handler_the_server_exits_on_its_own() -> None:
    # Killed outright (no handler, no atexit): the server's stdin reaches EOF, and a
    # well-behaved stdio server (ours is one) exits.
    code = ("import sys, mcp_sync\n"
            "client = mcp_sync.connect([sys.executable, '-m', 'mcp_sync.demo_server'])\n"
            "print(client.transport.pid, flush=True)\n"
            "client.call_tool('count', {'n': 1000})\n")
    process = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=subprocess_env(),
                               stdout=subprocess.PIPE, text=True)
    stdout = LineWatcher(process.stdout, "script")  # type: ignore[arg-type]
    try:
        pid = int(stdout.wait_for(lambda lines: lines and lines[0], 30))
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == -signal.SIGTERM
        assert wait_gone([pid]) == []
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        stdout.join()
        process.stdout.close()  # type: ignore[union-attr]


def test_blocking_client_in_asyncio_code() -> None:
    """In a mixed codebase an ``async def`` calls the blocking client through
    ``asyncio.to_thread`` (the event loop stays free), or directly (blocking it)."""

    async def main(client: mcp_sync.Client) -> List[object]:
        loop_alive = asyncio.Event()

        async def heartbeat() -> None:
            loop_alive.set()

        # Several calls in flight at once, each on a worker thread, the loop running on.
        results = await asyncio.gather(
            *(asyncio.to_thread(client.call_tool, "add", {"a": i, "b": 1}) for i in range(8)),
            heartbeat(),
        )
        assert loop_alive.is_set()
        # A direct call works inside a running loop too (asyncio.run() would not).
        direct = client.call_tool("echo", {"text": "direct"})
        return [r.structured for r in results[:8]] + [direct.text]

    with mcp_sync.connect(DEMO, cwd=str(ROOT), timeout=30) as client:
        answers = asyncio.run(main(client))
    assert answers == [{"sum": i + 1} for i in range(8)] + ["direct"]


def test_asyncio_cancellation_reaches_the_server_through_wrap_future() -> None:
    """``asyncio.wrap_future(client.call_tool_future(...))`` is awaitable, and cancelling
    it (here by ``asyncio.wait_for``) cancels the call on the wire; a ``to_thread`` call
    cannot be cancelled, only abandoned."""
    cancelled_on_server = threading.Event()

    def on_log(params: mcp_sync.types.LoggingMessageNotificationParams) -> None:
        if "count cancelled" in str(params.data):
            cancelled_on_server.set()

    async def main(client: mcp_sync.Client) -> object:
        call = client.call_tool_future("count", {"n": 1000, "interval": 0.05})
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.wrap_future(call), 0.3)
        assert call.cancelled()
        return (await asyncio.to_thread(client.call_tool, "add", {"a": 1, "b": 1})).structured

    with mcp_sync.connect(DEMO, cwd=str(ROOT), timeout=30, logging_handler=on_log) as client:
        assert asyncio.run(main(client)) == {"sum": 2}
        assert cancelled_on_server.wait(10)
