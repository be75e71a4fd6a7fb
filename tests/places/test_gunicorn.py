"""gunicorn, 2 pre-forked workers x 8 threads, serving the example Flask app.

Each worker process gets its own manager and demo server child on its first request,
requests in both workers succeed concurrently, and no server child outlives gunicorn's
shutdown (SIGTERM to the master). With ``--preload`` the master builds a manager of its
own before forking: the workers must not use the one they inherit.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Set

import pytest

from .._procs import (
    EXAMPLES,
    LineWatcher,
    free_port,
    get_many,
    parent_pid,
    running,
    subprocess_env,
    wait_listening,
)
from ..conftest import ROOT

# The master's hook, run after --preload imported the app and before the workers fork.
PRELOAD_CONFIG = '''
def when_ready(server):
    import app  # the example module, imported by --preload
    client = app.mcp.get_client("demo")
    assert client.call_tool("add", {"a": 1, "b": 1}).structured == {"sum": 2}
    with open(MASTER_SERVER_FILE, "w") as f:
        f.write(str(client.transport.pid))
'''


def booted_workers(lines: List[str]) -> List[int]:
    pids = [int(line.rsplit(":", 1)[1]) for line in lines if "Booting worker with pid" in line]
    return pids if len(pids) >= 2 else []


@pytest.mark.parametrize("preload", [False, True], ids=["lazy", "preload"])
def test_two_workers_eight_threads_each_worker_has_its_own_server(
    preload: bool, tmp_path: Path
) -> None:
    port = free_port()
    command = [
        sys.executable, "-m", "gunicorn", "--workers", "2", "--threads", "8",
        "--bind", f"127.0.0.1:{port}", "--pythonpath", str(EXAMPLES / "flask_app"),
        "--graceful-timeout", "10", "--log-level", "info",
    ]
    master_server_file = tmp_path / "master-server.pid"
    if preload:
        config = tmp_path / "gunicorn_conf.py"
        config.write_text(f"MASTER_SERVER_FILE = {str(master_server_file)!r}\n"
                          + PRELOAD_CONFIG)
        command += ["--preload", "--config", str(config)]
    process = subprocess.Popen([*command, "app:app"], cwd=ROOT, env=subprocess_env(),
                               stderr=subprocess.PIPE, text=True)
    log = LineWatcher(process.stderr, "gunicorn")  # type: ignore[arg-type]
    servers: Dict[int, Set[int]] = {}
    try:
        workers = log.wait_for(booted_workers, 60)
        wait_listening(port)
        master_server = int(master_server_file.read_text()) if preload else None

        # Concurrent rounds until both workers have answered (the kernel hands each
        # connection to whichever worker accepts first); bounded.
        for round_number in range(10):
            urls = [f"http://127.0.0.1:{port}/add?a={round_number}&b={i}" for i in range(48)]
            for i, answer in enumerate(get_many(urls, workers=16)):
                assert answer["sum"] == round_number + i
                servers.setdefault(answer["worker"], set()).add(answer["server"])
            if len(servers) == 2:
                break

        assert set(servers) == set(workers), log.text  # both workers served requests
        for worker, worker_servers in servers.items():
            assert len(worker_servers) == 1  # one server per worker, for all its threads
            (server,) = worker_servers
            assert parent_pid(server) == worker  # started by that worker itself
        assert len({s for ss in servers.values() for s in ss}) == 2
        if preload:
            assert master_server is not None and running(master_server)
            assert parent_pid(master_server) == process.pid
            assert all(master_server not in ss for ss in servers.values())

        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0, log.text
        survivors = [s for ss in servers.values() for s in ss]
        if master_server is not None:
            survivors.append(master_server)
        # Each server was stopped and reaped by its own process's exit hook (a server
        # orphaned by a worker that died would only follow later, on reading EOF).
        assert [pid for pid in survivors + workers if os.path.exists(f"/proc/{pid}")] == [], (
            log.text)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        log.join()
        process.stderr.close()  # type: ignore[union-attr]
