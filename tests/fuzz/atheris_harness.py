"""Coverage-guided fuzzing (atheris, i.e. libFuzzer) of the targets in ``targets.py``.

    python tests/fuzz/atheris_harness.py TARGET [libFuzzer flags]

``TARGET`` is ``routing`` (a message built from the input, through ``classify`` and both
of the session's delivery paths), ``jsonl`` (the stdio reader on the input cut into
chunks), ``sse`` (the SSE decoder, ``iter_events`` and the HTTP transport's delivery on
the input cut into chunks) or ``schema`` (an outputSchema built from hostile pieces, and a
result checked against it). The flags go to libFuzzer, e.g. ``-max_total_time=60``,
``-runs=100000``, ``-artifact_prefix=/tmp/crashes/``. A broken property or any exception
stops the run with a non-zero status and saves the input (``crash-<sha1>``).

CI runs each target for a bounded time
(``tests/security/test_fuzz.py::test_atheris_harness_runs_clean``); ``bench/reliability.py
--full`` runs them longer.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

# Instrumented, so that libFuzzer sees which branches of the library an input reaches.
with atheris.instrument_imports(include=["mcp_sync", "tests.fuzz"]):
    import mcp_sync._schema.checker  # noqa: F401 - imported by the schema target when it runs
    from tests.fuzz import targets

# The session logs every message it skips; a million of them help no one here.
logging.disable(logging.CRITICAL)

IDS: List[Any] = [1, 2, 3, 4, 0, -1, True, False, 1.0, 2.0, "1", "", None, [1], {"id": 1}]
METHODS: List[Any] = ["ping", "tools/call", "roots/list", "notifications/progress",
                      "notifications/message", "notifications/cancelled",
                      "sampling/createMessage", "elicitation/create", "", None, 5, ["x"]]
ERRORS: List[Any] = [{"code": -32601, "message": "nope"}, {"code": 1}, {"code": "x"},
                     {"code": True, "message": 5}, {"message": "no code"}, {}, None, "boom",
                     [1], {"code": -1, "message": "m", "data": {"a": [1]}}]


def _pick(fdp: Any, menu: List[Any]) -> Any:
    return menu[fdp.ConsumeIntInRange(0, len(menu) - 1)]


def _json_value(fdp: Any, depth: int = 0) -> Any:
    choice = fdp.ConsumeIntInRange(0, 7 if depth < 4 else 5)
    if choice == 0:
        return None
    if choice == 1:
        return fdp.ConsumeBool()
    if choice == 2:
        return fdp.ConsumeInt(4)
    if choice == 3:
        return fdp.ConsumeRegularFloat()
    if choice in (4, 5):
        return fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 12))
    if choice == 6:
        return [_json_value(fdp, depth + 1) for _ in range(fdp.ConsumeIntInRange(0, 3))]
    return {fdp.ConsumeUnicodeNoSurrogates(4): _json_value(fdp, depth + 1)
            for _ in range(fdp.ConsumeIntInRange(0, 3))}


def _params(fdp: Any) -> Any:
    if fdp.ConsumeIntInRange(0, 3) == 0:
        return _json_value(fdp)
    params: Dict[str, Any] = {}
    for key in ("progressToken", "progress", "requestId", "level", "data", "_meta"):
        if fdp.ConsumeBool():
            params[key] = _pick(fdp, IDS) if key in ("progressToken", "requestId") else (
                _json_value(fdp))
    return params


def _message(fdp: Any) -> Any:
    """A JSON-RPC-shaped message with every field present or not, right or wrong."""
    if fdp.ConsumeIntInRange(0, 7) == 0:
        raw = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 256))
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):
            return _json_value(fdp)
    message: Dict[str, Any] = {}
    makers: Dict[str, Callable[[], Any]] = {
        "jsonrpc": lambda: _pick(fdp, ["2.0", "1.0", 2, None]),
        "id": lambda: _pick(fdp, IDS) if fdp.ConsumeBool() else fdp.ConsumeInt(2),
        "method": lambda: _pick(fdp, METHODS),
        "result": lambda: _json_value(fdp),
        "error": lambda: _pick(fdp, ERRORS),
        "params": lambda: _params(fdp),
    }
    for key, make in makers.items():
        if fdp.ConsumeBool():
            message[key] = make()
    return message


def _cuts(fdp: Any) -> List[int]:
    return [fdp.ConsumeIntInRange(0, 4096) for _ in range(fdp.ConsumeIntInRange(0, 8))]


def fuzz_routing(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    message = _message(fdp)
    targets.check_classify(message)
    targets.check_routing(message)


def fuzz_jsonl(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    limit = fdp.ConsumeIntInRange(1, 128)
    cuts = _cuts(fdp)
    targets.check_jsonl(fdp.ConsumeBytes(fdp.remaining_bytes()), cuts, limit)


def fuzz_sse(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    read_size = fdp.ConsumeIntInRange(1, 64)
    cuts = _cuts(fdp)
    targets.check_sse(fdp.ConsumeBytes(fdp.remaining_bytes()), cuts, read_size)


REFERENCES: List[Any] = ["#", "#/$defs/a", "#/$defs/missing", "#/properties/v", "#/enum/0", "#a",
                         "http://127.0.0.1:9/x.json", "file:///etc/passwd", "/dev/zero",
                         "https://json-schema.org/draft/2020-12/schema", "x.json", "", 5]
EXPRESSIONS: List[Any] = ["^(a+)+$", "(a|a)*!", "(a*)*b", "(?=a)", "(a)\\1", "a{3000}", "^[a-z]+$",
                          "", "[", "\\bw$", "(?i)A", "^(a|aa)+$"]
DIALECTS: List[Any] = ["http://json-schema.org/draft-07/schema#", "junk",
                       "https://json-schema.org/draft/2020-12/schema",
                       "http://json-schema.org/draft-03/schema#"]
KEYS: List[Any] = ["v", "a", "a" * 40 + "!", "$schema"]
LEAVES: Dict[str, List[Any]] = {
    "type": ["object", "string", "integer", "array", ["string", "null"], 12],
    "pattern": EXPRESSIONS, "$ref": REFERENCES, "$dynamicRef": REFERENCES,
    "$schema": DIALECTS, "$anchor": ["a", "1bad"], "$id": ["http://x/y", "urn:a", "#f"],
    "uniqueItems": [True, False], "minLength": [0, 2, -1],
}
SINGLE = ["not", "if", "then", "else", "additionalProperties", "unevaluatedProperties",
          "items", "contains", "propertyNames"]
LISTS = ["allOf", "anyOf", "oneOf", "prefixItems"]
MAPS = ["properties", "patternProperties", "$defs", "dependentSchemas"]


def _schema(fdp: Any, depth: int = 0) -> Any:
    """A schema of keywords from the menus above, nested a few levels deep."""
    if fdp.ConsumeIntInRange(0, 9) == 0:
        return fdp.ConsumeBool()
    schema: Dict[str, Any] = {}
    for _ in range(fdp.ConsumeIntInRange(0, 4)):
        kind = fdp.ConsumeIntInRange(0, 3 if depth < 3 else 0)
        if kind == 0:
            key = _pick(fdp, list(LEAVES))
            schema[key] = _pick(fdp, LEAVES[key])
        elif kind == 1:
            schema[_pick(fdp, SINGLE)] = _schema(fdp, depth + 1)
        elif kind == 2:
            schema[_pick(fdp, LISTS)] = [_schema(fdp, depth + 1)
                                         for _ in range(fdp.ConsumeIntInRange(1, 3))]
        else:
            names = EXPRESSIONS if fdp.ConsumeBool() else [*KEYS, "a", "b"]
            schema[_pick(fdp, MAPS)] = {_pick(fdp, names): _schema(fdp, depth + 1)
                                        for _ in range(fdp.ConsumeIntInRange(1, 3))}
    return schema


def fuzz_schema(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    schema = _schema(fdp)
    if fdp.ConsumeBool():
        instance = {_pick(fdp, KEYS): _pick(fdp, ["a" * 40 + "!", 1, [{"a": 1}] * 2, None])
                    for _ in range(fdp.ConsumeIntInRange(0, 3))}
    else:
        instance = _json_value(fdp)
    targets.check_output_schema(schema, instance)


TARGETS = {"routing": fuzz_routing, "jsonl": fuzz_jsonl, "sse": fuzz_sse, "schema": fuzz_schema}


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        sys.stderr.write(f"usage: {sys.argv[0]} {{{','.join(TARGETS)}}} [libFuzzer flags]\n")
        sys.exit(2)
    target = TARGETS[sys.argv[1]]
    atheris.Setup([sys.argv[0], *sys.argv[2:]], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
