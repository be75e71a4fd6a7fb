"""``mcp_sync._json``: the wire's JSON, one call into C each way, must say exactly what
``json.dumps(..., separators=(",", ":"), ensure_ascii=False)`` and ``json.loads`` say,
errors included (pure logic; the transports' own tests drive it over real pipes)."""

from __future__ import annotations

import json
from typing import Any, Dict, List

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_sync._json import decode_object, encode

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
