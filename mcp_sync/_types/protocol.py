"""The protocol's models beyond a tool call, defined the first time one is asked for.

``mcp_sync.types`` imports this module on the first use of one of its names (the
requests, notifications and results of every method, capabilities and initialization,
tasks, sampling, elicitation, the 2026-07-28 definitions and the per-direction unions):
a process that only calls tools never defines these ~180 classes.  Import the models from
``mcp_sync.types``; the conventions are described there.
"""

from typing import (
    Annotated,
    Any,
    Dict,
    List,
    Literal,
    Optional,
    Sequence,
    Type,
    TypeVar,
    Union,
)

from pydantic import (
    BaseModel,
    Discriminator,
    Field,
    SerializerFunctionWrapHandler,
    Tag,
    ValidationError,
    model_serializer,
)

from .._protocol import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    META_SUBSCRIPTION_ID,
)
from .core import (
    Annotations,
    AnyResourceContents,
    AudioContent,
    BaseMetadata,
    CacheableResult,
    CacheScope,
    CallToolResult,
    CallToolResult2026,
    ContentBlock,
    Cursor,
    Icons,
    ImageContent,
    JSONValue,
    ListToolsResult,
    LoggingLevel,
    MCPModel,
    MetaField,
    PaginatedResult,
    ProgressToken,
    RequestId,
    Resource,
    Result,
    Role,
    TaskStatus,
    TextContent,
    TextResourceContents,
    Tool,
    UnknownContent,
    _type_tag,
)


def _class_tag(value: Any, classes: Sequence[Type[BaseModel]]) -> Optional[str]:
    """Return the class name of ``value`` if it is an instance of one of ``classes``."""
    for cls in classes:
        if isinstance(value, cls):
            return cls.__name__
    return None


# ---------------------------------------------------------------------------
# JSON-RPC envelopes
# ---------------------------------------------------------------------------


class Error(MCPModel):
    """The ``error`` member of a JSON-RPC error response."""

    code: int
    message: str
    data: Any = None


ErrorObject = Error
ErrorData = Error


class _JSONRPCEnvelope(MCPModel):
    """Fields shared by every JSON-RPC message."""

    jsonrpc: Literal["2.0"] = "2.0"


class _RequestEnvelope(_JSONRPCEnvelope):
    """Fields shared by every JSON-RPC request."""

    id: RequestId


class _MethodCall(MCPModel):
    """A method name and optional params kept as a dict: the untyped shape of requests and
    notifications, with or without a JSON-RPC envelope.

    Named before the envelope among a model's bases, so that its fields follow ``jsonrpc``
    and ``id`` on the wire.
    """

    method: str
    params: Optional[Dict[str, Any]] = None


class Request(_MethodCall):
    """Generic request shape: a method name and optional params object."""


class Notification(_MethodCall):
    """Generic notification shape: a method name and optional params object."""


class JSONRPCRequest(_MethodCall, _RequestEnvelope):
    """A raw JSON-RPC request that expects a response; params kept as a dict."""


class JSONRPCNotification(_MethodCall, _JSONRPCEnvelope):
    """A raw JSON-RPC notification; params kept as a dict."""


class JSONRPCResultResponse(_RequestEnvelope):
    """A successful JSON-RPC response; ``result`` is kept as a dict for typed re-parsing."""

    result: Dict[str, Any]


class JSONRPCErrorResponse(_JSONRPCEnvelope):
    """A JSON-RPC response carrying an error."""

    id: Optional[RequestId] = None
    error: Error


def _jsonrpc_message_tag(value: Any) -> Optional[str]:
    """Pick the JSON-RPC message kind from a raw dict or a model instance."""
    if isinstance(value, dict):
        if "method" in value:
            return "request" if "id" in value else "notification"
        if "error" in value:
            return "error"
        if "result" in value:
            return "result"
        return None
    tags = {
        "JSONRPCRequest": "request",
        "JSONRPCNotification": "notification",
        "JSONRPCResultResponse": "result",
        "JSONRPCErrorResponse": "error",
    }
    name = _class_tag(
        value,
        (JSONRPCRequest, JSONRPCNotification, JSONRPCResultResponse, JSONRPCErrorResponse),
    )
    return tags.get(name) if name else None


JSONRPCMessage = Annotated[
    Union[
        Annotated[JSONRPCRequest, Tag("request")],
        Annotated[JSONRPCNotification, Tag("notification")],
        Annotated[JSONRPCResultResponse, Tag("result")],
        Annotated[JSONRPCErrorResponse, Tag("error")],
    ],
    Discriminator(_jsonrpc_message_tag),
]

JSONRPCResponse = Annotated[
    Union[
        Annotated[JSONRPCResultResponse, Tag("result")],
        Annotated[JSONRPCErrorResponse, Tag("error")],
    ],
    Discriminator(_jsonrpc_message_tag),
]


# ---------------------------------------------------------------------------
# Params and result bases
# ---------------------------------------------------------------------------


class RequestParams(MCPModel):
    """Common request params; ``meta`` may carry a ``progressToken``."""

    meta: MetaField = None


class TaskMetadata(MCPModel):
    """Asks the receiver to run a request as a task, retained for ``ttl`` ms."""

    ttl: Optional[int] = None


class RelatedTaskMetadata(MCPModel):
    """Associates a message with a task."""

    task_id: str


class TaskAugmentedRequestParams(RequestParams):
    """Request params that may ask for task-augmented execution."""

    task: Optional[TaskMetadata] = None


class PaginatedRequestParams(RequestParams):
    """Params of a paginated list request."""

    cursor: Optional[Cursor] = None


# InputResponseRequestParams follows InputResponses, below.


class PaginatedRequest(_RequestEnvelope):
    """A request for one page of a list."""

    method: str
    params: Optional[PaginatedRequestParams] = None


class NotificationParams(MCPModel):
    """Common notification params."""

    meta: MetaField = None

    @property
    def subscription_id(self) -> Optional[RequestId]:
        """The ``subscriptions/listen`` stream this notification came on, if any (2026-07-28)."""
        return _subscription_id(self.meta)


def _subscription_id(meta: Optional[Dict[str, Any]]) -> Optional[RequestId]:
    """``meta[META_SUBSCRIPTION_ID]`` if it is a valid request id, else ``None``."""
    value = (meta or {}).get(META_SUBSCRIPTION_ID)
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return value
    return None


EmptyResult = Result


# ---------------------------------------------------------------------------
# Content blocks of sampling (the others are in _types_core)
# ---------------------------------------------------------------------------


class ToolUseContent(MCPModel):
    """A request from the assistant to call a tool (sampling only)."""

    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: Dict[str, Any]
    meta: MetaField = None


class ToolResultContent(MCPModel):
    """The result of a tool use, sent back to the assistant (sampling only)."""

    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: List[ContentBlock]
    structured_content: Optional[Dict[str, Any]] = None
    is_error: Optional[bool] = None
    meta: MetaField = None


