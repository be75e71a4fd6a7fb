"""The mcp-sync command line, run as a subprocess: every command in both output modes, exit
codes, server targeting, images, and Ctrl-C on a slow call."""

from __future__ import annotations

import base64
import importlib.metadata
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

from mcp_sync.cli._output import _MediaSaver, safe_filename

from .._procs import stop_process
from ..conftest import PY, ROOT, SERVERS, fake_server_command, require_everything
from ..helpers import interrupt_cli

T = 60.0  # bound for one CLI run (a Python start, a server start, a few requests)
SDK = [PY, str(SERVERS / "manager_sdk_server.py")]
FAKE = ["--", *fake_server_command()]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def cli(*args: str, timeout: float = T) -> subprocess.CompletedProcess[str]:
    """``python -m mcp_sync ARGS`` from the project root; never raises on exit codes."""
    return subprocess.run([PY, "-m", "mcp_sync", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=str(ROOT), check=False)


def ok(*args: str) -> str:
    result = cli(*args)
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr)
    return result.stdout


def ok_json(*args: str) -> Any:
    return json.loads(ok("--json", *args))


def write_config(path: Path, servers: Dict[str, Any]) -> str:
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return str(path)


def fake_entry(*args: str) -> Dict[str, Any]:
    command = fake_server_command(*args)
    return {"command": command[0], "args": command[1:]}


# -- one command each, both output modes -------------------------------------------------


def test_demo_in_both_modes() -> None:
    human = cli("demo")
    assert human.returncode == 0, human.stderr
    assert "Connected to mcp-sync-demo" in human.stdout
    assert "Result: counted to 5" in human.stdout
    assert "counted to 3" in human.stderr  # the progress bar
    data = ok_json("demo")
    assert data["server"]["name"] == "mcp-sync-demo"
    assert "count" in [tool["name"] for tool in data["tools"]]
    assert data["result"]["content"][0]["text"] == "counted to 5"


def test_the_console_script_is_declared_and_runs() -> None:
    # What `pip install .` made of pyproject.toml's [project.scripts].
    scripts = [(entry.name, entry.value)
               for entry in importlib.metadata.distribution("mcp-sync-client").entry_points
               if entry.group == "console_scripts"]
    assert scripts == [("mcp-sync", "mcp_sync.cli:main")]
    script = Path(sys.executable).parent / "mcp-sync"
    assert script.exists(), "the mcp-sync console script is missing: run `pip install .`"
    result = subprocess.run([str(script), "--json", "demo"], capture_output=True, text=True,
                            timeout=T, check=False)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["result"]["content"][0]["text"] == "counted to 5"


def test_tools() -> None:
    human = ok("tools", *FAKE)
    assert human.splitlines()[0].split() == ["NAME", "ARGUMENTS", "(*", "required)", "HINTS",
                                             "DESCRIPTION"]
    assert any(line.split()[:5] == ["add", "a*:number", "b*:number", "read-only", "Add"]
               for line in human.splitlines())
    assert any(line.startswith("echo ") and "Echo the text." in line
               for line in human.splitlines())
    tools = ok_json("tools", *FAKE)
    assert {"echo", "add", "slow"} <= {tool["name"] for tool in tools}
    add = next(tool for tool in tools if tool["name"] == "add")
    assert add["annotations"] == {"readOnlyHint": True}
    assert add["inputSchema"]["required"] == ["a", "b"]


def test_options_go_before_or_after_the_command() -> None:
    before = json.loads(ok("--json", "--timeout", "20", "tools", *FAKE))
    after = json.loads(ok("tools", "--json", "--timeout", "20", *FAKE))
    assert before == after


def test_call() -> None:
    assert ok("call", "echo", "--arg", "text=hello there", *FAKE) == "hello there\n"
    # --arg values are JSON when they parse, strings otherwise; --arg beats --json-args
    assert ok("call", "add", "--json-args", '{"a": 1, "b": 100}', "--arg", "b=2",
              *FAKE).strip() == '{"sum": 3}'
    data = ok_json("call", "add", "--arg", "a=1.5", "--arg", "b=2", *FAKE)
    assert data["structuredContent"] == {"sum": 3.5} and data["isError"] is False


