"""The transport interface: frames in, frames out, and one report that the link closed.

A transport knows how to move JSON-RPC messages to and from one server (newline-delimited
JSON over pipes, HTTP POST and SSE, an in-process queue) and nothing about MCP methods
beyond what its wire binding needs; what the protocol settled on reaches it as one
value (:meth:`Transport.agree`). It never reconnects and never starts an MCP session by
itself: it fails fast and reports that it closed, once, saying why.
"""

from __future__ import annotations

import abc
import logging
from typing import TYPE_CHECKING, Any, Callable, Dict, Mapping, Optional, Protocol

from .._util.text import name_safe
from ..exceptions import ConnectionClosed

if TYPE_CHECKING:
    from .._protocol.agreement import Agreement

__all__ = ["CloseCallback", "MessageCallback", "RequestFailedCallback", "Transport",
           "origin_key", "server_label"]

log = logging.getLogger(__name__)

# The shortest bound close_within() gives a step: a child needs a moment to die even of
# SIGKILL, and a thread to notice its pipe's end.
_MIN_CLOSE_STEP = 0.05



class MessageCallback(Protocol):
    """Called by the transport's reader for every decoded inbound message (usually a
    dict; the session classifies it and skips what is not JSON-RPC).

    ``first`` is True when no message came before this one on its stream (see
    :class:`Transport`); transports that do not tell leave it False.
    """

    def __call__(self, message: Any, first: bool = False) -> None: ...

#: Called exactly once when the link is gone, with the error pending requests fail with.
CloseCallback = Callable[[ConnectionClosed], None]
#: Called as ``hook(request_id, error)`` when one request can no longer be answered.
RequestFailedCallback = Callable[[Any, BaseException], None]


