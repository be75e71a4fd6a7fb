"""The example Flask app's ``POST /ask``: a whole tool loop with a language model.

``examples/flask_app/app.py`` is served for real by werkzeug's threaded server on
127.0.0.1, with its demo server; the real ``openai`` and ``anthropic`` SDKs in it talk to
the scripted model endpoint (``tests/servers/model_endpoint.py``), found through the SDKs'
own environment variables, as a real deployment would set them. The endpoint records
what the loop sent it: the demo server's tool results must reach the model, and the
model's last text must come back to the HTTP client.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from types import ModuleType
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from ..helpers import serve_wsgi
from ..servers.model_endpoint import (
    CHAT,
    MESSAGES,
    ModelEndpoint,
    chat_text,
    chat_tool_calls,
    messages_text,
    messages_tool_use,
)
from .test_contrib_flask import load_example

QUESTION = "What is 2.5 + 4, and what does the server echo?"


@pytest.fixture
def model() -> Iterator[ModelEndpoint]:
    with ModelEndpoint() as endpoint:
        yield endpoint


def use_provider(monkeypatch: pytest.MonkeyPatch, name: str, model: ModelEndpoint) -> None:
    """Set the provider up the way a deployment would: the examples' variables and the
    SDK's own key and base URL (pointing at the scripted endpoint)."""
    monkeypatch.setenv("MCP_SYNC_EXAMPLE_PROVIDER", name)
    monkeypatch.setenv("MCP_SYNC_EXAMPLE_MODEL", f"scripted-{name}")
    if name == "openai":
        monkeypatch.setenv("OPENAI_API_KEY", "key-for-the-test")
        monkeypatch.setenv("OPENAI_BASE_URL", f"{model.url}/v1")
    else:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "key-for-the-test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", model.url)


@pytest.fixture(params=["openai", "anthropic"])
def provider(request: pytest.FixtureRequest, model: ModelEndpoint,
             monkeypatch: pytest.MonkeyPatch) -> str:
    name: str = request.param
    use_provider(monkeypatch, name, model)
    return name


@pytest.fixture
def example(provider: str) -> Iterator[ModuleType]:
    module = load_example()  # reads the environment set by ``provider``
    module.app.config["LLM_OPTIONS"] = {"max_retries": 0, "timeout": 30.0}
    try:
        yield module
    finally:
        module.mcp.close()
        if "llm" in module.app.extensions:
            module.app.extensions["llm"].close()


@pytest.fixture
def serve(example: ModuleType) -> Iterator[str]:
    with serve_wsgi(example.app) as url:
        yield url


def post(url: str, body: Any) -> Tuple[int, Dict[str, Any]]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        with error:
            return error.code, json.loads(error.read())


def tool_calls_reply(provider: str, turn: int, server: str = "demo") -> Dict[str, Any]:
    """A model reply that calls the demo server's add and echo tools."""
    add, echo = f"{server}__add", f"{server}__echo"
    if provider == "openai":
        return chat_tool_calls([(f"add-{turn}", add, '{"a": 2.5, "b": 4}'),
                                (f"echo-{turn}", echo, f'{{"text": "turn {turn}"}}')])
    return messages_tool_use([(f"add-{turn}", add, {"a": 2.5, "b": 4}),
                              (f"echo-{turn}", echo, {"text": f"turn {turn}"})])


def script(model: ModelEndpoint, provider: str, *replies: Dict[str, Any]) -> str:
    path = CHAT if provider == "openai" else MESSAGES
    model.script(path, *replies)
    return path


def tool_results(provider: str, body: Dict[str, Any]) -> List[Tuple[str, str]]:
    """The ``(call id, text)`` tool results of the request body's last turn."""
    if provider == "openai":
        return [(m["tool_call_id"], m["content"]) for m in body["messages"]
                if m["role"] == "tool"][-2:]
    turn = body["messages"][-1]
    assert turn["role"] == "user"
    return [(block["tool_use_id"], "".join(part["text"] for part in block["content"]))
            for block in turn["content"] if block["type"] == "tool_result"]


