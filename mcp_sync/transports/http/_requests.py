"""What the HTTP transports need from ``requests`` beyond what it does by itself.

**No credential follows a redirect to another origin.** ``requests`` follows redirects by
itself. On a hop to another host it drops the ``Authorization`` header, but it keeps every
other header (an API key given in ``headers=``, ``Mcp-Session-Id``), re-sends the body of
a 307/308 POST (a tool call's arguments) and looks up ``.netrc`` credentials for the new
host. An MCP server has no reason to send its client elsewhere, so the HTTP transports
install :func:`refuse_cross_origin` as a response hook: a redirect that leaves the origin
(scheme, host, port) of the request it answers raises :class:`CrossOriginRedirect` before
anything is sent there, and the transport turns that into a ``TransportError``. A redirect
within the origin (``/mcp`` to ``/mcp/``) is followed as before, and so is an upgrade from
``http`` to ``https`` on the same host and default ports (what was sent in clear already
is then sent encrypted).

**Credentials stay out of the URL.** ``http://user:password@host/mcp`` works, but the
transports keep the ``user:password@`` part apart (:func:`split_credentials`) and send it
as HTTP Basic auth, as ``requests`` would: the URL they show in every message, log line and
``repr()`` carries no password.

**Errors say what happened in words.** A failed connection is reported as ``cannot reach
<url>: connection refused`` (:func:`failure_reason`), not as the ``urllib3`` exception
chain with its private pool classes (that stays the ``__cause__``). The requests a client
sends while connecting (``server/discover``, ``initialize``) are reported as ``connect``
(:func:`doing`), and a 404 or 405 there comes with the usual endpoint paths
(:func:`endpoint_hint`). The same causes tell a request that never left
(:func:`connect_failed`: it may be sent again) and a server that is gone
(:func:`refused`: nothing listens on its port).

**Closing a session closes its sockets.** Since urllib3 2, ``PoolManager.clear()`` (what
``requests.Session.close()`` calls) forgets its connection pools without closing them;
their idle sockets stay open, on both ends, until the garbage collector reaches the pools.
:func:`close_session` closes them at once, so a closed client holds no descriptor.
"""

from __future__ import annotations

import http.client
import re
import socket
import ssl
from typing import Any, Iterator, List, Optional, Tuple
from urllib.parse import urljoin, urlsplit, urlunsplit

import requests
import urllib3
from requests.utils import get_auth_from_url

from ...exceptions import excerpt

__all__ = ["CrossOriginRedirect", "causes", "close_session", "connect_failed", "doing",
           "endpoint_hint", "failure_reason", "origin", "refuse_cross_origin", "refused",
           "split_credentials"]

_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin(url: str) -> Tuple[str, str, Optional[int]]:
    """``(scheme, host, port)`` of a URL, with the scheme's default port filled in."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:  # a port that is not a number: matches no origin
        port = None
    return scheme, (parts.hostname or "").lower(), port or _DEFAULT_PORTS.get(scheme)


def _allowed(source: str, target: str) -> bool:
    old, new = origin(source), origin(target)
    if old == new:
        return True
    # http://host/ -> https://host/ on the default ports: the same server, now encrypted.
    return old == ("http", new[1], 80) and new[0] == "https" and new[2] == 443


class CrossOriginRedirect(requests.RequestException):
    """A redirect to another origin, not followed (the transports translate it)."""


def refuse_cross_origin(response: requests.Response, *args: Any, **kwargs: Any) -> None:
    """A ``requests`` response hook: raise :class:`CrossOriginRedirect` for a redirect that
    leaves the origin of the request it answers. Called for every hop of a redirect chain.
    """
    if not response.is_redirect:
        return
    target = urljoin(response.url, response.headers.get("location", ""))
    if _allowed(response.url, target):
        return
    status = response.status_code
    response.close()
    raise CrossOriginRedirect(
        f"refusing to follow a redirect (HTTP {status}) from {excerpt(response.url, 200)} to "
        f"{excerpt(target, 200)}: another origin, where this client's credentials and "
        f"session must not go",
        response=response,
    )


def close_session(http: requests.Session) -> None:
    """Close ``http`` and every idle connection in its pools, now (see the module docstring).

    Connections still checked out (a response being read) are closed by whoever closes
    that response.
    """
    pools: List[Any] = []
    for adapter in http.adapters.values():
        managers = [getattr(adapter, "poolmanager", None),
                    *getattr(adapter, "proxy_manager", {}).values()]
        for manager in managers:
            container = getattr(manager, "pools", None)
            if container is None:
                continue
            for key in list(container.keys()):
                pool = container.get(key)
                if pool is not None:
                    pools.append(pool)
    http.close()
    for pool in pools:
        pool.close()


def split_credentials(url: str) -> Tuple[str, Optional[Tuple[str, str]]]:
    """``url`` without its ``user:password@`` part, and that part (unquoted), or None."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    credentials = get_auth_from_url(url)
    bare = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    return bare, (credentials if any(credentials) else None)