_ToolResult = TypeVar("_ToolResult", bound=ToolResultContent)

# The blocks of a sampling message; each era puts in its own tool result model.
_SamplingMessageContentBlocks = Annotated[
    Union[
        Annotated[TextContent, Tag("text")],
        Annotated[ImageContent, Tag("image")],
        Annotated[AudioContent, Tag("audio")],
        Annotated[ToolUseContent, Tag("tool_use")],
        Annotated[_ToolResult, Tag("tool_result")],
        Annotated[UnknownContent, Tag("unknown")],
    ],
    Discriminator(_type_tag(("text", "image", "audio", "tool_use", "tool_result"))),
]
SamplingMessageContentBlock = _SamplingMessageContentBlocks[ToolResultContent]


# ---------------------------------------------------------------------------
# Tasks
# ---------------------------------------------------------------------------


class Task(MCPModel):
    """State of a task; ``ttl`` is required and ``None`` means unlimited retention."""

    task_id: str
    status: TaskStatus
    status_message: Optional[str] = None
    created_at: str
    last_updated_at: str
    ttl: Optional[int]
    poll_interval: Optional[int] = None

    @model_serializer(mode="wrap")
    def _keep_null_ttl(self, handler: SerializerFunctionWrapHandler) -> Dict[str, Any]:
        """Write ``"ttl": null`` even when ``None`` values are excluded (it is required)."""
        data: Dict[str, Any] = handler(self)
        if self.ttl is None:
            data["ttl"] = None
        return data


class CreateTaskResult(Result):
    """Immediate response to a task-augmented request."""

    task: Task


class GetTaskRequestParams(MCPModel):
    """Params of a ``tasks/get`` request."""

    task_id: str


class GetTaskRequest(_RequestEnvelope):
    """Retrieve the state of a task."""

    method: Literal["tasks/get"] = "tasks/get"
    params: GetTaskRequestParams


class GetTaskResult(Result, Task):
    """Response to ``tasks/get``: the task itself."""


class GetTaskPayloadRequestParams(MCPModel):
    """Params of a ``tasks/result`` request."""

    task_id: str


class GetTaskPayloadRequest(_RequestEnvelope):
    """Retrieve the result of a completed task."""

    method: Literal["tasks/result"] = "tasks/result"
    params: GetTaskPayloadRequestParams


class GetTaskPayloadResult(Result):
    """Response to ``tasks/result``: the original request's result fields, kept as extras."""


class CancelTaskRequestParams(MCPModel):
    """Params of a ``tasks/cancel`` request."""

    task_id: str


class CancelTaskRequest(_RequestEnvelope):
    """Cancel a task."""

    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: CancelTaskRequestParams


class CancelTaskResult(Result, Task):
    """Response to ``tasks/cancel``: the task after cancellation."""


class ListTasksRequest(PaginatedRequest):
    """List tasks."""

    method: Literal["tasks/list"] = "tasks/list"


class ListTasksResult(PaginatedResult):
    """One page of tasks."""

    tasks: List[Task]


class TaskStatusNotificationParams(NotificationParams, Task):
    """Params of ``notifications/tasks/status``: the task's new state."""


class TaskStatusNotification(_JSONRPCEnvelope):
    """Tells the requestor that a task's status changed."""

    method: Literal["notifications/tasks/status"] = "notifications/tasks/status"
    params: TaskStatusNotificationParams


# ---------------------------------------------------------------------------
# Capabilities and initialization
# ---------------------------------------------------------------------------


class RootsCapability(MCPModel):
    """Client supports ``roots/list``."""

    list_changed: Optional[bool] = None


class SamplingCapability(MCPModel):
    """Client supports ``sampling/createMessage``."""

    context: Optional[Dict[str, Any]] = None
    tools: Optional[Dict[str, Any]] = None


class ElicitationCapability(MCPModel):
    """Client supports ``elicitation/create`` (form and/or URL mode)."""

    form: Optional[Dict[str, Any]] = None
    url: Optional[Dict[str, Any]] = None


class ClientTasksElicitationCapability(MCPModel):
    """Client accepts task-augmented elicitation requests."""

    create: Optional[Dict[str, Any]] = None


class ClientTasksSamplingCapability(MCPModel):
    """Client accepts task-augmented sampling requests."""

    create_message: Optional[Dict[str, Any]] = None


class ClientTasksRequestsCapability(MCPModel):
    """Request types the client lets the server augment with tasks."""

    elicitation: Optional[ClientTasksElicitationCapability] = None
    sampling: Optional[ClientTasksSamplingCapability] = None


class ClientTasksCapability(MCPModel):
    """Client supports task-augmented requests."""

    list: Optional[Dict[str, Any]] = None
    cancel: Optional[Dict[str, Any]] = None
    requests: Optional[ClientTasksRequestsCapability] = None


class ClientCapabilities(MCPModel):
    """Capabilities a client may support; unknown capabilities are kept."""

    experimental: Optional[Dict[str, Dict[str, Any]]] = None
    roots: Optional[RootsCapability] = None
    sampling: Optional[SamplingCapability] = None
    elicitation: Optional[ElicitationCapability] = None
    tasks: Optional[ClientTasksCapability] = None
    # 2026-07-28: optional extensions the client supports, keyed by extension id.
    extensions: Optional[Dict[str, Dict[str, Any]]] = None


class PromptsCapability(MCPModel):
    """Server offers prompts."""

    list_changed: Optional[bool] = None


class ResourcesCapability(MCPModel):
    """Server offers resources."""

    subscribe: Optional[bool] = None
    list_changed: Optional[bool] = None


class ToolsCapability(MCPModel):
    """Server offers tools."""

    list_changed: Optional[bool] = None


class ServerTasksToolsCapability(MCPModel):
    """Server accepts task-augmented tool calls."""

    call: Optional[Dict[str, Any]] = None


class ServerTasksRequestsCapability(MCPModel):
    """Request types the client may augment with tasks."""

    tools: Optional[ServerTasksToolsCapability] = None


class ServerTasksCapability(MCPModel):
    """Server supports task-augmented requests."""

    list: Optional[Dict[str, Any]] = None
    cancel: Optional[Dict[str, Any]] = None
    requests: Optional[ServerTasksRequestsCapability] = None


class ServerCapabilities(MCPModel):
    """Capabilities a server may support; unknown capabilities are kept."""

    experimental: Optional[Dict[str, Dict[str, Any]]] = None
    logging: Optional[Dict[str, Any]] = None
    completions: Optional[Dict[str, Any]] = None
    prompts: Optional[PromptsCapability] = None
    resources: Optional[ResourcesCapability] = None
    tools: Optional[ToolsCapability] = None
    tasks: Optional[ServerTasksCapability] = None
    # 2026-07-28: optional extensions the server supports, keyed by extension id.
    extensions: Optional[Dict[str, Dict[str, Any]]] = None