class Transport(abc.ABC):
    """Moves JSON-RPC messages between the session and one server.

    The contract, all of it (the session is the only caller; nothing is assigned to a
    transport from outside):

    * ``start(on_message, on_close, on_request_failed)`` opens the link and starts the
      reader thread(s). ``on_message`` is called from a transport thread for each
      inbound message, in wire order; it only queues the message, but it waits while the
      session's inbox is full (see ``reader_may_wait``): the transport then stops
      reading, and the server is pushed back. ``on_close`` is called exactly once, after
      the last ``on_message``, when the link is gone for any reason (``close()``
      included), with the error pending requests fail with: a
      :class:`~mcp_sync.SessionExpired` when the server forgot the MCP session it kept
      (HTTP 404 on its ``Mcp-Session-Id``), so that the client can start a new one.
      ``on_request_failed(request_id, error)`` fails one request later, for a transport
      that sends in the background (HTTP: the POST runs on a stream thread): an HTTP
      error, an unreachable server, a stream that ended for good before the response.
      Transports that write synchronously raise from ``send()`` instead.
    * ``agree(agreement)``: what the client and the server settled on (era, version,
      envelope), handed down when negotiation starts and whenever it changes. A
      transport frames messages by it (HTTP: ``MCP-Protocol-Version``, the headers a
      stateless request mirrors, the GET stream of a kept session) and never reads a
      message's ``_meta`` to guess.
    * ``send(message, headers=None)`` writes one message; it can be called from many
      threads at once. It raises :class:`~mcp_sync.TransportError`
      (``ConnectionClosed`` once closed).
    * ``cancel(request_id)``, ``rename(name)``: see their docstrings.
    * ``close()`` is idempotent, bounded, and joins every thread the transport started.

    And the few facts a client may ask: ``name``, ``target``, ``era_key``,
    ``carries_headers``, ``answers_every_request``, ``single_reader``,
    ``reader_may_wait``, ``close_timeout``; stdio adds the child's ``returncode`` and
    ``stderr_tail``, HTTP its ``session_id``.
    """

    #: A short label for thread names and log messages (``mcp-sync-reader-<name>``).
    name: str = "server"
    #: True when ``name`` was derived from the target rather than given: the client then
    #: renames the transport after the server's own name (``serverInfo.name``) once the
    #: handshake tells it (:meth:`rename`).
    named_by_default: bool = False
    #: True when each message can carry headers of its own (HTTP): the client then
    #: sends a tool's ``x-mcp-header`` arguments as ``Mcp-Param-*`` headers, and drops
    #: tools whose annotations cannot be sent.
    carries_headers: bool = False
    #: True when every request sent gets an answer at the wire level, even one the
    #: server does not understand (an HTTP POST always gets a status): an unanswered
    #: request then means a busy server, not one that ignores it.
    answers_every_request: bool = False
    #: True when :meth:`start` starts the server (a stdio child): the client then does
    #: work of its own while the server starts up rather than after.
    starts_server: bool = False
    #: True when one thread calls ``on_message``, in wire order (stdio's reader). The
    #: session may then resolve a blocked caller's response on that thread directly.
    single_reader: bool = False
    #: True when ``on_message`` is only called on the transport's own threads (readers,
    #: streams): the session may make them wait while its inbox is full, so that the pipe
    #: or the socket pushes back on the server. False when any thread may deliver (an
    #: in-process server answering on the caller's thread, which must never wait).
    reader_may_wait: bool = True
    #: The bound, in seconds, on each step of ``close()`` (each wait for a process, a
    #: thread or a connection to end). Transports take it as a constructor argument; a
    #: :class:`~mcp_sync.Client` given ``close_timeout`` sets it on its transport.
    close_timeout: float = 2.0
    #: The last agreement handed down (:meth:`agree`); None before negotiation.
    agreement: Optional[Agreement] = None

    @abc.abstractmethod
    def start(self, on_message: MessageCallback, on_close: CloseCallback,
              on_request_failed: RequestFailedCallback) -> None:
        """Open the link and start reading."""

    @abc.abstractmethod
    def send(self, message: Dict[str, Any], headers: Optional[Mapping[str, str]] = None) -> None:
        """Send one JSON-RPC message. Thread-safe.

        ``headers`` are extra per-message headers for transports that carry them (HTTP:
        the stateless era's ``Mcp-Param-*`` headers); others ignore them.
        """

    @abc.abstractmethod
    def close(self) -> None:
        """Close the link and release every resource. Idempotent, bounded."""

    def close_within(self, seconds: float) -> None:
        """:meth:`close`, done in about ``seconds``: each of its steps is bounded by a
        third of them (never more than ``close_timeout``, never less than 0.05 s), a
        third for each wait that stopping a server that does not answer may take (a
        stdio child: after its stdin's end, after SIGTERM, after SIGKILL). A connect
        that failed stops its server this way, inside the connect's timeout.

        Not for a transport that another thread is closing at the same time (its
        ``close_timeout`` is lowered for the duration).
        """
        kept = self.close_timeout
        self.close_timeout = min(kept, max(_MIN_CLOSE_STEP, seconds / 3))
        try:
            self.close()
        finally:
            self.close_timeout = kept

    def agree(self, agreement: Agreement) -> None:
        """Frame messages by ``agreement`` from now on (see the class docstring)."""
        self.agreement = agreement

    def rename(self, name: str) -> None:
        """Use ``name`` (a :func:`server_label`) from now on: in later messages and log
        lines, and in the names of the threads running now (``mcp-sync-<role>-<name>``).

        The client calls it after the handshake when the name was derived
        (:attr:`named_by_default`); transports that start threads rename them.
        """
        self.name = name

    def cancel(self, request_id: Any) -> bool:
        """Cancel a request at the transport level (for example by closing its HTTP stream).

        Returns True if the transport did so; the session then sends no
        ``notifications/cancelled``. The default does nothing.
        """
        return False

    @property
    def target(self) -> str:
        """What this transport talks to, for error messages."""
        return self.name

    @property
    def era_key(self) -> Any:
        """Identifies the server for the per-process memory of its protocol era: the era
        is a property of the server (its command line here; HTTP transports use its
        origin, whichever HTTP transport reaches it: :func:`origin_key`)."""
        return (type(self).__name__, self.target)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.target}>"


def origin_key(url: str) -> Any:
    """The era key of a server reached over HTTP: its scheme, host and port."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return ("http", parts.scheme, parts.hostname, parts.port)


def server_label(text: str) -> str:
    """``text`` made a server label for thread names, logger names and messages: letters,
    digits, ``.``, ``_`` and ``-`` only (anything else becomes ``_``), at most 40
    characters; ``""`` when nothing is left."""
    return name_safe(text).strip("._")[:40].rstrip(".")


def log_malformed(name: str, reason: str, raw: Optional[bytes | str]) -> None:
    """Log a malformed inbound frame (WARNING, excerpt truncated) that is being skipped."""
    from ..exceptions import excerpt

    log.warning("mcp-sync %s: skipping malformed message (%s): %s", name, reason,
                excerpt(raw if raw is not None else "", 200))
