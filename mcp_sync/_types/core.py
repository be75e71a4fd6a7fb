"""The models of a tool call: the first of ``mcp_sync.types``' two model modules.

The base model (:class:`MCPModel`), the result bases, the content blocks, the tool
models and the tool call result of both eras: the models a process that connects, lists
tools and calls one needs.  ``mcp_sync.types`` imports this module the first time one of
its names is asked for, and :mod:`mcp_sync._types.protocol` (every other model) the
first time one of that module's is.  Import the models from ``mcp_sync.types``; the
conventions are described there.
"""

import json
import threading
from typing import (
    Annotated,
    Any,
    Callable,
    ClassVar,
    Dict,
    List,
    Literal,
    Optional,
    Sequence,
    Union,
)

from pydantic import VERSION as _PYDANTIC_VERSION
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    SerializerFunctionWrapHandler,
    Tag,
    model_serializer,
)

# ---------------------------------------------------------------------------
# Base model
# ---------------------------------------------------------------------------


def _to_camel(name: str) -> str:
    """Turn a snake_case attribute name into its camelCase wire name."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


# Every model is built on first use (``defer_build``): importing this module collects each
# model's fields, and a model's validator, serializer and core schema are made the first
# time it validates, serializes or gives its JSON schema.  A process pays only for the
# models it uses: a session-era call builds none of the 2026-07-28 models, and the other
# way round.  Pydantic's building is not safe for two threads at once (one can see the
# half-built class, and use a parent class's schema, validator or serializer), so every
# build of an MCPModel holds this lock; a built model never takes it again.  Reentrant,
# so that a build that asks for another model's on the same thread cannot deadlock.
_BUILD_LOCK = threading.RLock()


def _builds_lazily(pydantic_version: str) -> bool:
    """Whether models can wait for their first use under this version of pydantic.

    Before 2.12 a model whose build waits has no aliases in ``model_fields`` until it is
    built, and 2.11.0 to 2.11.4 can hand a thread the parent class's validator while another
    thread builds the model: under those, every model is built at import, as it always was.
    """
    major, minor = (int(part) for part in pydantic_version.split(".")[:2])
    return (major, minor) >= (2, 12)


class MCPModel(BaseModel):
    """Base class of every MCP model: camelCase aliases, unknown fields kept."""

    # The docstring is also the JSON schema's description; building is explained above.

    model_config = ConfigDict(
        extra="allow",
        populate_by_name=True,
        alias_generator=_to_camel,
        protected_namespaces=(),
        defer_build=_builds_lazily(_PYDANTIC_VERSION),
    )

    @classmethod
    def model_rebuild(
        cls,
        *,
        force: bool = False,
        raise_errors: bool = True,
        _parent_namespace_depth: int = 2,
        _types_namespace: Any = None,
    ) -> Optional[bool]:
        """Build the model now if it is not built yet (pydantic's ``model_rebuild``).

        Thread-safe: one model is built at a time, and a thread that asks for a model
        another thread is building waits for that build and uses it.
        """
        with _BUILD_LOCK:
            return super().model_rebuild(
                force=force,
                raise_errors=raise_errors,
                # One frame more than pydantic counts: this one.
                _parent_namespace_depth=(
                    _parent_namespace_depth + 1 if _parent_namespace_depth > 0 else 0
                ),
                _types_namespace=_types_namespace,
            )

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> Dict[str, Any]:
        """The model's JSON schema (pydantic's ``model_json_schema``), built first if needed.

        Pydantic reads the schema of a model that is still being built on another thread
        from its parent class; building it here, under the lock, first avoids that.
        """
        if not cls.__pydantic_complete__:
            cls.model_rebuild(raise_errors=False, _parent_namespace_depth=3)
        return super().model_json_schema(*args, **kwargs)

    def to_wire(self) -> Dict[str, Any]:
        """Serialise to a JSON-ready dict with wire (camelCase) names, omitting ``None``."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


# ``_meta`` is reserved protocol metadata; the attribute is called ``meta``.  Using
# validation/serialization aliases (rather than ``alias``) keeps ``meta=`` as the
# constructor keyword for type checkers, with or without the pydantic mypy plugin.
MetaField = Annotated[
    Optional[Dict[str, Any]],
    Field(validation_alias="_meta", serialization_alias="_meta"),
]

