"""Text from a server made safe to show: on a terminal, in a message, in a log line, in a
name.

A server is another program; what it sends is data, never markup. Three helpers, one rule:

* :func:`printable` writes every character that could act on a terminal or hide what the
  text says as its Python escape (``\\x1b``, ``\\x9b``, ``\\u202e``), so that nothing of
  it is interpreted: no CSI or OSC sequence (screen clearing, OSC 52 clipboard writes,
  window titles), no C1 control, no bidi override, no invisible character.
* :func:`excerpt` is :func:`printable` with a bound: at most ``limit`` characters of the
  text, then ``…`` and its total size. Every message and log line built from server data
  goes through it.
* :func:`printable_json` is ``json.dumps`` whose output holds none of those characters
  raw (they become ``\\u`` escapes): still valid JSON, parsed back to the same value.

And one for names built from it (thread and logger names, server labels, saved files):
:func:`name_safe` keeps ASCII letters, digits, ``.``, ``_`` and ``-`` only.

Standard library only; imported by the exceptions module, so it imports nothing of ours.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Match, Pattern

__all__ = ["excerpt", "name_safe", "printable", "printable_json"]

# What a server must never get onto a screen:
# - C0 controls but tab and newline (ESC starts every CSI and OSC sequence; CR lets what
#   follows overwrite the line), DEL, and C1 (0x9b is CSI, 0x9d OSC to some terminals);
# - the bidi marks, embeddings, overrides and isolates (U+061C, U+200E-U+200F,
#   U+202A-U+202E, U+2066-U+2069) that make text display in another order than it reads;
# - characters that show nothing and hide text or split words unseen: zero-width space,
#   the line and paragraph separators, word joiner and invisible operators (U+2060-U+206F),
#   the byte order mark, the interlinear annotation marks, the tag characters
#   (U+E0000-U+E007F, ASCII in disguise);
# - lone surrogates, which no encoder can write.
# The zero-width joiner and non-joiner (U+200C, U+200D) stay: scripts and emoji need them.
_UNPRINTABLE = (
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u2028-\u202e"
    "\u2060-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff\U000e0000-\U000e007f]"
)
# What a name may not hold: anything but ASCII letters, digits, ".", "_" and "-" (so no
# path separator, space, control character or non-ASCII look-alike).
_UNSAFE_NAME = r"[^A-Za-z0-9._-]+"
# The start of an escape cut short by the bound (``\``, ``\x1``, ``\u20``): dropped whole.
_CUT_ESCAPE = r"\\(?:x[0-9a-f]?|u[0-9a-f]{0,3}|U[0-9a-f]{0,7})?\Z"


@functools.cache
def pattern(source: str, flags: int = 0) -> Pattern[str]:
    """``re.compile(source, flags)``, compiled at its first use and kept.

    The package's regular expressions are compiled when first needed, not at import:
    compiling one is pure Python, and most of them serve error messages and rare paths
    (compiling the character class of :func:`printable` took half a millisecond, half
    of what importing this module cost).
    """
    return re.compile(source, flags)


def _python_escape(match: Match[str]) -> str:
    code = ord(match.group())
    if code == 0x0D:
        return "\\r"
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _json_escape(match: Match[str]) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # JSON spells an astral character as a surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _as_text(text: Any) -> str:
    if isinstance(text, (bytes, bytearray)):
        return bytes(text).decode("utf-8", "replace")
    return str(text)


def printable(text: Any) -> str:
    """``text`` (bytes are decoded as UTF-8) with every character that could act on a
    terminal or hide text written as its Python escape; tabs and newlines stay.

    Not bounded: for messages and log lines use :func:`excerpt`.
    """
    return pattern(_UNPRINTABLE).sub(_python_escape, _as_text(text))


def excerpt(text: Any, limit: int = 200) -> str:
    """Untrusted text made safe for a message or a log line: :func:`printable`, and at
    most ``limit`` characters of it (escapes count; none is cut in half), followed, when
    it was longer, by ``…`` and its total size in characters."""
    raw = _as_text(text)
    clean = printable(raw[:limit])
    if len(raw) <= limit and len(clean) <= limit:
        return clean
    if len(clean) > limit:
        clean = pattern(_CUT_ESCAPE).sub("", clean[:limit])
    return f"{clean}… ({len(raw)} characters in all)"


def printable_json(value: Any, **dumps: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, **dumps)`` with every character
    :func:`printable` escapes written as a JSON ``\\u`` escape instead: valid JSON that
    parses back to ``value``, readable where the text is, inert on a terminal.

    (Outside strings, ``json.dumps`` writes ASCII only, so every such character found is
    inside a string, where an escape means the same character.)
    """
    return pattern(_UNPRINTABLE).sub(_json_escape, json.dumps(value, ensure_ascii=False, **dumps))


def name_safe(text: str) -> str:
    """``text`` with each run of characters other than ASCII letters, digits, ``.``, ``_``
    and ``-`` replaced by one ``_``. Not bounded, nothing stripped: callers cut it to
    their length and trim the ends their names may not start or end with."""
    return pattern(_UNSAFE_NAME).sub("_", text)
