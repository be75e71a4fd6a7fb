"""MCP Apps in a Django project, in a real browser: mcp_sync.contrib.django.views.

The project is the example's settings with ``CsrfViewMiddleware`` and
``XFrameOptionsMiddleware`` on, the URLconf of tests/places/_apps_django_urls.py, and
``MCP_SERVERS`` naming the SDK's MCP Apps server (tests/servers/apps_server.py), served
by werkzeug's threaded server on 127.0.0.1 and opened in headless Chromium.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator, Tuple

import pytest
import requests
from django.core.handlers.wsgi import WSGIHandler
from django.test import override_settings

from mcp_sync.apps import AppsExtension
from mcp_sync.contrib import django as mcp_django

from ..helpers import serve_wsgi
from ._apps import app_frame, apps_server, called, chromium, inside_frame, page_config, records
from ._django import setup_django

setup_django()

pytestmark = [pytest.mark.peer, pytest.mark.timeout(300)]


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Tuple[Path, str]]:
    record = tmp_path / "board.jsonl"
    with override_settings(
        MCP_SERVERS={"board": apps_server(record)},
        MCP_OPTIONS={"timeout": 30, "extensions": [AppsExtension()]},
        MIDDLEWARE=["django.middleware.csrf.CsrfViewMiddleware",
                    "django.middleware.clickjacking.XFrameOptionsMiddleware"],
        ROOT_URLCONF="tests.places._apps_django_urls",
    ):
        try:
            with serve_wsgi(WSGIHandler()) as url:
                yield record, url
        finally:
            mcp_django.close()


def test_the_app_initialises_gets_its_result_and_its_call_reaches_the_server(
        project: Tuple[Path, str]) -> None:
    record, url = project
    with chromium() as driver:
        driver.get(f"{url}/login")
        driver.get(f"{url}/app/show_board?arguments=" + json.dumps({"title": "Errands"}))
        app = inside_frame(driver, app_frame(driver))
    assert app["status"] == "initialised by mcp-sync 2026-01-26 tool show_board"
    assert app["title"] == "Errands" and app["input"] == 'input {"title":"Errands"}'
    assert app["added"] == "added: 2"
    assert records(record) == [
        {"tool": "show_board", "arguments": {"title": "Errands"}},
        {"tool": "add_item", "arguments": {"text": "from the app"}},
    ]


def test_the_bridge_is_behind_csrf_and_the_projects_decorators(
        project: Tuple[Path, str]) -> None:
    record, url = project
    session = requests.Session()
    session.get(f"{url}/login", timeout=30)
    page = session.get(f"{url}/app/show_board", params={"arguments": '{"title": "t"}'},
                       timeout=60)
    assert page.status_code == 200 and page.headers["X-Frame-Options"] == "DENY"
    config = page_config(page.text)
    assert config["csrfHeader"] == "X-CSRFTOKEN" and config["csrfToken"]
    assert config["frameUrl"].startswith("/mcp-apps/frame/")
    frame = session.get(f"{url}{config['frameUrl']}", timeout=60)
    assert frame.status_code == 200 and frame.headers["X-Frame-Options"] == "SAMEORIGIN"
    assert frame.headers["Content-Security-Policy"].endswith(
        "sandbox allow-scripts; frame-ancestors 'self'")
    call = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "add_item", "arguments": {"text": "x"}}})
    body = {"token": config["token"], "message": call}
    origin = {"Origin": url, "Referer": f"{url}/app/show_board"}
    # The page's token alone is not enough: Django's CSRF check refuses the POST.
    refused = session.post(f"{url}/mcp-apps/bridge", json=body, headers=origin, timeout=30)
    assert refused.status_code == 403 and "CSRF" in refused.text
    # With the CSRF header and cookie but not the project's session cookie: its
    # decorator refuses.
    anonymous = requests.post(f"{url}/mcp-apps/bridge", json=body, timeout=30,
                              headers={**origin, config["csrfHeader"]: config["csrfToken"]},
                              cookies={"csrftoken": session.cookies["csrftoken"]})
    assert anonymous.status_code == 401
    assert called(record) == ["show_board"]
    # As the page sends it: the token, the CSRF header and cookie, the session cookie.
    answer = session.post(f"{url}/mcp-apps/bridge", json=body, timeout=60,
                          headers={**origin, config["csrfHeader"]: config["csrfToken"]})
    assert answer.status_code == 200, answer.text
    assert answer.json()["post"][0]["result"]["structuredContent"] == {"count": 2}
    assert called(record) == ["show_board", "add_item"]
