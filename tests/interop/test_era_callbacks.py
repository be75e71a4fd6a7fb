"""Which protocol era a server's requests for input need, against a real server on the
official Python SDK (``tests/servers/sdk_callbacks_server.py``): its tools ask the user
(elicitation) and the client's LLM (sampling) the session era's way, with a request
mid-call, and the 2026-07-28 way, answering ``input_required``. Each kind works in its own
era only; the README ("Which era your handlers serve"), the handlers' docstrings and the
command line's error say so, and which option to use."""

from __future__ import annotations

import json
import subprocess
from typing import Any, Dict, List

import pytest

import mcp_sync
from mcp_sync import ServerError

from ..conftest import PY, ROOT, SERVERS

pytestmark = pytest.mark.peer

T = 30.0
SERVER = [PY, str(SERVERS / "sdk_callbacks_server.py")]
BY_REQUEST = {"ask_by_request": "elicitation/create",
              "sample_by_request": "sampling/createMessage"}
BY_INPUT_REQUIRED = ["ask_by_input_required", "sample_by_input_required"]
ANSWERS = {"ask_by_request": "hello Ada", "ask_by_input_required": "hello Ada",
           "sample_by_request": "model m said: hi", "sample_by_input_required":
           "model m said: hi"}


class Handlers:
    """An elicitation and a sampling handler that answer, and record what they were asked."""

    def __init__(self) -> None:
        self.asked: List[str] = []

    def elicit(self, params: Any) -> Dict[str, Any]:
        self.asked.append(params.message)
        return {"action": "accept", "content": {"name": "Ada"}}

    def sample(self, params: Any) -> Dict[str, Any]:
        self.asked.append(params.messages[0].content.text)
        return {"role": "assistant", "model": "m", "content": {"type": "text", "text": "hi"}}

    def kwargs(self) -> Dict[str, Any]:
        return {"elicitation_handler": self.elicit, "sampling_handler": self.sample}


def test_handlers_do_not_change_the_era_and_mid_call_requests_fail_over_2026() -> None:
    handlers = Handlers()
    with mcp_sync.connect(SERVER, timeout=T, **handlers.kwargs()) as client:
        assert (client.era, client.protocol_version) == ("stateless", "2026-07-28")
        for tool, method in BY_REQUEST.items():
            with pytest.raises(ServerError) as info:
                client.call_tool(tool, timeout=T)
            assert info.value.code == -32600
            assert f"Cannot send {method!r}" in info.value.message
            assert "no back-channel for server-initiated requests" in info.value.message
        assert handlers.asked == []  # nothing reached them
        for tool in BY_INPUT_REQUIRED:
            assert client.call_tool(tool, timeout=T).text == ANSWERS[tool]
    assert handlers.asked == ["What is your name?", "Say hello"]


def test_pinned_2025_11_25_serves_mid_call_requests_and_not_input_required() -> None:
    handlers = Handlers()
    with mcp_sync.connect(SERVER, timeout=T, protocol_version="2025-11-25",
                          **handlers.kwargs()) as client:
        assert client.era == "session"
        for tool in BY_REQUEST:
            assert client.call_tool(tool, timeout=T).text == ANSWERS[tool]
        assert handlers.asked == ["What is your name?", "Say hello"]
        for tool in BY_INPUT_REQUIRED:
            with pytest.raises(ServerError) as info:
                client.call_tool(tool, timeout=T)
            assert info.value.code == -32603


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "mcp_sync", *args, "--", *SERVER], capture_output=True,
                          text=True, timeout=60, cwd=str(ROOT), check=False)


HINT = ("  this tool asks the client for input mid-call (a request from the server), which a "
        "2026-07-28 connection cannot carry; a 2025-11-25 one can: --protocol-version "
        "2025-11-25 here, protocol_version=\"2025-11-25\" plus {handler}= in Python "
        "(mcp-sync itself answers no such request)")


@pytest.mark.parametrize(("tool", "handler"), [("ask_by_request", "elicitation_handler"),
                                               ("sample_by_request", "sampling_handler")])
def test_the_command_line_names_the_option_when_a_mid_call_request_fails(
        tool: str, handler: str) -> None:
    result = cli("call", tool)
    assert result.returncode == 1, result.stderr
    lines = result.stderr.splitlines()
    assert "no back-channel for server-initiated requests" in lines[0]
    assert lines[1:] == [HINT.format(handler=handler)]
    as_json = cli("--json", "call", tool)
    message = json.loads(as_json.stdout)["error"]["message"]
    assert message.endswith(HINT.format(handler=handler))


def test_the_command_line_says_nothing_more_once_the_era_is_pinned() -> None:
    # Over 2025-11-25 the request reaches mcp-sync, which answers none: the server says so.
    result = cli("--protocol-version", "2025-11-25", "call", "ask_by_request")
    assert result.returncode == 1
    assert result.stderr == ("mcp-sync: server error -32601 for tools/call: Method not "
                             "found: elicitation/create\n")
