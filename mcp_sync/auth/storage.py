"""Where :class:`~mcp_sync.auth.OAuth` keeps what it must remember: tokens, client
registrations and authorizations in progress.

A storage is a small key-value store of JSON objects, in three kinds:

* ``"tokens"``, keyed by the MCP server's canonical URL: the access token, the refresh
  token, their expiry, the scope and the authorization server (``issuer``) that issued them;
* ``"client"``, keyed by the authorization server's ``issuer``: a dynamically registered
  client (credentials are never reused with another authorization server);
* ``"pending"``, keyed by the ``state`` of an authorization request: what is needed to
  finish it (the PKCE verifier among it) when a web application's callback view does.

Implement :class:`TokenStorage` to keep them elsewhere (a Django session, a database row
per user, a keyring). :class:`MemoryTokenStorage` is the default; :class:`FileTokenStorage`
keeps one JSON file, readable by its owner only, for scripts that should not log in on
every run.

Every value holds secrets: never log one.
"""

from __future__ import annotations

import abc
import copy
import json
import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import Any, Dict, Optional, Union

from .._util.files import make_private_dirs
from ..exceptions import AuthError

__all__ = ["FileTokenStorage", "MemoryTokenStorage", "TokenStorage"]

log = logging.getLogger(__name__)

_KINDS = ("tokens", "client", "pending")
_FILE_VERSION = 1


class TokenStorage(abc.ABC):
    """A store of JSON objects by ``(kind, key)``. Implementations must be thread-safe."""

    @abc.abstractmethod
    def load(self, kind: str, key: str) -> Optional[Dict[str, Any]]:
        """The object stored under ``(kind, key)``, or None."""

    @abc.abstractmethod
    def save(self, kind: str, key: str, value: Dict[str, Any]) -> None:
        """Store ``value`` under ``(kind, key)``, replacing what was there."""

    @abc.abstractmethod
    def delete(self, kind: str, key: str) -> None:
        """Forget ``(kind, key)``; nothing happens if it is not stored."""


class MemoryTokenStorage(TokenStorage):
    """Keeps everything in this process's memory: a new process logs in again.

    Thread-safe: ``_lock`` guards ``_data``; values are copied in and out.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._data: Dict[str, Dict[str, Dict[str, Any]]] = {kind: {} for kind in _KINDS}

    def load(self, kind: str, key: str) -> Optional[Dict[str, Any]]:
        with self._lock:
            value = self._data.setdefault(kind, {}).get(key)
            return copy.deepcopy(value) if value is not None else None

    def save(self, kind: str, key: str, value: Dict[str, Any]) -> None:
        with self._lock:
            self._data.setdefault(kind, {})[key] = copy.deepcopy(value)

    def delete(self, kind: str, key: str) -> None:
        with self._lock:
            self._data.setdefault(kind, {}).pop(key, None)

    def __repr__(self) -> str:
        return "MemoryTokenStorage()"


class FileTokenStorage(TokenStorage):
    """Keeps everything in one JSON file that only its owner may read (mode ``0600``).

    The file is created on the first save (its folder too, and every missing folder above
    it, each with mode ``0700`` whatever the umask); each save
    writes a new file next to it and renames it over the old one, so a crash never leaves
    a half-written file. The file is read on every load, so two processes see each
    other's tokens; when both save at once, the last one wins.

    Args:
        path: the file, e.g. ``~/.config/myapp/mcp-tokens.json`` (``~`` is expanded).

    Thread-safe: ``_lock`` serializes each read-modify-write of the file.

    Raises (from any method):
        AuthError: the file cannot be read or written, or is not this storage's format.
    """

    def __init__(self, path: Union[str, os.PathLike[str]]) -> None:
        self.path = Path(os.path.expanduser(os.fspath(path)))
        self._lock = threading.Lock()

    def load(self, kind: str, key: str) -> Optional[Dict[str, Any]]:
        with self._lock:
            value = self._read().get(kind, {}).get(key)
            return value if isinstance(value, dict) else None

    def save(self, kind: str, key: str, value: Dict[str, Any]) -> None:
        with self._lock:
            data = self._read()
            data.setdefault(kind, {})[key] = value
            self._write(data)

    def delete(self, kind: str, key: str) -> None:
        with self._lock:
            data = self._read()
            if key in data.get(kind, {}):
                del data[kind][key]
                self._write(data)

    def _read(self) -> Dict[str, Dict[str, Any]]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise AuthError(f"cannot read the token file {self.path}: {exc}") from exc
        try:
            data = json.loads(text) if text.strip() else {}
        except ValueError as exc:
            raise AuthError(f"the token file {self.path} is not JSON") from exc
        if not isinstance(data, dict):
            raise AuthError(f"the token file {self.path} is not a JSON object")
        return {kind: value for kind, value in data.items()
                if kind in _KINDS and isinstance(value, dict)}

    def _write(self, data: Dict[str, Dict[str, Any]]) -> None:
        folder = self.path.parent
        document = {"version": _FILE_VERSION, **data}
        text = json.dumps(document, indent=2, sort_keys=True)
        try:
            make_private_dirs(folder)  # each folder it makes 0700, the parents too
            # mkstemp creates the file with mode 0600 before anything is written to it.
            fd, temporary = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp",
                                             dir=folder)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as file:
                    file.write(text)
                    file.flush()
                    os.fsync(file.fileno())
                os.chmod(temporary, 0o600)
                os.replace(temporary, self.path)
            except BaseException:
                try:
                    os.unlink(temporary)
                except OSError as exc:
                    log.debug("could not remove the temporary token file: %r", exc)
                raise
        except OSError as exc:
            raise AuthError(f"cannot write the token file {self.path}: {exc}") from exc
        log.debug("saved OAuth state to %s", self.path)

    def __repr__(self) -> str:
        return f"FileTokenStorage({str(self.path)!r})"
