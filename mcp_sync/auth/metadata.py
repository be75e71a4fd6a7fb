"""The sans-I/O half of MCP authorization: challenges, discovery URLs, validation.

Nothing here sends a request or starts a thread; :mod:`mcp_sync.auth.oauth` does the I/O
and asks these functions what to fetch and whether to trust what came back:

* :func:`parse_www_authenticate` reads a ``WWW-Authenticate`` header (RFC 7235 / RFC 6750:
  ``resource_metadata``, ``scope``, ``error``).
* :func:`protected_resource_metadata_urls` lists where RFC 9728 metadata may live, in the
  order the specification requires; :func:`check_protected_resource_metadata` refuses a
  document whose ``resource`` is not the server's.
* :func:`authorization_server_metadata_urls` lists the RFC 8414 and OpenID Connect
  discovery URLs of an issuer in priority order; :func:`check_authorization_server_metadata`
  requires the document's ``issuer`` to be the one the URL was built from.
* :func:`select_scope` applies the scope selection strategy; :func:`check_authorization_response`
  validates ``state`` and ``iss`` (RFC 9207) of a redirect before its code is redeemed.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from .._util.hosts import is_loopback_host
from ..exceptions import AuthError, excerpt
from .policy import FetchPolicy

__all__ = [
    "Challenge",
    "authorization_server_metadata_urls",
    "bearer_challenge",
    "callback_params",
    "canonical_resource",
    "check_authorization_response",
    "check_authorization_server_metadata",
    "check_pkce_support",
    "check_protected_resource_metadata",
    "default_endpoints",
    "is_loopback",
    "join_scopes",
    "origin_of",
    "parse_www_authenticate",
    "protected_resource_metadata_urls",
    "resource_matches",
    "scrub",
    "select_scope",
    "split_scope",
]

_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_SCHEME = re.compile(_TOKEN)
_PARAM = re.compile(rf"({_TOKEN})\s*=\s*(?:\"((?:[^\"\\]|\\.)*)\"|({_TOKEN}))")
_TOKEN68 = re.compile(r"[A-Za-z0-9._~+/-]+=*")
_QUOTED_PAIR = re.compile(r"\\(.)")
_DEFAULT_PORTS = {"http": 80, "https": 443}

Origin = Tuple[str, str, Optional[int]]


class Challenge:
    """One challenge of a ``WWW-Authenticate`` header: its scheme and parameters.

    Parameter names are lower-cased; values are unquoted.
    """

    __slots__ = ("params", "scheme")

    def __init__(self, scheme: str, params: Optional[Dict[str, str]] = None) -> None:
        self.scheme = scheme
        self.params: Dict[str, str] = params or {}

    @property
    def resource_metadata(self) -> Optional[str]:
        return self.params.get("resource_metadata") or None

    @property
    def scope(self) -> Optional[str]:
        """The challenged scopes, normalized to single spaces; None when absent or empty."""
        scope = join_scopes(split_scope(self.params.get("scope")))
        return scope or None

    @property
    def error(self) -> Optional[str]:
        return self.params.get("error") or None

    @property
    def error_description(self) -> Optional[str]:
        return self.params.get("error_description") or None

    def __repr__(self) -> str:
        return f"Challenge({self.scheme!r}, {self.params!r})"


def parse_www_authenticate(header: Optional[str]) -> List[Challenge]:
    """Every challenge in a ``WWW-Authenticate`` header (several headers joined by commas
    count as one). Malformed parts are skipped, never raised on."""
    challenges: List[Challenge] = []
    if not header:
        return challenges
    text = header
    pos = 0
    length = len(text)
    while pos < length:
        while pos < length and text[pos] in " \t,":
            pos += 1
        scheme = _SCHEME.match(text, pos)
        if scheme is None:
            pos += 1  # junk: skip a character and look again
            continue
        # "name=" right here is a parameter that lost its scheme: skip it.
        lone = _PARAM.match(text, pos)
        if lone is not None and lone.start() == pos and "=" in text[scheme.end():lone.end()]:
            pos = lone.end()
            continue
        challenge = Challenge(scheme.group(0))
        challenges.append(challenge)
        pos = scheme.end()
        expect_params = True
        while expect_params and pos < length:
            while pos < length and text[pos] in " \t":
                pos += 1
            param = _PARAM.match(text, pos)
            if param is not None:
                name = param.group(1).lower()
                quoted, bare = param.group(2), param.group(3)
                value = _QUOTED_PAIR.sub(r"\1", quoted) if quoted is not None else bare
                challenge.params.setdefault(name, value or "")
                pos = param.end()
            elif not challenge.params:
                token68 = _TOKEN68.match(text, pos)
                if token68 is not None:
                    pos = token68.end()
            # After a comma comes another parameter, or the next challenge's scheme.
            while pos < length and text[pos] in " \t":
                pos += 1
            if pos < length and text[pos] == ",":
                pos += 1
                while pos < length and text[pos] in " \t,":
                    pos += 1
                following = _PARAM.match(text, pos)
                expect_params = following is not None
            else:
                expect_params = False
                if pos < length and param is None:
                    pos += 1  # unparsable: move on
    return challenges


def bearer_challenge(headers: Iterable[str]) -> Optional[Challenge]:
    """The ``Bearer`` challenge among ``WWW-Authenticate`` header values, if any."""
    for header in headers:
        for challenge in parse_www_authenticate(header):
            if challenge.scheme.lower() == "bearer":
                return challenge
    return None


# -- URLs ---------------------------------------------------------------------------------


def origin_of(url: str) -> Origin:
    """``(scheme, host, port)`` with the scheme's default port filled in, lower-cased."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port or _DEFAULT_PORTS.get(scheme)


