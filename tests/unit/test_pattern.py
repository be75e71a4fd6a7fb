"""The matcher that runs a server's ``pattern`` and ``patternProperties`` expressions
(``mcp_sync/_schema/pattern.py``): it answers what ``re.search`` answers (a property test over
generated expressions and texts), in work linear in the text, counted against a budget;
what it does not run goes to the ``regex`` package (measured first: no expression makes it
compile a million copies, nor a schema's expressions all together), or is refused without
it.
"""

from __future__ import annotations

import contextlib
import re
import signal
import sys
import threading
import time
from typing import Any, Iterator, List

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mcp_sync import ProtocolError
from mcp_sync._schema.pattern import (
    Budget,
    OverBudget,
    Unsupported,
    _Linear,
    compile_pattern,
)

# When hypothesis reports a failure, its pytest plugin touches a deprecated mypy_extensions
# name (see test_fuzz.py).
pytestmark = pytest.mark.filterwarnings(
    "ignore:mypy_extensions.TypedDict is deprecated:DeprecationWarning")

ALPHABET = "ab_-1 \n\u00e9"
ATOMS = ["a", "b", "1", "_", "-", " ", ".", r"\d", r"\w", r"\s", r"\D", r"\W", r"\S",
         "[ab]", "[^a]", "[a-c1]", r"[\d_]", "[-a]", "[]a]", r"\n", "\u00e9", r"\x61",
         r"\u00e9", r"\-", "{", "x{,", "^", "$", r"\b", r"\B", r"\A", r"\Z"]


@st.composite
def patterns(draw: Any, depth: int = 0) -> str:
    pieces = []
    for _ in range(draw(st.integers(0, 4))):
        choice = draw(st.integers(0, 9))
        if choice < 6 or depth >= 3:
            piece = draw(st.sampled_from(ATOMS))
        elif choice < 8:
            inner = draw(patterns(depth + 1))
            piece = f"({draw(st.sampled_from(['', '?:', '?P<g' + str(depth) + '>']))}{inner})"
        else:
            piece = f"(?:{draw(patterns(depth + 1))}|{draw(patterns(depth + 1))})"
        if piece not in ("^", "$", r"\b", r"\B", r"\A", r"\Z"):
            piece += draw(st.sampled_from(["", "", "*", "+", "?", "{2}", "{1,3}", "{,2}",
                                           "{2,}", "*?", "+?", "??", "{1,2}?"]))
        pieces.append(piece)
    if draw(st.booleans()) and pieces:
        return "|".join(pieces)
    return "".join(pieces)


class OracleTooSlow(Exception):
    pass


@contextlib.contextmanager
def cpu_bound(seconds: float) -> Iterator[None]:
    """Interrupt ``re`` itself past ``seconds`` of CPU: it checks for signals while it
    backtracks (but holds the GIL). A virtual-time timer: SIGALRM is pytest-timeout's."""

    def expire(signum: int, frame: Any) -> None:
        raise OracleTooSlow

    previous = signal.signal(signal.SIGVTALRM, expire)
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)


