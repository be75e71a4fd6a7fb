"""Helpers for the tests that run web servers, kernels and scripts as processes."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple

from .conftest import PY, ROOT

EXAMPLES = ROOT / "examples"


def subprocess_env(**extra: str) -> Dict[str, str]:
    """The environment for a child Python: this checkout's mcp_sync first on the path
    (also for the demo servers it starts, whose working directory is ``ROOT``)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def python_stdout(code: str, timeout: float = 30.0) -> str:
    """Run ``code`` in a new Python from the project root (so it imports this checkout's
    mcp_sync); its stdout. A non-zero exit fails with CalledProcessError."""
    done = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=timeout,
                          cwd=str(ROOT), check=True)
    return done.stdout


def default_ctrl_c() -> None:
    """``preexec_fn`` of a child a test sends Ctrl-C (SIGINT): the default handling, as
    a terminal's foreground process has it. A test run started as a shell's background
    job (``pytest ... &``) has SIGINT ignored, its children inherit that, and a Python
    child that starts with SIGINT ignored never raises KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def stop_process(process: subprocess.Popen[Any], timeout: float = 10.0) -> None:
    """SIGTERM ``process`` (by its PID), wait up to ``timeout`` for it to exit, then
    SIGKILL it and wait again."""
    process.terminate()
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_listening(port: int, timeout: float = 30.0) -> None:
    """Wait (bounded) until something accepts connections on 127.0.0.1:``port``.

    A server in another process gives no event to wait on; its "listening" log line may
    come just before the bind, so the socket itself is asked.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1.0):
                return
        except OSError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.05)


def process_state(pid: int) -> Optional[str]:
    """The process's state letter from /proc (``"Z"`` for a zombie), or None if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode(errors="replace")
    except OSError:
        return None
    return stat[stat.rfind(")") + 2:].split()[0]


def parent_pid(pid: int) -> Optional[int]:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode(errors="replace")
    except OSError:
        return None
    return int(stat[stat.rfind(")") + 2:].split()[1])


def running(pid: int) -> bool:
    state = process_state(pid)
    return state is not None and state not in ("Z", "X")


def wait_gone(pids: Iterable[int], timeout: float = 5.0) -> List[int]:
    """Wait (bounded) until none of ``pids`` runs; returns those still running.

    Processes of other parents can only be polled: no event tells us they ended.
    """
    pending = set(pids)
    deadline = time.monotonic() + timeout
    while True:
        pending = {pid for pid in pending if running(pid)}
        if not pending or time.monotonic() >= deadline:
            return sorted(pending)
        time.sleep(0.05)


def demo_servers(parent: Optional[int] = None) -> List[int]:
    """Running ``mcp_sync.demo_server`` processes (children of ``parent``, if given)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if b"mcp_sync.demo_server" not in cmdline or not running(int(entry)):
            continue
        if parent is None or parent_pid(int(entry)) == parent:
            found.append(int(entry))
    return found


def get_json(url: str, timeout: float = 30.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read())


def get_many(urls: List[str], workers: int = 50, timeout: float = 30.0) -> List[Any]:
    """GET every URL at once (``workers`` in flight) and return the JSON answers in order."""
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="http-client") as pool:
        return list(pool.map(lambda url: get_json(url, timeout), urls))


class LineWatcher:
    """Reads a child's output stream line by line on a thread; lets a test wait (bounded)
    for a line to appear instead of sleeping."""

    def __init__(self, stream: IO[str], name: str) -> None:
        self.lines: List[str] = []
        self._changed = threading.Condition()
        self._stream = stream
        self._thread = threading.Thread(target=self._read, name=f"line-watcher-{name}",
                                        daemon=True)
        self._thread.start()

    def _read(self) -> None:
        for line in self._stream:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self.lines.append("")  # EOF marker: wakes waiters for good
            self._changed.notify_all()

    def wait_for(self, match: Callable[[List[str]], Any], timeout: float) -> Any:
        """Block until ``match(lines)`` is truthy; returns it (raises after ``timeout``)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = match(self.lines)
                if found:
                    return found
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError("timed out; output so far:\n" + "\n".join(self.lines))
                self._changed.wait(remaining)

    def join(self, timeout: float = 5.0) -> None:
        self._thread.join(timeout)

    @property
    def text(self) -> str:
        with self._changed:
            return "\n".join(self.lines)


REDIS_SERVER = shutil.which("redis-server")


@contextlib.contextmanager
def redis_server(directory: Path) -> Iterator[Tuple[str, int]]:
    """A private redis-server on 127.0.0.1, persistence off, its files in ``directory``;
    yields its URL and PID, and stops it by PID. The Celery and the cache tests use it,
    and bench/bench_celery.py and bench/bench_cache.py."""
    assert REDIS_SERVER, ("redis-server is missing: install it with `bash .ci/install-peers` "
                          "(Debian's redis-server package)")
    port = free_port()
    process = subprocess.Popen(
        [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(directory), "--daemonize", "no",
         "--logfile", str(directory / "redis.log")],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(port, timeout=30)
        yield f"redis://127.0.0.1:{port}", process.pid
    finally:
        stop_process(process)
