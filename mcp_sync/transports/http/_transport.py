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

How one request flows::

    caller thread                    stream thread (pool)               dispatch thread
    -------------                    --------------------               ---------------
    session.submit() -> send(msg)
      queue the exchange  -------->  POST, read the status and headers
    future.result(deadline)          JSON body: parse, on_message -->   resolve the future
                                     SSE body: each event as it lands
                                       on_message(...)  ------------>   notifications,
                                     ...keeps draining the stream        server requests,
                                     until it ends                       the response

A message is handed over with ``first`` True when it opens its stream (the JSON body; the
first event of a request's stream, resumptions included): the response to a blocked
``request()`` is then resolved on the stream thread itself, without the dispatch thread
(``RpcSession._enqueue``); one behind other messages of its stream waits for them there.

``send()`` never blocks on the server for a request: the POST runs on a stream thread, so
the session's deadline holds even against a server that sits on its response headers
(a JSON reply to a long tool call), and ``submit()`` really returns at once. An error
from that POST (a non-2xx status, an unreachable server, an unparsable body) reaches the
caller through the ``on_request_failed`` callback the session gives :meth:`HttpTransport.start`.
Notifications and responses to the server are POSTed on the sending thread: the server
accepts them at once.

Threads (all daemons, so that a client nobody closed never keeps the interpreter alive;
``close()`` interrupts and joins each of them with a bound):

* ``mcp-sync-stream-<name>-<n>``: a small pool, one thread per request in flight. Each
  POSTs its request, reads the reply, resumes a broken event stream, and ends its exchange
  when the stream ends. Idle threads wait for the next request and retire after a while.
* ``mcp-sync-listener-<name>``: the optional GET stream, opened between ``initialize``
  and ``notifications/initialized`` and re-opened with backoff when it ends.
* ``mcp-sync-deadline-<name>``: keeps one deadline for each whole exchange no request
  deadline covers (a notification's or a response's POST and its body, the ``DELETE`` in
  ``close()``), and shuts its socket down when it passes (``_deadlines.py``); started
  on first use, retired when idle.

Blocked reads end when ``cancel()`` or ``close()`` shuts the socket down
(``_interrupt.py``). On a ``requests.Session`` the transport created itself, that
includes a request still waiting for its response headers; on a session passed in, such
a request can only be abandoned, and ends when the server answers (or ``read_timeout``
passes).

The hot path does what ``requests.Session.post`` does minus what need not be redone per
call: proxies from the environment, the CA bundle, ``.netrc`` and the merged headers are
worked out once in :meth:`HttpTransport.start`, with ``requests``' public helpers; each
message then costs one prepared request (its cookies and auth prepared by ``requests``),
one ``requests.Session.send`` (its hooks, cookies and redirects, all ``requests``' own)
and big reads of its body.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    List,
    Mapping,
    Optional,
    Tuple,
    Union,
)
from urllib.parse import urlsplit

import requests
import urllib3
from requests.auth import HTTPBasicAuth
from requests.models import PreparedRequest
from requests.structures import CaseInsensitiveDict
from requests.utils import get_netrc_auth

from ..._rpc.core import ANSWERS, classify
from ..._util.jsonwire import decode_line, decode_object, encode
from ..._util.pool import ThreadPool
from ..._util.text import name_safe
from ..._util.threads import join_or_warn, start_thread
from ...exceptions import (
    ConnectionClosed,
    HTTPError,
    MCPError,
    MessageTooLarge,
    ProtocolError,
    SessionExpired,
    TransportError,
    excerpt,
)
from .._limits import DEFAULT_MAX_MESSAGE_SIZE, ID_PREFIX, response_id_in
from ..base import (
    CloseCallback,
    MessageCallback,
    RequestFailedCallback,
    Transport,
    log_malformed,
    origin_key,
)
from ._bodies import ACCEPT_ENCODING, read_decoded
from ._deadlines import Deadline, Watchdog
from ._interrupt import Interruptible, InterruptibleAdapter, sending, set_read_timeout
from ._requests import (
    close_session,
    connect_failed,
    doing,
    endpoint_hint,
    failure_reason,
    refuse_cross_origin,
    refused,
    split_credentials,
)
from ._responses import ERROR_BODY_LIMIT, READ_ERRORS, discard, media_type, read_body
from ._sse import EventTooLarge, SSEDecoder, read1_of

if TYPE_CHECKING:
    from ..._protocol.agreement import Agreement

__all__ = ["HttpTransport"]

log = logging.getLogger(__name__)

_JSON = "application/json"
_EVENT_STREAM = "text/event-stream"
_READ_SIZE = 1 << 16
# How much of a body nobody needs (a 202's) is read so that its connection can be reused;
# a longer one is dropped with its connection.
_ACK_LIMIT = 64 * 1024
# Connections kept per host by the requests.Session the transport creates.
_POOL_SIZE = 64
# A stream thread that has had no request for this long retires.
_WORKER_IDLE = 30.0
# The GET stream gives up after this many openings in a row that brought nothing.
_LISTENER_MAX_FAILURES = 8
# Statuses worth retrying a GET for; any other 4xx means "not here, not now".
_TRANSIENT = frozenset({408, 409, 425, 429})
_SESSION_ID = re.compile(r"^[\x21-\x7e]+$")

Timeout = Union[None, float, Tuple[Optional[float], Optional[float]]]


if TYPE_CHECKING:
    _Headers = CaseInsensitiveDict[str]
else:  # not subscriptable at run time in older requests
    _Headers = CaseInsensitiveDict


def _server_name(url: str) -> str:
    netloc = urlsplit(url).netloc.rsplit("@", 1)[-1]
    return name_safe(netloc)[:40] or "server"


class _Exchange(Interruptible):
    """One HTTP exchange in flight (a request's POST and its resumptions, or the GET
    stream); stopping it from another thread is :class:`~._interrupt.Interruptible`'s.

    ``answered`` is set by whichever thread delivers the response: a plain flag that only
    ever goes from False to True (a reader that misses the change resumes once too often,
    and the session ignores what it then reports). ``delivered`` is set by the one thread
    reading the exchange once it delivered a message: what it delivers later is not its
    stream's first (see :meth:`HttpTransport._deliver`).
    """

    __slots__ = ("answered", "body", "delivered", "framing", "headers", "method",
                 "request_id")

    def __init__(
        self, request_id: Any, method: str, body: Optional[bytes],
        headers: Optional[Dict[str, str]] = None, framing: Optional[Agreement] = None,
    ) -> None:
        super().__init__()
        self.request_id = request_id
        self.method = method
        self.body = body
        #: Headers of this message only (the 2026-07-28 mirrored fields, Mcp-Param-*).
        self.headers = headers
        #: The agreement this message was framed by (None before negotiation).
        self.framing = framing
        self.answered = False
        self.delivered = False

    @property
    def cancels_by_closing(self) -> bool:
        return self.framing is not None and self.framing.cancels_by_closing

    @property
    def errors_in_status(self) -> bool:
        return self.framing is not None and self.framing.errors_in_status

    @property
    def resumable(self) -> bool:
        return self.framing is None or self.framing.resumable


class HttpTransport(Transport):
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
        self._on_message: Optional[MessageCallback] = None
        self._on_close: Optional[CloseCallback] = None
        self._on_request_failed: Optional[RequestFailedCallback] = None
        self._http: Optional[requests.Session] = None
        self._owns_http = False
        self._workers = ThreadPool(f"mcp-sync-stream-{self.name}", idle_timeout=_WORKER_IDLE)
        self._watchdog = Watchdog(f"mcp-sync-deadline-{self.name}")
        self._exchanges: Dict[Any, _Exchange] = {}
        self._session_id: Optional[str] = None
        self.agreement = None
        # The server forgot the MCP session: reported as the close reason; nothing more
        # is delivered or sent (a new session is the client's to start).
        self._expired = False
        self._listener: Optional[threading.Thread] = None
        self._listener_exchange: Optional[_Exchange] = None
        self._listener_disabled = False
        self._base_headers = _Headers()
        self._headers = _Headers()
        self._send_kwargs: Dict[str, Any] = {}
        self._request_auth: Any = None
        # (connect_timeout, read_timeout) and the urllib3 Timeout a request's POST gets
        # (requests takes one as it takes a tuple; the stubs know only the tuple).
        self._request_timeout: Tuple[Any, Any] = (None, None)
        # Response hooks of every request: the session's, behind the refusal of redirects
        # to another origin (_requests.py).
        self._hooks: Dict[str, List[Any]] = {"response": [refuse_cross_origin]}
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
        base = _Headers()
        for key, value in http.headers.items():
            base[key] = value if isinstance(value, str) else value.decode("latin-1")
        base.update(self.headers)
        base["Accept"] = f"{_JSON}, {_EVENT_STREAM}"
        if not any(key.lower() == "accept-encoding" for key in self.headers):
            base["Accept-Encoding"] = ACCEPT_ENCODING  # what _bodies.py decodes itself
        base["Content-Type"] = _JSON
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
        exchange = _Exchange(object(), "DELETE", None)
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

    # -- the exchange engine: sending ----------------------------------------------------

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
        exchange = _Exchange(request_id, method, body, wire_headers, framing)
        with self._state_lock:
            if self._closing:
                closed = ConnectionClosed(f"connection to {self.name} closed by the client")
                closed.request_sent = False
                raise closed
            self._exchanges[request_id] = exchange
        try:
            self._spawn(self._run_exchange, exchange)
        except BaseException:
            self._forget(exchange)
            raise

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

    def _send_http(
        self,
        method: str,
        body: Optional[bytes],
        headers: _Headers,
        *,
        timeout: Timeout,
        exchange: Optional[_Exchange] = None,
        what: str = "",
    ) -> requests.Response:
        """Send one HTTP request on the hot path (``headers`` is used up).

        Raises:
            TransportError: the server could not be reached or did not answer in time.
        """
        http = self._http
        if http is None:
            raise ConnectionClosed(f"{self!r} is not started")
        prepared = PreparedRequest()
        prepared.method = method
        prepared.url = self._url
        prepared.headers = headers
        prepared.body = body
        prepared.hooks = self._hooks
        if body is not None:
            headers["Content-Length"] = str(len(body))
        elif method != "GET":
            headers["Content-Length"] = "0"
        prepared.prepare_cookies(http.cookies)
        if self._request_auth is not None:
            prepared.prepare_auth(self._request_auth)
        if exchange is not None:
            sending(exchange)
        try:
            response = http.send(prepared, timeout=timeout, **self._send_kwargs)
        except requests.RequestException as exc:
            raise self._unreachable(exc, method, what) from exc
        finally:
            if exchange is not None:
                sending(None)
        if exchange is not None:
            exchange.attach_response(response)
        return response

    def _unreachable(self, exc: requests.RequestException, method: str,
                     what: str) -> TransportError:
        label = doing(what, connected=self._connected())
        where = f"{label}: " if label else ""
        if isinstance(exc, requests.ReadTimeout):
            error = TransportError(f"{where}no response from {self.url} in time")
        elif isinstance(exc, requests.ConnectionError):
            error = TransportError(f"{where}cannot reach {self.url}: {failure_reason(exc)}")
        else:
            error = TransportError(f"{where}{method} {self.url} failed: {excerpt(exc, 300)}")
        if connect_failed(exc):
            error.request_sent = False
        return error

    def _http_error(self, response: requests.Response, what: Optional[str],
                    body: Optional[bytes] = None) -> HTTPError:
        if body is None:
            try:
                body = read_body(response, ERROR_BODY_LIMIT)
            except READ_ERRORS as exc:
                body = f"(body unreadable: {exc!r})".encode()
        label = doing(what, connected=self._connected())
        status = response.status_code
        error = HTTPError(
            status, url=self.url, body=body.decode("utf-8", "replace"),
            www_authenticate=response.headers.get("WWW-Authenticate"),
            auth_server=response.headers.get("Mcp-Auth-Server"), method=what,
            verb=response.request.method if response.request is not None else None,
            during=label,
            hint=endpoint_hint(self.url) if label == "connect" and status in (404, 405) else None,
        )
        error.request_sent = True
        return error

    def _post_message(self, message: Dict[str, Any], body: bytes,
                      extra: Optional[Mapping[str, str]] = None) -> None:
        """POST a notification or a response on the calling thread; 202 is the answer.

        The whole exchange (headers, body, and the drain of an event stream sent back)
        has one deadline, ``timeout``. Past it, before the status arrived, the POST fails
        with ``TransportError``; after a 2xx status, the message was accepted: the rest of
        the body is dropped with its connection, and the POST succeeds. A body that is
        neither JSON nor an event stream (a 202's) is read up to 64 KiB, no further.

        Raises:
            TransportError: no status before the deadline, or the server is unreachable.
        """
        what = message.get("method") or f"response to id={message.get('id')!r}"
        headers = self._headers.copy()
        if extra:
            headers.update(extra)
        # Registered under a key no request has (if it turns into a stream to drain).
        exchange = _Exchange(object(), what, None)
        deadline = self._watchdog.watch(self.timeout, exchange.abort)
        handed_over = False
        try:
            try:
                response = self._send_http("POST", body, headers,
                                           timeout=(self.connect_timeout, self.timeout),
                                           exchange=exchange, what=what)
            except TransportError as exc:
                if deadline is not None and deadline.expired:
                    label = doing(what, connected=self._connected())
                    error = TransportError(f"{label}: no reply from {self.url} within the "
                                           f"timeout of {deadline.timeout} s")
                    raise error from exc
                raise
            status = response.status_code
            if not 200 <= status < 300:
                error = self._http_error(response, what)
                log.warning("mcp-sync %s: the server did not accept %s: %s", self.name, what,
                            error)
                return
            media = media_type(response)
            if media == _EVENT_STREAM:  # not what the spec says, but deliver what it carries
                with self._state_lock:
                    closing = self._closing
                    if not closing:
                        self._exchanges[exchange.request_id] = exchange
                if closing:
                    response.close()
                    return
                try:
                    self._spawn(self._drain, exchange, response, deadline)
                    handed_over = True
                except ConnectionClosed:
                    self._forget(exchange)
                    response.close()
                return
            try:
                if media == _JSON:
                    data = self._read_json_body(response, f"a JSON reply to {what}", None)
                else:  # nobody needs it: read it only to reuse the connection
                    data = read_body(response, _ACK_LIMIT + 1)
                    if len(data) > _ACK_LIMIT:
                        log.debug("dropped the %s-byte-plus reply to %s", _ACK_LIMIT, what)
                    return
            except MessageTooLarge:
                return  # logged; nobody waits for it
            except READ_ERRORS as exc:
                if deadline is not None and deadline.expired:
                    log.info("mcp-sync %s: the reply to %s did not end within %s s; dropped",
                             self.name, what, deadline.timeout)
                else:
                    log.debug("reading the reply to %s failed: %r", what, exc)
                return
            if data.strip():
                self._deliver_json(data, None, what)
        finally:
            if deadline is not None and not handed_over:
                deadline.cancel()

    # -- the exchange engine: one request ------------------------------------------------

    def _run_exchange(self, exchange: _Exchange) -> None:
        """A stream thread's whole job for one request: POST, read, resume, report."""
        try:
            if exchange.aborted.is_set():
                return
            try:
                response = self._open(exchange)
            except MCPError as exc:
                self._fail(exchange, exc)
                return
            if response is not None:
                self._consume(exchange, response)
        except Exception as exc:  # never leave the caller waiting on a bug
            log.exception("exchange for %s id=%r failed", exchange.method, exchange.request_id)
            error = TransportError(f"{exchange.method} (id={exchange.request_id!r}) to "
                                   f"{self.url} failed: {exc!r}")
            error.__cause__ = exc
            self._fail(exchange, error)
        finally:
            self._forget(exchange)

    def _spawn(self, fn: Callable[..., None], *args: Any) -> None:
        """Run ``fn(*args)`` on a stream thread.

        Raises:
            ConnectionClosed: the transport is closing.
        """
        if not self._workers.submit(fn, *args):
            closed = ConnectionClosed(f"connection to {self.name} closed by the client")
            closed.request_sent = False
            raise closed

    def _forget(self, exchange: _Exchange) -> None:
        with self._state_lock:
            if self._exchanges.get(exchange.request_id) is exchange:
                del self._exchanges[exchange.request_id]

    def _fail(self, exchange: _Exchange, error: BaseException) -> None:
        """Report that a request will get no response (unless cancelled or answered)."""
        if exchange.aborted.is_set() or exchange.answered:
            log.debug("%s id=%r ended: %r", exchange.method, exchange.request_id, error)
            return
        hook = self._on_request_failed
        if hook is None:
            log.warning("mcp-sync %s: %s id=%r failed: %s", self.name, exchange.method,
                        exchange.request_id, error)
            return
        hook(exchange.request_id, error)

    def _open(self, exchange: _Exchange) -> Optional[requests.Response]:
        """POST the request and return its 2xx response, headers read, body not.

        Returns None when the reply was an error already delivered as a JSON-RPC error
        (the stateless era answers a bad request with 4xx and a JSON-RPC error body). A
        404 on a request that carried a session id means the server lost the session
        (:meth:`_session_lost`).

        Raises:
            HTTPError: a status other than 2xx.
            SessionExpired: the server forgot the session (the request was not processed).
            TransportError: the server could not be reached.
        """
        session_id = self._session_id
        headers = self._headers.copy()
        if exchange.headers:
            headers.update(exchange.headers)
        # urllib3's Timeout for these two, made once (requests would make one per call).
        timeouts = (self.connect_timeout, self.read_timeout)
        made = self._request_timeout
        if made[0] != timeouts:
            made = self._request_timeout = (timeouts, urllib3.Timeout(connect=timeouts[0],
                                                                      read=timeouts[1]))
        response = self._send_http(
            "POST", exchange.body, headers, timeout=made[1], exchange=exchange,
            what=exchange.method,
        )
        status = response.status_code
        if 200 <= status < 300:
            if exchange.method == "initialize":
                try:
                    self._note_session_id(response)
                except ProtocolError:
                    response.close()  # else its socket stays open until collected
                    raise
            return response
        if (status == 404 and session_id is not None and exchange.method != "initialize"
                and exchange.framing is not None and exchange.framing.keeps_session):
            discard(response)
            raise self._session_lost(session_id, exchange.method, exchange)
        if exchange.errors_in_status and status not in (401, 403):
            return self._deliver_error_body(exchange, response)
        raise self._http_error(response, exchange.method)

    def _deliver_error_body(self, exchange: _Exchange,
                            response: requests.Response) -> Optional[requests.Response]:
        """A stateless-era 4xx/5xx whose body is a JSON-RPC error: deliver that error.

        Raises:
            HTTPError: the body is not a JSON-RPC error.
        """
        try:
            body = read_body(response, ERROR_BODY_LIMIT)
        except READ_ERRORS as exc:
            body = f"(body unreadable: {exc!r})".encode()
        try:
            message = json.loads(body) if media_type(response) == _JSON else None
        except (ValueError, RecursionError):  # nested too deep is malformed too
            message = None
        error = message.get("error") if isinstance(message, dict) else None
        reply_id = message.get("id") if isinstance(message, dict) else None
        if (isinstance(error, dict) and isinstance(error.get("code"), int)
                and (reply_id is None or reply_id == exchange.request_id)):
            self._deliver({"jsonrpc": "2.0", "id": exchange.request_id, "error": error},
                          exchange)
            return None
        raise self._http_error(response, exchange.method, body)

    def _consume(self, exchange: _Exchange, response: requests.Response) -> None:
        """Read a request's reply: one JSON body, or an event stream."""
        media = media_type(response)
        if media == _EVENT_STREAM:
            self._read_request_stream(exchange, response)
            return
        try:
            data = self._read_json_body(
                response, f"the reply to {exchange.method} (id={exchange.request_id!r})",
                exchange)
        except MessageTooLarge as exc:
            self._fail(exchange, exc)
            return
        except READ_ERRORS as exc:
            self._fail(exchange, TransportError(
                f"reading the reply to {exchange.method} from {self.url} failed: "
                f"{excerpt(repr(exc), 300)}"))
            return
        if media == _JSON or (media.endswith("+json") and data.strip()):
            self._deliver_json(data, exchange, exchange.method)
            if not exchange.answered:
                self._fail(exchange, ProtocolError(
                    f"the JSON reply to {exchange.method} (id={exchange.request_id!r}) from "
                    f"{self.url} holds no response to it: {excerpt(data, 200)}"))
            return
        if not data.strip() and self._listener_is_open():
            # Accepted: the answer will come on the GET stream (older servers do this).
            log.debug("%s id=%r accepted with HTTP %s; awaiting its response on the GET "
                      "stream", exchange.method, exchange.request_id, response.status_code)
            return
        self._fail(exchange, ProtocolError(
            f"{self.url} answered {exchange.method} with HTTP {response.status_code} and "
            f"Content-Type {response.headers.get('Content-Type')!r}, not JSON or an event "
            f"stream: {excerpt(data, 200)}"))

    # -- the exchange engine: reading a reply, delivering its messages -------------------

    def _deliver_json(self, data: bytes, exchange: Optional[_Exchange], what: str) -> None:
        try:
            message = decode_line(data)
        except (ValueError, RecursionError) as exc:  # nested too deep is malformed too
            if exchange is None:
                log_malformed(self.name, f"reply to {what} is not JSON: {exc}", data)
                return
            self._fail(exchange, ProtocolError(
                f"the reply to {what} (id={exchange.request_id!r}) from {self.url} is not "
                f"valid JSON ({exc}): {excerpt(data, 200)}"))
            return
        self._deliver(message, exchange)

    def _read_json_body(self, response: requests.Response, what: str,
                        exchange: Optional[_Exchange]) -> bytes:
        """A reply's whole body, at most ``max_message_size`` bytes of it.

        A longer body (by its ``Content-Length``, or once one byte more than the bound has
        been read) is not read on: the response is closed, which drops its connection.

        Raises:
            MessageTooLarge: the body is longer than ``max_message_size``.
        """
        limit = self.max_message_size
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > limit:
            response.close()
            raise self._too_large(what, int(declared), b"", exchange, declared=True)
        try:
            # Decoded bytes are counted (a 2 MiB gzip body may inflate to 2 GiB), and
            # inflated only as far as they are read: never more than the bound is held.
            pieces = read_decoded(response, limit + 1)
        finally:
            response.close()
        size = sum(len(piece) for piece in pieces)
        if size > limit:
            head = b"".join(pieces[:2])[:ID_PREFIX]  # pieces are at most 64 KiB
            del pieces
            raise self._too_large(what, size, head, exchange)
        return b"".join(pieces)

    def _too_large(self, what: str, size: int, head: bytes, exchange: Optional[_Exchange],
                   declared: bool = False) -> MessageTooLarge:
        """The error for a message over ``max_message_size`` whose connection was dropped.

        ``exchange``'s own request (if it is one) fails with the returned error through the
        caller. When ``head`` (the start of the message) names another pending request as
        the one it answers, that request fails here, with an error of its own.
        """
        own = exchange.request_id if exchange is not None else None
        if not isinstance(own, (int, str)):
            own = None  # the GET stream's, or the drain of a notification's reply
        named = response_id_in(head) if head else None
        limit = self.max_message_size

        text = (f"{self.url} sent {what} longer than max_message_size={limit} bytes "
                f"({'Content-Length: ' if declared else 'at least '}{size}); "
                f"the connection was dropped")

        def error(request_id: Any) -> MessageTooLarge:
            return MessageTooLarge(text, limit=limit, size=size, request_id=request_id)

        log.warning("mcp-sync %s: %s", self.name, text)
        if named is not None and named != own:
            hook = self._on_request_failed
            if hook is not None:
                hook(named, error(named))
        return error(own if own is not None else named)

    def _new_decoder(self) -> SSEDecoder:
        return SSEDecoder(max_event_size=self.max_message_size)

    def _deliver(self, message: Any, exchange: Optional[_Exchange],
                 first: Optional[bool] = None) -> None:
        """Hand one decoded message (or a batch) to the session, noting answered requests.

        ``exchange`` is the stream it came on (None: the one JSON reply to a notification's
        POST). The session is told whether it is that stream's ``first`` message (see
        :class:`~.base.Transport`): a JSON reply, or the first event of a request's
        stream, resumptions included; in a batch, only its first item.
        """
        if first is None:
            first = exchange is None or not exchange.delivered
            if exchange is not None:
                exchange.delivered = True
        if isinstance(message, list):  # a JSON-RPC batch (2025-03-26)
            for item in message:
                self._deliver(item, exchange, first)
                first = False
            return
        # What the session will settle the request with (its result, its error, or a
        # ProtocolError for a malformed response) ends the wait for it here too.
        if classify(message) in ANSWERS:
            exchange = self._exchanges.get(message.get("id"))
            if exchange is not None:
                exchange.answered = True
        on_message = self._on_message
        if on_message is not None and not self._reported:
            on_message(message, first)

    def _pump(self, exchange: _Exchange, response: requests.Response,
              decoder: SSEDecoder) -> int:
        """Deliver the events of one stream until it ends; returns how many carried data.

        Big reads (whatever the socket holds, up to 64 KiB) and the decoder's linear
        parsing keep a multi-megabyte event cheap; each event is delivered the moment its
        blank line arrives.

        Raises:
            MessageTooLarge: an event grew past ``max_message_size`` (the decoder's bound);
                the stream was closed, dropping its connection.
        """
        read = read1_of(response)
        events = 0
        try:
            while True:
                chunk = read(_READ_SIZE)
                if not chunk:
                    break
                try:
                    completed = decoder.feed(chunk)
                except EventTooLarge as exc:
                    for event in exc.events:
                        self._deliver_event(event.data, event.event, exchange)
                    where = ("the GET stream" if exchange.request_id is None else
                             f"the stream of {exchange.method}")
                    raise self._too_large(f"an event on {where}", exc.size, exc.head,
                                          exchange) from exc
                for event in completed:
                    events += 1
                    self._deliver_event(event.data, event.event, exchange)
        except READ_ERRORS as exc:
            if not exchange.aborted.is_set():
                log.debug("stream for %s from %s broke: %r", exchange.method, self.url, exc)
        finally:
            decoder.end()
            response.close()
        return events

    def _deliver_event(self, data: str, event_type: str, exchange: _Exchange) -> None:
        if event_type != "message":
            log.debug("ignoring an SSE event of type %s from %s", excerpt(repr(event_type), 80),
                      self.url)
            return
        try:
            message = decode_object(data) if data[:1] == "{" else json.loads(data)
        except (ValueError, RecursionError) as exc:  # nested too deep is malformed too
            log_malformed(self.name, f"SSE data is not JSON: {exc}", data)
            return
        self._deliver(message, exchange)

    def _drain(self, exchange: _Exchange, response: requests.Response,
               deadline: Optional[Deadline]) -> None:
        try:
            self._pump(exchange, response, self._new_decoder())
        except MessageTooLarge:
            pass  # logged; the stream of a notification's reply: nobody waits for it
        finally:
            if deadline is not None:
                deadline.cancel()
            self._forget(exchange)

    # -- the exchange engine: resuming a broken event stream -----------------------------

    def _read_request_stream(self, exchange: _Exchange, response: requests.Response) -> None:
        """Read a request's event stream; if it ends before the response, resume it.

        Resuming (session era) is a GET with ``Last-Event-ID`` after the server's
        ``retry:`` interval (else ``retry_delay``), doubling on each attempt that brings
        nothing new, at most ``max_resume_attempts`` in a row; then the request fails
        through ``on_request_failed``. A refused connection ends it at the first attempt:
        the server is gone (resets and timeouts keep the backoff: they may pass).
        """
        decoder = self._new_decoder()
        attempts = 0
        current: Optional[requests.Response] = response
        last_error: Optional[BaseException] = None
        while True:
            if current is not None:
                try:
                    if self._pump(exchange, current, decoder):
                        attempts = 0
                except MessageTooLarge as exc:
                    self._fail(exchange, exc)
                    return
                current = None
            if exchange.answered or exchange.aborted.is_set() or self._closing:
                return
            if not exchange.resumable or not decoder.last_event_id:
                reason = ("its stream cannot be resumed in this protocol version"
                          if not exchange.resumable else "it sent no event ID to resume from")
                self._no_response(exchange, f": {self.url} ended the event stream first, and "
                                            f"{reason}")
                return
            if attempts >= self.max_resume_attempts:
                self._no_response(exchange, f" from {self.url} after {attempts} attempts to "
                                            f"resume its event stream", last_error)
                return
            delay = self._retry_delay(decoder.retry, attempts)
            attempts += 1
            log.debug("stream for %s id=%r ended before its response; resuming after event "
                      "%s in %.2f s", exchange.method, exchange.request_id,
                      decoder.last_event_id, delay)
            if exchange.aborted.wait(delay):
                return
            try:
                current = self._resume(exchange, decoder.last_event_id)
            except HTTPError as exc:
                if exc.status < 500 and exc.status not in _TRANSIENT:
                    self._no_response(exchange, f": {self.url} would not resume its event "
                                                f"stream ({exc})", exc)
                    return
                last_error = exc
            except MCPError as exc:
                if refused(exc):
                    self._no_response(exchange, f": {self.url} refused the connection to "
                                                f"resume its event stream; the server is gone",
                                      exc)
                    return
                last_error = exc

    def _no_response(self, exchange: _Exchange, why: str,
                     *cause: Optional[BaseException]) -> None:
        """Fail a request whose event stream ended for good before its response:
        ``TransportError("No response received for request <id> (<method>)" + why)``,
        its ``__cause__`` the ``cause`` given (none given: left unset)."""
        error = TransportError(f"No response received for request {exchange.request_id!r} "
                               f"({exchange.method}){why}")
        if cause:
            error.__cause__ = cause[0]
        self._fail(exchange, error)

    def _resume(self, exchange: _Exchange, last_event_id: str) -> requests.Response:
        """GET the rest of a broken stream.

        Raises:
            HTTPError, TransportError, ProtocolError: the server would not resume it.
        """
        headers = self._headers.copy()
        headers["Accept"] = _EVENT_STREAM
        headers["Last-Event-ID"] = last_event_id
        del headers["Content-Type"]
        response = self._send_http("GET", None, headers,
                                   timeout=(self.connect_timeout, self.read_timeout),
                                   exchange=exchange, what=f"(resuming {exchange.method})")
        if not 200 <= response.status_code < 300:
            raise self._http_error(response, f"resumption of {exchange.method}")
        if media_type(response) != _EVENT_STREAM:
            discard(response)
            raise ProtocolError(f"{self.url} answered a resumption GET with "
                                f"{excerpt(repr(response.headers.get('Content-Type')), 80)}")
        return response

    def _retry_delay(self, retry_ms: Optional[int], attempt: int) -> float:
        base = self.retry_delay if retry_ms is None else retry_ms / 1000.0
        return float(min(base * (2 ** attempt), self.max_retry_delay))

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
                      exchange: Optional[_Exchange] = None) -> SessionExpired:
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
            exchange = _Exchange(None, "GET stream", None)
            # A daemon like the stream threads; close() aborts its stream and joins it.
            thread = start_thread(self._listen, f"mcp-sync-listener-{self.name}", exchange,
                                  started)
            self._listener, self._listener_exchange = thread, exchange
        if wait:
            started.wait(self._listener_start_wait())

    def _listener_start_wait(self) -> float:
        return 1.0 if self.timeout is None else min(1.0, self.timeout / 4)

    def _listen(self, exchange: _Exchange, started: threading.Event) -> None:
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
                headers["Accept"] = _EVENT_STREAM
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
                    if not 200 <= status < 300 or media != _EVENT_STREAM:
                        discard(response)
                        if first or status == 405:
                            log.debug("%s offers no GET stream (HTTP %s, %s)", self.url,
                                      status, excerpt(repr(media), 80))
                            self._listener_disabled = True
                            return
                        if status == 404 and session_id is not None:
                            self._session_lost(session_id, "the GET stream")
                            return
                        if 400 <= status < 500 and status not in _TRANSIENT:
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
