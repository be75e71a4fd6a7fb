"""The client's response cache over stdio, against the project's fake server in the
2026-07-28 era answering with caching hints (``fake_stdio.py --stateless --ttl-ms``),
which writes each ``tools/list`` and ``resources/read`` it receives to a file: the tests
count round trips there.

The server's identity is its command line (a digest of it, its working directory and
environment): two clients of the same command share entries, another command does not.
A Manager that starts the server again after it died makes its entries stale.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any, List

import mcp_sync
from mcp_sync import Manager
from mcp_sync.cache import ResponseCache

from ..conftest import fake_server_command
from ..helpers import wait_for

WAIT = 10.0
HELLO = "test://hello"


def command(counts: Path, *extra: str) -> List[str]:
    return fake_server_command("--stateless", "--ttl-ms", "60000", "--count-file",
                               str(counts), *extra)


def received(counts: Path, method: str) -> int:
    if not counts.exists():
        return 0
    return counts.read_text(encoding="utf-8").split().count(method)


def connect(argv: List[str], **kwargs: Any) -> mcp_sync.Client:
    return mcp_sync.connect(argv, timeout=WAIT, probe_timeout=WAIT, **kwargs)


def test_a_stdio_server_is_cached_under_its_command(tmp_path: Path) -> None:
    counts = tmp_path / "counts"
    cache = ResponseCache()
    with connect(command(counts), cache=cache) as first, \
            connect(command(counts), cache=cache) as second, \
            connect(command(counts, "--name", "other"), cache=cache) as other:
        assert first.protocol_version == "2026-07-28"
        names = [tool.name for tool in first.list_tools()]
        assert [tool.name for tool in second.list_tools()] == names
        assert first.read_resource(HELLO) == second.read_resource(HELLO)
        info = second.cache_info("resources/read", {"uri": HELLO})
        assert info is not None and info.hit and info.scope == "private"
        assert (received(counts, "tools/list"), received(counts, "resources/read")) == (1, 1)
        other.list_tools()  # another command line: another server
        assert received(counts, "tools/list") == 2


def test_a_server_without_hints_is_not_cached(tmp_path: Path) -> None:
    counts = tmp_path / "counts"
    argv = fake_server_command("--stateless", "--count-file", str(counts))
    with connect(argv) as client:
        client.list_tools()
        client.list_tools()
        info = client.cache_info("tools/list")
        assert info is not None and not info.stored and info.ttl == 0
        assert received(counts, "tools/list") == 2


def test_an_answer_that_took_input_rounds_is_never_stored(tmp_path: Path) -> None:
    counts = tmp_path / "counts"
    roots = [{"uri": "file:///work", "name": "work"}]
    with connect(command(counts), roots=roots) as client:
        first = client.read_resource("test://roots")
        assert "file:///work" in first.contents[0].text  # type: ignore[union-attr]
        info = client.cache_info("resources/read", {"uri": "test://roots"})
        assert info is not None and not info.hit and not info.stored
        client.read_resource("test://roots")
        # Two rounds each time: nothing was served from the cache.
        assert received(counts, "resources/read") == 4
        client.read_resource(HELLO)
        client.read_resource(HELLO)
        assert received(counts, "resources/read") == 5


def test_a_manager_restarting_a_dead_server_makes_its_entries_stale(tmp_path: Path) -> None:
    counts = tmp_path / "counts"
    argv = command(counts)
    cache = ResponseCache()
    config = {"mcpServers": {"fake": {"command": argv[0], "args": argv[1:]}}}
    with Manager(config, cache=cache, backoff=(0.05,), timeout=WAIT,
                 probe_timeout=WAIT) as manager, connect(argv, cache=cache) as watcher:
        assert manager.wait_ready(timeout=WAIT)
        client = manager["fake"]
        assert client.response_cache is cache
        watcher.list_tools()  # the manager's listing at its connect, shared
        info = watcher.cache_info("tools/list")
        assert info is not None and info.hit
        watcher.read_resource(HELLO)
        assert (received(counts, "tools/list"), received(counts, "resources/read")) == (1, 1)
        pid = client.transport.pid  # type: ignore[attr-defined]
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: manager.status()["fake"].state.value == "connected"
                 and manager["fake"] is not client, timeout=WAIT,
                 what="the manager to start the server again")
        # The new client listed its tools from the server, not from the stale cache...
        assert received(counts, "tools/list") == 2
        # ...and every other entry of the server is stale too.
        watcher.read_resource(HELLO)
        assert received(counts, "resources/read") == 2
