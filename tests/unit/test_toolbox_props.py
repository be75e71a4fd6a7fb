"""Property tests of the Toolbox's pure parts: tool names and strict schemas (hypothesis).

* Names: every tool of any set gets a name the providers accept, unique, mapped back to
  its own (server, tool) pair; the same set gives the same names in any order; a name
  that needs no change is kept when no other tool claims it.
* Strict schemas: for generated schemas (nested objects, optional and nullable
  properties, enums, consts, arrays, anyOf, local $refs, one-member allOf, keywords strict
  mode drops) and values valid against them, the converted schema is in OpenAI's strict
  subset and accepts the value once each absent optional property is filled with null
  (checked with jsonschema); dropping those nulls again gives the value back; any object
  among them open to other properties (``additionalProperties`` true, ``{}`` or a schema)
  makes the whole schema refused, while ``additionalProperties: false`` changes nothing.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import random
import re
from typing import Any, Dict, List, Optional, Tuple

import jsonschema
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from mcp_sync.toolbox._names import _hashed_names, assign_names
from mcp_sync.toolbox._schemas import drop_filled_nulls, strict_schema

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}\Z")  # not "$": it matches before a final "\n"
SETTINGS = settings(max_examples=200, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

# -- names -----------------------------------------------------------------------------------

# Few characters, so that sanitised names collide often; plus anything at all.
close_text = st.text(alphabet="ab._: -\u00e9\x1b", max_size=12)
any_text = st.text(max_size=90)
pair = st.tuples(st.one_of(close_text, any_text), st.one_of(close_text, any_text))


@SETTINGS
@given(st.lists(pair, max_size=25))
def test_names_are_valid_unique_and_each_maps_back(pairs: List[Tuple[str, str]]) -> None:
    names = assign_names(pairs)
    assert len(names) == len(pairs)
    assert all(NAME.match(name) for name in names), names
    assert len(set(names)) == len(names)
    for (server, _tool), name in zip(pairs, names):
        kept = re.sub(r"[^a-zA-Z0-9_-]", "_", server)[:7]
        assert name.startswith(kept), (server, name)  # the server stays visible


@SETTINGS
@given(st.lists(pair, max_size=25, unique=True), st.randoms(use_true_random=False))
def test_names_depend_on_the_set_not_the_order(pairs: List[Tuple[str, str]],
                                               rng: random.Random) -> None:
    shuffled = list(pairs)
    rng.shuffle(shuffled)
    assert dict(zip(pairs, assign_names(pairs))) == dict(zip(shuffled, assign_names(shuffled)))


# Names that need no change, and rivals for them: the same name with some of its "_"
# written as characters that become "_" once sanitised ("a.b" against "a_b"), or the same
# pair again (a second client of one server).
exact_text = st.text(alphabet="ab_-", max_size=6)


@st.composite
def pairs_with_rivals(draw: Any) -> List[Tuple[str, str]]:
    kept = draw(st.lists(st.tuples(exact_text, exact_text), min_size=1, max_size=8))
    blur = st.sampled_from("_. \u00e9:")
    pairs = list(kept)
    for server, tool in kept:
        for _ in range(draw(st.integers(0, 2))):
            pairs.append(tuple(  # type: ignore[arg-type]
                "".join(draw(blur) if c == "_" else c for c in part) for part in (server, tool)))
    pairs += draw(st.lists(pair, max_size=5))
    return list(draw(st.permutations(pairs)))


@SETTINGS
@given(st.one_of(st.lists(pair, max_size=25), pairs_with_rivals()))
@example([("s.x", "t"), ("s_x", "t"), ("s_x", "t"), ("s x", "t")])
@example([("", "\n")])  # "__\n" needs a change: "___"
def test_a_name_that_needs_no_change_is_kept(pairs: List[Tuple[str, str]]) -> None:
    # Kept when no other tool claims it as its own unchanged name: tools whose names only
    # sanitise to it, and later copies of the same pair, get another name.
    names = assign_names(pairs)
    joined = [f"{server}__{tool}" for server, tool in pairs]
    for index, name in enumerate(names):
        readable = joined[index]
        rivals = {pairs[i] for i, other in enumerate(joined) if other == readable}
        if NAME.match(readable) and rivals == {pairs[index]} and (
                pairs.index(pairs[index]) == index):
            assert name == readable, (pairs, names)


def sha(server: str, tool: str, occurrence: int) -> str:
    """The digest a hashed name ends with, computed here as the module's docstring says."""
    data = f"{server}\x00{tool}\x00{occurrence}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


