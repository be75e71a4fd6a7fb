"""Unit tests of the outputSchema check's own parts (pure logic, no server).

* ``budget_for`` counts a result's values and characters exactly and caps the steps;
  ``_measure`` counts a schema's values, depth and characters and stops past a bound.
* ``OutputSchema`` refuses a schema one past each bound (values, depth, characters) and
  takes one at the bound; its refusal names the tool, the server and the reason.
* The keywords done here instead of by jsonschema (``pattern``, ``patternProperties``,
  ``additionalProperties``, ``unevaluatedProperties``, ``uniqueItems``) accept and refuse
  as JSON Schema says, with the messages the client reports: the properties an
  ``unevaluatedProperties`` sees as evaluated come through ``$ref``, ``properties``,
  ``patternProperties``, ``additionalProperties``, ``dependentSchemas``, the
  ``allOf``/``anyOf``/``oneOf`` branches that hold and ``if``/``then``/``else``.
* ``_canonical`` makes equal the values JSON Schema calls equal, and only those.
* The schema itself: draft 3, another dialect in a subschema, an invalid schema, one
  nesting past the recursion limit, an ``$id`` urllib cannot split and each kind of bad
  reference are refused with their own reason, long parts cut; a ``$schema`` the client
  does not know is read as 2020-12 without a warning; the caller's schema is left as it
  was; the ``$schema`` of the root and of each subschema is taken out, so a reference
  back to them is still checked within the budget; the expressions may compile to
  :data:`MAX_PATTERN_SIZE` instructions in all and not one more; a loop is found
  wherever it starts, even after subschemas already walked.
"""

from __future__ import annotations

import copy
import re
import warnings
from typing import Any, Dict, Iterator

import pytest

from mcp_sync import InvalidToolSchema, ProtocolError
from mcp_sync._schema.checker import (
    BASE_STEPS,
    MAX_PATTERN_SIZE,
    MAX_SCHEMA_CHARACTERS,
    MAX_SCHEMA_DEPTH,
    MAX_SCHEMA_VALUES,
    MAX_STEPS,
    OutputSchema,
    _canonical,
    _listing,
    _measure,
    budget_for,
)

from .._stack import recursion_limit


def _lists(levels: int) -> Any:
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


def _schema(schema: Dict[str, Any]) -> OutputSchema:
    return OutputSchema(schema, "t", "srv")


def _fails(schema: OutputSchema, instance: Any) -> str:
    with pytest.raises(ProtocolError) as caught:
        schema.check(instance)
    assert not isinstance(caught.value, InvalidToolSchema)
    return str(caught.value)


# -- sizes -------------------------------------------------------------------------------


@pytest.mark.parametrize(("instance", "values", "characters"), [
    (None, 1, 0), ("abc", 1, 3), ([], 1, 0), ([1, "ab"], 3, 2), ({"ab": [1, "c"]}, 5, 3),
    ({1: "x"}, 3, 1), ({"k": {"kk": ""}}, 5, 3),
])
def test_budget_for_counts_values_and_characters(instance: Any, values: int,
                                                 characters: int) -> None:
    assert budget_for(instance) == (values, BASE_STEPS + 100 * values + 4 * characters)


def test_budget_for_is_capped() -> None:
    assert BASE_STEPS == 100_000 and MAX_STEPS == 5_000_000
    length = (MAX_STEPS - BASE_STEPS - 100) // 4
    assert budget_for("x" * length) == (1, MAX_STEPS)
    assert budget_for("x" * (length + 1)) == (1, MAX_STEPS)
    assert budget_for("x" * (length - 1)) == (1, MAX_STEPS - 4)


@pytest.mark.parametrize(("schema", "measured"), [
    (True, (1, 1, 0)), ("ab", (1, 1, 2)), ({}, (1, 1, 0)), ({"a": ["bc", 1]}, (5, 3, 3)),
    ({1: "x"}, (3, 2, 1)), ([[], {"k": []}], (5, 3, 1)), ([{"k": 1}, "abc"], (5, 3, 4)),
])
def test_measure_counts_values_depth_and_characters(schema: Any, measured: Any) -> None:
    assert _measure(schema) == measured


