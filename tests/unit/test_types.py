"""Tests for mcp_sync.types: wire parsing, round trips, tolerance and schema coverage."""

import copy
import json
import typing
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from mcp_sync import types as T

from .._model_probe import models_in_definition_order

SPEC_DIR = Path(__file__).resolve().parents[1] / "spec"  # copies, see tests/spec/README.md
SCHEMA_PATH = SPEC_DIR / "2025-11-25" / "schema.json"
SCHEMA_2026_PATH = SPEC_DIR / "2026-07-28" / "schema.json"
EXAMPLES_2026_DIR = SPEC_DIR / "2026-07-28" / "examples"

# Schema definitions that are not object types: unions, scalars and the EmptyResult alias.
# They exist in mcp_sync.types as type aliases rather than classes.
NON_OBJECT_DEFS = {
    "ClientNotification",
    "ClientRequest",
    "ClientResult",
    "ContentBlock",
    "Cursor",
    "ElicitRequestParams",
    "EmptyResult",
    "EnumSchema",
    "JSONRPCMessage",
    "JSONRPCResponse",
    "LoggingLevel",
    "MultiSelectEnumSchema",
    "PrimitiveSchemaDefinition",
    "ProgressToken",
    "RequestId",
    "Role",
    "SamplingMessageContentBlock",
    "ServerNotification",
    "ServerRequest",
    "ServerResult",
    "SingleSelectEnumSchema",
    "TaskStatus",
}

# Fallback members that our tolerant unions add on top of the schema's members.
FALLBACK_MEMBERS = {"UnknownContent"}

# Optional fields that 2026-07-28 added to definitions whose models both revisions share.
ADDED_IN_2026 = {
    "resultType",
    "ttlMs",
    "cacheScope",
    "inputResponses",
    "requestState",
    "extensions",
}


def roundtrip(model_cls: Any, wire: Dict[str, Any]) -> Any:
    """Parse ``wire`` into ``model_cls`` and assert ``to_wire()`` gives it back unchanged."""
    original = copy.deepcopy(wire)
    model = model_cls.model_validate(wire)
    assert model.to_wire() == original
    # The JSON path must agree with the Python path.
    assert model_cls.model_validate_json(json.dumps(original)).to_wire() == original
    return model


# ---------------------------------------------------------------------------
# Schema coverage
# ---------------------------------------------------------------------------


def load_defs(path: Path) -> Dict[str, Any]:
    """The ``$defs`` of the MCP schema at ``path``; the test fails when it is missing."""
    if not path.exists():
        pytest.fail(f"MCP schema not found at {path}")
    loaded: Dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))["$defs"]
    return loaded


@pytest.fixture(scope="module")
def defs() -> Dict[str, Any]:
    return load_defs(SCHEMA_PATH)


def _is_object_def(schema: Dict[str, Any]) -> bool:
    return schema.get("type") == "object" or "allOf" in schema


def _resolve(defs: Dict[str, Any], schema: Dict[str, Any]) -> Dict[str, Any]:
    if "$ref" in schema:
        return _resolve(defs, defs[schema["$ref"].split("/")[-1]])
    return schema


def _object_shape(defs: Dict[str, Any], schema: Dict[str, Any]) -> Tuple[Dict[str, Any], Set[str]]:
    """Properties and required names of an object schema, merging ``allOf`` parts."""
    schema = _resolve(defs, schema)
    props: Dict[str, Any] = dict(schema.get("properties", {}))
    required: Set[str] = set(schema.get("required", []))
    for part in schema.get("allOf", []):
        more_props, more_required = _object_shape(defs, part)
        props.update(more_props)
        required |= more_required
    return props, required


def _strip(annotation: Any) -> Any:
    """Remove ``Annotated`` wrappers."""
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _union_members(annotation: Any) -> List[Any]:
    annotation = _strip(annotation)
    if typing.get_origin(annotation) is typing.Union:
        return [_strip(arg) for arg in typing.get_args(annotation)]
    return [annotation]


def _nested_model(annotation: Any) -> Optional[type]:
    """The single model class inside ``Optional[...]`` / ``List[...]``, if there is one."""
    members = [m for m in _union_members(annotation) if m is not type(None)]
    if len(members) != 1:
        return None
    member = members[0]
    if typing.get_origin(member) in (list, List):
        return _nested_model(typing.get_args(member)[0])
    if isinstance(member, type) and issubclass(member, BaseModel):
        return member
    return None


def _literal_values(annotation: Any) -> Tuple[Set[Any], bool]:
    """Literal values allowed by a field, and whether any other string is accepted too."""
    values: Set[Any] = set()
    open_str = False
    for member in _union_members(annotation):
        if typing.get_origin(member) is typing.Literal:
            values |= set(typing.get_args(member))
        elif typing.get_origin(member) is typing.Union:
            inner, inner_open = _literal_values(member)
            values |= inner
            open_str = open_str or inner_open
        elif member is str:
            open_str = True
    return values, open_str


def _wire_names(model: type) -> Dict[str, str]:
    assert issubclass(model, BaseModel)
    return {
        info.serialization_alias or info.alias or name: name
        for name, info in model.model_fields.items()
    }


def _check_model_against_schema(
    defs: Dict[str, Any],
    model: type,
    schema: Dict[str, Any],
    where: str,
    extra_ok: Callable[[str], bool] = lambda prop: prop in ADDED_IN_2026,
    relaxed: Callable[[str], bool] = lambda here: False,
) -> None:
    """Check ``model``'s fields against an object schema.

    The model must have every schema property; it may have more only where ``extra_ok``
    says so, and those must be optional.  ``relaxed(here)`` exempts a schema-required
    property from having to be required in the model.
    """
    assert issubclass(model, BaseModel)
    props, required = _object_shape(defs, schema)
    wire = _wire_names(model)
    assert set(props) <= set(wire), f"{where}: fields {sorted(wire)} lack {sorted(props)}"
    for extra in set(wire) - set(props):
        assert extra_ok(extra), f"{where}: fields {sorted(wire)} != schema {sorted(props)}"
        assert not model.model_fields[wire[extra]].is_required(), f"{where}.{extra}"
    for prop, prop_schema in props.items():
        field = model.model_fields[wire[prop]]
        here = f"{where}.{prop}"
        target = _resolve(defs, prop_schema)
        allowed, open_str = _literal_values(field.annotation)
        if "const" in target:
            assert allowed == {target["const"]}, f"{here}: {allowed} != const {target['const']}"
        if "enum" in target and target.get("type") == "string":
            assert open_str or allowed == set(target["enum"]), f"{here}: {allowed}"
            assert allowed <= set(target["enum"]), f"{here}: {allowed} not in schema enum"
        if prop in required:
            if not relaxed(here):
                assert field.is_required() or field.default in allowed, f"{here} must be required"
        else:
            assert not field.is_required(), f"{here} must be optional"
        nested = _nested_model(field.annotation)
        inline = prop_schema.get("items", prop_schema) if "items" in prop_schema else prop_schema
        if nested is not None and (inline.get("properties") or "allOf" in inline):
            _check_model_against_schema(defs, nested, inline, here, extra_ok, relaxed)


def test_every_object_definition_has_a_model(defs: Dict[str, Any]) -> None:
    object_defs = {name for name, schema in defs.items() if _is_object_def(schema)}
    assert set(defs) - object_defs == NON_OBJECT_DEFS
    for name in sorted(object_defs):
        model = getattr(T, name, None)
        assert isinstance(model, type) and issubclass(model, T.MCPModel), name
        assert name in T.__all__, name


def test_every_object_model_matches_its_schema(defs: Dict[str, Any]) -> None:
    for name, schema in sorted(defs.items()):
        if _is_object_def(schema):
            _check_model_against_schema(defs, getattr(T, name), schema, name)


def test_non_object_definitions_exist_as_aliases(defs: Dict[str, Any]) -> None:
    for name in sorted(NON_OBJECT_DEFS):
        assert name in T.__all__, name
        alias = getattr(T, name)
        TypeAdapter(alias)  # must be usable for validation
        schema = defs[name]
        if "anyOf" in schema:
            expected = {ref["$ref"].split("/")[-1] for ref in schema["anyOf"]}
            members = {m.__name__ for m in _union_members(alias)}
            assert members - FALLBACK_MEMBERS == expected, name
        elif "enum" in schema:
            assert set(typing.get_args(alias)) == set(schema["enum"]), name
    assert T.EmptyResult is T.Result
    assert T.Cursor is str
    assert set(typing.get_args(T.RequestId)) == {str, int}
    assert set(typing.get_args(T.ProgressToken)) == {str, int}


