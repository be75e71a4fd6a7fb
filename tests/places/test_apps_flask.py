"""MCP Apps on a Flask site, in a real browser: mcp_sync.contrib.flask.AppViews.

The site runs on werkzeug's threaded server on 127.0.0.1 with the process's Manager
(``MCP(app)``) of two servers written with the official SDK's ``Apps`` extension
(tests/servers/apps_server.py): ``board``, whose apps are shown, and ``other``, whose
tool the hostile app tries to reach. Headless Chromium opens the site's pages; each
server records the tool calls that reached it. The site's own decorator (a cookie
check standing in for ``login_required``) wraps the pages, the frame and the bridge.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, Tuple

import pytest
import requests
from flask import Flask, request

from mcp_sync.apps import AppsExtension, PageTokens
from mcp_sync.apps._web import MAX_BODY_BYTES
from mcp_sync.contrib.flask import MCP, AppViews

from ..helpers import serve_wsgi, wait_for
from ._apps import (
    app_frame,
    apps_server,
    called,
    chromium,
    inside_frame,
    page_config,
    probe_servers,
    records,
    wait_until,
)

SECRET = "flask-apps-test-secret"

pytestmark = [pytest.mark.peer, pytest.mark.timeout(300)]


def login_required(view: Callable[..., Any]) -> Callable[..., Any]:
    """The site's own authentication: a session cookie, else 401."""

    @functools.wraps(view)
    def checked(*args: Any, **kwargs: Any) -> Any:
        if request.cookies.get("session") != "alice":
            return "log in first", 401
        return view(*args, **kwargs)

    return checked


class Site:
    """The Flask site under test, its two servers' records and its probe servers."""

    def __init__(self, tmp: Path, probes: Any, **options: Any) -> None:
        origins, self.hits = probes
        self.declared, self.undeclared = origins
        self.board_record = tmp / "board.jsonl"
        self.other_record = tmp / "other.jsonl"
        app = Flask("apps-site")
        app.config["SECRET_KEY"] = SECRET
        app.config["MCP_SERVERS"] = {
            "board": apps_server(self.board_record, "--connect-domain", self.declared,
                                 "--probe", f"{self.declared}/declared",
                                 "--probe", f"{self.undeclared}/undeclared"),
            "other": apps_server(self.other_record, "--extra-tool", "secret_op"),
        }
        app.config["MCP_OPTIONS"] = {"timeout": 30, "extensions": [AppsExtension()]}
        self.mcp = MCP(app)
        self.apps = AppViews(self.mcp, decorators=[login_required], **options)

        @app.get("/login")
        def login() -> Any:
            response = app.make_response("welcome")
            response.set_cookie("session", "alice", samesite="Lax")
            return response

        @app.get("/app/<tool>")
        @login_required
        def page(tool: str) -> Any:
            arguments = json.loads(request.args.get("arguments", "{}"))
            return self.apps.render("board", tool, arguments)

        self.app = app


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Tuple[Site, str]]:
    with probe_servers(2) as probes:
        site = Site(tmp_path, probes)
        try:
            with serve_wsgi(site.app) as url:
                yield site, url
        finally:
            site.mcp.close()


def logged_in(url: str) -> requests.Session:
    session = requests.Session()
    assert session.get(f"{url}/login", timeout=30).status_code == 200
    return session


def test_the_app_initialises_gets_its_result_and_its_call_reaches_the_server(
        site: Tuple[Site, str]) -> None:
    site_, url = site
    with chromium() as driver:
        driver.get(f"{url}/login")
        driver.get(f"{url}/app/show_board?arguments=" + json.dumps({"title": "Groceries"}))
        frame = app_frame(driver)
        app = inside_frame(driver, frame)
        assert app["status"] == "initialised by mcp-sync 2026-01-26 tool show_board"
        assert app["input"] == 'input {"title":"Groceries"}'
        assert app["title"] == "Groceries"  # its tool result's structuredContent
        assert app["added"] == "added: 2"  # the proxied call's result
        # The app asked for 400 x 321: the host page resized the frame.
        wait_until(driver, lambda d: d.execute_script(
            "return [arguments[0].clientWidth, arguments[0].clientHeight]", frame) == [400, 321],
            "the frame to take the size the app asked for")
        assert frame.get_attribute("sandbox") == "allow-scripts"
        assert driver.execute_script("return document.title") == "show_board"
    assert records(site_.board_record) == [
        {"tool": "show_board", "arguments": {"title": "Groceries"}},
        {"tool": "add_item", "arguments": {"text": "from the app"}},
    ]
    assert records(site_.other_record) == []