@settings(max_examples=600, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(patterns(), st.lists(st.text(ALPHABET, max_size=10), min_size=1, max_size=4))
def test_the_bounded_matcher_agrees_with_re_search(pattern: str, texts: List[str]) -> None:
    try:
        compiled = re.compile(pattern)
    except re.error:
        assume(False)
        return
    matcher = compile_pattern(pattern)
    if not isinstance(matcher, _Linear):  # all the syntax generated here is supported...
        with pytest.raises(Unsupported, match="compiling to more than"):
            _Linear(pattern)  # ...but nested counted repeats may pass the size bound
    for text in texts:
        try:
            with cpu_bound(0.5):
                expected = compiled.search(text) is not None
        except OracleTooSlow:  # re backtracking: the very case the matcher is for
            continue
        assert matcher.search(text, Budget(10**6)) is expected, (pattern, text)


def test_the_matcher_refuses_what_it_does_not_run_without_regex(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Lookaround and backreferences go to the regex package, with a timeout; without
    it such a pattern is refused (then the schema is), never given to ``re``."""
    for pattern in [r"^(?=.*\d)\w+$", r"(a)\1", "(?i)abc", "a{5000}"]:
        assert not isinstance(compile_pattern(pattern), _Linear)  # regex is installed here
        assert compile_pattern(pattern).search("abc1", Budget(10**6)) is (
            re.search(pattern, "abc1") is not None)
    monkeypatch.setitem(sys.modules, "regex", None)
    with pytest.raises(Unsupported, match="install the regex package"):
        compile_pattern(r"^(?=.*\d)\w+$")


def test_the_matchers_work_is_linear_and_counted() -> None:
    matcher = compile_pattern("^(a+)+$")
    for size in (10, 1000, 100_000):
        budget = Budget(10**9)
        assert matcher.search("a" * size + "!", budget) is False
        assert budget.spent < 20 * (size + 10)
    with pytest.raises(OverBudget, match="more than 1,000 steps"):
        matcher.search("a" * 5000, Budget(1000))


def test_each_new_state_set_is_charged_so_the_budget_stops_a_wide_repeat() -> None:
    """A character the cache has not seen costs a step of the automaton (one instruction
    per thread followed, 1,000 here), not the one step the text's length pays for. A text
    of distinct characters misses the cache at every one: uncharged, a 20,000-character
    check ran 18 s and never reached its budget. The first text is short enough that a
    walk uncharged ends in about a second (and raises nothing); the budget must stop it
    within one automaton step of its limit."""
    from mcp_sync import InvalidToolSchema
    from mcp_sync._schema.checker import OutputSchema, budget_for

    pattern = r"[\s\S]{1000}x"
    matcher = compile_pattern(pattern)
    assert isinstance(matcher, _Linear)
    distinct = "".join(chr(0x4E00 + index) for index in range(20_000))
    budget = Budget(50_000)
    with pytest.raises(OverBudget, match="more than 50,000 steps"):
        matcher.search(distinct[:2_000], budget)
    assert 50_000 < budget.spent <= 50_000 + len(matcher.program)
    # A server's schema, checked with the budget of a result of that size.
    schema = OutputSchema({"type": "string", "pattern": pattern}, "tool", "server")
    steps = budget_for(distinct)[1]
    assert steps < 200_000
    started = time.monotonic()
    with pytest.raises(InvalidToolSchema, match=f"takes more than {steps:,} steps"):
        schema.check(distinct)
    assert time.monotonic() - started < 5.0


def test_a_pattern_missing_from_the_walk_is_still_bounded() -> None:
    """Patterns are compiled while the schema is walked; one reached only by a check
    (none should be) is compiled then, with the same matcher."""
    from mcp_sync._schema.checker import OutputSchema

    schema = OutputSchema({"type": "string", "pattern": "^(a+)+$"}, "tool", "server")
    schema.matchers.clear()
    with pytest.raises(ProtocolError, match="does not match"):
        schema.check("a" * 10_000 + "!")
    assert isinstance(schema.matchers["^(a+)+$"], _Linear)


def test_the_regex_package_runs_the_rest_with_the_gil_released_and_a_timeout() -> None:
    matcher = compile_pattern(r"^(?=x?)(a|aa)+$")
    assert not isinstance(matcher, _Linear)
    ticks = [0]
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            ticks[0] += 1

    spinner = threading.Thread(target=spin, name="test-spinner")
    spinner.start()
    started, cpu = time.monotonic(), time.process_time()
    try:
        with pytest.raises(OverBudget, match=r"more than 1\.0 s of matching"):
            matcher.search("a" * 60 + "!", Budget(10**6))
    finally:
        stop.set()
        spinner.join(5)
    # regex's timeout counts the process's CPU time (C's clock()), every thread's: on a
    # loaded machine its second takes longer on the wall (3.5 s seen with 2 cores busy).
    assert time.process_time() - cpu < 2.0
    assert time.monotonic() - started < 20
    assert ticks[0] > 10_000  # the other thread ran meanwhile
    budget = Budget(10**6)
    assert matcher.search("a" * 60, budget) is True


def test_a_servers_expression_never_reaches_re_not_even_to_compile() -> None:
    """``re.compile`` takes seconds for a few thousand of the widest Unicode classes; the
    schema's check of its patterns is the bounded matcher's (broken syntax refused)."""
    from mcp_sync import InvalidToolSchema
    from mcp_sync._schema.checker import OutputSchema

    wide = "[\u0000-\U0010ffff]" * 2000
    started = time.monotonic()
    schema = OutputSchema({"type": "string", "pattern": wide}, "tool", "server")
    schema.check("x" * 2000)
    assert time.monotonic() - started < 2.0
    for broken, reason in [("(a", "invalid syntax: the expression ends too early"),
                           ("*a", "invalid syntax: nothing to repeat at 0"),
                           ("(?P<1>a)", "invalid syntax: a bad group name")]:
        with pytest.raises(InvalidToolSchema, match=re.escape(reason)):
            OutputSchema({"type": "string", "pattern": broken}, "tool", "server")


@pytest.mark.parametrize("pattern", [
    "a{200000}",
    "(?:a{1000}){1000}",
    "(?=a)(?:(?:a{100}){100}){100}",
    "(?=a)a{4294967294}",
    r"(a)\1{10000000}",
    # What could make a careless reading count too few: a class, an escaped or a
    # commented parenthesis, a braced escape, a flag group.
    "[(](?=a)(?:a{1000}){1000}",
    "[]](?=a)(?:a{1000}){1000}",
    r"\((?=a)(?:a{1000}){1000}",
    r"(?#(()(?=a)(?:a{1000}){1000}",
    r"\p{L}(?i)(?:a{1000}){1000}",
    r"(?i)\g{9999999}",
    "[[:alpha:]](?=a)(?:a{1000}){1000}",
])
def test_a_huge_repeat_is_refused_before_regex_compiles_it(pattern: str) -> None:
    """``regex`` builds every copy a counted repeat asks for when it compiles, in C holding
    the GIL: ``(?:a{1000}){1000}`` took it 0.6 to 4 s and 260 MB, ``a{10000000}`` 18 s and
    2.6 GB, ``a{4294967294}`` a MemoryError. An expression the automaton does not run is
    measured first, its repeats multiplied out, and refused past MAX_COPIES."""
    started = time.monotonic()
    with pytest.raises(Unsupported, match=r"repeats asking for more than 100,000 copies"):
        compile_pattern(pattern)
    assert time.monotonic() - started < 1.0


@pytest.mark.parametrize("pattern, reason", [
    (r"(?x)(?=a) a{10}", "verbose mode"),
    (r"(?=a)(?V1)[[a]--[b]]", "version 1 of the regex syntax"),
    ("(?=a)[ab", "invalid syntax: an unclosed class"),
])
def test_an_expression_that_cannot_be_measured_is_refused(pattern: str, reason: str) -> None:
    """Verbose mode (where "#" starts a comment and so may hide a parenthesis) and version 1
    of regex's syntax (nested classes) would have to be read otherwise to count copies;
    schemas (ECMA-262) have neither: refused. An unclosed class is broken syntax."""
    with pytest.raises(Unsupported, match=re.escape(reason)):
        compile_pattern(pattern)


def test_repeats_within_the_bound_still_go_to_regex() -> None:
    for pattern, text, expected in [("(?=a)a{20000}", "a" * 20_000, True),
                                    ("(?=a)(?:ab{3}){5000}", "abbb" * 4999, False),
                                    ("(?i)(?:A{100}){100}", "a" * 10_000, True)]:
        matcher = compile_pattern(pattern)
        assert not isinstance(matcher, _Linear)
        assert 10_000 <= matcher.size <= 100_000
        assert matcher.search(text, Budget(10**6)) is expected


def test_the_expressions_of_one_schema_are_bounded_in_all() -> None:
    """Each expression within its bound, many of them would not be: 9,000 distinct ones
    of 2,000 instructions took 15 s and 170 MB to compile, 1,000 for regex of 20,000
    copies each 13 s and 2.8 GB (regex also kept the last 500 in its own cache)."""
    from mcp_sync import InvalidToolSchema
    from mcp_sync._schema.checker import MAX_PATTERN_SIZE, OutputSchema

    linear = {f"[\\s\\S]{{1990}}{index}": {} for index in range(120)}
    copies = {f"(?=a)a{{{60_000 + index}}}": {} for index in range(4)}
    for patterns in (linear, copies):
        started = time.monotonic()
        with pytest.raises(InvalidToolSchema,
                           match=f"compile to more than {MAX_PATTERN_SIZE:,} instructions"):
            OutputSchema({"type": "object", "patternProperties": patterns}, "tool", "server")
        assert time.monotonic() - started < 5.0
    # Within the bound in all, the same expressions are fine.
    schema = OutputSchema({"type": "object", "patternProperties": dict(
        list(linear.items())[:50], **dict(list(copies.items())[:1]))}, "tool", "server")
    schema.check({"key": 1})
    assert sum(matcher.size for matcher in schema.matchers.values()) <= MAX_PATTERN_SIZE


def test_an_expression_for_regex_is_kept_out_of_its_process_wide_cache(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """regex keeps the last 500 expressions it compiled for the whole process, whatever
    schema they came from (each up to MAX_COPIES: 26 MB): the matcher asks it not to, and
    a server's expressions go when its schema goes."""
    import regex

    seen: List[Any] = []
    compile_for_real = regex.compile

    def compile_and_note(pattern: str, *args: Any, **kwargs: Any) -> Any:
        seen.append((pattern, kwargs))
        return compile_for_real(pattern, *args, **kwargs)

    monkeypatch.setattr(regex, "compile", compile_and_note)
    matcher = compile_pattern("(?=a)a{500}")
    assert not isinstance(matcher, _Linear)
    assert seen == [("(?=a)a{500}", {"cache_pattern": False})]
