"""Tests for mcp_sync.types: wire parsing, round trips, tolerance and schema coverage."""

import copy
import json
import typing
from pathlib import Path
from typing import Any, Dict, List, Optional, Set, Tuple

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from mcp_sync import types as T

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "shared" / "spec" / "2025-11-25" / "schema.json"

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


@pytest.fixture(scope="module")
def defs() -> Dict[str, Any]:
    if not SCHEMA_PATH.exists():
        pytest.skip(f"MCP schema not found at {SCHEMA_PATH}")
    loaded: Dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))["$defs"]
    return loaded


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
    defs: Dict[str, Any], model: type, schema: Dict[str, Any], where: str
) -> None:
    assert issubclass(model, BaseModel)
    props, required = _object_shape(defs, schema)
    wire = _wire_names(model)
    assert set(wire) == set(props), f"{where}: fields {sorted(wire)} != schema {sorted(props)}"
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
            assert field.is_required() or field.default in allowed, f"{here} must be required"
        else:
            assert not field.is_required(), f"{here} must be optional"
        nested = _nested_model(field.annotation)
        inline = prop_schema.get("items", prop_schema) if "items" in prop_schema else prop_schema
        if nested is not None and (inline.get("properties") or "allOf" in inline):
            _check_model_against_schema(defs, nested, inline, here)


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
        name
        for name, value in vars(T).items()
        if isinstance(value, type)
        and issubclass(value, BaseModel)
        and value.__module__ == T.__name__
        and not name.startswith("_")
    }
    assert public_models <= set(T.__all__)


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
