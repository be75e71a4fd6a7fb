"""The client's settings, in groups, and the options of one tool call, each declared once.

A :class:`~mcp_sync.Client` takes every setting as a keyword of its constructor and keeps
it in one of four groups: :class:`Timeouts`, :class:`Limits`, :class:`Handlers` and
:class:`ToolChecks`. Its connection holds them and every helper reads the group it
needs at each use, so an application may change a setting after the client is made
(``client.timeout = 5``: the client's attribute is the group's field).

:class:`ToolCallOptions` are the options of one ``tools/call``: the keywords of
``Client.call_tool``, ``Client.call_tool_future`` and ``Manager.call_tool``
(:class:`TaskStartOptions`, a part of them, those of ``start_tool_task``), declared here
once and read by :func:`call_options`. This module imports no other part of the
client but its tool pins.
"""

from __future__ import annotations

import os
from typing import (
    Any,
    Callable,
    Dict,
    FrozenSet,
    Generic,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    TypedDict,
    TypeVar,
    Union,
    overload,
)

from .._protocol import DEFAULT, Timeout
from .._rpc.core import ProgressCallback
from ._toolpins import ToolChangePolicy, ToolPins, check_policy

__all__ = [
    "DEFAULT_HANDLER_TASKS",
    "DEFAULT_MAX_LIST_BYTES",
    "DEFAULT_MAX_LIST_ITEMS",
    "ELICITATION_MODES",
    "SAMPLING_FEATURES",
    "ConnectionSetting",
    "Handlers",
    "Limits",
    "TaskStartOptions",
    "Timeouts",
    "ToolCallOptions",
    "ToolChecks",
    "call_options",
    "checked_options",
    "default_timeout_from_env",
]

V = TypeVar("V")

#: The most items one ``list_*`` call collects, all pages together (``max_list_items``).
DEFAULT_MAX_LIST_ITEMS = 10_000
#: The most bytes of items one ``list_*`` call collects, all pages together
#: (``max_list_bytes``), measured as compact JSON.
DEFAULT_MAX_LIST_BYTES = 64 * 1024 * 1024
#: The most tasks the client runs for the server at once (``max_handler_tasks``).
DEFAULT_HANDLER_TASKS = 64

#: The elicitation modes a handler may support (``elicitation_modes=``).
ELICITATION_MODES = ("form", "url")
#: The optional sampling features a handler may support (``sampling_features=``).
SAMPLING_FEATURES = ("tools", "context")


def default_timeout_from_env(default: Optional[float] = 30.0) -> Optional[float]:
    """The default request timeout: ``MCP_SYNC_TIMEOUT`` seconds if set (0 = none)."""
    raw = os.environ.get("MCP_SYNC_TIMEOUT")
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"MCP_SYNC_TIMEOUT must be a number of seconds, got {raw!r}") from None
    return None if value <= 0 else value


# The groups are plain classes with slots, not dataclasses: a dataclass builds its
# methods from source when the module is imported, which every ``import mcp_sync`` would
# pay for.


class Timeouts:
    """How long the client waits (``Client(timeout=..., ...)``; see there).

    ``timeout`` bounds each request given none (``None``: no bound); ``close_timeout``
    each step of closing; ``probe_timeout`` the era probe of a connect; progress pushes a
    request's deadline out with ``reset_timeout_on_progress``, never past
    ``max_total_timeout``.
    """

    __slots__ = ("close_timeout", "max_total_timeout", "probe_timeout",
                 "reset_timeout_on_progress", "timeout")

    def __init__(self, *, timeout: Optional[float], close_timeout: float,
                 probe_timeout: float = 1.0, reset_timeout_on_progress: bool = True,
                 max_total_timeout: Optional[float] = 600.0) -> None:
        self.timeout = timeout
        self.close_timeout = close_timeout
        self.probe_timeout = probe_timeout
        self.reset_timeout_on_progress = reset_timeout_on_progress
        self.max_total_timeout = max_total_timeout

    def of(self, timeout: Timeout) -> Optional[float]:
        """``timeout``, or the client's ``timeout`` for ``DEFAULT`` (read now)."""
        return self.timeout if timeout is DEFAULT else timeout


class Limits:
    """The bounds on what a server can make the client hold or repeat (see ``Client``).

    Raises:
        ValueError: ``max_handler_tasks`` is less than 1.
    """

    __slots__ = ("max_handler_tasks", "max_input_rounds", "max_list_bytes", "max_list_items",
                 "max_pages")

    def __init__(self, *, max_pages: int = 1000,
                 max_list_items: Optional[int] = DEFAULT_MAX_LIST_ITEMS,
                 max_list_bytes: Optional[int] = DEFAULT_MAX_LIST_BYTES,
                 max_input_rounds: int = 10,
                 max_handler_tasks: int = DEFAULT_HANDLER_TASKS) -> None:
        if max_handler_tasks < 1:
            raise ValueError(f"max_handler_tasks must be at least 1, not {max_handler_tasks!r}")
        self.max_pages = max_pages
        self.max_list_items = max_list_items
        self.max_list_bytes = max_list_bytes
        self.max_input_rounds = max_input_rounds
        self.max_handler_tasks = max_handler_tasks