def test_all_exports_exist_and_cover_public_models() -> None:
    for name in T.__all__:
        assert hasattr(T, name), name
    assert len(set(T.__all__)) == len(T.__all__)
    public_models = {
        model.__name__ for model in models_in_definition_order()
        if not model.__name__.startswith("_")
    }
    assert len(public_models) > 180
    assert public_models <= set(T.__all__)
    # Each name is served as the class its module defines, and once asked for it stays.
    assert T.Task is T.Task is vars(T)["Task"]
    assert "Task" in dir(T) and "ClientRequest" in dir(T)
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchModel'"):
        T.NoSuchModel  # noqa: B018


# ---------------------------------------------------------------------------
# Base behaviour
# ---------------------------------------------------------------------------


def test_to_wire_uses_aliases_and_drops_none() -> None:
    link = T.ResourceLink(uri="file:///a.txt", name="a", mime_type="text/plain", meta={"k": 1})
    wire = link.to_wire()
    assert wire == {
        "type": "resource_link",
        "uri": "file:///a.txt",
        "name": "a",
        "mimeType": "text/plain",
        "_meta": {"k": 1},
    }
    assert wire == link.model_dump(by_alias=True, exclude_none=True, mode="json")


def test_snake_case_and_camel_case_both_accepted() -> None:
    by_alias = T.Resource.model_validate({"uri": "x:/", "name": "n", "mimeType": "a/b"})
    by_name = T.Resource.model_validate({"uri": "x:/", "name": "n", "mime_type": "a/b"})
    assert by_alias.mime_type == by_name.mime_type == "a/b"
    meta = T.Result.model_validate({"_meta": {"a": 1}})
    assert meta.meta == {"a": 1}
    assert T.Result(meta={"b": 2}).to_wire() == {"_meta": {"b": 2}}


def test_literal_tags_default() -> None:
    assert T.TextContent(text="x").type == "text"
    assert T.ImageContent(data="AA==", mime_type="image/png").to_wire()["type"] == "image"
    assert T.PingRequest(id=1).to_wire() == {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert T.ElicitRequestURLParams(message="m", elicitation_id="e", url="https://x").mode == "url"
    with pytest.raises(ValidationError):
        T.TextContent.model_validate({"type": "image", "text": "x"})


def test_unknown_fields_survive_round_trip() -> None:
    wire = {
        "tools": [
            {
                "name": "t",
                "inputSchema": {"type": "object"},
                "futureField": {"nested": [1, 2]},
                "annotations": {"readOnlyHint": True, "futureHint": "x"},
            }
        ],
        "futurePage": 3,
    }
    result = roundtrip(T.ListToolsResult, wire)
    assert result.model_extra == {"futurePage": 3}
    assert result.tools[0].model_extra == {"futureField": {"nested": [1, 2]}}


def test_required_fields_are_enforced() -> None:
    with pytest.raises(ValidationError):
        T.Tool.model_validate({"name": "t"})  # inputSchema missing
    with pytest.raises(ValidationError):
        T.CallToolResult.model_validate({"isError": True})  # content missing
    with pytest.raises(ValidationError):
        # A known content type that is malformed is an error, not silently "unknown".
        T.CallToolResult.model_validate({"content": [{"type": "image", "data": "AA=="}]})


# ---------------------------------------------------------------------------
# Lifecycle
# ---------------------------------------------------------------------------


INITIALIZE_RESULT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {
        "logging": {},
        "completions": {},
        "prompts": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": False},
        "tools": {"listChanged": True},
        "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
        "experimental": {"x-thing": {"on": True}},
    },
    "serverInfo": {
        "name": "srv",
        "title": "Server",
        "version": "1.2.3",
        "websiteUrl": "https://example.com",
        "icons": [{"src": "https://example.com/i.png", "sizes": ["48x48"], "theme": "dark"}],
    },
    "instructions": "Be nice.",
    "_meta": {"trace": "abc"},
}


def test_initialize_result() -> None:
    result = roundtrip(T.InitializeResult, INITIALIZE_RESULT)
    assert result.protocol_version == "2025-11-25"
    assert result.server_info.website_url == "https://example.com"
    assert result.server_info.icons is not None
    assert result.server_info.icons[0].sizes == ["48x48"]
    caps = result.capabilities
    assert caps.logging == {} and caps.completions == {}
    assert caps.prompts is not None and caps.prompts.list_changed is True
    assert caps.resources is not None and caps.resources.subscribe is True
    assert caps.tasks is not None and caps.tasks.requests is not None
    assert caps.tasks.requests.tools is not None and caps.tasks.requests.tools.call == {}
    assert caps.experimental == {"x-thing": {"on": True}}
    assert result.meta == {"trace": "abc"}


def test_initialize_request_with_client_capabilities() -> None:
    wire = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {
                "roots": {"listChanged": True},
                "sampling": {"tools": {}},
                "elicitation": {"form": {}, "url": {}},
                "tasks": {"requests": {"sampling": {"createMessage": {}}}},
            },
            "clientInfo": {"name": "c", "version": "0"},
        },
    }
    request = roundtrip(T.InitializeRequest, wire)
    caps = request.params.capabilities
    assert caps.sampling is not None and caps.sampling.tools == {}
    assert caps.sampling.context is None
    assert caps.elicitation is not None and caps.elicitation.url == {}
    assert caps.tasks is not None and caps.tasks.requests is not None
    assert caps.tasks.requests.sampling is not None
    assert caps.tasks.requests.sampling.create_message == {}
    built = T.ClientCapabilities(
        roots=T.RootsCapability(list_changed=True), sampling=T.SamplingCapability()
    )
    assert built.to_wire() == {"roots": {"listChanged": True}, "sampling": {}}


# ---------------------------------------------------------------------------
# Tools
# ---------------------------------------------------------------------------


TOOLS_LIST = {
    "tools": [
        {
            "name": "get_weather",
            "title": "Weather",
            "description": "Get the weather",
            "inputSchema": {
                "type": "object",
                "properties": {"city": {"type": "string", "default": None}},
                "required": ["city"],
            },
            "outputSchema": {
                "type": "object",
                "properties": {"temp": {"type": "number"}},
                "required": ["temp"],
            },
            "annotations": {
                "title": "Weather lookup",
                "readOnlyHint": True,
                "destructiveHint": False,
                "idempotentHint": True,
                "openWorldHint": True,
            },
            "execution": {"taskSupport": "optional"},
            "icons": [{"src": "data:image/png;base64,AA==", "mimeType": "image/png"}],
            "_meta": {"vendor/x": 1},
        }
    ],
    "nextCursor": "page-2",
}


def test_tools_list() -> None:
    result = roundtrip(T.ListToolsResult, TOOLS_LIST)
    assert result.next_cursor == "page-2"
    tool = result.tools[0]
    assert tool.input_schema["required"] == ["city"]
    # None inside a JSON Schema dict is data, not "unset": it must survive to_wire().
    assert tool.input_schema["properties"]["city"]["default"] is None
    assert tool.output_schema is not None and tool.output_schema["required"] == ["temp"]
    assert tool.annotations is not None
    assert tool.annotations.read_only_hint is True
    assert tool.annotations.destructive_hint is False
    assert tool.annotations.title == "Weather lookup"
    assert tool.execution is not None and tool.execution.task_support == "optional"
    assert tool.icons is not None and tool.icons[0].mime_type == "image/png"
    assert tool.meta == {"vendor/x": 1}
    assert tool.title == "Weather"


def test_open_enums_tolerate_new_values() -> None:
    tool = T.Tool.model_validate(
        {"name": "t", "inputSchema": {}, "execution": {"taskSupport": "someday"}}
    )
    assert tool.execution is not None and tool.execution.task_support == "someday"
    icon = T.Icon.model_validate({"src": "x:/", "theme": "high-contrast"})
    assert icon.theme == "high-contrast"


