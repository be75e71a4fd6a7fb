"""Unit tests of the conversion to OpenAI's strict subset (``strict_schema``), part by part.

* Each refusal has its own reason, naming the place (``arguments.a``, ``arguments.a[]``,
  ``arguments.a|anyOf[1]``); a server's value in a reason is escaped and cut at 100.
* Every bound is exact: 16 ``$ref``s in a row, 10 levels of objects or arrays, 5,000
  properties, 1,000 enum values, 120,000 characters of names and enum strings, 20,000
  nodes once references are inlined; one more is refused.
* References: ``#`` is the root, ``~1`` and ``~0`` are unescaped, an array member is
  reached by its index, a reference's annotations are kept over its target's, ``true``
  and ``false`` as targets, one-member ``allOf`` inlined with its annotations.
* What is kept: ``pattern`` and the strict formats for strings, the numeric bounds for
  numbers and integers, ``minItems``/``maxItems`` for arrays, a description cleaned and
  cut at 1,024; the type given or read from an enum or from ``properties``.
* An optional property is made nullable: ``null`` added to its type (once), to its enum
  (once) or as a last ``anyOf`` branch; a required one is left as it is.
* A schema nesting past the recursion limit is refused with a reason, not an exception.
"""

from __future__ import annotations

from typing import Any, Dict, List

import pytest

from mcp_sync.toolbox._schemas import (
    MAX_REF_DEPTH,
    MAX_STRICT_NODES,
    STRICT_MAX_ENUM_VALUES,
    STRICT_MAX_NESTING,
    STRICT_MAX_PROPERTIES,
    STRICT_MAX_STRING_LENGTH,
    bounded_schema,
    strict_schema,
)

from .._stack import recursion_limit


def _object(required: Any = (), **properties: Any) -> Dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required)}


def _converted(schema: Dict[str, Any]) -> Dict[str, Any]:
    converted, reason = strict_schema(schema)
    assert reason is None and converted is not None, reason
    return converted


def _property(schema: Dict[str, Any], defs: Any = None) -> Dict[str, Any]:
    """The conversion of ``schema`` as a required property ``a``."""
    root = _object(["a"], a=schema)
    if defs is not None:
        root["$defs"] = defs
    converted: Dict[str, Any] = _converted(root)["properties"]["a"]
    return converted


def _refused(schema: Dict[str, Any]) -> str:
    converted, reason = strict_schema(schema)
    assert converted is None and reason is not None
    return reason


# -- refusals ---------------------------------------------------------------------------

LONG = "x" * 150


