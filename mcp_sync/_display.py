"""Rich display in Jupyter: HTML and Markdown for tools, tool results and clients.

IPython calls ``_repr_html_`` / ``_repr_markdown_`` (and ``_repr_png_`` / ``_repr_jpeg_``)
on the value of a cell; :class:`~mcp_sync.types.Tool`, :class:`~mcp_sync.types.ToolList`,
:class:`~mcp_sync.types.CallToolResult` and :class:`~mcp_sync.Client` delegate to the
functions here, imported on first display only.

Everything that comes from a server (names, descriptions, text, schemas, URIs, MIME
types, base64 data) is untrusted: it is HTML-escaped (or Markdown-escaped) before it is
shown, an image is inlined only when its MIME type is ``image/<token>`` and its data is
plain base64, and only ``http(s)`` URIs become links. Standard library only.
"""

from __future__ import annotations

import base64
import binascii
import html
import json
import re
from typing import TYPE_CHECKING, Any, Iterable, List, Mapping, Optional, Sequence, Tuple

if TYPE_CHECKING:
    from . import types
    from .client import Client

__all__ = [
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
# Characters that mean something in Markdown (and "<", "&" for the HTML inside it).
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
# Longest text shown per block; a notebook cell is no place for megabytes.
_MAX_TEXT = 20_000

_STYLE_TABLE = 'style="text-align:left"'


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _md(value: Any) -> str:
    """Escape text for one line of Markdown (a table cell or a list item)."""
    text = " ".join(str(value).split())
    text = text.replace("&", "&amp;").replace("<", "&lt;")
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def _clip(text: str, limit: int = _MAX_TEXT) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n… ({len(text) - limit} more characters)"


def _fenced(text: str, info: str = "") -> str:
    """A fenced Markdown code block that no backtick run inside ``text`` can close."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str, sort_keys=False)


# -- tools -----------------------------------------------------------------------------


def _parameters(schema: Any) -> List[Tuple[str, str, bool, str]]:
    """``(name, type, required, description)`` for each property of an input schema."""
    if not isinstance(schema, Mapping):
        return []
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return []
    required = schema.get("required")
    required_names = set(required) if isinstance(required, list) else set()
    rows = []
    for name, spec in properties.items():
        spec = spec if isinstance(spec, Mapping) else {}
        kind = spec.get("type", "")
        if isinstance(kind, list):
            kind = " | ".join(str(k) for k in kind)
        if not kind and "enum" in spec:
            kind = "enum"
        description = spec.get("description") or spec.get("title") or ""
        rows.append((str(name), str(kind), name in required_names, str(description)))
    return rows


def _parameters_text(schema: Any) -> str:
    parts = []
    for name, kind, required, _ in _parameters(schema):
        parts.append(f"{name}{'*' if required else ''}{': ' + kind if kind else ''}")
    return ", ".join(parts)


def tools_html(tools: Sequence[types.Tool]) -> str:
    """An HTML table of tools: name (and title), description, parameters.

    Required parameters are marked with ``*``; a parameter's description is its tooltip.
    """
    rows = []
    for tool in tools:
        params = []
        for name, kind, required, description in _parameters(tool.input_schema):
            label = f"<code>{_esc(name)}</code>{'*' if required else ''}"
            if kind:
                label += f": <i>{_esc(kind)}</i>"
            params.append(f'<span title="{_esc(description)}">{label}</span>')
        title = f"<br><small>{_esc(tool.title)}</small>" if tool.title else ""
        description = _esc(_clip(tool.description or "", 2_000)).replace("\n", "<br>")
        rows.append(
            f"<tr><td {_STYLE_TABLE}><b>{_esc(tool.name)}</b>{title}</td>"
            f"<td {_STYLE_TABLE}>{description}</td>"
            f"<td {_STYLE_TABLE}>{', '.join(params)}</td></tr>"
        )
    count = f"{len(tools)} tool{'s' if len(tools) != 1 else ''}"
    return (
        f'<table class="mcp-sync-tools"><caption {_STYLE_TABLE}>{count}</caption>'
        f"<thead><tr><th {_STYLE_TABLE}>name</th><th {_STYLE_TABLE}>description</th>"
        f"<th {_STYLE_TABLE}>parameters (* required)</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def tools_markdown(tools: Sequence[types.Tool]) -> str:
    """A Markdown table of tools: name, description, parameters (``*`` = required)."""
    lines = [
        f"{len(tools)} tool{'s' if len(tools) != 1 else ''}",
        "",
        "| name | description | parameters (\\* required) |",
        "| --- | --- | --- |",
    ]
    for tool in tools:
        lines.append(
            f"| **{_md(tool.name)}** | {_md(_clip(tool.description or '', 2_000))} | "
            f"{_md(_parameters_text(tool.input_schema))} |"
        )
    return "\n".join(lines)


# -- tool results ----------------------------------------------------------------------


def _media(block: Any) -> Optional[Tuple[str, str]]:
    """``(mime_type, data)`` of an image or audio block that is safe to inline."""
    mime = getattr(block, "mime_type", None)
    data = getattr(block, "data", None)
    if not isinstance(mime, str) or not isinstance(data, str):
        return None
    if not _MEDIA_TYPE.match(mime) or not _BASE64.match(data):
        return None
    return mime, "".join(data.split())


def image_bytes(result: types.CallToolResult, mime_type: str) -> Optional[bytes]:
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


def _structured_html(value: Any) -> str:
    """A flat object as a key/value table; a list of flat objects as a table; else JSON."""
    if isinstance(value, Mapping) and value and all(_is_scalar(v) for v in value.values()):
        rows = "".join(
            f"<tr><th {_STYLE_TABLE}>{_esc(key)}</th><td {_STYLE_TABLE}>"
            f"{_esc(json.dumps(item, ensure_ascii=False) if not isinstance(item, str) else item)}"
            "</td></tr>"
            for key, item in value.items()
        )
        return f'<table class="mcp-sync-structured">{rows}</table>'
    columns = _record_columns(value)
    if columns:
        head = "".join(f"<th {_STYLE_TABLE}>{_esc(column)}</th>" for column in columns)
        body = "".join(
            "<tr>" + "".join(
                f"<td {_STYLE_TABLE}>{_esc(_cell(record.get(column)))}</td>" for column in columns
            ) + "</tr>"
            for record in value
        )
        return (f'<table class="mcp-sync-structured"><thead><tr>{head}</tr></thead>'
                f"<tbody>{body}</tbody></table>")
    return f"<pre>{_esc(_clip(_json(value)))}</pre>"


def _record_columns(value: Any) -> Optional[List[str]]:
    """The columns of a non-empty list of flat objects (first-seen order), else None."""
    if not isinstance(value, list) or not value or len(value) > 500:
        return None
    columns: List[str] = []
    for record in value:
        if not isinstance(record, Mapping) or not all(_is_scalar(v) for v in record.values()):
            return None
        for key in record:
            if str(key) not in columns:
                columns.append(str(key))
    return columns


def _cell(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _structured_markdown(value: Any) -> str:
    if isinstance(value, Mapping) and value and all(_is_scalar(v) for v in value.values()):
        lines = ["| key | value |", "| --- | --- |"]
        lines += [f"| {_md(key)} | {_md(_cell(item))} |" for key, item in value.items()]
        return "\n".join(lines)
    columns = _record_columns(value)
    if columns:
        lines = ["| " + " | ".join(_md(c) for c in columns) + " |",
                 "|" + " --- |" * len(columns)]
        lines += ["| " + " | ".join(_md(_cell(record.get(c))) for c in columns) + " |"
                  for record in value]
        return "\n".join(lines)
    return _fenced(_clip(_json(value)), "json")


def _block_html(block: Any) -> str:
    kind = getattr(block, "type", None)
    if kind == "text":
        return f'<pre style="white-space:pre-wrap">{_esc(_clip(block.text))}</pre>'
    if kind in ("image", "audio"):
        media = _media(block)
        if media is None:
            return f"<p><i>({_esc(kind)} with an unsupported type or encoding)</i></p>"
        mime, data = media
        if kind == "image":
            return f'<img src="data:{mime};base64,{data}" alt="{_esc(mime)} image">'
        return f'<audio controls src="data:{mime};base64,{data}"></audio>'
    if kind == "resource_link":
        return f"<p>resource: {_link_html(getattr(block, 'uri', ''), block)}</p>"
    if kind == "resource":
        return _embedded_html(getattr(block, "resource", None))
    dump = block.model_dump(by_alias=True, exclude_none=True, mode="json")
    return f"<pre>{_esc(_clip(_json(dump)))}</pre>"


def _link_html(uri: Any, block: Any = None) -> str:
    label = getattr(block, "title", None) or getattr(block, "name", None) or uri
    if isinstance(uri, str) and _LINKABLE.match(uri):
        return (f'<a href="{_esc(uri)}" target="_blank" rel="noopener noreferrer">'
                f"{_esc(label)}</a>")
    return f"<code>{_esc(uri)}</code>" + (f" ({_esc(label)})" if label != uri else "")


def _embedded_html(resource: Any) -> str:
    uri = getattr(resource, "uri", "")
    text = getattr(resource, "text", None)
    if isinstance(text, str):
        return (f"<p>resource <code>{_esc(uri)}</code></p>"
                f'<pre style="white-space:pre-wrap">{_esc(_clip(text))}</pre>')
    blob = getattr(resource, "blob", None)
    size = f", about {len(blob) * 3 // 4} bytes" if isinstance(blob, str) else ""
    mime = getattr(resource, "mime_type", None)
    kind = f" ({_esc(mime)}{size})" if mime else (f" ({size.lstrip(', ')})" if size else "")
    return f"<p>resource <code>{_esc(uri)}</code>{kind}</p>"


def result_html(result: types.CallToolResult) -> str:
    """HTML for a tool result: an error banner, each content block in order (text as
    preformatted text, images and audio inline), then the structured content."""
    parts = []
    if result.is_error:
        parts.append('<p style="color:#b00020"><b>The tool reported an error</b></p>')
    parts.extend(_block_html(block) for block in result.content)
    structured = result.structured_content
    if structured is not None:
        parts.append(f"<p><b>structured content</b></p>{_structured_html(structured)}")
    if not parts:
        parts.append("<p><i>(empty result)</i></p>")
    return f'<div class="mcp-sync-result">{"".join(parts)}</div>'


def _block_markdown(block: Any) -> str:
    kind = getattr(block, "type", None)
    if kind == "text":
        return _fenced(_clip(block.text))
    if kind == "image":
        media = _media(block)
        if media is None:
            return "*(an image with an unsupported type or encoding)*"
        return f"![{media[0]} image](data:{media[0]};base64,{media[1]})"
    if kind == "audio":
        mime = getattr(block, "mime_type", "")
        return f"*(audio: {_md(mime)})*"
    if kind == "resource_link":
        uri = getattr(block, "uri", "")
        if isinstance(uri, str) and _LINKABLE.match(uri) and not re.search(r"[\s()<>]", uri):
            return f"resource: [{_md(getattr(block, 'name', uri))}]({uri})"
        return f"resource: {_md(uri)}"
    if kind == "resource":
        resource = getattr(block, "resource", None)
        text = getattr(resource, "text", None)
        head = f"resource {_md(getattr(resource, 'uri', ''))}"
        return f"{head}\n\n{_fenced(_clip(text))}" if isinstance(text, str) else head
    dump = block.model_dump(by_alias=True, exclude_none=True, mode="json")
    return _fenced(_clip(_json(dump)), "json")


def result_markdown(result: types.CallToolResult) -> str:
    """Markdown for a tool result (see :func:`result_html`)."""
    parts = []
    if result.is_error:
        parts.append("**The tool reported an error**")
    parts.extend(_block_markdown(block) for block in result.content)
    if result.structured_content is not None:
        parts.append("**structured content**\n\n" + _structured_markdown(
            result.structured_content))
    return "\n\n".join(parts) or "*(empty result)*"


# -- clients ---------------------------------------------------------------------------


def _client_fields(client: Client) -> List[Tuple[str, str]]:
    fields = [("server", client.name)]
    if client._init_result is None:  # never connected: nothing more is known
        fields.append(("state", "connected" if client.connected else client._state.value))
        return fields
    info = client.server_info
    fields.append(("implementation", f"{info.name} {info.version}".strip()))
    fields.append(("state", "connected" if client.connected else client._state.value))
    fields.append(("era", str(client.era)))
    fields.append(("protocol version", str(client.protocol_version)))
    fields.append(("capabilities", ", ".join(_capability_names(client)) or "none"))
    fields.append(("transport", client.transport.target))
    return fields


def _capability_names(client: Client) -> Iterable[str]:
    capabilities = client._require_init().get("capabilities") or {}
    for name, value in capabilities.items():
        if value is None or value is False:
            continue
        flags = [key for key, flag in value.items() if flag is True] if isinstance(
            value, Mapping) else []
        yield f"{name} ({', '.join(flags)})" if flags else str(name)


def client_html(client: Client) -> str:
    """An HTML table: server, implementation and version, state, protocol era and version,
    the capabilities it declared, and the transport's target."""
    rows = "".join(
        f"<tr><th {_STYLE_TABLE}>{_esc(key)}</th><td {_STYLE_TABLE}>{_esc(value)}</td></tr>"
        for key, value in _client_fields(client)
    )
    instructions = ""
    if client._init_result is not None and client.instructions:
        instructions = (f"<tr><th {_STYLE_TABLE}>instructions</th><td {_STYLE_TABLE}>"
                        f"{_esc(_clip(client.instructions, 2_000))}</td></tr>")
    return (f'<table class="mcp-sync-client"><caption {_STYLE_TABLE}>mcp_sync.Client'
            f"</caption>{rows}{instructions}</table>")


def client_markdown(client: Client) -> str:
    """Markdown for a client (see :func:`client_html`)."""
    lines = ["**mcp_sync.Client**", "", "| | |", "| --- | --- |"]
    lines += [f"| {_md(key)} | {_md(value)} |" for key, value in _client_fields(client)]
    return "\n".join(lines)
