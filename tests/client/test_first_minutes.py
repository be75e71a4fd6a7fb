"""The first five minutes: mistakes a new user makes get errors that point at the fix, and
results fit in a line of code.

Against real servers: the threaded HTTP server (``tests/servers/http_server.py``, which
answers paths other than ``/mcp`` with an HTML 404 page as web frameworks do), the demo
server and the scriptable stdio server as subprocesses, and closed ports.
"""

from __future__ import annotations

import json
import pickle
import re
import socket
import subprocess
import threading
import time
from typing import Any, Dict, Iterator, List

import pytest

import mcp_sync
from mcp_sync import (
    Client,
    HTTPError,
    Manager,
    ProtocolError,
    RequestTimeout,
    StdioTransport,
    ToolError,
    TransportError,
    types,
)
from mcp_sync.testing import FakeServer, ToolContext

from ..conftest import PY, ROOT, fake_server_command
from ..faults.workloads import HttpServerProcess
from ..servers.http_server import McpHttpServer

WAIT = 10.0  # the bound for anything a test waits on; nothing should come near it
DEMO = [PY, "-m", "mcp_sync.demo_server"]
SUM_SCHEMA = {"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]}


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def make_fake() -> FakeServer:
    fake = FakeServer("first-minutes")

    @fake.tool()
    def echo(text: str) -> str:
        return text

    @fake.tool(output_schema=SUM_SCHEMA)
    def add(a: float, b: float) -> Dict[str, Any]:
        return {"sum": a + b}

    @fake.tool(output_schema=SUM_SCHEMA)
    def add_as_text(a: float, b: float) -> Dict[str, Any]:
        """Declares an outputSchema but sends the result only as JSON text."""
        return {"content": [{"type": "text", "text": json.dumps({"sum": a + b})}]}

    @fake.tool(output_schema=SUM_SCHEMA)
    def prose() -> Dict[str, Any]:
        """Declares an outputSchema, sends neither structured content nor JSON."""
        return {"content": [{"type": "text", "text": "the sum is 3"}]}

    @fake.tool()
    def json_text() -> Dict[str, Any]:
        """Text that happens to be JSON, from a tool that promised no structure."""
        return {"content": [{"type": "text", "text": '{"sum": 1}'}]}

    @fake.tool()
    def fail(message: str) -> str:
        raise RuntimeError(message)

    @fake.tool()
    def slow(seconds: float, ctx: ToolContext) -> str:
        ctx.cancelled.wait(min(seconds, WAIT))
        return "done"

    return fake


@pytest.fixture
def server() -> Iterator[McpHttpServer]:
    with McpHttpServer(make_fake()) as running:
        yield running


def root_url(server: McpHttpServer) -> str:
    return f"http://127.0.0.1:{server.port}/"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "mcp_sync", *args], capture_output=True, text=True,
                          timeout=60, cwd=str(ROOT), check=False)


# -- 1. a URL without the endpoint path ----------------------------------------------------


def test_a_url_without_the_mcp_path_says_404_and_suggests_the_endpoint(
        server: McpHttpServer) -> None:
    url = root_url(server)
    with pytest.raises(HTTPError) as caught:
        mcp_sync.connect(url)
    error = caught.value
    message = str(error)
    first_line = message.splitlines()[0]
    assert error.status == 404
    assert first_line.startswith(f"connect: HTTP 404 Not Found from POST {url}: ")
    # The hint names the usual paths and the URL to try.
    assert f"try http://127.0.0.1:{server.port}/mcp" in message and "/sse" in message
    # Not the legacy fallback's failure, and no HTML: a short, cleaned excerpt of the page.
    assert "SSE stream" not in message and "GET" not in message
    assert "<" not in message and "Not Found The requested URL" in message
    assert len(message) < 600
    # The fallback was tried, and is kept as the cause.
    assert isinstance(error.__cause__, HTTPError) and error.__cause__.status == 404
    # The suggested URL works.
    with mcp_sync.connect(f"http://127.0.0.1:{server.port}/mcp") as client:
        assert client.call_tool("echo", {"text": "found"}).text == "found"