def test_measure_stops_past_each_bound() -> None:
    assert _measure(_lists(100)) == (MAX_SCHEMA_DEPTH + 1, MAX_SCHEMA_DEPTH + 1, 0)
    assert _measure(_lists(MAX_SCHEMA_DEPTH)) == (MAX_SCHEMA_DEPTH, MAX_SCHEMA_DEPTH, 0)
    assert _measure([0] * 30_000) == (MAX_SCHEMA_VALUES + 1, 2, 0)
    assert _measure([0] * (MAX_SCHEMA_VALUES - 1)) == (MAX_SCHEMA_VALUES, 2, 0)
    big = "x" * 600_000
    assert _measure([big, big, big]) == (3, 2, 1_200_000)
    assert _measure([big, "x" * 400_000]) == (3, 2, 1_000_000)
    assert _measure([0, big, "x" * 400_000]) == (4, 2, 1_000_000)  # at the bound: goes on


def _refusal(schema: Any) -> str:
    with pytest.raises(InvalidToolSchema) as caught:
        _schema(schema)
    refused = caught.value
    assert (refused.tool, refused.server) == ("t", "srv")
    assert str(refused) == ("outputSchema of tool 't' of srv cannot check its results: "
                            f"{refused.reason}")
    return str(refused.reason)


def test_schema_values_are_bounded_exactly() -> None:
    # the root, its key, the list and the list's members
    _schema({"enum": [0] * (MAX_SCHEMA_VALUES - 3)})
    assert _refusal({"enum": [0] * (MAX_SCHEMA_VALUES - 2)}) == (
        "it holds more than 20,000 JSON values")


def test_schema_depth_is_bounded_exactly() -> None:
    _schema({"default": _lists(MAX_SCHEMA_DEPTH - 1)})
    assert _refusal({"default": _lists(MAX_SCHEMA_DEPTH)}) == "it nests deeper than 64 levels"


def test_schema_characters_are_bounded_exactly() -> None:
    room = MAX_SCHEMA_CHARACTERS - len("description")
    _schema({"description": "x" * room})
    assert _refusal({"description": "x" * (room + 1)}) == (
        "its strings hold more than 1,000,000 characters")


# -- the keywords done here --------------------------------------------------------------


def test_listing_names_twenty_and_counts_the_rest() -> None:
    assert _listing(["a"]) == "'a' was unexpected"
    assert _listing(["a", "b"]) == "'a', 'b' were unexpected"
    names = [f"k{i}" for i in range(20)]
    assert _listing(names) == ", ".join(repr(n) for n in names) + " were unexpected"
    assert _listing([*names, "x"]) == (
        ", ".join(repr(n) for n in names) + " and 1 more were unexpected")
    assert _listing([*names, "x", "y"]) == (
        ", ".join(repr(n) for n in names) + " and 2 more were unexpected")


def test_a_result_that_does_not_match_names_the_tool_the_place_and_the_fault() -> None:
    schema = _schema({"properties": {"x": {"pattern": "^a+$"}}})
    schema.check({"x": "aa"})
    schema.check({"x": 5})
    assert _fails(schema, {"x": "ab"}) == (
        "structuredContent of tool 't' of srv does not match its outputSchema at $.x: "
        "'ab' does not match '^a+$'")


def test_a_long_tool_name_path_and_fault_are_cut_in_the_error() -> None:
    schema = OutputSchema({"additionalProperties": {"pattern": "^a$"}}, "n" * 500, "srv")
    key, value = "k" * 300, "v" * 400
    message = _fails(schema, {key: value})
    assert message == (
        "structuredContent of tool '" + "n" * 119 + "\u2026 (502 characters in all) of srv "
        "does not match its outputSchema at $." + "k" * 118 + "\u2026 (302 characters in "
        "all): '" + "v" * 299 + "\u2026 (423 characters in all)")


def test_pattern_properties() -> None:
    schema = _schema({"patternProperties": {"^n_": {"type": "integer"}}})
    for good in ({"n_a": 1}, {"other": "x"}, {}, "text", [1]):
        schema.check(good)
    assert _fails(schema, {"ok": "", "n_a": "x"}).endswith(
        "at $.n_a: 'x' is not of type 'integer'")


