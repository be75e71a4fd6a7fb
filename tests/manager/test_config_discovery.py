"""Finding the mcpServers configuration (project and user files, every platform's paths,
precedence, VS Code's format) and the enabledTools / disabledTools keys of an entry.

Every test writes real files in a temporary directory and injects the home, the
environment and the platform: the real home is never read."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Dict, List

import pytest

from mcp_sync.config import (
    ConfigError,
    ServerConfig,
    config_locations,
    discover_config,
    load_config,
)


def entry(command: str, **keys: Any) -> Dict[str, Any]:
    return {"command": command, **keys}


def write(path: Path, document: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(document if isinstance(document, str) else json.dumps(document),
                    encoding="utf-8")
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    directory = tmp_path / "home"
    directory.mkdir()
    return directory


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git repository (``.git``) with a subdirectory ``sub/dir`` to work in."""
    root = tmp_path / "work" / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "sub" / "dir").mkdir(parents=True)
    return root


def discover(cwd: Path, home: Path, platform: str = "linux", *, trust_project: bool = True,
             **environ: str) -> Any:
    """``discover_config`` with the home, its environment and the platform injected. The
    tests of where files are and which wins take every project file (``trust_project``):
    the approvals have their own tests (test_project_trust.py)."""
    return discover_config(cwd, home=home, environ={"HOME": str(home), **environ},
                           platform=platform, trust_project=trust_project)


# -- enabledTools / disabledTools --------------------------------------------------------


def test_tool_filters_are_parsed_and_applied() -> None:
    config = load_config({"mcpServers": {
        "files": entry("x", enabledTools=["read_*", "list_?", "stat"],
                       disabledTools=["read_secret*"]),
        "plain": entry("x"),
        "none": entry("x", enabledTools=[]),
    }})
    files = config.resolve("files")
    assert files.enabled_tools == ("read_*", "list_?", "stat")
    assert files.disabled_tools == ("read_secret*",)
    assert "enabledTools" not in (files.model_extra or {})  # a known key, not an extra
    assert files.tool_hidden("read_file") is None
    assert files.tool_hidden("list_a") is None and files.tool_hidden("stat") is None
    assert files.tool_hidden("list_ab") == "not in enabledTools"
    assert files.tool_hidden("Read_file") == "not in enabledTools"  # case matters
    assert files.tool_hidden("write_file") == "not in enabledTools"
    # disabledTools wins over enabledTools
    assert files.tool_hidden("read_secret_key") == "disabledTools has 'read_secret*'"
    plain = config.resolve("plain")
    assert plain.enabled_tools is None and plain.disabled_tools == ()
    assert plain.tool_hidden("anything") is None
    assert config.resolve("none").tool_hidden("read_file") == "not in enabledTools"


@pytest.mark.parametrize(
    ("keys", "key", "message"),
    [
        ({"enabledTools": "read_*"}, "enabledTools", "must be a list of tool names or "
                                                     "patterns, got str"),
        ({"disabledTools": {"read": True}}, "disabledTools", "got dict"),
        ({"enabledTools": ["ok", 3]}, "enabledTools[1]", "must be a non-empty string"),
        ({"disabledTools": ["  "]}, "disabledTools[0]", "must be a non-empty string"),
        ({"disabledTools": [None]}, "disabledTools[0]", "got None"),
    ],
)
def test_bad_tool_filters_are_config_errors(tmp_path: Path, keys: Dict[str, Any], key: str,
                                            message: str) -> None:
    path = write(tmp_path / "mcp.json", {"mcpServers": {"files": entry("x", **keys)}})
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    error = caught.value
    assert (error.source, error.server, error.key) == (str(path), "files", key)
    assert message in str(error)
    assert str(error).startswith(f"{path}: server 'files': key '{key}': ")


# -- where the files are -----------------------------------------------------------------


