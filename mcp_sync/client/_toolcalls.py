"""A ``tools/call``, made and sent: the tool's listed definition, its compiled
``outputSchema``, the ``Mcp-Param-*`` headers of its arguments, whether it runs as a task,
and the result parsed and checked.

:class:`ToolCalls` does it for one client, in every form (``call_tool``,
``call_tool_future``, ``start_tool_task``), with the client's connection (of which it
uses what :class:`ToolCallsConnection` names). Each call is made ready on the caller's
thread before anything is sent (:meth:`ToolCalls.prepare`): a :class:`ToolCall` with its
:class:`ToolPlan` (the tool, its compiled outputSchema, the headers of its arguments) and,
when it runs as a task, its ``task`` param. A plain call (no task asked for, none the
tool requires, none the server may make of it) goes from here to the session, through the
connection's rounds, and back; its plan is made once per tool for each agreement, listing
and ``validate_output`` when no header depends on its arguments. A call that runs as a
task goes to the connection's tasks (:class:`TaskCalls`), and so does a plain call that
the server answered with a task (the 2026-07-28 tasks extension, where the server
decides): task code runs for calls that are tasks, never for the others. This module
imports no client and no task code.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import Future
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Mapping,
    Optional,
    Protocol,
    Set,
    Tuple,
)

from .._parsing import invalid
from .._protocol import DEFAULT, TASKS_EXTENSION, Timeout
from .._rpc.core import ProgressCallback
from ..exceptions import (
    CapabilityError,
    InvalidToolSchema,
    ProtocolError,
    ToolChanged,
    ToolError,
    excerpt,
)
from ..extensions import Extension, TasksExtension
from ._rounds import RoundsFuture, RoundsRunner
from ._settings import TASK_START_OPTIONS, TOOL_CALL_OPTIONS, Timeouts, ToolChecks, call_options

if TYPE_CHECKING:
    from .. import types
    from .._protocol.agreement import Agreement
    from .._rpc.session import RequestFuture, RpcSession

__all__ = ["TaskCalls", "ToolCall", "ToolCalls", "ToolCallsConnection", "ToolExtensions",
           "ToolPlan", "answered_with_task", "call_tool_params", "check_arguments",
           "tasks_capability", "tool_result"]

# The client's logger: these messages were always the client's.
log = logging.getLogger("mcp_sync.client")

# The validators of the session era's results (False) and the stateless era's (True),
# each looked up at the first result of its era, not per call (a function's ``from .
# import types`` costs each call an import lookup; a module-level one would load pydantic
# with ``import mcp_sync``), and not for the other era (its model is built when first
# used). The model's validator itself, called in tool_result: a wrapper around it
# would be one more Python frame on every call.
_RESULT_VALIDATORS: Dict[bool, Callable[[Any], Any]] = {}


def _result_validator(stateless: bool) -> Callable[[Any], Any]:
    from .. import types

    model = types.CallToolResult2026 if stateless else types.CallToolResult
    validate = _RESULT_VALIDATORS[stateless] = model.__pydantic_validator__.validate_python
    return validate


class ToolListings(Protocol):
    """The client's listings, as a tool call reads them (``Listings``)."""

    @property
    def known_tools(self) -> Optional[Dict[str, Any]]:
        """The tools of the last listing by name, or None until this connection lists
        them (and again after ``tools/list_changed``)."""

    @property
    def refused_tools(self) -> Mapping[str, str]:
        """Tools the last listing dropped for invalid ``x-mcp-header`` annotations."""

    def tools(self, timeout: Timeout) -> Any:
        """List the tools (``Client.list_tools``)."""


class ToolExtensions(Protocol):
    """The client's extensions, as a tool call asks them about its result
    (``ClientExtensions``)."""

    @property
    def tasks(self) -> TasksExtension:
        """The tasks extension: it claims a call the server made a task of."""

    @property
    def claim_results(self) -> Tuple[Extension, ...]:
        """The user's extensions that may claim a result (empty: none looks)."""

    def taken(self, method: str, result: Any) -> Any:
        """``result``, or what the agreed extension that claims it makes of it."""