CALL_RESULT = {
    "content": [
        {"type": "text", "text": "first", "annotations": {"audience": ["user"], "priority": 0.5}},
        {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
        {
            "type": "resource_link",
            "uri": "file:///tmp/a.txt",
            "name": "a.txt",
            "mimeType": "text/plain",
            "size": 12,
        },
        {
            "type": "resource",
            "resource": {"uri": "file:///tmp/b.txt", "mimeType": "text/plain", "text": "bee"},
        },
        {
            "type": "resource",
            "resource": {"uri": "file:///tmp/c.bin", "blob": "AAEC"},
            "annotations": {"lastModified": "2025-01-01T00:00:00Z"},
        },
        {"type": "text", "text": "second", "_meta": {"m": True}},
    ],
    "structuredContent": {"temp": 21.5, "unit": None},
    "isError": False,
}


def test_call_tool_result_with_every_content_type() -> None:
    result = roundtrip(T.CallToolResult, CALL_RESULT)
    kinds = [type(block) for block in result.content]
    assert kinds == [
        T.TextContent,
        T.ImageContent,
        T.AudioContent,
        T.ResourceLink,
        T.EmbeddedResource,
        T.EmbeddedResource,
        T.TextContent,
    ]
    assert result.text == "first\nsecond"
    assert result.structured == {"temp": 21.5, "unit": None}
    assert result.structured is result.structured_content
    assert [image.mime_type for image in result.images] == ["image/png"]
    assert result.is_error is False
    first = result.content[0]
    assert isinstance(first, T.TextContent) and first.annotations is not None
    assert first.annotations.audience == ["user"]
    link = result.content[3]
    assert isinstance(link, T.ResourceLink) and link.size == 12
    embedded_text, embedded_blob = result.content[4], result.content[5]
    assert isinstance(embedded_text, T.EmbeddedResource)
    assert isinstance(embedded_text.resource, T.TextResourceContents)
    assert isinstance(embedded_blob, T.EmbeddedResource)
    assert isinstance(embedded_blob.resource, T.BlobResourceContents)
    assert embedded_blob.resource.blob == "AAEC"



@pytest.mark.parametrize("kinds", [
    (), ("text",), ("image",), ("unknown",), ("text", "text"), ("image", "text"),
    ("text", "audio", "text"), ("audio", "image"),
])
def test_text_joins_the_text_blocks_whatever_else_the_content_holds(
    kinds: Tuple[str, ...],
) -> None:
    # One block (most results) takes a shorter way than several: both give the same.
    blocks: Dict[str, Callable[[int], Dict[str, Any]]] = {
        "text": lambda i: {"type": "text", "text": f"line {i}"},
        "image": lambda i: {"type": "image", "data": "AA==", "mimeType": "image/png"},
        "audio": lambda i: {"type": "audio", "data": "AA==", "mimeType": "audio/wav"},
        "unknown": lambda i: {"type": "hologram", "text": "not text content"},
    }
    content = [blocks[kind](i) for i, kind in enumerate(kinds)]
    for model in (T.CallToolResult, T.CallToolResult2026):
        result = model.model_validate({"content": content})
        expected = [f"line {i}" for i, kind in enumerate(kinds) if kind == "text"]
        assert result.text == "\n".join(expected)

def test_call_tool_result_defaults_and_error_flag() -> None:
    result = T.CallToolResult.model_validate({"content": []})
    assert result.is_error is False
    assert result.text == ""
    assert result.images == []
    assert result.structured is None
    failed = T.CallToolResult.model_validate(
        {"content": [{"type": "text", "text": "boom"}], "isError": True}
    )
    assert failed.is_error is True and failed.text == "boom"


def test_unknown_content_type_does_not_break_call_result() -> None:
    wire = {
        "content": [
            {"type": "text", "text": "ok"},
            {"type": "video", "url": "https://v", "durationMs": 10},
            {"type": "resource", "resource": {"uri": "x://r", "hologram": "..."}},
        ],
        "isError": False,
    }
    result = roundtrip(T.CallToolResult, wire)
    video = result.content[1]
    assert isinstance(video, T.UnknownContent)
    assert video.type == "video"
    assert video.model_extra == {"url": "https://v", "durationMs": 10}
    odd = result.content[2]
    assert isinstance(odd, T.EmbeddedResource)
    assert type(odd.resource) is T.ResourceContents
    assert result.text == "ok"


def test_call_tool_request() -> None:
    wire = {
        "jsonrpc": "2.0",
        "id": "req-1",
        "method": "tools/call",
        "params": {
            "name": "echo",
            "arguments": {"text": "hi", "n": None},
            "task": {"ttl": 60000},
            "_meta": {"progressToken": 7},
        },
    }
    request = roundtrip(T.CallToolRequest, wire)
    assert request.params.arguments == {"text": "hi", "n": None}
    assert request.params.task is not None and request.params.task.ttl == 60000
    assert request.params.meta == {"progressToken": 7}
    built = T.CallToolRequest(id=3, params=T.CallToolRequestParams(name="echo"))
    assert built.to_wire() == {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "echo"},
    }


# ---------------------------------------------------------------------------
# Resources
# ---------------------------------------------------------------------------


def test_read_resource_text_and_blob() -> None:
    wire = {
        "contents": [
            {"uri": "file:///a.md", "mimeType": "text/markdown", "text": "# A"},
            {"uri": "file:///b.png", "mimeType": "image/png", "blob": "iVBORw0KGgo="},
            {"uri": "file:///c.md", "text": "C", "_meta": {"x": 1}},
        ]
    }
    result = roundtrip(T.ReadResourceResult, wire)
    first, second, third = result.contents
    assert isinstance(first, T.TextResourceContents) and first.mime_type == "text/markdown"
    assert isinstance(second, T.BlobResourceContents) and second.blob == "iVBORw0KGgo="
    assert isinstance(third, T.TextResourceContents) and third.meta == {"x": 1}
    assert result.text == "# A\nC"


def test_resource_listings_and_notifications() -> None:
    resources = roundtrip(
        T.ListResourcesResult,
        {
            "resources": [
                {
                    "uri": "file:///a",
                    "name": "a",
                    "size": 3,
                    "annotations": {"audience": ["assistant"], "priority": 1},
                }
            ]
        },
    )
    assert resources.resources[0].size == 3
    assert resources.next_cursor is None
    templates = roundtrip(
        T.ListResourceTemplatesResult,
        {"resourceTemplates": [{"uriTemplate": "file:///{path}", "name": "files"}]},
    )
    assert templates.resource_templates[0].uri_template == "file:///{path}"
    updated = roundtrip(
        T.ResourceUpdatedNotification,
        {
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"uri": "file:///a"},
        },
    )
    assert updated.params.uri == "file:///a"
    assert T.SubscribeRequest(id=1, params=T.SubscribeRequestParams(uri="u:/")).to_wire() == {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "resources/subscribe",
        "params": {"uri": "u:/"},
    }
    assert (
        T.UnsubscribeRequest.model_validate({"id": 2, "params": {"uri": "u:/"}}).method
        == "resources/unsubscribe"
    )


# ---------------------------------------------------------------------------
# Prompts
# ---------------------------------------------------------------------------


def test_prompts_list_and_get() -> None:
    listed = roundtrip(
        T.ListPromptsResult,
        {
            "prompts": [
                {
                    "name": "review",
                    "title": "Code review",
                    "arguments": [{"name": "code", "required": True, "description": "src"}],
                }
            ],
            "nextCursor": "n",
        },
    )
    prompt = listed.prompts[0]
    assert prompt.arguments is not None and prompt.arguments[0].required is True
    got = roundtrip(
        T.GetPromptResult,
        {
            "description": "Review",
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Please review"}},
                {
                    "role": "assistant",
                    "content": {
                        "type": "resource",
                        "resource": {"uri": "file:///x.py", "text": "print(1)"},
                    },
                },
                {"role": "user", "content": {"type": "hologram", "data": 1}},
            ],
        },
    )
    assert [m.role for m in got.messages] == ["user", "assistant", "user"]
    assert isinstance(got.messages[0].content, T.TextContent)
    assert isinstance(got.messages[1].content, T.EmbeddedResource)
    assert isinstance(got.messages[2].content, T.UnknownContent)
    with pytest.raises(ValidationError):
        T.PromptMessage.model_validate({"role": "system", "content": {"type": "text", "text": ""}})


# ---------------------------------------------------------------------------
# Completion, logging, progress, cancellation, roots
# ---------------------------------------------------------------------------


def test_completion() -> None:
    params = roundtrip(
        T.CompleteRequestParams,
        {
            "ref": {"type": "ref/resource", "uri": "file:///{path}"},
            "argument": {"name": "path", "value": "sr"},
            "context": {"arguments": {"root": "/"}},
        },
    )
    assert isinstance(params.ref, T.ResourceTemplateReference)
    assert params.argument.value == "sr"
    assert params.context is not None and params.context.arguments == {"root": "/"}
    prompt_ref = T.CompleteRequestParams.model_validate(
        {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": ""}}
    )
    assert isinstance(prompt_ref.ref, T.PromptReference) and prompt_ref.ref.name == "p"
    result = roundtrip(
        T.CompleteResult, {"completion": {"values": ["src", "srv"], "total": 2, "hasMore": False}}
    )
    assert result.completion.values == ["src", "srv"]
    assert result.completion.has_more is False


def test_logging() -> None:
    note = roundtrip(
        T.LoggingMessageNotification,
        {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "warning", "logger": "db", "data": {"rows": 3}},
        },
    )
    assert note.params.level == "warning"
    assert note.params.logger == "db"
    assert note.params.data == {"rows": 3}
    # data is required and may legitimately be null; it must not vanish from the wire.
    assert T.LoggingMessageNotificationParams(level="info", data=None).to_wire() == {
        "level": "info",
        "data": None,
    }
    with pytest.raises(ValidationError):
        T.LoggingMessageNotificationParams.model_validate({"level": "loud", "data": 1})
    set_level = T.SetLevelRequest(id=5, params=T.SetLevelRequestParams(level="debug"))
    assert set_level.to_wire()["params"] == {"level": "debug"}


