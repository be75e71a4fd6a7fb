"""Handlers answering the server: their RequestContext (id, progress, cancellation), the
capabilities they declare, and URL-mode elicitation.

Peers (subprocesses): the project's fake stdio server (session era; ``--stateless`` adds
2026-07-28) and the official SDK's dual-era server.
"""

from __future__ import annotations

import json
import logging
import pickle
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Optional

import pytest

import mcp_sync
from mcp_sync import CapabilityError, ServerError, URLElicitationRequired, types

from ..conftest import PY, SERVERS, fake_server_command

SDK_STATELESS = [PY, str(SERVERS / "sdk_stateless_server.py")]
CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"

# A request of each kind the server may send, and an answer the client may give to it.
PARAMS: Dict[str, Dict[str, Any]] = {
    "sampling/createMessage": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
        "maxTokens": 10,
    },
    "elicitation/create": {
        "message": "name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
    },
    "roots/list": {},
}
ANSWERS: Dict[str, Any] = {
    "sampling/createMessage": {"role": "assistant", "model": "m",
                               "content": {"type": "text", "text": "sampled"}},
    "elicitation/create": {"action": "accept", "content": {"name": "ada"}},
    "roots/list": [{"uri": "file:///work"}],
}
KEYWORD = {"sampling/createMessage": "sampling_handler",
           "elicitation/create": "elicitation_handler", "roots/list": "roots"}
URL_ELICITATION = {"mode": "url", "elicitationId": "el-7", "url": "https://example.com/auth",
                   "message": "Authorize access"}
METHODS = list(PARAMS)



def connect(*args: str, **kwargs: Any) -> mcp_sync.Client:
    kwargs.setdefault("timeout", 10.0)
    return mcp_sync.connect(fake_server_command(*args), **kwargs)


def handler_for(method: str, body: Callable[[], None]) -> Dict[str, Any]:
    """Client keywords installing a handler for ``method`` that runs ``body`` first."""

    def handler(params: Any = None) -> Any:
        body()
        return ANSWERS[method]

    return {KEYWORD[method]: handler}


def tool(client: mcp_sync.Client, name: str, **arguments: Any) -> Any:
    result = client.call_tool(name, arguments)
    assert not result.is_error, result.text
    return result.structured if result.structured is not None else json.loads(result.text)


def answers(client: mcp_sync.Client, request_id: str) -> List[Dict[str, Any]]:
    return tool(client, "answers", request_id=request_id)  # type: ignore[no-any-return]


def received(client: mcp_sync.Client, method: str) -> List[Dict[str, Any]]:
    return json.loads(client.call_tool("received", {"method": method}).text)  # type: ignore[no-any-return]


