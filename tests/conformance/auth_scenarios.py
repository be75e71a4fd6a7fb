"""The conformance client's driver for the ``auth/*`` scenarios (used by ``client.py``).

Every auth scenario is the same program: connect with :class:`mcp_sync.auth.OAuth`, list
the tools, call each one, close. What differs is the client's configuration, which comes
from the scenario's name and its ``MCP_CONFORMANCE_CONTEXT``:

* ``client_id``/``client_secret`` (+ ``issuer`` in 0.2.0): pre-registered credentials;
* ``auth/client-credentials-*``: the ``client_credentials`` grant, with the secret or the
  ``private_key_pem`` (``private_key_jwt``) the context gives;
* ``auth/wif-jwt-bearer``: the JWT-bearer grant with the context's ``valid_jwt``;
* ``idp_*`` in the context (enterprise-managed authorization, cross-app access): the ID
  token exchanged at the IdP for an ID-JAG, presented in the JWT-bearer grant;
* otherwise a public client, with a client ID metadata document URL for servers that
  support them (the suite expects exactly this URL) and dynamic registration for others.

The user-facing step is headless: the mock authorization server approves at once, so
GETting the authorization URL (redirects not followed) yields the callback URL.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Dict, Optional

import mcp_sync
from mcp_sync.auth import HeadlessFlow, IdJagExchange, OAuth, follow_redirect

log = logging.getLogger("conformance-client")

#: The client ID metadata document URL the suite's auth/basic-cimd expects.
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"


def make_oauth(scenario: str, context: Dict[str, Any]) -> OAuth:
    """The OAuth configuration a scenario calls for."""
    common: Dict[str, Any] = {
        "client_name": "mcp-sync-conformance",
        "timeout": 10.0,
        "authorization_timeout": 20.0,
    }
    if context.get("idp_token_endpoint"):  # enterprise-managed (cross-app) authorization
        exchange = IdJagExchange(str(context["idp_token_endpoint"]),
                                 str(context["idp_id_token"]),
                                 client_id=context.get("idp_client_id"), timeout=10.0)
        return OAuth.jwt_bearer(exchange, client_id=str(context["client_id"]),
                                client_secret=context.get("client_secret"), **common)
    if scenario == "auth/wif-jwt-bearer":
        return OAuth.jwt_bearer(str(context["valid_jwt"]), client_id=context.get("client_id"),
                                **common)
    if scenario.startswith("auth/client-credentials"):
        return OAuth.client_credentials(
            str(context["client_id"]), context.get("client_secret"),
            private_key=context.get("private_key_pem"),
            signing_algorithm=str(context.get("signing_algorithm") or "ES256"), **common)
    flow = HeadlessFlow(follow_redirect)
    if context.get("client_id"):
        return OAuth(client_id=str(context["client_id"]),
                     client_secret=context.get("client_secret"),
                     client_issuer=context.get("issuer"), flow=flow, **common)
    return OAuth(client_metadata_url=CLIENT_METADATA_URL, flow=flow, **common)


def run_auth(url: str, context: Dict[str, Any],
             connect: Callable[..., mcp_sync.Client],
             scenario: Optional[str] = None) -> None:
    """Connect with OAuth, list the tools and call each (a call may need more scope)."""
    name = scenario or str(context.get("name") or "")
    with make_oauth(name, context) as oauth, connect(url, auth=oauth) as client:
        log.info("connected at %s with OAuth", client.protocol_version)
        if client.server_capabilities.tools is not None:
            for tool in client.list_tools():
                result = client.call_tool(tool.name, {})
                log.info("%s: %s", tool.name, result.text)
