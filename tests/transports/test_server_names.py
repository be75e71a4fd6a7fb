"""What a server is called in messages, loggers and thread names: after its package or
module before the handshake (never a bare ``index`` or ``main``), after its own
``serverInfo.name`` once known, and as given when the user named it."""

from __future__ import annotations

import re
import subprocess
import threading
from pathlib import Path
from typing import List, Sequence

import pytest

import mcp_sync
from mcp_sync import ConnectionClosed, StdioTransport
from mcp_sync._util.text import name_safe
from mcp_sync.testing import FakeServer
from mcp_sync.transports._process import _server_name
from mcp_sync.transports.base import server_label

from ..conftest import PY, ROOT, fake_server_command
from ..helpers import wait_for
from ..servers.http_server import McpHttpServer

T = 30.0
EVERYTHING_JS = "/srv/app/node_modules/@modelcontextprotocol/server-everything/dist/index.js"


@pytest.mark.parametrize(("command", "args", "expected"), [
    # python -m: the module, not its top-level package ("mcp_sync" read as the client)
    ("python", ["-m", "mcp_sync.demo_server"], "mcp_sync.demo_server"),
    ("/usr/bin/python3.12", ["-u", "-mpkg.server"], "pkg.server"),
    ("uv", ["run", "-m", "weather.app"], "weather.app"),
    # a node package's entry point: the package, not "index"
    ("node", [EVERYTHING_JS, "stdio"], "server-everything"),
    ("node", ["C:\\srv\\weather\\build\\main.js"], "weather"),
    ("node", ["/opt/tools/files/lib/cli.mjs"], "files"),
    ("python", ["/srv/notes/src/notes/__main__.py"], "notes"),
    # package specs: the name without scope or version
    ("npx", ["-y", "@modelcontextprotocol/server-everything@2.0.0"], "server-everything"),
    ("npx", ["-y", "mcp-remote@latest", "https://example.com/mcp"], "mcp-remote"),
    ("uvx", ["mcp-server-fetch"], "mcp-server-fetch"),
    ("docker", ["run", "-i", "--rm", "mcp/fetch"], "fetch"),
    # scripts and programs keep their own names
    ("python", ["tests/servers/fake_stdio.py"], "fake_stdio"),
    ("uv", ["run", "server.py"], "server"),
    ("/usr/local/bin/mcp-server-git", ["--repository", "."], "mcp-server-git"),
    ("python", ["-c", "import x"], "python"),
])
def test_the_default_name_is_the_package_or_module(command: str, args: Sequence[str],
                                                    expected: str) -> None:
    assert _server_name(command, args) == expected


def test_a_relative_entry_point_is_named_after_the_folder_it_runs_in(tmp_path: Path) -> None:
    project = tmp_path / "weather-server"
    assert _server_name("node", ["dist/index.js"], str(project)) == "weather-server"
    assert _server_name("node", ["index.js"], str(project)) == "weather-server"
    assert _server_name("python", ["../main.py"], str(project / "sub")) == "weather-server"
    transport = StdioTransport("node", ["dist/index.js"], cwd=project)
    assert transport.name == "weather-server" and transport.named_by_default
    assert not StdioTransport("node", ["dist/index.js"], name="mine").named_by_default


def test_server_labels_are_safe_in_thread_and_logger_names() -> None:
    assert server_label("mcp-servers/everything") == "mcp-servers_everything"
    assert server_label("\x1b[31mred\x1b[0m server") == "31mred_0m_server"
    assert server_label("..hidden..") == "hidden"
    assert server_label("\u202e\u200b") == ""
    assert len(server_label("x" * 100)) == 40


def test_the_characters_a_name_may_hold_are_defined_once() -> None:
    """Server labels, HTTP and SSE default names and saved files' names share one rule."""
    defining = [path.relative_to(ROOT).as_posix()
                for path in sorted((ROOT / "mcp_sync").rglob("*.py"))
                if re.search(r"\[\^A-Za-z0-9\._-\]", path.read_text())]
    assert defining == ["mcp_sync/_util/text.py"]
    assert name_safe("127.0.0.1:8000") == "127.0.0.1_8000"
    assert name_safe("a b/\\c\x1b[0m\u202ed") == "a_b_c_0m_d"


