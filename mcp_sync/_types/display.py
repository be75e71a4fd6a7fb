"""Rich display in Jupyter: HTML and Markdown for tools, tool results and clients.

IPython calls ``_repr_html_`` / ``_repr_markdown_`` (and ``_repr_png_`` / ``_repr_jpeg_``)
on the value of a cell; :class:`~mcp_sync.types.Tool`, :class:`~mcp_sync.types.ToolList`,
:class:`~mcp_sync.types.CallToolResult` and :class:`~mcp_sync.Client` delegate to the
functions here, imported on first display only.

Everything that comes from a server (names, descriptions, text, schemas, URIs, MIME
types, base64 data) is untrusted: it is HTML-escaped (or Markdown-escaped) before it is
shown, its control characters are made printable (``\x1b``, ``\u202e``), an image is
inlined only when its MIME type is ``image/<token>`` and its data is plain base64, and
only ``http(s)`` URIs become links.

The server also decides every size, so a display is bounded: long texts are cut, tables
keep at most ``_MAX_ROWS`` rows and ``_MAX_COLUMNS`` columns of ``_MAX_CELL`` characters,
a result shows at most ``_MAX_BLOCKS`` content blocks, and rows and blocks stop once the
output passes ``_MAX_OUTPUT`` characters (inlined images and audio have a budget of their
own, ``_MAX_MEDIA``). What is cut is named by a visible "… N more" marker. The work is
linear in the size of the value shown, and JSON is encoded only as far as it is shown.
Standard library only.
"""

from __future__ import annotations

import base64
import binascii
import html
import json
import re
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Protocol,
    Sequence,
    Tuple,
)

if TYPE_CHECKING:
    from .._protocol.agreement import Agreement

__all__ = [
    "ClientFacts",
    "client_html",
    "client_markdown",
    "image_bytes",
    "result_html",
    "result_markdown",
    "tools_html",
    "tools_markdown",
]

_MEDIA_TYPE = re.compile(r"^(image|audio)/[A-Za-z0-9][A-Za-z0-9.+-]{0,62}$")
_BASE64 = re.compile(r"^[A-Za-z0-9+/\s]*={0,2}\s*$")
_LINKABLE = re.compile(r"^https?://", re.IGNORECASE)
# Characters that mean something in Markdown (and "<", "&" for the HTML inside it); "$"
# starts mathematics in Jupyter.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]|~$])")
# C0 (but tab and newline), DEL, C1, and the bidi overrides and isolates, which make
# text display in another order than it reads.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

# Bounds on one display (see the module docstring): a notebook cell is no place for
# megabytes, and the server decides the sizes.
_MAX_TEXT = 20_000  # characters of one text block, resource text or JSON dump
_MAX_DESCRIPTION = 2_000  # characters of a tool's description, a server's instructions
_MAX_CELL = 200  # characters of one name, value or table cell
_MAX_URL = 2_000  # characters of a URI shown as a link (a longer one is shown as text)
_MAX_ROWS = 200  # rows of a table: tools, records, keys
_MAX_COLUMNS = 20  # columns of a table of records
_MAX_PARAMETERS = 20  # parameters listed for one tool
_MAX_BLOCKS = 20  # content blocks of one result
_MAX_OUTPUT = 1_000_000  # characters of one display; checked between rows and blocks
_MAX_MEDIA = 8 * 1024 * 1024  # characters of base64 inlined in one display

_STYLE_TABLE = 'style="text-align:left"'


def _control_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _printable(text: str) -> str:
    """``text`` with its control characters as visible escapes (``\\x1b``); tab and
    newline stay (a CRLF becomes a newline)."""
    return _CONTROL.sub(_control_escape, text.replace("\r\n", "\n"))


def _esc(value: Any, limit: Optional[int] = _MAX_CELL) -> str:
    """``value`` as HTML text: cut after ``limit`` characters (``None``: the caller bounded
    it), printable, escaped."""
    text = str(value)
    return html.escape(_printable(text if limit is None else _clip(text, limit)), quote=True)


