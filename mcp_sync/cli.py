"""The ``mcp-sync`` command line (also ``python -m mcp_sync``).

::

    mcp-sync demo                                        # the embedded demo server
    mcp-sync tools -- python server.py                   # a stdio server: a command after --
    mcp-sync tools add -- python server.py               # one tool whole, with its schemas
    mcp-sync --config mcp.json tools --changes           # what changed since pinned
    mcp-sync --config mcp.json tools --changes --accept  # ... and trust it
    mcp-sync call add --arg a=1 --arg b=2 -- python server.py
    mcp-sync --env API_KEY=... tools -- npx -y @scope/server-x
    mcp-sync --url http://127.0.0.1:8000/mcp resources   # a URL
    mcp-sync --config mcp.json prompts                   # the one enabled server of a file
    mcp-sync --config mcp.json --server files prompts    # a server of an mcpServers file
    mcp-sync --config mcp.json servers                   # the status of every server
    mcp-sync servers --no-connect                        # the servers found, not connected
    mcp-sync trust .mcp.json                             # let a project file start its servers
    mcp-sync call --task report --arg topic=tides -- python server.py   # a tool as a task
    mcp-sync --url http://127.0.0.1:8000/mcp call --task --detach report --arg topic=x
    mcp-sync --url http://127.0.0.1:8000/mcp task task-1 --wait       # its result, later
    mcp-sync --url http://127.0.0.1:8000/mcp tasks                    # the server's tasks

Commands: ``tools [NAME]``, ``call TOOL [--arg k=v ...] [--json-args '{...}'] [--task
[--ttl SECONDS] [--detach]]``, ``task ID [--wait]``, ``tasks``, ``resources``,
``read URI``, ``prompts``, ``prompt NAME [--arg k=v ...]``, ``ping``, ``info``,
``servers``, ``trust [FILE] [--yes | --list | --revoke]``, ``demo``. Options may come
before or after the command.

Tasks (MCP 2025-11-25, servers that run tools as tasks): ``call --task`` starts the tool
as a task and shows each new state of it on stderr, one line each
(``task-1 working: poll 1 of 3``; none with ``--progress never``), then prints the
result on stdout as ``call`` does (``--json``: ``{"task": ..., "result": ...}``, the
task's last state and the result). ``--ttl SECONDS`` asks the server to keep the task
that long. ``--detach`` prints the task's id (``--json``: ``{"task": ...}``, its state
as created) and ends at once, leaving the task to the server. ``task ID`` shows a task's
state (one ``tasks/get``; ``--json``: the task as the server sent it); ``task ID
--wait`` waits for its result and prints it as ``call --task`` does. ``tasks`` lists the
tasks the server keeps. ``--timeout`` bounds each request and, for ``call --task`` and
``task ID --wait``, the whole wait for a task's result: its polls and the reading of the
result together (a task that takes longer needs a longer ``--timeout``, or ``0``: none);
a wait that runs out ends with exit code 4, says so, and leaves the task running on an
HTTP server (``task ID --wait`` can ask again), while Ctrl-C during ``call --task`` cancels the task
(``tasks/cancel``) and Ctrl-C during ``task ID --wait`` only stops waiting.
``call --task`` of a tool that does not run as a task, or ``tasks`` against a server
that does not list tasks, is refused before anything is sent (exit code 3).

Each run is a new MCP session, so ``task ID`` and ``tasks`` reach a task started by an
earlier run only on a server that outlives the runs and keeps tasks across sessions: an
HTTP server (``--url``, or a ``--config`` entry with a URL). A stdio server is started
by each run and stopped at its end, with the tasks it ran: ``call --task --detach`` over
stdio prints an id no later run can use.

``servers`` shows every server of ``--config FILE`` or, without it, of the configuration
files found from the current directory (the project's ``.mcp.json``, ``.cursor/mcp.json``
and ``.vscode/mcp.json``, then the user's Claude Desktop, Cursor and VS Code files: see
:mod:`mcp_sync.config`): its transport, the file it comes from, its ``enabledTools`` and
``disabledTools`` filters and what it runs or reaches (the command and arguments, or the
URL; in ``--json`` and with ``--no-connect``), as written in the file: ``${VAR}``
references are not expanded, and the values of ``env`` and ``headers``, of arguments
after a flag named like a secret (``--api-key``, ``--token=``...) and of a URL's
credentials and query are shown as ``***``. It connects every enabled server and shows
its state, tool count (after the filters) and last error (exit code 3 when an enabled
server is not connected); ``--no-connect`` shows the configuration only, connecting
nothing. A user file that could not be used (or a VS Code entry that needs an input) is
named in a warning on stderr.

A project file (``.mcp.json``, ``.cursor/mcp.json``, ``.vscode/mcp.json``) is someone
else's writing: a repository you cloned can put any command in it. Its servers start
only once you have trusted the file: until then ``servers`` lists them with the state
``untrusted`` (``--json``: ``"state": "untrusted"``, and ``"trust"`` is ``"untrusted"``
or ``"changed"``), starts none of them, and says on stderr how to trust the file; and a
server of your own files with the same name is used instead of the project's (a
warning names both files). ``trust FILE`` shows every server the file would start, the
program and each of its arguments, its working folder and its URL exactly as written
(escaped for the terminal), and of its ``env`` and ``headers`` the names and the
``${VAR}`` variables of your environment their values read (text written in the file is
shown as ``***``), then asks ``[y/N]`` on the terminal; ``--yes`` trusts without asking
(for scripts: read the file first), and without a terminal and without ``--yes`` it
refuses (exit code 2). Without FILE it takes the project files found from the current
directory. The approval is kept in your configuration folder
(``$MCP_SYNC_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/mcp-sync`` or ``~/.config/mcp-sync``,
``%APPDATA%\\mcp-sync`` on Windows), keyed by the file's path and the SHA-256 of its
content: once the file changes in any way, its servers stop starting (``changed since
you trusted it``) until you trust it again. A trusted project file's server comes
before your own server of the same name, as in Claude Code (a warning says so).
``trust --list`` lists the trusted files and whether each changed since, and ``trust
--revoke FILE`` forgets an approval. A file given with ``--config`` needs no approval:
naming it is the choice. No other command reads the discovered files: each needs its
server named (``--config``, ``--url`` or a command).

``tools`` lists each tool with its arguments (``name*:type``; ``*``: required), hints and
description; ``tools NAME`` shows one tool whole: description, arguments, input and
output schema. On a terminal a table is cut to its width: a tool's arguments, when they
do not all fit, end with ``+N more``, and a description with ``...``; output piped to a
program or written to a file is never cut. A tool name the server did not list is
answered with the listed names closest to it (``did you mean 'add'?``), after the
server's own error when the call was sent.

``tools --changes`` compares the server's tools with the definitions pinned in the tool
cache (``Manager(tool_cache=...)``: ``--tool-cache DIR``, by default the user's cache
directory) and says, for each tool whose definition changed, what changed, in words
(escaped). A Manager blocks such a tool until the change is accepted; ``tools --changes
--accept`` accepts: it pins the tools listed now. The server's file in the cache is the
one a Manager uses for a ``--config`` entry, or for an entry with the same command and
arguments (or URL).

``--arg KEY=VALUE`` values are typed by the tool's input schema: for an argument of type
string the value is sent as written (``--arg message=123`` sends ``"123"``); integer,
number, boolean, null, array and object values are parsed as JSON (``--arg n=5``,
``--arg tags='["a","b"]'``), and a value that does not fit is a usage error naming the
argument and the type expected. When several types are allowed, JSON of a type other
than string is sent as that, anything else as the string. For an argument the schema
does not type, the value is sent as JSON when it parses as JSON, else as a string.
``--json-args`` gives all arguments as one JSON object; ``--arg`` wins over it. An
argument the input schema requires and neither gives is a usage error naming it, and
nothing is sent. Prompt
arguments (``prompt NAME --arg``) are strings, always.

The server: a command after ``--`` (run over stdio; a command given without the ``--``
is a usage error that shows the line with it), ``--url URL`` (Streamable HTTP,
falling back to legacy HTTP+SSE), or ``--config FILE`` (an ``mcpServers`` file) with
``--server NAME``, which may be left out when the file has a single enabled server; a
disabled entry is refused, not connected. A stdio server gets only the variables of this
environment that a program needs to run (``PATH``, ``HOME``, ``USER``, ``LOGNAME``,
``SHELL``, ``TERM``, ``LANG``, ``LC_ALL``, ``LC_CTYPE``, ``TZ``, ``TMPDIR``; on Windows
the system folders and ``PATH``), not API keys or tokens that happen to be set here:
give those with ``--env KEY=VALUE`` (repeatable; added to a ``--config`` entry's
``env``), or pass the whole environment with ``--inherit-env``. Servers are named after
what they say they are (``serverInfo.name``) in messages, or after the ``--config``
entry.

Output is human-readable by default and JSON with ``--json``. What the server sent is
shown with its terminal escapes, control, bidi and invisible characters escaped (``\\x1b``,
``\\u202e``); ``--json`` writes them as ``\\u`` escapes. While a tool reports progress, a
bar is drawn on stderr (``--progress auto|always|never``; ``auto`` draws on a terminal).
Ctrl-C cancels the call on the wire. PNG, JPEG, GIF, WebP and BMP images in results are
written to files in ``--save-images DIR`` (under names the client makes) instead of being
printed; other media are reported, never written. Piped into a program that stops
reading (``mcp-sync tools | head -1``), it stops quietly.

Exit codes: 0 ok, 1 the server refused the request (a JSON-RPC error such as an unknown
tool, resource or prompt; the server's message is printed), the tool result has
``isError``, or a task failed, was cancelled or is unknown to the server (``task ID``
without ``--wait`` also exits 1 when the task it shows is ``failed`` or ``cancelled``),
2 usage (bad arguments or configuration), 3 connection or protocol failure
(a refused handshake included), 4 timeout, 130 interrupted, 141 the output was
closed early (as a shell reports a program ended by SIGPIPE). ``trust`` exits 1 when
you answer no.

A stdio server is stopped with a 0.5 s grace for each step (stdin closed, SIGTERM,
SIGKILL), so a command that gave up on a call (``--timeout``, Ctrl-C) ends about a
second after it, even when the server is stuck in that call.

``mcp-sync`` answers no sampling or elicitation request. When a tool fails because it
asked for one with a request of its own mid-call over a 2026-07-28 connection, which has
no channel for it (the server says "no back-channel for server-initiated requests", or
"unavailable on 2026-07-28 connections"), the error adds that such a tool needs the
session era: ``--protocol-version 2025-11-25`` (in Python ``protocol_version="2025-11-25"``
with an ``elicitation_handler`` or ``sampling_handler``).
"""

