"""The legacy HTTP+SSE transport of protocol revision 2024-11-05.

The client opens one long-lived ``GET`` on the server's SSE URL. The server's first event
is ``endpoint``: the URL (often relative, e.g. ``/messages?sessionId=...``) to which the
client POSTs every message it sends. Everything the server sends (responses,
notifications, requests) arrives as ``message`` events on the GET stream; a POST is only
acknowledged (``202 Accepted``).

Threads: ``mcp-sync-reader-<name>``, a daemon (so a transport nobody closed never
keeps the interpreter alive; cleanup does not rely on that: ``close()`` ends the stream
and joins it with a bound). It performs the GET, reads the stream incrementally, hands
each message to the session and reports the close exactly once when the stream ends.
POSTs run on the thread that sends; ``mcp-sync-deadline-<name>`` (``http/_deadlines.py``,
started on first use, joined by ``close()``) ends a POST whose whole exchange outlives
``post_timeout``.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any, Dict, Mapping, Optional, Tuple
from urllib.parse import urljoin, urlsplit

import requests
import urllib3

from .._util.text import name_safe
from .._util.threads import join_or_warn, start_thread
from ..exceptions import (
    ConnectionClosed,
    HTTPError,
    MCPError,
    MessageTooLarge,
    ProtocolError,
    TransportError,
    excerpt,
)
from ._limits import DEFAULT_MAX_MESSAGE_SIZE, response_id_in
from .base import (
    CloseCallback,
    MessageCallback,
    RequestFailedCallback,
    Transport,
    log_malformed,
    origin_key,
)
from .http._bodies import ACCEPT_ENCODING, read_decoded
from .http._deadlines import Watchdog
from .http._interrupt import (
    Interruptible,
    InterruptibleAdapter,
    sending,
    set_read_timeout,
    shutdown_response,
    socket_of,
)
from .http._requests import (
    close_session,
    doing,
    endpoint_hint,
    failure_reason,
    refuse_cross_origin,
    split_credentials,
)
from .http._sse import EventTooLarge, iter_events

__all__ = ["DEFAULT_CONNECT_TIMEOUT", "SseTransport"]

log = logging.getLogger(__name__)

_DEFAULT_PORTS = {"http": 80, "https": 443}
# How much of a POST's reply is read: an error's excerpt, or the acknowledgement ("Accepted")
# read to its end so that the connection can serve the next POST (a longer one is dropped).
_ERROR_EXCERPT = 2000
_ACK_LIMIT = 64 * 1024

Origin = Tuple[str, str, Optional[int]]


def _origin(url: str) -> Origin:
    """``(scheme, host, port)`` of a URL, with the scheme's default port filled in."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:  # a port that is not a number
        port = None
    return scheme, (parts.hostname or "").lower(), port or _DEFAULT_PORTS.get(scheme)


def _format_origin(origin: Origin) -> str:
    scheme, host, port = origin
    host = f"[{host}]" if ":" in host else host
    return f"{scheme}://{host}:{port}" if port is not None else f"{scheme}://{host}"


def _default_name(url: str) -> str:
    parts = urlsplit(url)
    label = parts.hostname or "sse"
    if parts.port is not None:
        label += f"-{parts.port}"
    return name_safe(label)[:40] or "sse"


def _unbounded_reads(response: requests.Response, read_timeout: float) -> None:
    """Let reads on the stream block indefinitely once the headers have arrived.

    The GET is made with a read timeout so that a server that never answers cannot hold
    the reader forever; an open stream, though, may rightly stay silent for a long time.
    """
    if socket_of(response) is None:
        log.warning("mcp-sync: cannot lift the read timeout of the SSE stream from %s; it "
                    "will end after %s s without data", response.url, read_timeout)
        return
    set_read_timeout(response, None)


#: How long :meth:`SseTransport.start` waits for the connection, the response headers and
#: the ``endpoint`` event, each, unless told otherwise.
DEFAULT_CONNECT_TIMEOUT = 10.0


