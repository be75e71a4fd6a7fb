"""Property tests (hypothesis) for where untrusted bytes enter the client: the message
classifier, the session's two delivery paths, the stdio JSONL framer, the SSE path, and
a tool's outputSchema with the results checked against it.

Arbitrary input, arbitrary chunk boundaries: nothing may raise (in the library it would
kill a reader or dispatch thread) and the parse may not depend on the chunking. The
targets and their properties are in ``tests/fuzz/targets.py``; the coverage-guided
``tests/fuzz/atheris_harness.py`` drives the same targets (see ``test_atheris_harness``).

``MCP_SYNC_FUZZ_EXAMPLES`` scales the examples per property (bench/reliability.py uses
it); ``MCP_SYNC_FUZZ_LOG`` names a file for the execution counts.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator, List

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_sync._protocol.messages import Kind, classify

from ..conftest import PY, ROOT
from ..fuzz.targets import (
    EXECUTIONS,
    check_classify,
    check_jsonl,
    check_output_schema,
    check_routing,
    check_sse,
    jsonl_reference,
    run_stdio_reader,
    sse_reference,
)

# When hypothesis reports a failure, its pytest plugin touches a deprecated mypy_extensions
# name; under filterwarnings=error that turned a clean failure report into INTERNALERROR.
pytestmark = pytest.mark.filterwarnings(
    "ignore:mypy_extensions.TypedDict is deprecated:DeprecationWarning")

EXAMPLES = int(os.environ.get("MCP_SYNC_FUZZ_EXAMPLES", "300"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture(scope="module", autouse=True)
def execution_log() -> Iterator[None]:
    yield
    path = os.environ.get("MCP_SYNC_FUZZ_LOG")
    if path:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(EXECUTIONS, f)


# -- strategies ------------------------------------------------------------------------------

# Ids that are right, look right, or are wrong in every way a server has got them wrong.
ids = st.one_of(st.sampled_from([1, 2, 3, 4, 0, -1, True, False, 1.0, 2.5, "1", "", None]),
                st.integers(), st.text(max_size=5), st.lists(st.integers(), max_size=2),
                st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                    st.text(max_size=10))
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12)
methods = st.one_of(st.sampled_from(["ping", "tools/call", "roots/list", "sampling/createMessage",
                                     "notifications/progress", "notifications/message",
                                     "notifications/cancelled", "elicitation/create"]),
                    st.text(max_size=12), st.integers(), st.none())


@st.composite
def rpc_like(draw: Any) -> Any:
    """A dict with JSON-RPC keys (some missing, some of the wrong type), or any JSON."""
    if draw(st.integers(0, 9)) == 0:
        return draw(json_values)
    message = {}
    for key, values in (("jsonrpc", st.sampled_from(["2.0", "1.0", 2])), ("id", ids),
                        ("method", methods), ("result", json_values),
                        ("error", st.one_of(st.fixed_dictionaries(
                            {"code": st.one_of(st.integers(), st.booleans(), st.text(max_size=3)),
                             "message": st.one_of(st.text(max_size=20), st.integers())},
                            optional={"data": json_values}), json_values)),
                        ("params", st.one_of(st.fixed_dictionaries(
                            {}, optional={"progressToken": ids, "progress": scalars,
                                          "requestId": ids, "level": st.text(max_size=8),
                                          "data": json_values}), json_values))):
        if draw(st.booleans()):
            message[key] = draw(values)
    return message


def jsonl_piece() -> Any:
    """One piece of a stdio stream: good lines, junk, and lines at the size limit."""
    good = rpc_like().map(lambda m: json.dumps(m).encode() + b"\n")
    return st.one_of(
        good, good, st.binary(max_size=40), st.just(b"\n"), st.just(b"\r\n"),
        st.just(b"[" * 3000 + b"]" * 3000 + b"\n"),  # nested past the parser's limit
        st.integers(55, 75).map(lambda n: b'"' + b"x" * (n - 2) + b'"\n'),  # around 64
        st.just(b'{"jsonrpc":"2.0","method":"x"}'),  # no newline: joined with the next
        st.just("é€\U0001f600\n".encode()), st.just(b"\xff\xfe\x00\n"),
        st.just(json.dumps([{"jsonrpc": "2.0", "method": "n"}, 5]).encode() + b"\n"),
    )


def sse_piece() -> Any:
    field_names = st.sampled_from([b"data", b"event", b"id", b"retry", b"", b"dat", b":"])
    line = st.builds(lambda name, sep, value, end: name + sep + value + end, field_names,
                     st.sampled_from([b":", b": ", b"", b"::"]),
                     st.one_of(st.binary(max_size=12), st.sampled_from(
                         [b"123", b"1x", b"", b"\x00", b"{\"jsonrpc\":\"2.0\",\"method\":\"n\"}"])),
                     st.sampled_from([b"\n", b"\r\n", b"\r", b""]))
    return st.one_of(line, line, line, st.sampled_from([b"\n", b"\r\n", b"\r", b"\xef\xbb\xbf",
                                                        b"\xef", b"\xbb\xbf"]),
                     st.binary(max_size=20))


cuts = st.lists(st.integers(0, 10_000), max_size=12)

# Hostile outputSchemas: references out of the schema, to nothing and to itself,
# backtracking, unsupported and huge patterns, invalid keywords, other dialects, nesting.
BACKTRACKS = "a" * 40 + "!"
references = st.sampled_from([
    "#", "#/$defs/a", "#/$defs/b", "#/$defs/missing", "#/properties/v", "#/enum/0", "#a",
    "#/allOf/0", "http://127.0.0.1:9/x.json", "file:///etc/passwd", "/dev/zero", "x.json",
    "https://json-schema.org/draft/2020-12/schema", "urn:x#/y", "http://[::1", "%zz", "",
])
expressions = st.sampled_from(["^(a+)+$", "(a|a)*!", "(a*)*b", "(?=a)", r"(a)\1", "a{3000}",
                               "^[a-z]+$", "", ".*", "(?P<x>a)", r"\bw", "^$", "(?i)A",
                               "^(a|aa)+$", "[", "a+a+a+a+b", r"^\w+([.-]?\w+)*@\w+$",
                               # regex would build a million copies to compile them
                               "(?:a{1000}){1000}", "(?=a)a{99999999}"])
dialects = st.sampled_from(["http://json-schema.org/draft-07/schema#",
                            "https://json-schema.org/draft/2020-12/schema",
                            "http://json-schema.org/draft-03/schema#",
                            "https://json-schema.org/draft/2019-09/schema", "junk"])
schema_leaves = st.one_of(st.booleans(), st.fixed_dictionaries({}, optional={
    "type": st.sampled_from(["object", "string", "integer", "array", ["string", "null"]] * 3
                            + [12]),
    "pattern": expressions, "$ref": references, "$dynamicRef": references,
    "minLength": st.integers(0, 3), "uniqueItems": st.booleans(),
    "enum": st.lists(json_values, max_size=3), "const": json_values,
    "$anchor": st.sampled_from(["a", "b", "a", "1bad"]), "$dynamicAnchor": st.just("a"),
    "$id": st.sampled_from(["http://x/y", "urn:a", "file:///etc/", "x.json", "#frag"]),
    "$schema": dialects}))
keys = st.sampled_from(["v", "a", BACKTRACKS, "$schema", "$ref"])
hostile_schemas = st.recursive(schema_leaves, lambda inner: st.fixed_dictionaries({}, optional={
    "allOf": st.lists(inner, min_size=1, max_size=3),
    "anyOf": st.lists(inner, min_size=1, max_size=2),
    "oneOf": st.lists(inner, min_size=1, max_size=2), "not": inner, "if": inner, "then": inner,
    "else": inner, "properties": st.dictionaries(keys, inner, max_size=3),
    "patternProperties": st.dictionaries(expressions, inner, max_size=2),
    "additionalProperties": inner, "unevaluatedProperties": inner, "items": inner,
    "prefixItems": st.lists(inner, max_size=2), "$defs": st.dictionaries(
        st.sampled_from(["a", "b"]), inner, max_size=2),
    "dependentSchemas": st.dictionaries(keys, inner, max_size=2), "contains": inner,
    "propertyNames": inner, "$ref": references, "$schema": dialects}), max_leaves=14)
results = st.one_of(json_values, st.dictionaries(keys, st.one_of(
    json_values, st.just(BACKTRACKS), st.lists(st.just({"a": 1}), max_size=3)), max_size=4))


# -- properties ------------------------------------------------------------------------------


@FUZZ
@given(json_values)
def test_classify_any_json_value(value: Any) -> None:
    check_classify(value)


@FUZZ
@given(rpc_like())
def test_classify_rpc_like_messages(message: Any) -> None:
    check_classify(message)


@FUZZ
@given(rpc_like())
def test_both_delivery_paths_route_alike_and_never_raise(message: Any) -> None:
    check_routing(message)


@FUZZ
@given(st.lists(jsonl_piece(), max_size=8).map(b"".join), cuts)
def test_jsonl_framer_any_bytes_any_chunks(data: bytes, where: List[int]) -> None:
    check_jsonl(data, where, limit=64)


@FUZZ
@given(st.binary(max_size=300), cuts, st.integers(1, 80))
def test_jsonl_framer_raw_bytes(data: bytes, where: List[int], limit: int) -> None:
    check_jsonl(data, where, limit=limit)


@FUZZ
@given(st.lists(sse_piece(), max_size=14).map(b"".join), cuts)
def test_sse_any_bytes_any_chunks(data: bytes, where: List[int]) -> None:
    check_sse(data, where)


@FUZZ
@given(st.binary(max_size=300), cuts, st.integers(1, 64))
def test_sse_raw_bytes(data: bytes, where: List[int], read_size: int) -> None:
    check_sse(data, where, read_size=read_size)


@FUZZ
@given(hostile_schemas, results)
def test_a_hostile_output_schema_raises_only_protocol_errors(schema: Any, result: Any) -> None:
    check_output_schema(schema, result)


def test_the_hostile_schemas_reach_every_outcome() -> None:
    """The strategy is no straw man: hand-picked members of it pass, mismatch and are
    refused, references out of the schema and backtracking patterns included."""
    assert check_output_schema({"properties": {"v": {"type": "integer"}}}, {"v": 1}) is None
    assert check_output_schema({"properties": {"v": {"pattern": "^(a+)+$"}}},
                               {"v": BACKTRACKS}) == "ProtocolError"
    for schema in ({"$ref": "file:///etc/passwd"}, {"$ref": "#"}, {"type": 12},
                   {"allOf": [{"$schema": "http://json-schema.org/draft-07/schema#"}]}):
        assert check_output_schema(schema, {}) == "InvalidToolSchema", schema


# -- the references themselves, on cases worked out by hand -----------------------------------


def test_the_references_on_known_streams() -> None:
    data = (b'{"a":1}\n\n  \n[{"b":2},3]\nnot json\n' + b'"' + b"y" * 70 + b'"\n'
            + b'{"tail":true}')
    assert jsonl_reference(data, 64) == [{"a": 1}, {"b": 2}, 3, {"tail": True}]
    messages, closes = run_stdio_reader([data[:5], data[5:9], data[9:]], 64)
    assert messages == [{"a": 1}, {"b": 2}, 3, {"tail": True}] and len(closes) == 1
    events, last_id, retry = sse_reference(
        b"\xef\xbb\xbfdata: a\r\ndata:b\rid: 7\n\n: c\nevent: e\nretry: 50\ndata\n\nid\n\n"
        b"data: unfinished")
    # The second event has an empty data field only: not dispatched (nor the third, "id").
    assert [(e.data, e.event, e.id, e.retry) for e in events] == [("a\nb", "message", "7", None)]
    assert (last_id, retry) == ("", 50)
    # An ID counts once its event is dispatched: not the ID of an event cut short.
    assert sse_reference(b"id: 1\ndata:\n\nid: 2\ndata: cut")[1:] == ("1", None)
    assert classify({"jsonrpc": "2.0", "id": 1.0, "result": {}}) is Kind.INVALID


def test_a_progress_token_of_any_shape_is_routed_safely() -> None:
    """Found while writing the routing property: an unhashable progress token raised
    ``TypeError`` in the dispatch thread (logged there as an error, not skipped), and
    ``true`` or ``1.0`` counted as progress for request 1."""
    for token in ({"a": 1}, [1], True, 1.0, "1", None):
        check_routing({"jsonrpc": "2.0", "method": "notifications/progress",
                       "params": {"progressToken": token, "progress": 1}})


# -- atheris -----------------------------------------------------------------------------------


def test_atheris_harness_runs_clean(tmp_path: Path) -> None:
    """The coverage-guided harness, each target for a bounded time
    (``MCP_SYNC_ATHERIS_SECONDS``, default 10). atheris is a test dependency (pyproject.toml)
    with wheels for Linux x86_64 (CPython 3.9-3.13): there it is required, never skipped.
    Elsewhere it would need clang and libFuzzer to build, so the test says so and skips."""
    if not (sys.platform == "linux" and platform.machine() == "x86_64"):
        pytest.skip("atheris has no wheel for this platform (see pyproject.toml)")
    assert importlib.util.find_spec("atheris") is not None, (
        "atheris is missing: pip install '.[test]'")
    seconds = int(os.environ.get("MCP_SYNC_ATHERIS_SECONDS", "10"))
    harness = ROOT / "tests" / "fuzz" / "atheris_harness.py"
    runs = {}
    for target in ("routing", "jsonl", "sse", "schema"):
        result = subprocess.run(
            [PY, str(harness), target, f"-max_total_time={seconds}", "-rss_limit_mb=2048",
             f"-artifact_prefix={tmp_path}/"],
            capture_output=True, text=True, timeout=seconds + 120, cwd=str(ROOT))
        assert result.returncode == 0, result.stderr[-3000:]
        done = re.search(r"Done (\d+) runs", result.stderr)
        assert done, result.stderr[-2000:]
        runs[target] = int(done.group(1))
        assert runs[target] > 1000, runs
    path = os.environ.get("MCP_SYNC_ATHERIS_LOG")
    if path:
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"seconds_per_target": seconds, "runs": runs}, f)
