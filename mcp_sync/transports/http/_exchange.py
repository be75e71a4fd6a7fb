"""The exchange engine of the Streamable HTTP transport: POSTing each message, reading its
reply (one JSON body, or an event stream delivered event by event), resuming a broken
stream, and stopping any of it from another thread. :class:`ExchangeEngine` is the base of
:class:`~._transport.HttpTransport`, which adds the MCP session (its id, its loss, the
GET stream and the ``DELETE`` at the end).

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
(``Dispatcher.enqueue``, ``_rpc/dispatch.py``); one behind other messages of its stream
waits for them there.

``send()`` never blocks on the server for a request: the POST runs on a stream thread, so
the session's deadline holds even against a server that sits on its response headers
(a JSON reply to a long tool call), and ``submit()`` really returns at once. An error
from that POST (a non-2xx status, an unreachable server, an unparsable body) reaches the
caller through the ``on_request_failed`` callback the session gives ``start()``.
Notifications and responses to the server are POSTed on the sending thread: the server
accepts them at once.

Threads (daemons, so that a client nobody closed never keeps the interpreter alive; the
transport's ``close()`` interrupts and joins each of them with a bound):

* ``mcp-sync-stream-<name>-<n>``: a small pool, one thread per request in flight. Each
  POSTs its request, reads the reply, resumes a broken event stream, and ends its exchange
  when the stream ends. Idle threads wait for the next request and retire after a while.
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
worked out once, when the transport starts, with ``requests``' public helpers; each
message then costs one prepared request (its cookies and auth prepared by ``requests``),
one ``requests.Session.send`` (its hooks, cookies and redirects, all ``requests``' own)
and big reads of its body.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Tuple, Union

import requests
import urllib3
from requests.models import PreparedRequest
from requests.structures import CaseInsensitiveDict

from ..._protocol.messages import ANSWERS, classify
from ..._util.jsonwire import decode_line, decode_object
from ..._util.pool import ThreadPool
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
from .._limits import ID_PREFIX, response_id_in
from ..base import MessageCallback, RequestFailedCallback, log_malformed
from ._bodies import read_decoded
from ._deadlines import Deadline, Watchdog
from ._interrupt import Interruptible, sending
from ._requests import connect_failed, doing, endpoint_hint, failure_reason, refused
from ._responses import ERROR_BODY_LIMIT, READ_ERRORS, discard, media_type, read_body
from ._sse import EventTooLarge, SSEDecoder, read1_of

if TYPE_CHECKING:
    from ..._protocol.agreement import Agreement

__all__ = ["EVENT_STREAM", "JSON", "TRANSIENT", "Exchange", "ExchangeEngine", "Headers",
           "Timeout"]

log = logging.getLogger(__name__)

JSON = "application/json"
EVENT_STREAM = "text/event-stream"
_READ_SIZE = 1 << 16
# How much of a body nobody needs (a 202's) is read so that its connection can be reused;
# a longer one is dropped with its connection.
_ACK_LIMIT = 64 * 1024
#: Statuses worth retrying a GET for; any other 4xx means "not here, not now".
TRANSIENT = frozenset({408, 409, 425, 429})

Timeout = Union[None, float, Tuple[Optional[float], Optional[float]]]

if TYPE_CHECKING:
    Headers = CaseInsensitiveDict[str]
else:  # not subscriptable at run time in older requests
    Headers = CaseInsensitiveDict


class Exchange(Interruptible):
    """One HTTP exchange in flight (a request's POST and its resumptions, or the GET
    stream); stopping it from another thread is :class:`~._interrupt.Interruptible`'s.

    ``answered`` is set by whichever thread delivers the response: a plain flag that only
    ever goes from False to True (a reader that misses the change resumes once too often,
    and the session ignores what it then reports). ``delivered`` is set by the one thread
    reading the exchange once it delivered a message: what it delivers later is not its
    stream's first (see :meth:`ExchangeEngine._deliver`).
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


