"""Server text made clean for a language model: invisible and control characters out,
the text a reader sees kept. Pure functions, standard library only.

A model reads characters a screen does not show. The Unicode tag characters
(U+E0000-U+E007F) spell ASCII invisibly ("ASCII smuggling"), runs of zero-width
characters or variation selectors can carry bytes, and bidi controls make a description
read one way on screen and another to the model. :func:`clean_model_text` takes out:

* C0 controls but tab and newline, DEL and C1 controls (a carriage return is not lost:
  ``\\r\\n`` and a lone ``\\r`` become ``\\n``, as do the line and paragraph separators
  U+2028 and U+2029, and that is not counted as a removal);
* the bidi controls: U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069;
* the invisible format characters: U+200B (zero-width space), U+2060-U+2064 (word
  joiner, invisible operators), U+206A-U+206F, U+FEFF (byte order mark), U+FFF9-U+FFFB
  (interlinear annotation), and lone surrogates;
* every tag character (U+E0000-U+E007F), except inside the three emoji flags that are
  spelled with them (England, Scotland, Wales: U+1F3F4, the tags of ``gbeng``,
  ``gbsct`` or ``gbwls``, U+E007F), kept whole and exactly: nothing else may ride on them;
* a zero-width non-joiner or joiner (U+200C, U+200D) except where writing needs one: a
  single one right after a letter or mark that is not ASCII (Persian, the Indic
  scripts), or a joiner inside an emoji sequence (an emoji, or its skin tone or U+FE0F,
  before it; an emoji after it);
* a variation selector (U+FE00-U+FE0F, U+E0100-U+E01EF) except one right after the
  character it selects a form of (so a keycap ``1️⃣``, ``❤️`` and a CJK ideographic
  variant stay; a run of them, which can carry bytes, does not).

Everything else stays: letters and marks of every script, emoji, symbols, private use
characters, tabs and newlines.

:func:`clean_model_value` applies the same to every string (and key) of a JSON value;
:func:`clean_input_schema` to an input schema, where some strings are what the call
depends on (property names, enum values): those are never changed, and a schema whose
such strings hold a character that would go is refused instead (see its docstring).
"""

from __future__ import annotations

import bisect
import unicodedata
from typing import Any, List, Match, Tuple

from .._util.text import pattern

__all__ = [
    "SchemaRefused",
    "clean_input_schema",
    "clean_model_text",
    "clean_model_value",
    "needs_cleaning",
]

# Any character a rule below may act on: when none is in a text, it is returned as is.
_CANDIDATES = (
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f"
    "\ufe00-\ufe0f\ufeff\ufff9-\ufffb\ud800-\udfff\U000e0000-\U000e007f"
    "\U000e0100-\U000e01ef]"
)
# Line breaks in other spellings, made "\n" (not counted as removed).
_LINE_BREAKS = "\r\n|[\r\u2028\u2029]"
# What goes wherever it is (tags are handled apart, for the flags).
_ALWAYS = (
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064"
    "\u2066-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff]"
)
# The three emoji flags spelled with tags (England, Scotland, Wales), or any tag.
_TAGS = (
    "\U0001f3f4\U000e0067\U000e0062(?:\U000e0065\U000e006e\U000e0067|"
    "\U000e0073\U000e0063\U000e0074|\U000e0077\U000e006c\U000e0073)\U000e007f"
    "|[\U000e0000-\U000e007f]"
)
# Joiners and variation selectors: kept or not by their neighbours.
_CONTEXTUAL = "[\u200c\u200d\ufe00-\ufe0f\U000e0100-\U000e01ef]"

_ZWNJ, _ZWJ, _VS16 = "\u200c", "\u200d", "\ufe0f"