class Implementation(BaseMetadata, Icons):
    """Name and version of an MCP client or server implementation."""

    version: str
    description: Optional[str] = None
    website_url: Optional[str] = None


class InitializeRequestParams(RequestParams):
    """Params of an ``initialize`` request."""

    protocol_version: str
    capabilities: ClientCapabilities
    client_info: Implementation


class InitializeRequest(_RequestEnvelope):
    """First request a client sends, to negotiate version and capabilities."""

    method: Literal["initialize"] = "initialize"
    params: InitializeRequestParams


class InitializeResult(Result):
    """Server's answer to ``initialize``."""

    protocol_version: str
    capabilities: ServerCapabilities
    server_info: Implementation
    instructions: Optional[str] = None


class InitializedNotification(_JSONRPCEnvelope):
    """Sent by the client once initialization has finished."""

    method: Literal["notifications/initialized"] = "notifications/initialized"
    params: Optional[NotificationParams] = None


class PingRequest(_RequestEnvelope):
    """Liveness check, sent by either side."""

    method: Literal["ping"] = "ping"
    params: Optional[RequestParams] = None


# ---------------------------------------------------------------------------
# Cancellation and progress
# ---------------------------------------------------------------------------


class CancelledNotificationParams(NotificationParams):
    """Params of ``notifications/cancelled``."""

    request_id: Optional[RequestId] = None
    reason: Optional[str] = None


class CancelledNotification(_JSONRPCEnvelope):
    """Either side cancels a request it issued earlier."""

    method: Literal["notifications/cancelled"] = "notifications/cancelled"
    params: CancelledNotificationParams


class ProgressNotificationParams(NotificationParams):
    """Params of ``notifications/progress``."""

    progress_token: ProgressToken
    # ``Union[int, float]`` keeps integral counts as ints on a round trip.
    progress: Union[int, float]
    total: Optional[Union[int, float]] = None
    message: Optional[str] = None


class ProgressNotification(_JSONRPCEnvelope):
    """Out-of-band progress update for a long-running request."""

    method: Literal["notifications/progress"] = "notifications/progress"
    params: ProgressNotificationParams


# ---------------------------------------------------------------------------
# Resources
# ---------------------------------------------------------------------------


class ResourceTemplate(BaseMetadata, Icons):
    """A URI template (RFC 6570) describing a family of resources."""

    uri_template: str
    description: Optional[str] = None
    mime_type: Optional[str] = None
    annotations: Optional[Annotations] = None
    meta: MetaField = None


class ListResourcesRequest(PaginatedRequest):
    """List the server's resources."""

    method: Literal["resources/list"] = "resources/list"


class ListResourcesResult(PaginatedResult, CacheableResult):
    """One page of resources."""

    resources: List[Resource]


class ListResourceTemplatesRequest(PaginatedRequest):
    """List the server's resource templates."""

    method: Literal["resources/templates/list"] = "resources/templates/list"


class ListResourceTemplatesResult(PaginatedResult, CacheableResult):
    """One page of resource templates."""

    resource_templates: List[ResourceTemplate]


class ResourceRequestParams(RequestParams):
    """Common params of requests about one resource."""

    uri: str


# ReadResourceRequestParams and ReadResourceRequest follow InputResponses, below.


class ReadResourceResult(CacheableResult):
    """Contents of a resource (text, blob, or unknown kinds)."""

    contents: List[AnyResourceContents]

    @property
    def text(self) -> str:
        """All text contents joined with newlines."""
        return "\n".join(c.text for c in self.contents if isinstance(c, TextResourceContents))


class SubscribeRequestParams(ResourceRequestParams):
    """Params of ``resources/subscribe``."""


class SubscribeRequest(_RequestEnvelope):
    """Ask for ``notifications/resources/updated`` about a resource."""

    method: Literal["resources/subscribe"] = "resources/subscribe"
    params: SubscribeRequestParams


class UnsubscribeRequestParams(ResourceRequestParams):
    """Params of ``resources/unsubscribe``."""


class UnsubscribeRequest(_RequestEnvelope):
    """Stop ``notifications/resources/updated`` about a resource."""

    method: Literal["resources/unsubscribe"] = "resources/unsubscribe"
    params: UnsubscribeRequestParams


class ResourceListChangedNotification(_JSONRPCEnvelope):
    """The server's list of resources changed."""

    method: Literal["notifications/resources/list_changed"] = "notifications/resources/list_changed"
    params: Optional[NotificationParams] = None


class ResourceUpdatedNotificationParams(NotificationParams):
    """Params of ``notifications/resources/updated``."""

    uri: str


class ResourceUpdatedNotification(_JSONRPCEnvelope):
    """A subscribed resource changed and may need to be read again."""

    method: Literal["notifications/resources/updated"] = "notifications/resources/updated"
    params: ResourceUpdatedNotificationParams


# ---------------------------------------------------------------------------
# Prompts
# ---------------------------------------------------------------------------


class PromptArgument(BaseMetadata):
    """An argument a prompt template accepts."""

    description: Optional[str] = None
    required: Optional[bool] = None


class Prompt(BaseMetadata, Icons):
    """A prompt or prompt template offered by the server."""

    description: Optional[str] = None
    arguments: Optional[List[PromptArgument]] = None
    meta: MetaField = None


class ListPromptsRequest(PaginatedRequest):
    """List the server's prompts."""

    method: Literal["prompts/list"] = "prompts/list"


class ListPromptsResult(PaginatedResult, CacheableResult):
    """One page of prompts."""

    prompts: List[Prompt]


# GetPromptRequestParams and GetPromptRequest follow InputResponses, below.


class PromptMessage(MCPModel):
    """One message of a prompt."""

    role: Role
    content: ContentBlock


class GetPromptResult(Result):
    """A rendered prompt."""

    description: Optional[str] = None
    messages: List[PromptMessage]


class PromptListChangedNotification(_JSONRPCEnvelope):
    """The server's list of prompts changed."""

    method: Literal["notifications/prompts/list_changed"] = "notifications/prompts/list_changed"
    params: Optional[NotificationParams] = None


# ---------------------------------------------------------------------------
# Tools (the tool models and the tool call result are in _types_core)
# ---------------------------------------------------------------------------


class ListToolsRequest(PaginatedRequest):
    """List the server's tools."""

    method: Literal["tools/list"] = "tools/list"


class ToolListChangedNotification(_JSONRPCEnvelope):
    """The server's list of tools changed."""

    method: Literal["notifications/tools/list_changed"] = "notifications/tools/list_changed"
    params: Optional[NotificationParams] = None


# ---------------------------------------------------------------------------
# Completion
# ---------------------------------------------------------------------------


class PromptReference(BaseMetadata):
    """Identifies a prompt to complete arguments for."""

    type: Literal["ref/prompt"] = "ref/prompt"


class ResourceTemplateReference(MCPModel):
    """Identifies a resource template to complete arguments for."""

    type: Literal["ref/resource"] = "ref/resource"
    uri: str


