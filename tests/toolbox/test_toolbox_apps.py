"""Toolbox and MCP Apps: a tool whose ``_meta.ui.visibility`` lacks ``"model"`` is its
app's alone, never offered to a model.

Against the official SDK's ``Apps`` extension (tests/servers/apps_server.py, marked
``peer``), through a client and through a manager, and an in-process server whose
visibility is malformed.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

import mcp_sync
from mcp_sync import Client, InvalidToolCall, Manager, MemoryTransport, Toolbox
from mcp_sync.testing import FakeServer

from ..conftest import PY, SERVERS

# show_board, clear_board and show_hostile hold "model" (or say nothing: both); add_item,
# slow_item and secret_op are ["app"].
MODEL_TOOLS = ["clear_board", "show_board", "show_hostile", "show_wanderer"]


def apps_command(record: Path) -> List[str]:
    return [PY, str(SERVERS / "apps_server.py"), "--record", str(record),
            "--extra-tool", "secret_op"]


@pytest.fixture
def board(tmp_path: Path) -> Iterator[Client]:
    with mcp_sync.connect(apps_command(tmp_path / "board.jsonl"), name="board") as client:
        yield client


@pytest.mark.peer
def test_app_only_tools_are_never_offered_to_a_model(board: Client, tmp_path: Path) -> None:
    listed = {tool.name for tool in board.list_tools()}
    assert {"add_item", "slow_item", "secret_op"} <= listed  # the client lists them all
    toolbox = Toolbox(board)
    assert sorted(t["tool"] for t in toolbox.tools()) == MODEL_TOOLS
    assert sorted(f["function"]["name"] for f in toolbox.to_openai()) == [
        f"board__{name}" for name in MODEL_TOOLS]
    assert sorted(t["name"] for t in toolbox.to_anthropic()) == [
        f"board__{name}" for name in MODEL_TOOLS]
    assert len(toolbox.to_openai_responses()) == len(MODEL_TOOLS)
    # Not even when asked for by name...
    chosen = Toolbox(board, include=["add_item", "show_board"]).tools()
    assert [t["tool"] for t in chosen] == ["show_board"]
    assert len(Toolbox(board, include="add_item").tools()) == 0
    # ...and a model that names one is told it does not exist; the server never hears of it.
    result = toolbox.call("board__add_item", {"text": "from a model"})
    assert result.is_error
    assert result.text == "there is no tool named 'board__add_item'; no call was made"
    with pytest.raises(InvalidToolCall):
        Toolbox(board, raise_errors=True).call("board__add_item", {"text": "again"})
    assert toolbox.call("board__show_board", {"title": "t"}).structured["title"] == "t"
    assert "add_item" not in (tmp_path / "board.jsonl").read_text()


@pytest.mark.peer
def test_a_managers_app_only_tools_are_not_offered_either(tmp_path: Path) -> None:
    command = apps_command(tmp_path / "board.jsonl")
    config: Dict[str, Any] = {"mcpServers": {"board": {"command": command[0],
                                                       "args": command[1:]}}}
    with Manager(config) as manager:
        manager.wait_ready("board", 60)
        names = sorted(t["name"] for t in Toolbox(manager).tools())
    assert names == [f"board__{name}" for name in MODEL_TOOLS]


def test_a_malformed_visibility_offers_the_tool_to_no_model(
        caplog: pytest.LogCaptureFixture) -> None:
    server = FakeServer("odd")
    for name in ("plain", "stringly", "listed"):
        server.tool(name)(lambda: "ok")
    # The definitions as a server would send them (FakeServer has no _meta option).
    server.tools["stringly"].definition["_meta"] = {"ui": {"visibility": "app"}}
    server.tools["listed"].definition["_meta"] = {"ui": {"visibility": ["model"]}}
    with Client(MemoryTransport(server), name="odd") as client:
        toolbox = Toolbox(client)
        for _ in range(3):
            assert sorted(t["tool"] for t in toolbox.tools()) == ["listed", "plain"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == ["tool odd__stringly: not offered: its _meta.ui.visibility is not a "
                        "list of strings"]  # once, however often it is listed
