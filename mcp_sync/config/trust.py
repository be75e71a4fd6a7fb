"""The user's approvals of project configuration files: which ``.mcp.json``,
``.cursor/mcp.json`` and ``.vscode/mcp.json`` may start their servers.

A project file is someone else's writing: a repository you cloned, an archive you
unpacked. Starting one of its servers runs its command on your machine, as you, so
:func:`~mcp_sync.config.discover_config` (and ``Manager.from_config()`` and
``mcp-sync servers`` without a file) start the servers of a project file only once you
have trusted it (``mcp-sync trust``, or :meth:`TrustStore.trust`). A file you name
yourself (``--config FILE``, ``Manager.from_config("mcp.json")``) needs no approval:
naming it is the choice.

An approval is kept per file, keyed by the file's absolute path with symbolic links
resolved (:func:`file_key`) and the SHA-256 of its bytes: a file that changes in any way
(a server added, an argument edited, a space) is not trusted any more until it is
approved again (its state is ``"changed"``), and the same content at another path is
another file.

The approvals live in one JSON file, ``trusted-projects.json``, in the user's own
configuration folder (:func:`config_directory`): ``$MCP_SYNC_CONFIG_DIR`` when set,
else ``%APPDATA%\\mcp-sync`` on Windows, else ``$XDG_CONFIG_HOME/mcp-sync`` or
``~/.config/mcp-sync`` (macOS included, like most command-line tools). It is written
readable by its owner only (mode 0600, folder 0700) and replaced whole at each change;
read back, it is used only when it is a regular file of this user's (no symbolic link
followed), at most :data:`MAX_FILE_BYTES`, of this module's format: anything else counts
as no approval at all (logged at WARNING), so a broken store never trusts a file.

No thread of its own. A :class:`TrustStore` can be shared between threads: a lock
serialises its read-modify-write cycles. Two processes approving at the same instant may
lose one of the two approvals (the last write wins); a lost approval only means asking
again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Union

from .._util.files import NotOwnFile, read_own_file, write_private
from .._util.text import excerpt
from ._format import MAX_FILE_BYTES as MAX_CONFIG_BYTES
from ._format import ConfigError

__all__ = [
    "CHANGED", "MAX_FILE_BYTES", "TRUSTED", "UNTRUSTED", "Approval", "TrustStore",
    "config_directory", "current_digest", "file_digest", "file_key", "untrusted_reason",
]

log = logging.getLogger(__name__)

#: A project file approved as it is now.
TRUSTED = "trusted"
#: A project file never approved.
UNTRUSTED = "untrusted"
#: A project file approved once, whose content has changed since.
CHANGED = "changed"

#: The largest store read or written (about 20,000 approvals).
MAX_FILE_BYTES = 4 * 1024 * 1024
#: The store's file name, in :func:`config_directory`.
STORE_NAME = "trusted-projects.json"
_FORMAT = "mcp_sync.trusted-projects"
_VERSION = 1
_SHA256 = re.compile(r"[0-9a-f]{64}")

PathLike = Union[str, "os.PathLike[str]"]


def config_directory(environ: Optional[Mapping[str, str]] = None,
                     platform: Optional[str] = None) -> str:
    """The user's configuration folder for mcp_sync: ``$MCP_SYNC_CONFIG_DIR`` when set
    (tests and sandboxes point it elsewhere), else ``%APPDATA%\\mcp-sync`` on Windows,
    else ``$XDG_CONFIG_HOME/mcp-sync`` when that is an absolute path, else
    ``~/.config/mcp-sync``. Reads ``environ`` (default ``os.environ``) only.
    """
    env = os.environ if environ is None else environ
    system = sys.platform if platform is None else platform
    chosen = env.get("MCP_SYNC_CONFIG_DIR", "")
    if chosen:
        return os.path.abspath(os.path.expanduser(chosen))
    if system == "win32":
        appdata = env.get("APPDATA") or os.path.join(_home(env, system), "AppData", "Roaming")
        return os.path.join(appdata, "mcp-sync")
    xdg = env.get("XDG_CONFIG_HOME", "")
    base = xdg if os.path.isabs(xdg) else os.path.join(_home(env, system), ".config")
    return os.path.join(base, "mcp-sync")


def _home(environ: Mapping[str, str], platform: str) -> str:
    for key in ("USERPROFILE", "HOME") if platform == "win32" else ("HOME",):
        if environ.get(key):
            return environ[key]
    return os.path.expanduser("~")


def untrusted_reason(state: str) -> str:
    """Why a project file in ``state`` does not start its servers, to follow "it":
    ``"is not trusted"`` or ``"changed since you trusted it"``."""
    return "changed since you trusted it" if state == CHANGED else "is not trusted"


def file_key(path: PathLike) -> str:
    """The key of a project file's approval: its absolute path with symbolic links
    resolved (and, on Windows, case folded)."""
    return os.path.normcase(os.path.realpath(os.fspath(path)))


def file_digest(data: bytes) -> str:
    """The SHA-256 (hex) of a file's bytes, as an approval records it."""
    return hashlib.sha256(data).hexdigest()


