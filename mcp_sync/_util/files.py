"""The package's private files (the tool cache, the trusted project files): read only
when they are this user's own, written so that no one else can read them, replaced
whole.

* :func:`read_own_file` opens without following a symbolic link, and refuses anything but
  a regular file owned by this user and writable by no one else (on POSIX) of at most
  ``max_bytes``.
* :func:`make_private_dirs` creates a folder and every missing folder above it, each with
  mode 0700 whatever the umask (``Path.mkdir(mode, parents=True)`` gives ``mode`` to the
  last folder only: the ones above it get ``0777`` minus the umask).
* :func:`write_private` creates the folder that way when it is missing, writes a
  temporary file in it (``mkstemp``: mode 0600 from the start, whatever the umask) and
  renames it over the old one (``os.replace``), so a reader sees the old file or the new
  one, never half of one, and no temporary file is left behind.

No thread, no lock: callers serialise their own read-modify-write cycles.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Union

__all__ = ["NotOwnFile", "make_private_dirs", "read_own_file", "write_private"]

PathLike = Union[str, "os.PathLike[str]"]


class NotOwnFile(Exception):
    """A file that is not a regular file of this user's within the size allowed (the
    message says why)."""


def read_own_file(path: PathLike, max_bytes: int) -> bytes:
    """The bytes of ``path``, a regular file owned by this user, at most ``max_bytes``.

    Raises:
        FileNotFoundError: there is no such file.
        NotOwnFile: a symbolic link, not a regular file, another user's, writable by
            other users, or too large.
        OSError: the file cannot be opened or read.
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as exc:
        if os.path.islink(path):  # O_NOFOLLOW's ELOOP: say what it means
            raise NotOwnFile("a symbolic link") from None
        raise exc
    with os.fdopen(descriptor, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise NotOwnFile("not a regular file")
        getuid = getattr(os, "getuid", None)
        if getuid is not None and info.st_uid != getuid():
            raise NotOwnFile(f"owned by user {info.st_uid}, not by this user")
        if getuid is not None and info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            # Another user could have written it, or could rewrite it next.
            raise NotOwnFile(f"writable by other users (mode {stat.S_IMODE(info.st_mode):o})")
        if info.st_size > max_bytes:
            raise NotOwnFile(f"{info.st_size} bytes, more than {max_bytes}")
        data = file.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise NotOwnFile(f"more than {max_bytes} bytes")
    return data


def write_private(path: PathLike, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically, readable by this user only (mode 0600;
    missing folders are created with mode 0700, :func:`make_private_dirs`).

    Raises:
        OSError: the folder or the file cannot be written.
    """
    import tempfile  # only a process that writes pays for it

    target = Path(path)
    make_private_dirs(target.parent)
    descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.",
                                             suffix=".tmp")
    try:
        with os.fdopen(descriptor, "wb") as file:
            if hasattr(os, "fchmod"):
                os.fchmod(file.fileno(), 0o600)  # mkstemp's mode; said again
            file.write(data)
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass  # gone already, or the folder went away: nothing more to clean
        raise


def make_private_dirs(folder: Path) -> None:
    """Create ``folder`` and every missing folder above it, each with mode ``0700``
    whatever the umask; folders that exist already are left as they are.

    ``Path.mkdir(mode, parents=True)`` gives ``mode`` to the last folder only: the ones
    above get ``0777`` minus the umask, so ``0777`` under umask ``000``. Here every folder
    is made with ``0700`` (which a umask can only narrow) and set to it again, so none is
    ever open to others.

    Raises:
        OSError: a folder cannot be created (or a file is in the way).
    """
    missing = []
    current = folder
    while not current.is_dir():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for path in reversed(missing):
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            if not path.is_dir():
                raise
            continue  # made meanwhile by someone else: theirs, left as it is
        os.chmod(path, 0o700)
