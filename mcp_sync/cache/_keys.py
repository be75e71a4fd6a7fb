"""Cache keys: the server's identity, the credentials' identity, and the store keys made
from them (hashes only: no URL, no token, no parameter is readable in a store).

Every key starts with :data:`KEY_PREFIX`, which names the format: a change of the key
material or of the entry format bumps :data:`FORMAT`, so a new version never reads what
an old one wrote (nor the other way round) and old entries age out by their TTL.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import uuid
import weakref
from typing import Any, Mapping, Optional, Sequence, Tuple, Union
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "FORMAT",
    "KEY_PREFIX",
    "KeyMaker",
    "command_identity",
    "credential_identity",
    "params_key",
    "url_identity",
]

#: The version of the key material and of the entry format.
FORMAT = 1
#: What every key starts with: short, ASCII, no space (memcached and Django's key rules).
KEY_PREFIX = f"mcp-sync:c{FORMAT}:"

# Domain separation: each kind of digest hashes a list whose first item names the kind.
_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True,
                            allow_nan=False).encode


def params_key(params: Optional[Mapping[str, Any]]) -> str:
    """The part of a request's params that affects its result, as canonical JSON: all of
    them but ``_meta`` (a progress token, trace context: never the answer); ``""`` when
    nothing is left. A ``cursor`` or a ``uri`` is kept.

    Raises:
        ValueError: params that are not JSON (a NaN, a set).
    """
    if not params:
        return ""
    kept = {name: value for name, value in params.items() if name != "_meta"}
    if not kept:
        return ""
    try:
        return _compact(kept)
    except TypeError as exc:
        raise ValueError(f"request params are not JSON: {exc}") from exc


def url_identity(url: str) -> str:
    """The identity of an HTTP server: its URL with the scheme and host in lower case,
    without a ``user:password@`` and without a fragment (path and query are kept: they
    may select the server). Credentials never enter it."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:  # a port that is not a number: keep the text as written
        port = None
        host = parts.netloc.rpartition("@")[2].lower()
    netloc = host if port is None else f"{host}:{port}"
    return "url:" + urlunsplit((parts.scheme.lower(), netloc, parts.path, parts.query, ""))


def command_identity(
    command: Union[str, Sequence[str]],
    *,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[str] = None,
) -> str:
    """The identity of a stdio server: a SHA-256 of its command line, working directory
    and environment (hashed: an environment often holds an API key)."""
    argv = [command] if isinstance(command, str) else list(command)
    material = _compact(["command", argv, cwd, sorted((env or {}).items())])
    return "command:" + hashlib.sha256(material.encode("utf-8")).hexdigest()


# The identities of auth objects mcp_sync cannot look into: random, one per object, kept
# as long as the object lives (never by id(), which a later object may reuse).
_object_identities: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
_object_lock = threading.Lock()


def _auth_material(auth: Any) -> Any:
    """What identifies the principal behind a ``requests`` auth value."""
    if auth is None:
        return None
    identity = getattr(auth, "cache_identity", None)
    if callable(identity):
        value = identity()
        if not isinstance(value, str) or not value:
            raise ValueError("an auth object's cache_identity() must return a non-empty str")
        return ["declared", value]
    if isinstance(auth, (tuple, list)) and all(isinstance(part, (str, bytes)) for part in auth):
        return ["pair", [part if isinstance(part, str) else part.decode("latin-1")
                         for part in auth]]
    import requests.auth

    if isinstance(auth, (requests.auth.HTTPBasicAuth, requests.auth.HTTPDigestAuth)):
        # HTTPProxyAuth is an HTTPBasicAuth; the class name keeps the kinds apart.
        return [type(auth).__name__, _text(auth.username), _text(auth.password)]
    # Anything else (an OAuth flow, a signing auth): an identity of its own, so that its
    # private entries are served to no other auth object, in no other process.
    try:
        with _object_lock:
            known = _object_identities.get(auth)
            if known is None:
                known = _object_identities[auth] = uuid.uuid4().hex
        return ["object", known]
    except TypeError:  # not weakly referenceable: a new identity at each call
        return ["object", uuid.uuid4().hex]


def _text(value: Any) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else str(value)


def credential_identity(
    *,
    headers: Optional[Mapping[str, str]] = None,
    auth: Any = None,
    secrets: Sequence[str] = (),
) -> str:
    """The identity of an authorization context, as a SHA-256: ``""`` when there are no
    credentials at all (one anonymous context), else a digest of

    * every header sent with each request (names in lower case): an ``Authorization``,
      a cookie or an API key header;
    * the ``requests`` auth: an object's own ``cache_identity()`` (a stable,
      non-secret name of the principal, which survives a token refresh) when it has one;
      a ``(user, password)`` pair; the user and password of ``HTTPBasicAuth`` and
      ``HTTPDigestAuth``; for any other object an identity of its own (its private
      entries are then served to no other object and no other process);
    * ``secrets``: anything else that selects the principal (a URL's ``user:password``).

    The digest is all that leaves this function: the token itself is never a key, a log
    line or a store value. A low-entropy password could be guessed back from its digest
    by someone who reads the store: give the cache a ``secret`` (see
    :class:`~mcp_sync.cache.ResponseCache`) to key every digest with it.

    Raises:
        ValueError: an auth object whose ``cache_identity()`` returns no string.
    """
    header_items = sorted((name.lower(), value) for name, value in (headers or {}).items())
    auth_material = _auth_material(auth)
    if not header_items and auth_material is None and not secrets:
        return ""
    material = _compact(["credentials", header_items, auth_material, list(secrets)])
    return "cred:" + hashlib.sha256(material.encode("utf-8")).hexdigest()


class KeyMaker:
    """Makes the store keys: a prefix naming the format, then a SHA-256 (or an HMAC with
    the cache's ``secret``) of the key material.

    Thread-safe (no state but the secret).
    """

    def __init__(self, secret: Optional[bytes] = None) -> None:
        self._secret = secret

    def _digest(self, parts: Sequence[Any]) -> str:
        material = _compact(list(parts)).encode("utf-8")
        if self._secret is None:
            return hashlib.sha256(material).hexdigest()
        return hmac.new(self._secret, material, hashlib.sha256).hexdigest()

    def entry(self, server: str, version: str, arm: Tuple[str, str], method: str,
              params: str, variant: str = "") -> str:
        """The key of one stored result: the server, the protocol version it was received
        under, its arm (``("public", "")``, or a scope and the authorization context),
        the method, the params that affect it and the client's ``variant``."""
        return KEY_PREFIX + "e:" + self._digest(
            ["entry", server, version, list(arm), method, params, variant])

    def generation(self, server: str, method: Optional[str] = None,
                   uri: Optional[str] = None) -> str:
        """The key of a generation token: the server's (``method`` None), one method's,
        or one resource's (``uri``)."""
        return KEY_PREFIX + "g:" + self._digest(["generation", server, method, uri])