def test_progress_and_cancellation() -> None:
    progress = roundtrip(
        T.ProgressNotification,
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": "tok", "progress": 3, "total": 10, "message": "working"},
        },
    )
    assert progress.params.progress_token == "tok"
    assert progress.params.progress == 3 and progress.params.total == 10
    assert progress.params.message == "working"
    fractional = T.ProgressNotificationParams.model_validate({"progressToken": 1, "progress": 0.5})
    assert fractional.progress == 0.5 and fractional.progress_token == 1
    cancelled = roundtrip(
        T.CancelledNotification,
        {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": 4, "reason": "user"},
        },
    )
    assert cancelled.params.request_id == 4 and cancelled.params.reason == "user"


def test_roots() -> None:
    result = roundtrip(
        T.ListRootsResult,
        {"roots": [{"uri": "file:///home/u/proj", "name": "proj"}, {"uri": "file:///tmp"}]},
    )
    assert [root.name for root in result.roots] == ["proj", None]
    assert T.Root(uri="file:///x").to_wire() == {"uri": "file:///x"}
    assert T.ListRootsRequest(id=9).to_wire() == {"jsonrpc": "2.0", "id": 9, "method": "roots/list"}


# ---------------------------------------------------------------------------
# Sampling
# ---------------------------------------------------------------------------


SAMPLING_PARAMS = {
    "messages": [
        {"role": "user", "content": {"type": "text", "text": "Weather in Paris?"}},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me check."},
                {
                    "type": "tool_use",
                    "id": "call_1",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "toolUseId": "call_1",
                    "content": [{"type": "text", "text": "21C"}],
                    "structuredContent": {"temp": 21},
                    "isError": False,
                }
            ],
        },
    ],
    "modelPreferences": {
        "hints": [{"name": "claude"}],
        "costPriority": 0.2,
        "speedPriority": 0.5,
        "intelligencePriority": 0.9,
    },
    "systemPrompt": "Be brief.",
    "includeContext": "thisServer",
    "temperature": 0.7,
    "maxTokens": 256,
    "stopSequences": ["\n\n"],
    "metadata": {"provider": {"x": 1}},
    "tools": [{"name": "get_weather", "inputSchema": {"type": "object"}}],
    "toolChoice": {"mode": "auto"},
}


def test_sampling_request_params_with_tool_use() -> None:
    params = roundtrip(T.CreateMessageRequestParams, SAMPLING_PARAMS)
    assert params.max_tokens == 256
    assert params.include_context == "thisServer"
    assert params.model_preferences is not None
    assert params.model_preferences.hints is not None
    assert params.model_preferences.hints[0].name == "claude"
    assert params.model_preferences.intelligence_priority == 0.9
    assert params.tool_choice is not None and params.tool_choice.mode == "auto"
    assert params.tools is not None and params.tools[0].name == "get_weather"
    first, second, third = params.messages
    assert isinstance(first.content, T.TextContent)
    assert isinstance(second.content, list)
    tool_use = second.content[1]
    assert isinstance(tool_use, T.ToolUseContent)
    assert tool_use.input == {"city": "Paris"} and tool_use.id == "call_1"
    assert isinstance(third.content, list)
    tool_result = third.content[0]
    assert isinstance(tool_result, T.ToolResultContent)
    assert tool_result.tool_use_id == "call_1"
    assert tool_result.structured_content == {"temp": 21}
    assert isinstance(tool_result.content[0], T.TextContent)


def test_sampling_content_tolerates_unknown_types() -> None:
    message = T.SamplingMessage.model_validate(
        {"role": "assistant", "content": [{"type": "thinking", "text": "hmm"}]}
    )
    assert isinstance(message.content, list)
    assert isinstance(message.content[0], T.UnknownContent)


def test_create_message_result_built_by_user() -> None:
    result = T.CreateMessageResult(
        role="assistant", content=T.TextContent(type="text", text="hi"), model="m"
    )
    assert result.to_wire() == {
        "role": "assistant",
        "content": {"type": "text", "text": "hi"},
        "model": "m",
    }
    with_tools = T.CreateMessageResult(
        role="assistant",
        content=[T.ToolUseContent(id="c1", name="f", input={})],
        model="m",
        stop_reason="toolUse",
    )
    assert with_tools.to_wire()["content"] == [
        {"type": "tool_use", "id": "c1", "name": "f", "input": {}}
    ]
    assert with_tools.to_wire()["stopReason"] == "toolUse"
    assert isinstance(result, T.Result) and isinstance(result, T.SamplingMessage)
    parsed = T.CreateMessageResult.model_validate(
        {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"}
    )
    assert isinstance(parsed.content, T.TextContent)


# ---------------------------------------------------------------------------
# Elicitation
# ---------------------------------------------------------------------------


FORM_PARAMS = {
    "mode": "form",
    "message": "Tell us about you",
    "requestedSchema": {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name", "minLength": 1, "format": "email"},
            "age": {"type": "integer", "minimum": 0, "maximum": 150, "default": 30},
            "ok": {"type": "boolean", "default": True},
            "color": {"type": "string", "enum": ["red", "green"]},
            "size": {
                "type": "string",
                "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}],
            },
            "legacy": {"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"]},
            "tags": {
                "type": "array",
                "items": {"type": "string", "enum": ["x", "y"]},
                "minItems": 1,
            },
            "labels": {
                "type": "array",
                "items": {"anyOf": [{"const": "p", "title": "P"}]},
                "default": ["p"],
            },
        },
        "required": ["name"],
    },
}


def test_elicitation_form_params() -> None:
    params = roundtrip(T.ElicitRequestFormParams, FORM_PARAMS)
    schema = params.requested_schema
    assert schema.schema_ == "https://json-schema.org/draft/2020-12/schema"
    assert schema.required == ["name"]
    props = schema.properties
    assert isinstance(props["name"], T.StringSchema) and props["name"].min_length == 1
    assert isinstance(props["age"], T.NumberSchema) and props["age"].type == "integer"
    assert props["age"].default == 30 and isinstance(props["age"].default, int)
    assert isinstance(props["ok"], T.BooleanSchema)
    assert isinstance(props["color"], T.UntitledSingleSelectEnumSchema)
    assert isinstance(props["size"], T.TitledSingleSelectEnumSchema)
    assert [o.title for o in props["size"].one_of] == ["Small", "Large"]
    assert isinstance(props["legacy"], T.LegacyTitledEnumSchema)
    assert props["legacy"].enum_names == ["A", "B"]
    assert isinstance(props["tags"], T.UntitledMultiSelectEnumSchema)
    assert props["tags"].items.enum == ["x", "y"] and props["tags"].min_items == 1
    assert isinstance(props["labels"], T.TitledMultiSelectEnumSchema)
    assert props["labels"].items.any_of[0].const == "p"


def test_elicitation_params_union_picks_mode() -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(T.ElicitRequestParams)
    form_wire = copy.deepcopy(FORM_PARAMS)
    del form_wire["mode"]  # mode is optional for form requests
    form = adapter.validate_python(form_wire)
    assert isinstance(form, T.ElicitRequestFormParams) and form.mode is None
    url = adapter.validate_python(
        {
            "mode": "url",
            "message": "Sign in",
            "elicitationId": "el-1",
            "url": "https://auth.example.com/start",
            "_meta": {"progressToken": 2},
        }
    )
    assert isinstance(url, T.ElicitRequestURLParams)
    assert url.elicitation_id == "el-1" and url.url == "https://auth.example.com/start"
    assert adapter.dump_python(url, by_alias=True, exclude_none=True)["elicitationId"] == "el-1"
    with pytest.raises(ValidationError):
        adapter.validate_python({"mode": "telepathy", "message": "m"})


def test_elicit_request_envelope() -> None:
    request = roundtrip(
        T.ElicitRequest,
        {
            "jsonrpc": "2.0",
            "id": 11,
            "method": "elicitation/create",
            "params": {
                "mode": "url",
                "message": "m",
                "elicitationId": "e",
                "url": "https://x",
            },
        },
    )
    assert isinstance(request.params, T.ElicitRequestURLParams)


def test_elicit_result_built_by_user() -> None:
    result = T.ElicitResult(
        action="accept", content={"name": "Ann", "age": 30, "ok": True, "tags": ["x"], "h": 1.5}
    )
    assert result.to_wire() == {
        "action": "accept",
        "content": {"name": "Ann", "age": 30, "ok": True, "tags": ["x"], "h": 1.5},
    }
    assert result.content is not None
    assert result.content["ok"] is True and result.content["age"] == 30
    assert T.ElicitResult(action="decline").to_wire() == {"action": "decline"}
    with pytest.raises(ValidationError):
        T.ElicitResult.model_validate({"action": "maybe"})


