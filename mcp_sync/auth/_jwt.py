"""``private_key_jwt`` client authentication (RFC 7523), behind the optional extra
``mcp-sync-client[auth-jwt]`` (PyJWT with ``cryptography``)."""

from __future__ import annotations

import secrets
import time
from typing import Any

from ..exceptions import AuthError

__all__ = ["ASSERTION_TYPE", "client_assertion"]

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
# How long an assertion is valid: long enough for the token request, short enough that a
# leaked one is useless soon.
_LIFETIME = 300


def client_assertion(client_id: str, audience: str, private_key: Any, algorithm: str) -> str:
    """A signed JWT asserting ``client_id`` to the authorization server ``audience``.

    ``iss`` and ``sub`` are the client ID, ``aud`` the authorization server's issuer,
    with a fresh ``jti``, ``iat`` and a five-minute ``exp``.

    Raises:
        AuthError: PyJWT (with cryptography) is not installed, or the key cannot sign.
    """
    try:
        import jwt
    except ImportError as exc:
        raise AuthError("private_key_jwt needs PyJWT with cryptography: pip install "
                        "'mcp-sync-client[auth-jwt]'") from exc
    now = int(time.time())
    claims = {"iss": client_id, "sub": client_id, "aud": audience, "iat": now,
              "exp": now + _LIFETIME, "jti": secrets.token_urlsafe(16)}
    try:
        token = jwt.encode(claims, private_key, algorithm=algorithm)
    except Exception as exc:  # PyJWT and cryptography raise many types for a bad key
        raise AuthError(f"cannot sign the client assertion with {algorithm}: "
                        f"{type(exc).__name__}") from exc
    return str(token)