def _md(value: Any, limit: int = _MAX_CELL) -> str:
    """Escape text for one line of Markdown (a table cell or a list item), cut after
    ``limit`` characters."""
    text = " ".join(_clip(str(value), limit).split())
    text = _printable(text).replace("&", "&amp;").replace("<", "&lt;")
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def _clip(text: str, limit: int = _MAX_TEXT) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n… {len(text) - limit} more characters"


def _more(count: int, what: str) -> str:
    """The marker for what a bound left out: ``… 3 more rows``."""
    return f"… {count} more {what}"


class _MediaBudget:
    """What is left of ``_MAX_MEDIA`` for the images and audio of one display."""

    def __init__(self) -> None:
        self.left = _MAX_MEDIA


def _bounded(pieces: Iterable[str], total: int, what: str, limit: int = _MAX_ROWS,
             media: Optional[_MediaBudget] = None) -> Tuple[List[str], Optional[str]]:
    """The first of ``pieces`` (built lazily) while fewer than ``limit`` and under
    ``_MAX_OUTPUT`` characters (not counting what ``media`` inlined: it has its own
    budget), and the marker for the rest of ``total`` (or ``None``)."""
    kept: List[str] = []
    size = 0
    for piece in pieces:
        inlined = _MAX_MEDIA - media.left if media is not None else 0
        if len(kept) >= limit or size - inlined > _MAX_OUTPUT:
            break
        kept.append(piece)
        size += len(piece)
    left = total - len(kept)
    return kept, (_more(left, what) if left > 0 else None)


def _linkable(uri: Any) -> bool:
    """An ``http(s)`` URI short enough to be a link, with no space or control character."""
    return (isinstance(uri, str) and len(uri) <= _MAX_URL and bool(_LINKABLE.match(uri))
            and not re.search(r"\s", uri) and not _CONTROL.search(uri))


