"""Interop over stdio against real MCP servers that nobody on this project wrote.

Peers:

* ``everything``: the reference server ``@modelcontextprotocol/server-everything``
  (TypeScript SDK), run with ``node index.js stdio``.
* ``sdk``: ``tests/servers/sdk_server.py``, a server built on the official Python SDK
  (PyPI ``mcp``); only its tool bodies are ours, the protocol side is the SDK's. It speaks
  both eras, so its tests run twice: ``session`` (pinned 2025-11-25, ``initialize``
  handshake, server-to-client requests) and ``stateless`` (the default negotiation, which
  finds 2026-07-28: ``server/discover``, input_required round trips,
  ``subscriptions/listen``).

Everything goes through the public API (``mcp_sync.connect([...])`` as a context
manager) with a timeout on every call. A missing peer fails the test; nothing is skipped.
server-everything's ``get-env`` tool is never called (it prints the server's environment).
The error answer to an unknown prompt is also held against the project's fake server
(``tests/servers/fake_stdio.py``), the baseline.
"""

from __future__ import annotations

import base64
import logging
import shutil
import threading
import time
from concurrent.futures import CancelledError
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest

import mcp_sync
from mcp_sync import RequestTimeout, ServerError, types

from .conftest import PY, SERVERS, fake_server_command, require_everything

# Seconds for any single call that should be quick. Generous: the VM is small and noisy.
T = 20.0
LATEST = "2025-11-25"
MODERN = "2026-07-28"
#: protocol_version to pass for each era of the SDK peer (None: let the client negotiate).
SDK_ERAS = {"session": LATEST, "stateless": None}
ERA_VERSION = {"session": LATEST, "stateless": MODERN}
LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# -- peers -------------------------------------------------------------------------------


def everything_command() -> List[str]:
    node = shutil.which("node")
    assert node, "node is not on PATH: server-everything needs Node 20+"
    return [node, str(require_everything()), "stdio"]


def sdk_command() -> List[str]:
    script = SERVERS / "sdk_server.py"
    assert script.exists(), f"{script} is missing"
    return [PY, str(script)]


def everything(**kwargs: Any) -> mcp_sync.Client:
    kwargs.setdefault("timeout", T)
    kwargs.setdefault("name", "everything")
    return mcp_sync.connect(everything_command(), **kwargs)


def sdk(era: str = "session", **kwargs: Any) -> mcp_sync.Client:
    """A client of the SDK peer in ``era`` ("session" or "stateless")."""
    kwargs.setdefault("timeout", T)
    kwargs.setdefault("name", "sdk")
    kwargs.setdefault("protocol_version", SDK_ERAS[era])
    # The era probe gets the tests' patience: the SDK peer imports for about a second
    # before it answers, longer on a loaded machine. The negotiation tests hold the 1 s
    # default to its promise.
    kwargs.setdefault("probe_timeout", T)
    client = mcp_sync.connect(sdk_command(), **kwargs)
    expected = kwargs["protocol_version"] or ERA_VERSION[era]
    if client.protocol_version != expected:
        client.close()
        pytest.fail(f"the SDK peer in the {era} era negotiated {client.protocol_version}")
    return client


def sdk_stateless(**kwargs: Any) -> mcp_sync.Client:
    return sdk("stateless", **kwargs)


def fake(**kwargs: Any) -> mcp_sync.Client:
    """The project's own fake server: the baseline the peers' errors are held against."""
    kwargs.setdefault("timeout", T)
    kwargs.setdefault("name", "fake")
    return mcp_sync.connect(fake_server_command(), **kwargs)


#: Every peer (and era) the shared tests run against.
PEERS: Dict[str, Callable[..., mcp_sync.Client]] = {
    "everything": everything, "sdk": sdk, "sdk-stateless": sdk_stateless,
}
ERAS = pytest.mark.parametrize("era", sorted(SDK_ERAS))


def wait_for(predicate: Callable[[], Any], timeout: float = T, what: str = "condition") -> Any:
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