from __future__ import annotations

import argparse
import base64
import binascii
import difflib
import json
import logging
import math
import os
import re
import shlex
import shutil
import sys
import time
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    List,
    Optional,
    Sequence,
    Set,
    Tuple,
    Union,
)

from ._protocol import json_type
from ._text import excerpt, name_safe, printable, printable_json
from .client import DEFAULT, Client
from .exceptions import (
    MCPError,
    RequestTimeout,
    ServerError,
    TaskError,
    UnsupportedProtocolVersion,
)

if TYPE_CHECKING:
    from . import types
    from .config import Config
    from .tasks import TaskHandle

__all__ = ["main"]

EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE, EXIT_FAILURE, EXIT_TIMEOUT = 0, 1, 2, 3, 4
EXIT_INTERRUPTED = 130
# The handshake's requests: an error answering one is a connection failure, not a refusal.
_HANDSHAKE_METHODS = ("initialize", "server/discover")
EXIT_OUTPUT_CLOSED = 141  # 128 + SIGPIPE, what a shell reports for `yes | head -1`

# The only media --save-images writes, and the extension the client gives each: raster
# image formats, which no program runs. Any other type (SVG, which carries scripts; HTML;
# audio; a made-up type naming .sh, .desktop or .bat) is reported and not written.
_SAVED_IMAGE_TYPES = {
    "image/png": "png", "image/jpeg": "jpg", "image/jpg": "jpg", "image/gif": "gif",
    "image/webp": "webp", "image/bmp": "bmp",
}
# Names Windows gives to devices, whatever the extension ("CON.png" is the console).
_RESERVED_NAMES = re.compile(r"^(?:con|prn|aux|nul|com[0-9]|lpt[0-9])$", re.IGNORECASE)


class UsageError(Exception):
    """Bad command-line arguments (exit code 2)."""


# -- output ------------------------------------------------------------------------------


