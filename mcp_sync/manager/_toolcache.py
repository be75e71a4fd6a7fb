"""The on-disk cache of tool listings a :class:`~mcp_sync.Manager` keeps when asked
(``Manager(tool_cache=True)`` or a directory).

Each server's last ``tools/list`` result is one file, ``<key>.json``, where the key is
the SHA-256 of the server's configuration entry as written (before ``${VAR}``
expansion): its type, command, arguments, working directory and URL, and the *names* of
its ``env`` variables and ``headers``, never their values. The file holds that key, the
time it was saved and the tools, nothing of the configuration. So a script that starts
again lists its servers' tools at once, while the servers connect.

The file also holds the server's *pins* (:mod:`mcp_sync.client._toolpins`): each tool's
definition as first seen, so that a tool changed between two runs is seen as changed.
The pins do not expire with ``max_age`` (an old listing is not listed, but what the user
trusted stays what it was); a file written before pins were kept has its tools as pins.

A cache file is untrusted input: another program (or a disk error) may have written it.
It is read only if it is a regular file of this user's that no other user may write
(group and others without write permission), at most :data:`MAX_FILE_BYTES`, JSON of
our format with the expected key, saved no later than now, with at most
:data:`MAX_TOOLS` tools, each of which validates as a :class:`types.Tool` (as a live
listing's tools do), and as many pins, each a JSON object; anything else is ignored with
a WARNING on ``mcp_sync.manager._toolcache``. Its tools are listed only when saved less than
``max_age`` seconds ago. Writes go to a temporary file in the same directory, made
readable by this user only (mode 0600), and replace the old file atomically
(``os.replace``); a write that fails is logged and changes nothing else.

No thread of its own: the manager's threads read and write it.
"""

from __future__ import annotations

import json
import logging
import math
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, NamedTuple, Optional, Union

from .._util.files import NotOwnFile, read_own_file, write_private
from .._util.text import excerpt

if TYPE_CHECKING:
    from .. import types

__all__ = ["DEFAULT_MAX_AGE", "MAX_FILE_BYTES", "MAX_TOOLS", "Saved", "ToolCache",
           "cache_key", "default_directory"]

log = logging.getLogger(__name__)

#: How long a cached listing is used: 7 days (``Manager(tool_cache_max_age=...)``).
DEFAULT_MAX_AGE = 7 * 24 * 3600.0
#: The largest cache file read or written.
MAX_FILE_BYTES = 16 * 1024 * 1024
#: The most tools one cache file may hold.
MAX_TOOLS = 10_000
_FORMAT = "mcp_sync.tools"
_VERSION = 1
# A file saved further than this in the future (another machine's clock) is not trusted.
_CLOCK_SKEW = 300.0

CacheOption = Union[bool, str, "os.PathLike[str]", None]


class Saved(NamedTuple):
    """What a cache file holds for a server."""

    #: The tools of its last listing; None when older than ``max_age``.
    tools: Optional[List[types.Tool]]
    #: The pinned definitions, ``{name: definition}`` (see :mod:`mcp_sync.client._toolpins`).
    pins: Dict[str, Dict[str, Any]]


def default_directory() -> Path:
    """Where the listings go by default: ``$XDG_CACHE_HOME/mcp_sync/tools`` (or
    ``~/.cache/mcp_sync/tools``) on Linux and other Unixes,
    ``~/Library/Caches/mcp_sync/tools`` on macOS,
    ``%LOCALAPPDATA%\\mcp_sync\\Cache\\tools`` on Windows."""
    if sys.platform == "win32":
        local = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(local) / "mcp_sync" / "Cache" / "tools"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "mcp_sync" / "tools"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "mcp_sync" / "tools"


