"""The client's side of the response cache (2026-07-28): its view bound at each connect,
the cacheable requests looked up before and stored after, and what the cache did for
each answer.

The connection holds one :class:`ClientCache`, made with the connection itself (of which
it uses what :class:`CachingConnection` names; this module imports no client). The rules
are :mod:`mcp_sync.cache`'s; here is only the wiring:

* ``Client(cache=...)``: ``None`` (the default) gives each client a cache of its own
  over a bounded :class:`~mcp_sync.cache.MemoryStore`; ``False`` none; a
  :class:`~mcp_sync.cache.ResponseCache` is used as it is (shared with other clients,
  and, over a shared store, other processes).
* At each connect the cache is bound (:meth:`ClientCache.bind`) to the server's identity
  (:func:`~mcp_sync.cache.url_identity` of an HTTP transport's URL,
  :func:`~mcp_sync.cache.command_identity` of a stdio command, else an identity of this
  client's own), the version agreed and the authorization context
  (:func:`~mcp_sync.cache.credential_identity` of what ``HttpTransport.credentials()``
  says is sent). Only the stateless era binds a view: in the session era nothing is
  looked up or stored. A session that replaces one this connection had (a renewed
  session, a connect after a loss or a close) makes every entry of the server stale.
* A request is looked up before it is sent (:meth:`ClientCache.through`, and the
  listings' pages, :mod:`._listing`); a result that took more than one send (input
  rounds, a renewal, a version switch) is never stored.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Mapping,
    NamedTuple,
    Optional,
    Protocol,
    Tuple,
)

if TYPE_CHECKING:
    from .._protocol.agreement import Agreement
    from ..cache import CacheInfo, ResponseCache, ServerCache, Ticket
    from ..transports.base import Transport

__all__ = ["CacheOption", "CachingConnection", "ClientCache", "Lookup", "Sends", "cache_mode",
           "check_option", "own_cache"]

#: What ``Client(cache=...)`` takes.
CacheOption = Any  # Union[None, bool, ResponseCache]

# The default cache of one client: a bounded MemoryStore of its own.
_DEFAULT_ENTRIES = 1024
_DEFAULT_BYTES = 16 * 1024 * 1024
# The most requests whose last CacheInfo a client keeps (forgotten all at once past it).
_KNOWN_INFOS = 256


# The per-call modes (mcp_sync.cache.CACHE_MODES, which this module does not import
# before a cache is needed: a session-era client never loads the package).
_MODES = ("use", "refresh", "bypass")


def check_option(option: CacheOption) -> None:
    """Raises ``TypeError`` unless ``option`` is what ``Client(cache=...)`` takes:
    ``None`` or ``True`` (a cache of the client's own, made when first needed),
    ``False`` (none) or a :class:`~mcp_sync.cache.ResponseCache`."""
    if option is None or isinstance(option, bool):
        return
    # A ResponseCache's module is loaded if one exists: no need to load it to check.
    module = sys.modules.get("mcp_sync.cache._cache")
    if module is None or not isinstance(option, module.ResponseCache):
        raise TypeError("cache must be None (a cache of the client's own), False (none) "
                        f"or a mcp_sync.cache.ResponseCache, not {type(option).__name__}")


def own_cache() -> ResponseCache:
    """A client's own cache: a bounded :class:`~mcp_sync.cache.MemoryStore`."""
    from ..cache import MemoryStore, ResponseCache

    return ResponseCache(MemoryStore(_DEFAULT_ENTRIES, _DEFAULT_BYTES),
                         max_entry_bytes=_DEFAULT_BYTES)


def cache_mode(mode: Any) -> str:
    """A per-call ``cache=`` value, checked: ``"use"``, ``"refresh"`` or ``"bypass"``.

    Raises:
        TypeError: not a string.
        ValueError: another string.
    """
    if isinstance(mode, str) and mode in _MODES:
        return mode
    if not isinstance(mode, str):
        raise TypeError(f"cache= takes one of {', '.join(map(repr, _MODES))}, "
                        f"not {type(mode).__name__}")
    raise ValueError(f"cache mode must be one of {', '.join(_MODES)}, not {mode!r}")


class CachingConnection(Protocol):
    """What the cache wiring uses of the client's connection."""

    @property
    def transport(self) -> Transport: ...


class Sends:
    """Counts the sends of one request (given as its ``headers`` callable, which the
    rounds call once per send): a result that took more than one is not stored."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1


class ClientCache:
    """One client's response cache: the cache, its view of the moment, and the
    :class:`~mcp_sync.cache.CacheInfo` of each request's last answer. Thread-safe."""

    def __init__(self, connection: CachingConnection, option: CacheOption) -> None:
        check_option(option)
        self._connection = connection
        self._option = option
        # The cache given, or the client's own once made (None until then).
        self._cache: Optional[ResponseCache] = (
            None if option is None or isinstance(option, bool) else option)
        #: The view bound at the last connect; ``None`` when nothing is cached (no
        #: cache, the session era, not connected yet).
        self.view: Optional[ServerCache] = None
        # This client's own identity of a server it cannot name (an in-memory one).
        self._own_identity = "client:" + os.urandom(16).hex()
        self._infos: Dict[Tuple[str, str], CacheInfo] = {}
        self._lock = threading.Lock()

    @property
    def cache(self) -> Optional[ResponseCache]:
        """The :class:`~mcp_sync.cache.ResponseCache` (the client's own made now if
        need be), or ``None`` (``cache=False``)."""
        if self._option is False:
            return None
        if self._cache is None:
            with self._lock:
                if self._cache is None:
                    self._cache = own_cache()
        return self._cache

    # -- binding -------------------------------------------------------------------------

    def bind(self, agreement: Agreement, *, replaced: bool) -> None:
        """Bind the cache for a session settled on ``agreement`` (the stateless era
        only). ``replaced``: the session replaces one this connection had, whose
        notifications may have been missed: every entry of the server goes stale."""
        if self._option is False or not agreement.stateless or agreement.version is None:
            self.view = None
            return
        cache = self.cache
        assert cache is not None
        server, context = self.identity()
        view = cache.bind(server=server, version=agreement.version, context=context)
        if replaced:
            view.reconnected()
        self.view = view

    def rebind(self, agreement: Agreement) -> None:
        """The agreement changed on the same session (a version switch): entries never
        cross versions."""
        view = self.view
        if view is not None and view.version != agreement.version:
            self.bind(agreement, replaced=False)

    def identity(self) -> Tuple[str, str]:
        """The server's identity and the authorization context, from the transport."""
        from ..cache import command_identity, credential_identity, url_identity
        from ..transports.http import HttpTransport
        from ..transports.stdio import StdioTransport

        transport = self._connection.transport
        if isinstance(transport, HttpTransport):
            headers, auth = transport.credentials()
            return (url_identity(transport.url),
                    credential_identity(headers=headers, auth=auth))
        if isinstance(transport, StdioTransport):
            return (command_identity([transport.command, *transport.args],
                                     env=transport.env,
                                     cwd=None if transport.cwd is None else str(transport.cwd)),
                    "")
        return self._own_identity, ""

    # -- requests ------------------------------------------------------------------------

    def lookup(self, method: str, params: Optional[Mapping[str, Any]],
               mode: str) -> Optional[Lookup]:
        """The view and its ticket for a request, or ``None`` when nothing is cached."""
        view = self.view
        if view is None or not view.enabled:
            return None
        return Lookup(view, view.lookup(method, params, mode=mode))

    def through(self, method: str, params: Optional[Dict[str, Any]], mode: str,
                send: Callable[[Optional[Sends]], Any]) -> Any:
        """``method``'s result: served from the cache when fresh, else
        ``send(sends)`` (``sends``: counts the sends, ``None`` when nothing will be
        stored), stored if it may be."""
        view = self.view
        if view is None or not view.enabled:
            return send(None)
        from ..cache import CACHEABLE_METHODS, CacheInfo

        if method not in CACHEABLE_METHODS:
            return send(None)
        found = self.lookup(method, params, mode)
        if found is None:
            return send(None)
        view, ticket = found
        if ticket.hit is not None:
            self.record(method, params, ticket.hit.info)
            return ticket.hit.result
        sends = Sends()
        try:
            result = send(sends)
        except BaseException:
            view.discard(ticket)
            raise
        if sends.count > 1 or not isinstance(result, dict):
            view.discard(ticket)
            info = CacheInfo(False, 0.0, 0.0, "private", False)
        else:
            info = view.store(ticket, result)
        self.record(method, params, info)
        return result

    # -- what the cache did --------------------------------------------------------------

    def record(self, method: str, params: Optional[Mapping[str, Any]], info: CacheInfo) -> None:
        from ..cache import params_key

        key = (method, params_key(params))
        with self._lock:
            if len(self._infos) >= _KNOWN_INFOS:
                self._infos.clear()
            self._infos[key] = info

    def info(self, method: str, params: Optional[Mapping[str, Any]]) -> Optional[CacheInfo]:
        if not self._infos:
            return None
        from ..cache import params_key

        with self._lock:
            return self._infos.get((method, params_key(params)))

    # -- invalidation --------------------------------------------------------------------

    def notified(self, method: str, params: Optional[Dict[str, Any]]) -> None:
        """The server sent ``method``: make stale what it names."""
        view = self.view
        if view is not None and view.enabled:
            view.notified(method, params)

    def invalidate(self, method: Optional[str], uri: Optional[str]) -> bool:
        """Make entries of the server stale; whether a view was bound to do it."""
        view = self.view
        if view is None or not view.enabled:
            return False
        view.invalidate(method, uri)
        return True



class Lookup(NamedTuple):
    """A request looked up: the view that issued the ticket (stored through the same
    view, even if a reconnect bound another meanwhile: its tokens are gone then, and
    the result is dead on arrival) and the ticket."""

    view: ServerCache
    ticket: Ticket
