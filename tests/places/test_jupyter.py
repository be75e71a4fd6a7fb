"""mcp_sync in Jupyter: the example notebook executed by nbclient on a real ipykernel.

The kernel runs an asyncio loop and gives the notebook a ``sys.stderr`` of its own; the
client must not care. A cell is interrupted (a kernel interrupt: SIGINT, as the ■ button
sends) in the middle of a long call: the call is cancelled on the wire, and the next
cell uses the same client.
"""

from __future__ import annotations

import base64
import io
import json
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell

import mcp_sync

from .._procs import EXAMPLES
from ..conftest import ROOT
from ..servers.model_endpoint import ModelEndpoint, chat_text, messages_text
from .test_example_llm import script, tool_calls_reply, tool_results, use_provider

NOTEBOOK = EXAMPLES / "notebook.ipynb"
KERNEL = "mcp-sync-test-python"
INTERRUPT_AFTER = 3  # seconds into the long call

# Injected after the example's image cell: the server's "count cancelled" log message
# (sent when notifications/cancelled reaches it) proves the cancellation went out.
WATCH_LOG = """import logging, threading
cancelled_on_server = threading.Event()

class CancelWatch(logging.Handler):
    def emit(self, record):
        if "count cancelled" in record.getMessage():
            cancelled_on_server.set()

logging.getLogger("mcp_sync.server").addHandler(CancelWatch())
logging.getLogger("mcp_sync.server").setLevel(logging.INFO)"""
LONG_CALL = 'client.call_tool("count", {"n": 1000, "interval": 0.05})  # 50 s'
AFTER_INTERRUPT = """assert cancelled_on_server.wait(10), "the server heard of no cancellation"
client.call_tool("add", {"a": 1, "b": 2}).structured"""


@pytest.fixture
def kernel_spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A kernelspec for this interpreter in a temporary JUPYTER_PATH: no
    ``ipykernel install`` needed, and the kernel runs the Python the tests run."""
    spec_dir = tmp_path / "kernels" / KERNEL
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "mcp_sync tests",
        "language": "python",
    }))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # this checkout's mcp_sync in the kernel
    return KERNEL


def _index(cells: List[Any], needle: str) -> int:
    return next(i for i, cell in enumerate(cells) if needle in cell.source)


def _result(cell: Any) -> Dict[str, Any]:
    data: Dict[str, Any] = next(
        out for out in cell.outputs if out.output_type == "execute_result")["data"]
    return data


def _language_model_section(cells: List[Any]) -> slice:
    """The cells of the notebook's language-model section (up to the closing cell)."""
    start = _index(cells, "## A language model using the tools")
    end = next(i for i, cell in enumerate(cells) if cell.source.startswith("client.close()"))
    assert start < end
    return slice(start, end)


