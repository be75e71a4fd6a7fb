"""The command line does what the schema says (issue 20): --arg values typed by the tool's
input schema, tools listed with their arguments and shown whole, a quiet end when the
reader of its output goes away, environment variables for stdio servers, --config
targeting that knows which entries are enabled, and output that reads well.

Every test runs the real console script (``python -m mcp_sync``) against real servers."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from ..conftest import PY, ROOT, SERVERS, fake_server_command, require_everything

T = 60.0  # bound for one CLI run (a Python start, a server start, a few requests)
TYPED = ["--", *fake_server_command("--typed-tools")]
SDK = ["--", PY, str(SERVERS / "manager_sdk_server.py")]
DEMO = ["--", PY, "-m", "mcp_sync.demo_server"]


def cli(*args: str, env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess[str]:
    """``python -m mcp_sync ARGS`` from the project root; never raises on exit codes."""
    return subprocess.run([PY, "-m", "mcp_sync", *args], capture_output=True, text=True,
                          timeout=T, cwd=str(ROOT), check=False, env=env)


def ok(*args: str, env: Optional[Dict[str, str]] = None) -> str:
    result = cli(*args, env=env)
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr)
    return result.stdout


def typed_call(*pairs: str) -> Dict[str, Any]:
    """Call the fake server's ``typed`` tool; what it got, and each value's JSON type."""
    args: List[str] = []
    for pair in pairs:
        args += ["--arg", pair]
    result: Dict[str, Any] = json.loads(ok("--json", "call", "typed", *args, *TYPED))
    return result["structuredContent"]  # type: ignore[no-any-return]


# -- --arg follows the input schema ------------------------------------------------------


def test_arg_values_are_typed_by_the_input_schema() -> None:
    got = typed_call("text=123", "count=7", "ratio=2.5", "flag=true", "nothing=null",
                     'items=[1, "a"]', 'options={"a": {"b": null}}', "unit=celsius")
    assert got["arguments"] == {"text": "123", "count": 7, "ratio": 2.5, "flag": True,
                                "nothing": None, "items": [1, "a"],
                                "options": {"a": {"b": None}}, "unit": "celsius"}
    assert got["types"] == {"text": "string", "count": "integer", "ratio": "number",
                            "flag": "boolean", "nothing": "null", "items": "array",
                            "options": "object", "unit": "string"}
    # A string stays the string written, whatever it looks like.
    strings = typed_call("text=true", "unit=null")
    assert strings["arguments"] == {"text": "true", "unit": "null"}
    assert typed_call('text={"a": 1}')["arguments"] == {"text": '{"a": 1}'}
    # An integer written as 2.0 is an integer; an integer is a number.
    assert typed_call("text=x", "count=2.0", "ratio=3")["types"] == {
        "text": "string", "count": "integer", "ratio": "integer"}


def test_several_types_take_json_of_the_others_else_the_string() -> None:
    got = typed_call("text=x", "label=null", "size=12")
    assert got["types"] == {"text": "string", "label": "null", "size": "integer"}
    got = typed_call("text=x", "label=hello", "size=12 apples")
    assert got["arguments"] == {"text": "x", "label": "hello", "size": "12 apples"}
    # A JSON string is the string written, quotes and all: a quoted value is not unwrapped.
    got = typed_call("text=x", 'label="hello"', 'size="12"')
    assert got["arguments"] == {"text": "x", "label": '"hello"', "size": '"12"'}


def test_an_argument_without_a_type_keeps_the_old_rule() -> None:
    # JSON when it parses, else the string.
    got = typed_call("text=x", "free=5", "undeclared=[1]")
    assert got["types"] == {"text": "string", "free": "integer", "undeclared": "array"}
    assert typed_call("text=x", "free=five")["arguments"]["free"] == "five"


@pytest.mark.parametrize(("pair", "expected"), [
    ("count=abc", "--arg count: tool 'typed' takes an integer there, not 'abc'"),
    ("count=1.5", "--arg count: tool 'typed' takes an integer there, not '1.5'"),
    ("ratio=fast", "--arg ratio: tool 'typed' takes a number there, not 'fast'"),
    ("ratio=1e999", "--arg ratio: tool 'typed' takes a number there, not '1e999'"),
    ("ratio=NaN", "--arg ratio: tool 'typed' takes a number there, not 'NaN'"),
    ("flag=yes", "--arg flag: tool 'typed' takes a boolean (true or false) there, not 'yes'"),
    ("nothing=0", "--arg nothing: tool 'typed' takes null there, not '0'"),
    ("items=a,b", "--arg items: tool 'typed' takes a JSON array there, not 'a,b'"),
    ("options=[]", "--arg options: tool 'typed' takes a JSON object there, not '[]'"),
])
def test_a_value_that_does_not_fit_is_a_usage_error(pair: str, expected: str) -> None:
    result = cli("call", "typed", "--arg", "text=x", "--arg", pair, *TYPED)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert f"mcp-sync: error: {expected}\n" in result.stderr
    assert result.stdout == ""


def test_json_args_are_sent_as_given_and_arg_wins() -> None:
    result = json.loads(ok("--json", "call", "typed", "--json-args",
                           '{"text": 5, "count": "x"}', "--arg", "count=3", *TYPED))
    assert result["structuredContent"]["arguments"] == {"text": 5, "count": 3}


@pytest.mark.peer
def test_a_string_argument_of_an_sdk_server_gets_a_string() -> None:
    # The official SDK validates arguments: the number 123 for `text: str` was refused.
    assert ok("call", "echo", "--arg", "text=123", *SDK) == "123\n"
    refused = cli("call", "add", "--arg", "a=1.5", "--arg", "b=2", *SDK)
    assert refused.returncode == 2
    assert "--arg a: tool 'add' takes an integer there, not '1.5'" in refused.stderr


def test_prompt_arguments_are_strings() -> None:
    data = json.loads(ok("--json", "prompt", "greet", "--arg", "who=[42]",
                         "--", *fake_server_command()))
    assert data["messages"][0]["content"]["text"] == "Hello, [42]!"


# -- tools: arguments in the listing, one tool whole -------------------------------------


def test_the_tool_listing_shows_each_tools_arguments() -> None:
    lines = ok("tools", *TYPED).splitlines()
    assert lines[0].split() == ["NAME", "ARGUMENTS", "(*", "required)", "HINTS",
                                "DESCRIPTION"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert rows["echo"].split()[:4] == ["echo", "text*:string", "Echo", "the"]
    assert rows["add"].split()[:4] == ["add", "a*:number", "b*:number", "read-only"]
    assert "seconds*:number progress_interval:number" in rows["slow"]
    assert "code:integer message:string" in rows["crash"]
    # Piped, nothing is cut: every argument (a terminal too narrow for them counts the
    # rest: tests/cli/test_cli_first_hour.py).
    assert re.search(r"typed +text\*:string count:integer ratio:number flag:boolean .* "
                     r"unit:string free:any +The", rows["typed"]), rows["typed"]


def test_a_wide_tool_is_listed_whole_in_a_pipe() -> None:
    rows = {line.split()[0]: line
            for line in ok("tools", "--", *fake_server_command("--display-tools"))
            .splitlines()}
    assert re.search(r"wide +p0\*:string p1:string p2:string .* p99:string +A tool with 100 "
                     r"parameters$", rows["wide"]), rows["wide"]


def test_one_tool_whole() -> None:
    shown = ok("tools", "add", *DEMO)
    assert shown.startswith(
        "Tool:          add\n"
        "Hints:         read-only,idempotent\n"
        "Description:\n"
        "  Add two numbers.\n"
        "Arguments:     (* required)\n"
        "  a*  number\n"
        "  b*  number\n"
        "Input schema:\n"
        "  {\n"
        '    "type": "object",\n'), shown
    schemas = shown[shown.index("Input schema:\n"):]
    input_schema = schemas[len("Input schema:\n"):schemas.index("Output schema:")]
    output_schema = schemas[schemas.index("Output schema:\n") + len("Output schema:\n"):]
    assert json.loads(input_schema)["required"] == ["a", "b"]
    assert json.loads(output_schema) == {"type": "object",
                                         "properties": {"sum": {"type": "number"}},
                                         "required": ["sum"]}
    echo = ok("tools", "echo", *DEMO)
    assert "Arguments:     (* required)\n  text*  string\n" in echo
    assert echo.endswith("Output schema: (none)\n")
    described = ok("tools", "typed", *TYPED)
    assert "  label    string|null\n" in described
    assert "  free     any             no type: anything\n" in described
    data = json.loads(ok("--json", "tools", "add", *DEMO))
    assert data["name"] == "add" and data["outputSchema"]["required"] == ["sum"]


def test_one_unknown_tool_is_a_usage_error_naming_the_tools() -> None:
    result = cli("tools", "nope", *DEMO)
    assert result.returncode == 2
    assert ("mcp-sync-demo has no tool 'nope' (tools: echo, add, count, now, image, slow_report)"
            in result.stderr)


def test_a_tool_shown_whole_has_its_text_escaped() -> None:
    shown = ok("tools", "hostile", "--", *fake_server_command("--display-tools"))
    assert "\x1b" not in shown and "\x9b" not in shown and "\u202e" not in shown
    assert "red \\x1b[31mALERT\\x1b[0m\\x07 \\x9b2J \\u202egnp.exe" in shown
    wide = ok("tools", "wide", "--", *fake_server_command("--display-tools"))
    assert "\x1b" not in wide and "  p0*  string  red \\x1b[31mALERT" in wide


# -- a reader that goes away -------------------------------------------------------------


@pytest.mark.parametrize("json_output", [False, True])
def test_output_closed_early_ends_quietly(json_output: bool) -> None:
    # Far more output than a pipe holds, so that the CLI writes after the reader is gone.
    args = [PY, "-m", "mcp_sync", *(["--json"] if json_output else []), "tools",
            "--", *fake_server_command("--extra-tools", "3000")]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               cwd=str(ROOT))
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        process.stdout.close()
        _, stderr = process.communicate(timeout=T)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=T)
    assert first.split()[0] in (b"NAME", b"[")
    assert b"Traceback" not in stderr and b"BrokenPipeError" not in stderr, stderr.decode()
    assert stderr == b""
    assert process.returncode in (0, 141)  # 141: it wrote after the reader left
    if not json_output:  # line by line: the reader surely left before the last line
        assert process.returncode == 141


# -- environment variables for stdio servers ---------------------------------------------


def server_environment(*args: str, env: Optional[Dict[str, str]] = None,
                       server: Optional[List[str]] = None) -> List[str]:
    """The names of the variables the fake server sees."""
    target = ["--", *fake_server_command()] if server is None else server
    result = json.loads(ok("--json", *args, "call", "environment", *target, env=env))
    names: List[str] = json.loads(result["content"][0]["text"])
    return names


def test_env_and_inherit_env_for_a_stdio_server() -> None:
    parent = {**os.environ, "MCP_SYNC_TEST_SECRET": "s3cret"}
    default = server_environment(env=parent)
    assert "MCP_SYNC_TEST_SECRET" not in default  # what the CLI's shell holds stays there
    assert "PATH" in default
    assert set(default) <= {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG",
                            "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR"}
    given = server_environment("--env", "MCP_SYNC_TEST_A=1", "--env", "MCP_SYNC_TEST_B=x=y",
                               env=parent)
    assert {"MCP_SYNC_TEST_A", "MCP_SYNC_TEST_B"} <= set(given)
    assert "MCP_SYNC_TEST_SECRET" not in given
    inherited = server_environment("--inherit-env", env=parent)
    assert "MCP_SYNC_TEST_SECRET" in inherited


def test_env_values_reach_the_process() -> None:
    # A child that exits with the status a variable names: the exit code carries the value.
    exit_with = ["--", PY, "-c", "import os, sys; sys.exit(int(os.environ['MCP_SYNC_CODE']))"]
    missing = cli("ping", *exit_with, env={**os.environ, "MCP_SYNC_CODE": "5"})
    assert missing.returncode == 3 and "KeyError: 'MCP_SYNC_CODE'" in missing.stderr
    given = cli("--env", "MCP_SYNC_CODE=7", "ping", *exit_with)
    assert given.returncode == 3 and "exited (exit code 7)" in given.stderr
    inherited = cli("--inherit-env", "ping", *exit_with, env={**os.environ, "MCP_SYNC_CODE": "6"})
    assert inherited.returncode == 3 and "exited (exit code 6)" in inherited.stderr


def test_env_adds_to_a_config_entry(tmp_path: Path) -> None:
    command = fake_server_command()
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"fake": {
        "command": command[0], "args": command[1:], "env": {"MCP_SYNC_FROM_FILE": "1"}}}}))
    names = server_environment("--config", str(config), "--env", "MCP_SYNC_FROM_CLI=1",
                               server=[])
    assert {"MCP_SYNC_FROM_FILE", "MCP_SYNC_FROM_CLI"} <= set(names)


@pytest.mark.parametrize(("args", "message"), [
    (["--env", "NO_EQUALS_SIGN", "ping", "--", *fake_server_command()],
     "--env takes KEY=VALUE, got 'NO_EQUALS_SIGN'"),
    (["--env", "A=1", "--url", "http://127.0.0.1:9/mcp", "ping"],
     "--env is for stdio servers only (a command after --), not for a URL"),
    (["--inherit-env", "--env", "A=1", "ping", "--", "http://127.0.0.1:9/mcp"],
     "--env and --inherit-env are for stdio servers only (a command after --), not for a URL"),
])
def test_env_options_that_cannot_apply(args: List[str], message: str) -> None:
    result = cli(*args)
    assert result.returncode == 2, result.stderr
    assert f"mcp-sync: error: {message}\n" in result.stderr


def test_env_for_a_url_entry_of_a_config(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"remote": {"url": "http://127.0.0.1:9/mcp"}}}))
    result = cli("--config", str(config), "--inherit-env", "ping")
    assert result.returncode == 2
    assert (f"server 'remote' of {config} is a URL: --inherit-env is for stdio servers only"
            in result.stderr)


# -- --config targeting ------------------------------------------------------------------


def write_config(path: Path, servers: Dict[str, Any]) -> str:
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return str(path)


def fake_entry(**extra: Any) -> Dict[str, Any]:
    command = fake_server_command()
    return {"command": command[0], "args": command[1:], **extra}


def test_the_one_enabled_server_of_a_config_needs_no_server_option(tmp_path: Path) -> None:
    config = write_config(tmp_path / "mcp.json", {
        "off": {"command": "no-such-mcp-server-command", "disabled": True},
        "fake": fake_entry(),
        "later": {"command": "no-such-mcp-server-command", "enabled": False},
    })
    assert ok("--config", config, "ping").startswith("ok (")


def test_a_choice_lists_the_enabled_servers_only(tmp_path: Path) -> None:
    config = write_config(tmp_path / "mcp.json", {
        "one": fake_entry(), "off": fake_entry(disabled=True), "two": fake_entry()})
    choose = cli("--config", config, "tools")
    assert choose.returncode == 2
    assert (f"mcp-sync: error: {config} has 2 enabled servers; choose one with --server NAME "
            "(one, two)\n") in choose.stderr
    unknown = cli("--config", config, "--server", "nope", "tools")
    assert unknown.returncode == 2
    assert f"no server 'nope' in {config} (enabled servers: one, two)\n" in unknown.stderr
    none = write_config(tmp_path / "none.json", {"off": fake_entry(disabled=True)})
    empty = cli("--config", none, "tools")
    assert empty.returncode == 2 and f"{none} has no enabled server\n" in empty.stderr


def test_a_disabled_server_is_refused_not_connected(tmp_path: Path) -> None:
    config = write_config(tmp_path / "mcp.json", {
        "one": fake_entry(), "off": fake_entry(disabled=True)})
    result = cli("--config", config, "--server", "off", "ping")
    assert result.returncode == 2 and result.stdout == ""
    assert (f"mcp-sync: error: server 'off' is disabled in {config}: enable it there to use "
            "it\n") in result.stderr


# -- plain output that reads well --------------------------------------------------------


def test_info_lines() -> None:
    lines = ok("info", *DEMO).splitlines()
    assert lines[0] == "Server:       mcp-sync-demo 0.1.0"
    assert lines[1] == "Protocol:     2025-11-25 (session era)"
    assert lines[2].startswith("Capabilities: logging, prompts (listChanged), ")


@pytest.mark.peer
def test_a_resource_link_reads_name_then_uri() -> None:
    sdk = ["--", PY, str(SERVERS / "sdk_server.py")]
    assert ok("call", "link", *sdk) == "[resource link greeting: res://greeting]\n"


@pytest.mark.peer
def test_info_puts_a_space_before_the_title() -> None:
    everything = ["--", "node", str(require_everything()), "stdio"]
    first = ok("info", *everything).splitlines()[0]
    assert re.fullmatch(r"Server: {7}mcp-servers/everything \S+ \(Everything Reference "
                        r"Server\)", first), first
