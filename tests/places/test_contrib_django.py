"""mcp_sync.contrib.django: one client per process, shared by every request thread.

The project under test is the example in ``examples/django_project`` (settings-driven:
``MCP_SERVERS`` in ``mcpsite/settings.py``): through Django's test client, a
``LiveServerTestCase`` (Django's threaded WSGI server), and ``manage.py runserver``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, Iterator, List

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.test import Client as DjangoClient
from django.test import LiveServerTestCase, override_settings

import mcp_sync
from mcp_sync.contrib import django as mcp_django

from .._procs import (
    LineWatcher,
    default_ctrl_c,
    demo_servers,
    free_port,
    get_many,
    subprocess_env,
    wait_listening,
)
from ..conftest import ROOT, child_pids
from ._django import PROJECT, setup_django

DEMO = {"command": sys.executable, "args": ["-m", "mcp_sync.demo_server"]}

setup_django()


@pytest.fixture(autouse=True)
def closed_after_each_test() -> Iterator[None]:
    try:
        yield
    finally:
        mcp_django.close()


def _concurrently(calls: List[Any], workers: int = 50) -> List[Any]:
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="django-test") as pool:
        return list(pool.map(lambda call: call(), calls))


def test_settings_come_from_the_example_project() -> None:
    assert settings.MCP_SERVERS == {"demo": DEMO}
    assert "mcp_sync.contrib.django" in settings.INSTALLED_APPS
    from django.apps import apps

    assert type(apps.get_app_config("mcp_sync")).__name__ == "MCPConfig"


def test_test_client_50_concurrent_requests_share_one_server() -> None:
    before = set(child_pids())

    def ask(i: int) -> Dict[str, Any]:
        response = DjangoClient().get("/add", {"a": i, "b": 1})
        assert response.status_code == 200, response.content
        answer: Dict[str, Any] = response.json()
        return answer

    answers = _concurrently([lambda i=i: ask(i) for i in range(50)])

    assert [answer["sum"] for answer in answers] == [i + 1 for i in range(50)]
    servers = {answer["server"] for answer in answers}
    assert len(servers) == 1
    assert set(child_pids()) - before == servers
    assert "add" in DjangoClient().get("/tools").json()["tools"]


def test_errors_are_answered_in_json() -> None:
    """Bad input is a 400 and a server that cannot start a 502, both in JSON: never
    Django's HTML error page."""
    for query in ({"a": "x"}, {"a": "1", "b": "inf"}):
        response = DjangoClient().get("/add", query)
        assert response.status_code == 400, response.content
        assert response["Content-Type"] == "application/json"
        assert response.json()["error"] == "BadRequest"
    assert "a must be a number, not 'x'" in DjangoClient().get("/add", {"a": "x"}).json()[
        "message"]
    broken = {"demo": {"command": sys.executable, "args": ["-c", "raise SystemExit(3)"]}}
    with override_settings(MCP_SERVERS=broken, MCP_OPTIONS={"timeout": 10}):
        for path in ("/add", "/tools"):
            response = DjangoClient().get(path)
            assert response.status_code == 502, response.content
            assert response["Content-Type"] == "application/json"
            assert response.json()["error"] in ("ServerUnavailable", "ConnectionClosed")


def test_settings_drive_the_configuration() -> None:
    with override_settings(MCP_SERVERS={"other": DEMO}, MCP_OPTIONS={"timeout": 7}):
        manager = mcp_django.get_manager()
        assert manager.servers == ["other"]
        client = mcp_django.get_client()  # the only server
        assert client.name == "other" and client.timeout == 7
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
    # Leaving the override closed that manager; the next use builds from the settings.
    assert manager.status()["other"].state == "closed"
    assert mcp_django.get_manager().servers == ["demo"]
    with override_settings(MCP_SERVERS={"a": DEMO, "b": {**DEMO, "disabled": True}}):
        with pytest.raises(ValueError, match="name the server"):
            mcp_django.get_client()
        with pytest.raises(KeyError):
            mcp_django.get_client("nosuch")


def test_missing_or_invalid_settings_are_improperly_configured() -> None:
    with override_settings(MCP_SERVERS=None), pytest.raises(
        ImproperlyConfigured, match="MCP_SERVERS is not set"
    ):
        mcp_django.get_manager()
    with override_settings(MCP_OPTIONS=["timeout"]), pytest.raises(
        ImproperlyConfigured, match="MCP_OPTIONS"
    ):
        mcp_django.get_manager()
    with override_settings(MCP_SERVERS={"broken": {"args": []}}), pytest.raises(
        mcp_sync.MCPError, match="broken"
    ):
        mcp_django.get_manager()
    # The app config checks the setting at start-up.
    from django.apps import apps

    with override_settings(MCP_SERVERS={"broken": {"args": []}}), pytest.raises(
        ImproperlyConfigured, match="MCP_SERVERS"
    ):
        apps.get_app_config("mcp_sync").ready()


class LiveServerTests(LiveServerTestCase):
    """Django's live server: a real threaded WSGI server on 127.0.0.1."""

    databases: set = set()  # type: ignore[type-arg]

    def test_50_concurrent_requests_share_one_server(self) -> None:
        self.addCleanup(mcp_django.close)
        before = set(child_pids())

        answers = get_many([f"{self.live_server_url}/add?a={i}&b=2" for i in range(50)])

        self.assertEqual([answer["sum"] for answer in answers], [i + 2 for i in range(50)])
        servers = {answer["server"] for answer in answers}
        self.assertEqual(len(servers), 1)
        self.assertEqual(set(child_pids()) - before, servers)
        self.assertEqual({answer["worker"] for answer in answers}, {os.getpid()})


def test_runserver_serves_concurrent_requests_and_stops_its_server_on_ctrl_c() -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(PROJECT / "manage.py"), "runserver", "--noreload",
         f"127.0.0.1:{port}"],
        cwd=ROOT, env=subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, preexec_fn=default_ctrl_c,
    )
    output = LineWatcher(process.stdout, "runserver")  # type: ignore[arg-type]
    try:
        output.wait_for(lambda lines: any("Quit the server" in line for line in lines), 60)
        wait_listening(port)
        answers = get_many([f"http://127.0.0.1:{port}/add?a={i}&b=3" for i in range(50)])
        assert [answer["sum"] for answer in answers] == [i + 3 for i in range(50)]
        servers = {answer["server"] for answer in answers}
        assert len(servers) == 1
        assert demo_servers(parent=process.pid) == list(servers)

        process.send_signal(signal.SIGINT)  # Ctrl-C: runserver exits, atexit closes
        assert process.wait(30) == 0
        # The server was stopped (and reaped) by runserver's exit, not orphaned.
        assert all(not os.path.exists(f"/proc/{pid}") for pid in servers), output.text
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        output.join()
        process.stdout.close()  # type: ignore[union-attr]


def test_the_core_imports_neither_django_nor_flask() -> None:
    code = ("import sys, mcp_sync, mcp_sync.contrib; "
            "print(sorted(m for m in ('django', 'flask', 'pydantic') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, env=subprocess_env(), cwd=ROOT)
    assert result.stdout.strip() == "[]", result.stderr
