"""The user-facing part of the authorization code flow, one class per setting.

:class:`~mcp_sync.auth.OAuth` builds the authorization URL and validates what comes
back; an :class:`AuthorizationFlow` gets the user's browser there and the redirect back:

* :class:`LoopbackFlow` (the default), for scripts and notebooks: opens the browser and
  listens on a loopback redirect URI (``http://127.0.0.1:<port>/callback``) for exactly
  one request, then closes the socket. Bounded by the OAuth object's
  ``authorization_timeout``.
* :class:`WebAppFlow`, for web applications: the view that needed the server gets
  :class:`AuthorizationRequired` (with the URL to redirect the user to), and the view
  behind the redirect URI calls :meth:`OAuth.complete_authorization`.
* :class:`HeadlessFlow`, for tests and automation: a callable answers the authorization
  URL with the callback URL (:func:`follow_redirect` does what a browser that is already
  logged in would).
"""

from __future__ import annotations

import abc
import logging
import socket
import threading
import time
import webbrowser
from typing import Callable, Optional
from urllib.parse import parse_qsl, urljoin, urlsplit

import requests

from ..exceptions import AuthError, MCPError, excerpt
from .fetch import no_credentials

__all__ = [
    "AuthorizationFlow",
    "AuthorizationRequired",
    "HeadlessFlow",
    "LoopbackFlow",
    "WebAppFlow",
    "follow_redirect",
]

log = logging.getLogger(__name__)

# The most of a browser's request the loopback listener reads.
_MAX_REQUEST = 16 * 1024
_PAGE = (
    "<!doctype html><html><head><meta charset='utf-8'><title>{title}</title></head>"
    "<body style='font-family: sans-serif'><h1>{title}</h1><p>{text}</p></body></html>"
)


class AuthorizationRequired(AuthError):
    """The user must authorize in a browser first (raised by :class:`WebAppFlow`).

    Redirect the user to :attr:`authorization_url`; the view at the redirect URI then
    calls :meth:`OAuth.complete_authorization` with the URL it was called at.
    """

    def __init__(self, authorization_url: str, state: str) -> None:
        self.authorization_url = authorization_url
        self.state = state
        super().__init__("authorization required: send the user's browser to the "
                         "authorization URL (exc.authorization_url)")


class AuthorizationFlow(abc.ABC):
    """Gets the user through the authorization server and back to the client.

    Subclass it for another setting (a GUI toolkit's web view, say).
    """

    #: True when :meth:`authorize` never returns the callback itself: the application
    #: finishes the flow with :meth:`OAuth.complete_authorization`.
    completes_elsewhere = False

    @abc.abstractmethod
    def redirect_uri(self) -> str:
        """The redirect URI to register and to send in authorization requests."""

    @abc.abstractmethod
    def authorize(self, authorization_url: str, timeout: Optional[float]) -> str:
        """Send the user to ``authorization_url``; return the URL the authorization
        server redirected back to (with ``code``, ``state``, ``iss``).

        Blocks at most ``timeout`` seconds (None: no limit).

        Raises:
            AuthError: the user did not come back in time, or the flow failed.
        """

    def close(self) -> None:  # noqa: B027 - optional: most flows hold nothing
        """Release what the flow holds (a listening socket). Idempotent."""


def _wrap_callback_error(exc: Exception, what: str) -> MCPError:
    if isinstance(exc, MCPError):
        return exc
    error = AuthError(f"{what} raised {type(exc).__name__}: {excerpt(exc, 200)}")
    error.__cause__ = exc
    return error


class HeadlessFlow(AuthorizationFlow):
    """Hands the authorization URL to ``redirect_handler`` and takes the callback URL it
    returns: for tests, CI and automation where no person is involved.

    Args:
        redirect_handler: ``redirect_handler(authorization_url) -> callback_url``. It runs
            on the thread that needed the token and must return in bounded time.
            :func:`follow_redirect` suits an authorization server that redirects at once.
        redirect_uri: the redirect URI to register (nothing listens on it).
    """

    def __init__(self, redirect_handler: Callable[[str], str],
                 redirect_uri: str = "http://127.0.0.1/callback") -> None:
        self.redirect_handler = redirect_handler
        self._redirect_uri = redirect_uri

    def redirect_uri(self) -> str:
        return self._redirect_uri

    def authorize(self, authorization_url: str, timeout: Optional[float]) -> str:
        try:
            callback = self.redirect_handler(authorization_url)
        except Exception as exc:
            raise _wrap_callback_error(exc, "the redirect handler") from exc
        if not isinstance(callback, str) or not callback:
            raise AuthError("the redirect handler returned no callback URL")
        return callback

    def __repr__(self) -> str:
        return f"HeadlessFlow({self.redirect_handler!r}, redirect_uri={self._redirect_uri!r})"


