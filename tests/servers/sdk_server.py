"""A peer MCP server written with the official Python SDK (PyPI ``mcp``), for interop tests.

Nobody on this project wrote the protocol side of this server: only these few tool,
resource and prompt functions. The SDK does the wire format, the handshake, progress,
server-to-client requests and errors.

Usage::

    python tests/servers/sdk_server.py                                   # stdio
    python tests/servers/sdk_server.py --transport streamable-http --port 8123   # /mcp
    python tests/servers/sdk_server.py --transport sse --port 8124               # /sse
    python tests/servers/sdk_server.py --startup-delay 1.5     # slow to start (any transport)

HTTP transports bind 127.0.0.1 only.

Tools: ``add``, ``echo``, ``weather`` (structured output), ``tiny_image``, ``link``
(a resource link), ``fail`` (an isError result), ``slow`` (progress), ``sample``
(sampling/createMessage), ``ask_user`` (elicitation/create), ``roots`` (roots/list),
``log`` (notifications/message), ``changes`` (list_changed and resources/updated
notifications). Resources: ``res://greeting`` (text), ``res://blob`` (binary),
template ``res://items/{item_id}``. Prompt: ``review(code, language)``. Completions for
the prompt's ``language`` and the template's ``item_id``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from typing import Annotated, Any, Dict, Optional

# The SDK marks logging, sampling and roots deprecated for the 2026-07-28 era; this
# server exercises them on purpose, over the session era. Keep stderr quiet.
warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", message=".*deprecated.*")

import anyio  # noqa: E402
from mcp import types  # noqa: E402
from mcp.server.elicitation import AcceptedElicitation, ElicitationResult  # noqa: E402
from mcp.server.mcpserver import (  # noqa: E402
    Context,
    Elicit,
    ListRoots,
    MCPServer,
    Resolve,
    Sample,
)
from mcp.server.mcpserver.utilities.types import Image  # noqa: E402
from pydantic import BaseModel, Field  # noqa: E402

# A 1x1 transparent PNG.
TINY_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63000100000500010d0a2db40000000049454e44ae426082"
)
BLOB = bytes(range(256))
LANGUAGES = ["python", "perl", "php", "rust", "ruby"]
RESOURCE_URIS = ["res://greeting", "res://blob"]
STATELESS = "2026-07-28"
LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]

mcp = MCPServer(
    "sdk-peer",
    version="1.0.0",
    instructions="A test peer built on the official MCP Python SDK.",
)

# Set by logging/setLevel; the `log` tool sends only messages at or above it.
_state: Dict[str, Any] = {"level": "debug", "subscribed": set()}


# -- tools -------------------------------------------------------------------------------


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


class Weather(BaseModel):
    city: str
    temperature: float = Field(description="degrees Celsius")
    conditions: str


@mcp.tool()
def weather(city: str) -> Weather:
    """Structured weather for a city (made up)."""
    return Weather(city=city, temperature=21.5, conditions="sunny")


@mcp.tool()
def tiny_image() -> Image:
    """A 1x1 PNG."""
    return Image(data=TINY_PNG, format="png")


@mcp.tool()
def link() -> types.ResourceLink:
    """A link to the greeting resource."""
    return types.ResourceLink(
        type="resource_link", uri="res://greeting", name="greeting", mime_type="text/plain"
    )


@mcp.tool()
def fail(message: str = "boom") -> str:
    """Always fails: the SDK turns the exception into an isError result."""
    raise ValueError(message)


@mcp.tool()
async def slow(ctx: Context, seconds: float = 1.0, interval: float = 0.1) -> str:
    """Sleep ``seconds`` in steps of ``interval``, reporting progress after each step."""
    steps = max(1, round(seconds / interval))
    for step in range(1, steps + 1):
        await anyio.sleep(interval)
        await ctx.report_progress(step, steps, f"step {step}/{steps}")
    return f"slept {seconds} s in {steps} steps"


# sample, ask_user and roots get their answers through the SDK's resolvers: over the
# session era (<= 2025-11-25) the SDK sends a server-to-client request mid-call; over the
# stateless era (2026-07-28) it answers input_required and resumes on the client's retry.


def _ask_llm(prompt: str) -> Sample:
    return Sample(
        [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))],
        max_tokens=50,
        system_prompt="You are a test.",
    )


@mcp.tool()
async def sample(
    prompt: str, answer: Annotated[types.CreateMessageResult, Resolve(_ask_llm)]
) -> str:
    """Ask the client's LLM (sampling/createMessage) and return its text."""
    content = answer.content
    text = content.text if isinstance(content, types.TextContent) else repr(content)
    return f"model {answer.model} said: {text}"


