"""The Content-Security-Policy of an app, built from its resource's ``_meta.ui.csp``.

Default-deny: an app reaches nothing but the origins its server declared, each in the
one directive it was declared for; a declared entry that is not a plain origin is
dropped (logged), never widened. Standard library only.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Tuple

from .._util.text import excerpt, pattern

__all__ = ["MAX_DOMAINS", "AppCsp"]

log = logging.getLogger(__name__)

#: The most origins kept in one list of ``_meta.ui.csp`` (the rest are dropped).
MAX_DOMAINS = 32
# The longest origin kept.
_MAX_ORIGIN = 255
# A plain origin: a scheme a frame may fetch with, a host (its first label may be the
# "*." wildcard the specification allows), an optional port. No path, no quotes, no
# keyword, no bare scheme ("https:" would allow every host), no "*", no data: or blob:.
_ORIGIN = (
    r"(?:https|wss|http|ws)://"
    r"(?:(?:\*\.)?(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*"
    r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?|\[[0-9a-f:.]{2,45}\])"
    r"(?::[0-9]{1,5})?\Z"
)
INLINE = "'unsafe-inline'"
# The keys of _meta.ui.csp, in the order they are read.
_KEYS = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")


def _origins(key: str, declared: Any, dropped: List[str]) -> Tuple[str, ...]:
    if declared is None:
        return ()
    if not isinstance(declared, list):
        dropped.append(f"{key}: not a list")
        return ()
    kept: List[str] = []
    for entry in declared:
        origin = entry.lower().rstrip("/") if isinstance(entry, str) else None
        if (origin is None or len(origin) > _MAX_ORIGIN
                or not pattern(_ORIGIN).match(origin)):
            dropped.append(f"{key}: {excerpt(repr(entry), 80)}")
        elif len(kept) >= MAX_DOMAINS:
            dropped.append(f"{key}: past {MAX_DOMAINS} origins")
            break
        elif origin not in kept:
            kept.append(origin)
    return tuple(kept)


@dataclass(frozen=True)
class AppCsp:
    """The origins an app may reach, by purpose, as its resource declared them.

    ``connect``: fetch, XHR, WebSocket (``connect-src``); ``resource``: scripts,
    styles, images, fonts, media (``script-src``, ``style-src``, ``img-src``,
    ``font-src``, ``media-src``); ``frame``: nested frames (``frame-src``);
    ``base_uri``: ``<base href>`` (``base-uri``). ``dropped`` says what the declaration
    held that was not kept. Immutable; can be shared between threads.
    """

    connect: Tuple[str, ...] = ()
    resource: Tuple[str, ...] = ()
    frame: Tuple[str, ...] = ()
    base_uri: Tuple[str, ...] = ()
    dropped: Tuple[str, ...] = ()

    @classmethod
    def from_meta(cls, csp: Any, *, uri: str = "") -> AppCsp:
        """The policy ``_meta.ui.csp`` declares (None, or anything not a JSON object:
        nothing but inline code and ``data:`` images). Entries that are not plain
        origins (``https://host``, ``https://*.host``, ``wss://host:port``...) are
        dropped and logged at WARNING with the resource's ``uri``."""
        if csp is None:
            return cls()
        if not isinstance(csp, Mapping):
            log.warning("app %s: _meta.ui.csp is not an object; it declares nothing",
                        excerpt(uri, 200))
            return cls(dropped=("csp: not an object",))
        dropped: List[str] = []
        connect, resource, frame, base_uri = (
            _origins(key, csp.get(key), dropped) for key in _KEYS)
        if dropped:
            log.warning("app %s: dropped from its _meta.ui.csp (not plain origins): %s",
                        excerpt(uri, 200), "; ".join(dropped))
        return cls(connect, resource, frame, base_uri, tuple(dropped))

    def policy(self) -> str:
        """The ``Content-Security-Policy`` of the app's document: ``default-src 'none'``,
        inline scripts and styles, ``data:`` images and media, and the declared origins
        for their directives; no ``eval``, no plugin, no form submission, and no
        ``'self'`` (the host's own origin is not the app's to reach)."""
        resource = " ".join(self.resource)

        def sources(*parts: str) -> str:
            return " ".join(part for part in parts if part) or "'none'"

        return "; ".join((
            "default-src 'none'",
            f"script-src {sources(resource, INLINE)}",
            f"style-src {sources(resource, INLINE)}",
            f"img-src {sources(resource, 'data:')}",
            f"font-src {sources(resource)}",
            f"media-src {sources(resource, 'data:')}",
            f"connect-src {sources(*self.connect)}",
            f"frame-src {sources(*self.frame)}",
            f"base-uri {sources(*self.base_uri)}",
            "form-action 'none'",
            "object-src 'none'",
        ))

    def approved(self) -> Dict[str, List[str]]:
        """The kept origins as ``_meta.ui.csp`` spells them (what the host tells the app
        in ``hostCapabilities.sandbox.csp``); empty lists left out."""
        approved = {key: list(origins) for key, origins in zip(
            _KEYS, (self.connect, self.resource, self.frame, self.base_uri)) if origins}
        return approved