class Recorder:
    """Thread-safe record of callback invocations (and the threads they ran on)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls: List[Tuple[Any, ...]] = []
        self.threads: List[str] = []

    def __call__(self, *args: Any) -> None:
        with self._lock:
            self.calls.append(args)
            self.threads.append(threading.current_thread().name)

    def snapshot(self) -> List[Tuple[Any, ...]]:
        with self._lock:
            return list(self.calls)

    def methods(self) -> List[str]:
        return [call[0] for call in self.snapshot()]

    def with_method(self, method: str) -> List[Any]:
        return [call[1] for call in self.snapshot() if call[0] == method]


def roundtrips(model: Any, raw: Dict[str, Any]) -> None:
    """``raw`` from a real server parses into ``model`` and serialises back unchanged
    (bar defaults the model adds, such as ``isError: false``)."""
    parsed = model.model_validate(raw)
    wire = parsed.to_wire()
    if "isError" in wire and "isError" not in raw:
        assert wire.pop("isError") is False
    assert wire == raw


# -- handshake ---------------------------------------------------------------------------


def test_everything_initialize() -> None:
    with everything() as client:
        assert client.connected
        assert client.protocol_version == LATEST
        assert client.server_info.name == "mcp-servers/everything"
        assert client.server_info.title == "Everything Reference Server"
        assert client.server_info.version
        caps = client.server_capabilities
        assert isinstance(caps, types.ServerCapabilities)
        assert caps.tools is not None and caps.tools.list_changed is True
        assert caps.prompts is not None and caps.prompts.list_changed is True
        assert caps.resources is not None and caps.resources.subscribe is True
        assert caps.logging is not None and caps.completions is not None
        assert client.instructions and "Everything Server" in client.instructions
        client.ping(timeout=T)
    assert not client.connected


@ERAS
def test_sdk_initialize(era: str) -> None:
    with sdk(era) as client:
        assert client.protocol_version == ERA_VERSION[era]
        assert client.server_info.name == "sdk-peer"
        assert client.server_info.version == "1.0.0"
        caps = client.server_capabilities
        assert caps.tools is not None and caps.prompts is not None
        assert caps.resources is not None and caps.resources.subscribe is True
        assert caps.logging is not None and caps.completions is not None
        assert client.instructions == "A test peer built on the official MCP Python SDK."
        client.ping(timeout=T)
    assert not client.connected


@pytest.mark.parametrize("peer", ["everything", "sdk"])
@pytest.mark.parametrize("version", ["2025-06-18", "2025-03-26", "2024-11-05"])
def test_pinned_older_protocol_version(peer: str, version: str) -> None:
    with PEERS[peer](protocol_version=version) as client:
        assert client.protocol_version == version
        tool, args, text = {
            "everything": ("echo", {"message": "old"}, "Echo: old"),
            "sdk": ("echo", {"text": "old"}, "old"),
        }[peer]
        assert client.call_tool(tool, args, timeout=T).text == text


def test_negotiation_finds_each_servers_era_without_stalling() -> None:
    """With no pinned version the client probes for 2026-07-28 and falls back to the
    initialize handshake at once when the server predates it."""
    started = time.monotonic()
    with mcp_sync.connect(everything_command(), name="everything", timeout=T) as client:
        assert time.monotonic() - started < 10  # no multi-second stall on the probe
        assert client.protocol_version == LATEST
        assert client.call_tool("echo", {"message": "x"}, timeout=T).text == "Echo: x"
    with mcp_sync.connect(sdk_command(), name="sdk", timeout=T) as client:
        assert client.protocol_version == MODERN
        assert client.server_info.name == "sdk-peer"
        assert client.call_tool("add", {"a": 20, "b": 22}, timeout=T).text == "42"


def test_negotiation_with_a_slow_starting_stateless_server() -> None:
    """The era probe's short timeout runs from the spawn, so a server slower to start
    than that (the SDK alone takes about a second to import) answers the probe late and
    rejects the fallback initialize with -32022: the client must then take the stateless
    era the server offers, not fail."""
    command = [*sdk_command(), "--startup-delay", "1.5"]
    for _ in range(2):  # the second client must not inherit a wrong verdict
        with mcp_sync.connect(command, name="slow-sdk", timeout=T, probe_timeout=0.5) as client:
            assert client.protocol_version == MODERN
            assert client.call_tool("add", {"a": 1, "b": 2}, timeout=T).text == "3"


@pytest.mark.parametrize("peer", sorted(PEERS))
def test_real_results_parse_and_roundtrip(peer: str) -> None:
    """mcp_sync.types models accept what real servers send, and lose nothing of it."""
    calls = {
        "everything": [
            ("get-structured-content", {"location": "Chicago"}),
            ("get-annotated-message", {"messageType": "error", "includeImage": True}),
            ("get-resource-links", {"count": 4}),
            ("get-resource-reference", {"resourceType": "Blob", "resourceId": 2}),
            ("get-tiny-image", {}),
        ],
    }.get(peer, [
        ("add", {"a": 1, "b": 2}), ("weather", {"city": "Oslo"}), ("tiny_image", {}),
        ("link", {}), ("fail", {}),
    ])
    with PEERS[peer]() as client:
        if client.protocol_version == LATEST:  # a real initialize result, not a discover one
            roundtrips(types.InitializeResult, dict(client.agreement.result))  # type: ignore[union-attr]
        for method, model in [
            ("tools/list", types.ListToolsResult),
            ("resources/list", types.ListResourcesResult),
            ("resources/templates/list", types.ListResourceTemplatesResult),
            ("prompts/list", types.ListPromptsResult),
        ]:
            roundtrips(model, client.request(method, timeout=T))
        for name, args in calls:
            raw = client.request("tools/call", {"name": name, "arguments": args}, timeout=T)
            roundtrips(types.CallToolResult, raw)


# -- tools -------------------------------------------------------------------------------

EVERYTHING_TOOLS = {
    "echo", "get-sum", "get-tiny-image", "get-structured-content", "get-annotated-message",
    "get-resource-links", "get-resource-reference", "trigger-long-running-operation",
    "toggle-simulated-logging", "toggle-subscriber-updates", "gzip-file-as-resource",
}
CAPABILITY_TOOLS = {"trigger-sampling-request", "trigger-elicitation-request", "get-roots-list"}


def test_everything_lists_tools_by_declared_capabilities() -> None:
    with everything() as client:
        tools = client.list_tools(timeout=T)
        assert all(isinstance(tool, types.Tool) for tool in tools)
        names = {tool.name for tool in tools}
        assert names >= EVERYTHING_TOOLS
        assert not CAPABILITY_TOOLS & names  # nothing declared, nothing offered
        by_name = {tool.name: tool for tool in tools}
        assert set(by_name["get-sum"].input_schema["properties"]) == {"a", "b"}
        assert by_name["get-sum"].input_schema["required"] == ["a", "b"]
        schema = by_name["get-structured-content"].output_schema
        assert schema is not None and set(schema["required"]) == {
            "temperature", "conditions", "humidity"
        }
        assert by_name["echo"].annotations is not None
        assert by_name["echo"].annotations.read_only_hint is True

    def answer(params: Any) -> Any:
        raise AssertionError("not called in this test")

    with everything(
        sampling_handler=answer, elicitation_handler=answer, roots=[{"uri": "file:///x"}]
    ) as client:
        # The server registers these tools once it has seen the client's capabilities
        # (and says so with tools/list_changed, which drops the client's cached list).
        names = wait_for(
            lambda: {t.name for t in client.list_tools(timeout=T)} >= CAPABILITY_TOOLS,
            what="the capability-gated tools",
        )
        assert names


def test_everything_call_tools() -> None:
    with everything() as client:
        echo = client.call_tool("echo", {"message": "héllo wörld"}, timeout=T)
        assert isinstance(echo, types.CallToolResult)
        assert echo.text == "Echo: héllo wörld" and not echo.is_error

        assert client.call_tool("get-sum", {"a": 2, "b": 3.5}, timeout=T).text == (
            "The sum of 2 and 3.5 is 5.5."
        )
        assert "is 40" in client.call_tool("get-sum", {"a": -2, "b": 42}, timeout=T).text

        client.list_tools(timeout=T)  # so the client knows the outputSchema and checks it
        weather = client.call_tool("get-structured-content", {"location": "Chicago"}, timeout=T)
        assert weather.structured == weather.structured_content
        assert weather.structured is not None
        assert set(weather.structured) == {"temperature", "conditions", "humidity"}
        assert isinstance(weather.structured["temperature"], (int, float))
        assert isinstance(weather.structured["conditions"], str)

        image = client.call_tool("get-tiny-image", timeout=T)
        assert len(image.images) == 1
        assert image.images[0].mime_type == "image/png"
        assert base64.b64decode(image.images[0].data).startswith(PNG_MAGIC)
        assert "image" in image.text  # the text blocks around it

        annotated = client.call_tool(
            "get-annotated-message", {"messageType": "error", "includeImage": True}, timeout=T
        )
        first = annotated.content[0]
        assert isinstance(first, types.TextContent) and first.annotations is not None
        assert first.annotations.priority == 1.0
        assert set(first.annotations.audience or ()) == {"user", "assistant"}
        assert len(annotated.images) == 1

        links = client.call_tool("get-resource-links", {"count": 3}, timeout=T)
        resource_links = [c for c in links.content if isinstance(c, types.ResourceLink)]
        assert len(resource_links) == 3
        for link in resource_links:
            assert link.uri.startswith("demo://resource/dynamic/")
            contents = client.read_resource(link.uri, timeout=T).contents
            assert contents and contents[0].uri == link.uri

        reference = client.call_tool(
            "get-resource-reference", {"resourceType": "Text", "resourceId": 4}, timeout=T
        )
        embedded = [c for c in reference.content if isinstance(c, types.EmbeddedResource)]
        assert len(embedded) == 1
        assert isinstance(embedded[0].resource, types.TextResourceContents)
        assert embedded[0].resource.uri == "demo://resource/dynamic/text/4"
        assert embedded[0].resource.text.startswith("Resource 4:")


@ERAS
def test_sdk_call_tools(era: str) -> None:
    with sdk(era) as client:
        tools = {tool.name: tool for tool in client.list_tools(timeout=T)}
        assert {"add", "echo", "weather", "tiny_image", "link", "fail", "slow", "sample",
                "ask_user", "roots", "log", "changes"} <= set(tools)
        assert tools["add"].input_schema["required"] == ["a", "b"]
        assert tools["weather"].output_schema is not None

        added = client.call_tool("add", {"a": 2, "b": 40}, timeout=T)
        assert added.text == "42" and added.structured == {"result": 42}
        assert client.call_tool("echo", {"text": "héllo"}, timeout=T).text == "héllo"

        weather = client.call_tool("weather", {"city": "Oslo"}, timeout=T)
        assert weather.structured == {"city": "Oslo", "temperature": 21.5, "conditions": "sunny"}

        image = client.call_tool("tiny_image", timeout=T)
        assert [i.mime_type for i in image.images] == ["image/png"]
        assert base64.b64decode(image.images[0].data).startswith(PNG_MAGIC)

        link = client.call_tool("link", timeout=T).content[0]
        assert isinstance(link, types.ResourceLink) and link.uri == "res://greeting"

        failed = client.call_tool("fail", {"message": "kaput"}, timeout=T)
        assert failed.is_error is True  # a result, not an exception
        assert "fail" in failed.text


@pytest.mark.parametrize("peer", sorted(PEERS))
def test_unknown_tool_is_an_error_result(peer: str) -> None:
    """Both SDKs answer an unknown tool with an ``isError`` result, not a JSON-RPC error."""
    expected = "Tool nope not found" if peer == "everything" else "Unknown tool: nope"
    with PEERS[peer]() as client:
        result = client.call_tool("nope", {"x": 1}, timeout=T)
        assert result.is_error is True
        assert expected in result.text
        assert client.call_tool("echo", {"message": "ok", "text": "ok"}, timeout=T)


#: What each peer answers ``prompts/get`` of an unknown prompt with: (code, message). The
#: SDK's answers are its own: code 0 in the session era, and in the stateless era its
#: handler's error masked as an internal error.
UNKNOWN_PROMPT = {
    "everything": (-32602, "MCP error -32602: Prompt no-such-prompt not found"),
    "sdk": (0, "Unknown prompt: no-such-prompt"),
    "sdk-stateless": (-32603, "Internal server error"),
    "fake": (-32602, "Unknown prompt: no-such-prompt"),
}


@pytest.mark.parametrize("peer", sorted(PEERS))
def test_unknown_resource_raises_server_error(peer: str) -> None:
    with PEERS[peer]() as client:
        with pytest.raises(ServerError) as resource_error:
            client.read_resource("nope://nothing", timeout=T)
        assert resource_error.value.code == -32602
        assert "nope://nothing" in resource_error.value.message
        assert resource_error.value.method == "resources/read"
        client.ping(timeout=T)  # the connection lives on


@pytest.mark.parametrize("peer", sorted(UNKNOWN_PROMPT))
def test_unknown_prompt_raises_server_error(peer: str) -> None:
    with {**PEERS, "fake": fake}[peer]() as client:
        with pytest.raises(ServerError) as prompt_error:
            client.get_prompt("no-such-prompt", timeout=T)
        error = prompt_error.value
        assert error.method == "prompts/get"
        assert (error.code, error.message) == UNKNOWN_PROMPT[peer]
        assert f"server error {error.code} for prompts/get" in str(error)
        client.ping(timeout=T)  # the connection lives on


# -- resources ---------------------------------------------------------------------------


def test_everything_resources() -> None:
    with everything() as client:
        resources = client.list_resources(timeout=T)
        assert len(resources) == 7
        assert all(isinstance(r, types.Resource) for r in resources)
        uris = {r.uri for r in resources}
        assert "demo://resource/static/document/features.md" in uris

        doc = client.read_resource("demo://resource/static/document/features.md", timeout=T)
        assert isinstance(doc, types.ReadResourceResult)
        (text,) = doc.contents
        assert isinstance(text, types.TextResourceContents)
        assert text.mime_type == "text/markdown"
        assert text.text.startswith("# Everything Server - Features")

        templates = client.list_resource_templates(timeout=T)
        assert {t.uri_template for t in templates} == {
            "demo://resource/dynamic/text/{resourceId}",
            "demo://resource/dynamic/blob/{resourceId}",
        }
        assert all(isinstance(t, types.ResourceTemplate) for t in templates)

        (dynamic,) = client.read_resource("demo://resource/dynamic/text/3", timeout=T).contents
        assert isinstance(dynamic, types.TextResourceContents)
        assert dynamic.text.startswith("Resource 3: This is a plaintext resource")

        (blob,) = client.read_resource("demo://resource/dynamic/blob/3", timeout=T).contents
        assert isinstance(blob, types.BlobResourceContents)
        assert base64.b64decode(blob.blob).decode().startswith("Resource 3: This is a base64 blob")


@ERAS
def test_sdk_resources(era: str) -> None:
    with sdk(era) as client:
        resources = {r.uri: r for r in client.list_resources(timeout=T)}
        assert set(resources) == {"res://greeting", "res://blob"}
        assert resources["res://blob"].mime_type == "application/octet-stream"

        (greeting,) = client.read_resource("res://greeting", timeout=T).contents
        assert isinstance(greeting, types.TextResourceContents)
        assert greeting.text == "Hello from the SDK peer"

        (blob,) = client.read_resource("res://blob", timeout=T).contents
        assert isinstance(blob, types.BlobResourceContents)
        assert base64.b64decode(blob.blob) == bytes(range(256))

        (template,) = client.list_resource_templates(timeout=T)
        assert template.uri_template == "res://items/{item_id}"
        (item,) = client.read_resource("res://items/7", timeout=T).contents
        assert isinstance(item, types.TextResourceContents) and item.text == "item number 7"


# -- prompts and completion --------------------------------------------------------------


def test_everything_prompts() -> None:
    with everything() as client:
        prompts = {p.name: p for p in client.list_prompts(timeout=T)}
        assert {"simple-prompt", "args-prompt", "completable-prompt", "resource-prompt"} <= set(
            prompts
        )
        args = {a.name: a.required for a in prompts["args-prompt"].arguments or ()}
        assert args == {"city": True, "state": False}

        simple = client.get_prompt("simple-prompt", timeout=T)
        assert isinstance(simple, types.GetPromptResult)
        (message,) = simple.messages
        assert message.role == "user" and isinstance(message.content, types.TextContent)
        assert message.content.text == "This is a simple prompt without arguments."

        filled = client.get_prompt("args-prompt", {"city": "Oslo", "state": "Viken"}, timeout=T)
        assert filled.messages[0].content.text == "What's weather in Oslo, Viken?"  # type: ignore[union-attr]

        embedded = client.get_prompt(
            "resource-prompt", {"resourceType": "Text", "resourceId": "2"}, timeout=T
        )
        resources = [m.content for m in embedded.messages
                     if isinstance(m.content, types.EmbeddedResource)]
        assert len(resources) == 1
        assert resources[0].resource.uri == "demo://resource/dynamic/text/2"


@ERAS
def test_sdk_prompts(era: str) -> None:
    with sdk(era) as client:
        (prompt,) = client.list_prompts(timeout=T)
        assert prompt.name == "review" and prompt.description == "Ask for a code review."
        assert {a.name: a.required for a in prompt.arguments or ()} == {
            "code": True, "language": False
        }
        result = client.get_prompt("review", {"code": "x = 1", "language": "rust"}, timeout=T)
        assert result.messages[0].content.text == (  # type: ignore[union-attr]
            "Please review this rust code:\n\nx = 1"
        )
        default = client.get_prompt("review", {"code": "y"}, timeout=T)
        assert "python code" in default.messages[0].content.text  # type: ignore[union-attr]


def test_everything_completion() -> None:
    ref = {"type": "ref/prompt", "name": "completable-prompt"}
    with everything() as client:
        department = client.complete(ref, {"name": "department", "value": "E"}, timeout=T)
        assert isinstance(department, types.CompleteResult)
        assert department.completion.values == ["Engineering"]

        # The second argument's values depend on the first, passed as context.
        names = client.complete(
            ref, {"name": "name", "value": ""}, {"arguments": {"department": "Sales"}}, timeout=T
        )
        assert names.completion.values == ["David", "Eve", "Frank"]
        none = client.complete(ref, {"name": "name", "value": "Z"},
                               {"arguments": {"department": "Sales"}}, timeout=T)
        assert none.completion.values == []

        template = {"type": "ref/resource", "uri": "demo://resource/dynamic/text/{resourceId}"}
        ids = client.complete(template, {"name": "resourceId", "value": "5"}, timeout=T)
        assert ids.completion.values == ["5"]


@ERAS
def test_sdk_completion(era: str) -> None:
    with sdk(era) as client:
        languages = client.complete(
            types.PromptReference(name="review"), {"name": "language", "value": "p"}, timeout=T
        )
        assert languages.completion.values == ["python", "perl", "php"]
        assert languages.completion.total == 3 and languages.completion.has_more is False

        items = client.complete(
            {"type": "ref/resource", "uri": "res://items/{item_id}"},
            {"name": "item_id", "value": "4"}, timeout=T,
        )
        assert items.completion.values == ["40", "41", "42"]


# -- progress and timeouts ---------------------------------------------------------------


def test_everything_progress() -> None:
    progress = Recorder()
    with everything() as client:
        result = client.call_tool(
            "trigger-long-running-operation", {"duration": 1.2, "steps": 4},
            timeout=T, on_progress=progress,
        )
        assert result.text == "Long running operation completed. Duration: 1.2 seconds, Steps: 4."
        # Progress is delivered on the callback thread; the last one may trail the result.
        calls = wait_for(lambda: len(progress.snapshot()) == 4 and progress.snapshot(),
                         what="four progress notifications")
        assert [c[0] for c in calls] == [1.0, 2.0, 3.0, 4.0]
        assert all(c[1] == 4.0 for c in calls)
        assert all(name.startswith("mcp-sync-callback-") for name in progress.threads)


@ERAS
def test_sdk_progress(era: str) -> None:
    progress = Recorder()
    with sdk(era) as client:
        result = client.call_tool("slow", {"seconds": 0.6, "interval": 0.1}, timeout=T,
                                  on_progress=progress)
        assert result.text == "slept 0.6 s in 6 steps"
        calls = wait_for(lambda: len(progress.snapshot()) == 6 and progress.snapshot(),
                         what="six progress notifications")
        values = [c[0] for c in calls]
        assert values == sorted(values) and len(set(values)) == 6  # strictly increasing
        assert values[-1] == 6.0 and all(c[1] == 6.0 for c in calls)
        assert calls[-1][2] == "step 6/6"


def test_everything_progress_extends_a_short_timeout() -> None:
    """A 2 s timeout on a 3 s operation that reports progress every 0.5 s succeeds, with
    or without an on_progress callback; without the extension it times out."""
    args = {"duration": 3, "steps": 6}
    with everything() as client:
        started = time.monotonic()
        result = client.call_tool("trigger-long-running-operation", args, timeout=2.0)
        assert time.monotonic() - started >= 2.5  # it really outlived its timeout
        assert "Duration: 3 seconds, Steps: 6" in result.text

        seen = Recorder()
        result = client.call_tool("trigger-long-running-operation", args, timeout=2.0,
                                  on_progress=seen)
        assert "Steps: 6" in result.text

    with everything(reset_timeout_on_progress=False) as client:
        with pytest.raises(RequestTimeout):
            client.call_tool("trigger-long-running-operation", args, timeout=1.0)
        assert client.call_tool("echo", {"message": "alive"}, timeout=T).text == "Echo: alive"


@ERAS
def test_sdk_progress_extends_a_short_timeout(era: str) -> None:
    with sdk(era) as client:
        started = time.monotonic()
        result = client.call_tool("slow", {"seconds": 2.5, "interval": 0.25}, timeout=1.5)
        assert time.monotonic() - started >= 2.4
        assert result.text == "slept 2.5 s in 10 steps"

    with sdk(era, reset_timeout_on_progress=False) as client:
        with pytest.raises(RequestTimeout):
            client.call_tool("slow", {"seconds": 2.5, "interval": 0.25}, timeout=0.75)
        assert client.call_tool("add", {"a": 1, "b": 1}, timeout=T).text == "2"


# -- cancellation ------------------------------------------------------------------------


@pytest.mark.parametrize("peer", sorted(PEERS))
def test_cancel_a_long_call_then_keep_working(peer: str) -> None:
    """``future.cancel()`` on a long call cancels it on the wire; server-everything never
    answers a cancelled request, so nothing may wait for that answer (not the next call,
    not close())."""
    tool, args, echo = {
        "everything": ("trigger-long-running-operation", {"duration": 60, "steps": 60},
                       ("echo", {"message": "after"}, "Echo: after")),
    }.get(peer, ("slow", {"seconds": 60, "interval": 0.5}, ("echo", {"text": "after"}, "after")))
    started = threading.Event()
    notifications = Recorder()
    client = PEERS[peer](notification_handler=notifications)
    with client:
        future = client.call_tool_future(tool, args, timeout=120,
                                         on_progress=lambda *a: started.set())
        assert started.wait(T), "the long operation never reported progress"
        assert not future.done()
        assert future.cancel() is True
        assert future.cancelled()
        with pytest.raises(CancelledError):
            future.result(timeout=T)
        assert client.call_tool(echo[0], echo[1], timeout=T).text == echo[2]
        assert client.connected
        closing = time.monotonic()
    assert time.monotonic() - closing < 15  # close() did not wait for the cancelled call
    assert not client.connected


@pytest.mark.parametrize("peer", sorted(PEERS))
def test_timed_out_future_then_keep_working(peer: str) -> None:
    tool, args = {
        "everything": ("trigger-long-running-operation", {"duration": 60, "steps": 2}),
    }.get(peer, ("slow", {"seconds": 60, "interval": 30}))
    with PEERS[peer]() as client:
        future = client.call_tool_future(tool, args, timeout=0.5)
        with pytest.raises(RequestTimeout):
            future.result(timeout=T)
        client.ping(timeout=T)
        tool, args = ("get-sum", {"a": 1, "b": 2}) if peer == "everything" else (
            "add", {"a": 1, "b": 2})
        assert client.call_tool(tool, args, timeout=T).text in ("The sum of 1 and 2 is 3.", "3")


# -- sampling ----------------------------------------------------------------------------


def test_everything_sampling() -> None:
    seen = Recorder()

    def sampling(params: Any) -> types.CreateMessageResult:
        seen(params)
        return types.CreateMessageResult(
            role="assistant", model="stub-model",
            content=types.TextContent(text="The answer is 42, from the handler."),
        )

    with everything(sampling_handler=sampling) as client:
        result = client.call_tool("trigger-sampling-request",
                                  {"prompt": "What is the answer?", "maxTokens": 33}, timeout=T)
        assert not result.is_error
        assert "The answer is 42, from the handler." in result.text
        assert "stub-model" in result.text
        ((params,),) = seen.snapshot()
        assert isinstance(params, types.CreateMessageRequestParams)
        assert params.max_tokens == 33
        assert params.system_prompt == "You are a helpful test server."
        (message,) = params.messages
        assert message.role == "user" and isinstance(message.content, types.TextContent)
        assert message.content.text.endswith("What is the answer?")
        assert seen.threads[0].startswith("mcp-sync-handler-")


@ERAS
def test_sdk_sampling_with_a_dict_answer(era: str) -> None:
    seen = Recorder()

    def sampling(params: Any) -> Dict[str, Any]:
        seen(params)
        return {"role": "assistant", "model": "dict-model",
                "content": {"type": "text", "text": "forty-two"}}

    with sdk(era, sampling_handler=sampling) as client:
        result = client.call_tool("sample", {"prompt": "6 * 7?"}, timeout=T)
        assert result.text == "model dict-model said: forty-two"
        ((params,),) = seen.snapshot()
        assert params.messages[0].content.text == "6 * 7?"
        assert params.max_tokens == 50 and params.system_prompt == "You are a test."


def test_sampling_handler_that_raises_becomes_an_error_for_the_server(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.CRITICAL, logger="mcp_sync.session")  # the expected traceback
    def sampling(params: Any) -> Any:
        raise RuntimeError("no model available")

    with sdk(sampling_handler=sampling) as client:
        # The client answers sampling/createMessage with -32603 and a generic message (the
        # handler's own text stays in the client's log); the SDK server re-raises that MCP
        # error out of its tool as the call's own error.
        with pytest.raises(ServerError) as error:
            client.call_tool("sample", {"prompt": "?"}, timeout=T)
        assert error.value.code == -32603
        assert error.value.message == "the client's sampling handler failed"
        assert client.call_tool("add", {"a": 2, "b": 2}, timeout=T).text == "4"


# -- elicitation -------------------------------------------------------------------------


def test_everything_elicitation() -> None:
    seen = Recorder()

    def elicit(params: Any) -> Dict[str, Any]:
        seen(params)
        return {"action": "accept", "content": {"name": "Ada", "check": True, "integer": 7}}

    with everything(elicitation_handler=elicit) as client:
        result = client.call_tool("trigger-elicitation-request", timeout=T)
        assert "User provided the requested information" in result.text
        assert "- Name: Ada" in result.text
        assert "- Agreed to terms: true" in result.text
        assert "- Favorite Integer: 7" in result.text
        ((params,),) = seen.snapshot()
        assert isinstance(params, types.ElicitRequestFormParams)
        assert params.message == "Please provide inputs for the following fields:"
        schema = params.requested_schema
        assert schema.required == ["name"]
        props = schema.properties
        assert isinstance(props["name"], types.StringSchema)
        assert isinstance(props["check"], types.BooleanSchema)
        assert isinstance(props["integer"], types.NumberSchema)
        assert isinstance(props["untitledSingleSelectEnum"], types.UntitledSingleSelectEnumSchema)
        assert isinstance(props["titledMultipleSelectEnum"], types.TitledMultiSelectEnumSchema)
        assert isinstance(props["legacyTitledEnum"], types.LegacyTitledEnumSchema)
        assert seen.threads[0].startswith("mcp-sync-handler-")


def test_everything_elicitation_declined() -> None:
    with everything(elicitation_handler=lambda params: types.ElicitResult(action="decline")) \
            as client:
        result = client.call_tool("trigger-elicitation-request", timeout=T)
        assert "User declined to provide the requested information" in result.text


@ERAS
def test_sdk_elicitation(era: str) -> None:
    def elicit(params: Any) -> types.ElicitResult:
        assert params.message == "Who goes there?"
        assert set(params.requested_schema.properties) == {"name", "age", "subscribe"}
        return types.ElicitResult(action="accept",
                                  content={"name": "Bob", "age": 7, "subscribe": True})

    with sdk(era, elicitation_handler=elicit) as client:
        result = client.call_tool("ask_user", {"question": "Who goes there?"}, timeout=T)
        assert result.text == "accepted: name=Bob age=7 subscribe=True"

    with sdk(era, elicitation_handler=lambda params: {"action": "cancel"}) as client:
        assert client.call_tool("ask_user", timeout=T).text == "action: cancel"


# -- roots -------------------------------------------------------------------------------


def test_everything_roots_and_list_changed() -> None:
    roots: List[Any] = [
        types.Root(uri="file:///srv/project", name="Project"),
        {"uri": "file:///home/me/notes", "name": "Notes"},
    ]
    with everything(roots=lambda: list(roots)) as client:
        text = client.call_tool("get-roots-list", timeout=T).text
        assert "Current MCP Roots (2 total)" in text
        assert "1. Project\n   URI: file:///srv/project" in text
        assert "2. Notes\n   URI: file:///home/me/notes" in text

        # The server caches the roots and asks again after roots/list_changed.
        roots.append({"uri": "file:///tmp/scratch"})
        client.send_roots_list_changed()
        text = wait_for(
            lambda: (lambda t: "file:///tmp/scratch" in t and t)(
                client.call_tool("get-roots-list", timeout=T).text
            ),
            what="the server to fetch the changed roots",
        )
        assert "Current MCP Roots (3 total)" in text


@ERAS
def test_sdk_roots(era: str) -> None:
    """The SDK asks for the roots on every call (a request mid-call in the session era,
    an input_required round trip in the stateless one), so a changed list shows at once."""
    roots: List[Dict[str, str]] = [{"uri": "file:///a", "name": "A"}]
    with sdk(era, roots=lambda: roots) as client:
        assert client.call_tool("roots", timeout=T).text == "file:///a A"
        roots.append({"uri": "file:///b/c"})
        client.send_roots_list_changed()
        assert client.call_tool("roots", timeout=T).text == "file:///a A\nfile:///b/c"


# -- logging -----------------------------------------------------------------------------


def test_everything_logging_handler() -> None:
    logs = Recorder()
    with everything(logging_handler=logs) as client:
        client.set_logging_level("debug", timeout=T)
        assert "Started simulated" in client.call_tool("toggle-simulated-logging", timeout=T).text
        try:
            # One message right away (then one every 5 s), at a random level.
            ((params,),) = wait_for(lambda: logs.snapshot()[:1], what="a log message")
        finally:
            client.call_tool("toggle-simulated-logging", timeout=T)
        assert isinstance(params, types.LoggingMessageNotificationParams)
        assert params.level in LEVELS
        assert isinstance(params.data, str) and "message" in params.data
        assert params.data.lower().startswith(params.level)
        assert logs.threads[0].startswith("mcp-sync-callback-")


def test_everything_logging_without_handler_goes_to_python_logging(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sync.server.everything")
    python_levels = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
                     "error": logging.ERROR, "critical": logging.CRITICAL}

    def server_records() -> List[logging.LogRecord]:
        return [r for r in caplog.records if r.name == "mcp_sync.server.everything"]

    with everything() as client:
        client.set_logging_level("debug", timeout=T)
        client.call_tool("toggle-simulated-logging", timeout=T)
        try:
            records = wait_for(server_records, what="a log record from the server")
        finally:
            client.call_tool("toggle-simulated-logging", timeout=T)
    record = records[0]
    message = record.getMessage()
    assert "message" in message
    level = message.split("-")[0].split(" ")[0].lower()  # "Warning-level message" -> warning
    assert level in LEVELS
    if level in python_levels:
        assert record.levelno == python_levels[level]
    else:  # notice, alert, emergency sit between/above the standard levels
        assert record.levelno > logging.INFO


@ERAS
def test_sdk_logging_handler_and_level(era: str) -> None:
    """The level reaches the server (logging/setLevel in the session era, the request
    envelope in the stateless one) and only messages at or above it come back."""
    logs = Recorder()
    with sdk(era, logging_handler=logs) as client:
        client.set_logging_level("debug", timeout=T)
        client.call_tool("log", {"message": "hi"}, timeout=T)
        calls = wait_for(lambda: len(logs.snapshot()) == 8 and logs.snapshot(),
                         what="eight log messages")
        assert all(isinstance(c[0], types.LoggingMessageNotificationParams) for c in calls)
        assert [c[0].level for c in calls] == LEVELS  # in order, on one callback thread
        assert [c[0].data for c in calls] == [f"{level}: hi" for level in LEVELS]
        assert {c[0].logger for c in calls} == {"peer"}
        assert all(name.startswith("mcp-sync-callback-") for name in logs.threads)

        client.set_logging_level("error", timeout=T)
        client.call_tool("log", {"message": "late"}, timeout=T)
        client.call_tool("add", {"a": 1, "b": 1}, timeout=T)
        later = wait_for(lambda: len(logs.snapshot()) >= 12 and logs.snapshot()[8:],
                         what="four more log messages")
        assert [c[0].data for c in later] == [
            f"{level}: late" for level in ("error", "critical", "alert", "emergency")
        ]
        with pytest.raises(ValueError):
            client.set_logging_level("verbose", timeout=T)


@ERAS
def test_sdk_logging_without_handler_goes_to_python_logging(
    era: str, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sync.server.sdk")

    def peer_records() -> List[logging.LogRecord]:
        return [r for r in caplog.records if r.name == "mcp_sync.server.sdk.peer"]

    with sdk(era) as client:
        client.set_logging_level("debug", timeout=T)
        client.call_tool("log", {"message": "to python", "logger": "peer"}, timeout=T)
        records = wait_for(lambda: len(peer_records()) == 8 and peer_records(),
                           what="eight log records")
    by_message = {r.getMessage(): r.levelno for r in records}
    assert by_message["debug: to python"] == logging.DEBUG
    assert by_message["info: to python"] == logging.INFO
    assert by_message["warning: to python"] == logging.WARNING
    assert by_message["error: to python"] == logging.ERROR
    assert by_message["critical: to python"] == logging.CRITICAL
    assert logging.INFO < by_message["notice: to python"] < logging.WARNING
    assert by_message["alert: to python"] > logging.CRITICAL
    assert by_message["emergency: to python"] > by_message["alert: to python"]


# -- notifications -----------------------------------------------------------------------


def test_everything_notifications_list_changed_and_resource_updates() -> None:
    seen = Recorder()
    uri = "demo://resource/static/document/features.md"
    with everything(notification_handler=seen, sampling_handler=lambda p: {}) as client:
        # The server registers capability-gated tools after the handshake and says so.
        wait_for(lambda: "notifications/tools/list_changed" in seen.methods(),
                 what="tools/list_changed")
        client.subscribe_resource(uri, timeout=T)
        assert "Started" in client.call_tool("toggle-subscriber-updates", timeout=T).text
        try:
            updated = wait_for(lambda: seen.with_method("notifications/resources/updated"),
                               what="resources/updated")
        finally:
            client.call_tool("toggle-subscriber-updates", timeout=T)
            client.unsubscribe_resource(uri, timeout=T)
        assert updated[0] == {"uri": uri}
        assert all(name.startswith("mcp-sync-callback-") for name in seen.threads)


@ERAS
def test_sdk_notifications(era: str) -> None:
    """resources/updated for subscribed resources only (resources/subscribe in the session
    era, subscriptions/listen in the stateless one); list_changed in the session era."""
    seen = Recorder()
    updated = "notifications/resources/updated"

    def updated_uris() -> List[str]:
        return [params["uri"] for params in seen.with_method(updated)]

    with sdk(era, notification_handler=seen) as client:
        client.subscribe_resource("res://greeting", timeout=T)
        client.call_tool("changes", timeout=T)
        wait_for(lambda: "res://greeting" in updated_uris(), what="resources/updated")
        if era == "session":
            wanted = ["notifications/tools/list_changed", "notifications/prompts/list_changed",
                      "notifications/resources/list_changed", updated]
            wait_for(lambda: all(m in seen.methods() for m in wanted), what=f"all of {wanted}")
            # Notifications reach the handler in the order the server sent them.
            assert [m for m in seen.methods() if m in wanted] == wanted
            assert seen.with_method(updated) == [{"uri": "res://greeting"}]

        client.unsubscribe_resource("res://greeting", timeout=T)
        client.subscribe_resource("res://blob", timeout=T)
        client.call_tool("changes", timeout=T)
        wait_for(lambda: "res://blob" in updated_uris(), what="resources/updated for the blob")
        assert updated_uris().count("res://greeting") == 1  # no longer subscribed
        assert all(name.startswith("mcp-sync-callback-") for name in seen.threads)


@ERAS
def test_notification_handler_can_call_the_client(era: str) -> None:
    """A callback may call back into the client (it runs on the callback thread)."""
    answers: List[Optional[str]] = []
    done = threading.Event()
    holder: Dict[str, mcp_sync.Client] = {}

    def on_notification(method: str, params: Optional[Dict[str, Any]]) -> None:
        if method == "notifications/resources/updated" and not done.is_set():
            contents = holder["client"].read_resource(params["uri"], timeout=T).contents  # type: ignore[index]
            answers.append(getattr(contents[0], "text", None))
            done.set()

    with sdk(era, notification_handler=on_notification) as client:
        holder["client"] = client
        client.subscribe_resource("res://greeting", timeout=T)
        client.call_tool("changes", timeout=T)
        assert done.wait(T)
    assert answers == ["Hello from the SDK peer"]
