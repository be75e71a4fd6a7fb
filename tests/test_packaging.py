"""The package's metadata: declared once, in pyproject.toml's [project], with the version
read from mcp_sync/_version.py, and installed as declared."""

from __future__ import annotations

import configparser
import importlib.metadata
import re

import mcp_sync

from .conftest import ROOT


def test_the_installed_version_is_mcp_sync_version() -> None:
    assert importlib.metadata.version("mcp-sync-client") == mcp_sync.__version__


def test_the_version_is_written_once() -> None:
    """pyproject.toml takes it from mcp_sync/_version.py; setup.cfg holds no metadata."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    project = pyproject.split("\n[project]\n", 1)[1].split("\n[", 1)[0]
    assert re.search(r'^dynamic = \["version"\]', project, re.M)
    assert not re.search(r"^version\s*=", project, re.M)
    assert '\nversion = {attr = "mcp_sync._version.__version__"}\n' in pyproject
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    assert setup.sections() == []
    assert mcp_sync.__version__ not in pyproject + (ROOT / "setup.cfg").read_text()
    source = (ROOT / "mcp_sync" / "_version.py").read_text()
    assert re.findall(r'^__version__ = "([^"]+)"$', source, re.M) == [mcp_sync.__version__]
    assert not re.search(r'^__version__ = "', (ROOT / "mcp_sync" / "__init__.py").read_text(),
                         re.M)
