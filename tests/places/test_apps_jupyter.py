"""MCP Apps in Jupyter: mcp_sync.apps.show, an anywidget widget bridged to the client in
the kernel.

Three views of it, against the SDK's MCP Apps server (tests/servers/apps_server.py):

* the widget in this process, fed the messages its page would forward (no browser):
  what the kernel answers, and the bound on tool calls in flight;
* a notebook executed by a real kernel (nbclient): the cell's output is the widget, and
  the widget state saved with the notebook holds the framed document and the tool data;
* a live comm: a notebook saved as a static HTML page has no kernel, so no comm can
  work there. The honest equivalent: a real Jupyter server (JupyterLab) with the
  notebook opened in headless Chromium, its cell run by the page against a real kernel;
  the app in the widget's frame initialises, gets its tool result, and its tool call
  goes page -> comm -> kernel -> client -> server, which records it.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any, Dict, Iterator

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

import mcp_sync
from mcp_sync.apps import APP_MIME_TYPE, AppError, AppsExtension, show

from .._procs import free_port, stop_process, wait_listening
from ..conftest import ROOT
from ..helpers import Recorder
from . import test_jupyter
from ._apps import (
    app_frame,
    apps_server,
    called,
    chromium,
    inside_frame,
    records,
    wait_until,
)

kernel_spec = test_jupyter.kernel_spec  # the fixture: a kernelspec for this interpreter

pytestmark = [pytest.mark.peer, pytest.mark.timeout(300)]


@pytest.fixture
def board(tmp_path: Path) -> Iterator[mcp_sync.Client]:
    entry = apps_server(tmp_path / "board.jsonl")
    with mcp_sync.connect([entry["command"], *entry["args"]], name="board",
                          timeout=30, extensions=[AppsExtension()]) as client:
        yield client


def message(method: str, params: Any = None, request_id: Any = None) -> str:
    body: Dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if request_id is not None:
        body["id"] = request_id
    if params is not None:
        body["params"] = params
    return json.dumps(body)


def replies(sent: Recorder) -> Dict[str, Dict[str, Any]]:
    """The host replies the widget sent so far, by the page's message id."""
    return {content["id"]: content["reply"] for (content,) in sent.snapshot()
            if content.get("kind") == "reply"}


def test_the_widget_answers_the_app_through_the_client(board: mcp_sync.Client,
                                                       tmp_path: Path) -> None:
    view = show(board, "show_board", {"title": "Groceries"}, height=300)
    sent = Recorder()
    view.send = sent  # what would go over the comm to the page
    try:
        assert view.srcdoc.startswith('<!DOCTYPE html><meta http-equiv="Content-Security-'
                                      'Policy" content="default-src &#x27;none&#x27;; ')
        assert "<title>Board</title>" in view.srcdoc
        assert [m["method"] for m in view.tool_data] == ["ui/notifications/tool-input",
                                                         "ui/notifications/tool-result"]
        assert view.tool_data[1]["params"]["structuredContent"] == {
            "title": "Groceries", "items": ["milk"]}
        assert (view.height, view.border) == (300, True)
        assert "camera 'none'" in view.allow

        def page_sends(message_id: str, text: str) -> None:
            view._received(view, {"kind": "message", "id": message_id, "message": text}, [])

        page_sends("v:1", message("ui/initialize", {"appInfo": {"name": "a", "version": "1"},
                                                    "appCapabilities": {},
                                                    "protocolVersion": "2026-01-26"}, 1))
        page_sends("v:2", message("ui/notifications/initialized"))
        page_sends("v:3", message("tools/call", {"name": "add_item",
                                                 "arguments": {"text": "from the page"}}, 2))
        page_sends("v:4", message("tools/call", {"name": "clear_board"}, 3))
        page_sends("v:5", "[" * 50000)
        view._received(view, {"kind": "message", "id": {"not": "a string"}, "message": "x"}, [])
        got = sent.wait_for(lambda calls: len(replies(sent)) == 5 and replies(sent),
                            what="five replies")
        assert got["v:1"]["post"][0]["result"]["hostContext"]["toolInfo"]["tool"][
            "name"] == "show_board"
        assert got["v:2"] == {"post": [], "resize": None, "deliver": True, "refused": None}
        assert got["v:3"]["post"][0]["result"]["structuredContent"] == {"count": 2}
        assert got["v:4"]["post"][0]["error"]["message"] == (
            "Tool clear_board may not be called by an app")
        assert got["v:5"]["refused"] == "not JSON" and got["v:5"]["post"] == []
        assert called(tmp_path / "board.jsonl") == ["show_board", "add_item"]
        view.teardown("done")
        (content,) = sent.snapshot()[-1]
        assert content["kind"] == "post"
        assert content["post"][0]["method"] == "ui/resource-teardown"
    finally:
        view.close()


def test_tool_calls_in_flight_are_bounded(board: mcp_sync.Client, tmp_path: Path) -> None:
    view = show(board, "show_board", {"title": "t"}, max_calls=1)
    sent = Recorder()
    view.send = sent
    try:
        slow = message("tools/call", {"name": "slow_item", "arguments": {"seconds": 5}}, 1)
        view._received(view, {"kind": "message", "id": "v:1", "message": slow}, [])
        quick = message("tools/call", {"name": "add_item", "arguments": {"text": "x"}}, 2)
        view._received(view, {"kind": "message", "id": "v:2", "message": quick}, [])
        # The second is answered at once, before the first returns.
        assert list(replies(sent)) == ["v:2"]
        assert replies(sent)["v:2"]["post"][0]["error"]["message"] == (
            "Too many tool calls in flight (at most 1)")
        done = sent.wait_for(lambda calls: "v:1" in replies(sent) and replies(sent),
                             what="the slow call's reply")
        assert done["v:1"]["post"][0]["result"]["structuredContent"] == {"count": 1}
        view._received(view, {"kind": "message", "id": "v:3", "message": quick}, [])
        again = sent.wait_for(lambda calls: "v:3" in replies(sent) and replies(sent),
                              what="the next call's reply")
        assert again["v:3"]["post"][0]["result"]["structuredContent"] == {"count": 2}
        assert called(tmp_path / "board.jsonl") == ["show_board", "slow_item", "add_item"]
    finally:
        view.close()