# ---------------------------------------------------------------------------
# Scalar aliases
# ---------------------------------------------------------------------------

RequestId = Union[str, int]
ProgressToken = Union[str, int]
Cursor = str
Role = Literal["user", "assistant"]
LoggingLevel = Literal[
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
]
TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
# 2026-07-28.  ``resultType``: known values "complete" and "input_required"; extensions may
# add more, so any string parses.
ResultType = Union[Literal["complete", "input_required"], str]
# ``cacheScope`` of cacheable results: known values "public" and "private".
CacheScope = Union[Literal["private", "public"], str]
# Arbitrary JSON, kept as parsed by ``json``.
JSONValue = Any
JSONObject = Dict[str, Any]
JSONArray = List[Any]
# The contents of a ``_meta`` field; see RequestMetaObject and friends for the reserved keys.
MetaObject = Dict[str, Any]


# ---------------------------------------------------------------------------
# Shared building blocks
# ---------------------------------------------------------------------------


class BaseMetadata(MCPModel):
    """Programmatic ``name`` plus optional human-readable ``title``."""

    name: str
    title: Optional[str] = None


class Icon(MCPModel):
    """An optionally-sized icon that a user interface can display."""

    src: str
    mime_type: Optional[str] = None
    sizes: Optional[List[str]] = None
    # Known values are "light" and "dark"; any string is accepted so that a newer
    # server cannot break listings by adding a theme.
    theme: Optional[Union[Literal["light", "dark"], str]] = None


class Icons(MCPModel):
    """Mixin adding an optional ``icons`` list."""

    icons: Optional[List[Icon]] = None


class Annotations(MCPModel):
    """Client hints about audience, priority and freshness of an object."""

    # Known values are "user" and "assistant"; other strings are tolerated.
    audience: Optional[List[Union[Role, str]]] = None
    priority: Optional[float] = None
    last_modified: Optional[str] = None


class Result(MCPModel):
    """Base of every result; extra fields are kept.

    ``result_type`` is the wire's ``resultType`` (2026-07-28), ``None`` when absent so that
    results from older servers round-trip unchanged; :attr:`result_kind` is what it means.
    """

    meta: MetaField = None
    result_type: Optional[ResultType] = None

    @property
    def result_kind(self) -> str:
        """The result's type: ``resultType``, or ``"complete"`` when the wire had none."""
        return "complete" if self.result_type is None else self.result_type


class PaginatedResult(Result):
    """A result page with an optional cursor to the next page."""

    next_cursor: Optional[Cursor] = None


class CacheableResult(Result):
    """A result with client-side caching hints (2026-07-28).

    ``ttl_ms`` is how long the result may be treated as fresh; ``cache_scope`` is
    ``"public"`` (shareable across users) or ``"private"`` (one authorization context).
    2026-07-28 servers always send both; they are optional here because the results that
    carry them are shared with 2025-11-25, which has neither.
    """

    ttl_ms: Optional[int] = None
    cache_scope: Optional[CacheScope] = None


# ---------------------------------------------------------------------------
# Content blocks
# ---------------------------------------------------------------------------


class TextContent(MCPModel):
    """Text provided to or from an LLM."""

    type: Literal["text"] = "text"
    text: str
    annotations: Optional[Annotations] = None
    meta: MetaField = None


class _MediaContent(MCPModel):
    """Base64-encoded media provided to or from an LLM; each kind narrows ``type``."""

    type: str
    data: str
    mime_type: str
    annotations: Optional[Annotations] = None
    meta: MetaField = None


class ImageContent(_MediaContent):
    """A base64-encoded image provided to or from an LLM."""

    type: Literal["image"] = "image"


class AudioContent(_MediaContent):
    """Base64-encoded audio provided to or from an LLM."""

    type: Literal["audio"] = "audio"


class UnknownContent(MCPModel):
    """Fallback for a content block whose ``type`` this client does not know."""

    type: str
    meta: MetaField = None