class CompletionArgument(MCPModel):
    """The argument being completed and its current value."""

    name: str
    value: str


class CompletionContext(MCPModel):
    """Extra context for completion: already-resolved argument values."""

    arguments: Optional[Dict[str, str]] = None


class CompleteRequestParams(RequestParams):
    """Params of ``completion/complete``."""

    ref: Annotated[Union[PromptReference, ResourceTemplateReference], Field(discriminator="type")]
    argument: CompletionArgument
    context: Optional[CompletionContext] = None


class CompleteRequest(_RequestEnvelope):
    """Ask the server for completion options."""

    method: Literal["completion/complete"] = "completion/complete"
    params: CompleteRequestParams


class Completion(MCPModel):
    """Completion values (at most 100) and paging hints."""

    values: List[str]
    total: Optional[int] = None
    has_more: Optional[bool] = None


class CompleteResult(Result):
    """Server's answer to ``completion/complete``."""

    completion: Completion


# ---------------------------------------------------------------------------
# Logging
# ---------------------------------------------------------------------------


class SetLevelRequestParams(RequestParams):
    """Params of ``logging/setLevel``."""

    level: LoggingLevel


class SetLevelRequest(_RequestEnvelope):
    """Set the minimum level of log messages the server sends."""

    method: Literal["logging/setLevel"] = "logging/setLevel"
    params: SetLevelRequestParams


class LoggingMessageNotificationParams(NotificationParams):
    """Params of ``notifications/message``; ``data`` is any JSON value."""

    level: LoggingLevel
    logger: Optional[str] = None
    data: Any

    @model_serializer(mode="wrap")
    def _keep_null_data(self, handler: SerializerFunctionWrapHandler) -> Dict[str, Any]:
        """Write ``"data": null`` even when ``None`` values are excluded (it is required)."""
        out: Dict[str, Any] = handler(self)
        if self.data is None:
            out["data"] = None
        return out


class LoggingMessageNotification(_JSONRPCEnvelope):
    """A log message from the server."""

    method: Literal["notifications/message"] = "notifications/message"
    params: LoggingMessageNotificationParams


# ---------------------------------------------------------------------------
# Roots
# ---------------------------------------------------------------------------


class Root(MCPModel):
    """A root directory or file (``file://`` URI) the server may operate on."""

    uri: str
    name: Optional[str] = None
    meta: MetaField = None


class ListRootsRequest(_RequestEnvelope):
    """Server asks the client for its roots."""

    method: Literal["roots/list"] = "roots/list"
    params: Optional[RequestParams] = None


class ListRootsResult(Result):
    """The client's roots."""

    roots: List[Root]


class RootsListChangedNotification(_JSONRPCEnvelope):
    """The client's list of roots changed."""

    method: Literal["notifications/roots/list_changed"] = "notifications/roots/list_changed"
    params: Optional[NotificationParams] = None


# ---------------------------------------------------------------------------
# Sampling
# ---------------------------------------------------------------------------


class ModelHint(MCPModel):
    """A hint (e.g. a model name substring) for model selection."""

    name: Optional[str] = None


class ModelPreferences(MCPModel):
    """Server's priorities (0..1) and hints for choosing a model."""

    hints: Optional[List[ModelHint]] = None
    cost_priority: Optional[float] = None
    speed_priority: Optional[float] = None
    intelligence_priority: Optional[float] = None


class ToolChoice(MCPModel):
    """How the model may use tools while sampling."""

    mode: Optional[Literal["auto", "required", "none"]] = None


class SamplingMessage(MCPModel):
    """A message sent to or received from an LLM; content is one block or a list."""

    role: Role
    content: Union[SamplingMessageContentBlock, List[SamplingMessageContentBlock]]
    meta: MetaField = None


class CreateMessageRequestParams(TaskAugmentedRequestParams):
    """Params of ``sampling/createMessage``."""

    messages: List[SamplingMessage]
    model_preferences: Optional[ModelPreferences] = None
    system_prompt: Optional[str] = None
    include_context: Optional[Literal["none", "thisServer", "allServers"]] = None
    temperature: Optional[float] = None
    max_tokens: int
    stop_sequences: Optional[List[str]] = None
    metadata: Optional[Dict[str, Any]] = None
    tools: Optional[List[Tool]] = None
    tool_choice: Optional[ToolChoice] = None


class CreateMessageRequest(_RequestEnvelope):
    """Server asks the client to sample an LLM."""

    method: Literal["sampling/createMessage"] = "sampling/createMessage"
    params: CreateMessageRequestParams


class CreateMessageResult(Result, SamplingMessage):
    """The client's sampled message, with the model name and stop reason."""

    model: str
    stop_reason: Optional[str] = None


# ---------------------------------------------------------------------------
# Elicitation
# ---------------------------------------------------------------------------


class _FormField(MCPModel):
    """What every form field schema has; each kind narrows ``type`` and adds its keywords."""

    type: str
    title: Optional[str] = None
    description: Optional[str] = None


class StringSchema(_FormField):
    """A string form field."""

    type: Literal["string"] = "string"
    min_length: Optional[int] = None
    max_length: Optional[int] = None
    # Known values: "email", "uri", "date", "date-time"; other strings are tolerated.
    format: Optional[Union[Literal["email", "uri", "date", "date-time"], str]] = None
    default: Optional[str] = None


class NumberSchema(_FormField):
    """A number or integer form field."""

    type: Literal["number", "integer"] = "number"
    minimum: Optional[Union[int, float]] = None
    maximum: Optional[Union[int, float]] = None
    default: Optional[Union[int, float]] = None


class BooleanSchema(_FormField):
    """A boolean form field."""

    type: Literal["boolean"] = "boolean"
    default: Optional[bool] = None


class TitledEnumOption(MCPModel):
    """One enum option: its value (``const``) and display title."""

    const: str
    title: str


class UntitledSingleSelectEnumSchema(_FormField):
    """A single-choice field whose options are plain values."""

    type: Literal["string"] = "string"
    enum: List[str]
    default: Optional[str] = None


class TitledSingleSelectEnumSchema(_FormField):
    """A single-choice field whose options have display titles."""

    type: Literal["string"] = "string"
    one_of: List[TitledEnumOption]
    default: Optional[str] = None


class LegacyTitledEnumSchema(_FormField):
    """Deprecated single-choice field with parallel ``enumNames``."""

    type: Literal["string"] = "string"
    enum: List[str]
    enum_names: Optional[List[str]] = None
    default: Optional[str] = None


class UntitledEnumItems(MCPModel):
    """Item schema of an untitled multi-select field."""

    type: Literal["string"] = "string"
    enum: List[str]


class TitledEnumItems(MCPModel):
    """Item schema of a titled multi-select field."""

    any_of: List[TitledEnumOption]


class _MultiSelectField(_FormField):
    """A multi-choice field; each kind narrows ``items`` to its option schema."""

    type: Literal["array"] = "array"
    min_items: Optional[int] = None
    max_items: Optional[int] = None
    items: Union[UntitledEnumItems, TitledEnumItems]
    default: Optional[List[str]] = None