def test_additional_properties() -> None:
    closed = _schema({"properties": {"a": {}}, "patternProperties": {"^p": {}},
                      "additionalProperties": False})
    for good in ({"a": 1, "p1": 2}, {}, "text", 3):
        closed.check(good)
    assert _fails(closed, {"a": 1, "x": 2, "p": 3}).endswith(
        "Additional properties are not allowed ('x' was unexpected)")
    assert _fails(closed, {"y": 1, "x": 2}).endswith("('y', 'x' were unexpected)")
    typed = _schema({"properties": {"a": {}}, "additionalProperties": {"type": "integer"}})
    typed.check({"a": "s", "x": 1})
    assert _fails(typed, {"a": "s", "x": "s"}).endswith("at $.x: 's' is not of type 'integer'")
    _schema({"additionalProperties": True}).check({"x": 1})
    _schema({"additionalProperties": {}}).check({"x": 1})


@pytest.mark.parametrize(("schema", "good", "bad", "unexpected"), [
    ({"properties": {"a": {}}}, [{"a": 1}, {}, "s"], {"a": 1, "b": 1}, "'b' was"),
    ({"$defs": {"A": {"properties": {"a": {}}}}, "$ref": "#/$defs/A"},
     [{"a": 1}], {"a": 1, "b": 1}, "'b' was"),
    ({"patternProperties": {"^p": {}}}, [{"p1": 1}], {"p1": 1, "q": 1}, "'q' was"),
    ({"additionalProperties": {"type": "integer"}, "properties": {"k": {}}},
     [{"x": 1, "k": "s"}], None, ""),
    ({"allOf": [{"properties": {"a": {}}}]}, [{"a": 1}], {"b": 1}, "'b' was"),
    ({"anyOf": [{"properties": {"a": {"type": "integer"}}, "required": ["a"]},
                {"properties": {"b": {}}, "required": ["b"]}]},
     [{"a": 1}, {"b": 1}, {"a": 1, "b": 1}], {"a": "s", "b": 1}, "'a' was"),
    ({"oneOf": [{"properties": {"a": {}}, "required": ["a"]},
                {"properties": {"c": {}}, "required": ["c"], "not": {"required": ["a"]}}]},
     [{"a": 1}, {"c": 1}], {"c": 1, "a": 1}, "'c' was"),
    ({"if": {"properties": {"k": {"const": 1}}, "required": ["k"]},
      "then": {"properties": {"t": {}}}, "else": {"properties": {"e": {}}}},
     [{"k": 1, "t": 1}, {"e": 1}, {"k": 1}], {"k": 1, "e": 1}, "'e' was"),
    ({"if": {"properties": {"k": {"const": 1}}, "required": ["k"]},
      "then": {"properties": {"t": {}}}, "else": {"properties": {"e": {}}}},
     [], {"k": 2, "e": 1}, "'k' was"),
    ({"if": {"properties": {"k": {"const": 1}}, "required": ["k"]},
      "else": {"properties": {"e": {}}}}, [{"k": 1}, {"e": 1}], {"k": 1, "e": 1}, "'e' was"),
    ({"if": {"properties": {"k": {"const": 1}}, "required": ["k"]},
      "then": {"properties": {"t": {}}}}, [{"k": 1, "t": 1}], {"k": 2, "t": 1}, "'k', 't' were"),
    ({"properties": {"d": {}}, "dependentSchemas": {"d": {"properties": {"x": {}}}}},
     [{"d": 1, "x": 1}], {"x": 1}, "'x' was"),
    ({"allOf": [{"unevaluatedProperties": True}]}, [{"z": 1}], None, ""),
    ({"allOf": [{"additionalProperties": True}]}, [{"z": 1}], None, ""),
    ({"allOf": [True]}, [{}], {"z": 1}, "'z' was"),
    # what a branch evaluates adds to what the schema's own keywords do
    ({"properties": {"p": {}}, "if": {"properties": {"k": {"const": 1}}, "required": ["k"]},
      "then": {"properties": {"t": {}}}, "else": {"properties": {"e": {}}}},
     [{"p": 1, "k": 1, "t": 1}, {"p": 1, "e": 1}], {"p": 1, "k": 1, "e": 1}, "'e' was"),
    # each way down hands on the validator its subschemas are checked with
    ({"$defs": {"A": {"allOf": [{"properties": {"a": {}}}]}}, "$ref": "#/$defs/A"},
     [{"a": 1}], {"a": 1, "b": 1}, "'b' was"),
    ({"properties": {"d": {}}, "dependentSchemas": {"d": {"allOf": [{"properties": {
        "x": {}}}]}}}, [{"d": 1, "x": 1}], {"x": 1}, "'x' was"),
    ({"if": {"allOf": [{"properties": {"k": {"const": 1}}, "required": ["k"]}]},
      "then": {"allOf": [{"properties": {"t": {}}}]},
      "else": {"allOf": [{"properties": {"e": {}}}]}},
     [{"k": 1, "t": 1}, {"e": 1}], {"k": 1, "e": 1}, "'e' was"),
    # two references in one schema: what both lead to is evaluated
    ({"$defs": {"a": {"properties": {"x": {}}}, "b": {"properties": {"y": {}}}},
      "$ref": "#/$defs/a", "$dynamicRef": "#/$defs/b"},
     [{"x": 1, "y": 1}], {"x": 1, "y": 1, "z": 1}, "'z' was"),
])
def test_unevaluated_properties_sees_what_the_schema_evaluates(
        schema: Dict[str, Any], good: Any, bad: Any, unexpected: str) -> None:
    checked = _schema({**schema, "unevaluatedProperties": False})
    for value in good:
        checked.check(value)
    if bad is not None:
        assert _fails(checked, bad).endswith(
            f"Unevaluated properties are not allowed ({unexpected} unexpected)")


