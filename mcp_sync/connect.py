"""``mcp_sync.connect()``: one call from a target (command, URL or config entry) to a
connected client."""

from __future__ import annotations

import logging
from typing import Any, Mapping, Optional, Sequence, Union

from .client import REFUSED_STATUSES, Client
from .exceptions import HTTPError, MCPError
from .transports.base import Transport
from .transports.stdio import StdioTransport, split_command

__all__ = ["Target", "connect", "make_transport"]

log = logging.getLogger(__name__)

#: A URL, a command (a string or a list), an ``mcpServers`` entry, or a Transport.
Target = Union[str, Sequence[str], Mapping[str, Any], Transport]

_TRANSPORT_NAMES = ("stdio", "http", "sse")


def _is_url(value: str) -> bool:
    return value.startswith(("http://", "https://"))


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
    HTTP+SSE); by default a URL means Streamable HTTP and anything else a command.

    Raises:
        ValueError: the target is empty, or the entry or transport name is invalid.
    """
    if isinstance(target, Transport):
        return target
    if transport is not None and transport not in _TRANSPORT_NAMES:
        raise ValueError(f"transport must be one of {_TRANSPORT_NAMES}, got {transport!r}")
    if isinstance(target, Mapping):
        return _from_entry(target, transport=transport, name=name)
    if isinstance(target, str) and _is_url(target.strip()):
        return _http_transport(target.strip(), transport or "http", name, headers, auth)
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
        return _http_transport(str(entry["url"]), kind, name, entry.get("headers"), None)
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
        return _is_url(target.strip())
    return isinstance(target, Mapping) and "url" in target and not target.get("type")