class DroppedAnswers(logging.Handler):
    """Notes the session's decisions not to answer a server request (its DEBUG log):
    the moment after which no answer to it can be sent any more."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: List[str] = []
        self._changed = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("not answering"):
            with self._changed:
                self.messages.append(message)
                self._changed.notify_all()

    def wait_for(self, request_id: str, timeout: float = 10.0) -> bool:
        with self._changed:
            return self._changed.wait_for(
                lambda: any(f"id={request_id!r}" in m for m in self.messages), timeout)


@pytest.fixture
def dropped() -> Iterator[DroppedAnswers]:
    logger = logging.getLogger("mcp_sync._rpc")  # the session layer: its serving module logs these
    handler, level = DroppedAnswers(), logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


# -- 1. cancellation by the server -----------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_a_request_the_server_cancels_is_not_answered(
    method: str, dropped: DroppedAnswers
) -> None:
    # A plain handler(params), which knows nothing of contexts: it is held until the
    # client has seen the cancellation, then answers; the answer must not be sent.
    cancel_seen = threading.Event()

    def on_notification(name: str, params: Optional[Dict[str, Any]]) -> None:
        if name == "notifications/cancelled":
            cancel_seen.set()

    with connect(notification_handler=on_notification,
                 **handler_for(method, lambda: cancel_seen.wait(10))) as client:
        sent = tool(client, "ask_and_cancel", method=method, params=PARAMS[method])
        assert dropped.wait_for(sent["id"]), "the client did not drop the cancelled request"
        assert answers(client, sent["id"]) == []
        # Requests nobody cancelled are still answered.
        assert "result" in tool(client, "ask", method=method, params=PARAMS[method])


@pytest.mark.parametrize("method", METHODS)
def test_the_handler_sees_its_id_reports_progress_and_sees_the_cancellation(
    method: str, dropped: DroppedAnswers
) -> None:
    seen: Dict[str, Any] = {}

    def body() -> None:
        context = mcp_sync.request_context()
        seen.update(method=context.method, id=context.request_id,
                    token=context.progress_token)
        seen["progress_sent"] = context.report_progress(1, 2, "halfway")
        seen["cancelled"] = context.cancelled.wait(10)
        seen["reason"] = context.cancel_reason

    with connect(**handler_for(method, body)) as client:
        sent = tool(client, "ask_and_cancel", method=method, params=PARAMS[method],
                    after_progress=True)
        assert sent["progress"] == {"progressToken": f"token-{sent['id']}", "progress": 1,
                                    "total": 2, "message": "halfway"}
        assert dropped.wait_for(sent["id"])
        assert answers(client, sent["id"]) == []
    assert seen == {"method": method, "id": sent["id"], "token": f"token-{sent['id']}",
                    "progress_sent": True, "cancelled": True, "reason": "no longer needed"}


def test_progress_goes_out_only_when_the_server_gave_a_token() -> None:
    reported: List[bool] = []

    def body() -> None:
        context = mcp_sync.request_context()
        reported.append(context.report_progress(0.5, message="thinking"))
        assert not context.cancelled.is_set()

    with connect(**handler_for("sampling/createMessage", body)) as client:
        with_token = dict(PARAMS["sampling/createMessage"], _meta={"progressToken": 7})
        answer = tool(client, "ask", method="sampling/createMessage", params=with_token)
        assert answer["result"]["content"]["text"] == "sampled"
        answer = tool(client, "ask", method="sampling/createMessage",
                      params=PARAMS["sampling/createMessage"])
        assert answer["result"]["content"]["text"] == "sampled"
        progress = [m["params"] for m in received(client, "notifications/progress")]
    assert reported == [True, False]
    assert progress == [{"progressToken": 7, "progress": 0.5, "message": "thinking"}]


def test_request_context_outside_a_handler_is_a_lookup_error() -> None:
    with pytest.raises(LookupError, match="only available inside a handler"):
        mcp_sync.request_context()


def test_closing_the_client_cancels_a_running_handler() -> None:
    started, finished = threading.Event(), threading.Event()
    seen: Dict[str, Any] = {}

    def body() -> None:
        context = mcp_sync.request_context()
        started.set()
        seen["cancelled"] = context.cancelled.wait(30)
        seen["reason"] = context.cancel_reason
        finished.set()

    client = connect(**handler_for("elicitation/create", body))
    try:
        future = client.call_tool_future("ask", {"method": "elicitation/create",
                                                 "params": PARAMS["elicitation/create"]})
        assert started.wait(10)
    finally:
        began = time.monotonic()
        client.close()
    assert finished.wait(5) and time.monotonic() - began < 5
    assert seen == {"cancelled": True, "reason": "the connection closed"}
    with pytest.raises(mcp_sync.ConnectionClosed):
        future.result(5)


def test_stateless_handlers_get_the_input_key_and_no_progress() -> None:
    seen: List[Any] = []

    def sampling(params: Any) -> Any:
        context = mcp_sync.request_context()
        seen.append((context.method, context.request_id, context.progress_token,
                     context.report_progress(1), context.cancelled.is_set()))
        return ANSWERS["sampling/createMessage"]

    requests = {"capital": {"method": "sampling/createMessage",
                            "params": PARAMS["sampling/createMessage"]}}
    with connect("--stateless", sampling_handler=sampling) as client:
        assert client.era == "stateless"
        result = tool(client, "needs_input", input_requests=requests)
    assert result["inputResponses"]["capital"]["content"]["text"] == "sampled"
    assert seen == [("sampling/createMessage", "capital", None, False, False)]


def test_stateless_cancelling_the_future_cancels_its_handlers() -> None:
    started, finished = threading.Event(), threading.Event()
    seen: List[bool] = []

    def elicit(params: Any) -> Dict[str, Any]:
        context = mcp_sync.request_context()
        started.set()
        seen.append(context.cancelled.wait(10))
        finished.set()
        return {"action": "decline"}

    with mcp_sync.connect(SDK_STATELESS, timeout=20, elicitation_handler=elicit) as client:
        assert client.era == "stateless"
        future = client.call_tool_future("confirm")
        assert started.wait(20)
        assert future.cancel()
        assert finished.wait(10)
        assert seen == [True]
        assert client.call_tool("add", {"a": 1, "b": 2}).structured == {"result": 3}


# -- 3. capabilities that tell the truth -------------------------------------------------


def noop(params: Any = None) -> Any:
    return {}


@pytest.mark.parametrize(("keywords", "declared"), [
    ({"elicitation_handler": noop}, {"elicitation": {"form": {}}}),
    ({"elicitation_handler": noop, "elicitation_modes": ("form", "url")},
     {"elicitation": {"form": {}, "url": {}}}),
    ({"elicitation_handler": noop, "elicitation_modes": "url"}, {"elicitation": {"url": {}}}),
    ({"sampling_handler": noop, "sampling_features": ("tools", "context")},
     {"sampling": {"tools": {}, "context": {}}}),
    # Modes and features without their handler declare nothing.
    ({"elicitation_modes": ("url",), "sampling_features": ("tools",)}, {}),
])
def test_the_handshake_declares_what_the_handlers_support(
    keywords: Dict[str, Any], declared: Dict[str, Any]
) -> None:
    with connect(**keywords) as client:
        assert received(client, "initialize")[0]["params"]["capabilities"] == declared


def test_the_stateless_envelope_declares_the_same() -> None:
    with connect("--stateless", roots=[], elicitation_handler=noop,
                 elicitation_modes=("url",), sampling_handler=noop,
                 sampling_features=("tools",)) as client:
        assert client.era == "stateless"
        meta = received(client, "tools/call")[-1]["params"]["_meta"]
    # No roots listChanged: the stateless era has no roots/list_changed notification.
    # The tasks extension: the client follows a call the server makes a task.
    assert meta[CAPABILITIES_META] == {"roots": {}, "elicitation": {"url": {}},
                                       "sampling": {"tools": {}},
                                       "extensions": {"io.modelcontextprotocol/tasks": {}}}


@pytest.mark.parametrize("keywords", [
    {"elicitation_modes": ("popup",)}, {"elicitation_modes": ()},
    {"sampling_features": ("images",)},
])
def test_unknown_modes_and_features_are_refused(keywords: Dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="must name some of"):
        mcp_sync.Client(mcp_sync.StdioTransport(PY, ["-c", "pass"]), **keywords)


def test_url_elicitation_reaches_only_a_handler_that_declared_it() -> None:
    calls: List[Any] = []

    def elicit(params: Any) -> Dict[str, Any]:
        calls.append(params)
        return {"action": "accept"}

    with connect(elicitation_handler=elicit) as client:
        answer = tool(client, "ask", method="elicitation/create", params=URL_ELICITATION)
        assert answer["error"]["code"] == -32602
        assert "url-mode elicitation is not supported" in answer["error"]["message"]
        assert calls == []
        form = tool(client, "ask", method="elicitation/create",
                    params=PARAMS["elicitation/create"])
        assert form == {"result": {"action": "accept"}}
    with connect(elicitation_handler=elicit, elicitation_modes=("form", "url")) as client:
        answer = tool(client, "ask", method="elicitation/create", params=URL_ELICITATION)
        assert answer == {"result": {"action": "accept"}}
    assert isinstance(calls[-1], types.ElicitRequestURLParams)
    assert (calls[-1].elicitation_id, calls[-1].url) == ("el-7", "https://example.com/auth")


def test_stateless_url_elicitation_is_declined_unless_declared() -> None:
    calls: List[Any] = []

    def elicit(params: Any) -> Dict[str, Any]:
        calls.append(params)
        return {"action": "accept"}

    url = {k: v for k, v in URL_ELICITATION.items() if k != "elicitationId"}  # not in 2026
    requests = {"auth": {"method": "elicitation/create", "params": url}}
    with connect("--stateless", elicitation_handler=elicit) as client:
        result = tool(client, "needs_input", input_requests=requests)
        assert result["inputResponses"] == {"auth": {"action": "decline"}}
        assert calls == []
    with connect("--stateless", elicitation_handler=elicit,
                 elicitation_modes=("form", "url")) as client:
        result = tool(client, "needs_input", input_requests=requests)
        assert result["inputResponses"] == {"auth": {"action": "accept"}}
    assert [(c.mode, c.url) for c in calls] == [("url", "https://example.com/auth")]


def test_sampling_with_tools_needs_the_tools_feature() -> None:
    calls: List[Any] = []

    def sampling(params: Any) -> Any:
        calls.append(params)
        return ANSWERS["sampling/createMessage"]

    with_tools = dict(PARAMS["sampling/createMessage"],
                      tools=[{"name": "lookup", "inputSchema": {"type": "object"}}])
    with connect(sampling_handler=sampling) as client:
        answer = tool(client, "ask", method="sampling/createMessage", params=with_tools)
        assert answer["error"]["code"] == -32602 and "sampling.tools" in answer["error"]["message"]
        assert calls == []
    with connect(sampling_handler=sampling, sampling_features=["tools"]) as client:
        answer = tool(client, "ask", method="sampling/createMessage", params=with_tools)
        assert answer["result"]["content"]["text"] == "sampled"
        assert calls[0].tools[0].name == "lookup"
    requests = {"q": {"method": "sampling/createMessage", "params": with_tools}}
    with connect("--stateless", sampling_handler=sampling) as client, \
            pytest.raises(CapabilityError, match=r"sampling\.tools"):
        client.call_tool("needs_input", {"input_requests": requests})
    assert len(calls) == 1


@pytest.mark.parametrize("era", ["session", "stateless"])
def test_url_elicitation_required_is_its_own_error(era: str) -> None:
    args = ("--stateless",) if era == "stateless" else ()
    with connect(*args) as client:
        assert client.era == era
        with pytest.raises(URLElicitationRequired) as info:
            client.call_tool("needs_url", {"url": "https://example.com/connect"})
    error = info.value
    assert isinstance(error, ServerError) and error.code == -32042
    assert error.method == "tools/call"
    [elicitation] = error.elicitations
    assert isinstance(elicitation, types.ElicitRequestURLParams)
    assert (elicitation.url, elicitation.elicitation_id) == ("https://example.com/connect",
                                                             "el-1")
    assert "https://example.com/connect" in str(error)
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is URLElicitationRequired
    assert (again.code, again.message, again.data, again.method, str(again)) == (
        error.code, error.message, error.data, error.method, str(error))


def test_url_elicitation_required_skips_malformed_entries(
    caplog: pytest.LogCaptureFixture,
) -> None:
    error = mcp_sync.exceptions.server_error(-32042, "needs more", {"elicitations": [
        {"mode": "url", "url": "https://a.example"},  # no elicitationId or message
        dict(URL_ELICITATION),
    ]})
    assert isinstance(error, URLElicitationRequired)
    assert [e.elicitation_id for e in error.elicitations] == ["el-7"]
    assert any("malformed URL elicitation" in r.getMessage() for r in caplog.records)
    assert mcp_sync.exceptions.server_error(-32042, "no data").elicitations == []


def test_elicitation_complete_reaches_its_callback_and_the_notification_handler() -> None:
    completed: List[Any] = []
    notified: List[Any] = []
    done = threading.Event()

    def on_complete(params: Any) -> None:
        completed.append(params)

    def on_notification(method: str, params: Optional[Dict[str, Any]]) -> None:
        if method == "notifications/elicitation/complete":
            notified.append(params)
            if len(notified) == 2:
                done.set()

    with connect(on_elicitation_complete=on_complete,
                 notification_handler=on_notification) as client:
        client.call_tool("notify", {"method": "notifications/elicitation/complete",
                                    "params": {"id": "not an elicitationId"}})
        client.call_tool("notify", {"method": "notifications/elicitation/complete",
                                    "params": {"elicitationId": "el-7"}})
        assert done.wait(10)
    assert [type(p) for p in completed] == [types.ElicitationCompleteNotificationParams]
    assert completed[0].elicitation_id == "el-7"
    assert notified == [{"id": "not an elicitationId"}, {"elicitationId": "el-7"}]


# -- which server asks --------------------------------------------------------------------


def named_server(name: str, era: str) -> Dict[str, Any]:
    """An mcpServers entry: the fake server calling itself ``name`` (serverInfo)."""
    command = fake_server_command("--name", name, *(["--stateless"] if era == "stateless"
                                                     else []))
    return {"command": command[0], "args": command[1:]}


@pytest.mark.parametrize("era", ["session", "stateless"])
def test_a_shared_handler_knows_which_server_asks(era: str) -> None:
    """One set of handlers answers both servers of a Manager: each request's context
    names the server by its key in the configuration, with the serverInfo it sent. In
    the stateless era the three requests come as one input_required round."""
    seen: List[Any] = []
    lock = threading.Lock()

    def note() -> None:
        context = mcp_sync.request_context()
        info = context.server_info
        with lock:
            seen.append((context.server_name, context.method,
                         info.name if info is not None else None))

    def sampling(params: Any) -> Any:
        note()
        return ANSWERS["sampling/createMessage"]

    def elicitation(params: Any) -> Any:
        note()
        return ANSWERS["elicitation/create"]

    def roots() -> Any:
        note()
        return ANSWERS["roots/list"]

    config = {"mcpServers": {"alpha": named_server("alpha-server", era),
                             "beta": named_server("beta-server", era)}}
    with mcp_sync.Manager(config, timeout=10.0, sampling_handler=sampling,
                          elicitation_handler=elicitation, roots=roots) as manager:
        for name in ("alpha", "beta"):
            client = manager[name]
            assert client.era == era
            if era == "session":
                for method in METHODS:
                    assert "result" in tool(client, "ask", method=method,
                                            params=PARAMS[method])
            else:
                requests = {method: {"method": method, "params": PARAMS[method]}
                            for method in METHODS}
                result = tool(client, "needs_input", input_requests=requests)
                assert sorted(result["inputResponses"]) == sorted(METHODS)
    assert sorted(seen) == sorted((name, method, f"{name}-server")
                                  for name in ("alpha", "beta") for method in METHODS)


@pytest.mark.parametrize("era", ["session", "stateless"])
def test_a_clients_handler_sees_the_clients_name_and_the_servers_info(era: str) -> None:
    seen: List[Any] = []

    def elicit(params: Any) -> Any:
        context = mcp_sync.request_context()
        seen.append((context.server_name, context.server_info, repr(context)))
        return ANSWERS["elicitation/create"]

    args = ("--name", "its-own-name", *(["--stateless"] if era == "stateless" else []))
    with connect(*args, name="mine", elicitation_handler=elicit) as client:
        assert client.era == era
        if era == "session":
            tool(client, "ask", method="elicitation/create",
                 params=PARAMS["elicitation/create"])
        else:
            tool(client, "needs_input", input_requests={"who": {
                "method": "elicitation/create", "params": PARAMS["elicitation/create"]}})
        expected = client.server_info
    [(name, info, text)] = seen
    assert name == "mine" and "from 'mine'" in text
    assert isinstance(info, types.Implementation) and info == expected
    assert (info.name, info.version) == ("its-own-name", "1.2.3")
