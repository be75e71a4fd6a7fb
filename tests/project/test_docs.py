"""The documentation site builds strictly and documents every public name."""

from __future__ import annotations

import html
import inspect
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict

import pytest
import yaml

import mcp_sync

from ..conftest import ROOT

REFERENCE = ROOT / "docs" / "reference.md"
# A Sphinx role as reStructuredText writes it (":func:`name`"), or one whose backquotes
# Markdown turned into code (":func:<code>name</code>").
LITERAL_ROLE = re.compile(r":(?:py:)?(?:func|meth|class|attr|mod|exc|data|obj|const):(?:`|<code>)")
# A reStructuredText literal-block marker left in a paragraph ("Usage::", a lone "::").
BARE_MARKER = re.compile(r"::\s*</p>")


def build_site(site: Path,
               config: Path = ROOT / "mkdocs.yml") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config),
         "--site-dir", str(site)],
        cwd=config.parent, capture_output=True, text=True, timeout=180,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's site, built once for this module's tests."""
    site = tmp_path_factory.mktemp("docs") / "site"
    result = build_site(site)
    assert result.returncode == 0, result.stderr[-4000:]
    return site


def pages(site: Path) -> Dict[str, str]:
    """Every built page's HTML without its scripts, by path."""
    return {
        str(page.relative_to(site)): re.sub(r"<script\b.*?</script>", "", page.read_text(),
                                            flags=re.S)
        for page in sorted(site.rglob("*.html"))
    }


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


def test_the_site_builds_in_strict_mode(site: Path) -> None:
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


def test_no_page_shows_docstring_markup(site: Path) -> None:
    """The docstrings' Sphinx roles and ``::`` literal-block markers never reach a built
    page as text: roles became references, ``::`` blocks became code blocks."""
    built = pages(site)
    assert "reference/index.html" in built and "cli/index.html" in built
    shown = {
        path: LITERAL_ROLE.findall(text) + BARE_MARKER.findall(text)
        for path, text in built.items()
    }
    assert {path: found for path, found in shown.items() if found} == {}


def link(text: str, href: str, title: str) -> bool:
    """Whether ``text`` has a link to ``href`` showing ``title`` as code."""
    pattern = (rf'<a class="autorefs autorefs-internal"[^>]*href="{re.escape(href)}"[^>]*>'
               rf"<code>{re.escape(title)}</code></a>")
    return re.search(pattern, text) is not None


def test_named_references_are_links(site: Path) -> None:
    built = pages(site)
    reference = built["reference/index.html"]
    # connect()'s docstring: :class:`~mcp_sync.StdioTransport`, and Client's keywords
    # pointing at the errors they raise.
    assert link(reference, "#mcp_sync.StdioTransport", "StdioTransport")
    assert link(reference, "#mcp_sync.ListingTooLarge", "ListingTooLarge")
    # Manager's: :meth:`connect` and :meth:`close`, resolved in the class.
    assert link(reference, "#mcp_sync.Manager.connect", "connect()")
    assert link(reference, "#mcp_sync.Manager.close", "close()")
    # A Raises: section names its exceptions as links (connect()'s).
    assert link(reference, "#mcp_sync.UnsupportedProtocolVersion",
                "UnsupportedProtocolVersion")
    # Links across pages: the errors page's module docstring to the reference.
    assert link(built["errors/index.html"], "../reference/#mcp_sync.MCPError", "MCPError")
    # The CLI's usage block (a "::" literal block) is a code block.
    cli = built["cli/index.html"]
    assert re.search(r"<pre><span></span><code>mcp-sync demo\s", cli), cli[:2000]


def markup_project(tmp_path: Path, docstring: str) -> Path:
    """A one-module package documented with the project's mkdocstrings options (the
    docstring-markup extension included); returns its mkdocs.yml."""
    (tmp_path / "src" / "pkgdoc").mkdir(parents=True)
    (tmp_path / "src" / "pkgdoc" / "__init__.py").write_text(
        f'"""{docstring}"""\n\n\ndef helper() -> None:\n    """A helper."""\n\n\n'
        "class Widget:\n    \"\"\"A widget.\"\"\"\n\n    def spin(self) -> None:\n"
        "        \"\"\"Spin it.\"\"\"\n\n\nclass WidgetError(Exception):\n"
        "    \"\"\"It broke.\"\"\"\n"
    )
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Home\n\n::: pkgdoc\n")
    project = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    python = project["plugins"][1]["mkdocstrings"]["handlers"]["python"]
    python["paths"] = ["src"]
    python["options"]["extensions"] = [str(ROOT / path) for path in
                                       python["options"]["extensions"]]
    config = {"site_name": "pkgdoc", "docs_dir": "docs", "strict": True,
              "markdown_extensions": [extension for extension in project["markdown_extensions"]
                                      if "pymdownx.snippets" not in extension],
              "plugins": [{"mkdocstrings": project["plugins"][1]["mkdocstrings"]}]}
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    return tmp_path / "mkdocs.yml"


def test_docstring_markup_becomes_markdown(tmp_path: Path) -> None:
    """Roles resolve like Sphinx's (the module, the class, ``~`` for the last name), a
    ``text::`` block is a code block, a Raises: section lists its exceptions as links."""
    config = markup_project(tmp_path, (
        "Call :func:`helper`, then :meth:`Widget.spin` of a :class:`~pkgdoc.Widget`;\n"
        "a :class:`concurrent.futures.Future` is not ours.\n\n"
        "Usage::\n\n    widget = Widget()\n    widget.spin()\n\n"
        "Raises:\n    WidgetError, ValueError: when it breaks.\n"
    ))
    result = build_site(tmp_path / "site", config)
    assert result.returncode == 0, result.stderr[-4000:]
    page = (tmp_path / "site" / "index.html").read_text()
    assert link(page, "#pkgdoc.helper", "helper()")
    assert link(page, "#pkgdoc.Widget.spin", "Widget.spin()")
    assert link(page, "#pkgdoc.Widget", "Widget")
    assert link(page, "#pkgdoc.WidgetError", "WidgetError")
    assert "<code>concurrent.futures.Future</code>" in page
    assert "<p>Usage:</p>" in page
    assert re.search(r'<code><span class="n">widget</span>', page)
    assert not LITERAL_ROLE.search(page) and not BARE_MARKER.search(page)


def test_a_role_naming_nothing_fails_the_build(tmp_path: Path) -> None:
    """A reference to no object (a typo, a renamed function) fails the strict build."""
    config = markup_project(tmp_path, "Call :func:`helpr` first.\n")
    result = build_site(tmp_path / "site", config)
    assert result.returncode != 0
    assert ":func:`helpr` names no object" in result.stderr


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
