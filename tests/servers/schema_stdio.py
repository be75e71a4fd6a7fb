"""An MCP server over stdio whose tools declare hostile outputSchemas (issue 19, §1 and §6),
built on mcp_sync.testing.FakeServer.

Every tool returns ``structuredContent`` from its arguments: ``{"value": value}``, or, for
``any_value``, ``value`` itself; with ``key``, ``{key: value}``; with ``next``,
``{"next": {"value": value}}``. A ``text`` or ``key`` argument is grown into
``text * text_times + text_tail`` first (``key`` likewise), so that a test can ask for a
megabyte without sending one; ``unique_objects: n`` makes the value ``n`` distinct
objects.

=======================  ===================================================================
tool                     its outputSchema
=======================  ===================================================================
``remote_ref``           ``value`` is a ``$ref`` to ``--ref-url`` (an HTTP URL)
``file_ref``             ``value`` is a ``$ref`` to ``file://`` + ``--ref-file``
``path_ref``             ``value`` is a ``$ref`` to ``--ref-file``, a bare path
``dev_zero``             ``value`` is a ``$ref`` to ``/dev/zero``
``meta_ref``             ``$ref`` to the JSON Schema 2020-12 meta-schema (not fetched either)
``dangling``             ``$ref`` to ``#/$defs/missing``
``self_ref``             ``{"$ref": "#"}``
``loop``                 two definitions referring to each other through ``allOf``
``invalid``              ``{"type": 12}``
``huge``                 an object of 30,000 properties
``deep``                 objects nested 100 deep
``other_dialect``        a subschema whose ``$schema`` is draft 7, with a backtracking pattern
``bad_id``               an ``$id`` urllib cannot split (``http://[::1``) under a real one
``backtracking``         ``value`` must match ``^(a+)+$`` (exponential for ``re``)
``backtracking_keys``    property names must match ``^(a+)+$`` (``additionalProperties``)
``backtracking_unevaluated``  the same with ``unevaluatedProperties``
``backtracking_root``    ``$schema`` at the root, and a ``$ref`` back to it around the pattern
``backtracking_regex``   a lookahead and a backtracking pattern (for the ``regex`` package)
``exponential``          ``allOf`` of two ``$ref``s to the next definition, 40 deep (2**40)
``unique``               ``value`` is an array with ``uniqueItems`` (quadratic in jsonschema)
``local_ref``            ``value`` is a ``$ref`` to a number in ``$defs`` (resolved: fine)
``any_value``            2026-07-28: an array of integers (structuredContent is any value)
=======================  ===================================================================

Options: ``--ref-url URL``, ``--ref-file PATH``, ``--stateless`` (serve 2026-07-28 too).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Dict

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcp_sync.testing import FakeServer

parser = argparse.ArgumentParser()
parser.add_argument("--ref-url", default="http://127.0.0.1:9/schema.json")
parser.add_argument("--ref-file", default="/etc/hostname")
parser.add_argument("--stateless", action="store_true")
options = parser.parse_args()

VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
server = FakeServer("schemas", "1.0.0", protocol_versions=VERSIONS)

BACKTRACKING = "^(a+)+$"
# 2**40 checks of "type" for a check that follows every reference.
EXPONENTIAL: Dict[str, Any] = {"d0": {"type": "object"}}
for level in range(1, 41):
    EXPONENTIAL[f"d{level}"] = {"allOf": [{"$ref": f"#/$defs/d{level - 1}"},
                                          {"$ref": f"#/$defs/d{level - 1}"}]}
DEEP: Dict[str, Any] = {"type": "string"}
for _ in range(50):
    DEEP = {"type": "object", "properties": {"value": DEEP}}


def value_of(schema: Dict[str, Any]) -> Dict[str, Any]:
    return {"type": "object", "properties": {"value": schema}}


SCHEMAS: Dict[str, Dict[str, Any]] = {
    "remote_ref": value_of({"$ref": options.ref_url}),
    "file_ref": value_of({"$ref": Path(options.ref_file).resolve().as_uri()}),
    "path_ref": value_of({"$ref": options.ref_file}),
    "dev_zero": value_of({"$ref": "/dev/zero"}),
    "meta_ref": {"type": "object", "$ref": "https://json-schema.org/draft/2020-12/schema"},
    "dangling": {"type": "object", "$ref": "#/$defs/missing"},
    "self_ref": {"$ref": "#"},
    "loop": {"$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]},
                       "b": {"allOf": [{"$ref": "#/$defs/a"}]}},
             "type": "object", "$ref": "#/$defs/a"},
    "invalid": {"type": 12},
    "huge": {"type": "object",
             "properties": {f"p{index}": {"type": "string"} for index in range(30_000)}},
    "deep": DEEP,
    "other_dialect": value_of({"$schema": "http://json-schema.org/draft-07/schema#",
                               "pattern": BACKTRACKING}),
    "bad_id": {"$id": "https://example.com/out", "type": "object",
               "properties": {"value": {"$id": "http://[::1"}}},
    "backtracking": value_of({"type": "string", "pattern": BACKTRACKING}),
    "backtracking_keys": {"type": "object", "properties": {"value": {}},
                          "patternProperties": {BACKTRACKING: {}},
                          "additionalProperties": False},
    "backtracking_unevaluated": {"type": "object", "properties": {"value": {}},
                                 "patternProperties": {BACKTRACKING: {}},
                                 "unevaluatedProperties": False},
    "backtracking_root": {"$schema": "https://json-schema.org/draft/2020-12/schema",
                          "type": "object",
                          "properties": {"value": {"pattern": BACKTRACKING},
                                         "next": {"$ref": "#"}}},
    "backtracking_regex": value_of({"type": "string", "pattern": "^(?=x?)(a|aa)+$"}),
    "exponential": {"type": "object", "$defs": EXPONENTIAL, "$ref": "#/$defs/d40"},
    "unique": value_of({"type": "array", "uniqueItems": True}),
    "local_ref": {"type": "object", "$defs": {"number": {"type": "number"}},
                  "properties": {"value": {"$ref": "#/$defs/number"}}},
    "any_value": {"type": "array", "items": {"type": "integer"}},
}


def grown(arguments: Dict[str, Any], name: str) -> str:
    """``arguments[name] * arguments[name_times] + arguments[name_tail]``."""
    return (arguments[name] * int(arguments.get(f"{name}_times", 1))
            + arguments.get(f"{name}_tail", ""))


def expand(arguments: Dict[str, Any]) -> Any:
    if "text" in arguments:
        return grown(arguments, "text")
    if "unique_objects" in arguments:
        return [{"i": index} for index in range(int(arguments["unique_objects"]))]
    return arguments.get("value")


def make_tool(name: str, schema: Dict[str, Any]) -> None:
    def tool(**arguments: Any) -> Dict[str, Any]:
        value = expand(arguments)
        if "key" in arguments:  # a property name, for the patternProperties cases
            structured: Any = {grown(arguments, "key"): value}
        elif name == "any_value":
            structured = value
        elif "next" in arguments:  # one level down, for backtracking_root
            structured = {"next": {"value": value}}
        else:
            structured = {"value": value}
        return {"content": [{"type": "text", "text": "done"}], "structuredContent": structured}

    server.tool(name=name, description=f"outputSchema case {name}",
                input_schema={"type": "object"}, output_schema=schema)(tool)


for tool_name, tool_schema in SCHEMAS.items():
    make_tool(tool_name, tool_schema)


@server.tool(input_schema={"type": "object"})
def received(method: str) -> Any:
    """How many messages of ``method`` this server received (calls of this tool aside)."""
    return {"count": sum(1 for connection in server.connections
                         for message in connection.received if message.get("method") == method
                         and (message.get("params") or {}).get("name") != "received")}


if options.stateless:
    @server.method("server/discover")
    def discover(params: Dict[str, Any]) -> Dict[str, Any]:
        return {"resultType": "complete", "supportedVersions": ["2026-07-28", *VERSIONS],
                "capabilities": server.capabilities(),
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": server.name,
                                                                 "version": server.version}}}

server.serve_stdio()