def test_url_elicitation_required_error() -> None:
    wire = {
        "jsonrpc": "2.0",
        "id": 3,
        "error": {
            "code": -32042,
            "message": "Authorization required",
            "data": {
                "elicitations": [
                    {
                        "mode": "url",
                        "message": "Authorize",
                        "elicitationId": "e1",
                        "url": "https://auth",
                    }
                ]
            },
        },
    }
    error = roundtrip(T.URLElicitationRequiredError, wire)
    assert error.error.code == T.URL_ELICITATION_REQUIRED
    assert error.error.data.elicitations[0].elicitation_id == "e1"
    generic = T.JSONRPCErrorResponse.model_validate(wire)
    assert generic.error.data["elicitations"][0]["elicitationId"] == "e1"


def test_elicitation_complete_notification() -> None:
    note = roundtrip(
        T.ElicitationCompleteNotification,
        {
            "jsonrpc": "2.0",
            "method": "notifications/elicitation/complete",
            "params": {"elicitationId": "e1"},
        },
    )
    assert note.params.elicitation_id == "e1"


# ---------------------------------------------------------------------------
# Tasks
# ---------------------------------------------------------------------------


TASK = {
    "taskId": "t-1",
    "status": "input_required",
    "statusMessage": "waiting",
    "createdAt": "2025-11-25T10:00:00Z",
    "lastUpdatedAt": "2025-11-25T10:00:05Z",
    "ttl": None,
    "pollInterval": 500,
}


def test_task_results_keep_null_ttl() -> None:
    created = roundtrip(T.CreateTaskResult, {"task": TASK})
    assert created.task.ttl is None and created.task.poll_interval == 500
    assert created.to_wire()["task"]["ttl"] is None
    got = roundtrip(T.GetTaskResult, {**TASK, "_meta": {"a": 1}})
    assert got.status == "input_required" and got.meta == {"a": 1}
    assert isinstance(got, T.Result) and isinstance(got, T.Task)
    cancelled = roundtrip(T.CancelTaskResult, {**TASK, "status": "cancelled", "ttl": 1000})
    assert cancelled.ttl == 1000
    with pytest.raises(ValidationError):
        T.Task.model_validate({k: v for k, v in TASK.items() if k != "ttl"})
    with pytest.raises(ValidationError):
        T.Task.model_validate({**TASK, "status": "sleeping"})


def test_task_requests_and_notifications() -> None:
    listed = roundtrip(T.ListTasksResult, {"tasks": [TASK], "nextCursor": "c"})
    assert listed.tasks[0].task_id == "t-1"
    status = roundtrip(
        T.TaskStatusNotification,
        {
            "jsonrpc": "2.0",
            "method": "notifications/tasks/status",
            "params": {**TASK, "status": "completed"},
        },
    )
    assert status.params.status == "completed"
    get = T.GetTaskRequest(id=1, params=T.GetTaskRequestParams(task_id="t-1"))
    assert get.to_wire() == {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tasks/get",
        "params": {"taskId": "t-1"},
    }
    assert (
        T.GetTaskPayloadRequest(id=2, params=T.GetTaskPayloadRequestParams(task_id="t")).method
        == "tasks/result"
    )
    assert (
        T.CancelTaskRequest(id=3, params=T.CancelTaskRequestParams(task_id="t")).method
        == "tasks/cancel"
    )
    payload = roundtrip(
        T.GetTaskPayloadResult, {"content": [{"type": "text", "text": "done"}], "isError": False}
    )
    assert payload.model_extra == {"content": [{"type": "text", "text": "done"}], "isError": False}


# ---------------------------------------------------------------------------
# JSON-RPC envelopes and per-direction unions
# ---------------------------------------------------------------------------


def test_jsonrpc_message_union() -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(T.JSONRPCMessage)
    cases = [
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}, T.JSONRPCRequest),
        ({"jsonrpc": "2.0", "method": "notifications/initialized"}, T.JSONRPCNotification),
        ({"jsonrpc": "2.0", "id": "a", "result": {"tools": []}}, T.JSONRPCResultResponse),
        (
            {"jsonrpc": "2.0", "id": 2, "error": {"code": -32601, "message": "nope"}},
            T.JSONRPCErrorResponse,
        ),
    ]
    for wire, expected in cases:
        message = adapter.validate_python(wire)
        assert type(message) is expected
        assert message.to_wire() == wire
    with pytest.raises(ValidationError):
        adapter.validate_python({"jsonrpc": "2.0", "id": 1})
    with pytest.raises(ValidationError):
        adapter.validate_python({"jsonrpc": "1.0", "id": 1, "method": "x"})
    error = adapter.validate_python(
        {"jsonrpc": "2.0", "error": {"code": T.PARSE_ERROR, "message": "bad", "data": [1]}}
    )
    assert isinstance(error, T.JSONRPCErrorResponse)
    assert error.id is None and error.error.data == [1]
    response_adapter: TypeAdapter[Any] = TypeAdapter(T.JSONRPCResponse)
    response = response_adapter.validate_python({"jsonrpc": "2.0", "id": 1, "result": {}})
    assert isinstance(response, T.JSONRPCResultResponse) and response.result == {}


def test_typed_result_from_generic_response() -> None:
    response = T.JSONRPCResultResponse.model_validate(
        {"jsonrpc": "2.0", "id": 7, "result": CALL_RESULT}
    )
    result = T.CallToolResult.model_validate(response.result)
    assert result.text == "first\nsecond"


def test_server_request_and_notification_unions() -> None:
    server_request: TypeAdapter[Any] = TypeAdapter(T.ServerRequest)
    sampling = server_request.validate_python(
        {"jsonrpc": "2.0", "id": 1, "method": "sampling/createMessage", "params": SAMPLING_PARAMS}
    )
    assert isinstance(sampling, T.CreateMessageRequest)
    roots = server_request.validate_python({"jsonrpc": "2.0", "id": 2, "method": "roots/list"})
    assert isinstance(roots, T.ListRootsRequest)
    with pytest.raises(ValidationError):
        server_request.validate_python({"jsonrpc": "2.0", "id": 3, "method": "tools/call"})

    server_note: TypeAdapter[Any] = TypeAdapter(T.ServerNotification)
    for method, expected in [
        ("notifications/tools/list_changed", T.ToolListChangedNotification),
        ("notifications/prompts/list_changed", T.PromptListChangedNotification),
        ("notifications/resources/list_changed", T.ResourceListChangedNotification),
    ]:
        assert type(server_note.validate_python({"jsonrpc": "2.0", "method": method})) is expected

    client_request: TypeAdapter[Any] = TypeAdapter(T.ClientRequest)
    listed = client_request.validate_python(
        {"jsonrpc": "2.0", "id": 1, "method": "resources/templates/list", "params": {"cursor": "c"}}
    )
    assert isinstance(listed, T.ListResourceTemplatesRequest)
    assert listed.params is not None and listed.params.cursor == "c"

    client_note: TypeAdapter[Any] = TypeAdapter(T.ClientNotification)
    initialized = client_note.validate_python(
        {"jsonrpc": "2.0", "method": "notifications/initialized"}
    )
    assert isinstance(initialized, T.InitializedNotification)


def test_result_unions_accept_their_members() -> None:
    server_result: TypeAdapter[Any] = TypeAdapter(T.ServerResult)
    parsed = server_result.validate_python(INITIALIZE_RESULT)
    assert isinstance(parsed, T.InitializeResult)
    client_result: TypeAdapter[Any] = TypeAdapter(T.ClientResult)
    assert isinstance(client_result.validate_python({"roots": []}), T.ListRootsResult)
    assert isinstance(client_result.validate_python({}), T.Result)


# ---------------------------------------------------------------------------
# 2026-07-28: schema coverage
# ---------------------------------------------------------------------------

# Required in 2026-07-28 but optional in the models shared with 2025-11-25, which lacks them:
# ``resultType`` (absent means "complete"), the ``_meta`` of request params, the caching
# hints of the list and read results, and a few more.  Keyed by "Definition.property".
RELAXED_2026 = {
    "CallToolRequestParams._meta",
    "CancelledNotificationParams.requestId",
    "CompleteRequestParams._meta",
    "GetPromptRequestParams._meta",
    "InputResponseRequestParams._meta",
    "PaginatedRequest.params",
    "PaginatedRequestParams._meta",
    "ReadResourceRequestParams._meta",
    "RequestParams._meta",
    "ResourceRequestParams._meta",
    "SubscriptionsListenRequestParams._meta",
    *(
        f"{name}{prop}"
        for name in ("ListPrompts", "ListResources", "ListResourceTemplates", "ListTools")
        for prop in ("Request.params", "Result.ttlMs", "Result.cacheScope")
    ),
    "CacheableResult.ttlMs",
    "CacheableResult.cacheScope",
    "ReadResourceResult.ttlMs",
    "ReadResourceResult.cacheScope",
}