def test_a_branch_under_a_nested_id_resolves_from_its_own_base() -> None:
    checked = _schema({
        "$defs": {"B": {"$id": "https://example.com/b", "$defs": {"s": {"properties": {
            "a": {}}}}, "allOf": [{"$ref": "#/$defs/s"}]}},
        "$ref": "#/$defs/B", "unevaluatedProperties": False})
    checked.check({"a": 1})
    assert _fails(checked, {"a": 1, "b": 2}).endswith("('b' was unexpected)")


def test_unevaluated_properties_given_a_schema() -> None:
    checked = _schema({"properties": {"a": {}}, "unevaluatedProperties": {"type": "integer"}})
    checked.check({"a": "s", "b": 1})
    checked.check(["not an object"])
    assert _fails(checked, {"a": "s", "b": "s"}).endswith(
        "Unevaluated properties are not valid under the given schema ('b' was unexpected)")
    nullable = _schema({"unevaluatedProperties": {"type": ["integer", "null"]}})
    nullable.check({"b": None, "c": 1})
    assert _fails(nullable, {"b": "s"}).endswith(
        "Unevaluated properties are not valid under the given schema ('b' was unexpected)")


def test_canonical_values() -> None:
    assert _canonical(True) == ("bool", True)
    assert _canonical(False) == ("bool", False)
    assert _canonical(1) == ("number", 1) == _canonical(1.0)
    assert _canonical(1) != _canonical(True) and _canonical(0) != _canonical(False)
    assert _canonical([1, "a"]) == ("array", (("number", 1), "a"))
    assert _canonical({"a": 1, "b": [2]}) == _canonical({"b": [2.0], "a": 1})
    assert _canonical({"a": 1}) == ("object", frozenset({("a", ("number", 1))}))
    assert _canonical({"a": 1}) != _canonical([["a", 1]])
    assert _canonical("s") == "s" and _canonical(None) is None


def test_unique_items() -> None:
    unique = _schema({"uniqueItems": True})
    for good in ([1, True], [0, False], [{"a": 1}, {"a": 2}], [[1], [True]], [], "s", {}):
        unique.check(good)
    for bad in ([1, 1.0], [{"a": 1, "b": 2}, {"b": 2, "a": 1}], ["x", "y", "x"]):
        assert _fails(unique, bad).endswith(f"$: {bad!r} has non-unique elements")
    _schema({"uniqueItems": False}).check([1, 1])


