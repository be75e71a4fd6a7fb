"""The Streamable HTTP transport (MCP 2025-03-26 and later) over ``requests``.

Every message to the server is one POST. The server answers a request either with one
JSON body or with a server-sent event stream that carries the response, possibly after
notifications and (before 2026-07-28) server-to-client requests; a notification or a
response to the server is simply accepted (202).

Session era (2025-03-26 ... 2025-11-25): the reply to ``initialize`` assigns a session id
(``Mcp-Session-Id``) that every later request carries, with the negotiated
``MCP-Protocol-Version``; an optional GET stream carries what the server sends on its own;
a broken event stream is resumed with ``Last-Event-ID``; a 404 means the server lost the
session: the transport reports it as its close reason (:class:`~mcp_sync.SessionExpired`)
and the client starts a new one; ``close()`` ends the session with a DELETE. Stateless
era (2026-07-28): every request also mirrors its ``method`` and name into ``Mcp-Method``
and ``Mcp-Name`` (and the client's ``Mcp-Param-*`` headers come with the message); there
is no session, no GET stream, no resumption, and closing a request's stream is its
cancellation. The transport learns the era from the agreement the session hands down
(:meth:`HttpTransport.agree`), never from a message's ``_meta``.

The exchanges themselves (POSTing each message, reading its reply, resuming a broken
event stream, stopping any of it from another thread, the hot path) are
:class:`~._exchange.ExchangeEngine`'s, in ``_exchange.py``; this module is the MCP session
over them: its settings and lifecycle, the session id and its loss, the GET stream and the
``DELETE`` that ends the session.

Threads (all daemons, so that a client nobody closed never keeps the interpreter alive;
``close()`` interrupts and joins each of them with a bound): the stream threads and the
deadline thread of the exchanges (``_exchange.py``), and

* ``mcp-sync-listener-<name>``: the optional GET stream, opened between ``initialize``
  and ``notifications/initialized`` and re-opened with backoff when it ends.
"""

from __future__ import annotations

import logging
import re
import threading
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Tuple
from urllib.parse import urlsplit

import requests
from requests.auth import HTTPBasicAuth
from requests.models import PreparedRequest
from requests.utils import get_netrc_auth

from ..._util.jsonwire import encode
from ..._util.pool import ThreadPool
from ..._util.text import name_safe
from ..._util.threads import join_or_warn, start_thread
from ...exceptions import (
    ConnectionClosed,
    MCPError,
    MessageTooLarge,
    ProtocolError,
    SessionExpired,
    TransportError,
    excerpt,
)
from .._limits import DEFAULT_MAX_MESSAGE_SIZE
from ..base import CloseCallback, MessageCallback, RequestFailedCallback, Transport, origin_key
from ._bodies import ACCEPT_ENCODING
from ._deadlines import Watchdog
from ._exchange import (
    EVENT_STREAM,
    JSON,
    TRANSIENT,
    Exchange,
    ExchangeEngine,
    Headers,
    Timeout,
)
from ._interrupt import InterruptibleAdapter, set_read_timeout
from ._requests import close_session, refuse_cross_origin, refused, split_credentials
from ._responses import READ_ERRORS, discard, media_type

if TYPE_CHECKING:
    from ..._protocol.agreement import Agreement

__all__ = ["HttpTransport"]

log = logging.getLogger(__name__)

# Connections kept per host by the requests.Session the transport creates.
_POOL_SIZE = 64
# A stream thread that has had no request for this long retires.
_WORKER_IDLE = 30.0
# The GET stream gives up after this many openings in a row that brought nothing.
_LISTENER_MAX_FAILURES = 8
_SESSION_ID = re.compile(r"^[\x21-\x7e]+$")
# Headers every request carries alike, whoever sends it: not part of whose request it is.
_NOT_CREDENTIALS = frozenset({"accept", "accept-encoding", "content-type", "connection",
                              "user-agent"})


def _server_name(url: str) -> str:
    netloc = urlsplit(url).netloc.rsplit("@", 1)[-1]
    return name_safe(netloc)[:40] or "server"