# 2026-07-28 definitions that are unions, scalars, maps or aliases rather than classes.
NON_OBJECT_DEFS_2026 = {
    "ClientRequest",
    "ClientResult",
    "ContentBlock",
    "Cursor",
    "ElicitRequestParams",
    "EmptyResult",
    "EnumSchema",
    "InputRequest",
    "InputRequests",
    "InputResponse",
    "InputResponses",
    "JSONArray",
    "JSONObject",
    "JSONRPCMessage",
    "JSONRPCResponse",
    "JSONValue",
    "LoggingLevel",
    "MetaObject",
    "MultiSelectEnumSchema",
    "PrimitiveSchemaDefinition",
    "ProgressToken",
    "RequestId",
    "ResultType",
    "Role",
    "SamplingMessageContentBlock",
    "ServerNotification",
    "ServerResult",
    "SingleSelectEnumSchema",
}

# Fallback members of the 2026 unions: unknown input requests and input responses.
FALLBACK_MEMBERS_2026 = FALLBACK_MEMBERS | {"Request", "Result"}


def model_2026(name: str) -> Any:
    """The model (or alias) for a 2026-07-28 definition: ``<name>2026`` if any, else ``<name>``."""
    found = getattr(T, name + "2026", None)
    if found is None:
        found = getattr(T, name)
    assert (name + "2026" if hasattr(T, name + "2026") else name) in T.__all__, name
    return found


@pytest.fixture(scope="module")
def defs_2026() -> Dict[str, Any]:
    return load_defs(SCHEMA_2026_PATH)


def _flat_members(alias: Any) -> Iterator[Any]:
    """Union members of ``alias``, flattening nested (``Annotated``) unions."""
    for member in _union_members(alias):
        if typing.get_origin(member) is typing.Union:
            yield from _flat_members(member)
        else:
            yield member


def test_every_2026_object_definition_has_a_model(defs_2026: Dict[str, Any]) -> None:
    object_defs = {name for name, schema in defs_2026.items() if "properties" in schema}
    assert set(defs_2026) - object_defs == NON_OBJECT_DEFS_2026
    for name in sorted(object_defs):
        model = model_2026(name)
        assert isinstance(model, type) and issubclass(model, T.MCPModel), name


def test_every_2026_object_model_matches_its_schema(defs_2026: Dict[str, Any]) -> None:
    for name, schema in sorted(defs_2026.items()):
        if "properties" in schema:
            _check_model_against_schema(
                defs_2026,
                model_2026(name),
                schema,
                name,
                # Shared models keep the optional fields that only 2025-11-25 has.
                extra_ok=lambda prop: True,
                relaxed=lambda here: here in RELAXED_2026 or here.endswith(".resultType"),
            )


def test_2026_non_object_definitions_exist_as_aliases(defs_2026: Dict[str, Any]) -> None:
    for name in sorted(NON_OBJECT_DEFS_2026):
        alias = model_2026(name)
        TypeAdapter(alias)  # must be usable for validation
        schema = defs_2026[name]
        if "anyOf" in schema and all("$ref" in ref for ref in schema["anyOf"]):
            expected = {
                model_2026(ref["$ref"].split("/")[-1]).__name__ for ref in schema["anyOf"]
            }
            members = {m.__name__ for m in _flat_members(alias)}
            assert members - (FALLBACK_MEMBERS_2026 - expected) == expected, name
        elif "enum" in schema:
            assert set(typing.get_args(alias)) == set(schema["enum"]), name
    assert T.ClientResult2026 is T.Result and T.EmptyResult is T.Result
    assert T.ClientNotification2026 is T.CancelledNotification
    assert typing.get_args(T.InputRequests)[0] is str
    assert typing.get_args(T.InputResponses)[0] is str


def test_2026_constants_match_the_schema(defs_2026: Dict[str, Any]) -> None:
    def error_code(name: str) -> Any:
        return defs_2026[name]["properties"]["error"]["allOf"][1]["properties"]["code"]["const"]

    assert T.HEADER_MISMATCH == error_code("HeaderMismatchError") == -32020
    assert (
        T.MISSING_REQUIRED_CLIENT_CAPABILITY
        == error_code("MissingRequiredClientCapabilityError")
        == -32021
    )
    assert T.UNSUPPORTED_PROTOCOL_VERSION == error_code("UnsupportedProtocolVersionError") == -32022
    for name, code in [
        ("ParseError", T.PARSE_ERROR),
        ("InvalidRequestError", T.INVALID_REQUEST),
        ("MethodNotFoundError", T.METHOD_NOT_FOUND),
        ("InvalidParamsError", T.INVALID_PARAMS),
        ("InternalError", T.INTERNAL_ERROR),
    ]:
        assert defs_2026[name]["properties"]["code"]["const"] == code, name
        assert getattr(T, name)(message="m").code == code, name
    assert T.HeaderMismatchErrorObject(message="m").code == T.HEADER_MISMATCH
    # Resource not found: -32002 up to 2025-11-25, Invalid Params from 2026-07-28 on.
    assert T.LEGACY_RESOURCE_NOT_FOUND == -32002
    assert set(T.RESOURCE_NOT_FOUND_CODES) == {-32602, -32002}

    request_meta = defs_2026["RequestMetaObject"]["properties"]
    assert set(request_meta) == {
        T.META_PROTOCOL_VERSION,
        T.META_CLIENT_INFO,
        T.META_CLIENT_CAPABILITIES,
        T.META_LOG_LEVEL,
        T.META_PROGRESS_TOKEN,
    }
    assert set(defs_2026["RequestMetaObject"]["required"]) == {
        T.META_PROTOCOL_VERSION,
        T.META_CLIENT_CAPABILITIES,
    }
    assert set(defs_2026["ResultMetaObject"]["properties"]) == {T.META_SERVER_INFO}
    assert set(defs_2026["NotificationMetaObject"]["properties"]) == {T.META_SUBSCRIPTION_ID}
    assert set(defs_2026["SubscriptionsListenResultMetaObject"]["properties"]) == {
        T.META_SERVER_INFO,
        T.META_SUBSCRIPTION_ID,
    }
    assert T.META_PROTOCOL_VERSION == "io.modelcontextprotocol/protocolVersion"
    assert T.META_CLIENT_INFO == "io.modelcontextprotocol/clientInfo"
    assert T.META_CLIENT_CAPABILITIES == "io.modelcontextprotocol/clientCapabilities"
    assert T.META_LOG_LEVEL == "io.modelcontextprotocol/logLevel"
    assert T.META_SERVER_INFO == "io.modelcontextprotocol/serverInfo"
    assert T.META_SUBSCRIPTION_ID == "io.modelcontextprotocol/subscriptionId"
    assert T.PROTOCOL_VERSION_2026_07_28 == "2026-07-28"


def _names_a_later_type(annotation: Any) -> bool:
    if isinstance(annotation, (str, typing.ForwardRef)):
        return True
    if typing.get_origin(annotation) is typing.Literal:
        return False
    return any(_names_a_later_type(arg) for arg in typing.get_args(annotation))


def test_no_model_waits_on_a_forward_reference() -> None:
    # Models are built on first use (tests/project/test_lazy_types.py), in whatever frame uses
    # them first: every field's type must already be known at import, so that no name is
    # looked up then.
    for name in T.__all__:
        value = getattr(T, name)
        if isinstance(value, type) and issubclass(value, BaseModel):
            for field_name, field in value.model_fields.items():
                assert not _names_a_later_type(field.annotation), f"{name}.{field_name}"
                assert field.alias, f"{name}.{field_name}"


# ---------------------------------------------------------------------------
# 2026-07-28: every example of the specification
# ---------------------------------------------------------------------------


def _examples_2026() -> List[Path]:
    return sorted(EXAMPLES_2026_DIR.glob("*/*.json")) if EXAMPLES_2026_DIR.is_dir() else []


def _roundtrip_any(target: Any, wire: Any) -> Any:
    """Like :func:`roundtrip`, for a model class or any type (maps, unions)."""
    if isinstance(target, type) and issubclass(target, BaseModel):
        return roundtrip(target, wire)
    adapter: TypeAdapter[Any] = TypeAdapter(target)
    parsed = adapter.validate_python(copy.deepcopy(wire))
    assert adapter.dump_python(parsed, mode="json", by_alias=True, exclude_none=True) == wire
    return parsed


@pytest.mark.parametrize(
    "path", _examples_2026(), ids=lambda path: f"{path.parent.name}/{path.stem}"
)
def test_2026_example_parses_and_round_trips(path: Path) -> None:
    name = path.parent.name
    wire = json.loads(path.read_text(encoding="utf-8"))
    target = model_2026(name)
    parsed = _roundtrip_any(target, wire)
    if isinstance(target, type):
        assert type(parsed) is target
    params = getattr(parsed, "params", None)
    if isinstance(params, BaseModel):
        # A request's (or notification's) params parse into the params model on their own.
        expected = getattr(T, name + "Params2026", None) or getattr(T, name + "Params", None)
        if isinstance(expected, type):
            assert type(params) is expected, name
        roundtrip(type(params), wire["params"])
    if name.endswith("ResultResponse"):
        # A response's result parses into the result model (or is input_required).
        result_model = model_2026(name[: -len("Response")])
        result = roundtrip(result_model, wire["result"])
        assert isinstance(parsed.result, type(result))
        assert result.result_kind == "complete"


