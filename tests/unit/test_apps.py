"""mcp_sync.apps, the pure parts: what a tool's ``_meta.ui`` says, the app's policy, the
bridge's validation of each message, the page tokens, the pages' escaping.

No browser, no server: the bridge is fed messages as an app would post them. The browser
and the real servers are in tests/places/test_apps_*.py.
"""

from __future__ import annotations

import html
import json
import logging
import re
from typing import Any, Dict

import pytest

from mcp_sync import RequestTimeout, ServerError, types
from mcp_sync.apps import (
    APP_MIME_TYPE,
    AppBridge,
    AppCsp,
    AppError,
    BridgeLimits,
    PageTokens,
    ToolCall,
    app_callable,
    client_settings,
    model_visible,
    tool_resource_uri,
    tool_visibility,
)
from mcp_sync.apps._page import frame_headers, host_page, page_csp, script_json, srcdoc
from mcp_sync.exceptions import ConnectionClosed

UI = "ui://board/app.html"


def tool(name: str = "show", **ui: Any) -> Dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object"},
            "_meta": {"ui": {"resourceUri": UI, **ui}}}


def request(method: str, params: Any = None, request_id: Any = 1) -> Dict[str, Any]:
    message: Dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification(method: str, params: Any = None) -> Dict[str, Any]:
    message: Dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


# -- _meta.ui of a tool --------------------------------------------------------------------


def test_visibility_defaults_to_both_and_reads_the_list() -> None:
    assert tool_visibility({"name": "plain", "inputSchema": {}}) == {"model", "app"}
    assert tool_visibility(tool()) == {"model", "app"}
    assert tool_visibility(tool(visibility=["app"])) == {"app"}
    assert tool_visibility(tool(visibility=["model", "other"])) == {"model"}
    assert tool_visibility(tool(visibility=[])) == set()
    app_only = types.Tool.model_validate(tool(visibility=["app"]))
    assert not model_visible(app_only) and app_callable(app_only)
    model_only = types.Tool.model_validate(tool(visibility=["model"]))
    assert model_visible(model_only) and not app_callable(model_only)


@pytest.mark.parametrize("visibility", ["app", "model", None, [1], {"model": True}])
def test_a_malformed_visibility_means_nobody(visibility: Any) -> None:
    assert tool_visibility(tool(visibility=visibility)) == set()
    assert not model_visible(tool(visibility=visibility))
    assert not app_callable(tool(visibility=visibility))


def test_resource_uri_is_a_bounded_ui_uri() -> None:
    assert tool_resource_uri(tool()) == UI
    assert tool_resource_uri({"name": "t", "_meta": {"ui/resourceUri": UI}}) == UI  # deprecated
    assert tool_resource_uri({"name": "t", "_meta": {"ui": {"resourceUri": "https://x/"}}}) is None
    long_uri = "ui://" + "a" * 3000
    assert tool_resource_uri({"name": "t", "_meta": {"ui": {"resourceUri": long_uri}}}) is None
    assert tool_resource_uri({"name": "t"}) is None
    assert client_settings() == {"mimeTypes": [APP_MIME_TYPE]}


# -- the policy ----------------------------------------------------------------------------


def directives(policy: str) -> Dict[str, str]:
    return dict(part.strip().split(" ", 1) for part in policy.split(";"))


def test_no_declaration_is_the_restrictive_default() -> None:
    policy = directives(AppCsp.from_meta(None).policy())
    assert policy["default-src"] == "'none'"
    assert policy["script-src"] == "'unsafe-inline'"
    assert policy["img-src"] == "data:"
    for name in ("connect-src", "frame-src", "base-uri", "form-action", "object-src",
                 "font-src"):
        assert policy[name] == "'none'", name
    assert "'self'" not in AppCsp().policy() and "eval" not in AppCsp().policy()