def test_locations_on_each_platform(tmp_path: Path, home: Path) -> None:
    cwd = tmp_path / "alone"
    cwd.mkdir()

    def user_files(platform: str, **environ: str) -> List[str]:
        locations = config_locations(cwd, home=home, environ=environ, platform=platform)
        assert [loc.path for loc in locations if loc.scope == "project"] == [
            str(cwd / ".mcp.json"), str(cwd / ".cursor" / "mcp.json"),
            str(cwd / ".vscode" / "mcp.json")]
        return [loc.path for loc in locations if loc.scope == "user"]

    support = home / "Library" / "Application Support"
    assert user_files("darwin") == [
        str(support / "Claude" / "claude_desktop_config.json"),
        str(home / ".cursor" / "mcp.json"),
        str(support / "Code" / "User" / "mcp.json"),
        str(support / "Code" / "User" / "settings.json"),
    ]
    appdata = tmp_path / "Roaming"
    assert user_files("win32", APPDATA=str(appdata)) == [
        str(appdata / "Claude" / "claude_desktop_config.json"),
        str(home / ".cursor" / "mcp.json"),
        str(appdata / "Code" / "User" / "mcp.json"),
        str(appdata / "Code" / "User" / "settings.json"),
    ]
    # without APPDATA, Windows' default place under the home
    assert user_files("win32")[0] == str(
        home / "AppData" / "Roaming" / "Claude" / "claude_desktop_config.json")
    assert user_files("linux") == [
        str(home / ".config" / "Claude" / "claude_desktop_config.json"),
        str(home / ".cursor" / "mcp.json"),
        str(home / ".config" / "Code" / "User" / "mcp.json"),
        str(home / ".config" / "Code" / "User" / "settings.json"),
    ]
    xdg = tmp_path / "xdg"
    assert user_files("linux", XDG_CONFIG_HOME=str(xdg))[0] == str(
        xdg / "Claude" / "claude_desktop_config.json")
    # the home comes from the environment when not given
    located = config_locations(cwd, environ={"HOME": str(home)}, platform="linux")
    assert located[-1].path == str(home / ".config" / "Code" / "User" / "settings.json")
    located = config_locations(cwd, environ={"USERPROFILE": str(home)}, platform="win32")
    assert located[4].path == str(home / ".cursor" / "mcp.json")


@pytest.mark.parametrize("platform", ["darwin", "win32", "linux"])
def test_claude_desktop_file_is_found_on_each_platform(tmp_path: Path, home: Path,
                                                       platform: str) -> None:
    settings = {"darwin": home / "Library" / "Application Support",
                "win32": tmp_path / "Roaming", "linux": home / ".config"}[platform]
    claude = write(settings / "Claude" / "claude_desktop_config.json",
                   {"mcpServers": {"desk": entry("desk-server")}, "preferences": {}})
    cwd = tmp_path / "alone"
    cwd.mkdir()
    config = discover(cwd, home, platform, APPDATA=str(tmp_path / "Roaming"))
    assert config.names == ["desk"]
    assert config.source_of("desk") == str(claude)
    assert config.resolve("desk").command == "desk-server"


def test_project_files_walk_up_to_the_git_root(project: Path, home: Path) -> None:
    above = write(project.parent / ".mcp.json", {"mcpServers": {"above": entry("a")}})
    root = write(project / ".mcp.json", {"mcpServers": {"shared": entry("root"),
                                                        "rooted": entry("r")}})
    near = write(project / "sub" / ".mcp.json", {"mcpServers": {"shared": entry("near")}})
    config = discover(project / "sub" / "dir", home)
    assert config.names == ["shared", "rooted"]  # "above" is outside the repository
    assert config.resolve("shared").command == "near"  # the nearer directory wins
    assert config.sources == {"shared": str(near), "rooted": str(root)}
    searched = [location.path for location in config.searched]
    assert str(project / "sub" / "dir" / ".mcp.json") in searched
    assert str(project / ".vscode" / "mcp.json") in searched
    assert str(above) not in searched


def test_outside_a_repository_only_the_current_directory(tmp_path: Path, home: Path) -> None:
    cwd = tmp_path / "plain" / "dir"
    cwd.mkdir(parents=True)
    write(tmp_path / "plain" / ".mcp.json", {"mcpServers": {"parent": entry("p")}})
    with pytest.raises(ConfigError, match="no MCP server configuration found"):
        discover(cwd, home)
    here = write(cwd / ".mcp.json", {"mcpServers": {"here": entry("h")}})
    assert discover(cwd, home).sources == {"here": str(here)}