@pytest.mark.parametrize(("schema", "reason"), [
    (_object(a={"$ref": "other.json#/a"}),
     "a $ref outside the schema ('other.json#/a') is never fetched"),
    (_object(a={"$ref": LONG}), "a $ref outside the schema ('" + "x" * 99
     + "\u2026 (152 characters in all)) is never fetched"),
    (_object(a={"$ref": "#"}), "arguments.a.a: the $ref '#' is recursive"),
    (_object(a={"$ref": 5}), "arguments.a: $ref is not a string"),
    ({**_object(a={"$ref": "#/$defs/A", "minLength": 1, "title": "t"}),
      "$defs": {"A": {"type": "string"}}},
     "arguments.a: a $ref beside constraints (['minLength', 'title'])"),
    ({**_object(a={"$ref": "#/$defs/T"}), "$defs": {"T": True}}, "arguments.a has no type"),
    ({**_object(a={"$ref": "#/$defs/T"}), "$defs": {"T": False}},
     "arguments.a: the $ref '#/$defs/T' is not a schema"),
    ({**_object(a={"$ref": "#/$defs/T"}), "$defs": {"T": 5}},
     "arguments.a: the $ref '#/$defs/T' is not a schema"),
    ({**_object(a={"$ref": "#/$defs/L/2"}), "$defs": {"L": [{}, {}]}},
     "the $ref '#/$defs/L/2' points at nothing"),
    ({**_object(a={"$ref": "#/$defs/L/x"}), "$defs": {"L": [{}]}},
     "the $ref '#/$defs/L/x' points at nothing"),
    ({**_object(a={"$ref": "#/$defs/S/x"}), "$defs": {"S": "text"}},
     "the $ref '#/$defs/S/x' points at nothing"),
    (_object(a={"$ref": "#/" + LONG}), "the $ref '#/" + "x" * 97
     + "\u2026 (154 characters in all) points at nothing"),
    ({**_object(a={"$ref": "#/$defs/" + "r" * 120}),
      "$defs": {"r" * 120: {"$ref": "#/$defs/" + "r" * 120}}},
     "arguments.a: the $ref '#/$defs/" + "r" * 91 + "\u2026 (130 characters in all) is "
     "recursive"),
    (_object(a={"allOf": {"type": "string"}}), "arguments.a: allOf of several schemas"),
    (_object(a={"allOf": [True]}), "arguments.a: allOf of several schemas"),
    (_object(a={"allOf": [{"type": "string"}], "minLength": 2}),
     "arguments.a: allOf of several schemas"),
    (_object(a=True), "arguments.a takes a value of any type"),
    (_object(a={}), "arguments.a takes a value of any type"),
    (_object(a=5), "arguments.a is not a schema"),
    (_object(a={"$dynamicRef": "#x"}), "arguments.a: $dynamicRef"),
    (_object(a={"$recursiveRef": "#"}), "arguments.a: $recursiveRef"),
    (_object(a={"type": "string", "patternProperties": {}}),
     "arguments.a: patternProperties (property names by pattern)"),
    (_object(a={"anyOf": []}), "arguments.a: an empty anyOf"),
    (_object(a={"anyOf": {}}), "arguments.a: an empty anyOf"),
    (_object(a={"anyOf": [{"type": "string"}], "type": "string", "minLength": 1}),
     "arguments.a: anyOf beside ['minLength', 'type']"),
    (_object(a={"oneOf": [{"type": "string"}, {}]}),
     "arguments.a|anyOf[1] takes a value of any type"),
    (_object(a={"minLength": 1}), "arguments.a has no type"),
    (_object(a={"type": "text"}), "arguments.a: unknown type 'text'"),
    (_object(a={"type": []}), "arguments.a: unknown type []"),
    (_object(a={"type": ["string", "text"]}), "arguments.a: unknown type ['string', 'text']"),
    (_object(a={"type": {"x": 1}}), "arguments.a: unknown type {'x': 1}"),
    (_object(a={"type": ["t" * 300]}), "arguments.a: unknown type ['" + "t" * 98
     + "\u2026 (304 characters in all)"),
    (_object(a={"enum": []}), "arguments.a: an empty enum"),
    (_object(a={"enum": "abc"}), "arguments.a: an empty enum"),
    (_object(a={"enum": [1, [2]]}), "arguments.a: an enum of objects or arrays"),
    (_object(a={"const": {"k": 1}}), "arguments.a: an enum of objects or arrays"),
    (_object(a={"type": "array", "items": [{"type": "string"}]}),
     "arguments.a: a tuple (items as a list)"),
    (_object(a={"type": "array"}), "arguments.a: an array of values of any type"),
    (_object(a={"type": "array", "items": {}}), "arguments.a[] takes a value of any type"),
    (_object(a={"type": "object", "properties": ["x"]}),
     "arguments.a: properties is not an object"),
    (_object(a={"type": "object"}), "arguments.a: an object with no declared properties"),
    (_object(a={"type": "object", "properties": {}, "additionalProperties": True}),
     "arguments.a: an object that takes other properties"),
    ({**_object(a={"type": "string"}), "required": "a"}, "arguments: required is not a list"),
    (_object(**{"b\u202e.c": {}}), "arguments.b.c takes a value of any type"),
    (_object(**{"p" * 100: {}}), "arguments." + "p" * 59 + "\u2026 takes a value of any type"),
    ({**_object(a={"type": "array", "items": {"$ref": "#/$defs/A"}}),
      "$defs": {"A": {"type": "array", "items": {"$ref": "#/$defs/A"}}}},
     "arguments.a[][]: the $ref '#/$defs/A' is recursive"),
    ({"type": "string"}, "the root is not a plain object schema"),
    ({"type": ["object", "null"], "properties": {}}, "the root is not a plain object schema"),
])
def test_a_schema_that_cannot_be_strict_says_where_and_why(schema: Dict[str, Any],
                                                           reason: str) -> None:
    assert _refused(schema) == reason


