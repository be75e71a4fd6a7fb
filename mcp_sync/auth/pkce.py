"""PKCE (RFC 7636, method ``S256``) and the ``state`` value of the authorization code flow.

Pure functions: no I/O. The verifier and the state come from :mod:`secrets`.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from typing import Tuple

__all__ = ["code_challenge", "make_state", "make_verifier", "pkce_pair"]

# RFC 7636 4.1: 43 to 128 characters of [A-Z a-z 0-9 - . _ ~]. 64 random bytes give 86.
_VERIFIER_BYTES = 64


def make_verifier() -> str:
    """A fresh, high-entropy ``code_verifier`` (86 URL-safe characters)."""
    return secrets.token_urlsafe(_VERIFIER_BYTES)


def code_challenge(verifier: str) -> str:
    """The ``S256`` challenge of ``verifier``: BASE64URL(SHA256(ASCII(verifier))), unpadded."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def pkce_pair() -> Tuple[str, str]:
    """``(code_verifier, code_challenge)`` for one authorization request."""
    verifier = make_verifier()
    return verifier, code_challenge(verifier)


def make_state() -> str:
    """An unguessable ``state`` binding an authorization response to its request."""
    return secrets.token_urlsafe(32)