def test_a_pattern_the_matcher_cannot_run_is_refused_and_shown_cut() -> None:
    reason = _refusal({"pattern": "(a" + "c" * 200})
    assert reason == ("its pattern '(a" + "c" * 97 + "\u2026 (204 characters in all) uses "
                      "invalid syntax: the expression ends too early")


def test_a_long_tool_name_is_cut_in_the_refusal() -> None:
    with pytest.raises(InvalidToolSchema) as caught:
        OutputSchema({"enum": [0] * MAX_SCHEMA_VALUES}, "n" * 500, "srv")
    message = str(caught.value)
    assert caught.value.tool == "n" * 500
    tool = message[len("outputSchema of tool "):message.index(" of srv cannot")]
    assert tool == "'" + "n" * 119 + "\u2026 (502 characters in all)"


def test_a_result_nesting_past_the_recursion_limit_is_refused() -> None:
    schema = _schema({"items": {"$ref": "#"}})
    schema.check(_lists(50))
    with pytest.raises(InvalidToolSchema) as caught:
        schema.check(_lists(5000))
    assert caught.value.reason == ("checking this result against it nests deeper than "
                                   "Python's recursion limit")


def test_a_check_past_its_budget_is_refused() -> None:
    defs: Dict[str, Any] = {"d40": {"minimum": 0}}
    for level in range(39, -1, -1):
        ref = {"$ref": f"#/$defs/d{level + 1}"}
        defs[f"d{level}"] = {"allOf": [ref, ref]}
    schema = _schema({"$defs": defs, "$ref": "#/$defs/d0"})
    with pytest.raises(InvalidToolSchema) as one:
        schema.check(1)
    assert re.fullmatch(r"checking a result of 1 JSON value against it takes more than "
                        r"[\d,]+ steps, past the bound for a result of that size",
                        one.value.reason)
    with pytest.raises(InvalidToolSchema) as three:
        schema.check([1, 2])
    assert three.value.reason.startswith("checking a result of 3 JSON values against it")


# -- loops that never look into the value ------------------------------------------------

LOOP = "it refers to itself without looking into the value (a check would never end)"


