"""Interrupting an HTTP exchange blocked on the server, from another thread.

A thread blocked in ``recv()`` does not wake when another thread closes the socket; it
wakes when the socket is shut down. So stopping an exchange (``cancel()``, ``close()``, a
deadline passing) means shutting down the socket its thread reads
(:meth:`Interruptible.abort`):

* **once the response headers are in**, the streamed response's socket
  (:meth:`Interruptible.attach_response`);
* **before that**, while ``requests.Session.send`` waits for the headers and gives nothing to hold,
  the socket the connections of :class:`InterruptibleAdapter` hand, just before they
  wait, to the exchange the current thread is sending (:func:`sending`,
  :meth:`Interruptible.attach_socket`). A ``requests.Session`` without that adapter (one
  the user passed in) cannot be interrupted there: its request ends when the server
  answers or its read timeout passes.

The same connections send a request again on a new connection when the pooled one the
server closed failed it before one byte went out, and never otherwise, and are not reused
near the end of the idle time the server announced (``Keep-Alive: timeout=N``), when its
close could cross a request on the wire (:class:`_TrackedConnection`).

Only public doors of ``requests`` and urllib3 are used: the methods ``HTTPAdapter`` offers
to subclasses, urllib3's pool and connection classes (``pool_classes_by_scheme``,
``ConnectionCls``) with the ``http.client`` methods a connection subclass overrides, a
response's ``connection`` and its ``sock``, and ``HTTPResponse.shutdown()`` where urllib3
has it (2.3 and later). Under urllib3 1.x, which reads no "whatever has arrived", the
``http.client`` response the connections return is kept for its ``read1``
(:func:`plain_response`).
"""

from __future__ import annotations

import logging
import re
import socket
import threading
import time
from typing import TYPE_CHECKING, Any, Dict, Optional

import requests
import requests.adapters
import urllib3
import urllib3.connection
import urllib3.poolmanager

from ..._util.text import pattern

__all__ = ["AbortFlag", "Interruptible", "InterruptibleAdapter", "plain_response",
           "reuse_window", "sending", "set_read_timeout", "shutdown_response", "socket_of"]

log = logging.getLogger(__name__)

# A request body at most this long is written with the request's head, in one write.
_ONE_WRITE = 64 * 1024
# A connection is not reused once it has been idle for the keep-alive timeout the server
# announced less this margin (or less half of it, if shorter): a request sent later may
# cross the server's close on the wire, and a POST that meets a reset cannot be sent again.
_KEEP_ALIVE_MARGIN = 1.0
# The timeout of a Keep-Alive header ("timeout=5, max=100"), looked for in its first
# 200 characters only (the header is the server's).
_KEEP_ALIVE_TIMEOUT = r"(?:^|[,;\s])timeout\s*=\s*(\d{1,9})(?:\.\d*)?\s*(?:[,;]|$)"


def reuse_window(keep_alive: Optional[str]) -> Optional[float]:
    """How long a connection may stay idle and still be reused, by a ``Keep-Alive``
    header's ``timeout=N`` (seconds): ``N`` less a second (less ``N / 2`` when ``N`` is
    under two seconds). None when the header names no timeout."""
    if not keep_alive:
        return None
    match = pattern(_KEEP_ALIVE_TIMEOUT, re.IGNORECASE).search(keep_alive[:200])
    if match is None:
        return None
    timeout = float(match.group(1))
    return timeout - min(_KEEP_ALIVE_MARGIN, timeout / 2)


def socket_of(response: requests.Response) -> Optional[socket.socket]:
    """The socket under a streamed response, while the response holds its connection
    (urllib3's ``HTTPResponse.connection``, and that connection's ``sock``); None once the
    connection went back to the pool. A response that ends its connection (HTTP/1.0) holds
    the socket without it: found only under the connections of :class:`InterruptibleAdapter`.
    """
    connection = getattr(response.raw, "connection", None)
    sock = getattr(connection, "sock", None)
    if sock is None:
        # http.client hands the socket over to a response that ends the connection
        # (HTTP/1.0, "Connection: close"): the transports' connections remember it.
        sock = getattr(connection, "response_socket", None)
    return sock if isinstance(sock, socket.socket) else None


