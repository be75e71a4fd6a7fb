"""enabledTools / disabledTools honoured by a Manager over the project's fake stdio server
(and by a Toolbox over that manager), and Manager.from_config() finding its
configuration on its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

from mcp_sync import InvalidToolCall, Manager, Toolbox
from mcp_sync.config import ConfigError
from mcp_sync.config.trust import TrustStore, file_digest

from ..conftest import fake_server_command

T = 30.0


def fake_entry(*args: str, **keys: Any) -> Dict[str, Any]:
    command = fake_server_command(*args)
    return {"command": command[0], "args": command[1:], **keys}


def tools_called(manager: Manager, server: str) -> List[str]:
    """The names of the tools ``server`` (the fake) was asked to call, in order, before
    this question (which it records too)."""
    result = manager.call_tool(server, "received", {"method": "tools/call"}, timeout=T)
    names = [message["params"]["name"] for message in json.loads(result.text)]
    assert names[-1] == "received"
    return names[:-1]


@pytest.fixture
def filtered() -> Iterator[Manager]:
    """The fake server three times: hiding some tools, offering a few, and unfiltered."""
    config = {"mcpServers": {
        "hiding": fake_entry("--extra-tools", "3",
                             disabledTools=["crash", "orphan", "tool_*"]),
        "offering": fake_entry("--extra-tools", "4",
                               enabledTools=["ec*", "received", "tool_00[02]"],
                               disabledTools=["tool_002"]),
        "open": fake_entry("--extra-tools", "3"),
    }}
    with Manager.from_config(config, timeout=T, reconnect=False) as manager:
        yield manager


def test_hidden_tools_are_not_listed(filtered: Manager) -> None:
    names = [tool.name for tool in filtered.list_tools()]
    hiding = {name.split("__", 1)[1] for name in names if name.startswith("hiding__")}
    everything = {name.split("__", 1)[1] for name in names if name.startswith("open__")}
    assert {"crash", "orphan", "tool_000", "tool_002"} <= everything
    assert hiding == everything - {"crash", "orphan", "tool_000", "tool_001", "tool_002"}
    assert "echo" in hiding
    offering = sorted(name for name in names if name.startswith("offering__"))
    assert offering == ["offering__echo", "offering__received", "offering__tool_000"]
    status = filtered.status()
    assert status["hiding"].tools == len(hiding)
    assert status["offering"].tools == 3
    # fetched again, the list is filtered again
    refreshed = [tool.name for tool in filtered.list_tools(refresh=True)]
    assert refreshed == names


def test_a_call_to_a_hidden_tool_is_refused_before_the_server(filtered: Manager) -> None:
    with pytest.raises(InvalidToolCall) as caught:
        filtered.call_tool("hiding__crash", {}, timeout=T)
    assert str(caught.value) == ("tool 'crash' of server 'hiding' is disabled by the "
                                 "configuration (disabledTools has 'crash')")
    assert caught.value.tool == "hiding__crash"
    with pytest.raises(InvalidToolCall, match=r"disabledTools has 'tool_\*'"):
        filtered.call_tool("hiding", "tool_001", {}, timeout=T)
    with pytest.raises(InvalidToolCall, match="'add' of server 'offering' is disabled by "
                                              r"the configuration \(not in enabledTools\)"):
        filtered.call_tool("offering", "add", {"a": 1, "b": 2}, timeout=T)
    with pytest.raises(InvalidToolCall, match="disabledTools has 'tool_002'"):
        filtered.call_tool("offering__tool_002", {}, timeout=T)
    # the offered tools run; the refused ones never reached the servers
    assert filtered.call_tool("hiding__echo", {"text": "hi"}, timeout=T).text == "hi"
    assert filtered.call_tool("offering", "echo", {"text": "yo"}, timeout=T).text == "yo"
    assert tools_called(filtered, "hiding") == ["echo"]
    assert tools_called(filtered, "offering") == ["echo"]
    # the same tool on the unfiltered server is called as ever
    assert not filtered.call_tool("open", "add", {"a": 1, "b": 2}, timeout=T).is_error


def test_a_toolbox_over_the_manager_offers_only_the_enabled_tools(filtered: Manager) -> None:
    toolbox = Toolbox(filtered, include=["offering", "hiding__c*"])
    names = sorted(tool["function"]["name"] for tool in toolbox.to_openai())
    assert names == ["offering__echo", "offering__received", "offering__tool_000"]
    assert toolbox.call("offering__echo", {"text": "ok"}).text == "ok"
    refused = toolbox.call("offering__add", {"a": 1, "b": 2})
    assert refused.is_error and "offering__add" in refused.text
    strict = Toolbox(filtered, raise_errors=True)
    with pytest.raises(InvalidToolCall) as caught:
        strict.call("hiding__crash", {})
    assert caught.value.tool == "hiding__crash"
    assert tools_called(filtered, "offering") == ["echo"]
    assert tools_called(filtered, "hiding") == []


def test_from_config_without_a_path_discovers(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    home = tmp_path / "home"
    (home / ".cursor").mkdir(parents=True)
    mcp_json = project / ".mcp.json"
    mcp_json.write_text(json.dumps({"mcpServers": {
        "fake": fake_entry(enabledTools=["echo"])}}), encoding="utf-8")
    (home / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {
        "fake": {"command": "shadowed-by-the-project"},
        "off": {"command": "never-run", "disabled": True}}}), encoding="utf-8")
    monkeypatch.chdir(project / "src")
    environ = {"HOME": str(home), "PATH": "/usr/bin"}
    # the project's file is trusted (its approval in the home's configuration folder)
    TrustStore.default(environ).trust(mcp_json, file_digest(mcp_json.read_bytes()))
    with Manager.from_config(environ=environ, timeout=T, reconnect=False) as manager:
        assert manager.servers == ["fake", "off"]
        assert manager.config.source_of("fake") == str(mcp_json)
        assert manager.config.source_of("off") == str(home / ".cursor" / "mcp.json")
        assert list(manager.config.shadowed) == ["fake"]
        assert [tool.name for tool in manager.list_tools()] == ["fake__echo"]
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="no MCP server configuration found"):
        Manager.from_config(environ={"HOME": str(tmp_path / "nobody")})
