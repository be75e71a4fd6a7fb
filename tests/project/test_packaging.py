"""The package's metadata: declared once, in pyproject.toml's [project], with the version
read from mcp_sync/_version.py, and installed as declared."""

from __future__ import annotations

import ast
import configparser
import importlib.metadata
import re

from packaging.version import Version

import mcp_sync

from ..conftest import ROOT


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


def test_a_plain_install_checks_tool_results() -> None:
    """Checking a tool's structured result against its outputSchema is what the
    specification asks of a client: ``pip install mcp-sync-client`` brings the checker
    (``jsonschema``) and the matcher of the patterns the bounded one refuses (``regex``),
    with no extra; ``[validation]`` stays declared, so install lines naming it still work."""
    metadata = importlib.metadata.metadata("mcp-sync-client")
    unconditional = {
        re.split(r"[ ;<>=!~\[(]", requirement, maxsplit=1)[0].lower()
        for requirement in metadata.get_all("Requires-Dist") or []
        if ";" not in requirement
    }
    assert {"jsonschema", "regex"} <= unconditional, unconditional
    assert "validation" in (metadata.get_all("Provides-Extra") or [])


def test_the_oldest_session_pins_each_dependency_at_its_floor() -> None:
    """``nox -s oldest`` tests what a user may have: every dependency at the lowest
    version pyproject.toml allows, none forgotten."""
    floors = {}
    for requirement in importlib.metadata.requires("mcp-sync-client") or []:
        if ";" not in requirement:  # not an extra's
            name, floor = requirement.split(">=")
            floors[name.lower()] = Version(floor)
    noxfile = ast.parse((ROOT / "noxfile.py").read_text())
    [pins] = [ast.literal_eval(node.value) for node in noxfile.body
              if isinstance(node, ast.Assign)
              and [getattr(t, "id", None) for t in node.targets] == ["OLDEST_DEPS"]]
    pinned = {name.lower(): Version(version)
              for name, version in (pin.split("==") for pin in pins)}
    assert pinned == floors


def test_every_install_line_names_this_distribution_and_a_declared_extra() -> None:
    """An install line in the docs, the examples or a library message (``pip install
    'mcp-sync-client[otel]'``) names the distribution as PyPI knows it and an extra it
    declares: a user copies these lines as they are."""
    metadata = importlib.metadata.metadata("mcp-sync-client")
    extras = set(metadata.get_all("Provides-Extra") or [])
    texts = [ROOT / "README.md", ROOT / "SECURITY.md", *(ROOT / "docs").glob("*.md"),
             *(ROOT / "examples").rglob("*.md"), *(ROOT / "mcp_sync").rglob("*.py")]
    lines = []
    for path in texts:
        for match in re.finditer(r"pip install [\"']?([A-Za-z0-9_.-]+)\[([a-z0-9_,-]+)\]",
                                 path.read_text(encoding="utf-8")):
            lines.append((path.name, match.group(1), match.group(2)))
    assert len(lines) >= 5, lines  # the docs' lines are found at all
    for name, dist, wanted in lines:
        assert dist in (".", "mcp-sync-client"), (name, dist)
        assert set(wanted.split(",")) <= extras, (name, wanted, extras)