class Handlers:
    """The user's code the client calls: the handlers that answer the server's requests
    (what they support declared with them), the callbacks its notifications reach, and
    ``on_connection_lost``. ``task_methods`` are the methods whose task-augmented
    requests run as tasks (``handler_tasks``: made by :meth:`of`)."""

    __slots__ = ("elicitation_handler", "elicitation_modes", "logging_handler",
                 "notification_handler", "on_connection_lost", "on_elicitation_complete",
                 "roots", "sampling_features", "sampling_handler", "task_methods")

    def __init__(
        self, *,
        sampling_handler: Optional[Callable[[Any], Any]] = None,
        sampling_features: Tuple[str, ...] = (),
        elicitation_handler: Optional[Callable[[Any], Any]] = None,
        elicitation_modes: Tuple[str, ...] = ("form",),
        on_elicitation_complete: Optional[Callable[[Any], None]] = None,
        roots: Union[Sequence[Any], Callable[[], Sequence[Any]], None] = None,
        logging_handler: Optional[Callable[[Any], None]] = None,
        notification_handler: Optional[Callable[[str, Optional[Dict[str, Any]]], None]] = None,
        on_connection_lost: Optional[Callable[[Any], None]] = None,
        task_methods: Tuple[str, ...] = (),
    ) -> None:
        self.sampling_handler = sampling_handler
        self.sampling_features = sampling_features
        self.elicitation_handler = elicitation_handler
        self.elicitation_modes = elicitation_modes
        self.on_elicitation_complete = on_elicitation_complete
        self.roots = roots
        self.logging_handler = logging_handler
        self.notification_handler = notification_handler
        self.on_connection_lost = on_connection_lost
        self.task_methods = task_methods

    @classmethod
    def of(cls, *, sampling_features: Sequence[str], elicitation_modes: Sequence[str],
           handler_tasks: Union[bool, Sequence[str]], **handlers: Any) -> Handlers:
        """The group of the constructor's keywords, checked.

        Raises:
            ValueError, TypeError: an unknown feature or mode, or ``handler_tasks``
                naming a handler that is not set.
        """
        return cls(
            sampling_features=choices("sampling_features", sampling_features,
                                      SAMPLING_FEATURES, allow_empty=True),
            elicitation_modes=choices("elicitation_modes", elicitation_modes,
                                      ELICITATION_MODES, allow_empty=False),
            task_methods=handler_task_methods(handler_tasks, handlers.get("sampling_handler"),
                                              handlers.get("elicitation_handler")),
            **handlers)


class ToolChecks:
    """What the client checks of the tools it calls: results against their
    ``outputSchema`` (``validate_output``), and definitions against ``tool_pins`` with
    the ``on_tool_change`` policy (checked: ``ValueError`` for an unknown one)."""

    __slots__ = ("on_tool_change", "tool_pins", "validate_output")

    def __init__(self, *, validate_output: bool = True,
                 on_tool_change: ToolChangePolicy = "block",
                 tool_pins: Optional[ToolPins] = None) -> None:
        self.validate_output = validate_output
        self.on_tool_change = check_policy(on_tool_change)
        self.tool_pins = tool_pins if tool_pins is not None else ToolPins()

    def review(self, tools: List[Any], server: str) -> List[Any]:
        """The tools of a listing of ``server`` that may be offered: each checked against
        its pin, a changed one as ``on_tool_change`` decides (``ToolPins.review``)."""
        return self.tool_pins.review(tools, server, self.on_tool_change)


class TaskStartOptions(TypedDict, total=False):
    """The options of ``start_tool_task`` (``Client``'s and ``Manager``'s), each left
    out takes its default: ``ttl``, the seconds the server should keep the task and its
    result (a positive number; ``None``: the server's choice); ``timeout``, the bound
    of the ``tools/call`` (``DEFAULT``: the client's ``timeout``; ``None``: none);
    ``meta``, the call's ``_meta``."""

    ttl: Optional[float]
    timeout: Timeout
    meta: Optional[Mapping[str, Any]]


class ToolCallOptions(TaskStartOptions, total=False):
    """The options of one tool call: the keywords of ``Client.call_tool``,
    ``Client.call_tool_future`` and ``Manager.call_tool``, each left out taking its
    default. A dict, so options made once serve many calls
    (``client.call_tool(name, arguments, **options)``):

    * ``timeout``: seconds for the call (``DEFAULT``, the default: the client's
      ``timeout``; ``None``: no bound); a task call's wait from one status to the next.
    * ``on_progress``: ``on_progress(progress, total, message)`` for each progress
      notification (progress also pushes the deadline out, never past
      ``max_total_timeout``).
    * ``meta``: the call's ``_meta`` (a mapping).
    * ``raise_on_error``: raise :class:`~mcp_sync.ToolError` for a result with
      ``isError: true`` instead of returning it (default False).
    * ``task``: ``True`` asks to run the tool as a task, ``False`` never asks, ``None``
      (the default) lets the tool decide (MCP 2025-11-25).
    * ``ttl``: seconds the server should keep the task (asks for one, as ``task=True``).
    """

    on_progress: Optional[ProgressCallback]
    raise_on_error: bool
    task: Optional[bool]


