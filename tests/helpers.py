"""Waiting helpers shared by the test modules: every wait has a deadline.

* ``wait_for``: polls a condition that no event announces (what a server holds, what a
  log handler collected) until it is truthy.
* ``Recorder``: a callback that records its calls; waits on it are woken by each call,
  not by polling.
* ``Notified``: a notification handler a test waits on for one method's notification
  (``notifications/tools/list_changed``, say).
* ``elicit`` and ``sample``: the client handlers the stateless-era scenarios answer with
  (the servers ask "Please confirm" and "Capital of France?").
* ``serve_wsgi``: a WSGI app (a Flask example) on werkzeug's server on 127.0.0.1, for
  real HTTP requests; stopped and joined, within a bound, when the block ends.
* ``assert_get_stream_resumes``: drops the GET stream of a Streamable HTTP test server
  and checks the client resumes it.
* ``interrupt_cli``: runs ``python -m mcp_sync`` and presses Ctrl-C once its stderr
  shows a given line.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Sequence, Tuple

import pytest

from ._procs import default_ctrl_c
from .conftest import PY, ROOT

#: How long a wait may take by default: generous, the VM is small and noisy.
WAIT = 30.0
#: How often ``wait_for`` asks again.
POLL_INTERVAL = 0.05


def wait_for(predicate: Callable[[], Any], timeout: float = WAIT,
             what: str = "condition") -> Any:
    """Poll ``predicate`` until it returns something truthy, and return that; fail the test
    after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(POLL_INTERVAL)  # polling: nothing signals the change


class Recorder:
    """A thread-safe callback that records the arguments of each call and the name of the
    thread it ran on (``calls[i]`` ran on ``threads[i]``)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()  # guards calls and threads
        self.calls: List[Tuple[Any, ...]] = []
        self.threads: List[str] = []

    def __call__(self, *args: Any) -> None:
        with self._changed:
            self.calls.append(args)
            self.threads.append(threading.current_thread().name)
            self._changed.notify_all()

    def snapshot(self) -> List[Tuple[Any, ...]]:
        """The calls so far."""
        with self._changed:
            return list(self.calls)

    def mark(self) -> int:
        """How many calls there have been: a ``since`` for ``next_call``."""
        with self._changed:
            return len(self.calls)

    def methods(self) -> List[str]:
        """As a notification handler: the methods notified so far."""
        return [call[0] for call in self.snapshot()]

    def with_method(self, method: str) -> List[Any]:
        """As a notification handler: the params of each ``method`` notification."""
        return [call[1] for call in self.snapshot() if call[0] == method]

    def wait_for(self, match: Callable[[List[Tuple[Any, ...]]], Any], timeout: float = WAIT,
                 what: str = "a matching call") -> Any:
        """Block until ``match(calls so far)`` is truthy and return it; fail the test after
        ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = match(list(self.calls))
                if found:
                    return found
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    pytest.fail(f"timed out after {timeout} s waiting for {what}; "
                                f"calls so far: {self.calls[-20:]!r}")
                self._changed.wait(remaining)

    def next_call(self, match: Callable[..., Any], since: int = 0, timeout: float = WAIT,
                  what: str = "a matching call") -> Tuple[Any, ...]:
        """The arguments of the first call after the first ``since`` for which
        ``match(*arguments)`` is truthy, waiting (bounded) for it to happen."""
        def first(calls: List[Tuple[Any, ...]]) -> List[Tuple[Any, ...]]:
            return [args for args in calls[since:] if match(*args)][:1]  # [()] is truthy

        found: Tuple[Any, ...]
        (found,) = self.wait_for(first, timeout, what)
        return found


class Notified:
    """A ``notification_handler=`` that lets a test wait for a notification of ``method``:
    ``wait`` returns once one has arrived since the last ``wait`` returned, and fails the
    test after ``timeout`` seconds."""

    def __init__(self, method: str) -> None:
        self.method = method
        self._arrived = threading.Event()

    def __call__(self, method: str, params: Any) -> None:
        if method == self.method:
            self._arrived.set()

    def wait(self, timeout: float = WAIT) -> None:
        """Block until a notification of ``method`` has arrived, then take it."""
        if not self._arrived.wait(timeout):
            pytest.fail(f"timed out after {timeout} s waiting for {self.method}")
        self._arrived.clear()


def elicit(params: Any) -> Dict[str, Any]:
    assert params.message == "Please confirm"
    return {"action": "accept", "content": {"confirmed": True, "name": "ada"}}


def sample(params: Any) -> Dict[str, Any]:
    assert params.messages[0].content.text == "Capital of France?"
    return {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}


@contextlib.contextmanager
def serve_wsgi(app: Any, *, threaded: bool = True, timeout: float = 10.0) -> Iterator[str]:
    """Serve ``app`` on werkzeug's server on a free port of 127.0.0.1; yields its base
    URL. On exit the server is shut down and its thread joined within ``timeout``."""
    from werkzeug.serving import make_server

    server = make_server("127.0.0.1", 0, app, threaded=threaded)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              name="werkzeug-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout)
        assert not thread.is_alive(), "the werkzeug server did not stop"


def assert_get_stream_resumes(server: Any, connect: Callable[..., Any],
                              timeout: float = WAIT) -> Tuple[Any, Any, List[Any]]:
    """With a client from ``connect(notification_handler=...)`` on ``server`` (a
    ``McpHttpServer``), drop its GET stream: the client opens a second GET that resumes
    the first stream from its last event id, and a notification pushed then arrives.
    The first and second GET requests, and the params of the pushed notification."""
    pushed = threading.Event()
    seen: List[Any] = []

    def on_notification(method: str, params: Any) -> None:
        if method == "notifications/resources/list_changed":
            seen.append(params)
            pushed.set()

    with connect(notification_handler=on_notification):
        first = server.wait_for(lambda r: r.method == "GET", timeout)
        server.drop_get_streams()
        second = server.wait_for(lambda r: r.method == "GET", timeout, count=2)
        # The second GET resumes the first one's stream from its last event.
        assert first.header("Last-Event-ID") is None
        last_event_id = second.header("Last-Event-ID") or ""
        assert last_event_id.startswith("g") and last_event_id.endswith("-0")
        server.push("notifications/resources/list_changed")
        assert pushed.wait(timeout)  # the resumed stream delivers
    return first, second, seen


def interrupt_cli(args: Sequence[str], ready: Callable[[str], bool], *, what: str,
                  timeout: float = 60.0) -> Tuple[int, str, str]:
    """Run ``python -m mcp_sync *args``; once a line of its stderr satisfies ``ready``,
    send it SIGINT (Ctrl-C). Its exit code, stdout and stderr.

    Fails the test when no such line comes within ``timeout`` (``what`` says what was
    awaited) or the process does not exit within it; the process is killed then.
    """
    process = subprocess.Popen([PY, "-m", "mcp_sync", *args], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=str(ROOT),
                               preexec_fn=default_ctrl_c)
    shown = threading.Event()
    stderr: List[str] = []

    def read_stderr() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            stderr.append(line)
            if ready(line):
                shown.set()

    reader = threading.Thread(target=read_stderr, name="test-cli-stderr", daemon=True)
    reader.start()
    try:
        assert shown.wait(timeout), f"no {what} on stderr: {stderr}"
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout)
        reader.join(timeout)
        assert process.stdout is not None and process.stderr is not None
        output = process.stdout.read()
        process.stdout.close()
        process.stderr.close()
    return code, output, "".join(stderr)