def test_names_crafted_to_take_every_digest_still_leave_a_name() -> None:
    for tool, kept in (("a.b", "a_b"), ("a.b" + "c" * 70, "a_b" + "c" * 47)):
        crafted = [name[len("s__"):]
                   for name in itertools.islice(_hashed_names("s", tool, 0), 8)]
        pairs = [("s", tool), ("s", tool.replace(".", "_")), *[("s", t) for t in crafted]]
        names = assign_names(pairs)
        assert len(set(names)) == len(names) and all(NAME.match(n) for n in names)
        assert names[2:] == [f"s__{t}" for t in crafted]
        # six digest widths and two counters taken: the third counter, cut to fit
        assert names[0] == f"s__{kept}_{sha('s', tool, 0)[:8]}_3", names[0]


def test_a_long_name_keeps_some_of_each_part_and_a_digest() -> None:
    long_pairs = [("S" * 40, "T" * 40), ("s", "t" * 100), ("s" * 100, "t")]
    names = assign_names(long_pairs)
    assert names == [
        "S" * 17 + "__" + "T" * 36 + "_" + sha("S" * 40, "T" * 40, 0)[:8],  # a third each
        "s__" + "t" * 52 + "_" + sha("s", "t" * 100, 0)[:8],  # the server whole
        "s" * 52 + "__t_" + sha("s" * 100, "t", 0)[:8],  # the tool whole
    ]
    assert all(len(name) == 64 for name in names)
    # 64 characters is short enough, 65 is not
    assert assign_names([("a" * 31, "b" * 31), ("a" * 31, "b" * 32)]) == [
        "a" * 31 + "__" + "b" * 31,
        "a" * 21 + "__" + "b" * 32 + "_" + sha("a" * 31, "b" * 32, 0)[:8]]


def test_copies_of_a_tool_are_counted_and_a_lone_surrogate_is_hashed() -> None:
    pair = ("srv", "echo")
    assert assign_names([pair, pair, pair]) == [
        "srv__echo", f"srv__echo_{sha('srv', 'echo', 1)[:8]}",
        f"srv__echo_{sha('srv', 'echo', 2)[:8]}"]
    # a name from JSON may hold a lone surrogate; it loses "s___" to the unchanged name
    assert assign_names([("s", "\ud800"), ("s", "_")]) == [
        f"s____{sha('s', chr(0xD800), 0)[:8]}", "s___"]


# -- strict schemas --------------------------------------------------------------------------

primitive_values = st.one_of(st.none(), st.booleans(), st.integers(-5, 5),
                             st.text(alphabet="xyz", max_size=3))
annotations = st.fixed_dictionaries({}, optional={
    "description": st.text(alphabet="abc ", max_size=8),
    "title": st.just("T"),
    "default": primitive_values,
    "examples": st.just([1]),
})
leaf = st.one_of(
    st.fixed_dictionaries({"type": st.just("string")}, optional={
        "minLength": st.integers(0, 2), "maxLength": st.just(5),
        "format": st.sampled_from(["date-time", "uri", "email"])}),
    st.fixed_dictionaries({"type": st.just("integer")}, optional={
        "minimum": st.just(-10), "maximum": st.just(10), "multipleOf": st.just(1)}),
    st.just({"type": "number"}),
    st.just({"type": "boolean"}),
    st.just({"type": ["string", "null"]}),
    st.just({"type": "null"}),
    st.lists(primitive_values, min_size=1, max_size=4, unique=True).map(lambda v: {"enum": v}),
    primitive_values.map(lambda v: {"const": v}),
    st.just({"anyOf": [{"type": "string"}, {"type": "integer"}]}),
    st.just({"oneOf": [{"type": "boolean"}, {"type": "null"}]}),
    st.just({"$ref": "#/$defs/Point"}),
    st.just({"$ref": "#/definitions/Mode", "description": "by ref"}),
)


def _object(children: Any) -> Any:
    keys = st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), unique=True, max_size=4)
    return keys.flatmap(lambda names: st.tuples(
        st.fixed_dictionaries({name: children for name in names}),
        st.lists(st.sampled_from(names), unique=True) if names else st.just([]),
    )).map(lambda parts: {"type": "object", "properties": parts[0], "required": parts[1]})


def _compound(children: Any) -> Any:
    return st.one_of(
        _object(children),
        children.map(lambda child: {"type": "array", "items": child, "maxItems": 3}),
        children.map(lambda child: {"allOf": [child], "description": "one"}),
        _object(children).map(lambda obj: {"anyOf": [obj, {"type": "string"}]}),
        children.map(lambda child: {"not": {"type": "boolean"}, "type": "object",
                                    "properties": {"x": child}}),
    )


