"""``mcp_sync._util.jsonwire``: the wire's JSON, one call into C each way, must say exactly what
``json.dumps(..., separators=(",", ":"), ensure_ascii=False)`` and ``json.loads`` say,
errors included (pure logic; the transports' own tests drive it over real pipes)."""

from __future__ import annotations

import json
import threading
from typing import Any, Dict, List, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_sync._util.jsonwire import decode_line, decode_object, encode

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
OBJECTS = st.dictionaries(st.text(), JSON_VALUES, max_size=5)


@settings(max_examples=300, deadline=None)
@given(OBJECTS)
def test_encode_is_compact_json_dumps(value: Dict[str, Any]) -> None:
    assert encode(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@settings(max_examples=300, deadline=None)
@given(OBJECTS, st.sampled_from(["", "\n", "\r\n", " \t\n"]))
def test_decode_object_is_json_loads(value: Dict[str, Any], end: str) -> None:
    text = json.dumps(value) + end
    assert decode_object(text) == json.loads(text)


def test_encode_fails_as_json_does() -> None:
    circular: List[Any] = []
    circular.append(circular)
    with pytest.raises(ValueError, match="Circular reference detected"):
        encode({"a": circular})
    with pytest.raises(TypeError, match="not JSON serializable"):
        encode({"a": object()})
    # A failed encoding leaves nothing behind: the next one is judged afresh.
    shared: List[Any] = [1]
    assert encode({"a": shared, "b": shared}) == '{"a":[1],"b":[1]}'


class Named(str):
    """A str subclass: the encoder escapes it as a str all the same."""


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), st.sampled_from(["2.0", "1.0"]), st.builds(Named, st.text())),
       st.one_of(st.integers(), st.booleans(), st.text(), st.floats(allow_nan=False),
                 st.none()),
       st.one_of(st.text(), st.builds(Named, st.text()), st.integers()),
       st.one_of(JSON_VALUES, OBJECTS))
def test_a_request_is_encoded_as_json_dumps_would(version: Any, request_id: Any, method: Any,
                                                   params: Any) -> None:
    # The request's envelope is written by hand (encode's fast path): byte for byte what
    # json.dumps makes, whatever its id, method and params; other shapes are the encoder's.
    for message in ({"jsonrpc": version, "id": request_id, "method": method, "params": params},
                    {"jsonrpc": version, "method": method, "id": request_id, "params": params},
                    {"jsonrpc": version, "id": request_id, "method": method},
                    {"jsonrpc": version, "id": request_id, "method": method, "params": params,
                     "extra": 1}):
        assert encode(message) == json.dumps(message, separators=(",", ":"),
                                             ensure_ascii=False)


