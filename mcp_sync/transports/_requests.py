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

**Closing a session closes its sockets.** Since urllib3 2, ``PoolManager.clear()`` (what
``requests.Session.close()`` calls) forgets its connection pools without closing them;
their idle sockets stay open, on both ends, until the garbage collector reaches the pools.
:func:`close_session` closes them at once, so a closed client holds no descriptor.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple
from urllib.parse import urljoin, urlsplit, urlunsplit

import requests
from requests.utils import get_auth_from_url

from ..exceptions import excerpt

__all__ = ["CrossOriginRedirect", "close_session", "origin", "refuse_cross_origin",
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