# -- the bounds, exactly ----------------------------------------------------------------


def test_refs_in_a_row_are_bounded_exactly() -> None:
    def chain(refs: int) -> Dict[str, Any]:
        """Property ``a`` reached through ``refs`` references in a row."""
        defs: Dict[str, Any] = {f"d{refs - 1}": {"type": "string"}}
        for index in range(refs - 1):
            defs[f"d{index}"] = {"$ref": f"#/$defs/d{index + 1}"}
        return {**_object(["a"], a={"$ref": "#/$defs/d0"}), "$defs": defs}

    assert _converted(chain(MAX_REF_DEPTH))["properties"]["a"] == {"type": "string"}
    assert _refused(chain(MAX_REF_DEPTH + 1)) == "arguments.a: $refs nest deeper than 16"


def test_nesting_is_bounded_exactly_for_objects_and_arrays() -> None:
    objects: Dict[str, Any] = {"type": "string"}
    for _ in range(STRICT_MAX_NESTING):
        objects = _object(["n"], n=objects)
    _converted(objects)
    assert _refused(_object(["n"], n=objects)) == (
        "arguments" + ".n" * STRICT_MAX_NESTING + ": nests deeper than 10 levels")
    arrays: Dict[str, Any] = {"type": "string"}
    for _ in range(STRICT_MAX_NESTING - 1):  # the property holding them is one level
        arrays = {"type": "array", "items": arrays}
    _converted(_object(["a"], a=arrays))
    assert _refused(_object(["a"], a={"type": "array", "items": arrays})) == (
        "arguments.a" + "[]" * (STRICT_MAX_NESTING - 1) + ": nests deeper than 10 levels")


def test_properties_are_bounded_exactly_across_the_schema() -> None:
    def with_properties(count: int, **more: Any) -> Dict[str, Any]:
        return _object(**{f"p{index}": {"type": "string"} for index in range(count)}, **more)

    assert len(_converted(with_properties(STRICT_MAX_PROPERTIES))["required"]) == 5000
    assert _refused(with_properties(STRICT_MAX_PROPERTIES + 1)) == "more than 5000 properties"
    # the root's 2,500 (its object property among them) and the object's 2,500, then 2,501
    _converted(with_properties(2499, o=with_properties(2500)))
    assert _refused(with_properties(2499, o=with_properties(2501))) == (
        "more than 5000 properties")


def test_enum_values_are_bounded_exactly_across_the_schema() -> None:
    half = STRICT_MAX_ENUM_VALUES // 2
    _converted(_object(a={"enum": list(range(half))}, b={"enum": list(range(half))}))
    assert _refused(_object(a={"enum": list(range(half))}, b={"enum": list(range(half + 1))})
                    ) == "more than 1000 enum values"
    assert _refused(_object(a={"enum": list(range(STRICT_MAX_ENUM_VALUES)), "const": 1},
                            b={"const": 2}, c={"enum": list(range(999))})) == (
        "more than 1000 enum values")


def test_names_and_enum_strings_are_bounded_exactly_together() -> None:
    room = STRICT_MAX_STRING_LENGTH - len("a")  # the property's own name counts
    _converted(_object(a={"enum": ["x" * (room - 2), "yy"]}))
    assert _refused(_object(a={"enum": ["x" * (room - 2), "yyy"]})) == (
        "property names and enum values pass 120000 characters")
    _converted(_object(**{"n" * STRICT_MAX_STRING_LENGTH: {"type": "string"}}))
    assert _refused(_object(**{"n" * (STRICT_MAX_STRING_LENGTH + 1): {"type": "string"}})) == (
        "property names and enum values pass 120000 characters")


