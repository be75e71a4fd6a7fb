"""A stdio server's process apart from its pipes' traffic: the environment it gets, the name it
is known by, the command line split, the wait for its exit, its stdout split into lines.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from typing import (
    IO,
    Dict,
    List,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from .._util.threads import green
from .base import (
    server_label,
)

__all__ = ["default_environment", "split_command"]

log = logging.getLogger(__name__)

# Can the watcher learn that the child exited without reaping it (see stdio's docstring)?
_CAN_PEEK = sys.platform != "win32" and all(
    hasattr(os, name) for name in ("waitid", "WNOWAIT", "CLD_EXITED"))


# The locale: LANG, LC_ALL and LC_CTYPE are what a program needs to decode and print text.
# The other LC_* names are not passed: any LC_-prefixed variable is forwarded by ssh
# and sudo configurations that accept LC_*, a known channel for smuggling values.
_POSIX_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL",
              "LC_CTYPE", "TZ", "TMPDIR")


_WINDOWS_ENV = (
    "APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PATHEXT",
    "PROCESSOR_ARCHITECTURE", "PROGRAMDATA", "PROGRAMFILES", "SYSTEMDRIVE", "SYSTEMROOT",
    "TEMP", "TMP", "USERNAME", "USERPROFILE", "WINDIR", "COMSPEC",
)


# Programs that run a server rather than being one: the server is named after what they
# run. (Version suffixes are ignored: python3.12, node22.)
_INTERPRETERS = {"python", "python3", "node", "npx", "uv", "uvx", "deno", "bun", "pipx", "sh",
                 "bash", "docker", "pypy", "pypy3", "npm", "pnpm", "yarn", "bunx"}


# Those that take a module with -m (python -m pkg.server, uv run -m pkg.server).
_MODULE_RUNNERS = ("python", "pypy", "uv")


# Words of a launcher's command line that name no server (uv run, uv tool run, npm exec,
# pnpm dlx, docker run), and options whose value is code, not a server.
_LAUNCHER_WORDS = {"run", "tool", "exec", "x", "dlx"}


_INLINE_CODE = {"-c", "-e", "--eval", "-p", "--print"}


# File names that say nothing of the server (dist/index.js, src/main.py): it is named after
# the nearest folder above that is not a build folder instead.
_ENTRY_POINTS = {"index", "main", "__main__", "__init__", "cli"}


_BUILD_FOLDERS = {"dist", "build", "lib", "src", "bin", "out", "esm", "cjs", "node_modules"}


def default_environment() -> Dict[str, str]:
    """The parent's environment variables a child gets by default: no secrets.

    Only what a program needs to run (``PATH``, ``HOME``, the user, the terminal, the
    locale ``LANG``, ``LC_ALL`` and ``LC_CTYPE`` but no other ``LC_*``; on Windows the
    system folders) is passed; API keys and tokens
    in the parent's environment stay there unless given with ``env=`` or
    ``inherit_env=True``.
    """
    names = _WINDOWS_ENV if sys.platform == "win32" else _POSIX_ENV
    return {name: os.environ[name] for name in names if name in os.environ}


def _server_name(command: str, args: Sequence[str], cwd: Optional[str] = None) -> str:
    """The default label of a stdio server, named after its package or module rather than
    the program that runs it: ``python -m pkg.server`` is ``pkg.server``, ``node
    .../node_modules/@scope/server-x/dist/index.js`` and ``npx -y @scope/server-x@1.2``
    are ``server-x``, ``uvx mcp-server-fetch`` is ``mcp-server-fetch``. A generic entry
    point (``index``, ``main``, ``cli``) is named after the nearest folder above it that
    is not a build folder (``dist``, ``src``...), looked up from ``cwd`` (default: the
    current directory) for a relative path. The client renames the server after its
    ``serverInfo.name`` once the handshake tells it."""
    program = (_split_path(command) or [command])[-1]
    runner = os.path.splitext(program)[0].lower().rstrip("0123456789.")
    if runner not in _INTERPRETERS:
        return server_label(_named_after(command, cwd)) or "server"
    words = iter(args)
    for word in words:
        if runner.startswith(_MODULE_RUNNERS) and (word == "-m" or (
                word.startswith("-m") and not word.startswith("--"))):
            module = next(words, "") if word == "-m" else word[2:]
            return server_label(module) or server_label(runner) or "server"
        if word in _INLINE_CODE:
            break
        if word.startswith("-") or word in _LAUNCHER_WORDS:
            continue
        return server_label(_named_after(word, cwd)) or "server"
    return server_label(runner) or "server"


def _split_path(path: str) -> List[str]:
    return [part for part in re.split(r"[\\/]+", path) if part and part != "."]


def _named_after(target: str, cwd: Optional[str]) -> str:
    """What a script path, an executable or a package spec is called (see above)."""
    parts = _split_path(target)
    if not parts:
        return target
    if target.startswith("@") or (len(parts) == 1 and "@" in target[1:]):
        # An npm package spec: @scope/name, @scope/name@version, name@version.
        name = parts[1] if target.startswith("@") and len(parts) > 1 else parts[0]
        return name.lstrip("@").split("@", 1)[0]
    stem = os.path.splitext(parts[-1])[0]
    if stem.lower() not in _ENTRY_POINTS:
        return stem
    if not os.path.isabs(target):
        try:
            base = cwd or os.getcwd()
        except OSError:  # the current directory was removed
            base = ""
        parts = _split_path(os.path.normpath(os.path.join(base, target)))
    for folder in reversed(parts[:-1]):
        if folder.lower() not in _BUILD_FOLDERS and folder != "..":
            return folder
    return stem


def _wait_for_exit(process: subprocess.Popen[bytes]) -> Tuple[Optional[int], bool]:
    """Block until ``process`` exits; returns its exit status and whether it was reaped.

    With ``os.waitid(..., WNOWAIT)`` the child is left unreaped (a zombie), its process id
    still its own; elsewhere ``Popen.wait()`` reaps it. So does it under gevent
    (:func:`~mcp_sync._util.threads.green`): ``os.waitid`` would block the one OS thread every
    greenlet runs on until the child exits, and gevent reaps its children itself anyway;
    its ``Popen.wait()`` waits cooperatively.
    """
    if _CAN_PEEK and not green():
        try:
            info = os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)
        except OSError:  # ECHILD: reaped by another waiter already; Popen knows the status
            info = None
        if info is not None:
            status = info.si_status if info.si_code == os.CLD_EXITED else -info.si_status
            return status, False
    return process.wait(), True


def _exit_descriptor(process: subprocess.Popen[bytes]) -> Optional[int]:
    """A descriptor that becomes readable when ``process`` exits (Linux's pidfd), so the
    stderr thread can watch for the exit too; None where there is none (another
    platform, an old kernel, a sandbox that refuses it) or under gevent, where the
    watcher thread waits with gevent's ``Popen.wait()``."""
    if not _CAN_PEEK or not hasattr(os, "pidfd_open") or green():
        return None
    try:
        return int(os.pidfd_open(process.pid))
    except OSError as exc:
        log.debug("no pidfd for pid %s (%r): a watcher thread waits for its exit",
                  process.pid, exc)
        return None


class _LineSplitter:
    """Cuts a byte stream into lines as ``readline(limit)`` would return them: each
    ends with its newline, or is ``limit`` bytes of a longer line."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._buffer = b""

    def feed(self, data: bytes) -> List[bytes]:
        buffer = self._buffer + data
        lines: List[bytes] = []
        start = 0
        while True:
            end = buffer.find(b"\n", start, start + self.limit)
            if end >= 0:
                lines.append(buffer[start:end + 1])
                start = end + 1
            elif len(buffer) - start >= self.limit:
                lines.append(buffer[start:start + self.limit])
                start += self.limit
            else:
                break
        self._buffer = buffer[start:]
        return lines

    def rest(self) -> List[bytes]:
        """What is left at EOF: a last line without its newline, if any."""
        rest, self._buffer = self._buffer, b""
        return [rest] if rest else []


def _close_pipe(pipe: IO[bytes], name: str) -> None:
    try:
        pipe.close()
    except (OSError, ValueError) as exc:
        log.debug("closing a pipe of %s: %r", name, exc)


def split_command(command: Union[str, Sequence[str]]) -> List[str]:
    """Split a command given as one string (shell-like quoting) or a list."""
    if isinstance(command, str):
        import shlex

        return shlex.split(command, posix=sys.platform != "win32")
    return [str(part) for part in command]