def test_declared_origins_reach_their_directives_only(caplog: pytest.LogCaptureFixture) -> None:
    csp = AppCsp.from_meta({
        "connectDomains": ["https://API.example.com/", "wss://rt.example.com:8443"],
        "resourceDomains": ["https://*.cdn.example.com"],
        "frameDomains": ["https://www.youtube.com"],
        "baseUriDomains": ["https://base.example.com"],
    }, uri=UI)
    policy = directives(csp.policy())
    assert policy["connect-src"] == "https://api.example.com wss://rt.example.com:8443"
    assert policy["script-src"] == "https://*.cdn.example.com 'unsafe-inline'"
    assert policy["img-src"] == "https://*.cdn.example.com data:"
    assert policy["frame-src"] == "https://www.youtube.com"
    assert policy["base-uri"] == "https://base.example.com"
    assert csp.approved() == {
        "connectDomains": ["https://api.example.com", "wss://rt.example.com:8443"],
        "resourceDomains": ["https://*.cdn.example.com"],
        "frameDomains": ["https://www.youtube.com"],
        "baseUriDomains": ["https://base.example.com"],
    }
    assert csp.dropped == () and not caplog.records


@pytest.mark.parametrize("entry", [
    "*", "https:", "https://*", "data:", "blob:", "'unsafe-eval'", "'self'",
    "https://a.example.com; script-src *", "https://a.example.com https://b.example.com",
    "https://a.example.com/path", "javascript:alert(1)", "ftp://a.example.com",
    "https://exa\nmple.com", 42, None, "https://" + "a" * 300 + ".com",
])
def test_entries_that_are_not_plain_origins_are_dropped(
        entry: Any, caplog: pytest.LogCaptureFixture) -> None:
    csp = AppCsp.from_meta({"connectDomains": [entry, "https://ok.example.com"],
                            "resourceDomains": [entry]}, uri=UI)
    assert csp.connect == ("https://ok.example.com",) and csp.resource == ()
    assert len(csp.dropped) == 2
    policy = directives(csp.policy())
    assert policy["connect-src"] == "https://ok.example.com"
    assert policy["script-src"] == "'unsafe-inline'"
    assert "dropped from its _meta.ui.csp" in caplog.text


def test_a_malformed_declaration_declares_nothing() -> None:
    assert AppCsp.from_meta("connect everything").policy() == AppCsp().policy()
    assert AppCsp.from_meta({"connectDomains": "https://a.example.com"}).connect == ()
    many = AppCsp.from_meta({"connectDomains": [f"https://h{i}.example.com" for i in range(50)]})
    assert len(many.connect) == 32 and many.dropped == ("connectDomains: past 32 origins",)


# -- the bridge ----------------------------------------------------------------------------


def test_initialize_is_answered_with_the_host_and_its_context() -> None:
    csp = AppCsp.from_meta({"connectDomains": ["https://api.example.com"]})
    bridge = AppBridge(tool(), csp=csp, limits=BridgeLimits(max_height=900),
                       host_context={"theme": "dark", "locale": "fr-FR"})
    step = bridge.receive(json.dumps(request("ui/initialize", {
        "appInfo": {"name": "a", "version": "1"}, "appCapabilities": {},
        "protocolVersion": "2026-01-26"})))
    assert step.refused is None and step.call is None and not step.deliver
    assert step.reply is not None and step.reply["id"] == 1
    result = step.reply["result"]
    assert result["protocolVersion"] == "2026-01-26"
    assert result["hostInfo"]["name"] == "mcp-sync"
    assert result["hostCapabilities"] == {
        "serverTools": {}, "logging": {},
        "sandbox": {"permissions": {}, "csp": {"connectDomains": ["https://api.example.com"]}}}
    context = result["hostContext"]
    assert context["toolInfo"]["tool"]["name"] == "show"
    assert context["displayMode"] == "inline" and context["availableDisplayModes"] == ["inline"]
    assert context["containerDimensions"] == {"maxHeight": 900}
    assert (context["theme"], context["locale"]) == ("dark", "fr-FR")