def test_nodes_are_bounded_exactly() -> None:
    # the root, the property and its branches
    choices: List[Any] = [{"type": "string"}] * (MAX_STRICT_NODES - 2)
    assert len(_property({"anyOf": choices})["anyOf"]) == MAX_STRICT_NODES - 2
    assert _refused(_object(a={"anyOf": [*choices, {"type": "string"}]})) == (
        "more than 20000 schema nodes once $refs are inlined")


# -- references -------------------------------------------------------------------------


def test_references_resolve_escapes_indexes_and_keep_their_own_annotations() -> None:
    defs = {"a/b": {"type": "string", "description": "slash"},
            "c~d": {"type": "integer", "description": "tilde"},
            "list": [{"type": "boolean"}, {"type": "number"}]}
    assert _property({"$ref": "#/$defs/a~1b"}, defs) == {"description": "slash",
                                                         "type": "string"}
    assert _property({"$ref": "#/$defs/c~0d", "description": "own"}, defs) == {
        "description": "own", "type": "integer"}
    assert _property({"$ref": "#/$defs/list/1"}, defs) == {"type": "number"}
    assert _property({"$ref": "#/$defs/list/0", "title": "kept out"}, defs) == {
        "type": "boolean"}


def test_references_are_followed_under_items_and_anyof_branches() -> None:
    defs = {"S": {"type": "string"}, "O": _object(["x"], x={"$ref": "#/$defs/S"})}
    assert _property({"type": "array", "items": {"$ref": "#/$defs/O"}}, defs) == {
        "type": "array", "items": {"type": "object", "properties": {"x": {"type": "string"}},
                                   "required": ["x"], "additionalProperties": False}}
    assert _property({"anyOf": [{"$ref": "#/$defs/S"}, {"type": "array", "items": {
        "$ref": "#/$defs/S"}}]}, defs) == {"anyOf": [
            {"type": "string"}, {"type": "array", "items": {"type": "string"}}]}


def test_a_one_member_allof_is_inlined_with_its_annotations() -> None:
    assert _property({"allOf": [{"type": "string", "description": "inner"}],
                      "description": "outer"}) == {"description": "outer", "type": "string"}
    assert _property({"allOf": [{"$ref": "#/$defs/S"}]}, {"S": {"type": "integer"}}) == {
        "type": "integer"}


# -- what is kept -----------------------------------------------------------------------


def test_strings_keep_their_pattern_and_a_strict_format_only() -> None:
    assert _property({"type": "string", "pattern": "^a", "format": "email",
                      "minLength": 1}) == {"type": "string", "pattern": "^a", "format": "email"}
    assert _property({"type": "string", "format": "uri", "pattern": 5}) == {"type": "string"}
    # on a value that is not a string they mean nothing
    assert _property({"type": "integer", "pattern": "^a", "format": "date"}) == {
        "type": "integer"}


def test_numbers_keep_their_numeric_bounds_and_nothing_else() -> None:
    bounds = {"minimum": 1, "maximum": 9.5, "exclusiveMinimum": 0, "exclusiveMaximum": 10,
              "multipleOf": 0.5}
    assert _property({"type": "number", **bounds, "default": 3}) == {"type": "number",
                                                                     **bounds}
    assert _property({"type": "integer", "minimum": True, "maximum": "9"}) == {
        "type": "integer"}
    assert _property({"type": "integer", "minimum": 1, "multipleOf": 2}) == {
        "type": "integer", "minimum": 1, "multipleOf": 2}
    assert _property({"type": "string", "minimum": 1}) == {"type": "string"}


