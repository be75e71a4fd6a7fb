"""Regular expressions from a server's JSON schemas, run in bounded time.

``pattern`` and ``patternProperties`` come from the server. Python's ``re`` backtracks:
``^(a+)+$`` against 30 characters runs for minutes, in C, holding the GIL, so no other
thread of the process runs meanwhile and no timeout can stop it. This module answers the
question JSON Schema asks -- does ``re.search(pattern, text)`` find anything? -- without
backtracking: the expression becomes a small automaton (Thompson's construction) whose
states are followed all at once, one character at a time (the state sets reached are
cached, so each character usually costs one dictionary lookup). The work is linear in the
text: at most ``len(text) + 1`` steps plus the automaton's size for each new state set,
counted against the caller's :class:`Budget`; it runs as Python bytecode, so other
threads keep running meanwhile.

Supported (with the meaning ``re.search`` gives them, no flags): literals and escapes,
classes (``[a-z]``, ``[^...]``, ``\\d \\w \\s`` and their negations, Unicode as ``re``
has them), ``.``, groups (``(...)``, ``(?:...)``, ``(?P<name>...)``), alternation, the
quantifiers ``* + ? {m} {m,} {,n} {m,n}`` (greedy or lazy: both find a match when there
is one), and the anchors ``^ $ \\A \\Z \\b \\B``. Anything else -- lookaround,
backreferences, inline flags, atomic groups, possessive quantifiers, conditionals --
raises :class:`Unsupported`, as does an expression longer than :data:`MAX_PATTERN_LENGTH`,
nested deeper than :data:`MAX_NESTING` or whose automaton passes :data:`MAX_PROGRAM`.

For those, :func:`compile_pattern` uses the ``regex`` package (a dependency): it releases
the GIL while it matches and stops at a timeout, which :class:`Budget` bounds
(:data:`REGEX_SECONDS` for one check in all). Without it (installed without its
dependencies), such an expression is refused (:class:`Unsupported`).

The parser refuses what it does not know, broken syntax included (``re`` never sees a
server's expression, not even to compile it: a few wide Unicode classes take it seconds).
"""

from __future__ import annotations

import importlib
import re
import threading
import time
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Tuple, Union

__all__ = ["MAX_PATTERN_LENGTH", "Budget", "OverBudget", "Unsupported", "compile_pattern"]

#: The longest expression the matcher takes, in characters.
MAX_PATTERN_LENGTH = 10_000
#: How deep groups may nest.
MAX_NESTING = 50
#: The most instructions an expression may compile to (``{m,n}`` repeats its operand).
MAX_PROGRAM = 2_000
#: Wall-clock seconds the ``regex`` package may spend matching, per budget (one check).
REGEX_SECONDS = 1.0
# The cached transitions of one expression are dropped once their state sets hold this
# many instructions in all: memory stays bounded whatever the texts.
_CACHE_WEIGHT = 4_096


class Unsupported(Exception):
    """The expression uses something the bounded matcher does not run."""


class _Invalid(Unsupported):
    """The expression is not valid (``re`` would refuse it too)."""


class OverBudget(Exception):
    """A check spent its budget of steps (or of ``regex`` time)."""


class Budget:
    """Steps one check may take, all keywords and expressions together.

    Not thread-safe: one check, on one thread, owns it.
    """

    def __init__(self, steps: int, regex_seconds: float = REGEX_SECONDS) -> None:
        self.limit = steps
        self.left = steps
        self.regex_seconds = regex_seconds

    def spend(self, steps: int) -> None:
        self.left -= steps
        if self.left < 0:
            raise OverBudget(f"more than {self.limit:,} steps")

    @property
    def spent(self) -> int:
        return self.limit - self.left


# -- parsing -----------------------------------------------------------------------------

# Assertions, as bits of the context the automaton is given at each position.
_AT_START = 1  # ^ \A
_AT_END = 2  # \Z
_AT_END_OR_FINAL_NEWLINE = 4  # $ (without MULTILINE: the end, or before a final "\n")
_WORD_BOUNDARY = 8  # \b
_NOT_WORD_BOUNDARY = 16  # \B


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