# Extended_Pictographic (Unicode's emoji-data), widened to whole blocks where the
# property is dense: a joiner between two such characters is kept. A wider set can only
# keep a joiner between two symbols, which carries nothing.
_PICTOGRAPHIC = (
    (0x00A9, 0x00A9), (0x00AE, 0x00AE), (0x203C, 0x203C), (0x2049, 0x2049),
    (0x2122, 0x2122), (0x2139, 0x2139), (0x2194, 0x21AA), (0x231A, 0x23FA),
    (0x24C2, 0x24C2), (0x25AA, 0x25FE), (0x2600, 0x27BF), (0x2934, 0x2935),
    (0x2B05, 0x2B55), (0x3030, 0x3030), (0x303D, 0x303D), (0x3297, 0x3299),
    (0x1F000, 0x1FAFF), (0x1FC00, 0x1FFFD),
)
_PICTOGRAPHIC_STARTS = [start for start, _ in _PICTOGRAPHIC]
# Emoji skin tones (they come between an emoji and a joiner).
_MODIFIERS = (0x1F3FB, 0x1F3FF)


def _pictographic(char: str) -> bool:
    code = ord(char)
    index = bisect.bisect_right(_PICTOGRAPHIC_STARTS, code) - 1
    return index >= 0 and code <= _PICTOGRAPHIC[index][1]


def _emoji_part(char: str) -> bool:
    """Can ``char`` end the emoji a joiner follows?"""
    return _pictographic(char) or char == _VS16 or (
        _MODIFIERS[0] <= ord(char) <= _MODIFIERS[1])


def _letter_or_mark(char: str) -> bool:
    """A letter or a combining mark of a script other than ASCII's; not a variation
    selector, which Unicode files as a mark too (a joiner after one would make a run of
    invisible characters)."""
    return char >= "\x80" and unicodedata.category(char)[0] in "LM" and not (
        pattern(_CONTEXTUAL).fullmatch(char))


def _base(char: str) -> bool:
    """Can ``char`` carry a variation selector? Anything visible that is not itself a
    joiner, a selector or a space."""
    return char.isprintable() and not char.isspace() and not (
        pattern(_CONTEXTUAL).fullmatch(char))


def needs_cleaning(text: str) -> bool:
    """Does ``text`` hold a character :func:`clean_model_text` may change? (A text
    without one is returned unchanged, at the cost of this one scan.)"""
    return pattern(_CANDIDATES).search(text) is not None


def clean_model_text(text: str) -> Tuple[str, int]:
    """``(clean, removed)``: ``text`` with the invisible and control characters taken out
    (see the module docstring), and how many were. Line breaks spelled otherwise than
    ``\\n`` become ``\\n`` and do not count."""
    if pattern(_CANDIDATES).search(text) is None:
        return text, 0
    text = pattern(_LINE_BREAKS).sub("\n", text)
    text, removed = pattern(_ALWAYS).subn("", text)
    if pattern("[\U000e0000-\U000e007f]").search(text) is not None:
        tags = [0]

        def tag(match: Match[str]) -> str:
            if len(match.group()) > 1:  # a whole flag
                return match.group()
            tags[0] += 1
            return ""

        text = pattern(_TAGS).sub(tag, text)
        removed += tags[0]
    if pattern(_CONTEXTUAL).search(text) is not None:
        text, dropped = _contextual(text)
        removed += dropped
    return text, removed


def _contextual(text: str) -> Tuple[str, int]:
    """Joiners and variation selectors judged by their neighbours in ``text`` (from which
    everything that always goes is gone already)."""
    out: List[str] = []
    removed = 0
    last = 0
    for match in pattern(_CONTEXTUAL).finditer(text):
        index = match.start()
        char = match.group()
        before = text[index - 1] if index > 0 else ""
        after = text[index + 1] if index + 1 < len(text) else ""
        if char in (_ZWNJ, _ZWJ):
            keep = bool(before) and (_letter_or_mark(before) or (
                char == _ZWJ and _emoji_part(before) and bool(after) and _pictographic(after)))
        else:  # a variation selector, right after the character it selects a form of
            keep = bool(before) and _base(before)
        if not keep:
            out.append(text[last:index])
            last = index + 1
            removed += 1
    if not removed:
        return text, 0
    out.append(text[last:])
    return "".join(out), removed