class ResourceContents(MCPModel):
    """Contents of a resource; also the fallback when neither text nor blob is present."""

    uri: str
    mime_type: Optional[str] = None
    meta: MetaField = None


class TextResourceContents(ResourceContents):
    """Resource contents that can be represented as text."""

    text: str


class BlobResourceContents(ResourceContents):
    """Binary resource contents, base64-encoded."""

    blob: str


def _resource_contents_tag(value: Any) -> Optional[str]:
    """Tell text, blob and unknown resource contents apart."""
    if isinstance(value, dict):
        if "text" in value:
            return "text"
        if "blob" in value:
            return "blob"
        return "other"
    if isinstance(value, TextResourceContents):
        return "text"
    if isinstance(value, BlobResourceContents):
        return "blob"
    if isinstance(value, ResourceContents):
        return "other"
    return None


AnyResourceContents = Annotated[
    Union[
        Annotated[TextResourceContents, Tag("text")],
        Annotated[BlobResourceContents, Tag("blob")],
        Annotated[ResourceContents, Tag("other")],
    ],
    Discriminator(_resource_contents_tag),
]


class EmbeddedResource(MCPModel):
    """Resource contents embedded into a prompt or tool call result."""

    type: Literal["resource"] = "resource"
    resource: AnyResourceContents
    annotations: Optional[Annotations] = None
    meta: MetaField = None


class Resource(BaseMetadata, Icons):
    """A known resource that the server is capable of reading."""

    uri: str
    description: Optional[str] = None
    mime_type: Optional[str] = None
    annotations: Optional[Annotations] = None
    size: Optional[int] = None
    meta: MetaField = None


class ResourceLink(Resource):
    """A link to a resource, included in a prompt or tool call result."""

    type: Literal["resource_link"] = "resource_link"


def _type_tag(known: Sequence[str], field: str = "type") -> Callable[[Any], Optional[str]]:
    """Build a discriminator function mapping unknown ``field`` values to ``"unknown"``."""

    def tag(value: Any) -> Optional[str]:
        """Return the value's ``field`` if known, ``"unknown"`` otherwise."""
        if isinstance(value, dict):
            kind = value.get(field)
        elif isinstance(value, BaseModel):
            kind = getattr(value, field, None)
        else:
            return None
        if not isinstance(kind, str):
            return None
        return kind if kind in known else "unknown"

    return tag


ContentBlock = Annotated[
    Union[
        Annotated[TextContent, Tag("text")],
        Annotated[ImageContent, Tag("image")],
        Annotated[AudioContent, Tag("audio")],
        Annotated[ResourceLink, Tag("resource_link")],
        Annotated[EmbeddedResource, Tag("resource")],
        Annotated[UnknownContent, Tag("unknown")],
    ],
    Discriminator(_type_tag(("text", "image", "audio", "resource_link", "resource"))),
]


# ---------------------------------------------------------------------------
# Tools
# ---------------------------------------------------------------------------


class ToolAnnotations(MCPModel):
    """Untrusted hints describing a tool's behaviour."""

    title: Optional[str] = None
    read_only_hint: Optional[bool] = None
    destructive_hint: Optional[bool] = None
    idempotent_hint: Optional[bool] = None
    open_world_hint: Optional[bool] = None


class ToolExecution(MCPModel):
    """Execution-related properties of a tool."""

    # Known values: "forbidden", "optional", "required"; other strings are tolerated.
    task_support: Optional[Union[Literal["forbidden", "optional", "required"], str]] = None


class Tool(BaseMetadata, Icons):
    """A tool the client can call; schemas are kept as plain JSON Schema dicts."""

    description: Optional[str] = None
    input_schema: Dict[str, Any]
    output_schema: Optional[Dict[str, Any]] = None
    annotations: Optional[ToolAnnotations] = None
    execution: Optional[ToolExecution] = None
    meta: MetaField = None

    def _repr_html_(self) -> str:
        """Jupyter: a one-row table (name, description, parameters)."""
        from .display import tools_html

        return tools_html([self])

    def _repr_markdown_(self) -> str:
        from .display import tools_markdown

        return tools_markdown([self])


