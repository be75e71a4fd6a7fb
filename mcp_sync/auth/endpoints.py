"""The authorization server's endpoints that take a POST: registration and token.

* :meth:`Endpoints.register`: dynamic client registration (RFC 7591), with the
  ``application_type`` 2026-07-28 asks for.
* :meth:`Endpoints.token`: a token request with the client's authentication
  (``client_secret_basic``, ``client_secret_post``, ``none``, ``private_key_jwt``).

Both go through a :class:`~mcp_sync.auth.fetch.Fetcher`, under its policy; neither
follows a redirect (a 307 would re-send the secret elsewhere). An error answer becomes
:class:`OAuthError`; every message is scrubbed of the secrets the request held.
"""

from __future__ import annotations

import base64
import logging
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple
from urllib.parse import quote_plus

import requests

from ..exceptions import AuthError, excerpt
from . import metadata as md
from ._jwt import ASSERTION_TYPE, client_assertion
from .fetch import Fetcher
from .policy import shown

__all__ = ["AUTH_METHODS", "Endpoints", "OAuthError", "choose_auth_method",
           "registration_request"]

log = logging.getLogger(__name__)

AUTH_METHODS = ("client_secret_basic", "client_secret_post", "none", "private_key_jwt")


class OAuthError(AuthError):
    """An authorization server refused a request (registration, token, refresh).

    ``error`` is the OAuth error code it sent (``invalid_grant``...), if any; ``status``
    the HTTP status.
    """

    def __init__(self, message: str, *, error: Optional[str] = None, status: int = 0) -> None:
        super().__init__(message)
        self.error = error
        self.status = status


def _number(value: Any) -> Optional[float]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def registration_request(*, client_name: str, redirect_uri: Optional[str],
                         metadata: Mapping[str, Any]) -> Dict[str, Any]:
    """The RFC 7591 registration request of a public client (``none``) where the server
    accepts one, else of a confidential one."""
    supported = metadata.get("token_endpoint_auth_methods_supported")
    method = "none"
    if isinstance(supported, list) and supported and "none" not in supported:
        method = next((m for m in ("client_secret_basic", "client_secret_post")
                       if m in supported), "client_secret_basic")
    # Loopback and custom-scheme redirects are a native application's (OIDC Registration).
    native = (redirect_uri is None or md.is_loopback(redirect_uri)
              or not redirect_uri.startswith(("http://", "https://")))
    return {
        "client_name": client_name,
        "redirect_uris": [redirect_uri] if redirect_uri else [],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": method,
        "application_type": "native" if native else "web",
    }


def choose_auth_method(*, configured: Optional[str], client: Mapping[str, Any],
                       metadata: Mapping[str, Any], has_private_key: bool) -> str:
    """How the client authenticates at the token endpoint.

    What the user configured, else what the registration said, else ``private_key_jwt``
    for a pre-registered client with a key, ``none`` without a secret, and with one the
    first of ``client_secret_basic`` and ``client_secret_post`` the server supports
    (``client_secret_basic`` when it says nothing, as RFC 8414 defaults).
    """
    if configured:
        return configured
    method = client.get("auth_method")
    if isinstance(method, str) and method in AUTH_METHODS:
        return method
    if has_private_key and client.get("source") == "pre-registered":
        return "private_key_jwt"
    if not client.get("client_secret"):
        return "none"
    supported = metadata.get("token_endpoint_auth_methods_supported")
    if isinstance(supported, list) and supported:
        for candidate in ("client_secret_basic", "client_secret_post"):
            if candidate in supported:
                return candidate
        if "none" in supported:
            return "none"
    return "client_secret_basic"


def _json_or_error(response: requests.Response, what: str, endpoint: str, *,
                   ok: Tuple[int, ...] = (200,),
                   secrets: Optional[List[Optional[str]]] = None) -> Dict[str, Any]:
    """The JSON object of a successful answer, else :class:`OAuthError` (scrubbed)."""
    try:
        document = response.json()
    except ValueError:
        document = None
    if response.status_code in ok and isinstance(document, dict):
        return document
    if response.status_code in ok:
        raise AuthError(f"the {what} at {excerpt(endpoint, 200)} answered with something "
                        "not JSON")
    detail = ""
    oauth_error = None
    if isinstance(document, dict) and isinstance(document.get("error"), str):
        oauth_error = document["error"]
        detail = f": {excerpt(oauth_error, 60)}"
        description = document.get("error_description")
        if isinstance(description, str) and description:
            detail += f" ({excerpt(description, 300)})"
    elif 300 <= response.status_code < 400:
        detail = " (a redirect: not followed)"
    message = md.scrub(f"the {what} at {excerpt(endpoint, 200)} failed: HTTP "
                       f"{response.status_code}{detail}", secrets or [])
    raise OAuthError(message, error=oauth_error, status=response.status_code)