def test_the_lifecycle_notifications() -> None:
    bridge = AppBridge(tool(), limits=BridgeLimits(max_width=500, max_height=600))
    assert bridge.receive(notification("ui/notifications/initialized")).deliver
    resized = bridge.receive(notification("ui/notifications/size-changed",
                                          {"width": 400.6, "height": 99999}))
    assert resized.resize == {"width": 400, "height": 600} and resized.refused is None
    assert bridge.receive(notification("ui/notifications/size-changed",
                                       {"height": -5})).resize == {"height": 0}
    for bad in ({"height": "tall"}, {"height": float("nan")}, {"width": True}):
        step = bridge.receive(notification("ui/notifications/size-changed", bad))
        assert step.resize is None and step.refused is not None and step.reply is None
    assert bridge.receive(notification("notifications/message",
                                       {"level": "info", "data": "hi"})).refused is None
    assert bridge.receive(request("ping")).reply == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert bridge.receive(request("ui/request-display-mode", {"mode": "fullscreen"}, 7)
                          ).reply == {"jsonrpc": "2.0", "id": 7, "result": {"mode": "inline"}}
    data = AppBridge.tool_data({"title": "t"}, {"content": [], "structuredContent": {"a": 1}})
    assert [m["method"] for m in data] == ["ui/notifications/tool-input",
                                          "ui/notifications/tool-result"]
    assert data[0]["params"] == {"arguments": {"title": "t"}}
    assert data[1]["params"]["structuredContent"] == {"a": 1}


@pytest.mark.parametrize("method", [
    "ui/open-link", "ui/message", "ui/update-model-context", "ui/download-file",
    "resources/read", "resources/list", "tools/list", "sampling/createMessage",
    "initialize", "prompts/get", "ui/notifications/sandbox-resource-ready",
])
def test_requests_the_host_does_not_take_get_method_not_found(method: str) -> None:
    step = AppBridge(tool()).receive(request(method, {}, "r-1"))
    assert step.call is None and step.refused is not None
    assert step.reply == {"jsonrpc": "2.0", "id": "r-1",
                          "error": {"code": -32601, "message": "Method not found"}}


@pytest.mark.parametrize("message", [
    "not json", "[]", json.dumps([request("ping")]), "null", '"text"',
    json.dumps({"jsonrpc": "1.0", "id": 1, "method": "ping"}),
    json.dumps(notification("ui/notifications/sandbox-proxy-ready")),
    json.dumps(notification("notifications/cancelled", {"requestId": 1})),
    json.dumps({"jsonrpc": "2.0", "id": "mcp-sync-host-1", "result": {}}),  # none pending
    json.dumps({"jsonrpc": "2.0", "id": 1}),
    json.dumps(notification("ui/notifications/initialized", [1, 2])),
    "[" * 100000,
])
def test_malformed_and_unknown_messages_are_dropped(message: str) -> None:
    step = AppBridge(tool()).receive(message)
    assert step.refused is not None
    assert step.reply is None and step.call is None and not step.deliver


def test_a_malformed_request_is_answered_with_an_error() -> None:
    bridge = AppBridge(tool())
    bad_id = bridge.receive({"jsonrpc": "2.0", "id": {"no": 1}, "method": "ping"})
    assert bad_id.reply == {"jsonrpc": "2.0", "id": None,
                            "error": {"code": -32600, "message": "Invalid request id"}}
    bad_params = bridge.receive(request("tools/call", ["add_item"]))
    assert bad_params.reply is not None and bad_params.reply["error"]["code"] == -32602
    for params in ({"name": 3}, {"name": ""}, {"name": "x" * 300},
                   {"name": "add_item", "arguments": [1]}):
        step = bridge.receive(request("tools/call", params))
        assert step.call is None and step.reply is not None
        assert step.reply["error"]["code"] == -32602