class TaskCalls(Protocol):
    """The client's tasks, as a tool call hands them a call that is a task
    (``ClientTasks``)."""

    def run_task(self, call: ToolCall) -> types.CallToolResult:
        """A call that runs as a task, from its start to its result (blocking)."""

    def task_future(self, call: ToolCall) -> Future[types.CallToolResult]:
        """:meth:`run_task` on a thread of its own: its future, at once."""

    def follow_task(self, call: ToolCall, data: Any) -> types.CallToolResult:
        """A plain call the server answered with a task (``data``): the task's result."""

    def follow_task_future(self, call: ToolCall, data: Any) -> Future[types.CallToolResult]:
        """:meth:`follow_task` on a thread of its own: its future, at once."""


class ToolCallsConnection(Protocol):
    """What tool calls use of the client's connection (read at each use)."""

    @property
    def name(self) -> str: ...

    @property
    def timeouts(self) -> Timeouts: ...

    @property
    def tool_checks(self) -> ToolChecks: ...

    @property
    def listings(self) -> ToolListings: ...

    @property
    def rounds(self) -> RoundsRunner:
        """Every request of a call goes through it (retries, input rounds)."""

    @property
    def tasks(self) -> TaskCalls: ...

    @property
    def extensions(self) -> ToolExtensions: ...

    @property
    def agreement(self) -> Optional[Agreement]: ...

    @property
    def carries_headers(self) -> bool:
        """Whether the transport's messages carry headers (``Mcp-Param-*``)."""

    def stateless(self) -> bool: ...

    def require_agreement(self) -> Agreement:
        """The agreement (``ClientNotConnected`` before the first connect)."""

    def has_capability(self, *path: str) -> bool: ...

    def offers(self, *path: str) -> bool:
        """:meth:`has_capability`, raising ``ClientNotConnected`` when closed."""


def tasks_capability(stateless: bool) -> Tuple[Tuple[str, ...], str]:
    """Where a server declares that it runs tools as tasks, and how an error names it:
    ``tasks.requests.tools.call`` (2025-11-25), or the tasks extension (2026-07-28)."""
    if stateless:
        return ("extensions", TASKS_EXTENSION), f"the {TASKS_EXTENSION} extension"
    return ("tasks", "requests", "tools", "call"), "capability 'tasks.requests.tools.call'"


def answered_with_task(data: Any) -> bool:
    """Whether a ``tools/call`` answer is a task the server made of the call (what the
    2026-07-28 tasks extension claims: a flat result with ``resultType: "task"``)."""
    return _TASKS.claims_result("tools/call", data)


_TASKS = TasksExtension()


# Most names a client's memo of plain plans keeps for one listing (see ToolCalls).
_PLAIN_PLANS_MAX = 1024


class ToolCall:
    """A ``tools/call`` made ready on the caller's thread, before anything is sent: its
    params (with the ``task`` param of a task in the session era) and
    :class:`ToolPlan`, its options, the ``task`` it asks for (``task_params``; None for a
    plain call), whether the server may make a plain call a task (``adoptable``: the
    2026-07-28 tasks extension) and whether the era is stateless. A call that is or may
    become a task keeps when it ``started``: the wait for its task counts from then.
    Made once per call: a class with slots (a frozen dataclass spends a microsecond of
    every call setting its fields)."""

    __slots__ = ("adoptable", "name", "on_progress", "params", "plan", "raise_on_error",
                 "started", "stateless", "task_params", "timeout")

    def __init__(self, name: str, params: Dict[str, Any], plan: ToolPlan, *,
                 timeout: Timeout, on_progress: Optional[ProgressCallback],
                 raise_on_error: bool, task_params: Optional[Dict[str, Any]],
                 adoptable: bool, stateless: bool, started: Optional[float] = None) -> None:
        self.name = name
        self.params = params
        self.plan = plan
        self.timeout = timeout
        self.on_progress = on_progress
        self.raise_on_error = raise_on_error
        self.task_params = task_params
        self.adoptable = adoptable
        self.stateless = stateless
        self.started = started

    def with_params(self, params: Dict[str, Any]) -> ToolCall:
        """This call with other params (a progress token of its own, say)."""
        return ToolCall(self.name, params, self.plan, timeout=self.timeout,
                        on_progress=self.on_progress, raise_on_error=self.raise_on_error,
                        task_params=self.task_params, adoptable=self.adoptable,
                        stateless=self.stateless, started=self.started)


