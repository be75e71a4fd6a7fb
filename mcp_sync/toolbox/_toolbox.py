"""The Toolbox: MCP tools in front of a language model (see the package's docstring)."""

from __future__ import annotations

import collections
import copy
import fnmatch
import json
import logging
import math
import threading
import time
from concurrent.futures import Future
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, field
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Deque,
    Dict,
    Iterable,
    List,
    Mapping,
    NoReturn,
    Optional,
    Sequence,
    Set,
    Tuple,
    Union,
)

from .._util.threads import join_or_warn, start_thread
from ..apps._meta import model_visible, visibility_malformed
from ..client import Client
from ..client._toolpins import ToolChange
from ..exceptions import (
    ClientNotConnected,
    ConnectionClosed,
    InvalidToolCall,
    MCPError,
    RequestTimeout,
    ToolChanged,
    ToolError,
    excerpt,
)
from ..manager import Manager, ServerState, ServerUnavailable
from ._modeltext import SchemaRefused, clean_input_schema, clean_model_text, clean_model_value
from ._names import SEPARATOR, assign_names
from ._results import (
    anthropic_content,
    clean_result,
    langchain_content,
    openai_text,
    responses_output,
)
from ._schemas import bounded_schema, clean_text, drop_filled_nulls, strict_schema

if TYPE_CHECKING:
    from .. import types

__all__ = ["Toolbox"]

log = logging.getLogger(__name__)

#: OpenAI's limit on a function's description (Chat Completions and Responses).
OPENAI_DESCRIPTION_LIMIT = 1024
#: The bound on a description in the other formats (no provider states one).
DESCRIPTION_LIMIT = 8192
# Added to each round of a turn's bound: time for a timed-out call's error to arrive.
_GRACE = 5.0
# The states of a managed server worth waiting for.
_COMING = (ServerState.CONNECTING, ServerState.RECONNECTING)

Source = Union[Client, Manager]
Patterns = Union[str, Iterable[str], None]


@dataclass(frozen=True)
class _Entry:
    """One tool as the model sees it (or, withheld, a tool the model is not offered and
    whose call gets an error: a blocked change, a schema that cannot be cleaned)."""

    name: str                    # the name given to the model
    server: str
    tool: types.Tool             # as listed, with the server's own (unqualified) name
    source: Source
    schema: Dict[str, Any]       # the input schema, bounded and cleaned
    description: str             # cleaned, at most DESCRIPTION_LIMIT characters
    replaced: bool               # the schema was past a bound: the model gets an open one
    label: str = ""              # the server's name of the tool, cleaned
    annotations: Mapping[str, Any] = field(default_factory=dict)  # its hints, cleaned
    change: Optional[ToolChange] = None  # withheld: its change is blocked
    refused: Optional[str] = None        # withheld: why its schema cannot be offered

    @property
    def offered(self) -> bool:
        return self.change is None and self.refused is None


# (server, tool, its blocked change or None) as a source lists it
_Listed = Tuple[str, "types.Tool", Optional[ToolChange]]


@dataclass(frozen=True)
class _Catalog:
    entries: Tuple[_Entry, ...]
    by_name: Mapping[str, _Entry]
    # for each source, its last listing, kept when it fails
    listed: Mapping[int, Tuple[_Listed, ...]]

    @property
    def offered(self) -> Tuple[_Entry, ...]:
        return tuple(entry for entry in self.entries if entry.offered)


@dataclass
class _Call:
    """One tool call of a model's turn, as read from the provider's response."""

    call_id: str
    name: str
    arguments: Any               # a JSON string (OpenAI), a dict (Anthropic), or None


@dataclass
class _Outcome:
    result: types.CallToolResult  # what the model gets (an error becomes an error result)
    error: Optional[BaseException] = None


def _field(obj: Any, name: str) -> Any:
    """``obj[name]`` of a dict, ``obj.name`` of an SDK object; ``None`` when absent."""
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _patterns(value: Patterns, what: str) -> Optional[Tuple[str, ...]]:
    if value is None:
        return None
    if isinstance(value, str):
        return (value,)
    patterns = tuple(value)
    if not all(isinstance(p, str) for p in patterns):
        raise TypeError(f"{what} takes a string or strings (server, tool or glob patterns)")
    return patterns


def _error_result(message: str) -> types.CallToolResult:
    from .. import types

    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