class Endpoints:
    """POSTs to an authorization server.

    Args:
        fetcher: returns the :class:`~mcp_sync.auth.fetch.Fetcher` that sends them,
            under its policy.
    """

    def __init__(self, fetcher: Callable[[], Fetcher]) -> None:
        self._fetcher = fetcher

    def register(self, endpoint: str, request: Mapping[str, Any], issuer: str) -> Dict[str, Any]:
        """Register the client; returns what to keep: ``client_id``, ``client_secret``,
        ``client_secret_expires_at``, ``auth_method``, ``redirect_uris``, ``issuer``.

        Raises:
            AuthError: the registration failed (:class:`OAuthError` when refused).
        """
        log.info("mcp-sync: registering with the authorization server %s", excerpt(issuer, 200))
        try:
            response = self._fetcher().post(endpoint, "registration endpoint",
                                            json=dict(request),
                                            headers={"Accept": "application/json"})
        except requests.RequestException as exc:
            raise AuthError(f"client registration at {shown(endpoint)} failed: "
                            f"{excerpt(exc, 300)}") from exc
        with response:
            document = _json_or_error(response, "client registration", endpoint,
                                      ok=(200, 201))
        client_id = document.get("client_id")
        if not isinstance(client_id, str) or not client_id:
            raise AuthError(f"the client registration at {endpoint} returned no client_id")
        secret = document.get("client_secret")
        method = document.get("token_endpoint_auth_method")
        return {
            "client_id": client_id,
            "client_secret": secret if isinstance(secret, str) and secret else None,
            "client_secret_expires_at": _number(document.get("client_secret_expires_at")),
            "auth_method": method if method in AUTH_METHODS else None,
            "redirect_uris": list(request.get("redirect_uris") or []),
            "issuer": issuer,
            "source": "dynamic registration",
        }

    def token(self, endpoint: str, data: Dict[str, str], *, client: Mapping[str, Any],
              method: str, issuer: str, private_key: Any = None,
              signing_algorithm: str = "ES256",
              token_types: Optional[Tuple[str, ...]] = ("bearer",)) -> Dict[str, Any]:
        """POST ``data`` to the token endpoint, authenticated by ``method``; returns the
        token response (an ``access_token`` checked to be there, of one of
        ``token_types`` unless that is None).

        Raises:
            AuthError: the request failed (:class:`OAuthError` when refused).
        """
        fetcher = self._fetcher()
        fetcher.policy.check_url(endpoint, "token endpoint")  # before an assertion is made
        headers = {"Accept": "application/json"}
        client_id = str(client.get("client_id") or "")
        secret = client.get("client_secret")
        if method == "client_secret_basic" and secret:
            # RFC 6749 2.3.1: both form-encoded before the Basic encoding.
            pair = f"{quote_plus(client_id)}:{quote_plus(str(secret))}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
        elif method == "client_secret_post" and secret:
            data["client_id"] = client_id
            data["client_secret"] = str(secret)
        elif method == "private_key_jwt":
            if private_key is None:
                raise AuthError("private_key_jwt needs private_key=")
            data["client_id"] = client_id
            data["client_assertion_type"] = ASSERTION_TYPE
            data["client_assertion"] = client_assertion(client_id, issuer, private_key,
                                                        signing_algorithm)
        elif client_id:
            data["client_id"] = client_id
        secrets = [str(secret) if secret else None, data.get("code"), data.get("code_verifier"),
                   data.get("refresh_token"), data.get("client_assertion"),
                   data.get("assertion")]
        try:
            response = fetcher.post(endpoint, "token endpoint", data=data, headers=headers)
        except requests.RequestException as exc:
            # Scrubbed whole, then cut: a cut could leave half a secret unrecognised.
            message = excerpt(md.scrub(f"the token request to {endpoint} failed: {exc}",
                                       secrets), 600)
            raise AuthError(message) from exc
        with response:
            document = _json_or_error(response, f"token request ({data['grant_type']})",
                                      endpoint, secrets=secrets)
        token = document.get("access_token")
        if not isinstance(token, str) or not token:
            raise AuthError(f"the token endpoint {endpoint} returned no access_token")
        token_type = document.get("token_type", "Bearer")
        if token_types is not None and (not isinstance(token_type, str)
                                        or token_type.lower() not in token_types):
            raise AuthError(f"the token endpoint {endpoint} issued a "
                            f"{excerpt(token_type, 20)!r} token; only Bearer is supported")
        return document
