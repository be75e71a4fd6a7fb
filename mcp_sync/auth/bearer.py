"""``BearerAuth``: a fixed (or self-renewing) bearer token for every request."""

from __future__ import annotations

from typing import Callable, Union

import requests
import requests.auth

from ..exceptions import AuthError

__all__ = ["BearerAuth"]

TokenSource = Union[str, Callable[[], str]]


class BearerAuth(requests.auth.AuthBase):
    """Sends ``Authorization: Bearer <token>`` with every request.

    ``token`` is the token itself, or a callable that returns it; the callable is called
    for every request (cache inside it if fetching a token is expensive), so a token that
    rotates needs no reconnect. Works with every HTTP transport, and with plain
    ``requests`` too::

        client = mcp_sync.connect(url, auth=BearerAuth(os.environ["MCP_TOKEN"]))
        client = mcp_sync.connect(url, auth=BearerAuth(vault.current_token))

    Like every ``requests`` auth, the header is removed when a redirect leads to another
    host. The token never appears in ``repr()``.

    Can be shared between threads (as long as the callable can).

    Raises (when a request is prepared):
        AuthError: the token is empty, not a string, or holds a line break.
    """

    def __init__(self, token: TokenSource) -> None:
        if not callable(token) and not isinstance(token, str):
            raise TypeError("BearerAuth needs a token string or a callable returning one")
        self._token = token

    def token(self) -> str:
        """The token for the next request."""
        value = self._token() if callable(self._token) else self._token
        if not isinstance(value, str) or not value.strip():
            raise AuthError("the bearer token is empty or not a string")
        if any(char in value for char in "\r\n\x00"):
            raise AuthError("the bearer token holds a line break")
        return value.strip()

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        r.headers["Authorization"] = f"Bearer {self.token()}"
        return r

    def __repr__(self) -> str:
        source = "callable" if callable(self._token) else "token=***"
        return f"BearerAuth({source})"
