"""Unit tests of the bounds on a server's input schema and of dropping filled nulls.

* ``bounded_schema``: a value that is not an object, a schema nested deeper than 64 or
  larger than 256 KiB, or one whose type is not ``object`` is replaced by the open object
  schema with a note saying why (the bounds are exact: at the bound is accepted); an object
  schema without ``type`` or ``properties`` gets them; a ``$ref`` outside the schema is
  removed from its node (never fetched) and named, escaped and cut, in the note (three at
  most); the caller's schema is not changed.
* ``_depth`` counts the nesting of dicts and lists exactly, and stops at ``limit + 1``.
* ``drop_filled_nulls`` removes a ``null`` only where the original schema makes the
  property optional and not nullable, at any depth (objects, array items, local ``$ref``s,
  one-member ``allOf``, the ``anyOf``/``oneOf`` branch whose properties match the value's
  keys) up to the schema-depth bound; ``_takes_null`` says whether a schema takes
  ``null`` (True when unsure); ``_follow`` gives up (None) at 16 ``$ref``s in a row.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List

import pytest

from mcp_sync.toolbox._schemas import (
    MAX_REF_DEPTH,
    MAX_SCHEMA_BYTES,
    MAX_SCHEMA_DEPTH,
    OPEN_SCHEMA,
    _depth,
    _follow,
    _takes_null,
    _without_remote_refs,
    bounded_schema,
    clean_text,
    drop_filled_nulls,
    strict_schema,
)

OPTIONAL = {"type": "string"}            # optional and not nullable: a null is dropped
NULLABLE = {"type": ["string", "null"]}  # takes null: kept


def _open(note: str) -> Any:
    return ({"type": "object", "properties": {}, "additionalProperties": True}, note, True)


def _lists(levels: int) -> Any:
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


# -- bounded_schema ----------------------------------------------------------------------


def test_the_bounds_are_the_documented_numbers() -> None:
    assert (MAX_SCHEMA_DEPTH, MAX_SCHEMA_BYTES, MAX_REF_DEPTH) == (64, 256 * 1024, 16)
    assert OPEN_SCHEMA == {"type": "object", "properties": {}, "additionalProperties": True}


@pytest.mark.parametrize("value", [None, [], "object", 3, True])
def test_a_schema_that_is_not_an_object_is_replaced(value: Any) -> None:
    result = bounded_schema(value)
    assert result == _open("the input schema is not a JSON object")
    assert result[0] is not OPEN_SCHEMA  # a copy: the caller may change it


def test_depth_is_bounded_exactly_at_64() -> None:
    at_bound = {"type": "object", "properties": {}, "x": _lists(MAX_SCHEMA_DEPTH - 1)}
    assert _depth(at_bound, MAX_SCHEMA_DEPTH) == 64
    assert bounded_schema(at_bound) == (at_bound, None, False)
    past = {"type": "object", "properties": {}, "x": _lists(MAX_SCHEMA_DEPTH)}
    result = bounded_schema(past)
    assert result == _open("the input schema nests deeper than 64")
    assert result[0] is not OPEN_SCHEMA


def test_size_is_bounded_exactly_at_256_kib() -> None:
    empty = {"type": "object", "properties": {}, "description": ""}
    room = MAX_SCHEMA_BYTES - len(json.dumps(empty, separators=(",", ":")))
    at_bound = {**empty, "description": "x" * room}
    assert bounded_schema(at_bound) == (at_bound, None, False)
    past = {**empty, "description": "x" * (room + 1)}
    result = bounded_schema(past)
    assert result == _open(f"the input schema is {MAX_SCHEMA_BYTES + 1} bytes, over the "
                           f"bound of {MAX_SCHEMA_BYTES}")
    assert result[0] is not OPEN_SCHEMA


def test_a_value_json_cannot_write_is_measured_as_its_text() -> None:
    schema = {"type": "object", "properties": {}, "default": b"\x00" * 10}
    assert bounded_schema(schema) == (schema, None, False)
    big = {"type": "object", "properties": {}, "default": b"\x00" * MAX_SCHEMA_BYTES}
    assert bounded_schema(big)[2] is True


@pytest.mark.parametrize("kind", ["string", "array", ["object", "null"], ["string"], 3])
def test_a_schema_that_is_not_an_object_schema_is_replaced(kind: Any) -> None:
    result = bounded_schema({"type": kind, "properties": {}})
    assert result == _open(f"the input schema's type is {kind!r}, not 'object'")
    assert result[0] is not OPEN_SCHEMA


def test_a_long_type_is_cut_in_the_note() -> None:
    assert bounded_schema({"type": ["t" * 300], "properties": {}}) == _open(
        "the input schema's type is ['" + "t" * 98 + "\u2026 (304 characters in all), not "
        "'object'")


def test_type_and_properties_are_added_when_missing() -> None:
    assert bounded_schema({}) == ({"type": "object", "properties": {}}, None, False)
    props = {"a": {"type": "string"}}
    assert bounded_schema({"properties": props, "required": ["a"]}) == (
        {"type": "object", "properties": props, "required": ["a"]}, None, False)
    assert bounded_schema({"type": "object"}) == (
        {"type": "object", "properties": {}}, None, False)
    assert bounded_schema({"type": ["object"], "properties": props}) == (
        {"type": "object", "properties": props}, None, False)
    whole = {"type": "object", "properties": props, "additionalProperties": False}
    assert bounded_schema(whole) == (whole, None, False)


def test_remote_refs_are_left_open_and_named_in_the_note() -> None:
    schema: Dict[str, Any] = {"type": "object", "properties": {
        "a": {"$ref": "https://example.com/a.json", "description": "kept"},
        "b": {"type": "array", "items": [{"$ref": "b.json"}, {"$ref": "#/$defs/c"}]},
        "c": {"$ref": "c.json"}, "d": {"$ref": "d.json"}, "n": {"$ref": 5}},
        "$defs": {"c": {"type": "string"}}}
    before = json.dumps(schema)
    out, note, whole = bounded_schema(schema)
    assert whole is False
    assert out == {"type": "object", "properties": {
        "a": {"description": "kept"},
        "b": {"type": "array", "items": [{}, {"$ref": "#/$defs/c"}]},
        "c": {}, "d": {}, "n": {"$ref": 5}}, "$defs": {"c": {"type": "string"}}}
    assert note == ("a $ref outside the schema is never fetched; the value is left open: "
                    "'https://example.com/a.json', 'b.json', 'c.json'")
    assert json.dumps(schema) == before


def test_a_remote_ref_in_the_note_is_cleaned_and_cut() -> None:
    ref = "x\u200b" + "y" * 200
    note = bounded_schema({"type": "object", "properties": {"a": {"$ref": ref}}})[1]
    assert note == ("a $ref outside the schema is never fetched; the value is left open: "
                    + repr("x" + "y" * 98 + "\u2026"))


def test_without_remote_refs_reports_each_ref_in_order() -> None:
    found: List[str] = []
    node = [{"$ref": "one"}, {"k": {"$ref": "two", "title": "t"}}, "$ref", 1, None]
    assert _without_remote_refs(node, found) == [{}, {"k": {"title": "t"}}, "$ref", 1, None]
    assert found == ["one", "two"]
    local: List[str] = []
    assert _without_remote_refs({"$ref": "#"}, local) == {"$ref": "#"} and local == []


def test_clean_text_cuts_with_an_ellipsis() -> None:
    assert clean_text("abcd", 4) == "abcd"
    assert clean_text("abcde", 4) == "abc\u2026"
    assert clean_text("ab cde", 4) == "ab\u2026"
    assert clean_text("a\u200bbcd", 4) == "abcd"


# -- _depth ------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "depth"), [
    (5, 0), ("text", 0), (None, 0), ({}, 1), ([], 1), ({"a": 1}, 1), ({"a": {}}, 2),
    ({"a": {"b": []}}, 3), ([[[]], 1], 3), ([[], [[[]]]], 4), ([[[[]]], []], 4),
    ({"a": [1, {"b": 2}]}, 3),
])
def test_depth_counts_dicts_and_lists(value: Any, depth: int) -> None:
    assert _depth(value, 10) == depth


def test_depth_stops_one_past_the_limit() -> None:
    assert _depth(_lists(3), 2) == 3
    assert _depth(_lists(3), 3) == 3
    assert _depth(_lists(50), 2) == 3
    assert _depth(_lists(2), 2) == 2


# -- _follow and _takes_null -------------------------------------------------------------


def _chain(links: int) -> Dict[str, Any]:
    """A root whose ``#/$defs/r0`` ... ``r<links-1>`` each refer to the next; the last,
    ``r<links>``, is a string schema."""
    defs: Dict[str, Any] = {f"r{i}": {"$ref": f"#/$defs/r{i + 1}"} for i in range(links)}
    defs[f"r{links}"] = {"type": "string"}
    return {"$defs": defs}


def test_follow_gives_up_at_sixteen_refs_in_a_row() -> None:
    # the schema's own $ref and the chain's: 15 in all are followed, 16 are not
    root = _chain(MAX_REF_DEPTH - 2)
    assert _follow({"$ref": "#/$defs/r0"}, root, 0) == {"type": "string"}
    root = _chain(MAX_REF_DEPTH - 1)
    assert _follow({"$ref": "#/$defs/r0"}, root, 0) is None


def test_follow_takes_one_member_allof_and_nothing_else() -> None:
    root = {"$defs": {"s": {"type": "string"}}}
    assert _follow({"allOf": [{"$ref": "#/$defs/s"}]}, root, 0) == {"type": "string"}
    two = {"allOf": [{"type": "string"}, {"minLength": 1}]}
    assert _follow(two, root, 0) is two
    assert _follow({"allOf": {"type": "string"}}, root, 0) == {"allOf": {"type": "string"}}
    assert _follow({"$ref": 3}, root, 0) == {"$ref": 3}
    assert _follow({"$ref": "#/$defs/missing"}, root, 0) is None
    assert _follow({"$ref": "other.json"}, root, 0) is None
    assert _follow(True, root, 0) is True


def test_follow_stops_past_the_depth_bound() -> None:
    root = {"$defs": {"s": {"type": "string"}}}
    ref = {"$ref": "#/$defs/s"}
    assert _follow(ref, root, MAX_SCHEMA_DEPTH) == {"type": "string"}
    assert _follow(ref, root, MAX_SCHEMA_DEPTH + 1) is ref


@pytest.mark.parametrize(("schema", "takes"), [
    ({}, True), (True, True), ({"$ref": "#/nowhere"}, True), ({"description": "d"}, True),
    ({"const": None}, True), ({"const": 0}, False), ({"const": "null"}, False),
    ({"enum": [1, None]}, True), ({"enum": [1, "null"]}, False),
    ({"enum": "x", "type": "null"}, True), ({"enum": "x", "type": "string"}, False),
    ({"type": "null"}, True), ({"type": ["string", "null"]}, True),
    ({"type": "string"}, False), ({"type": ["string"]}, False), ({"type": "nullable"}, False),
    ({"anyOf": [{"type": "string"}, {"type": "null"}]}, True),
    ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, False),
    ({"oneOf": [{"type": "string"}, {"const": None}]}, True),
    ({"oneOf": [{"type": "string"}]}, False),
    ({"anyOf": [{"type": "string"}], "oneOf": [{"type": "null"}]}, False),
    ({"anyOf": "x", "type": "string"}, False),
    ({"$ref": "#/$defs/n"}, True), ({"$ref": "#/$defs/s"}, False),
    ({"allOf": [{"$ref": "#/$defs/s"}]}, False), ({"anyOf": [{"$ref": "#/$defs/s"}]}, False),
])
def test_takes_null(schema: Any, takes: bool) -> None:
    root = {"$defs": {"n": {"type": "null"}, "s": {"type": "string"}}}
    assert _takes_null(schema, root, 0) is takes


def test_takes_null_follows_a_branch_one_level_down() -> None:
    root = {"$defs": {"s": {"type": "string"}}}
    branch = {"anyOf": [{"$ref": "#/$defs/s"}]}
    assert _takes_null(branch, root, MAX_SCHEMA_DEPTH - 1) is False
    assert _takes_null(branch, root, MAX_SCHEMA_DEPTH) is True  # past the bound: unsure


@pytest.mark.parametrize("choices", [
    [{"type": "string"}, {"type": "null"}],
    [{"type": "string"}, {"type": ["integer", "null"]}],
    [{"type": "string"}, {"anyOf": [{"type": "integer"}, {"type": "null"}]}],
])
def test_an_optional_anyof_that_takes_null_gets_no_second_null(choices: Any) -> None:
    schema = {"type": "object", "properties": {"a": {"anyOf": choices}}}
    converted, reason = strict_schema(schema)
    assert reason is None and converted is not None
    assert len(converted["properties"]["a"]["anyOf"]) == len(choices)
    closed = {"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {
        "anyOf": [{"type": "integer"}, {"type": "null", "enum": [None]}]}]}}}
    assert len(strict_schema(closed)[0]["properties"]["a"]["anyOf"]) == 2  # type: ignore


def test_an_optional_anyof_that_cannot_be_null_gets_null_added() -> None:
    schema = {"type": "object", "properties": {"a": {"anyOf": [
        {"type": "string"}, {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
        {"type": ["string", "null"], "enum": ["x"]}]}}}
    converted = strict_schema(schema)[0]
    assert converted is not None
    assert converted["properties"]["a"]["anyOf"][-1] == {"type": "null"}
    assert len(converted["properties"]["a"]["anyOf"]) == 4


# -- drop_filled_nulls -------------------------------------------------------------------


def test_only_an_optional_property_that_cannot_be_null_loses_its_null() -> None:
    schema = {"type": "object", "required": ["req"], "properties": {
        "opt": OPTIONAL, "nul": NULLABLE, "req": OPTIONAL, "later": OPTIONAL}}
    value = {"opt": None, "nul": None, "req": None, "later": None, "extra": 5, "more": None}
    assert drop_filled_nulls(value, schema) == {"nul": None, "req": None, "extra": 5,
                                                "more": None}
    kept = {"opt": "x", "nul": "y", "req": "z", "later": ""}
    assert drop_filled_nulls(kept, schema) == kept


def test_required_that_is_not_a_list_requires_nothing() -> None:
    for required in ("x", {"x": True}):
        schema = {"type": "object", "required": required, "properties": {"x": OPTIONAL}}
        assert drop_filled_nulls({"x": None}, schema) == {}


def test_nulls_are_dropped_in_nested_objects_and_array_items() -> None:
    schema = {"type": "object", "properties": {
        "o": {"type": "object", "properties": {"x": OPTIONAL, "y": NULLABLE}},
        "l": {"type": "array", "items": {"type": "object", "properties": {"x": OPTIONAL}}},
        "t": {"type": "array", "items": [{"type": "object", "properties": {"x": OPTIONAL}}]},
        "p": {"type": "object", "properties": "x"}}}
    value = {"o": {"x": None, "y": None}, "l": [{"x": None}, {"x": "k"}, None],
             "t": [{"x": None}], "p": {"x": None}}
    assert drop_filled_nulls(value, schema) == {
        "o": {"y": None}, "l": [{}, {"x": "k"}, None], "t": [{"x": None}], "p": {"x": None}}


def test_refs_are_followed_from_the_schema_itself() -> None:
    schema = {"type": "object", "properties": {
        "o": {"$ref": "#/$defs/obj"}, "n": {"$ref": "#/$defs/nul"},
        "m": {"$ref": "#/$defs/missing"}, "a": {"allOf": [{"$ref": "#/$defs/obj"}]}},
        "$defs": {"obj": {"type": "object", "properties": {"x": OPTIONAL}},
                  "nul": {"type": "null"}}}
    value = {"o": {"x": None}, "n": None, "m": None, "a": {"x": None}}
    assert drop_filled_nulls(value, schema) == {"o": {}, "n": None, "m": None, "a": {}}
    # given another root, the refs resolve there
    other = {"$defs": {"obj": {"type": "object", "properties": {"x": NULLABLE}},
                       "nul": {"type": "string"}}}
    assert drop_filled_nulls(value, schema, other) == {"o": {"x": None}, "m": None,
                                                       "a": {"x": None}}


def test_refs_under_array_items_resolve_from_the_root() -> None:
    schema = {"type": "object", "properties": {"l": {"type": "array", "items": {
        "$ref": "#/$defs/obj"}}}, "$defs": {"obj": {"type": "object", "properties": {
            "x": OPTIONAL}}}}
    assert drop_filled_nulls({"l": [{"x": None}, {"x": "k"}]}, schema) == {
        "l": [{}, {"x": "k"}]}


def test_a_schema_that_is_not_an_object_changes_nothing() -> None:
    for schema in (True, None, [], "object"):
        assert drop_filled_nulls({"x": None}, schema) == {"x": None}
    assert drop_filled_nulls(None, {"type": "object", "properties": {}}) is None
    assert drop_filled_nulls([None], {"type": "array", "items": OPTIONAL}) == [None]


def test_the_branch_with_exactly_the_values_keys_is_chosen_first() -> None:
    wide = {"type": "object", "properties": {"a": NULLABLE, "b": OPTIONAL}}
    narrow = {"type": "object", "properties": {"a": OPTIONAL}}
    for keyword in ("anyOf", "oneOf"):
        schema = {keyword: [wide, narrow]}
        assert drop_filled_nulls({"a": None}, schema) == {}
        assert drop_filled_nulls({"a": None, "b": None}, schema) == {"a": None}
        assert drop_filled_nulls({"b": None}, schema) == {}
        assert drop_filled_nulls({"c": None}, schema) == {"c": None}
        assert drop_filled_nulls(["x"], schema) == ["x"]
    reffed = {"anyOf": [{"$ref": "#/$defs/n"}, "not a schema", {"properties": []}],
              "$defs": {"n": narrow}}
    assert drop_filled_nulls({"a": None}, reffed) == {}
    assert drop_filled_nulls({"a": None}, {"anyOf": "x", **narrow}) == {}
    # the chosen branch's $refs resolve in the whole schema
    inner = {"anyOf": [{"type": "object", "properties": {"o": {"$ref": "#/$defs/o"}}}],
             "$defs": {"o": narrow}}
    assert drop_filled_nulls({"o": {"a": None}}, inner) == {"o": {}}


def _nested(levels: int, leaf: Any) -> Dict[str, Any]:
    schema: Dict[str, Any] = leaf
    for _ in range(levels):
        schema = {"type": "object", "properties": {"n": schema}}
    return schema


def _value(levels: int) -> Any:
    value: Any = {"x": None}
    for _ in range(levels - 1):
        value = {"n": value}
    return value


def test_nulls_are_dropped_down_to_the_depth_bound() -> None:
    leaf = {"type": "object", "properties": {"x": OPTIONAL}}
    # the object holding "x" is at depth levels; each level adds one
    deep = _nested(MAX_SCHEMA_DEPTH, leaf)
    kept = drop_filled_nulls(_value(MAX_SCHEMA_DEPTH + 1), deep)
    inner = kept
    for _ in range(MAX_SCHEMA_DEPTH):
        inner = inner["n"]
    assert inner == {}
    past = _nested(MAX_SCHEMA_DEPTH + 1, leaf)
    kept = drop_filled_nulls(_value(MAX_SCHEMA_DEPTH + 2), past)
    inner = kept
    for _ in range(MAX_SCHEMA_DEPTH + 1):
        inner = inner["n"]
    assert inner == {"x": None}


def test_the_depth_argument_is_where_the_bound_starts() -> None:
    schema = {"type": "object", "properties": {"x": OPTIONAL}}
    assert drop_filled_nulls({"x": None}, schema, None, MAX_SCHEMA_DEPTH) == {}
    assert drop_filled_nulls({"x": None}, schema, None, MAX_SCHEMA_DEPTH + 1) == {"x": None}
    # a branch of anyOf is one level down: its $ref is followed up to the bound only
    branched = {"anyOf": [{"$ref": "#/$defs/o"}], "$defs": {"o": schema}}
    assert drop_filled_nulls({"x": None}, branched, None, MAX_SCHEMA_DEPTH - 1) == {}
    assert drop_filled_nulls({"x": None}, branched, None, MAX_SCHEMA_DEPTH) == {"x": None}
    # and a branch, like array items, is checked one level down
    inline = {"anyOf": [schema]}
    assert drop_filled_nulls({"x": None}, inline, None, MAX_SCHEMA_DEPTH - 1) == {}
    assert drop_filled_nulls({"x": None}, inline, None, MAX_SCHEMA_DEPTH) == {"x": None}
    array = {"type": "array", "items": schema}
    assert drop_filled_nulls([{"x": None}], array, None, MAX_SCHEMA_DEPTH - 1) == [{}]
    assert drop_filled_nulls([{"x": None}], array, None, MAX_SCHEMA_DEPTH) == [{"x": None}]
