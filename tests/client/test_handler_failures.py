"""A handler that raises tells the server only that it failed: its exception's text (an
API key, a path, a stack) goes to the client's log, never on the wire, for sampling,
elicitation and roots, in both eras.

The peer is the project's fake stdio server: its ``ask`` tool sends the client a request
and reports the answer it got; ``transcript`` reports every message it received.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Dict

import pytest

import mcp_sync
from mcp_sync import CallbackError

from ..conftest import fake_server_command
from .test_handlers import KEYWORD, PARAMS

T = 30.0
SECRET = "sk-live-7f3a9c-NOT-FOR-THE-SERVER"
GENERIC = {
    "sampling/createMessage": "the client's sampling handler failed",
    "elicitation/create": "the client's elicitation handler failed",
    "roots/list": "the client's roots handler failed",
}



def failing_handler(params: Any = None) -> Any:
    raise RuntimeError(f"could not use key {SECRET} from /home/alice/.config/llm/key.txt")


def transcript(client: mcp_sync.Client) -> str:
    return client.call_tool("transcript").text or ""


@pytest.mark.parametrize("method", list(PARAMS))
def test_the_server_gets_a_generic_error_and_the_log_gets_the_detail(
    method: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="mcp_sync")
    with mcp_sync.connect(fake_server_command(), timeout=T,
                          **{KEYWORD[method]: failing_handler}) as client:
        assert client.era == "session"
        answer = json.loads(client.call_tool("ask", {"method": method,
                                                     "params": PARAMS[method]}).text)
        # What the server received, as it reports it.
        assert answer == {"error": {"code": -32603, "message": GENERIC[method]}}
        assert SECRET not in transcript(client)
        assert "alice" not in transcript(client)
    failures = [record for record in caplog.records
                if record.levelno >= logging.WARNING and record.exc_info is not None]
    assert len(failures) == 1 and method in failures[0].getMessage()
    assert SECRET in caplog.text  # the traceback, in the client's log


def test_a_handler_raising_server_error_still_chooses_what_the_server_reads() -> None:
    def refusing(params: Any) -> Any:
        raise mcp_sync.ServerError(-32602, "no model for that request")

    with mcp_sync.connect(fake_server_command(), timeout=T, sampling_handler=refusing) as client:
        answer = json.loads(client.call_tool("ask", {
            "method": "sampling/createMessage",
            "params": PARAMS["sampling/createMessage"]}).text)
    assert answer == {"error": {"code": -32602, "message": "no model for that request"}}


@pytest.mark.parametrize("method", list(PARAMS))
def test_stateless_handler_failures_stay_local(method: str) -> None:
    """In the 2026-07-28 era there is no error answer to an input request: the call fails
    with CallbackError on the caller's side, and nothing of the exception is sent."""
    requests: Dict[str, Any] = {"q": {"method": method, "params": PARAMS[method]}}
    with mcp_sync.connect(fake_server_command("--stateless"), timeout=T,
                          **{KEYWORD[method]: failing_handler}) as client:
        assert client.era == "stateless"
        with pytest.raises(CallbackError) as info:
            client.call_tool("needs_input", {"input_requests": requests})
        assert SECRET in str(info.value)  # the caller's own exception says it
        future = client.call_tool_future("needs_input", {"input_requests": requests})
        with pytest.raises(CallbackError):
            future.result(T)
        sent = transcript(client)
        assert SECRET not in sent and "alice" not in sent
        calls = [m for m in json.loads(sent) if m.get("method") == "tools/call"
                 and m["params"]["name"] == "needs_input"]
        assert len(calls) == 2 and all("inputResponses" not in m["params"] for m in calls)
