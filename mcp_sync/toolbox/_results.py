"""A tool's result (``types.CallToolResult``) as each model provider's tool output.

Each content block becomes the closest thing the format carries, and what it cannot
carry is described in words, so the model knows it was there:

============================  ===========  ==============  ================  ==========
MCP content                   Anthropic    OpenAI Resp.    OpenAI Chat       LangChain
============================  ===========  ==============  ================  ==========
text                          text         input_text      text              text
image (png, jpeg, gif, webp)  image        input_image     described         image
image (other types)           described    described       described         image
embedded text resource        text         input_text      text              text
embedded PDF                  document     input_file      described         file
embedded image                image        input_image     described         image
other blob                    described    described       described         file
audio                         described    described       described         described
resource link                 described    described       described         described
structured content            JSON text    JSON text       JSON text         JSON text
============================  ===========  ==============  ================  ==========

Structured content is added as JSON text unless a text block already carries the same
value (servers are asked to send both). Server text (URIs, names, MIME types) that goes
into a description has its invisible and control characters removed and is cut short.
:func:`clean_result` removes them from the text a result carries too (text blocks,
embedded text resources, structured content), as a :class:`~mcp_sync.Toolbox` does by
default before any of the conversions. Pure functions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Tuple, Union

from ._modeltext import clean_model_text, clean_model_value
from ._schemas import clean_text

if TYPE_CHECKING:
    from .. import types

__all__ = ["anthropic_content", "clean_result", "langchain_content", "openai_text",
           "responses_output"]

# The image types Anthropic and OpenAI take as input.
_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_LABEL = 200  # characters of a URI, name or MIME type inside a description


@dataclass(frozen=True)
class _Text:
    text: str


@dataclass(frozen=True)
class _Binary:
    kind: str       # "image" or "file"
    mime_type: str
    data: str       # base64
    name: str       # a URI, for the description and a file name


_Part = Union[_Text, _Binary]


def _label(text: Any) -> str:
    return clean_text(str(text), _LABEL)


def _size(data: str) -> int:
    """Bytes that ``data`` (base64) decodes to."""
    data = data.strip()
    return max(0, len(data) * 3 // 4 - (len(data) - len(data.rstrip("="))))


def _describe(part: _Binary, why: str) -> _Text:
    what = "image" if part.kind == "image" else "file"
    where = f" {_label(part.name)}" if part.name else ""
    return _Text(f"[{what}{where}: {_label(part.mime_type)}, {_size(part.data)} bytes; {why}]")


def _parts(result: types.CallToolResult) -> List[_Part]:
    from .. import types

    parts: List[_Part] = []
    texts: List[str] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(_Text(block.text))
            texts.append(block.text)
        elif isinstance(block, types.ImageContent):
            parts.append(_Binary("image", block.mime_type, block.data, ""))
        elif isinstance(block, types.AudioContent):
            parts.append(_Text(f"[audio: {_label(block.mime_type)}, {_size(block.data)} "
                               "bytes; audio cannot be passed on here]"))
        elif isinstance(block, types.EmbeddedResource):
            parts.append(_resource(block.resource))
        elif isinstance(block, types.ResourceLink):
            details = [_label(block.uri)]
            if block.mime_type:
                details.append(_label(block.mime_type))
            if block.description:
                details.append(_label(block.description))
            parts.append(_Text(f"[resource link {_label(block.name)}: {', '.join(details)}]"))
        else:
            kind = getattr(block, "type", "unknown")
            parts.append(_Text(f"[content of type {_label(kind)!r}; not shown]"))
    structured = result.structured_content
    if structured is not None and not any(_same_json(text, structured) for text in texts):
        parts.append(_Text(json.dumps(structured, ensure_ascii=False)))
    return parts


def clean_result(result: types.CallToolResult) -> Tuple[types.CallToolResult, int]:
    """``(clean, removed)``: ``result`` with the invisible and control characters taken
    out of its text blocks, embedded text resources and structured content (keys
    included), and how many were; the result itself when there were none. Images,
    audio and blobs are not touched (the labels made of their names and types are
    cleaned by the conversions)."""
    from .. import types

    removed = 0
    changed = False
    blocks: List[Any] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            text, count = clean_model_text(block.text)
            if text != block.text:
                block = block.model_copy(update={"text": text})
                changed = True
            removed += count
        elif isinstance(block, types.EmbeddedResource) and isinstance(
                block.resource, types.TextResourceContents):
            text, count = clean_model_text(block.resource.text)
            if text != block.resource.text:
                block = block.model_copy(update={
                    "resource": block.resource.model_copy(update={"text": text})})
                changed = True
            removed += count
        blocks.append(block)
    structured, count = clean_model_value(result.structured_content)
    removed += count
    if not changed and not count:
        return result, removed
    return result.model_copy(update={"content": blocks, "structured_content": structured}), removed


def _resource(resource: Any) -> _Part:
    from .. import types

    uri = resource.uri
    mime = resource.mime_type or ""
    if isinstance(resource, types.TextResourceContents):
        header = f"[resource {_label(uri)}" + (f" ({_label(mime)})" if mime else "") + "]"
        return _Text(f"{header}\n{resource.text}")
    if isinstance(resource, types.BlobResourceContents):
        if mime.startswith("image/"):
            return _Binary("image", mime, resource.blob, uri)
        return _Binary("file", mime or "application/octet-stream", resource.blob, uri)
    return _Text(f"[resource {_label(uri)}; no contents]")


def _same_json(text: str, value: Any) -> bool:
    try:
        return bool(json.loads(text) == value)
    except ValueError:
        return False


def _text_of(part: _Part, why: str) -> str:
    """A part's text: its own, or for media a description saying ``why`` it is not sent."""
    return part.text if isinstance(part, _Text) else _describe(part, why).text