# -- error messages ------------------------------------------------------------------------

# The requests a client sends while it connects: their failures are the connect's.
_HANDSHAKE = frozenset({"initialize", "server/discover"})
# "HTTPConnectionPool(host='h', port=1): " and the like: urllib3's private classes.
_POOL_PREFIX = re.compile(r"\b_?\w*(?:Pool|Connection)\(host=[^)]*\):\s*")


def doing(method: Optional[str], *, connected: bool) -> Optional[str]:
    """What the caller was doing when ``method`` failed: ``"connect"`` for the requests of
    the handshake (before the transport was told a protocol version), else ``method``."""
    if method in _HANDSHAKE and not connected:
        return "connect"
    return method


def causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it wraps: urllib3's ``reason``, ``args[0]``, ``__cause__``."""
    current: Optional[BaseException] = exc
    for _ in range(10):
        if current is None:
            return
        yield current
        reason = getattr(current, "reason", None)
        if isinstance(reason, BaseException):
            current = reason
        elif current.args and isinstance(current.args[0], BaseException):
            current = current.args[0]
        else:
            current = current.__cause__ or current.__context__


def _caused_by(exc: BaseException, kinds: Tuple[type, ...]) -> bool:
    """True if ``exc`` (a requests error, or ours from one) comes of one of ``kinds``."""
    return any(isinstance(cause, kinds) for cause in causes(exc))


def connect_failed(exc: BaseException) -> bool:
    """True if ``exc`` (a requests error) failed before anything was sent."""
    return _caused_by(exc, (urllib3.exceptions.NewConnectionError,
                            urllib3.exceptions.ConnectTimeoutError, requests.ConnectTimeout))


def refused(exc: BaseException) -> bool:
    """True if ``exc`` failed because the server's port refused the connection: nothing
    listens there any more (unlike a reset or a timeout, which may pass)."""
    return _caused_by(exc, (ConnectionRefusedError,))


def failure_reason(exc: BaseException) -> str:
    """Why a request failed, in a few words (``connection refused``), from the innermost
    cause of a ``requests`` error; never the names of urllib3's pool classes."""
    chain = list(causes(exc))
    # The socket's own error first: urllib3 wraps a refused connection in a subclass of
    # its connect-timeout error.
    for cause in chain:
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        if isinstance(cause, socket.gaierror):
            return f"host name not found ({excerpt(cause.strerror or cause, 100)})"
        if isinstance(cause, ssl.SSLError):
            return f"TLS failed ({excerpt(cause.reason or cause, 150)})"
        if isinstance(cause, ConnectionResetError):
            return "connection reset by the server"
        if isinstance(cause, http.client.RemoteDisconnected):
            return "the server closed the connection without answering"
    for cause in chain:
        if isinstance(cause, (requests.ConnectTimeout, urllib3.exceptions.ConnectTimeoutError)):
            return "timed out connecting"
        if isinstance(cause, (requests.ReadTimeout, urllib3.exceptions.ReadTimeoutError,
                              socket.timeout)):
            return "no response in time"
    innermost = chain[-1]
    if isinstance(innermost, OSError) and innermost.strerror:
        return excerpt(innermost.strerror, 150)
    return excerpt(_POOL_PREFIX.sub("", str(innermost)), 200) or type(innermost).__name__


def endpoint_hint(url: str) -> str:
    """What to try after a 404 or 405 at connect: the usual MCP endpoint paths."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    root = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
    if path.endswith(("/mcp", "/sse")):
        return (f"is {path} the server's MCP endpoint? Streamable HTTP servers usually serve "
                "/mcp, legacy HTTP+SSE servers /sse; check the server's documentation")
    return ("no MCP endpoint at this URL; MCP servers usually serve Streamable HTTP at /mcp "
            f"(try {root}{path}/mcp), legacy HTTP+SSE at /sse")