def is_loopback(url: str) -> bool:
    """True for ``localhost``, ``127.0.0.0/8`` and ``::1`` URLs."""
    return is_loopback_host(urlsplit(url).hostname or "")


def canonical_resource(url: str) -> str:
    """The canonical URI of an MCP server (RFC 8707): lower-case scheme and host, no user
    info, no query, no fragment, no trailing slash."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host if port is None else f"{host}:{port}"
    return urlunsplit((parts.scheme.lower(), netloc, parts.path.rstrip("/"), "", ""))


def _path_segments(path: str) -> List[str]:
    return [segment for segment in path.split("/") if segment]


def resource_matches(advertised: str, server_url: str) -> bool:
    """True if a protected resource metadata ``resource`` covers ``server_url``.

    Same origin, and the advertised path is the server's path or one of its parents
    (``https://host`` covers ``https://host/mcp``; ``https://host/other`` does not).
    """
    if origin_of(advertised) != origin_of(server_url):
        return False
    if urlsplit(advertised).fragment:
        return False
    mine = _path_segments(urlsplit(server_url).path)
    theirs = _path_segments(urlsplit(advertised).path)
    return mine[:len(theirs)] == theirs


def _base(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


def protected_resource_metadata_urls(server_url: str,
                                     challenge_url: Optional[str] = None) -> List[str]:
    """Where to look for the server's protected resource metadata, in order.

    The ``resource_metadata`` URL of the challenge first, then the path-aware well-known
    URI (``/.well-known/oauth-protected-resource/<path>``), then the root one.
    """
    urls: List[str] = []
    if challenge_url:
        urls.append(challenge_url)
    base = _base(server_url)
    path = urlsplit(server_url).path.rstrip("/")
    if path:
        urls.append(f"{base}/.well-known/oauth-protected-resource{path}")
    urls.append(f"{base}/.well-known/oauth-protected-resource")
    return list(dict.fromkeys(urls))


def authorization_server_metadata_urls(issuer: str) -> List[str]:
    """The metadata URLs of an authorization server, in the specification's order.

    With a path (``https://as/tenant1``): RFC 8414 path insertion, OpenID Connect path
    insertion, OpenID Connect path appending. Without: RFC 8414, then OpenID Connect.
    """
    base = _base(issuer)
    path = urlsplit(issuer).path.rstrip("/")
    if path:
        return [
            f"{base}/.well-known/oauth-authorization-server{path}",
            f"{base}/.well-known/openid-configuration{path}",
            f"{base}{path}/.well-known/openid-configuration",
        ]
    return [
        f"{base}/.well-known/oauth-authorization-server",
        f"{base}/.well-known/openid-configuration",
    ]


def default_endpoints(server_url: str) -> Dict[str, str]:
    """The 2025-03-26 fallback endpoints of a server without metadata: ``/authorize``,
    ``/token`` and ``/register`` at the root of the MCP server's origin."""
    base = _base(server_url)
    return {
        "issuer": base,
        "authorization_endpoint": f"{base}/authorize",
        "token_endpoint": f"{base}/token",
        "registration_endpoint": f"{base}/register",
    }


# -- validation ---------------------------------------------------------------------------


def check_protected_resource_metadata(document: Any, server_url: str, source: str,
                                      *, policy: FetchPolicy) -> Dict[str, Any]:
    """Validate RFC 9728 metadata fetched from ``source`` for ``server_url``.

    Returns the document. Raises:
        AuthError: not a JSON object, its ``resource`` does not match the server (the
            client must not authorize against it), it names no authorization server, or
            the one it names breaks ``policy``.
    """
    if not isinstance(document, dict):
        raise AuthError(f"the protected resource metadata at {source} is not a JSON object")
    resource = document.get("resource")
    if not isinstance(resource, str) or not resource:
        raise AuthError(f"the protected resource metadata at {source} has no 'resource'")
    if not resource_matches(resource, server_url):
        raise AuthError(
            f"the protected resource metadata at {source} is for {excerpt(resource, 200)!r}, "
            f"not for {canonical_resource(server_url)!r}: refusing to authorize")
    servers = document.get("authorization_servers")
    if (not isinstance(servers, list) or not servers
            or not all(isinstance(item, str) and item for item in servers)):
        raise AuthError(f"the protected resource metadata at {source} lists no "
                        "authorization_servers")
    for item in servers[:1]:
        policy.check_url(item, "authorization server")
    return document


def _same_issuer(advertised: str, expected: str) -> bool:
    # RFC 8414 3.3 asks for identical strings; a lone trailing slash is forgiven because
    # the well-known URL built from either form is the same.
    return advertised == expected or advertised.rstrip("/") == expected.rstrip("/")


def check_authorization_server_metadata(
    document: Any, issuer: str, source: str, *, need_authorization_endpoint: bool,
    policy: FetchPolicy, legacy: bool = False,
) -> Dict[str, Any]:
    """Validate RFC 8414 / OpenID Connect metadata fetched from ``source`` for ``issuer``.

    ``legacy``: the metadata of a 2025-03-26 server without protected resource metadata,
    fetched from the root of the MCP server's origin. That revision has no issuer to
    compare with, so the document's ``issuer`` need only be on the same origin.

    Returns the document. Raises:
        AuthError: not a JSON object, its ``issuer`` is not the one the URL was built from
            (the metadata must not be used), or an endpoint is missing or breaks
            ``policy``.
    """
    if not isinstance(document, dict):
        raise AuthError(f"the authorization server metadata at {source} is not a JSON object")
    advertised = document.get("issuer")
    # A 2025-03-26 server's metadata need only name an issuer on the same origin.
    legacy_ok = (legacy and isinstance(advertised, str)
                 and origin_of(advertised) == origin_of(issuer))
    if not legacy_ok and (not isinstance(advertised, str)
                          or not _same_issuer(advertised, issuer)):
        raise AuthError(
            f"the authorization server metadata at {source} names the issuer "
            f"{excerpt(advertised, 200)!r}, not {excerpt(issuer, 200)!r}: not using it")
    needed = ["token_endpoint"]
    if need_authorization_endpoint:
        needed.append("authorization_endpoint")
    for key in needed:
        value = document.get(key)
        if not isinstance(value, str) or not value:
            raise AuthError(f"the authorization server metadata at {source} has no {key}")
    for key in ("authorization_endpoint", "token_endpoint", "registration_endpoint"):
        value = document.get(key)
        if isinstance(value, str) and value:
            policy.check_url(value, key.replace("_", " "))
    return document


def check_pkce_support(metadata: Mapping[str, Any], source: str) -> None:
    """Refuse an authorization server whose metadata does not advertise PKCE ``S256``.

    Raises:
        AuthError: ``code_challenge_methods_supported`` is absent or lacks ``S256``.
    """
    methods = metadata.get("code_challenge_methods_supported")
    if not isinstance(methods, list) or "S256" not in methods:
        raise AuthError(f"the authorization server at {source} does not advertise PKCE S256 "
                        "(code_challenge_methods_supported): refusing to proceed")


# -- scopes -------------------------------------------------------------------------------


def split_scope(scope: Any) -> List[str]:
    """The scopes of a space-separated ``scope`` value (or a list), without duplicates."""
    if isinstance(scope, str):
        items = scope.split()
    elif isinstance(scope, (list, tuple)):
        items = [item for item in scope if isinstance(item, str) and item]
    else:
        items = []
    return list(dict.fromkeys(items))


def join_scopes(scopes: Iterable[str]) -> str:
    return " ".join(dict.fromkeys(scope for scope in scopes if scope))


def select_scope(
    *,
    configured: Optional[str],
    challenged: Optional[str],
    scopes_supported: Any,
    previous: Optional[str] = None,
    offline_access: bool = False,
    as_scopes_supported: Any = None,
) -> Optional[str]:
    """The ``scope`` to request, or None to omit it.

    A scope configured by the user wins. Else the challenge's scope, else every scope of
    the protected resource's ``scopes_supported``, else none. A re-authorization (step-up)
    keeps what was requested before (the union). ``offline_access`` is added when wanted
    and the authorization server lists it, and there is a scope to add it to.
    """
    if configured:
        chosen = split_scope(configured)
    elif challenged:
        chosen = split_scope(challenged)
    else:
        chosen = split_scope(scopes_supported)
    if previous:
        chosen = split_scope(previous) + [s for s in chosen if s not in split_scope(previous)]
    if (offline_access and chosen and "offline_access" not in chosen
            and "offline_access" in split_scope(as_scopes_supported)):
        chosen.append("offline_access")
    return join_scopes(chosen) or None


# -- the authorization response -----------------------------------------------------------


def callback_params(callback_url: str) -> Dict[str, str]:
    """The query parameters of a redirect back to the client (first value of each)."""
    params: Dict[str, str] = {}
    for key, value in parse_qsl(urlsplit(callback_url).query, keep_blank_values=True):
        params.setdefault(key, value)
    return params


def check_authorization_response(
    params: Mapping[str, str],
    *,
    expected_state: str,
    expected_issuer: Optional[str],
    iss_supported: bool,
) -> str:
    """Validate an authorization response; return its ``code``.

    ``state`` must match. ``iss`` (RFC 9207) is compared with the recorded issuer by
    simple string comparison, no normalization, whenever present; when the authorization
    server advertised ``authorization_response_iss_parameter_supported`` it must be
    present. Only then are ``error`` and ``code`` looked at.

    Raises:
        AuthError: the response fails a check, or carries an error, or no code.
    """
    state = params.get("state")
    if state != expected_state:
        raise AuthError("the authorization response's state does not match the request "
                        "(possible CSRF): refusing it")
    iss = params.get("iss")
    if iss is not None:
        if expected_issuer is None or iss != expected_issuer:
            raise AuthError(
                f"the authorization response comes from issuer {excerpt(iss, 200)!r}, not "
                f"{excerpt(expected_issuer, 200)!r} (RFC 9207 mix-up protection): refusing it")
    elif iss_supported:
        raise AuthError("the authorization server advertises the iss parameter but its "
                        "response has none (RFC 9207): refusing it")
    error = params.get("error")
    if error:
        description = params.get("error_description")
        detail = f": {excerpt(description, 300)}" if description else ""
        raise AuthError(f"authorization was refused ({excerpt(error, 60)}){detail}")
    code = params.get("code")
    if not code:
        raise AuthError("the authorization response carries no code")
    return code


def scrub(text: str, secrets: Sequence[Optional[str]]) -> str:
    """``text`` with every known secret value replaced by ``***``."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text
