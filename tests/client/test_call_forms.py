"""``call_tool`` and ``call_tool_future(...).result()`` behave the same (issue 13).

One suite, parametrised over the form of the call (``call_tool``, or
``call_tool_future`` waited on), the transport (stdio, Streamable HTTP) and the era
(session: 2025-11-25; stateless: 2026-07-28), wherever a behaviour exists in that
combination. Each test asserts one outcome for both forms: the result, or the
exception's type and key words, and what the server received (request ids, params,
rounds, headers).

The peer is ``tests/servers/forms_server.py``: the same FakeServer as a stdio child
process and behind ``McpHttpServer`` in this process (``stateless`` mode for 2026-07-28:
requests without a session, a closed response stream cancels).
"""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import pytest

import mcp_sync
from mcp_sync import (
    CallbackError,
    ConnectionClosed,
    HeaderMismatch,
    ProtocolError,
    ProtocolVersionRejected,
    RequestTimeout,
    ServerError,
    ToolError,
    TransportError,
)

from ..conftest import PY, SERVERS
from ..helpers import elicit, sample
from ..servers.forms_server import STATELESS, Forms
from ..servers.http_server import McpHttpServer, Recorded

WAIT = 10.0  # the bound on anything a test waits for; nothing comes near it
SESSION = "2025-11-25"
META_VERSION = "io.modelcontextprotocol/protocolVersion"

ELICITATION = {"method": "elicitation/create", "params": {
    "mode": "form", "message": "Please confirm",
    "requestedSchema": {"type": "object", "properties": {
        "confirmed": {"type": "boolean"}, "name": {"type": "string"}}}}}
SAMPLING = {"method": "sampling/createMessage", "params": {
    "messages": [{"role": "user", "content": {"type": "text", "text": "Capital of France?"}}],
    "maxTokens": 10}}
ROOTS = {"method": "roots/list", "params": {}}
ROOT_LIST = [{"uri": "file:///a", "name": "a"}, {"uri": "file:///b", "name": "b"}]


# -- the two forms ---------------------------------------------------------------------------


