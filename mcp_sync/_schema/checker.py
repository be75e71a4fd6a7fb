"""A tool's ``outputSchema``, from the server, made into a bounded check of its results.

The schema is the server's data, not a program the client runs as it is. An
:class:`OutputSchema` is built once per listed tool, on the calling thread before the
first call is sent, and refuses the schema -- :class:`~mcp_sync.InvalidToolSchema`,
naming the tool -- when:

* it holds more than :data:`MAX_SCHEMA_VALUES` JSON values, nests deeper than
  :data:`MAX_SCHEMA_DEPTH` or its strings hold more than :data:`MAX_SCHEMA_CHARACTERS`;
* it is not a valid schema of its dialect (2020-12, or draft 4, 6, 7 or 2019-09 when
  its ``$schema`` says so; draft 3 is refused), or a subschema names another dialect;
* a ``$ref`` (``$dynamicRef``, ``$recursiveRef``) does not lead to a subschema of the
  schema itself: a URL, a ``file:`` URI, a path (``/dev/zero``), a meta-schema, a pointer
  or anchor to nothing. Nothing is ever fetched or read: references are resolved in a
  ``referencing.Registry`` holding this schema alone, with no retrieval; an ``$id`` that
  is not a URI ``urllib`` can split is refused as well;
* following references and in-place applicators (``allOf``, ``anyOf``, ``oneOf``,
  ``not``, ``if``/``then``/``else``, ``dependentSchemas``) comes back to where it
  started without looking into the value (``{"$ref": "#"}``): a check would never end;
* a ``pattern`` or ``patternProperties`` expression is one the bounded matcher
  (``mcp_sync._schema.pattern``) cannot run (broken syntax included), and the ``regex``
  package is not installed, refuses it too or would build more than ``MAX_COPIES`` copies
  of its parts to compile it; or the expressions together compile to more than
  :data:`MAX_PATTERN_SIZE` instructions.

:meth:`OutputSchema.check` then checks each result with jsonschema's validator for the
dialect, changed in two ways. Every keyword applied costs steps from a :class:`Budget`
that grows with the size of the result (:func:`budget_for`), so no schema makes a check
run for long (two ``allOf`` branches referring to the next definition, 40 deep, would
take 2**40 steps). And the keywords that would give a server's regular expression to
``re`` (``pattern``, ``patternProperties``, ``additionalProperties``,
``unevaluatedProperties``), or cost time quadratic in the result (``uniqueItems``), are
done here instead, with the bounded matcher. A check past its budget, or nesting past
Python's recursion limit, raises ``InvalidToolSchema`` too; a result that does not
match raises :class:`~mcp_sync.ProtocolError`.

Imported only when a tool with an outputSchema is called (``import mcp_sync`` loads
neither this module nor ``jsonschema``).
"""

from __future__ import annotations

import contextvars
import copy
import itertools
from typing import Any, Dict, Iterator, List, Mapping, Set, Tuple

from jsonschema import exceptions as schema_errors
from jsonschema import validators
from referencing import Registry
from referencing import jsonschema as dialects
from referencing.exceptions import Unresolvable

from ..exceptions import InvalidToolSchema, ProtocolError, excerpt
from .pattern import Budget, Matcher, OverBudget, Unsupported, compile_pattern

__all__ = ["MAX_PATTERN_SIZE", "MAX_SCHEMA_DEPTH", "MAX_SCHEMA_VALUES", "OutputSchema",
           "budget_for"]

#: The most JSON values (objects, arrays, scalars, keys) one outputSchema may hold.
MAX_SCHEMA_VALUES = 20_000
#: How deep objects and arrays may nest in one outputSchema.
MAX_SCHEMA_DEPTH = 64
#: The most characters its strings and keys may hold, all together.
MAX_SCHEMA_CHARACTERS = 1_000_000
#: The most instructions its regular expressions may compile to, all together (the copies
#: the ``regex`` package builds counted alike): 9,000 distinct expressions within the
#: bounds above took 15 s and 170 MB to compile; this many take a fifth of a second.
MAX_PATTERN_SIZE = 200_000
#: The budget of one check: this many steps, plus STEPS_PER_VALUE for each JSON value of
#: the result and STEPS_PER_CHARACTER for each character of its strings and keys...
BASE_STEPS = 100_000
STEPS_PER_VALUE = 100
STEPS_PER_CHARACTER = 4
#: ...and never more than this. (A step takes jsonschema about 5 microseconds: a small
#: result's check ends within half a second, the largest within half a minute.)
MAX_STEPS = 5_000_000
#: A keyword costs one step (plus the length of its value when that is an array or an
#: object), a reference this many: resolving one takes jsonschema about as long.
REFERENCE_STEPS = 20
# The errors looked at to pick the one to report.
_MAX_ERRORS = 100