# re's categories for str patterns: \d is a decimal digit, \w alphanumeric or "_",
# \s whitespace (Unicode, as str's own methods define them).
_CATEGORIES: Dict[str, Tuple[Callable[[str], bool], bool]] = {
    "d": (str.isdecimal, False), "D": (str.isdecimal, True),
    "w": (_is_word, False), "W": (_is_word, True),
    "s": (str.isspace, False), "S": (str.isspace, True),
}
_CONTROL_ESCAPES = {"a": "\a", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_HEX_DIGITS = {"x": 2, "u": 4, "U": 8}
_OCTAL = "01234567"
_DIGITS = frozenset("0123456789")
# re (before 3.14) finds no \B in an empty text, though no \w is around.
_B_MATCHES_EMPTY = re.search(r"\B", "") is not None


class _Class:
    """A set of characters: singles, ranges and categories, maybe negated."""

    __slots__ = ("categories", "negated", "ranges", "singles")

    def __init__(self, negated: bool = False) -> None:
        self.negated = negated
        self.singles: set[str] = set()
        self.ranges: List[Tuple[str, str]] = []
        self.categories: List[Tuple[Callable[[str], bool], bool]] = []

    def matches(self, ch: str) -> bool:
        found = ch in self.singles or any(lo <= ch <= hi for lo, hi in self.ranges) or any(
            test(ch) is not inverse for test, inverse in self.categories)
        return found is not self.negated


def _single(ch: str) -> _Class:
    cls = _Class()
    cls.singles.add(ch)
    return cls


def _category(letter: str) -> _Class:
    cls = _Class()
    cls.categories.append(_CATEGORIES[letter])
    return cls


_ANY_BUT_NEWLINE = _single("\n")
_ANY_BUT_NEWLINE.negated = True

# The parse tree: ("char", _Class), ("cat", [nodes]), ("alt", [nodes]),
# ("rep", node, min, max or None), ("assert", bit).
_Node = Tuple[Any, ...]


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.text = pattern
        self.pos = 0
        self.depth = 0
        self.assertions = 0

    def parse(self) -> _Node:
        node = self.alternation()
        if self.pos != len(self.text):  # an unbalanced ")": re would have refused it
            raise _Invalid(f"unexpected {self.text[self.pos]!r} at {self.pos}")
        return node

    def peek(self, ahead: int = 0) -> str:
        index = self.pos + ahead
        return self.text[index] if index < len(self.text) else ""

    def take(self) -> str:
        if self.pos >= len(self.text):
            raise _Invalid("the expression ends too early")
        ch = self.text[self.pos]
        self.pos += 1
        return ch

    def alternation(self) -> _Node:
        branches = [self.sequence()]
        while self.peek() == "|":
            self.pos += 1
            branches.append(self.sequence())
        return branches[0] if len(branches) == 1 else ("alt", branches)

    def sequence(self) -> _Node:
        items: List[_Node] = []
        while self.peek() not in ("", "|", ")"):
            items.append(self.quantified(self.atom()))
        return ("cat", items)

    def atom(self) -> _Node:
        ch = self.take()
        if ch in ("*", "+", "?") or (ch == "{" and self.counts(peek=True, at=self.pos - 1)):
            raise _Invalid(f"nothing to repeat at {self.pos - 1}")
        if ch == "(":
            return self.group()
        if ch == "[":
            return ("char", self.char_class())
        if ch == ".":
            return ("char", _ANY_BUT_NEWLINE)
        if ch == "^":
            return self.assertion(_AT_START)
        if ch == "$":
            return self.assertion(_AT_END_OR_FINAL_NEWLINE)
        if ch == "\\":
            return self.escape()
        return ("char", _single(ch))

    def assertion(self, bit: int) -> _Node:
        self.assertions |= bit
        return ("assert", bit)

    def group(self) -> _Node:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise Unsupported(f"groups nested deeper than {MAX_NESTING}")
        if self.peek() == "?":
            if self.peek(1) == ":":
                self.pos += 2
            elif self.peek(1) == "P" and self.peek(2) == "<":
                end = self.text.find(">", self.pos)
                if end < 0 or not self.text[self.pos + 3:end].isidentifier():
                    raise _Invalid(f"a bad group name at {self.pos}")
                self.pos = end + 1
            else:
                raise Unsupported(f"the construct {self.text[self.pos - 1:self.pos + 3]!r}")
        node = self.alternation()
        if self.take() != ")":
            raise _Invalid("an unclosed group")
        self.depth -= 1
        return node

    def quantified(self, node: _Node) -> _Node:
        ch = self.peek()
        if ch == "*":
            low, high = 0, None
            self.pos += 1
        elif ch == "+":
            low, high = 1, None
            self.pos += 1
        elif ch == "?":
            low, high = 0, 1
            self.pos += 1
        elif ch == "{":
            counts = self.counts()
            if counts is None:
                return node  # not a quantifier: "{" is a literal, read next
            low, high = counts
        else:
            return node
        if node[0] == "assert":
            raise _Invalid(f"nothing to repeat at {self.pos}")
        if self.peek() == "?":
            self.pos += 1  # lazy: the same answer to "is there a match"
        elif self.peek() == "+":
            raise Unsupported("a possessive quantifier")
        if self.peek() in ("*", "+", "?") or (self.peek() == "{" and self.counts(peek=True)):
            raise _Invalid("a repeated quantifier")
        return ("rep", node, low, high)

    def counts(self, peek: bool = False,
               at: Optional[int] = None) -> Optional[Tuple[int, Optional[int]]]:
        """``{m}``, ``{m,}``, ``{,n}``, ``{,}`` or ``{m,n}`` at the position (or ``at``),
        else None (then ``re`` reads the "{" as a literal)."""
        start = self.pos if at is None else at
        end = start + 1
        low_text = high_text = ""
        text = self.text
        while end < len(text) and text[end] in _DIGITS:
            low_text += text[end]
            end += 1
        comma = end < len(text) and text[end] == ","
        if comma:
            end += 1
            while end < len(text) and text[end] in _DIGITS:
                high_text += text[end]
                end += 1
        if end >= len(text) or text[end] != "}" or not (low_text or comma):
            return None
        if len(low_text) > 10 or len(high_text) > 10:
            raise Unsupported("a repeat count too large")
        low = int(low_text) if low_text else 0
        high: Optional[int] = int(high_text) if high_text else (None if comma else low)
        if high is not None and high < low:
            raise _Invalid("a repeat whose maximum is below its minimum")
        if not peek:
            self.pos = end + 1
        return low, high

    def code_point(self, letter: str) -> str:
        digits = self.text[self.pos:self.pos + _HEX_DIGITS[letter]]
        if len(digits) != _HEX_DIGITS[letter] or any(
                d not in "0123456789abcdefABCDEF" for d in digits):
            raise _Invalid(f"a malformed \\{letter} escape")
        self.pos += len(digits)
        value = int(digits, 16)
        if value > 0x10FFFF:
            raise Unsupported(f"a \\{letter} escape past U+10FFFF")
        return chr(value)

    def octal(self, first: str, most: int) -> str:
        digits = first
        while len(digits) < most and self.peek() and self.peek() in _OCTAL:
            digits += self.take()
        value = int(digits, 8)
        if value > 0o377:
            raise Unsupported("an octal escape past \\377")
        return chr(value)

    def escape(self) -> _Node:
        ch = self.take()
        if ch in _CATEGORIES:
            return ("char", _category(ch))
        if ch == "b":
            return self.assertion(_WORD_BOUNDARY)
        if ch == "B":
            return self.assertion(_NOT_WORD_BOUNDARY)
        if ch == "A":
            return self.assertion(_AT_START)
        if ch == "Z":
            return self.assertion(_AT_END)
        return ("char", _single(self.literal_escape(ch, in_class=False)))

    def literal_escape(self, ch: str, in_class: bool) -> str:
        if ch in _CONTROL_ESCAPES:
            return _CONTROL_ESCAPES[ch]
        if ch in _HEX_DIGITS:
            return self.code_point(ch)
        if ch == "0":
            return self.octal(ch, 3)
        if in_class and ch in _OCTAL:
            return self.octal(ch, 3)
        if ch.isascii() and ch.isalnum():  # backreferences, \N{...}, and what re refuses
            raise Unsupported(f"the escape \\{ch}")
        return ch

    def char_class(self) -> _Class:
        cls = _Class()
        if self.peek() == "^":
            cls.negated = True
            self.pos += 1
        first = True
        while True:
            ch = self.take()
            if ch == "]" and not first:
                return cls
            first = False
            item = self.class_item(ch)
            if isinstance(item, _Class):
                cls.categories.extend(item.categories)
                continue
            if self.peek() == "-" and self.peek(1) not in ("", "]"):
                self.pos += 1
                high = self.class_item(self.take())
                if isinstance(high, _Class) or high < item:
                    raise _Invalid("a bad range in a class")
                cls.ranges.append((item, high))
            else:
                cls.singles.add(item)

    def class_item(self, ch: str) -> Union[str, _Class]:
        if ch != "\\":
            return ch
        ch = self.take()
        if ch in _CATEGORIES:
            return _category(ch)
        if ch == "b":
            return "\b"
        return self.literal_escape(ch, in_class=True)


# -- the automaton ---------------------------------------------------------------------------

# Instructions: ("char", _Class) consumes a character; ("split", a, b) and ("jump", a)
# branch; ("assert", bit) goes on when the context has the bit; ("match",) ends.
_Op = Tuple[Any, ...]


class _Compiler:
    def __init__(self) -> None:
        self.program: List[_Op] = []

    def emit(self, op: _Op) -> int:
        if len(self.program) >= MAX_PROGRAM:
            raise Unsupported(f"an expression compiling to more than {MAX_PROGRAM} steps")
        self.program.append(op)
        return len(self.program) - 1

    def patch(self, at: int, op: _Op) -> None:
        self.program[at] = op

    def node(self, node: _Node) -> None:
        kind = node[0]
        if kind in ("char", "assert"):
            self.emit(node)
        elif kind == "cat":
            for item in node[1]:
                self.node(item)
        elif kind == "alt":
            jumps = []
            for branch in node[1][:-1]:
                split = self.emit(("split", 0, 0))
                self.node(branch)
                jumps.append(self.emit(("jump", 0)))
                self.patch(split, ("split", split + 1, len(self.program)))
            self.node(node[1][-1])
            for jump in jumps:
                self.patch(jump, ("jump", len(self.program)))
        else:
            _, item, low, high = node
            before = len(self.program)
            self.node(item)
            if len(self.program) == before:
                return  # an empty operand: any number of copies is empty too
            for _ in range(low - 1):
                self.node(item)
            if low == 0:
                del self.program[before:]
            if high is None:
                loop = self.emit(("split", 0, 0))
                self.node(item)
                self.emit(("jump", loop))
                self.patch(loop, ("split", loop + 1, len(self.program)))
            else:
                skips = []
                for _ in range(high - low):
                    skips.append(self.emit(("split", 0, 0)))
                    self.node(item)
                for skip in skips:
                    self.patch(skip, ("split", skip + 1, len(self.program)))


class _Cache:
    """Transitions found so far, by state and context, then by character: ``rows[state
    << 5 | context][ch] = (matched, next state)``; the states are interned frozensets of
    instruction indexes, reached by consuming a character (0 is the empty set)."""

    __slots__ = ("ids", "rows", "states", "weight")

    def __init__(self) -> None:
        self.rows: Dict[int, Dict[str, Tuple[bool, int]]] = {}
        self.states: List[FrozenSet[int]] = [frozenset()]
        self.ids: Dict[FrozenSet[int], int] = {frozenset(): 0}
        self.weight = 0

    def intern(self, state: FrozenSet[int]) -> int:
        found = self.ids.get(state)
        if found is None:
            found = len(self.states)
            self.states.append(state)
            self.ids[state] = found
            self.weight += len(state) + 1
        return found


class _Linear:
    """An expression compiled to an automaton, run without backtracking.

    Can be shared between threads: ``_lock`` guards adding to the cache and replacing it;
    lookups need no lock (a search goes on with the cache it started with).
    """

    def __init__(self, pattern: str) -> None:
        parser = _Parser(pattern)
        tree = parser.parse()
        compiler = _Compiler()
        compiler.node(tree)
        compiler.emit(("match",))
        self.program = compiler.program
        self.assertions = parser.assertions
        self._lock = threading.Lock()
        self._cache = _Cache()

    def _context(self, text: str, index: int) -> int:
        wanted = self.assertions
        context = 0
        size = len(text)
        if wanted & _AT_START and index == 0:
            context |= _AT_START
        if wanted & _AT_END and index == size:
            context |= _AT_END
        if wanted & _AT_END_OR_FINAL_NEWLINE and (
                index == size or (index == size - 1 and text[index] == "\n")):
            context |= _AT_END_OR_FINAL_NEWLINE
        if wanted & (_WORD_BOUNDARY | _NOT_WORD_BOUNDARY):
            before = index > 0 and _is_word(text[index - 1])
            after = index < size and _is_word(text[index])
            if before != after:
                context |= _WORD_BOUNDARY
            elif size or _B_MATCHES_EMPTY:
                context |= _NOT_WORD_BOUNDARY
        return context

    def _step(self, state: FrozenSet[int], context: int, ch: str,
              budget: Budget) -> Tuple[bool, FrozenSet[int]]:
        """Follow every thread from ``state`` through what consumes nothing, then over
        ``ch`` ("" at the end of the text)."""
        program = self.program
        # A new thread starts at every position: re.search finds a match anywhere.
        pending = [0, *state]
        seen = set()
        consuming = []
        matched = False
        while pending:
            pc = pending.pop()
            if pc in seen:
                continue
            seen.add(pc)
            op = program[pc]
            kind = op[0]
            if kind == "char":
                consuming.append(pc)
            elif kind == "split":
                pending.append(op[2])
                pending.append(op[1])
            elif kind == "jump":
                pending.append(op[1])
            elif kind == "assert":
                if context & op[1]:
                    pending.append(pc + 1)
            else:
                matched = True
        budget.spend(len(seen))
        if matched or not ch:
            return matched, frozenset()
        return False, frozenset(pc + 1 for pc in consuming if program[pc][1].matches(ch))

    def _miss(self, cache: _Cache, state: int, context: int, ch: str,
              budget: Budget) -> Tuple[Tuple[bool, int], _Cache]:
        matched, following = self._step(cache.states[state], context, ch, budget)
        with self._lock:
            if cache.weight <= _CACHE_WEIGHT:
                found = (matched, cache.intern(following))
                cache.rows.setdefault(state << 5 | context, {})[ch] = found
                cache.weight += 1
                return found, cache
            # Start afresh (this search too): memory stays bounded.
            if self._cache is cache:
                self._cache = _Cache()
            cache = self._cache
            return (matched, cache.intern(following)), cache

    def search(self, text: str, budget: Budget) -> bool:
        """Whether ``re.search(pattern, text)`` would find a match."""
        budget.spend(len(text) + 1)
        cache = self._cache
        assertions = self.assertions
        state = context = 0
        for index, ch in enumerate(text):
            if assertions:
                context = self._context(text, index)
            row = cache.rows.get(state << 5 | context)
            found = row.get(ch) if row is not None else None
            if found is None:
                found, cache = self._miss(cache, state, context, ch, budget)
            if found[0]:
                return True
            state = found[1]
        if assertions:
            context = self._context(text, len(text))
        return self._step(cache.states[state], context, "", budget)[0]


class _Backtracking:
    """An expression the ``regex`` package runs: the GIL released, with a timeout."""

    def __init__(self, compiled: Any) -> None:
        self.compiled = compiled

    def search(self, text: str, budget: Budget) -> bool:
        budget.spend(len(text) + 1)
        if budget.regex_seconds <= 0:
            raise OverBudget(f"more than {REGEX_SECONDS} s of matching")
        start = time.monotonic()
        try:
            found = self.compiled.search(text, timeout=budget.regex_seconds, concurrent=True)
        except TimeoutError:
            raise OverBudget(f"more than {REGEX_SECONDS} s of matching") from None
        finally:
            budget.regex_seconds -= time.monotonic() - start
        return found is not None


Matcher = Union[_Linear, _Backtracking]


def compile_pattern(pattern: str) -> Matcher:
    """A matcher for ``pattern`` (already accepted by ``re.compile``).

    Raises:
        Unsupported: the bounded matcher does not run it, and the ``regex`` package is
            not installed (or refuses it too).
    """
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise Unsupported(f"an expression longer than {MAX_PATTERN_LENGTH:,} characters")
    try:
        return _Linear(pattern)
    except Unsupported as exc:
        reason = exc
    try:
        regex = importlib.import_module("regex")  # untyped
    except ImportError:
        if isinstance(reason, _Invalid):
            raise Unsupported(f"invalid syntax: {reason}") from None
        raise Unsupported(f"{reason} (install the regex package to allow it)") from None
    try:
        compiled = regex.compile(pattern)
        compiled.search("", timeout=REGEX_SECONDS)  # an old regex has no timeout: not used
    except Exception:  # noqa: BLE001 - regex.error, a TypeError, a recursion in its parser
        raise Unsupported(f"invalid syntax: {reason}" if isinstance(reason, _Invalid)
                          else str(reason)) from None
    return _Backtracking(compiled)