def follow_redirect(authorization_url: str, *, timeout: float = 10.0,
                    session: Optional[requests.Session] = None) -> str:
    """GET ``authorization_url`` without following redirects; return where it redirects.

    A redirect handler for :class:`HeadlessFlow` against an authorization server that
    approves at once (test servers, the conformance suite's mocks).

    Raises:
        AuthError: no redirect came back.
    """
    getter = session or requests
    try:
        # What a browser sends: none of the user's .netrc or session credentials.
        response = getter.get(authorization_url, allow_redirects=False, timeout=timeout,
                              auth=no_credentials)
    except requests.RequestException as exc:
        raise AuthError(f"the authorization endpoint could not be reached: {exc!r}") from exc
    with response:
        location = response.headers.get("Location")
        if not 300 <= response.status_code < 400 or not location:
            raise AuthError(f"the authorization endpoint answered HTTP {response.status_code} "
                            "instead of redirecting")
    return str(urljoin(authorization_url, location))


class WebAppFlow(AuthorizationFlow):
    """For web applications: the browser that needs authorizing is the user's, on the
    other side of a view.

    When a token is needed, ``on_authorization_url(url)`` is called (if given: to note the
    URL in the user's session, say), then :class:`AuthorizationRequired` is raised; it
    reaches the code that called the MCP client, which redirects the user to
    ``exc.authorization_url``. The view at ``redirect_uri`` completes the flow::

        def callback(request):                       # Django
            oauth_for(request.user).complete_authorization(request.build_absolute_uri())
            return redirect("/where-the-user-was")

    The authorization in progress is kept in the OAuth object's storage, keyed by its
    ``state``, so any thread (or any process sharing the storage) can complete it.

    Args:
        redirect_uri: this application's callback URL (registered with the server).
        on_authorization_url: called with the URL before the exception is raised.
    """

    completes_elsewhere = True

    def __init__(self, redirect_uri: str,
                 on_authorization_url: Optional[Callable[[str], None]] = None) -> None:
        self._redirect_uri = redirect_uri
        self.on_authorization_url = on_authorization_url

    def redirect_uri(self) -> str:
        return self._redirect_uri

    def authorize(self, authorization_url: str, timeout: Optional[float]) -> str:
        state = dict(parse_qsl(urlsplit(authorization_url).query)).get("state", "")
        if self.on_authorization_url is not None:
            try:
                self.on_authorization_url(authorization_url)
            except Exception as exc:
                raise _wrap_callback_error(exc, "on_authorization_url") from exc
        raise AuthorizationRequired(authorization_url, state)

    def __repr__(self) -> str:
        return f"WebAppFlow(redirect_uri={self._redirect_uri!r})"


