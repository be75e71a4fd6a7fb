"""The response cache: the rules of :mod:`mcp_sync.cache._rules` applied to a store.

:class:`ResponseCache` holds the settings and the store and talks to it (every store
error is caught here, logged once, and taken for a miss). :class:`ServerCache` is one
client's view of it, bound to a server, an authorization context and the protocol
version agreed: the client asks it before a request (:meth:`ServerCache.lookup`), hands it
what came back (:meth:`ServerCache.store`), and tells it what the server notified
(:meth:`ServerCache.notified`).

How invalidation crosses processes. Each stored entry records the **generation tokens**
in force when its request was sent: one for the server, one for the method, one for the
resource (``resources/read``). Invalidating writes a new random token; an entry is served
only while every token it recorded is still the one in the store. So:

* a ``tools/list_changed`` received by one process drops the listing every process
  cached, in one write, without knowing their keys (other authorization contexts too);
* a result whose request was sent before an invalidation and stored after it is dead on
  arrival: the token it recorded is gone (the in-flight race);
* a token lost by the store (an LRU eviction, a restart, a non-atomic ``add`` racing
  another) makes its entries misses, never stale hits: tokens are created before the
  first request that records them, so no entry records "no token".

A lookup is one ``get_many`` (both arms of the entry and its tokens together); a miss
adds a token the first time one is needed; a store is one ``set``.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
import time
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Set, Tuple

from ._keys import FORMAT, KeyMaker, params_key
from ._rules import (
    CACHEABLE_METHODS,
    MAX_TTL,
    Hints,
    cacheable_params,
    check_mode,
    hints_honoured,
    listing_hints,
    stale_after,
)
from ._stores import CacheStore, MemoryStore

__all__ = ["DEFAULT_MAX_ENTRY_BYTES", "CacheInfo", "Cached", "ResponseCache", "ServerCache",
           "Ticket"]

log = logging.getLogger("mcp_sync.cache")

#: The largest entry stored or read (16 MiB of JSON): a bigger result is fetched each time.
DEFAULT_MAX_ENTRY_BYTES = 16 * 1024 * 1024

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


class CacheInfo(NamedTuple):
    """What the cache did for one result: served it, or stored it or not, and why."""

    #: Served from the cache (True), or fetched from the server.
    hit: bool
    #: Seconds since the result's request was sent (for a result fetched now, how long
    #: the request took).
    age: float
    #: Seconds the server said the result stays fresh (0: it may not be cached).
    ttl: float
    #: ``"public"`` or ``"private"``.
    scope: str
    #: Held in the cache now: a hit, or a fetched result that was stored.
    stored: bool

    @property
    def expires_in(self) -> float:
        """Seconds the result stays fresh from now (0 when it is not stored)."""
        return max(0.0, self.ttl - self.age) if self.stored else 0.0


class Cached(NamedTuple):
    """A fresh result found in the cache: its pages as the server sent them (one for a
    method that does not page) and what the cache knows of it."""

    pages: List[Dict[str, Any]]
    info: CacheInfo

    @property
    def result(self) -> Dict[str, Any]:
        """The first (for ``resources/read`` and ``server/discover``, the only) page."""
        return self.pages[0]


class Ticket:
    """What a lookup learned, handed back to :meth:`ServerCache.store` or
    :meth:`ServerCache.discard` after the request: the mode, the hit if there was one,
    the generation tokens to record, which arms held an entry. Used by one thread."""

    __slots__ = ("_arms", "_present", "_tokens", "_view", "hit", "method", "mode", "started")

    def __init__(self, view: ServerCache, method: str, mode: str, started: float,
                 arms: Optional[Dict[str, str]] = None) -> None:
        self._view = view
        #: The method looked up.
        self.method = method
        #: ``"use"``, ``"refresh"`` or ``"bypass"`` (also for a request the cache skips:
        #: hints not honoured in this era, a multi round-trip continuation).
        self.mode = mode
        #: When the lookup ran (the cache's clock): the stored entry's age counts from
        #: here, before the request was sent, so it is never younger than it says.
        self.started = started
        #: A fresh entry, when ``mode`` is ``"use"`` and one was found: serve it.
        self.hit: Optional[Cached] = None
        self._arms = arms or {}
        self._tokens: Optional[List[str]] = None
        self._present: Set[str] = set()


class ResponseCache:
    """Cached results of the 2026-07-28 era's cacheable requests, over a store.

    One ``ResponseCache`` may serve many clients and servers; each client binds it to
    its server (:meth:`bind`). With a shared store (:class:`~mcp_sync.cache.RedisStore`,
    :class:`~mcp_sync.contrib.django.cache.DjangoCacheStore`) every process using the
    same settings shares the entries.

    Args:
        store: where entries live; a new :class:`~mcp_sync.cache.MemoryStore` by default.
        share_public: serve a ``"public"`` result to every authorization context of the
            server (the specification's meaning of public). ``False`` keeps even public
            results to the context that fetched them (a server whose "public" you do not
            trust).
        max_ttl: the longest an entry is kept, in seconds, whatever the server says.
        max_entry_bytes: the largest entry stored or read; a result whose entry would
            be bigger is not stored.
        secret: a key (``str`` or ``bytes``) for every store key (HMAC-SHA-256 instead
            of SHA-256). Processes sharing a store must use the same one; with it, who
            reads the store cannot guess a credential back from its digest.
        clock: wall-clock seconds (``time.time``); the entries' ages are compared across
            processes, so it is not a monotonic clock.

    Thread-safe. Its methods block only as long as the store does.

    Raises:
        TypeError: ``store`` lacks a method of :class:`~mcp_sync.cache.CacheStore`.
        ValueError: ``max_ttl`` or ``max_entry_bytes`` not positive.
    """

    def __init__(
        self,
        store: Optional[CacheStore] = None,
        *,
        share_public: bool = True,
        max_ttl: float = MAX_TTL,
        max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
        secret: Optional[Any] = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if store is None:
            store = MemoryStore()
        elif not isinstance(store, CacheStore):
            raise TypeError(f"{type(store).__name__} is not a cache store: it needs "
                            "get_many, set, add and delete_many (mcp_sync.cache.CacheStore)")
        if not (isinstance(max_ttl, (int, float)) and math.isfinite(max_ttl) and max_ttl > 0):
            raise ValueError(f"max_ttl must be a positive number of seconds, not {max_ttl!r}")
        if max_entry_bytes < 1:
            raise ValueError(f"max_entry_bytes must be positive, not {max_entry_bytes!r}")
        if isinstance(secret, str):
            secret = secret.encode("utf-8")
        if secret is not None and (not isinstance(secret, bytes) or not secret):
            raise ValueError("secret must be a non-empty str or bytes")
        self.store: CacheStore = store
        self.share_public = share_public
        self.max_ttl = float(max_ttl)
        self.max_entry_bytes = max_entry_bytes
        self.clock = clock
        self._keys = KeyMaker(secret)
        # A token outlives every entry that can record it; a lost one only costs misses.
        self._token_ttl = 2 * self.max_ttl
        # The store operations that failed and have not worked since (one warning each).
        self._failing: Set[str] = set()
        self._failing_lock = threading.Lock()

    def __repr__(self) -> str:
        return (f"ResponseCache(store={type(self.store).__name__}, "
                f"share_public={self.share_public})")

    def bind(self, *, server: str, version: str, context: str = "",
             variant: str = "") -> ServerCache:
        """A view of the cache for one server, as one client sees it.

        Args:
            server: the server's identity (:func:`~mcp_sync.cache.url_identity`,
                :func:`~mcp_sync.cache.command_identity`, or any string that names the
                same server in every process).
            version: the protocol version agreed; entries never cross versions, and
                only the stateless era's hints are honoured (in another era the view
                stores and serves nothing).
            context: the authorization context
                (:func:`~mcp_sync.cache.credential_identity`; ``""`` for none): a
                private entry is served to the same context only.
            variant: anything else of the client's that may change the server's answers
                (a digest of its capabilities, say); entries never cross variants.
        """
        return ServerCache(self, server, version, context, variant)

    def invalidate(self, server: str, method: Optional[str] = None,
                   uri: Optional[str] = None) -> None:
        """Make entries of ``server`` stale in every process sharing the store: all of
        them (no ``method``), a method's (``"tools/list"``), or one resource's (``uri``;
        the method is then ``"resources/read"``). Never raises (a store error is logged).
        """
        if uri is not None:
            method = "resources/read"
        key = self._keys.generation(server, method, uri)
        self._attempt("set", self.store.set, key, _new_token(), self._token_ttl)

    # -- the store, every call guarded ---------------------------------------------------

    def _attempt(self, operation: str, call: Callable[..., Any], *args: Any) -> Any:
        """``call(*args)``, or :data:`_FAILED` if it raised (logged: a WARNING the first
        time, DEBUG while it keeps failing)."""
        try:
            result = call(*args)
        except Exception:  # a store is user code: any failure of it is a miss
            with self._failing_lock:
                first = operation not in self._failing
                self._failing.add(operation)
            if first:
                log.warning("response cache: %s.%s failed; carrying on without the cache",
                            type(self.store).__name__, operation, exc_info=True)
            else:
                log.debug("response cache: %s.%s failed again", type(self.store).__name__,
                          operation)
            return _FAILED
        if self._failing:
            with self._failing_lock:
                if operation in self._failing:
                    self._failing.discard(operation)
                    log.warning("response cache: %s.%s works again",
                                type(self.store).__name__, operation)
        return result


# The most requests whose keys one view remembers.
_KNOWN_KEYS = 256

# What ResponseCache._attempt returns for a store call that raised.
_FAILED: Any = object()


def _new_token() -> bytes:
    return os.urandom(16).hex().encode("ascii")


class ServerCache:
    """One client's view of a :class:`ResponseCache`: bound to its server, its
    authorization context and the protocol version agreed (:meth:`ResponseCache.bind`).

    The client's side of it, for each cacheable request:

    1. before sending: ``ticket = view.lookup(method, params, mode=mode)``; if
       ``ticket.hit`` is set, that is the answer (no request);
    2. after the result: ``info = view.store(ticket, result)`` (``store_pages`` for a
       listing's pages), or ``view.discard(ticket)`` when no storable result came (the
       request failed, or needed input rounds);
    3. on a server notification: ``view.notified(method, params)``; on a connection that
       replaces a lost one: ``view.reconnected()``.

    Thread-safe: it holds no state but the keys it computed; a :class:`Ticket` belongs
    to one request.
    No method raises for a store error (see :class:`ResponseCache`).
    """

    def __init__(self, cache: ResponseCache, server: str, version: str, context: str,
                 variant: str) -> None:
        self.cache = cache
        self.server = server
        self.version = version
        self.context = context
        self.variant = variant
        #: Whether this era's hints are honoured: if not, nothing is stored or served.
        self.enabled = hints_honoured(version)
        self._private_arm = ("private", context)
        self._public_arm = ("public", "" if cache.share_public else context)
        # The keys of requests looked up lately (hashing them is most of a lookup's CPU),
        # at most _KNOWN_KEYS, forgotten all at once past it. Plain dict operations, each
        # atomic: two threads may compute the same keys, never see half of them.
        self._known_keys: Dict[Tuple[str, str], Tuple[Dict[str, str], List[str]]] = {}

    def __repr__(self) -> str:
        return f"ServerCache(version={self.version!r}, enabled={self.enabled})"

    # -- before the request --------------------------------------------------------------

    def lookup(self, method: str, params: Optional[Mapping[str, Any]] = None, *,
               mode: str = "use") -> Ticket:
        """Look ``method`` with ``params`` up; a :class:`Ticket` whose ``hit`` is the
        fresh entry to serve (mode ``"use"`` only), else ``None``: send the request and
        hand the ticket to :meth:`store` or :meth:`discard`.

        Raises:
            ValueError: a method that is not cacheable, an unknown ``mode``, or params
                that are not JSON.
        """
        if method not in CACHEABLE_METHODS:
            raise ValueError(f"{method!r} is not a cacheable method")
        check_mode(mode)
        cache = self.cache
        started = cache.clock()
        if mode == "bypass" or not self.enabled or not cacheable_params(params):
            return Ticket(self, method, "bypass", started)
        arms, token_keys = self._keys_of(method, params)
        ticket = Ticket(self, method, mode, started, arms)
        found = cache._attempt("get_many", cache.store.get_many,
                               [arms["private"], arms["public"], *token_keys])
        if found is _FAILED:  # a miss that will not be stored
            return ticket
        ticket._present = {scope for scope, key in arms.items() if key in found}
        tokens = [_token_text(found.get(key)) for key in token_keys]
        if mode == "use" and None not in tokens:
            for scope in ("private", "public"):
                hit = self._entry(found.get(arms[scope]), scope, method, tokens)
                if hit is not None:
                    ticket.hit = hit
                    return ticket
        ticket._tokens = self._capture(token_keys, tokens)
        return ticket

    def _keys_of(self, method: str, params: Optional[Mapping[str, Any]]
                 ) -> Tuple[Dict[str, str], List[str]]:
        """The store keys of a request: its entry's, by scope, and its tokens'."""
        key_params = params_key(params)
        known = self._known_keys.get((method, key_params))
        if known is not None:
            return known
        keys = self.cache._keys
        arms = {
            "private": keys.entry(self.server, self.version, self._private_arm, method,
                                  key_params, self.variant),
            "public": keys.entry(self.server, self.version, self._public_arm, method,
                                 key_params, self.variant),
        }
        token_keys = [keys.generation(self.server), keys.generation(self.server, method)]
        uri = params.get("uri") if params else None
        if method == "resources/read" and isinstance(uri, str):
            token_keys.append(keys.generation(self.server, method, uri))
        if len(self._known_keys) >= _KNOWN_KEYS:
            self._known_keys.clear()
        self._known_keys[(method, key_params)] = (arms, token_keys)
        return arms, token_keys

    def _capture(self, token_keys: Sequence[str],
                 tokens: List[Optional[str]]) -> Optional[List[str]]:
        """The tokens to record, each missing one made first; ``None`` if one cannot be
        had (the store failed): the result is then not stored."""
        cache = self.cache
        for index, key in enumerate(token_keys):
            if tokens[index] is not None:
                continue
            token = _new_token()
            added = cache._attempt("add", cache.store.add, key, token, cache._token_ttl)
            if added is _FAILED:
                return None
            if added:
                tokens[index] = token.decode("ascii")
                continue
            # Another client made it first: record theirs.
            found = cache._attempt("get_many", cache.store.get_many, [key])
            tokens[index] = None if found is _FAILED else _token_text(found.get(key))
            if tokens[index] is None:
                return None
        return [token for token in tokens if token is not None]

    def _entry(self, raw: Optional[bytes], scope: str, method: str,
               tokens: List[Optional[str]]) -> Optional[Cached]:
        """The entry in ``raw`` if it is well formed, of this arm's scope and method,
        recorded under the current tokens and fresh; else ``None`` (a miss)."""
        cache = self.cache
        if raw is None or len(raw) > cache.max_entry_bytes:
            return None
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            return None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return None
        received, ttl, pages = _number(data.get("at")), _number(data.get("ttl")), data.get("pages")
        if received is None or ttl is None:
            return None
        if (not 0 < ttl <= cache.max_ttl
                or data.get("scope") != scope or data.get("method") != method
                or data.get("tokens") != tokens or not isinstance(pages, list) or not pages
                or not all(isinstance(page, dict) for page in pages)):
            return None
        age = cache.clock() - received
        # Fresh while now < received + ttl; an entry from "the future" (another
        # machine's clock) is believed by no more than its own TTL.
        if not -ttl < age < ttl:
            return None
        return Cached(pages, CacheInfo(True, max(0.0, age), ttl, scope, True))

    # -- after the request ---------------------------------------------------------------

    def store(self, ticket: Ticket, result: Mapping[str, Any]) -> CacheInfo:
        """Store the result of ``ticket``'s request (one that does not page:
        ``resources/read``, ``server/discover``) if its hints allow; what the cache did.
        """
        return self.store_pages(ticket, [result])

    def store_pages(self, ticket: Ticket, pages: Sequence[Mapping[str, Any]]) -> CacheInfo:
        """Store a whole listing (every page, first to last, as received) if all its
        pages' hints allow: as fresh as its stalest page, private if any page is.
        Returns what the cache did. A result that cannot be stored drops the entries it
        supersedes.

        Raises:
            ValueError: a ticket of another view.
        """
        self._check(ticket)
        cache = self.cache
        hints = listing_hints(pages, cache.max_ttl)
        if ticket.hit is not None:
            return ticket.hit.info
        if ticket.mode == "bypass":
            return _fetched(hints, stored=False)
        if not hints.storable or ticket._tokens is None:
            self._drop_present(ticket)
            return _fetched(hints, stored=False)
        entry = {"format": FORMAT, "method": ticket.method, "at": ticket.started,
                 "ttl": hints.ttl, "scope": hints.scope, "tokens": ticket._tokens,
                 "pages": list(pages)}
        try:
            value = _encode(entry).encode("utf-8")
        except (TypeError, ValueError):  # not JSON (a NaN the server sent)
            value = None
        if value is None or len(value) > cache.max_entry_bytes:
            log.debug("response cache: %s result not stored (%s)", ticket.method,
                      "too large" if value is not None else "not JSON")
            self._drop_present(ticket)
            return _fetched(hints, stored=False)
        other = "public" if hints.scope == "private" else "private"
        if other in ticket._present:
            # The scope changed: the other arm's entry must not answer for this one.
            cache._attempt("delete_many", cache.store.delete_many, [ticket._arms[other]])
        stored = cache._attempt("set", cache.store.set, ticket._arms[hints.scope], value,
                                hints.ttl)
        # The entry counts from the lookup, before the request was sent.
        age = max(0.0, cache.clock() - ticket.started)
        return CacheInfo(False, age, hints.ttl, hints.scope, stored is not _FAILED)

    def discard(self, ticket: Ticket) -> None:
        """No storable result came for ``ticket`` (the request failed, or its answer
        came through input rounds, which is never cached): drop the entries it found,
        which a refresh supersedes."""
        self._check(ticket)
        if ticket.hit is None and ticket.mode != "bypass":
            self._drop_present(ticket)

    def _drop_present(self, ticket: Ticket) -> None:
        if ticket._present:
            cache = self.cache
            cache._attempt("delete_many", cache.store.delete_many,
                           [ticket._arms[scope] for scope in sorted(ticket._present)])

    def _check(self, ticket: Ticket) -> None:
        if ticket._view is not self:
            raise ValueError("this ticket was issued by another cache view")

    # -- invalidation --------------------------------------------------------------------

    def invalidate(self, method: Optional[str] = None, uri: Optional[str] = None) -> None:
        """Make this server's entries stale for every process and context sharing the
        store: all of them (no argument), a method's, or one resource's (``uri``).
        Never raises (a store error is logged)."""
        self.cache.invalidate(self.server, method, uri)

    def notified(
        self, notification: str, params: Optional[Mapping[str, Any]] = None
    ) -> Tuple[Tuple[str, Optional[str]], ...]:
        """The server sent ``notification``: make stale what it names
        (``*/list_changed``: the list; ``resources/updated``: the resource), in every
        process sharing the store. Returns what was made stale, as ``(method, uri)``
        pairs (``()`` for a notification that names nothing cached)."""
        stale = stale_after(notification, params)
        for method, uri in stale:
            self.invalidate(method, uri)
        return stale

    def reconnected(self) -> None:
        """A connection replaced a lost one (a reconnect, a renewed session, a restarted
        server): notifications may have been missed, so every entry of the server is
        stale, in every process sharing the store."""
        self.invalidate()


def _fetched(hints: Hints, *, stored: bool) -> CacheInfo:
    return CacheInfo(False, 0.0, hints.ttl, hints.scope, stored)


def _number(value: Any) -> Optional[float]:
    """``value`` as a float if it is a finite JSON number, else ``None``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _token_text(raw: Optional[bytes]) -> Optional[str]:
    if raw is None:
        return None
    try:
        return bytes(raw).decode("ascii")
    except (UnicodeDecodeError, TypeError):
        return None
