"""The command line's tasks (MCP 2025-11-25), run as subprocesses: ``call --task`` against
``tests/servers/task_server.py`` over stdio, and ``task ID`` / ``tasks`` re-attaching,
in later runs, to a task an earlier run started on the same server behind
``McpHttpServer`` (in this process, so that it outlives every run).

The server's tasks move one step per ``tasks/get``, so what each run sees is decided by
the polls of the runs before it.
"""

from __future__ import annotations

import json
import subprocess
import threading
from typing import Any, Iterator, Tuple

import pytest

from ..conftest import PY, ROOT, SERVERS
from ..helpers import interrupt_cli
from ..servers.http_server import McpHttpServer
from ..servers.task_server import TaskServer

T = 60.0  # bound for one CLI run (a Python start, a server start, a few requests)
STDIO = ["--", PY, str(SERVERS / "task_server.py")]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m mcp_sync ARGS`` from the project root; never raises on exit codes."""
    return subprocess.run([PY, "-m", "mcp_sync", *args], capture_output=True, text=True,
                          timeout=T, cwd=str(ROOT), check=False)


@pytest.fixture
def served() -> Iterator[Tuple[McpHttpServer, TaskServer]]:
    tasks = TaskServer()
    server = McpHttpServer(tasks).start()
    try:
        yield server, tasks
    finally:
        server.stop()


@pytest.fixture
def http(served: Tuple[McpHttpServer, TaskServer]) -> McpHttpServer:
    return served[0]


def interrupted(*args: str) -> Tuple[int, str]:
    """Run the CLI, send it Ctrl-C once it has shown a task's state on stderr; its exit
    code and stderr."""
    code, _, stderr = interrupt_cli(args, lambda line: line.startswith("task-"),
                                    what="task state", timeout=T)
    return code, stderr


def status(tasks: TaskServer, task_id: str) -> str:
    with tasks.lock:
        return tasks.tasks[task_id].status


# -- call --task, over stdio ----------------------------------------------------------------


def test_call_task_shows_each_status_then_the_result() -> None:
    run = cli("call", "--task", "countdown", "--arg", "polls=3", "--arg", "text=ready",
              "--ttl", "30", *STDIO)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "ready\n"  # the result, as `call` prints it
    assert run.stderr.splitlines() == [
        "task-1 working: started", "task-1 working: poll 1 of 3",
        "task-1 working: poll 2 of 3", "task-1 completed: done"]

    quiet = cli("call", "--task", "--progress", "never", "countdown", "--arg", "polls=2",
                "--arg", "text=q", *STDIO)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "q\n", "")


def test_call_task_json_gives_the_task_and_its_result() -> None:
    run = cli("--json", "call", "--task", "countdown", "--arg", "polls=2", "--arg", "text=j",
              "--ttl", "2.5", *STDIO)
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert data["task"]["taskId"] == "task-1"
    assert data["task"]["status"] == "completed"
    assert data["task"]["ttl"] == 2500
    assert data["result"]["structuredContent"] == {"text": "j", "polls": 2}


def test_call_task_detach_prints_the_id_and_ends_at_once() -> None:
    # `forever` never ends: a run that waited for it would end with the timeout (4).
    run = cli("--timeout", "20", "call", "--task", "--detach", "forever", *STDIO)
    assert (run.returncode, run.stdout, run.stderr) == (0, "task-1\n", "")
    data = json.loads(cli("--json", "call", "--task", "--detach", "forever", *STDIO).stdout)
    assert data == {"task": {**data["task"], "taskId": "task-1", "status": "working"}}


def test_a_failed_or_cancelled_task_exits_1() -> None:
    failed = cli("call", "--task", "fails", "--arg", "message=broke down", *STDIO)
    assert failed.returncode == 1
    assert failed.stdout == ""
    assert "task-1 failed: it broke" in failed.stderr
    assert "task 'task-1' on task-server failed: broke down" in failed.stderr
    data = json.loads(cli("--json", "call", "--task", "dropped", *STDIO).stdout)
    assert data["error"]["type"] == "TaskCancelled"
    assert data["error"]["exitCode"] == 1


def test_task_options_are_checked_before_anything_starts() -> None:
    for args, message in ((("--detach",), "--detach needs --task"),
                          (("--ttl", "5"), "--ttl needs --task"),
                          (("--task", "--ttl", "0"), "--ttl takes a positive number")):
        run = cli("call", *args, "countdown", *STDIO)
        assert run.returncode == 2, run.stderr
        assert message in run.stderr


def test_a_tool_that_cannot_run_as_a_task_is_refused() -> None:
    run = cli("call", "--task", "never_task", "--arg", "text=x", *STDIO)
    assert run.returncode == 3  # CapabilityError: nothing was sent
    assert "cannot run as a task" in run.stderr


# -- task ID and tasks, re-attaching over HTTP ------------------------------------------------


def test_task_and_tasks_reattach_to_a_task_an_earlier_run_started(
        http: McpHttpServer) -> None:
    url = ["--url", http.url]
    started = cli(*url, "call", "--task", "--detach", "countdown", "--arg", "polls=3",
                  "--arg", "text=collected", "--ttl", "600")
    assert started.returncode == 0, started.stderr
    task_id = started.stdout.strip()
    assert task_id == "task-1"

    shown = cli(*url, "task", task_id)  # a new run, a new MCP session: one tasks/get
    assert shown.returncode == 0, shown.stderr
    assert "Status:     working" in shown.stdout
    assert "Message:    poll 1 of 3" in shown.stdout
    assert "Kept for:   600 s" in shown.stdout
    state = json.loads(cli(*url, "--json", "task", task_id).stdout)
    assert (state["taskId"], state["status"], state["statusMessage"]) == (
        "task-1", "working", "poll 2 of 3")

    listed = cli(*url, "tasks")
    assert listed.returncode == 0
    assert listed.stdout.splitlines()[0].split() == ["ID", "STATUS", "UPDATED", "MESSAGE"]
    assert listed.stdout.splitlines()[1].split()[:2] == ["task-1", "working"]

    waited = cli(*url, "task", task_id, "--wait")
    assert waited.returncode == 0, waited.stderr
    assert waited.stdout == "collected\n"
    assert "task-1 completed: done" in waited.stderr
    again = json.loads(cli(*url, "--json", "task", task_id, "--wait").stdout)
    assert again["task"]["status"] == "completed"
    assert again["result"]["content"][0]["text"] == "collected"
    assert [t["status"] for t in json.loads(cli(*url, "--json", "tasks").stdout)] == [
        "completed"]


def test_task_exit_codes(http: McpHttpServer) -> None:
    url = ["--url", http.url]
    unknown = cli(*url, "task", "task-9")
    assert unknown.returncode == 1
    assert "does not know task 'task-9'" in unknown.stderr

    assert cli(*url, "call", "--task", "--detach", "fails", "--arg",
               "message=no luck").stdout == "task-1\n"
    failed = cli(*url, "task", "task-1")
    assert failed.returncode == 1  # shown, but failed
    assert "Status:     failed" in failed.stdout
    assert cli(*url, "task", "task-1", "--wait").returncode == 1

    assert cli(*url, "call", "--task", "--detach", "forever").stdout == "task-2\n"
    waiting = cli(*url, "--timeout", "0.5", "task", "task-2", "--wait")
    assert waiting.returncode == 4  # the wait timed out ...
    assert cli(*url, "--json", "task", "task-2").returncode == 0  # ... the task goes on
    assert cli(*url, "--json", "tasks").returncode == 0
    assert cli("--url", http.url, "tasks").stdout.count("working") == 1


def test_ctrl_c_cancels_a_call_task_but_not_a_task_wait(
        served: Tuple[McpHttpServer, TaskServer]) -> None:
    http, tasks = served
    code, stderr = interrupted("--url", http.url, "call", "--task", "ticking")
    assert code == 130
    assert "interrupted; the call was cancelled" in stderr
    assert status(tasks, "task-1") == "cancelled"  # tasks/cancel reached the server

    assert cli("--url", http.url, "call", "--task", "--detach", "forever").stdout == "task-2\n"
    code, stderr = interrupted("--url", http.url, "task", "task-2", "--wait")
    assert code == 130
    assert "interrupted; the task goes on on the server" in stderr
    assert status(tasks, "task-2") == "working"


# -- what --timeout bounds for a task (issue 30) ----------------------------------------------


def test_a_task_wait_that_runs_out_says_what_the_timeout_bounds(
        served: Tuple[McpHttpServer, TaskServer]) -> None:
    http, tasks = served
    url = ["--url", http.url]
    run = cli(*url, "--timeout", "1", "call", "--task", "forever")
    assert run.returncode == 4, run.stderr
    assert ("mcp-sync: task task-1 did not end within --timeout 1 s: for a task, --timeout "
            "bounds the whole wait for its result (every poll of it), not one request. The "
            "task goes on on the server: `mcp-sync task task-1 --wait` waits again (give a "
            "longer --timeout, or 0: none)") in run.stderr
    assert status(tasks, "task-1") == "working"  # as said
    waited = cli(*url, "--json", "--timeout", "0.5", "task", "task-1", "--wait")
    assert waited.returncode == 4
    error = json.loads(waited.stdout)["error"]
    assert (error["type"], error["exitCode"]) == ("RequestTimeout", 4)
    assert error["message"].startswith("task task-1 did not end within --timeout 0.5 s: ")
    # Over stdio the server, and its task, end with the run: no `task --wait` to suggest.
    stdio = cli("--timeout", "1", "call", "--task", "forever", *STDIO)
    assert stdio.returncode == 4
    assert "The stdio server stops with this run, and the task with it: give a longer " \
        "--timeout (0: none)" in stdio.stderr
    assert "task task-1 --wait" not in stdio.stderr


def test_the_wait_and_the_result_share_one_timeout(
        served: Tuple[McpHttpServer, TaskServer]) -> None:
    """--timeout bounds the wait for the task's end and the reading of its result
    together: a result that comes later than that, though sooner than a second
    --timeout would allow, is not waited for.

    Each tasks/get takes the server a second: the wait (two polls) takes at least 2 s of
    the 6, and reading the result (tasks/result) 4.5 s more: within a --timeout of its
    own, past what is left of the one."""
    http, _ = served
    released = threading.Event()

    def slow_server(handler: Any, message: Any) -> bool:
        method = message.get("method") if isinstance(message, dict) else None
        if method == "tasks/get":
            released.wait(1.0)
        elif method == "tasks/result":
            released.wait(4.5)
        return False  # then answered as usual

    http.post_hook = slow_server
    try:
        run = cli("--url", http.url, "--timeout", "6", "call", "--task", "countdown",
                  "--arg", "polls=1", "--arg", "text=late")
    finally:
        released.set()
    assert run.returncode == 4, (run.stdout, run.stderr)
    assert "task-1 completed: done" in run.stderr  # the wait ended in time ...
    assert http.matching(lambda r: r.rpc_method == "tasks/result")  # ... the result did not
    assert "did not end within --timeout 6 s" in run.stderr
