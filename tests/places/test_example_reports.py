"""The example Flask app's reports: start a task in one request, collect it in later ones.

``examples/flask_app/app.py`` is served for real by werkzeug's threaded server on
127.0.0.1 and asked over HTTP. ``POST /reports`` starts the demo server's
``slow_report`` as a task through the app's per-process Manager; ``GET
/reports/<server>/<task_id>`` collects it. How long the tool takes is the app's
``REPORT_SECONDS``: long where a test needs the task still working, zero where it needs
it done (then the test asks the collecting view again until it answers, within WAIT).
"""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request
from types import ModuleType
from typing import Any, Dict, Iterator, Optional, Tuple

import pytest

from ..helpers import serve_wsgi
from .test_contrib_flask import load_example

WAIT = 30.0  # seconds a test waits for a task to end, at most


@pytest.fixture
def example() -> Iterator[ModuleType]:
    module = load_example()
    try:
        yield module
    finally:
        module.mcp.close()


@pytest.fixture
def serve(example: ModuleType) -> Iterator[str]:
    with serve_wsgi(example.app) as url:
        yield url


Answer = Tuple[int, Dict[str, Any], Dict[str, str]]


def http(url: str, body: Optional[Any] = None) -> Answer:
    """GET ``url`` (POST ``body`` as JSON when given): the status, JSON body and headers."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read()), dict(response.headers)
    except urllib.error.HTTPError as error:
        with error:
            return error.code, json.loads(error.read()), dict(error.headers)


def start(serve: str, topic: Any = "tides") -> str:
    """POST /reports; the URL that collects the report."""
    status, body, headers = http(f"{serve}/reports", {"topic": topic})
    assert status == 202, body
    assert body["server"] == "demo" and body["task"]
    assert headers["Location"] == f"/reports/demo/{body['task']}"
    return f"{serve}{headers['Location']}"


def collect(url: str) -> Answer:
    """GET ``url`` until the task is no longer working (at most WAIT seconds)."""
    deadline = time.monotonic() + WAIT
    while True:
        answer = http(url)
        if answer[0] != 202:
            return answer
        assert time.monotonic() < deadline, f"still working after {WAIT} s: {answer[1]}"


def test_post_starts_a_task_that_works_until_a_later_get_collects_it(
        example: ModuleType, serve: str) -> None:
    example.app.config["REPORT_SECONDS"] = 600  # still working whenever it is asked
    working = start(serve, "tides")

    status, body, _ = http(working)
    assert status == 202
    assert body["status"] == "working"
    assert body["message"] in (None, "gathering sources (1 of 3)")
    listed = http(f"{serve}/reports")[1]["reports"]
    assert [(r["server"], r["status"]) for r in listed] == [("demo", "working")]

    example.app.config["REPORT_SECONDS"] = 0
    done = start(serve, "  the moon ")
    assert done != working

    status, body, _ = collect(done)
    assert (status, body) == (200, {"status": "completed",
                                    "text": "Report on the moon: 3 steps done in 0 s."})
    # Collected once, it can be collected again while the server keeps it; the first
    # one is still working.
    assert http(done)[0] == 200
    assert http(working)[0] == 202
    listed = http(f"{serve}/reports")[1]["reports"]
    assert sorted(r["status"] for r in listed) == ["completed", "working"]


def test_unknown_tasks_and_servers_are_404(serve: str) -> None:
    for path in ("/reports/demo/task-99", "/reports/nowhere/task-1"):
        status, body, _ = http(f"{serve}{path}")
        assert status == 404 and body["error"] == "NotFound", body


def test_a_task_that_fails_is_502_with_the_reason(example: ModuleType, serve: str) -> None:
    # The server refuses the arguments: the task fails with a JSON-RPC error.
    example.app.config["REPORT_SECONDS"] = -1
    status, body, _ = collect(start(serve, "tides"))
    assert status == 502
    assert body["status"] == "failed" and body["error"] == "TaskFailed"
    assert "seconds must be a number from 0 to 600, not -1" in body["message"]

    # The tool runs and reports an error: a result with isError.
    example.app.config["REPORT_SECONDS"] = 0
    status, body, _ = collect(start(serve, "   "))
    assert (status, body) == (502, {"status": "failed", "error": "ToolError",
                                    "message": "a report needs a topic"})


def test_a_cancelled_task_is_410(example: ModuleType, serve: str) -> None:
    example.app.config["REPORT_SECONDS"] = 600
    url = start(serve)
    task_id = url.rsplit("/", 1)[-1]
    example.mcp.get_manager().cancel_task("demo", task_id)  # as an admin view would

    status, body, _ = http(url)
    assert status == 410 and body["status"] == "cancelled", body


def test_post_wants_a_topic(serve: str) -> None:
    for body in ({}, {"topic": 3}, ["tides"]):
        status, answer, _ = http(f"{serve}/reports", body)
        assert status == 400 and answer["error"] == "BadRequest"


def test_a_server_that_is_down_is_503(example: ModuleType, serve: str) -> None:
    # A second server that never starts (it exits at once): its tasks cannot be asked.
    example.app.config["MCP_SERVERS"] = dict(example.app.config["MCP_SERVERS"], down={
        "command": sys.executable, "args": ["-c", "raise SystemExit(3)"]})

    status, body, headers = http(f"{serve}/reports/down/task-1")

    assert status == 503 and body["error"] == "ServerUnavailable", body
    assert headers["Retry-After"] == "2"
