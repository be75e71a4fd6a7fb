"""Authorization for remote MCP servers, as ``requests`` auth objects.

Pass one as ``auth=`` to :func:`mcp_sync.connect`, :class:`~mcp_sync.HttpTransport` or
:class:`~mcp_sync.SseTransport`:

* :class:`BearerAuth`: a token you already have (or a callable returning it). A static
  ``headers={"Authorization": ...}`` works too.
* :class:`OAuth`: the MCP authorization flow (OAuth 2.1): discovery from the server's
  ``401`` (RFC 9728, RFC 8414, OpenID Connect), client identity (pre-registered, client
  ID metadata document, dynamic registration), authorization code with PKCE, ``state``,
  ``resource`` (RFC 8707) and ``iss`` checks (RFC 9207), refresh, step-up on ``403
  insufficient_scope``; or, with no user, the ``client_credentials`` grant
  (:meth:`OAuth.client_credentials`) or the JWT-bearer grant (:meth:`OAuth.jwt_bearer`:
  workload identity federation, or enterprise-managed authorization with
  :class:`IdJagExchange`).

The user-facing part of the authorization code flow is an :class:`AuthorizationFlow`:
:class:`LoopbackFlow` (browser and a loopback redirect, the default), :class:`WebAppFlow`
(a web application's views) or :class:`HeadlessFlow` (tests, automation). Tokens live in a
:class:`TokenStorage`: :class:`MemoryTokenStorage` (the default) or
:class:`FileTokenStorage` (one JSON file, mode 0600).

``import mcp_sync`` does not import this package (nor ``requests``); importing it does.
See ``docs/auth.md``.
"""

from __future__ import annotations

from .bearer import BearerAuth
from .enterprise import IdJagExchange
from .flows import (
    AuthorizationFlow,
    AuthorizationRequired,
    HeadlessFlow,
    LoopbackFlow,
    WebAppFlow,
    follow_redirect,
)
from .oauth import OAuth, OAuthError
from .storage import FileTokenStorage, MemoryTokenStorage, TokenStorage

__all__ = [
    "AuthorizationFlow",
    "AuthorizationRequired",
    "BearerAuth",
    "FileTokenStorage",
    "HeadlessFlow",
    "IdJagExchange",
    "LoopbackFlow",
    "MemoryTokenStorage",
    "OAuth",
    "OAuthError",
    "TokenStorage",
    "WebAppFlow",
    "follow_redirect",
]
