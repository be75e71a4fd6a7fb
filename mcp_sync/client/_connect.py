"""``mcp_sync.connect()``: one call from a target (command, URL or config entry) to a
connected client."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Sequence, Union

from .._protocol import DEFAULT, Timeout
from .._util.hosts import is_loopback_host
from .._util.text import pattern
from ..exceptions import HTTPError, MCPError, excerpt
from ..transports._process import split_command
from ..transports.base import Transport
from ..transports.stdio import StdioTransport
from ._client import Client
from ._negotiation import REFUSED_STATUSES

if TYPE_CHECKING:
    from .. import types

__all__ = ["Target", "call_tool", "connect", "http_url", "make_transport"]

log = logging.getLogger(__name__)

#: A URL, a command (a string or a list), an ``mcpServers`` entry, or a Transport.
Target = Union[str, Sequence[str], Mapping[str, Any], Transport]

_TRANSPORT_NAMES = ("stdio", "http", "sse")


def _is_url(value: str) -> bool:
    return value.startswith(("http://", "https://"))


# "host:port" with an optional path, e.g. "localhost:8000/mcp" or "[::1]:3000": an HTTP URL
# whose scheme was left out (no command looks like this).
_HOST_PORT = (r"^(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]*):\d{1,5}"
              r"(?:[/?#]\S*)?$")
# Any host with an optional port and path, for text that must be a URL (--url, a config
# entry's "url").
_HOST_ANY = (r"^(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]*)(?::\d{1,5})?"
             r"(?:[/?#]\S*)?$")


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
    match = pattern(_HOST_ANY if strict else _HOST_PORT).match(value)
    if match is None:
        if strict:
            raise ValueError(f"{excerpt(value, 200)!r} is not a URL: it needs a scheme, "
                             "http:// or https://")
        return None
    if is_loopback_host(match.group("host")):
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
    inherit_env: Optional[bool] = None,
    close_timeout: Optional[float] = None,
    max_message_size: Optional[int] = None,
    stderr_lines: Optional[int] = None,
    max_write_backlog: Optional[int] = None,
    headers: Optional[Mapping[str, str]] = None,
    auth: Any = None,
    timeout: Any = DEFAULT,
) -> Transport:
    """Build (without starting) the transport for ``target``.

    ``transport`` forces ``"stdio"``, ``"http"`` (Streamable HTTP) or ``"sse"`` (legacy
    HTTP+SSE); by default a URL means Streamable HTTP and anything else a command. A
    loopback ``host:port/path`` without a scheme (``localhost:8000/mcp``) is taken as
    ``http://``; for other hosts the missing scheme is an error (see :func:`http_url`).

    ``env``, ``cwd``, ``inherit_env``, ``stderr_lines`` and ``max_write_backlog`` are
    :class:`~mcp_sync.StdioTransport`'s options, for a command or an ``mcpServers`` entry
    with one (``env`` adds to the entry's ``env``, ``cwd`` replaces its ``cwd``);
    ``headers`` (added to an entry's) and ``auth`` are for URLs. ``close_timeout`` and
    ``max_message_size`` go to any transport built here. ``None`` leaves the transport's
    default. ``timeout`` (seconds, ``None`` for no limit) bounds each whole exchange of a
    URL's transport that no request deadline covers (:class:`~mcp_sync.HttpTransport`'s
    ``timeout``, :class:`~mcp_sync.SseTransport`'s ``post_timeout``, and its
    ``connect_timeout`` when shorter than its default); a command's
    transport and a transport built already keep theirs.

    Raises:
        ValueError: the target is empty, a URL lacks its scheme, the entry or transport
            name is invalid, or an option was given that the target's transport does not
            take.
    """
    stdio_options: Dict[str, Any] = {key: value for key, value in (
        ("env", env), ("cwd", cwd), ("inherit_env", inherit_env),
        ("stderr_lines", stderr_lines), ("max_write_backlog", max_write_backlog))
        if value is not None}
    http_options = [key for key, value in (("headers", headers), ("auth", auth))
                    if value is not None]
    if isinstance(target, Transport):
        given = [*stdio_options, *http_options]
        if close_timeout is not None:
            given.append("close_timeout")
        if max_message_size is not None:
            given.append("max_message_size")
        if given:
            raise ValueError(f"{', '.join(given)} cannot apply to a transport built already "
                             f"({target!r}): give them to its constructor")
        return target
    if transport is not None and transport not in _TRANSPORT_NAMES:
        raise ValueError(f"transport must be one of {_TRANSPORT_NAMES}, got {transport!r}")
    is_url = False
    if isinstance(target, Mapping):
        is_url = "url" in target
    url: Optional[str] = None
    if isinstance(target, str):
        url = http_url(target, strict=transport in ("http", "sse"))
        is_url = url is not None
    if is_url and stdio_options:
        raise ValueError(f"{', '.join(stdio_options)} apply to stdio servers (a command), "
                         "not to a URL")
    if not is_url and http_options:
        raise ValueError(f"{', '.join(http_options)} apply to URLs, not to a command")
    common: Dict[str, Any] = {"name": name}
    if close_timeout is not None:
        common["close_timeout"] = close_timeout
    if max_message_size is not None:
        common["max_message_size"] = max_message_size
    if isinstance(target, Mapping):
        return _from_entry(target, transport=transport, options={**common, **stdio_options},
                           headers=headers, auth=auth, timeout=timeout)
    if url is not None:
        return _http_transport(url, transport or "http", headers, auth, common, timeout)
    argv = split_command(target)
    if not argv:
        raise ValueError("connect() needs a command, a URL or an mcpServers entry")
    if transport not in (None, "stdio"):
        raise ValueError(f"transport={transport!r} needs a URL, got the command {argv!r}")
    return StdioTransport(argv[0], argv[1:], **common, **stdio_options)


def _from_entry(
    entry: Mapping[str, Any], *, transport: Optional[str], options: Dict[str, Any],
    headers: Optional[Mapping[str, str]], auth: Any, timeout: Any = DEFAULT,
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
        merged = {**(entry.get("headers") or {}), **(headers or {})}
        return _http_transport(url, kind, merged or None, auth, options, timeout)
    if "command" in entry:
        if kind not in (None, "stdio"):
            raise ValueError(f"mcpServers entry with a command has type {kind!r}; use 'stdio'")
        argv = split_command(entry["command"])
        args = [str(arg) for arg in entry.get("args") or ()]
        options = dict(options)
        options["env"] = {**(entry.get("env") or {}), **(options.get("env") or {})}
        options.setdefault("cwd", entry.get("cwd"))
        return StdioTransport(argv[0], [*argv[1:], *args], **options)
    raise ValueError("an mcpServers entry needs a 'command' (stdio) or a 'url' (HTTP)")


def _http_transport(
    url: str, kind: str, headers: Optional[Mapping[str, str]], auth: Any,
    options: Mapping[str, Any], timeout: Any = DEFAULT,
) -> Transport:
    # The client's timeout also bounds the exchanges its requests' deadlines do not
    # cover (notifications/initialized during connect, say): see make_transport().
    timed = {} if timeout is DEFAULT else {"timeout": timeout}
    if kind == "sse":
        from ..transports.sse import DEFAULT_CONNECT_TIMEOUT, SseTransport

        if timeout is not DEFAULT:
            timed = {"post_timeout": timeout}
            if timeout is not None and timeout < DEFAULT_CONNECT_TIMEOUT:
                # The wait for the endpoint event is part of the connect it bounds.
                timed["connect_timeout"] = timeout
        return SseTransport(url, headers=headers, auth=auth, **timed, **options)
    from ..transports.http import HttpTransport

    return HttpTransport(url, headers=headers, auth=auth, **timed, **options)


def connect(
    target: Target,
    *,
    transport: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[str] = None,
    inherit_env: Optional[bool] = None,
    max_message_size: Optional[int] = None,
    stderr_lines: Optional[int] = None,
    max_write_backlog: Optional[int] = None,
    headers: Optional[Mapping[str, str]] = None,
    auth: Any = None,
    **client_kwargs: Any,
) -> Client:
    """Connect to an MCP server and return a handshaken :class:`Client`.

    ``target`` is a command (``["python", "server.py"]`` or ``"python server.py"``), a URL
    (Streamable HTTP; falls back to legacy HTTP+SSE when the server answers the first POST
    with 400, 404 or 405), an ``mcpServers`` entry (``{"command": ..., "args": [...],
    "env": {...}}`` or ``{"url": ..., "type": "http" | "sse", "headers": {...}}``), or a
    Transport.

    ``env``, ``cwd``, ``inherit_env``, ``stderr_lines`` and ``max_write_backlog`` go to the
    :class:`~mcp_sync.StdioTransport` of a command (see there; ``env`` adds to an entry's
    ``env``), ``headers``/``auth`` to the transport of a URL, ``max_message_size`` to
    either; an option the target's transport does not take is a ``ValueError``. The other
    keyword arguments go to :class:`Client`; its ``close_timeout`` bounds each step of
    closing the transport too (stopping a stdio server included), and its ``timeout``
    bounds this whole connect (:meth:`Client.connect`: the era probe, the handshake, the
    wait for a legacy server's endpoint, a fallback to legacy HTTP+SSE, and the stop of a
    server that did not answer) and also each whole HTTP exchange no request deadline
    covers (the POST of ``notifications/initialized`` and its body, say).

    Use the client as a context manager, or call ``close()`` when done.

    Raises:
        ValueError: an invalid target, or an option that does not apply to it.
        CommandNotFound, TransportError, HTTPError, RequestTimeout,
        UnsupportedProtocolVersion: see :meth:`Client.connect`.
    """
    built = make_transport(
        target, transport=transport, name=client_kwargs.get("name"), env=env, cwd=cwd,
        inherit_env=inherit_env, max_message_size=max_message_size,
        stderr_lines=stderr_lines, max_write_backlog=max_write_backlog,
        headers=headers, auth=auth, timeout=client_kwargs.get("timeout", DEFAULT),
    )
    client = Client(built, **client_kwargs)
    started = time.monotonic()
    try:
        return client.connect()
    except HTTPError as exc:
        fallback = transport is None and exc.status in REFUSED_STATUSES and _is_url_target(target)
        if not fallback:
            raise
        log.info("%s answered HTTP %s to initialize; trying the legacy HTTP+SSE transport",
                 built.target, exc.status)
        refused = exc
    # One timeout for the whole connect: the fallback has what the first try left.
    left = None if client.timeout is None else max(
        0.0, client.timeout - (time.monotonic() - started))
    legacy = make_transport(target, transport="sse", name=client_kwargs.get("name"),
                            max_message_size=max_message_size, headers=headers, auth=auth,
                            timeout=client_kwargs.get("timeout", DEFAULT))
    try:
        return Client(legacy, **client_kwargs).connect(left)
    except MCPError as legacy_error:
        if getattr(legacy, "endpoint", None) is not None:
            raise  # a legacy server answered: what went wrong with it is the news
        # No MCP server of either kind here: the Streamable HTTP refusal (with its hint
        # about the endpoint path) says more than the fallback's failed GET.
        raise refused from legacy_error


def call_tool(
    target: Target,
    name: str,
    arguments: Optional[Mapping[str, Any]] = None,
    *,
    timeout: Timeout = DEFAULT,
    raise_on_error: bool = False,
    **connect_kwargs: Any,
) -> types.CallToolResult:
    """One tool call, no lifecycle: connect to ``target``, call ``name``, close.

    For a script or a cron job that needs one result::

        result = mcp_sync.call_tool(["python", "server.py"], "add", {"a": 1, "b": 2})
        print(result.data)

    ``target`` and ``connect_kwargs`` are :func:`connect`'s (``env=``, ``headers=``,
    ``close_timeout=``...). ``timeout`` bounds each step (the handshake, the tool listing
    the output check needs, the call), not their sum; ``DEFAULT`` is the client's default
    (``MCP_SYNC_TIMEOUT``, else 30 s). The server's protocol era is remembered for the
    process, so a second call to the same server skips the era probe. The server is
    stopped (stdio) or its session ended (HTTP) before this returns, whatever happened.
    ``raise_on_error`` is :meth:`Client.call_tool`'s.

    Raises:
        what :func:`connect` and :meth:`Client.call_tool` raise.
    """
    if timeout is not DEFAULT:
        connect_kwargs["timeout"] = timeout
    with connect(target, **connect_kwargs) as client:
        return client.call_tool(name, arguments, raise_on_error=raise_on_error)


def _is_url_target(target: Target) -> bool:
    if isinstance(target, str):
        return http_url(target, strict=False) is not None
    return isinstance(target, Mapping) and "url" in target and not target.get("type")