class Toolbox:
    """The tools of MCP clients and managers, in each model provider's format, and the
    runner of the tool calls a model answers with. Can be shared between threads.

    Args:
        source: a :class:`~mcp_sync.Client`, a :class:`~mcp_sync.Manager`, or a list of
            them (connected before the toolbox is used; the toolbox never connects or
            closes them).
        include: offer only the tools matching one of these patterns (a string or
            strings): a pattern matches a server name (all its tools), a tool name (on any
            server) or ``server__tool``, with shell-style wildcards (``"files"``,
            ``"read_*"``, ``"git__log"``).
        exclude: leave out the tools matching one of these patterns (after ``include``).
        read_only: offer only the tools annotated ``readOnlyHint: true`` (an untrusted
            hint from the server).
        timeout: seconds each tool call may take (``None``: no limit); past it the call
            is cancelled and the model told it timed out.
        max_workers: the most calls of one turn that run at once.
        wait_for_server: seconds a call to a managed server that is connecting or
            reconnecting waits for it to be connected before the call starts (default
            30; ``0``: such a call fails at once). Past it the model is told the server
            is unavailable (:class:`~mcp_sync.manager.ServerUnavailable` with ``raise_errors``).
            A failed or disabled server is not waited for.
        startup_wait: seconds the first listing waits for managed servers that are still
            connecting (default 0.25): enough for a quick server to be listed live, short
            enough that saved tools (``Manager(tool_cache=...)``) are listed at once
            while a slow one starts.
        raise_errors: raise instead of answering the model with an error result:
            :class:`~mcp_sync.InvalidToolCall` for an unknown tool or arguments that are
            not a JSON object, :class:`~mcp_sync.ToolError` for an ``isError`` result, the
            client's own exception otherwise (:class:`~mcp_sync.RequestTimeout`,
            :class:`~mcp_sync.ConnectionClosed`...). Every call of the turn still runs; the
            first failure, in call order, is raised.
        clean_results: take the invisible and control characters (Unicode tags,
            zero-width characters, bidi controls, terminal escapes: see docs/toolbox.md)
            out of the text of tool results before the model gets them, as they are out of
            the tools' names, descriptions and schemas (default True; logged once per tool
            at WARNING with a count). ``False`` hands results over as the server sent them.

    The model sees each tool as ``<server>__<tool>`` (a client's server is its ``name``),
    with any character outside ``[a-zA-Z0-9_-]`` replaced by ``_``; a name that would be
    longer than 64 characters, or that two tools would share, is shortened and ends with
    a short hash of the tool's server and name. Names depend on the set of tools only, so
    they are the same on every call and in every process.

    What the model reads of a tool (its description or title, its input schema at any
    depth, its annotations) has its invisible and control characters removed; a tool
    whose property names or enum values hold one (the call depends on those, so they
    cannot be cleaned) is not offered (logged). A tool whose definition changed and whose
    source's ``on_tool_change`` blocked the change is not offered either; a call to it,
    from a model offered it before, is answered with an error (see
    :class:`~mcp_sync.ToolChanged`). A tool whose ``_meta.ui.visibility`` (MCP Apps)
    does not hold ``"model"`` is for its app alone: it is never offered, and a model
    naming it is told the tool is unknown (see :mod:`mcp_sync.apps`).

    The tools are listed again by each ``to_*`` method and :meth:`tools` (a client keeps
    the list cached while its server promises change notifications; a manager always
    does); the ``answer_*`` methods and :meth:`call` use that listing, and list again
    once if the model names a tool it does not hold. A source whose listing fails keeps
    its last listed tools (logged), so the model can still call them and read the error.

    Raises:
        TypeError: ``source`` is not a client, a manager or a list of them.
        ValueError: ``max_workers`` is below 1, or ``timeout``, ``wait_for_server`` or
            ``startup_wait`` is negative.
    """

    def __init__(
        self,
        source: Union[Source, Sequence[Source]],
        *,
        include: Patterns = None,
        exclude: Patterns = None,
        read_only: bool = False,
        timeout: Optional[float] = 60.0,
        max_workers: int = 8,
        wait_for_server: float = 30.0,
        startup_wait: float = 0.25,
        raise_errors: bool = False,
        clean_results: bool = True,
    ) -> None:
        sources = [source] if isinstance(source, (Client, Manager)) else list(source)
        if not sources or not all(isinstance(s, (Client, Manager)) for s in sources):
            raise TypeError("Toolbox takes a Client, a Manager, or a list of them")
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        if timeout is not None and timeout < 0:
            raise ValueError("timeout must be a number of seconds >= 0, or None")
        if not wait_for_server >= 0 or not startup_wait >= 0:
            raise ValueError("wait_for_server and startup_wait must be seconds >= 0")
        self.sources: List[Source] = sources
        self.include = _patterns(include, "include")
        self.exclude = _patterns(exclude, "exclude")
        self.read_only = read_only
        self.timeout = timeout
        self.max_workers = max_workers
        self.wait_for_server = float(wait_for_server)
        self.startup_wait = float(startup_wait)
        self.raise_errors = raise_errors
        self.clean_results = clean_results
        # Guards _catalog (replaced whole, never changed in place) and _warned.
        self._lock = threading.Lock()
        self._catalog: Optional[_Catalog] = None
        self._warned: Set[Tuple[str, str]] = set()  # (tool name, key) already logged

    def __repr__(self) -> str:
        catalog = self._catalog
        count = "not listed yet" if catalog is None else f"{len(catalog.offered)} tools"
        return f"<mcp_sync.Toolbox {count}>"

    # -- listing -------------------------------------------------------------------------

    def refresh(self) -> None:
        """List every source's tools now (what the ``to_*`` methods do before building).

        Raises:
            MCPError: every source failed and none had listed tools before (the first
                source's error).
        """
        with self._lock:
            previous = self._catalog
        if previous is None:
            self._startup_gate()
        listed: Dict[int, Tuple[_Listed, ...]] = {}
        first_error: Optional[MCPError] = None
        for index, source in enumerate(self.sources):
            try:
                listed[index] = tuple(self._list(source))
            except MCPError as exc:
                kept = previous.listed.get(index) if previous is not None else None
                log.warning("listing the tools of %s failed (%s); %s", _source_name(source),
                            excerpt(exc, 300),
                            "keeping its last list" if kept else "it offers none now")
                if kept:
                    listed[index] = kept
                first_error = first_error or exc
        if first_error is not None and not listed:
            raise first_error
        catalog = self._build(listed)
        with self._lock:
            self._catalog = catalog

    def _startup_gate(self) -> None:
        """Before the first listing: give managed servers that are still connecting up to
        ``startup_wait`` (in all) to come up, so that their live tools are listed."""
        deadline = time.monotonic() + self.startup_wait
        for source in self.sources:
            if not isinstance(source, Manager):
                continue
            for name, status in source.status().items():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return
                if status.state is ServerState.CONNECTING:
                    log.debug("waiting up to %.2f s for %s to connect before listing",
                              remaining, name)
                    try:
                        source.wait_ready(name, remaining)
                    except MCPError:
                        return  # not connected or closed: the listing says so

    @staticmethod
    def _list(source: Source) -> List[_Listed]:
        """The source's tools, and those whose change its pins block (named like the
        others, so that names stay the same, but withheld)."""
        from .. import types

        if isinstance(source, Client):
            pairs = [(source.name, tool) for tool in source.list_tools()]
        else:
            pairs = []
            for tool in source.list_tools():
                server, name = source.split_name(tool.name)
                pairs.append((server, tool.model_copy(update={"name": name})))
        # after the listing, which may have blocked or unblocked a change
        blocked = {(change.server, change.tool): change for change in source.tool_changes()}
        listed: List[_Listed] = [(server, tool, None) for server, tool in pairs
                                 if (server, tool.name) not in blocked]  # blocked wins
        for (server, name), change in blocked.items():
            try:
                tool = types.Tool.model_validate(change.after)
            except ValueError:  # pydantic's ValidationError: a definition from a file
                tool = types.Tool(name=name, input_schema={"type": "object"})
            listed.append((server, tool, change))
        return listed

    def _wanted(self, source: Source, server: str, tool: types.Tool) -> bool:
        if not model_visible(tool):
            # MCP Apps: a tool only its app may call (_meta.ui.visibility without
            # "model") is never a model's, whatever include says.
            if visibility_malformed(tool):
                self._warn(f"{server}{SEPARATOR}{tool.name}", "not offered: its "
                           "_meta.ui.visibility is not a list of strings")
            return False
        if self.read_only and not (tool.annotations and tool.annotations.read_only_hint):
            return False
        names = {server, tool.name, f"{server}{SEPARATOR}{tool.name}"}
        if isinstance(source, Manager):
            names.add(source.qualify(server, tool.name))

        def matches(patterns: Tuple[str, ...]) -> bool:
            return any(fnmatch.fnmatchcase(name, p) for p in patterns for name in names)

        if self.include is not None and not matches(self.include):
            return False
        return not (self.exclude is not None and matches(self.exclude))

    def _build(self, listed: Mapping[int, Tuple[_Listed, ...]]) -> _Catalog:
        chosen: List[Tuple[Source, str, types.Tool, Optional[ToolChange]]] = [
            (self.sources[index], server, tool, change)
            for index in sorted(listed)
            for server, tool, change in listed[index]
            if self._wanted(self.sources[index], server, tool)
        ]
        names = assign_names([(server, tool.name) for _, server, tool, _ in chosen])
        entries = tuple(self._entry(name, *item) for name, item in zip(names, chosen))
        return _Catalog(entries, {entry.name: entry for entry in entries}, dict(listed))

    def _entry(self, name: str, source: Source, server: str, tool: types.Tool,
               change: Optional[ToolChange]) -> _Entry:
        """The tool as the model sees it: everything it reads bounded and cleaned."""
        if change is not None:
            return _Entry(name, server, tool, source, {}, "", False, change=change)
        schema, note, whole = bounded_schema(tool.input_schema)
        if note is not None:
            self._warn(name, f"offered with an open schema: {note}" if whole else note)
        try:
            schema, removed = clean_input_schema(schema)
        except SchemaRefused as exc:
            self._warn(name, f"not offered: {exc}, and the call depends on it, so it cannot "
                             "be cleaned")
            return _Entry(name, server, tool, source, {}, "", False, refused=str(exc))
        text = tool.description or tool.title or (
            tool.annotations.title if tool.annotations else None) or ""
        description, count = clean_model_text(text)
        label, named = clean_model_text(tool.name)
        annotations, noted = clean_model_value(
            tool.annotations.to_wire() if tool.annotations else {})
        removed += count + named + noted
        if removed:
            self._warn(name, f"removed {removed} invisible or control characters (Unicode "
                             "tags, zero-width, bidi or control characters) from its name, "
                             "description, annotations and input schema before offering it")
        return _Entry(name, server, tool, source, schema, clean_text(description,
                      DESCRIPTION_LIMIT), whole, label, annotations)

    def _warn(self, name: str, reason: str, key: Optional[str] = None) -> None:
        """Log ``reason`` at WARNING, once per tool and ``key`` (the reason itself by
        default)."""
        with self._lock:
            if (name, key or reason) in self._warned:
                return
            self._warned.add((name, key or reason))
        log.warning("tool %s: %s", name, reason)

    def _entries(self, *, refresh: bool) -> Tuple[_Entry, ...]:
        """The tools offered to the model."""
        if refresh or self._catalog is None:
            self.refresh()
        catalog = self._catalog
        assert catalog is not None
        return catalog.offered

    # -- formats -------------------------------------------------------------------------

    def tools(self) -> List[Dict[str, Any]]:
        """Every tool, provider-neutral: ``{"name", "description", "schema", "server",
        "tool", "annotations"}`` dicts (``name`` is the one :meth:`call` takes, ``tool``
        the server's own name and ``annotations`` its hints, wire names, both cleaned
        like the description). Lists the tools again."""
        return [{
            "name": e.name,
            "description": e.description,
            "schema": copy.deepcopy(e.schema),
            "server": e.server,
            "tool": e.label,
            "annotations": copy.deepcopy(dict(e.annotations)),
        } for e in self._entries(refresh=True)]

    def _openai_function(self, entry: _Entry, strict: bool) -> Dict[str, Any]:
        function: Dict[str, Any] = {"name": entry.name}
        if entry.description:
            function["description"] = clean_text(entry.description, OPENAI_DESCRIPTION_LIMIT)
        schema: Optional[Dict[str, Any]] = None
        if strict:
            schema, reason = (None, "its input schema was replaced by an open one") if (
                entry.replaced) else strict_schema(entry.schema)
            if reason is not None:
                self._warn(entry.name, f"not strict: {reason}")
        function["parameters"] = schema if schema is not None else copy.deepcopy(entry.schema)
        function["strict"] = schema is not None
        return function

    def to_openai(self, strict: bool = False) -> List[Dict[str, Any]]:
        """Chat Completions ``tools``: ``{"type": "function", "function": {...}}`` dicts.

        ``strict=True`` converts each schema to OpenAI's strict subset (every property
        required, the optional ones nullable, no other properties, local ``$ref``s
        inlined, unsupported keywords dropped) and marks it ``"strict": true``; a tool
        whose schema cannot be expressed there stays non-strict, with the reason logged
        once (WARNING). The ``null`` a strict model writes for an optional argument is
        removed before the call. Descriptions are cut at 1024 characters. Lists the tools
        again.
        """
        functions = [self._openai_function(e, strict) for e in self._entries(refresh=True)]
        if not strict:
            for function in functions:
                del function["strict"]
        return [{"type": "function", "function": f} for f in functions]

    def to_openai_responses(self, strict: bool = False) -> List[Dict[str, Any]]:
        """Responses API ``tools``: ``{"type": "function", "name", "description",
        "parameters", "strict"}`` dicts (``strict`` is always given, since the API
        otherwise defaults to strict). ``strict=True`` as in :meth:`to_openai`. Lists the
        tools again."""
        return [{"type": "function", **self._openai_function(e, strict)}
                for e in self._entries(refresh=True)]

    def to_anthropic(self) -> List[Dict[str, Any]]:
        """Messages API ``tools``: ``{"name", "description", "input_schema"}`` dicts.
        Lists the tools again."""
        tools = []
        for entry in self._entries(refresh=True):
            tool: Dict[str, Any] = {"name": entry.name}
            if entry.description:
                tool["description"] = entry.description
            tool["input_schema"] = copy.deepcopy(entry.schema)
            tools.append(tool)
        return tools

    def to_langchain(self) -> List[Any]:
        """LangChain tools: a ``langchain_core.tools.StructuredTool`` for each tool, with
        a blocking ``func`` (the call, on the caller's thread) and a ``coroutine`` (the
        same call on the event loop's default executor, so the loop never blocks).

        Each returns ``(content, artifact)``: the content is the result's text, or a list
        of LangChain's standard text/image/file blocks when it has images or files; the
        artifact is the ``types.CallToolResult``. An error (an ``isError`` result, a
        timeout, a dead server) becomes a ``ToolException``, which the tool answers the
        model with (``handle_tool_error=True``). Needs ``langchain-core`` (the
        ``langchain`` extra). Lists the tools again.

        Raises:
            ImportError: langchain-core is not installed.
        """
        try:
            from langchain_core.tools import StructuredTool, ToolException
        except ImportError as exc:
            raise ImportError(
                "Toolbox.to_langchain() needs langchain-core: "
                "pip install 'mcp-sync-client[langchain]'") from exc
        import asyncio
        import functools

        def make(entry: _Entry) -> Any:
            name = entry.name

            def run(**arguments: Any) -> Tuple[Any, types.CallToolResult]:
                result = self.call(name, arguments)
                if result.is_error:
                    raise ToolException(openai_text(result))
                return langchain_content(result), result

            async def run_async(**arguments: Any) -> Tuple[Any, types.CallToolResult]:
                loop = asyncio.get_running_loop()
                return await loop.run_in_executor(None, functools.partial(run, **arguments))

            return StructuredTool.from_function(
                func=run, coroutine=run_async, name=name,
                description=entry.description or name,
                args_schema=copy.deepcopy(entry.schema),
                response_format="content_and_artifact", handle_tool_error=True,
            )

        return [make(entry) for entry in self._entries(refresh=True)]

    # -- calls ---------------------------------------------------------------------------

    def call(self, name: str, arguments: Union[Mapping[str, Any], str, None] = None
             ) -> types.CallToolResult:
        """Call the tool the model knows as ``name`` (a name from :meth:`tools` or a
        ``to_*`` method) and block for its result, bounded by ``timeout``.

        ``arguments`` is a mapping or its JSON text. A failure (unknown name, arguments
        that are not a JSON object, a timeout, a dead server) comes back as a result with
        ``is_error`` set and a text saying what happened, like a tool's own error, unless
        ``raise_errors``.

        Raises:
            InvalidToolCall, ToolError, MCPError: only with ``raise_errors=True`` (see
                the class).
        """
        outcome = self._run_turn([_Call("", name, arguments)])[0]
        return outcome.result

    def answer_openai(self, message: Any) -> List[Dict[str, Any]]:
        """Run the tool calls of a Chat Completions assistant message; return one
        ``{"role": "tool", "tool_call_id", "content"}`` message for each, in the order of
        the calls (``[]`` when there are none).

        ``message`` is the SDK's ``ChatCompletionMessage`` (or the whole
        ``ChatCompletion``: its first choice is read) or the same as a dict. Tool messages
        carry text only: images and files are described; an error result's text starts
        with ``Error:``.

        Raises:
            InvalidToolCall, ToolError, MCPError: only with ``raise_errors=True``.
        """
        if _field(message, "choices") is not None:
            message = _field(_field(message, "choices")[0], "message")
        calls = []
        for tool_call in _field(message, "tool_calls") or ():
            function = _field(tool_call, "function")
            calls.append(_Call(str(_field(tool_call, "id")), _field(function, "name"),
                               _field(function, "arguments")))
        outcomes = self._run_turn(calls)
        return [{"role": "tool", "tool_call_id": call.call_id,
                 "content": openai_text(outcome.result)}
                for call, outcome in zip(calls, outcomes)]

    def answer_openai_responses(self, response: Any) -> List[Dict[str, Any]]:
        """Run the ``function_call`` items of a Responses API response; return one
        ``{"type": "function_call_output", "call_id", "output"}`` item for each, in the
        order of the calls (``[]`` when there are none).

        ``response`` is the SDK's ``Response``, its ``output`` list, or the same as dicts.
        ``output`` is text, or a list with ``input_image``/``input_file`` items when the
        result has a PNG, JPEG, GIF or WebP image or a PDF; an error's text starts with
        ``Error:``.

        Raises:
            InvalidToolCall, ToolError, MCPError: only with ``raise_errors=True``.
        """
        items = response if isinstance(response, list) else _field(response, "output") or ()
        calls = [_Call(str(_field(item, "call_id")), _field(item, "name"),
                       _field(item, "arguments"))
                 for item in items if _field(item, "type") == "function_call"]
        outcomes = self._run_turn(calls)
        return [{"type": "function_call_output", "call_id": call.call_id,
                 "output": responses_output(outcome.result)}
                for call, outcome in zip(calls, outcomes)]

    def answer_anthropic(self, response: Any) -> Optional[Dict[str, Any]]:
        """Run the ``tool_use`` blocks of an Anthropic Messages response; return the user
        turn that answers them: ``{"role": "user", "content": [tool_result, ...]}``, one
        ``tool_result`` block per call, in the order of the calls; ``None`` when the
        response has no ``tool_use`` block.

        ``response`` is the SDK's ``Message``, its ``content`` list, or the same as dicts.
        Results keep their text, images (PNG, JPEG, GIF, WebP) and PDFs; an error result
        has ``"is_error": true``.

        Raises:
            InvalidToolCall, ToolError, MCPError: only with ``raise_errors=True``.
        """
        blocks = response if isinstance(response, list) else _field(response, "content") or ()
        calls = [_Call(str(_field(block, "id")), _field(block, "name"), _field(block, "input"))
                 for block in blocks if _field(block, "type") == "tool_use"]
        if not calls:
            return None
        outcomes = self._run_turn(calls)
        results = []
        for call, outcome in zip(calls, outcomes):
            block: Dict[str, Any] = {"type": "tool_result", "tool_use_id": call.call_id}
            content = anthropic_content(outcome.result)
            if content:
                block["content"] = content
            if outcome.result.is_error:
                block["is_error"] = True
            results.append(block)
        return {"role": "user", "content": results}

    # -- running a turn ------------------------------------------------------------------

    def _run_turn(self, calls: Sequence[_Call]) -> List[_Outcome]:
        """Every call's outcome, in order; raises the first failure with raise_errors."""
        if not calls:
            return []
        listing_error: Optional[MCPError] = None
        if self._catalog is None or any(
                call.name not in self._catalog.by_name for call in calls):
            try:
                self.refresh()  # once per turn, for a tool listed since (or never listed)
            except MCPError as exc:
                log.warning("listing the tools again failed: %s", excerpt(exc, 300))
                listing_error = exc
        catalog = self._catalog
        outcomes: List[Optional[_Outcome]] = []
        jobs: List[Tuple[int, _Entry, Dict[str, Any]]] = []
        for index, call in enumerate(calls):
            prepared = self._prepare(call, catalog, listing_error)
            if isinstance(prepared, _Outcome):
                outcomes.append(prepared)
            else:
                outcomes.append(None)
                jobs.append((index, *prepared))
        for index, outcome in self._run_jobs(calls, jobs):
            outcomes[index] = outcome
        final = [outcome for outcome in outcomes if outcome is not None]
        assert len(final) == len(calls)
        if self.raise_errors:
            for outcome in final:
                if outcome.error is not None:
                    raise outcome.error
        return final

    def _prepare(self, call: _Call, catalog: Optional[_Catalog],
                 listing_error: Optional[MCPError]
                 ) -> Union[_Outcome, Tuple[_Entry, Dict[str, Any]]]:
        """The call ready to run (its tool and arguments), or its outcome when it
        cannot run."""
        name = call.name if isinstance(call.name, str) else ""
        entry = catalog.by_name.get(name) if catalog is not None else None
        shown = excerpt(repr(name), 100)
        if entry is None:
            why = "" if listing_error is None else (
                f" (listing the tools failed: {excerpt(_first_line(listing_error), 200)})")
            return self._failed(InvalidToolCall(
                f"there is no tool named {shown}{why}; no call was made", tool=name))
        if entry.change is not None:
            log.info("refusing a call to %s: its change is blocked", name)
            return self._failed(ToolChanged(
                _changed_message(name), tool=entry.change.tool, server=entry.server,
                differences=entry.change.differences))
        if entry.refused is not None:
            return self._failed(InvalidToolCall(
                f"{name} is not offered: its input schema holds invisible or control "
                "characters where the call depends on them; no call was made", tool=name))
        arguments = call.arguments
        if isinstance(arguments, str):
            if not arguments.strip():
                arguments = {}
            else:
                try:
                    arguments = json.loads(arguments)
                except ValueError as exc:
                    return self._failed(InvalidToolCall(
                        f"the arguments for {name} are not valid JSON ({excerpt(exc, 120)}); "
                        "no call was made", tool=name))
        elif arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            return self._failed(InvalidToolCall(
                f"the arguments for {name} must be a JSON object, not "
                f"{type(arguments).__name__}; no call was made", tool=name))
        arguments = drop_filled_nulls(dict(arguments), entry.tool.input_schema)
        return entry, arguments

    @staticmethod
    def _failed(error: BaseException) -> _Outcome:
        return _Outcome(_error_result(str(error)), error)

    def _invoke(self, entry: _Entry, arguments: Dict[str, Any]) -> _Outcome:
        """Call the tool; every failure becomes an outcome (this runs on pool threads)."""
        log.debug("calling %s (%s of %s)", entry.name, entry.tool.name, entry.server)
        source = entry.source
        if isinstance(source, Manager):
            return self._outcome(entry, lambda: self._call_managed(source, entry, arguments))
        return self._outcome(entry, lambda: source.call_tool(entry.tool.name, arguments,
                                                             timeout=self.timeout))

    def _send(self, entry: _Entry, arguments: Dict[str, Any]
              ) -> Union[_Outcome, Future[types.CallToolResult]]:
        """Send a call to a client's tool without waiting: its future, or the outcome
        of a call that could not be sent."""
        log.debug("calling %s (%s of %s)", entry.name, entry.tool.name, entry.server)
        assert isinstance(entry.source, Client)
        try:
            return entry.source.call_tool_future(entry.tool.name, arguments,
                                                 timeout=self.timeout)
        except BaseException as exc:  # noqa: BLE001 - mapped below, as a blocking call's
            error = exc
        return self._outcome(entry, lambda: _reraise(error))

    def _outcome(self, entry: _Entry, call: Callable[[], types.CallToolResult]) -> _Outcome:
        """Run ``call``; its result or its failure as the model's outcome."""
        try:
            result = call()
        except RequestTimeout as exc:
            return self._failed_call(entry, exc, f"{entry.name} did not answer within "
                                     f"{self.timeout:g} s; the call was cancelled"
                                     if self.timeout is not None else str(exc))
        except ToolChanged as exc:  # the change was seen after this catalog was built
            return self._failed_call(entry, exc, _changed_message(entry.name))
        except ServerUnavailable as exc:
            waited = f" (waited {self.wait_for_server:g} s for it)" if (
                exc.state in _COMING and self.wait_for_server > 0) else ""
            return self._failed_call(entry, exc, f"the server of {entry.name} is "
                                     f"unavailable{waited}: "
                                     f"{excerpt(_first_line(exc), 300)}")
        except (ConnectionClosed, ClientNotConnected) as exc:
            return self._failed_call(entry, exc, f"the server of {entry.name} is "
                                     f"unavailable: {excerpt(_first_line(exc), 300)}")
        except MCPError as exc:
            return self._failed_call(entry, exc, f"calling {entry.name} failed: "
                                     f"{excerpt(exc, 500)}")
        except Exception as exc:  # a bad call must not lose the other calls of the turn
            log.warning("calling %s raised %s", entry.name, type(exc).__name__, exc_info=True)
            return self._failed_call(entry, exc, f"calling {entry.name} failed: "
                                     f"{type(exc).__name__}: {excerpt(exc, 300)}")
        if self.clean_results:
            result = self._cleaned(entry, result)
        if result.is_error:
            return _Outcome(result, ToolError(entry.name, result))
        return _Outcome(result)

    def _cleaned(self, entry: _Entry, result: types.CallToolResult) -> types.CallToolResult:
        """``result`` without invisible and control characters (logged once per tool)."""
        cleaned, removed = clean_result(result)
        if removed:
            self._warn(entry.name, f"removed {removed} invisible or control characters "
                                   "(Unicode tags, zero-width, bidi or control characters) "
                                   "from a result before the model got it (logged once per "
                                   "tool)", key="results")
        return cleaned

    def _call_managed(self, manager: Manager, entry: _Entry, arguments: Dict[str, Any]
                      ) -> types.CallToolResult:
        """The manager's call (with its one safe retry after a broken connection), made
        once the server is connected: a server that is connecting or reconnecting is
        waited for, at most ``wait_for_server``.

        Raises:
            ServerUnavailable: the server is down and did not come up in time, or will
                not (failed, disabled). Whatever :meth:`Manager.call_tool` raises.
        """
        deadline = time.monotonic() + self.wait_for_server
        while True:
            try:
                return manager.call_tool(entry.server, entry.tool.name, arguments,
                                         timeout=self.timeout)
            except ServerUnavailable as exc:
                # nothing was sent: calling again is safe whatever the tool does
                remaining = deadline - time.monotonic()
                if exc.state not in _COMING or remaining <= 0:
                    raise
                log.debug("%s: waiting up to %.1f s for server %s (%s)", entry.name,
                          remaining, entry.server, exc.state.value)
                manager.wait_ready(entry.server, remaining)

    @staticmethod
    def _failed_call(entry: _Entry, error: BaseException, message: str) -> _Outcome:
        log.info("tool call %s failed: %s", entry.name, excerpt(error, 300))
        return _Outcome(_error_result(message), error)

    def _run_jobs(self, calls: Sequence[_Call],
                  jobs: Sequence[Tuple[int, _Entry, Dict[str, Any]]]
                  ) -> List[Tuple[int, _Outcome]]:
        """Run ``jobs``; ``(index, outcome)`` pairs.

        A client's tools are called through :meth:`Client.call_tool_future`, all sent
        before any is waited for: no thread is started for them. A manager's calls (which
        may wait for a server to come up) run at most ``max_workers`` at a time on
        threads of this turn, while this thread waits for the futures.
        """
        if len(jobs) == 1:
            index, entry, arguments = jobs[0]
            return [(index, self._invoke(entry, arguments))]
        bound = None if self.timeout is None else math.ceil(
            len(jobs) / max(1, self.max_workers)) * (
            3 * self.timeout + self.wait_for_server + _GRACE)
        deadline = None if bound is None else time.monotonic() + bound
        managed = [(index, lambda e=entry, a=arguments: self._invoke(e, a))
                   for index, entry, arguments in jobs if isinstance(entry.source, Manager)]
        running = self._start_jobs(managed)
        direct = [job for job in jobs if not isinstance(job[1].source, Manager)]
        results: List[Tuple[int, _Outcome]] = []
        sent: List[Tuple[int, _Entry, Union[_Outcome, Future[types.CallToolResult]]]] = []
        try:
            for index, entry, arguments in direct:
                if len(sent) >= self.max_workers:  # at most max_workers calls in flight
                    results.extend(self._collect(sent[len(sent) - self.max_workers], deadline))
                sent.append((index, entry, self._send(entry, arguments)))
            for item in sent[max(0, len(sent) - self.max_workers):]:
                results.extend(self._collect(item, deadline))
        except BaseException:  # an interrupted turn sends and starts nothing more
            for _, _, future in sent:
                if not isinstance(future, _Outcome):
                    future.cancel()
            if running is not None:
                running(time.monotonic())
            raise
        if running is not None:
            results.extend(running(deadline))
        finished = {index for index, _ in results}
        for index, _entry, _ in jobs:
            if index not in finished:
                name = calls[index].name
                log.warning("tool call %s still running after %.0f s; answering it as timed "
                            "out", name, bound)
                error = RequestTimeout("tools/call", None, bound)
                results.append((index, _Outcome(_error_result(
                    f"{name} did not answer within {bound:g} s"), error)))
        return results

    def _collect(self, item: Tuple[int, _Entry, Union[_Outcome, Future[types.CallToolResult]]],
                 deadline: Optional[float]) -> List[Tuple[int, _Outcome]]:
        """The ``(index, outcome)`` of a call sent by :meth:`_send`, waited for until
        ``deadline``; nothing when it is still running then (the caller answers it as
        timed out)."""
        index, entry, future = item
        if isinstance(future, _Outcome):
            return [(index, future)]
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        done, _ = wait_futures([future], remaining)
        if not done:
            future.cancel()
            return []
        return [(index, self._outcome(entry, future.result))]

    def _start_jobs(self, jobs: Sequence[Tuple[int, Callable[[], _Outcome]]]
                    ) -> Optional[Callable[[Optional[float]], List[Tuple[int, _Outcome]]]]:
        """Start ``jobs`` on at most ``max_workers`` threads; returns the function that
        waits for them until a deadline and gives the ``(index, outcome)`` pairs of
        those that finished (None: no jobs)."""
        if not jobs:
            return None
        workers = min(len(jobs), self.max_workers)
        pending: Deque[Tuple[int, Callable[[], _Outcome]]] = collections.deque(jobs)
        done: Dict[int, _Outcome] = {}
        changed = threading.Condition()  # guards pending and done

        def work() -> None:
            while True:
                with changed:
                    if not pending:
                        return
                    index, job = pending.popleft()
                outcome = job()  # never raises: _invoke turns every error into an outcome
                with changed:
                    done[index] = outcome
                    changed.notify_all()

        # Daemon threads: a call past every bound must not keep the interpreter alive;
        # normally each ends with the turn and is joined below.
        threads = [start_thread(work, f"mcp-sync-toolbox-{n + 1}") for n in range(workers)]

        def finish(deadline: Optional[float]) -> List[Tuple[int, _Outcome]]:
            with changed:
                try:
                    while len(done) < len(jobs):
                        remaining = None if deadline is None else deadline - time.monotonic()
                        if remaining is not None and remaining <= 0:
                            break
                        changed.wait(remaining)
                finally:
                    pending.clear()  # an interrupted or overdue turn starts nothing more
                    finished = dict(done)
            if len(finished) == len(jobs):  # else the overdue ones end with their call
                for thread in threads:
                    join_or_warn(thread, 5.0, "the end of its turn", log)
            return list(finished.items())

        return finish


def _changed_message(name: str) -> str:
    """What the model reads of a call to a tool whose change is blocked: not what
    changed (those are the server's words, and the change is not trusted)."""
    return (f"{name} changed since it was approved and is blocked until the user accepts "
            "the change; no call was made")


def _reraise(error: BaseException) -> NoReturn:
    raise error


def _source_name(source: Source) -> str:
    return source.name if isinstance(source, Client) else "a Manager"


def _first_line(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    return text.splitlines()[0]