class Form:
    """One way to call a tool and wait for its result."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name

    def __call__(self, client: mcp_sync.Client, tool: str,
                 arguments: Optional[Dict[str, Any]] = None, **kwargs: Any) -> Any:
        if self.name == "call_tool":
            return client.call_tool(tool, arguments, **kwargs)
        return client.call_tool_future(tool, arguments, **kwargs).result(WAIT)


FORMS = [Form("call_tool"), Form("future")]


# -- the peers -------------------------------------------------------------------------------


class Peer:
    """The forms server over one transport, in one era."""

    def __init__(self, transport: str, era: str) -> None:
        self.transport = transport
        self.era = era
        self.stateless = era == STATELESS

    @property
    def http(self) -> bool:
        return self.transport == "http"

    def connect(self, **kwargs: Any) -> mcp_sync.Client:
        raise NotImplementedError

    def go_away(self, client: mcp_sync.Client) -> None:
        """The server goes away, mid-call."""
        raise NotImplementedError

    def stop(self) -> None:
        pass

    @staticmethod
    def received(client: mcp_sync.Client, method: str) -> List[Dict[str, Any]]:
        """The messages of ``method`` the server received (asked through the client)."""
        return json.loads(client.call_tool("received", {"method": method}).text)  # type: ignore[no-any-return]

    def calls(self, client: mcp_sync.Client, tool: str) -> List[Dict[str, Any]]:
        """The tools/call requests of ``tool`` the server received, in order."""
        return [m for m in self.received(client, "tools/call")
                if m["params"]["name"] == tool]


class StdioPeer(Peer):
    def connect(self, **kwargs: Any) -> mcp_sync.Client:
        command = [PY, str(SERVERS / "forms_server.py")]
        if self.stateless:
            command.append("--stateless")
        kwargs.setdefault("timeout", WAIT)
        return mcp_sync.connect(command, protocol_version=self.era, **kwargs)

    def go_away(self, client: mcp_sync.Client) -> None:
        pid = client.transport.pid  # type: ignore[attr-defined]
        assert pid is not None
        os.kill(pid, signal.SIGKILL)


class HttpPeer(Peer):
    def __init__(self, transport: str, era: str) -> None:
        super().__init__(transport, era)
        self.forms = Forms(self.stateless)
        self.server = McpHttpServer(self.forms.fake)
        if self.stateless:
            self.server.stateless = True
            self.server.on_stream_closed = self.forms.stream_closed
            self.server.post_hook = self.forms.param_header_check
        self.server.start()

    def connect(self, **kwargs: Any) -> mcp_sync.Client:
        kwargs.setdefault("timeout", WAIT)
        return mcp_sync.connect(self.server.url, transport="http", protocol_version=self.era,
                                **kwargs)

    def go_away(self, client: mcp_sync.Client) -> None:
        self.server.stop()

    def stop(self) -> None:
        self.server.stop()

    def posts(self, rpc_method: str) -> List[Recorded]:
        return self.server.matching(lambda r: r.rpc_method == rpc_method)


@pytest.fixture(params=FORMS, ids=repr)
def form(request: pytest.FixtureRequest) -> Form:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(params=[SESSION, STATELESS], ids=["session", "stateless"])
def era(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def peer(transport: str, era: str) -> Iterator[Peer]:
    made = HttpPeer(transport, era) if transport == "http" else StdioPeer(transport, era)
    try:
        yield made
    finally:
        made.stop()


stateless_only = pytest.mark.parametrize("era", [STATELESS], ids=["stateless"])
session_only = pytest.mark.parametrize("era", [SESSION], ids=["session"])
http_only = pytest.mark.parametrize("transport", ["http"])
stdio_only = pytest.mark.parametrize("transport", ["stdio"])


def in_thread(call: Callable[[], Any]) -> Tuple[threading.Thread, Dict[str, Any]]:
    """Run ``call`` on a thread of its own; the dict gets its ``result`` or ``error``."""
    outcome: Dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            outcome["error"] = exc

    thread = threading.Thread(target=run, name="test-call-forms", daemon=True)
    thread.start()
    return thread, outcome


def distinct(ids: List[Any]) -> bool:
    return len(set(map(repr, ids))) == len(ids)


# -- every transport and era -----------------------------------------------------------------


def test_a_plain_result(form: Form, peer: Peer) -> None:
    with peer.connect() as client:
        result = form(client, "echo", {"text": "hi"}, meta={"trace": "t-1"})
        assert result.text == "hi" and not result.is_error
        calls = peer.calls(client, "echo")
    assert [c["params"]["arguments"] for c in calls] == [{"text": "hi"}]
    meta = calls[0]["params"]["_meta"]
    assert meta["trace"] == "t-1"
    if peer.stateless:
        assert meta[META_VERSION] == STATELESS


def test_arguments_that_are_not_a_mapping_are_refused_unsent(form: Form, peer: Peer) -> None:
    with peer.connect() as client:
        with pytest.raises(TypeError, match="must be a mapping"):
            form(client, "echo", ["hi"])  # type: ignore[arg-type]
        assert peer.calls(client, "echo") == []


def test_an_is_error_result_is_returned(form: Form, peer: Peer) -> None:
    with peer.connect() as client:
        result = form(client, "fail", {"message": "the disk is full"})
        assert result.is_error and result.text == "the disk is full"
        assert len(peer.calls(client, "fail")) == 1


def test_raise_on_error_raises_tool_error(form: Form, peer: Peer) -> None:
    with peer.connect() as client:
        with pytest.raises(ToolError, match="the disk is full") as info:
            form(client, "fail", {"message": "the disk is full"}, raise_on_error=True)
        assert info.value.tool == "fail" and info.value.result.is_error
        assert len(peer.calls(client, "fail")) == 1


def test_structured_content_matching_the_output_schema(form: Form, peer: Peer) -> None:
    with peer.connect() as client:
        result = form(client, "shaped", {"value": 3})
        assert result.structured == {"value": 3}


def test_structured_content_against_the_output_schema_is_a_protocol_error(
        form: Form, peer: Peer) -> None:
    with peer.connect() as client:
        with pytest.raises(ProtocolError, match="shaped") as info:
            form(client, "shaped", {"value": "three"})
        assert "outputSchema" in str(info.value)
        assert len(peer.calls(client, "shaped")) == 1
        assert form(client, "echo", {"text": "still usable"}).text == "still usable"


def test_an_unknown_tool_is_a_server_error(form: Form, peer: Peer) -> None:
    with peer.connect() as client:
        with pytest.raises(ServerError, match="Unknown tool: nope") as info:
            form(client, "nope", {})
        assert info.value.code == -32602
        assert len(peer.calls(client, "nope")) == 1


def test_a_timeout_raises_and_cancels_the_call_on_the_wire(form: Form, peer: Peer) -> None:
    tag = f"timeout-{form.name}"
    with peer.connect() as client:
        started = time.monotonic()
        expected = re.escape("tools/call 'hold' timed out after 0.3 s")
        with pytest.raises(RequestTimeout, match=expected):
            form(client, "hold", {"tag": tag}, timeout=0.3)
        assert time.monotonic() - started < 0.3 + 3.0
        # The server's tool saw the cancellation.
        assert form(client, "was_cancelled", {"tag": tag, "wait": WAIT}).structured == {
            "cancelled": True}
        (call,) = peer.calls(client, "hold")
        cancels = [c["params"] for c in peer.received(client, "notifications/cancelled")]
    if peer.stateless and peer.http:
        # 2026-07-28 over HTTP: closing the response stream is the cancellation.
        assert cancels == []
        assert isinstance(peer, HttpPeer) and peer.posts("notifications/cancelled") == []
    else:
        assert [c["requestId"] for c in cancels] == [call["id"]]


def test_progress_reaches_on_progress(form: Form, peer: Peer) -> None:
    seen: List[Tuple[float, Optional[float], Optional[str]]] = []
    last = threading.Event()

    def on_progress(progress: float, total: Optional[float], message: Optional[str]) -> None:
        seen.append((progress, total, message))
        if progress == 4:
            last.set()

    with peer.connect() as client:
        assert form(client, "progress", {"steps": 4}, on_progress=on_progress).text == "done"
        assert last.wait(WAIT)  # callbacks run on the callback thread, maybe after the result
        (call,) = peer.calls(client, "progress")
    assert seen == [(k, 4, f"step {k}") for k in (1, 2, 3, 4)]
    assert call["params"]["_meta"]["progressToken"] == call["id"]


def test_the_server_going_away_mid_call_fails_it(form: Form, peer: Peer) -> None:
    running = threading.Event()
    with peer.connect() as client:
        thread, outcome = in_thread(lambda: form(
            client, "hold", {"tag": "gone", "announce": True},
            on_progress=lambda *args: running.set()))
        assert running.wait(WAIT)
        started = time.monotonic()
        peer.go_away(client)
        thread.join(WAIT)
        assert not thread.is_alive()
        assert time.monotonic() - started < 3.0  # at once, not at the call's timeout
    error = outcome.get("error")
    if peer.http:
        # Over HTTP the connection is the call's own exchange: that exchange fails; or,
        # when the GET stream re-opens into the stopping server first and meets a 404 on
        # the session it forgot, the session's loss fails it (SessionExpired).
        assert isinstance(error, TransportError), outcome
        assert "tools/call" in str(error) or isinstance(error, mcp_sync.SessionExpired)
    else:
        assert isinstance(error, ConnectionClosed), outcome
        assert error.exit_code == -signal.SIGKILL


def test_closing_the_client_mid_call_is_connection_closed(form: Form, peer: Peer) -> None:
    running = threading.Event()
    client = peer.connect()
    try:
        thread, outcome = in_thread(lambda: form(
            client, "hold", {"tag": "closed", "announce": True},
            on_progress=lambda *args: running.set()))
        assert running.wait(WAIT)
    finally:
        client.close()
    thread.join(WAIT)
    assert not thread.is_alive()
    assert isinstance(outcome.get("error"), ConnectionClosed), outcome
    assert "closed by the client" in str(outcome["error"])


# -- the session era: the server's requests mid-call ----------------------------------------


@session_only
def test_server_requests_mid_call_are_answered_by_the_handlers(form: Form, peer: Peer) -> None:
    with peer.connect(elicitation_handler=elicit, sampling_handler=sample,
                      roots=ROOT_LIST) as client:
        result = form(client, "ask", {"requests": [ELICITATION, SAMPLING, ROOTS]})
    answers = [answer["result"] for answer in result.structured["answers"]]
    assert answers[0] == {"action": "accept", "content": {"confirmed": True, "name": "ada"}}
    assert answers[1]["content"] == {"type": "text", "text": "Paris"}
    assert [root["uri"] for root in answers[2]["roots"]] == ["file:///a", "file:///b"]


# -- the stateless era: input rounds, the version switch --------------------------------------


@stateless_only
def test_input_rounds_are_answered_by_the_handlers(form: Form, peer: Peer) -> None:
    plan = [{"confirm": ELICITATION}, {"llm": SAMPLING}, {"roots": ROOTS}]
    with peer.connect(elicitation_handler=elicit, sampling_handler=sample,
                      roots=ROOT_LIST) as client:
        result = form(client, "rounds", {"plan": plan})
        calls = peer.calls(client, "rounds")
    assert result.text == "3 rounds"
    confirm, llm, roots = result.structured["responses"]
    assert confirm == {"confirm": {"action": "accept",
                                   "content": {"confirmed": True, "name": "ada"}}}
    assert llm["llm"]["content"] == {"type": "text", "text": "Paris"}
    assert [root["uri"] for root in roots["roots"]["roots"]] == ["file:///a", "file:///b"]
    # Four requests, each round a new id, carrying the previous round's answers and state.
    assert len(calls) == 4 and distinct([c["id"] for c in calls])
    assert "inputResponses" not in calls[0]["params"]
    assert "requestState" not in calls[0]["params"]
    assert [sorted(c["params"]["inputResponses"]) for c in calls[1:]] == [
        ["confirm"], ["llm"], ["roots"]]
    assert [len(json.loads(c["params"]["requestState"])) for c in calls[1:]] == [0, 1, 2]
    assert all(c["params"]["arguments"] == {"plan": plan} for c in calls)


@stateless_only
def test_input_rounds_are_bounded_by_max_input_rounds(form: Form, peer: Peer) -> None:
    with peer.connect(max_input_rounds=3) as client:
        with pytest.raises(ProtocolError, match="still required input after 3 rounds"):
            form(client, "endless", {})
        calls = peer.calls(client, "endless")
    assert [c["params"].get("requestState") for c in calls] == [None, "s1", "s2", "s3"]
    assert distinct([c["id"] for c in calls])


@stateless_only
def test_a_handler_that_raises_is_a_callback_error(form: Form, peer: Peer) -> None:
    def broken(params: Any) -> Any:
        raise RuntimeError("no model available")

    with peer.connect(sampling_handler=broken) as client:
        with pytest.raises(CallbackError, match="no model available") as info:
            form(client, "rounds", {"plan": [{"llm": SAMPLING}]})
        assert isinstance(info.value.__cause__, RuntimeError)
        assert "sampling/createMessage" in str(info.value)
        assert len(peer.calls(client, "rounds")) == 1  # no retry went out
        assert form(client, "echo", {"text": "still fine"}).text == "still fine"


@stateless_only
def test_an_unsupported_version_answer_switches_and_retries_once(
        form: Form, peer: Peer) -> None:
    tag = f"switch-{form.name}"
    with peer.connect() as client:
        assert form(client, "rejects_version", {"tag": tag, "times": 1}).text == "attempt 2"
        assert client.protocol_version == STATELESS
        calls = peer.calls(client, "rejects_version")
    assert len(calls) == 2 and distinct([c["id"] for c in calls])
    assert [c["params"]["_meta"][META_VERSION] for c in calls] == [STATELESS, STATELESS]
    if isinstance(peer, HttpPeer):
        posts = [r for r in peer.posts("tools/call")
                 if r.json["params"]["name"] == "rejects_version"]
        assert [r.header("mcp-protocol-version") for r in posts] == [STATELESS, STATELESS]


@stateless_only
def test_a_second_unsupported_version_answer_is_raised(form: Form, peer: Peer) -> None:
    tag = f"twice-{form.name}"
    with peer.connect() as client:
        with pytest.raises(ProtocolVersionRejected, match="server supports: 2026-07-28") as info:
            form(client, "rejects_version", {"tag": tag, "times": 2})
        assert info.value.code == -32022
        calls = peer.calls(client, "rejects_version")
    assert len(calls) == 2 and distinct([c["id"] for c in calls])  # one retry, no more


@stateless_only
def test_an_unsupported_version_answer_in_a_later_round_is_retried_too(
        form: Form, peer: Peer) -> None:
    plan = [{"confirm": ELICITATION}]
    asked: List[Any] = []

    def counted(params: Any) -> Dict[str, Any]:
        asked.append(params)
        return elicit(params)

    with peer.connect(elicitation_handler=counted) as client:
        result = form(client, "rounds", {"plan": plan, "reject_version_at": 1})
        calls = peer.calls(client, "rounds")
    assert result.text == "1 rounds"
    assert len(asked) == 1  # the retry sends the same answers; the user is not asked again
    # The first round; the second, answered -32022; the second again, answered.
    assert len(calls) == 3 and distinct([c["id"] for c in calls])
    assert "inputResponses" not in calls[0]["params"]
    assert calls[1]["params"]["inputResponses"] == calls[2]["params"]["inputResponses"]
    assert calls[1]["params"]["requestState"] == calls[2]["params"]["requestState"]


# -- header mismatch: Streamable HTTP in the stateless era --------------------------------------


@stateless_only
@http_only
def test_a_header_mismatch_refreshes_the_tools_and_retries_once(form: Form, peer: Peer) -> None:
    assert isinstance(peer, HttpPeer)
    # The tool's definition changes (its x-mcp-header): "warn" lets the changed tool be
    # called; the default, "block", would refuse it (test_tool_pins.py).
    with peer.connect(on_tool_change="warn") as client:
        assert "regional" in {tool.name for tool in client.list_tools()}
        # The server now mirrors the argument into another header; the client's list is old.
        client.call_tool("rename_header", {"name": "Zone"})
        assert form(client, "regional", {"region": "eu"}).text == "region=eu"
    posts = [r for r in peer.server.requests if r.rpc_method in ("tools/list", "tools/call")]
    wire = [(r.rpc_method, r.json["params"].get("name")) for r in posts]
    first = wire.index(("tools/call", "regional"))
    assert wire[first:] == [("tools/call", "regional"), ("tools/list", None),
                            ("tools/call", "regional")]
    call, retry = posts[first], posts[first + 2]
    assert call.header("mcp-param-region") == "eu" and call.header("mcp-param-zone") is None
    assert retry.header("mcp-param-zone") == "eu" and retry.header("mcp-param-region") is None
    assert call.json["id"] != retry.json["id"]


@stateless_only
@http_only
def test_a_header_mismatch_the_refresh_does_not_repair_is_raised(
        form: Form, peer: Peer) -> None:
    assert isinstance(peer, HttpPeer)
    with peer.connect() as client:
        client.list_tools()
        with pytest.raises(HeaderMismatch, match="expected Mcp-Param-Zone") as info:
            form(client, "stale", {"region": "eu"})
        assert info.value.code == -32020
    wire = [(r.rpc_method, r.json["params"].get("name")) for r in peer.server.requests
            if r.rpc_method in ("tools/list", "tools/call")]
    first = wire.index(("tools/call", "stale"))
    assert wire[first:] == [("tools/call", "stale"), ("tools/list", None),
                            ("tools/call", "stale")]


@stdio_only
def test_a_header_mismatch_is_not_retried_where_no_headers_are_mirrored(
        form: Form, peer: Peer) -> None:
    with peer.connect() as client:
        with pytest.raises(HeaderMismatch, match="Header mismatch"):
            form(client, "mismatch", {})
        assert len(peer.calls(client, "mismatch")) == 1
        assert len(peer.received(client, "tools/list")) == 1  # no refresh either
