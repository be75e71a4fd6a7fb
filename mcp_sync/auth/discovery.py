"""Discovery: from an MCP server (and its ``401`` challenge) to an authorization server.

:class:`Discovery` fetches the protected resource metadata (RFC 9728) and the
authorization server metadata (RFC 8414 / OpenID Connect) where
:mod:`~mcp_sync.auth.metadata` says, validates them with it, and caches what it found per
issuer. A 2025-03-26 server without resource metadata gets its origin's metadata, else the
default endpoints.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Dict, Optional, Tuple

import requests

from ..exceptions import AuthError, excerpt
from ..transports.http._requests import failure_reason
from . import metadata as md
from .fetch import Fetcher
from .policy import shown

__all__ = ["Context", "Discovery"]

log = logging.getLogger(__name__)


class Context:
    """What discovery found for one authorization: the authorization server (``issuer``,
    as its validated metadata names it), its ``metadata``, the ``resource`` to ask tokens
    for, and the protected resource metadata (``prm``; None for a 2025-03-26 server).
    ``from_metadata`` is False when only the default endpoints are known."""

    __slots__ = ("from_metadata", "issuer", "metadata", "prm", "resource")

    def __init__(self, *, issuer: str, metadata: Dict[str, Any], resource: str,
                 prm: Optional[Dict[str, Any]], from_metadata: bool) -> None:
        self.issuer = issuer
        self.metadata = metadata
        self.resource = resource
        self.prm = prm
        self.from_metadata = from_metadata

    @property
    def scopes_supported(self) -> Any:
        return self.prm.get("scopes_supported") if self.prm is not None else None

    def __repr__(self) -> str:
        return f"Context(issuer={self.issuer!r}, resource={self.resource!r})"


class Discovery:
    """Fetches and validates metadata documents.

    Args:
        fetcher: returns the :class:`~mcp_sync.auth.fetch.Fetcher` that sends every
            request (created on demand), under its policy.

    Thread-safe: ``_lock`` guards the metadata cache.
    """

    def __init__(self, fetcher: Callable[[], Fetcher]) -> None:
        self._fetcher = fetcher
        self._lock = threading.Lock()
        self._metadata: Dict[str, Dict[str, Any]] = {}

    def get_json(self, url: str, what: str) -> Tuple[int, Any]:
        """GET a metadata document: ``(status, document)``. ``document`` is None unless the
        status is 200; a 200 that is not JSON gives an excerpt of its body (which the
        validation then refuses). Redirects are followed, each hop checked.

        Raises:
            AuthError: the URL, a redirect or the address reached breaks the fetch
                policy, or the URL cannot be reached.
        """
        try:
            response = self._fetcher().get(url, what, headers={"Accept": "application/json"})
        except requests.RequestException as exc:
            raise AuthError(f"cannot fetch the {what} at {shown(url)}: "
                            f"{failure_reason(exc)}") from exc
        with response:
            if response.status_code != 200:
                log.debug("%s at %s: HTTP %s", what, shown(url), response.status_code)
                return response.status_code, None
            try:
                return 200, response.json()
            except ValueError:
                return 200, excerpt(response.text, 100)

    def discover(self, server_url: str, challenge: Optional[md.Challenge], *,
                 need_authorization_endpoint: bool) -> Context:
        """Find the authorization server of ``server_url`` and the resource to ask for.

        Raises:
            AuthError: the metadata is missing, invalid, or for another resource.
        """
        hint = challenge.resource_metadata if challenge is not None else None
        prm: Optional[Dict[str, Any]] = None
        unreachable: Optional[AuthError] = None
        for url in md.protected_resource_metadata_urls(server_url, hint):
            try:
                status, document = self.get_json(url, "protected resource metadata")
            except AuthError as exc:
                # Refused or unreachable: nothing was sent there; the next place may do.
                log.info("mcp-sync: %s", exc)
                unreachable = unreachable or exc
                continue
            if status == 200:
                prm = md.check_protected_resource_metadata(
                    document, server_url, url, policy=self._fetcher().policy)
                break
        if prm is not None:
            issuer = str(prm["authorization_servers"][0])
            found = self.authorization_server_metadata(issuer, need_authorization_endpoint)
            if found is None:
                raise AuthError(f"no authorization server metadata found for {issuer}")
            # The validated metadata's issuer is the one recorded (for iss, and as the key
            # of this authorization server's client registration).
            return Context(issuer=str(found["issuer"]), metadata=found,
                           resource=str(prm["resource"]), prm=prm, from_metadata=True)
        if unreachable is not None:
            raise unreachable
        # A 2025-03-26 server: no protected resource metadata; the authorization server
        # lives at the root of the MCP server's origin, with metadata or default paths.
        defaults = md.default_endpoints(server_url)
        issuer = defaults["issuer"]
        found = self.authorization_server_metadata(issuer, need_authorization_endpoint,
                                                   legacy=True)
        if found is None:
            log.info("mcp-sync: %s publishes no authorization metadata; using the default "
                     "endpoints /authorize, /token and /register", issuer)
            return Context(issuer=issuer, metadata=defaults, resource=server_url, prm=None,
                           from_metadata=False)
        return Context(issuer=str(found["issuer"]), metadata=found, resource=server_url,
                       prm=None, from_metadata=True)

    def authorization_server_metadata(self, issuer: str, need_authorization_endpoint: bool,
                                      *, legacy: bool = False) -> Optional[Dict[str, Any]]:
        """The validated metadata of ``issuer`` (cached), or None when none is published.

        ``legacy``: a 2025-03-26 server's origin (see
        :func:`~mcp_sync.auth.metadata.check_authorization_server_metadata`).

        Raises:
            AuthError: a document was found but is not valid for this issuer.
        """
        with self._lock:
            cached = self._metadata.get(issuer)
        if cached is not None:
            return cached
        rejected: Optional[AuthError] = None
        for url in md.authorization_server_metadata_urls(issuer):
            status, document = self.get_json(url, "authorization server metadata")
            if status != 200:
                continue
            try:
                found = md.check_authorization_server_metadata(
                    document, issuer, url,
                    need_authorization_endpoint=need_authorization_endpoint,
                    policy=self._fetcher().policy, legacy=legacy)
            except AuthError as exc:
                log.warning("mcp-sync: %s", exc)
                rejected = rejected or exc
                continue
            with self._lock:
                self._metadata[issuer] = found
            return found
        if rejected is not None:
            raise rejected
        return None
