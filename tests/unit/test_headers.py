"""The 2026-07-28 header rules (pure functions): encoding and x-mcp-header validation."""

from __future__ import annotations

import pytest

from mcp_sync._protocol.headers import encode_header_value, invalid_header_annotation, param_headers


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        ("us-west1", "us-west1"),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
        (42, "42"),
        (-7, "-7"),
        (True, "true"),
        (False, "false"),
    ],
)
def test_encoding_follows_the_spec_examples(value: object, encoded: str) -> None:
    assert encode_header_value(value) == encoded


def schema(**properties: object) -> dict:  # type: ignore[type-arg]
    return {"type": "object", "properties": properties}


def test_valid_annotations_and_extraction() -> None:
    tool_schema = schema(
        region={"type": "string", "x-mcp-header": "Region"},
        query={"type": "string"},
        options={"type": "object", "properties": {
            "tenant": {"type": "integer", "x-mcp-header": "Tenant"},
            "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
        }},
    )
    assert invalid_header_annotation(tool_schema) is None
    headers = param_headers(tool_schema, {"region": "eu", "query": "q",
                                          "options": {"tenant": 7, "dry": False}})
    assert headers == {"Mcp-Param-Region": "eu", "Mcp-Param-Tenant": "7",
                       "Mcp-Param-Dry-Run": "false"}
    # absent or null values: no header
    assert param_headers(tool_schema, {"query": "q", "region": None}) == {}
    with pytest.raises(ValueError, match="safe integer"):
        param_headers(tool_schema, {"options": {"tenant": 2**60}})


@pytest.mark.parametrize(
    ("tool_schema", "reason"),
    [
        (schema(a={"type": "string", "x-mcp-header": ""}), "empty"),
        (schema(a={"type": "string", "x-mcp-header": "Has Space"}), "token"),
        (schema(a={"type": "string", "x-mcp-header": "Bad\r\nX"}), "token"),
        (schema(a={"type": "number", "x-mcp-header": "Num"}), "type"),
        (schema(a={"type": "array", "x-mcp-header": "Arr"}), "type"),
        (schema(a={"type": "string", "x-mcp-header": "Dup"},
                b={"type": "string", "x-mcp-header": "dup"}), "twice"),
        (schema(a={"type": "array", "items": {"type": "string", "x-mcp-header": "I"}}),
         "reachable"),
        ({"type": "object", "anyOf": [schema(a={"type": "string", "x-mcp-header": "A"})]},
         "reachable"),
    ],
)
def test_invalid_annotations_are_reported(tool_schema: dict, reason: str) -> None:  # type: ignore[type-arg]
    message = invalid_header_annotation(tool_schema)
    assert message is not None and reason in message
