"""What the command line writes: exit codes, text and JSON on stdout, errors on stderr, tables
that fit the terminal, progress, and the media files --save-images writes.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import os
import re
import shutil
import sys
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    List,
    Optional,
    Sequence,
)

from .._util.text import name_safe, printable, printable_json

if TYPE_CHECKING:
    pass

__all__ = [
    "CLI_CLOSE_TIMEOUT",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_OUTPUT_CLOSED",
    "UsageError",
    "safe_filename",
]


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


# Each step of stopping a stdio server when the command ends (stdin closed, SIGTERM,
# SIGKILL). A command that gave up on a call (a timeout, Ctrl-C) must not then wait out
# the library's 2 s grace per step for a server stuck in that call.
CLI_CLOSE_TIMEOUT = 0.5


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