def _fenced(text: str, info: str = "") -> str:
    """A fenced Markdown code block that no backtick run inside ``text`` can close."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def _json(value: Any, limit: int = _MAX_TEXT) -> str:
    """``value`` as indented JSON, cut after about ``limit`` characters: the encoder
    stops there, however big ``value`` is (a JSON longer than the limit cannot say how
    much longer without encoding it all)."""
    encoder = json.JSONEncoder(indent=2, ensure_ascii=False, default=str)
    parts: List[str] = []
    size = 0
    for chunk in encoder.iterencode(value):
        parts.append(chunk)
        size += len(chunk)
        if size > limit:
            return f"{''.join(parts)[:limit]}\n… more JSON, cut at {limit} characters"
    return "".join(parts)


# -- tools -----------------------------------------------------------------------------


def _parameters(schema: Any) -> Tuple[List[Tuple[str, str, bool, str]], int]:
    """``(name, type, required, description)`` for the first ``_MAX_PARAMETERS``
    properties of an input schema, and how many more there are."""
    if not isinstance(schema, Mapping):
        return [], 0
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return [], 0
    required = schema.get("required")
    required_names = ({name for name in required if isinstance(name, str)}
                      if isinstance(required, list) else set())
    rows = []
    for index, (name, spec) in enumerate(properties.items()):
        if index >= _MAX_PARAMETERS:
            break
        spec = spec if isinstance(spec, Mapping) else {}
        kind = spec.get("type", "")
        if isinstance(kind, list):
            kind = " | ".join(str(k) for k in kind)
        if not kind and "enum" in spec:
            kind = "enum"
        description = spec.get("description") or spec.get("title") or ""
        rows.append((str(name), str(kind), name in required_names, str(description)))
    return rows, len(properties) - len(rows)


def _parameters_markdown(schema: Any) -> str:
    rows, more = _parameters(schema)
    parts = []
    for name, kind, required, _ in rows:
        mark = "\\*" if required else ""
        parts.append(f"{_md(name)}{mark}{': ' + _md(kind) if kind else ''}")
    if more:
        parts.append(_more(more, "parameters"))
    return ", ".join(parts)


def _tool_row_html(tool: ToolLike) -> str:
    rows, more = _parameters(tool.input_schema)
    params = []
    for name, kind, required, description in rows:
        label = f"<code>{_esc(name)}</code>{'*' if required else ''}"
        if kind:
            label += f": <i>{_esc(kind)}</i>"
        params.append(f'<span title="{_esc(description)}">{label}</span>')
    if more:
        params.append(f"<i>{_more(more, 'parameters')}</i>")
    title = f"<br><small>{_esc(tool.title)}</small>" if tool.title else ""
    description = _esc(tool.description or "", _MAX_DESCRIPTION).replace("\n", "<br>")
    return (
        f"<tr><td {_STYLE_TABLE}><b>{_esc(tool.name)}</b>{title}</td>"
        f"<td {_STYLE_TABLE}>{description}</td>"
        f"<td {_STYLE_TABLE}>{', '.join(params)}</td></tr>"
    )


def tools_html(tools: Sequence[ToolLike]) -> str:
    """An HTML table of tools: name (and title), description, parameters.

    Required parameters are marked with ``*``; a parameter's description is its tooltip.
    At most ``_MAX_ROWS`` tools and ``_MAX_PARAMETERS`` parameters each are shown.
    """
    rows, more = _bounded((_tool_row_html(tool) for tool in tools), len(tools), "tools")
    if more:
        rows.append(f'<tr><td {_STYLE_TABLE} colspan="3"><i>{more}</i></td></tr>')
    count = f"{len(tools)} tool{'s' if len(tools) != 1 else ''}"
    return (
        f'<table class="mcp-sync-tools"><caption {_STYLE_TABLE}>{count}</caption>'
        f"<thead><tr><th {_STYLE_TABLE}>name</th><th {_STYLE_TABLE}>description</th>"
        f"<th {_STYLE_TABLE}>parameters (* required)</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def tools_markdown(tools: Sequence[ToolLike]) -> str:
    """A Markdown table of tools: name, description, parameters (``*`` = required)."""
    lines = [
        f"{len(tools)} tool{'s' if len(tools) != 1 else ''}",
        "",
        "| name | description | parameters (\\* required) |",
        "| --- | --- | --- |",
    ]
    rows, more = _bounded(
        (f"| **{_md(tool.name)}** | {_md(tool.description or '', _MAX_DESCRIPTION)} | "
         f"{_parameters_markdown(tool.input_schema)} |" for tool in tools),
        len(tools), "tools",
    )
    lines += rows
    if more:
        lines.append(f"| {more} | | |")
    return "\n".join(lines)


# -- tool results ----------------------------------------------------------------------


def _media(block: Any, budget: _MediaBudget) -> Tuple[Optional[Tuple[str, str]], str]:
    """``((mime_type, data), "")`` for an image or audio block that is safe to inline and
    fits what is left of the display's media budget, else ``(None, why not)``."""
    mime = getattr(block, "mime_type", None)
    data = getattr(block, "data", None)
    if not isinstance(mime, str) or not isinstance(data, str):
        return None, "an unsupported type or encoding"
    if not _MEDIA_TYPE.match(mime):
        return None, "an unsupported type or encoding"
    if len(data) > budget.left:
        return None, (f"about {len(data) * 3 // 4} bytes: past the {_MAX_MEDIA // 1024 // 1024} "
                      "MiB inlined in one display")
    if not _BASE64.match(data):
        return None, "an unsupported type or encoding"
    data = "".join(data.split())
    budget.left -= len(data)
    return (mime, data), ""


def image_bytes(result: ResultLike, mime_type: str) -> Optional[bytes]:
    """The decoded bytes of the result's first image of ``mime_type``, if any (for
    ``_repr_png_`` / ``_repr_jpeg_``)."""
    for image in result.images:
        if image.mime_type.lower() != mime_type:
            continue
        try:
            return base64.b64decode(image.data, validate=False)
        except (binascii.Error, ValueError):
            return None
    return None


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _is_flat(value: Any) -> bool:
    """A non-empty object whose values are all scalars (a key/value table)."""
    return isinstance(value, Mapping) and bool(value) and all(
        _is_scalar(item) for item in value.values())


