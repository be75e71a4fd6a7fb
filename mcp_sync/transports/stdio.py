"""The stdio transport: a child process speaking newline-delimited JSON on its pipes.

Threads (both daemons, so that a client nobody closed never keeps the interpreter alive;
cleanup does not rely on that: ``close()`` and an ``atexit`` hook stop the child and
join them with a bound):

* ``mcp-sync-reader-<name>`` reads stdout line by line, decodes each line and hands it
  to the session. It ends when stdout reaches EOF, which happens when the child exits or
  closes its stdout, and reports the close exactly once.
* ``mcp-sync-stderr-<name>`` drains stderr so the child never blocks on a full pipe,
  forwards each line to the logger ``mcp_sync.server.<name>.stderr`` and keeps the last
  lines for error messages.
"""

from __future__ import annotations

import atexit
import collections
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import weakref
from typing import IO, Any, Deque, Dict, List, Mapping, Optional, Sequence, Union

from ..exceptions import CommandNotFound, ConnectionClosed, ForkedClientError, TransportError
from .base import CloseCallback, MessageCallback, Transport, log_malformed

__all__ = ["DEFAULT_MAX_MESSAGE_SIZE", "StdioTransport", "default_environment"]

log = logging.getLogger(__name__)

DEFAULT_MAX_MESSAGE_SIZE = 64 * 1024 * 1024

_POSIX_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "TZ", "TMPDIR")
_WINDOWS_ENV = (
    "APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PATHEXT",
    "PROCESSOR_ARCHITECTURE", "PROGRAMDATA", "PROGRAMFILES", "SYSTEMDRIVE", "SYSTEMROOT",
    "TEMP", "TMP", "USERNAME", "USERPROFILE", "WINDIR", "COMSPEC",
)
_INTERPRETERS = {"python", "python3", "node", "npx", "uv", "uvx", "deno", "bun", "pipx", "sh",
                 "bash", "docker"}
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def default_environment() -> Dict[str, str]:
    """The parent's environment variables a child gets by default: no secrets.

    Only what a program needs to run (``PATH``, ``HOME``, the user, the terminal, the
    locale ``LANG``/``LC_*``; on Windows the system folders) is passed; API keys and tokens
    in the parent's environment stay there unless given with ``env=`` or
    ``inherit_env=True``.
    """
    names = _WINDOWS_ENV if sys.platform == "win32" else _POSIX_ENV
    env = {name: os.environ[name] for name in names if name in os.environ}
    env.update({k: v for k, v in os.environ.items() if k.startswith("LC_")})
    return env


def _server_name(command: str, args: Sequence[str]) -> str:
    base = os.path.basename(command)
    stem = os.path.splitext(base)[0].lower()
    if stem.rstrip("0123456789.") in _INTERPRETERS:
        for arg in args:
            if not arg.startswith("-"):
                base = os.path.splitext(os.path.basename(arg.rstrip("/")))[0] or base
                break
    return _UNSAFE_NAME.sub("_", base)[:40] or "server"


# Live transports, so that children are stopped at interpreter exit and marked unusable
# in a forked child. A WeakSet: a transport that was collected has been finalised already.
_live: weakref.WeakSet[StdioTransport] = weakref.WeakSet()


def _close_all_at_exit() -> None:
    for transport in list(_live):
        try:
            transport.close()
        except Exception:
            log.exception("error stopping %r at exit", transport)


def _mark_forked() -> None:
    for transport in list(_live):
        transport._forked = True


atexit.register(_close_all_at_exit)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_mark_forked)


