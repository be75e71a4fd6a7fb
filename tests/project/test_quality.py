"""mypy --strict over the library; ruff over it, its tests, benchmarks, examples and noxfile."""

from __future__ import annotations

import subprocess
import sys

from ..conftest import ROOT


def test_mypy_strict_is_clean() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "mcp_sync"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_is_clean() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check",
         "mcp_sync", "tests", "bench", "examples", "noxfile.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