def test_precedence_and_merge_by_name(project: Path, home: Path) -> None:
    """Project beats user; in a directory .mcp.json, then .cursor, then .vscode; among
    the user's files Claude Desktop, then Cursor, then VS Code's mcp.json, then its
    settings.json. A winner's entry is taken whole."""
    user = home / ".config"
    files = {
        "mcp": write(project / ".mcp.json", {"mcpServers": {
            "a": entry("mcp-json", args=["--from-mcp"])}}),
        "cursor": write(project / ".cursor" / "mcp.json", {"mcpServers": {
            "a": entry("project-cursor"), "b": entry("project-cursor")}}),
        "vscode": write(project / ".vscode" / "mcp.json", {"servers": {
            "b": entry("project-vscode"), "c": {"type": "http",
                                                "url": "http://127.0.0.1:1/mcp"}}}),
        "claude": write(user / "Claude" / "claude_desktop_config.json", {"mcpServers": {
            "c": entry("claude"), "d": entry("claude")}}),
        "user-cursor": write(home / ".cursor" / "mcp.json", {"mcpServers": {
            "d": entry("user-cursor"), "e": entry("user-cursor")}}),
        "user-vscode": write(user / "Code" / "User" / "mcp.json", {"servers": {
            "e": entry("user-vscode"), "f": entry("user-vscode")}}),
        "settings": write(user / "Code" / "User" / "settings.json", {
            "editor.fontSize": 12,
            "mcp": {"servers": {"f": entry("settings"), "g": entry("settings")}}}),
    }
    config = discover(project, home)
    assert config.names == ["a", "b", "c", "d", "e", "f", "g"]
    winners = {"a": "mcp", "b": "cursor", "c": "vscode", "d": "claude", "e": "user-cursor",
               "f": "user-vscode", "g": "settings"}
    assert config.sources == {name: str(files[key]) for name, key in winners.items()}
    assert config.resolve("a").command == "mcp-json"
    assert config.resolve("a").args == ["--from-mcp"]  # whole entry, not merged by key
    assert config.resolve("c").type == "http"  # VS Code's entry, not Claude's
    assert config.resolve("g").command == "settings"
    assert config.skipped == {}


def test_vscode_files_take_comments_and_trailing_commas(project: Path, home: Path) -> None:
    write(project / ".vscode" / "mcp.json", """{
      // VS Code writes comments
      "inputs": [],
      "servers": {
        "commented": {"type": "stdio", "command": "srv", "args": ["//not-a-comment",
                      "/* kept */", "a \\" // quoted"], /* trailing: */ },
      },
    }""")
    config = discover(project, home)
    assert config.resolve("commented").args == ["//not-a-comment", "/* kept */",
                                                'a " // quoted']
    assert config.extra == {}  # a merged configuration keeps no top-level keys


def test_vscode_variables_are_read_as_vscode_means_them(
        project: Path, home: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = project / "sub"
    vscode = write(folder / ".vscode" / "mcp.json", {"inputs": [], "servers": {
        "tool": {"command": "${workspaceFolder}/bin/srv",
                 "args": ["${userHome}/data", "${env:TOKEN}", "${HOME}", "${TOKEN:-x}"],
                 "env": {"KEY": "${env:TOKEN}"}},
        "asks": {"command": "srv", "env": {"KEY": "${input:api-key}"}},
    }})
    user = write(home / ".config" / "Code" / "User" / "settings.json", {"mcp": {"servers": {
        "mine": {"command": "${workspaceFolder}/run", "args": ["${input:pick}"]},
        "theirs": {"command": "${userHome}/bin/theirs"},
        "ws": {"command": "${workspaceFolder}/run"},
    }}})
    with caplog.at_level(logging.WARNING, logger="mcp_sync.config"):
        config = discover(folder / "dir", home, TOKEN="tok")
    assert config.names == ["tool", "theirs", "ws"]
    tool = config.resolve("tool")
    assert tool.command == f"{folder}/bin/srv"
    assert tool.args == [f"{home}/data", "tok", str(home), "tok"]
    assert tool.env == {"KEY": "tok"}
    assert config.raw("tool")["env"] == {"KEY": "${TOKEN}"}
    assert config.resolve("theirs").command == f"{home}/bin/theirs"
    # in the user's files, the workspace is the project: the git root
    assert config.resolve("ws").command == f"{project}/run"
    assert config.skipped == {
        str(vscode): "server 'asks' needs the VS Code input ${input:api-key}, which only "
                     "VS Code can ask for",
        str(user): "server 'mine' needs the VS Code input ${input:pick}, which only VS Code "
                   "can ask for",
    }
    logged = [record.getMessage() for record in caplog.records]
    assert any(str(vscode) in line and "'asks'" in line for line in logged)
    # outside VS Code's files, ${input:...} is no variable of ours: a malformed reference
    write(project / ".mcp.json", {"mcpServers": {"x": {"command": "${input:a}"}}})
    with pytest.raises(ConfigError, match="malformed variable reference"):
        discover(folder / "dir", home)


def test_home_inside_the_project_is_read_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".git").mkdir(parents=True)
    cursor = write(home / ".cursor" / "mcp.json", {"mcpServers": {"c": entry("c")}})
    config = discover(home, home, trust_project=False)
    paths = [location.path for location in config.searched]
    assert paths.count(str(cursor)) == 1
    # the project's place in the order, and still the user's own file: no approval needed
    assert paths.index(str(cursor)) < paths.index(
        str(home / ".config" / "Claude" / "claude_desktop_config.json"))
    assert [loc.scope for loc in config.searched if loc.path == str(cursor)] == ["user"]
    assert config.names == ["c"] and config.project_files == {}