# The dialects checked, with how each finds subschemas and resolves references.
_DIALECTS = {
    validators.Draft4Validator: dialects.DRAFT4,
    validators.Draft6Validator: dialects.DRAFT6,
    validators.Draft7Validator: dialects.DRAFT7,
    validators.Draft201909Validator: dialects.DRAFT201909,
    validators.Draft202012Validator: dialects.DRAFT202012,
}
_REFERENCES = ("$ref", "$dynamicRef", "$recursiveRef")
# Keywords whose subschemas apply to the value itself, not to a part of it.
_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
_IN_PLACE = ("not", "if", "then", "else")


def budget_for(instance: Any) -> Tuple[int, int]:
    """``(values, steps)``: the size of a result and the steps its check may take."""
    values = characters = 0
    pending = [instance]
    while pending:
        value = pending.pop()
        values += 1
        if isinstance(value, str):
            characters += len(value)
        elif isinstance(value, dict):
            values += len(value)
            characters += sum(len(key) for key in value if isinstance(key, str))
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    steps = BASE_STEPS + STEPS_PER_VALUE * values + STEPS_PER_CHARACTER * characters
    return values, min(MAX_STEPS, steps)


def _measure(schema: Any) -> Tuple[int, int, int]:
    """``(values, depth, characters)`` of a JSON value, counting no further than past
    the bounds."""
    values = depth = characters = 0
    pending: List[Tuple[Any, int]] = [(schema, 1)]
    while pending and values <= MAX_SCHEMA_VALUES and depth <= MAX_SCHEMA_DEPTH and (
            characters <= MAX_SCHEMA_CHARACTERS):
        value, level = pending.pop()
        values += 1
        depth = max(depth, level)
        if isinstance(value, str):
            characters += len(value)
        elif isinstance(value, dict):
            values += len(value)
            characters += sum(len(key) for key in value if isinstance(key, str))
            pending.extend((item, level + 1) for item in value.values())
        elif isinstance(value, list):
            pending.extend((item, level + 1) for item in value)
    return values, depth, characters


# -- the check of one result -----------------------------------------------------------------


class _Check:
    """What the keywords of one check share: its budget and the compiled schema."""

    def __init__(self, schema: OutputSchema, budget: Budget) -> None:
        self.schema = schema
        self.budget = budget

    def search(self, pattern: str, text: str) -> bool:
        matcher = self.schema.matchers.get(pattern)
        if matcher is None:  # not seen in the schema's walk: compiled on the way, once
            matcher = self.schema.compile(pattern)
        return matcher.search(text, self.budget)

    def valid(self, validator: Any, instance: Any, subschema: Any) -> bool:
        resolver = self.schema.resolvers.get(id(subschema))
        errors = validator.descend(instance, subschema, resolver=resolver)
        return next(iter(errors), None) is None

    def evaluated_keys(self, validator: Any, instance: Dict[str, Any], schema: Any) -> Set[str]:
        """The properties of ``instance`` that ``schema`` evaluates, with the in-place
        subschemas of it that apply (the annotations ``unevaluatedProperties`` reads)."""
        self.budget.spend(1)
        if not isinstance(schema, dict):
            return set()
        keys: Set[str] = set()
        for keyword in _REFERENCES:
            target = self.schema.targets.get((id(schema), keyword))
            if keyword in schema and target is not None:
                keys |= self.evaluated_keys(validator, instance, target)
        properties = schema.get("properties")
        if isinstance(properties, dict):
            keys.update(key for key in properties if key in instance)
        patterns = schema.get("patternProperties")
        if isinstance(patterns, dict):
            keys.update(key for key in instance
                        if any(self.search(pattern, key) for pattern in patterns))
        for keyword in ("additionalProperties", "unevaluatedProperties"):
            if keyword in schema:
                keys.update(key for key, value in instance.items()
                            if self.valid(validator, value, schema[keyword]))
        dependent = schema.get("dependentSchemas")
        if isinstance(dependent, dict):
            for name, subschema in dependent.items():
                if name in instance:
                    keys |= self.evaluated_keys(validator, instance, subschema)
        for keyword in _IN_PLACE_LISTS:
            for subschema in schema.get(keyword, ()):
                if self.valid(validator, instance, subschema):
                    keys |= self.evaluated_keys(validator, instance, subschema)
        if "if" in schema:
            if self.valid(validator, instance, schema["if"]):
                keys |= self.evaluated_keys(validator, instance, schema["if"])
                if "then" in schema:
                    keys |= self.evaluated_keys(validator, instance, schema["then"])
            elif "else" in schema:
                keys |= self.evaluated_keys(validator, instance, schema["else"])
        return keys


