"""Writes what the fault cases observed to ``$MCP_SYNC_FAULT_LOG`` (for bench/reliability.py)."""

from __future__ import annotations

import os

import pytest

from .helpers import write_log


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    path = os.environ.get("MCP_SYNC_FAULT_LOG")
    if path:
        write_log(path)
