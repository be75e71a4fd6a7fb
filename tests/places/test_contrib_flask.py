"""mcp_sync.contrib.flask: one client per process, shared by every request thread.

The app under test is the example in ``examples/flask_app/app.py``, served for real by
werkzeug's threaded server on 127.0.0.1.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import re
import sys
import urllib.error
import urllib.request
from types import ModuleType
from typing import Any, Dict, Iterator, Tuple

import pytest
from flask import Flask

import mcp_sync
from mcp_sync.config import ConfigError
from mcp_sync.contrib import flask as mcp_flask

from .._procs import EXAMPLES, get_many
from ..conftest import child_pids
from ..helpers import serve_wsgi

DEMO = {"command": sys.executable, "args": ["-m", "mcp_sync.demo_server"]}


def load_example() -> ModuleType:
    """A fresh copy of the example app module (its own app, extension and manager)."""
    spec = importlib.util.spec_from_file_location(
        "mcp_sync_example_flask_app", EXAMPLES / "flask_app" / "app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def example() -> Iterator[ModuleType]:
    module = load_example()
    try:
        yield module
    finally:
        module.mcp.close()


@pytest.fixture
def serve(example: ModuleType) -> Iterator[str]:
    """The example app on werkzeug's threaded server; yields its base URL."""
    with serve_wsgi(example.app) as url:
        yield url


def test_threaded_werkzeug_server_shares_one_client(example: ModuleType, serve: str) -> None:
    before = set(child_pids())
    # Importing the app and serving it started nothing: the manager is built on first use.
    assert not example.app.extensions["mcp_sync"].built

    answers = get_many([f"{serve}/add?a={i}&b=0.5" for i in range(50)], workers=50)

    assert [answer["sum"] for answer in answers] == [i + 0.5 for i in range(50)]
    assert {answer["worker"] for answer in answers} == {os.getpid()}
    servers = {answer["server"] for answer in answers}
    assert len(servers) == 1  # one server child for the whole app...
    assert set(child_pids()) - before == servers  # ...and no other child process
    assert "add" in get_many([f"{serve}/tools"])[0]["tools"]
    status = get_many([f"{serve}/status"])[0]
    assert status["servers"]["demo"]["state"] == "connected"


def get_error(url: str) -> Tuple[int, str, Dict[str, Any]]:
    """The status, content type and JSON body of a request answered with an error."""
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(url, timeout=60)
    with caught.value as error:
        return error.code, error.headers.get("Content-Type", ""), json.loads(error.read())


def test_errors_are_answered_in_json(example: ModuleType, serve: str,
                                     caplog: pytest.LogCaptureFixture) -> None:
    """Bad input is a 400 in JSON (not an HTML 500 page), before anything starts; so is
    a path the app does not serve (404)."""
    for query, message in (("a=x&b=1", "a must be a number, not 'x'"),
                           ("a=1&b=nan", "b must be a finite number, not 'nan'")):
        status, kind, body = get_error(f"{serve}/add?{query}")
        assert (status, kind) == (400, "application/json")
        assert body == {"error": "BadRequest", "message": message}
    assert not example.app.extensions["mcp_sync"].built  # no server was needed
    status, kind, body = get_error(f"{serve}/nowhere")
    assert (status, kind, body["error"]) == (404, "application/json", "NotFound")
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_close_stops_the_server_and_the_next_request_starts_another(
    example: ModuleType, serve: str
) -> None:
    first = get_many([f"{serve}/add?a=1&b=2"])[0]
    example.mcp.close()
    assert first["server"] not in child_pids()
    second = get_many([f"{serve}/add?a=1&b=2"])[0]
    assert second["sum"] == 3 and second["server"] != first["server"]


def test_app_factory_with_init_app_and_current_app_helpers() -> None:
    mcp = mcp_flask.MCP(timeout=10)

    def create_app() -> Flask:
        app = Flask("factory")
        app.config["MCP_SERVERS"] = {"mcpServers": {"demo": DEMO}}  # a whole document too
        app.config["MCP_OPTIONS"] = {"timeout": 15}
        mcp.init_app(app)

        @app.get("/echo")
        def echo() -> str:
            return mcp_flask.get_client().call_tool("echo", {"text": "hi"}).text

        return app

    app = create_app()
    try:
        with app.test_client() as http:
            response = http.get("/echo")
            assert response.status_code == 200 and response.text == "hi"
        with app.app_context():
            manager = mcp_flask.get_manager()
            assert manager is mcp.get_manager()  # the current app's, by either road
            assert manager.servers == ["demo"]
            assert mcp.get_client("demo").timeout == 15  # MCP_OPTIONS overrides MCP(...)
        # Outside an app context an extension made without an app cannot guess one...
        with pytest.raises(RuntimeError, match="app context"):
            mcp.get_manager()
        # ...unless it is told.
        assert mcp.get_manager(app) is manager
    finally:
        mcp.close(app)


def test_configuration_errors_are_clear() -> None:
    missing = Flask("missing")
    mcp = mcp_flask.MCP(missing)  # no MCP_SERVERS yet: fine until first use
    with pytest.raises(ValueError, match="MCP_SERVERS is not set"):
        mcp.get_manager()

    invalid = Flask("invalid")
    invalid.config["MCP_SERVERS"] = {"broken": {"args": ["no command"]}}
    with pytest.raises(ConfigError, match="MCP_SERVERS of app 'invalid'"):
        mcp_flask.MCP(invalid)

    other = Flask("other")
    with other.app_context(), pytest.raises(RuntimeError, match="not initialised"):
        mcp_flask.get_client("demo")

    two = Flask("two")
    two.config["MCP_SERVERS"] = {"a": DEMO, "b": {**DEMO, "disabled": True}}
    mcp_two = mcp_flask.MCP(two)
    try:
        with pytest.raises(ValueError, match="name the server"):
            mcp_two.get_client()
        with pytest.raises(mcp_sync.ConnectionClosed, match="disabled"):
            mcp_two.get_client("b")  # a ServerUnavailable
        assert mcp_two.get_client("a").call_tool("add", {"a": 1, "b": 1}).structured == {
            "sum": 2}
    finally:
        mcp_two.close()


def test_the_readmes_copy_paste_lines_ask_the_port_each_server_listens_on() -> None:
    """examples/README.md: the curl lines beside ``flask --app app run`` ask Flask's
    development server's port, those beside ``manage.py runserver`` Django's."""
    from django.core.management.commands.runserver import Command as RunServer
    from flask.cli import run_command

    flask_port = next(p.default for p in run_command.params if p.name == "port")
    listens = {"flask --app app run": str(flask_port),
               "manage.py runserver": str(RunServer.default_port)}
    readme = (EXAMPLES / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", readme, re.S)
    for command, port in listens.items():
        runs = [block for block in blocks if command in block and "--port" not in block]
        assert runs, command
        for block in runs:
            asked = set(re.findall(r"http://127\.0\.0\.1:(\d+)/", block))
            assert asked == {port}, (command, block)
    # And no curl line outside the code blocks, where no command says the port.
    prose = re.sub(r"```.*?```", "", readme, flags=re.S)
    assert not re.search(r"curl[^\n]*http://127\.0\.0\.1:\d+", prose)
