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
(:data:`REGEX_SECONDS` for one check in all). It does not release the GIL while it
compiles, and builds every copy a counted repeat asks for then: an expression asking for
more than :data:`MAX_COPIES` (its repeats multiplied out, read before ``regex`` sees it)
is refused. Without the package (installed without its dependencies), such an expression
is refused too (:class:`Unsupported`).

The parser refuses what it does not know, broken syntax included (``re`` never sees a
server's expression, not even to compile it: a few wide Unicode classes take it seconds).

Why hand-written, when libraries exist: ``bench/bench_patterns.py`` ran the tests' hostile
expressions through ``google-re2`` (1.1, with ``regex`` for what it refuses) and through
``regex`` alone with the timeout (2 busy cores; the figures are ranges over runs).

* ``google-re2`` is linear and fast, and releases the GIL while it matches (a thread
  asking for the GIL every half millisecond waited at most 17 ms through a 35 s search,
  as through a Python loop): a million a's against ``^(a+)+$`` take it 2-10 ms, this
  matcher 0.4-1 s, and ``a[ab]{20}c`` over a million random a's and b's 0.7 s, where
  this matcher meets a new state set at almost every character and the check runs out
  of budget (2-5.5 s, refused). But nothing counts its work and nothing stops it: once its DFA runs
  out of memory it falls back to an automaton that costs text times program, and
  ``[\\s\\S]{1000}x`` over a million distinct characters ran 35-81 s (the 64 MiB a message
  may hold, a quarter of an hour), where this matcher stops at the check's budget in
  2-9 s. Nor does it answer what ``re.search`` answers: ``\\d \\w \\s \\b`` are ASCII,
  ``$`` is the very end, ``{,2}`` is literal -- 198 of 3,000 expressions of the property
  test's grammar answered otherwise -- and it refuses ``\\Z``, ``\\u00e9`` and counts past
  1,000 (752 of the 3,000), which would then backtrack in ``regex``; a lone surrogate in
  a text raises ``UnicodeEncodeError``. Keeping ``re.search``'s meaning over it would
  take a parser of our own all the same, and a Unicode ``\\b`` or ``re``'s ``$`` cannot be
  written in its syntax.
* ``regex`` alone backtracks: ``^(a+)+$`` over a million a's and ``a+a+a+a+b`` over
  100,000 ran into the timeout (1.9-4.3 and 2.3-3.5 s: the check refused, where this
  matcher says "no match" in 0.4-1 and 0.02-0.05 s), and it compiles holding the GIL
  (``(?:a{1000}){1000}``: 0.6-4 s and 260 MB, hence :data:`MAX_COPIES`).

So the automaton stays, and ``regex`` runs only what it cannot.
"""

from __future__ import annotations

import importlib
import re
import threading
import time
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Tuple, Union

__all__ = ["MAX_COPIES", "MAX_PATTERN_LENGTH", "Budget", "Matcher", "OverBudget", "Unsupported",
           "compile_pattern"]

#: The longest expression the matcher takes, in characters.
MAX_PATTERN_LENGTH = 10_000
#: How deep groups may nest.
MAX_NESTING = 50
#: The most instructions an expression may compile to (``{m,n}`` repeats its operand).
MAX_PROGRAM = 2_000
#: Seconds the ``regex`` package may spend matching, per budget (one check). Its timeout
#: counts the process's CPU time (C's ``clock()``, every thread's), the budget the wall
#: clock's: on a loaded machine a timeout of one second can take three on the wall.
REGEX_SECONDS = 1.0
#: The most copies of its parts an expression given to the ``regex`` package may ask for,
#: its counted repeats multiplied out: ``regex`` builds each one when it compiles, in C
#: holding the GIL (``a{10000000}`` took it 18 s and 2.6 GB; 100,000 take 0.06 s, 26 MB).
MAX_COPIES = 100_000
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
        #: What it costs to hold: its instructions.
        self.size = len(self.program)
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

    def __init__(self, compiled: Any, copies: int) -> None:
        self.compiled = compiled
        #: What it costs to hold: the copies of its parts ``regex`` built (:func:`_copies`).
        self.size = copies

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


# Escapes whose braces hold a name or a code point, not a count: \p{L}, \N{...}, \x{263a}
# (not \g: \g{3} is "ggg").
_BRACED_ESCAPES = frozenset("pPNxuU")
# What such braces may hold to be passed over whole (nothing that opens or closes a group,
# a class or a count).
_BRACED_NAME = re.compile(r"\{[\w ^=:&.+-]*\}")
# A named set within a class, [:alpha:] or [:^digit:].
_NAMED_SET = re.compile(r"\[:\^?\w+:\]")
# The letters of an inline flag group, (?i) or (?s-m:...), in regex's syntax.
_FLAG_LETTERS = frozenset("abefiLmprsuwxV0123456789-")
# Past this many copies, counting more tells nothing (it keeps the numbers small).
_TOO_MANY = MAX_COPIES + 1


def _class_end(text: str, index: int) -> int:
    """Where the class opened just before ``index`` ends (past its "]"), read as regex
    reads one in its default syntax: a "]" first is a member, "[:name:]" a named set, any
    other "[" a member."""
    if text.startswith("^", index):
        index += 1
    if text.startswith("]", index):
        index += 1
    while index < len(text):
        ch = text[index]
        named = _NAMED_SET.match(text, index) if ch == "[" else None
        if ch == "\\":
            index += 2
        elif named:
            index = named.end()
        elif ch == "]":
            return index + 1
        else:
            index += 1
    raise _Invalid("an unclosed class")


def _count_at(reader: _Parser, index: int) -> Optional[int]:
    """How many times the count at ``index`` repeats what it follows, at most (``{m,}``
    as m + 1), or None when the "{" there starts no count."""
    counts = reader.counts(peek=True, at=index)
    if counts is None:
        return None
    low, high = counts
    return max(1, low + 1 if high is None else high)


def _copies(pattern: str) -> int:
    """How many copies of its parts ``pattern`` asks for once its counted repeats are
    multiplied out (``(?:a{1000}){1000}`` a million, and a little more), at most
    :data:`MAX_COPIES` + 1: what the ``regex`` package builds to compile it. Read in
    regex's syntax, with a bias to count more, never fewer: a class is one part, so is an
    escape, a group is what it holds, a count multiplies what it follows (``{m,}`` as
    m + 1), alternatives add up.

    Raises:
        Unsupported: the expression is not read so (verbose mode, where "#" starts a
            comment that may hide a parenthesis; version 1's nested classes), or it is
            broken (an unclosed class, group or comment).
    """
    reader = _Parser(pattern)
    text = pattern
    held = [0]  # the copies each open group holds so far, the whole expression first
    last = 0  # the copies of what a count here would repeat
    index = 0
    while index < len(text):
        ch = text[index]
        index += 1
        times = _count_at(reader, index - 1) if ch == "{" else None
        if ch == "\\":
            named = _BRACED_NAME.match(text, index + 1) if (
                text[index:index + 1] in _BRACED_ESCAPES) else None
            index = named.end() if named else index + 1
            last = 1
        elif ch == "[":
            index = _class_end(text, index)
            last = 1
        elif ch == "(" and text.startswith("?#", index):
            index += 1  # a comment: to the first ")" not escaped
            while index < len(text) and text[index] != ")":
                index += 2 if text[index] == "\\" else 1
            if index >= len(text):
                raise _Invalid("an unclosed comment")
            index += 1
            continue  # a count after it repeats what came before it
        elif ch == "(":
            letters = index + 1 if text.startswith("?", index) else index
            while letters < len(text) and text[letters] in _FLAG_LETTERS:
                letters += 1
            flags = text[index + 1:letters]
            if flags and text[letters:letters + 1] in (")", ":"):
                if "x" in flags:
                    raise Unsupported("verbose mode (the x flag)")
                if "V1" in flags:
                    raise Unsupported("version 1 of the regex syntax")
            held.append(0)
            last = 0
            continue
        elif ch == ")":
            if len(held) == 1:
                raise _Invalid(f"unexpected ')' at {index - 1}")
            last = held.pop()
            held[-1] = min(_TOO_MANY, held[-1] + last)
            continue
        elif times is not None:
            held[-1] = min(_TOO_MANY, held[-1] + last * (times - 1))  # once is counted
            last = min(_TOO_MANY, last * times)
            index = text.index("}", index) + 1
            continue
        elif ch in "*+?|^$":
            held[-1] = min(_TOO_MANY, held[-1] + 1)
            continue  # a quantifier, an anchor: what a count would repeat stays as it was
        else:
            last = 1
        held[-1] = min(_TOO_MANY, held[-1] + last)
    if len(held) > 1:
        raise _Invalid("an unclosed group")
    return held[0]


def compile_pattern(pattern: str) -> Matcher:
    """A matcher for ``pattern`` (already accepted by ``re.compile``).

    Raises:
        Unsupported: the bounded matcher does not run it, and the ``regex`` package is
            not installed, refuses it too, or would build more than :data:`MAX_COPIES`
            copies of its parts to compile it.
    """
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise Unsupported(f"an expression longer than {MAX_PATTERN_LENGTH:,} characters")
    try:
        return _Linear(pattern)
    except Unsupported as exc:
        reason = exc
    broken = isinstance(reason, _Invalid)
    try:
        copies = _copies(pattern)
    except Unsupported as exc:
        raise Unsupported(f"invalid syntax: {reason if broken else exc}"
                          if broken or isinstance(exc, _Invalid) else str(exc)) from None
    if copies > MAX_COPIES:
        raise Unsupported(f"invalid syntax: {reason}" if broken else
                          f"repeats asking for more than {MAX_COPIES:,} copies") from None
    try:
        regex = importlib.import_module("regex")  # untyped
    except ImportError:
        if broken:
            raise Unsupported(f"invalid syntax: {reason}") from None
        raise Unsupported(f"{reason} (install the regex package to allow it)") from None
    try:
        # Not kept in regex's own cache, which holds 500 expressions for the process:
        # a server's go when its schema goes.
        compiled = regex.compile(pattern, cache_pattern=False)
        compiled.search("", timeout=REGEX_SECONDS)  # an old regex has no timeout: not used
    except Exception:  # noqa: BLE001 - regex.error, a TypeError, a recursion in its parser
        raise Unsupported(f"invalid syntax: {reason}" if broken else str(reason)) from None
    return _Backtracking(compiled, copies)
