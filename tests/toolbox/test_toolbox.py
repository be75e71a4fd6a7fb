"""Toolbox: MCP tools in front of a model, over real servers and the real provider SDKs.

The MCP side is real server processes: the embedded demo server, tests/servers/
fake_stdio.py, tests/servers/toolbox_server.py (odd names, schemas and results; tools that
make concurrency observable) and, marked ``peer``, the official SDK's server. The model
side is the real ``openai``, ``anthropic`` and ``langchain-core`` packages pointed at a
scripted endpoint on 127.0.0.1 (tests/servers/model_endpoint.py), which returns tool
calls and records the tool results the SDKs send back. Concurrency is proven with tools
that wait for each other (bounded), never with sleeps.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import Any, Dict, Iterator, List

import pytest

import mcp_sync
import mcp_sync.toolbox._toolbox
from mcp_sync import Client, InvalidToolCall, Manager, RequestTimeout, Toolbox, ToolError

from .._procs import python_stdout
from ..conftest import PY, SERVERS, fake_server_command
from ..helpers import Notified
from ..servers.model_endpoint import (
    CHAT,
    MESSAGES,
    RESPONSES,
    ModelEndpoint,
    chat_text,
    chat_tool_calls,
    messages_text,
    messages_tool_use,
    responses_calls,
    responses_text,
)

DEMO = [PY, "-m", "mcp_sync.demo_server"]
BOX = [PY, str(SERVERS / "toolbox_server.py")]
NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@pytest.fixture
def demo() -> Iterator[Client]:
    with mcp_sync.connect(DEMO, name="demo") as client:
        yield client


@pytest.fixture
def box() -> Iterator[Client]:
    with mcp_sync.connect(BOX, name="box") as client:
        yield client


@pytest.fixture
def fake() -> Iterator[Client]:
    with mcp_sync.connect(fake_server_command(), name="fake") as client:
        yield client


@pytest.fixture
def model() -> Iterator[ModelEndpoint]:
    with ModelEndpoint() as endpoint:
        yield endpoint


@pytest.fixture
def openai_client(model: ModelEndpoint) -> Iterator[Any]:
    import openai

    client = openai.OpenAI(api_key="test", base_url=f"{model.url}/v1", max_retries=0,
                           timeout=30.0)
    yield client
    client.close()


@pytest.fixture
def anthropic_client(model: ModelEndpoint) -> Iterator[Any]:
    import anthropic

    client = anthropic.Anthropic(api_key="test", base_url=model.url, max_retries=0,
                                 timeout=30.0)
    yield client
    client.close()


def names_of(toolbox: Toolbox) -> List[str]:
    return [tool["name"] for tool in toolbox.tools()]


# -- the three provider loops, end to end -----------------------------------------------------


def test_openai_chat_loop_answers_every_call_in_order(
        demo: Client, fake: Client, box: Client, model: ModelEndpoint, openai_client: Any) -> None:
    toolbox = Toolbox([demo, fake, box])
    model.chat(chat_tool_calls([
        ("c1", "demo__add", '{"a": 2, "b": 3}'),
        ("c2", "demo__echo", '{"text": '),                 # cut-off JSON
        ("c3", "nope__missing", "{}"),                     # no such tool
        ("c4", "demo__image", '{"width": 2, "height": 2}'),
        ("c5", "fake__fail", '{"message": "disk full"}'),  # an isError result
        ("c6", "box__media", ""),                          # no arguments at all
        ("c7", "demo__add", "[1, 2]"),                     # not an object
    ]), chat_text("done"))

    messages: List[Any] = [{"role": "user", "content": "go"}]
    response = openai_client.chat.completions.create(
        model="scripted", messages=messages, tools=toolbox.to_openai())
    message = response.choices[0].message
    messages.append(message)
    answers = toolbox.answer_openai(message)
    messages += answers
    final = openai_client.chat.completions.create(
        model="scripted", messages=messages, tools=toolbox.to_openai())
    assert final.choices[0].message.content == "done"

    first, second = model.bodies(CHAT)
    offered = [tool["function"]["name"] for tool in first["tools"]]
    assert {"demo__add", "demo__image", "fake__fail", "box__media"} <= set(offered)
    assert all(tool["type"] == "function" and "parameters" in tool["function"]
               for tool in first["tools"])
    sent = second["messages"]
    assert [c["id"] for c in sent[1]["tool_calls"]] == [f"c{i}" for i in range(1, 8)]
    tool_messages = sent[2:]
    assert [m["role"] for m in tool_messages] == ["tool"] * 7
    assert [m["tool_call_id"] for m in tool_messages] == [f"c{i}" for i in range(1, 8)]
    content = [m["content"] for m in tool_messages]
    assert content[0] == '{"sum": 5}'
    assert content[1].startswith("Error: the arguments for demo__echo are not valid JSON")
    assert content[2] == "Error: there is no tool named 'nope__missing'; no call was made"
    assert re.fullmatch(r"\[image: image/png, \d+ bytes; this reply can carry text only\]\n"
                        r"a 2x2 gradient", content[3])
    assert content[4] == "Error: disk full"
    assert content[5].split("\n") == [
        "caption",
        "[image: image/png, 67 bytes; this reply can carry text only]",
        "[image: image/bmp, 62 bytes; this reply can carry text only]",
        "[audio: audio/wav, 100 bytes; audio cannot be passed on here]",
        "[resource file:///notes.txt (text/plain)]",
        "the notes",
        "[file file:///report.pdf: application/pdf, 13 bytes; this reply can carry text only]",
        "[file file:///data.bin: application/octet-stream, 30 bytes; this reply can carry "
        "text only]",
        "[resource link big.csv: file:///big.csv, text/csv]",
        '{"rows": 3}',
    ]
    assert content[6] == ("Error: the arguments for demo__add must be a JSON object, not "
                          "list; no call was made")


def test_openai_responses_loop_passes_images_and_files(
        demo: Client, box: Client, model: ModelEndpoint, openai_client: Any) -> None:
    toolbox = Toolbox([demo, box])
    model.responses(responses_calls([
        ("r1", "box__media", "{}"),
        ("r2", "nope", "{}"),
        ("r3", "box__fail", '{"message": "bad"}'),
        ("r4", "demo__add", '{"a": 1, "b": 1}'),
        ("r5", "demo__add", '{"a": 1'),
    ]), responses_text("done"))

    items: List[Any] = [{"role": "user", "content": "go"}]
    response = openai_client.responses.create(
        model="scripted", input=items, tools=toolbox.to_openai_responses())
    items += response.output
    items += toolbox.answer_openai_responses(response)
    final = openai_client.responses.create(
        model="scripted", input=items, tools=toolbox.to_openai_responses())
    assert final.output_text == "done"

    first, second = model.bodies(RESPONSES)
    tool = next(t for t in first["tools"] if t["name"] == "demo__add")
    assert tool["type"] == "function" and tool["strict"] is False
    outputs = [i for i in second["input"] if i.get("type") == "function_call_output"]
    calls = [i for i in second["input"] if i.get("type") == "function_call"]
    assert [c["call_id"] for c in calls] == ["r1", "r2", "r3", "r4", "r5"]
    assert [o["call_id"] for o in outputs] == ["r1", "r2", "r3", "r4", "r5"]
    media = outputs[0]["output"]
    assert [part["type"] for part in media] == [
        "input_text", "input_image", "input_text", "input_text", "input_text", "input_file",
        "input_text", "input_text", "input_text"]
    assert media[1]["image_url"].startswith("data:image/png;base64,iVBOR")
    assert media[2]["text"].startswith("[image: image/bmp, 62 bytes;")
    assert media[5]["filename"] == "report.pdf"
    assert media[5]["file_data"].startswith("data:application/pdf;base64,")
    assert media[8]["text"] == '{"rows": 3}'
    assert outputs[1]["output"] == "Error: there is no tool named 'nope'; no call was made"
    assert outputs[2]["output"] == "Error: bad"
    assert outputs[3]["output"] == '{"sum": 2}'
    assert outputs[4]["output"].startswith("Error: the arguments for demo__add are not valid")


def test_anthropic_loop_marks_errors_and_keeps_images(
        demo: Client, box: Client, model: ModelEndpoint, anthropic_client: Any) -> None:
    toolbox = Toolbox([demo, box])
    model.messages(messages_tool_use([
        ("t1", "demo__image", {"width": 3, "height": 1}),
        ("t2", "demo__nope", {}),
        ("t3", "box__fail", {"message": "no such file"}),
        ("t4", "demo__add", {"a": 1, "b": 2, "c": 3}),  # the server refuses
        ("t5", "box__media", {}),
        ("t6", "demo__add", {"a": 1, "b": 2}),
    ]), messages_text("done"))

    messages: List[Any] = [{"role": "user", "content": "go"}]
    response = anthropic_client.messages.create(
        model="scripted", max_tokens=100, messages=messages, tools=toolbox.to_anthropic())
    messages.append({"role": "assistant", "content": response.content})
    answer = toolbox.answer_anthropic(response)
    assert answer is not None
    messages.append(answer)
    final = anthropic_client.messages.create(
        model="scripted", max_tokens=100, messages=messages, tools=toolbox.to_anthropic())
    assert final.content[0].text == "done"

    first, second = model.bodies(MESSAGES)
    assert {"name", "description", "input_schema"} <= set(first["tools"][0])
    turn = second["messages"][-1]
    assert turn["role"] == "user"
    results = turn["content"]
    assert [r["type"] for r in results] == ["tool_result"] * 6
    assert [r["tool_use_id"] for r in results] == ["t1", "t2", "t3", "t4", "t5", "t6"]
    assert [r.get("is_error", False) for r in results] == [
        False, True, True, True, False, False]
    image, caption = results[0]["content"]
    assert image["type"] == "image" and image["source"]["media_type"] == "image/png"
    assert caption == {"type": "text", "text": "a 3x1 gradient"}
    assert results[1]["content"] == [{"type": "text", "text":
                                      "there is no tool named 'demo__nope'; no call was made"}]
    assert results[2]["content"] == [{"type": "text", "text": "no such file"}]
    kinds = [block["type"] for block in results[4]["content"]]
    assert kinds == ["text", "image", "text", "text", "text", "document", "text", "text",
                     "text"]
    assert results[4]["content"][5]["source"]["media_type"] == "application/pdf"
    assert results[5]["content"] == [{"type": "text", "text": '{"sum": 3}'}]


def test_langchain_tools_run_sync_and_async(
        demo: Client, box: Client, model: ModelEndpoint, openai_client: Any) -> None:
    from langchain_core.messages import ToolMessage
    from langchain_core.utils.function_calling import convert_to_openai_tool

    toolbox = Toolbox([demo, box])
    tools = {tool.name: tool for tool in toolbox.to_langchain()}
    assert set(tools) == set(names_of(toolbox))
    model.chat(chat_tool_calls([
        ("l1", "demo__add", '{"a": 4, "b": 5}'),
        ("l2", "box__fail", '{"message": "nope"}'),
        ("l3", "demo__image", '{"width": 1, "height": 1}'),
    ]))
    response = openai_client.chat.completions.create(
        model="scripted", messages=[{"role": "user", "content": "go"}],
        tools=[convert_to_openai_tool(tool) for tool in tools.values()])
    sent = model.bodies(CHAT)[0]["tools"]
    add = next(t for t in sent if t["function"]["name"] == "demo__add")
    assert add["function"]["parameters"]["required"] == ["a", "b"]

    replies = []
    for call in response.choices[0].message.tool_calls:
        tool_call = {"type": "tool_call", "id": call.id, "name": call.function.name,
                     "args": json.loads(call.function.arguments)}
        replies.append(tools[call.function.name].invoke(tool_call))
    assert all(isinstance(reply, ToolMessage) for reply in replies)
    assert replies[0].content == '{"sum": 9}' and replies[0].status == "success"
    assert replies[0].artifact.structured == {"sum": 9}
    assert replies[1].status == "error" and replies[1].content == "Error: nope"
    image, caption = replies[2].content
    assert image["type"] == "image" and image["mime_type"] == "image/png"
    assert caption == {"type": "text", "text": "a 1x1 gradient"}

    async def both() -> List[Any]:
        # wait_for blocks until signal runs: the coroutine must not block the loop
        return list(await asyncio.gather(
            tools["box__wait_for"].ainvoke({"key": "lc"}),
            tools["box__signal"].ainvoke({"key": "lc"})))

    assert asyncio.run(both()) == ["signalled lc", "sent lc"]


# -- running a turn -------------------------------------------------------------------------


def calls(*pairs: Any) -> Dict[str, Any]:
    """A Chat Completions assistant message (a dict) with these (name, arguments) calls."""
    return {"role": "assistant", "tool_calls": [
        {"id": f"id{i}", "type": "function",
         "function": {"name": name, "arguments": json.dumps(arguments)}}
        for i, (name, arguments) in enumerate(pairs)]}


def test_the_calls_of_a_turn_run_at_once(box: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    started: List[str] = []
    real_start = mcp_sync.toolbox._toolbox.start_thread

    def counted(target: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        started.append(name)
        return real_start(target, name, *args, **kwargs)

    monkeypatch.setattr(mcp_sync.toolbox._toolbox, "start_thread", counted)
    toolbox = Toolbox(box)
    answers = toolbox.answer_openai(calls(*[("box__meet", {"key": "k3", "parties": 3})] * 3))
    assert [a["content"] for a in answers] == ["met"] * 3
    # a client's calls go out as futures from the caller's thread: no thread per turn
    assert started == []


def test_at_most_max_workers_calls_run_at_once(box: Client) -> None:
    toolbox = Toolbox(box, max_workers=2)
    answers = toolbox.answer_openai(calls(*[("box__meet", {"key": "k2", "parties": 2})] * 5))
    assert [a["content"] for a in answers] == ["met"] * 5
    # a third call never joins two running ones: each waits its second for nothing
    three = {"key": "k3", "parties": 3, "wait": 1.0}
    answers = toolbox.answer_openai(calls(*[("box__meet", three)] * 3))
    assert all(a["content"].startswith("Error: alone: only ") for a in answers), answers
    assert toolbox.call("box__peak", {"key": "k2"}).text == "2"
    assert toolbox.call("box__peak", {"key": "k3"}).text == "2"


def test_answers_follow_the_calls_not_their_completion(box: Client) -> None:
    toolbox = Toolbox(box)
    # wait_for finishes only after signal has: the answers must still be in call order
    answers = toolbox.answer_openai(calls(("box__wait_for", {"key": "o"}),
                                          ("box__signal", {"key": "o"})))
    assert [a["content"] for a in answers] == ["signalled o", "sent o"]
    assert [a["tool_call_id"] for a in answers] == ["id0", "id1"]


def test_a_timeout_is_an_answer_and_the_other_calls_finish(box: Client) -> None:
    toolbox = Toolbox(box, timeout=0.5)
    answers = toolbox.answer_openai(calls(("box__sleep", {"seconds": 60}),
                                          ("box__bump", {"key": "t"})))
    assert answers[0]["content"] == (
        "Error: box__sleep did not answer within 0.5 s; the call was cancelled")
    assert answers[1]["content"] == "1"


def test_a_dead_server_is_an_answer_and_the_other_calls_finish(demo: Client,
                                                               fake: Client) -> None:
    toolbox = Toolbox([fake, demo])
    answers = toolbox.answer_openai(calls(("fake__crash", {"code": 7}),
                                          ("demo__add", {"a": 1, "b": 1})))
    assert answers[0]["content"].startswith("Error: the server of fake__crash is unavailable")
    assert answers[1]["content"] == '{"sum": 2}'
    later = toolbox.answer_openai(calls(("fake__echo", {"text": "x"}),
                                        ("demo__echo", {"text": "y"})))
    assert later[0]["content"].startswith("Error: the server of fake__echo is unavailable")
    assert later[1]["content"] == "y"


def test_a_closed_clients_tool_is_unavailable_not_failed(demo: Client) -> None:
    # Closed by its owner while the model still holds the tool list: the server is
    # unavailable (a state the model can tell the user), not a tool that failed.
    fake = mcp_sync.connect(fake_server_command(), name="fake")
    try:
        toolbox = Toolbox([fake, demo])
        assert "fake__echo" in names_of(toolbox)
    finally:
        fake.close()
    answers = toolbox.answer_openai(calls(("fake__echo", {"text": "x"}),
                                          ("demo__echo", {"text": "y"})))
    assert answers[0]["content"].startswith("Error: the server of fake__echo is unavailable: ")
    assert answers[1]["content"] == "y"
    result = toolbox.call("fake__echo", {"text": "x"})
    assert result.is_error
    assert result.text.startswith("the server of fake__echo is unavailable: ")


def test_a_source_that_fails_to_list_keeps_its_last_tools(
        demo: Client, caplog: pytest.LogCaptureFixture) -> None:
    changed = Notified("notifications/tools/list_changed")
    with mcp_sync.connect(fake_server_command(), name="fake",
                          notification_handler=changed) as fake:
        toolbox = Toolbox([fake, demo])
        # the client drops its cached list on this notification, so it must ask again
        notify = {"method": "notifications/tools/list_changed"}
        assert toolbox.call("fake__notify", notify).text == "sent"
        changed.wait(10.0)
        assert toolbox.call("fake__crash").is_error
        with caplog.at_level(logging.WARNING, logger="mcp_sync.toolbox"):
            assert {"fake__echo", "demo__echo"} <= set(names_of(toolbox))
        assert caplog.records[0].getMessage().startswith(
            "listing the tools of fake failed (")
        assert caplog.records[0].getMessage().endswith("); keeping its last list")
        assert toolbox.call("fake__echo", {"text": "x"}).text.startswith(
            "the server of fake__echo is unavailable")


def test_a_manager_routes_calls_and_its_down_server_answers_with_an_error() -> None:
    config = {"mcpServers": {
        "demo": {"command": PY, "args": DEMO[1:]},
        "fake": {"command": PY, "args": fake_server_command()[1:]},
    }}
    with Manager(config, backoff=(30.0,)) as manager:
        toolbox = Toolbox(manager, wait_for_server=0)  # 0: no waiting for a down server
        names = names_of(toolbox)
        assert {"demo__add", "demo__image", "fake__echo", "fake__slow"} <= set(names)
        answers = toolbox.answer_anthropic([
            {"type": "tool_use", "id": "m1", "name": "demo__add", "input": {"a": 2, "b": 2}},
            {"type": "tool_use", "id": "m2", "name": "fake__crash", "input": {}},
        ])
        assert answers is not None
        assert answers["content"][0]["content"] == [{"type": "text", "text": '{"sum": 4}'}]
        assert answers["content"][1]["is_error"] is True
        # the manager keeps a reconnecting server's tools listed; calls fail at once
        # (tests/toolbox/test_toolbox_deferred.py: calls that wait for the server)
        assert "fake__echo" in names_of(toolbox)
        result = toolbox.call("fake__echo", {"text": "x"})
        assert result.is_error
        assert result.text.startswith("the server of fake__echo is unavailable: server 'fake' "
                                      "is down and reconnecting")


def test_raise_errors_raises_after_every_call_ran(box: Client) -> None:
    toolbox = Toolbox(box, raise_errors=True, timeout=0.5)
    with pytest.raises(InvalidToolCall) as raised:
        toolbox.answer_openai(calls(("box__bump", {"key": "r"}), ("nope", {}),
                                    ("box__bump", {"key": "r"})))
    assert raised.value.tool == "nope"
    assert str(raised.value) == "there is no tool named 'nope'; no call was made"
    assert toolbox.call("box__count_of", {"key": "r"}).text == "2"
    with pytest.raises(ToolError) as failed:
        toolbox.call("box__fail", {"message": "boom"})
    assert failed.value.tool == "box__fail" and failed.value.result.text == "boom"
    with pytest.raises(RequestTimeout):
        toolbox.call("box__sleep", {"seconds": 60})


def test_call_is_provider_neutral(demo: Client) -> None:
    toolbox = Toolbox(demo)
    tools = {tool["name"]: tool for tool in toolbox.tools()}
    assert tools["demo__add"]["server"] == "demo" and tools["demo__add"]["tool"] == "add"
    assert tools["demo__add"]["annotations"] == {"readOnlyHint": True, "idempotentHint": True}
    assert tools["demo__add"]["schema"]["required"] == ["a", "b"]
    assert toolbox.call("demo__add", {"a": 1, "b": 2}).structured == {"sum": 3}
    assert toolbox.call("demo__add", '{"a": 2, "b": 2}').structured == {"sum": 4}
    missing = toolbox.call("demo__gone")
    assert missing.is_error and missing.text.startswith("there is no tool named 'demo__gone'")


def test_answers_read_dicts_whole_responses_and_lists(demo: Client) -> None:
    toolbox = Toolbox(demo)
    message = calls(("demo__add", {"a": 1, "b": 1}))
    assert toolbox.answer_openai({"choices": [{"message": message}]})[0]["content"] == (
        '{"sum": 2}')
    assert toolbox.answer_openai({"role": "assistant", "content": "hi"}) == []
    assert toolbox.answer_openai_responses([
        {"type": "function_call", "call_id": "x", "name": "demo__echo",
         "arguments": '{"text": "hi"}'}]) == [
        {"type": "function_call_output", "call_id": "x", "output": "hi"}]
    assert toolbox.answer_openai_responses({"output": []}) == []
    assert toolbox.answer_anthropic({"content": [{"type": "text", "text": "hi"}]}) is None
    refused = toolbox.answer_anthropic([{"type": "tool_use", "id": "y", "name": "demo__add",
                                         "input": ["not", "an", "object"]}])
    assert refused == {"role": "user", "content": [{
        "type": "tool_result", "tool_use_id": "y", "is_error": True, "content": [{
            "type": "text", "text": "the arguments for demo__add must be a JSON object, not "
                                    "list; no call was made"}]}]}


# -- names, descriptions, schemas ------------------------------------------------------------


def test_names_are_valid_unique_readable_and_map_back(box: Client) -> None:
    toolbox = Toolbox(box)
    tools = toolbox.tools()
    names = [tool["name"] for tool in tools]
    assert all(NAME.match(name) for name in names)
    assert len(set(names)) == len(names) == len(box.list_tools())
    by_tool = {tool["tool"]: tool["name"] for tool in tools}
    assert by_tool["a_b"] == "box__a_b"  # needed no change: keeps the readable name
    assert re.fullmatch(r"box__a_b_[0-9a-f]{8}", by_tool["a.b"])
    assert re.fullmatch(r"box__a_b_[0-9a-f]{8}", by_tool["a:b"])
    assert by_tool["get.user v2"] == "box__get_user_v2"
    assert by_tool["caf\u00e9"] == "box__caf_"
    # the server's own name, as the model may read it: without its escape character
    assert by_tool["x[31mred"] == "box__x__31mred"
    assert len(by_tool["n" * 80]) == 64 and by_tool["n" * 80].startswith("box__nnnn")
    for tool, name in by_tool.items():
        if tool in ("a.b", "a:b", "a_b", "get.user v2", "caf\u00e9", "x[31mred", "n" * 80):
            assert toolbox.call(name).text == f"called {tool}"


def test_names_are_the_same_in_another_process(box: Client) -> None:
    code = (
        "import sys, json, mcp_sync\n"
        f"with mcp_sync.connect({BOX!r}, name='box') as c:\n"
        "    print(json.dumps([t['name'] for t in mcp_sync.Toolbox(c).tools()]))\n"
    )
    out = python_stdout(code, timeout=60)
    assert json.loads(out) == names_of(Toolbox(box))


def test_two_clients_of_one_server_name_both_keep_their_tools() -> None:
    with mcp_sync.connect([*BOX, "--label", "first"], name="same") as first, \
            mcp_sync.connect([*BOX, "--label", "second"], name="same") as second:
        toolbox = Toolbox([first, second])
        whoami = [t["name"] for t in toolbox.tools() if t["tool"] == "whoami"]
        assert whoami[0] == "same__whoami"
        assert re.fullmatch(r"same__whoami_[0-9a-f]{8}", whoami[1])
        assert [toolbox.call(name).text for name in whoami] == ["first", "second"]


def test_descriptions_are_data_cut_at_the_limits(box: Client) -> None:
    toolbox = Toolbox(box)
    openai_tools = {t["function"]["name"]: t["function"] for t in toolbox.to_openai()}
    anthropic_tools = {t["name"]: t for t in toolbox.to_anthropic()}
    for text in (openai_tools["box__hostile"]["description"],
                 anthropic_tools["box__hostile"]["description"]):
        assert text == "red [31mALERT[0m gnp.exe done"
    assert openai_tools["box__wordy"]["description"] == ("word " * 600)[:1023] + "\u2026"
    assert anthropic_tools["box__wordy"]["description"] == "word " * 600


def test_strict_schemas_or_a_logged_reason(box: Client, caplog: pytest.LogCaptureFixture
                                           ) -> None:
    toolbox = Toolbox(box)
    with caplog.at_level(logging.WARNING, logger="mcp_sync.toolbox"):
        strict = {t["function"]["name"]: t["function"] for t in toolbox.to_openai(strict=True)}
        toolbox.to_openai(strict=True)  # reasons are logged once, not every turn
    record = strict["box__record"]
    assert record["strict"] is True
    parameters = record["parameters"]
    assert "$ref" not in json.dumps(parameters) and "$defs" not in parameters
    assert parameters["required"] == list(parameters["properties"])
    assert parameters["additionalProperties"] is False
    assert parameters["properties"]["address"] == {
        "description": "where", "type": ["object", "null"],
        "properties": {"city": {"type": "string"}, "zip": {"type": ["string", "null"]}},
        "required": ["city", "zip"], "additionalProperties": False}
    assert parameters["properties"]["size"] == {"type": ["string", "null"],
                                                "enum": ["s", "m", "l", None]}
    assert parameters["properties"]["when"] == {"type": ["string", "null"],
                                                "format": "date-time"}
    for name in ("box__tree", "box__free", "box__remote", "box__huge"):
        assert strict[name]["strict"] is False, name
    assert strict["box__free"]["parameters"]["properties"] == {"options": {"type": "object"}}
    assert strict["box__huge"]["parameters"] == {
        "type": "object", "properties": {}, "additionalProperties": True}
    assert strict["box__remote"]["parameters"]["properties"] == {"x": {}}
    warnings = [r.getMessage() for r in caplog.records]
    assert warnings == [
        "tool box__remote: a $ref outside the schema is never fetched; the value is left "
        "open: 'http://127.0.0.1:9/never-fetched.json'",
        "tool box__huge: offered with an open schema: the input schema is 312522 bytes, "
        "over the bound of 262144",
        "tool box__x__31mred: removed 1 invisible or control characters (Unicode tags, "
        "zero-width, bidi or control characters) from its name, description, annotations "
        "and input schema before offering it",
        "tool box__hostile: removed 5 invisible or control characters (Unicode tags, "
        "zero-width, bidi or control characters) from its name, description, annotations "
        "and input schema before offering it",
        "tool box__tree: not strict: arguments.root.children[]: the $ref '#/$defs/Node' is "
        "recursive",
        "tool box__free: not strict: arguments.options: an object with no declared "
        "properties",
        "tool box__remote: not strict: arguments.x takes a value of any type",
        "tool box__huge: not strict: its input schema was replaced by an open one",
    ]


def test_the_nulls_of_a_strict_model_are_dropped_before_the_call(box: Client) -> None:
    toolbox = Toolbox(box)
    toolbox.to_openai(strict=True)
    answer = toolbox.answer_openai(calls(("box__record", {
        "name": "n", "tags": None, "address": {"city": "Oslo", "zip": None},
        "note": None, "size": None, "when": None,
        "target": {"city": "Rome", "zip": None}})))
    assert json.loads(answer[0]["content"]) == {"received": {
        "name": "n", "address": {"city": "Oslo"}, "note": None,  # note may be null
        "target": {"city": "Rome"}}}


def test_filters_by_server_name_glob_and_annotation(demo: Client, box: Client) -> None:
    assert set(names_of(Toolbox([demo, box], include="demo"))) == {
        "demo__echo", "demo__add", "demo__count", "demo__now", "demo__image",
        "demo__slow_report"}
    assert names_of(Toolbox([demo, box], include="add")) == ["demo__add"]
    assert names_of(Toolbox([demo, box], include=["box__meet", "demo__e*"])) == [
        "demo__echo", "box__meet"]
    assert not any(n.startswith("box__") for n in names_of(Toolbox([demo, box], exclude="box")))
    assert names_of(Toolbox([demo, box], read_only=True, exclude="box")) == [
        "demo__add", "demo__now", "demo__image"]
    assert set(names_of(Toolbox(box, read_only=True))) == {
        "box__meet", "box__peak", "box__count_of", "box__cancelled_calls", "box__whoami"}


# -- what mcp_sync imports ---------------------------------------------------------------------


def test_no_provider_sdk_is_imported() -> None:
    code = (
        "import sys, mcp_sync\n"
        f"with mcp_sync.connect({DEMO!r}) as c:\n"
        "    box = mcp_sync.Toolbox(c)\n"
        "    box.to_openai(strict=True); box.to_openai_responses(); box.to_anthropic()\n"
        "    box.tools(); box.answer_anthropic([{'type': 'tool_use', 'id': '1',\n"
        "        'name': box.tools()[0]['name'], 'input': {'text': 'x'}}])\n"
        "print(sorted(m for m in ('openai', 'anthropic', 'langchain_core', 'httpx')\n"
        "             if m in sys.modules))\n"
    )
    out = python_stdout(code, timeout=60)
    assert out.strip() == "[]"


def test_to_langchain_without_langchain_core_says_what_to_install(demo: Client) -> None:
    code = (
        "import sys, mcp_sync\n"
        "sys.modules['langchain_core'] = None\n"
        f"with mcp_sync.connect({DEMO!r}) as c:\n"
        "    try:\n"
        "        mcp_sync.Toolbox(c).to_langchain()\n"
        "    except ImportError as exc:\n"
        "        print(exc)\n"
    )
    out = python_stdout(code, timeout=60)
    assert "pip install 'mcp-sync-client[langchain]'" in out


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(TypeError):
        Toolbox([])
    with pytest.raises(TypeError):
        Toolbox("not a client")  # type: ignore[arg-type]
    with mcp_sync.connect(DEMO) as client:
        with pytest.raises(ValueError):
            Toolbox(client, max_workers=0)
        with pytest.raises(TypeError):
            Toolbox(client, include=[1])  # type: ignore[list-item]


# -- a peer built on the official SDK --------------------------------------------------------


@pytest.mark.peer
def test_tools_of_the_official_sdk_server() -> None:
    with mcp_sync.connect([PY, str(SERVERS / "sdk_server.py")], name="sdk") as client:
        toolbox = Toolbox(client)
        strict = {t["function"]["name"]: t["function"] for t in toolbox.to_openai(strict=True)}
        for name in ("sdk__add", "sdk__echo", "sdk__weather", "sdk__tiny_image"):
            assert strict[name]["strict"] is True, name
        answer = toolbox.answer_anthropic([
            {"type": "tool_use", "id": "1", "name": "sdk__tiny_image", "input": {}},
            {"type": "tool_use", "id": "2", "name": "sdk__link", "input": {}},
            {"type": "tool_use", "id": "3", "name": "sdk__weather", "input": {"city": "Oslo"}},
            {"type": "tool_use", "id": "4", "name": "sdk__fail", "input": {"message": "no"}},
            {"type": "tool_use", "id": "5", "name": "sdk__add", "input": {"a": 2, "b": 5}},
        ])
        assert answer is not None
        image, link, weather, fail, add = answer["content"]
        assert image["content"][0]["type"] == "image"
        assert image["content"][0]["source"]["media_type"] == "image/png"
        assert link["content"] == [{"type": "text", "text":
                                    "[resource link greeting: res://greeting, text/plain]"}]
        assert json.loads(weather["content"][0]["text"]) == {
            "city": "Oslo", "temperature": 21.5, "conditions": "sunny"}
        assert fail["is_error"] is True
        assert "is_error" not in add and add["content"][0]["text"] == "7"


def test_a_source_that_cannot_list_is_an_error_the_model_can_read() -> None:
    client = Client(mcp_sync.StdioTransport(PY, DEMO[1:]), name="idle")  # never connected
    toolbox = Toolbox(client)
    with pytest.raises(mcp_sync.ClientNotConnected):
        toolbox.to_openai()
    result = toolbox.call("idle__echo", {"text": "x"})
    assert result.is_error
    assert result.text.startswith("there is no tool named 'idle__echo' (listing the tools "
                                  "failed: ")