class ToolList(List[Tool]):
    """A plain list of :class:`Tool` (what ``Client.list_tools()`` returns) that Jupyter
    shows as a table: name, description, parameters."""

    def _repr_html_(self) -> str:
        from .display import tools_html

        return tools_html(self)

    def _repr_markdown_(self) -> str:
        from .display import tools_markdown

        return tools_markdown(self)


class ListToolsResult(PaginatedResult, CacheableResult):
    """One page of tools."""

    tools: List[Tool]


# CallToolRequestParams and CallToolRequest are in _types_protocol, after InputResponses.


class CallToolResult(Result):
    """Result of a tool call, with helpers for its text, images and structured output."""

    content: List[ContentBlock]
    structured_content: Optional[Dict[str, Any]] = None
    is_error: bool = False
    # Set by the client when the tool declares an outputSchema: .data may read the text.
    # A class default and an instance attribute set past pydantic, not a PrivateAttr: a
    # model with private attributes runs their initialisation on every validation (5 us a
    # result, more than the validation of a small result itself). Not a field: neither
    # dumped nor compared.
    _output_declared: ClassVar[bool] = False

    def declare_output(self) -> None:
        """Note that the tool declared an ``outputSchema`` (the client calls this): a
        successful result's :attr:`data` may then be its text parsed as JSON."""
        object.__setattr__(self, "_output_declared", True)

    @property
    def text(self) -> str:
        """All text content blocks joined with newlines."""
        content = self.content
        if len(content) == 1:  # most results: read on every call, so without a generator
            block = content[0]
            return block.text if isinstance(block, TextContent) else ""
        return "\n".join([c.text for c in content if isinstance(c, TextContent)])

    @property
    def data(self) -> Any:
        """The tool's result as data: what ``client.call_tool("add", {...}).data["sum"]``
        reads.

        The structured content (``structuredContent``) when present. Otherwise, when the
        tool declares an ``outputSchema`` (the client knows it from ``list_tools()``) and
        the call succeeded, its text parsed as JSON (servers that put the structured
        result only in a text block). ``None`` in every other case: text is never guessed
        to be JSON for a tool that did not promise structured output.
        """
        if self.structured_content is not None:
            return self.structured_content
        if not self._output_declared or self.is_error:
            return None
        try:
            return json.loads(self.text)
        except (ValueError, RecursionError):  # not JSON, or nested beyond the parser
            return None

    @property
    def structured(self) -> Optional[Dict[str, Any]]:
        """The structured result (``structuredContent``), if any."""
        return self.structured_content

    @property
    def images(self) -> List[ImageContent]:
        """All image content blocks."""
        return [c for c in self.content if isinstance(c, ImageContent)]

    # Jupyter display: text, images inline, structured content as a table or JSON.
    def _repr_html_(self) -> str:
        from .display import result_html

        return result_html(self)

    def _repr_markdown_(self) -> str:
        from .display import result_markdown

        return result_markdown(self)

    def _repr_png_(self) -> Optional[bytes]:
        from .display import image_bytes

        return image_bytes(self, "image/png")

    def _repr_jpeg_(self) -> Optional[bytes]:
        from .display import image_bytes

        return image_bytes(self, "image/jpeg")


# The 2026-07-28 shape of the tool call result lives here too, so that a call in either
# era defines no more than this module.
class CallToolResult2026(CallToolResult):
    """2026-07-28 tool call result: ``structured_content`` is any JSON value.

    ``is_error`` reads ``False`` when absent, but is only written back if it was given.
    """

    structured_content: Optional[JSONValue] = None

    @property
    def structured(self) -> Optional[JSONValue]:
        """The structured result (``structuredContent``), if any: any JSON value."""
        return self.structured_content

    @model_serializer(mode="wrap")
    def _omit_unset_is_error(self, handler: SerializerFunctionWrapHandler) -> Dict[str, Any]:
        """Leave ``isError`` out unless it was set, so results round-trip exactly."""
        data: Dict[str, Any] = handler(self)
        if "is_error" not in self.model_fields_set:
            data.pop("isError", None)
        return data
