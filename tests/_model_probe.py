"""Use every public model and type of ``mcp_sync.types`` once and print what it did.

Run as a script in a fresh interpreter (tests/project/test_lazy_types.py does)::

    python tests/_model_probe.py eager|lazy SEED

``eager`` builds every model of the module first, in the order the module defines them
(what importing the module did before models were built on first use); ``lazy`` builds
nothing beforehand, checks that importing built nothing, and uses the names in an order
shuffled by SEED, so that each model is built by whichever use comes first.  For every
name it validates sample data (minimal data made from the fields, plus the specification's
examples for that definition), validates data that must fail, serializes what it parsed
in each of the ways the library does, and writes JSON schemas.  The output, one JSON
object on stdout, must be the same for every mode and seed.
"""

from __future__ import annotations

import importlib
import json
import random
import sys
import threading
import typing
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import pydantic
from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo

import mcp_sync.types as T

EXAMPLES_2026_DIR = Path(__file__).resolve().parent / "spec" / "2026-07-28" / "examples"

# Constants re-exported by the module; everything else in __all__ is a model or a type.
CONSTANT_TYPES = (str, int, frozenset, tuple)


def _literal_values(annotation: Any) -> Tuple[Any, ...]:
    return typing.get_args(annotation)


def sample(annotation: Any, depth: int = 0) -> Any:
    """Minimal data valid for ``annotation``, made from its fields (never builds a model)."""
    if depth > 20:
        return None
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is Any or annotation is object:
        return {"any": [1, "two"]}
    if origin is typing.Annotated:
        return sample(args[0], depth + 1)
    if origin is typing.Literal:
        return args[0]
    if origin is typing.Union:
        options = [arg for arg in args if arg is not type(None)]
        return sample(options[0], depth + 1)
    if origin in (list, List, typing.Sequence):
        return [sample(args[0], depth + 1)] if args else []
    if origin in (dict, Dict):
        return {"key": sample(args[1], depth + 1)} if args else {}
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return sample_model(annotation, depth + 1)
    if isinstance(annotation, typing.TypeVar):
        return None
    for kind, value in ((bool, True), (int, 7), (float, 1.5), (str, "text")):
        if annotation is kind:
            return value
    if isinstance(annotation, type) and issubclass(annotation, list):
        return []
    raise TypeError(f"no sample for {annotation!r}")


def sample_model(model: type, depth: int = 0) -> Dict[str, Any]:
    assert issubclass(model, BaseModel)
    data: Dict[str, Any] = {}
    fields: Dict[str, FieldInfo] = model.model_fields
    for name, field in fields.items():
        wire = field.validation_alias if isinstance(field.validation_alias, str) else None
        wire = wire or field.alias or name
        if field.is_required():
            data[wire] = sample(field.annotation, depth)
        elif isinstance(field.default, (str, int, float)):
            data[wire] = field.default  # a tag (``type``, ``method``): unions dispatch on it
    return data


def wrong(model: type) -> Any:
    """Data that must fail: each required field given a value of the wrong kind."""
    assert issubclass(model, BaseModel)
    bad: Dict[str, Any] = {}
    for name, field in model.model_fields.items():
        if field.is_required():
            bad[field.alias or name] = [object.__name__, {"nested": [None]}]
    return bad if bad else "not an object"


def public_names() -> List[str]:
    names = []
    for name in T.__all__:
        value = getattr(T, name)
        if isinstance(value, CONSTANT_TYPES):
            continue
        names.append(name)
    return names


def examples() -> Dict[str, List[Any]]:
    found: Dict[str, List[Any]] = {}
    for path in sorted(EXAMPLES_2026_DIR.glob("*/*.json")):
        definition = path.parent.name
        name = definition + "2026" if hasattr(T, definition + "2026") else definition
        found.setdefault(name, []).append(json.loads(path.read_text(encoding="utf-8")))
    return found


