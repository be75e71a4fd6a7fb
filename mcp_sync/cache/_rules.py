"""The caching rules of the 2026-07-28 era (SEP-2549) as pure functions: what a result's
hints say, how a listing's pages combine, what a notification makes stale.

No I/O, no clock, no store: :mod:`mcp_sync.cache._cache` applies these to a store.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, NamedTuple, Optional, Tuple

from .._protocol import STATELESS_PROTOCOL_VERSIONS

__all__ = [
    "CACHEABLE_METHODS",
    "CACHE_MODES",
    "MAX_TTL",
    "NOT_STORABLE",
    "Hints",
    "cacheable_params",
    "check_mode",
    "hints_honoured",
    "hints_of",
    "listing_hints",
    "stale_after",
]

#: The methods whose results carry ``ttlMs``/``cacheScope`` (2026-07-28).
CACHEABLE_METHODS = frozenset({
    "server/discover",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
})

#: The longest a result is kept, in seconds, whatever ``ttlMs`` says (a day): a server
#: that says "ten years" gets a day, and a store is never asked to keep an entry longer.
MAX_TTL = 24 * 3600.0

#: The per-call modes: ``"use"`` serves a fresh entry and stores what is fetched;
#: ``"refresh"`` never serves, fetches and stores (replacing what was there);
#: ``"bypass"`` neither reads nor writes the cache.
CACHE_MODES = ("use", "refresh", "bypass")

# The params that mean "the continuation of a multi round-trip request": its result is
# never cached (the specification's MUST), and never served from the cache.
_CONTINUATION_PARAMS = ("inputResponses", "requestState")


def check_mode(mode: Any) -> str:
    """``mode`` if it is one of :data:`CACHE_MODES`.

    Raises:
        ValueError: any other value.
    """
    if mode not in CACHE_MODES:
        raise ValueError(f"cache mode must be one of {', '.join(CACHE_MODES)}, not {mode!r}")
    return str(mode)


def hints_honoured(version: Optional[str]) -> bool:
    """Whether results under protocol ``version`` carry hints the client honours: the
    stateless era's versions only (a session-era server's ``ttlMs``, if it sent one, is
    no promise of that revision)."""
    return version in STATELESS_PROTOCOL_VERSIONS


def cacheable_params(params: Optional[Mapping[str, Any]]) -> bool:
    """Whether a request with ``params`` may be served from or stored in the cache: not
    the continuation of a multi round-trip request (``inputResponses`` or
    ``requestState`` present)."""
    return not params or not any(name in params for name in _CONTINUATION_PARAMS)


class Hints(NamedTuple):
    """What a result (or a whole listing) says about its own freshness."""

    #: Seconds the result stays fresh from the moment it was received; 0: not stored.
    ttl: float
    #: ``"public"`` (any authorization context may be served it) or ``"private"``.
    scope: str

    @property
    def storable(self) -> bool:
        """Whether the result may be stored at all (a positive TTL)."""
        return self.ttl > 0


#: The hints of a result that is not stored.
NOT_STORABLE = Hints(0.0, "private")


def hints_of(result: Any, max_ttl: float = MAX_TTL) -> Hints:
    """The hints of one result (a JSON object as received).

    * ``ttlMs`` absent, 0, negative, not a finite number (or a boolean): not stored;
      positive: fresh for that many milliseconds, at most ``max_ttl`` seconds.
    * ``cacheScope`` ``"public"``: public; anything else (absent, ``"private"``, a value
      this client does not know): private, the scope that shares nothing.
    * A ``resultType`` other than ``"complete"`` (``input_required``, a task): not stored.
    """
    if not isinstance(result, Mapping):
        return NOT_STORABLE
    result_type = result.get("resultType")
    if result_type is not None and result_type != "complete":
        return NOT_STORABLE
    ttl_ms = result.get("ttlMs")
    if isinstance(ttl_ms, bool) or not isinstance(ttl_ms, (int, float)):
        return NOT_STORABLE
    if not math.isfinite(ttl_ms) or ttl_ms <= 0:
        return NOT_STORABLE
    scope = "public" if result.get("cacheScope") == "public" else "private"
    return Hints(min(ttl_ms / 1000.0, max_ttl), scope)


def listing_hints(pages: Iterable[Any], max_ttl: float = MAX_TTL) -> Hints:
    """The hints of a whole listing, from those of its pages: as fresh as its stalest
    page (the smallest TTL), private if any page is, not stored if any page is not (or
    if there is no page)."""
    ttl = max_ttl
    scope = "public"
    seen = False
    for page in pages:
        hints = hints_of(page, max_ttl)
        if not hints.storable:
            return NOT_STORABLE
        seen = True
        ttl = min(ttl, hints.ttl)
        if hints.scope != "public":
            scope = "private"
    return Hints(ttl, scope) if seen else NOT_STORABLE


# What each notification makes stale: (method, None) is every entry of the method;
# resources/updated names one resource.
_STALE_LISTS = {
    "notifications/tools/list_changed": ("tools/list",),
    "notifications/prompts/list_changed": ("prompts/list",),
    # The templates describe the same space of resources as the list.
    "notifications/resources/list_changed": ("resources/list", "resources/templates/list"),
}


def stale_after(
    notification: str, params: Optional[Mapping[str, Any]] = None
) -> Tuple[Tuple[str, Optional[str]], ...]:
    """What the server's ``notification`` makes stale, as ``(method, uri)`` pairs (``uri``
    ``None``: every entry of the method); ``()`` for a notification that makes nothing
    stale.

    ``notifications/resources/updated`` names its resource (``params["uri"]``); one
    without a usable ``uri`` makes every ``resources/read`` of the server stale.
    """
    listed = _STALE_LISTS.get(notification)
    if listed is not None:
        return tuple((method, None) for method in listed)
    if notification == "notifications/resources/updated":
        uri = params.get("uri") if isinstance(params, Mapping) else None
        return (("resources/read", uri if isinstance(uri, str) else None),)
    return ()