@pytest.mark.parametrize("schema", [
    {"$ref": "#"},
    {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
    {"allOf": [{"$ref": "#"}]},
    {"anyOf": [{"type": "string"}, {"$ref": "#"}]},
    {"oneOf": [{"$ref": "#"}]},
    {"not": {"$ref": "#"}},
    {"if": {"$ref": "#"}},
    {"if": True, "then": {"$ref": "#"}},
    {"if": True, "else": {"$ref": "#"}},
    {"dependentSchemas": {"a": {"$ref": "#"}}},
    {"$schema": "http://json-schema.org/draft-07/schema#", "dependencies": {"a": {"$ref": "#"}}},
    {"$schema": "http://json-schema.org/draft-04/schema#", "not": {"$ref": "#"}},
    {"$schema": "http://json-schema.org/draft-04/schema#", "allOf": [{"$ref": "#"}]},
    {"properties": {"p": {"$defs": {"x": {"allOf": [{"$ref": "#/properties/p/$defs/y"}]},
                                    "y": {"anyOf": [{"$ref": "#/properties/p/$defs/x"}]}},
                          "$ref": "#/properties/p/$defs/x"}}},
])
def test_a_schema_that_loops_in_place_is_refused(schema: Dict[str, Any]) -> None:
    assert _refusal(schema) == LOOP


@pytest.mark.parametrize("schema", [
    {"properties": {"next": {"$ref": "#"}}},
    {"items": {"$ref": "#"}},
    {"$defs": {"s": {"type": "string"}}, "allOf": [{"$ref": "#/$defs/s"}, {"$ref": "#/$defs/s"}],
     "anyOf": [{"$ref": "#/$defs/s"}], "not": {"type": "integer"}},
    # dependentSchemas in draft 7, and "if" in draft 4, apply nothing
    {"$schema": "http://json-schema.org/draft-07/schema#",
     "dependentSchemas": {"a": {"$ref": "#"}}},
    {"$schema": "http://json-schema.org/draft-04/schema#", "if": {"$ref": "#"}},
])
def test_a_schema_that_looks_into_the_value_before_looping_is_taken(
        schema: Dict[str, Any]) -> None:
    _schema(schema)


# -- the schema itself ----------------------------------------------------------------------

DRAFT_7 = "http://json-schema.org/draft-07/schema#"
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"


def _doubling(levels: int) -> Dict[str, Any]:
    """``$defs`` where each of ``d0`` .. ``d{levels - 1}`` refers twice to the next:
    checking a value against ``d0`` applies ``2 ** levels`` references: at 13 levels past
    the budget of a small result, and a fifth of a second for jsonschema's own validator,
    which keeps no budget."""
    defs: Dict[str, Any] = {f"d{levels}": {"minimum": 0}}
    for level in range(levels - 1, -1, -1):
        ref = {"$ref": f"#/$defs/d{level + 1}"}
        defs[f"d{level}"] = {"allOf": [ref, ref]}
    return defs


def _past_budget(schema: OutputSchema, value: Any) -> None:
    with pytest.raises(InvalidToolSchema) as caught:
        schema.check(value)
    assert "past the bound for a result of that size" in caught.value.reason


def test_draft_3_is_refused() -> None:
    assert _refusal({"$schema": "http://json-schema.org/draft-03/schema#"}) == (
        "its $schema names JSON Schema draft 3, which the client does not check")


def test_a_subschema_naming_another_dialect_is_refused() -> None:
    assert _refusal({"properties": {"a": {"$schema": DRAFT_7}}}) == (
        f"a subschema names another dialect, {DRAFT_7!r}")


def test_an_unknown_schema_uri_is_read_as_2020_12_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        root = _schema({"$schema": "https://example.com/mine", "prefixItems": [
            {"type": "integer"}]})
        inner = _schema({"properties": {"a": {"$schema": "https://example.com/other",
                                              "prefixItems": [{"type": "integer"}]}}})
    root.check([1, "x"])
    assert _fails(root, ["x"]).endswith("at $[0]: 'x' is not of type 'integer'")
    assert _fails(inner, {"a": ["x"]}).endswith("at $.a[0]: 'x' is not of type 'integer'")


def test_the_callers_schema_is_left_as_it_was() -> None:
    schema = {"$schema": DRAFT_2020_12, "properties": {"a": {"$schema": DRAFT_2020_12,
                                                             "type": "integer"}}}
    before = copy.deepcopy(schema)
    checked = _schema(schema)
    assert schema == before
    assert _fails(checked, {"a": "x"}).endswith("at $.a: 'x' is not of type 'integer'")


def test_a_reference_back_to_a_subschema_naming_its_dialect_keeps_the_budget() -> None:
    """jsonschema checks a subschema naming a dialect with that dialect's own validator,
    which keeps no budget: the ``$schema`` is taken out, so the bounded one goes on."""
    schema = _schema({"$defs": _doubling(13),
                      "properties": {"a": {"$schema": DRAFT_2020_12, "$ref": "#/$defs/d0"}}})
    schema.check({"b": 1})
    _past_budget(schema, {"a": 1})


def test_a_reference_back_to_the_root_naming_its_dialect_keeps_the_budget() -> None:
    # [[0, 1]]: the outer array's first item is checked against the root again, whose
    # "items" then send 1 through the doubling definitions.
    schema = _schema({"$schema": DRAFT_2020_12, "$defs": _doubling(13),
                      "prefixItems": [{"$ref": "#"}], "items": {"$ref": "#/$defs/d0"}})
    schema.check([[0]])
    _past_budget(schema, [[0, 1]])


def test_an_invalid_schema_is_refused_with_the_fault_cut() -> None:
    assert _refusal({"type": "x" * 400}) == (
        "it is not a valid JSON schema: '" + "x" * 299 + "\u2026 (446 characters in all)")


def test_a_schema_nesting_past_the_recursion_limit_is_refused() -> None:
    """Within the bound of 64 levels, checking the schema against its meta-schema can still
    pass a recursion limit lowered by the host: a refusal, not a RecursionError."""
    schema: Dict[str, Any] = {}
    node = schema
    for _ in range(60):
        node["not"] = {}
        node = node["not"]
    with recursion_limit(200), pytest.raises(InvalidToolSchema) as caught:
        _schema(schema)
    assert caught.value.reason == "it nests too deep to check"
    _schema(schema)  # at the usual limit it is taken


@pytest.mark.parametrize(("schema", "reason"), [
    ({"$id": "http://[::1", "type": "object"}, "its $id 'http://[::1' is not a usable URI"),
    ({"$id": "https://example.com/", "properties": {"a": {"$id": "http://[::1"}}},
     "its $id 'http://[::1' is not a usable URI"),
    ({"$schema": "http://json-schema.org/draft-04/schema#", "id": "https://example.com/",
      "properties": {"a": {"id": "http://[::1"}}}, "its id 'http://[::1' is not a usable URI"),
    ({"$id": "http://[" + "x" * 150}, "its $id 'http://[" + "x" * 91 + "\u2026 (160 characters "
     "in all) is not a usable URI"),
    ({"$id": "https://example.com/", "$ref": "http://[::1"},
     "its $ref 'http://[::1' is not a usable reference"),
    ({"$dynamicRef": "#/$defs/missing"}, "its $dynamicRef '#/$defs/missing' leads to nothing "
     "in the schema (the client fetches and reads nothing)"),
    ({"$schema": "https://json-schema.org/draft/2019-09/schema", "$recursiveRef": "#/nothing"},
     "its $recursiveRef '#/nothing' leads to nothing in the schema (the client fetches and "
     "reads nothing)"),
    ({"$ref": "#/$defs/" + "x" * 300}, "its $ref '#/$defs/" + "x" * 191 + "\u2026 (310 "
     "characters in all) leads to nothing in the schema (the client fetches and reads nothing)"),
    ({"properties": {"a": {}}, "$ref": "#/properties"},
     "its $ref '#/properties' leads to something that is not a subschema"),
])
def test_a_reference_or_id_that_cannot_be_followed_is_refused(
        schema: Dict[str, Any], reason: str) -> None:
    assert _refusal(schema) == reason


def test_a_reference_to_a_boolean_subschema_is_taken() -> None:
    _schema({"$defs": {"yes": True}, "$ref": "#/$defs/yes"}).check(1)
    assert _fails(_schema({"$defs": {"no": False}, "$ref": "#/$defs/no"}), 1).endswith(
        "at $: False schema does not allow 1")


def _expressions(total: int) -> Iterator[str]:
    """Distinct expressions of 2,000 instructions each (a literal of 1,999 characters
    compiles to one per character and one to match), the last one shorter, that compile
    to ``total`` instructions in all."""
    count, rest = divmod(total, 2000)
    for index in range(count):
        yield "a" * index + "b" + "a" * (1998 - index)
    if rest:
        yield "c" * (rest - 1)


def test_the_expressions_may_compile_to_the_bound_in_all_and_not_one_more() -> None:
    def properties(total: int) -> Dict[str, Any]:
        return {"properties": {f"p{index}": {"pattern": expression}
                               for index, expression in enumerate(_expressions(total))}}

    at_bound = _schema(properties(MAX_PATTERN_SIZE))
    assert at_bound.pattern_size == MAX_PATTERN_SIZE
    assert _refusal(properties(MAX_PATTERN_SIZE + 2)) == (
        "its patterns compile to more than 200,000 instructions in all")


def test_a_loop_after_a_subschema_already_walked_is_found() -> None:
    """The root's ``allOf`` branch is walked from the root, and comes before ``items``
    among the starts (the walk takes what ``items`` holds last): the search goes on past
    it to the loop in ``items``."""
    assert _refusal({"items": {"$ref": "#/items"}, "allOf": [{"type": "array"}]}) == LOOP