class ToolCalls:
    """A client's tool calls; see the module docstring. Can be shared between threads."""

    def __init__(self, connection: ToolCallsConnection) -> None:
        self._connection = connection
        # The connection's parts a call uses, fixed for its life (their contents are
        # read at each use).
        self._rounds = connection.rounds
        self._listings = connection.listings
        self._checks = connection.tool_checks
        self._timeouts = connection.timeouts
        self._extensions = connection.extensions
        # Tool names called but missing from a listing, reported once each: the listing
        # (its tools by name) and the names. Replaced whole.
        self._unlisted: Tuple[Any, Set[str]] = (None, set())
        # Compiled outputSchemas by tool name, with the Tool they belong to (or the
        # InvalidToolSchema that refused it).
        self._validators: Dict[str, Tuple[Any, Any]] = {}
        # The plans of plain calls (see the module docstring), by tool name, for the
        # agreement, the listing and the validate_output they were made under, and
        # whether that agreement is stateless: one tuple, replaced whole (a new dict
        # whenever any of the three changes), so a thread never files a plan where
        # another listing's calls would find it.
        self._plain: Tuple[Any, Any, bool, Dict[str, ToolPlan], bool] = (
            None, None, False, {}, False)

    # -- the call forms ------------------------------------------------------------------

    def result_of(self, name: str, arguments: Optional[Mapping[str, Any]],
                  options: Mapping[str, Any]) -> types.CallToolResult:
        """``Client.call_tool``: the call, blocking, to its result (a task's too)."""
        timeout, on_progress, meta, raise_on_error, task, ttl = call_options(
            options, TOOL_CALL_OPTIONS, "call_tool")
        params = call_tool_params(name, arguments, meta)
        if task is None and ttl is None:
            # The steady case: a plain call to a tool planned before. Its plan never
            # changes (no header repair) and it cannot become a task: send, parse, check.
            kept = self._kept()
            plan = kept[3].get(name)
            if plan is not None:
                data = self._rounds.round_trip("tools/call", params, timeout=timeout,
                                               on_progress=on_progress)
                if self._extensions.claim_results:
                    data = self._extensions.taken("tools/call", data)
                return tool_result(self._connection.name, name, data, plan,
                                   stateless=kept[4], raise_on_error=raise_on_error)
        call = self.prepare(name, params, timeout=timeout, on_progress=on_progress,
                            raise_on_error=raise_on_error, task=task, ttl=ttl)
        if call.task_params is not None:
            return self._connection.tasks.run_task(call)
        plan = call.plan
        data = self._rounds.round_trip("tools/call", call.params, timeout=timeout,
                                       on_progress=on_progress, headers=plan.request_headers,
                                       refresh=plan.refresh)
        if call.adoptable and self._extensions.tasks.claims_result("tools/call", data):
            return self._connection.tasks.follow_task(call, data)
        return self.result(call, data)

    def future_of(self, name: str, arguments: Optional[Mapping[str, Any]],
                  options: Mapping[str, Any]) -> Future[types.CallToolResult]:
        """``Client.call_tool_future``: the call sent, its future at once."""
        timeout, on_progress, meta, raise_on_error, task, ttl = call_options(
            options, TOOL_CALL_OPTIONS, "call_tool_future")
        call = self.prepare(name, call_tool_params(name, arguments, meta), timeout=timeout,
                            on_progress=on_progress, raise_on_error=raise_on_error,
                            task=task, ttl=ttl)
        if call.task_params is not None:
            return self._connection.tasks.task_future(call)
        plan = call.plan
        machine = self._rounds.start("tools/call", call.params, inputs=True,
                                     refresh=plan.refresh)
        timeouts = self._timeouts

        def send(session: RpcSession, round_params: Optional[Dict[str, Any]]) -> RequestFuture:
            return session.submit("tools/call", round_params, timeout=timeouts.of(timeout),
                                  on_progress=on_progress, headers=plan.headers)

        def convert(data: Any) -> Any:
            # The server may have made the call a task (2026-07-28): the tasks follow
            # it, on a thread of theirs, and the call's future settles as theirs does.
            if call.adoptable and self._extensions.tasks.claims_result("tools/call", data):
                return self._connection.tasks.follow_task_future(call, data)
            return self.result(call, data)

        return RoundsFuture(machine, send, convert, offload=plan.schema is not None).start()

    def prepare_task(self, name: str, arguments: Optional[Mapping[str, Any]],
                     options: Mapping[str, Any]) -> ToolCall:
        """``Client.start_tool_task``'s call, made ready to run as a task (the
        connection's tasks start it)."""
        timeout, _, meta, _, _, ttl = call_options(options, TASK_START_OPTIONS,
                                                   "start_tool_task")
        return self.prepare(name, call_tool_params(name, arguments, meta), timeout=timeout,
                            on_progress=None, raise_on_error=False, task=True, ttl=ttl)

    def result(self, call: ToolCall, data: Any) -> types.CallToolResult:
        """The result of plain ``call`` answered with ``data`` (or what a user's extension
        that claims ``data`` makes of it), parsed and checked."""
        if self._extensions.claim_results:
            data = self._extensions.taken("tools/call", data)
        return tool_result(self._connection.name, call.name, data, call.plan,
                           stateless=call.stateless, raise_on_error=call.raise_on_error)

    # -- making a call ready ---------------------------------------------------------------

    def prepare(self, name: str, params: Dict[str, Any], *, timeout: Timeout,
                on_progress: Optional[ProgressCallback], raise_on_error: bool,
                task: Optional[bool], ttl: Optional[float]) -> ToolCall:
        """A ``tools/call`` of tool ``name`` made ready (see :class:`ToolCall`), its
        ``params`` made already (:func:`call_tool_params`).

        Raises:
            ClientNotConnected: the client has not connected, or is closed.
            ValueError: a bad ``ttl``.
            CapabilityError: a task asked for that the server or tool cannot run.
            ToolChanged: the tool's change is blocked.
            InvalidToolSchema: the tool's outputSchema cannot check results.
        """
        plans: Optional[Dict[str, ToolPlan]] = None
        if task is None and ttl is None:
            kept = self._kept()
            plans = kept[3]
            plan = plans.get(name)
            if plan is not None:
                return ToolCall(name, params, plan, timeout=timeout, on_progress=on_progress,
                                raise_on_error=raise_on_error, task_params=None,
                                adoptable=False, stateless=kept[4])
        stateless = self._connection.stateless()
        plan = ToolPlan(self, name, params["arguments"], timeout)
        task_params, adoptable = self._task_of(name, task, ttl, timeout, stateless)
        started = None
        if task_params is not None:
            started = time.monotonic()
            if not stateless:  # the extension has nothing to ask with: the server decides
                params = dict(params, task=task_params)
        elif adoptable:
            started = time.monotonic()
        elif (plans is not None and len(plans) < _PLAIN_PLANS_MAX
              and plan.headers is None and plan.refresh is None):
            # A plain call that nothing can turn into a task, whose plan depends on the
            # tool's listed definition alone (no Mcp-Param headers to make per call).
            plans[name] = plan
        return ToolCall(name, params, plan, timeout=timeout, on_progress=on_progress,
                        raise_on_error=raise_on_error, task_params=task_params,
                        adoptable=adoptable, stateless=stateless, started=started)

    def planned(self, name: str) -> Optional[ToolPlan]:
        """The plan kept for a plain call to tool ``name`` (what :meth:`result_of` looks up
        first), or None when none is kept for the current agreement, listing and
        ``validate_output``.

        Raises:
            ClientNotConnected: the client has not connected.
        """
        return self._kept()[3].get(name)

    def _kept(self) -> Tuple[Any, Any, bool, Dict[str, ToolPlan], bool]:
        """The memo of plain plans for the current agreement, listing and
        ``validate_output`` (a new, empty one when any of them changed): ``(agreement,
        listing, validate_output, plans by tool name, stateless)``.

        Raises:
            ClientNotConnected: the client has not connected.
        """
        agreement = self._connection.agreement
        if agreement is None:
            agreement = self._connection.require_agreement()  # raises ClientNotConnected
        known = self._listings.known_tools
        validate = bool(self._checks.validate_output)
        memo = self._plain
        if memo[0] is agreement and memo[1] is known and memo[2] is validate:
            return memo
        memo = self._plain = (agreement, known, validate, {}, agreement.stateless)
        return memo

    def _task_of(self, name: str, task: Optional[bool], ttl: Optional[float],
                 timeout: Timeout, stateless: bool,
                 ) -> Tuple[Optional[Dict[str, Any]], bool]:
        """The ``task`` param of a call to tool ``name`` (None for a plain call), and
        whether the server may make a plain one a task.

        Asked for (``task`` or ``ttl``), a task needs the server's
        ``tasks.requests.tools.call`` and a tool whose ``execution.taskSupport`` is
        ``"required"`` or ``"optional"``; not asked for, a ``"required"`` tool gets one.
        In the 2026-07-28 era a task needs the tasks extension, and there is nothing to
        ask with: the server decides (``{}`` for "expect one"; a plain call to a server
        with the extension may still come back as a task, whatever ``task`` says).
        """
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, (int, float))
                                or not 0 < ttl < float("inf")):
            raise ValueError(f"ttl is a positive number of seconds, not {ttl!r}")
        wanted = task if task is not None else (True if ttl is not None else None)
        if wanted is False and not stateless:
            return None, False
        path, capability = tasks_capability(stateless)
        if not self._connection.offers(*path):
            if wanted:
                raise CapabilityError(
                    f"{self._connection.name} does not run tools as tasks ({capability} not "
                    f"declared); call {name!r} without task= or ttl=")
            return None, False
        if stateless:
            if wanted and ttl is not None:
                log.debug("the tasks extension has no ttl to ask for; not sent")
            return ({}, False) if wanted else (None, True)
        support = self._task_support(name, timeout)
        if wanted is None and support != "required":
            return None, False
        if wanted and support not in ("required", "optional"):
            raise CapabilityError(
                f"tool {excerpt(repr(name), 80)} of {self._connection.name} cannot run as a "
                f"task (its execution.taskSupport is "
                f"{excerpt(repr(support), 40) if support else 'absent'}); call it without "
                "task= or ttl=")
        params: Dict[str, Any] = {}
        if ttl is not None:
            params["ttl"] = max(1, round(ttl * 1000))
        return params, False

    def _task_support(self, name: str, timeout: Timeout) -> Optional[str]:
        """Tool ``name``'s ``execution.taskSupport`` (listing the tools first if this
        connection has not), or None when the tool is not listed or says nothing."""
        tool = self._tool(name)
        if tool is None and self._connection.has_capability("tools"):
            self._listings.tools(timeout)
            tool = self._tool(name)
        execution = tool.execution if tool is not None else None
        support: Optional[str] = execution.task_support if execution is not None else None
        return support

    # -- the tool's definition -------------------------------------------------------------

    def _tool(self, name: str) -> Optional[types.Tool]:
        known = self._listings.known_tools
        tool: Optional[types.Tool] = known.get(name) if known is not None else None
        return tool

    def relist(self) -> None:
        """List the tools again (a header mismatch: their annotations may have changed)."""
        self._listings.tools(DEFAULT)

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
        connection = self._connection
        validate = self._checks.validate_output
        known = self._listings.known_tools
        if validate and known is None and connection.has_capability("tools"):
            known = {tool.name: tool for tool in self._listings.tools(timeout)}
        self.refuse_blocked(name)
        if not validate or known is None:
            return None
        tool: Optional[types.Tool] = known.get(name)
        if tool is None and name not in self._listings.refused_tools:
            listing, unlisted = self._unlisted
            if listing is not known:  # a new listing: a tool missing from it is told again
                unlisted = set()
                self._unlisted = (known, unlisted)
            if name not in unlisted:
                unlisted.add(name)
                log.warning("tool %s is not in the tool list of %s: its results are not "
                            "checked against an outputSchema", excerpt(repr(name), 120),
                            connection.name)
        return tool

    def refuse_blocked(self, name: str) -> None:
        """Raise :class:`ToolChanged` when the client's pins block a change of tool
        ``name``."""
        change = self._checks.tool_pins.blocked(name)
        if change is not None:
            server = self._connection.name
            raise ToolChanged(
                f"tool {excerpt(repr(name), 120)} of {server} changed since it was "
                f"pinned ({excerpt('; '.join(change.differences), 600)}); it is blocked until "
                "the change is accepted: accept_tool_changes() on the client or the "
                "manager, or mcp-sync tools --changes --accept",
                tool=name, server=server, differences=change.differences)

    def headers(self, name: str, arguments: Mapping[str, Any]) -> Optional[Dict[str, str]]:
        """The Mcp-Param-* headers of a stateless-era HTTP call (from x-mcp-header)."""
        connection = self._connection
        if not connection.stateless() or not connection.carries_headers:
            return None
        from .._protocol.headers import param_headers

        tool = self._tool(name)
        if tool is None and connection.has_capability("tools"):
            self._listings.tools(DEFAULT)
            tool = self._tool(name)
        if tool is None:
            reason = self._listings.refused_tools.get(name)
            if reason is not None:
                raise ProtocolError(
                    f"refusing to call tool {excerpt(repr(name), 120)} of {connection.name}: "
                    f"its definition is invalid ({excerpt(reason, 200)}), so the client "
                    "cannot send its Mcp-Param headers"
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
                                                 self._connection.name)
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

    def mismatch_refreshable(self) -> bool:
        """A header mismatch can be repaired by listing the tools again: the stateless
        era, on a transport whose messages carry headers."""
        return self._connection.stateless() and self._connection.carries_headers


