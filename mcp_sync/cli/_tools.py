"""The commands about tools: tools (the list, one tool whole, what changed since pinned), call,
and tasks (call --task, task, tasks).
"""

from __future__ import annotations

import argparse
import math
import time
from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    List,
    Optional,
    Sequence,
    Set,
    Tuple,
    Union,
)

from .._util.text import excerpt, printable, printable_json
from ..client import DEFAULT, Client
from ..exceptions import (
    MCPError,
    RequestTimeout,
)
from ._arguments import (
    _config_server,
    _connect,
    _did_you_mean,
    _header,
    _json_args,
    _missing_required,
    _pairs,
    _schema_types,
    _target,
    _timeout,
    _tool_arguments,
    _tool_names,
    _unlisted_hint,
)
from ._output import (
    _MIN_LAST_COLUMN,
    CLI_CLOSE_TIMEOUT,
    EXIT_OK,
    EXIT_TIMEOUT,
    EXIT_TOOL_ERROR,
    UsageError,
    _clean,
    _err,
    _error,
    _first_line,
    _json,
    _MediaSaver,
    _out,
    _print_listing,
    _print_rendered,
    _Progress,
    _render_blocks,
    _terminal_width,
)

if TYPE_CHECKING:
    from .. import types
    from ..client._tasks.handles import TaskHandle


def _hints(tool: types.Tool) -> str:
    annotations = tool.annotations
    if annotations is None:
        return ""
    hints = [label for label, flag in (
        ("read-only", annotations.read_only_hint), ("idempotent", annotations.idempotent_hint),
        ("destructive", annotations.destructive_hint), ("open-world", annotations.open_world_hint),
    ) if flag]
    return ",".join(hints)


# Characters of the ARGUMENTS cell of a tool in the listing on a terminal too narrow to
# show them all (in a pipe or a file they are all shown).
_MIN_ARGUMENTS_SHOWN = 40


def _type_label(schema: Any) -> str:
    kinds = _schema_types(schema)
    return "|".join(kinds) if kinds else "any"


def _required(tool: types.Tool) -> Set[str]:
    required = tool.input_schema.get("required")
    return {name for name in required if isinstance(name, str)} if isinstance(
        required, list) else set()


def _tool_arguments_cell(tool: types.Tool, limit: Optional[int] = None) -> str:
    """``name*:type`` for each argument of the tool (``*``: required); past ``limit``
    characters, cut short with ``+N more``."""
    properties = tool.input_schema.get("properties")
    if not isinstance(properties, dict):
        return ""
    required = _required(tool)
    shown: List[str] = []
    # Room kept, until the last argument, for the "+N more" that may have to follow.
    marker = len(f" +{len(properties)} more")
    for index, (name, schema) in enumerate(properties.items()):
        mark = "*" if name in required else ""
        item = f"{name}{mark}:{_type_label(schema)}"
        room = 0 if index == len(properties) - 1 else marker
        if limit is not None and shown and len(" ".join([*shown, item])) + room > limit:
            shown.append(f"+{len(properties) - index} more")
            break
        shown.append(item)
    return " ".join(shown)


_TOOL_HEADERS = ["NAME", "ARGUMENTS (* required)", "HINTS", "DESCRIPTION"]


def _arguments_limit(tools: Sequence[types.Tool]) -> Optional[int]:
    """How long a tool's ARGUMENTS cell may be: unlimited in a pipe or a file; on a
    terminal, what its width leaves beside the names, the hints and the start of the
    description (at least ``_MIN_ARGUMENTS_SHOWN``)."""
    width = _terminal_width()
    if width is None:
        return None
    names = max([len(_TOOL_HEADERS[0])] + [len(_clean(tool.name)) for tool in tools])
    hints = max([len(_TOOL_HEADERS[2])] + [len(_hints(tool)) for tool in tools])
    room = width - names - hints - 3 * 2 - _MIN_LAST_COLUMN - 1
    return max(_MIN_ARGUMENTS_SHOWN, room)


def _cmd_tools(args: argparse.Namespace) -> int:
    if args.changes or args.accept or args.tool_cache:
        if args.name is not None:
            raise UsageError("--changes shows every tool's changes: give no NAME")
        return _tool_changes(args)
    if args.name is not None:
        return _show_tool(args)
    with _connect(args) as client:
        tools: List[types.Tool] = client.list_tools()
    limit = _arguments_limit(tools)
    return _print_listing(
        args, tools, "(no tools)", _TOOL_HEADERS,
        lambda t: [t.name, _tool_arguments_cell(t, limit), _hints(t),
                   _first_line(t.description)])