def test_2026_examples_cover_their_definitions() -> None:
    if not EXAMPLES_2026_DIR.is_dir():
        pytest.fail(f"examples not found at {EXAMPLES_2026_DIR}")
    names = {path.parent.name for path in _examples_2026()}
    assert len(names) > 80
    for name in names:
        model_2026(name)


# ---------------------------------------------------------------------------
# 2026-07-28: resultType
# ---------------------------------------------------------------------------


def test_result_without_result_type_is_complete() -> None:
    bare = roundtrip(T.Result, {})
    assert bare.result_type is None and bare.result_kind == "complete"
    assert T.Result().to_wire() == {}
    # 2025-11-25 results gain no resultType, ttlMs or cacheScope on the way back out.
    tools = roundtrip(T.ListToolsResult, TOOLS_LIST)
    assert tools.result_kind == "complete" and tools.ttl_ms is None and tools.cache_scope is None
    assert roundtrip(T.InitializeResult, INITIALIZE_RESULT).result_kind == "complete"
    assert roundtrip(T.CallToolResult, CALL_RESULT).result_type is None
    stated = roundtrip(T.CallToolResult, {**CALL_RESULT, "resultType": "complete"})
    assert stated.result_type == "complete" == stated.result_kind
    # Extensions may define more result types: they parse and are reported as such.
    other = T.Result.model_validate({"resultType": "x-deferred"})
    assert other.result_kind == "x-deferred"


def test_result_or_input_required_dispatches_on_result_type() -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(T.CallToolResultOrInputRequired)
    legacy = adapter.validate_python({"content": [{"type": "text", "text": "hi"}]})
    assert isinstance(legacy, T.CallToolResult2026) and legacy.result_kind == "complete"
    assert legacy.text == "hi"
    assert legacy.to_wire() == {"content": [{"type": "text", "text": "hi"}]}
    pending = adapter.validate_python({"resultType": "input_required", "requestState": "s"})
    assert isinstance(pending, T.InputRequiredResult) and pending.request_state == "s"
    with pytest.raises(ValidationError):
        adapter.validate_python({"resultType": "x-unknown", "content": []})
    prompt: TypeAdapter[Any] = TypeAdapter(T.GetPromptResultOrInputRequired)
    assert isinstance(prompt.validate_python({"messages": []}), T.GetPromptResult)
    read: TypeAdapter[Any] = TypeAdapter(T.ReadResourceResultOrInputRequired)
    assert isinstance(
        read.validate_python({"resultType": "input_required", "requestState": "s"}),
        T.InputRequiredResult,
    )
    server: TypeAdapter[Any] = TypeAdapter(T.ServerResult2026)
    assert type(server.validate_python({})) is T.Result
    assert isinstance(server.validate_python({"tools": []}), T.ListToolsResult)
    assert isinstance(
        server.validate_python({"resultType": "input_required", "inputRequests": {}}),
        T.InputRequiredResult,
    )
    response = T.CallToolResultResponse.model_validate(
        {"jsonrpc": "2.0", "id": 4, "result": {"resultType": "input_required", "requestState": "s"}}
    )
    assert isinstance(response.result, T.InputRequiredResult)


def test_call_tool_result_2026_structured_content_is_any_json() -> None:
    wire = {"resultType": "complete", "content": [], "structuredContent": [1, "two", {"x": 3}]}
    result = roundtrip(T.CallToolResult2026, wire)
    assert result.structured == [1, "two", {"x": 3}]
    assert isinstance(result, T.CallToolResult) and result.is_error is False
    # isError is written back only when it was given, either way round.
    assert roundtrip(T.CallToolResult2026, {"content": [], "isError": False}).is_error is False
    assert T.CallToolResult2026(content=[], is_error=True).to_wire() == {
        "content": [],
        "isError": True,
    }
    with pytest.raises(ValidationError):
        T.CallToolResult.model_validate(wire)  # 2025-11-25: structuredContent is an object
    tool_result = {"type": "tool_result", "toolUseId": "u", "content": [], "structuredContent": 7}
    assert roundtrip(T.ToolResultContent2026, tool_result).structured_content == 7
    message = roundtrip(T.SamplingMessage2026, {"role": "user", "content": [tool_result]})
    assert isinstance(message.content, list)
    assert isinstance(message.content[0], T.ToolResultContent2026)


def test_cacheable_results() -> None:
    wire = {"resultType": "complete", "tools": [], "ttlMs": 0, "cacheScope": "private"}
    tools = roundtrip(T.ListToolsResult, wire)
    assert isinstance(tools, T.CacheableResult) and isinstance(tools, T.PaginatedResult)
    assert tools.ttl_ms == 0 and tools.cache_scope == "private"
    for model in (
        T.ListPromptsResult,
        T.ListResourcesResult,
        T.ListResourceTemplatesResult,
        T.ReadResourceResult,
        T.DiscoverResult,
    ):
        assert issubclass(model, T.CacheableResult), model
    # A new scope value does not break the listing.
    assert T.ListToolsResult.model_validate({**wire, "cacheScope": "edge"}).cache_scope == "edge"


# ---------------------------------------------------------------------------
# 2026-07-28: multi round-trip requests
# ---------------------------------------------------------------------------


SAMPLING_WITH_TOOL_RESULT = {
    "messages": [
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "toolUseId": "call_1",
                    "content": [{"type": "text", "text": "2 users"}],
                    "structuredContent": [{"id": "1"}, {"id": "2"}],
                }
            ],
        }
    ],
    "maxTokens": 50,
}

INPUT_REQUIRED = {
    "resultType": "input_required",
    "inputRequests": {
        "login": {
            "method": "elicitation/create",
            "params": {
                "message": "GitHub user?",
                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
            },
        },
        "key": {
            "method": "elicitation/create",
            "params": {"mode": "url", "message": "Set a key", "url": "https://x/key"},
        },
        "llm": {"method": "sampling/createMessage", "params": SAMPLING_WITH_TOOL_RESULT},
        "roots": {"method": "roots/list"},
        "future": {"method": "x-vendor/ask", "params": {"q": 1}},
    },
    "requestState": "opaque",
    "_meta": {T.META_SERVER_INFO: {"name": "srv", "version": "1"}},
}


def test_input_required_result_requests_parse_by_method() -> None:
    result = roundtrip(T.InputRequiredResult, INPUT_REQUIRED)
    assert result.result_kind == "input_required" and result.request_state == "opaque"
    requests = result.input_requests
    assert requests is not None
    login, key, llm, roots = (requests[k] for k in ("login", "key", "llm", "roots"))
    assert isinstance(login, T.ElicitRequest2026)
    assert isinstance(login.params, T.ElicitRequestFormParams)
    assert login.params.requested_schema.properties["name"].type == "string"
    assert isinstance(key, T.ElicitRequest2026)
    assert isinstance(key.params, T.ElicitRequestURLParams2026)
    assert key.params.url == "https://x/key"
    assert isinstance(llm, T.CreateMessageRequest2026)
    assert isinstance(llm.params, T.CreateMessageRequestParams2026)
    block = llm.params.messages[0].content
    assert isinstance(block, list) and isinstance(block[0], T.ToolResultContent2026)
    assert block[0].structured_content == [{"id": "1"}, {"id": "2"}]
    assert isinstance(roots, T.ListRootsRequest2026) and roots.params is None
    future = requests["future"]
    assert type(future) is T.Request and future.params == {"q": 1}
    # Embedded requests are not JSON-RPC messages: no jsonrpc, no id.
    assert "jsonrpc" not in roots.to_wire() and "id" not in roots.to_wire()
    # An elicitationId is no longer required; the 2025-11-25 URL params still require it.
    with pytest.raises(ValidationError):
        T.ElicitRequestURLParams.model_validate(key.params.to_wire())
    built = T.InputRequiredResult(request_state="s")
    assert built.to_wire() == {"resultType": "input_required", "requestState": "s"}
    with pytest.raises(ValidationError):
        T.InputRequiredResult.model_validate({"resultType": "complete"})


