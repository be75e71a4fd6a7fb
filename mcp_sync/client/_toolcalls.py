"""What a ``tools/call`` needs besides the request: the tool's listed definition, its
compiled ``outputSchema``, the ``Mcp-Param-*`` headers of its arguments, and the
result parsed and checked.

:class:`ToolCalls` holds that for one client (the schemas compiled, once per listing;
the tools reported unlisted, once per listing); the client builds it with a
:class:`ToolCallsHost` (what it needs of the client, nothing more). Each call makes a
:class:`ToolPlan` on the caller's thread, before anything is sent. This module imports
no client.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable, Dict, Mapping, NamedTuple, Optional, Set, Tuple

from .._protocol import DEFAULT, Timeout
from .._types.parsing import invalid
from ..exceptions import InvalidToolSchema, ProtocolError, ToolChanged, ToolError, excerpt

if TYPE_CHECKING:
    from .. import types

__all__ = ["ToolCalls", "ToolCallsHost", "ToolPlan", "call_tool_params", "check_arguments"]

# The client's logger: these messages were always the client's.
log = logging.getLogger("mcp_sync.client")

# The validators of the session era's results (False) and the stateless era's (True),
# each looked up at the first result of its era, not per call (a function's ``from .
# import types`` costs each call an import lookup; a module-level one would load pydantic
# with ``import mcp_sync``), and not for the other era (its model is built when first
# used). The model's validator itself, called in ToolCalls.result: a wrapper around it
# would be one more Python frame on every call.
_RESULT_VALIDATORS: Dict[bool, Callable[[Any], Any]] = {}


def _result_validator(stateless: bool) -> Callable[[Any], Any]:
    from .. import types

    model = types.CallToolResult2026 if stateless else types.CallToolResult
    validate = _RESULT_VALIDATORS[stateless] = model.__pydantic_validator__.validate_python
    return validate


class ToolCallsHost(NamedTuple):
    """What tool calls need of the client (the client builds it)."""

    name: Callable[[], str]
    #: ``validate_output`` (read per call: the client's attribute may change).
    validate_output: Callable[[], bool]
    stateless: Callable[[], bool]
    #: Whether the transport's messages carry headers (``Mcp-Param-*``).
    carries_headers: Callable[[], bool]
    #: Whether the server declares the ``tools`` capability.
    has_tools: Callable[[], bool]
    #: The tools of the last listing by name, or None until this connection lists them
    #: (and again after ``tools/list_changed``).
    known_tools: Callable[[], Optional[Dict[str, Any]]]
    #: Tools the last listing dropped for invalid ``x-mcp-header`` annotations, with why.
    refused_tools: Callable[[], Mapping[str, str]]
    #: ``Client.list_tools(timeout=...)``.
    list_tools: Callable[[Timeout], Any]
    #: The blocked change of a tool (``ToolPins.blocked``), or None.
    blocked: Callable[[str], Any]


class ToolCalls:
    """A client's tool-call plumbing; see the module docstring."""

    def __init__(self, host: ToolCallsHost) -> None:
        self.host = host
        # Tool names called but missing from the current listing, reported once each.
        self._unlisted: Set[str] = set()
        # Compiled outputSchemas by tool name, with the Tool they belong to (or the
        # InvalidToolSchema that refused it).
        self._validators: Dict[str, Tuple[Any, Any]] = {}

    def relisted(self) -> None:
        """A new listing: a tool missing from it is reported again."""
        self._unlisted = set()

    def _tool(self, name: str) -> Optional[types.Tool]:
        known = self.host.known_tools()
        tool: Optional[types.Tool] = known.get(name) if known is not None else None
        return tool

    def declared_tool(self, name: str, timeout: Timeout) -> Optional[types.Tool]:
        """The listed definition of tool ``name``, whose outputSchema checks its result.

        On the caller's thread, before the call is sent: a connection that has not listed
        its tools (or got ``tools/list_changed`` since) lists them first (with
        ``validate_output``). ``None`` when ``validate_output`` is off, the server
        declares no tools, or does not list this one (logged once per listing).

        Raises:
            ToolChanged: the tool's definition changed since it was pinned, and the
                change is blocked (nothing is sent).
        """
        host = self.host
        validate = host.validate_output()
        known = host.known_tools()
        if validate and known is None and host.has_tools():
            known = {tool.name: tool for tool in host.list_tools(timeout)}
        self.refuse_blocked(name)
        if not validate or known is None:
            return None
        tool: Optional[types.Tool] = known.get(name)
        if tool is None and name not in host.refused_tools() and (
                name not in self._unlisted):
            self._unlisted.add(name)
            log.warning("tool %s is not in the tool list of %s: its results are not checked "
                        "against an outputSchema", excerpt(repr(name), 120), host.name())
        return tool

    def refuse_blocked(self, name: str) -> None:
        """Raise :class:`ToolChanged` when the client's pins block a change of tool
        ``name``."""
        change = self.host.blocked(name)
        if change is not None:
            raise ToolChanged(
                f"tool {excerpt(repr(name), 120)} of {self.host.name()} changed since it was "
                f"pinned ({excerpt('; '.join(change.differences), 600)}); it is blocked until "
                "the change is accepted: accept_tool_changes() on the client or the "
                "manager, or mcp-sync tools --changes --accept",
                tool=name, server=self.host.name(), differences=change.differences)

    def headers(self, name: str, arguments: Mapping[str, Any]) -> Optional[Dict[str, str]]:
        """The Mcp-Param-* headers of a stateless-era HTTP call (from x-mcp-header)."""
        host = self.host
        if not host.stateless() or not host.carries_headers():
            return None
        from .._protocol.headers import param_headers

        tool = self._tool(name)
        if tool is None and host.has_tools():
            host.list_tools(DEFAULT)
            tool = self._tool(name)
        if tool is None:
            reason = host.refused_tools().get(name)
            if reason is not None:
                raise ProtocolError(
                    f"refusing to call tool {excerpt(repr(name), 120)} of {host.name()}: its "
                    f"definition is invalid ({excerpt(reason, 200)}), so the client cannot send "
                    "its Mcp-Param headers"
                )
            return None
        try:
            return param_headers(tool.input_schema, arguments) or None
        except ValueError as exc:
            raise ValueError(f"cannot call {name!r}: {excerpt(exc, 300)}") from None

    def output_schema(self, tool: Optional[types.Tool]) -> Any:
        """The compiled outputSchema of ``tool`` (``_schema.OutputSchema``), kept with the
        Tool it belongs to; None when there is none to check (no tool, or no
        outputSchema).

        On the caller's thread, before the call is sent: a schema that cannot check
        anything fails the call here, and is judged once per listing.

        Raises:
            InvalidToolSchema: the schema cannot be used (see ``mcp_sync/_schema/checker.py``).
        """
        if tool is None or not tool.output_schema:
            return None
        entry = self._validators.get(tool.name)
        if entry is None or entry[0] is not tool:
            try:
                compiled = compile_output_schema(tool.output_schema, tool.name,
                                                 self.host.name())
            except InvalidToolSchema as exc:
                compiled = exc
            entry = (tool, compiled)
            self._validators[tool.name] = entry
        compiled = entry[1]
        if isinstance(compiled, InvalidToolSchema):
            # A new exception each time: raising one object again would grow its traceback.
            raise InvalidToolSchema(str(compiled), tool=compiled.tool,
                                    server=compiled.server, reason=compiled.reason)
        return compiled

    def result(
        self, name: str, data: Any, tool: Optional[types.Tool], schema: Any,
        stateless: bool, raise_on_error: bool = False,
    ) -> types.CallToolResult:
        """Parse a tools/call result and check it against ``tool``'s outputSchema
        (``schema``, compiled).

        Runs on the caller's thread (``call_tool``) or the handler pool
        (``call_tool_future``), never on the dispatch thread: a server's schema decides
        how long checking takes (within the check's budget). In the stateless era
        ``structuredContent`` may be any JSON value, and is checked as it is.
        """
        validate = _RESULT_VALIDATORS.get(stateless) or _result_validator(stateless)
        try:
            result: types.CallToolResult = validate(data)
        except ValueError as exc:  # pydantic's ValidationError
            raise invalid("tools/call result", exc) from None
        if tool is not None and tool.output_schema and not result.is_error:
            result.declare_output()  # .data may then parse the text as JSON
            # 2026-07-28: structuredContent is any JSON value, and a null sent is one.
            sent = stateless and "structured_content" in result.model_fields_set
            structured = result.structured_content if sent else result.data
            if structured is None and not sent:
                raise ProtocolError(
                    f"tool {name!r} of {self.host.name()} declares an outputSchema but "
                    "returned no structuredContent (nor JSON text)"
                )
            if schema is not None:
                schema.check(structured)
        if raise_on_error and result.is_error:
            raise ToolError(name, result)
        return result

    def mismatch_refreshable(self) -> bool:
        """A header mismatch can be repaired by listing the tools again: the stateless
        era, on a transport whose messages carry headers."""
        return self.host.stateless() and self.host.carries_headers()