def _cache_entry(args: argparse.Namespace) -> Dict[str, Any]:
    """The configuration entry whose hash keys the server's tool-cache file, as a
    Manager makes it: a --config entry as written, or a command or URL as an entry with
    that command and arguments, or that URL (variables and header names count, their
    values never)."""
    if args.config:  # as written in the file, as a Manager of that file keys it
        from ..config import load_config

        config = load_config(args.config)
        return config.raw(_config_server(config, args.config, args.server))
    env_names = {key: "" for key, _ in _pairs(args.env, "--env")}
    command: List[str] = args.command
    url = args.url or (command[0] if len(command) == 1 and command[0].startswith(
        ("http://", "https://")) else None)
    if url:
        headers = {_header(h)[0]: "" for h in args.header or ()}
        return {"url": url, **({"headers": headers} if headers else {})}
    return {"command": command[0], "args": command[1:],
            **({"env": env_names} if env_names else {})}


def _tool_changes(args: argparse.Namespace) -> int:
    """``tools --changes [--accept]``: the server's tools compared with the definitions
    pinned in the tool cache (a Manager's, with ``tool_cache=``); ``--accept`` pins the
    tools listed now."""
    from ..client._connect import connect
    from ..client._toolpins import ToolPins
    from ..manager._toolcache import DEFAULT_MAX_AGE, ToolCache, cache_key, default_directory

    target, kwargs = _target(args)  # usage errors first
    cache = ToolCache(args.tool_cache or default_directory(), DEFAULT_MAX_AGE)
    key = cache_key(_cache_entry(args))
    saved = cache.read(key, args.server or "the server")
    pins = ToolPins(saved.pins if saved is not None else None)
    pinned = len(pins)
    kwargs.setdefault("close_timeout", CLI_CLOSE_TIMEOUT)
    with connect(target, tool_pins=pins, on_tool_change="block", **kwargs) as client:
        tools: List[types.Tool] = client.list_tools()
        changes = client.tool_changes()
        if args.accept:
            client.accept_tool_changes()
            tools = client.list_tools()
        server = client.name
    path = cache.path(key)
    if args.accept:
        cache.store(key, server, tools, pins.pinned())
    if args.json:
        _json({"server": server, "cache": str(path), "pinned": pinned,
               "changes": [{"tool": change.tool, "differences": list(change.differences),
                            "before": change.before, "after": change.after}
                           for change in changes],
               "accepted": [change.tool for change in changes] if args.accept else []})
        return EXIT_OK
    name = _clean(server)
    if not changes:
        if pinned:
            _out(f"{name}: no tool changed since it was pinned ({pinned} pinned in {path})")
        elif args.accept:
            _out(f"{name}: pinned the {len(tools)} tools listed now in {path}")
        else:
            _out(f"{name}: no pins saved in {path} yet; --accept pins the {len(tools)} "
                 "tools listed now")
        return EXIT_OK
    _out(f"{name}: {len(changes)} tool{'s' if len(changes) > 1 else ''} changed since "
         "pinned:")
    for change in changes:
        _out(f"  {_clean(change.tool)}")
        for difference in change.differences:  # exactly: line breaks shown as \n
            _out(f"    - {printable(difference.replace(chr(10), chr(92) + 'n'))}")
    if args.accept:
        _out(f"accepted: their new definitions are pinned in {path}")
    else:
        _out("blocked until accepted: read them, then run again with --accept to trust "
             "them")
    return EXIT_OK


