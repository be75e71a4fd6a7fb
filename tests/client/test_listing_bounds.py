"""Listings are bounded in total: a server that pages forever, or pages megabytes of items,
meets ``max_list_items`` / ``max_list_bytes`` (and ``max_pages``) with a clear
:class:`~mcp_sync.ListingTooLarge`, in bounded memory, and the client stays usable.

The hostile server is the project's fake stdio server with ``--endless``: every page of
the chosen listings carries a new ``nextCursor``.
"""

from __future__ import annotations

import json
import logging
import re
import time
from typing import Any, Dict, List

import pytest

import mcp_sync
from mcp_sync import ListingTooLarge, ProtocolError
from mcp_sync.client import DEFAULT_MAX_LIST_BYTES, DEFAULT_MAX_LIST_ITEMS
from mcp_sync.manager import Manager, ServerState

from ..conftest import fake_server_command

T = 30.0  # bound for anything that should be quick; generous for a small, noisy VM
MIB = 1024 * 1024

LISTINGS = {  # list method -> the Client method that collects it
    "tools/list": "list_tools",
    "resources/list": "list_resources",
    "resources/templates/list": "list_resource_templates",
    "prompts/list": "list_prompts",
}


def connect(*args: str, **kwargs: Any) -> mcp_sync.Client:
    kwargs.setdefault("timeout", T)
    # The helper tools (received, echo) are called without a tools listing first: with
    # output validation on, a call to an unlisted tool would list the endless tools first.
    kwargs.setdefault("validate_output", False)
    return mcp_sync.connect(fake_server_command(*args), **kwargs)


def requests_received(client: mcp_sync.Client, method: str) -> int:
    return len(json.loads(client.call_tool("received", {"method": method}).text))


def memory_kib() -> Dict[str, int]:
    """This process's resident set (VmRSS) and its peak (VmHWM), in KiB."""
    with open("/proc/self/status", encoding="ascii") as status:
        return {key: int(value) for key, value
                in re.findall(r"^(VmRSS|VmHWM):\s+(\d+)", status.read(), re.MULTILINE)}


def reset_peak_memory() -> None:
    """Make VmHWM start again from the current RSS (Linux >= 4.0), so that the peak
    measured next is this test's own, not the highest of every earlier test."""
    with open("/proc/self/clear_refs", "w", encoding="ascii") as clear_refs:
        clear_refs.write("5")


def assert_usable(client: mcp_sync.Client, endless: str = "tools/list") -> None:
    """The client still calls tools and collects a listing that ends."""
    assert client.connected
    assert client.call_tool("echo", {"text": "still here"}).text == "still here"
    if endless == "prompts/list":
        assert {resource.uri for resource in client.list_resources()} == {
            "test://hello", "test://blob"}
    else:
        assert [prompt.name for prompt in client.list_prompts()] == ["greet"]


@pytest.mark.parametrize("method", list(LISTINGS))
def test_endless_pages_stop_at_the_default_item_bound(method: str) -> None:
    """100 small items a page, forever: every listing stops just past 10,000 items (101
    pages), not at max_pages (1000 pages, 100,000 items), and names the bound."""
    with connect("--endless", method) as client:
        with pytest.raises(ListingTooLarge) as info:
            getattr(client, LISTINGS[method])()
        error = info.value
        assert isinstance(error, ProtocolError)
        assert (error.method, error.bound, error.limit) == (
            method, "max_list_items", DEFAULT_MAX_LIST_ITEMS)
        message = str(error)
        assert f"max_list_items={DEFAULT_MAX_LIST_ITEMS}" in message
        assert "Client(max_list_items=...)" in message and "connect(" in message
        assert requests_received(client, method) == DEFAULT_MAX_LIST_ITEMS // 100 + 1
        assert_usable(client, method)


