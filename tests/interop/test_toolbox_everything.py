"""The Toolbox in front of server-everything (the TypeScript SDK's reference server, over
stdio): every one of its tools converts to each provider's format, and one model turn that
calls several of them at once (text, an image, structured content, an embedded resource, a
tool that requires a task, bad arguments) is answered in the order of the calls.

The model's turns are plain dicts here; the provider SDKs' own objects are exercised
against the scripted model endpoint in ``test_toolbox.py``.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, Iterator, List

import pytest

import mcp_sync
from mcp_sync import Client, Toolbox

from .._peer_processes import everything_command

WAIT = 30.0
VALID_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@pytest.fixture
def everything() -> Iterator[Client]:
    with mcp_sync.connect(everything_command(), name="every", timeout=WAIT) as client:
        yield client


def named(toolbox: Toolbox, tool: str) -> str:
    """The toolbox's name for server-everything's ``tool``."""
    return f"every__{tool}"


def test_every_tool_converts_to_every_format(everything: Client) -> None:
    toolbox = Toolbox(everything)
    listed = {tool.name for tool in everything.list_tools()}
    assert {"echo", "get-sum", "get-tiny-image", "simulate-research-query"} <= listed
    openai = toolbox.to_openai()
    strict = toolbox.to_openai(strict=True)
    anthropic = toolbox.to_anthropic()
    responses = toolbox.to_openai_responses()
    assert len(openai) == len(strict) == len(anthropic) == len(responses) == len(listed)
    names = [tool["function"]["name"] for tool in openai]
    assert sorted(names) == sorted(named(toolbox, tool) for tool in listed)
    assert all(VALID_NAME.match(name) for name in names)
    assert [tool["name"] for tool in anthropic] == names
    assert [tool["name"] for tool in responses] == names
    for tool in strict:
        function = tool["function"]
        if function.get("strict"):  # OpenAI's strict subset: closed, every key required
            parameters = function["parameters"]
            assert parameters["additionalProperties"] is False
            assert sorted(parameters["required"]) == sorted(parameters["properties"])
    summing = next(t for t in anthropic if t["name"] == named(toolbox, "get-sum"))
    assert set(summing["input_schema"]["properties"]) == {"a", "b"}


def test_one_turn_calls_several_tools_at_once(everything: Client) -> None:
    toolbox = Toolbox(everything, timeout=WAIT)
    uses: List[Dict[str, Any]] = [
        {"type": "tool_use", "id": "u1", "name": named(toolbox, "get-sum"),
         "input": {"a": 2, "b": 40}},
        {"type": "tool_use", "id": "u2", "name": named(toolbox, "get-tiny-image"),
         "input": {}},
        {"type": "tool_use", "id": "u3", "name": named(toolbox, "echo"),
         "input": {"message": "hello <b>"}},
        {"type": "tool_use", "id": "u4", "name": named(toolbox, "get-sum"),
         "input": {"a": "two"}},  # the server refuses: an error the model reads
        {"type": "tool_use", "id": "u5", "name": named(toolbox, "get-resource-reference"),
         "input": {"resourceType": "Text", "resourceId": 1}},
        {"type": "tool_use", "id": "u6", "name": named(toolbox, "simulate-research-query"),
         "input": {"topic": "threads"}},  # taskSupport "required": run as a task
        {"type": "tool_use", "id": "u7", "name": "every__missing", "input": {}},
    ]
    answer = toolbox.answer_anthropic({"content": uses})
    assert answer is not None and answer["role"] == "user"
    results = answer["content"]
    assert [r["tool_use_id"] for r in results] == ["u1", "u2", "u3", "u4", "u5", "u6", "u7"]
    assert [r.get("is_error", False) for r in results] == [
        False, False, False, True, False, False, True]

    def texts(result: Dict[str, Any]) -> str:
        return " ".join(b["text"] for b in result["content"] if b["type"] == "text")

    assert "42" in texts(results[0])
    image = [b for b in results[1]["content"] if b["type"] == "image"]
    assert len(image) == 1 and image[0]["source"]["media_type"] == "image/png"
    assert image[0]["source"]["data"]  # base64, passed through
    assert "hello <b>" in texts(results[2])
    assert texts(results[3])  # the server's validation message, as text
    assert "Resource 1" in json.dumps(results[4]["content"])
    assert "threads" in texts(results[5])  # the research report, after the task completed
    assert "no tool named 'every__missing'" in texts(results[6])


def test_openai_answers_and_structured_content(everything: Client) -> None:
    toolbox = Toolbox(everything, timeout=WAIT)
    message = {"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function", "function": {
            "name": named(toolbox, "get-structured-content"),
            "arguments": json.dumps({"location": "Chicago"})}},
        {"id": "c2", "type": "function", "function": {
            "name": named(toolbox, "get-sum"), "arguments": "{not json"}},
    ]}
    answers = toolbox.answer_openai(message)
    assert [a["tool_call_id"] for a in answers] == ["c1", "c2"]
    assert all(a["role"] == "tool" for a in answers)
    weather = answers[0]["content"]
    assert "temperature" in weather and not weather.startswith("Error")
    assert answers[1]["content"].startswith("Error: the arguments for every__get-sum are not "
                                            "valid JSON")