@pytest.mark.peer
def test_call_shows_progress_on_stderr() -> None:
    result = cli("call", "slow", "--json-args", '{"seconds": 0.5, "progress_interval": 0.1}',
                 "--progress", "always", *FAKE)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "slept 0.5\n"
    assert "[1] step 1" in result.stderr and "[3] step 3" in result.stderr
    quiet = cli("call", "slow", "--json-args", '{"seconds": 0.3, "progress_interval": 0.1}',
                *FAKE)  # auto: stderr is not a terminal here
    assert quiet.returncode == 0 and "step" not in quiet.stderr
    sdk = cli("--progress", "always", "call", "slow", "--arg", "seconds=0.3", "--", *SDK)
    assert sdk.returncode == 0, sdk.stderr
    assert "[######--------------] 1/3 step 1/3" in sdk.stderr
    assert "[####################] 3/3 step 3/3" in sdk.stderr


def test_a_tool_error_exits_1_in_both_modes() -> None:
    human = cli("call", "fail", "--arg", "message=it broke", *FAKE)
    assert human.returncode == 1
    assert human.stdout == "it broke\n"
    assert "returned an error" in human.stderr
    machine = cli("--json", "call", "fail", "--arg", "message=it broke", *FAKE)
    assert machine.returncode == 1
    assert json.loads(machine.stdout)["isError"] is True


def test_a_timeout_exits_4_in_both_modes() -> None:
    human = cli("--timeout", "0.5", "call", "slow", "--arg", "seconds=30", *FAKE)
    assert human.returncode == 4, human.stderr
    assert "timed out after 0.5 s" in human.stderr and human.stdout == ""
    machine = cli("--json", "--timeout", "0.5", "call", "slow", "--arg", "seconds=30", *FAKE)
    assert machine.returncode == 4
    error = json.loads(machine.stdout)["error"]
    assert error["type"] == "RequestTimeout" and error["exitCode"] == 4


def test_a_timed_out_call_to_a_stuck_server_exits_about_a_second_later() -> None:
    """The server ignores stdin's end and SIGTERM while stuck in the call the command gave
    up: the command stops it with the CLI's short close grace (0.5 s a step), not the
    library's 2 s a step."""
    started = time.monotonic()
    result = cli("--timeout", "1", "call", "slow", "--arg", "seconds=30", "--",
                 *fake_server_command("--stubborn"))
    elapsed = time.monotonic() - started
    assert result.returncode == 4, result.stderr
    assert "timed out after 1.0 s" in result.stderr
    # 1 s of timeout, then at most 0.5 s after stdin's end and 0.5 s after SIGTERM, plus
    # the interpreter's start (well under the 4 s the library's default grace takes).
    assert elapsed < 4.0, elapsed


def test_connection_failures_exit_3_in_both_modes() -> None:
    missing = cli("tools", "--", "no-such-mcp-server-command")
    assert missing.returncode == 3
    assert "command not found: 'no-such-mcp-server-command'" in missing.stderr
    dying = cli("--json", "ping", "--", *fake_server_command("--exit-at-start", "7"))
    assert dying.returncode == 3
    error = json.loads(dying.stdout)["error"]
    assert error["type"] == "ConnectionClosed" and "exit code 7" in error["message"]


def test_a_server_dying_at_start_shows_its_exit_code_and_stderr_every_time() -> None:
    # A fresh process each run. The shell dies within a millisecond, so the first write
    # to it meets a broken pipe, often before any thread has seen the exit; the Python
    # one dies while the client starts, racing the write.
    for server, name in ((["sh", "-c", "echo 'missing API key' >&2; exit 2"], "sh"),
                         ([PY, "-c", "import sys; print('missing API key', file=sys.stderr);"
                                     " sys.exit(2)"], "python")):
        for _ in range(5):
            result = cli("ping", "--", *server)
            assert result.returncode == 3, result.stderr
            assert result.stderr == (f"mcp-sync: MCP server {name} exited (exit code 2)\n"
                                     "  last stderr lines:\n    missing API key\n")


