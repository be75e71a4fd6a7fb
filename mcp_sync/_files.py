"""Folders the library creates for its user alone (the token file's, the tool cache's).

Standard library only.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["make_private_dirs"]


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