def test_size_is_bounded_before_anything_is_read() -> None:
    bridge = AppBridge(tool(), limits=BridgeLimits(max_message_bytes=1000))
    fits = request("tools/call", {"name": "add_item", "arguments": {"text": "é" * 400}})
    assert bridge.receive(json.dumps(fits, ensure_ascii=False)).call is not None
    over = request("tools/call", {"name": "add_item", "arguments": {"text": "é" * 600}})
    for form in (json.dumps(over, ensure_ascii=False),
                 json.dumps(over, ensure_ascii=False).encode(), over):
        step = bridge.receive(form)  # type: ignore[arg-type]
        assert step.call is None and step.refused is not None and "over the bound" in step.refused
        assert step.reply is None  # unread: nothing to answer


def test_tools_call_is_authorized_against_the_listing() -> None:
    bridge = AppBridge(tool())
    listing = [tool("show"), tool("add_item", visibility=["app"]),
               tool("clear", visibility=["model"]), {"name": "plain", "inputSchema": {}},
               tool("broken", visibility="app")]
    step = bridge.receive(request("tools/call", {"name": "add_item",
                                                 "arguments": {"text": "x"}, "_meta": {"a": 1}}))
    assert step.call == ToolCall(1, "add_item", {"text": "x"})
    assert bridge.authorize(step.call, listing).call == step.call
    plain = bridge.receive(request("tools/call", {"name": "plain"})).call
    assert plain is not None and plain.arguments == {}
    assert bridge.authorize(plain, listing).call == plain  # no visibility: both
    for name, message in (("clear", "Tool clear may not be called by an app"),
                          ("broken", "Tool broken may not be called by an app"),
                          ("other_server_tool", "Unknown tool: other_server_tool")):
        call = ToolCall(5, name, {})
        refused = bridge.authorize(call, listing)
        assert refused.call is None and refused.refused is not None
        assert refused.reply == {"jsonrpc": "2.0", "id": 5,
                                 "error": {"code": -32602, "message": message}}
    typed = [types.Tool.model_validate(t) for t in listing]
    assert bridge.authorize(ToolCall(1, "clear", {}), typed).call is None
    assert bridge.authorize(ToolCall(1, "add_item", {}), typed).call is not None


def test_replies_to_a_tool_call() -> None:
    bridge = AppBridge(tool())
    call = ToolCall("c", "add_item", {})
    result = types.CallToolResult.model_validate(
        {"content": [{"type": "text", "text": "ok"}], "structuredContent": {"count": 2}})
    assert bridge.tool_reply(call, result) == {
        "jsonrpc": "2.0", "id": "c",
        "result": {"content": [{"type": "text", "text": "ok"}], "structuredContent": {"count": 2},
                   "isError": False}}
    hostile = ServerError(-32602, "\x1b]52;c;evil\x07" + "y" * 2000)
    error = bridge.error_reply(call, hostile)["error"]
    assert error["code"] == -32602 and "\x1b" not in error["message"]
    assert len(error["message"]) < 600
    assert bridge.error_reply(call, RequestTimeout("tools/call", 1, 5.0))["error"] == {
        "code": -32001, "message": "The tool call timed out"}
    assert bridge.error_reply(call, ConnectionClosed("gone /secret/path"))["error"] == {
        "code": -32603, "message": "The tool call failed (ConnectionClosed)"}
    assert bridge.error_reply(call, ValueError("internal detail"))["error"] == {
        "code": -32603, "message": "The tool call failed"}


def test_only_responses_to_the_hosts_own_requests_are_taken() -> None:
    bridge = AppBridge(tool())
    teardown = bridge.teardown_request("closing")
    assert teardown["method"] == "ui/resource-teardown"
    assert teardown["params"] == {"reason": "closing"}
    answer = {"jsonrpc": "2.0", "id": teardown["id"], "result": {}}
    assert bridge.receive(answer).refused is None
    assert bridge.receive(answer).refused is not None  # once only