class LoopbackFlow(AuthorizationFlow):
    """Opens the user's browser at the authorization URL and receives the redirect on a
    loopback address (RFC 8252): for scripts, notebooks and command-line tools.

    The listening socket is bound when the redirect URI is first needed (so the port is
    known before registration) and closed after the one request that brings the
    callback, or when the wait times out. The port chosen first is reused by later
    authorizations, so a registered redirect URI stays valid.

    Args:
        host: the loopback address to listen on.
        port: the port; 0 picks a free one.
        path: the callback path.
        open_browser: open the system's browser (:mod:`webbrowser`). When it cannot, or
            when False, the URL is logged at WARNING for the user to open.
        on_authorization_url: also called with the URL (a notebook can display it).

    Thread-safety: one authorization at a time (the OAuth object serializes them).
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        path: str = "/callback",
        open_browser: bool = True,
        on_authorization_url: Optional[Callable[[str], None]] = None,
    ) -> None:
        if not path.startswith("/"):
            raise ValueError("path must start with '/'")
        self.host = host
        self.port = port
        self.path = path
        self.open_browser = open_browser
        self.on_authorization_url = on_authorization_url
        # Guards _sock and port against close() from another thread.
        self._lock = threading.Lock()
        self._sock: Optional[socket.socket] = None

    def _bind(self) -> socket.socket:
        with self._lock:
            if self._sock is not None:
                return self._sock
            family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
            sock = socket.socket(family, socket.SOCK_STREAM)
            try:
                try:
                    sock.bind((self.host, self.port))
                except OSError:
                    if self.port == 0:
                        raise
                    sock.close()  # the port we used before is taken now: pick another
                    sock = socket.socket(family, socket.SOCK_STREAM)
                    sock.bind((self.host, 0))
                sock.listen(4)
            except OSError as exc:
                sock.close()
                raise AuthError(f"cannot listen on {self.host}:{self.port} for the "
                                f"authorization redirect: {exc}") from exc
            self.port = sock.getsockname()[1]
            self._sock = sock
            return sock

    def redirect_uri(self) -> str:
        self._bind()
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{self.path}"

    def authorize(self, authorization_url: str, timeout: Optional[float]) -> str:
        sock = self._bind()
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            self._show(authorization_url)
            while True:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise AuthError(f"no authorization arrived within {timeout} s "
                                    "(authorization_timeout)")
                sock.settimeout(remaining)
                try:
                    connection, _ = sock.accept()
                except socket.timeout:
                    continue  # the deadline check above ends the wait
                except OSError as exc:
                    raise AuthError(f"the authorization redirect listener failed: {exc}") from exc
                with connection:
                    target = self._serve(connection, remaining)
                if target is not None:
                    host = f"[{self.host}]" if ":" in self.host else self.host
                    return f"http://{host}:{self.port}{target}"
        finally:
            self.close()  # one request, then closed

    def _show(self, authorization_url: str) -> None:
        shown = False
        if self.on_authorization_url is not None:
            try:
                self.on_authorization_url(authorization_url)
                shown = True
            except Exception:
                log.exception("on_authorization_url raised")
        if self.open_browser:
            try:
                shown = webbrowser.open(authorization_url) or shown
            except (webbrowser.Error, OSError) as exc:  # no browser: the warning below says why
                log.debug("opening a browser failed: %r", exc)
        if not shown:
            log.warning("mcp-sync: open this URL in a browser to authorize: %s",
                        authorization_url)

    def _serve(self, connection: socket.socket, remaining: Optional[float]) -> Optional[str]:
        """Read one HTTP request; answer it. Returns its target if it is the callback."""
        connection.settimeout(10.0 if remaining is None else max(0.1, min(10.0, remaining)))
        data = b""
        try:
            while b"\r\n\r\n" not in data and len(data) < _MAX_REQUEST:
                chunk = connection.recv(4096)
                if not chunk:
                    break
                data += chunk
        except OSError as exc:
            log.debug("reading a request on the redirect listener failed: %r", exc)
            return None
        request_line = data.split(b"\r\n", 1)[0].decode("latin-1", "replace").split()
        if len(request_line) < 2 or request_line[0] != "GET":
            self._reply(connection, 405, "Not allowed", "")
            return None
        target = request_line[1]
        if urlsplit(target).path != self.path:
            self._reply(connection, 404, "Not found", "")
            return None
        self._reply(connection, 200, "Authorization complete",
                    "You can close this window and return to the application.")
        return target

    @staticmethod
    def _reply(connection: socket.socket, status: int, title: str, text: str) -> None:
        body = _PAGE.format(title=title, text=text).encode("utf-8")
        head = (f"HTTP/1.1 {status} {title}\r\nContent-Type: text/html; charset=utf-8\r\n"
                f"Content-Length: {len(body)}\r\nCache-Control: no-store\r\n"
                "Connection: close\r\n\r\n").encode("latin-1")
        try:
            connection.sendall(head + body)
        except OSError as exc:
            log.debug("answering the browser failed: %r", exc)

    def close(self) -> None:
        with self._lock:
            sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()

    def __repr__(self) -> str:
        return f"LoopbackFlow(host={self.host!r}, port={self.port}, path={self.path!r})"