def test_a_hostile_app_is_refused_at_every_door(site: Tuple[Site, str]) -> None:
    site_, url = site
    with chromium() as driver:
        driver.get(f"{url}/login")
        driver.get(f"{url}/app/show_hostile")
        app = inside_frame(driver, app_frame(driver))
    assert app["status"].startswith("initialised by mcp-sync")
    # Only the declared origin (the "*" beside it was dropped) is approved...
    assert json.loads(app["csp"]) == {"connectDomains": [site_.declared]}
    # ...and the app's other attempts were refused, each with its own answer.
    assert app["model-only"] == "error -32602: Tool clear_board may not be called by an app"
    assert app["other-server"] == "error -32602: Unknown tool: secret_op"
    assert app["oversized"] == "error -32600: Message too large"
    assert app["open-link"] == "error -32601: Method not found"
    assert app["resources-read"] == "error -32601: Method not found"
    assert app["bad-params"] == "error -32602: arguments must be an object"
    assert app["fetch-declared"] == "fetched"
    assert app["fetch-undeclared"] == "threw TypeError: Failed to fetch"
    assert app["cookie"].startswith("threw SecurityError")
    assert app["parent"].startswith("threw SecurityError")
    assert app["allowed"].startswith('ok {"') and '"count":2' in app["allowed"]
    # What reached the servers: the page's tool and the one allowed call, nothing else.
    assert called(site_.board_record) == ["show_hostile", "add_item"]
    assert records(site_.other_record) == []
    assert site_.hits == [f"{site_.declared}/declared"]  # the undeclared one never left


def test_an_app_that_leaves_its_document_is_no_longer_bridged(site: Tuple[Site, str]) -> None:
    _, url = site
    with chromium() as driver:
        driver.get(f"{url}/login")
        driver.get(f"{url}/app/show_wanderer")
        frame = app_frame(driver)
        last = wait_until(driver, lambda d: (d.find_element("id", "mcp-sync-app")
                                             .get_attribute("data-mcp-sync-last") or "")
                          .startswith("stopped") and d.find_element(
                              "id", "mcp-sync-app").get_attribute("data-mcp-sync-last"),
                          "the host to stop bridging")
        assert last == "stopped: the app left the document it was served"
        assert frame.get_attribute("src") == "about:blank"


def page_token(session: requests.Session, url: str, tool: str = "show_board",
               arguments: Any = None) -> Dict[str, Any]:
    response = session.get(f"{url}/app/{tool}",
                           params={"arguments": json.dumps(arguments or {"title": "t"})},
                           timeout=60)
    assert response.status_code == 200, response.text
    return page_config(response.text)


def bridge(session: requests.Session, url: str, token: Any, message: Any,
           **kwargs: Any) -> requests.Response:
    body = {"token": token, "message": message if isinstance(message, str)
            else json.dumps(message)}
    return session.post(f"{url}/mcp-apps/bridge", json=body, timeout=60, **kwargs)


def test_the_page_and_the_frame_carry_their_policies(site: Tuple[Site, str]) -> None:
    site_, url = site
    session = logged_in(url)
    page = session.get(f"{url}/app/show_hostile", timeout=60)
    policy = page.headers["Content-Security-Policy"]
    assert "default-src 'none'" in policy and "script-src 'nonce-" in policy
    assert "'unsafe-inline'" not in policy and page.headers["Cache-Control"] == "no-store"
    config = page_config(page.text)
    assert config["bridgeUrl"] == "/mcp-apps/bridge"
    frame = session.get(f"{url}{config['frameUrl']}", timeout=60)
    assert frame.status_code == 200 and "<title>Hostile</title>" in frame.text
    frame_policy = frame.headers["Content-Security-Policy"]
    assert f"connect-src {site_.declared};" in frame_policy
    assert frame_policy.endswith("sandbox allow-scripts; frame-ancestors 'self'")
    assert "*" not in frame_policy.split("connect-src", 1)[1].split(";")[0]
    assert frame.headers["X-Content-Type-Options"] == "nosniff"
    assert frame.headers["Referrer-Policy"] == "no-referrer"
    # A frame for a token this site did not sign is not served.
    other = PageTokens("another secret").issue("board", "show_hostile",
                                               "ui://hostile/app.html")
    refused = session.get(f"{url}/mcp-apps/frame/{other}", timeout=30)
    assert refused.status_code == 403 and "Hostile" not in refused.text


