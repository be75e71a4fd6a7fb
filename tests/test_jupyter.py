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

from ._procs import EXAMPLES
from .conftest import ROOT

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


def test_example_notebook_on_a_real_kernel_with_an_interrupted_call(kernel_spec: str) -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    cells = notebook.cells
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