def test_an_error_page_never_floods_the_message(server: McpHttpServer) -> None:
    page = ("<html><head><style>body { color: red }</style><script>alert(1)</script></head>"
            "<body><h1>Gateway says no</h1>\x1b[31m" + "x" * 100_000 + "</body></html>")

    def hook(handler: Any, message: Any) -> bool:
        handler.send_status(404, page.encode(), content_type="text/html")
        return True

    server.post_hook = hook
    with pytest.raises(HTTPError) as caught:
        mcp_sync.connect(server.url)
    message = str(caught.value)
    assert "Gateway says no" in message and "characters in all" in message
    assert len(message) < 700
    assert "\x1b" not in message and "alert" not in message and "color" not in message
    assert "/sse" in message  # a 404 at /mcp: the hint asks whether that is the endpoint


def test_a_legacy_server_still_gets_its_fallback() -> None:
    """The 404 handling keeps the legacy fallback: an SSE-only URL still connects."""
    from ..servers.legacy_sse_server import LegacySseServer

    with LegacySseServer(make_fake()) as legacy, mcp_sync.connect(legacy.url) as client:
        assert client.call_tool("echo", {"text": "legacy"}).text == "legacy"


# -- 2. a URL without its scheme --------------------------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_loopback_url_without_scheme_is_http(server: McpHttpServer, host: str) -> None:
    with mcp_sync.connect(f"{host}:{server.port}/mcp") as client:
        assert client.call_tool("echo", {"text": "no scheme"}).text == "no scheme"
        assert client.transport.target == f"http://{host}:{server.port}/mcp"


def test_an_ipv6_loopback_url_without_scheme_is_http_too() -> None:
    port = free_port()
    with pytest.raises(TransportError) as caught:  # nothing listens: but it was tried as HTTP
        mcp_sync.connect(f"[::1]:{port}/mcp")
    assert f"cannot reach http://[::1]:{port}/mcp" in str(caught.value)


@pytest.mark.parametrize("target", ["example.com:8000/mcp", "mcp.example.com:443",
                                    "10.1.2.3:8000/mcp"])
def test_another_host_without_scheme_names_the_missing_scheme(target: str) -> None:
    with pytest.raises(ValueError) as caught:
        mcp_sync.connect(target)
    assert f"'https://{target}'" in str(caught.value) and "scheme" in str(caught.value)
    assert not isinstance(caught.value, mcp_sync.MCPError)


def test_a_config_entry_url_without_scheme(server: McpHttpServer) -> None:
    with mcp_sync.connect({"url": f"localhost:{server.port}/mcp"}) as client:
        assert client.call_tool("echo", {"text": "entry"}).text == "entry"
    with pytest.raises(ValueError, match="scheme"):
        mcp_sync.connect({"url": "example.com/mcp"})


def test_the_cli_url_without_scheme(server: McpHttpServer) -> None:
    listed = cli("--url", f"127.0.0.1:{server.port}/mcp", "tools")
    assert listed.returncode == 0, listed.stderr
    assert "echo" in listed.stdout
    refused = cli("--url", "example.com/mcp", "tools")
    assert refused.returncode == 2
    assert "https://example.com/mcp" in refused.stderr and "scheme" in refused.stderr
    assert "Traceback" not in refused.stderr


# -- 3. an unreachable server -------------------------------------------------------------------


@pytest.mark.parametrize("transport", [None, "sse"])
def test_a_refused_connection_says_so_in_words(transport: Any) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with pytest.raises(TransportError) as caught:
        mcp_sync.connect(url, transport=transport)
    assert str(caught.value) == f"connect: cannot reach {url}: connection refused"
    if transport is None:
        assert caught.value.request_sent is False
    assert caught.value.__cause__ is not None  # the requests error, for debugging


def test_a_server_gone_mid_session_names_the_call() -> None:
    with HttpServerProcess() as server:
        client = mcp_sync.connect(server.url)
        try:
            assert client.call_tool("echo", {"text": "here"}).text == "here"
            server.process.kill()  # every socket of the server closes with it
            server.process.wait(WAIT)
            with pytest.raises(TransportError) as caught:
                client.call_tool("echo", {"text": "anyone?"}, timeout=5)
        finally:
            client.close()
    message = str(caught.value)
    assert message.startswith(f"tools/call: cannot reach {server.url}: "), message
    assert "Pool" not in message and "server/discover" not in message and "(host=" not in message