def _structured_html(value: Any) -> str:
    """A flat object as a key/value table; a list of flat objects as a table; else JSON."""
    if _is_flat(value):
        rows, more = _bounded(
            (f"<tr><th {_STYLE_TABLE}>{_esc(key)}</th><td {_STYLE_TABLE}>"
             f"{_esc(item if isinstance(item, str) else json.dumps(item, ensure_ascii=False))}"
             "</td></tr>"
             for key, item in value.items()),
            len(value), "keys",
        )
        if more:
            rows.append(f'<tr><td {_STYLE_TABLE} colspan="2"><i>{more}</i></td></tr>')
        return f'<table class="mcp-sync-structured">{"".join(rows)}</table>'
    shape = _record_columns(value)
    if shape:
        columns, more_columns = shape
        head = "".join(f"<th {_STYLE_TABLE}>{_esc(column)}</th>" for column in columns)
        extra = ""
        if more_columns:
            head += f"<th {_STYLE_TABLE}><i>{_more(more_columns, 'columns')}</i></th>"
            extra = f"<td {_STYLE_TABLE}></td>"
        rows, more = _bounded(
            ("<tr>" + "".join(
                f"<td {_STYLE_TABLE}>{_esc(_cell(record.get(column)))}</td>"
                for column in columns) + extra + "</tr>"
             for record in value),
            len(value), "rows",
        )
        if more:
            span = len(columns) + (1 if more_columns else 0)
            rows.append(f'<tr><td {_STYLE_TABLE} colspan="{span}"><i>{more}</i></td></tr>')
        return (f'<table class="mcp-sync-structured"><thead><tr>{head}</tr></thead>'
                f"<tbody>{''.join(rows)}</tbody></table>")
    return f"<pre>{_esc(_json(value), None)}</pre>"


def _record_columns(value: Any) -> Optional[Tuple[List[str], int]]:
    """For a non-empty list of flat objects: the columns of the rows shown (first-seen
    order), at most ``_MAX_COLUMNS``, and how many more they have; else None. Linear in
    the number of keys (a dict keeps the order), however many columns there are."""
    if not isinstance(value, list) or not value:
        return None
    seen: Dict[str, None] = {}
    for index, record in enumerate(value):
        if not isinstance(record, Mapping) or not all(_is_scalar(v) for v in record.values()):
            return None
        if index < _MAX_ROWS:
            for key in record:
                seen.setdefault(str(key), None)
    columns = list(seen)
    return columns[:_MAX_COLUMNS], max(0, len(columns) - _MAX_COLUMNS)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _structured_markdown(value: Any) -> str:
    if _is_flat(value):
        lines = ["| key | value |", "| --- | --- |"]
        rows, more = _bounded((f"| {_md(key)} | {_md(_cell(item))} |"
                               for key, item in value.items()), len(value), "keys")
        lines += rows
        if more:
            lines.append(f"| {more} | |")
        return "\n".join(lines)
    shape = _record_columns(value)
    if shape:
        columns, more_columns = shape
        header = [_md(column) for column in columns]
        extra: List[str] = []
        if more_columns:
            header.append(_more(more_columns, "columns"))
            extra = [""]
        lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
        rows, more = _bounded(
            ("| " + " | ".join([_md(_cell(record.get(c))) for c in columns] + extra) + " |"
             for record in value),
            len(value), "rows",
        )
        lines += rows
        if more:
            lines.append("| " + " | ".join([more] + [""] * (len(header) - 1)) + " |")
        return "\n".join(lines)
    return _fenced(_printable(_json(value)), "json")


