"""``mcp_sync.connect()``: one call from a target (command, URL or config entry) to a
connected client."""

from __future__ import annotations

import ipaddress
import logging
import re
from typing import Any, Mapping, Optional, Sequence, Union

from .client import REFUSED_STATUSES, Client
from .exceptions import HTTPError, MCPError, excerpt
from .transports.base import Transport
from .transports.stdio import StdioTransport, split_command

__all__ = ["Target", "connect", "http_url", "make_transport"]

log = logging.getLogger(__name__)

#: A URL, a command (a string or a list), an ``mcpServers`` entry, or a Transport.
Target = Union[str, Sequence[str], Mapping[str, Any], Transport]

_TRANSPORT_NAMES = ("stdio", "http", "sse")


def _is_url(value: str) -> bool:
    return value.startswith(("http://", "https://"))


# "host:port" with an optional path, e.g. "localhost:8000/mcp" or "[::1]:3000": an HTTP URL
# whose scheme was left out (no command looks like this).
_HOST_PORT = re.compile(r"^(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]*):\d{1,5}"
                        r"(?:[/?#]\S*)?$")
# Any host with an optional port and path, for text that must be a URL (--url, a config
# entry's "url").
_HOST_ANY = re.compile(r"^(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]*)(?::\d{1,5})?"
                       r"(?:[/?#]\S*)?$")


def _is_loopback(host: str) -> bool:
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def http_url(text: str, *, strict: bool = True) -> Optional[str]:
    """``text`` as an HTTP(S) URL: unchanged when it has its scheme, with ``http://`` in
    front when it names a loopback host without one (``localhost:8000/mcp``,
    ``127.0.0.1:8000/mcp``, ``[::1]:8000``).

    ``strict`` (text that can only be a URL): anything else without a scheme raises.
    Otherwise only ``host:port[/path]`` shapes are taken for URLs, and None means "not a
    URL" (a command).

    Raises:
        ValueError: a URL without its scheme for another host (say which one to add), or
            a scheme other than http and https.
    """
    value = text.strip()
    if _is_url(value):
        return value
    if "://" in value:
        if strict:
            raise ValueError(f"{excerpt(value, 200)!r} is not an http:// or https:// URL")
        return None
    match = (_HOST_ANY if strict else _HOST_PORT).match(value)
    if match is None:
        if strict:
            raise ValueError(f"{excerpt(value, 200)!r} is not a URL: it needs a scheme, "
                             "http:// or https://")
        return None
    if _is_loopback(match.group("host")):
        log.debug("no scheme in %r: taking http:// for a loopback host", value)
        return f"http://{value}"
    raise ValueError(
        f"{excerpt(value, 200)!r} looks like a URL without its scheme: write "
        f"'https://{excerpt(value, 200)}' (or 'http://...' for a server without TLS)"
    )


def make_transport(
    target: Target,
    *,
    transport: Optional[str] = None,
    name: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[str] = None,
    headers: Optional[Mapping[str, str]] = None,
    auth: Any = None,
) -> Transport:
    """Build (without starting) the transport for ``target``.

    ``transport`` forces ``"stdio"``, ``"http"`` (Streamable HTTP) or ``"sse"`` (legacy
    HTTP+SSE); by default a URL means Streamable HTTP and anything else a command. A
    loopback ``host:port/path`` without a scheme (``localhost:8000/mcp``) is taken as
    ``http://``; for other hosts the missing scheme is an error (see :func:`http_url`).

    Raises:
        ValueError: the target is empty, a URL lacks its scheme, or the entry or
            transport name is invalid.
    """
    if isinstance(target, Transport):
        return target
    if transport is not None and transport not in _TRANSPORT_NAMES:
        raise ValueError(f"transport must be one of {_TRANSPORT_NAMES}, got {transport!r}")
    if isinstance(target, Mapping):
        return _from_entry(target, transport=transport, name=name)
    if isinstance(target, str):
        url = http_url(target, strict=transport in ("http", "sse"))
        if url is not None:
            return _http_transport(url, transport or "http", name, headers, auth)
    argv = split_command(target)
    if not argv:
        raise ValueError("connect() needs a command, a URL or an mcpServers entry")
    if transport not in (None, "stdio"):
        raise ValueError(f"transport={transport!r} needs a URL, got the command {argv!r}")
    return StdioTransport(argv[0], argv[1:], env=env, cwd=cwd, name=name)


