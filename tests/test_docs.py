"""The documentation site builds strictly and documents every public name."""

from __future__ import annotations

import html
import inspect
import re
import subprocess
import sys
from pathlib import Path

import mcp_sync

from .conftest import ROOT

REFERENCE = ROOT / "docs" / "reference.md"


def public_members(cls: type) -> list[str]:
    """The public methods and properties a class defines itself."""
    return [
        name for name, value in vars(cls).items()
        if not name.startswith("_")
        and (inspect.isfunction(value) or isinstance(value, (property, staticmethod, classmethod)))
    ]


def test_every_public_name_is_in_the_reference() -> None:
    referenced = set(re.findall(r"^::: mcp_sync\.(\w+)$", REFERENCE.read_text(), re.M))
    exported = set(mcp_sync.__all__) - {"__version__"}  # a string; the page names it in prose
    assert exported - referenced == set(), "public names missing from docs/reference.md"
    assert referenced - exported - {"types", "testing", "auth"} == set()


def test_every_public_name_and_member_has_a_docstring() -> None:
    undocumented = []
    for name in mcp_sync.__all__:
        obj = getattr(mcp_sync, name)
        if name == "__version__":
            continue
        if not inspect.getdoc(obj):
            undocumented.append(name)
        if inspect.isclass(obj):
            undocumented += [
                f"{name}.{member}" for member in public_members(obj)
                if not inspect.getdoc(getattr(obj, member))
            ]
    assert undocumented == []


def test_the_site_builds_in_strict_mode(tmp_path: Path) -> None:
    site = tmp_path / "site"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT, capture_output=True, text=True, timeout=180,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    # The getting-started page is the README's quick start, included, not copied.
    index = html.unescape(re.sub(r"<[^>]+>", "", (site / "index.html").read_text()))
    readme = (ROOT / "README.md").read_text()
    for command in re.findall(r"^(pip install .*?)  +#", readme, re.M):
        assert command in index, command
    # The API reference renders every exported name with its docstring.
    reference = (site / "reference" / "index.html").read_text()
    for name in set(mcp_sync.__all__) - {"__version__"}:
        assert f'id="mcp_sync.{name}"' in reference, name
    assert "One client is thread-safe" in index


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    """Strict mode is on: a page linking to a missing page does not build."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [the guide](missing.md).\n")
    config = tmp_path / "mkdocs.yml"
    config.write_text((ROOT / "mkdocs.yml").read_text().split("\nnav:")[0]
                      .replace("base_path: [\".\"]", f"base_path: [\"{ROOT}\"]") + "\n")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config),
         "--site-dir", str(tmp_path / "site")],
        cwd=tmp_path, capture_output=True, text=True, timeout=180,
    )
    assert result.returncode != 0
    assert "missing.md" in result.stderr


def test_each_place_the_library_lives_has_its_page() -> None:
    """Getting started, one page per place (a Django view, a Flask app, a notebook, a
    script or cron job, Celery workers), the CLI, configuration, errors, security,
    performance and the API reference are all in the site's navigation."""
    nav = (ROOT / "mkdocs.yml").read_text().split("\nnav:", 1)[1]
    pages = set(re.findall(r":\s*([\w-]+\.md)\s*$", nav, re.M))
    assert pages >= {"index.md", "django.md", "flask.md", "notebooks.md", "scripts.md",
                     "scale-out.md", "cli.md", "configuration.md", "errors.md", "security.md",
                     "performance.md", "reference.md"}
    for page in pages:
        assert (ROOT / "docs" / page).is_file(), page