def test_the_server_refusing_the_request_exits_1_with_its_message() -> None:
    # A JSON-RPC error answering the command's request: the server refused it, the
    # connection is fine.
    human = cli("call", "no_such_tool", "--", PY, "-m", "mcp_sync.demo_server")
    assert human.returncode == 1, human.stderr
    assert "Unknown tool: no_such_tool" in human.stderr and human.stdout == ""
    machine = cli("--json", "call", "no_such_tool", *FAKE)
    assert machine.returncode == 1, machine.stderr
    error = json.loads(machine.stdout)["error"]
    assert error["type"] == "ServerError" and error["exitCode"] == 1
    assert "Unknown tool: no_such_tool" in error["message"]
    missing = cli("read", "test://nothing", *FAKE)
    assert missing.returncode == 1 and "Resource not found" in missing.stderr
    # A refused handshake is still a connection failure.
    refuse_all = ("import json, sys\n"
                  "for line in sys.stdin:\n"
                  "    request = json.loads(line)\n"
                  "    if 'id' in request:\n"
                  "        print(json.dumps({'jsonrpc': '2.0', 'id': request['id'], 'error':"
                  " {'code': -32603, 'message': 'not today'}}), flush=True)\n")
    refused = cli("--json", "ping", "--", PY, "-c", refuse_all)
    assert refused.returncode == 3, refused.stderr
    error = json.loads(refused.stdout)["error"]
    assert error["type"] == "ServerError" and "initialize: not today" in error["message"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["tools"], "give a server"),
        (["bogus-command"], "invalid choice"),
        ([], "required"),
        (["--server", "x", "tools", *FAKE], "--server needs --config"),
        (["--url", "http://127.0.0.1:9/mcp", "tools", *FAKE], "give one server"),
        (["call", "echo", "--arg", "no-equals-sign", *FAKE], "--arg takes KEY=VALUE"),
        (["call", "echo", "--json-args", "{not json", *FAKE], "not valid JSON"),
        (["call", "echo", "--json-args", "[1, 2]", *FAKE], "must be a JSON object"),
        (["--timeout", "soon", "tools", *FAKE], "invalid float value"),
        (["servers", *FAKE], "servers takes only --config FILE"),
        (["demo", *FAKE], "demo runs the embedded server"),
    ],
)
def test_usage_errors_exit_2(args: List[str], message: str) -> None:
    result = cli(*args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert message in result.stderr
    assert "usage: mcp-sync" in result.stderr


def test_resources_and_read() -> None:
    human = ok("resources", *FAKE)
    lines = human.splitlines()
    assert lines[0].split() == ["URI", "NAME", "MIME", "TYPE", "DESCRIPTION"]
    assert any(line.split()[:3] == ["test://hello", "hello", "text/plain"] for line in lines)
    data = ok_json("resources", *FAKE)
    assert {r["uri"] for r in data["resources"]} == {"test://hello", "test://blob"}
    assert data["resourceTemplates"] == []

    assert ok("read", "test://hello", *FAKE) == "hello world\n"
    assert ok("read", "test://blob", *FAKE) == \
        "[blob test://blob: application/octet-stream, 3 bytes]\n"
    read = ok_json("read", "test://blob", *FAKE)
    assert read["contents"][0] == {"uri": "test://blob",
                                   "mimeType": "application/octet-stream", "blob": "AAEC"}


@pytest.mark.peer
def test_resource_templates_of_server_everything() -> None:
    everything = ["--", "node", str(require_everything()), "stdio"]
    human = ok("resources", *everything)
    assert "URI TEMPLATE" in human
    data = ok_json("resources", *everything)
    assert data["resources"] and data["resourceTemplates"]


@pytest.mark.peer
def test_prompts_and_prompt() -> None:
    human = ok("prompts", *FAKE)
    assert human.splitlines()[0].split()[:2] == ["NAME", "ARGUMENTS"]
    assert any(line.split()[:3] == ["greet", "who*", "Greet"] for line in human.splitlines())
    prompts = ok_json("prompts", *FAKE)
    assert prompts[0]["name"] == "greet" and prompts[0]["arguments"][0]["required"] is True

    assert ok("prompt", "greet", "--arg", "who=Ann", *FAKE) == "[user] Hello, Ann!\n"
    data = ok_json("prompt", "greet", "--arg", "who=42", *FAKE)  # prompt args stay strings
    assert data["messages"][0]["content"]["text"] == "Hello, 42!"
    sdk = ok("prompt", "haiku", "--arg", "topic=locks", "--", *SDK)
    assert "Write a haiku about locks." in sdk


def test_a_server_without_resources_lists_none() -> None:
    empty = cli("resources", "--", *fake_server_command("--no-resources"))
    assert empty.returncode == 0 and empty.stdout == "(no resources)\n"
    assert ok_json("resources", "--", *fake_server_command("--no-resources")) == {
        "resources": [], "resourceTemplates": []}


def test_ping() -> None:
    human = ok("ping", *FAKE)
    assert human.startswith("ok (") and human.endswith(" ms)\n")
    data = ok_json("ping", *FAKE)
    assert data["ok"] is True and data["milliseconds"] >= 0


@pytest.mark.peer
def test_info_shows_the_era() -> None:
    human = ok("info", *FAKE)
    assert "Server:       fake 1.2.3" in human
    assert "Protocol:     2025-11-25 (session era)" in human
    assert "tools (listChanged)" in human and "Test server." in human
    data = ok_json("info", *FAKE)
    assert data["server"] == {"name": "fake", "version": "1.2.3"}
    assert data["protocolVersion"] == "2025-11-25" and data["era"] == "session"
    assert data["capabilities"]["tools"] == {"listChanged": True}
    assert data["instructions"] == "Test server."
    sdk = ok_json("info", "--protocol-version", "2026-07-28", "--", *SDK)
    assert sdk["era"] == "stateless" and sdk["protocolVersion"] == "2026-07-28"
    assert sdk["server"]["name"] == "manager-sdk-peer"
    assert "2026-07-28 (stateless era)" in ok("info", "--protocol-version", "2026-07-28", "--",
                                              *SDK)
    assert "2025-06-18 (session era)" in ok("info", "--protocol-version", "2025-06-18", "--",
                                            *SDK)


# -- targeting ---------------------------------------------------------------------------


@pytest.mark.peer
def test_config_and_server_targeting(tmp_path: Path) -> None:
    one = write_config(tmp_path / "one.json", {"fake": fake_entry()})
    assert "echo" in ok("--config", one, "tools")  # the only server: no --server needed
    many = write_config(tmp_path / "many.json", {
        "fake": fake_entry(),
        "sdk": {"command": SDK[0], "args": SDK[1:]},
        "off": {"command": "nothing", "disabled": True},
    })
    assert ok("--config", many, "--server", "sdk", "call", "add", "--arg", "a=2",
              "--arg", "b=2") == "4\n"
    info = json.loads(ok("--config", many, "--server", "fake", "--json", "info"))
    assert info["server"]["name"] == "fake"
    choose = cli("--config", many, "tools")
    assert choose.returncode == 2 and "choose one with --server NAME" in choose.stderr
    unknown = cli("--config", many, "--server", "nope", "tools")
    assert unknown.returncode == 2 and "no server 'nope'" in unknown.stderr
    bad = write_config(tmp_path / "bad.json", {"x": {"command": "y", "type": "pigeon"}})
    invalid = cli("--config", bad, "--server", "x", "tools")
    assert invalid.returncode == 2 and "server 'x': key 'type'" in invalid.stderr
    missing = cli("--config", str(tmp_path / "missing.json"), "tools")
    assert missing.returncode == 2 and "cannot read" in missing.stderr


@pytest.mark.peer
def test_servers_shows_every_configured_server(tmp_path: Path) -> None:
    good = {
        "fake": fake_entry(),
        "sdk": {"command": SDK[0], "args": SDK[1:]},
        "off": {"command": "nothing", "disabled": True},
    }
    healthy = write_config(tmp_path / "healthy.json", good)
    fake_tools = len(ok_json("tools", *FAKE))  # the count the fake server lists today
    human = ok("--config", healthy, "servers")
    rows = {line.split()[0]: line.split() for line in human.splitlines()[1:]}
    assert human.splitlines()[0].split() == ["NAME", "STATE", "TRANSPORT", "TOOLS", "SERVER",
                                             "SOURCE", "FILTERS", "ERROR"]
    assert rows["fake"][1:5] == ["connected", "stdio", str(fake_tools), "fake"]
    assert rows["sdk"][1] == "connected" and "manager-sdk-peer" in rows["sdk"]
    assert rows["off"][1:3] == ["disabled", "stdio"]

    broken = write_config(tmp_path / "broken.json", {
        **good, "crashy": fake_entry("--exit-at-start", "5"),
        "missing": {"command": "no-such-mcp-server-command"}})
    result = cli("--json", "--config", broken, "servers")
    assert result.returncode == 3  # not every enabled server connected
    statuses = {status["name"]: status for status in json.loads(result.stdout)}
    assert statuses["fake"]["state"] == "connected" and statuses["fake"]["tools"] == fake_tools
    assert statuses["sdk"]["serverName"] == "manager-sdk-peer"
    assert statuses["off"]["state"] == "disabled"
    assert statuses["off"]["source"] == broken and statuses["off"]["command"] == "nothing"
    assert statuses["crashy"]["state"] == "failed"
    assert "exit code 5" in statuses["crashy"]["error"]
    assert statuses["missing"]["state"] == "failed"
    assert "no-such-mcp-server-command" in statuses["missing"]["error"]


@pytest.fixture
def http_server() -> Iterator[str]:
    """tests/servers/sdk_server.py over Streamable HTTP on a free port; yields the URL."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [PY, str(SERVERS / "sdk_server.py"), "--transport", "streamable-http", "--port",
         str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    listening = threading.Event()

    def watch() -> None:
        assert server.stderr is not None
        for line in server.stderr:
            if "Uvicorn running on" in line:
                listening.set()

    watcher = threading.Thread(target=watch, name="test-http-server-stderr", daemon=True)
    watcher.start()
    try:
        assert listening.wait(T), "the SDK server did not start listening"
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(server)
        watcher.join(10)
        assert server.stderr is not None
        server.stderr.close()


@pytest.mark.peer
def test_a_url_target(http_server: str) -> None:
    assert "add" in ok("--url", http_server, "tools")
    assert ok("--url", http_server, "call", "add", "--arg", "a=20", "--arg", "b=22") == "42\n"
    assert ok_json("--url", http_server, "info")["server"]["name"] == "sdk-peer"
    assert ok("ping", "--", http_server).startswith("ok (")  # a URL after -- works too


# -- images ------------------------------------------------------------------------------


@pytest.mark.peer
def test_images_are_saved_to_files_not_dumped(tmp_path: Path) -> None:
    printed = ok("call", "tiny_image", "--", *SDK)
    assert printed.startswith("[image: image/png, ") and "--save-images DIR" in printed
    assert "iVBOR" not in printed  # no base64 in human output

    images = tmp_path / "images"
    saved = ok("call", "tiny_image", "--save-images", str(images), "--", *SDK)
    first = images / "tiny_image-1.png"
    assert saved.strip() == f"[image saved to {first} (image/png, {first.stat().st_size} bytes)]"
    assert first.read_bytes().startswith(PNG_MAGIC)
    data = ok_json("call", "tiny_image", "--save-images", str(images), "--", *SDK)
    block = data["content"][0]
    assert block["type"] == "image" and "data" not in block
    assert block["file"] == str(images / "tiny_image-1-1.png")  # never overwrites
    assert Path(block["file"]).read_bytes() == first.read_bytes()
    assert sorted(p.name for p in images.iterdir()) == ["tiny_image-1-1.png",
                                                        "tiny_image-1.png"]
    raw = ok_json("call", "tiny_image", "--", *SDK)  # JSON without the option keeps the data
    assert base64.b64decode(raw["content"][0]["data"]).startswith(PNG_MAGIC)

    # an image resource is saved under its URI's last segment
    pictures = tmp_path / "pictures"
    read = ok("read", "res://pictures/tiny.png", "--save-images", str(pictures), "--", *SDK)
    assert read.startswith(f"[image saved to {pictures / 'tiny.png'} (image/png, ")
    assert (pictures / "tiny.png").read_bytes() == first.read_bytes()
    assert ok("read", "res://pictures/tiny.png", "--", *SDK).startswith(
        "[image: image/png, ")


def test_image_file_names_are_sanitised_and_stay_inside_the_directory(tmp_path: Path) -> None:
    assert safe_filename("../../etc/passwd", "image/png") == "etc_passwd.png"
    assert safe_filename("..", "image/jpeg") == "media.jpg"
    assert safe_filename(".hidden", "image/gif") == "hidden.gif"
    assert safe_filename("a/b\\c:d*e", "image/webp") == "a_b_c_d_e.webp"
    assert safe_filename("x", "IMAGE/BMP; q=1") == "x.bmp"
    assert safe_filename("\x1b[31mred\x00", "image/png") == "31mred.png"
    assert len(safe_filename("y" * 500, "image/png")) == 84
    # Windows device names, whatever follows the first dot, get a prefix.
    assert safe_filename("CON", "image/png") == "_CON.png"
    assert safe_filename("lpt1.x", "image/gif") == "_lpt1.x.gif"
    assert safe_filename("CONSOLE", "image/png") == "CONSOLE.png"
    # Only raster images are written: the server never picks an extension.
    for refused in ("image/svg+xml", "image/../../evil", None, "audio/wav", "text/html",
                    "application/x-sh", "image/png\x00/x.sh", "image/png/x"):
        with pytest.raises(ValueError, match="only PNG, JPEG, GIF, WebP and BMP"):
            safe_filename("x", refused)
    target = tmp_path / "out"
    saver = _MediaSaver(str(target))
    png = base64.b64encode(PNG_MAGIC).decode()
    paths = [saver.save(png, "image/png", stem) for stem in
             ("../escape", "/etc/passwd", "..", "../escape")]
    for path in paths:
        assert Path(path).parent == target.resolve()
        assert Path(path).read_bytes() == PNG_MAGIC
    assert [Path(p).name for p in paths] == ["escape.png", "etc_passwd.png", "media.png",
                                             "escape-1.png"]
    assert sorted(os.listdir(tmp_path)) == ["out"]
    with pytest.raises(ValueError, match="base64"):
        saver.save("not base64!", "image/png", "bad")
    with pytest.raises(ValueError, match="only PNG"):
        saver.save(png, "text/html", "page")
    assert sorted(os.listdir(target)) == ["escape-1.png", "escape.png", "etc_passwd.png",
                                          "media.png"]


# -- Ctrl-C ------------------------------------------------------------------------------


PROXY = """
import subprocess, sys
log_path, *command = sys.argv[1:]
child = subprocess.Popen(command, stdin=subprocess.PIPE)
with open(log_path, "a", encoding="utf-8") as log:
    for line in sys.stdin.buffer:
        log.write(line.decode("utf-8", "replace"))
        log.flush()
        try:
            child.stdin.write(line)
            child.stdin.flush()
        except BrokenPipeError:
            break
try:
    child.stdin.close()
except BrokenPipeError:
    pass
sys.exit(child.wait())
"""


def test_ctrl_c_cancels_a_slow_call_on_the_wire(tmp_path: Path) -> None:
    # The server runs behind a tiny proxy that logs every line the CLI writes to it.
    proxy = tmp_path / "proxy.py"
    proxy.write_text(PROXY, encoding="utf-8")
    wire = tmp_path / "wire.jsonl"
    code, output, stderr = interrupt_cli(
        ["call", "slow", "--arg", "seconds=60", "--arg", "progress_interval=0.1",
         "--progress", "always", "--", PY, str(proxy), str(wire), *fake_server_command()],
        lambda line: "step" in line, what="progress", timeout=T)
    assert code == 130
    assert output == ""
    assert "interrupted; the call was cancelled" in stderr
    sent = [json.loads(line) for line in wire.read_text(encoding="utf-8").splitlines()]
    call = next(m for m in sent if m.get("method") == "tools/call")
    cancels = [m for m in sent if m.get("method") == "notifications/cancelled"]
    assert [c["params"]["requestId"] for c in cancels] == [call["id"]]
    assert "interrupted" in cancels[0]["params"]["reason"]