class Contact(BaseModel):
    name: str = Field(description="your name")
    age: int = Field(default=30, description="your age")
    subscribe: bool = Field(default=False, description="join the list")


def _ask_contact(question: str = "Who are you?") -> Elicit[Contact]:
    return Elicit(question, Contact)


@mcp.tool()
async def ask_user(
    answer: Annotated[ElicitationResult[Contact], Resolve(_ask_contact)],
    question: str = "Who are you?",
) -> str:
    """Ask the user (elicitation/create) and report the answer."""
    if isinstance(answer, AcceptedElicitation):
        data = answer.data
        return f"accepted: name={data.name} age={data.age} subscribe={data.subscribe}"
    return f"action: {answer.action}"


def _list_roots() -> ListRoots:
    return ListRoots()


@mcp.tool()
async def roots(listed: Annotated[types.ListRootsResult, Resolve(_list_roots)]) -> str:
    """Ask the client for its roots (roots/list), one URI per line."""
    return "\n".join(f"{root.uri} {root.name or ''}".strip() for root in listed.roots)


@mcp.tool()
async def log(ctx: Context, message: str = "hello", logger: str = "peer") -> str:
    """Send ``message`` at every level at or above the one set with logging/setLevel."""
    threshold = LEVELS.index(_state["level"])
    sent = []
    for level in LEVELS[threshold:]:
        await ctx.session.send_log_message(level=level, data=f"{level}: {message}", logger=logger)
        sent.append(level)
    return ",".join(sent)


@mcp.tool()
async def changes(ctx: Context) -> str:
    """Announce that tools, prompts and resources changed, and that every resource was
    updated: as notifications to resources/subscribe subscribers in the session era, as
    events on subscriptions/listen streams in the stateless (2026-07-28) era."""
    if ctx.protocol_version == STATELESS:
        await ctx.notify_tools_changed()
        await ctx.notify_prompts_changed()
        await ctx.notify_resources_changed()
        for uri in RESOURCE_URIS:
            await ctx.notify_resource_updated(uri)
        return "published"
    await ctx.session.send_tool_list_changed()
    await ctx.session.send_prompt_list_changed()
    await ctx.session.send_resource_list_changed()
    for uri in sorted(_state["subscribed"]):
        await ctx.session.send_resource_updated(uri)
    return "sent"


# -- resources ---------------------------------------------------------------------------


@mcp.resource("res://greeting", name="greeting", mime_type="text/plain")
def greeting() -> str:
    return "Hello from the SDK peer"


@mcp.resource("res://blob", name="blob", mime_type="application/octet-stream")
def blob() -> bytes:
    return BLOB


@mcp.resource("res://items/{item_id}", name="item", mime_type="text/plain")
def item(item_id: str) -> str:
    return f"item number {item_id}"


# -- prompts and completion --------------------------------------------------------------


@mcp.prompt()
def review(code: str, language: str = "python") -> str:
    """Ask for a code review."""
    return f"Please review this {language} code:\n\n{code}"


@mcp.completion()
async def complete(
    ref: Any, argument: types.CompletionArgument, context: Optional[types.CompletionContext]
) -> Optional[types.Completion]:
    if isinstance(ref, types.PromptReference) and argument.name == "language":
        values = [lang for lang in LANGUAGES if lang.startswith(argument.value)]
        return types.Completion(values=values, total=len(values), has_more=False)
    if isinstance(ref, types.ResourceTemplateReference) and argument.name == "item_id":
        return types.Completion(values=[f"{argument.value}{n}" for n in range(3)])
    return None


# -- logging level and subscriptions (the high-level server does not wire these) ---------


async def _set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
    _state["level"] = params.level
    return types.EmptyResult()


async def _subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
    _state["subscribed"].add(str(params.uri))
    return types.EmptyResult()


async def _unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    _state["subscribed"].discard(str(params.uri))
    return types.EmptyResult()


_lowlevel = mcp._lowlevel_server
_lowlevel.add_request_handler("logging/setLevel", types.SetLevelRequestParams, _set_level)
_lowlevel.add_request_handler("resources/subscribe", types.SubscribeRequestParams, _subscribe)
_lowlevel.add_request_handler(
    "resources/unsubscribe", types.UnsubscribeRequestParams, _unsubscribe
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--transport", choices=["stdio", "streamable-http", "sse"], default="stdio"
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--startup-delay", type=float, default=0.0, metavar="SECONDS",
                        help="sleep this long before serving (a slow-starting server)")
    args = parser.parse_args()
    if args.startup_delay > 0:
        time.sleep(args.startup_delay)
    if args.transport == "stdio":
        mcp.run()
    else:
        mcp.run(transport=args.transport, host=args.host, port=args.port)


if __name__ == "__main__":
    main()
