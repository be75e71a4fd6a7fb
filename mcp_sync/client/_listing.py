"""The ``list_*`` methods' plumbing: pagination within bounds, and the list cache.

A listing follows the server's cursors page by page, within ``max_pages`` pages and the
``max_list_items``/``max_list_bytes`` bounds of all its pages together
(:class:`ListingBudget`). A list is cached while a ``*/list_changed`` notification
would tell the client it is stale, and dropped when one arrives; a generation counter
per method keeps a listing fetched across a change out of the cache. The tools listed
last are kept by name too (``known_tools``): a tool call finds its definition there.

The client's connection holds one :class:`Listings`, made with the connection itself,
of which it uses what :class:`ListingConnection` names; this module imports no client.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Protocol, Tuple

from .._parsing import parse
from .._protocol import DEFAULT, Timeout
from ..exceptions import ListingTooLarge, ProtocolError, excerpt
from ._settings import Limits, ToolChecks

if TYPE_CHECKING:
    from .. import types
    from ..cache import CacheInfo, ServerCache, Ticket

__all__ = ["ListingBudget", "ListingConnection", "Listings"]

# The client's logger: these messages were always the client's.
log = logging.getLogger("mcp_sync.client")

# Measures listed items for max_list_bytes: compact, non-ASCII kept as is (one byte per
# character, close to the UTF-8 on the wire), C-accelerated (no indent).
_measure = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode


class Subscribed(Protocol):
    """The client's subscriptions, as a listing asks them (stateless era: they carry the
    list changes that make a list cacheable)."""

    def covers(self, key: str) -> bool:
        """Whether an open subscription carries notifications of kind ``key``."""


class Looked(Protocol):
    """A request looked up in the response cache (:class:`._caching.Lookup`)."""

    @property
    def view(self) -> ServerCache: ...

    @property
    def ticket(self) -> Ticket: ...


class ResponseCaching(Protocol):
    """The client's response cache, as a listing asks it (:class:`._caching.ClientCache`)."""

    def lookup(self, method: str, params: Optional[Dict[str, Any]],
               mode: str) -> Optional[Looked]: ...

    def record(self, method: str, params: Optional[Dict[str, Any]],
               info: CacheInfo) -> None: ...


class ListingConnection(Protocol):
    """What listings use of the client's connection (read at each use)."""

    @property
    def caching(self) -> ResponseCaching: ...

    @property
    def name(self) -> str: ...

    @property
    def limits(self) -> Limits: ...

    @property
    def tool_checks(self) -> ToolChecks: ...

    @property
    def subscriptions(self) -> Subscribed: ...

    @property
    def connected(self) -> bool:
        """The cache is served only while connected."""

    @property
    def carries_headers(self) -> bool:
        """Whether the transport carries ``Mcp-Param-*`` headers (a tool whose
        ``x-mcp-header`` annotations are invalid is then dropped from the listing)."""

    def stateless(self) -> bool: ...

    def request(self, method: str, params: Optional[Dict[str, Any]] = None, *,
                timeout: Timeout = DEFAULT) -> Any:
        """One request, blocking (with the client's retries)."""

    def has_capability(self, *path: str) -> bool:
        """Whether the server declared the capability at ``path``."""

    def offers(self, *path: str) -> bool:
        """:meth:`has_capability`, raising ``ClientNotConnected`` when closed."""


class ListingBudget:
    """What one ``list_*`` call may still collect, all its pages together.

    The server decides how many pages there are and how big each one is, so the client
    puts a number on the total: ``max_list_items`` items and ``max_list_bytes`` bytes
    (``None`` turns a bound off). Each page is counted before its items are parsed, and
    nothing is kept when a bound is passed, so a listing holds at most about one bound's
    worth of items plus one page.

    Bytes are the items' size as compact JSON: the session hands the client parsed
    results, not frames, so the frame sizes the transport read are not at hand here (and
    an in-process transport has none). Each item is encoded on its own (C speed, about
    the cost of decoding it; listings only, never ``tools/call``, and cached while the
    server promises ``list_changed``), which keeps the transient string to one item's
    size and stops mid-page at the bound.
    """

    def __init__(self, limits: Limits, server: str, method: str) -> None:
        self.limits = limits
        self.server = server
        self.method = method
        self.items = 0
        self.bytes = 0

    def take(self, items: List[Any], pages: int) -> None:
        """Count one page's raw ``items``; raise :class:`ListingTooLarge` past a bound."""
        max_items, max_bytes = self.limits.max_list_items, self.limits.max_list_bytes
        self.items += len(items)
        if max_items is not None and self.items > max_items:
            raise self.error("max_list_items", max_items,
                             f"listed more than {max_items} items in {pages} pages")
        if max_bytes is None:
            return
        for item in items:
            self.bytes += len(_measure(item))
            if self.bytes > max_bytes:
                raise self.error("max_list_bytes", max_bytes,
                                 f"listed more than {max_bytes} bytes of items in {pages} pages")

    def error(self, bound: str, limit: int, what: str) -> ListingTooLarge:
        return ListingTooLarge(
            f"{self.method} from {self.server} passed {bound}={limit}: the server "
            f"{what}; raise it with Client({bound}=...) or connect(..., {bound}=...) "
            "(None: no limit)",
            method=self.method, bound=bound, limit=limit,
        )