def clean_model_value(value: Any) -> Tuple[Any, int]:
    """``(clean, removed)``: a copy of the JSON ``value`` whose every string, keys
    included, went through :func:`clean_model_text` (two keys that become one keep the
    last value), and how many characters were taken out in all. A value with nothing to
    take out is returned as it is."""
    if isinstance(value, str):
        return clean_model_text(value)
    if isinstance(value, list):
        removed = 0
        items = []
        for item in value:
            clean, count = clean_model_value(item)
            items.append(clean)
            removed += count
        return (items, removed) if removed else (value, 0)
    if isinstance(value, dict):
        removed = 0
        pairs = {}
        for key, item in value.items():
            clean_key, key_count = clean_model_text(key) if isinstance(key, str) else (key, 0)
            clean, count = clean_model_value(item)
            pairs[clean_key] = clean
            removed += key_count + count
        return (pairs, removed) if removed else (value, 0)
    return value, 0


class SchemaRefused(ValueError):
    """A string the tool call depends on holds a character the cleaning takes out (the
    message says where)."""


# Keywords whose value is for the reader only: cleaned whatever it holds.
_ANNOTATIONS = frozenset({"title", "description", "$comment", "examples", "default",
                          "deprecated", "readOnly", "writeOnly"})
# Keywords whose value names or constrains what the call sends: never changed.
_STRUCTURAL = frozenset({
    "enum", "const", "required", "type", "pattern", "format", "$ref", "$id", "$anchor",
    "$schema", "$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor",
    "dependentRequired", "dependencies", "contentMediaType", "contentEncoding",
})
# Keywords whose value maps names to schemas, holds schemas, or is one.
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions",
                          "dependentSchemas"})
_SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SCHEMA_ONE = frozenset({"items", "additionalItems", "additionalProperties", "not", "if",
                         "then", "else", "contains", "propertyNames", "unevaluatedItems",
                         "unevaluatedProperties"})


def clean_input_schema(schema: Any) -> Tuple[Any, int]:
    """``(clean, removed)``: a copy of a tool's input schema in which what the model
    only reads (``title``, ``description``, ``examples``, ``default``, ``$comment``,
    unknown keywords) is cleaned at any depth, and how many characters were taken out.

    What the call depends on is never changed: property names and every other key,
    ``enum`` and ``const`` values, ``required``, ``pattern``, ``type``, ``format``,
    ``$ref`` and the anchors. When one of those holds a character the cleaning would
    take out, no honest reading of the schema is left to offer, and the schema is
    refused.

    Raises:
        SchemaRefused: a key or a value the call depends on holds such a character.
    """
    removed = [0]
    return _schema(schema, "arguments", removed), removed[0]


def _show(text: str) -> str:
    from .._util.text import excerpt

    return excerpt(repr(text), 80)


def _refuse_dirty(value: Any, where: str) -> None:
    """Raise when a string (or key) of ``value`` holds a character that would go."""
    if isinstance(value, str):
        if needs_cleaning(value) and clean_model_text(value)[0] != value:
            raise SchemaRefused(f"{where} holds invisible or control characters: "
                                f"{_show(value)}")
    elif isinstance(value, list):
        for item in value:
            _refuse_dirty(item, where)
    elif isinstance(value, dict):
        for key, item in value.items():
            _refuse_dirty(key, f"a name in {where}")
            _refuse_dirty(item, where)


def _data(value: Any, removed: List[int]) -> Any:
    clean, count = clean_model_value(value)
    removed[0] += count
    return clean


def _schema(node: Any, where: str, removed: List[int]) -> Any:
    if isinstance(node, list):  # items as a list (older drafts)
        return [_schema(item, where, removed) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        _refuse_dirty(key, f"a keyword of {where}")
        if key in _ANNOTATIONS:
            out[key] = _data(value, removed)
        elif key in _STRUCTURAL:
            _refuse_dirty(value, f"{key} of {where}")
            out[key] = value
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            mapped = {}
            for name, child in value.items():
                _refuse_dirty(name, f"a name in {key} of {where}")
                mapped[name] = _schema(child, f"{where}.{name}" if key == "properties"
                                       else f"{key}/{name}", removed)
            out[key] = mapped
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_schema(item, where, removed) for item in value]
        elif key in _SCHEMA_ONE:
            out[key] = _schema(value, where, removed)
        else:  # an unknown keyword (x-...) or a number: read by the model, nothing more
            out[key] = _data(value, removed)
    return out