def current_digest(path: PathLike) -> Optional[str]:
    """:func:`file_digest` of the file at ``path`` now, or None when it cannot be read
    (missing, a folder, unreadable). A file past the configuration's size bound hashes
    to a digest no approval holds (discovery does not read it either)."""
    if not os.path.isfile(path):  # a pipe or a device is never opened
        return None
    try:
        with open(path, "rb") as file:
            return file_digest(file.read(MAX_CONFIG_BYTES + 1))
    except OSError:
        return None


@dataclass(frozen=True)
class Approval:
    """One trusted project file."""

    #: :func:`file_key` of the file.
    path: str
    #: :func:`file_digest` of its bytes when it was trusted.
    sha256: str
    #: When it was trusted (seconds since the epoch).
    trusted_at: float


class TrustStore:
    """The user's approvals of project files, kept in ``directory/trusted-projects.json``.

    Args:
        directory: the folder of the store (default: :func:`config_directory` of
            ``os.environ``); created, mode 0700, when the first approval is written.

    Thread-safe. Reads the file at every call, so processes see each other's changes.
    """

    def __init__(self, directory: Optional[PathLike] = None) -> None:
        self.directory = config_directory() if directory is None else os.fspath(directory)
        #: The store's file.
        self.path = os.path.join(self.directory, STORE_NAME)
        self._lock = threading.Lock()  # serialises each read-modify-write of the file

    @classmethod
    def default(cls, environ: Optional[Mapping[str, str]] = None,
                platform: Optional[str] = None) -> TrustStore:
        """The store in :func:`config_directory` of ``environ``."""
        return cls(config_directory(environ, platform))

    def __repr__(self) -> str:
        return f"<TrustStore {self.path}>"

    # -- reading -------------------------------------------------------------------------

    def state(self, path: PathLike, sha256: str) -> str:
        """:data:`TRUSTED` when the file at ``path`` was approved with this digest,
        :data:`CHANGED` when it was approved with another, else :data:`UNTRUSTED`
        (a store that cannot be used approves nothing; logged at WARNING). Never
        raises for what the store holds."""
        approval = self._load(strict=False).get(file_key(path))
        if approval is None:
            return UNTRUSTED
        return TRUSTED if approval.sha256 == sha256 else CHANGED

    def approvals(self) -> List[Approval]:
        """Every approval, oldest first (an unusable store: none, logged at WARNING)."""
        return sorted(self._load(strict=False).values(),
                      key=lambda approval: approval.trusted_at)

    def _load(self, *, strict: bool) -> Dict[str, Approval]:
        """The approvals by :func:`file_key`.

        Raises:
            ConfigError: (``strict`` only) the store is not a regular file of this user's,
                is too large or is not of this format; without ``strict`` that is logged
                (WARNING) and no approval is returned.
        """
        try:
            data = read_own_file(self.path, MAX_FILE_BYTES)
        except FileNotFoundError:
            return {}
        except (OSError, NotOwnFile) as exc:
            return self._unusable(f"cannot be used: {exc}", strict)
        try:
            document = json.loads(data)
        except (ValueError, RecursionError) as exc:  # UnicodeDecodeError, too deep
            return self._unusable(f"is not JSON ({excerpt(exc, 120)})", strict)
        if not isinstance(document, dict) or document.get("format") != _FORMAT:
            return self._unusable("is not a store of trusted project files", strict)
        if document.get("version") != _VERSION:
            return self._unusable(
                f"has format version {excerpt(repr(document.get('version')), 40)}, not "
                f"{_VERSION}", strict)
        files = document.get("files")
        if not isinstance(files, dict):
            return self._unusable("has no object of files", strict)
        approvals = {}
        for key, value in files.items():
            approval = _approval(key, value)
            if approval is None:
                log.warning("ignoring an invalid entry of %s: %s", self.path,
                            excerpt(repr(key), 200))
                continue
            approvals[key] = approval
        return approvals

    def _unusable(self, why: str, strict: bool) -> Dict[str, Approval]:
        message = f"the store of trusted project files {self.path} {why}"
        if strict:
            raise ConfigError(f"{message}; move it away to start a new one")
        log.warning("%s: no project file counts as trusted", message)
        return {}

    # -- writing -------------------------------------------------------------------------

    def trust(self, path: PathLike, sha256: str) -> Approval:
        """Approve the file at ``path`` as it is when its bytes hash to ``sha256``
        (:func:`file_digest` of the bytes that were shown to the user, so that what is
        approved is what was seen), replacing an older approval of it.

        Raises:
            ValueError: ``sha256`` is not a SHA-256 in hex.
            ConfigError: the store cannot be read or written.
        """
        if not isinstance(sha256, str) or not _SHA256.fullmatch(sha256):
            raise ValueError("sha256 must be 64 lowercase hex digits (file_digest())")
        approval = Approval(file_key(path), sha256, time.time())
        with self._lock:
            approvals = self._load(strict=True)
            approvals[approval.path] = approval
            self._write(approvals)
        log.info("trusted %s (sha256 %s)", approval.path, sha256)
        return approval

    def revoke(self, path: PathLike) -> bool:
        """Forget the approval of the file at ``path`` (it need not exist any more):
        True when there was one.

        Raises:
            ConfigError: the store cannot be read or written.
        """
        key = file_key(path)
        with self._lock:
            approvals = self._load(strict=True)
            # or the path as listed, for a file whose folder has moved since
            if approvals.pop(key, None) is None and approvals.pop(
                    os.fspath(path), None) is None:
                return False
            self._write(approvals)
        log.info("revoked the approval of %s", key)
        return True

    def _write(self, approvals: Mapping[str, Approval]) -> None:
        document = {"format": _FORMAT, "version": _VERSION, "files": {
            key: {"sha256": approval.sha256, "trusted_at": approval.trusted_at}
            for key, approval in approvals.items()}}
        data = json.dumps(document, indent=2, sort_keys=True).encode("utf-8")
        if len(data) > MAX_FILE_BYTES:
            raise ConfigError(f"the store of trusted project files {self.path} would pass "
                              f"{MAX_FILE_BYTES} bytes; revoke the approvals of files you "
                              "no longer use (mcp-sync trust --list)")
        try:
            write_private(self.path, data)
        except OSError as exc:
            raise ConfigError(f"cannot write the store of trusted project files "
                              f"{self.path}: {exc}") from exc


def _approval(key: Any, value: Any) -> Optional[Approval]:
    """One entry of the store's ``files``, or None when it is not a valid one."""
    if not isinstance(key, str) or not os.path.isabs(key) or not isinstance(value, dict):
        return None
    sha256, trusted_at = value.get("sha256"), value.get("trusted_at")
    if not isinstance(sha256, str) or not _SHA256.fullmatch(sha256):
        return None
    if isinstance(trusted_at, bool) or not isinstance(trusted_at, (int, float)):
        return None
    return Approval(key, sha256, float(trusted_at))