def mcp_threads() -> List[str]:
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("mcp-sync-"))


def test_a_server_is_named_after_its_server_info_once_known() -> None:
    command = [PY, "-m", "mcp_sync.demo_server"]
    transport = StdioTransport(command[0], command[1:])
    assert transport.name == "mcp_sync.demo_server"  # before the handshake
    with mcp_sync.Client(transport, timeout=T) as client:
        assert client.server_info.name == "mcp-sync-demo"
        assert client.name == transport.name == "mcp-sync-demo"
        threads = mcp_threads()
        assert "mcp-sync-reader-mcp-sync-demo" in threads
        assert "mcp-sync-stderr-mcp-sync-demo" in threads
        assert "mcp-sync-dispatch-mcp-sync-demo" in threads
        assert all(name.startswith(("mcp-sync-handler-mcp-sync-demo-",
                                    "mcp-sync-writer-mcp-sync-demo")) or
                   name.endswith("-mcp-sync-demo") for name in threads), threads
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        # the callback thread starts with the first notification, under the new name
        seen: list = []  # type: ignore[type-arg]
        client.call_tool("count", {"n": 2, "interval": 0.01},
                         on_progress=lambda *update: seen.append(update))
        wait_for(lambda: len(seen) == 2, what="two progress callbacks")
        assert "mcp-sync-callback-mcp-sync-demo" in mcp_threads()


def test_the_exit_of_a_server_named_after_its_server_info() -> None:
    with mcp_sync.connect(fake_server_command(), timeout=T) as client:
        assert client.name == "fake"  # not fake_stdio, the script's name
        with pytest.raises(ConnectionClosed, match=r"^MCP server fake exited"):
            client.call_tool("crash", {"code": 3})


def test_a_name_given_is_kept() -> None:
    command = [PY, "-m", "mcp_sync.demo_server"]
    with mcp_sync.connect(command, name="mine", timeout=T) as client:
        assert client.name == client.transport.name == "mine"
        assert "mcp-sync-reader-mine" in mcp_threads()
    transport = StdioTransport(command[0], command[1:], name="tools")
    with mcp_sync.Client(transport, timeout=T) as client:
        assert client.name == transport.name == "tools"
    transport = StdioTransport(command[0], command[1:])
    with mcp_sync.Client(transport, name="label", timeout=T) as client:
        assert client.name == "label"
        assert transport.name == "mcp_sync.demo_server"  # the transport's, as derived


def test_an_http_server_is_named_after_its_server_info() -> None:
    with McpHttpServer(FakeServer("weather/v2")) as server, \
            mcp_sync.connect(server.url, timeout=T) as client:
        assert client.name == client.transport.name == "weather_v2"
        client.ping()
        assert all(name.endswith("-weather_v2") or "-weather_v2-" in name
                   for name in mcp_threads()), mcp_threads()


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "mcp_sync", *args], capture_output=True, text=True,
                          timeout=60, cwd=str(ROOT), check=False)


def test_the_cli_names_a_server_after_its_module_then_its_server_info() -> None:
    # Before the handshake: the module run with -m, not "mcp_sync" (which reads as if
    # the client broke).
    gone = cli("ping", "--", PY, "-m", "mcp_sync.no_such_server")
    assert gone.returncode == 3, gone.stderr
    assert "MCP server mcp_sync.no_such_server exited" in gone.stderr
    # After it: the name the server gave.
    crashed = cli("call", "crash", "--", *fake_server_command())
    assert crashed.returncode == 3, crashed.stderr
    assert "mcp-sync: MCP server fake exited (exit code 3)" in crashed.stderr
    logged = cli("-vv", "ping", "--", PY, "-m", "mcp_sync.demo_server")
    assert logged.returncode == 0, logged.stderr
    assert re.search(r"sent initialize id=\d+ to mcp_sync\.demo_server\n", logged.stderr)
    assert "mcp_sync.demo_server calls itself mcp-sync-demo" in logged.stderr
    assert re.search(r"sent ping id=\d+ to mcp-sync-demo\n", logged.stderr)