class UntitledMultiSelectEnumSchema(_MultiSelectField):
    """A multi-choice field whose options are plain values."""

    items: UntitledEnumItems


class TitledMultiSelectEnumSchema(_MultiSelectField):
    """A multi-choice field whose options have display titles."""

    items: TitledEnumItems


def _primitive_schema_tag(value: Any) -> Optional[str]:
    """Tell the primitive form-field schema kinds apart by their shape."""
    if not isinstance(value, dict):
        return _class_tag(value, _PRIMITIVE_SCHEMA_CLASSES)
    kind = value.get("type")
    if kind == "string":
        if "oneOf" in value:
            return "TitledSingleSelectEnumSchema"
        if "enum" in value:
            if "enumNames" in value:
                return "LegacyTitledEnumSchema"
            return "UntitledSingleSelectEnumSchema"
        return "StringSchema"
    if kind in ("number", "integer"):
        return "NumberSchema"
    if kind == "boolean":
        return "BooleanSchema"
    if kind == "array":
        items = value.get("items")
        if isinstance(items, dict) and "anyOf" in items:
            return "TitledMultiSelectEnumSchema"
        return "UntitledMultiSelectEnumSchema"
    return None


_PRIMITIVE_SCHEMA_CLASSES = (
    StringSchema,
    NumberSchema,
    BooleanSchema,
    UntitledSingleSelectEnumSchema,
    TitledSingleSelectEnumSchema,
    UntitledMultiSelectEnumSchema,
    TitledMultiSelectEnumSchema,
    LegacyTitledEnumSchema,
)

PrimitiveSchemaDefinition = Annotated[
    Union[
        Annotated[StringSchema, Tag("StringSchema")],
        Annotated[NumberSchema, Tag("NumberSchema")],
        Annotated[BooleanSchema, Tag("BooleanSchema")],
        Annotated[UntitledSingleSelectEnumSchema, Tag("UntitledSingleSelectEnumSchema")],
        Annotated[TitledSingleSelectEnumSchema, Tag("TitledSingleSelectEnumSchema")],
        Annotated[UntitledMultiSelectEnumSchema, Tag("UntitledMultiSelectEnumSchema")],
        Annotated[TitledMultiSelectEnumSchema, Tag("TitledMultiSelectEnumSchema")],
        Annotated[LegacyTitledEnumSchema, Tag("LegacyTitledEnumSchema")],
    ],
    Discriminator(_primitive_schema_tag),
]

SingleSelectEnumSchema = Union[UntitledSingleSelectEnumSchema, TitledSingleSelectEnumSchema]
MultiSelectEnumSchema = Union[UntitledMultiSelectEnumSchema, TitledMultiSelectEnumSchema]
EnumSchema = Union[
    UntitledSingleSelectEnumSchema,
    TitledSingleSelectEnumSchema,
    UntitledMultiSelectEnumSchema,
    TitledMultiSelectEnumSchema,
    LegacyTitledEnumSchema,
]


class ElicitRequestedSchema(MCPModel):
    """The flat object schema of an elicitation form."""

    schema_: Optional[str] = Field(
        default=None, validation_alias="$schema", serialization_alias="$schema"
    )
    type: Literal["object"] = "object"
    properties: Dict[str, PrimitiveSchemaDefinition]
    required: Optional[List[str]] = None


class ElicitRequestFormParams(TaskAugmentedRequestParams):
    """Params of a form-mode ``elicitation/create`` request."""

    mode: Optional[Literal["form"]] = None
    message: str
    requested_schema: ElicitRequestedSchema


class ElicitRequestURLParams(TaskAugmentedRequestParams):
    """Params of a URL-mode ``elicitation/create`` request.

    ``url`` reaches a handler only when it is one a user may be asked to open: an absolute
    ``https`` URL (``http`` only to this machine) with a plain host and no user info; the
    client refuses any other (-32602, declined in 2026-07-28). :attr:`host` is where it
    leads, to show the user before they consent.
    """

    mode: Literal["url"] = "url"
    message: str
    elicitation_id: str
    url: str

    @property
    def host(self) -> Optional[str]:
        """The host :attr:`url` leads to (lowercase; an IPv6 address without brackets;
        a domain in its ``xn--`` form), or None if it names none."""
        return _link_host(self.url)


def _link_host(url: str) -> Optional[str]:
    from .._protocol.links import link_host  # urllib.parse, only when a host is asked for

    return link_host(url)


def _elicit_mode(value: Any, url_params: Type[MCPModel]) -> Optional[str]:
    """URL mode when ``mode == "url"``; otherwise form mode (its ``mode`` is optional).

    ``url_params`` is the era's URL-mode model, for values that are already models.
    """
    if isinstance(value, dict):
        return "url" if value.get("mode") == "url" else "form"
    if isinstance(value, url_params):
        return "url"
    if isinstance(value, ElicitRequestFormParams):
        return "form"
    return None


def _elicit_mode_tag(value: Any) -> Optional[str]:
    """Discriminator of :data:`ElicitRequestParams` (its name shows in validation errors)."""
    return _elicit_mode(value, ElicitRequestURLParams)


ElicitRequestParams = Annotated[
    Union[
        Annotated[ElicitRequestURLParams, Tag("url")],
        Annotated[ElicitRequestFormParams, Tag("form")],
    ],
    Discriminator(_elicit_mode_tag),
]


class ElicitRequest(_RequestEnvelope):
    """Server asks the client to elicit information from the user."""

    method: Literal["elicitation/create"] = "elicitation/create"
    params: ElicitRequestParams


class ElicitResult(Result):
    """The user's response to an elicitation: the action and, for forms, the values."""

    action: Literal["accept", "decline", "cancel"]
    # The schema allows string, integer, boolean and string-array values; floats are also
    # accepted because NumberSchema fields may be of type "number".
    content: Optional[Dict[str, Union[str, int, float, bool, List[str]]]] = None


class ElicitationCompleteNotificationParams(MCPModel):
    """Params of ``notifications/elicitation/complete``."""

    elicitation_id: str


class ElicitationCompleteNotification(_JSONRPCEnvelope):
    """An out-of-band (URL-mode) elicitation has completed."""

    method: Literal["notifications/elicitation/complete"] = "notifications/elicitation/complete"
    params: ElicitationCompleteNotificationParams


class URLElicitationRequiredErrorData(MCPModel):
    """``data`` of a URL-elicitation-required error: the elicitations to perform."""

    elicitations: List[ElicitRequestURLParams]


class URLElicitationRequiredErrorObject(Error):
    """Error object with code -32042 listing the URL elicitations required."""

    code: Literal[-32042] = -32042
    data: URLElicitationRequiredErrorData


class URLElicitationRequiredError(JSONRPCErrorResponse):
    """Error response telling the client to complete URL elicitations first."""

    error: URLElicitationRequiredErrorObject