def test_ask_runs_the_tools_the_model_calls_and_returns_its_answer(
        provider: str, model: ModelEndpoint, serve: str) -> None:
    final = chat_text if provider == "openai" else messages_text
    path = script(model, provider, tool_calls_reply(provider, 1), tool_calls_reply(provider, 2),
                  final("2.5 + 4 = 6.5"))

    status, answer = post(f"{serve}/ask", {"question": QUESTION})

    assert status == 200, answer
    assert answer == {"answer": "2.5 + 4 = 6.5", "provider": provider,
                      "model": f"scripted-{provider}"}
    first, second, third = model.bodies(path)
    assert first["model"] == f"scripted-{provider}"
    assert first["messages"] == [{"role": "user", "content": QUESTION}]
    offered = {tool["function"]["name"] if provider == "openai" else tool["name"]
               for tool in first["tools"]}
    assert {"demo__add", "demo__echo", "demo__image"} <= offered
    # What the demo server answered reached the model, each call's under its id, and the
    # conversation kept growing from turn to turn.
    assert tool_results(provider, second) == [("add-1", '{"sum": 6.5}'), ("echo-1", "turn 1")]
    assert tool_results(provider, third) == [("add-2", '{"sum": 6.5}'), ("echo-2", "turn 2")]
    assert len(third["messages"]) > len(second["messages"]) > len(first["messages"])
    # The SDK found its key where a deployment puts it.
    headers = {k.lower(): v for k, v in model.requests[0].headers.items()}
    assert (headers.get("authorization") == "Bearer key-for-the-test"
            or headers.get("x-api-key") == "key-for-the-test")


def test_ask_stops_at_the_turn_bound_when_the_model_keeps_calling_tools(
        provider: str, model: ModelEndpoint, example: ModuleType, serve: str) -> None:
    example.app.config["LLM_MAX_TURNS"] = 3
    path = script(model, provider, *(tool_calls_reply(provider, turn) for turn in range(1, 6)))

    status, answer = post(f"{serve}/ask", {"question": QUESTION})

    assert status == 502
    assert answer == {"error": "StillCallingTools",
                      "message": "the model still called tools after 3 turns"}
    bodies = model.bodies(path)
    assert len(bodies) == 3  # and no fourth model call
    assert tool_results(provider, bodies[2]) == [("add-2", '{"sum": 6.5}'),
                                                 ("echo-2", "turn 2")]


def test_ask_wants_a_question(provider: str, model: ModelEndpoint, serve: str) -> None:
    for body in ({}, {"question": ""}, ["what?"], {"question": 3}):
        status, answer = post(f"{serve}/ask", body)
        assert status == 400 and answer["error"] == "BadRequest"
    assert model.requests == []


@pytest.mark.parametrize("name", ["openai", "anthropic"])
def test_ask_without_a_model_configured_is_a_503_in_json(
        name: str, model: ModelEndpoint, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """No API key: ``POST /ask`` answers 503 in JSON saying what to set (it was an HTML
    500 with the SDK's traceback in the log), and the app serves the rest as before."""
    use_provider(monkeypatch, name, model)
    key = "OPENAI_API_KEY" if name == "openai" else "ANTHROPIC_API_KEY"
    monkeypatch.delenv(key)
    module = load_example()
    try:
        with serve_wsgi(module.app) as url:
            status, answer = post(f"{url}/ask", {"question": QUESTION})
            assert status == 503, answer
            assert answer == {"error": "ModelNotConfigured", "message": (
                f"no model is configured: set {key} (the {name} SDK reads it) and restart "
                "the app")}
            status, answer = post(f"{url}/ask", {})  # bad input is still a 400
            assert status == 400 and answer["error"] == "BadRequest"
    finally:
        module.mcp.close()
    assert model.requests == []
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
