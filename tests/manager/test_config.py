"""The mcpServers configuration: parsing, inference, ${VAR} expansion and bad configs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict

import pytest

from mcp_sync import MCPError
from mcp_sync.client._connect import make_transport
from mcp_sync.config import Config, ConfigError, ServerConfig, expand, load_config
from mcp_sync.transports.stdio import StdioTransport

ENV = {"HOME": "/home/ann", "TOKEN": "s3cret", "EMPTY": "", "PORT": "8123"}


def servers(**entries: Any) -> Dict[str, Any]:
    return {"mcpServers": entries}


def test_stdio_entry_with_every_key() -> None:
    config = load_config(servers(files={
        "command": "npx", "args": ["-y", "@scope/server", "${HOME}/docs", 3],
        "env": {"API_KEY": "${TOKEN}", "LEVEL": 2, "DEBUG": True}, "cwd": "/tmp",
        "timeout": 12.5, "autoApprove": ["read"], "x-vendor": {"nested": "${NOT_EXPANDED}"},
    }), environ=ENV)
    files = config.resolve("files")
    assert isinstance(files, ServerConfig)
    assert files.type == "stdio" and not files.type_given
    assert files.command == "npx"
    assert files.args == ["-y", "@scope/server", "/home/ann/docs", "3"]
    assert files.env == {"API_KEY": "s3cret", "LEVEL": "2", "DEBUG": "true"}
    assert files.cwd == "/tmp" and files.timeout == 12.5 and files.enabled
    # unknown keys are kept, as written (not expanded)
    assert files.model_extra == {"autoApprove": ["read"],
                                 "x-vendor": {"nested": "${NOT_EXPANDED}"}}
    assert files.to_entry() == {
        "command": "npx", "args": ["-y", "@scope/server", "/home/ann/docs", "3"],
        "env": {"API_KEY": "s3cret", "LEVEL": "2", "DEBUG": "true"}, "cwd": "/tmp",
    }
    assert config.names == ["files"] and config.enabled == ["files"] and "files" in config


def test_url_entries_infer_http_and_take_sse_and_aliases() -> None:
    config = load_config(servers(
        remote={"url": "https://example.com/mcp",
                "headers": {"Authorization": "Bearer ${TOKEN}"}},
        legacy={"url": "http://127.0.0.1:${PORT}/sse", "type": "sse"},
        streamable={"url": "http://127.0.0.1/mcp", "type": "streamable-http"},
        camel={"url": "http://127.0.0.1/mcp", "type": "streamableHttp"},
        local={"command": "python", "type": "stdio"},
        old_style={"command": "python", "transport": "stdio"},
    ), environ=ENV)
    remote = config.resolve("remote")
    assert remote.type == "http" and not remote.type_given
    assert remote.headers == {"Authorization": "Bearer s3cret"}
    # an inferred http entry leaves the type out, so connect() may fall back to legacy SSE
    assert remote.to_entry() == {"url": "https://example.com/mcp",
                                 "headers": {"Authorization": "Bearer s3cret"}}
    legacy = config.resolve("legacy")
    assert legacy.type == "sse" and legacy.url == "http://127.0.0.1:8123/sse"
    assert legacy.to_entry() == {"url": "http://127.0.0.1:8123/sse", "type": "sse"}
    assert config.resolve("streamable").type == "http"
    assert config.resolve("streamable").to_entry()["type"] == "http"
    assert config.resolve("camel").type == "http"
    assert config.resolve("local").type == "stdio" and config.resolve("local").type_given
    assert config.resolve("old_style").type == "stdio"


def test_expansion_defaults_and_empty_values() -> None:
    assert expand("${TOKEN}", ENV) == "s3cret"
    assert expand("${MISSING:-fallback}", ENV) == "fallback"
    assert expand("${MISSING:-}", ENV) == ""
    assert expand("${EMPTY:-used when empty}", ENV) == "used when empty"
    assert expand("${EMPTY}", ENV) == ""
    assert expand("a-${TOKEN}-b-${PORT}", ENV) == "a-s3cret-b-8123"
    assert expand("$TOKEN and $$ stay", ENV) == "$TOKEN and $$ stay"
    assert expand(["${PORT}", {"k": "${TOKEN}"}, 7, None], ENV) == ["8123", {"k": "s3cret"},
                                                                    7, None]
    assert expand("${MISSING}", ENV, lenient=True) == "${MISSING}"


def test_expansion_reads_the_environment_at_every_resolve() -> None:
    environ = {"CMD": "first-server"}
    config = load_config(servers(s={"command": "${CMD}"}), environ=environ)
    assert config.resolve("s").command == "first-server"
    environ["CMD"] = "second-server"
    assert config.resolve("s").command == "second-server"
    assert config.resolve("s", {"CMD": "explicit"}).command == "explicit"


def test_os_environ_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_SYNC_TEST_CMD", "from-os-environ")
    assert load_config(servers(s={"command": "${MCP_SYNC_TEST_CMD}"})).resolve("s").command \
        == "from-os-environ"


def test_disabled_and_enabled_flags() -> None:
    config = load_config(servers(
        a={"command": "a"},
        b={"command": "b", "disabled": True},
        c={"command": "c", "enabled": False},
        d={"command": "d", "enabled": True},
        e={"command": "e", "disabled": "${E_OFF:-true}"},
        # a disabled entry may use variables that are not set
        f={"command": "${NOT_SET_ANYWHERE}", "disabled": True, "timeout": "${NOR_THIS}"},
    ), environ=ENV)
    assert config.enabled == ["a", "d"]
    assert config.names == ["a", "b", "c", "d", "e", "f"]
    assert not config.is_enabled("f")
    assert set(config.servers()) == {"a", "d"}
    with pytest.raises(ConfigError, match="NOT_SET_ANYWHERE"):
        config.resolve("f")


def test_load_from_a_file_keeps_top_level_keys(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"s": {"command": "python"}},
                                "globalShortcut": "Ctrl+M"}), encoding="utf-8")
    config = load_config(str(path))
    assert config.source == str(path)
    assert config.extra == {"globalShortcut": "Ctrl+M"}
    assert load_config(path).names == ["s"]  # a Path works too
    assert load_config(config) is config
    assert "mcp.json" in repr(config)


def test_vs_code_servers_key_is_accepted() -> None:
    assert load_config({"servers": {"s": {"command": "python"}}}).names == ["s"]


def test_raw_entries_are_copies_with_variables_unexpanded() -> None:
    config = load_config(servers(s={"command": "x", "env": {"K": "${TOKEN}"}}), environ=ENV)
    raw = config.raw("s")
    assert raw == {"command": "x", "env": {"K": "${TOKEN}"}}
    raw["env"]["K"] = "changed"
    assert config.raw("s")["env"]["K"] == "${TOKEN}"


def test_a_resolved_entry_builds_a_transport() -> None:
    config = load_config(servers(s={"command": "python server.py", "args": ["--x"],
                                    "env": {"A": "1"}}))
    transport = make_transport(config.resolve("s").to_entry(), name="s")
    assert isinstance(transport, StdioTransport)
    assert transport.command == "python" and transport.args == ["server.py", "--x"]
    assert transport.env == {"A": "1"} and transport.name == "s"


@pytest.mark.parametrize(
    ("entry", "key", "message"),
    [
        ({"command": "x", "env": {"API_KEY": "${NO_SUCH_VAR}"}}, "env.API_KEY",
         "environment variable 'NO_SUCH_VAR' is not set"),
        ({"command": "x", "args": ["ok", "${NO_SUCH_VAR}"]}, "args[1]", "NO_SUCH_VAR"),
        ({"url": "https://h/${NO_SUCH_VAR}/mcp"}, "url", "NO_SUCH_VAR"),
        ({"url": "https://h/mcp", "headers": {"Authorization": "Bearer ${NO_SUCH_VAR}"}},
         "headers.Authorization", "NO_SUCH_VAR"),
        ({"command": "x", "args": ["${BROKEN"]}, "args[0]", "malformed variable reference"),
        ({"command": "x", "args": ["${1ABC}"]}, "args[0]", "malformed variable reference"),
        ({"type": "websocket", "url": "ws://h"}, "type", "unknown type 'websocket'"),
        ({"type": 5, "command": "x"}, "type", "unknown type 5"),
        ({"type": "stdio", "url": "http://h/mcp"}, "command", "type 'stdio' needs a 'command'"),
        ({"type": "sse", "command": "x"}, "url", "type 'sse' needs a 'url'"),
        ({"command": "x", "url": "http://h/mcp"}, "url", "both 'command'"),
        ({"args": ["a"]}, None, "needs a 'command' (stdio) or a 'url'"),
        ({"command": ""}, "command", "non-empty string"),
        ({"command": ["python", "x"]}, "command", "non-empty string"),
        ({"url": "ftp://h/x"}, "url", "http:// or https://"),
        ({"command": "x", "args": "not a list"}, "args", "valid list"),
        ({"command": "x", "env": ["A=1"]}, "env", "valid dictionary"),
        ({"command": "x", "env": {"A": {"nested": 1}}}, "env.A", "valid string"),
        ({"command": "x", "timeout": "soon"}, "timeout", "valid number"),
        ({"command": "x", "timeout": -1}, "timeout", "greater than or equal to 0"),
        ({"command": "x", "disabled": "maybe"}, "disabled", "true or false"),
        ({"command": "x", "disabled": 3}, "disabled", "true or false"),
        ({"command": "x", "disabled": True, "enabled": True}, "enabled", "contradict"),
    ],
)
def test_bad_entries_name_the_server_and_the_key(
    entry: Dict[str, Any], key: Any, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:  # at load (shape) or at resolve (variables)
        load_config(servers(broken=entry), environ=ENV).resolve("broken")
    error = caught.value
    assert error.server == "broken"
    assert error.key == key
    assert message in str(error)
    assert "server 'broken'" in str(error)
    if key:
        assert f"key {key!r}" in str(error)
    assert isinstance(error, MCPError) and isinstance(error, ValueError)


def test_a_missing_variable_fails_only_its_own_server() -> None:
    config = load_config(servers(
        good={"command": "x"},
        needs_token={"url": "https://h/mcp", "headers": {"Authorization": "Bearer ${NO_TOKEN}"}},
        needs_base={"url": "${NO_BASE_URL}/mcp", "type": "${NO_KIND:-http}"},
    ), environ=ENV)
    assert config.enabled == ["good", "needs_token", "needs_base"]
    assert config.resolve("good").command == "x"
    with pytest.raises(ConfigError, match="'NO_TOKEN' is not set") as caught:
        config.resolve("needs_token")
    assert caught.value.key == "headers.Authorization"
    with pytest.raises(ConfigError, match="NO_BASE_URL") as caught:
        config.resolve("needs_base")
    assert caught.value.server == "needs_base" and caught.value.key == "url"
    with pytest.raises(ConfigError, match="server 'needs_token'"):
        config.check()  # the strict check resolves every enabled entry
    assert config.resolve("needs_base", {"NO_BASE_URL": "http://h"}).url == "http://h/mcp"
    config.check({"NO_TOKEN": "t", "NO_BASE_URL": "http://h"})


def test_one_bad_entry_fails_the_load_even_among_good_ones() -> None:
    with pytest.raises(ConfigError, match="server 'two'"):
        load_config(servers(one={"command": "x"}, two={"command": "y", "type": "carrier-pigeon"},
                            three={"command": "z"}))


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "expected a file path or a dict"),
        ({"servers_typo": {}}, "no 'mcpServers' key"),
        ({"mcpServers": []}, "'mcpServers' must be an object"),
        ({"mcpServers": {"s": "python server.py"}}, "the entry must be an object"),
        ({"mcpServers": {"": {"command": "x"}}}, "non-empty strings"),
    ],
)
def test_bad_documents(document: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(document)


def test_bad_files_name_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    with pytest.raises(ConfigError, match="cannot read") as caught:
        load_config(str(missing))
    assert caught.value.source == str(missing)
    broken = tmp_path / "broken.json"
    broken.write_text('{"mcpServers": {"s": {"command": "x",}}}', encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid JSON") as caught:
        load_config(broken)
    assert str(broken) in str(caught.value)
    not_object = tmp_path / "list.json"
    not_object.write_text("[]", encoding="utf-8")
    with pytest.raises(ConfigError, match="must be a JSON object"):
        load_config(not_object)
    bad_entry = tmp_path / "bad.json"
    bad_entry.write_text('{"mcpServers": {"s": {"type": "nope", "command": "x"}}}',
                         encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(bad_entry)
    assert str(caught.value).startswith(f"{bad_entry}: server 's': key 'type'")


def test_unknown_server_names_the_configured_ones() -> None:
    config = load_config(servers(a={"command": "x"}, b={"command": "y"}))
    with pytest.raises(ConfigError, match=r"no server 'c' \(configured: a, b\)"):
        config.resolve("c")


def test_config_object_directly() -> None:
    config = Config({"s": {"command": "x"}}, source="inline")
    assert len(config) == 1 and list(config) == ["s"]
    with pytest.raises(ConfigError, match="inline: server 's'"):
        Config({"s": {"command": "x", "type": "bad"}}, source="inline")
