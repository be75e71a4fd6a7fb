"""``OAuth``: the MCP authorization flow (OAuth 2.1) as a ``requests`` auth object.

How a request gets its token::

    transport thread                       OAuth                                  servers
    ----------------                       -----                                  -------
    prepare the request  ----------->  __call__: add "Bearer <token>" (refresh
                                       it first when it is about to expire),
                                       register the response hook
    send  ------------------------------------------------------------------->   MCP server
    response hook  ------------------>  2xx: nothing to do
                                       401: (one thread at a time, others wait)
                                         protected resource metadata (RFC 9728)   MCP server
                                         authorization server metadata (RFC 8414) auth server
                                         refresh token, or else: client identity,
                                         authorization code + PKCE + resource,
                                         state and iss checks, token request      auth server
                                       403 insufficient_scope: the same with the
                                         union of the scopes (step-up), 3 at most
                                       re-send a copy of the request with the
                                       new token, on the same connection adapter
                                       (the pattern of requests' HTTPDigestAuth)

The flow runs on the thread whose request got the 401 (a transport's stream thread) and
is serialized by one lock: the other threads wait (bounded) for its token instead of
starting a login of their own. The user-facing part is an
:class:`~mcp_sync.auth.flows.AuthorizationFlow`; every HTTP call of the flow has a
timeout, and the wait for the user is bounded by ``authorization_timeout``.

Secrets (tokens, client secrets, codes, verifiers) never appear in a log line, an
exception message or a URL. The bearer token only goes to the MCP server's origin: a
request for any other origin passes through untouched, and ``requests`` removes the
header when a redirect leaves the host. The flow's own requests carry no MCP token; the
client secret goes to the token endpoint only, which is never followed through a redirect.

What the flow fetches is the servers' choice, so every request of the flow goes through
one :class:`~mcp_sync.auth.fetch.Fetcher` under one
:class:`~mcp_sync.auth.policy.FetchPolicy`, made from the MCP server's URL and
``allowed_private_hosts``: https, no loopback, private or link-local address (checked on
the connected socket) for a server that is not on loopback, redirects checked hop by hop.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Protocol, Union
from urllib.parse import urlencode, urlsplit, urlunsplit

import requests
import requests.auth
import urllib3.exceptions

from ..exceptions import AuthError, excerpt
from . import metadata as md
from .discovery import Context, Discovery
from .endpoints import (
    AUTH_METHODS,
    Endpoints,
    OAuthError,
    choose_auth_method,
    registration_request,
)
from .fetch import Fetcher
from .flows import AuthorizationFlow, HeadlessFlow, LoopbackFlow
from .pkce import make_state, pkce_pair
from .policy import FetchPolicy
from .storage import MemoryTokenStorage, TokenStorage

__all__ = ["OAuth", "OAuthError"]

log = logging.getLogger(__name__)

AUTHORIZATION_CODE = "authorization_code"
CLIENT_CREDENTIALS = "client_credentials"
#: RFC 7523 section 2.1: a JWT issued by someone the authorization server trusts (a
#: workload identity provider) is the grant.
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
_GRANTS = (AUTHORIZATION_CODE, CLIENT_CREDENTIALS, JWT_BEARER)
# The grants with no user and no authorization request.
_MACHINE_GRANTS = (CLIENT_CREDENTIALS, JWT_BEARER)
# The most of an error body kept for a message, and of a discarded 401/403 body read.
_BODY_LIMIT = 64 * 1024
# Re-sends of one request, whatever happens: a server that keeps answering 401 to fresh
# tokens cannot keep the loop going.
_MAX_RESENDS = 8


class AssertionSource(Protocol):
    """Makes the JWT-bearer grant's assertion for one authorization server and resource
    (:class:`~mcp_sync.auth.IdJagExchange` does, for enterprise-managed authorization)."""

    def assertion(self, *, issuer: str, resource: str, scope: Optional[str]) -> str:
        """The assertion to present to ``issuer`` for ``resource``."""


Assertion = Union[str, Callable[[], str], AssertionSource]


def _now() -> float:
    return time.time()


def _sent_token(request: Any) -> Optional[str]:
    header = request.headers.get("Authorization") if request is not None else None
    if isinstance(header, str) and header[:7].lower() == "bearer ":
        return header[7:].strip()
    return None


def _release(response: requests.Response) -> None:
    """Read what is left of a small error body (at most 64 KiB) and close the response."""
    try:
        response.raw.read(_BODY_LIMIT)
    except (OSError, ValueError, AttributeError, requests.RequestException,
            urllib3.exceptions.HTTPError) as exc:  # the connection is just not reused
        log.debug("discarding an auth challenge body: %r", exc)
    finally:
        response.close()


def _add_query(url: str, params: Mapping[str, str]) -> str:
    parts = urlsplit(url)
    query = urlencode(params)
    if parts.query:
        query = f"{parts.query}&{query}"
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))


def _number(value: Any) -> Optional[float]:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


class OAuth(requests.auth.AuthBase):
    """MCP authorization (OAuth 2.1) for Streamable HTTP and legacy SSE transports.

    Pass it as ``auth=`` to :func:`mcp_sync.connect` (or a transport). The first request
    goes out without a token; the server's ``401`` starts the flow; the request is then
    re-sent with the token, and later requests carry it::

        from mcp_sync.auth import OAuth

        oauth = OAuth()                                   # browser + loopback redirect
        with mcp_sync.connect("https://mcp.example.com/mcp", auth=oauth) as client:
            client.list_tools()

    Args:
        server_url: the MCP server; by default the URL of the first request. The token
            is only ever sent to this origin.
        client_id, client_secret: pre-registered credentials (used first when given).
        client_issuer: the authorization server (issuer) the pre-registered credentials
            belong to. Without it they are bound to the first one discovered; either way
            they are never sent to another.
        client_metadata_url: an HTTPS URL hosting this client's metadata document (Client
            ID Metadata Documents), used as the client ID where the authorization server
            supports them; else dynamic client registration (RFC 7591).
        client_name: the name registered (shown on consent screens).
        token_endpoint_auth_method: force ``client_secret_basic``, ``client_secret_post``,
            ``none`` or ``private_key_jwt``; by default it follows the registration and
            the server's metadata.
        private_key, signing_algorithm: a PEM private key (or key object) for
            ``private_key_jwt`` client authentication (needs the ``auth-jwt`` extra).
        grant_type: ``"authorization_code"`` (a user logs in) or ``"client_credentials"``
            (the client acts on its own behalf: needs ``client_id`` and a secret or key;
            see :meth:`client_credentials`).
        scope: the scope to ask for; by default the server's challenge, else its
            ``scopes_supported``, else none.
        flow: the user-facing part of the authorization code flow
            (:class:`~mcp_sync.auth.LoopbackFlow` by default).
        redirect_handler: shortcut for ``flow=HeadlessFlow(redirect_handler)``.
        storage: where tokens and registrations are kept (in memory by default; see
            :class:`~mcp_sync.auth.FileTokenStorage`).
        authorization_timeout: the longest the flow waits for the user (seconds; None: no
            limit). Threads waiting for another thread's login wait this long plus the
            flow's HTTP time.
        timeout: the timeout of each HTTP request of the flow (discovery, registration,
            token requests).
        refresh_margin: refresh the token this many seconds before it expires (at most
            half its lifetime).
        max_authorization_attempts: the most authorizations (the first one and step-ups)
            for one request before :class:`~mcp_sync.AuthError`.
        offline_access: ask for ``offline_access`` (a refresh token) when the
            authorization server lists it.
        allowed_private_hosts: hosts (names or IP addresses, as the URLs write them) that
            the flow may reach on a loopback, private or link-local address although the
            MCP server is not on loopback: an enterprise's own authorization server, or
            an MCP server on the company network. Every other URL of the flow must lead
            to a public address (see :mod:`mcp_sync.auth.policy`).
        allow_insecure_http: accept plain-HTTP authorization endpoints on hosts other than
            loopback ones (never do this in production).
        session: a ``requests.Session`` whose configuration (proxies, CA bundle, client
            certificate, headers) the flow's own requests take; they are sent through the
            flow's checked connections, never this session's adapters.

    Thread-safety: one object can serve many clients and threads; one login runs at a
    time and the others wait for its token.

    Errors: a flow that fails raises :class:`~mcp_sync.AuthError` from the request that
    needed the token (``connect()``, ``call_tool()``...), with a message that names the
    step that failed and no secret.
    """

    def __init__(
        self,
        server_url: Optional[str] = None,
        *,
        client_id: Optional[str] = None,
        client_secret: Optional[str] = None,
        client_issuer: Optional[str] = None,
        client_metadata_url: Optional[str] = None,
        client_name: str = "mcp-sync",
        token_endpoint_auth_method: Optional[str] = None,
        private_key: Any = None,
        signing_algorithm: str = "ES256",
        grant_type: str = AUTHORIZATION_CODE,
        assertion: Optional[Assertion] = None,
        scope: Optional[str] = None,
        flow: Optional[AuthorizationFlow] = None,
        redirect_handler: Optional[Callable[[str], str]] = None,
        storage: Optional[TokenStorage] = None,
        authorization_timeout: Optional[float] = 300.0,
        timeout: float = 10.0,
        refresh_margin: float = 60.0,
        max_authorization_attempts: int = 3,
        offline_access: bool = True,
        allowed_private_hosts: Iterable[str] = (),
        allow_insecure_http: bool = False,
        session: Optional[requests.Session] = None,
    ) -> None:
        if grant_type not in _GRANTS:
            raise ValueError(f"grant_type must be one of {_GRANTS}, got {grant_type!r}")
        if grant_type == CLIENT_CREDENTIALS and not client_id:
            raise ValueError("the client_credentials grant needs a client_id")
        if (grant_type == JWT_BEARER) != (assertion is not None):
            raise ValueError("assertion= goes with (and only with) the JWT-bearer grant")
        if token_endpoint_auth_method not in (None, *AUTH_METHODS):
            raise ValueError(f"token_endpoint_auth_method must be one of {AUTH_METHODS}")
        if client_metadata_url is not None:
            parts = urlsplit(client_metadata_url)
            if parts.scheme != "https" or parts.path in ("", "/"):
                raise ValueError("client_metadata_url must be an https URL with a path")
        if flow is not None and redirect_handler is not None:
            raise ValueError("pass flow= or redirect_handler=, not both")
        if max_authorization_attempts < 1:
            raise ValueError("max_authorization_attempts must be at least 1")
        self.server_url = md.canonical_resource(server_url) if server_url else None
        self.client_id = client_id
        self.client_secret = client_secret
        self.client_issuer = client_issuer
        self.client_metadata_url = client_metadata_url
        self.client_name = client_name
        self.token_endpoint_auth_method = token_endpoint_auth_method
        self.private_key = private_key
        self.signing_algorithm = signing_algorithm
        self.grant_type = grant_type
        self._assertion = assertion
        self.scope = scope
        if flow is None:
            flow = HeadlessFlow(redirect_handler) if redirect_handler else LoopbackFlow()
        self.flow = flow
        self.storage: TokenStorage = storage if storage is not None else MemoryTokenStorage()
        self.authorization_timeout = authorization_timeout
        self.timeout = timeout
        self.refresh_margin = refresh_margin
        self.max_authorization_attempts = max_authorization_attempts
        self.offline_access = offline_access
        if isinstance(allowed_private_hosts, str):
            raise ValueError("allowed_private_hosts is a list of hosts, not one string")
        self.allowed_private_hosts = tuple(allowed_private_hosts)
        self.allow_insecure_http = allow_insecure_http
        self._given_session = session
        self._fetch: Optional[Fetcher] = None
        # Held while a flow or a refresh runs: one at a time; others wait for its token.
        self._flow_lock = threading.Lock()
        # Guards _tokens, _loaded, _bound_issuer, _fetch and server_url's first binding.
        self._state_lock = threading.Lock()
        self._tokens: Optional[Dict[str, Any]] = None
        self._loaded = False
        self._bound_issuer: Optional[str] = None
        self._discovery = Discovery(self._fetcher)
        self._endpoints = Endpoints(self._fetcher)

    @classmethod
    def client_credentials(
        cls, client_id: str, client_secret: Optional[str] = None, *,
        private_key: Any = None, **kwargs: Any,
    ) -> OAuth:
        """An OAuth for machine-to-machine use (cron jobs, backends): the
        ``client_credentials`` grant with a client secret or a ``private_key_jwt`` key.
        No user, no browser; the other keyword arguments are the constructor's."""
        if client_secret is None and private_key is None:
            raise ValueError("client_credentials needs a client_secret or a private_key")
        return cls(client_id=client_id, client_secret=client_secret, private_key=private_key,
                   grant_type=CLIENT_CREDENTIALS, **kwargs)

    @classmethod
    def jwt_bearer(
        cls, assertion: Assertion, client_id: Optional[str] = None, **kwargs: Any,
    ) -> OAuth:
        """The JWT-bearer grant (RFC 7523): no user, no browser.

        For workload identity federation, ``assertion`` is a JWT the workload's identity
        provider issued (a Kubernetes service account token, a cloud's identity token), or
        a callable returning a current one (read for every token request). For
        enterprise-managed authorization it is an :class:`~mcp_sync.auth.IdJagExchange`
        (an object with ``assertion(issuer=, resource=, scope=)``), and ``client_id`` /
        ``client_secret`` are this client's at the authorization server. A refused
        assertion is an :class:`OAuthError`, never retried with another grant."""
        return cls(client_id=client_id, grant_type=JWT_BEARER, assertion=assertion, **kwargs)

    def __repr__(self) -> str:
        return (f"OAuth(server_url={self.server_url!r}, grant_type={self.grant_type!r}, "
                f"client_id={self.client_id!r}, flow={self.flow!r})")

    # -- requests' hooks -----------------------------------------------------------------

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        url = str(r.url or "")
        if not self._owns(url, bind=True):
            return r  # another origin never gets the token (nor our handling)
        # A caller may hand every request the same hooks dict (its session's): register
        # on a copy, never on what others share.
        r.hooks = {event: list(hooks) for event, hooks in r.hooks.items()}
        token = self._token_for_request()
        if token is not None:
            r.headers["Authorization"] = f"Bearer {token}"
        r.hooks.setdefault("response", []).append(self._on_response)
        return r

    def _owns(self, url: str, *, bind: bool = False) -> bool:
        if not url.startswith(("http://", "https://")):
            return False
        server = self.server_url
        if server is None and bind:
            with self._state_lock:
                if self.server_url is None:
                    self.server_url = md.canonical_resource(url)
                    log.debug("OAuth bound to %s", self.server_url)
                server = self.server_url
        return server is not None and md.origin_of(url) == md.origin_of(server)

    def _on_response(self, response: requests.Response, **kwargs: Any) -> requests.Response:
        """The response hook: answer 401 and 403 ``insufficient_scope`` by authorizing and
        re-sending the request; any other response passes through."""
        status = response.status_code
        if status not in (401, 403) or not self._owns(str(response.request.url or "")):
            return response
        if response.request.method == "DELETE":
            return response  # ending a session is no reason to log in
        challenge = self._challenge(response)
        if status == 403 and (challenge is None or challenge.error != "insufficient_scope"):
            return response
        original = response.request
        current = response
        authorizations = 0
        refreshed = False
        try:
            for _ in range(_MAX_RESENDS):
                sent = _sent_token(current.request)
                if status == 401:
                    outcome = self._recover(challenge, sent, allow_refresh=not refreshed,
                                            authorizations=authorizations)
                else:
                    outcome = self._step_up(challenge, sent, authorizations=authorizations)
                refreshed = refreshed or outcome == "refreshed"
                authorizations += outcome == "authorized"
                current = self._resend(original, current, kwargs)
                status = current.status_code
                if status not in (401, 403):
                    return current
                challenge = self._challenge(current)
                if status == 403 and (challenge is None
                                      or challenge.error != "insufficient_scope"):
                    return current
                if status == 401 and outcome == "authorized":
                    raise AuthError(f"{self.server_url} rejected (HTTP 401) a token its "
                                    f"authorization server had just issued")
            raise AuthError(f"{self.server_url} kept refusing the request's authorization")
        except BaseException:
            # Nobody else will: the transport never sees this response.
            _release(current)
            raise

    @staticmethod
    def _challenge(response: requests.Response) -> Optional[md.Challenge]:
        return md.bearer_challenge([response.headers.get("WWW-Authenticate") or ""])

    def _resend(self, original: Any, current: requests.Response,
                kwargs: Dict[str, Any]) -> requests.Response:
        """Send a copy of ``original`` with the current token, on the same adapter."""
        _release(current)
        prepared = original.copy()
        # A cookie the refusal set (a load balancer's affinity, say) goes with the copy,
        # as requests' digest auth sends it: when the request carried no cookie of its own
        # (a Cookie header is left as it is). The refusal's cookies reach the session's
        # jar through Session.send, which reads every response of the history.
        if current.cookies and "Cookie" not in prepared.headers:
            prepared.prepare_cookies(current.cookies)
        token = self._current_access_token()
        if token is None:  # pragma: no cover - every outcome leaves a token
            raise AuthError("no access token after authorization")
        prepared.headers["Authorization"] = f"Bearer {token}"
        connection = current.connection
        retried: requests.Response = connection.send(prepared, **kwargs)
        retried.history = [*current.history, current]
        retried.request = prepared
        return retried

    # -- tokens ---------------------------------------------------------------------------

    def _storage_key(self) -> str:
        return self.server_url or ""

    def _load_tokens(self) -> Optional[Dict[str, Any]]:
        if not self._loaded:
            with self._state_lock:
                if not self._loaded:
                    try:
                        stored = self.storage.load("tokens", self._storage_key())
                    except AuthError as exc:
                        log.warning("mcp-sync: cannot load stored tokens: %s", exc)
                        stored = None
                    if stored is not None and isinstance(stored.get("access_token"), str):
                        self._tokens = stored
                    self._loaded = True
        return self._tokens

    def _save_tokens(self, tokens: Optional[Dict[str, Any]]) -> None:
        with self._state_lock:
            self._tokens = tokens
            self._loaded = True
        try:
            if tokens is None:
                self.storage.delete("tokens", self._storage_key())
            else:
                self.storage.save("tokens", self._storage_key(), tokens)
        except AuthError as exc:
            log.warning("mcp-sync: cannot store tokens: %s", exc)

    def _current_access_token(self) -> Optional[str]:
        tokens = self._load_tokens()
        return tokens.get("access_token") if tokens is not None else None

    def _expires_soon(self, tokens: Mapping[str, Any]) -> bool:
        expires_at = _number(tokens.get("expires_at"))
        if expires_at is None:
            return False
        issued_at = _number(tokens.get("issued_at")) or expires_at
        margin = min(self.refresh_margin, max(0.0, (expires_at - issued_at) / 2))
        return _now() >= expires_at - margin

    @staticmethod
    def _expired(tokens: Mapping[str, Any]) -> bool:
        expires_at = _number(tokens.get("expires_at"))
        return expires_at is not None and _now() >= expires_at

    def _token_for_request(self) -> Optional[str]:
        """The token for the next request, refreshed first when it is about to expire.

        While another thread refreshes or logs in, a token that is still valid is used at
        once; an expired one waits (bounded) for the new one.
        """
        tokens = self._load_tokens()
        if tokens is None:
            return None
        if self._expires_soon(tokens) and tokens.get("refresh_token"):
            expired = self._expired(tokens)
            acquired = self._flow_lock.acquire(timeout=self._lock_wait() if expired else 0)
            if acquired:
                try:
                    current = self._load_tokens()
                    if current is not None and current.get("access_token") == tokens.get(
                            "access_token"):
                        self._refresh(current)
                finally:
                    self._flow_lock.release()
            tokens = self._load_tokens() or tokens
        token = tokens.get("access_token")
        return token if isinstance(token, str) else None

    def _lock_wait(self) -> float:
        # A login may take the user authorization_timeout, plus the flow's HTTP calls.
        return (self.authorization_timeout or 3600.0) + 8 * self.timeout

    def _acquire(self) -> None:
        if not self._flow_lock.acquire(timeout=self._lock_wait()):
            raise AuthError(f"waited {self._lock_wait():.0f} s for another thread's "
                            f"authorization with {self.server_url} to finish")

    # -- what a 401 or a 403 leads to -----------------------------------------------------

    def _recover(self, challenge: Optional[md.Challenge], sent: Optional[str], *,
                 allow_refresh: bool, authorizations: int) -> str:
        """After a 401: use a token another thread got, or refresh, or authorize.

        Returns ``"reused"``, ``"refreshed"`` or ``"authorized"``.
        """
        self._acquire()
        try:
            current = self._load_tokens()
            if (current is not None and current.get("access_token") != sent
                    and not self._expired(current)):
                return "reused"
            context = self._discover(challenge)
            if (current is not None and sent is not None and allow_refresh
                    and current.get("refresh_token") and current.get("issuer") == context.issuer
                    and self._refresh(current) is not None):
                return "refreshed"
            if authorizations >= self.max_authorization_attempts:
                raise AuthError(f"{self.server_url} still answers 401 after "
                                f"{authorizations} authorizations; giving up")
            previous = None
            if current is not None and current.get("issuer") == context.issuer:
                previous = current.get("requested_scope")
            self._obtain(context, challenged=challenge.scope if challenge else None,
                         previous=previous)
            return "authorized"
        finally:
            self._flow_lock.release()

    def _step_up(self, challenge: Optional[md.Challenge], sent: Optional[str], *,
                 authorizations: int) -> str:
        """After a 403 ``insufficient_scope``: authorize again for the union of the scopes
        asked before and the challenged ones, ``max_authorization_attempts`` at most."""
        challenged = md.split_scope(challenge.scope if challenge else None)
        self._acquire()
        try:
            current = self._load_tokens()
            if (current is not None and current.get("access_token") != sent
                    and not self._expired(current)
                    and set(challenged) <= set(md.split_scope(current.get("requested_scope")))):
                return "reused"
            if authorizations >= self.max_authorization_attempts:
                raise AuthError(
                    f"{self.server_url} still answers 403 insufficient_scope (scope "
                    f"{excerpt(' '.join(challenged) or '(none)', 200)!r}) after "
                    f"{authorizations} authorizations; giving up")
            context = self._discover(challenge)
            previous = self.scope
            if current is not None and current.get("issuer") == context.issuer:
                previous = current.get("requested_scope") or previous
            log.info("mcp-sync: %s needs more scope (%s); authorizing again",
                     self.server_url, excerpt(" ".join(challenged) or "unspecified", 200))
            self._obtain(context, challenged=" ".join(challenged) or None, previous=previous,
                         step_up=True)
            return "authorized"
        finally:
            self._flow_lock.release()

    # -- discovery -------------------------------------------------------------------------

    def _fetcher(self) -> Fetcher:
        """The fetcher of every request of the flow, under the policy of the MCP server
        this object is bound to (made at the first fetch, which comes after binding)."""
        with self._state_lock:
            if self._fetch is None:
                policy = FetchPolicy(self.server_url,
                                     allowed_private_hosts=self.allowed_private_hosts,
                                     allow_insecure_http=self.allow_insecure_http)
                self._fetch = Fetcher(policy, timeout=self.timeout,
                                      session=self._given_session)
            return self._fetch

    def _discover(self, challenge: Optional[md.Challenge]) -> Context:
        """Find the authorization server and the resource to ask tokens for.

        Raises:
            AuthError: the metadata is missing, invalid, or for another resource.
        """
        server = self.server_url
        if server is None:  # pragma: no cover - a request binds it first
            raise AuthError("OAuth does not know the MCP server's URL yet")
        return self._discovery.discover(
            server, challenge, need_authorization_endpoint=self.grant_type == AUTHORIZATION_CODE)

    # -- client identity ------------------------------------------------------------------

    def _client(self, context: Context, redirect_uri: Optional[str]) -> Dict[str, Any]:
        """The client to present to ``context``'s authorization server.

        Pre-registered credentials first (only with the authorization server they belong
        to), then a client ID metadata document URL where supported, then a dynamic
        registration kept per issuer.

        Raises:
            AuthError: no way to identify the client there.
        """
        if self.client_id:
            with self._state_lock:
                bound = self.client_issuer or self._bound_issuer
                if bound is None:
                    self._bound_issuer = bound = context.issuer
            if bound.rstrip("/") != context.issuer.rstrip("/"):
                raise AuthError(
                    f"the pre-registered client {self.client_id!r} belongs to the "
                    f"authorization server {bound}, but {self.server_url} now uses "
                    f"{context.issuer}: not sending its credentials there")
            return {"client_id": self.client_id, "client_secret": self.client_secret,
                    "source": "pre-registered"}
        if self.grant_type == JWT_BEARER:
            return {"client_id": "", "source": "none"}  # the assertion is the credential
        if self.grant_type == CLIENT_CREDENTIALS:  # pragma: no cover - the constructor checks
            raise AuthError("the client_credentials grant needs a client_id")
        if (self.client_metadata_url
                and context.metadata.get("client_id_metadata_document_supported") is True):
            method = "private_key_jwt" if self.private_key is not None else "none"
            return {"client_id": self.client_metadata_url, "auth_method": method,
                    "source": "metadata document"}
        stored = self._stored_client(context.issuer, redirect_uri)
        if stored is not None:
            return stored
        endpoint = context.metadata.get("registration_endpoint")
        if not isinstance(endpoint, str) or not endpoint:
            raise AuthError(
                f"the authorization server {context.issuer} offers no dynamic client "
                "registration" + ("" if self.client_metadata_url else
                                  " (and no client_metadata_url is configured)")
                + ": pass client_id= (and client_secret=) of a pre-registered client")
        return self._register(context, endpoint, redirect_uri)

    def _stored_client(self, issuer: str, redirect_uri: Optional[str]) -> Optional[Dict[str, Any]]:
        try:
            stored = self.storage.load("client", issuer)
        except AuthError as exc:
            log.warning("mcp-sync: cannot load the stored client registration: %s", exc)
            return None
        if stored is None or not isinstance(stored.get("client_id"), str):
            return None
        expires = _number(stored.get("client_secret_expires_at"))
        if expires and expires <= _now():
            return None
        if redirect_uri is not None and redirect_uri not in (stored.get("redirect_uris") or []):
            return None  # registered for another redirect URI (another port): register anew
        return stored

    def _register(self, context: Context, endpoint: str,
                  redirect_uri: Optional[str]) -> Dict[str, Any]:
        """Dynamic client registration (RFC 7591); the result is kept per issuer."""
        request = registration_request(client_name=self.client_name, redirect_uri=redirect_uri,
                                       metadata=context.metadata)
        registered = self._endpoints.register(endpoint, request, context.issuer)
        try:
            self.storage.save("client", context.issuer, registered)
        except AuthError as exc:
            log.warning("mcp-sync: cannot store the client registration: %s", exc)
        return registered

    # -- grants ---------------------------------------------------------------------------

    def _obtain(self, context: Context, *, challenged: Optional[str],
                previous: Optional[str], step_up: bool = False) -> None:
        scope = md.select_scope(
            configured=None if step_up else self.scope, challenged=challenged,
            scopes_supported=context.scopes_supported, previous=previous,
            offline_access=self.offline_access and self.grant_type == AUTHORIZATION_CODE,
            as_scopes_supported=context.metadata.get("scopes_supported"),
        )
        if self.grant_type in _MACHINE_GRANTS:
            tokens = self._machine_grant(context, scope)
        else:
            tokens = self._authorization_code_grant(context, scope)
        self._save_tokens(tokens)

    def _machine_grant(self, context: Context, scope: Optional[str]) -> Dict[str, Any]:
        """The client_credentials or JWT-bearer grant: one token request, no user."""
        client = self._client(context, None)
        data = {"grant_type": self.grant_type, "resource": context.resource}
        if self.grant_type == JWT_BEARER:
            source = self._assertion
            if hasattr(source, "assertion"):
                assertion: Any = source.assertion(  # type: ignore[union-attr]
                    issuer=context.issuer, resource=context.resource, scope=scope)
            else:
                assertion = source() if callable(source) else source
            if not isinstance(assertion, str) or not assertion:
                raise AuthError("the JWT-bearer grant has no assertion to present")
            data["assertion"] = assertion
        if scope:
            data["scope"] = scope
        log.info("mcp-sync: requesting a token from %s (%s)", excerpt(context.issuer, 200),
                 "jwt-bearer" if self.grant_type == JWT_BEARER else self.grant_type)
        token_endpoint = str(context.metadata["token_endpoint"])
        response = self._token_request(token_endpoint, context.issuer, client,
                                       context.metadata, data)
        return self._token_record(response, client=client, context_issuer=context.issuer,
                                  token_endpoint=token_endpoint, resource=context.resource,
                                  requested_scope=scope, metadata=context.metadata)

    def _authorization_code_grant(self, context: Context,
                                  scope: Optional[str]) -> Dict[str, Any]:
        if context.from_metadata:
            md.check_pkce_support(context.metadata, context.issuer)
        redirect_uri = self.flow.redirect_uri()
        client = self._client(context, redirect_uri)
        verifier, challenge = pkce_pair()
        state = make_state()
        params = {
            "response_type": "code",
            "client_id": str(client["client_id"]),
            "redirect_uri": redirect_uri,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": state,
            "resource": context.resource,
        }
        if scope:
            params["scope"] = scope
        endpoint = str(context.metadata["authorization_endpoint"])
        # Not fetched here (the user's browser goes there), but held to the same rule.
        self._fetcher().policy.check_url(endpoint, "authorization endpoint")
        pending = {
            "state": state,
            "code_verifier": verifier,
            "redirect_uri": redirect_uri,
            # The issuer recorded before the user is sent away (RFC 9207): the validated
            # metadata's, or for the 2025-03-26 default endpoints the origin they are on.
            "issuer": context.issuer,
            "expected_iss": context.issuer,
            "iss_supported": context.metadata.get(
                "authorization_response_iss_parameter_supported") is True,
            "server_url": self.server_url,
            "resource": context.resource,
            "scope": scope,
            "client": client,
            "token_endpoint": str(context.metadata["token_endpoint"]),
            "metadata": {key: context.metadata.get(key) for key in (
                "token_endpoint_auth_methods_supported",)},
            "created_at": _now(),
        }
        if self.flow.completes_elsewhere:
            self.storage.save("pending", state, pending)
        log.info("mcp-sync: authorization needed for %s (authorization server %s)",
                 self.server_url, excerpt(context.issuer, 200))
        callback = self.flow.authorize(_add_query(endpoint, params), self.authorization_timeout)
        return self._redeem(pending, callback)

    def _redeem(self, pending: Mapping[str, Any], callback_url: str) -> Dict[str, Any]:
        """Validate the authorization response, then exchange its code for tokens."""
        params = md.callback_params(callback_url)
        code = md.check_authorization_response(
            params, expected_state=str(pending["state"]),
            expected_issuer=pending.get("expected_iss"),
            iss_supported=bool(pending.get("iss_supported")))
        data = {
            "grant_type": AUTHORIZATION_CODE,
            "code": code,
            "redirect_uri": str(pending["redirect_uri"]),
            "code_verifier": str(pending["code_verifier"]),
            "resource": str(pending["resource"]),
        }
        client = dict(pending["client"])
        metadata = dict(pending.get("metadata") or {})
        response = self._token_request(str(pending["token_endpoint"]), str(pending["issuer"]),
                                       client, metadata, data)
        return self._token_record(response, client=client, context_issuer=str(pending["issuer"]),
                                  token_endpoint=str(pending["token_endpoint"]),
                                  resource=str(pending["resource"]),
                                  requested_scope=pending.get("scope"), metadata=metadata)

    def _refresh(self, current: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        """Exchange the refresh token; None when that fails (the caller authorizes anew).

        A refresh token the server refuses is forgotten; a network failure keeps it.
        """
        refresh_token = current.get("refresh_token")
        endpoint = current.get("token_endpoint")
        client = current.get("client")
        if not refresh_token or not isinstance(endpoint, str) or not isinstance(client, dict):
            return None
        data = {"grant_type": "refresh_token", "refresh_token": str(refresh_token)}
        if current.get("resource"):
            data["resource"] = str(current["resource"])
        metadata = dict(current.get("metadata") or {})
        try:
            response = self._token_request(endpoint, str(current.get("issuer")), client,
                                           metadata, data)
        except AuthError as exc:
            log.info("mcp-sync: refreshing the token for %s failed: %s", self.server_url, exc)
            if isinstance(exc, OAuthError) and exc.error:
                self._save_tokens({**current, "refresh_token": None})
            return None
        tokens = self._token_record(
            response, client=client, context_issuer=str(current.get("issuer")),
            token_endpoint=endpoint, resource=str(current.get("resource") or ""),
            requested_scope=current.get("requested_scope"), metadata=metadata,
            previous_refresh_token=str(refresh_token))
        self._save_tokens(tokens)
        log.info("mcp-sync: refreshed the access token for %s", self.server_url)
        return tokens

    def _token_request(self, endpoint: str, issuer: str, client: Mapping[str, Any],
                       metadata: Mapping[str, Any], data: Dict[str, str]) -> Dict[str, Any]:
        """POST to the token endpoint with the client's authentication.

        Raises:
            AuthError: the request failed (:class:`OAuthError` when refused).
        """
        method = choose_auth_method(configured=self.token_endpoint_auth_method, client=client,
                                    metadata=metadata,
                                    has_private_key=self.private_key is not None)
        return self._endpoints.token(endpoint, data, client=client, method=method,
                                     issuer=issuer, private_key=self.private_key,
                                     signing_algorithm=self.signing_algorithm)

    def _token_record(self, response: Mapping[str, Any], *, client: Mapping[str, Any],
                      context_issuer: str, token_endpoint: str, resource: str,
                      requested_scope: Optional[str], metadata: Mapping[str, Any],
                      previous_refresh_token: Optional[str] = None) -> Dict[str, Any]:
        now = _now()
        expires_in = _number(response.get("expires_in"))
        refresh_token = response.get("refresh_token")
        granted = response.get("scope")
        return {
            "access_token": response["access_token"],
            "token_type": "Bearer",
            "refresh_token": refresh_token if isinstance(refresh_token, str) and refresh_token
            else previous_refresh_token,
            "issued_at": now,
            "expires_at": now + expires_in if expires_in is not None and expires_in > 0 else None,
            "scope": granted if isinstance(granted, str) else requested_scope,
            "requested_scope": requested_scope,
            "issuer": context_issuer,
            "token_endpoint": token_endpoint,
            "resource": resource,
            "client": dict(client),
            "metadata": dict(metadata),
        }

    # -- for applications -----------------------------------------------------------------

    def authorize(self, server_url: Optional[str] = None, *, force: bool = False) -> None:
        """Log in now, before any request: discovery from the server's well-known metadata
        (no challenge, so the scope is its ``scopes_supported``), then the flow.

        Useful for an interactive login that may take longer than a request's deadline:
        the requests that follow find the token ready. Does nothing when a token is at hand
        (unless ``force``). Blocks up to ``authorization_timeout`` plus the flow's HTTP time.

        Raises:
            AuthError: the flow failed (or, with a :class:`~mcp_sync.auth.WebAppFlow`,
                :class:`~mcp_sync.auth.AuthorizationRequired`).
            ValueError: no ``server_url`` here nor in the constructor.
        """
        if server_url is not None:
            if not self._owns(server_url, bind=True):
                raise ValueError(f"this OAuth is bound to {self.server_url}, not {server_url}")
        elif self.server_url is None:
            raise ValueError("authorize() needs the MCP server's URL")
        self._acquire()
        try:
            current = self._load_tokens()
            if current is not None and not force and not self._expired(current):
                return
            context = self._discover(None)
            self._obtain(context, challenged=None, previous=None)
        finally:
            self._flow_lock.release()

    def complete_authorization(self, callback_url: str) -> None:
        """Finish an authorization a :class:`~mcp_sync.auth.WebAppFlow` started: call it
        from the view at the redirect URI with the full URL it was called at.

        Validates ``state`` and ``iss``, redeems the code and stores the tokens; the next
        request to the server uses them.

        Raises:
            AuthError: unknown or expired ``state``, a failed check, or a refused code.
        """
        state = md.callback_params(callback_url).get("state")
        if not state:
            raise AuthError("the authorization callback carries no state")
        pending = self.storage.load("pending", state)
        if pending is None:
            raise AuthError("no authorization in progress has this state (already used, "
                            "expired, or from another client)")
        self.storage.delete("pending", state)
        server = pending.get("server_url")
        with self._state_lock:
            if self.server_url is None and isinstance(server, str):
                self.server_url = server  # a new OAuth object in the callback view
        if server != self.server_url:
            raise AuthError(f"this authorization was for {excerpt(server, 200)}, not for "
                            f"{self.server_url}")
        created = _number(pending.get("created_at")) or 0.0
        if self.authorization_timeout is not None and _now() - created > (
                self.authorization_timeout):
            raise AuthError("the authorization took longer than authorization_timeout")
        self._acquire()
        try:
            self._save_tokens(self._redeem(pending, callback_url))
        finally:
            self._flow_lock.release()

    @property
    def authorized(self) -> bool:
        """True when a token is at hand (it may still be refused by the server)."""
        return self._current_access_token() is not None

    def logout(self) -> None:
        """Forget the tokens for this server (the client registration is kept)."""
        self._save_tokens(None)

    def close(self) -> None:
        """Release the flow's listening socket and HTTP connections. Idempotent."""
        self.flow.close()
        with self._state_lock:
            fetcher, self._fetch = self._fetch, None
        if fetcher is not None:
            fetcher.close()

    def __enter__(self) -> OAuth:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