node = st.recursive(leaf, _compound, max_leaves=8)
node_with_annotations = st.tuples(node, annotations).map(lambda t: {**t[1], **t[0]})
DEFS = {
    "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "integer"},
                                                        "y": {"type": "integer"}},
                        "required": ["x"]}},
    "definitions": {"Mode": {"enum": ["fast", "slow"]}},
}
root_schema = _object(node_with_annotations).map(lambda root: {**root, **DEFS})


def _resolve(schema: Dict[str, Any], root: Dict[str, Any]) -> Dict[str, Any]:
    while True:
        if "$ref" in schema:
            _, section, name = schema["$ref"].split("/")
            schema = {**root[section][name], **{k: v for k, v in schema.items() if k != "$ref"}}
        elif "allOf" in schema:
            schema = {**schema["allOf"][0], **{k: v for k, v in schema.items() if k != "allOf"}}
        else:
            return schema


def values_of(schema: Dict[str, Any], root: Dict[str, Any]) -> Any:
    """A strategy for values valid against the generated ``schema`` (with no properties an
    object does not declare)."""
    schema = _resolve(schema, root)
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    choices = schema.get("anyOf", schema.get("oneOf"))
    if choices:
        return st.one_of(*[values_of(choice, root) for choice in choices])
    kinds = schema["type"]
    if isinstance(kinds, list):
        return st.one_of(*[values_of({**schema, "type": kind}, root) for kind in kinds])
    if kinds == "string":
        return st.text(alphabet="pq", min_size=schema.get("minLength", 0), max_size=5)
    if kinds == "integer":
        return st.integers(-10, 10)
    if kinds == "number":
        return st.one_of(st.integers(-3, 3), st.floats(-3, 3, allow_nan=False))
    if kinds == "boolean":
        return st.booleans()
    if kinds == "null":
        return st.none()
    if kinds == "array":
        return st.lists(values_of(schema["items"], root), max_size=3)
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    return st.fixed_dictionaries(
        {name: values_of(properties[name], root) for name in required},
        optional={name: values_of(child, root) for name, child in properties.items()
                  if name not in required})


def _takes_null(schema: Dict[str, Any], root: Dict[str, Any]) -> bool:
    return jsonschema.Draft202012Validator({**schema, **DEFS}).is_valid(None)


def fill(value: Any, schema: Dict[str, Any], root: Dict[str, Any]) -> Tuple[Any, Any]:
    """``(filled, expected)``: ``value`` with every absent optional property set to
    ``null``; and what dropping the nulls again must give (``value``, except where the
    original schema takes ``null`` too)."""
    schema = _resolve(schema, root)
    choices = schema.get("anyOf", schema.get("oneOf"))
    if choices:
        for choice in choices:
            if jsonschema.Draft202012Validator({**choice, **DEFS}).is_valid(value):
                return fill(value, choice, root)
        raise AssertionError("no branch takes the value")
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        filled, expected = {}, {}
        for name, child in properties.items():
            if name in value:
                filled[name], expected[name] = fill(value[name], child, root)
            else:
                filled[name] = None
                if _takes_null(child, root):
                    expected[name] = None
        return filled, expected
    if isinstance(value, list):
        pairs = [fill(item, schema["items"], root) for item in value]
        return [f for f, _ in pairs], [e for _, e in pairs]
    return value, value


def assert_strict_subset(schema: Any, at_root: bool = True) -> None:
    if isinstance(schema, list):
        for item in schema:
            assert_strict_subset(item, False)
        return
    if not isinstance(schema, dict):
        return
    assert not {"$ref", "$defs", "definitions", "allOf", "oneOf", "not", "const", "default",
                "title", "minLength", "maxLength", "examples"} & set(schema), schema
    kinds = schema.get("type")
    if kinds == "object" or (isinstance(kinds, list) and "object" in kinds):
        assert schema["additionalProperties"] is False
        assert schema["required"] == list(schema["properties"])
    if at_root:
        assert schema["type"] == "object"
    for key, child in schema.items():
        if key == "properties":
            for grandchild in child.values():
                assert_strict_subset(grandchild, False)
        elif key not in ("enum", "required"):
            assert_strict_subset(child, False)


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(root_schema, st.data())
def test_strict_schema_accepts_every_value_filled_with_nulls(original: Dict[str, Any],
                                                             data: st.DataObject) -> None:
    converted, reason = strict_schema(original)
    assert (converted is None) != (reason is None)
    assume(converted is not None)
    assert converted is not None
    assert_strict_subset(converted)
    jsonschema.Draft202012Validator.check_schema(converted)
    value = data.draw(values_of(original, original))
    jsonschema.validate(value, original, cls=jsonschema.Draft202012Validator)
    filled, expected = fill(value, original, original)
    jsonschema.validate(filled, converted, cls=jsonschema.Draft202012Validator)
    assert drop_filled_nulls(filled, original) == expected


