"""Tool input schemas as the model providers take them; pure functions, no I/O.

A server's ``inputSchema`` is untrusted data: :func:`bounded_schema` refuses one deeper
or larger than a bound (the tool is then offered with an open object schema), and
nothing here ever fetches a ``$ref``: only references inside the schema itself
(``#/...``) are followed, a bounded number of levels deep.

:func:`strict_schema` converts a schema to the subset OpenAI's strict mode accepts, or
says why it cannot:

* every object lists all its properties in ``required`` and has
  ``additionalProperties: false``; a property that was optional becomes nullable (``null``
  added to its type, its enum, or its ``anyOf``);
* local ``$ref``s (and one-member ``allOf``s) are inlined; ``oneOf`` becomes ``anyOf``;
  ``const`` becomes a one-value ``enum``;
* keywords strict mode does not take are dropped when dropping them only loosens the
  schema (``default``, ``minLength``, ``not``, ``if``, unknown ``format``s...);
* what cannot be said in the subset is refused with a reason: a recursive or remote
  ``$ref``, an object open to other properties, a value of any type, ``allOf`` of several
  schemas, ``patternProperties``, tuples, past OpenAI's size limits.

The converted schema accepts every value the original accepts once each absent optional
property is filled with ``null`` (and the object has no properties it does not declare);
:func:`drop_filled_nulls` undoes that filling on the model's arguments before the call.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Set, Tuple

from .._protocol import json_type
from .._util.text import excerpt
from ._modeltext import clean_model_text

__all__ = [
    "OPEN_SCHEMA",
    "bounded_schema",
    "clean_text",
    "drop_filled_nulls",
    "strict_schema",
]

#: What a tool whose schema is past the bounds is offered with: any object.
OPEN_SCHEMA: Dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": True}

MAX_SCHEMA_DEPTH = 64            # nesting of dicts and lists in one inputSchema
MAX_SCHEMA_BYTES = 256 * 1024    # compact JSON of one inputSchema
MAX_REF_DEPTH = 16               # $ref inside $ref ... while inlining
MAX_STRICT_NODES = 20_000        # schema nodes once every $ref is inlined

# OpenAI's documented limits for strict schemas.
STRICT_MAX_NESTING = 10
STRICT_MAX_PROPERTIES = 5000
STRICT_MAX_ENUM_VALUES = 1000
STRICT_MAX_STRING_LENGTH = 120_000

_JSON_TYPES = ("string", "number", "integer", "boolean", "object", "array", "null")
_STRICT_FORMATS = frozenset({
    "date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid",
})
# Kept as they are for the types they apply to.
_NUMBER_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_ARRAY_KEYWORDS = ("minItems", "maxItems")
# Keywords that only describe, or only constrain (so dropping them loosens the schema).
_ANNOTATIONS = frozenset({
    "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly",
    "$comment", "$schema", "$id", "$anchor", "$defs", "definitions",
})
# A schema that cannot be expressed when it carries one of these.
_REFUSED = {
    "patternProperties": "patternProperties (property names by pattern)",
    "prefixItems": "a tuple (prefixItems)",
    "$dynamicRef": "$dynamicRef",
    "$recursiveRef": "$recursiveRef",
}

def clean_text(text: str, limit: int) -> str:
    """Server text made fit for a provider's field: invisible and control characters
    removed (:func:`mcp_sync.toolbox._modeltext.clean_model_text`), cut to ``limit`` characters
    (ending with an ellipsis when cut)."""
    clean = clean_model_text(text)[0]
    if len(clean) > limit:
        return clean[: limit - 1].rstrip() + "\u2026"
    return clean


def _shown(value: Any) -> str:
    """A server's value in a reason (which is logged): its repr, escaped and cut."""
    return excerpt(repr(value), 100)


