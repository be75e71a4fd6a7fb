"""The command line meets a newcomer halfway (issue 30): a forgotten ``--``, a misspelt
tool and a missing required argument get errors that say what to type; tables are cut
only on a terminal, and only when the line lacks room; an HTML error page is quoted
once; a task's timeout says what it bounds.

Every test runs the real console script (``python -m mcp_sync``) against real servers:
the demo server, the scriptable stdio server, the official SDK's server and Python's own
``http.server`` as the web server that does not speak MCP.
"""

from __future__ import annotations

import errno
import fcntl
import http.server
import json
import os
import pty
import re
import select
import shlex
import struct
import subprocess
import termios
import threading
import time
from typing import Dict, Iterator

import pytest

import mcp_sync
from mcp_sync import HTTPError

from ..conftest import PY, ROOT, SERVERS, fake_server_command
from ..servers.http_server import McpHttpServer, echo_fake

T = 60.0  # bound for one CLI run (a Python start, a server start, a few requests)
DEMO = [PY, "-m", "mcp_sync.demo_server"]
SDK = [PY, str(SERVERS / "manager_sdk_server.py")]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m mcp_sync ARGS`` from the project root, its stdout a pipe."""
    return subprocess.run([PY, "-m", "mcp_sync", *args], capture_output=True, text=True,
                          timeout=T, cwd=str(ROOT), check=False)


def cli_on_terminal(*args: str, columns: int) -> str:
    """What ``python -m mcp_sync ARGS`` writes to a terminal ``columns`` wide (a
    pseudo-terminal; ``COLUMNS`` unset, so the width is the terminal's own)."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {key: value for key, value in os.environ.items() if key not in ("COLUMNS", "LINES")}
    process = subprocess.Popen([PY, "-m", "mcp_sync", *args], stdout=terminal,
                               stderr=subprocess.DEVNULL, cwd=str(ROOT), env=env)
    os.close(terminal)
    output = b""
    deadline = time.monotonic() + T
    try:
        while True:
            left = deadline - time.monotonic()
            assert left > 0, f"no end of output within {T} s: {output[-2000:]!r}"
            readable, _, _ = select.select([controller], [], [], left)
            if not readable:
                continue
            try:
                chunk = os.read(controller, 65536)
            except OSError as exc:  # EIO: every writer of the terminal has closed it
                if exc.errno != errno.EIO:
                    raise
                break
            if not chunk:
                break
            output += chunk
        assert process.wait(T) == 0, output.decode(errors="replace")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(T)
        os.close(controller)
    return output.decode().replace("\r\n", "\n")


def rows(listing: str) -> Dict[str, str]:
    return {line.split()[0]: line for line in listing.splitlines()[1:] if line.strip()}


# -- a forgotten -- ----------------------------------------------------------------------


def test_a_forgotten_double_dash_is_hinted_with_the_line_to_type() -> None:
    run = cli("tools", *DEMO)
    assert run.returncode == 2
    assert "unrecognized arguments: -m mcp_sync.demo_server" in run.stderr
    hinted = f"mcp-sync tools -- {shlex.join(DEMO)}"
    assert f"hint: a stdio server's command goes after --: {hinted}" in run.stderr
    # The line hinted at works.
    fixed = cli(*shlex.split(hinted)[1:])
    assert fixed.returncode == 0, fixed.stderr
    assert "slow_report" in fixed.stdout

    # The tool's name and options stay where they were; the command moves after --.
    call = cli("call", "add", *DEMO, "--arg", "a=1", "--arg", "b=2")
    assert call.returncode == 2
    hinted = f"mcp-sync call add --arg a=1 --arg b=2 -- {shlex.join(DEMO)}"
    assert hinted in call.stderr
    fixed = cli(*shlex.split(hinted)[1:])
    assert (fixed.returncode, fixed.stdout) == (0, '{"sum": 3}\n'), fixed.stderr


def test_no_double_dash_hint_when_a_server_was_given() -> None:
    run = cli("--url", "http://127.0.0.1:9/mcp", "tools", "add", "extra")
    assert run.returncode == 2
    assert "unrecognized arguments: extra" in run.stderr and "hint" not in run.stderr


# -- a misspelt tool ---------------------------------------------------------------------


def test_a_misspelt_tool_gets_the_close_names_the_server_listed() -> None:
    # The demo server refuses it with a JSON-RPC error.
    run = cli("call", "ad", "--arg", "a=1", "--arg", "b=2", "--", *DEMO)
    assert run.returncode == 1
    assert run.stderr.splitlines()[-2:] == [
        "mcp-sync: server error -32602 for tools/call: Unknown tool: ad",
        "mcp-sync: mcp-sync-demo lists no tool 'ad'; did you mean 'add'?"]
    error = json.loads(cli("--json", "call", "ad", "--", *DEMO).stdout)["error"]
    assert error["hint"] == "mcp-sync-demo lists no tool 'ad'; did you mean 'add'?"
    # The official SDK's server answers with an isError result instead.
    sdk = cli("call", "ech", "--arg", "text=hi", "--", *SDK)
    assert sdk.returncode == 1
    assert "Unknown tool: ech" in sdk.stdout
    assert "lists no tool 'ech'; did you mean 'echo'?" in sdk.stderr
    # Nothing close: the names the server listed.
    far = cli("call", "zzz", "--", *DEMO)
    assert far.returncode == 1
    assert ("lists no tool 'zzz' (tools: echo, add, count, now, image, slow_report)"
            in far.stderr)
    # tools NAME says it too.
    shown = cli("tools", "slow_reprot", "--", *DEMO)
    assert shown.returncode == 2
    assert "no tool 'slow_reprot'" in shown.stderr
    assert "did you mean 'slow_report'?" in shown.stderr


# -- a missing required argument ---------------------------------------------------------


def test_a_missing_required_argument_is_a_usage_error_before_sending() -> None:
    run = cli("call", "add", "--arg", "a=2", "--", *DEMO)
    assert run.returncode == 2, run.stderr
    assert ("error: tool 'add' needs argument b (required by its input schema): give it "
            "with --arg b=VALUE") in run.stderr
    assert "missing 1 required positional argument" not in run.stderr + run.stdout
    both = cli("call", "add", "--", *DEMO)
    assert both.returncode == 2
    assert "needs arguments a, b (required by its input schema): give them with --arg " \
        "a=VALUE --arg b=VALUE" in both.stderr
    # --json-args counts too.
    given = cli("call", "add", "--json-args", '{"b": 3}', "--arg", "a=2", "--", *DEMO)
    assert (given.returncode, given.stdout) == (0, '{"sum": 5}\n'), given.stderr


def test_nothing_is_sent_without_a_required_argument() -> None:
    with McpHttpServer(echo_fake("recorder")) as server:
        run = cli("--url", server.url, "call", "echo", "--arg", "other=1")
        assert run.returncode == 2 and "needs argument text" in run.stderr
        assert server.matching(lambda r: r.rpc_method == "tools/call") == []
        sent = cli("--url", server.url, "call", "echo", "--arg", "text=now")
        assert (sent.returncode, sent.stdout) == (0, "now\n"), sent.stderr
        assert len(server.matching(lambda r: r.rpc_method == "tools/call")) == 1


# -- tables: cut on a terminal only, and only when the line lacks room -------------------


def test_piped_output_is_never_cut() -> None:
    piped = cli("tools", "--", *fake_server_command("--typed-tools", "--display-tools"))
    assert piped.returncode == 0, piped.stderr
    listing = rows(piped.stdout)
    assert "..." not in piped.stdout and "more" not in piped.stdout
    assert re.search(r"text\*:string count:integer ratio:number flag:boolean nothing:null "
                     r"items:array options:object label:string\|null size:integer\|string "
                     r"unit:string free:any +The arguments it got, and the JSON type of each\.$",
                     listing["typed"]), listing["typed"]
    assert "p99:string" in listing["wide"]
    demo = rows(cli("tools", "--", *DEMO).stdout)
    assert demo["slow_report"].endswith(
        "Write a short report on `topic`, taking `seconds` (0 to 600). Runs as a task: "
        "start it, then collect the report.")


def test_a_terminal_shows_every_argument_that_fits() -> None:
    command = ["tools", "--", *fake_server_command("--typed-tools", "--display-tools")]
    wide = rows(cli_on_terminal(*command, columns=250))
    # Every argument of typed fits (the wide tool's cut ones set the column's width).
    assert re.search(r"size:integer\|string unit:string free:any +The arguments it",
                     wide["typed"]), wide["typed"]
    assert len(wide["typed"]) <= 250
    # A line that cannot fit: the arguments are counted, the description cut.
    assert "+" in wide["wide"] and "more" in wide["wide"]
    narrow = cli_on_terminal(*command, columns=100)
    for line in narrow.splitlines():
        assert len(line) <= 100 or "more" in line, line
    assert rows(narrow)["typed"].split()[1:5] == ["text*:string", "count:integer",
                                                  "ratio:number", "+8"]
    assert rows(narrow)["typed"].rstrip().endswith("...")


def test_the_demo_table_keeps_long_names_apart() -> None:
    run = cli("demo")
    assert run.returncode == 0, run.stderr
    tools = run.stdout.split("Tools:\n", 1)[1].split("Calling", 1)[0].splitlines()
    assert any(line.startswith("  slow_report  Write a short report on `topic`")
               for line in tools), tools
    starts = {line.index(line.split()[1]) for line in tools}
    assert starts == {len("  slow_report  ")}  # every description in one column


# -- an HTML error page, quoted once --------------------------------------------------------


@pytest.fixture
def plain_web_server() -> Iterator[str]:
    """Python's own http.server on 127.0.0.1: it answers a POST with 501 and its HTML
    error page (title and heading "Error response")."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             http.server.BaseHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              name="test-plain-web-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(T)


def test_an_http_error_page_is_quoted_once(plain_web_server: str) -> None:
    with pytest.raises(HTTPError) as caught:
        mcp_sync.connect(plain_web_server)
    message = str(caught.value)
    assert caught.value.status == 501
    assert message.count("Error response") == 1, message
    assert "Error response Error code: 501 Message: Unsupported method ('POST')" in message
    run = cli("--url", plain_web_server, "tools")
    assert run.returncode == 3
    assert run.stderr.count("Error response") == 1, run.stderr


def test_a_page_with_only_a_title_keeps_it() -> None:
    assert mcp_sync.exceptions.body_excerpt(
        "<html><head><title>Maintenance</title></head><body> </body></html>") == "Maintenance"
    assert mcp_sync.exceptions.body_excerpt(
        "<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1>"
        "</body></html>") == "502 Bad Gateway"