class ToolPlan:
    """What one tool call needs of the tool's definition: the tool, its compiled
    outputSchema, and the ``Mcp-Param-*`` headers of these arguments; made again after
    a header mismatch (the annotations may have changed). ``refresh`` is that repair
    (list the tools again, plan again): in the stateless era, on a transport whose
    messages carry headers; else None, and then the plan never changes."""

    def __init__(self, calls: ToolCalls, name: str, arguments: Mapping[str, Any],
                 timeout: Timeout) -> None:
        self._calls, self._name, self._arguments = calls, name, arguments
        self._timeout = timeout
        self.tool: Optional[types.Tool] = None
        self.schema: Any = None
        self.headers: Optional[Dict[str, str]] = None
        self._prepare()
        self.refresh: Optional[Callable[[], None]] = None
        if calls.mismatch_refreshable():
            self.refresh = self._refresh
        else:
            # Never planned again, and it may be kept for later calls (ClientTasks keeps
            # a plain call's): no hold on this call's arguments, however big.
            self._arguments = {}

    def _prepare(self) -> None:
        calls = self._calls
        self.tool = calls.declared_tool(self._name, self._timeout)
        self.schema = calls.output_schema(self.tool)
        self.headers = calls.headers(self._name, self._arguments)

    def _refresh(self) -> None:
        self._calls.host.list_tools(DEFAULT)
        self._prepare()