class SseTransport(Transport):
    """Talks to an MCP server over the legacy HTTP+SSE transport (protocol 2024-11-05).

    Args:
        url: the server's SSE URL (for example ``http://127.0.0.1:8000/sse``).
        headers: extra HTTP headers for the GET and for every POST.
        auth: a ``requests`` auth object (or ``(user, password)``) for the GET and POSTs.
        session: a ``requests.Session`` to use; by default the transport creates one and
            closes it in :meth:`close` (a session passed in is left open).
        name: a label for thread names and logs; derived from the URL by default.
        close_timeout: how long :meth:`close` waits for the reader thread.
        connect_timeout: how long :meth:`start` waits for the connection, the response
            headers and the ``endpoint`` event, each.
        post_timeout: how long a POST may take, whole: its acknowledgement's status,
            headers and body (at most 64 KiB of it is read). Past it, a POST with no status
            yet fails with ``TransportError``; an acknowledged one succeeds, the rest of its
            body dropped with its connection. A request's POST also ends when the request
            does (its deadline): the call then fails with its ``RequestTimeout`` at once.
        max_message_size: the longest event accepted on the stream (64 MiB by default), in
            decoded bytes (a gzip stream is inflated only as far as it is read); no more
            than that (and one read) is ever held. A longer one ends the stream (the
            transport closes, pending requests fail with ``ConnectionClosed``), and the
            request whose id starts it fails with :class:`~mcp_sync.MessageTooLarge`.

    The endpoint must have the same origin (scheme, host, port) as ``url``: a server
    cannot send the client's messages (and credentials) elsewhere.

    Can be shared between threads: each :meth:`send` is an independent POST.
    """

    def __init__(
        self,
        url: str,
        headers: Optional[Mapping[str, str]] = None,
        auth: Any = None,
        session: Optional[requests.Session] = None,
        *,
        name: Optional[str] = None,
        close_timeout: float = 2.0,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        post_timeout: Optional[float] = 30.0,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    ) -> None:
        if not url:
            raise ValueError("SseTransport needs a URL")
        # A user:password@ in the URL is kept apart and sent as Basic auth (unless auth=
        # is given): every message and repr() shows the URL without it (http/_requests.py).
        self.url, credentials = split_credentials(url)
        self.headers: Dict[str, str] = dict(headers or {})
        self.auth = auth if auth is not None else credentials
        self.name = name or _default_name(url)
        self.named_by_default = not name
        self.close_timeout = close_timeout
        self.connect_timeout = connect_timeout
        self.post_timeout = post_timeout
        self.max_message_size = max_message_size
        self._given_session = session
        self._http: Optional[requests.Session] = session
        #: The URL messages are POSTed to, once the server named it.
        self.endpoint: Optional[str] = None
        # Guards _response, _closing and _reported: close() and the reader race on them.
        self._state_lock = threading.Lock()
        self._response: Optional[requests.Response] = None
        self._closing = False
        self._reported = False
        self._started = False
        self._on_message: Optional[MessageCallback] = None
        self._on_close: Optional[CloseCallback] = None
        self._on_request_failed: Optional[RequestFailedCallback] = None
        self._reader: Optional[threading.Thread] = None
        # Set by the reader once the endpoint is known or the stream failed before it.
        self._ready = threading.Event()
        self._start_error: Optional[MCPError] = None
        self._watchdog = Watchdog(f"mcp-sync-deadline-{self.name}")
        # The POSTs of requests in flight, by request id (guarded by _state_lock): the
        # session's cancel() at a request's deadline ends its POST.
        self._posts: Dict[Any, Interruptible] = {}

    @property
    def target(self) -> str:
        return self.url

    @property
    def era_key(self) -> Any:
        return origin_key(self.url)

    def rename(self, name: str) -> None:
        """Use ``name`` from now on, in messages and for the reader and deadline threads."""
        self.name = name
        self._watchdog.rename(f"mcp-sync-deadline-{name}")
        reader = self._reader
        if reader is not None:
            reader.name = f"mcp-sync-reader-{name}"

    # -- starting ------------------------------------------------------------------------

    def start(self, on_message: MessageCallback, on_close: CloseCallback,
              on_request_failed: RequestFailedCallback) -> None:
        """Open the SSE stream and wait (at most ``connect_timeout``) for its endpoint.

        Raises:
            HTTPError: the GET got a non-2xx status (auth hints included).
            TransportError: the server could not be reached, or sent no endpoint in time.
            ProtocolError: the stream is not ``text/event-stream``, or the endpoint is on
                another origin.
        """
        if self._started:
            if not self._closing:
                raise TransportError(f"{self!r} is running already")
            self._reset()
        self._started = True
        if self._http is None:
            # Its connections hand each POST's socket to the POST before they wait for
            # the response headers: the POST's deadline can cut that wait short too.
            http = requests.Session()
            adapter = InterruptibleAdapter()
            http.mount("http://", adapter)
            http.mount("https://", adapter)
            self._http = http
        self._on_message, self._on_close = on_message, on_close
        self._on_request_failed = on_request_failed
        # A daemon so that a forgotten transport never blocks interpreter exit; close()
        # still ends and joins it.
        self._reader = start_thread(self._read_stream, f"mcp-sync-reader-{self.name}")
        if not self._ready.wait(self.connect_timeout):
            self._start_error = TransportError(
                f"{self.url} sent no endpoint event within {self.connect_timeout} s"
            )
        error = self._start_error
        if error is not None:
            self.close()
            raise error
        log.debug("legacy SSE stream to %s open; posting to %s", self.url, self.endpoint)

    def _reset(self) -> None:
        """Forget a closed stream so that the transport can open a new one (reconnect)."""
        self._http = self._given_session
        self.endpoint = None
        self._response = None
        self._closing = self._reported = self._started = False
        self._reader = None
        self._ready = threading.Event()
        self._start_error = None
        self._watchdog = Watchdog(f"mcp-sync-deadline-{self.name}")
        self._posts = {}

    # -- reading -------------------------------------------------------------------------

    def _read_stream(self) -> None:
        cause: Optional[BaseException] = None
        try:
            response = self._open_stream()
            if response is None:
                return  # closed while connecting
            # Empty events too: an endpoint event without data is an error to report.
            events = iter_events(response, include_empty=True,
                                 max_event_size=self.max_message_size)
            try:
                for event in events:
                    if event.event == "endpoint":
                        self._on_endpoint(event.data)
                    elif event.event == "message":
                        if event.data.strip():  # an empty one is a keep-alive
                            self._deliver(event.data)
                    else:
                        log.debug("ignoring SSE event %s from %s",
                                  excerpt(repr(event.event), 80), self.name)
            except EventTooLarge as exc:
                raise self._too_large(exc) from exc
        except MCPError as exc:
            cause = exc
            if not self._ready.is_set():
                self._start_error = exc
        except (OSError, requests.RequestException, urllib3.exceptions.HTTPError) as exc:
            cause = exc  # the connection broke (or close() shut it down)
            if not self._closing:
                log.debug("legacy SSE stream from %s failed: %r", self.url, exc)
        except Exception as exc:
            cause = exc
            if self._closing:  # the stream was torn down under the parser
                log.debug("legacy SSE stream from %s ended: %r", self.url, exc)
            else:
                log.exception("reader for %s failed", self.name)
        finally:
            with self._state_lock:
                response, self._response = self._response, None
            if response is not None:
                response.close()
            if not self._ready.is_set() and self._start_error is None:
                self._start_error = ConnectionClosed(
                    f"Legacy SSE stream closed by {self.url} before its endpoint event"
                    if cause is None
                    else f"Legacy SSE stream from {self.url} failed: {excerpt(cause, 500)}"
                )
                self._start_error.__cause__ = cause
            self._ready.set()
            self._report_close(cause)

    def _open_stream(self) -> Optional[requests.Response]:
        """GET the SSE URL; returns the streaming response (None if closed meanwhile)."""
        assert self._http is not None
        # Only the encodings http/_bodies.py decodes in bounded memory, unless the user says.
        headers = {"Accept-Encoding": ACCEPT_ENCODING, **self.headers,
                   "Accept": "text/event-stream", "Cache-Control": "no-cache"}
        try:
            response = self._http.get(
                self.url, headers=headers, auth=self.auth, stream=True,
                hooks={"response": [refuse_cross_origin]},
                timeout=(self.connect_timeout, self.connect_timeout),
            )
        except requests.ConnectionError as exc:
            raise TransportError(
                f"connect: cannot reach {self.url}: {failure_reason(exc)}") from exc
        except requests.RequestException as exc:
            raise TransportError(
                f"cannot open the SSE stream at {self.url}: {excerpt(exc, 300)}") from exc
        with self._state_lock:
            if self._closing:
                response.close()
                return None
            self._response = response
        if not 200 <= response.status_code < 300:
            raise _http_error(response, self.url, "GET (SSE stream)", _read_excerpt(response),
                              during="connect")
        content_type = response.headers.get("Content-Type", "")
        if "text/event-stream" not in content_type.lower():
            raise ProtocolError(
                f"{self.url} answered the SSE GET with Content-Type {excerpt(content_type, 80)!r},"
                " not text/event-stream; is this a legacy HTTP+SSE endpoint?"
            )
        _unbounded_reads(response, self.connect_timeout)
        return response

    def _too_large(self, exc: EventTooLarge) -> MessageTooLarge:
        """The stream is dropped for an event over ``max_message_size``; the request whose
        id starts it fails at once with the returned error (the others when the stream's
        close is reported)."""
        limit = self.max_message_size
        request_id = response_id_in(exc.head)
        error = MessageTooLarge(
            f"{self.url} sent an event longer than max_message_size={limit} bytes (at least "
            f"{exc.size}); the stream was dropped", limit=limit, size=exc.size,
            request_id=request_id)
        log.warning("mcp-sync %s: %s", self.name, error)
        hook = self._on_request_failed
        if request_id is not None and hook is not None:
            hook(request_id, error)
        return error

    def _on_endpoint(self, data: str) -> None:
        """Check and adopt the endpoint the server named.

        Raises:
            ProtocolError: it is empty, not HTTP(S), or on another origin than the stream.
        """
        if self.endpoint is not None:
            log.warning("mcp-sync %s: ignoring a second endpoint event: %s", self.name,
                        excerpt(data, 200))
            return
        endpoint = urljoin(self.url, data.strip())
        stream_origin, endpoint_origin = _origin(self.url), _origin(endpoint)
        if not data.strip() or endpoint_origin[0] not in _DEFAULT_PORTS:
            raise ProtocolError(
                f"{self.url} sent an invalid endpoint event: {excerpt(data, 200)!r}"
            )
        if endpoint_origin != stream_origin:
            raise ProtocolError(
                f"refusing the endpoint {excerpt(endpoint, 200)} sent by {self.url}: its origin "
                f"{_format_origin(endpoint_origin)} differs from the SSE stream's origin "
                f"{_format_origin(stream_origin)}"
            )
        self.endpoint = endpoint
        self._ready.set()

    def _deliver(self, data: str) -> None:
        on_message = self._on_message
        if on_message is None:
            return
        try:
            message = json.loads(data)
        except (ValueError, RecursionError) as exc:  # nested too deep is malformed too
            log_malformed(self.name, f"not JSON: {exc}", data)
            return
        if isinstance(message, list):  # a JSON-RPC batch
            for item in message:
                on_message(item)
        else:
            on_message(message)

    def _report_close(self, cause: Optional[BaseException]) -> None:
        with self._state_lock:
            if self._reported:
                return
            self._reported = True
            closing = self._closing
        if closing:
            message = f"Legacy SSE stream closed by the client ({self.url})"
        elif cause is not None:
            message = f"Legacy SSE stream closed: reading {self.url} failed: {cause!r}"
        else:
            message = f"Legacy SSE stream closed by the server ({self.url})"
        error = ConnectionClosed(message)
        error.__cause__ = cause
        on_close = self._on_close
        if on_close is not None:
            on_close(error)

    # -- writing -------------------------------------------------------------------------

    def send(self, message: Dict[str, Any], headers: Optional[Mapping[str, str]] = None) -> None:
        """POST one message to the endpoint. Thread-safe; blocks until it is acknowledged.

        ``headers`` are added to this POST only.

        Raises:
            ConnectionClosed: the stream is closed (or was never opened).
            HTTPError: the server answered the POST with a non-2xx status.
            TransportError: the POST failed (connection refused, reset, timed out).
        """
        endpoint, http = self.endpoint, self._http
        if endpoint is None or http is None or self._reported or self._closing:
            raise ConnectionClosed(f"Legacy SSE stream closed ({self.url})")
        data = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()
        post_headers = {"Accept-Encoding": ACCEPT_ENCODING, **self.headers, **(headers or {}),
                        "Content-Type": "application/json"}
        post = Interruptible()
        # One deadline for the whole POST: a server trickling its acknowledgement cannot
        # hold the sender past it.
        deadline = self._watchdog.watch(self.post_timeout, post.abort)
        request_id = message.get("id") if "method" in message else None
        if request_id is not None:
            with self._state_lock:
                self._posts[request_id] = post
        try:
            try:
                # Streamed: the reply's body is read with a bound below, never whole.
                sending(post)
                try:
                    response = http.post(
                        endpoint, data=data, headers=post_headers, auth=self.auth,
                        hooks={"response": [refuse_cross_origin]},
                        timeout=(self.connect_timeout, self.post_timeout), stream=True,
                    )
                finally:
                    sending(None)
            except requests.RequestException as exc:
                if self._closing:
                    raise ConnectionClosed(
                        f"Legacy SSE stream closed by the client ({self.url})"
                    ) from exc
                method = message.get("method")
                label = doing(method if isinstance(method, str) else None, connected=False)
                if post.aborted.is_set():
                    raise TransportError(
                        f"{label or 'POST'}: no answer from {excerpt(endpoint, 200)} within "
                        f"its deadline ({self.post_timeout} s, or the request's own)") from exc
                if isinstance(exc, requests.ConnectionError):
                    raise TransportError(f"{label or 'POST'}: cannot reach "
                                         f"{excerpt(endpoint, 200)}: "
                                         f"{failure_reason(exc)}") from exc
                raise TransportError(  # the endpoint, and requests' text about it, is the server's
                    f"POST to {excerpt(endpoint, 200)} failed: {excerpt(exc, 300)}") from exc
            post.attach_response(response)
            try:
                if not 200 <= response.status_code < 300:
                    method = message.get("method")
                    raise _http_error(response, endpoint,
                                      method if isinstance(method, str) else None,
                                      _read_excerpt(response, _ERROR_EXCERPT))
                # The reply travels on the stream: the acknowledgement is read (at most
                # 64 KiB of it) only to reuse the connection, and not waited for past the
                # deadline or the request's end (a read cut short returns what came).
                _read_excerpt(response, _ACK_LIMIT)
                if post.aborted.is_set():
                    log.debug("stopped reading the acknowledgement of %s from %s",
                              message.get("method") or "a response", self.name)
            finally:
                post.detach()  # its connection may serve another POST once released
                response.close()
        finally:
            if deadline is not None:
                deadline.cancel()
            if request_id is not None:
                with self._state_lock:
                    if self._posts.get(request_id) is post:
                        del self._posts[request_id]

    def cancel(self, request_id: Any) -> bool:
        """Stop waiting on the POST of a request that is over (its deadline passed).

        Returns False: the server still has to be told (``notifications/cancelled``).
        """
        with self._state_lock:
            post = self._posts.get(request_id)
        if post is not None:
            post.abort()
        return False

    # -- closing -------------------------------------------------------------------------

    def close(self) -> None:
        """End the stream, join the reader (bounded), close the HTTP session if ours.

        Idempotent. The reader is blocked reading the stream; shutting the stream's socket
        down makes that read return, so the reader ends and reports the close.
        """
        with self._state_lock:
            if self._closing:
                return
            self._closing = True
            # Under the lock: the reader only closes (and maybe pools) the response after
            # taking it from _response under this lock, so its socket is still the stream's.
            if self._response is not None:
                shutdown_response(self._response)
        join_or_warn(self._reader, self.close_timeout, "closing the transport", log)
        self._report_close(None)  # no-op if the reader reported already
        self._watchdog.stop(self.close_timeout)
        http = self._http
        if http is not None and self._given_session is None:
            close_session(http)


def _read_excerpt(response: requests.Response, limit: int = _ERROR_EXCERPT) -> str:
    """The start of a streamed response's body (an error page), without reading it all
    (at most ``limit`` decoded bytes)."""
    try:
        data = b"".join(read_decoded(response, limit))
    except Exception as exc:  # noqa: BLE001 - the body is only context for the error
        log.debug("reading the body of HTTP %s: %r", response.status_code, exc)
        return ""
    return data.decode("utf-8", "replace")


def _http_error(
    response: requests.Response, url: str, method: Optional[str], body: str,
    during: Optional[str] = None,
) -> HTTPError:
    status = response.status_code
    return HTTPError(
        status,
        url=url,
        body=body,
        www_authenticate=response.headers.get("WWW-Authenticate"),
        auth_server=response.headers.get("Mcp-Auth-Server"),
        method=method,
        verb=response.request.method if response.request is not None else None,
        during=during or doing(method, connected=False),
        hint=endpoint_hint(url) if during == "connect" and status in (404, 405) else None,
    )
