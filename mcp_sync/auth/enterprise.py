"""Enterprise-managed authorization (SEP-990, "cross-app access").

The user has signed in to the enterprise's identity provider (IdP) already; the client
holds their ID token. Instead of a browser flow, the client

1. exchanges that ID token at the IdP for an Identity Assertion JWT Authorization Grant
   (ID-JAG) meant for the MCP server's authorization server and resource (RFC 8693 token
   exchange), then
2. presents the ID-JAG to the authorization server in the JWT-bearer grant (RFC 7523),
   authenticated as its own client there.

:class:`IdJagExchange` is step 1, as the assertion source of
:meth:`OAuth.jwt_bearer <mcp_sync.auth.OAuth.jwt_bearer>`, which does step 2::

    exchange = IdJagExchange("https://idp.example.com/oauth2/token", id_token,
                             client_id="idp-client-id")
    oauth = OAuth.jwt_bearer(exchange, client_id="mcp-client", client_secret="...")
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Dict, Optional, Union
from urllib.parse import urlsplit

import requests

from ..exceptions import AuthError
from . import metadata as md
from .endpoints import Endpoints
from .fetch import Fetcher
from .policy import FetchPolicy

__all__ = ["IdJagExchange"]

log = logging.getLogger(__name__)

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"


class IdJagExchange:
    """Gets an ID-JAG from the IdP for each authorization (RFC 8693 token exchange).

    Args:
        token_endpoint: the IdP's token endpoint.
        id_token: the user's ID token from the IdP, or a callable returning a current one.
        client_id, client_secret: this client's registration at the IdP (the secret is
            sent with ``client_secret_post`` when given).
        timeout: the timeout of the exchange request.
        session: a ``requests.Session`` whose configuration (``verify``, ``cert``,
            proxies, headers) the exchange takes; by default requests' own.
        allow_insecure_http: accept a plain-HTTP IdP off loopback (development only).

    The token endpoint is the user's choice, so its host may be on a private network;
    it must be ``https`` (or ``http`` on loopback), and is never followed elsewhere.

    Thread-safe: each exchange is independent.
    """

    def __init__(
        self,
        token_endpoint: str,
        id_token: Union[str, Callable[[], str]],
        *,
        client_id: Optional[str] = None,
        client_secret: Optional[str] = None,
        timeout: float = 10.0,
        session: Optional[requests.Session] = None,
        allow_insecure_http: bool = False,
    ) -> None:
        self.token_endpoint = token_endpoint
        self._id_token = id_token
        self.client_id = client_id
        self._client_secret = client_secret
        self.timeout = timeout
        self._session = session
        self.allow_insecure_http = allow_insecure_http

    def assertion(self, *, issuer: str, resource: str, scope: Optional[str]) -> str:
        """An ID-JAG for the authorization server ``issuer`` and the MCP ``resource``.

        Raises:
            AuthError: the IdP refused the exchange (:class:`~mcp_sync.auth.OAuthError`)
                or returned no ID-JAG.
        """
        id_token = self._id_token() if callable(self._id_token) else self._id_token
        if not isinstance(id_token, str) or not id_token:
            raise AuthError("no ID token to exchange for an ID-JAG")
        data: Dict[str, str] = {
            "grant_type": TOKEN_EXCHANGE,
            "requested_token_type": ID_JAG,
            "subject_token": id_token,
            "subject_token_type": ID_TOKEN,
            "audience": issuer,
            "resource": resource,
        }
        if scope:
            data["scope"] = scope
        client: Dict[str, Any] = {"client_id": self.client_id or "",
                                  "client_secret": self._client_secret}
        method = "client_secret_post" if self._client_secret else "none"
        # The IdP is the user's choice, not a server's: its own host may be on the
        # enterprise's private network. Its token endpoint is never redirected.
        host = urlsplit(self.token_endpoint).hostname or ""
        policy = FetchPolicy(self.token_endpoint, allowed_private_hosts=[host],
                             allow_insecure_http=self.allow_insecure_http)
        fetcher = Fetcher(policy, timeout=self.timeout, session=self._session)
        try:
            endpoints = Endpoints(lambda: fetcher)
            log.info("mcp-sync: exchanging the ID token for an ID-JAG at %s",
                     self.token_endpoint)
            answer = endpoints.token(self.token_endpoint, data, client=client, method=method,
                                     issuer=issuer, token_types=None)
        finally:
            fetcher.close()
        issued = answer.get("issued_token_type")
        if issued not in (None, ID_JAG):
            raise AuthError(f"the IdP at {self.token_endpoint} issued a "
                            f"{md.scrub(str(issued), [])!r}, not an ID-JAG")
        return str(answer["access_token"])

    def __repr__(self) -> str:
        return f"IdJagExchange({self.token_endpoint!r}, client_id={self.client_id!r})"
