"""Tool names the model providers accept, made from ``(server, tool)`` pairs.

OpenAI and Anthropic both take function names of 1 to 64 characters from
``[a-zA-Z0-9_-]``. A server's tool names are free text (and untrusted), and two servers
may offer tools of the same name, so :func:`assign_names` gives every tool a name that is:

* valid for every provider (characters and length);
* unique within the set, never by leaving a tool out;
* readable: ``<server>__<tool>``, with each character outside the set replaced by ``_``;
* stable: a function of the set of tools alone (not of their order, the process or the
  Python version): a tool whose readable name is too long, or taken, gets a shortened
  readable name and ``_`` plus the start of the SHA-256 of its ``(server, tool)`` pair.

Who keeps the readable name when several tools would share one is decided by sorting:
a tool whose name needed no change first, then by ``(server, tool)``. Pure functions, no
I/O.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from typing import Dict, Iterator, List, Sequence, Tuple

__all__ = ["MAX_NAME_LENGTH", "NAME_PATTERN", "SEPARATOR", "assign_names"]

#: The longest function name OpenAI and Anthropic accept.
MAX_NAME_LENGTH = 64
#: What a valid name matches (both providers' rule).
NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}\Z")  # "$" would match before a final "\n"
#: Between the server's part and the tool's part of a name.
SEPARATOR = "__"

_INVALID = re.compile(r"[^a-zA-Z0-9_-]")
_HASH_WIDTHS = (8, 12, 16, 24, 32, 40)


def _sanitize(text: str) -> str:
    return _INVALID.sub("_", text)


def _digest(server: str, tool: str, occurrence: int) -> str:
    # surrogatepass: a name from JSON may hold a lone surrogate; it still hashes the same
    # way every time.
    data = f"{server}\x00{tool}\x00{occurrence}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


def _shorten(server: str, tool: str, budget: int) -> str:
    """``server__tool`` cut to ``budget`` characters, keeping some of each part."""
    room = budget - len(SEPARATOR)
    if len(server) + len(tool) <= room:
        return f"{server}{SEPARATOR}{tool}"
    server_keep = min(len(server), max(room // 3, room - len(tool)))
    tool_keep = min(len(tool), room - server_keep)
    return f"{server[:server_keep]}{SEPARATOR}{tool[:tool_keep]}"


def assign_names(tools: Sequence[Tuple[str, str]]) -> List[str]:
    """One provider-valid, unique, stable name for each ``(server, tool)`` pair, in order.

    The same pair listed twice (two clients of one server) gets two names: the first
    occurrence (in the order given) is treated as the original, the second as a copy.
    """
    seen: Dict[Tuple[str, str], int] = {}
    keys: List[Tuple[str, str, int]] = []
    for server, tool in tools:
        occurrence = seen.get((server, tool), 0)
        seen[(server, tool)] = occurrence + 1
        keys.append((server, tool, occurrence))

    readable = [f"{_sanitize(s)}{SEPARATOR}{_sanitize(t)}" for s, t, _ in keys]
    exact = [name == f"{s}{SEPARATOR}{t}" for name, (s, t, _) in zip(readable, keys)]
    order = sorted(range(len(keys)), key=lambda i: (not exact[i], keys[i]))

    names: List[str] = [""] * len(keys)
    taken: Dict[str, int] = {}
    for index in order:
        name = readable[index]
        if keys[index][2] == 0 and len(name) <= MAX_NAME_LENGTH and name not in taken:
            names[index] = name
            taken[name] = index
    for index in order:
        if names[index]:
            continue
        name = next(n for n in _hashed_names(*keys[index]) if n not in taken)
        names[index] = name
        taken[name] = index
    return names


def _hashed_names(server: str, tool: str, occurrence: int) -> Iterator[str]:
    """Shortened readable name plus a longer and longer digest; then a counter, so that
    even names crafted to match every digest width cannot leave a tool without one."""
    digest = _digest(server, tool, occurrence)
    for width in _HASH_WIDTHS:
        prefix = _shorten(_sanitize(server), _sanitize(tool), MAX_NAME_LENGTH - 1 - width)
        yield f"{prefix}_{digest[:width]}"
    for count in itertools.count(1):
        suffix = f"_{digest[:8]}_{count}"
        yield _shorten(_sanitize(server), _sanitize(tool), MAX_NAME_LENGTH - len(suffix)) + suffix