def _shutdown_socket(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # closed already: nothing is blocked on it


def shutdown_response(response: requests.Response) -> None:
    """Make a read blocked on ``response`` (in another thread) return at once.

    Closing a socket does not wake a thread blocked on it; shutting it down does. A
    connection already handed back to the pool is left alone (it may serve another
    request by now).
    """
    shutdown = getattr(response.raw, "shutdown", None)
    if shutdown is not None:  # urllib3 >= 2.3 checks that the connection is still ours
        try:
            shutdown()
        except (ValueError, RuntimeError, OSError):
            pass  # closed or released already
        return
    sock = socket_of(response)  # None once released
    if sock is not None:
        _shutdown_socket(sock)


def set_read_timeout(response: requests.Response, timeout: Optional[float]) -> None:
    """Change the socket timeout of a streamed response once its headers are in."""
    sock = socket_of(response)
    if sock is None:
        log.debug("cannot find the socket of a response from %s to set its timeout",
                  response.url)
        return
    try:
        sock.settimeout(timeout)
    except OSError as exc:
        log.debug("cannot set the read timeout of a stream: %r", exc)


class AbortFlag:
    """``Interruptible.aborted``: a one-way flag with ``threading.Event``'s ``set``,
    ``is_set`` and ``wait``, whose Event (a Condition and its lock) is made only
    when a thread waits on it: most exchanges end without anyone waiting, or stopping
    them. ``set()`` marks the flag before it looks for a waiter's Event, and ``wait()``
    publishes its Event before it looks at the flag, so no wake-up is lost.
    """

    __slots__ = ("_event", "_set")

    _creating = threading.Lock()  # two first waiters make one Event between them

    def __init__(self) -> None:
        self._set = False
        self._event: Optional[threading.Event] = None

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        self._set = True
        event = self._event
        if event is not None:
            event.set()

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Like ``threading.Event.wait``: True once set, False after ``timeout``."""
        if self._set:
            return True
        event = self._event
        if event is None:
            with AbortFlag._creating:
                event = self._event
                if event is None:
                    event = self._event = threading.Event()
        if self._set:  # set before the Event was published: it may not have seen it
            return True
        return event.wait(timeout)


class Interruptible:
    """An HTTP exchange in flight, and the means to stop it from another thread.

    The sending thread names it (:func:`sending`) before ``requests.Session.send``, so that the
    socket reaches it (:meth:`attach_socket`) before the wait for the response headers,
    and attaches the response once they are in (:meth:`attach_response`). :meth:`abort`
    sets ``aborted`` and shuts down whichever it holds; one attached after the abort is
    shut down at once. ``lock`` guards ``sock`` and ``response`` against ``abort()``
    racing the sender.
    """

    __slots__ = ("aborted", "lock", "response", "sock")

    def __init__(self) -> None:
        self.aborted = AbortFlag()
        self.lock = threading.Lock()
        self.sock: Optional[socket.socket] = None
        self.response: Optional[requests.Response] = None

    def attach_socket(self, sock: socket.socket) -> None:
        """Called on the sending thread just before it blocks on the response headers."""
        with self.lock:
            self.sock = sock
            aborted = self.aborted.is_set()
        if aborted:
            _shutdown_socket(sock)

    def attach_response(self, response: requests.Response) -> None:
        """Called on the sending thread once the response headers are in."""
        with self.lock:
            self.sock = None
            self.response = response
            aborted = self.aborted.is_set()
        if aborted:
            shutdown_response(response)

    def detach(self) -> None:
        """Called once the response is closed: its connection may serve another request,
        which a later :meth:`abort` must leave alone."""
        with self.lock:
            self.sock = None
            self.response = None

    def abort(self) -> None:
        """Stop this exchange: wake its thread from whatever read or wait it is in."""
        with self.lock:
            self.aborted.set()
            sock, response = self.sock, self.response
        if response is not None:
            shutdown_response(response)
        elif sock is not None:
            _shutdown_socket(sock)


# -- interrupting a request that waits for its response headers --------------------------

# The exchange the current thread is sending, so that the connection classes below can
# hand it their socket before they block on the response headers.
_current = threading.local()


def sending(exchange: Optional[Interruptible]) -> None:
    """Name the exchange the current thread sends next (``None`` once it is sent): the
    connections of :class:`InterruptibleAdapter` hand it their socket before they block
    on the response headers."""
    _current.exchange = exchange


def _note_socket(sock: Any) -> None:
    exchange = getattr(_current, "exchange", None)
    if exchange is not None and isinstance(sock, socket.socket):
        exchange.attach_socket(sock)


# urllib3 2 reads "whatever has arrived" itself (HTTPResponse.read1); urllib3 1.x has no
# such read, and its connections return the http.client response, which has one.
_URLLIB3_READS_SOME = hasattr(urllib3.HTTPResponse, "read1")


def plain_response(response: requests.Response) -> Any:
    """Under urllib3 1.x, the ``http.client`` response under a streamed ``response`` sent
    through :class:`InterruptibleAdapter` (its ``read1`` returns whatever has arrived);
    None otherwise. Ask while the response holds its connection: before its body is read.
    """
    if _URLLIB3_READS_SOME:
        return None
    connection = getattr(response.raw, "connection", None)
    return getattr(connection, "plain_response", None)


# For the type checker, the mixin below is the connection class it is mixed into.
if TYPE_CHECKING:
    _ConnectionBase = urllib3.connection.HTTPConnection
else:
    _ConnectionBase = object


class _TrackedConnection(_ConnectionBase):
    """What the transport's connections add to urllib3's.

    **Interruptible**: before blocking on the response headers, the connection hands its
    socket to the exchange being sent on this thread (see :func:`sending`).

    **A request on a pooled connection the server has closed goes on a new one, when it
    is certain that not one byte of it was sent.** A POST may be sent again only if it
    cannot have reached the server (RFC 9110 9.2.2: a tool call is not idempotent). What
    can be known for certain is narrow:

    * urllib3 never reuses a pooled connection whose socket is readable when it is taken
      from the pool (the server's close, a reset, or stray bytes have arrived): it opens a
      new one. That covers a server that closed an idle connection a while ago.
    * Between that check and the first write, a reset may still arrive. ``socket.send``
      either takes some bytes or raises: when the first write of a request on a reused
      socket raises (not a timeout), nothing of the request went out, and it is written
      on a new connection instead, once (a new connection is never retried). That is
      the case handled here.
    * Once a byte is written, nothing tells a server that closed before reading it (its
      close crossing the request on the wire; it answers with a reset) from one that read
      the request and then failed, or from a proxy that passed it on and then dropped the
      connection. Such a POST may have reached the server: it is never sent again here,
      and fails with ``TransportError`` (``request_sent`` unknown).

    Checking the socket again just before writing would add nothing to urllib3's check
    but a system call: a close still in flight is invisible to both.

    **A connection is not reused near the end of the server's keep-alive time.** A server
    that announces ``Keep-Alive: timeout=N`` (Node's HTTP server does: ``timeout=5``)
    closes a connection idle for ``N`` seconds. A request sent on it just before then
    crosses the close on the wire and meets a reset, after its bytes went out: it cannot
    be sent again (see above) and fails. So a connection idle for longer than
    :func:`reuse_window` (``N`` less a second) reports itself not connected
    (:attr:`is_connected`, which urllib3 2 asks before it reuses a pooled connection) and
    the pool opens a new one instead; under urllib3 1.x, which does not ask, the
    connection lets its socket go when the request starts, and a new one is opened.
    Idle time is counted from the last response's headers, not its end: a connection
    whose last reply streamed for a while is given up early, never late.

    **A request with a small body goes out in one write**: http.client writes the head
    (request line and headers) and then the body, two system calls and, with
    ``TCP_NODELAY``, two segments the server wakes up for; a body of at most
    ``_ONE_WRITE`` bytes is sent with its head instead.
    """

    #: The socket that carried this connection's last response: a request on it reuses it.
    _served: Any = None
    #: True until the first write of the current request on a reused socket is done.
    _first_write_pending = False
    #: True while the head of the current request is still to come, to be held back.
    _hold_head = False
    #: The head held back, until the body's write takes it along.
    _head: Optional[bytes] = None
    #: When (``time.monotonic()``) the last response's headers arrived, and how long after
    #: that the connection may be reused (from its ``Keep-Alive``; None: no limit).
    _answered_at = 0.0
    _reuse_window: Optional[float] = None
    #: The socket the last response is read from (http.client gives it to a response
    #: that ends the connection, and forgets it): see :func:`socket_of`.
    response_socket: Optional[socket.socket] = None
    #: Under urllib3 1.x, the ``http.client`` response of the last request (what
    #: ``getresponse()`` returned): see :func:`plain_response`.
    plain_response: Any = None

    @property
    def is_connected(self) -> bool:
        """urllib3's check before it reuses a pooled connection (see the class docstring):
        False also once the connection has been idle past the server's keep-alive."""
        if self._idle_too_long():
            return False
        return super().is_connected

    def _idle_too_long(self) -> bool:
        window = self._reuse_window
        if window is None or self.sock is None:
            return False
        idle = time.monotonic() - self._answered_at
        if idle < window:
            return False
        log.debug("not reusing the connection to %s:%s: idle for %.2f s, near the end of "
                  "the keep-alive the server announced (reused for %.2f s at most)",
                  self.host, self.port, idle, window)
        return True

    def request(self, *args: Any, **kwargs: Any) -> None:
        if self._idle_too_long():
            # urllib3 1.x asks no is_connected before it reuses a connection: the socket
            # goes here instead, and http.client opens a new one for the request.
            self.close()
        self._first_write_pending = self.sock is not None and self.sock is self._served
        body = kwargs.get("body", args[2] if len(args) > 2 else None)
        self._hold_head = isinstance(body, bytes) and 0 < len(body) <= _ONE_WRITE
        try:
            super().request(*args, **kwargs)
            head = self._head
            if head is not None:  # no body was written after all: the head goes alone
                self._head = None
                self.send(head)
        finally:
            self._first_write_pending = False
            self._hold_head = False
            self._head = None

    def send(self, data: Any) -> None:
        if self._hold_head:  # http.client writes the whole head in one call, first
            self._hold_head = False
            self._head = data
            return
        head = self._head
        if head is not None:
            self._head = None
            data = head + data
        if self._first_write_pending:
            self._first_write_pending = False
            sock = self.sock
            if sock is not None and isinstance(data, bytes) and data:
                try:
                    written = sock.send(data)
                except socket.timeout:
                    raise
                except OSError as exc:  # nothing of the request went out (see above)
                    log.debug("the pooled connection to %s:%s failed before the request "
                              "went out (%r); sending it on a new connection", self.host,
                              self.port, exc)
                    self.sock = None
                    sock.close()
                    self.connect()
                    written = 0
                data = data[written:]
                if not data:
                    return
        super().send(data)

    def getresponse(self) -> Any:
        self._served = self.response_socket = self.sock
        _note_socket(self.sock)
        response = super().getresponse()
        self._answered_at = time.monotonic()
        self._reuse_window = reuse_window(response.headers.get("Keep-Alive"))
        if not _URLLIB3_READS_SOME:
            self.plain_response = response
        return response


class _TrackedHTTPConnection(_TrackedConnection, urllib3.connection.HTTPConnection):
    pass


class _TrackedHTTPSConnection(_TrackedConnection, urllib3.connection.HTTPSConnection):
    pass


class _TrackedHTTPConnectionPool(urllib3.HTTPConnectionPool):
    ConnectionCls = _TrackedHTTPConnection


class _TrackedHTTPSConnectionPool(urllib3.HTTPSConnectionPool):
    ConnectionCls = _TrackedHTTPSConnection


# At most this many URLs' pools and paths are remembered by an adapter.
_MEMO_SIZE = 32

_TRACKED_POOLS: Dict[str, Any] = {
    "http": _TrackedHTTPConnectionPool,
    "https": _TrackedHTTPSConnectionPool,
}


class InterruptibleAdapter(requests.adapters.HTTPAdapter):
    """An ``HTTPAdapter`` whose requests can be interrupted while awaiting headers.

    Its connections tell the exchange being sent on the current thread which socket they
    use; ``cancel()`` and ``close()`` shut that socket down. Mounted on the
    ``requests.Session`` the transport creates; a session passed in is left as it is.

    Without a proxy, the connection pool and the path a URL is sent to are looked up once
    per URL and TLS settings, not on every request (``requests`` parses the URL three
    times, looks at the CA bundle on disk and hashes a pool key for each one), through
    the methods ``HTTPAdapter`` offers to subclasses: a pool found closed is looked up
    afresh, and :meth:`close` (the session's) forgets them all, as the pool manager does,
    and closes them. Requests through a proxy take ``requests``' path every time.
    """

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _TRACKED_POOLS
        # (url, verify, cert) -> pool, and url -> the path sent: for requests without a
        # proxy only. Small: a transport sends to one URL (and its in-origin redirects).
        self._pools: Dict[Any, Any] = {}
        self._paths: Dict[str, str] = {}

    def get_connection_with_tls_context(self, request: requests.PreparedRequest, verify: Any,
                                        proxies: Any = None, cert: Any = None) -> Any:
        if proxies or not isinstance(cert, (str, tuple, type(None))):
            return super().get_connection_with_tls_context(request, verify, proxies, cert)
        return self._pool((request.url, verify, cert), lambda: (
            super(InterruptibleAdapter, self).get_connection_with_tls_context(
                request, verify, proxies, cert)))

    def get_connection(self, url: str, proxies: Any = None) -> Any:  # type: ignore[override]
        # What requests before 2.32.2 call instead (TLS settings go on the pool after).
        if proxies:
            return super().get_connection(url, proxies)
        return self._pool((url,), lambda: super(InterruptibleAdapter, self).get_connection(
            url, proxies))

    def _pool(self, key: Any, lookup: Any) -> Any:
        pool = self._pools.get(key)
        if pool is not None and pool.pool is not None:  # a closed pool's is None
            return pool
        pool = lookup()
        if len(self._pools) >= _MEMO_SIZE:
            self._pools.clear()
        self._pools[key] = pool
        return pool

    def close(self) -> None:
        # The pool manager forgets its pools here (without closing them, in urllib3 2):
        # so does the memo, or a request after this would go through a forgotten pool. One
        # the manager evicted earlier is known to the memo only: it is closed here.
        pools = list(self._pools.values())
        self._pools.clear()
        super().close()
        for pool in pools:
            pool.close()

    def request_url(self, request: requests.PreparedRequest, proxies: Any) -> str:
        url = request.url
        if proxies or not isinstance(url, str):
            return super().request_url(request, proxies)
        path = self._paths.get(url)
        if path is None:
            path = super().request_url(request, proxies)
            if len(self._paths) >= _MEMO_SIZE:
                self._paths.clear()
            self._paths[url] = path
        return path

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        # SOCKS managers bring their own pool classes: those stay.
        if manager.pool_classes_by_scheme is urllib3.poolmanager.pool_classes_by_scheme:
            manager.pool_classes_by_scheme = _TRACKED_POOLS
        return manager

