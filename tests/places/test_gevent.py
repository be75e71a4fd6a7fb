"""mcp_sync under gevent: a client made after ``gevent.monkey.patch_all()``.

``patch_all()`` must run before anything imports ``threading``, so every scenario runs in a
process of its own, never in pytest's: tests/_gevent_probe.py (one client shared by
greenlets, over stdio and Streamable HTTP, reporting as JSON), gunicorn's ``gevent``
worker serving the example Flask app, and a Celery worker with the ``gevent`` pool (the
broker and worker fixtures of tests/places/test_contrib_celery.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from typing import Any, Dict, List

import pytest
from celery import Celery
from celery.exceptions import TimeoutError as CeleryTimeout

from .._procs import (
    EXAMPLES,
    LineWatcher,
    free_port,
    get_many,
    parent_pid,
    running,
    subprocess_env,
    wait_gone,
    wait_listening,
)
from ..conftest import PY, ROOT
from .test_contrib_celery import (  # noqa: F401  (fixtures)
    DEMO,
    PINNED,
    Cluster,
    broker,
    call,
    caller,
    children,
    is_server,
    redis_url,
)

PROBE = ROOT / "tests" / "_gevent_probe.py"
# The whole probe, each of its waits bounded by 20 s; a hub blocked by the client (the
# failure this file is about) ends here instead of hanging the suite (pytest's own
# timeout is 120 s).
PROBE_BOUND = 90


def run_probe(kind: str) -> Dict[str, Any]:
    try:
        done = subprocess.run([PY, str(PROBE), kind], cwd=ROOT, env=subprocess_env(),
                              capture_output=True, text=True, timeout=PROBE_BOUND)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"the gevent probe ({kind}) did not finish within "
                             f"{PROBE_BOUND} s: {exc.stderr!r}") from None
    assert done.returncode == 0, done.stderr
    report: Dict[str, Any] = json.loads(done.stdout)
    return report


@pytest.mark.parametrize("kind", ["stdio", "http"])
def test_one_client_shared_by_greenlets(kind: str) -> None:
    report = run_probe(kind)
    assert report["patched"] is True  # threading's threads were greenlets

    echo = report["echo"]
    assert (echo["errors"], echo["mismatches"]) == ([], []), echo
    assert report["big_echo"] == 512 * 1024, report["big_echo"]

    # The hub kept running while a call waited 0.5 s: a greenlet ticking every 10 ms ticked.
    held = report["ticks_during_call"]
    assert "failed" not in held, held
    if kind == "stdio":
        assert held["result"] == "'slept 0.5'"
    else:  # `hold` answers only when cancelled: the call ends at its 0.5 s timeout
        assert held["raised"] == "RequestTimeout"
    assert held["ticks"] >= 20, held

    timeout = report["timeout"]
    assert timeout["raised"] == "RequestTimeout", timeout
    assert 0.4 <= timeout["seconds"] < 5, timeout
    assert timeout["ticks"] >= 20, timeout

    cancel = report["cancel"]
    assert cancel.get("progressed") is True, cancel
    assert cancel["cancelled"] is True and cancel["raised"] == "CancelledError", cancel
    assert cancel["seconds"] < 5 and cancel["echo_after"] == "still here", cancel

    closed = report["after_close"]
    assert closed["threads"] == [] and closed["server_alive"] is False, closed
    assert closed["seconds"] < 10, closed
    if kind == "stdio":
        assert closed["stdio_pid"] is not None and not os.path.exists(
            f"/proc/{closed['stdio_pid']}")
    else:
        assert report["http_server_exit"] == 0


PARTLY_PATCHED = """
import json, sys, time
from gevent import monkey
monkey.patch_all(**{sys.argv[1]: False})
import mcp_sync
started = time.monotonic()
try:
    mcp_sync.connect([sys.executable, sys.argv[2]], timeout=20, close_timeout=5)
    outcome = {"raised": None}
except mcp_sync.MCPError as exc:
    outcome = {"raised": type(exc).__name__, "message": str(exc)}