def test_a_tool_without_an_app_is_not_called(board: mcp_sync.Client, tmp_path: Path) -> None:
    with pytest.raises(AppError, match="lists no tool nowhere"):
        show(board, "nowhere")
    assert APP_MIME_TYPE == "text/html;profile=mcp-app"
    assert called(tmp_path / "board.jsonl") == []


def notebook_with_app(record: Path, kernel: str) -> Any:
    entry = apps_server(record)
    return new_notebook(cells=[new_code_cell(
        "import mcp_sync\n"
        "from mcp_sync.apps import show\n"
        "from mcp_sync.apps import AppsExtension\n"
        f"client = mcp_sync.connect({[entry['command'], *entry['args']]!r}, name='board',\n"
        "                          extensions=[AppsExtension()])\n"
        "show(client, 'show_board', {'title': 'Groceries'})"),
        new_code_cell("client.close()")],
        metadata={"kernelspec": {"name": kernel, "display_name": "mcp_sync tests",
                                 "language": "python"}})


def test_a_kernel_shows_the_widget_and_saves_its_state(kernel_spec: str, tmp_path: Path) -> None:
    notebook = notebook_with_app(tmp_path / "board.jsonl", kernel_spec)
    NotebookClient(notebook, kernel_name=kernel_spec, timeout=120, store_widget_state=True,
                   resources={"metadata": {"path": str(ROOT)}}).execute()
    (output,) = notebook.cells[0].outputs
    assert output.output_type == "execute_result"
    view = output.data["application/vnd.jupyter.widget-view+json"]
    state = notebook.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    model = state[view["model_id"]]["state"]
    assert model["_model_module"] == "anywidget"
    assert model["srcdoc"].startswith('<!DOCTYPE html><meta http-equiv="Content-Security')
    assert model["tool_data"][1]["params"]["structuredContent"]["title"] == "Groceries"
    assert "function mcpSyncAppHost" in model["_esm"]
    assert called(tmp_path / "board.jsonl") == ["show_board"]


@pytest.fixture
def jupyterlab(kernel_spec: str, tmp_path: Path) -> Iterator[Dict[str, Any]]:
    """JupyterLab on 127.0.0.1 serving ``tmp_path/root``, its app object exposed to the
    page (``window.jupyterapp``); shut down (its kernels with it) after the test."""
    root = tmp_path / "root"
    root.mkdir()
    port, token = free_port(), secrets.token_hex(16)
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"))
    log = (tmp_path / "lab.log").open("w")
    lab = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
         "--ip=127.0.0.1", f"--port={port}", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={root}", "--LabApp.expose_app_in_browser=True",
         f"--LabApp.user_settings_dir={tmp_path / 'settings'}",
         f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}"],
        env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_listening(port, 60)
        yield {"root": root, "url": f"http://127.0.0.1:{port}", "token": token,
               "kernel": kernel_spec}
    finally:
        try:
            urllib.request.urlopen(urllib.request.Request(
                f"http://127.0.0.1:{port}/api/shutdown", method="POST",
                headers={"Authorization": f"token {token}"}), timeout=30).close()
            lab.wait(30)
        except (OSError, subprocess.TimeoutExpired):
            pass
        if lab.poll() is None:
            stop_process(lab)
        log.close()


KERNEL_CONNECTED = """
const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
const kernel = panel && panel.sessionContext && panel.sessionContext.session &&
  panel.sessionContext.session.kernel;
return !!kernel && kernel.connectionStatus === "connected" && kernel.status === "idle";
"""


def test_jupyterlab_runs_the_app_over_a_live_comm(jupyterlab: Dict[str, Any],
                                                  tmp_path: Path) -> None:
    record = tmp_path / "board.jsonl"
    nbformat.write(notebook_with_app(record, jupyterlab["kernel"]),
                   jupyterlab["root"] / "app.ipynb")
    with chromium() as driver:
        driver.get(f"{jupyterlab['url']}/lab/tree/app.ipynb?token={jupyterlab['token']}")
        wait_until(driver, lambda d: d.execute_script(KERNEL_CONNECTED),
                   "JupyterLab to open the notebook on a connected kernel")
        # Only the first cell: the second closes the client.
        driver.execute_script("window.jupyterapp.commands.execute('notebook:run-cell')")
        app = inside_frame(driver, app_frame(driver))
        frame = app_frame(driver)
        assert frame.get_attribute("sandbox") == "allow-scripts"
        wait_until(driver, lambda d: d.execute_script(
            "return arguments[0].clientHeight", frame) == 321,
            "the frame to take the height the app asked for")
    assert app["status"] == "initialised by mcp-sync 2026-01-26 tool show_board"
    assert app["input"] == 'input {"title":"Groceries"}'
    assert app["title"] == "Groceries"
    assert app["added"] == "added: 2"
    assert records(record) == [
        {"tool": "show_board", "arguments": {"title": "Groceries"}},
        {"tool": "add_item", "arguments": {"text": "from the app"}},
    ]