class Listings:
    """One client's listings: pagination, the list cache and the tools listed last."""

    def __init__(self, connection: ListingConnection) -> None:
        self._connection = connection
        # Cached lists, dropped on the matching */list_changed notification.
        self._cache: Dict[str, List[Any]] = {}
        # Bumped by each list_changed (under _lock): a listing fetched across a change
        # is not cached, so a stale list never outlives its notification.
        self._generation: Dict[str, int] = {}
        self._lock = threading.Lock()
        #: Tools seen in the last list_tools(), by name: their input schemas give the
        #: x-mcp-header headers and their output schemas validate results. None until
        #: this connection lists its tools, and again after tools/list_changed (under
        #: the lock), so that a call lists them first.
        self.known_tools: Optional[Dict[str, Any]] = None
        #: Tools the last list_tools() dropped for invalid x-mcp-header annotations,
        #: with the reason: calling one is refused rather than sent without its headers.
        self.refused_tools: Dict[str, str] = {}

    def paginate(
        self, method: str, key: str, model: Any, timeout: Timeout, cache: bool,
        mode: str = "use",
    ) -> List[Any]:
        """Every item of ``method``'s listing (the list under ``key`` of each page, as
        ``model``): from the list cache when ``cache`` and one is held, else from the
        response cache when fresh (``mode``: see :mod:`mcp_sync.cache`), else from the
        server (and stored in the response cache, all pages as one entry, if their
        hints allow). Any ``mode`` but ``"use"`` skips the list cache too."""
        connection = self._connection
        # A list is served from the cache only while connected; otherwise the request
        # below raises what any request would: ClientNotConnected (closed), ConnectionClosed
        # (the link died), ForkedClientError (the connection is the parent process's).
        if cache and mode == "use" and connection.connected:
            with self._lock:
                cached = self._cache.get(method)
            if cached is not None:
                return list(cached)
        generation = self.generation(method)
        caching = connection.caching
        found = caching.lookup(method, None, mode)
        served: Optional[List[Dict[str, Any]]] = None
        if found is not None and found.ticket.hit is not None:
            served = found.ticket.hit.pages
            if not _whole(served, key):
                # One page stored by a request() of it: list it all, and store that.
                served, found = None, caching.lookup(method, None, "refresh")
        try:
            items, pages = self._collect(method, key, model, timeout, served)
        except BaseException:
            if found is not None:
                found.view.discard(found.ticket)
            raise
        if found is not None:
            caching.record(method, None, found.view.store_pages(found.ticket, pages))
        if cache:
            with self._lock:
                if self._generation.get(method, 0) == generation:
                    self._cache[method] = items
        return list(items)

    def _collect(self, method: str, key: str, model: Any, timeout: Timeout,
                 served: Optional[List[Dict[str, Any]]]
                 ) -> Tuple[List[Any], List[Dict[str, Any]]]:
        """The items of every page, within the bounds, and the pages: ``served`` (from
        the response cache) or each fetched in turn, following the cursors."""
        connection = self._connection
        items: List[Any] = []
        pages_seen: List[Dict[str, Any]] = []
        cursor: Optional[str] = None
        seen_cursors = set()
        name = connection.name
        budget = ListingBudget(connection.limits, name, method)
        max_pages = connection.limits.max_pages
        for pages in range(1, max_pages + 1):
            if served is not None:
                page = served[pages - 1]
            else:
                params = {"cursor": cursor} if cursor is not None else None
                page = connection.request(method, params, timeout=timeout)
            if not isinstance(page, dict) or not isinstance(page.get(key), list):
                raise ProtocolError(f"{method} result from {name} has no list {key!r}")
            pages_seen.append(page)
            budget.take(page[key], pages)
            items.extend(parse(model, item, f"{method} item") for item in page[key])
            cursor = page.get("nextCursor")
            if not cursor or (served is not None and pages == len(served)):
                break
            if cursor in seen_cursors:
                raise ProtocolError(f"{name} repeated the cursor "
                                    f"{excerpt(repr(cursor), 100)} in {method}")
            seen_cursors.add(cursor)
        else:
            raise budget.error("max_pages", max_pages,
                               f"did not end its listing after {max_pages} pages")
        return items, pages_seen

    def generation(self, method: str) -> int:
        """How many ``list_changed`` notifications of ``method``'s list arrived."""
        with self._lock:
            return self._generation.get(method, 0)

    def listing(self, kind: str, method: str, key: str, model: Any,
                timeout: Timeout, mode: str = "use") -> List[Any]:
        """The ``list_*`` methods but ``list_tools``: none (``[]``) when the server does
        not offer ``kind``, else every item, cached when :meth:`cacheable`."""
        if not self._connection.offers(kind):
            return []
        return self.paginate(method, key, model, timeout, self.cacheable(kind), mode)

    def tools(self, timeout: Timeout, mode: str = "use") -> types.ToolList:
        """``Client.list_tools``: every tool, the ones whose ``x-mcp-header``
        annotations are invalid dropped (stateless era, on a transport with headers) and
        the changed ones the client's pins block (``ToolChecks.review``); the listing
        kept as :attr:`known_tools` unless tools changed meanwhile."""
        from .. import types

        connection = self._connection
        if not connection.offers("tools"):
            return types.ToolList()
        generation = self.generation("tools/list")
        tools = self.paginate("tools/list", "tools", types.Tool, timeout,
                              self.cacheable("tools"), mode)
        refused: Dict[str, str] = {}
        if connection.stateless() and connection.carries_headers:
            from .._protocol.headers import invalid_header_annotation

            for tool in tools:
                reason = invalid_header_annotation(tool.input_schema)
                if reason is not None:
                    log.warning("dropping tool %s of %s: %s", excerpt(repr(tool.name), 120),
                                connection.name, excerpt(reason, 200))
                    refused[tool.name] = reason
            tools = [tool for tool in tools if tool.name not in refused]
        # A changed tool the policy blocks is not listed.
        tools = connection.tool_checks.review(tools, connection.name)
        with self._lock:
            # A listing fetched across a tools/list_changed is not kept: the next call
            # lists again.
            if self._generation.get("tools/list", 0) == generation:
                self.known_tools = {tool.name: tool for tool in tools}
        self.refused_tools = refused
        return types.ToolList(tools)

    def cacheable(self, kind: str) -> bool:
        """May ``kind``'s list be cached? Only while a list_changed notification would
        tell us it is stale: the server promises them (session era) or an active
        subscription carries them (stateless era)."""
        connection = self._connection
        if connection.stateless():
            return connection.subscriptions.covers(f"{kind}ListChanged")
        return connection.has_capability(kind, "listChanged")

    def forget(self) -> None:
        """Drop what the last connection listed: a new one lists again."""
        with self._lock:
            self._cache.clear()
            self.known_tools = None

    def reviewed(self) -> None:
        """A blocked change was accepted: the next call lists the tools first, so that it
        finds the tool's definition."""
        with self._lock:
            self.known_tools = None

    def lists_changed(self, listed: Tuple[str, ...]) -> None:
        """Drop the cached ``listed`` lists (a ``*/list_changed`` arrived); a listing
        fetched across the change is not cached either (the generation counter)."""
        with self._lock:
            for key in listed:
                self._cache.pop(key, None)
                self._generation[key] = self._generation.get(key, 0) + 1
            if "tools/list" in listed:
                self.known_tools = None


def _whole(pages: List[Dict[str, Any]], key: str) -> bool:
    """Whether cached ``pages`` are a whole listing: its last page ends it."""
    last = pages[-1]
    return isinstance(last.get(key), list) and not last.get("nextCursor")