def test_a_request_fails_to_encode_as_json_dumps_does() -> None:
    circular: Dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    circular["params"] = {"arguments": circular}
    with pytest.raises(ValueError, match="Circular reference detected"):
        encode(circular)
    with pytest.raises(TypeError, match="Object of type object is not JSON serializable"):
        encode({"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"a": object()}})
    with pytest.raises(TypeError, match="Object of type object is not JSON serializable"):
        encode({"jsonrpc": "2.0", "id": 1, "method": object(), "params": {}})


def test_a_failed_encoding_leaves_no_mark_on_what_it_was_encoding() -> None:
    # It fails inside the dict and the list: a reused encoder that kept their marks
    # would take them for a circle the next time.
    value: Dict[str, Any] = {"a": [1, object()]}
    for _ in range(3):
        with pytest.raises(TypeError, match="not JSON serializable"):
            encode(value)
    value["a"].pop()
    assert encode(value) == '{"a":[1]}'


def test_threads_encoding_one_value_at_once_see_no_circle() -> None:
    both_inside = threading.Barrier(2, timeout=10)

    class Waiting(dict):  # type: ignore[type-arg]
        """A dict whose items the encoder asks for (Python code: the GIL may switch)."""

        def items(self) -> Any:
            both_inside.wait()  # each thread is inside the shared value, marked in
            return super().items()

    shared = {"inner": Waiting(x=1)}
    results: List[Any] = []

    def encode_shared() -> None:
        try:
            results.append(encode(shared))
        except Exception as exc:  # noqa: BLE001 - the assertion below reports it
            results.append(exc)

    threads = [threading.Thread(target=encode_shared) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert results == ['{"inner":{"x":1}}'] * 2


@pytest.mark.parametrize("text", ['{"a":1}x', '{"a":1}\n{"b":2}\n', '{"a":', '{"a":1}\x0b',
                                  '{"a" 1}', "{", '{"a":1}\u3000'])
def test_decode_object_fails_as_json_loads_does(text: str) -> None:
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    with pytest.raises(json.JSONDecodeError) as got:
        decode_object(text)
    assert str(got.value) == str(expected.value)


def test_decode_object_of_what_is_no_value() -> None:
    with pytest.raises(json.JSONDecodeError, match="Expecting value"):
        decode_object("]")


def _outcome(decode: Any, data: bytes) -> Tuple[str, str]:
    """What ``decode(data)`` gives: the value's repr (-0.0 is not 0.0, NaN is NaN), or the
    exception's type and message."""
    try:
        return ("value", repr(decode(data)))
    except (ValueError, RecursionError) as exc:
        return (type(exc).__name__, str(exc))


# Every encoding json.loads tells from bytes: BOM-less UTF-8/16/32 by where the NUL bytes
# are (UTF-16-LE and UTF-32-LE put one right after the "{"), and the BOM-marked ones.
WIRE_ENCODINGS = ["utf-8", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be", "utf-8-sig",
                  "utf-16", "utf-32"]


@settings(max_examples=300, deadline=None)
@given(OBJECTS, st.booleans(), st.sampled_from(["", "\n", "\r\n", " \t\n"]),
       st.sampled_from(WIRE_ENCODINGS))
def test_decode_line_is_json_loads(value: Dict[str, Any], ascii_only: bool, end: str,
                                   encoding: str) -> None:
    data = (json.dumps(value, ensure_ascii=ascii_only) + end).encode(encoding, "surrogatepass")
    assert _outcome(decode_line, data) == _outcome(json.loads, data)
    assert decode_line(data) == value


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=40) | st.binary(max_size=40).map(lambda rest: b"{" + rest)
       | st.tuples(OBJECTS, st.binary(max_size=4), st.integers(0, 60)).map(
           lambda spoiled: json.dumps(spoiled[0], ensure_ascii=False).encode()[:spoiled[2]]
           + spoiled[1]))
def test_decode_line_fails_as_json_loads_does_on_any_bytes(data: bytes) -> None:
    assert _outcome(decode_line, data) == _outcome(json.loads, data)


@pytest.mark.parametrize("data", [
    b'{"a" 1}', b'{"a":1}x', b'{"a":1}\n{"b":2}\n', b'{"a":', b"{", b'{"a": x}',  # not JSON
    b'{"a":"\xff"}', b'{"a":"\xc3', b'{\xe2\x82"}',  # not UTF-8
    b"", b" \r\n",  # nothing
    b"{\x00", b'{\x00"\x00}\x00', b'{\x00"a":1}',  # a NUL second byte: not UTF-8 text
    b'{"a":' + b"[" * 100_000,  # nested beyond the parser
], ids=["no-colon", "extra-data", "two-lines", "cut", "lone-brace", "bad-value",
        "invalid-utf8", "cut-utf8", "invalid-utf8-key", "empty", "whitespace", "nul-2-bytes",
        "utf16-cut", "nul-then-utf8", "too-deep"])
def test_decode_line_raises_what_json_loads_raises(data: bytes) -> None:
    expected = _outcome(json.loads, data)
    assert expected[0] != "value"
    assert _outcome(decode_line, data) == expected


def test_decode_line_lets_lone_surrogates_through_as_json_loads_does() -> None:
    data = b'{"a":"\xed\xa0\x80","b":"\\ud800"}\n'  # U+D800 as UTF-8 bytes, and escaped
    assert decode_line(data) == json.loads(data) == {"a": "\ud800", "b": "\ud800"}
