"""Jupyter display: HTML and Markdown for tools, tool lists, results and clients.

Everything a server sends is untrusted: it must come out escaped, and only safe images
are inlined.
"""

from __future__ import annotations

import base64
import html
import re
from typing import Any, Dict, Iterator, List

import pytest

from mcp_sync import Client, MemoryTransport, types
from mcp_sync.demo_server import _png
from mcp_sync.testing import FakeServer

EVIL = '<script>alert("x")</script>'
PNG = base64.b64encode(_png(4, 2)).decode()


def make_server() -> FakeServer:
    server = FakeServer(EVIL, version="6.6.6", instructions="use <b>me</b>")

    @server.tool(description=f"Adds {EVIL} | a *pipe*", input_schema={
        "type": "object",
        "properties": {"a": {"type": "number", "description": 'first "addend"'},
                       "b": {"type": ["number", "null"]},
                       EVIL: {"enum": [1, 2]}},
        "required": ["a"],
    })
    def add(a: float, b: float = 0, **_: Any) -> Dict[str, Any]:
        return {"sum": a + (b or 0), "note": EVIL}

    @server.tool(name=EVIL, description="evil name")
    def evil() -> str:
        return "```\nfenced" + EVIL

    @server.tool()
    def pictures() -> List[Dict[str, Any]]:
        """Content blocks of every kind, some of them hostile."""
        return [
            {"type": "image", "data": PNG, "mimeType": "image/png"},
            {"type": "image", "data": PNG, "mimeType": 'image/png" onerror="alert(1)'},
            {"type": "image", "data": 'AAAA" onerror="alert(1)', "mimeType": "image/png"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "javascript:alert(1)", "name": "bad link"},
            {"type": "resource_link", "uri": "https://example.com/a?b=<c>", "name": "ok"},
            {"type": "resource", "resource": {"uri": "demo://r", "text": EVIL}},
            {"type": "something_new", "x": EVIL},
        ]

    @server.tool()
    def rows() -> Dict[str, Any]:
        return {"content": [], "structuredContent": {"rows": [{"a": 1}, {"a": 2, "b": EVIL}]},
                "isError": True}

    return server


@pytest.fixture
def client() -> Iterator[Client]:
    with Client(MemoryTransport(make_server()), name="display") as connected:
        yield connected


def outside_fences(markdown: str) -> str:
    """The Markdown without its fenced code blocks (whose text is shown verbatim)."""
    return re.sub(r"(?ms)^(`{3,})[^\n]*\n.*?\n\1$", "", markdown)


def assert_no_raw_markup(text: str) -> None:
    assert "<script" not in text and "onerror=\"" not in text and "javascript:" not in text.split(
        "<code>")[0]


def test_tool_list_is_a_real_list_and_renders_as_a_table(client: Client) -> None:
    tools = client.list_tools()
    assert isinstance(tools, list) and isinstance(tools, types.ToolList)
    assert [tool.name for tool in tools] == ["add", EVIL, "pictures", "rows"]
    assert tools[:1] == [tools[0]] and len(list(tools)) == 4

    page = tools._repr_html_()
    assert_no_raw_markup(page)
    assert "4 tools" in page and "<b>add</b>" in page
    assert html.escape(EVIL) in page
    assert '<span title="first &quot;addend&quot;"><code>a</code>*: <i>number</i></span>' in page
    assert "<i>number | null</i>" in page and "<i>enum</i>" in page

    markdown = tools._repr_markdown_()
    assert "<script" not in markdown
    assert "| **add** |" in markdown and r"\| a \*pipe\*" in markdown
    assert "a\\*: number, b: number \\| null" in markdown
    # Every table row has the header's three columns: no pipe from the server broke out.
    rows = [line for line in markdown.splitlines() if line.startswith("|")]
    assert all(len(re.findall(r"(?<!\\)\|", row)) == 4 for row in rows)

    single = tools[0]._repr_html_()
    assert "1 tool<" in single and "<b>add</b>" in single
    assert "**add**" in tools[0]._repr_markdown_()


def test_result_with_text_and_structured_content(client: Client) -> None:
    result = client.call_tool("add", {"a": 2, "b": 3})
    page = result._repr_html_()
    assert_no_raw_markup(page)
    assert "<pre" in page and "structured content" in page
    assert '<th style="text-align:left">sum</th><td style="text-align:left">5</td>' in page
    assert html.escape(EVIL) in page
    markdown = result._repr_markdown_()
    assert "| sum | 5 |" in markdown and "<script" not in outside_fences(markdown)
    assert "```\n{\"sum\": 5" in markdown  # the text, verbatim in a code block
    assert result._repr_png_() is None and result._repr_jpeg_() is None


def test_text_cannot_close_its_markdown_fence(client: Client) -> None:
    markdown = client.call_tool(EVIL)._repr_markdown_()
    assert markdown.startswith("````\n```\nfenced") and markdown.endswith("\n````")


def test_images_are_inlined_only_when_safe(client: Client) -> None:
    result = client.call_tool("pictures")
    page = result._repr_html_()
    assert page.count("<img ") == 1
    assert f'<img src="data:image/png;base64,{PNG}"' in page
    assert page.count("unsupported type or encoding") == 2
    assert_no_raw_markup(page)
    assert '<audio controls src="data:audio/wav;base64,AAAA">' in page
    assert "<code>javascript:alert(1)</code>" in page and "href=\"javascript" not in page
    assert '<a href="https://example.com/a?b=&lt;c&gt;"' in page
    assert "resource <code>demo://r</code>" in page and "something_new" in page
    assert result._repr_png_() == base64.b64decode(PNG)

    markdown = result._repr_markdown_()
    assert f"![image/png image](data:image/png;base64,{PNG})" in markdown
    assert "](javascript" not in markdown and "resource: javascript:alert(1)" in markdown
    assert "[ok](https://example.com/a?b=<c>)" not in markdown  # "<" in a URL: no link
    assert "<script" not in outside_fences(markdown)


def test_error_results_and_tables_of_records(client: Client) -> None:
    result = client.call_tool("rows")
    assert result.is_error
    page = result._repr_html_()
    assert "The tool reported an error" in page
    # {"rows": [...]} is not flat: JSON. A flat list of records becomes a table.
    assert "&quot;rows&quot;" in page and "<pre>" in page
    records = types.CallToolResult2026(content=[], structured_content=[{"a": 1}, {"b": EVIL}])
    table = records._repr_html_()
    assert "<thead><tr><th" in table and html.escape(EVIL) in table
    assert "| a | b |" in records._repr_markdown_()
    assert "(empty result)" in types.CallToolResult(content=[])._repr_html_()


def test_client_shows_server_version_era_and_capabilities(client: Client) -> None:
    page = client._repr_html_()
    assert_no_raw_markup(page)
    assert html.escape(EVIL) + " 6.6.6" in page
    for expected in ("session", "2025-11-25", "tools (listChanged)", "logging", "connected",
                     "use &lt;b&gt;me&lt;/b&gt;"):
        assert expected in page, expected
    markdown = client._repr_markdown_()
    assert "| era | session |" in markdown and "<script" not in markdown


def test_client_display_before_and_after_connecting() -> None:
    client = Client(MemoryTransport(make_server()), name="later")
    assert "new" in client._repr_html_() and "later" in client._repr_markdown_()
    client.connect()
    client.close()
    assert "closed" in client._repr_html_()
