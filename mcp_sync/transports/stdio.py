"""The stdio transport: a child process speaking newline-delimited JSON on its pipes.

Threads (all daemons, so that a client nobody closed never keeps the interpreter alive;
cleanup does not rely on that: ``close()`` and an ``atexit`` hook stop the child and
join them with a bound):

* ``mcp-sync-reader-<name>`` reads stdout line by line, decodes each line and hands it
  to the session. It ends when stdout reaches EOF, which happens when the child exits or
  closes its stdout (and nothing else holds the pipe open), and reports the close
  exactly once.
* ``mcp-sync-stderr-<name>`` drains stderr so the child never blocks on a full pipe,
  forwards each line to the logger ``mcp_sync.server.<name>.stderr`` and keeps the last
  lines for error messages (``stderr_lines`` lines of at most 16 KiB: the rest of a
  longer line is skipped).
* On Linux the stderr thread also watches for the child's exit: it waits in one
  ``poll`` on stderr and on a pidfd of the child (``os.pidfd_open``), so an idle client
  holds three threads (reader, stderr, and the session's dispatch). Elsewhere (another
  platform, a kernel or sandbox without pidfd, gevent) a thread of its own does it:
* ``mcp-sync-watcher-<name>`` blocks until the child exits. A process the server started
  may inherit its stdout and keep it open after the server is gone, so stdout's EOF alone
  cannot tell that the server exited: when the reader has not reported the close within
  a moment of the exit, the watcher reports it, with the exit status and stderr tail, so
  that pending requests fail at once. Where the platform allows it (``os.waitid``), the
  watcher does not reap the child while such a process holds its pipes: an unreaped
  child keeps its process id, so ``close()`` can still signal its process group (and so
  whatever holds the pipes, if it stayed in the group) without reaching a stranger that
  was given a recycled id (not under gevent, which reaps children itself: there the
  watcher waits with ``Popen.wait()``). The watcher ends when the child exits.
* ``mcp-sync-writer-<name>``, only while a server is slow to read its stdin: ``send()``
  writes on the caller's thread without ever blocking (the pipe is non-blocking); what
  a full pipe does not take waits in a backlog that this thread writes as the child
  reads, in order. It ends when the backlog is written, or at ``close()``.

Why writes never block: a child that stops reading its stdin fills the pipe (64 KiB on
Linux). A blocking ``write()`` would then hold the write lock for as long as the child
does not read: the caller would sit in ``send()`` past its request's deadline, every
other thread (cancellations, answers to the server) would queue behind the lock, and
``close()`` would hang on the stuck buffer. With the backlog, ``send()`` returns at once,
the session's deadlines hold (the request times out, its cancellation joins the
backlog), and ``close()`` drops the backlog. The backlog is bounded:
``max_write_backlog`` bytes, beyond which ``send()`` fails with a ``TransportError``.

One report of a death: a child that dies is reported once, with its exit status and the
last lines of its stderr, whichever thread meets it first (the reader at stdout's EOF, the
thread watching for the exit, or a write that met a broken pipe, on the caller's thread or
the writer's). Each of them waits, at most ``exit_grace``, for the exit status and for the
stderr thread to have read what the child wrote, and a failed write raises the very error
the pending requests fail with: a server that dies at start is never reported as a bare
"broken pipe" because the first write got there before the exit was seen.
"""

from __future__ import annotations