def test_example_notebook_on_a_real_kernel_with_an_interrupted_call(kernel_spec: str) -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    cells = notebook.cells
    del cells[_language_model_section(cells)]  # needs a model: the next test
    at = _index(cells, '"image"') + 1
    long_call = new_code_cell(LONG_CALL, metadata={"tags": ["raises-exception"]})
    cells[at:at] = [new_code_cell(WATCH_LOG), long_call, new_code_cell(AFTER_INTERRUPT)]

    def timeout_for(cell: Any) -> Optional[int]:
        # nbclient interrupts the kernel when a cell runs past its timeout.
        return INTERRUPT_AFTER if cell is long_call else 120

    started = time.monotonic()
    NotebookClient(
        notebook, kernel_name=kernel_spec, timeout=120, timeout_func=timeout_for,
        interrupt_on_timeout=True, resources={"metadata": {"path": str(ROOT)}},
    ).execute()
    assert time.monotonic() - started < 60  # the 50 s call did not run to its end

    connect = _result(cells[_index(cells, "mcp_sync.connect(")])
    assert "mcp-sync-demo" in connect["text/html"] and "capabilities" in connect["text/html"]
    assert "| era | session |" in connect["text/markdown"]

    tools = _result(cells[_index(cells, "client.list_tools()")])
    assert 'class="mcp-sync-tools"' in tools["text/html"]
    assert "<b>image</b>" in tools["text/html"] and "**add**" in tools["text/markdown"]

    added = _result(cells[_index(cells, '"add", {"a": 2')])
    assert "<th" in added["text/html"] and "sum" in added["text/html"]

    image = _result(cells[at - 1])
    png = base64.b64decode(image["image/png"])
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert '<img src="data:image/png;base64,' in image["text/html"]
    assert "a 96x48 gradient" in image["text/html"]

    (error,) = [out for out in long_call.outputs if out.output_type == "error"]
    assert error["ename"] == "KeyboardInterrupt"
    assert _result(cells[at + 2])["text/plain"] == "{'sum': 3}"

    loop_cell = cells[_index(cells, "asyncio.to_thread")]
    printed = "".join(out.get("text", "") for out in loop_cell.outputs
                      if out.output_type == "stream")
    assert "event loop is running: True" in printed
    assert _result(loop_cell)["text/plain"] == "'from a worker thread'"
    assert not any(out.output_type == "error" for cell in cells
                   if cell is not long_call for out in cell.get("outputs", []))


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_example_notebook_language_model_loop(
        kernel_spec: str, provider: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The notebook's connecting cell, its language-model section and its closing cell,
    # on a real kernel whose model SDK talks to the scripted endpoint; then the same loop
    # with a model that keeps calling tools past the bound.
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    cells = notebook.cells
    section = _language_model_section(cells)
    past_the_bound = new_code_cell('ask("And again?", max_turns=2)',
                                   metadata={"tags": ["raises-exception"]})
    notebook.cells = [cells[_index(cells, "mcp_sync.connect(")], *cells[section],
                      past_the_bound, cells[section.stop]]

    with ModelEndpoint() as model:
        use_provider(monkeypatch, provider, model)
        final = chat_text if provider == "openai" else messages_text
        path = script(model, provider, *(tool_calls_reply(provider, turn, "mcp-sync-demo")
                                         for turn in (1, 2)), final("2.5 + 4 = 6.5"),
                      *(tool_calls_reply(provider, turn, "mcp-sync-demo")
                        for turn in (3, 4, 5)))
        NotebookClient(notebook, kernel_name=kernel_spec, timeout=120,
                       resources={"metadata": {"path": str(ROOT)}}).execute()
        bodies = model.bodies(path)

    setup = notebook.cells[_index(notebook.cells, "mcp_sync.Toolbox(client)")]
    ask = notebook.cells[_index(notebook.cells, 'ask("What')]
    names = _result(setup)["text/plain"]
    assert "'mcp-sync-demo__add'" in names and "'mcp-sync-demo__image'" in names
    assert _result(ask)["text/plain"] == "'2.5 + 4 = 6.5'"
    printed = "".join(out.get("text", "") for out in ask.outputs if out.output_type == "stream")
    assert printed.splitlines() == ["calling mcp-sync-demo__add, mcp-sync-demo__echo"] * 2
    assert len(bodies) == 5  # three for the question, two for the bounded one
    assert bodies[0]["messages"] == [{"role": "user", "content": "What is 2.5 + 4? Use the tools."}]
    assert bodies[0]["model"] == f"scripted-{provider}"
    # The demo server's results reached the model.
    assert tool_results(provider, bodies[1]) == [("add-1", '{"sum": 6.5}'), ("echo-1", "turn 1")]
    assert tool_results(provider, bodies[2]) == [("add-2", '{"sum": 6.5}'), ("echo-2", "turn 2")]
    assert tool_results(provider, bodies[4]) == [("add-3", '{"sum": 6.5}'), ("echo-3", "turn 3")]
    (error,) = [out for out in past_the_bound.outputs if out.output_type == "error"]
    assert error["ename"] == "RuntimeError"
    assert error["evalue"] == "the model still called tools after 2 turns"
    assert not any(out.output_type == "error" for cell in notebook.cells
                   if cell is not past_the_bound for out in cell.get("outputs", []))


def test_example_notebook_runs_headless_without_an_api_key(
        kernel_spec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The notebook as it is, executed headless (as ``jupyter execute`` does) with no
    model key: the language-model section prints a note and skips its question, and the
    closing cell runs."""
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MCP_SYNC_EXAMPLE_PROVIDER"):
        monkeypatch.delenv(name, raising=False)
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(notebook, kernel_name=kernel_spec, timeout=120,
                   resources={"metadata": {"path": str(ROOT)}}).execute()
    cells = notebook.cells
    errors = [out for cell in cells for out in cell.get("outputs", [])
              if out.output_type == "error"]
    assert errors == []
    setup = cells[_index(cells, "mcp_sync.Toolbox(client)")]
    printed = "".join(out.get("text", "") for out in setup.outputs
                      if out.output_type == "stream")
    assert printed == "OPENAI_API_KEY is not set: this section skips asking the model.\n"
    ask = cells[_index(cells, 'ask("What')]
    assert _result(ask)["text/plain"] == "'(skipped: set OPENAI_API_KEY to ask the model)'"
    closing = cells[-1]
    assert closing.source.startswith("client.close()")
    assert closing.execution_count is not None  # it ran
    assert all(cell.execution_count is not None for cell in cells if cell.cell_type == "code")


def test_a_stderr_without_a_file_descriptor_is_fine(monkeypatch: pytest.MonkeyPatch) -> None:
    # ipykernel's sys.stderr may have no file descriptor; the server's stderr is a pipe
    # of our own whatever sys.stderr is.
    fake = io.StringIO()
    monkeypatch.setattr(sys, "stderr", fake)
    with pytest.raises(io.UnsupportedOperation):
        sys.stderr.fileno()
    with mcp_sync.connect([sys.executable, "-m", "mcp_sync.demo_server"], cwd=str(ROOT),
                          timeout=30) as client:
        assert client.call_tool("echo", {"text": "no fd"}).text == "no fd"
    assert fake.getvalue() == ""
