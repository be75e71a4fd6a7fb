"""A server on the official Python SDK (PyPI ``mcp``) whose tools ask the client for input
in each of the two ways a server author can write them, for the protocol-era tests.

* ``ask_by_request`` and ``sample_by_request``: the session-era way, a server-to-client
  request in the middle of the call (``ctx.elicit(...)``,
  ``ctx.session.create_message(...)``). Over 2026-07-28 there is no channel for such a
  request, and the SDK fails the call.
* ``ask_by_input_required`` and ``sample_by_input_required``: the 2026-07-28 way, a tool
  that answers ``InputRequiredResult`` and reads ``ctx.input_responses`` when the client
  calls again (multi round-trip requests).

Nobody on this project wrote the protocol side: only these tool functions. The server
speaks both eras (``initialize`` up to 2025-11-25, ``server/discover`` for 2026-07-28),
as every current SDK server does.

Usage::

    python tests/servers/sdk_callbacks_server.py        # stdio
"""

from __future__ import annotations

import warnings

# The SDK marks sampling deprecated for the 2026-07-28 era; this server uses it on purpose.
warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", message=".*deprecated.*")

from mcp import types  # noqa: E402
from mcp.server.elicitation import AcceptedElicitation  # noqa: E402
from mcp.server.mcpserver import Context, MCPServer  # noqa: E402
from pydantic import BaseModel, Field  # noqa: E402

mcp = MCPServer("sdk-callbacks", version="1.0.0")

QUESTION = "What is your name?"
PROMPT = "Say hello"


class Name(BaseModel):
    name: str = Field(description="your name")


def _sampling_messages() -> list[types.SamplingMessage]:
    return [types.SamplingMessage(role="user",
                                  content=types.TextContent(type="text", text=PROMPT))]


def _model_said(answer: types.CreateMessageResult) -> str:
    content = answer.content
    text = content.text if isinstance(content, types.TextContent) else repr(content)
    return f"model {answer.model} said: {text}"


# -- the session-era way: a request to the client mid-call -----------------------------


@mcp.tool()
async def ask_by_request(ctx: Context) -> str:
    """Ask the user their name with an elicitation/create request, mid-call."""
    answer = await ctx.elicit(QUESTION, Name)
    if isinstance(answer, AcceptedElicitation):
        return f"hello {answer.data.name}"
    return f"action: {answer.action}"


@mcp.tool()
async def sample_by_request(ctx: Context) -> str:
    """Ask the client's LLM with a sampling/createMessage request, mid-call."""
    answer = await ctx.session.create_message(_sampling_messages(), max_tokens=20)
    return _model_said(answer)


# -- the 2026-07-28 way: input_required, answered when the client calls again ----------


@mcp.tool()
async def ask_by_input_required(ctx: Context) -> str | types.InputRequiredResult:
    """Ask the user their name by answering input_required (multi round-trip)."""
    responses = ctx.input_responses or {}
    answer = responses.get("name")
    if not isinstance(answer, types.ElicitResult):
        schema = {"type": "object", "properties": {"name": {"type": "string"}},
                  "required": ["name"]}
        return types.InputRequiredResult(input_requests={"name": types.ElicitRequest(
            params=types.ElicitRequestFormParams(message=QUESTION,
                                                 requested_schema=schema))})
    if answer.action == "accept" and answer.content:
        return f"hello {answer.content.get('name')}"
    return f"action: {answer.action}"


@mcp.tool()
async def sample_by_input_required(ctx: Context) -> str | types.InputRequiredResult:
    """Ask the client's LLM by answering input_required (multi round-trip)."""
    responses = ctx.input_responses or {}
    answer = responses.get("llm")
    if not isinstance(answer, types.CreateMessageResult):
        return types.InputRequiredResult(input_requests={"llm": types.CreateMessageRequest(
            params=types.CreateMessageRequestParams(messages=_sampling_messages(),
                                                    max_tokens=20))})
    return _model_said(answer)


if __name__ == "__main__":
    mcp.run()