def test_refusals_are_logged_excerpted_then_quieted(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sync.apps")
    bridge = AppBridge(tool(), server="board")
    for _ in range(30):
        bridge.receive(request("\x1b[2J" + "m" * 100))
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 20
    assert "\x1b" not in caplog.text and "\\x1b[2J" in caplog.text
    assert "further refusals of this app are logged at DEBUG" in warnings[-1].getMessage()
    assert all(len(r.getMessage()) < 400 for r in caplog.records)


def test_limits_are_checked() -> None:
    for bad in ({"max_message_bytes": 0}, {"max_height": -1}, {"max_width": 1.5}):
        with pytest.raises(ValueError):
            BridgeLimits(**bad)


# -- page tokens ---------------------------------------------------------------------------


def test_a_token_carries_its_claims_until_it_expires() -> None:
    tokens = PageTokens("secret", max_age=60)
    token = tokens.issue("board", "show_board", UI, now=1000)
    claims = tokens.verify(token, now=1059)
    assert (claims.server, claims.tool, claims.uri, claims.expires) == (
        "board", "show_board", UI, 1060)
    assert tokens.issue("board", "show_board", UI) != tokens.issue("board", "show_board", UI)
    with pytest.raises(AppError, match="expired"):
        tokens.verify(token, now=1061)


def test_a_token_from_elsewhere_or_altered_is_refused() -> None:
    tokens = PageTokens("secret")
    token = tokens.issue("board", "show_board", UI)
    payload, _, signature = token.partition(".")
    body = json.loads(__import__("base64").urlsafe_b64decode(payload + "=="))
    body["s"] = "other"
    forged = __import__("base64").urlsafe_b64encode(json.dumps(body).encode()).decode().rstrip("=")
    for bad in (f"{forged}.{signature}", PageTokens("another secret").issue("board", "x", UI),
                token[:-2], "", None, 42, "é." + signature, "x" * 9000, payload,
                PageTokens("secret", salt="other use").issue("board", "show_board", UI)):
        with pytest.raises(AppError, match="page token refused"):
            tokens.verify(bad)
    with pytest.raises(ValueError):
        PageTokens("")


# -- the pages -----------------------------------------------------------------------------


def test_script_json_cannot_end_its_element() -> None:
    hostile = {"t": "</script><script>alert(1)</script>", "u": "a\u2028b", "amp": "&lt;"}
    text = script_json(hostile)
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == hostile


def test_the_host_page_escapes_the_title_and_embeds_inert_config() -> None:
    page = host_page(title='<img src=x onerror=alert(1)>\x1b[31m', nonce="abc",
                     config={"toolData": [{"x": "</script><b>"}], "token": "t"})
    assert "<img" not in page and "\x1b" not in page and "</script><b>" not in page
    assert page.count("<script") == 2 and '<script nonce="abc">' in page
    config = re.search(r'id="mcp-sync-app-config">(.*?)</script>', page, re.S)
    assert config is not None and json.loads(config.group(1))["toolData"] == [{"x": "</script><b>"}]
    policy = directives(page_csp("abc"))
    assert policy["script-src"] == "'nonce-abc'" and policy["default-src"] == "'none'"
    assert policy["frame-src"] == "'self'" and policy["connect-src"] == "'self'"


def test_the_framed_document_starts_with_its_policy() -> None:
    csp = AppCsp.from_meta({"connectDomains": ["https://api.example.com"]})
    document = srcdoc('<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" '
                      'content="default-src *"></head></html>', csp)
    first = re.match(
        r'<!DOCTYPE html><meta http-equiv="Content-Security-Policy" content="([^"]*)">', document)
    assert first is not None and html.unescape(first.group(1)) == csp.policy()
    headers = frame_headers(csp)
    assert headers["Content-Security-Policy"].startswith(csp.policy())
    assert headers["Content-Security-Policy"].endswith("; sandbox allow-scripts; "
                                                      "frame-ancestors 'self'")
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "no-referrer"