def _block_html(block: Any, media_budget: _MediaBudget) -> str:
    kind = getattr(block, "type", None)
    if kind == "text":
        return f'<pre style="white-space:pre-wrap">{_esc(block.text, _MAX_TEXT)}</pre>'
    if kind in ("image", "audio"):
        media, why_not = _media(block, media_budget)
        if media is None:
            return f"<p><i>({_esc(kind)} with {why_not})</i></p>"
        mime, data = media
        if kind == "image":
            return f'<img src="data:{mime};base64,{data}" alt="{_esc(mime)} image">'
        return f'<audio controls src="data:{mime};base64,{data}"></audio>'
    if kind == "resource_link":
        return f"<p>resource: {_link_html(getattr(block, 'uri', ''), block)}</p>"
    if kind == "resource":
        return _embedded_html(getattr(block, "resource", None))
    dump = block.model_dump(by_alias=True, exclude_none=True, mode="json")
    return f"<pre>{_esc(_json(dump), None)}</pre>"


def _link_html(uri: Any, block: Any = None) -> str:
    label = getattr(block, "title", None) or getattr(block, "name", None) or uri
    if _linkable(uri):
        return (f'<a href="{_esc(uri, _MAX_URL)}" target="_blank" rel="noopener noreferrer">'
                f"{_esc(label)}</a>")
    return f"<code>{_esc(uri)}</code>" + (f" ({_esc(label)})" if label != uri else "")


def _embedded_html(resource: Any) -> str:
    uri = getattr(resource, "uri", "")
    text = getattr(resource, "text", None)
    if isinstance(text, str):
        return (f"<p>resource <code>{_esc(uri)}</code></p>"
                f'<pre style="white-space:pre-wrap">{_esc(text, _MAX_TEXT)}</pre>')
    blob = getattr(resource, "blob", None)
    size = f", about {len(blob) * 3 // 4} bytes" if isinstance(blob, str) else ""
    mime = getattr(resource, "mime_type", None)
    kind = f" ({_esc(mime)}{size})" if mime else (f" ({size.lstrip(', ')})" if size else "")
    return f"<p>resource <code>{_esc(uri)}</code>{kind}</p>"


def result_html(result: ResultLike) -> str:
    """HTML for a tool result: an error banner, each content block in order (text as
    preformatted text, images and audio inline), then the structured content. At most
    ``_MAX_BLOCKS`` blocks are shown."""
    parts = _result_parts(
        result, _block_html, '<p style="color:#b00020"><b>The tool reported an error</b></p>',
        lambda more: f"<p><i>{more}</i></p>",
        lambda structured: f"<p><b>structured content</b></p>{_structured_html(structured)}")
    if not parts:
        parts.append("<p><i>(empty result)</i></p>")
    return f'<div class="mcp-sync-result">{"".join(parts)}</div>'


def _block_markdown(block: Any, media_budget: _MediaBudget) -> str:
    kind = getattr(block, "type", None)
    if kind == "text":
        return _fenced(_printable(_clip(block.text)))
    if kind == "image":
        media, why_not = _media(block, media_budget)
        if media is None:
            return f"*(an image with {_md(why_not)})*"
        return f"![{media[0]} image](data:{media[0]};base64,{media[1]})"
    if kind == "audio":
        mime = getattr(block, "mime_type", "")
        return f"*(audio: {_md(mime)})*"
    if kind == "resource_link":
        uri = getattr(block, "uri", "")
        if _linkable(uri) and not re.search(r"[()<>]", uri):
            return f"resource: [{_md(getattr(block, 'name', uri))}]({uri})"
        return f"resource: {_md(uri)}"
    if kind == "resource":
        resource = getattr(block, "resource", None)
        text = getattr(resource, "text", None)
        head = f"resource {_md(getattr(resource, 'uri', ''))}"
        if not isinstance(text, str):
            return head
        return f"{head}\n\n{_fenced(_printable(_clip(text)))}"
    dump = block.model_dump(by_alias=True, exclude_none=True, mode="json")
    return _fenced(_printable(_json(dump)), "json")


def result_markdown(result: ResultLike) -> str:
    """Markdown for a tool result (see :func:`result_html`)."""
    parts = _result_parts(
        result, _block_markdown, "**The tool reported an error**", lambda more: f"*{more}*",
        lambda structured: "**structured content**\n\n" + _structured_markdown(structured))
    return "\n\n".join(parts) or "*(empty result)*"