def _texts_joined(parts: List[_Part], why: str) -> str:
    return "\n".join(_text_of(part, why) for part in parts)


def _error_prefixed(text: str) -> str:
    return f"Error: {text}" if text else "Error"


def openai_text(result: types.CallToolResult) -> str:
    """The text of a Chat Completions tool message: tool messages carry text only, so
    images and files are described; ``Error: `` starts the text of an error result."""
    text = _texts_joined(_parts(result), "this reply can carry text only")
    return _error_prefixed(text) if result.is_error else text


def responses_output(result: types.CallToolResult) -> Union[str, List[Dict[str, Any]]]:
    """The ``output`` of a Responses ``function_call_output`` item: a string, or, when the
    result holds an image or a PDF, a list of ``input_text``/``input_image``/``input_file``
    items."""
    parts = _parts(result)
    if not any(isinstance(p, _Binary) and _responses_takes(p) for p in parts):
        text = _texts_joined(parts, "not supported here")
        return _error_prefixed(text) if result.is_error else text
    items: List[Dict[str, Any]] = [{"type": "input_text", "text": "Error:"}] if (
        result.is_error) else []
    for part in parts:
        if isinstance(part, _Binary) and _responses_takes(part):
            url = f"data:{part.mime_type};base64,{part.data}"
            if part.kind == "image":
                items.append({"type": "input_image", "image_url": url})
            else:
                name = part.name.rstrip("/").rsplit("/", 1)[-1] or "file.pdf"
                items.append({"type": "input_file", "file_data": url,
                              "filename": clean_text(name, 100)})
        else:
            text = _text_of(part, "not supported here")
            if text:
                items.append({"type": "input_text", "text": text})
    return items


def _responses_takes(part: _Binary) -> bool:
    if part.kind == "image":
        return part.mime_type in _IMAGE_TYPES
    return part.mime_type == "application/pdf"


def anthropic_content(result: types.CallToolResult) -> List[Dict[str, Any]]:
    """The ``content`` blocks of an Anthropic ``tool_result``: text, image and (PDF)
    document blocks; the rest described. Empty text blocks (which the API refuses) are
    left out."""
    blocks: List[Dict[str, Any]] = []
    for part in _parts(result):
        if isinstance(part, _Binary) and part.kind == "image" and (
                part.mime_type in _IMAGE_TYPES):
            blocks.append({"type": "image", "source": {
                "type": "base64", "media_type": part.mime_type, "data": part.data}})
        elif isinstance(part, _Binary) and part.mime_type == "application/pdf":
            blocks.append({"type": "document", "source": {
                "type": "base64", "media_type": "application/pdf", "data": part.data}})
        else:
            text = _text_of(part, "not supported here")
            if text:
                blocks.append({"type": "text", "text": text})
    return blocks


def langchain_content(result: types.CallToolResult) -> Union[str, List[Dict[str, Any]]]:
    """A LangChain tool message's content: a string, or, when the result holds images or
    files, a list of LangChain's standard ``text``/``image``/``file`` blocks."""
    parts = _parts(result)
    if not any(isinstance(p, _Binary) for p in parts):
        return "\n".join(p.text for p in parts if isinstance(p, _Text))
    blocks: List[Dict[str, Any]] = []
    for part in parts:
        if isinstance(part, _Text):
            if part.text:
                blocks.append({"type": "text", "text": part.text})
        else:
            blocks.append({"type": part.kind, "base64": part.data,
                           "mime_type": part.mime_type})
    return blocks