class StdioTransport(Transport):
    """Runs an MCP server as a child process and talks to it over stdin/stdout.

    Args:
        command: the program to run; resolved with ``shutil.which`` (``npx`` finds
            ``npx.cmd`` on Windows).
        args: its arguments.
        env: extra environment variables for the child, on top of
            :func:`default_environment` (or of the whole parent environment with
            ``inherit_env=True``).
        cwd: the child's working directory.
        name: a label for thread names and logs; derived from the command by default.
        close_timeout: how long ``close()`` waits at each step (after closing stdin,
            after SIGTERM) before escalating.
        max_message_size: the longest line accepted from the server; a longer one is
            skipped with a warning.
        stderr_lines: how many of the child's last stderr lines to keep for errors.

    Can be shared between threads: ``send()`` serialises frames with a lock.
    """

    single_reader = True  # one reader thread delivers every message, in wire order

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[Union[str, os.PathLike[str]]] = None,
        *,
        inherit_env: bool = False,
        name: Optional[str] = None,
        close_timeout: float = 2.0,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        stderr_lines: int = 50,
    ) -> None:
        if not command:
            raise ValueError("StdioTransport needs a command")
        self.command = str(command)
        self.args = [str(a) for a in args]
        self.env = dict(env) if env else {}
        self.cwd = cwd
        self.inherit_env = inherit_env
        self.name = name or _server_name(self.command, self.args)
        self.close_timeout = close_timeout
        self.max_message_size = max_message_size
        self.stderr_tail: Deque[str] = collections.deque(maxlen=stderr_lines)
        self._stderr_log = logging.getLogger(f"mcp_sync.server.{self.name}.stderr")
        self._process: Optional[subprocess.Popen[bytes]] = None
        # Guards writes to stdin so that frames from many threads never interleave.
        self._write_lock = threading.Lock()
        # Guards the one-time close report and the closing flag.
        self._state_lock = threading.Lock()
        self._closing = False
        self._reported = False
        self._forked = False
        self._on_close: Optional[CloseCallback] = None
        self._reader: Optional[threading.Thread] = None
        self._stderr_reader: Optional[threading.Thread] = None

    @property
    def target(self) -> str:
        return " ".join([self.command, *self.args])

    @property
    def pid(self) -> Optional[int]:
        """The child's process id once started."""
        return self._process.pid if self._process else None

    @property
    def returncode(self) -> Optional[int]:
        return self._process.returncode if self._process else None

    def _child_env(self) -> Dict[str, str]:
        env = dict(os.environ) if self.inherit_env else default_environment()
        env.update(self.env)
        return env

    def _resolve_command(self, env: Mapping[str, str]) -> str:
        resolved = shutil.which(self.command, path=env.get("PATH", os.defpath))
        if resolved is None:
            resolved = shutil.which(self.command)  # e.g. an absolute path, or PATH unset
        if resolved is None:
            raise CommandNotFound(self.command, "not found on PATH or not executable")
        return resolved

    def start(self, on_message: MessageCallback, on_close: CloseCallback) -> None:
        """Spawn the child and start the reader and stderr threads.

        Raises:
            CommandNotFound: the command does not exist or cannot be executed.
        """
        if self._process is not None and not self._closing:
            raise TransportError(f"{self!r} is running already")
        # A closed transport (or one closed before it ever started) starts afresh; a stale
        # closing flag would otherwise make the next close() skip stopping the new child.
        self._reset()
        env = self._child_env()
        executable = self._resolve_command(env)
        kwargs: Dict[str, Any] = {}
        if sys.platform == "win32":
            kwargs["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP  # type: ignore[attr-defined]
        else:
            # Its own process group: Ctrl-C in the terminal reaches the client, which
            # cancels on the wire, not the server; close() signals the whole group.
            kwargs["start_new_session"] = True
        try:
            self._process = subprocess.Popen(
                [executable, *self.args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                # Always a pipe: under Jupyter sys.stderr has no file descriptor.
                stderr=subprocess.PIPE,
                env=env,
                cwd=self.cwd,
                bufsize=1 << 16,
                **kwargs,
            )
        except OSError as exc:
            raise CommandNotFound(self.command, str(exc)) from exc
        self._pid_at_start = os.getpid()
        self._on_close = on_close
        _live.add(self)
        log.debug("started %s pid=%s", self.target, self._process.pid)
        self._stderr_reader = threading.Thread(
            target=self._drain_stderr, name=f"mcp-sync-stderr-{self.name}", daemon=True
        )
        self._reader = threading.Thread(
            target=self._read_stdout, args=(on_message,),
            name=f"mcp-sync-reader-{self.name}", daemon=True,
        )
        self._stderr_reader.start()
        self._reader.start()

    def _reset(self) -> None:
        """Forget a closed child so that the transport can start a new one (reconnect)."""
        self._process = None
        self._closing = self._reported = False
        self._reader = self._stderr_reader = None
        self.stderr_tail.clear()

    # -- reading -------------------------------------------------------------------------

    def _read_stdout(self, on_message: MessageCallback) -> None:
        assert self._process is not None and self._process.stdout is not None
        stdout: IO[bytes] = self._process.stdout
        limit = self.max_message_size
        cause: Optional[BaseException] = None
        try:
            while True:
                line = stdout.readline(limit + 1)
                if not line:
                    break
                if len(line) > limit and not line.endswith(b"\n"):
                    self._skip_oversized(stdout, len(line))
                    continue
                self._deliver(line, on_message)
        except Exception as exc:
            cause = exc
            log.exception("reader for %s failed", self.name)
        finally:
            self._report_close(cause)

    def _skip_oversized(self, stdout: IO[bytes], size: int) -> None:
        while True:
            chunk = stdout.readline(1 << 20)
            size += len(chunk)
            if not chunk or chunk.endswith(b"\n"):
                break
        log.warning(
            "mcp-sync %s: skipping a %d-byte message longer than max_message_size=%d",
            self.name, size, self.max_message_size,
        )

    def _deliver(self, line: bytes, on_message: MessageCallback) -> None:
        if not line.strip():
            return
        try:
            message = json.loads(line)
        except ValueError as exc:
            log_malformed(self.name, f"not JSON: {exc}", line)
            return
        if isinstance(message, list):  # a JSON-RPC batch (2025-03-26)
            for item in message:
                on_message(item)
        else:
            on_message(message)

    def _drain_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        try:
            for raw in self._process.stderr:
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                self.stderr_tail.append(line)
                self._stderr_log.debug("%s", line)
        except (OSError, ValueError) as exc:  # pipe closed under us during close()
            log.debug("stderr drain for %s ended: %r", self.name, exc)

    def _report_close(self, cause: Optional[BaseException]) -> None:
        with self._state_lock:
            if self._reported:
                return
            self._reported = True
            closing = self._closing
        process = self._process
        exit_code: Optional[int] = None
        if process is not None and not closing:
            # stdout hit EOF: the child usually just exited. Reap it and let the stderr
            # drain catch up so the error carries the exit status and the last words.
            try:
                exit_code = process.wait(timeout=0.05)
            except subprocess.TimeoutExpired:
                exit_code = None
            if self._stderr_reader is not None:
                self._stderr_reader.join(0.05)
        if closing:
            message = f"connection to {self.name} closed by the client"
        elif cause is not None:
            message = f"reading from {self.name} failed: {cause!r}"
        elif exit_code is not None:
            message = f"MCP server {self.name} exited"
        else:
            message = f"MCP server {self.name} closed its stdout"
        error = ConnectionClosed(message, exit_code=exit_code, stderr_tail=list(self.stderr_tail))
        error.__cause__ = cause
        if self._on_close is not None:
            self._on_close(error)

    # -- writing -------------------------------------------------------------------------

    def send(self, message: Dict[str, Any], headers: Optional[Mapping[str, str]] = None) -> None:
        """Write one message as a line of JSON. Thread-safe.

        Raises:
            ForkedClientError: used in a process forked after the child was started.
            ConnectionClosed: the child's stdin is closed.
        """
        if self._forked or (self._process is not None and os.getpid() != self._pid_at_start):
            raise ForkedClientError(
                f"this client's server {self.name} belongs to the parent process; "
                "create a new client after fork()"
            )
        process = self._process
        if process is None or process.stdin is None:
            raise ConnectionClosed(f"{self!r} is not started")
        data = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
        try:
            with self._write_lock:
                process.stdin.write(data)
                process.stdin.flush()
        except (OSError, ValueError) as exc:
            raise ConnectionClosed(
                f"cannot write to {self.name}: {exc}",
                exit_code=process.poll(),
                stderr_tail=list(self.stderr_tail),
            ) from exc

    # -- closing -------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the child and join the threads, each step bounded.

        Closes stdin and waits ``close_timeout`` for the child to exit; then SIGTERMs its
        process group and waits again; then SIGKILLs it. The child is always reaped. In a
        forked child process nothing is signalled: the server belongs to the parent.
        """
        with self._state_lock:
            if self._closing:
                return
            self._closing = True
        _live.discard(self)
        process = self._process
        if process is None:
            return
        if self._forked or os.getpid() != self._pid_at_start:
            return
        try:
            if process.stdin is not None:
                process.stdin.close()
        except (OSError, ValueError) as exc:
            log.debug("closing stdin of %s: %r", self.name, exc)
        self._stop_process(process)
        for thread in (self._reader, self._stderr_reader):
            if thread is not None and thread is not threading.current_thread():
                thread.join(self.close_timeout)
                if thread.is_alive():
                    log.warning("%s did not stop within %.1f s", thread.name, self.close_timeout)
        self._report_close(None)  # no-op if the reader reported already
        for pipe in (process.stdout, process.stderr):
            try:
                if pipe is not None:
                    pipe.close()
            except (OSError, ValueError) as exc:
                log.debug("closing a pipe of %s: %r", self.name, exc)

    def _stop_process(self, process: subprocess.Popen[bytes]) -> None:
        try:
            process.wait(self.close_timeout)
            return
        except subprocess.TimeoutExpired:
            log.debug("%s did not exit after stdin closed; terminating", self.name)
        for sig_name in ("SIGTERM", "SIGKILL"):
            self._signal(process, sig_name)
            try:
                process.wait(self.close_timeout if sig_name == "SIGTERM" else 5.0)
                return
            except subprocess.TimeoutExpired:
                continue
        log.error("MCP server %s (pid %s) survived SIGKILL", self.name, process.pid)

    def _signal(self, process: subprocess.Popen[bytes], sig_name: str) -> None:
        if sys.platform == "win32":
            process.kill()
            return
        try:
            os.killpg(process.pid, getattr(signal, sig_name))
        except ProcessLookupError:
            return
        except PermissionError:
            process.send_signal(getattr(signal, sig_name))


def split_command(command: Union[str, Sequence[str]]) -> List[str]:
    """Split a command given as one string (shell-like quoting) or a list."""
    if isinstance(command, str):
        import shlex

        return shlex.split(command, posix=sys.platform != "win32")
    return [str(part) for part in command]