def _result_parts(result: ResultLike, block: Callable[[Any, _MediaBudget], str], error: str,
                  more: Callable[[str], str], structured: Callable[[Any], str]) -> List[str]:
    """A tool result's pieces in order, in one format (:func:`result_html`,
    :func:`result_markdown`): ``error`` if it is one; each content block as ``block``
    renders it (at most ``_MAX_BLOCKS``, inlined media within one budget), then ``more``
    of the marker for those left out; the structured content as ``structured`` renders
    it."""
    parts = [error] if result.is_error else []
    media_budget = _MediaBudget()
    blocks, left_out = _bounded((block(item, media_budget) for item in result.content),
                                len(result.content), "content blocks", _MAX_BLOCKS, media_budget)
    parts.extend(blocks)
    if left_out:
        parts.append(more(left_out))
    if result.structured_content is not None:
        parts.append(structured(result.structured_content))
    return parts


# -- clients ---------------------------------------------------------------------------


class ToolLike(Protocol):
    """What the display reads of a :class:`~mcp_sync.types.Tool` (this module imports no
    models: they delegate to it)."""

    @property
    def name(self) -> str: ...
    @property
    def title(self) -> Optional[str]: ...
    @property
    def description(self) -> Optional[str]: ...
    @property
    def input_schema(self) -> Any: ...


class ResultLike(Protocol):
    """What the display reads of a :class:`~mcp_sync.types.CallToolResult`."""

    @property
    def content(self) -> Sequence[Any]: ...
    @property
    def structured_content(self) -> Any: ...
    @property
    def is_error(self) -> bool: ...
    @property
    def images(self) -> Sequence[Any]: ...


class ClientFacts(NamedTuple):
    """What a client's display shows (the client builds it: this module reads no client)."""

    name: str
    state: str
    target: str
    agreement: Optional[Agreement]


def _client_fields(client: ClientFacts) -> List[Tuple[str, str]]:
    fields = [("server", client.name)]
    agreement = client.agreement
    if agreement is None:  # never connected: nothing more is known
        fields.append(("state", client.state))
        return fields
    info = agreement.server_info
    fields.append(("implementation",
                    f"{info.get('name', '')} {info.get('version', '')}".strip()))
    fields.append(("state", client.state))
    fields.append(("era", agreement.era))
    fields.append(("protocol version", str(agreement.version)))
    fields.append(("capabilities", ", ".join(_capability_names(agreement)) or "none"))
    fields.append(("transport", client.target))
    return fields


def _capability_names(agreement: Agreement) -> Iterable[str]:
    for name, value in agreement.capabilities.items():
        if value is None or value is False:
            continue
        flags = [key for key, flag in value.items() if flag is True] if isinstance(
            value, Mapping) else []
        yield f"{name} ({', '.join(flags)})" if flags else str(name)


def client_html(client: ClientFacts) -> str:
    """An HTML table: server, implementation and version, state, protocol era and version,
    the capabilities it declared, and the transport's target."""
    rows = "".join(
        f"<tr><th {_STYLE_TABLE}>{_esc(key)}</th><td {_STYLE_TABLE}>"
        f"{_esc(value, _MAX_DESCRIPTION)}</td></tr>"
        for key, value in _client_fields(client)
    )
    instructions = ""
    given = client.agreement.instructions if client.agreement is not None else None
    if given:
        instructions = (f"<tr><th {_STYLE_TABLE}>instructions</th><td {_STYLE_TABLE}>"
                        f"{_esc(given, _MAX_DESCRIPTION)}</td></tr>")
    return (f'<table class="mcp-sync-client"><caption {_STYLE_TABLE}>mcp_sync.Client'
            f"</caption>{rows}{instructions}</table>")


def client_markdown(client: ClientFacts) -> str:
    """Markdown for a client (see :func:`client_html`)."""
    lines = ["**mcp_sync.Client**", "", "| | |", "| --- | --- |"]
    lines += [f"| {_md(key)} | {_md(value, _MAX_DESCRIPTION)} |"
              for key, value in _client_fields(client)]
    return "\n".join(lines)