def tool_result(server: str, name: str, data: Any, plan: Optional[ToolPlan], *,
                stateless: bool, raise_on_error: bool = False) -> types.CallToolResult:
    """A ``tools/call`` result of tool ``name`` of ``server`` parsed, and checked against
    the tool's outputSchema (``plan``'s, compiled; None: no check).

    Runs on the caller's thread (``call_tool``), the handler pool (``call_tool_future``)
    or a task's thread, never on the dispatch thread: a server's schema decides how long
    checking takes (within the check's budget). In the stateless era
    ``structuredContent`` may be any JSON value, and is checked as it is.
    """
    validate = _RESULT_VALIDATORS.get(stateless) or _result_validator(stateless)
    try:
        result: types.CallToolResult = validate(data)
    except ValueError as exc:  # pydantic's ValidationError
        raise invalid("tools/call result", exc) from None
    tool = plan.tool if plan is not None else None
    if tool is not None and tool.output_schema and not result.is_error:
        result.declare_output()  # .data may then parse the text as JSON
        # 2026-07-28: structuredContent is any JSON value, and a null sent is one.
        sent = stateless and "structured_content" in result.model_fields_set
        structured = result.structured_content if sent else result.data
        if structured is None and not sent:
            raise ProtocolError(
                f"tool {name!r} of {server} declares an outputSchema but "
                "returned no structuredContent (nor JSON text)"
            )
        schema = plan.schema if plan is not None else None
        if schema is not None:
            schema.check(structured)
    if raise_on_error and result.is_error:
        raise ToolError(name, result)
    return result


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
            # Never planned again, and it may be kept for later calls (ToolCalls keeps a
            # plain call's): no hold on this call's arguments, however big.
            self._arguments = {}

    def request_headers(self) -> Optional[Dict[str, str]]:
        """The headers of the next send (a refresh may have changed them)."""
        return self.headers

    def _prepare(self) -> None:
        calls = self._calls
        self.tool = calls.declared_tool(self._name, self._timeout)
        self.schema = calls.output_schema(self.tool)
        self.headers = calls.headers(self._name, self._arguments)

    def _refresh(self) -> None:
        self._calls.relist()
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
