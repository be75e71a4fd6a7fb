"""What the MCP Apps places tests share: the apps server's command, its record, a probe
HTTP server, and a real browser (Debian's headless Chromium, driven by selenium).

The browser is the system's ``/usr/bin/chromium`` with its ``/usr/bin/chromedriver``
(``.ci/install-peers`` installs both); a missing one fails the test. It starts with a
fresh profile and without its background services (which would try the network), and is
quit, its processes reaped, when the test ends.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import re
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

from ..conftest import PY, SERVERS

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
#: How long a page may take to show what a test waits for: generous, the VM is small.
BROWSER_WAIT = 60.0


def apps_server(record: Path, *args: str) -> Dict[str, Any]:
    """The ``mcpServers`` entry of the test's MCP Apps server (stdio), recording each
    tool call into ``record``."""
    return {"command": PY, "args": [str(SERVERS / "apps_server.py"), "--record", str(record),
                                    *args]}


def records(path: Path) -> List[Dict[str, Any]]:
    """The tool calls the apps server recorded, in order."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def called(path: Path) -> List[str]:
    return [entry["tool"] for entry in records(path)]


@contextlib.contextmanager
def probe_servers(count: int) -> Iterator[Tuple[List[str], List[str]]]:
    """``count`` HTTP servers on 127.0.0.1 that answer any GET and note its path; yields
    their origins and the list of ``origin + path`` they were asked for."""
    hits: List[str] = []

    class Probe(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(f"http://127.0.0.1:{self.server.server_address[1]}{self.path}")
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: Any) -> None:
            pass

    servers = [http.server.ThreadingHTTPServer(("127.0.0.1", 0), Probe) for _ in range(count)]
    threads = [threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.05},
                                name="probe-server", daemon=True) for s in servers]
    for thread in threads:
        thread.start()
    try:
        yield [f"http://127.0.0.1:{s.server_address[1]}" for s in servers], hits
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
        for thread in threads:
            thread.join(10)


@contextlib.contextmanager
def chromium(**window: int) -> Iterator[WebDriver]:
    """Headless Chromium, driven by chromedriver; quit (and its profile removed) after."""
    profile = tempfile.mkdtemp(prefix="mcp-sync-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync",
                 "--disable-default-apps", "--disable-extensions",
                 f"--window-size={window.get('width', 1280)},{window.get('height', 1000)}",
                 f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait_until(driver: WebDriver, condition: Any, what: str,
               timeout: float = BROWSER_WAIT) -> Any:
    """Wait (bounded) until ``condition(driver)`` is truthy; its value."""
    return WebDriverWait(driver, timeout, poll_frequency=0.1).until(condition, message=what)


def app_frame(driver: WebDriver, selector: str = "iframe.mcp-sync-app") -> WebElement:
    """The app's frame, once the host page made it."""
    frame: WebElement = wait_until(
        driver, lambda d: (d.find_elements(By.CSS_SELECTOR, selector) or [None])[0],
        "the host page to make the app's frame")
    return frame


def inside_frame(driver: WebDriver, frame: WebElement) -> Dict[str, str]:
    """Once the app in ``frame`` says it is done (``body[data-done]``): the text of each
    of its elements that has an id."""
    driver.switch_to.frame(frame)
    try:
        wait_until(driver, lambda d: d.execute_script(
            "return document.body && document.body.dataset.done === 'yes'"),
            "the app to finish")
        texts: Dict[str, str] = driver.execute_script(
            "var out = {}; document.querySelectorAll('[id]').forEach("
            "function (e) { out[e.id] = e.textContent; }); return out;")
        return texts
    finally:
        driver.switch_to.default_content()


def page_config(page: str) -> Dict[str, Any]:
    """The configuration a web host page embeds (frame and bridge URLs, token...)."""
    found = re.search(r'id="mcp-sync-app-config">(.*?)</script>', page, re.S)
    assert found is not None, page[:500]
    config: Dict[str, Any] = json.loads(found.group(1))
    return config