def test_the_bridge_takes_only_the_pages_token_and_bounded_json(
        site: Tuple[Site, str]) -> None:
    site_, url = site
    session = logged_in(url)
    token = page_token(session, url)["token"]
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    answer = bridge(session, url, token, ping)
    assert answer.status_code == 200
    assert answer.json() == {"post": [{"jsonrpc": "2.0", "id": 1, "result": {}}],
                             "resize": None, "deliver": False, "refused": None}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "add_item", "arguments": {"text": "direct"}}}
    expired = PageTokens(SECRET).issue("board", "show_board", "ui://board/app.html",
                                       now=time.time() - 7200)
    forged = PageTokens("another secret").issue("board", "show_board", "ui://board/app.html")
    for bad, reason in ((expired, "expired"), (forged, "bad signature"),
                        (token[:-3], "bad signature"), (None, "malformed"), ("x" * 9000,
                                                                             "malformed")):
        answer = bridge(session, url, bad, call)
        assert answer.status_code == 403, bad
        assert reason in answer.json()["message"]
    # Not JSON: 415 before anything is read; a body past the bound: 413.
    plain = session.post(f"{url}/mcp-apps/bridge", data=json.dumps({"token": token}),
                         headers={"Content-Type": "text/plain"}, timeout=30)
    assert plain.status_code == 415
    huge = session.post(f"{url}/mcp-apps/bridge", data=b"{" + b" " * MAX_BODY_BYTES + b"}",
                        headers={"Content-Type": "application/json"}, timeout=30)
    assert huge.status_code == 413
    # A message past the app's bound, in a body within it: refused by the bridge.
    over = dict(call, params={"name": "add_item", "arguments": {"text": "x" * (1 << 20)}})
    answer = bridge(session, url, token, over)
    assert answer.status_code == 200 and "over the bound" in answer.json()["refused"]
    assert answer.json()["post"] == []
    # Without the site's session cookie, its decorator answers first.
    assert bridge(requests.Session(), url, token, call).status_code == 401
    config = page_token(session, url)
    assert requests.get(f"{url}{config['frameUrl']}", timeout=30).status_code == 401
    # None of that reached the server; the page's token does.
    assert called(site_.board_record) == ["show_board", "show_board"]
    answer = bridge(session, url, token, call)
    assert answer.json()["post"][0]["result"]["structuredContent"] == {"count": 2}
    assert called(site_.board_record)[-1] == "add_item"


def test_the_bridge_serves_at_most_max_concurrent_requests(tmp_path: Path) -> None:
    with probe_servers(2) as probes:
        site_ = Site(tmp_path, probes, max_concurrent=1)
        try:
            with serve_wsgi(site_.app) as url:
                session = logged_in(url)
                token = page_token(session, url)["token"]
                slow = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": {"name": "slow_item", "arguments": {"seconds": 3}}}
                answers: Dict[str, Any] = {}
                first = threading.Thread(target=lambda: answers.setdefault(
                    "slow", bridge(logged_in(url), url, token, slow)))
                first.start()
                wait_for(lambda: "slow_item" in called(site_.board_record),
                         what="the slow call to reach the server")
                busy = bridge(session, url, token, {"jsonrpc": "2.0", "id": 2,
                                                    "method": "ping"})
                first.join(60)
                assert busy.status_code == 503 and busy.json()["error"] == "Busy"
                assert answers["slow"].status_code == 200
                assert "result" in answers["slow"].json()["post"][0]
                again = bridge(session, url, token, {"jsonrpc": "2.0", "id": 3,
                                                     "method": "ping"})
                assert again.status_code == 200  # the slot came back
        finally:
            site_.mcp.close()


def test_render_needs_a_secret_key(tmp_path: Path) -> None:
    app = Flask("no-secret")
    app.config["MCP_SERVERS"] = {"board": apps_server(tmp_path / "r.jsonl")}
    mcp = MCP(app)
    apps = AppViews(mcp)
    try:
        with app.test_request_context("/"), pytest.raises(RuntimeError, match="SECRET_KEY"):
            apps.render("board", "show_board", {"title": "t"})
    finally:
        mcp.close()