class ExchangeEngine:
    """The exchanges of one HTTP transport: sending, reading, resuming, stopping.

    The state it works with is set up by the transport (:class:`~._transport.HttpTransport`
    declares and resets every attribute below); the MCP session's part of an exchange
    (noting the session id ``initialize`` brings, reporting a lost session, whether the GET
    stream is open) is the transport's, through the methods at the end of this class.
    """

    # The transport's settings (see HttpTransport's arguments).
    name: str
    url: str
    timeout: Optional[float]
    connect_timeout: Optional[float]
    read_timeout: Optional[float]
    max_resume_attempts: int
    retry_delay: float
    max_retry_delay: float
    max_message_size: int
    agreement: Optional[Agreement]
    # Guards _started, _closing, _reported, _expired and the exchange table.
    _state_lock: threading.Lock
    _started: bool
    _closing: bool
    _reported: bool
    _expired: bool
    _on_message: Optional[MessageCallback]
    _on_request_failed: Optional[RequestFailedCallback]
    # What start() worked out once: the requests.Session, the URL as requests prepares
    # it, the headers of every message, what Session.send is given, the auth, the hooks.
    _http: Optional[requests.Session]
    _url: str
    _headers: Headers
    _send_kwargs: Dict[str, Any]
    _request_auth: Any
    _hooks: Dict[str, List[Any]]
    # (connect_timeout, read_timeout) and the urllib3 Timeout a request's POST gets
    # (requests takes one as it takes a tuple; the stubs know only the tuple).
    _request_timeout: Tuple[Any, Any]
    _workers: ThreadPool
    _watchdog: Watchdog
    # The exchanges in flight, by request id (the drain of a notification's reply under a
    # key of its own).
    _exchanges: Dict[Any, Exchange]
    _session_id: Optional[str]

    # -- sending ----------------------------------------------------------------------

    def _start_exchange(self, exchange: Exchange) -> None:
        """Register a request's exchange and hand it to a stream thread (see ``send()``).

        Raises:
            ConnectionClosed: the transport is closing (``request_sent`` False).
        """
        with self._state_lock:
            if self._closing:
                closed = ConnectionClosed(f"connection to {self.name} closed by the client")
                closed.request_sent = False
                raise closed
            self._exchanges[exchange.request_id] = exchange
        try:
            self._spawn(self._run_exchange, exchange)
        except BaseException:
            self._forget(exchange)
            raise

    def _send_http(
        self,
        method: str,
        body: Optional[bytes],
        headers: Headers,
        *,
        timeout: Timeout,
        exchange: Optional[Exchange] = None,
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
        exchange = Exchange(object(), what, None)
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
            if media == EVENT_STREAM:  # not what the spec says, but deliver what it carries
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
                if media == JSON:
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

    # -- one request ------------------------------------------------------------------

    def _run_exchange(self, exchange: Exchange) -> None:
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

    def _forget(self, exchange: Exchange) -> None:
        with self._state_lock:
            if self._exchanges.get(exchange.request_id) is exchange:
                del self._exchanges[exchange.request_id]

    def _fail(self, exchange: Exchange, error: BaseException) -> None:
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

    def _open(self, exchange: Exchange) -> Optional[requests.Response]:
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

    def _deliver_error_body(self, exchange: Exchange,
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
            message = json.loads(body) if media_type(response) == JSON else None
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

    def _consume(self, exchange: Exchange, response: requests.Response) -> None:
        """Read a request's reply: one JSON body, or an event stream."""
        media = media_type(response)
        if media == EVENT_STREAM:
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
        if media == JSON or (media.endswith("+json") and data.strip()):
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

    # -- reading a reply, delivering its messages -------------------------------------

    def _deliver_json(self, data: bytes, exchange: Optional[Exchange], what: str) -> None:
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
                        exchange: Optional[Exchange]) -> bytes:
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

    def _too_large(self, what: str, size: int, head: bytes, exchange: Optional[Exchange],
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

    def _deliver(self, message: Any, exchange: Optional[Exchange],
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

    def _pump(self, exchange: Exchange, response: requests.Response,
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

    def _deliver_event(self, data: str, event_type: str, exchange: Exchange) -> None:
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

    def _drain(self, exchange: Exchange, response: requests.Response,
               deadline: Optional[Deadline]) -> None:
        try:
            self._pump(exchange, response, self._new_decoder())
        except MessageTooLarge:
            pass  # logged; the stream of a notification's reply: nobody waits for it
        finally:
            if deadline is not None:
                deadline.cancel()
            self._forget(exchange)

    # -- resuming a broken event stream -----------------------------------------------

    def _read_request_stream(self, exchange: Exchange, response: requests.Response) -> None:
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
                if exc.status < 500 and exc.status not in TRANSIENT:
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

    def _no_response(self, exchange: Exchange, why: str,
                     *cause: Optional[BaseException]) -> None:
        """Fail a request whose event stream ended for good before its response:
        ``TransportError("No response received for request <id> (<method>)" + why)``,
        its ``__cause__`` the ``cause`` given (none given: left unset)."""
        error = TransportError(f"No response received for request {exchange.request_id!r} "
                               f"({exchange.method}){why}")
        if cause:
            error.__cause__ = cause[0]
        self._fail(exchange, error)

    def _resume(self, exchange: Exchange, last_event_id: str) -> requests.Response:
        """GET the rest of a broken stream.

        Raises:
            HTTPError, TransportError, ProtocolError: the server would not resume it.
        """
        headers = self._headers.copy()
        headers["Accept"] = EVENT_STREAM
        headers["Last-Event-ID"] = last_event_id
        del headers["Content-Type"]
        response = self._send_http("GET", None, headers,
                                   timeout=(self.connect_timeout, self.read_timeout),
                                   exchange=exchange, what=f"(resuming {exchange.method})")
        if not 200 <= response.status_code < 300:
            raise self._http_error(response, f"resumption of {exchange.method}")
        if media_type(response) != EVENT_STREAM:
            discard(response)
            raise ProtocolError(f"{self.url} answered a resumption GET with "
                                f"{excerpt(repr(response.headers.get('Content-Type')), 80)}")
        return response

    def _retry_delay(self, retry_ms: Optional[int], attempt: int) -> float:
        base = self.retry_delay if retry_ms is None else retry_ms / 1000.0
        return float(min(base * (2 ** attempt), self.max_retry_delay))

    # -- what the MCP session adds (HttpTransport) -----------------------------------------

    def _connected(self) -> bool:
        """Whether the session's agreement is settled (the handshake is over)."""
        raise NotImplementedError

    def _note_session_id(self, response: requests.Response) -> None:
        """Keep the ``Mcp-Session-Id`` of the reply to ``initialize``.

        Raises:
            ProtocolError: the id is not visible ASCII.
        """
        raise NotImplementedError

    def _session_lost(self, stale_id: str, what: str,
                      exchange: Optional[Exchange] = None) -> SessionExpired:
        """The server answered 404 to ``stale_id``: report the session lost."""
        raise NotImplementedError

    def _listener_is_open(self) -> bool:
        """Whether the GET stream is open (a request's answer may come on it)."""
        raise NotImplementedError