def _depth(value: Any, limit: int) -> int:
    """Nesting depth of dicts and lists, counted without recursion, up to ``limit + 1``."""
    deepest = 0
    stack: List[Tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if not isinstance(item, (dict, list)):
            continue
        deepest = max(deepest, level)
        if deepest > limit:
            return deepest
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, level + 1) for child in children)
    return deepest


def _without_remote_refs(node: Any, found: List[str]) -> Any:
    """A copy of ``node`` in which each schema with a ``$ref`` outside the document keeps
    only its other keywords (so it accepts any value); the refs go to ``found``."""
    if isinstance(node, list):
        return [_without_remote_refs(item, found) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and not ref.startswith("#"):
        found.append(ref)
        node = {k: v for k, v in node.items() if k != "$ref"}
    return {key: _without_remote_refs(value, found) for key, value in node.items()}


def bounded_schema(schema: Any) -> Tuple[Dict[str, Any], Optional[str], bool]:
    """``(schema, note, whole)``: ``schema`` as a provider takes it, ``note`` saying what
    was changed (``None`` if nothing), ``whole`` True when the schema was past a bound
    and replaced by :data:`OPEN_SCHEMA`.

    A schema without ``type`` or ``properties`` gets ``"type": "object"`` and
    ``"properties": {}``; a ``$ref`` to anything outside the schema (never fetched, and
    no provider would) leaves that value open."""
    if not isinstance(schema, dict):
        return dict(OPEN_SCHEMA), "the input schema is not a JSON object", True
    if _depth(schema, MAX_SCHEMA_DEPTH) > MAX_SCHEMA_DEPTH:
        return dict(OPEN_SCHEMA), f"the input schema nests deeper than {MAX_SCHEMA_DEPTH}", True
    size = len(json.dumps(schema, separators=(",", ":"), default=str))
    if size > MAX_SCHEMA_BYTES:
        return dict(OPEN_SCHEMA), (f"the input schema is {size} bytes, over the bound of "
                                   f"{MAX_SCHEMA_BYTES}"), True
    kind = schema.get("type")
    if kind not in (None, "object", ["object"]):
        return dict(OPEN_SCHEMA), f"the input schema's type is {_shown(kind)}, not 'object'", True
    if kind != "object" or "properties" not in schema:
        # OpenAI refuses an object schema without "properties" (a tool with no arguments)
        schema = {**schema, "type": "object", "properties": schema.get("properties", {})}
    remote: List[str] = []
    schema = _without_remote_refs(schema, remote)
    note = None
    if remote:
        shown = ", ".join(repr(clean_text(ref, 100)) for ref in remote[:3])
        note = f"a $ref outside the schema is never fetched; the value is left open: {shown}"
    return schema, note, False


# -- strict conversion -------------------------------------------------------------------


_ROOT = "arguments"  # how a reason names the schema's root


def _printable(name: str) -> str:
    return clean_text(name, 60)


class _Refused(Exception):
    """The schema cannot be expressed in the strict subset; the message says why."""


def _resolve_pointer(root: Mapping[str, Any], ref: str) -> Any:
    """The value a local ``#/a/b`` reference points at, or ``_Refused``."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        raise _Refused(f"a $ref outside the schema ({_shown(ref)}) is never fetched")
    node: Any = root
    for part in ref[2:].split("/"):
        key = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            raise _Refused(f"the $ref {_shown(ref)} points at nothing")
    return node


class _Converter:
    def __init__(self, root: Dict[str, Any]) -> None:
        self.root = root
        self.nodes = 0
        self.properties = 0
        self.enum_values = 0
        self.string_length = 0

    def count(self) -> None:
        self.nodes += 1
        if self.nodes > MAX_STRICT_NODES:
            raise _Refused(f"more than {MAX_STRICT_NODES} schema nodes once $refs are inlined")

    def merged(self, node: Dict[str, Any], path: str, refs: Tuple[str, ...]
               ) -> Tuple[Dict[str, Any], Tuple[str, ...]]:
        """``node`` with its ``$ref`` (or one-member ``allOf``) replaced by the target,
        repeatedly; sibling annotations (a description) are kept over the target's."""
        while True:
            if "$ref" in node:
                ref = node["$ref"]
                if not isinstance(ref, str):
                    raise _Refused(f"{path}: $ref is not a string")
                if ref in refs:
                    raise _Refused(f"{path}: the $ref {_shown(ref)} is recursive")
                if len(refs) >= MAX_REF_DEPTH:
                    raise _Refused(f"{path}: $refs nest deeper than {MAX_REF_DEPTH}")
                siblings = {k: v for k, v in node.items() if k != "$ref"}
                if set(siblings) - _ANNOTATIONS:
                    raise _Refused(
                        f"{path}: a $ref beside constraints ({_shown(sorted(siblings))})")
                target = _resolve_pointer(self.root, ref)
                if target is True or target == {}:
                    target = {}
                if not isinstance(target, dict):
                    raise _Refused(f"{path}: the $ref {_shown(ref)} is not a schema")
                node = {**target, **siblings}
                refs = (*refs, ref)
                continue
            parts = node.get("allOf")
            if parts is not None:
                siblings = {k: v for k, v in node.items() if k != "allOf"}
                if (not isinstance(parts, list) or len(parts) != 1
                        or not isinstance(parts[0], dict) or set(siblings) - _ANNOTATIONS):
                    raise _Refused(f"{path}: allOf of several schemas")
                node = {**parts[0], **siblings}
                continue
            return node, refs

    def convert(self, schema: Any, path: str, nesting: int, refs: Tuple[str, ...]
                ) -> Dict[str, Any]:
        self.count()
        if schema is True or schema == {}:
            raise _Refused(f"{path} takes a value of any type")
        if not isinstance(schema, dict):
            raise _Refused(f"{path} is not a schema")
        node, refs = self.merged(schema, path, refs)
        for keyword, what in _REFUSED.items():
            if keyword in node:
                raise _Refused(f"{path}: {what}")
        out: Dict[str, Any] = {}
        description = node.get("description")
        if isinstance(description, str) and description:
            out["description"] = clean_text(description, 1024)

        choices = node.get("anyOf", node.get("oneOf"))
        if choices is not None:
            if not isinstance(choices, list) or not choices:
                raise _Refused(f"{path}: an empty anyOf")
            others = set(node) - _ANNOTATIONS - {"anyOf", "oneOf"}
            if others:
                raise _Refused(f"{path}: anyOf beside {_shown(sorted(others))}")
            out["anyOf"] = [self.convert(choice, f"{path}|anyOf[{i}]", nesting, refs)
                            for i, choice in enumerate(choices)]
            return out

        values = self.values(node, path)
        kinds = node.get("type")
        if kinds is None:
            if values is not None:
                kinds = sorted({json_type(value) for value in values})
            elif "properties" in node:
                kinds = "object"
            else:
                raise _Refused(f"{path} has no type")
        type_list = [kinds] if isinstance(kinds, str) else kinds
        if not isinstance(type_list, list) or not type_list or any(
                kind not in _JSON_TYPES for kind in type_list):
            raise _Refused(f"{path}: unknown type {_shown(kinds)}")
        out["type"] = kinds if isinstance(kinds, str) else list(kinds)
        if values is not None:
            out["enum"] = values

        if "string" in type_list:
            if isinstance(node.get("pattern"), str):
                out["pattern"] = node["pattern"]
            if node.get("format") in _STRICT_FORMATS:
                out["format"] = node["format"]
        if "number" in type_list or "integer" in type_list:
            for keyword in _NUMBER_KEYWORDS:
                value = node.get(keyword)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    out[keyword] = value
        if "array" in type_list:
            out.update(self.array(node, path, nesting, refs))
        if "object" in type_list:
            out.update(self.object(node, path, nesting, refs))
        return out

    def values(self, node: Dict[str, Any], path: str) -> Optional[List[Any]]:
        if "const" in node:
            values = [node["const"]]
        elif "enum" in node:
            values = node["enum"]
            if not isinstance(values, list) or not values:
                raise _Refused(f"{path}: an empty enum")
        else:
            return None
        self.enum_values += len(values)
        if self.enum_values > STRICT_MAX_ENUM_VALUES:
            raise _Refused(f"more than {STRICT_MAX_ENUM_VALUES} enum values")
        for value in values:
            if isinstance(value, (dict, list)):
                raise _Refused(f"{path}: an enum of objects or arrays")
            if isinstance(value, str):
                self.add_strings(len(value))
        return list(values)

    def add_strings(self, length: int) -> None:
        self.string_length += length
        if self.string_length > STRICT_MAX_STRING_LENGTH:
            raise _Refused(f"property names and enum values pass {STRICT_MAX_STRING_LENGTH} "
                           "characters")

    def array(self, node: Dict[str, Any], path: str, nesting: int, refs: Tuple[str, ...]
              ) -> Dict[str, Any]:
        if nesting + 1 > STRICT_MAX_NESTING:
            raise _Refused(f"{path}: nests deeper than {STRICT_MAX_NESTING} levels")
        items = node.get("items")
        if isinstance(items, list):
            raise _Refused(f"{path}: a tuple (items as a list)")
        if items is None:
            raise _Refused(f"{path}: an array of values of any type")
        out: Dict[str, Any] = {"items": self.convert(items, f"{path}[]", nesting + 1, refs)}
        for keyword in _ARRAY_KEYWORDS:
            value = node.get(keyword)
            if isinstance(value, int) and not isinstance(value, bool):
                out[keyword] = value
        return out

    def object(self, node: Dict[str, Any], path: str, nesting: int, refs: Tuple[str, ...]
               ) -> Dict[str, Any]:
        if nesting + 1 > STRICT_MAX_NESTING:
            raise _Refused(f"{path}: nests deeper than {STRICT_MAX_NESTING} levels")
        properties = node.get("properties")
        extra = node.get("additionalProperties")
        if properties is None and path != _ROOT:
            raise _Refused(f"{path}: an object with no declared properties")
        properties = properties or {}
        if not isinstance(properties, dict):
            raise _Refused(f"{path}: properties is not an object")
        if extra not in (None, False):
            raise _Refused(f"{path}: an object that takes other properties")
        self.properties += len(properties)
        if self.properties > STRICT_MAX_PROPERTIES:
            raise _Refused(f"more than {STRICT_MAX_PROPERTIES} properties")
        required = node.get("required") or []
        if not isinstance(required, list):
            raise _Refused(f"{path}: required is not a list")
        converted: Dict[str, Any] = {}
        for name, child in properties.items():
            self.add_strings(len(name))
            schema = self.convert(child, f"{path}.{_printable(name)}", nesting + 1, refs)
            converted[name] = schema if name in required else _nullable(schema)
        return {"properties": converted, "required": list(converted),
                "additionalProperties": False}




def _nullable(schema: Dict[str, Any]) -> Dict[str, Any]:
    """``schema`` that also accepts ``null`` (a converted, strict schema)."""
    out = dict(schema)
    if "anyOf" in out:
        if not any(_takes_null_strict(choice) for choice in out["anyOf"]):
            out["anyOf"] = [*out["anyOf"], {"type": "null"}]
        return out
    kinds = out["type"]
    type_list = [kinds] if isinstance(kinds, str) else list(kinds)
    if "null" not in type_list:
        out["type"] = [*type_list, "null"]
    if "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return out


def _takes_null_strict(schema: Dict[str, Any]) -> bool:
    if "anyOf" in schema:
        return any(_takes_null_strict(choice) for choice in schema["anyOf"])
    kinds = schema.get("type")
    type_list = [kinds] if isinstance(kinds, str) else list(kinds or ())
    return "null" in type_list and ("enum" not in schema or None in schema["enum"])


def strict_schema(schema: Dict[str, Any]) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    """``(converted, None)``, or ``(None, reason)`` when the schema cannot be expressed in
    OpenAI's strict subset. ``schema`` is a bounded object schema (:func:`bounded_schema`)."""
    converter = _Converter(schema)
    try:
        converted = converter.convert(schema, _ROOT, 0, ())
    except _Refused as refused:
        return None, str(refused)
    except RecursionError:  # bounded already; this only guards against a missed path
        return None, "the schema nests too deeply"
    if converted.get("type") != "object":
        return None, "the root is not a plain object schema"
    return converted, None


# -- arguments ---------------------------------------------------------------------------


def _takes_null(schema: Any, root: Mapping[str, Any], depth: int) -> bool:
    """Does the original ``schema`` accept ``null``? (True when unsure.)"""
    node = _follow(schema, root, depth)
    if node is None or not isinstance(node, dict):
        return True
    if "const" in node:
        return node["const"] is None
    if "enum" in node and isinstance(node["enum"], list):
        return None in node["enum"]
    choices = node.get("anyOf", node.get("oneOf"))
    if isinstance(choices, list):
        return any(_takes_null(choice, root, depth + 1) for choice in choices)
    kinds = node.get("type")
    if kinds is None:
        return True
    return kinds == "null" or (isinstance(kinds, list) and "null" in kinds)


def _follow(schema: Any, root: Mapping[str, Any], depth: int) -> Any:
    """``schema`` with local ``$ref``s and one-member ``allOf``s followed; ``None`` when
    that fails or goes past the bound."""
    for _ in range(MAX_REF_DEPTH):
        if not isinstance(schema, dict) or depth > MAX_SCHEMA_DEPTH:
            return schema
        if isinstance(schema.get("$ref"), str):
            try:
                schema = _resolve_pointer(root, schema["$ref"])
            except _Refused:
                return None
            continue
        parts = schema.get("allOf")
        if isinstance(parts, list) and len(parts) == 1:
            schema = parts[0]
            continue
        return schema
    return None


def drop_filled_nulls(value: Any, schema: Any, root: Optional[Mapping[str, Any]] = None,
                      depth: int = 0) -> Any:
    """``value`` without the ``null``s a strict schema made the model write: a property
    that is ``null``, optional in the original ``schema`` and not allowed to be ``null``
    there is removed, at any depth the schema describes. Everything else is unchanged."""
    if root is None:
        root = schema if isinstance(schema, dict) else {}
    node = _follow(schema, root, depth)
    if not isinstance(node, dict) or depth > MAX_SCHEMA_DEPTH:
        return value
    choices = node.get("anyOf", node.get("oneOf"))
    if isinstance(choices, list) and isinstance(value, dict):
        # the branch the model filled: the one with exactly its keys, else one with more
        branches = [_follow(choice, root, depth + 1) for choice in choices]
        keyed = [(b, b["properties"]) for b in branches
                 if isinstance(b, dict) and isinstance(b.get("properties"), dict)]
        for matches in (set(value).__eq__, set(value).__le__):
            for branch, properties in keyed:
                if matches(set(properties)):
                    return drop_filled_nulls(value, branch, root, depth + 1)
        return value
    if isinstance(value, dict):
        properties = node.get("properties")
        if not isinstance(properties, dict):
            return value
        required: Set[str] = set(node.get("required") or ()) if isinstance(
            node.get("required"), list) else set()
        out: Dict[str, Any] = {}
        for key, item in value.items():
            child = properties.get(key)
            if child is None:
                out[key] = item
            elif item is None and key not in required and not _takes_null(child, root, depth):
                continue
            else:
                out[key] = drop_filled_nulls(item, child, root, depth + 1)
        return out
    if isinstance(value, list):
        items = node.get("items")
        if isinstance(items, dict):
            return [drop_filled_nulls(item, items, root, depth + 1) for item in value]
    return value