def test_arrays_keep_their_item_counts() -> None:
    assert _property({"type": "array", "items": {"type": "string"}, "minItems": 1,
                      "maxItems": 3, "uniqueItems": True}) == {
        "type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3}
    assert _property({"type": "array", "items": {"type": "string"}, "minItems": True,
                      "maxItems": 2.0}) == {"type": "array", "items": {"type": "string"}}


def test_a_description_is_cleaned_and_cut() -> None:
    assert _property({"type": "string", "description": "a\u200bb" + "c" * 2000}) == {
        "description": "ab" + "c" * 1021 + "\u2026", "type": "string"}
    assert _property({"type": "string", "description": ""}) == {"type": "string"}
    assert _property({"type": "string", "description": 5}) == {"type": "string"}


def test_the_type_is_read_from_an_enum_or_from_properties() -> None:
    assert _property({"enum": ["a", 1, 2.5, None, True]}) == {
        "type": ["boolean", "integer", "null", "number", "string"],
        "enum": ["a", 1, 2.5, None, True]}
    assert _property({"const": "only"}) == {"type": ["string"], "enum": ["only"]}
    assert _property({"properties": {"x": {"type": "string"}}}) == {
        "type": "object", "properties": {"x": {"type": ["string", "null"]}},
        "required": ["x"], "additionalProperties": False}
    given = ["string", "integer"]
    converted = _property({"type": given})
    assert converted == {"type": ["string", "integer"]} and converted["type"] is not given


def test_the_root_may_declare_no_properties() -> None:
    assert _converted({"type": "object"}) == {"type": "object", "properties": {},
                                              "required": [], "additionalProperties": False}
    assert _converted({"type": "object", "additionalProperties": False, "properties": {}}) == {
        "type": "object", "properties": {}, "required": [], "additionalProperties": False}


# -- optional properties become nullable --------------------------------------------------


STRING, NULLABLE = {"type": "string"}, {"type": ["string", "null"]}
EITHER = [{"type": "string"}, {"type": "integer"}]


@pytest.mark.parametrize(("schema", "required", "optional"), [
    (STRING, STRING, NULLABLE),
    ({"type": ["string", "integer"]}, {"type": ["string", "integer"]},
     {"type": ["string", "integer", "null"]}),
    (NULLABLE, NULLABLE, NULLABLE),
    ({"enum": ["a", "b"]}, {"type": ["string"], "enum": ["a", "b"]},
     {"type": ["string", "null"], "enum": ["a", "b", None]}),
    ({"enum": ["a", None]}, {"type": ["null", "string"], "enum": ["a", None]},
     {"type": ["null", "string"], "enum": ["a", None]}),
    ({"type": ["string", "null"], "enum": ["a"]}, {"type": ["string", "null"], "enum": ["a"]},
     {"type": ["string", "null"], "enum": ["a", None]}),
    ({"anyOf": EITHER}, {"anyOf": EITHER}, {"anyOf": [*EITHER, {"type": "null"}]}),
    ({"anyOf": [STRING, {"type": ["integer", "null"]}]},
     {"anyOf": [STRING, {"type": ["integer", "null"]}]},
     {"anyOf": [STRING, {"type": ["integer", "null"]}]}),
    ({"anyOf": [STRING, {"type": "null", "enum": ["x"]}]},
     {"anyOf": [STRING, {"type": "null", "enum": ["x"]}]},
     {"anyOf": [STRING, {"type": "null", "enum": ["x"]}, {"type": "null"}]}),
])
def test_an_optional_property_takes_null_once(schema: Dict[str, Any], required: Dict[str, Any],
                                              optional: Dict[str, Any]) -> None:
    converted = _converted(_object(["r"], r=schema, o=schema))
    assert converted["properties"] == {"r": required, "o": optional}
    assert converted["required"] == ["r", "o"]


# -- past the recursion limit --------------------------------------------------------------


def test_a_schema_nesting_past_the_recursion_limit_is_refused() -> None:
    """``anyOf`` inside ``anyOf`` adds no level of nesting: within the input schema's own
    depth bound, a recursion limit lowered by the host can still be met."""
    branch: Dict[str, Any] = {"type": "string"}
    for _ in range(30):
        branch = {"anyOf": [branch]}
    schema = _object(["a"], a=branch)
    assert bounded_schema(schema) == (schema, None, False)  # within the bounds
    with recursion_limit(20):
        converted, reason = strict_schema(schema)
    assert (converted, reason) == (None, "the schema nests too deeply")
    _converted(schema)  # at the usual limit it converts