def test_server_errors_name_their_own_file(project: Path, home: Path) -> None:
    write(project / ".mcp.json", {"mcpServers": {"fine": entry("f")}})
    user = write(home / ".cursor" / "mcp.json", {"mcpServers": {
        "needs": entry("n", args=["${UNSET_TOKEN}"])}})
    config = discover(project, home)
    with pytest.raises(ConfigError) as caught:
        config.resolve("needs")
    assert caught.value.source == str(user)
    assert str(caught.value).startswith(f"{user}: server 'needs': key 'args[0]'")
    assert config.source_of("fine") == str(project / ".mcp.json")
    with pytest.raises(ConfigError, match="no server 'nope'"):
        config.source_of("nope")


# -- bad files ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"mcpServers": []}', "key 'mcpServers': must be an object"),
        ('{"mcpServers": {"x": {"type": "pigeon", "command": "c"}}}',
         "server 'x': key 'type': unknown type"),
        ('{"mcpServers": {"x": {"command": "c", "enabledTools": "all"}}}',
         "server 'x': key 'enabledTools'"),
    ],
)
def test_a_bad_project_file_is_an_error_naming_it(project: Path, home: Path, text: str,
                                                  message: str) -> None:
    bad = write(project / ".mcp.json", text)
    write(home / ".cursor" / "mcp.json", {"mcpServers": {"fine": entry("f")}})
    with pytest.raises(ConfigError) as caught:
        discover(project, home)
    assert str(caught.value).startswith(f"{bad}: ")
    assert message in str(caught.value)


def test_an_unreadable_project_file_is_an_error(project: Path, home: Path) -> None:
    bad = project / ".mcp.json"
    bad.write_bytes(b'{"mcpServers": {"x": {"command": "\xff"}}}')  # not UTF-8
    with pytest.raises(ConfigError, match="cannot read the configuration") as caught:
        discover(project, home)
    assert caught.value.source == str(bad)


def test_a_bad_user_file_is_logged_and_left_out(project: Path, home: Path,
                                                caplog: pytest.LogCaptureFixture) -> None:
    claude = write(home / ".config" / "Claude" / "claude_desktop_config.json", "{oops")
    settings = write(home / ".config" / "Code" / "User" / "settings.json",
                     {"mcp": {"servers": {"x": {"command": "c", "disabledTools": [1]}}}})
    cursor = write(home / ".cursor" / "mcp.json", {"mcpServers": {"fine": entry("f")}})
    with caplog.at_level(logging.WARNING, logger="mcp_sync.config"):
        config = discover(project, home)
    assert config.names == ["fine"] and config.source_of("fine") == str(cursor)
    assert set(config.skipped) == {str(claude), str(settings)}
    assert config.skipped[str(claude)].startswith("not valid JSON: ")
    assert config.skipped[str(settings)].startswith("server 'x': key 'disabledTools[0]': ")
    logged = [record.getMessage() for record in caplog.records]
    assert any(str(claude) in line and "leaving out" in line for line in logged)
    assert any(str(settings) in line for line in logged)


def test_files_without_servers_are_passed_over(project: Path, home: Path) -> None:
    write(project / ".vscode" / "mcp.json", {"inputs": []})
    write(home / ".config" / "Code" / "User" / "settings.json", {"editor.fontSize": 12})
    write(home / ".config" / "Claude" / "claude_desktop_config.json", {"preferences": {}})
    (project / ".cursor" / "mcp.json").mkdir(parents=True)  # a directory: never opened
    with pytest.raises(ConfigError) as caught:
        discover(project, home)
    message = str(caught.value)
    assert message.startswith("no MCP server configuration found (looked for ")
    for location in config_locations(project, home=home, environ={}, platform="linux"):
        assert location.path in message
    assert caught.value.source is None


def test_nothing_found_lists_the_user_files_left_out(project: Path, home: Path) -> None:
    claude = write(home / ".config" / "Claude" / "claude_desktop_config.json", "{oops")
    with pytest.raises(ConfigError, match="no MCP server configuration found") as caught:
        discover(project, home)
    assert f"left out {claude}: " in str(caught.value)


def test_discovered_config_expands_with_the_given_environment(project: Path,
                                                              home: Path) -> None:
    write(project / ".mcp.json", {"mcpServers": {"x": entry("c", env={"K": "${TOKEN}"})}})
    config = discover(project, home, TOKEN="from-env")
    resolved = config.resolve("x")
    assert isinstance(resolved, ServerConfig) and resolved.env == {"K": "from-env"}
    assert repr(config) == "<mcp_sync.Config several files: x>"
    assert config.source_of("x") == str(project / ".mcp.json")
