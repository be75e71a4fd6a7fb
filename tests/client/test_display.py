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

from mcp_sync import Client, MemoryTransport, connect, types
from mcp_sync.demo_server import _png
from mcp_sync.testing import FakeServer

from ..conftest import fake_server_command

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


# -- hostile results from a real server process: bounded and printable ------------------

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture
def hostile() -> Iterator[Client]:
    """The fake stdio server (a subprocess) with its display tools and 300 extra tools."""
    with connect(fake_server_command("--display-tools", "--extra-tools", "300"),
                 timeout=60.0) as connected:
        yield connected


def table_rows(page: str) -> List[str]:
    return re.findall(r"<tr>.*?</tr>", page)


def test_500_records_with_keys_of_their_own_render_in_bounded_size(hostile: Client) -> None:
    """500 records of 3 keys each, all distinct (a table of 1,500 columns): the HTML and
    Markdown keep 200 rows of 20 columns and say how many more of each there are. Before,
    every record got a cell for every column: 750,000 cells, tens of megabytes."""
    result = hostile.request("tools/call", {"name": "records",
                                            "arguments": {"count": 500, "keys": 3}},
                             result_type=types.CallToolResult2026)
    assert isinstance(result.structured_content, list) and len(result.structured_content) == 500
    page = result._repr_html_()
    assert len(page) < 300_000, len(page)
    # the columns of the 200 rows shown: 600, of which 20 are shown
    assert "… 580 more columns" in page and "… 300 more rows" in page
    head, body = page.split("</thead>")
    assert head.count("<th ") == 21
    rows = table_rows(body)
    assert len(rows) == 201 and all(row.count("<td ") == 21 for row in rows[:-1])
    assert "<th style=\"text-align:left\">r0_k0</th>" in head

    markdown = result._repr_markdown_()
    assert len(markdown) < 300_000, len(markdown)
    assert "… 580 more columns" in markdown and "… 300 more rows" in markdown
    lines = [line for line in markdown.splitlines() if line.startswith("|")]
    assert len(lines) == 2 + 200 + 1
    assert all(len(re.findall(r"(?<!\\)\|", line)) == 22 for line in lines)


def test_a_5_mb_string_is_cut_with_a_marker(hostile: Client) -> None:
    """A 5 MB value in a structured result (and so in its JSON text block): every view
    keeps a few kilobytes and says how much was left out."""
    size = 5_000_000
    result = hostile.call_tool("flat", {"keys": 1, "size": size})
    assert result.structured == {"key_0": "x" * size}
    text_left = len(result.text) - 20_000
    page = result._repr_html_()
    markdown = result._repr_markdown_()
    for shown in (page, markdown):
        assert len(shown) < 50_000, len(shown)
        assert f"… {text_left} more characters" in shown  # the text block
        assert f"… {size - 200} more characters" in shown  # the structured cell
    assert f"<td style=\"text-align:left\">{'x' * 200}\n… {size - 200}" in page


def test_wide_flat_results_and_many_blocks_are_cut(hostile: Client) -> None:
    wide = hostile.call_tool("flat", {"keys": 1000})
    page = wide._repr_html_()
    assert "… 800 more keys" in page and len(table_rows(page)) == 201
    assert "… 800 more keys" in wide._repr_markdown_()

    many = hostile.call_tool("blocks", {"count": 100, "size": 10_000})
    page = many._repr_html_()
    assert page.count("<pre ") == 20 and "… 80 more content blocks" in page
    markdown = many._repr_markdown_()
    assert len(re.findall(r"^\d+:b", markdown, re.MULTILINE)) == 20
    assert "… 80 more content blocks" in markdown
    assert len(page) < 300_000 and len(markdown) < 300_000


def test_inlined_images_share_one_budget_per_display(hostile: Client) -> None:
    """Three 3 MiB images: two are inlined (6 MiB), the third would pass the 8 MiB a
    display inlines and is named instead."""
    size = 3 * 1024 * 1024
    result = hostile.call_tool("images", {"count": 3, "size": size})
    page = result._repr_html_()
    assert page.count("<img ") == 2
    assert f"(image with about {size * 3 // 4} bytes: past the 8 MiB" in page
    assert len(page) < 2 * size + 10_000
    markdown = result._repr_markdown_()
    assert markdown.count("![image/png image](data:") == 2
    assert f"*(an image with about {size * 3 // 4} bytes: past the 8 MiB" in markdown


def test_a_big_tool_list_is_cut_by_tools_and_parameters(hostile: Client) -> None:
    """300 extra tools, and one with 100 parameters whose descriptions are 2 KB of hostile
    text and whose "required" holds an object: 200 rows, 20 parameters, short tooltips."""
    tools = hostile.list_tools()
    assert len(tools) > 300
    page = tools._repr_html_()
    assert f"{len(tools)} tools" in page and f"… {len(tools) - 200} more tools" in page
    assert len(table_rows(page)) == 1 + 200 + 1  # the header, the tools, the marker
    assert len(page) < 500_000, len(page)
    markdown = tools._repr_markdown_()
    assert f"… {len(tools) - 200} more tools" in markdown and len(markdown) < 500_000
    rows = [line for line in markdown.splitlines() if line.startswith("|")]
    assert len(rows) == 2 + 200 + 1
    assert all(len(re.findall(r"(?<!\\)\|", row)) == 4 for row in rows)

    wide = next(tool for tool in tools if tool.name == "wide")
    page = wide._repr_html_()
    assert page.count("<span title=") == 20 and "… 80 more parameters" in page
    assert "<code>p0</code>*" in page and "<code>p1</code>:" in page
    tooltips = re.findall(r'<span title="([^"]*)"', page)
    assert all(len(html.unescape(tip)) < 400 for tip in tooltips)
    assert "… 80 more parameters" in wide._repr_markdown_()


def test_hostile_text_is_escaped_and_made_printable(hostile: Client) -> None:
    """ANSI escapes, a bell, a C1 CSI and a right-to-left override come out as visible
    escapes (``\\x1b``) in both forms; HTML is escaped; in Markdown, emphasis, links,
    pipes, mathematics and tags are escaped outside code blocks."""
    result = hostile.call_tool("hostile")
    page = result._repr_html_()
    markdown = result._repr_markdown_()
    tool = next(tool for tool in hostile.list_tools() if tool.name == "hostile")
    tools_page, tools_markdown = tool._repr_html_(), tool._repr_markdown_()
    for shown in (page, markdown, tools_page, tools_markdown):
        assert not CONTROL.search(shown), CONTROL.search(shown)
    assert r"red \x1b[31mALERT\x1b[0m\x07 \x9b2J \u202egnp.exe" in page
    assert "&lt;b&gt;tag&lt;/b&gt;" in page and "<b>tag" not in page
    assert "href=\"https://example.com/" not in page  # a control character: no link
    assert "<pre" in page and r"\x1b[31mALERT" in markdown  # verbatim but printable
    outside = outside_fences(markdown)
    for escaped in (r"\\x1b\[31mALERT", r"\*bold\*", r"\_it\_", r"\[link\](javascript",
                    r"\$x^2\$", r"\| pipe &lt;b>tag&lt;/b> &amp; \`tick\`"):
        assert escaped in outside, escaped
    assert "](javascript" not in outside.replace(r"\](javascript", "")
    assert "](https://example.com" not in outside
    assert r"\\u202egnp.exe \*bold\*" in tools_markdown
    assert r"\u202egnp.exe *bold*" in tools_page