# The check running on this thread, for the keywords below (jsonschema hands them only
# the validator, the keyword's value, the instance and the subschema).
_CURRENT: contextvars.ContextVar[_Check] = contextvars.ContextVar("mcp_sync_output_check")


def _listing(names: List[str]) -> str:
    shown = ", ".join(repr(name) for name in names[:20])
    more = f" and {len(names) - 20} more" if len(names) > 20 else ""
    return f"{shown}{more} {'was' if len(names) == 1 else 'were'} unexpected"


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    if validator.is_type(instance, "string") and not _CURRENT.get().search(pattern, instance):
        yield schema_errors.ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: Dict[str, Any], instance: Any,
                        schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    check = _CURRENT.get()
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if check.search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, allowed: Any, instance: Any,
                           schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    check = _CURRENT.get()
    properties = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    extras = [key for key in instance if key not in properties
              and not any(check.search(pattern, key) for pattern in patterns)]
    if validator.is_type(allowed, "object"):
        for key in extras:
            yield from validator.descend(instance[key], allowed, path=key)
    elif not allowed and extras:
        yield schema_errors.ValidationError(
            f"Additional properties are not allowed ({_listing(extras)})")


def _unevaluated_properties(validator: Any, unevaluated: Any, instance: Any,
                            schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    check = _CURRENT.get()
    evaluated = check.evaluated_keys(validator, instance, schema)
    refused = [key for key in instance if key not in evaluated
               and not check.valid(validator, instance[key], unevaluated)]
    if refused:
        kind = "allowed" if unevaluated is False else "valid under the given schema"
        yield schema_errors.ValidationError(
            f"Unevaluated properties are not {kind} ({_listing(refused)})")


def _canonical(value: Any) -> Any:
    """A hashable form of a JSON value, equal for values JSON Schema calls equal
    (``1`` and ``1.0``; not ``1`` and ``true``; objects whatever their key order)."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, float)):
        return ("number", value)
    if isinstance(value, list):
        return ("array", tuple(_canonical(item) for item in value))
    if isinstance(value, dict):
        return ("object", frozenset((key, _canonical(item)) for key, item in value.items()))
    return value


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[Any]:
    # In time linear in the array (jsonschema compares every pair of objects).
    if not unique or not validator.is_type(instance, "array"):
        return
    _CURRENT.get().budget.spend(len(instance))
    seen: Set[Any] = set()
    for item in instance:
        key = _canonical(item)
        if key in seen:
            yield schema_errors.ValidationError(f"{instance!r} has non-unique elements")
            return
        seen.add(key)


_OWN_KEYWORDS = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "unevaluatedProperties": _unevaluated_properties,
    "uniqueItems": _unique_items,
}


def _counted(keyword: Any, cost: int) -> Any:
    def apply(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        _CURRENT.get().budget.spend(
            len(value) + cost if isinstance(value, (list, dict)) else cost)
        return keyword(validator, value, instance, schema)

    return apply


# One validator class per dialect, made once (validators.extend registers nothing).
_classes: Dict[Any, Any] = {}


def _validator_class(dialect: Any) -> Any:
    made = _classes.get(dialect)
    if made is None:
        keywords = {name: _counted(_OWN_KEYWORDS.get(name, keyword),
                                   REFERENCE_STEPS if name in _REFERENCES else 1)
                    for name, keyword in dialect.VALIDATORS.items()}
        made = _classes[dialect] = validators.extend(dialect, keywords)
    return made


# -- the schema ---------------------------------------------------------------------------


class OutputSchema:
    """A tool's outputSchema, checked once, that checks results in bounded work.

    Can be shared between threads: :meth:`check` keeps its state on the calling thread.

    Raises:
        InvalidToolSchema: the schema cannot be used to check results (see the module).
    """

    def __init__(self, schema: Mapping[str, Any], tool: str, server: str) -> None:
        self.tool = tool
        self.server = server
        values, depth, characters = _measure(schema)
        if values > MAX_SCHEMA_VALUES:
            raise self.refuse(f"it holds more than {MAX_SCHEMA_VALUES:,} JSON values")
        if depth > MAX_SCHEMA_DEPTH:
            raise self.refuse(f"it nests deeper than {MAX_SCHEMA_DEPTH} levels")
        if characters > MAX_SCHEMA_CHARACTERS:
            raise self.refuse(f"its strings hold more than {MAX_SCHEMA_CHARACTERS:,} "
                              "characters")
        # 2020-12 is MCP's default; passing it also keeps an unknown "$schema" quiet.
        dialect = validators.validator_for(schema, default=validators.Draft202012Validator)
        specification = _DIALECTS.get(dialect)
        if specification is None:
            raise self.refuse("its $schema names JSON Schema draft 3, which the client "
                              "does not check")
        try:
            # No format is checked: "regex" would give each pattern to re.compile(), which
            # takes seconds for some (wide Unicode classes). The walk below compiles the
            # patterns with the bounded matcher instead, which refuses what it cannot run.
            error = schema_errors.best_match(dialect(dialect.META_SCHEMA).iter_errors(schema))
        except RecursionError:
            raise self.refuse("it nests too deep to check") from None
        if error is not None:
            raise self.refuse(f"it is not a valid JSON schema: {excerpt(error.message, 300)}")
        self.dialect = dialect
        self.root = copy.deepcopy(dict(schema))
        #: Every subschema, by id(), with the resolver of its place (base URI).
        self.nodes: Dict[int, Dict[str, Any]] = {}
        self.resolvers: Dict[int, Any] = {}
        #: Where each reference leads: (id(subschema), keyword) -> the subschema it names.
        self.targets: Dict[Tuple[int, str], Any] = {}
        self.matchers: Dict[str, Matcher] = {}
        self.pattern_size = 0
        expressions = self._walk(specification)
        self._resolve_references()
        self._find_loops()
        for expression in expressions:
            self.compile(expression)
        self.validator = _validator_class(dialect)(self.root, registry=Registry())

    def refuse(self, reason: str) -> InvalidToolSchema:
        return InvalidToolSchema(
            f"outputSchema of tool {excerpt(repr(self.tool), 120)} of {self.server} cannot "
            f"check its results: {reason}", tool=self.tool, server=self.server, reason=reason)

    def compile(self, expression: str) -> Matcher:
        """The bounded matcher of one of the schema's expressions, counted against
        :data:`MAX_PATTERN_SIZE` (each expression is bounded on its own as well: see
        :func:`~mcp_sync._schema.pattern.compile_pattern`).

        Raises:
            InvalidToolSchema: the expression cannot be run so, or the schema's
                expressions together pass the bound.
        """
        try:
            matcher = compile_pattern(expression)
        except Unsupported as exc:
            raise self.refuse(f"its pattern {excerpt(repr(expression), 100)} uses {exc}"
                              ) from None
        # Past the walk (see _Check.search) this runs under no lock: two threads may both
        # count one expression, which only refuses sooner.
        self.pattern_size += matcher.size
        if self.pattern_size > MAX_PATTERN_SIZE:
            raise self.refuse(f"its patterns compile to more than {MAX_PATTERN_SIZE:,} "
                              "instructions in all")
        self.matchers[expression] = matcher
        return matcher

    def _walk(self, specification: Any) -> Set[str]:
        """Visit every subschema: note its resolver, take out its ``$schema``; return the
        expressions of its ``pattern`` and ``patternProperties`` keywords."""
        expressions: Set[str] = set()
        root_resolver = Registry().resolver_with_root(specification.create_resource(self.root))
        pending: List[Tuple[Any, Any]] = [(self.root, root_resolver)]
        while pending:
            node, resolver = pending.pop()
            if not isinstance(node, dict) or id(node) in self.nodes:
                continue
            # jsonschema picks the validator of a subschema (the root too, reached by a
            # reference) by its "$schema": one naming the dialect would be checked by
            # jsonschema's own, unbounded one.
            if "$schema" in node:
                named = validators.validator_for(node, default=self.dialect)
                if named is not self.dialect:
                    raise self.refuse(f"a subschema names another dialect, "
                                      f"{excerpt(repr(node['$schema']), 100)}")
                del node["$schema"]
            try:
                resolver = resolver.in_subresource(specification.create_resource(node))
            except ValueError:  # an $id urllib cannot split, such as "http://[::1"
                keyword = "$id" if "$id" in node else "id"
                raise self.refuse(f"its {keyword} {excerpt(repr(node.get(keyword)), 100)} "
                                  "is not a usable URI") from None
            self.nodes[id(node)] = node
            self.resolvers[id(node)] = resolver
            if isinstance(node.get("pattern"), str) and "pattern" in self.dialect.VALIDATORS:
                expressions.add(node["pattern"])
            if isinstance(node.get("patternProperties"), dict):
                expressions.update(node["patternProperties"])
            pending.extend((child, resolver) for child in specification.subresources_of(node))
        return expressions

    def _resolve_references(self) -> None:
        for key, node in self.nodes.items():
            for keyword in _REFERENCES:
                reference = node.get(keyword)
                if keyword not in self.dialect.VALIDATORS or not isinstance(reference, str):
                    continue
                shown = excerpt(repr(reference), 200)
                try:
                    target = self.resolvers[key].lookup(reference).contents
                except Unresolvable:
                    raise self.refuse(f"its {keyword} {shown} leads to nothing in the schema "
                                      "(the client fetches and reads nothing)") from None
                except Exception:  # noqa: BLE001 - a URI urllib cannot even split
                    raise self.refuse(f"its {keyword} {shown} is not a usable reference"
                                      ) from None
                if not isinstance(target, bool) and id(target) not in self.nodes:
                    raise self.refuse(f"its {keyword} {shown} leads to something that is "
                                      "not a subschema")
                self.targets[(key, keyword)] = target

    def _in_place(self, node: Dict[str, Any]) -> Iterator[Any]:
        """The subschemas that apply to the same value as ``node``."""
        key = id(node)
        for keyword in _REFERENCES:
            if (key, keyword) in self.targets:
                yield self.targets[(key, keyword)]
        for keyword in _IN_PLACE_LISTS:
            if keyword in self.dialect.VALIDATORS:
                yield from node.get(keyword, ())
        for keyword in _IN_PLACE:
            if keyword in node and ("if" if keyword in ("then", "else") else keyword) in (
                    self.dialect.VALIDATORS):
                yield node[keyword]
        for keyword in ("dependentSchemas", "dependencies"):
            if isinstance(node.get(keyword), dict) and keyword in self.dialect.VALIDATORS:
                yield from node[keyword].values()

    def _find_loops(self) -> None:
        """Refuse a schema whose in-place subschemas lead back to themselves: checking
        would recurse until Python's recursion limit, whatever the value."""
        done: Set[int] = set()
        for start in self.nodes.values():
            if id(start) in done:
                continue
            on_path = {id(start)}
            stack = [(start, iter(list(self._in_place(start))))]
            while stack:
                node, children = stack[-1]
                child = next(children, None)
                if child is None:
                    stack.pop()
                    on_path.discard(id(node))
                    done.add(id(node))
                elif isinstance(child, dict) and id(child) not in done:
                    if id(child) in on_path:
                        raise self.refuse("it refers to itself without looking into the "
                                          "value (a check would never end)")
                    on_path.add(id(child))
                    stack.append((child, iter(list(self._in_place(child)))))

    def check(self, instance: Any) -> None:
        """Check one result's ``structuredContent``.

        Raises:
            ProtocolError: it does not match the schema.
            InvalidToolSchema: checking it would take more than its budget of steps,
                or nest past Python's recursion limit.
        """
        values, steps = budget_for(instance)
        token = _CURRENT.set(_Check(self, Budget(steps)))
        try:
            errors = self.validator.iter_errors(instance)
            error = schema_errors.best_match(itertools.islice(errors, _MAX_ERRORS))
        except OverBudget as exc:
            raise self.refuse(f"checking a result of {values:,} JSON "
                              f"value{'' if values == 1 else 's'} against it takes {exc}, "
                              "past the bound for a result of that size") from None
        except RecursionError:
            raise self.refuse("checking this result against it nests deeper than Python's "
                              "recursion limit") from None
        except Unresolvable as exc:  # the walk resolved every reference: not expected
            raise self.refuse(f"it refers to {excerpt(repr(getattr(exc, 'ref', '?')), 200)}, "
                              "which is not in the schema") from None
        finally:
            _CURRENT.reset(token)
        if error is not None:
            raise ProtocolError(
                f"structuredContent of tool {excerpt(repr(self.tool), 120)} of {self.server} "
                f"does not match its outputSchema at {excerpt(error.json_path, 120)}: "
                f"{excerpt(error.message, 300)}"
            ) from None  # the validator's error holds the whole instance and schema, raw