#: The keywords :class:`ToolCallOptions` and :class:`TaskStartOptions` declare.
TOOL_CALL_OPTIONS: FrozenSet[str] = ToolCallOptions.__optional_keys__
TASK_START_OPTIONS: FrozenSet[str] = TaskStartOptions.__optional_keys__


#: A tool call's options when none is given, in :func:`call_options`' order.
_NO_OPTIONS: Tuple[Timeout, None, None, bool, None, None] = (DEFAULT, None, None, False, None,
                                                             None)


def checked_options(options: Mapping[str, Any], allowed: FrozenSet[str],
                    method: str) -> Mapping[str, Any]:
    """``options``, each a keyword that ``method`` takes (``allowed``).

    Raises:
        TypeError: a keyword that ``method`` does not take, as Python says it of a
            function.
    """
    if not options.keys() <= allowed:
        unknown = sorted(key for key in options if key not in allowed)
        raise TypeError(f"{method}() got an unexpected keyword argument {unknown[0]!r}")
    return options


def call_options(options: Mapping[str, Any], allowed: FrozenSet[str], method: str,
                 ) -> Tuple[Timeout, Optional[ProgressCallback], Optional[Mapping[str, Any]],
                            bool, Optional[bool], Optional[float]]:
    """A tool call's ``options`` (:class:`ToolCallOptions`), each defaulted, in one
    tuple: ``(timeout, on_progress, meta, raise_on_error, task, ttl)``. Every call reads
    them: no options is the common case, and costs one test.

    Raises:
        TypeError: a keyword that ``method`` does not take (``allowed``), as Python says
            it of a function.
    """
    if not options:
        return _NO_OPTIONS
    get = checked_options(options, allowed, method).get
    return (get("timeout", DEFAULT), get("on_progress"), get("meta"),
            get("raise_on_error", False), get("task"), get("ttl"))


def choices(keyword: str, given: Sequence[str], known: Sequence[str], *,
            allow_empty: bool) -> Tuple[str, ...]:
    """Validate a keyword naming some of ``known`` (``elicitation_modes=``...)."""
    if isinstance(given, str):
        given = (given,)
    chosen = tuple(dict.fromkeys(given))
    unknown = [value for value in chosen if value not in known]
    if unknown or not (chosen or allow_empty):
        raise ValueError(f"{keyword} must name some of {', '.join(known)}; got {given!r}")
    return chosen


def handler_task_methods(given: Union[bool, Sequence[str]], sampling: Any,
                         elicitation: Any) -> Tuple[str, ...]:
    """The methods ``handler_tasks`` lets run as tasks (the session era's names)."""
    handlers = {"sampling": ("sampling/createMessage", sampling),
                "elicitation": ("elicitation/create", elicitation)}
    if given is False:
        return ()
    if given is True:
        chosen = [kind for kind, (_, handler) in handlers.items() if handler is not None]
        if not chosen:
            raise ValueError("handler_tasks=True needs a sampling_handler or an "
                             "elicitation_handler to run as tasks")
    elif isinstance(given, str) or not isinstance(given, Sequence):
        raise TypeError("handler_tasks must be True, False or a sequence of 'sampling' "
                        f"and/or 'elicitation', not {given!r}")
    else:
        chosen = list(dict.fromkeys(given))
        for kind in chosen:
            if kind not in handlers:
                raise ValueError(f"handler_tasks: {kind!r} is not 'sampling' or "
                                 "'elicitation'")
            if handlers[kind][1] is None:
                raise ValueError(f"handler_tasks names {kind!r}, but there is no "
                                 f"{kind}_handler")
    return tuple(handlers[kind][0] for kind in chosen)


class ConnectionSetting(Generic[V]):
    """A public attribute of the client that is a setting of its connection: a field of
    one of its settings groups (``group``), or of the connection itself. Read and
    written there (``client._connection``), where the client's helpers read it at each
    use."""

    def __init__(self, group: Optional[str] = None) -> None:
        self._group = group
        self._name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, client: None, owner: type) -> ConnectionSetting[V]: ...

    @overload
    def __get__(self, client: object, owner: type) -> V: ...

    def __get__(self, client: Optional[object], owner: type) -> Any:
        if client is None:
            return self
        return getattr(self._holder(client), self._name)

    def __set__(self, client: object, value: V) -> None:
        setattr(self._holder(client), self._name, value)

    def _holder(self, client: object) -> Any:
        connection = client._connection  # type: ignore[attr-defined]
        return connection if self._group is None else getattr(connection, self._group)
