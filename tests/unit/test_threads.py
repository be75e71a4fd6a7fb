"""The thread policy, written once (mcp_sync/_util/threads.py): named daemon threads, and the
bounded join that warns about a thread that outlived its bound."""

from __future__ import annotations

import logging
import re
import subprocess
import threading
import time
from pathlib import Path
from typing import Dict, List

import pytest

from mcp_sync._util.threads import green, join_or_warn, start_thread

from ..conftest import PY, ROOT

log = logging.getLogger("mcp_sync.test_threads")
T = 10.0


def warnings_of(caplog: pytest.LogCaptureFixture) -> List[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_a_started_thread_is_a_named_running_daemon() -> None:
    gate = threading.Event()
    thread = start_thread(gate.wait, "mcp-sync-test-one", T)
    try:
        assert thread.name == "mcp-sync-test-one"
        assert thread.daemon
        assert thread.is_alive()
    finally:
        gate.set()
        thread.join(T)
    assert not thread.is_alive()


def test_a_name_outside_the_policy_is_refused() -> None:
    with pytest.raises(ValueError, match="mcp-sync-"):
        start_thread(print, "worker-1")
    assert not [t for t in threading.enumerate() if t.name == "worker-1"]


def test_a_thread_that_outlives_the_bound_is_left_with_one_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    gate = threading.Event()
    thread = start_thread(gate.wait, "mcp-sync-test-gated", T)
    try:
        with caplog.at_level(logging.WARNING, logger=log.name):
            started = time.monotonic()
            assert join_or_warn(thread, 0.1, "closing the test", log) is False
            assert time.monotonic() - started < T / 2  # bounded: it did not wait for the gate
        assert thread.is_alive()
        assert warnings_of(caplog) == [
            "mcp-sync-test-gated did not stop within 0.1 s of closing the test"
        ]
        caplog.clear()
        gate.set()
        with caplog.at_level(logging.WARNING, logger=log.name):
            assert join_or_warn(thread, T, "closing the test", log) is True
        assert not thread.is_alive()
        assert warnings_of(caplog) == []
    finally:
        gate.set()
        thread.join(T)


def test_threads_stopped_together_share_one_bound(caplog: pytest.LogCaptureFixture) -> None:
    gate = threading.Event()
    threads = [start_thread(gate.wait, f"mcp-sync-test-shared-{n}", T) for n in range(3)]
    try:
        started = time.monotonic()
        with caplog.at_level(logging.WARNING, logger=log.name):
            ended = [join_or_warn(t, 0.3, "closing the test", log, deadline=started + 0.3)
                     for t in threads]
        assert ended == [False, False, False]
        # One bound for the three (0.3 s), not 0.3 s each (0.9 s).
        assert time.monotonic() - started < 0.8
        assert len(warnings_of(caplog)) == 3
    finally:
        gate.set()
        for thread in threads:
            thread.join(T)


def test_the_current_thread_none_and_unstarted_threads_are_not_joined(
        caplog: pytest.LogCaptureFixture) -> None:
    results: List[bool] = []

    def join_myself() -> None:
        results.append(join_or_warn(threading.current_thread(), T, "closing the test", log))

    with caplog.at_level(logging.WARNING, logger=log.name):
        started = time.monotonic()
        thread = start_thread(join_myself, "mcp-sync-test-self")
        thread.join(T)
        assert results == [True]
        assert time.monotonic() - started < T / 2  # returned at once, no self-join
        assert join_or_warn(None, T, "closing the test", log) is True
        never_started = threading.Thread(target=print, name="mcp-sync-test-unstarted")
        assert join_or_warn(never_started, T, "closing the test", log) is True
    assert warnings_of(caplog) == []


# -- one definition each --------------------------------------------------------------------


def library_sources() -> Dict[Path, str]:
    return {path: path.read_text() for path in sorted((ROOT / "mcp_sync").rglob("*.py"))}


def test_only_the_thread_module_makes_threads() -> None:
    """Every thread the library starts goes through start_thread (named, daemon)."""
    makers = [path.relative_to(ROOT).as_posix() for path, text in library_sources().items()
              if re.search(r"\bThread\(", text)]
    assert makers == ["mcp_sync/_util/threads.py"]



# -- under gevent ----------------------------------------------------------------------------

GREEN = """
import sys
if sys.argv[1] == "patched":
    from gevent import monkey
    monkey.patch_all()
elif sys.argv[1] == "imported":
    import gevent.monkey
from mcp_sync._util.threads import green, start_thread
thread = start_thread(print, "mcp-sync-test-green")
thread.join(10)
print(green(), "gevent.monkey" in sys.modules, type(thread).__module__)
"""


@pytest.mark.parametrize(("how", "expected"), [
    ("plain", "False False threading"),
    ("imported", "False True threading"),  # gevent imported, threading left alone
    ("patched", "True True gevent.threading"),  # patch_all(): the threads are greenlets
])
def test_green_tells_whether_gevent_patched_threading(how: str, expected: str) -> None:
    assert green() is False  # never in pytest's own process
    done = subprocess.run([PY, "-c", GREEN, how], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == expected.split()


def test_the_library_never_imports_gevent() -> None:
    """green() reads gevent.monkey from sys.modules only: the library imports no gevent."""
    importers = [path.relative_to(ROOT).as_posix() for path, text in library_sources().items()
                 if re.search(r"^\s*(import|from)\s+gevent", text, re.MULTILINE)]
    assert importers == []


def test_a_session_starts_its_callback_thread_with_the_first_callback() -> None:
    import mcp_sync

    from ..conftest import fake_server_command, mcp_threads

    closed = threading.Event()
    with mcp_sync.connect(fake_server_command(), timeout=20.0,
                          on_connection_lost=lambda error: closed.set()) as client:
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        names = [thread.name for thread in mcp_threads()]
        assert not [name for name in names if name.startswith("mcp-sync-callback-")], names
        updates: List[object] = []
        client.call_tool("slow", {"seconds": 0.2, "progress_interval": 0.05},
                         on_progress=lambda *update: updates.append(update))
        from ..helpers import wait_for

        wait_for(lambda: updates, what="progress")  # on the callback thread, started for it
        assert "mcp-sync-callback-fake" in [thread.name for thread in mcp_threads()]

    assert not closed.is_set()  # close() is no lost connection

    # a connection lost before any notification still reaches its hook
    lost = threading.Event()
    with mcp_sync.connect(fake_server_command(), timeout=20.0,
                          on_connection_lost=lambda error: lost.set()) as client:
        with pytest.raises(mcp_sync.ConnectionClosed):
            client.call_tool("crash", {"code": 3})
        assert lost.wait(10.0)


def test_an_idle_stdio_client_holds_three_threads() -> None:
    """Reader, stderr (which also watches for the child's exit, through a pidfd) and
    dispatch: no watcher, no callback thread while nothing needs them."""
    import mcp_sync

    from ..conftest import fake_server_command, mcp_threads

    with mcp_sync.connect(fake_server_command(), timeout=20.0) as client:
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        names = sorted(thread.name for thread in mcp_threads())
        assert names == ["mcp-sync-dispatch-fake", "mcp-sync-reader-fake",
                         "mcp-sync-stderr-fake"], names
        # the exit is still seen by the stderr thread
        with pytest.raises(mcp_sync.ConnectionClosed, match="exited") as caught:
            client.call_tool("crash", {"code": 3})
        assert caught.value.exit_code == 3


def test_stderr_lines_are_cut_as_readline_cuts_them() -> None:
    from mcp_sync.transports._process import _LineSplitter

    lines = _LineSplitter(4)
    assert lines.feed(b"ab") == []
    assert lines.feed(b"\ncdefgh") == [b"ab\n", b"cdef"]
    assert lines.feed(b"ij\nk") == [b"ghij", b"\n"]
    assert lines.feed(b"l\n") == [b"kl\n"]
    assert lines.rest() == []
    assert lines.feed(b"xyz") == [] and lines.rest() == [b"xyz"]