def _out(text: str = "") -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _err(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def _json(value: Any) -> None:
    """JSON for scripts: control, bidi and invisible characters written as \\u escapes."""
    _out(printable_json(value, indent=2))


def _clean(text: Any, *, multiline: bool = False) -> str:
    """Server text made safe for a terminal: escape sequences, control, bidi and invisible
    characters shown escaped (``printable()``); one line unless ``multiline``."""
    value = str(text)
    if multiline:
        return printable("\n".join(line.replace("\t", "    ") for line in value.splitlines()))
    return printable(" ".join(value.split()))


def _first_line(text: Optional[str]) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


def _print_listing(args: argparse.Namespace, items: Sequence[Any], empty: str,
                   headers: Sequence[str], row: Callable[[Any], Sequence[Any]]) -> int:
    """What a listing command prints: with ``--json`` the items as the server sent them,
    else a table of one ``row(item)`` each (``empty`` when there are none)."""
    if args.json:
        _json([item.to_wire() for item in items])
    elif not items:
        _out(empty)
    else:
        _table(headers, [row(item) for item in items])
    return EXIT_OK


def _print_rendered(args: argparse.Namespace, wire: Any, lines: Sequence[str]) -> int:
    """What a result command prints: with ``--json`` the result as the server sent it,
    else its rendered ``lines`` (rendered either way: rendering saves the media)."""
    if args.json:
        _json(wire)
    else:
        for line in lines:
            _out(line)
    return EXIT_OK


_MIN_LAST_COLUMN = 20  # characters of a table's last column always shown on a terminal


def _terminal_width() -> Optional[int]:
    """The terminal's width when stdout is one, else ``None``: output piped to a program
    or written to a file is never cut."""
    try:
        if not os.isatty(sys.stdout.fileno()):
            return None
    except (AttributeError, OSError, ValueError):  # no file descriptor behind sys.stdout
        return None
    return shutil.get_terminal_size((120, 24)).columns


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Columns padded to their widest cell; on a terminal, the last one cut to its
    width."""
    cells = [[_clean(cell) for cell in row] for row in rows]
    widths = [max([len(h)] + [len(row[i]) for row in cells]) for i, h in enumerate(headers)]
    width = _terminal_width()
    lead = sum(widths[:-1]) + 2 * (len(headers) - 1)
    last = None if width is None else max(_MIN_LAST_COLUMN, width - lead - 1)

    def line(row: Sequence[str]) -> str:
        parts = [value.ljust(widths[i]) for i, value in enumerate(row[:-1])]
        tail = row[-1] if last is None or len(row[-1]) <= last else row[-1][:last - 3] + "..."
        return "  ".join([*parts, tail]).rstrip()

    _out(line(list(headers)))
    for row in cells:
        _out(line(row))


class _Progress:
    """Draws ``[#####-----] 5/10 message`` on stderr while a tool reports progress."""

    def __init__(self, mode: str) -> None:
        self.tty = sys.stderr.isatty()
        self.enabled = mode == "always" or (mode == "auto" and self.tty)
        self.drawn = False

    def __call__(self, progress: float, total: Optional[float], message: Optional[str]) -> None:
        if not self.enabled:
            return
        text = f" {_clean(message)}" if message else ""
        if total:
            filled = int(20 * min(max(progress / total, 0.0), 1.0))
            line = f"[{'#' * filled}{'-' * (20 - filled)}] {progress:g}/{total:g}{text}"
        else:
            line = f"[{progress:g}]{text}"
        if self.tty:
            width = shutil.get_terminal_size((80, 24)).columns
            sys.stderr.write("\r" + line[:width - 1] + "\x1b[K")
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()
        self.drawn = True

    def finish(self) -> None:
        if self.drawn and self.tty:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
        self.drawn = False


# -- media files -------------------------------------------------------------------------


def safe_filename(stem: str, mime_type: Optional[str]) -> str:
    """The name the client gives a saved image: ``[A-Za-z0-9._-]`` only, no leading dot, no
    path, never a Windows device name, and the extension of its (allowed) image type.

    Raises:
        ValueError: ``mime_type`` is not one of the image types --save-images writes.
    """
    extension = _SAVED_IMAGE_TYPES.get((mime_type or "").split(";")[0].strip().lower())
    if extension is None:
        raise ValueError("only PNG, JPEG, GIF, WebP and BMP images are written")
    clean = name_safe(stem).strip("._-")[:80] or "media"
    if _RESERVED_NAMES.match(clean.split(".")[0]):
        clean = f"_{clean}"
    return f"{clean}.{extension}"


class _MediaSaver:
    """Writes base64 media to files inside one directory, never outside it."""

    def __init__(self, directory: Optional[str]) -> None:
        self.directory = directory
        if directory is not None:
            try:
                os.makedirs(directory, exist_ok=True)
            except OSError as exc:
                raise UsageError(f"cannot create --save-images directory {directory!r}: "
                                 f"{exc.strerror or exc}") from exc
            self.root = os.path.realpath(directory)

    def save(self, data: str, mime_type: Optional[str], stem: str) -> str:
        """Write the decoded data; returns the path. Raises ValueError for a type that is
        not written (see :func:`safe_filename`) or bad base64."""
        assert self.directory is not None
        name = safe_filename(stem, mime_type)
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ValueError(f"not valid base64: {exc}") from None
        base, extension = os.path.splitext(name)
        for attempt in range(1000):
            candidate = name if attempt == 0 else f"{base}-{attempt}{extension}"
            path = os.path.join(self.root, candidate)
            if os.path.dirname(os.path.realpath(path)) != self.root:
                raise ValueError(f"refusing to write outside {self.directory!r}: {candidate!r}")
            try:
                descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                continue
            with os.fdopen(descriptor, "wb") as file:
                file.write(raw)
            return path
        raise ValueError(f"too many files named like {name!r} in {self.directory!r}")


def _size(data: str) -> int:
    return len(data) * 3 // 4 - data.count("=", -2)


def _render_blocks(blocks: Sequence[Any], saver: _MediaSaver, stem: str,
                   wire: List[Dict[str, Any]]) -> List[str]:
    """Human-readable lines for content blocks. Media are saved (and their ``data`` in
    ``wire`` replaced by ``file``) when a directory was given."""
    lines: List[str] = []
    media = 0
    for block, block_wire in zip(blocks, wire):
        kind = getattr(block, "type", None)
        if kind == "text":
            lines.append(_clean(block.text, multiline=True))
        elif kind in ("image", "audio"):
            media += 1
            lines.append(_media_line(kind, block.data, block.mime_type, saver,
                                     f"{stem}-{media}", block_wire))
        elif kind == "resource_link":
            lines.append(f"[resource link {_clean(block.name)}: {_clean(block.uri)}]")
        elif kind == "resource":
            lines.extend(_render_contents([block.resource], saver, stem,
                                          [block_wire.get("resource", {})]))
        else:
            lines.append(f"[{_clean(kind)} content]")
    return lines


def _media_line(kind: str, data: str, mime_type: Optional[str], saver: _MediaSaver,
                stem: str, block_wire: Dict[str, Any]) -> str:
    described = f"{_clean(mime_type or 'unknown type')}, {_size(data)} bytes"
    if saver.directory is None:
        return f"[{kind}: {described}; use --save-images DIR to save it]"
    try:
        path = saver.save(data, mime_type, stem)
    except ValueError as exc:
        return f"[{kind}: {described}; not saved: {exc}]"
    block_wire.pop("data", None)
    block_wire.pop("blob", None)
    block_wire["file"] = path
    return f"[{kind} saved to {path} ({described})]"


def _render_contents(contents: Sequence[Any], saver: _MediaSaver, stem: str,
                     wire: List[Dict[str, Any]]) -> List[str]:
    """Like :func:`_render_blocks`; saved media are named after ``stem`` (the client's
    choice, never the server's URIs), numbered when there are several contents."""
    lines: List[str] = []
    for index, (item, item_wire) in enumerate(zip(contents, wire), 1):
        text = getattr(item, "text", None)
        blob = getattr(item, "blob", None)
        mime = getattr(item, "mime_type", None)
        if text is not None:
            lines.append(_clean(text, multiline=True))
        elif blob is not None:
            name = stem if len(contents) == 1 else f"{stem}-{index}"
            if (mime or "").startswith(("image/", "audio/")):
                lines.append(_media_line((mime or "image/").split("/")[0], blob, mime, saver,
                                         name, item_wire))
            else:
                lines.append(f"[blob {_clean(item.uri)}: {_clean(mime or 'unknown type')}, "
                             f"{_size(blob)} bytes]")
        else:
            lines.append(f"[{_clean(item.uri)}: no contents]")
    return lines


# -- arguments ---------------------------------------------------------------------------


def _pairs(pairs: Optional[Sequence[str]], option: str = "--arg") -> List[Tuple[str, str]]:
    """``KEY=VALUE`` options split, checked before anything is started."""
    parsed = []
    for pair in pairs or ():
        key, equals, value = pair.partition("=")
        if not equals or not key:
            raise UsageError(f"{option} takes KEY=VALUE, got {excerpt(pair, 80)!r}")
        parsed.append((key, value))
    return parsed


def _json_args(json_args: Optional[str]) -> Dict[str, Any]:
    if not json_args:
        return {}
    try:
        arguments = json.loads(json_args)
    except ValueError as exc:
        raise UsageError(f"--json-args is not valid JSON: {exc}") from None
    if not isinstance(arguments, dict):
        raise UsageError("--json-args must be a JSON object")
    return arguments


_JSON_TYPES = ("string", "integer", "number", "boolean", "null", "array", "object")
_TYPE_WORDS = {"string": "a string", "integer": "an integer", "number": "a number",
               "boolean": "a boolean (true or false)", "null": "null",
               "array": "a JSON array", "object": "a JSON object"}


def _schema_types(schema: Any) -> Optional[List[str]]:
    """The JSON types a property's schema allows (``type``, a list of types, ``anyOf`` /
    ``oneOf`` of typed branches, ``enum``/``const`` values), or ``None`` when the schema
    does not say, or says it in a way this reading does not follow (``$ref``...)."""
    if not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    kinds: List[str] = []
    if isinstance(kind, str):
        kinds = [kind]
    elif isinstance(kind, list) and kind and all(isinstance(k, str) for k in kind):
        kinds = list(kind)
    elif kind is not None:
        return None
    elif isinstance(schema.get("anyOf") or schema.get("oneOf"), list):
        for branch in schema.get("anyOf") or schema["oneOf"]:
            branch_kinds = _schema_types(branch)
            if branch_kinds is None:
                return None
            kinds += branch_kinds
    elif "const" in schema:
        kinds = [json_type(schema["const"])]
    elif isinstance(schema.get("enum"), list) and schema["enum"]:
        kinds = [json_type(value) for value in schema["enum"]]
    if not kinds or any(k not in _JSON_TYPES for k in kinds):
        return None
    return list(dict.fromkeys(kinds))


def _property_schema(input_schema: Optional[Dict[str, Any]], key: str) -> Any:
    if not isinstance(input_schema, dict):
        return None
    properties = input_schema.get("properties")
    if isinstance(properties, dict) and key in properties:
        return properties[key]
    extra = input_schema.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # NaN, Infinity: no JSON type holds them


def _value(key: str, value: str, schema: Any, tool: str) -> Any:
    """An ``--arg`` value as the tool's input schema types it: a string stays a string;
    integer, number, boolean, null, array and object values are parsed as JSON. With
    several types allowed, JSON of a type other than string is taken as that, anything
    else as the string. Without a type for the argument, JSON when it parses, else the
    string.

    Raises:
        UsageError: the value fits none of the types the schema allows.
    """
    kinds = _schema_types(schema)
    if kinds is None:
        try:
            return json.loads(value)
        except ValueError:
            return value
    if kinds == ["string"]:
        return value
    try:
        parsed = json.loads(value, parse_constant=_refuse_constant)
    except ValueError:
        parsed = value
    else:
        kind = json_type(parsed)
        if kind == "number" and not math.isfinite(parsed):
            kind = "out of range"  # 1e999 parses as infinity, which JSON cannot carry
        if kind == "number" and "integer" in kinds and "number" not in kinds and (
                parsed.is_integer()):
            parsed, kind = int(parsed), "integer"  # JSON Schema: 2.0 is an integer
        if kind == "integer" and "integer" not in kinds:
            kind = "number"  # every integer is a number
        if kind in kinds and kind != "string":
            return parsed
    if "string" in kinds:
        return value
    expected = " or ".join(_TYPE_WORDS[k] for k in kinds)
    raise UsageError(f"--arg {excerpt(key, 80)}: tool {excerpt(tool, 80)!r} takes "
                     f"{expected} there, not {excerpt(value, 80)!r}")


def _tool_arguments(pairs: Sequence[Tuple[str, str]], json_args: Dict[str, Any],
                    input_schema: Optional[Dict[str, Any]], tool: str) -> Dict[str, Any]:
    """``--json-args``, then each ``--arg`` (which wins) typed by the input schema."""
    arguments = dict(json_args)
    for key, value in pairs:
        arguments[key] = _value(key, value, _property_schema(input_schema, key), tool)
    return arguments


def _missing_required(arguments: Dict[str, Any], input_schema: Optional[Dict[str, Any]],
                      tool: str) -> None:
    """Refuse a call that leaves out an argument the tool's input schema requires.

    Raises:
        UsageError: naming each missing argument and how to give it.
    """
    required = input_schema.get("required") if isinstance(input_schema, dict) else None
    if not isinstance(required, list):
        return
    missing = [name for name in required if isinstance(name, str) and name not in arguments]
    if not missing:
        return
    names = ", ".join(excerpt(name, 80) for name in missing)
    give = " ".join(f"--arg {excerpt(name, 80)}=VALUE" for name in missing)
    one = len(missing) == 1
    raise UsageError(f"tool {excerpt(tool, 80)!r} needs {'argument' if one else 'arguments'} "
                     f"{names} (required by its input schema): give {'it' if one else 'them'}"
                     f" with {give}")


def _tool_names(tools: Sequence[types.Tool]) -> str:
    names = ", ".join(excerpt(t.name, 60) for t in tools[:20])
    more = f" and {len(tools) - 20} more" if len(tools) > 20 else ""
    return f"tools: {names or 'none'}{more}"


def _did_you_mean(name: str, tools: Sequence[types.Tool]) -> str:
    """``; did you mean 'add'?`` for the listed names close to ``name``, else ``""``."""
    close = difflib.get_close_matches(name, [tool.name for tool in tools], n=3)
    if not close:
        return ""
    return "; did you mean " + " or ".join(repr(excerpt(match, 60)) for match in close) + "?"


def _unlisted_hint(name: str, tools: Sequence[types.Tool], server: str) -> str:
    """What to say when the server refuses a call to a tool it did not list."""
    close = _did_you_mean(name, tools)
    if close:
        return f"{server} lists no tool {excerpt(name, 80)!r}{close}"
    return f"{server} lists no tool {excerpt(name, 80)!r} ({_tool_names(tools)})"


def _timeout(args: argparse.Namespace) -> Any:
    if args.timeout is None:
        return DEFAULT
    return None if args.timeout <= 0 else args.timeout


def _target(args: argparse.Namespace) -> Tuple[Any, Dict[str, Any]]:
    """What to connect to and the keyword arguments for ``connect()``."""
    command: List[str] = args.command
    given = [flag for flag, present in (("--config", args.config), ("--url", args.url),
                                        ("a command after --", command)) if present]
    if len(given) > 1:
        raise UsageError(f"give one server: {' or '.join(given)}, not both")
    if args.server and not args.config:
        raise UsageError("--server needs --config FILE")
    # A stdio server's environment (connect() adds env to an entry's own).
    stdio = {key: value for key, value in (("env", dict(_pairs(args.env, "--env"))),
                                           ("inherit_env", args.inherit_env)) if value}
    flags = [flag for flag, key in (("--env", "env"), ("--inherit-env", "inherit_env"))
             if key in stdio]
    env_given = f"{' and '.join(flags)} {'is' if len(flags) == 1 else 'are'} for stdio " \
        "servers only" if flags else ""
    kwargs: Dict[str, Any] = {"timeout": _timeout(args)}
    if args.protocol_version:
        kwargs["protocol_version"] = args.protocol_version
    if args.config:
        from .config import load_config

        config = load_config(args.config)
        name = _config_server(config, args.config, args.server)
        resolved = config.resolve(name)
        if resolved.timeout is not None and args.timeout is None:
            kwargs["timeout"] = resolved.timeout
        kwargs["name"] = name
        if resolved.type != "stdio" and env_given:
            raise UsageError(f"server {name!r} of {args.config} is a URL: {env_given}")
        kwargs.update(stdio)
        return resolved.to_entry(), kwargs
    url = args.url
    if command and len(command) == 1 and command[0].startswith(("http://", "https://")):
        url = command[0]
    if url and env_given:
        raise UsageError(f"{env_given} (a command after --), not for a URL")
    if url:
        from .connect import http_url

        try:
            url = http_url(url)
        except ValueError as exc:
            raise UsageError(f"--url: {exc}") from None
        if args.transport:
            kwargs["transport"] = args.transport
        if args.header:
            kwargs["headers"] = dict(_header(h) for h in args.header)
        return url, kwargs
    if command:
        kwargs.update(stdio)
        return command, kwargs
    raise UsageError("give a server: --config FILE --server NAME, --url URL, or a command "
                     "after -- (e.g. mcp-sync tools -- python server.py)")


def _config_server(config: Config, source: str, name: Optional[str]) -> str:
    """The server of ``--config`` to use: ``--server NAME``, or the only enabled one."""
    enabled = config.enabled
    listed = ", ".join(enabled) or "none"
    if name is None:
        if len(enabled) == 1:
            return enabled[0]
        if not enabled:
            raise UsageError(f"{source} has no enabled server")
        raise UsageError(f"{source} has {len(enabled)} enabled servers; choose one with "
                         f"--server NAME ({listed})")
    if name not in config:
        raise UsageError(f"no server {name!r} in {source} (enabled servers: {listed})")
    if name not in enabled:
        raise UsageError(f"server {name!r} is disabled in {source}: enable it there to use "
                         "it")
    return name


def _header(text: str) -> Tuple[str, str]:
    name, colon, value = text.partition(":")
    if not colon or not name.strip():
        raise UsageError(f"--header takes 'Name: value', got {text!r}")
    return name.strip(), value.strip()


# Each step of stopping a stdio server when the command ends (stdin closed, SIGTERM,
# SIGKILL). A command that gave up on a call (a timeout, Ctrl-C) must not then wait out
# the library's 2 s grace per step for a server stuck in that call.
CLI_CLOSE_TIMEOUT = 0.5


def _connect(args: argparse.Namespace) -> Client:
    from .connect import connect

    target, kwargs = _target(args)
    kwargs.setdefault("close_timeout", CLI_CLOSE_TIMEOUT)
    return connect(target, **kwargs)


# -- commands ----------------------------------------------------------------------------


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
        from .config import load_config

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
    from ._toolcache import DEFAULT_MAX_AGE, ToolCache, cache_key, default_directory
    from ._toolpins import ToolPins
    from .connect import connect

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


# -- tasks (2025-11-25) ------------------------------------------------------------------


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
    from .transports.stdio import StdioTransport

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


def _cmd_resources(args: argparse.Namespace) -> int:
    with _connect(args) as client:
        resources = client.list_resources()
        templates = client.list_resource_templates()
    if args.json:
        _json({"resources": [r.to_wire() for r in resources],
               "resourceTemplates": [t.to_wire() for t in templates]})
        return EXIT_OK
    if not resources and not templates:
        _out("(no resources)")
        return EXIT_OK
    if resources:
        _table(["URI", "NAME", "MIME TYPE", "DESCRIPTION"],
               [[r.uri, r.name, r.mime_type or "", _first_line(r.description)]
                for r in resources])
    if templates:
        if resources:
            _out()
        _table(["URI TEMPLATE", "NAME", "MIME TYPE", "DESCRIPTION"],
               [[t.uri_template, t.name, t.mime_type or "", _first_line(t.description)]
                for t in templates])
    return EXIT_OK


def _cmd_read(args: argparse.Namespace) -> int:
    saver = _MediaSaver(args.save_images)
    with _connect(args) as client:
        result = client.read_resource(args.uri)
    wire = result.to_wire()
    # Saved media are named after the URI the user asked for, not the ones the server sent.
    stem = os.path.splitext(args.uri.rstrip("/").rsplit("/", 1)[-1])[0] or "resource"
    lines = _render_contents(result.contents, saver, stem, wire.get("contents", []))
    return _print_rendered(args, wire, lines)


def _cmd_prompts(args: argparse.Namespace) -> int:
    with _connect(args) as client:
        prompts = client.list_prompts()

    def row(prompt: types.Prompt) -> List[str]:
        names = [a.name + ("*" if a.required else "") for a in prompt.arguments or ()]
        return [prompt.name, " ".join(names), _first_line(prompt.description)]

    return _print_listing(args, prompts, "(no prompts)",
                          ["NAME", "ARGUMENTS (* required)", "DESCRIPTION"], row)


def _cmd_prompt(args: argparse.Namespace) -> int:
    arguments = dict(_pairs(args.arg))  # prompt arguments are strings, always
    saver = _MediaSaver(args.save_images)
    with _connect(args) as client:
        result = client.get_prompt(args.name, arguments)
    wire = result.to_wire()
    messages_wire = wire.get("messages", [])
    lines: List[str] = []
    if result.description:
        lines.append(_clean(result.description, multiline=True))
    for index, message in enumerate(result.messages):
        content_wire = messages_wire[index].get("content", {}) if index < len(
            messages_wire) else {}
        rendered = _render_blocks([message.content], saver, f"{args.name}-{index + 1}",
                                  [content_wire])
        lines.append(f"[{message.role}] " + "\n".join(rendered))
    return _print_rendered(args, wire, lines)


def _cmd_ping(args: argparse.Namespace) -> int:
    with _connect(args) as client:
        started = time.perf_counter()
        client.ping()
        elapsed = (time.perf_counter() - started) * 1000
    if args.json:
        _json({"ok": True, "milliseconds": round(elapsed, 3)})
    else:
        _out(f"ok ({elapsed:.1f} ms)")
    return EXIT_OK


def _cmd_info(args: argparse.Namespace) -> int:
    with _connect(args) as client:
        server = client.server_info.to_wire()
        capabilities = client.server_capabilities.to_wire()
        info = {
            "server": server,
            "protocolVersion": client.protocol_version,
            "era": client.era,
            "capabilities": capabilities,
            "instructions": client.instructions,
        }
    if args.json:
        _json(info)
        return EXIT_OK
    described = [_clean(server.get(key) or "") for key in ("name", "version")]
    if server.get("title"):
        described.append(f"({_clean(server['title'])})")
    _out(f"Server:       {' '.join(part for part in described if part)}")
    _out(f"Protocol:     {info['protocolVersion']} ({info['era']} era)")
    features = []
    for name, value in capabilities.items():
        flags = [key for key, flag in value.items() if flag is True] if isinstance(
            value, dict) else []
        features.append(name + (f" ({', '.join(flags)})" if flags else ""))
    _out(f"Capabilities: {_clean(', '.join(features)) or '(none)'}")
    if info["instructions"]:
        _out("Instructions:")
        for line in _clean(info["instructions"], multiline=True).splitlines():
            _out(f"  {line}")
    return EXIT_OK


# An argument after (or in) a flag named like one of these is a secret: never printed.
_SECRET_FLAG = re.compile(r"token|key|secret|passw|auth|credential|cookie", re.IGNORECASE)
_MASK = "***"


def _masked_args(arguments: Sequence[Any]) -> List[str]:
    """A config entry's ``args`` with the value of every secret-looking flag masked
    (``--api-key X``, ``--token=X``)."""
    masked: List[str] = []
    hide_next = False
    for argument in arguments:
        text = str(argument)
        if hide_next:
            masked.append(_MASK)
            hide_next = False
        elif text.startswith("-") and _SECRET_FLAG.search(text.partition("=")[0]):
            flag, equals, _ = text.partition("=")
            masked.append(f"{flag}={_MASK}" if equals else text)
            hide_next = not equals
        else:
            masked.append(text)
    return masked


def _masked_url(url: Any) -> str:
    """A URL with its user info and its query's values masked."""
    from urllib.parse import parse_qsl, urlsplit, urlunsplit

    try:
        parts = urlsplit(str(url))
        netloc = parts.netloc
        if "@" in netloc:
            netloc = f"{_MASK}@{netloc.rpartition('@')[2]}"
        query = "&".join(f"{key}={_MASK}" for key, _ in
                         parse_qsl(parts.query, keep_blank_values=True))
        return urlunsplit((parts.scheme, netloc, parts.path, query, ""))
    except ValueError:
        return _MASK


def _server_entry(config: Config, name: str) -> Dict[str, Any]:
    """What ``servers`` shows of an entry: as written (``${VAR}`` not expanded), with the
    values of ``env`` and ``headers``, secret-looking arguments and URL credentials
    masked."""
    raw = config.raw(name)
    shape = config.resolve(name, lenient=True)
    entry: Dict[str, Any] = {"name": name, "enabled": shape.enabled,
                             "transport": shape.type, "source": config.source_of(name)}
    if shape.type == "stdio":
        entry["command"] = str(raw.get("command", ""))
        entry["args"] = _masked_args(raw.get("args") or [])
        entry["env"] = {str(key): _MASK for key in raw.get("env") or {}}
    else:
        entry["url"] = _masked_url(raw.get("url", ""))
        entry["headers"] = {str(key): _MASK for key in raw.get("headers") or {}}
    entry["enabledTools"] = None if shape.enabled_tools is None else list(
        shape.enabled_tools)
    entry["disabledTools"] = list(shape.disabled_tools)
    return entry


def _target_cell(entry: Dict[str, Any]) -> str:
    if "command" in entry:
        text = " ".join([entry["command"], *entry["args"]])
        variables = " ".join(f"{key}={value}" for key, value in entry["env"].items())
        return f"{text} (env {variables})" if variables else text
    headers = " ".join(f"{key}: {value}" for key, value in entry["headers"].items())
    return f"{entry['url']} (headers {headers})" if headers else entry["url"]


def _filters_cell(entry: Dict[str, Any]) -> str:
    parts = []
    if entry["enabledTools"] is not None:
        parts.append(f"enabled: {','.join(entry['enabledTools']) or '(none)'}")
    if entry["disabledTools"]:
        parts.append(f"disabled: {','.join(entry['disabledTools'])}")
    return "; ".join(parts) or "-"


def _cmd_servers(args: argparse.Namespace) -> int:
    from .config import discover_config, load_config
    from .manager import Manager, ServerState

    if args.url or args.command or args.server or args.env or args.inherit_env:
        raise UsageError("servers takes only --config FILE (without it, the configuration "
                         "is discovered)")
    config = load_config(args.config) if args.config else discover_config()
    for path, why in config.skipped.items():  # the user's files that could not be used
        _err(f"mcp-sync: warning: left out {printable(path)}: {printable(why)}")
    _warn_untrusted(config)
    # in the order of precedence of their files (the project's first), trusted or not
    order = {location.path: index for index, location in enumerate(config.searched)}
    entries = sorted(
        [_server_entry(config, name) for name in config.names]
        + [{**_server_entry(config.untrusted, name), "state": "untrusted"}
           for name in config.untrusted.names],
        key=lambda entry: order.get(entry["source"], 0))
    for entry in entries:
        entry["trust"] = config.project_files.get(entry["source"])
    statuses: Dict[str, Any] = {}
    if not args.no_connect and config.names:
        with Manager.from_config(config, reconnect=False, timeout=_timeout(args)) as manager:
            statuses = manager.status()
    down = [s for s in statuses.values()
            if s.state not in (ServerState.CONNECTED, ServerState.DISABLED)]
    connected = not args.no_connect
    if args.json:
        _json([{**entry, **(statuses[entry["name"]].to_dict()
                            if connected and "state" not in entry else {})}
               for entry in entries])
        return EXIT_FAILURE if down else EXIT_OK
    rows = []
    for entry in entries:
        source, filters = entry["source"] or "-", _filters_cell(entry)
        untrusted = entry.get("state") == "untrusted"
        if not connected:
            state = "untrusted" if untrusted else "enabled" if entry["enabled"] else "disabled"
            rows.append([entry["name"], state, entry["transport"], source, filters,
                         _target_cell(entry)])
        elif untrusted:
            rows.append([entry["name"], "untrusted", entry["transport"], "-", "-", source,
                         filters, "not started: run mcp-sync trust on its file"])
        else:
            status = statuses[entry["name"]]
            server = " ".join(p for p in (status.server_name, status.server_version) if p)
            error = "" if status.error is None else _first_line(str(status.error))
            rows.append([status.name, status.state.value, status.transport,
                         str(status.tools) if status.state is ServerState.CONNECTED else "-",
                         server or "-", source, filters, error])
    if connected:  # what each server runs is in --no-connect's table and in --json
        _table(["NAME", "STATE", "TRANSPORT", "TOOLS", "SERVER", "SOURCE", "FILTERS",
                "ERROR"], rows)
    else:
        _table(["NAME", "STATE", "TRANSPORT", "SOURCE", "FILTERS", "TARGET"], rows)
    return EXIT_FAILURE if down else EXIT_OK


def _warn_untrusted(config: Config) -> None:
    """Say on stderr which project files start nothing until trusted, and which server
    of two files of the same name is used."""
    from .trust import TRUSTED, untrusted_reason

    for path, state in config.project_files.items():
        if state == TRUSTED:
            continue
        names = [name for name, source in config.untrusted.sources.items() if source == path]
        listed = f" ({printable(', '.join(names))})" if names else ""
        _err(f"mcp-sync: warning: {printable(path)} {untrusted_reason(state)}: its "
             f"servers{listed} are not started; read it, then run: "
             f"mcp-sync trust {printable(path)}")
    for name, why in config.shadowed.items():
        _err(f"mcp-sync: warning: server {printable(repr(name))}: {printable(why)}")


def _exact(text: Any) -> str:
    """Text of a file shown whole for a decision: every character that could act on a
    terminal escaped (``printable()``), newlines and tabs too, so that nothing it holds
    can draw a line of its own."""
    return printable(str(text)).replace("\n", "\\n").replace("\t", "\\t")


def _show_consent(path: str, state: str, sha256: str, entries: Sequence[Dict[str, Any]],
                  left_out: Sequence[str], show: Callable[[str], None]) -> None:
    """What ``trust`` shows before asking: every server the file would start, whole, through
    ``show`` (stdout; stderr when stdout is for JSON)."""
    import shlex

    from .trust import untrusted_reason

    show(f"{_exact(path)} {untrusted_reason(state)}.")
    show(f"sha256 {sha256}")
    show("Trusting it lets mcp-sync start these servers in this project (mcp-sync servers, "
         "Manager.from_config()), as you, with all your rights: starting a server runs its "
         "command on this machine.")
    for entry in entries:
        label = entry["transport"] + ("" if entry["enabled"] else
                                      ", disabled: not started while the file says so")
        show(f"  server {_exact(repr(entry['name']))} ({label})")
        if "command" in entry:
            show(f"    command: {_exact(shlex.join(entry['command']))}")
            for key, value in entry["env"].items():
                show(f"    env:     {_exact(key)}={_exact(value)}")
            if "cwd" in entry:
                show(f"    cwd:     {_exact(entry['cwd'])}")
        else:
            show(f"    url:     {_exact(entry['url'])}")
            for key, value in entry["headers"].items():
                show(f"    header:  {_exact(key)}: {_exact(value)}")
    for why in left_out:
        show(f"  left out: {_exact(why)}")
    show("Values written in the file are shown as ***; ${NAME} is a variable of your "
         "environment that the server would receive. Any change to the file needs a new "
         "approval.")


def _ask(question: str) -> bool:
    """A yes/no question on the terminal; anything but y or yes is no."""
    sys.stderr.write(question)
    sys.stderr.flush()
    answer = sys.stdin.readline(100)
    return answer.strip().lower() in ("y", "yes")


def _project_files_here() -> List[str]:
    """The project files found from the current directory, as discovery finds them."""
    from .config import config_locations

    return [location.path for location in config_locations()
            if location.scope == "project" and os.path.isfile(location.path)]


def _cmd_trust(args: argparse.Namespace) -> int:
    from .config import read_project_file
    from .trust import CHANGED, TRUSTED, TrustStore, current_digest

    if args.config or args.url or args.command or args.server or args.env or \
            args.inherit_env:
        raise UsageError("trust takes a project FILE only (a file you give with --config "
                         "needs no approval)")
    store = TrustStore.default()
    if args.list:
        if args.file or args.revoke or args.yes:
            raise UsageError("trust --list takes no FILE, --revoke or --yes")
        listed = []
        for approval in store.approvals():
            digest = current_digest(approval.path)
            state = "missing" if digest is None else TRUSTED if digest == approval.sha256 \
                else CHANGED
            listed.append({"path": approval.path, "sha256": approval.sha256, "state": state,
                           "trustedAt": time.strftime("%Y-%m-%dT%H:%M:%S%z",
                                                      time.localtime(approval.trusted_at))})
        if args.json:
            _json(listed)
        elif not listed:
            _out(f"No project file is trusted (the approvals are kept in {store.path}).")
        else:
            _table(["FILE", "STATE", "TRUSTED"],
                   [[item["path"], item["state"], item["trustedAt"]] for item in listed])
        return EXIT_OK
    paths = [os.path.abspath(args.file)] if args.file else _project_files_here()
    if not paths:
        raise UsageError("no project file found from here (.mcp.json, .cursor/mcp.json, "
                         ".vscode/mcp.json, up to the git root): give the FILE to trust")
    if args.revoke:
        revoked = [path for path in paths if store.revoke(path)]
        for path in paths:
            _err(f"mcp-sync: {'revoked the approval of' if path in revoked else 'no approval of'}"
                 f" {printable(path)}")
        if args.json:
            _json({"revoked": revoked})
        return EXIT_OK
    results, declined = [], False
    for path in paths:
        project = read_project_file(path)
        state = store.state(path, project.sha256)
        config = project.config
        entries = [config.describe(name) for name in config.names] if config else []
        result: Dict[str, Any] = {"path": path, "sha256": project.sha256, "state": state,
                                  "servers": entries}
        results.append(result)
        if state == TRUSTED:
            _err(f"mcp-sync: {printable(path)} is trusted already")
            result["trusted"] = True
            continue
        if not (args.json and args.yes):  # with --json, shown on stderr when asked
            _show_consent(path, state, project.sha256, entries, project.left_out,
                          _err if args.json else _out)
        if not args.yes:
            if not sys.stdin.isatty():
                raise UsageError(f"not trusting {path}: there is no terminal to ask on; read "
                                 "the file, then run mcp-sync trust --yes FILE")
            if not _ask(f"Trust {printable(path)} and let it start these servers? [y/N] "):
                _err(f"mcp-sync: {printable(path)} stays untrusted")
                result["trusted"] = False
                declined = True
                continue
        store.trust(path, project.sha256)
        result["trusted"] = True
        _err(f"mcp-sync: trusted {printable(path)}")
    if args.json:
        _json(results)
    return EXIT_TOOL_ERROR if declined else EXIT_OK


def _cmd_demo(args: argparse.Namespace) -> int:
    from .connect import connect

    if args.config or args.url or args.command or args.env or args.inherit_env:
        raise UsageError("demo runs the embedded server; it takes no --config, --url, --env, "
                         "--inherit-env or --")
    command = [sys.executable, "-m", "mcp_sync.demo_server"]
    progress = _Progress(args.progress if args.progress != "auto" or args.json else "always")
    with connect(command, timeout=_timeout(args), name="demo") as client:
        info = client.server_info
        tools = client.list_tools()
        if not args.json:
            _out(f"Connected to {_clean(info.name)} {_clean(info.version)} over stdio "
                 f"(protocol {client.protocol_version})")
            _out("Tools:")
            names = [_clean(tool.name) for tool in tools]
            width = max(len(name) for name in names) if names else 0
            for name, tool in zip(names, tools):
                _out(f"  {name.ljust(width)}  {_clean(_first_line(tool.description))}"
                     .rstrip())
            _out("Calling count(n=5) ...")
        try:
            result = client.call_tool("count", {"n": 5, "interval": 0.1}, on_progress=progress)
        finally:
            progress.finish()
    if args.json:
        _json({"server": info.to_wire(), "protocolVersion": client.protocol_version,
               "tools": [tool.to_wire() for tool in tools], "result": result.to_wire()})
    else:
        _out(f"Result: {_clean(result.text, multiline=True)}")
    return EXIT_TOOL_ERROR if result.is_error else EXIT_OK


_COMMANDS: Dict[str, Callable[[argparse.Namespace], int]] = {
    "tools": _cmd_tools, "call": _cmd_call, "resources": _cmd_resources, "read": _cmd_read,
    "prompts": _cmd_prompts, "prompt": _cmd_prompt, "ping": _cmd_ping, "info": _cmd_info,
    "servers": _cmd_servers, "demo": _cmd_demo, "task": _cmd_task, "tasks": _cmd_tasks,
    "trust": _cmd_trust,
}


# -- the parser --------------------------------------------------------------------------


def _add_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """The options every command takes; on subcommands they default to "not given" so
    that they do not override the same option given before the command."""

    def default(value: Any) -> Any:
        return value if top else argparse.SUPPRESS

    group = parser.add_argument_group("server (one of)")
    group.add_argument("--config", metavar="FILE", default=default(None),
                       help="an mcpServers JSON file")
    group.add_argument("--server", metavar="NAME", default=default(None),
                       help="the server of --config to use")
    group.add_argument("--url", default=default(None),
                       help="a server URL (Streamable HTTP, falling back to legacy SSE)")
    group.add_argument("--transport", choices=["http", "sse"], default=default(None),
                       help="force the HTTP transport for --url")
    group.add_argument("--header", action="append", metavar="'NAME: VALUE'",
                       default=default(None), help="an HTTP header for --url (repeatable)")
    group.add_argument("--env", action="append", metavar="KEY=VALUE", default=default(None),
                       help="an environment variable for a stdio server (repeatable)")
    group.add_argument("--inherit-env", action="store_true", default=default(False),
                       help="give a stdio server every variable of this environment, not "
                            "only PATH, HOME, the user, terminal, locale and temp folder")
    group.add_argument("--protocol-version", metavar="VERSION", default=default(None),
                       help="pin the protocol version (default: negotiate)")
    output = parser.add_argument_group("output")
    output.add_argument("--json", action="store_true", default=default(False),
                        help="JSON on stdout, for scripts")
    output.add_argument("--timeout", type=float, metavar="SECONDS", default=default(None),
                        help="per request; for call --task and task --wait, the whole wait "
                             "for the task's result (default: $MCP_SYNC_TIMEOUT or 30; 0: "
                             "none)")
    output.add_argument("--save-images", metavar="DIR", default=default(None),
                        help="write PNG, JPEG, GIF, WebP and BMP images in results to "
                             "files in DIR")
    output.add_argument("--progress", choices=["auto", "always", "never"],
                        default=default("auto"), help="progress bar on stderr (auto: on a tty)")
    output.add_argument("-v", "--verbose", action="count", default=default(0),
                        help="log to stderr (-vv: debug)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcp-sync",
        description="A blocking MCP client. Give a server as --config FILE --server NAME, "
                    "--url URL, or a command after --.",
        epilog="exit codes: 0 ok, 1 the server refused the request, the tool result has "
               "isError, or the task failed or was cancelled, 2 usage, 3 connection or "
               "protocol failure, 4 timeout, "
               "130 interrupted",
    )
    _add_options(parser, top=True)
    sub = parser.add_subparsers(dest="cmd", metavar="COMMAND", required=True)

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        child = sub.add_parser(name, help=help_text, description=help_text)
        _add_options(child, top=False)
        return child

    tools = command("tools", "list the server's tools with their arguments; with NAME, "
                             "show one tool whole (description, input and output schema)")
    tools.add_argument("name", nargs="?", metavar="NAME", help="the tool to show")
    tools.add_argument("--changes", action="store_true",
                       help="show what changed in each tool since its definition was pinned "
                            "in the tool cache (a Manager's tool_cache)")
    tools.add_argument("--accept", action="store_true",
                       help="with --changes: accept the changes, pinning the tools listed now")
    tools.add_argument("--tool-cache", metavar="DIR",
                       help="with --changes: the tool cache directory (default: the user's, "
                            "as Manager(tool_cache=True))")
    call = command("call", "call a tool")
    call.add_argument("tool")
    call.add_argument("--arg", action="append", metavar="KEY=VALUE",
                      help="an argument; VALUE is parsed as JSON when it can be (repeatable)")
    call.add_argument("--json-args", metavar="JSON", help="all arguments as one JSON object")
    call.add_argument("--task", action="store_true",
                      help="run the tool as a task (MCP 2025-11-25): show its status on "
                           "stderr line by line until the result, waiting at most "
                           "--timeout in all")
    call.add_argument("--ttl", type=float, metavar="SECONDS",
                      help="with --task: how long the server should keep the task")
    call.add_argument("--detach", action="store_true",
                      help="with --task: print the task's id and end at once")
    command("resources", "list the server's resources and resource templates")
    read = command("read", "read a resource")
    read.add_argument("uri")
    command("prompts", "list the server's prompts")
    prompt = command("prompt", "get a prompt")
    prompt.add_argument("name")
    prompt.add_argument("--arg", action="append", metavar="KEY=VALUE",
                        help="a prompt argument (a string; repeatable)")
    command("ping", "check that the server answers")
    command("info", "server info, protocol version and era, capabilities")
    servers = command("servers", "show every server of --config (or of the configuration "
                                 "files found: .mcp.json, Claude Desktop, Cursor, VS Code), "
                                 "where it comes from and its tool filters; connect each and "
                                 "show its status. The servers of a project file start only "
                                 "once you trust it (mcp-sync trust)")
    servers.add_argument("--no-connect", action="store_true",
                         help="show the configuration only; connect nothing")
    trust = command("trust", "trust a project file (.mcp.json, .cursor/mcp.json, "
                             ".vscode/mcp.json) after reading every command and URL it "
                             "would start: until then, mcp-sync servers and "
                             "Manager.from_config() start none of its servers; any change "
                             "to the file needs a new approval")
    trust.add_argument("file", nargs="?", metavar="FILE",
                       help="the project file (default: those found from here, up to the "
                            "git root)")
    trust.add_argument("--yes", action="store_true",
                       help="trust without asking (for scripts: read the file first)")
    trust.add_argument("--list", action="store_true",
                       help="list the trusted files and whether they changed since")
    trust.add_argument("--revoke", action="store_true",
                       help="forget the approval of FILE (or of the files found from here)")
    command("demo", "run the embedded demo server, list its tools, call one with progress")
    task = command("task", "show a task's status (a task started by call --task); "
                           "with --wait, wait for its result")
    task.add_argument("id", metavar="ID", help="the task's id")
    task.add_argument("--wait", action="store_true",
                      help="wait for the task to end and print its result (--timeout "
                           "bounds the whole wait)")
    command("tasks", "list the tasks the server keeps")
    return parser


def _error(args: Optional[argparse.Namespace], code: int, kind: str, message: str) -> int:
    # A hint about the request the server refused (a tool it did not list, say).
    hint: Optional[str] = getattr(args, "hint", None) if code == EXIT_TOOL_ERROR else None
    _err(f"mcp-sync: {printable(message)}")
    if hint:
        _err(f"mcp-sync: {printable(hint)}")
    if args is not None and getattr(args, "json", False):
        error = {"type": kind, "message": message, "exitCode": code}
        _json({"error": {**error, "hint": hint} if hint else error})
    return code


def _missing_dashes_hint(args: argparse.Namespace, argv: Sequence[str], extras: Sequence[str],
                         dashes: bool) -> str:
    """When words left over look like a stdio server's command given without ``--``
    (``mcp-sync tools python -m server``), the command line with it: argparse took
    ``python`` for the tool's name and stumbled on ``-m``."""
    if dashes or getattr(args, "url", None) or getattr(args, "config", None):
        return ""
    server = list(extras)
    # `tools NAME` took the program's name for a tool's when an option follows it or a
    # program of that name exists.
    taken = getattr(args, "name", None) if args.cmd == "tools" else None
    if taken is not None and (server[0].startswith("-") or shutil.which(taken)):
        server.insert(0, taken)
    if server[0].startswith("-"):
        return ""  # not a program: a misspelt option of ours, say
    start = argv.index(args.cmd) + 1 if args.cmd in argv else 0
    kept, pending = list(argv[:start]), list(server)
    for word in argv[start:]:
        if pending and word == pending[0]:
            pending.pop(0)
        else:
            kept.append(word)
    return ("\nmcp-sync: hint: a stdio server's command goes after --: "
            f"mcp-sync {shlex.join(kept)} -- {shlex.join(server)}")


# What a server says when one of its tools asked the client for input with a request in
# the middle of the call (the session era's way) on a 2026-07-28 connection, which has no
# channel for it: the official Python SDK's "Cannot send 'elicitation/create': this
# transport context has no back-channel for server-initiated requests", FastMCP's
# "... unavailable on 2026-07-28 connections".
_NO_BACK_CHANNEL = r"back-channel|server-initiated|2026-07-28"
_ASKS_THE_CLIENT = r"elicit|sampl|createMessage"


def _no_back_channel_hint(args: argparse.Namespace, exc: ServerError) -> str:
    """The way out, for a tool call the server failed so, unless the era was pinned to
    the session era already."""
    pinned = getattr(args, "protocol_version", None)
    if exc.method != "tools/call" or (pinned and pinned != "2026-07-28"):
        return ""
    said = exc.message[:2000]
    if not (re.search(_NO_BACK_CHANNEL, said, re.IGNORECASE)
            and re.search(_ASKS_THE_CLIENT, said, re.IGNORECASE)):
        return ""
    handler = "elicitation_handler" if re.search("elicit", said, re.IGNORECASE) else (
        "sampling_handler")
    return ("\n  this tool asks the client for input mid-call (a request from the server), "
            "which a 2026-07-28 connection cannot carry; a 2025-11-25 one can: "
            "--protocol-version 2025-11-25 here, protocol_version=\"2025-11-25\" plus "
            f"{handler}= in Python (mcp-sync itself answers no such request)")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; returns the exit code."""
    try:
        return _main(argv)
    except BrokenPipeError:
        return _output_closed()


def _output_closed() -> int:
    """Whoever read our output stopped (``mcp-sync tools | head -1``): end quietly, as Unix
    tools do, with the status a shell gives a program SIGPIPE ended. The client was closed
    on the way out (context managers); what is left in stdout's buffer is dropped, so that
    the interpreter's last flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError):  # no file descriptor behind sys.stdout: nothing to flush
        pass
    return EXIT_OUTPUT_CLOSED


def _main(argv: Optional[Sequence[str]]) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command: List[str] = []
    if "--" in argv:
        index = argv.index("--")
        argv, command = argv[:index], argv[index + 1:]
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")
    parser = _parser()
    args, extras = parser.parse_known_args(argv)
    if extras:
        parser.error(f"unrecognized arguments: {' '.join(extras)}"
                     + _missing_dashes_hint(args, argv, extras, bool(command)))
    args.command = command
    if args.verbose:
        logging.basicConfig(
            stream=sys.stderr, format="%(asctime)s %(threadName)s %(name)s: %(message)s")
        logging.getLogger("mcp_sync").setLevel(
            logging.DEBUG if args.verbose > 1 else logging.INFO)
    from .config import ConfigError

    try:
        return _COMMANDS[args.cmd](args)
    except KeyboardInterrupt:
        _err("\nmcp-sync: interrupted; the task goes on on the server" if args.cmd == "task"
             else "\nmcp-sync: interrupted; nothing more was trusted" if args.cmd == "trust"
             else "\nmcp-sync: interrupted; the call was cancelled")
        return EXIT_INTERRUPTED
    except (UsageError, ConfigError) as exc:
        parser.print_usage(sys.stderr)
        return _error(args, EXIT_USAGE, type(exc).__name__, f"error: {exc}")
    except RequestTimeout as exc:
        return _error(args, EXIT_TIMEOUT, type(exc).__name__, str(exc))
    except TaskError as exc:  # the task failed, was cancelled, or is unknown
        return _error(args, EXIT_TOOL_ERROR, type(exc).__name__, str(exc))
    except ServerError as exc:
        refused = exc.method not in _HANDSHAKE_METHODS and not isinstance(
            exc, UnsupportedProtocolVersion)
        return _error(args, EXIT_TOOL_ERROR if refused else EXIT_FAILURE, type(exc).__name__,
                      str(exc) + _no_back_channel_hint(args, exc))
    except MCPError as exc:
        return _error(args, EXIT_FAILURE, type(exc).__name__, str(exc))


if __name__ == "__main__":
    sys.exit(main())