def _from_entry(
    entry: Mapping[str, Any], *, transport: Optional[str], name: Optional[str]
) -> Transport:
    kind = transport or entry.get("type") or entry.get("transport")
    if kind in ("streamable-http", "streamableHttp", "streamable_http"):
        kind = "http"
    if "url" in entry:
        kind = kind or "http"
        if kind not in ("http", "sse"):
            raise ValueError(f"mcpServers entry with a url has type {kind!r}; use 'http' or 'sse'")
        url = http_url(str(entry["url"]))
        assert url is not None  # strict: a URL or ValueError
        return _http_transport(url, kind, name, entry.get("headers"), None)
    if "command" in entry:
        if kind not in (None, "stdio"):
            raise ValueError(f"mcpServers entry with a command has type {kind!r}; use 'stdio'")
        argv = split_command(entry["command"])
        args = [str(arg) for arg in entry.get("args") or ()]
        return StdioTransport(
            argv[0], [*argv[1:], *args], env=entry.get("env"), cwd=entry.get("cwd"), name=name
        )
    raise ValueError("an mcpServers entry needs a 'command' (stdio) or a 'url' (HTTP)")


def _http_transport(
    url: str, kind: str, name: Optional[str], headers: Optional[Mapping[str, str]], auth: Any
) -> Transport:
    if kind == "sse":
        from .transports.sse import SseTransport

        return SseTransport(url, headers=headers, auth=auth, name=name)
    from .transports.http import HttpTransport

    return HttpTransport(url, headers=headers, auth=auth, name=name)


def connect(
    target: Target,
    *,
    transport: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[str] = None,
    headers: Optional[Mapping[str, str]] = None,
    auth: Any = None,
    **client_kwargs: Any,
) -> Client:
    """Connect to an MCP server and return a handshaken :class:`Client`.

    ``target`` is a command (``["python", "server.py"]`` or ``"python server.py"``), a URL
    (Streamable HTTP; falls back to legacy HTTP+SSE when the server answers the first POST
    with 400, 404 or 405), an ``mcpServers`` entry (``{"command": ..., "args": [...],
    "env": {...}}`` or ``{"url": ..., "type": "http" | "sse", "headers": {...}}``), or a
    Transport. ``env``/``cwd`` apply to commands, ``headers``/``auth`` to URLs; the other
    keyword arguments go to :class:`Client`.

    Use the client as a context manager, or call ``close()`` when done.

    Raises:
        CommandNotFound, TransportError, HTTPError, RequestTimeout,
        UnsupportedProtocolVersion: see :meth:`Client.connect`.
    """
    built = make_transport(
        target, transport=transport, name=client_kwargs.get("name"), env=env, cwd=cwd,
        headers=headers, auth=auth,
    )
    client = Client(built, **client_kwargs)
    try:
        return client.connect()
    except HTTPError as exc:
        fallback = transport is None and exc.status in REFUSED_STATUSES and _is_url_target(target)
        if not fallback:
            raise
        log.info("%s answered HTTP %s to initialize; trying the legacy HTTP+SSE transport",
                 built.target, exc.status)
        refused = exc
    legacy = make_transport(target, transport="sse", name=client_kwargs.get("name"),
                            headers=headers, auth=auth)
    try:
        return Client(legacy, **client_kwargs).connect()
    except MCPError as legacy_error:
        if getattr(legacy, "endpoint", None) is not None:
            raise  # a legacy server answered: what went wrong with it is the news
        # No MCP server of either kind here: the Streamable HTTP refusal (with its hint
        # about the endpoint path) says more than the fallback's failed GET.
        raise refused from legacy_error


def _is_url_target(target: Target) -> bool:
    if isinstance(target, str):
        return http_url(target, strict=False) is not None
    return isinstance(target, Mapping) and "url" in target and not target.get("type")