# ---------------------------------------------------------------------------
# 2026-07-28: reserved _meta objects
# ---------------------------------------------------------------------------


class RequestMetaObject(MCPModel):
    """The reserved keys of a 2026-07-28 request's ``_meta``; other keys are kept as extras.

    Build a request's ``_meta`` with ``RequestMetaObject(...).to_wire()`` and read one with
    ``RequestMetaObject.model_validate(params.meta)``.
    """

    protocol_version: str = Field(
        validation_alias=META_PROTOCOL_VERSION, serialization_alias=META_PROTOCOL_VERSION
    )
    client_capabilities: ClientCapabilities = Field(
        validation_alias=META_CLIENT_CAPABILITIES, serialization_alias=META_CLIENT_CAPABILITIES
    )
    client_info: Optional[Implementation] = Field(
        default=None, validation_alias=META_CLIENT_INFO, serialization_alias=META_CLIENT_INFO
    )
    # Without a level the server sends no ``notifications/message`` for the request.
    log_level: Optional[LoggingLevel] = Field(
        default=None, validation_alias=META_LOG_LEVEL, serialization_alias=META_LOG_LEVEL
    )
    progress_token: Optional[ProgressToken] = None


class ResultMetaObject(MCPModel):
    """The reserved keys of a 2026-07-28 result's ``_meta``; other keys are kept as extras."""

    server_info: Optional[Implementation] = Field(
        default=None, validation_alias=META_SERVER_INFO, serialization_alias=META_SERVER_INFO
    )


class NotificationMetaObject(MCPModel):
    """The reserved keys of a 2026-07-28 notification's ``_meta``."""

    # Set on notifications delivered on a ``subscriptions/listen`` stream: that request's id.
    subscription_id: Optional[RequestId] = Field(
        default=None,
        validation_alias=META_SUBSCRIPTION_ID,
        serialization_alias=META_SUBSCRIPTION_ID,
    )


class SubscriptionsListenResultMetaObject(ResultMetaObject):
    """``_meta`` of a ``subscriptions/listen`` result: the subscription it closes."""

    subscription_id: RequestId = Field(
        validation_alias=META_SUBSCRIPTION_ID, serialization_alias=META_SUBSCRIPTION_ID
    )


# ---------------------------------------------------------------------------
# 2026-07-28: errors
# ---------------------------------------------------------------------------


class ParseError(Error):
    """Error object: the receiver could not parse the JSON text."""

    code: Literal[-32700] = -32700


class InvalidRequestError(Error):
    """Error object: the message is not a valid JSON-RPC request."""

    code: Literal[-32600] = -32600


class MethodNotFoundError(Error):
    """Error object: unknown method, or one behind a server capability not advertised."""

    code: Literal[-32601] = -32601


class InvalidParamsError(Error):
    """Error object: invalid params; from 2026-07-28 also "resource not found"."""

    code: Literal[-32602] = -32602


class InternalError(Error):
    """Error object: the receiver failed unexpectedly."""

    code: Literal[-32603] = -32603


class HeaderMismatchErrorObject(Error):
    """Error object with code -32020: HTTP headers disagree with the body, or are missing."""

    code: Literal[-32020] = -32020


class HeaderMismatchError(JSONRPCErrorResponse):
    """Error response: the request's HTTP headers do not match its body (HTTP 400)."""

    error: HeaderMismatchErrorObject


class MissingRequiredClientCapabilityErrorData(MCPModel):
    """``data`` of a -32021 error: the client capabilities the request needs."""

    required_capabilities: ClientCapabilities


class MissingRequiredClientCapabilityErrorObject(Error):
    """Error object with code -32021 listing the client capabilities required."""

    code: Literal[-32021] = -32021
    data: MissingRequiredClientCapabilityErrorData


class MissingRequiredClientCapabilityError(JSONRPCErrorResponse):
    """Error response: the request needs a capability the client did not declare."""

    error: MissingRequiredClientCapabilityErrorObject


class UnsupportedProtocolVersionErrorData(MCPModel):
    """``data`` of a -32022 error: the versions the server supports and the one requested."""

    supported: List[str]
    requested: str


class UnsupportedProtocolVersionErrorObject(Error):
    """Error object with code -32022: retry with one of ``data.supported``."""

    code: Literal[-32022] = -32022
    data: UnsupportedProtocolVersionErrorData


class UnsupportedProtocolVersionError(JSONRPCErrorResponse):
    """Error response: the server does not support the request's protocol version."""

    error: UnsupportedProtocolVersionErrorObject


# ---------------------------------------------------------------------------
# 2026-07-28: structuredContent may be any JSON value
# ---------------------------------------------------------------------------


class ToolResultContent2026(ToolResultContent):
    """2026-07-28 tool result (sampling only): ``structured_content`` is any JSON value."""

    structured_content: Optional[JSONValue] = None


SamplingMessageContentBlock2026 = _SamplingMessageContentBlocks[ToolResultContent2026]
# The content of a 2026-07-28 sampling message or sampled result: one block or a list.
_SamplingContent2026 = Union[SamplingMessageContentBlock2026, List[SamplingMessageContentBlock2026]]


# The 2026 subclasses below narrow a field to the 2026 blocks (ToolResultContent2026 is a
# ToolResultContent); mypy rejects the narrowing only because ``list`` is invariant.


class SamplingMessage2026(SamplingMessage):
    """2026-07-28 sampling message; its tool results may carry any structured content."""

    content: _SamplingContent2026  # type: ignore[assignment]


class CreateMessageRequestParams2026(CreateMessageRequestParams):
    """2026-07-28 params of ``sampling/createMessage`` (no ``_meta`` or ``task`` there)."""

    messages: List[SamplingMessage2026]  # type: ignore[assignment]


class CreateMessageResult2026(CreateMessageResult):
    """2026-07-28 sampled message, the client's answer to a ``sampling/createMessage``."""

    content: _SamplingContent2026  # type: ignore[assignment]


# ---------------------------------------------------------------------------
# 2026-07-28: multi round-trip requests (MRTR)
# ---------------------------------------------------------------------------


class ElicitRequestURLParams2026(MCPModel):
    """2026-07-28 params of a URL-mode elicitation (no ``elicitationId``); ``url`` is
    checked as :class:`ElicitRequestURLParams` says."""

    mode: Literal["url"] = "url"
    message: str
    url: str

    @property
    def host(self) -> Optional[str]:
        """The host :attr:`url` leads to (as :attr:`ElicitRequestURLParams.host`)."""
        return _link_host(self.url)


def _elicit_mode_tag_2026(value: Any) -> Optional[str]:
    """Discriminator of :data:`ElicitRequestParams2026`."""
    return _elicit_mode(value, ElicitRequestURLParams2026)