def cache_key(entry: Mapping[str, Any]) -> str:
    """The key of a configuration entry as written: the SHA-256 (hex) of its type,
    command, arguments, working directory, URL and the names of its ``env`` variables and
    ``headers`` (their values never enter it)."""

    def names(value: Any) -> List[str]:
        return sorted(str(name) for name in value) if isinstance(value, Mapping) else []

    shape = {
        "type": entry.get("type", entry.get("transport")),
        "command": entry.get("command"),
        "args": entry.get("args"),
        "cwd": entry.get("cwd"),
        "url": entry.get("url"),
        "env": names(entry.get("env")),
        "headers": names(entry.get("headers")),
    }
    text = json.dumps(shape, sort_keys=True, separators=(",", ":"), default=str)
    import hashlib  # here: OpenSSL's hashlib costs a Manager without a cache ~3 MiB

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ToolCache:
    """A directory of cached tool listings, one file per key. Can be shared between
    threads and processes: each write replaces its file whole.

    Args:
        directory: where the files go (created, mode 0700, when first written).
        max_age: seconds after which a saved listing is no longer used.
    """

    def __init__(self, directory: Union[str, os.PathLike[str]], max_age: float) -> None:
        if not max_age > 0:
            raise ValueError("tool_cache_max_age must be a number of seconds > 0")
        self.directory = Path(directory)
        self.max_age = float(max_age)

    @classmethod
    def from_option(cls, option: CacheOption, max_age: float) -> Optional[ToolCache]:
        """The cache ``Manager(tool_cache=option)`` asks for: None for ``None`` or
        ``False``, the default directory for ``True``, else that directory."""
        if option is None or option is False:
            return None
        if option is True:
            return cls(default_directory(), max_age)
        if isinstance(option, (str, os.PathLike)):
            return cls(option, max_age)
        raise TypeError("tool_cache takes True, False, None or a directory path")

    def __repr__(self) -> str:
        return f"<ToolCache {self.directory}>"

    def path(self, key: str) -> Path:
        """The file of ``key``."""
        return self.directory / f"{key}.json"

    # -- reading -------------------------------------------------------------------------

    def load(self, key: str, server: str) -> Optional[List[types.Tool]]:
        """The tools saved under ``key``, or None: no file, expired, or a file that is not
        a valid one of ours (logged at WARNING; ``server`` names it in the message).
        Never raises for what the file holds."""
        saved = self.read(key, server)
        return saved.tools if saved is not None else None

    def read(self, key: str, server: str) -> Optional[Saved]:
        """The tools (None when expired, logged at INFO) and pins saved under ``key``, or
        None: no file, or a file that is not a valid one of ours (logged at WARNING;
        ``server`` names it in the message). Never raises for what the file holds."""
        path = self.path(key)
        try:
            data = self._read(path)
        except FileNotFoundError:
            return None
        except (OSError, _Refused) as exc:
            log.warning("ignoring the cached tools of %s in %s: %s", server, path, exc)
            return None
        try:
            saved = self._parse(data, key)
        except _Refused as exc:
            log.warning("ignoring the cached tools of %s in %s: %s", server, path, exc)
            return None
        if saved.tools is not None:
            log.debug("listed %d cached tools of %s from %s", len(saved.tools), server, path)
        return saved

    @staticmethod
    def _read(path: Path) -> bytes:
        try:
            return read_own_file(path, MAX_FILE_BYTES)
        except NotOwnFile as exc:
            raise _Refused(str(exc)) from None

    def _parse(self, data: bytes, key: str) -> Saved:
        from .. import types

        try:
            document = json.loads(data)
        except ValueError as exc:  # UnicodeDecodeError too
            raise _Refused(f"not JSON ({excerpt(exc, 120)})") from None
        if not isinstance(document, dict) or document.get("format") != _FORMAT:
            raise _Refused("not a tool cache file of mcp_sync")
        if document.get("version") != _VERSION:
            raise _Refused(f"format version {excerpt(repr(document.get('version')), 40)}, "
                           f"not {_VERSION}")
        if document.get("key") != key:
            raise _Refused("saved for another configuration")
        saved = document.get("saved")
        if isinstance(saved, bool) or not isinstance(saved, (int, float)) or (
                not math.isfinite(saved)):
            raise _Refused("no valid time of saving")
        age = time.time() - saved
        if age < -_CLOCK_SKEW:
            raise _Refused("saved in the future")
        items = document.get("tools")
        if not isinstance(items, list):
            raise _Refused("no list of tools")
        if len(items) > MAX_TOOLS:
            raise _Refused(f"{len(items)} tools, more than {MAX_TOOLS}")
        tools = []
        for index, item in enumerate(items):
            try:
                tools.append(types.Tool.model_validate(item))
            except ValueError as exc:  # pydantic's ValidationError
                raise _Refused(f"tool {index} is invalid: {excerpt(exc, 300)}") from None
        pins = document.get("pins")
        if pins is None:  # written before pins were kept: its tools were the ones offered
            from ..client._toolpins import definition

            pins = {tool.name: definition(tool) for tool in tools}
        elif not isinstance(pins, dict) or len(pins) > MAX_TOOLS or not all(
                isinstance(value, dict) for value in pins.values()):
            raise _Refused(f"the pins are not a JSON object of at most {MAX_TOOLS} objects")
        if age > self.max_age:
            log.info("the cached tools in %s are %.0f s old (more than %g s); not listing "
                     "them", self.path(key), age, self.max_age)
            return Saved(None, pins)
        return Saved(tools, pins)

    # -- writing -------------------------------------------------------------------------

    def store(self, key: str, server: str, tools: List[types.Tool],
              pins: Optional[Mapping[str, Any]] = None) -> None:
        """Save ``tools`` (and ``pins``, the pinned definitions, when given) under
        ``key``, replacing the file atomically (mode 0600). A listing past the bounds is
        not saved and the old file is removed; a write that fails is logged (WARNING).
        Never raises."""
        path = self.path(key)
        document: Dict[str, Any] = {"format": _FORMAT, "version": _VERSION, "key": key,
                                    "saved": time.time(),
                                    "tools": [tool.to_wire() for tool in tools]}
        if pins is not None:
            document["pins"] = dict(pins)
        data = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        if len(tools) > MAX_TOOLS or len(pins or ()) > MAX_TOOLS or len(data) > MAX_FILE_BYTES:
            log.info("not caching the tools of %s: %d tools, %d bytes, past the cache's "
                     "bounds", server, len(tools), len(data))
            self._remove(path)
            return
        try:
            write_private(path, data)
        except OSError as exc:
            log.warning("could not cache the tools of %s in %s: %s", server, path, exc)
            return
        log.debug("cached %d tools of %s in %s", len(tools), server, path)

    @staticmethod
    def _remove(path: Path) -> None:
        try:
            path.unlink(missing_ok=True)  # gone already is what we want
        except OSError as exc:
            log.warning("could not remove %s: %s", path, exc)


class _Refused(Exception):
    """A cache file that is not a valid one of ours (the message says why)."""