# -- 4. the wrong kind of argument ------------------------------------------------------------


@pytest.mark.parametrize("target", ["http://127.0.0.1:8000/mcp", ["python", "server.py"],
                                    {"command": "python"}])
def test_client_given_a_target_points_at_connect(target: Any) -> None:
    with pytest.raises(TypeError) as caught:
        Client(target)
    assert "mcp_sync.connect(" in str(caught.value) and "transport" in str(caught.value)


def test_client_rejects_a_non_transport_before_any_work() -> None:
    transport = StdioTransport(PY, ["-c", "pass"])
    client = Client(transport)  # a real transport is fine
    assert client.transport is transport
    with pytest.raises(TypeError, match="not a NoneType"):
        Client(None)  # type: ignore[arg-type]


def test_arguments_that_are_not_a_mapping_are_refused_before_sending() -> None:
    with mcp_sync.connect(fake_server_command()) as client:
        with pytest.raises(TypeError, match="arguments for tool 'echo' must be a mapping"):
            client.call_tool("echo", "hi")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"arguments for tool 'echo' .* not a list"):
            client.call_tool_future("echo", ["hi"])  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="arguments for prompt 'greet' must be a mapping"):
            client.get_prompt("greet", "Ada")  # type: ignore[arg-type]
        calls = json.loads(client.call_tool("received", {"method": "tools/call"}).text)
        assert [call["params"]["name"] for call in calls] == ["received"]  # nothing else
        assert json.loads(client.call_tool("received", {"method": "prompts/get"}).text) == []


def test_the_demo_server_rejects_a_string_for_arguments_too() -> None:
    with mcp_sync.connect(DEMO) as client:
        with pytest.raises(TypeError, match="arguments"):
            client.call_tool("echo", "hi")  # type: ignore[arg-type]
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"


# -- 5. timeouts --------------------------------------------------------------------------------


def test_a_timeout_names_the_tool_and_the_bound_over_stdio() -> None:
    with mcp_sync.connect(fake_server_command()) as client:
        start = time.monotonic()
        with pytest.raises(RequestTimeout) as caught:
            client.call_tool("slow", {"seconds": 30}, timeout=1)
        elapsed = time.monotonic() - start
    assert str(caught.value) == "tools/call 'slow' timed out after 1.0 s"
    assert caught.value.subject == "slow" and caught.value.timeout == 1
    assert 1.0 <= elapsed < 1.2, elapsed


def hold(server: McpHttpServer, method: str, release: threading.Event) -> None:
    """Requests of ``method`` get no answer until ``release`` (bounded)."""

    def hook(handler: Any, message: Any) -> bool:
        if not isinstance(message, dict) or message.get("method") != method:
            return False
        release.wait(WAIT)
        handler.send_status(202)
        return True

    server.post_hook = hook


@pytest.mark.parametrize(("method", "call", "expected"), [
    ("tools/call", lambda c: c.call_tool("echo", {"text": "x"}, timeout=0.5),
     "tools/call 'echo' timed out after 0.5 s"),
    ("prompts/get", lambda c: c.get_prompt("greet", {"who": "Ada"}, timeout=0.5),
     "prompts/get 'greet' timed out after 0.5 s"),
    ("resources/read", lambda c: c.read_resource("test://readme", timeout=0.5),
     "resources/read 'test://readme' timed out after 0.5 s"),
    ("ping", lambda c: c.ping(timeout=0.25), "ping timed out after 0.25 s"),
])
def test_a_timeout_message_names_what_was_asked(
        server: McpHttpServer, method: str, call: Any, expected: str) -> None:
    release = threading.Event()
    try:
        with mcp_sync.connect(server.url) as client:
            hold(server, method, release)
            with pytest.raises(RequestTimeout) as caught:
                call(client)
            assert str(caught.value) == expected
    finally:
        release.set()


def test_a_server_slow_to_take_the_cancellation_does_not_delay_the_timeout(
        server: McpHttpServer) -> None:
    release = threading.Event()
    try:
        with mcp_sync.connect(server.url) as client:
            hold(server, "notifications/cancelled", release)
            start = time.monotonic()
            with pytest.raises(RequestTimeout):
                client.call_tool("slow", {"seconds": 30}, timeout=1)
            elapsed = time.monotonic() - start
            assert 1.0 <= elapsed < 1.2, elapsed
            # The cancellation was sent all the same.
            assert server.wait_for(lambda r: r.rpc_method == "notifications/cancelled", WAIT)
    finally:
        release.set()


