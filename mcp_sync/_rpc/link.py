"""The link: one transport as the parts of a session share it (its name, the agreement
that frames it, whether it may be used, and the error that closed it).

No I/O and no thread: the session's parts (:mod:`.outbound`, :mod:`.dispatch`,
:mod:`.serving`, :mod:`.notifications`) read it; :class:`~.session.RpcSession` alone
writes it, and the transport's close report reaches it through the session. A fork marks
every live link unusable in the child (:meth:`Link.check_usable` then raises
:class:`~mcp_sync.ForkedClientError`): the child's copy of a link is its parent's.
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import TYPE_CHECKING, Any, Mapping, Optional

from ..exceptions import ClientNotConnected, ConnectionClosed, ForkedClientError

if TYPE_CHECKING:
    from .._protocol.agreement import Agreement
    from ..transports.base import Transport

__all__ = ["IDLE_WAIT", "Link"]

#: The longest any of the session's threads waits without looking around (seconds): none
#: has anything to poll; this only bounds each wait (no wait in the library is unbounded).
IDLE_WAIT = 5.0

# Links alive in this process, so that a fork() marks them unusable in the child.
_live_links: weakref.WeakSet[Link] = weakref.WeakSet()


def _mark_forked() -> None:
    for link in list(_live_links):
        link.forked = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_mark_forked)


class Link:
    """One transport and what the session's parts must all know of it.

    Thread-safety: ``closed_error``, ``stopped``, ``lost`` and ``end_error`` are written
    under ``_lock`` (:meth:`stop`, called by ``close()``, races :meth:`mark_closed`, the
    transport's report), each once; they are read without it, and a reader that sees
    the old value of one is no worse off than one that came a moment earlier. ``name``,
    ``agreement`` and ``envelope`` are replaced whole by the client's thread (rename,
    agree) and read without a lock. ``started`` and ``forked`` turn True once.
    """

    def __init__(self, transport: Transport, name: str) -> None:
        self.transport = transport
        #: The server's label, in thread names, log lines and error messages.
        self.name = name
        #: What the client and the server settled on (``RpcSession.agree``); None before.
        self.agreement: Optional[Agreement] = None
        #: The agreement's envelope, merged into every request's ``params._meta`` (the
        #: stateless era's version, client info and capabilities); None otherwise.
        self.envelope: Optional[Mapping[str, Any]] = None
        #: The session's threads run (``start()`` was called).
        self.started = False
        #: Set in a process forked after this link was made: the link is the parent's.
        #: (Cheaper than comparing ``os.getpid()`` on every request.)
        self.forked = False
        self.pid = os.getpid()
        #: Set once, when the transport reports it closed (or ``close()`` is called):
        #: from then on every request fails at once with a copy of it (:meth:`closed_copy`).
        self.closed_error: Optional[ConnectionClosed] = None
        #: ``close()`` was called.
        self.stopped = False
        #: The transport closed before ``close()`` was called: the server went away.
        self.lost = False
        #: The failure ``close()`` was told ended the session (for the observer).
        self.end_error: Optional[BaseException] = None
        self._lock = threading.Lock()  # closed_error, stopped, lost, end_error
        _live_links.add(self)

    def stop(self, error: Optional[BaseException]) -> bool:
        """``close()`` was called, ending the session with ``error`` (None: its user is
        done with it); True the first time only."""
        with self._lock:
            if self.stopped:
                return False
            self.stopped = True
            self.end_error = error
            return True

    def mark_closed(self, error: ConnectionClosed) -> bool:
        """Record the error that closed the transport; True the first time only (later
        reports change nothing). The link is ``lost`` if ``close()`` had not been
        called."""
        with self._lock:
            if self.closed_error is not None:
                return False
            self.closed_error = error
            self.lost = not self.stopped
            return True

    def ending_error(self) -> Optional[BaseException]:
        """What ended the session, for the observer: the transport's error if it was lost,
        else the failure ``close()`` was given."""
        return self.closed_error if self.lost else self.end_error

    def check_usable(self) -> None:
        """Raise unless a request may be sent now.

        Raises:
            ForkedClientError: in a process forked after the link was made.
            ConnectionClosed: the transport closed (a fresh copy of its error).
            ClientNotConnected: the session was never started.
        """
        if self.forked:
            raise ForkedClientError(
                f"this client's connection to {self.name} belongs to the parent process; "
                "create a new client after fork()"
            )
        if self.closed_error is not None:
            raise self.closed_copy()
        if not self.started:
            raise ClientNotConnected(f"session with {self.name} is not started")

    def closed_copy(self) -> ConnectionClosed:
        """A new error like the one that closed the transport (each failed request gets
        its own: it may be marked ``request_sent``), with the same cause."""
        base = self.closed_error
        if base is None:
            return ConnectionClosed(f"connection to {self.name} closed")
        error = type(base)(base.reason, exit_code=base.exit_code, stderr_tail=base.stderr_tail)
        error.__cause__ = base.__cause__
        return error

    def server_info(self) -> Optional[Mapping[str, Any]]:
        """The server's ``serverInfo`` as the agreement holds it, or None before one is
        settled (a request sent during the handshake)."""
        agreement = self.agreement
        if agreement is None or not agreement.settled or not agreement.server_info:
            return None
        return agreement.server_info