def _text(value: Any) -> str:
    # Key order is kept (no sort_keys): serialization order is part of what is compared.
    return json.dumps(value, default=repr)


def _failure(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return _text({
            "type": type(exc).__name__,
            "title": exc.title,
            "errors": exc.errors(include_url=False),
            "str": str(exc),
        })
    return _text({"type": type(exc).__name__, "str": str(exc)})


def model_probes(model: type, samples: List[Any], bad: Any) -> Dict[str, Callable[[], str]]:
    assert issubclass(model, BaseModel)

    def parse_all() -> str:
        out = []
        for data in samples:
            try:
                parsed = model.model_validate(data)
            except ValidationError as exc:
                out.append(_failure(exc))
                continue
            out.append(_text({
                "class": type(parsed).__name__,
                "wire": parsed.to_wire() if isinstance(parsed, T.MCPModel) else None,
                "dump": parsed.model_dump(),
                "dump_alias": parsed.model_dump(by_alias=True),
                "json": parsed.model_dump_json(by_alias=True, exclude_none=True),
                "fields_set": sorted(parsed.model_fields_set),
            }))
        return _text(out)

    def parse_json() -> str:
        out = []
        for data in samples:
            try:
                parsed = model.model_validate_json(json.dumps(data))
                out.append(_text({"class": type(parsed).__name__, "dump": parsed.model_dump()}))
            except ValidationError as exc:
                out.append(_failure(exc))
        return _text(out)

    def construct() -> str:
        made = model(**samples[0]) if isinstance(samples[0], dict) else None
        return _text(made.model_dump(by_alias=True) if made is not None else None)

    def reject() -> str:
        try:
            model.model_validate(bad)
        except ValidationError as exc:
            return _failure(exc)
        return "accepted"

    def schemas() -> str:
        return _text([
            model.model_json_schema(),
            model.model_json_schema(by_alias=False),
            model.model_json_schema(mode="serialization"),
        ])

    return {
        "parse": parse_all, "parse_json": parse_json, "construct": construct,
        "reject": reject, "schema": schemas,
    }


def type_probes(annotation: Any, samples: List[Any]) -> Dict[str, Callable[[], str]]:
    def adapted() -> str:
        adapter: TypeAdapter[Any] = TypeAdapter(annotation)
        out = []
        for data in [*samples, "not a value of this type", [None]]:
            try:
                parsed = adapter.validate_python(data)
            except ValidationError as exc:
                out.append(_failure(exc))
                continue
            out.append(_text({
                "class": type(parsed).__name__,
                "wire": adapter.dump_python(parsed, mode="json", by_alias=True, exclude_none=True),
                "json": adapter.dump_json(parsed, by_alias=True).decode(),
            }))
        out.append(_text(adapter.json_schema()))
        out.append(_text(adapter.json_schema(mode="serialization")))
        return _text(out)

    return {"adapter": adapted}


# The modules that define the models ``mcp_sync.types`` serves, in the order it loads them.
MODEL_MODULES = ("mcp_sync._types.core", "mcp_sync._types.protocol")


def models_in_definition_order(loaded_only: bool = False) -> List[type]:
    """Every model class of ``mcp_sync.types``, or of its modules already loaded."""
    modules = [sys.modules.get(name) if loaded_only else importlib.import_module(name)
               for name in MODEL_MODULES]
    return [
        value for module in modules if module is not None for value in vars(module).values()
        if isinstance(value, type) and issubclass(value, BaseModel)
        and value.__module__ == module.__name__
    ]


def race(threads: int) -> Dict[str, Any]:
    """Use each model for the first time from ``threads`` threads at once.

    Models go in definition order, so a subclass races after its parent was built (a
    build that reads its parent's validator or schema would show here).  Each thread of a
    model waits at a barrier, then parses, serializes, or writes the JSON schema first
    (each thread starts with another one); every thread's results must equal what the
    built model gives afterwards, on one thread.
    """
    sys.setswitchinterval(1e-5)
    models = [m for m in models_in_definition_order() if not m.__name__.startswith("_")]
    unions = [
        getattr(T, name) for name in public_names()
        if not isinstance(getattr(T, name), type) and name != "MetaField"
    ]
    failures: List[str] = []
    raced = 0

    def uses(target: Any, data: Any) -> List[Callable[[], str]]:
        if isinstance(target, type):
            def parse() -> str:
                parsed = target.model_validate(data)
                return _text([type(parsed).__name__, parsed.to_wire()])

            def dump() -> str:
                return _text(target(**data).model_dump(by_alias=True))

            def schema() -> str:
                return _text(target.model_json_schema())

            return [parse, dump, schema]

        def adapted() -> str:
            adapter: TypeAdapter[Any] = TypeAdapter(target)
            parsed = adapter.validate_python(data)
            return _text([type(parsed).__name__, adapter.dump_python(parsed, mode="json")])

        return [adapted]

    def run(steps: List[Callable[[], str]], first: int, barrier: threading.Barrier,
            results: List[Any], index: int) -> None:
        outcomes: List[str] = [""] * len(steps)
        barrier.wait(timeout=60)
        for turn in range(len(steps)):
            at = (first + turn) % len(steps)
            try:
                outcomes[at] = steps[at]()
            except Exception as exc:  # noqa: BLE001 - a failure is what this looks for
                outcomes[at] = "raised " + _failure(exc)
        results[index] = outcomes

    for target in [*models, *unions]:
        data = sample_model(target) if isinstance(target, type) else sample(target)
        steps = uses(target, data)
        barrier = threading.Barrier(threads)
        results: List[Any] = [None] * threads
        workers = [
            threading.Thread(target=run, args=(steps, index % len(steps), barrier, results, index))
            for index in range(threads)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=120)
        expected = []
        for step in steps:
            try:
                expected.append(step())
            except Exception as exc:  # noqa: BLE001
                expected.append("raised " + _failure(exc))
        name = getattr(target, "__name__", repr(target))
        for index, got in enumerate(results):
            if got != expected:
                failures.append(f"{name} thread {index}: {got!r:.600} != {expected!r:.600}")
        raced += 1
    return {"raced": raced, "failures": failures}


def main() -> None:
    mode, seed = sys.argv[1], int(sys.argv[2])
    if mode == "race":
        print(json.dumps(race(threads=seed)))
        return
    built_at_import = sorted(m.__name__ for m in models_in_definition_order(loaded_only=True)
                             if m.__pydantic_complete__)
    if mode == "eager":
        for model in models_in_definition_order():
            model.model_rebuild()
        assert all(m.__pydantic_complete__ for m in models_in_definition_order())
    found = examples()
    names = public_names()
    probes: List[Tuple[str, str, Callable[[], str]]] = []
    rng = random.Random(seed)
    for name in names:
        value = getattr(T, name)
        if isinstance(value, type) and issubclass(value, BaseModel):
            samples = [sample_model(value), *found.get(name, [])]
            named = model_probes(value, samples, wrong(value))
        else:
            samples = [sample(value), *found.get(name, [])]
            named = type_probes(value, samples)
        keys = list(named)
        rng.shuffle(keys)
        probes.extend((name, key, named[key]) for key in keys)
    if mode == "lazy":
        rng.shuffle(probes)
    results: Dict[str, Dict[str, str]] = {}
    for name, key, probe in probes:
        try:
            outcome = probe()
        except Exception as exc:  # noqa: BLE001 - any failure is a result to compare too
            outcome = "raised " + _failure(exc)
        results.setdefault(name, {})[key] = outcome
    print(json.dumps({
        "pydantic": pydantic.VERSION,
        "built_at_import": built_at_import,
        "names": len(names),
        "results": {name: results[name] for name in sorted(results)},
    }))


if __name__ == "__main__":
    main()
