"""The 2026-07-28 HTTP header rules: value encoding and ``x-mcp-header`` tool parameters.

Pure functions, no I/O. Streamable HTTP mirrors some body fields into headers
(``Mcp-Name``, ``Mcp-Param-<Name>``); a value that is not plain visible ASCII travels as
``=?base64?<base64 of its UTF-8>?=``.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

from .._util.text import pattern

__all__ = ["encode_header_value", "invalid_header_annotation", "param_headers"]

X_MCP_HEADER = "x-mcp-header"
_TOKEN = r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$"  # RFC 9110 tchar
_SAFE_VALUE = r"^[\x20-\x7e]*$"
_SAFE_INTEGER = 2**53 - 1
_COMPOSITION = ("items", "prefixItems", "additionalProperties", "oneOf", "anyOf", "allOf", "not",
                "if", "then", "else", "$ref", "$defs", "definitions", "patternProperties",
                "dependentSchemas", "contains", "unevaluatedProperties", "unevaluatedItems")


def encode_header_value(value: Any) -> str:
    """A header-safe rendering of a string, integer or boolean body value."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, int):
        text = str(value)
    else:
        text = str(value)
    plain = (
        pattern(_SAFE_VALUE).match(text) is not None
        and text == text.strip(" \t")
        and not (text.startswith("=?base64?") and text.endswith("?="))
    )
    if plain:
        return text
    import base64  # rare: only a value that is not plain header text

    return "=?base64?" + base64.b64encode(text.encode("utf-8")).decode("ascii") + "?="


def _annotations(
    schema: Any, path: Tuple[str, ...] = ()
) -> Iterator[Tuple[Tuple[str, ...], Any, Any]]:
    """Yield ``(path, annotation, property_schema)`` for reachable ``x-mcp-header`` marks."""
    if not isinstance(schema, dict):
        return
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, sub in properties.items():
            if isinstance(sub, dict):
                if X_MCP_HEADER in sub:
                    yield (*path, name), sub[X_MCP_HEADER], sub
                yield from _annotations(sub, (*path, name))


def _unreachable_annotation(schema: Any, reachable: bool = True) -> bool:
    """True if an ``x-mcp-header`` sits somewhere not reachable through ``properties`` only."""
    if isinstance(schema, dict):
        if not reachable and X_MCP_HEADER in schema:
            return True
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict):
                if any(_unreachable_annotation(sub, reachable) for sub in value.values()):
                    return True
            elif key in _COMPOSITION and _unreachable_annotation(value, False):
                return True
    elif isinstance(schema, list):
        return any(_unreachable_annotation(item, reachable) for item in schema)
    return False


def invalid_header_annotation(input_schema: Any) -> Optional[str]:
    """Why a tool's ``x-mcp-header`` annotations are invalid, or ``None`` if they are fine."""
    if _unreachable_annotation(input_schema):
        return "an x-mcp-header is not reachable through 'properties' alone"
    seen: Dict[str, str] = {}
    for path, annotation, prop in _annotations(input_schema):
        where = ".".join(path)
        if not isinstance(annotation, str) or not annotation:
            return f"x-mcp-header of {where!r} is empty or not a string"
        if not pattern(_TOKEN).match(annotation):
            return f"x-mcp-header {annotation!r} of {where!r} is not an HTTP token"
        if annotation.lower() in seen:
            first = seen[annotation.lower()]
            return f"x-mcp-header {annotation!r} is used twice ({first}, {where})"
        seen[annotation.lower()] = where
        kind = prop.get("type")
        if kind not in ("string", "integer", "boolean"):
            return f"x-mcp-header {annotation!r} is on {where!r} of type {kind!r}"
    return None


def param_headers(input_schema: Any, arguments: Mapping[str, Any]) -> Dict[str, str]:
    """The ``Mcp-Param-<Name>`` headers for a call with ``arguments``.

    Raises:
        ValueError: an annotated integer lies outside the JavaScript safe range.
    """
    headers: Dict[str, str] = {}
    for path, annotation, _ in _annotations(input_schema):
        value: Any = arguments
        for step in path:
            value = value.get(step) if isinstance(value, Mapping) else None
        if value is None:
            continue
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > _SAFE_INTEGER:
            raise ValueError(f"{'.'.join(path)}={value} is outside the safe integer range")
        headers[f"Mcp-Param-{annotation}"] = encode_header_value(value)
    return headers


def annotated_paths(input_schema: Any) -> List[Tuple[str, ...]]:
    """The property paths carrying an ``x-mcp-header`` (for diagnostics and tests)."""
    return [path for path, _, _ in _annotations(input_schema)]
