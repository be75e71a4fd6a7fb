"""``os.fork()`` after connecting: the child gets a clear error from the inherited client,
or a fresh connection when it makes one; the parent's client keeps working.

Each child reports back as JSON over a pipe and leaves with ``os._exit`` (it must not run
pytest's teardown, nor the parent's exit hooks).
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import threading
import time
import traceback
import warnings
from typing import Any, Callable, Dict

import mcp_sync
from mcp_sync.contrib._process import ProcessManager

from .._procs import running
from ..conftest import ROOT

DEMO = [sys.executable, "-m", "mcp_sync.demo_server"]
DEMO_ENTRY = {"command": sys.executable, "args": ["-m", "mcp_sync.demo_server"],
              "cwd": str(ROOT)}


def in_forked_child(child: Callable[[], Dict[str, Any]], timeout: float = 30.0) -> Dict[str, Any]:
    """Fork, run ``child`` in the child, and return its report (bounded by ``timeout``)."""
    read_fd, write_fd = os.pipe()
    with warnings.catch_warnings():
        # Python 3.12+ warns about fork() in a process with threads: that is the point.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child
        try:
            os.close(read_fd)
            try:
                report = child()
            except BaseException as exc:  # noqa: BLE001 - reported to the parent
                report = {"crash": repr(exc), "traceback": traceback.format_exc()}
            data = json.dumps(report).encode()
            while data:
                data = data[os.write(write_fd, data):]
        finally:
            os._exit(0)
    os.close(write_fd)
    chunks = []
    deadline = time.monotonic() + timeout
    try:
        while True:
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([read_fd], [], [], max(0.0, remaining))
            if not ready:
                os.kill(pid, signal.SIGKILL)
                raise AssertionError(f"the forked child did not report within {timeout} s")
            chunk = os.read(read_fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_fd)
        os.waitpid(pid, 0)  # it has closed its end: exiting, or killed above
    report: Dict[str, Any] = json.loads(b"".join(chunks))
    assert "crash" not in report, report.get("traceback")
    return report


def test_inherited_client_fails_clearly_and_a_new_one_works_in_the_child() -> None:
    with mcp_sync.connect(DEMO, cwd=str(ROOT), timeout=30) as client:
        assert client.call_tool("add", {"a": 1, "b": 1}).structured == {"sum": 2}
        parent_server = client.transport.pid  # type: ignore[attr-defined]

        def child() -> Dict[str, Any]:
            report: Dict[str, Any] = {"connected": client.connected}
            for what, attempt in (("call", lambda: client.call_tool("echo", {"text": "x"})),
                                  ("list", client.list_tools),
                                  ("connect", client.connect)):
                try:
                    attempt()
                    report[what] = "no error"
                except mcp_sync.ForkedClientError as exc:
                    report[what] = str(exc)
            client.close()  # harmless here: must leave the parent's server alone
            # Asking for a fresh connection: a new client, with a server of its own.
            with mcp_sync.connect(DEMO, cwd=str(ROOT), timeout=30) as fresh:
                report["fresh"] = fresh.call_tool("add", {"a": 2, "b": 2}).structured
                report["fresh_server"] = fresh.transport.pid  # type: ignore[attr-defined]
            report["fresh_server_stopped"] = not running(report["fresh_server"])
            return report

        report = in_forked_child(child)

        assert report["connected"] is False
        for what in ("call", "list", "connect"):
            assert "parent process" in report[what] and "new client" in report[what], report
        assert report["fresh"] == {"sum": 4}
        assert report["fresh_server"] != parent_server
        assert report["fresh_server_stopped"]
        # The parent's client and server are untouched.
        assert running(parent_server)
        assert client.connected
        assert client.call_tool("add", {"a": 3, "b": 4}).structured == {"sum": 7}
        assert "add" in [tool.name for tool in client.list_tools()]
    assert not running(parent_server)


def test_a_process_manager_builds_a_new_manager_in_a_forked_child() -> None:
    """What the Django and Flask integrations rely on (gunicorn's workers)."""
    process_manager = ProcessManager(
        lambda: ({"mcpServers": {"demo": DEMO_ENTRY}}, {"timeout": 30}), label="test")
    try:
        parent_manager = process_manager.get()
        parent_server = parent_manager["demo"].transport.pid  # type: ignore[attr-defined]

        def child() -> Dict[str, Any]:
            report: Dict[str, Any] = {"built_before_use": process_manager.built}
            manager = process_manager.get()
            report["same_manager"] = manager is parent_manager
            report["server"] = manager["demo"].transport.pid  # type: ignore[attr-defined]
            report["sum"] = manager.call_tool("demo__add", {"a": 1, "b": 2}).structured
            process_manager.close()
            report["server_stopped"] = not running(report["server"])
            return report

        report = in_forked_child(child)

        assert report == {"built_before_use": False, "same_manager": False,
                          "server": report["server"], "sum": {"sum": 3},
                          "server_stopped": True}
        assert report["server"] != parent_server
        assert process_manager.get() is parent_manager
        assert running(parent_server)
        assert parent_manager.call_tool("demo__add", {"a": 2, "b": 2}).structured == {"sum": 4}
    finally:
        process_manager.close()
    assert not process_manager.built


def test_a_fork_while_another_thread_holds_the_era_lock() -> None:
    """The era cache's lock, held by another thread at the fork, would be held forever in
    the child (that thread is not there to release it): every negotiation would hang."""
    from mcp_sync.client import _negotiation as negotiation

    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with negotiation._era_lock:
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold, name="test-era-lock-holder", daemon=True)
    holder.start()
    try:
        assert held.wait(10)

        def child() -> Dict[str, Any]:
            with mcp_sync.connect(DEMO, cwd=str(ROOT), timeout=10) as fresh:
                return {"sum": fresh.call_tool("add", {"a": 2, "b": 3}).structured}

        report = in_forked_child(child, timeout=20)
    finally:
        release.set()
        holder.join(10)
    assert report == {"sum": {"sum": 5}}


def test_a_stdio_transport_used_in_a_forked_child_refuses_to_write() -> None:
    # The fork hook marks the transport: the child's write never reaches the parent's
    # server (send() does not ask for the pid on each message where the hook exists).
    from mcp_sync.transports.stdio import StdioTransport

    transport = StdioTransport(DEMO[0], DEMO[1:], cwd=str(ROOT))
    transport.start(lambda message: None, lambda error: None, lambda request_id, error: None)
    try:
        def child() -> Dict[str, Any]:
            try:
                transport.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            except mcp_sync.ForkedClientError as exc:
                return {"refused": str(exc)}
            return {"refused": None}

        report = in_forked_child(child)
        assert report["refused"] and "parent process" in report["refused"], report
        transport.send({"jsonrpc": "2.0", "method": "notifications/initialized"})  # parent's
    finally:
        transport.close()