import atexit
import collections
import logging
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
import weakref
from typing import (
    IO,
    Any,
    Callable,
    Deque,
    Dict,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from .._util.jsonwire import decode_line, encode
from .._util.threads import join_or_warn, start_thread, unpatched
from ..exceptions import (
    CommandNotFound,
    ConnectionClosed,
    ForkedClientError,
    MessageTooLarge,
    TransportError,
    excerpt,
)
from ._limits import DEFAULT_MAX_MESSAGE_SIZE, response_id_in
from ._process import (
    _close_pipe,
    _exit_descriptor,
    _LineSplitter,
    _server_name,
    _wait_for_exit,
    default_environment,
)
from .base import (
    CloseCallback,
    MessageCallback,
    RequestFailedCallback,
    Transport,
    log_malformed,
)

__all__ = ["DEFAULT_MAX_MESSAGE_SIZE", "StdioTransport", "default_environment"]

log = logging.getLogger(__name__)

# A stderr line is kept (in the tail, and logged) up to this many bytes; the rest of a
# longer one is read and skipped, so a server writing without newlines costs no memory.
_STDERR_LINE_BYTES = 16 * 1024
# The writer thread's longest wait for the pipe to take bytes before it looks again; it
# is woken at once by the child reading or by close(): this only bounds the wait.
_WRITER_WAIT_MS = 5000
# How long, after the child exited, the watcher lets the reader reach stdout's EOF (and
# deliver what the child wrote last) before it reports the close itself: the reader
# usually gets there within a millisecond; when it does not, something else holds the pipe.
_EXIT_GRACE = 0.25


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
# Where the hook exists, a forked child finds _forked set, and send() need not ask the
# system for its pid on every message; elsewhere it compares pids.
_FORK_HOOK = hasattr(os, "register_at_fork")
if _FORK_HOOK:
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
        name: a label for thread names and logs. By default it is derived from the
            command, after the package or module it runs (``python -m pkg.server``:
            ``pkg.server``; ``node .../@scope/server-x/dist/index.js``: ``server-x``),
            and the client renames it after the server's ``serverInfo.name`` once the
            handshake tells it; a name given here is kept.
        close_timeout: the bound on each step of ``close()``: how long it waits for the
            child to exit after closing its stdin, after SIGTERM and after SIGKILL, and
            for each group of threads to end. A :class:`~mcp_sync.Client` given
            ``close_timeout`` sets it.
        max_message_size: the longest line accepted from the server; a longer one is
            skipped with a warning, and when it starts like a response to a pending
            request (``{"jsonrpc":"2.0","id":7,"result":...``) that request fails at once
            with :class:`~mcp_sync.MessageTooLarge`.
        stderr_lines: how many of the child's last stderr lines to keep for errors (each
            cut at 16 KiB).
        max_write_backlog: how many bytes of messages may wait for a child that is not
            reading its stdin (see the module docstring); once that many wait, ``send()``
            raises ``TransportError`` instead of queueing more.
        exit_grace: how long the end of a child is given to show in full: when its stdout
            reaches EOF, or a write to its stdin fails (a broken pipe: it is exiting), the
            close is reported once the child's exit status is known and its stderr is
            drained, waiting at most this long for them (default 0.5 s). So the
            :class:`~mcp_sync.ConnectionClosed` of a child that died carries its exit code
            and last stderr lines whichever thread met the death first; only a child that
            closed a pipe and lives on costs the whole wait.

    Can be shared between threads: ``send()`` serialises frames with a lock and never
    blocks on the child.
    """

    starts_server = True  # start() spawns the server
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
        max_write_backlog: int = DEFAULT_MAX_MESSAGE_SIZE,
        exit_grace: float = 0.5,
    ) -> None:
        if not command:
            raise ValueError("StdioTransport needs a command")
        self.command = str(command)
        self.args = [str(a) for a in args]
        self.env = dict(env) if env else {}
        self.cwd = cwd
        self.inherit_env = inherit_env
        self.name = name or _server_name(self.command, self.args,
                                         None if cwd is None else os.fspath(cwd))
        self.named_by_default = not name
        self.close_timeout = close_timeout
        self.max_message_size = max_message_size
        self.max_write_backlog = max_write_backlog
        self.exit_grace = exit_grace
        self.stderr_tail: Deque[str] = collections.deque(maxlen=stderr_lines)
        self._stderr_log = logging.getLogger(f"mcp_sync.server.{self.name}.stderr")
        self._process: Optional[subprocess.Popen[bytes]] = None
        # Guards writes to stdin so that frames from many threads never interleave, and
        # the writer state below. Held only for non-blocking writes, never for a wait.
        self._write_lock = threading.Lock()
        # Bytes the pipe has not taken yet, oldest first, with the id of the request each
        # belongs to (None for notifications and responses); their total size; the writer
        # thread that writes them (the last one started) and whether it is still on duty;
        # the error that broke the pipe; the pipe that wakes the writer at close().
        self._backlog: Deque[Tuple[memoryview, Any]] = collections.deque()
        self._backlog_bytes = 0
        self._writer: Optional[threading.Thread] = None
        self._writer_active = False
        self._write_error: Optional[OSError] = None
        # Whether a failed write has waited for the child's exit already (_write_failed).
        self._write_waited = False
        self._wake: Optional[Tuple[int, int]] = None
        # False on Windows, whose pipes cannot be made non-blocking: blocking writes there.
        self._nonblocking = False
        # Guards the one-time close report and the closing flag.
        self._state_lock = threading.Lock()
        self._closing = False
        self._reported = False
        # The error the close was reported with, set (then the event) once it is built:
        # a write that failed because the child died fails with it too.
        self._close_error: Optional[ConnectionClosed] = None
        self._close_reported = threading.Event()
        self._forked = False
        self._on_close: Optional[CloseCallback] = None
        self._on_request_failed: Optional[RequestFailedCallback] = None
        self._reader: Optional[threading.Thread] = None
        self._stderr_reader: Optional[threading.Thread] = None
        self._watcher: Optional[threading.Thread] = None
        # Set by the watcher when the child exited, with its status (the child may not be
        # reaped yet: see the module docstring).
        self._exited = threading.Event()
        self._exit_status: Optional[int] = None
        # Set by the stderr thread once it has read everything the child wrote to stderr
        # before it exited (stderr's EOF, or a drain after the exit), so that the close
        # report waits for the last words rather than racing them.
        self._stderr_drained = threading.Event()
        # Held to reap the child and to signal its process group, so that the group is
        # only signalled while its leader is unreaped and the id cannot be anyone else's.
        self._reap_lock = threading.Lock()

    @property
    def target(self) -> str:
        return " ".join([self.command, *self.args])

    @property
    def pid(self) -> Optional[int]:
        """The child's process id once started."""
        return self._process.pid if self._process else None

    @property
    def returncode(self) -> Optional[int]:
        """The child's exit status once it exited (negative: the signal that ended it)."""
        process = self._process
        if process is None:
            return None
        return process.returncode if process.returncode is not None else self._exit_status

    def rename(self, name: str) -> None:
        """Use ``name`` from now on: in messages, for the stderr logger
        (``mcp_sync.server.<name>.stderr``) and in the names of the running threads."""
        with self._write_lock:  # the writer thread is started under it
            self.name = name
            self._stderr_log = logging.getLogger(f"mcp_sync.server.{name}.stderr")
            threads = (("reader", self._reader), ("stderr", self._stderr_reader),
                       ("watcher", self._watcher), ("writer", self._writer))
            for role, thread in threads:
                if thread is not None:
                    thread.name = f"mcp-sync-{role}-{name}"

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

    def start(self, on_message: MessageCallback, on_close: CloseCallback,
              on_request_failed: RequestFailedCallback) -> None:
        """Spawn the child and start the reader, stderr and watcher threads.

        Raises:
            CommandNotFound: the command does not exist or cannot be executed.
            TransportError: gevent patched ``threading`` but not ``subprocess`` or
                ``select``: this transport's threads are greenlets then, and reading an
                unpatched pipe would block them all (docs/architecture.md).
        """
        if self._process is not None and not self._closing:
            raise TransportError(f"{self!r} is running already")
        missing = unpatched("subprocess", "select")
        if missing:
            raise TransportError(
                f"cannot start {self.name} under gevent: threading is patched but not "
                f"{' and '.join(missing)}, whose waits would block every greenlet; "
                "call gevent.monkey.patch_all() before importing mcp_sync")
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
            process = self._process = subprocess.Popen(
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
        self._on_request_failed = on_request_failed
        if sys.platform != "win32" and process.stdin is not None:
            # send() must never block on a child that does not read (module docstring).
            os.set_blocking(process.stdin.fileno(), False)
            self._nonblocking = True
        _live.add(self)
        log.debug("started %s pid=%s", self.target, process.pid)
        # Each thread is given the process (and the stderr tail) it serves: after close()
        # one may outlive the connection, held on a pipe that a process the server
        # started keeps open, and must never act on a child started later. In this order:
        # the reader's report of the close looks for the stderr thread, the watcher for
        # the reader.
        exit_fd = _exit_descriptor(process)
        if exit_fd is not None:  # one thread drains stderr and watches for the exit
            self._stderr_reader = start_thread(
                self._drain_and_watch, f"mcp-sync-stderr-{self.name}", process,
                self.stderr_tail, self._stderr_drained, exit_fd)
        else:
            self._stderr_reader = start_thread(
                self._drain_stderr, f"mcp-sync-stderr-{self.name}", process, self.stderr_tail,
                self._stderr_drained)
        self._reader = start_thread(self._read_stdout, f"mcp-sync-reader-{self.name}",
                                    process, on_message)
        if exit_fd is None:
            self._watcher = start_thread(self._watch_exit, f"mcp-sync-watcher-{self.name}",
                                         process)

    def _reset(self) -> None:
        """Forget a closed child so that the transport can start a new one (reconnect)."""
        self._process = None
        self._closing = self._reported = False
        self._close_error = None
        self._close_reported = threading.Event()
        self._reader = self._stderr_reader = self._watcher = None
        self._exited = threading.Event()
        self._exit_status = None
        # New events, not cleared ones: a thread of the last child may still set its own.
        self._stderr_drained = threading.Event()
        # A new deque, not a cleared one: a stderr thread of the last child may still run.
        self.stderr_tail = collections.deque(maxlen=self.stderr_tail.maxlen)
        self._backlog.clear()
        self._backlog_bytes = 0
        self._writer, self._writer_active = None, False
        self._write_error = None
        self._write_waited = False
        self._wake = None  # close() closed the last one
        self._nonblocking = False

    # -- reading -------------------------------------------------------------------------

    def _read_stdout(self, process: subprocess.Popen[bytes], on_message: MessageCallback) -> None:
        assert process.stdout is not None
        stdout: IO[bytes] = process.stdout
        limit = self.max_message_size
        cause: Optional[BaseException] = None
        try:
            while True:
                line = stdout.readline(limit + 1)
                if not line:
                    break
                if len(line) > limit and not line.endswith(b"\n"):
                    self._skip_oversized(stdout, line)
                    continue
                self._deliver(line, on_message)
        except Exception as exc:
            cause = exc
            log.exception("reader for %s failed", self.name)
        finally:
            self._report_close(process, cause)
            # This thread's pipe is its own to close: close() leaves it open while this
            # thread may still read it (closing it would wait for the read to end).
            _close_pipe(stdout, self.name)

    def _skip_oversized(self, stdout: IO[bytes], line: bytes) -> None:
        """Fail the request this line answers (if its start says which), skip the rest."""
        size = len(line)
        request_id = response_id_in(line)
        hook = self._on_request_failed
        if request_id is not None and hook is not None:
            hook(request_id, MessageTooLarge(
                f"MCP server {self.name} sent a response to request "
                f"{excerpt(repr(request_id), 80)} longer than max_message_size="
                f"{self.max_message_size} bytes; it was skipped",
                limit=self.max_message_size, size=size, request_id=request_id))
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
        if line.isspace():  # no copy of the line, as strip() would make
            return
        try:
            message = decode_line(line)
        except (ValueError, RecursionError) as exc:  # nested too deep is malformed too
            log_malformed(self.name, f"not JSON: {exc}", line)
            return
        if isinstance(message, list):  # a JSON-RPC batch (2025-03-26)
            for item in message:
                on_message(item)
        else:
            on_message(message)

    def _drain_stderr(self, process: subprocess.Popen[bytes], tail: Deque[str],
                      drained: threading.Event) -> None:
        assert process.stderr is not None
        stderr = process.stderr
        skipping = False  # in the rest of a line cut at _STDERR_LINE_BYTES
        try:
            while True:
                raw = stderr.readline(_STDERR_LINE_BYTES)
                if not raw:
                    break
                skipping = self._stderr_line(raw, tail, skipping)
        except (OSError, ValueError) as exc:  # pipe closed under us
            log.debug("stderr drain for %s ended: %r", self.name, exc)
        finally:
            drained.set()
            _close_pipe(process.stderr, self.name)  # its own to close, like the reader's

    def _stderr_line(self, raw: bytes, tail: Deque[str], skipping: bool) -> bool:
        """Keep and log one line of stderr as ``readline(_STDERR_LINE_BYTES)`` returns it
        (a longer line comes cut, and its rest is skipped); returns whether the rest of a
        cut line is still to be skipped."""
        ended = raw.endswith(b"\n")
        if skipping:
            return not ended
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not ended and len(raw) >= _STDERR_LINE_BYTES:
            skipping = True
            line += f" … (line cut at {_STDERR_LINE_BYTES} bytes)"
        tail.append(line)
        if self._stderr_log.isEnabledFor(logging.DEBUG):  # excerpt() only what is logged
            self._stderr_log.debug("%s", excerpt(line, 1000))
        return skipping

    def _drain_and_watch(self, process: subprocess.Popen[bytes], tail: Deque[str],
                         drained: threading.Event, exit_fd: int) -> None:
        """The stderr thread where the platform gives the child's exit as a descriptor
        (``os.pidfd_open``): it drains stderr and watches for the exit in one ``poll``,
        so an idle client holds no watcher thread. Ends once stderr reached EOF and the
        exit was handled."""
        assert process.stderr is not None
        fd = process.stderr.fileno()
        lines = _LineSplitter(_STDERR_LINE_BYTES)
        skipping = False

        def read_available() -> bool:
            """Read what stderr holds now; False once it is at EOF."""
            nonlocal skipping
            while True:
                try:
                    data = os.read(fd, 65536)
                except BlockingIOError:
                    return True
                if not data:
                    for raw in lines.rest():  # a last line without its newline
                        skipping = self._stderr_line(raw, tail, skipping)
                    drained.set()
                    return False
                for raw in lines.feed(data):
                    skipping = self._stderr_line(raw, tail, skipping)

        def drain() -> bool:
            """After the exit: everything the child wrote is in the pipe, so one read of
            what it holds has the last words (a process it started may write more)."""
            still_open = read_available()
            drained.set()
            return still_open

        poller = select.poll()
        poller.register(fd, select.POLLIN)
        poller.register(exit_fd, select.POLLIN)
        draining = watching = True
        try:
            os.set_blocking(fd, False)
            while draining or watching:
                for ready, _ in poller.poll():
                    if ready == fd and draining:
                        draining = read_available()
                        if not draining:
                            poller.unregister(fd)
                    elif ready == exit_fd and watching:
                        watching = False
                        poller.unregister(exit_fd)
                        still_open = self._exited_child(process, drain if draining else None)
                        if draining and not still_open:
                            draining = False
                            poller.unregister(fd)
        except (OSError, ValueError) as exc:  # pipe closed under us
            log.debug("stderr drain for %s ended: %r", self.name, exc)
        finally:
            os.close(exit_fd)
            for raw in lines.rest():
                skipping = self._stderr_line(raw, tail, skipping)
            drained.set()
            _close_pipe(process.stderr, self.name)  # its own to close, like the reader's

    def _watch_exit(self, process: subprocess.Popen[bytes]) -> None:
        """The watcher thread: notice the child's exit even while its pipes stay open."""
        self._exited_child(process, None)

    def _exited_child(self, process: subprocess.Popen[bytes],
                      drain: Optional[Callable[[], bool]]) -> bool:
        """Handle the child's exit: wait for it (at once when it exited already), then
        report the close unless the reader or ``close()`` does.

        ``drain``: on the stderr thread, reads what stderr holds now and says whether it
        is still open (held by a process the server started); None on the watcher
        thread. Returns whether stderr is still open after that (False without
        ``drain``, or when the exit could not be learnt).
        """
        try:
            self._exit_status, reaped = _wait_for_exit(process)
        except Exception:  # the reader's EOF will still report; close() still signals
            log.exception("watching %s (pid %s) failed", self.name, process.pid)
            return False
        self._exited.set()
        with self._state_lock:
            closing = self._closing or process is not self._process
        if closing:  # close() takes it from here, and reaps the child
            return drain() if drain is not None else False
        log.debug("MCP server %s (pid %s) exited with status %s", self.name, process.pid,
                  self._exit_status)
        # The last words first: the reader's report of the close waits for them.
        stderr_open = drain() if drain is not None else False
        reader = self._reader
        if reader is not None:
            reader.join(_EXIT_GRACE)  # let it deliver what the child wrote last
        held = [thread.name for thread in (self._reader, self._stderr_reader)
                if thread is not None and thread.is_alive()
                and thread is not threading.current_thread()]
        if stderr_open and drain is not None:
            stderr_open = drain()  # what a process holding the pipe wrote meanwhile
        if stderr_open:
            held.append(f"mcp-sync-stderr-{self.name}")
        if held:
            log.warning("MCP server %s (pid %s) exited, but a process it started keeps its "
                        "pipes open (%s still reading)", self.name, process.pid,
                        ", ".join(held))
        elif not reaped:
            self._reap(process, None)
        self._report_close(process, None)
        return stderr_open

    def _reap(self, process: subprocess.Popen[bytes], timeout: Optional[float]) -> None:
        """Collect the child's exit status (waiting at most ``timeout``)."""
        with self._reap_lock:
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                log.error("MCP server %s (pid %s) survived SIGKILL", self.name, process.pid)

    def _report_close(self, process: subprocess.Popen[bytes],
                      cause: Optional[BaseException]) -> None:
        """Report the close of ``process`` to the session, once (the first caller of the
        reader at stdout's EOF, the thread that saw the child exit, a write that failed
        because it died, and ``close()``), with the exit status and the stderr tail."""
        with self._state_lock:
            if self._reported or process is not self._process:
                return
            self._reported = True
            closing = self._closing
        exit_code: Optional[int] = None
        if not closing:
            # stdout hit EOF or the child exited: let the exit status and the stderr drain
            # catch up (within exit_grace) so the error carries both, however loaded the
            # machine is.
            deadline = time.monotonic() + self.exit_grace
            if self._exited.wait(self.exit_grace):
                exit_code = self.returncode
            if self._stderr_reader is not threading.current_thread():
                self._stderr_drained.wait(max(0.0, deadline - time.monotonic()))
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
        if not closing:
            self._close_error = error
        self._close_reported.set()
        if self._on_close is not None:
            self._on_close(error)

    # -- writing -------------------------------------------------------------------------

    def send(self, message: Dict[str, Any], headers: Optional[Mapping[str, str]] = None) -> None:
        """Write one message as a line of JSON. Thread-safe; never blocks on the child.

        What the pipe does not take at once waits in the backlog, written in order by the
        writer thread as the child reads (see the module docstring).

        Raises:
            ForkedClientError: used in a process forked after the child was started.
            ConnectionClosed: the child's stdin is closed (or a write to it failed).
            TransportError: ``max_write_backlog`` bytes wait already for a child that is
                not reading its stdin; nothing of this message was written.
        """
        if self._forked or (not _FORK_HOOK and self._process is not None
                            and os.getpid() != self._pid_at_start):
            raise ForkedClientError(
                f"this client's server {self.name} belongs to the parent process; "
                "create a new client after fork()"
            )
        process = self._process
        if process is None or process.stdin is None:
            raise ConnectionClosed(f"{self!r} is not started")
        data = encode(message).encode() + b"\n"
        try:
            with self._write_lock:
                if not self._nonblocking:
                    process.stdin.write(data)
                    process.stdin.flush()
                    return
                broken = self._write_error  # the writer thread met a broken pipe
                if broken is not None:  # a new error each time: the one stored is shared
                    raise OSError(broken.errno, broken.strerror)
                if process.stdin.closed:
                    raise ValueError("the child's stdin is closed")
                if self._backlog:  # behind what waits already: order is kept
                    self._queue_locked(memoryview(data), message)
                    return
                try:
                    written = os.write(process.stdin.fileno(), data)
                except BlockingIOError:
                    written = 0
                if written < len(data):
                    # Part of a frame may be out: the rest must follow, whatever the bound.
                    self._queue_locked(memoryview(data)[written:], message, always=True)
        except (OSError, ValueError) as exc:
            raise self._write_failed(process, exc) from exc

    def _write_failed(
        self, process: subprocess.Popen[bytes], exc: BaseException
    ) -> ConnectionClosed:
        """The error of a write to the child's stdin that failed with ``exc``.

        A broken pipe almost always means the child is exiting (at start, say, for a
        missing key): the write waits (at most ``exit_grace``) for its exit, and for the
        close to be reported, and fails with the same error as every pending request,
        exit status and last stderr lines included, reporting the close itself if no
        other thread got to it. A child that closed its stdin and lives on fails the
        first write after the grace with "cannot write", and every later one at once; a
        write while ``close()`` runs fails at once.
        """
        # Once per child: one that outlived the first grace is not exiting, and each
        # later write fails at once.
        grace = 0.0 if self._write_waited else self.exit_grace
        self._write_waited = True
        if not self._closing and self._exited.wait(grace):
            reader = self._reader
            if reader is not None and reader is not threading.current_thread():
                reader.join(_EXIT_GRACE)  # the responses it has yet to deliver come first
            self._report_close(process, None)  # nothing if reported already
            if self._close_reported.wait(self.exit_grace) and process is self._process:
                reported = self._close_error  # None when close() reported it
                if reported is not None:
                    error = ConnectionClosed(reported.reason, exit_code=reported.exit_code,
                                             stderr_tail=reported.stderr_tail)
                    error.__cause__ = exc
                    return error
        error = ConnectionClosed(
            f"cannot write to {self.name}: {exc}",
            exit_code=self.returncode,
            stderr_tail=list(self.stderr_tail),
        )
        error.__cause__ = exc
        return error

    def _queue_locked(self, data: memoryview, message: Dict[str, Any],
                      always: bool = False) -> None:
        """Add ``data`` to the backlog and make sure a writer thread is on duty.

        The caller holds the write lock.

        Raises:
            TransportError: the backlog is full (unless ``always``).
        """
        if not always and self._backlog_bytes + len(data) > self.max_write_backlog:
            error = TransportError(
                f"MCP server {self.name} is not reading its stdin: {self._backlog_bytes} "
                f"bytes are waiting to be written already (max_write_backlog="
                f"{self.max_write_backlog})"
            )
            error.request_sent = False
            raise error
        request_id = message.get("id") if "method" in message else None
        self._backlog.append((data, request_id))
        self._backlog_bytes += len(data)
        if self._writer_active:
            return
        assert self._process is not None and self._process.stdin is not None
        if self._wake is None:
            self._wake = os.pipe()
        self._writer_active = True
        # A daemon like the others; close() wakes it through the wake pipe and joins it.
        self._writer = start_thread(self._write_backlog, f"mcp-sync-writer-{self.name}",
                                    self._process.stdin.fileno(), self._wake[0])

    def _write_backlog(self, fd: int, wake: int) -> None:
        """The writer thread: write the backlog as the child reads it, then retire.

        It never writes after ``close()`` began (checked under the write lock, which
        ``close()`` takes to close stdin), so the descriptor it holds is always the pipe's.
        """
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        poller.register(wake, select.POLLIN)
        while True:
            poller.poll(_WRITER_WAIT_MS)
            with self._write_lock:
                if self._closing or not self._writer_active:
                    return
                try:
                    while self._backlog:
                        data, request_id = self._backlog[0]
                        written = os.write(fd, data)
                        self._backlog_bytes -= written
                        if written < len(data):
                            self._backlog[0] = (data[written:], request_id)
                            break  # the pipe is full again
                        self._backlog.popleft()
                except BlockingIOError:
                    continue
                except OSError as exc:
                    # The child closed its stdin or exited: nothing more can be written.
                    self._write_error = error = exc
                    lost = [request_id for _, request_id in self._backlog
                            if request_id is not None]
                    self._backlog.clear()
                    self._backlog_bytes = 0
                    self._writer_active = False
                    break
                if not self._backlog:
                    self._writer_active = False
                    return
        log.debug("writing to %s failed: %r; %d requests not sent", self.name, error,
                  len(lost))
        hook = self._on_request_failed
        process = self._process
        if hook is not None and process is not None and lost:
            failed = self._write_failed(process, error)
            for request_id in lost:
                copy = ConnectionClosed(failed.reason, exit_code=failed.exit_code,
                                        stderr_tail=failed.stderr_tail)
                copy.__cause__ = error
                hook(request_id, copy)

    def _close_stdin(self, process: subprocess.Popen[bytes]) -> None:
        """Drop the backlog, stop the writer thread, close the child's stdin (its EOF)."""
        if process.stdin is None:
            return
        writer: Optional[threading.Thread] = None
        wake: Optional[Tuple[int, int]] = None
        try:
            if not self._nonblocking:
                process.stdin.close()
                return
            # Held only around non-blocking writes: never for long.
            with self._write_lock:
                self._backlog.clear()
                self._backlog_bytes = 0
                self._writer_active = False
                writer, wake, self._wake = self._writer, self._wake, None
                if wake is not None:
                    os.write(wake[1], b"\0")
                process.stdin.close()
        except (OSError, ValueError) as exc:
            log.debug("closing stdin of %s: %r", self.name, exc)
        if not join_or_warn(writer, self.close_timeout, "closing the transport", log):
            return  # its descriptors stay open rather than be reused under it
        if wake is not None:
            for descriptor in wake:
                os.close(descriptor)

    # -- closing -------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the child and join the threads, each step bounded by ``close_timeout``.

        Closes stdin and waits ``close_timeout`` for the child to exit; then SIGTERMs its
        process group and waits again; then SIGKILLs it and waits again. The reader and
        stderr threads are then given ``close_timeout`` to reach their pipes' EOF; if the
        child exited but a process it started (in its process group) still holds a pipe,
        that group is signalled the same way, SIGTERM then SIGKILL (where the child could
        be left unreaped until now; see the module docstring). The child is reaped. A
        thread still held on a pipe by a process outside the group is left to end (and to
        close its pipe) when that process closes it: ``close()`` never waits for it past
        its bounds. In a forked child process nothing is signalled: the server belongs
        to the parent.
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
        self._close_stdin(process)
        self._stop_process(process)
        pipe_threads = [self._reader, self._stderr_reader]
        if not self._join(pipe_threads):
            for sig_name in ("SIGTERM", "SIGKILL"):
                if not self._signal_pipe_holders(process, sig_name) or self._join(pipe_threads):
                    break
        self._reap(process, self.close_timeout)
        join_or_warn(self._watcher, self.close_timeout, "closing the transport", log)
        for thread in pipe_threads:  # joined above, given every signal close() may send
            if thread is not None and thread.is_alive() and (
                thread is not threading.current_thread()
            ):
                log.warning("%s did not stop within %.1f s of closing the transport",
                            thread.name, self.close_timeout)
        self._report_close(process, None)  # no-op if the reader reported already
        # The pipes of threads that ended (or never started); the others close their own.
        for thread, pipe in ((self._reader, process.stdout),
                             (self._stderr_reader, process.stderr)):
            if pipe is not None and (thread is None or not thread.is_alive()):
                _close_pipe(pipe, self.name)

    def _join(self, threads: Sequence[Optional[threading.Thread]]) -> bool:
        """Join ``threads`` within one ``close_timeout``; True if they all ended."""
        deadline = time.monotonic() + self.close_timeout
        alive = False
        for thread in threads:
            if thread is None or thread is threading.current_thread():
                continue
            thread.join(max(0.0, deadline - time.monotonic()))
            alive = alive or thread.is_alive()
        return not alive

    def _stop_process(self, process: subprocess.Popen[bytes]) -> None:
        if self._exited.wait(self.close_timeout):
            return
        log.debug("%s did not exit after stdin closed; terminating", self.name)
        for sig_name in ("SIGTERM", "SIGKILL"):
            self._signal(process, sig_name)
            if self._exited.wait(self.close_timeout):
                return

    def _signal_pipe_holders(self, process: subprocess.Popen[bytes], sig_name: str) -> bool:
        """Signal the process group of a child that exited while its pipes stay open.

        Only while the child is unreaped, so that the group id is still its own. Returns
        whether the signal was sent.
        """
        if sys.platform == "win32" or not self._exited.is_set():
            return False
        with self._reap_lock:
            if process.returncode is not None:
                log.warning("MCP server %s exited, but a process it started keeps its pipes "
                            "open; not waiting for it", self.name)
                return False
            log.debug("%s: sending %s to the process group %s that keeps its pipes open",
                      self.name, sig_name, process.pid)
            try:
                os.killpg(process.pid, getattr(signal, sig_name))
            except (ProcessLookupError, PermissionError):
                return False
        return True

    def _signal(self, process: subprocess.Popen[bytes], sig_name: str) -> None:
        if sys.platform == "win32":
            process.kill()
            return
        with self._reap_lock:
            if process.returncode is not None:
                return  # reaped: its id may belong to another process now
            try:
                os.killpg(process.pid, getattr(signal, sig_name))
            except ProcessLookupError:
                return
            except PermissionError:
                process.send_signal(getattr(signal, sig_name))