def _object_nodes(schema: Any) -> List[Dict[str, Any]]:
    """Every object schema the conversion reaches in ``schema`` (not behind a ``$ref``)."""
    if not isinstance(schema, dict):
        return []
    found = [schema] if schema.get("type") == "object" else []
    for child in schema.get("properties", {}).values():
        found += _object_nodes(child)
    found += _object_nodes(schema.get("items"))
    for key in ("anyOf", "oneOf", "allOf"):
        for branch in schema.get(key, []):
            found += _object_nodes(branch)
    return found


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(root_schema, st.sampled_from([True, {}, {"type": "string"}]), st.data())
def test_an_object_open_to_other_properties_is_refused(original: Dict[str, Any], extra: Any,
                                                       data: st.DataObject) -> None:
    converted, _ = strict_schema(original)
    assume(converted is not None)
    changed = copy.deepcopy(original)
    node = data.draw(st.sampled_from(_object_nodes(changed)))
    node["additionalProperties"] = False  # closed already: the same conversion
    assert strict_schema(changed) == (converted, None)
    node["additionalProperties"] = extra  # open: strict mode cannot say it
    refused, reason = strict_schema(changed)
    assert refused is None and reason is not None
    assert reason.endswith(": an object that takes other properties"), reason


def test_a_schema_that_cannot_be_strict_says_why() -> None:
    cases: List[Tuple[Dict[str, Any], str]] = [
        ({"type": "object", "properties": {"a": {}}}, "arguments.a takes a value of any type"),
        ({"type": "object", "properties": {"m": {"type": "object"}}},
         "arguments.m: an object with no declared properties"),
        ({"type": "object", "properties": {"m": {"type": "object", "properties": {},
                                                 "additionalProperties": {"type": "string"}}}},
         "arguments.m: an object that takes other properties"),
        ({"type": "object", "properties": {"t": {"type": "array", "prefixItems": []}}},
         "arguments.t: a tuple (prefixItems)"),
        ({"type": "object", "properties": {"a": {"allOf": [{"type": "string"},
                                                           {"minLength": 1}]}}},
         "arguments.a: allOf of several schemas"),
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}},
          "$defs": {"A": {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}}}},
         "arguments.a.a: the $ref '#/$defs/A' is recursive"),
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}},
         "the $ref '#/$defs/missing' points at nothing"),
        ({"type": "object", "properties": {"a": {"type": "array"}}},
         "arguments.a: an array of values of any type"),
        ({"type": "object", "properties": {"a": {"type": "object", "properties": {
            "b": {"type": "object", "properties": {}}}}}, "patternProperties": {}},
         "arguments: patternProperties (property names by pattern)"),
    ]
    for schema, reason in cases:
        assert strict_schema(schema) == (None, reason)


def test_deep_nesting_and_ref_blowup_are_refused() -> None:
    deep: Dict[str, Any] = {"type": "string"}
    for _ in range(12):
        deep = {"type": "object", "properties": {"n": deep}, "required": ["n"]}
    converted, reason = strict_schema(deep)
    assert converted is None and reason is not None and "nests deeper than 10" in reason
    # each level refers to the previous one twice: 2**15 nodes once inlined
    defs: Dict[str, Any] = {"L0": {"type": "string"}}
    for level in range(1, 15):
        ref = {"$ref": f"#/$defs/L{level - 1}"}
        defs[f"L{level}"] = {"anyOf": [ref, ref]}
    blowup = {"type": "object", "properties": {"x": {"$ref": "#/$defs/L14"}},
              "$defs": defs}
    assert strict_schema(blowup) == (
        None, "more than 20000 schema nodes once $refs are inlined")


def test_dropping_nulls_leaves_what_the_schema_allows() -> None:
    schema: Dict[str, Any] = {"type": "object", "properties": {
        "keep": {"type": ["string", "null"]}, "drop": {"type": "string"},
        "needed": {"type": "string"}, "any": {}}, "required": ["needed"]}
    value: Optional[Dict[str, Any]] = {"keep": None, "drop": None, "needed": None,
                                       "any": None, "unknown": None}
    assert drop_filled_nulls(value, schema) == {"keep": None, "needed": None, "any": None,
                                                 "unknown": None}