# -- 6. result.data -----------------------------------------------------------------------------


def test_data_is_the_structured_result_in_one_line() -> None:
    with mcp_sync.connect(DEMO) as client:
        assert client.call_tool("add", {"a": 2, "b": 3}).data["sum"] == 5
        assert client.call_tool("echo", {"text": '{"sum": 1}'}).data is None


def test_data_reads_json_text_only_for_a_tool_with_an_output_schema(
        server: McpHttpServer) -> None:
    with mcp_sync.connect(server.url) as client:
        client.list_tools()  # the client learns which tools declare an outputSchema
        result = client.call_tool("add_as_text", {"a": 1, "b": 2})
        assert result.structured is None and result.data == {"sum": 3}
        assert client.call_tool("json_text").data is None  # no schema: text stays text
        assert client.call_tool("fail", {"message": "{}"}).data is None
        assert client.call_tool("add", {"a": 1, "b": 1}).data == {"sum": 2}
        with pytest.raises(ProtocolError, match="declares an outputSchema"):
            client.call_tool("prose")


def test_data_of_a_result_built_by_hand() -> None:
    assert types.CallToolResult(content=[], structured_content={"a": 1}).data == {"a": 1}
    text_only = types.CallToolResult(content=[types.TextContent(text='{"a": 1}')])
    assert text_only.data is None


# -- 7. raise_on_error --------------------------------------------------------------------------


def test_a_tool_error_is_a_result_by_default_and_raises_on_request() -> None:
    with mcp_sync.connect(fake_server_command()) as client:
        result = client.call_tool("fail", {"message": "disk full"})
        assert result.is_error and "disk full" in result.text
        with pytest.raises(ToolError) as caught:
            client.call_tool("fail", {"message": "disk full"}, raise_on_error=True)
        error = caught.value
        assert error.tool == "fail" and error.result.is_error
        assert "disk full" in str(error) and str(error).startswith("tool 'fail'")
        assert not isinstance(error, mcp_sync.ServerError)
        future = client.call_tool_future("fail", {"message": "async"}, raise_on_error=True)
        with pytest.raises(ToolError, match="async"):
            future.result(WAIT)
        assert client.call_tool("echo", {"text": "fine"}, raise_on_error=True).text == "fine"


def test_a_tool_error_message_is_printable_and_bounded() -> None:
    with mcp_sync.connect(fake_server_command()) as client, pytest.raises(ToolError) as caught:
        client.call_tool("fail", {"message": "\x1b[2J\u202e" + "y" * 5000},
                         raise_on_error=True)
    message = str(caught.value)
    assert "\x1b" not in message and "\u202e" not in message and len(message) < 700
    assert len(caught.value.result.text) > 5000  # the result itself is whole


def test_a_tool_error_pickles_with_its_result() -> None:
    with mcp_sync.connect(fake_server_command()) as client, pytest.raises(ToolError) as caught:
        client.call_tool("fail", {"message": "over the wire"}, raise_on_error=True)
    copy = pickle.loads(pickle.dumps(caught.value))
    assert type(copy) is ToolError and str(copy) == str(caught.value)
    assert copy.tool == "fail" and copy.result == caught.value.result
    assert copy.result.is_error and "over the wire" in copy.result.text


def test_the_manager_raises_on_request_too() -> None:
    command = fake_server_command()
    config = {"mcpServers": {"fake": {"command": command[0], "args": command[1:]}}}
    with Manager(config, timeout=WAIT) as manager:
        assert manager.call_tool("fake__fail", {"message": "m"}).is_error
        with pytest.raises(ToolError, match="m"):
            manager.call_tool("fake", "fail", {"message": "m"}, raise_on_error=True)


def test_exception_tree_docstring_lists_tool_error() -> None:
    tree = mcp_sync.exceptions.__doc__ or ""
    assert re.search(r"ToolError\s+a tool result with ``isError: true``", tree)
    names: List[str] = mcp_sync.exceptions.__all__
    assert "ToolError" in names