def test_endless_pages_of_large_tools_stop_at_the_default_byte_bound() -> None:
    """1 MiB pages (16 tools of 64 KiB) forever: the listing stops at 64 MiB, about 64
    pages, with the peak RSS of this process a bounded amount above where it started
    (unbounded, the 1000 pages max_pages allows took 1 GiB of traffic and ~3 GB of RSS)."""
    with connect("--endless", "tools/list", "--endless-items", "16",
                 "--endless-item-size", str(64 * 1024)) as client:
        client.call_tool("echo", {"text": "warm up"})
        reset_peak_memory()
        before = memory_kib()
        started = time.monotonic()
        with pytest.raises(ListingTooLarge) as info:
            client.list_tools()
        elapsed = time.monotonic() - started
        growth_mib = (memory_kib()["VmHWM"] - before["VmRSS"]) // 1024
        assert info.value.bound == "max_list_bytes"
        assert info.value.limit == DEFAULT_MAX_LIST_BYTES == 64 * MIB
        assert f"max_list_bytes={64 * MIB}" in str(info.value)
        pages = requests_received(client, "tools/list")
        assert 60 <= pages <= 66, pages
        assert growth_mib < 256, f"peak RSS grew by {growth_mib} MiB"
        assert elapsed < T
        assert_usable(client)


def test_the_bounds_are_client_keywords_and_none_lifts_them() -> None:
    """A finite listing of 57 tools in pages of 5, against bounds set through connect():
    a bound below it fails (with nothing cached), None lifts it."""
    finite = ("--page-size", "5", "--extra-tools", "40")
    with connect(*finite, max_list_items=20) as client:
        with pytest.raises(ListingTooLarge, match=r"max_list_items=20\b.* in 5 pages"):
            client.list_tools()
        assert requests_received(client, "tools/list") == 5
        with pytest.raises(ListingTooLarge):  # refused, not cached: asked again
            client.list_tools()
        assert requests_received(client, "tools/list") == 10
        assert_usable(client)
    with connect(*finite, max_list_bytes=2_000) as client:
        with pytest.raises(ListingTooLarge, match="max_list_bytes=2000") as info:
            client.list_tools()
        assert info.value.bound == "max_list_bytes"
        assert_usable(client)
    with connect(*finite, max_list_items=None, max_list_bytes=None) as client:
        tools = client.list_tools()
        assert {f"tool_{i:03d}" for i in range(40)} <= {tool.name for tool in tools}
    with connect("--endless", "tools/list", max_list_items=None, max_list_bytes=None,
                 max_pages=7) as client:
        with pytest.raises(ListingTooLarge, match="max_pages=7") as info:
            client.list_tools()
        assert (info.value.bound, info.value.limit) == ("max_pages", 7)


def fake_entry(*args: str) -> Dict[str, Any]:
    command = fake_server_command(*args)
    return {"command": command[0], "args": command[1:]}


def test_the_manager_bounds_every_servers_listing(caplog: pytest.LogCaptureFixture) -> None:
    """Bounds given to the Manager reach each client: a server with endless resources and
    prompts is left out of those aggregated listings (with a warning naming the bound),
    one with endless tools is reported failed at once (not retried), and the healthy
    server is listed in full."""
    config: Dict[str, Any] = {"mcpServers": {
        "good": fake_entry(),
        "pages": fake_entry("--endless", "resources/list", "--endless", "prompts/list"),
        "tools": fake_entry("--endless", "tools/list"),
    }}
    caplog.set_level(logging.WARNING, logger="mcp_sync.manager")
    with Manager(config, timeout=T, backoff=(0.01,), max_list_items=500) as manager:
        status = manager.status()
        assert status["good"].state is ServerState.CONNECTED
        assert status["pages"].state is ServerState.CONNECTED
        failed = status["tools"]
        assert failed.state is ServerState.FAILED
        assert failed.recent_failures == 1  # retrying would only fetch it again
        assert isinstance(failed.error, ListingTooLarge)
        assert "max_list_items=500" in str(failed.to_dict()["error"])

        names: List[str] = [tool.name for tool in manager.list_tools()]
        assert "good__echo" in names and "pages__echo" in names
        assert not [name for name in names if name.startswith("tools__")]
        resources = manager.list_resources()
        assert sorted(resource.uri for resource in resources) == [
            "test://blob", "test://hello"]
        assert [prompt.name for prompt in manager.list_prompts()] == ["good__greet"]
        warnings = [record.getMessage() for record in caplog.records
                    if record.levelno == logging.WARNING]
        for method in ("list_resources", "list_prompts"):
            assert any(message.startswith(f"{method} of pages failed")
                       and "max_list_items=500" in message for message in warnings), warnings
        assert manager.call_tool("pages__echo", {"text": "ok"}, timeout=T).text == "ok"
