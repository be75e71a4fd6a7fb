"""Per-page tokens: what ties an app's frame and its calls to the page that served it.

A web host serves an app page, then the app's frame and its bridge calls arrive as new
requests, possibly in another worker process. The page's token carries, signed, what
those requests may do: the server, the tool whose app it is, the app's resource, an
expiry and a nonce of its own (each page has its own token). Signed with HMAC-SHA256
under a key derived from the web framework's secret, so any process of the site checks
it and nobody without the secret makes one. Standard library only.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass
from typing import Any, Optional, Union

from ._errors import AppError

__all__ = ["MAX_TOKEN_LENGTH", "PageClaims", "PageTokens"]

#: The longest token looked at; a longer one is refused unread.
MAX_TOKEN_LENGTH = 8192


@dataclass(frozen=True)
class PageClaims:
    """What a page token allows: the app of ``tool`` on ``server``, whose resource is
    ``uri``, until ``expires`` (seconds since the epoch); ``nonce`` names the page."""

    server: str
    tool: str
    uri: str
    expires: int
    nonce: str


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class PageTokens:
    """Issues and checks page tokens.

    Args:
        secret: the site's secret (Flask's ``SECRET_KEY``, Django's ``SECRET_KEY``); the
            signing key is derived from it and ``salt``, so the tokens are worth
            nothing elsewhere.
        max_age: seconds a token stays valid (default one hour): past it, the page must
            be loaded again.
        salt: what tells these tokens from the site's other signed values.

    Immutable after construction; can be shared between threads.

    Raises:
        ValueError: ``secret`` is empty, or ``max_age`` is not positive.
    """

    def __init__(self, secret: Union[str, bytes], *, max_age: float = 3600.0,
                 salt: str = "mcp_sync.apps.page-token") -> None:
        raw = secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)
        if not raw:
            raise ValueError("page tokens need a secret (the site's SECRET_KEY)")
        if not max_age > 0:
            raise ValueError("max_age must be a positive number of seconds")
        self.max_age = float(max_age)
        self._key = hmac.new(raw, salt.encode("utf-8"), hashlib.sha256).digest()

    def _sign(self, payload: str) -> str:
        return _b64(hmac.new(self._key, payload.encode("ascii"), hashlib.sha256).digest())

    def issue(self, server: str, tool: str, uri: str, *, now: Optional[float] = None) -> str:
        """A new token for the app of ``tool`` on ``server`` (resource ``uri``), valid
        for ``max_age`` seconds from ``now`` (default: the current time)."""
        expires = int((time.time() if now is None else now) + self.max_age)
        body = {"s": server, "t": tool, "u": uri, "x": expires, "n": secrets.token_hex(16)}
        payload = _b64(json.dumps(body, separators=(",", ":")).encode("utf-8"))
        return f"{payload}.{self._sign(payload)}"

    def verify(self, token: Any, *, now: Optional[float] = None) -> PageClaims:
        """The claims of ``token``, checked.

        Raises:
            AppError: the token is not a string of the token's shape, its signature is
                not this site's, or it expired.
        """
        if (not isinstance(token, str) or not token or len(token) > MAX_TOKEN_LENGTH
                or not token.isascii()):
            raise AppError("page token refused: missing or malformed")
        payload, _, signature = token.partition(".")
        if not payload or not signature or not hmac.compare_digest(
                signature.encode("ascii"), self._sign(payload).encode("ascii")):
            raise AppError("page token refused: bad signature")
        try:
            body = json.loads(_unb64(payload))
            claims = PageClaims(server=body["s"], tool=body["t"], uri=body["u"],
                                expires=body["x"], nonce=body["n"])
        except (ValueError, KeyError, TypeError) as exc:  # signed by us: never, but checked
            raise AppError("page token refused: malformed") from exc
        if not all(isinstance(v, str) for v in (claims.server, claims.tool, claims.uri)) or \
                not isinstance(claims.expires, int):
            raise AppError("page token refused: malformed")
        if claims.expires < (time.time() if now is None else now):
            raise AppError("page token refused: expired (load the page again)")
        return claims