def _show_tool(args: argparse.Namespace) -> int:
    """``tools NAME``: one tool whole, its schemas included."""
    with _connect(args) as client:
        tools: List[types.Tool] = client.list_tools()
        server = client.name
    tool = next((t for t in tools if t.name == args.name), None)
    if tool is None:
        raise UsageError(f"{server} has no tool {excerpt(args.name, 80)!r} "
                         f"({_tool_names(tools)}){_did_you_mean(args.name, tools)}")
    if args.json:
        _json(tool.to_wire())
        return EXIT_OK
    _out(f"Tool:          {_clean(tool.name)}")
    title = tool.title or (tool.annotations.title if tool.annotations else None)
    if title:
        _out(f"Title:         {_clean(title)}")
    if _hints(tool):
        _out(f"Hints:         {_hints(tool)}")
    if tool.description:
        _out("Description:")
        for line in _clean(tool.description, multiline=True).splitlines():
            _out(f"  {line}".rstrip())
    properties = tool.input_schema.get("properties")
    required = _required(tool)
    if isinstance(properties, dict) and properties:
        _out("Arguments:     (* required)")
        rows = [[f"{name}{'*' if name in required else ''}", _type_label(schema),
                 _first_line(schema.get("description")) if isinstance(schema, dict) else ""]
                for name, schema in properties.items()]
        cells = [[_clean(cell) for cell in row] for row in rows]
        widths = [max(len(row[i]) for row in cells) for i in range(2)]
        for name, kind, description in cells:
            _out(f"  {name.ljust(widths[0])}  {kind.ljust(widths[1])}  {description}".rstrip())
    else:
        _out("Arguments:     (none)")
    _out("Input schema:")
    for line in printable_json(tool.input_schema, indent=2).splitlines():
        _out(f"  {line}")
    if tool.output_schema is None:
        _out("Output schema: (none)")
    else:
        _out("Output schema:")
        for line in printable_json(tool.output_schema, indent=2).splitlines():
            _out(f"  {line}")
    return EXIT_OK


def _cmd_call(args: argparse.Namespace) -> int:
    pairs, json_args = _pairs(args.arg), _json_args(args.json_args)
    for flag, given in (("--detach", args.detach), ("--ttl", args.ttl is not None)):
        if given and not args.task:
            raise UsageError(f"{flag} needs --task")
    if args.ttl is not None and not (0 < args.ttl < math.inf):
        raise UsageError(f"--ttl takes a positive number of seconds, not {args.ttl:g}")
    saver = _MediaSaver(args.save_images)
    progress = _Progress(args.progress)
    with _connect(args) as client:
        # The listing types the --arg values and names the required arguments; the client
        # lists the tools before a call anyway (to check results against their output
        # schema), so it is no extra cost.
        tools: List[types.Tool] = (client.list_tools()
                                   if client.server_capabilities.tools is not None else [])
        tool = next((t for t in tools if t.name == args.tool), None)
        schema = tool.input_schema if tool else None
        arguments = _tool_arguments(pairs, json_args, schema, args.tool)
        _missing_required(arguments, schema, args.tool)
        if tool is None and tools:  # said if the server refuses the call
            args.hint = _unlisted_hint(args.tool, tools, client.name)
        if args.task:
            return _call_task(args, client, arguments, saver)
        try:
            result = client.call_tool(args.tool, arguments, on_progress=progress)
        finally:
            progress.finish()
    _print_result(args, result, saver, args.tool)
    if result.is_error:
        _err(f"mcp-sync: tool {args.tool!r} returned an error")
        if getattr(args, "hint", None):
            _err(f"mcp-sync: {args.hint}")
        return EXIT_TOOL_ERROR
    return EXIT_OK


class _StatusLines:
    """``task-1 working: poll 1 of 3`` on stderr for each new state of a task (none with
    ``--progress never``)."""

    def __init__(self, mode: str) -> None:
        self.enabled = mode != "never"

    def __call__(self, task: types.Task) -> None:
        if self.enabled:
            message = f": {_clean(task.status_message)}" if task.status_message else ""
            _err(f"{_clean(task.task_id)} {_clean(task.status)}{message}")


def _call_task(args: argparse.Namespace, client: Client, arguments: Dict[str, Any],
               saver: _MediaSaver) -> int:
    """``call --task``: start the tool as a task; with ``--detach`` print its id and end,
    else show its states until the result (``--timeout`` bounds the whole wait)."""
    handle = client.start_tool_task(args.tool, arguments, ttl=args.ttl)
    created = handle.last
    if args.detach:
        if args.json:
            _json({"task": created.to_wire() if created is not None else {
                "taskId": handle.id}})
        else:
            _out(_clean(handle.id))
        return EXIT_OK
    try:
        awaited = _await_task(args, client, handle)
    except KeyboardInterrupt:
        _cancel_quietly(handle)
        raise
    if isinstance(awaited, int):
        return awaited
    task, result = awaited
    return _task_result(args, handle.last or task, result, saver, args.tool)