ElicitRequestParams2026 = Annotated[
    Union[
        Annotated[ElicitRequestFormParams, Tag("form")],
        Annotated[ElicitRequestURLParams2026, Tag("url")],
    ],
    Discriminator(_elicit_mode_tag_2026),
]


class CreateMessageRequest2026(MCPModel):
    """An input request (2026-07-28): the server asks the client to sample an LLM."""

    method: Literal["sampling/createMessage"] = "sampling/createMessage"
    params: CreateMessageRequestParams2026


class ListRootsRequest2026(MCPModel):
    """An input request (2026-07-28): the server asks for the client's roots."""

    method: Literal["roots/list"] = "roots/list"
    params: Optional[RequestParams] = None


class ElicitRequest2026(MCPModel):
    """An input request (2026-07-28): the server asks the client to elicit user input."""

    method: Literal["elicitation/create"] = "elicitation/create"
    params: ElicitRequestParams2026


# A request a server embeds in an ``input_required`` result, chosen by ``method``.  An
# unknown method (an extension's, say) parses as a generic Request instead of failing.
InputRequest = Annotated[
    Union[
        Annotated[CreateMessageRequest2026, Tag("sampling/createMessage")],
        Annotated[ListRootsRequest2026, Tag("roots/list")],
        Annotated[ElicitRequest2026, Tag("elicitation/create")],
        Annotated[Request, Tag("unknown")],
    ],
    Discriminator(
        _type_tag(("sampling/createMessage", "roots/list", "elicitation/create"), "method")
    ),
]
InputRequests = Dict[str, InputRequest]


def _input_response_tag(value: Any) -> Optional[str]:
    """Tell elicitation, roots and sampling results apart by their required fields."""
    if isinstance(value, dict):
        if "action" in value:
            return "elicit"
        if "roots" in value:
            return "roots"
        if "model" in value or "role" in value:
            return "sampling"
        return "other"
    for cls, tag in (
        (ElicitResult, "elicit"),
        (ListRootsResult, "roots"),
        (CreateMessageResult2026, "sampling"),
        (Result, "other"),
    ):
        if isinstance(value, cls):
            return tag
    return None


# The client's answer to one input request; unknown shapes parse as a generic Result.
InputResponse = Annotated[
    Union[
        Annotated[CreateMessageResult2026, Tag("sampling")],
        Annotated[ListRootsResult, Tag("roots")],
        Annotated[ElicitResult, Tag("elicit")],
        Annotated[Result, Tag("other")],
    ],
    Discriminator(_input_response_tag),
]
InputResponses = Dict[str, InputResponse]


# The requests a client retries with input responses (tools/call, prompts/get,
# resources/read; both eras send them).  Their params name InputResponses, so they are
# defined after it: every field's type is then known when its class is created, and no
# model needs a later rebuild (models are built on first use, see MCPModel).


class InputResponseRequestParams(RequestParams):
    """Params of a request retried after an ``input_required`` result (2026-07-28).

    ``input_responses`` answers the result's ``inputRequests`` key by key; ``request_state``
    echoes its ``requestState`` unchanged.
    """

    input_responses: Optional[InputResponses] = None
    request_state: Optional[str] = None


class ReadResourceRequestParams(ResourceRequestParams, InputResponseRequestParams):
    """Params of ``resources/read``."""


class ReadResourceRequest(_RequestEnvelope):
    """Read a resource by URI."""

    method: Literal["resources/read"] = "resources/read"
    params: ReadResourceRequestParams


class GetPromptRequestParams(InputResponseRequestParams):
    """Params of ``prompts/get``."""

    name: str
    arguments: Optional[Dict[str, str]] = None


class GetPromptRequest(_RequestEnvelope):
    """Get a prompt, templated with arguments."""

    method: Literal["prompts/get"] = "prompts/get"
    params: GetPromptRequestParams


class CallToolRequestParams(TaskAugmentedRequestParams, InputResponseRequestParams):
    """Params of ``tools/call``."""

    name: str
    arguments: Optional[Dict[str, Any]] = None


class CallToolRequest(_RequestEnvelope):
    """Invoke a tool."""

    method: Literal["tools/call"] = "tools/call"
    params: CallToolRequestParams


class InputRequiredResult(Result):
    """The server needs input first: fulfil ``input_requests``, then retry the request.

    Retry with a new request id, ``inputResponses`` keyed like ``input_requests``, and
    ``requestState`` echoed unchanged.  The spec requires at least one of the two fields.
    """

    result_type: Literal["input_required"] = "input_required"
    input_requests: Optional[InputRequests] = None
    request_state: Optional[str] = None


def _result_type_tag(value: Any) -> Optional[str]:
    """A result's ``resultType``, ``"complete"`` when absent (results from older servers)."""
    if isinstance(value, dict):
        kind = value.get("resultType", "complete")
        return kind if isinstance(kind, str) else None
    if isinstance(value, Result):
        return value.result_kind
    return None


_CompleteResult = TypeVar("_CompleteResult", bound=Result)

# Results of the requests that may answer ``input_required``, dispatched on ``resultType``;
# an unknown ``resultType`` is a validation error (the spec calls it invalid).
_OrInputRequired = Annotated[
    Union[
        Annotated[_CompleteResult, Tag("complete")],
        Annotated[InputRequiredResult, Tag("input_required")],
    ],
    Discriminator(_result_type_tag),
]
CallToolResultOrInputRequired = _OrInputRequired[CallToolResult2026]
GetPromptResultOrInputRequired = _OrInputRequired[GetPromptResult]
ReadResourceResultOrInputRequired = _OrInputRequired[ReadResourceResult]


# ---------------------------------------------------------------------------
# 2026-07-28: discovery
# ---------------------------------------------------------------------------


class DiscoverRequest(_RequestEnvelope):
    """``server/discover``: the server's versions, capabilities and identity."""

    method: Literal["server/discover"] = "server/discover"
    params: RequestParams


class DiscoverResult(CacheableResult):
    """Answer to ``server/discover``; the server's identity is in ``_meta`` (see server_info)."""

    supported_versions: List[str]
    capabilities: ServerCapabilities
    instructions: Optional[str] = None
    ttl_ms: int
    cache_scope: CacheScope

    @property
    def server_info(self) -> Optional[Implementation]:
        """``_meta["io.modelcontextprotocol/serverInfo"]``; ``None`` if absent or malformed."""
        value = (self.meta or {}).get(META_SERVER_INFO)
        if not isinstance(value, dict):
            return None
        try:
            return Implementation.model_validate(value)
        except ValidationError:
            return None


# ---------------------------------------------------------------------------
# 2026-07-28: subscriptions
# ---------------------------------------------------------------------------


class SubscriptionFilter(MCPModel):
    """The notification types a ``subscriptions/listen`` stream opts in to (all opt-in)."""

    tools_list_changed: Optional[bool] = None
    prompts_list_changed: Optional[bool] = None
    resources_list_changed: Optional[bool] = None
    # ``notifications/resources/updated`` for these URIs (replaces ``resources/subscribe``).
    resource_subscriptions: Optional[List[str]] = None