def test_input_responses_and_retry_params() -> None:
    responses_wire = {
        "login": {"action": "accept", "content": {"name": "octocat"}},
        "llm": {
            "role": "assistant",
            "content": {"type": "text", "text": "Paris"},
            "model": "m",
            "stopReason": "endTurn",
        },
        "roots": {"roots": [{"uri": "file:///w", "name": "w"}]},
        "future": {"answer": 42},
    }
    params_wire = {
        "_meta": {
            T.META_PROTOCOL_VERSION: "2026-07-28",
            T.META_CLIENT_CAPABILITIES: {"elicitation": {}, "sampling": {}, "roots": {}},
        },
        "name": "deploy",
        "arguments": {"env": "prod"},
        "inputResponses": responses_wire,
        "requestState": "opaque",
    }
    params = roundtrip(T.CallToolRequestParams, params_wire)
    assert isinstance(params, T.InputResponseRequestParams)
    assert params.request_state == "opaque"
    responses = params.input_responses
    assert responses is not None
    assert isinstance(responses["login"], T.ElicitResult)
    assert isinstance(responses["llm"], T.CreateMessageResult2026)
    assert isinstance(responses["roots"], T.ListRootsResult)
    assert type(responses["future"]) is T.Result
    for model in (T.GetPromptRequestParams, T.ReadResourceRequestParams):
        assert issubclass(model, T.InputResponseRequestParams), model
    read = roundtrip(
        T.ReadResourceRequestParams,
        {"uri": "file:///a", "inputResponses": {"login": responses_wire["login"]}},
    )
    assert read.input_responses is not None and read.request_state is None
    # Built by the client from its own results: no resultType or _meta is added.
    built = T.CallToolRequestParams(
        name="deploy",
        input_responses={"login": T.ElicitResult(action="decline")},
        request_state="opaque",
    )
    assert built.to_wire() == {
        "name": "deploy",
        "inputResponses": {"login": {"action": "decline"}},
        "requestState": "opaque",
    }


# ---------------------------------------------------------------------------
# 2026-07-28: _meta, discovery, subscriptions and errors
# ---------------------------------------------------------------------------


def test_request_meta_object() -> None:
    built = T.RequestMetaObject(
        protocol_version="2026-07-28",
        client_capabilities=T.ClientCapabilities(extensions={"io.modelcontextprotocol/ui": {}}),
        client_info=T.Implementation(name="c", version="1"),
        log_level="warning",
        progress_token=5,
    )
    wire = built.to_wire()
    assert wire == {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {"io.modelcontextprotocol/ui": {}}
        },
        "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
        "io.modelcontextprotocol/logLevel": "warning",
        "progressToken": 5,
    }
    parsed = roundtrip(T.RequestMetaObject, {**wire, "traceparent": "00-ab-cd-01"})
    assert parsed.client_info is not None and parsed.client_info.name == "c"
    assert parsed.model_extra == {"traceparent": "00-ab-cd-01"}
    with pytest.raises(ValidationError):
        T.RequestMetaObject.model_validate({T.META_PROTOCOL_VERSION: "2026-07-28"})
    server = {T.META_SERVER_INFO: {"name": "s", "version": "2"}}
    result_meta = T.ResultMetaObject.model_validate(server)
    assert result_meta.server_info is not None and result_meta.server_info.version == "2"
    note_meta = T.NotificationMetaObject.model_validate({T.META_SUBSCRIPTION_ID: 3})
    assert note_meta.subscription_id == 3


def test_discover_request_and_result() -> None:
    request = T.DiscoverRequest(
        id="d",
        params=T.RequestParams(
            meta=T.RequestMetaObject(
                protocol_version=T.PROTOCOL_VERSION_2026_07_28,
                client_capabilities=T.ClientCapabilities(),
            ).to_wire()
        ),
    )
    assert request.to_wire() == {
        "jsonrpc": "2.0",
        "id": "d",
        "method": "server/discover",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
    }
    wire = {
        "resultType": "complete",
        "supportedVersions": ["2026-07-28", "2025-11-25"],
        "capabilities": {"tools": {"listChanged": True}, "extensions": {"x/y": {"on": True}}},
        "_meta": {T.META_SERVER_INFO: {"name": "srv", "version": "1.0", "title": "Server"}},
        "instructions": "Be nice.",
        "ttlMs": 1000,
        "cacheScope": "public",
    }
    result = roundtrip(T.DiscoverResult, wire)
    assert result.supported_versions == ["2026-07-28", "2025-11-25"]
    assert result.capabilities.extensions == {"x/y": {"on": True}}
    info = result.server_info
    assert isinstance(info, T.Implementation) and info.name == "srv" and info.title == "Server"
    assert result.ttl_ms == 1000 and result.cache_scope == "public"
    no_meta = {k: v for k, v in wire.items() if k != "_meta"}
    assert T.DiscoverResult.model_validate(no_meta).server_info is None
    bad_info = {**wire, "_meta": {T.META_SERVER_INFO: {"name": "no version"}}}
    assert T.DiscoverResult.model_validate(bad_info).server_info is None
    with pytest.raises(ValidationError):
        T.DiscoverResult.model_validate({k: v for k, v in wire.items() if k != "ttlMs"})


def test_subscriptions() -> None:
    request = T.SubscriptionsListenRequest(
        id=1,
        params=T.SubscriptionsListenRequestParams(
            notifications=T.SubscriptionFilter(
                tools_list_changed=True, resource_subscriptions=["file:///c.json"]
            )
        ),
    )
    assert request.to_wire() == {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "subscriptions/listen",
        "params": {
            "notifications": {"toolsListChanged": True, "resourceSubscriptions": ["file:///c.json"]}
        },
    }
    notes: TypeAdapter[Any] = TypeAdapter(T.ServerNotification2026)
    ack = notes.validate_python(
        {
            "jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": {"_meta": {T.META_SUBSCRIPTION_ID: 1}, "notifications": {}},
        }
    )
    assert isinstance(ack, T.SubscriptionsAcknowledgedNotification)
    assert ack.params.subscription_id == 1 and ack.params.notifications.tools_list_changed is None
    changed = notes.validate_python(
        {
            "jsonrpc": "2.0",
            "method": "notifications/tools/list_changed",
            "params": {"_meta": {T.META_SUBSCRIPTION_ID: "listen-1"}},
        }
    )
    assert isinstance(changed, T.ToolListChangedNotification)
    assert changed.params is not None and changed.params.subscription_id == "listen-1"
    progress = T.ProgressNotificationParams(progress_token=1, progress=1)
    assert progress.subscription_id is None
    with pytest.raises(ValidationError):
        notes.validate_python({"jsonrpc": "2.0", "method": "notifications/tasks/status"})
    closed_wire = {"resultType": "complete", "_meta": {T.META_SUBSCRIPTION_ID: 1}}
    closed = roundtrip(T.SubscriptionsListenResult, closed_wire)
    assert closed.subscription_id == 1
    with pytest.raises(ValidationError):
        T.SubscriptionsListenResult.model_validate({"resultType": "complete"})


def test_2026_error_responses() -> None:
    unsupported = roundtrip(
        T.UnsupportedProtocolVersionError,
        {
            "jsonrpc": "2.0",
            "id": 1,
            "error": {
                "code": -32022,
                "message": "Unsupported protocol version",
                "data": {"supported": ["2026-07-28"], "requested": "1900-01-01"},
            },
        },
    )
    assert unsupported.error.data.supported == ["2026-07-28"]
    assert unsupported.error.data.requested == "1900-01-01"
    assert isinstance(unsupported, T.JSONRPCErrorResponse)
    missing = roundtrip(
        T.MissingRequiredClientCapabilityError,
        {
            "jsonrpc": "2.0",
            "id": 2,
            "error": {
                "code": -32021,
                "message": "Needs elicitation",
                "data": {"requiredCapabilities": {"elicitation": {"url": {}}}},
            },
        },
    )
    required = missing.error.data.required_capabilities
    assert isinstance(required, T.ClientCapabilities)
    assert required.elicitation is not None and required.elicitation.url == {}
    mismatch = roundtrip(
        T.HeaderMismatchError,
        {"jsonrpc": "2.0", "error": {"code": -32020, "message": "Mcp-Name mismatch"}},
    )
    assert mismatch.id is None and mismatch.error.code == T.HEADER_MISMATCH
    with pytest.raises(ValidationError):
        T.HeaderMismatchError.model_validate(
            {"jsonrpc": "2.0", "id": 1, "error": {"code": -32021, "message": "x"}}
        )
    with pytest.raises(ValidationError):  # data is required
        T.UnsupportedProtocolVersionError.model_validate(
            {"jsonrpc": "2.0", "id": 1, "error": {"code": -32022, "message": "x"}}
        )


def test_2026_client_request_union() -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(T.ClientRequest2026)
    meta = {T.META_PROTOCOL_VERSION: "2026-07-28", T.META_CLIENT_CAPABILITIES: {}}
    discover = adapter.validate_python(
        {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}
    )
    assert isinstance(discover, T.DiscoverRequest)
    call = adapter.validate_python(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"_meta": meta, "name": "t", "requestState": "s"},
        }
    )
    assert isinstance(call, T.CallToolRequest) and call.params.request_state == "s"
    for gone in ("initialize", "ping", "logging/setLevel", "resources/subscribe"):
        with pytest.raises(ValidationError):
            adapter.validate_python({"jsonrpc": "2.0", "id": 3, "method": gone, "params": {}})