def _await_task(args: argparse.Namespace, client: Client, handle: TaskHandle
                ) -> Union[int, Tuple[types.Task, types.CallToolResult]]:
    """Wait for a task to end and read its result, both within one ``--timeout``: the
    bound of the whole wait, however many polls it takes. Returns ``(task, result)``, or
    the exit code after saying that the wait ran out (and what became of the task)."""
    given = _timeout(args)
    seconds: Optional[float] = client.timeout if given is DEFAULT else given
    deadline = None if seconds is None else time.monotonic() + seconds
    try:
        task = handle.wait(seconds, on_status=_StatusLines(args.progress))
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            raise RequestTimeout("tasks/result", None, seconds, handle.id)
        result = handle.result(left)
    except RequestTimeout:
        assert seconds is not None
        return _error(args, EXIT_TIMEOUT, "RequestTimeout",
                      _task_timeout_message(args, client, handle.id, seconds))
    return task, result


def _task_timeout_message(args: argparse.Namespace, client: Client, task_id: str,
                          seconds: float) -> str:
    from ..transports.stdio import StdioTransport

    bound = (f"--timeout {seconds:g} s" if args.timeout is not None
             else f"{seconds:g} s (the default --timeout)")
    task = _clean(task_id)
    said = (f"task {task} did not end within {bound}: for a task, --timeout bounds the "
            "whole wait for its result (every poll of it), not one request")
    if isinstance(client.transport, StdioTransport):
        return (f"{said}. The stdio server stops with this run, and the task with it: "
                "give a longer --timeout (0: none)")
    return (f"{said}. The task goes on on the server: `mcp-sync task {task} --wait` waits "
            "again (give a longer --timeout, or 0: none)")


def _cancel_quietly(handle: Any) -> None:
    """Ctrl-C while ``call --task`` waits: cancel the task, as ``call`` cancels its call."""
    try:
        handle.cancel(timeout=2.0)
    except MCPError:
        pass  # not cancellable (no tasks.cancel, ended, gone): the interruption stands


def _task_result(args: argparse.Namespace, task: types.Task, result: types.CallToolResult,
                 saver: _MediaSaver, stem: str) -> int:
    """Print a task's result as ``call`` prints one (``--json``: the task and the result
    in one object); exit code 1 for a result with ``isError``."""
    if args.json:
        wire = result.to_wire()
        _render_blocks(result.content, saver, stem, wire.get("content", []))  # saves media
        _json({"task": task.to_wire(), "result": wire})
    else:
        _print_result(args, result, saver, stem)
    if result.is_error:
        _err(f"mcp-sync: task {_clean(task.task_id)} returned an error")
        return EXIT_TOOL_ERROR
    return EXIT_OK


def _ttl_text(ttl: Optional[int]) -> str:
    return "unlimited" if ttl is None else f"{ttl / 1000:g} s"


def _cmd_task(args: argparse.Namespace) -> int:
    saver = _MediaSaver(args.save_images)
    with _connect(args) as client:
        handle = client.task(args.id)
        if args.wait:
            awaited = _await_task(args, client, handle)
            if isinstance(awaited, int):
                return awaited
            task, result = awaited
            return _task_result(args, handle.last or task, result, saver, "task")
        task = handle.status()
    if args.json:
        _json(task.to_wire())
    else:
        rows = [("Task", task.task_id), ("Status", task.status),
                ("Message", task.status_message), ("Created", task.created_at),
                ("Updated", task.last_updated_at), ("Kept for", _ttl_text(task.ttl)),
                ("Poll every", None if task.poll_interval is None
                 else f"{task.poll_interval} ms")]
        for label, value in rows:
            if value is not None:
                _out(f"{label + ':':<12}{_clean(value)}")
    return EXIT_TOOL_ERROR if task.status in ("failed", "cancelled") else EXIT_OK


def _cmd_tasks(args: argparse.Namespace) -> int:
    with _connect(args) as client:
        tasks = client.list_tasks()
    return _print_listing(
        args, tasks, "(no tasks)", ["ID", "STATUS", "UPDATED", "MESSAGE"],
        lambda t: [t.task_id, t.status, t.last_updated_at, t.status_message or ""])


def _print_result(args: argparse.Namespace, result: types.CallToolResult,
                  saver: _MediaSaver, stem: str) -> None:
    wire = result.to_wire()
    lines = _render_blocks(result.content, saver, stem, wire.get("content", []))
    if not args.json and result.structured_content is not None and not any(
            getattr(block, "type", None) == "text" for block in result.content):
        lines.append(printable_json(result.structured_content, indent=2))
    _print_rendered(args, wire, lines)
