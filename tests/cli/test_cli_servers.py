"""``mcp-sync servers`` over discovered configuration files, run as a subprocess with a
HOME and a project in a temporary directory: the servers, where each comes from, its tool
filters, secrets masked, config text escaped, and the status after connecting."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Dict, List

import pytest

from ..conftest import PY, ROOT, fake_server_command

T = 60.0  # bound for one CLI run (a Python start, a server start, a few requests)
SECRETS = ("sk-live-111", "tok-222", "pw-333", "q-444", "arg-555", "eq-666")


class Places:
    """A project (a git repository) and a home, both empty at first."""

    def __init__(self, root: Path) -> None:
        self.project = root / "repo"
        (self.project / ".git").mkdir(parents=True)
        self.home = root / "home"
        self.home.mkdir()

    def write(self, path: Path, document: Any) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(document if isinstance(document, str) else json.dumps(document),
                        encoding="utf-8")
        return path

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``python -m mcp_sync ARGS`` in the project, HOME the temporary home."""
        env = {key: value for key, value in os.environ.items()
               if key not in ("XDG_CONFIG_HOME", "APPDATA", "USERPROFILE",
                              "MCP_SYNC_CONFIG_DIR")}
        env["HOME"] = str(self.home)
        env["COLUMNS"] = "2000"  # temporary paths are long: no cell is cut
        env["PYTHONPATH"] = os.pathsep.join(
            [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
        return subprocess.run([PY, "-m", "mcp_sync", *args], capture_output=True, text=True,
                              timeout=T, cwd=str(self.project), env=env, check=False)


@pytest.fixture
def places(tmp_path: Path) -> Places:
    return Places(tmp_path)


def fake_entry(*args: str, **keys: Any) -> Dict[str, Any]:
    command = fake_server_command(*args)
    return {"command": command[0], "args": command[1:], **keys}


def rows(output: str) -> Dict[str, List[str]]:
    return {line.split()[0]: line.split() for line in output.splitlines()[1:]}


def configure(places: Places) -> Dict[str, Path]:
    marker = places.project / "started"
    return {
        "project": places.write(places.project / ".mcp.json", {"mcpServers": {
            "fake": fake_entry(disabledTools=["crash", "tool_*"],
                               env={"API_KEY": "sk-live-111", "REF": "${NOT_SHOWN}"}),
            # would leave a file behind if anything started it
            "marker": {"command": PY, "args": [
                "-c", f"open({str(marker)!r}, 'w')", "--api-key", "arg-555",
                "--token=eq-666"]},
        }}),
        "vscode": places.write(places.project / ".vscode" / "mcp.json", """{
            // VS Code's own key
            "servers": {"fake": {"command": "shadowed"},
                        "vs\\u001b[2Jcode": {"type": "stdio", "command": "run\\u202etxt.exe",
                                             "enabledTools": []},},
        }"""),
        "cursor": places.write(places.home / ".cursor" / "mcp.json", {"mcpServers": {
            "remote": {"url": "https://ann:pw-333@example.com/mcp?token=q-444&x=1",
                       "headers": {"Authorization": "Bearer tok-222"},
                       "enabledTools": ["read_*", "list_*"], "disabledTools": ["read_key"]},
            "off": {"command": "never", "disabled": True},
        }}),
        "marker": marker,
    }


def test_lists_the_discovered_servers_without_connecting(places: Places) -> None:
    """The project's files are not trusted: their servers are listed, marked so, with
    what they would run, and a warning says how to trust each file."""
    files = configure(places)
    result = places.cli("servers", "--no-connect")
    assert result.returncode == 0, (result.stdout, result.stderr)
    out = result.stdout
    assert out.splitlines()[0].split() == ["NAME", "STATE", "TRANSPORT", "SOURCE",
                                           "FILTERS", "TARGET"]
    table = rows(out)
    assert list(table) == ["fake", "marker", "vs\\x1b[2Jcode", "remote", "off"]
    assert table["fake"][1:5] == ["untrusted", "stdio", str(files["project"]),
                                  "disabled:"]
    assert table["marker"][1:4] == ["untrusted", "stdio", str(files["project"])]
    for project_file in (files["project"], files["vscode"]):
        assert (f"mcp-sync: warning: {project_file} is not trusted: its servers (" in
                result.stderr)
        assert f"read it, then run: mcp-sync trust {project_file}" in result.stderr
    assert "disabled: crash,tool_*" in out
    assert "(env API_KEY=*** REF=***)" in out
    assert table["remote"][1:3] == ["enabled", "http"]
    assert table["remote"][3] == str(files["cursor"])
    assert "enabled: read_*,list_*; disabled: read_key" in out
    assert "https://***@example.com/mcp?token=***&x=*** (headers Authorization: ***)" in out
    assert table["off"][1:4] == ["disabled", "stdio", str(files["cursor"])]
    assert table["vs\\x1b[2Jcode"][1] == "untrusted"
    assert table["vs\\x1b[2Jcode"][3:6] == [str(files["vscode"]), "enabled:", "(none)"]
    # config text is escaped; secrets are never printed; nothing was started
    assert "run\\u202etxt.exe" in out
    assert "\x1b" not in out and "\u202e" not in out
    for secret in SECRETS:
        assert secret not in out and secret not in result.stderr
    assert not files["marker"].exists()


def test_json_lists_entries_with_sources_and_filters(places: Places) -> None:
    files = configure(places)
    result = places.cli("--json", "servers", "--no-connect")
    assert result.returncode == 0, result.stderr
    servers = {server["name"]: server for server in json.loads(result.stdout)}
    assert list(servers) == ["fake", "marker", "vs\x1b[2Jcode", "remote", "off"]
    fake = servers["fake"]
    assert fake["source"] == str(files["project"])
    assert fake["transport"] == "stdio" and fake["enabled"] is True
    assert fake["command"] == PY and fake["env"] == {"API_KEY": "***", "REF": "***"}
    assert (fake["enabledTools"], fake["disabledTools"]) == (None, ["crash", "tool_*"])
    assert (fake["state"], fake["trust"]) == ("untrusted", "untrusted")
    assert servers["marker"]["args"][2:] == ["--api-key", "***", "--token=***"]
    remote = servers["remote"]
    assert "state" not in remote and remote["trust"] is None  # the user's: not connected
    assert remote["url"] == "https://***@example.com/mcp?token=***&x=***"
    assert remote["headers"] == {"Authorization": "***"}
    assert remote["enabledTools"] == ["read_*", "list_*"]
    assert remote["source"] == str(files["cursor"])
    assert servers["vs\x1b[2Jcode"]["enabledTools"] == []
    assert servers["off"]["enabled"] is False
    assert "\\u001b[2J" in result.stdout and "\x1b" not in result.stdout
    for secret in SECRETS:
        assert secret not in result.stdout
    assert not files["marker"].exists()


def test_connects_the_discovered_servers_and_counts_the_offered_tools(
        places: Places) -> None:
    project = places.write(places.project / ".mcp.json", {"mcpServers": {
        "fake": fake_entry("--extra-tools", "2", disabledTools=["crash", "tool_*"]),
    }})
    listing = subprocess.run([PY, "-m", "mcp_sync", "--json", "tools", "--",
                              *fake_server_command("--extra-tools", "2")],
                             capture_output=True, text=True, timeout=T, cwd=str(ROOT),
                             check=False)
    every = {tool["name"] for tool in json.loads(listing.stdout)}
    assert {"crash", "tool_000", "tool_001"} <= every
    offered = len(every) - 3

    assert places.cli("--json", "servers").returncode == 0  # not trusted: nothing started
    trusted = places.cli("trust", "--yes", str(project))
    assert trusted.returncode == 0, trusted.stderr
    result = places.cli("servers")
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert result.stdout.splitlines()[0].split() == [
        "NAME", "STATE", "TRANSPORT", "TOOLS", "SERVER", "SOURCE", "FILTERS", "ERROR"]
    fake = rows(result.stdout)["fake"]
    assert fake[1:5] == ["connected", "stdio", str(offered), "fake"]
    assert str(project) in fake and "crash,tool_*" in fake

    data = json.loads(places.cli("--json", "servers").stdout)
    assert data[0]["state"] == "connected" and data[0]["tools"] == offered
    assert data[0]["source"] == str(project)
    assert data[0]["disabledTools"] == ["crash", "tool_*"]


def test_a_server_that_does_not_connect_exits_3(places: Places) -> None:
    places.write(places.home / ".cursor" / "mcp.json", {"mcpServers": {
        "broken": {"command": "no-such-mcp-server-command-here"}}})
    result = places.cli("--json", "servers")
    assert result.returncode == 3, result.stderr
    broken = json.loads(result.stdout)[0]
    assert broken["state"] == "failed"
    assert broken["source"] == str(places.home / ".cursor" / "mcp.json")


def test_a_user_file_left_out_is_a_warning(places: Places) -> None:
    places.write(places.project / ".mcp.json", {"mcpServers": {"fine": {"command": "x"}}})
    claude = places.write(
        places.home / ".config" / "Claude" / "claude_desktop_config.json", "{broken\x1b[2J")
    result = places.cli("--json", "servers", "--no-connect")
    assert result.returncode == 0, result.stderr
    assert [server["name"] for server in json.loads(result.stdout)] == ["fine"]
    assert f"mcp-sync: warning: left out {claude}: not valid JSON" in result.stderr
    assert "\x1b" not in result.stderr


def test_config_overrides_discovery(places: Places, tmp_path: Path) -> None:
    configure(places)
    chosen = places.write(tmp_path / "chosen.json", {"mcpServers": {
        "only": {"command": "x", "enabledTools": ["a"]}}})
    result = places.cli("--json", "--config", str(chosen), "servers", "--no-connect")
    assert result.returncode == 0, result.stderr
    listed = json.loads(result.stdout)
    assert [(s["name"], s["source"], s["enabledTools"]) for s in listed] == [
        ("only", str(chosen), ["a"])]


def test_nothing_found_is_a_usage_error_listing_the_places(places: Places) -> None:
    result = places.cli("servers", "--no-connect")
    assert result.returncode == 2
    assert "mcp-sync: error: no MCP server configuration found (looked for " in result.stderr
    assert str(places.project / ".mcp.json") in result.stderr
    assert str(places.home / ".cursor" / "mcp.json") in result.stderr
    assert str(places.home / ".config" / "Claude" / "claude_desktop_config.json") \
        in result.stderr
    assert result.stdout == ""
    as_json = places.cli("--json", "servers")
    assert as_json.returncode == 2
    assert json.loads(as_json.stdout)["error"]["type"] == "ConfigError"


def test_a_bad_project_file_is_a_usage_error_naming_it(places: Places) -> None:
    bad = places.write(places.project / ".mcp.json", {"mcpServers": {
        "x": {"command": "c", "disabledTools": "crash"}}})
    result = places.cli("servers")
    assert result.returncode == 2
    assert f"mcp-sync: error: {bad}: server 'x': key 'disabledTools': must be a list" \
        in result.stderr