class HttpTransport(ExchangeEngine, Transport):
    """Talks to an MCP server over Streamable HTTP (MCP 2025-03-26 and later).

    Args:
        url: the MCP endpoint, e.g. ``"https://example.com/mcp"``.
        headers: extra headers for every request (``Authorization``, say).
        auth: any ``requests`` auth (a ``requests.auth.AuthBase``, or a ``(user,
            password)`` tuple); called for every request, so a token can refresh itself.
        session: a ``requests.Session`` to use (its adapters, proxies, ``verify``,
            ``cert``, headers, cookies and auth apply); by default the transport creates
            one, and closes it in :meth:`close`. Its settings and the environment's
            (proxies, ``REQUESTS_CA_BUNDLE``, ``.netrc``) are read once, in :meth:`start`.
        name: a label for thread names and logs; by default the URL's host and port.
        timeout: seconds allowed for exchanges no request deadline covers: POSTing a
            notification or a response (one deadline for the whole exchange, its reply's
            body included: past it, a POST with no status yet fails with
            ``TransportError``, an accepted one's body is dropped), starting a new session
            after the server lost one, re-opening the GET stream; the DELETE in
            ``close()`` is further capped by ``close_timeout`` (for the whole exchange
            too), and the GET stream's first opening by ``min(1, timeout / 4)``.
            ``connect(url, timeout=...)`` sets it. ``None``: no limit.
        connect_timeout: seconds allowed to open a TCP (and TLS) connection.
        read_timeout: the longest a request's reply may go without a byte (waiting for its
            headers included) before it fails. ``None`` (the default): no limit of its own;
            the request's deadline, which the session enforces by cancelling the request
            and so closing its stream, bounds it.
        close_timeout: the bound for each step of :meth:`close`.
        listen: open the optional GET stream (session era) for messages the server sends
            on its own.
        max_resume_attempts: how many times in a row a broken event stream is resumed
            (GET with ``Last-Event-ID``) without bringing anything new before its request
            fails. A refused connection fails it at the first attempt: the server is gone.
        retry_delay: seconds to wait before resuming when the server sent no ``retry:``.
        max_retry_delay: the longest wait before a resumption or a re-opening, whatever
            ``retry:`` says and however far the backoff grows.
        max_message_size: the longest JSON body or SSE event accepted from the server
            (64 MiB by default), in decoded bytes (a gzip body is inflated only as far as
            it is read); no more than that (and one read) is ever held. A longer
            one is not read on: its connection is dropped and the request it belongs to
            (its POST's, or the one whose id starts it) fails at once with
            :class:`~mcp_sync.MessageTooLarge`.

    Can be shared between threads: every method may be called from any thread.
    """

    #: Each message may carry headers of its own (``Mcp-Param-*``).
    carries_headers = True
    #: Every POST gets a status: a session-era server refuses ``server/discover`` at once
    #: (HTTP 400/404/405 or a JSON-RPC error), so silence means busy, not old.
    answers_every_request = True

    def __init__(
        self,
        url: str,
        headers: Optional[Mapping[str, str]] = None,
        auth: Any = None,
        session: Optional[requests.Session] = None,
        *,
        name: Optional[str] = None,
        timeout: Optional[float] = 30.0,
        connect_timeout: Optional[float] = 10.0,
        read_timeout: Optional[float] = None,
        close_timeout: float = 2.0,
        listen: bool = True,
        max_resume_attempts: int = 3,
        retry_delay: float = 1.0,
        max_retry_delay: float = 30.0,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"HttpTransport needs an http:// or https:// URL, got {url!r}")
        # A user:password@ in the URL is kept apart (sent as Basic auth, as requests
        # would): every message and repr() shows the URL without it (_requests.py).
        self.url, self._url_credentials = split_credentials(url)
        self.headers: Dict[str, str] = dict(headers or {})
        self.auth = auth
        self.session = session
        self.name = name or _server_name(url)
        self.named_by_default = not name
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.close_timeout = close_timeout
        self.listen = listen
        self.max_resume_attempts = max_resume_attempts
        self.retry_delay = retry_delay
        self.max_retry_delay = max_retry_delay
        self.max_message_size = max_message_size
        # Guards the lifecycle flags, the exchange table and the GET stream's thread.
        self._state_lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self._started = False
        self._closing = False
        self._reported = False
        self._on_message = None
        self._on_close: Optional[CloseCallback] = None
        self._on_request_failed = None
        self._http = None
        self._owns_http = False
        self._workers = ThreadPool(f"mcp-sync-stream-{self.name}", idle_timeout=_WORKER_IDLE)
        self._watchdog = Watchdog(f"mcp-sync-deadline-{self.name}")
        self._exchanges = {}
        self._session_id = None
        self.agreement = None
        # The server forgot the MCP session: reported as the close reason; nothing more
        # is delivered or sent (a new session is the client's to start).
        self._expired = False
        self._listener: Optional[threading.Thread] = None
        self._listener_exchange: Optional[Exchange] = None
        self._listener_disabled = False
        self._base_headers = Headers()
        self._headers = Headers()
        self._send_kwargs = {}
        self._request_auth = None
        self._request_timeout = (None, None)
        # Response hooks of every request: the session's, behind the refusal of redirects
        # to another origin (_requests.py).
        self._hooks = {"response": [refuse_cross_origin]}
        self._url = self.url

    @property
    def target(self) -> str:
        return self.url

    def rename(self, name: str) -> None:
        """Use ``name`` from now on, in messages and for the stream and listener threads."""
        with self._state_lock:  # the listener is started under it
            self.name = name
            self._workers.rename(f"mcp-sync-stream-{name}")
            self._watchdog.rename(f"mcp-sync-deadline-{name}")
            if self._listener is not None:
                self._listener.name = f"mcp-sync-listener-{name}"

    @property
    def session_id(self) -> Optional[str]:
        """The ``Mcp-Session-Id`` the server assigned in reply to ``initialize``, if any."""
        return self._session_id

    def credentials(self) -> Tuple[Dict[str, str], Any]:
        """What says whose requests these are: the headers sent with every request (the
        ``requests`` session's and this transport's, without the ones every request
        carries alike: ``Accept``, ``Content-Type``...) and the auth applied (this
        transport's, else the session's, ``.netrc``'s or the URL's ``user:password``,
        as ``requests`` picks it; settled by :meth:`start`). The response cache digests
        them into its authorization context; they are secrets, never to be shown."""
        if self._started:
            headers = dict(self._base_headers.items())
            auth = self._request_auth
        else:
            headers = dict(self.headers)
            auth = self.auth if self.auth is not None else self._url_credentials
        if isinstance(auth, tuple) and len(auth) == 2:
            auth = HTTPBasicAuth(*auth)
        sent = {key: value for key, value in headers.items()
                if key.lower() not in _NOT_CREDENTIALS}
        return sent, auth

    # -- lifecycle -----------------------------------------------------------------------

    def start(self, on_message: MessageCallback, on_close: CloseCallback,
              on_request_failed: RequestFailedCallback) -> None:
        """Work out the HTTP settings once; nothing is sent until the first message.

        Raises:
            TransportError: the transport is running already.
        """
        with self._state_lock:
            if self._started and not self._closing:
                raise TransportError(f"{self!r} is running already")
            if self._started or self._closing:
                self._reset()  # closed before: start afresh (a reconnect)
            self._started = True
            self._on_message, self._on_close = on_message, on_close
            self._on_request_failed = on_request_failed
        http = self.session
        if http is None:
            http = requests.Session()
            # Room for a busy client: every request in flight holds a connection until its
            # reply is read, and the GET stream holds one more.
            adapter = InterruptibleAdapter(pool_maxsize=_POOL_SIZE)
            http.mount("http://", adapter)
            http.mount("https://", adapter)
            self._owns_http = True
        self._http = http
        # What requests works out on every call (proxies from the environment, the CA
        # bundle), worked out once: the hot path then only sends.
        settings = http.merge_environment_settings(self.url, {}, True, None, None)
        self._send_kwargs = {
            "stream": True, "verify": settings["verify"], "cert": settings["cert"],
            "proxies": settings["proxies"],
        }
        prepared = PreparedRequest()
        prepared.prepare_url(self.url, None)
        self._url = str(prepared.url)
        # The auth requests would pick: ours, the session's, .netrc's, the URL's.
        auth = self.auth if self.auth is not None else http.auth
        if auth is None and http.trust_env:
            auth = get_netrc_auth(self.url)
        if auth is None:
            auth = self._url_credentials
        if isinstance(auth, tuple) and len(auth) == 2:
            auth = HTTPBasicAuth(*auth)
        self._request_auth = auth
        session_hooks = http.hooks.get("response") or []
        self._hooks = {"response": [refuse_cross_origin, *(
            [session_hooks] if callable(session_hooks) else session_hooks)]}
        base = Headers()
        for key, value in http.headers.items():
            base[key] = value if isinstance(value, str) else value.decode("latin-1")
        base.update(self.headers)
        base["Accept"] = f"{JSON}, {EVENT_STREAM}"
        if not any(key.lower() == "accept-encoding" for key in self.headers):
            base["Accept-Encoding"] = ACCEPT_ENCODING  # what _bodies.py decodes itself
        base["Content-Type"] = JSON
        self._base_headers = base
        self._rebuild_headers()

    @property
    def era_key(self) -> Any:
        return origin_key(self.url)

    def agree(self, agreement: Agreement) -> None:
        """Frame messages by ``agreement`` from now on: its ``MCP-Protocol-Version`` on
        every message, the headers a stateless request mirrors; and for a settled
        agreement that keeps a session, open the GET stream.

        The client hands the settled session-era agreement down between ``initialize``
        and ``notifications/initialized``, so the GET stream is open before the server is
        told the client is ready. Waits at most ``min(1, timeout / 4)`` seconds for it.
        """
        self.agreement = agreement
        self._rebuild_headers()
        if self.listen and agreement.settled and agreement.keeps_session:
            self._start_listener(wait=True)

    def _connected(self) -> bool:
        agreement = self.agreement
        return agreement is not None and agreement.settled

    def close(self) -> None:
        """End the session (DELETE), stop every stream and thread, each step bounded.

        Idempotent. Pending requests fail with :class:`~mcp_sync.ConnectionClosed` through
        the close report, which comes exactly once.
        """
        with self._state_lock:
            if self._closing:
                return
            self._closing = True
            started = self._started
            exchanges = list(self._exchanges.values())
            listener, listener_exchange = self._listener, self._listener_exchange
        if not started:
            return
        # 1. Wake every thread blocked on the server: their reads end at once.
        for exchange in exchanges:
            exchange.abort()
        if listener_exchange is not None:
            listener_exchange.abort()
        # 2. Tell the server the session is over.
        self._delete_session()
        # 3. Join the threads.
        self._workers.stop(self.close_timeout)
        join_or_warn(listener, self.close_timeout, "closing the transport", log)
        self._watchdog.stop(self.close_timeout)
        # 4. Release the connections.
        if self._owns_http and self._http is not None:
            close_session(self._http)
        self._report_close()

    def _delete_session(self) -> None:
        session_id = self._session_id
        if session_id is None or self._http is None:
            return
        bound = self.close_timeout if self.timeout is None else min(self.close_timeout,
                                                                    self.timeout)
        # One deadline for the whole DELETE, its body included: a server trickling its
        # reply cannot hold close() past it.
        exchange = Exchange(object(), "DELETE", None)
        deadline = self._watchdog.watch(bound, exchange.abort)
        try:
            response = self._send_http("DELETE", None, self._headers.copy(),
                                       timeout=(bound, bound), exchange=exchange,
                                       what="(end of session)")
            discard(response)
            log.debug("DELETE of session %s at %s: HTTP %s", session_id, self.url,
                      response.status_code)
        except (MCPError, *READ_ERRORS) as exc:
            log.debug("DELETE of session %s at %s failed: %r", session_id, self.url, exc)
        finally:
            if deadline is not None:
                deadline.cancel()
                if deadline.expired:
                    log.info("mcp-sync %s: the DELETE of session %s got no whole reply "
                             "within %s s; dropped", self.name, session_id, bound)

    def _report_close(self, error: Optional[ConnectionClosed] = None) -> None:
        with self._state_lock:
            if self._reported:
                return
            self._reported = True
            on_close = self._on_close
        if on_close is not None:
            on_close(error or ConnectionClosed(f"connection to {self.name} closed by the "
                                               "client"))

    # -- messages ----------------------------------------------------------------------

    def send(self, message: Dict[str, Any], headers: Optional[Mapping[str, str]] = None) -> None:
        """POST one message. Thread-safe.

        A request's POST runs on a stream thread and ``send()`` returns at once; its
        failure reaches the caller through ``on_request_failed``. A notification or a
        response is POSTed here; a status other than 2xx is logged (nobody waits for it).
        ``headers`` are extra headers for this message (the client's ``Mcp-Param-*``).

        Raises:
            ConnectionClosed: the transport is not started or is closed.
            TransportError: the server could not be reached (a notification or response).
            HTTPError: the server refused a request (only without ``on_request_failed``).
        """
        if not self._started or self._closing or self._expired:
            closed = ConnectionClosed(f"connection to {self.name} is closed" if self._started
                                      else f"{self!r} is not started")
            if self._expired and not self._closing:
                closed = SessionExpired(f"{self.name} forgot its MCP session; a new session "
                                        "must be started")
            closed.request_sent = False
            raise closed
        body = encode(message).encode("utf-8")
        method = message.get("method")
        if method is None or "id" not in message:
            self._post_message(message, body, headers)
            return
        request_id = message["id"]
        method = str(method)
        framing = self.agreement
        wire_headers: Optional[Dict[str, str]] = dict(headers) if headers else None
        if framing is not None:
            mirrored = framing.request_headers(method, message.get("params"))
            if mirrored:
                wire_headers = {**(wire_headers or {}), **mirrored}
        self._start_exchange(Exchange(request_id, method, body, wire_headers, framing))

    def cancel(self, request_id: Any) -> bool:
        """Stop reading the request's reply: its stream is closed, its thread moves on.

        Returns True when closing the stream is the cancellation (the agreement says so:
        the stateless era); False otherwise (the session then sends
        ``notifications/cancelled``).
        """
        exchange = self._exchanges.get(request_id)
        if exchange is not None:
            exchange.abort()
            return exchange.cancels_by_closing
        agreement = self.agreement
        return agreement is not None and agreement.cancels_by_closing

    def _rebuild_headers(self) -> None:
        headers = self._base_headers.copy()
        if self._session_id is not None:
            headers["Mcp-Session-Id"] = self._session_id
        version = self.agreement.protocol_header if self.agreement is not None else None
        if version is not None:
            headers["MCP-Protocol-Version"] = version
        # Replaced whole, never mutated: a thread that copied the old one is unaffected.
        self._headers = headers

    # -- the MCP session: its id, and its loss -------------------------------------------

    def _note_session_id(self, response: requests.Response) -> None:
        session_id = response.headers.get("Mcp-Session-Id")
        if session_id is None:
            return
        if not _SESSION_ID.match(session_id):
            raise ProtocolError(f"{self.url} sent an invalid Mcp-Session-Id: "
                                f"{excerpt(session_id, 80)!r}")
        self._session_id = session_id
        self._rebuild_headers()
        log.debug("%s assigned session id %s", self.url, session_id)

    def _session_lost(self, stale_id: str, what: str,
                      exchange: Optional[Exchange] = None) -> SessionExpired:
        """The server answered 404 to ``stale_id``: it forgot the MCP session (a restart,
        an expiry). Starting a new one is the client's business (a handshake, then what
        the old session held), so the transport only reports it: the close reason is a
        :class:`SessionExpired`, every exchange in flight is stopped, and nothing more is
        delivered or sent. Returns the error for the request that met the 404, marked
        as not processed (``request_sent = False``), so the client may send it again;
        it reaches the session before the close report does.
        """
        message = (f"{self.name} forgot MCP session {stale_id} (HTTP 404 on {what}); "
                   "a new session must be started")
        failed = SessionExpired(message)
        failed.request_sent = False
        hook = self._on_request_failed
        if exchange is not None and hook is not None and not exchange.aborted.is_set():
            hook(exchange.request_id, failed)
        with self._state_lock:
            first = not self._expired and self._session_id == stale_id
            if first:
                self._expired = True
                self._session_id = None  # nothing to DELETE: the server has no such session
            exchanges = list(self._exchanges.values())
            listener_exchange = self._listener_exchange
        if first:
            self._rebuild_headers()
            log.info("mcp-sync %s: session %s expired (HTTP 404 on %s)", self.name, stale_id,
                     what)
            self._report_close(SessionExpired(message))
            for other in exchanges:
                other.abort()
            if listener_exchange is not None:
                listener_exchange.abort()
        return failed

    # -- the MCP session: the GET stream -------------------------------------------------

    def _listener_is_open(self) -> bool:
        listener = self._listener
        return listener is not None and listener.is_alive() and not self._listener_disabled

    def _start_listener(self, *, wait: bool) -> None:
        started = threading.Event()
        with self._state_lock:
            if self._closing or self._listener_disabled:
                return
            if self._listener is not None and self._listener.is_alive():
                return
            exchange = Exchange(None, "GET stream", None)
            # A daemon like the stream threads; close() aborts its stream and joins it.
            thread = start_thread(self._listen, f"mcp-sync-listener-{self.name}", exchange,
                                  started)
            self._listener, self._listener_exchange = thread, exchange
        if wait:
            started.wait(self._listener_start_wait())

    def _listener_start_wait(self) -> float:
        return 1.0 if self.timeout is None else min(1.0, self.timeout / 4)

    def _listen(self, exchange: Exchange, started: threading.Event) -> None:
        """Keep the GET stream open while the transport is: re-open it when it ends.

        The first opening must succeed at once: a 404, 405, any other non-2xx, a reply that
        is not an event stream, or no headers within the start wait disable it quietly
        (the server simply offers none). Later, a 404 on the session id means the server
        forgot the session (:meth:`_session_lost`: the client starts a new one, and the
        new session opens a new stream) and a 405 that it is off; other failures are retried with
        backoff, ``_LISTENER_MAX_FAILURES`` times in a row at most; a refused connection
        ends it (the server is gone; a new session after a restart opens a new one).
        """
        first = True
        failures = 0
        decoder = self._new_decoder()  # one for every opening: last_event_id resumes the next
        try:
            while not exchange.aborted.is_set():
                wait = self._listener_start_wait()
                timeout: Timeout = (wait, wait) if first else (self.connect_timeout,
                                                               self.timeout)
                session_id = self._session_id
                headers = self._headers.copy()
                headers["Accept"] = EVENT_STREAM
                del headers["Content-Type"]
                if decoder.last_event_id:
                    headers["Last-Event-ID"] = decoder.last_event_id
                response: Optional[requests.Response] = None
                try:
                    response = self._send_http("GET", None, headers, timeout=timeout,
                                               exchange=exchange, what="(GET stream)")
                except TransportError as exc:
                    if exchange.aborted.is_set():
                        return
                    if first:
                        log.debug("no GET stream from %s: %s", self.url, exc)
                        self._listener_disabled = True
                        return
                    if refused(exc):
                        log.debug("the GET stream of %s is gone: %s", self.url, exc)
                        return
                    log.debug("re-opening the GET stream of %s failed: %s", self.url, exc)
                if response is not None:
                    status = response.status_code
                    media = media_type(response)
                    if not 200 <= status < 300 or media != EVENT_STREAM:
                        discard(response)
                        if first or status == 405:
                            log.debug("%s offers no GET stream (HTTP %s, %s)", self.url,
                                      status, excerpt(repr(media), 80))
                            self._listener_disabled = True
                            return
                        if status == 404 and session_id is not None:
                            self._session_lost(session_id, "the GET stream")
                            return
                        if 400 <= status < 500 and status not in TRANSIENT:
                            log.debug("the GET stream of %s is gone (HTTP %s)", self.url,
                                      status)
                            return
                    else:
                        if first:
                            first = False
                            started.set()
                        # It may idle for hours: only close() ends a read on it.
                        set_read_timeout(response, None)
                        try:
                            if self._pump(exchange, response, decoder) > 0:
                                failures = 0
                        except MessageTooLarge:
                            pass  # logged; dropped: re-opened like a broken stream
                if exchange.aborted.is_set():
                    return
                failures += 1
                if failures > _LISTENER_MAX_FAILURES:
                    log.info("mcp-sync %s: giving up on the GET stream after %d attempts",
                             self.name, failures - 1)
                    return
                if exchange.aborted.wait(self._retry_delay(decoder.retry, failures - 1)):
                    return
        finally:
            started.set()