class SubscriptionsListenRequestParams(RequestParams):
    """Params of ``subscriptions/listen``."""

    notifications: SubscriptionFilter


class SubscriptionsListenRequest(_RequestEnvelope):
    """Open a long-lived stream of the opted-in change notifications."""

    method: Literal["subscriptions/listen"] = "subscriptions/listen"
    params: SubscriptionsListenRequestParams


class SubscriptionsListenResult(Result):
    """Sent when the server ends a subscription gracefully; ``_meta`` names the stream."""

    meta: Dict[str, Any] = Field(validation_alias="_meta", serialization_alias="_meta")

    @property
    def subscription_id(self) -> Optional[RequestId]:
        """The id of the ``subscriptions/listen`` request whose stream this closes."""
        return _subscription_id(self.meta)


class SubscriptionsAcknowledgedNotificationParams(NotificationParams):
    """Params of ``notifications/subscriptions/acknowledged``: what the server will send."""

    notifications: SubscriptionFilter


class SubscriptionsAcknowledgedNotification(_JSONRPCEnvelope):
    """First message of a subscription: the subset of the filter the server honours."""

    method: Literal["notifications/subscriptions/acknowledged"] = (
        "notifications/subscriptions/acknowledged"
    )
    params: SubscriptionsAcknowledgedNotificationParams


# ---------------------------------------------------------------------------
# 2026-07-28: typed result responses
# ---------------------------------------------------------------------------


class CallToolResultResponse(_RequestEnvelope):
    """Response to ``tools/call``: a result or an ``input_required`` result."""

    result: CallToolResultOrInputRequired


class GetPromptResultResponse(_RequestEnvelope):
    """Response to ``prompts/get``: a result or an ``input_required`` result."""

    result: GetPromptResultOrInputRequired


class ReadResourceResultResponse(_RequestEnvelope):
    """Response to ``resources/read``: a result or an ``input_required`` result."""

    result: ReadResourceResultOrInputRequired


class CompleteResultResponse(_RequestEnvelope):
    """Response to ``completion/complete``."""

    result: CompleteResult


class DiscoverResultResponse(_RequestEnvelope):
    """Response to ``server/discover``."""

    result: DiscoverResult


class ListPromptsResultResponse(_RequestEnvelope):
    """Response to ``prompts/list``."""

    result: ListPromptsResult


class ListResourcesResultResponse(_RequestEnvelope):
    """Response to ``resources/list``."""

    result: ListResourcesResult


class ListResourceTemplatesResultResponse(_RequestEnvelope):
    """Response to ``resources/templates/list``."""

    result: ListResourceTemplatesResult


class ListToolsResultResponse(_RequestEnvelope):
    """Response to ``tools/list``."""

    result: ListToolsResult


class SubscriptionsListenResultResponse(_RequestEnvelope):
    """Response to ``subscriptions/listen``: the subscription ended gracefully."""

    result: SubscriptionsListenResult


# ---------------------------------------------------------------------------
# Per-direction unions
# ---------------------------------------------------------------------------

ClientRequest = Annotated[
    Union[
        InitializeRequest,
        PingRequest,
        ListResourcesRequest,
        ListResourceTemplatesRequest,
        ReadResourceRequest,
        SubscribeRequest,
        UnsubscribeRequest,
        ListPromptsRequest,
        GetPromptRequest,
        ListToolsRequest,
        CallToolRequest,
        GetTaskRequest,
        GetTaskPayloadRequest,
        CancelTaskRequest,
        ListTasksRequest,
        SetLevelRequest,
        CompleteRequest,
    ],
    Field(discriminator="method"),
]

ServerRequest = Annotated[
    Union[
        PingRequest,
        GetTaskRequest,
        GetTaskPayloadRequest,
        CancelTaskRequest,
        ListTasksRequest,
        CreateMessageRequest,
        ListRootsRequest,
        ElicitRequest,
    ],
    Field(discriminator="method"),
]

ClientNotification = Annotated[
    Union[
        CancelledNotification,
        InitializedNotification,
        ProgressNotification,
        TaskStatusNotification,
        RootsListChangedNotification,
    ],
    Field(discriminator="method"),
]

ServerNotification = Annotated[
    Union[
        CancelledNotification,
        ProgressNotification,
        ResourceListChangedNotification,
        ResourceUpdatedNotification,
        PromptListChangedNotification,
        ToolListChangedNotification,
        TaskStatusNotification,
        LoggingMessageNotification,
        ElicitationCompleteNotification,
    ],
    Field(discriminator="method"),
]

# Results carry no tag: validate against the result type of the request you sent.  These
# unions exist for typing; the catch-all members (every field optional) come last so that
# parsing with them picks a specific result type whenever one fits.
ClientResult = Union[
    GetTaskResult,
    CancelTaskResult,
    ListTasksResult,
    CreateMessageResult,
    ListRootsResult,
    ElicitResult,
    GetTaskPayloadResult,
    Result,
]

ServerResult = Union[
    InitializeResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ReadResourceResult,
    ListPromptsResult,
    GetPromptResult,
    ListToolsResult,
    CallToolResult,
    GetTaskResult,
    CancelTaskResult,
    ListTasksResult,
    CompleteResult,
    GetTaskPayloadResult,
    Result,
]


# 2026-07-28 per-direction unions.  There are no server requests any more (they travel
# inside InputRequiredResult), and the client's only notification is cancellation.
ClientRequest2026 = Annotated[
    Union[
        DiscoverRequest,
        ListResourcesRequest,
        ListResourceTemplatesRequest,
        ReadResourceRequest,
        SubscriptionsListenRequest,
        ListPromptsRequest,
        GetPromptRequest,
        ListToolsRequest,
        CallToolRequest,
        CompleteRequest,
    ],
    Field(discriminator="method"),
]

ClientNotification2026 = CancelledNotification

ClientResult2026 = Result

ServerNotification2026 = Annotated[
    Union[
        CancelledNotification,
        ProgressNotification,
        ResourceListChangedNotification,
        SubscriptionsAcknowledgedNotification,
        ResourceUpdatedNotification,
        PromptListChangedNotification,
        ToolListChangedNotification,
        LoggingMessageNotification,
    ],
    Field(discriminator="method"),
]

# ``input_required`` results are told apart by ``resultType``; for the others, as for
# ServerResult, validate against the result type of the request you sent.
ServerResult2026 = Annotated[
    Union[
        Annotated[InputRequiredResult, Tag("input_required")],
        Annotated[
            Union[
                DiscoverResult,
                ListResourcesResult,
                ListResourceTemplatesResult,
                ReadResourceResult,
                ListPromptsResult,
                GetPromptResult,
                ListToolsResult,
                CallToolResult2026,
                CompleteResult,
                SubscriptionsListenResult,
                Result,
            ],
            Tag("complete"),
        ],
    ],
    Discriminator(_result_type_tag),
]