def call_tool_params(name: str, arguments: Optional[Mapping[str, Any]],
                     meta: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """The params of a ``tools/call`` (``arguments`` checked first: nothing is sent)."""
    if arguments is not None and type(arguments) is not dict:  # a dict needs no check
        check_arguments("tool", name, arguments)
    params: Dict[str, Any] = {"name": name, "arguments": dict(arguments or {})}
    if meta:
        params["_meta"] = dict(meta)
    return params


def check_arguments(kind: str, name: str, arguments: Any) -> None:
    """Refuse ``arguments`` that are not a mapping, before anything is sent (the
    message is made only then: this runs on every call)."""
    if arguments is not None and type(arguments) is not dict and not isinstance(
            arguments, Mapping):
        raise TypeError(
            f"arguments for {kind} {excerpt(repr(name), 80)} must be a mapping of "
            "argument names to values, like "
            f"{{'text': 'hi'}}, not a {type(arguments).__name__} "
            f"({excerpt(repr(arguments), 80)})"
        )


def compile_output_schema(schema: Mapping[str, Any], tool: str, server: str) -> Any:
    """A bounded check for a tool's outputSchema (``_schema.OutputSchema``). Imports
    ``jsonschema`` (through ``_schema``) for the first such schema, never at ``import mcp_sync``.

    References resolve only inside the schema itself (a registry with no retrieval), so a
    server's schema can never make the client fetch a URL or open a file; see
    ``mcp_sync/_schema/checker.py`` for what else is refused, and the bounds of each check.

    Raises:
        InvalidToolSchema: the schema cannot be used to check results.
    """
    from .._schema.checker import OutputSchema

    return OutputSchema(schema, tool, server)