outcome["seconds"] = time.monotonic() - started
print(json.dumps(outcome))
"""


@pytest.mark.parametrize("left_alone", ["subprocess", "select"])
def test_stdio_refuses_to_start_when_gevent_left_its_modules_alone(left_alone: str) -> None:
    """threading patched, subprocess not: the reader's blocking pipe read would hold the
    one OS thread (the handshake never ends); select not: so would the writer's poll. The
    transport refuses to start, at once, instead."""
    done = subprocess.run(
        [PY, "-c", PARTLY_PATCHED, left_alone, str(ROOT / "tests" / "servers" / "fake_stdio.py")],
        cwd=ROOT, env=subprocess_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["raised"] == "TransportError", outcome
    assert f"threading is patched but not {left_alone}" in outcome["message"]
    assert "gevent.monkey.patch_all()" in outcome["message"]
    assert outcome["seconds"] < 5


def servers_of(pid: int) -> List[int]:
    """The running demo servers started by ``pid``."""
    return [child for child in children(pid) if is_server(child)]


def test_gunicorn_gevent_worker_shares_one_server_among_100_requests() -> None:
    port = free_port()
    command = [
        sys.executable, "-m", "gunicorn", "--worker-class", "gevent", "--workers", "1",
        "--worker-connections", "200", "--bind", f"127.0.0.1:{port}",
        "--pythonpath", str(EXAMPLES / "flask_app"), "--graceful-timeout", "10",
        "--log-level", "info", "app:app",
    ]
    process = subprocess.Popen(command, cwd=ROOT, env=subprocess_env(),
                               stderr=subprocess.PIPE, text=True)
    log = LineWatcher(process.stderr, "gunicorn")  # type: ignore[arg-type]
    worker = None
    try:
        (worker,) = log.wait_for(
            lambda lines: [int(line.rsplit(":", 1)[1]) for line in lines
                           if "Booting worker with pid" in line], 60)
        wait_listening(port)
        urls = [f"http://127.0.0.1:{port}/add?a={i}&b=0.5" for i in range(100)]
        answers = get_many(urls, workers=100)
        assert [answer["sum"] for answer in answers] == [i + 0.5 for i in range(100)]
        assert {answer["worker"] for answer in answers} == {worker}
        # One client for every greenlet of the worker: one server child, the worker's own.
        (server,) = {answer["server"] for answer in answers}
        assert servers_of(worker) == [server] and parent_pid(server) == worker

        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0, log.text
        # The worker's exit closed the client: its server was stopped and reaped.
        assert wait_gone([server, worker]) == [] and not os.path.exists(f"/proc/{server}"), (
            log.text)
    finally:
        # A worker whose hub is blocked ignores SIGTERM and outlives a killed master: it
        # and its server are killed by PID too.
        leftovers = [] if worker is None else [worker, *children(worker)]
        if process.poll() is None:
            process.kill()
            process.wait(10)
        for pid in leftovers:
            if running(pid):
                os.kill(pid, signal.SIGKILL)
        assert wait_gone(leftovers, 10) == []
        log.join()
        process.stderr.close()  # type: ignore[union-attr]


def test_celery_gevent_pool_runs_100_calls_on_one_server(broker: str,  # noqa: F811
                                                         caller: Celery) -> None:  # noqa: F811
    # kombu's Redis transport pools 10 connections; 50 greenlets acking late need more
    # (without: "Couldn't ack ... MaxConnectionsError", and the worker takes no more tasks).
    conf = {"broker_transport_options": {"max_connections": 64}}
    with Cluster(broker, {"demo": DEMO}, [("green", "gevent", 50)], options=PINNED,
                 extra_env={"MCP_TEST_CELERY_CONF": json.dumps(conf)}) as cluster:
        worker = cluster.workers[0]
        sent = [call(caller, "add", {"a": i, "b": 0.5}, 30) for i in range(100)]
        for i, result in enumerate(sent):
            try:
                answer = result.get(timeout=60)
            except CeleryTimeout:
                raise AssertionError(f"task {i} got no answer; worker log:\n"
                                     + worker.log.text) from None
            assert answer["isError"] is False
            assert answer["structuredContent"] == {"sum": i + 0.5}
        # The worker process runs every greenlet; they share one server, its own child.
        (server,) = servers_of(worker.pid)
        me = caller.send_task("tests.whoami", kwargs={"a": 1, "b": 1}).get(timeout=30)
        assert me["pid"] == worker.pid and me["server"] == server
        assert cluster.stop() == []
        assert not running(server)
