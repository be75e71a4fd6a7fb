"""An OAuth 2.1 authorization server and an MCP server it protects, for tests.

Two threaded HTTP servers on 127.0.0.1, each on its own port (so on its own origin):

* the protected MCP server at ``mcp_url`` (``/mcp``): JSON-RPC over POST with JSON
  replies (``initialize``, ``ping``, ``tools/list``, ``tools/call``; notifications get
  202; ``server/discover`` gets "method not found", so a client probing for 2026-07-28
  falls back to ``initialize``). Every request needs a valid bearer token issued for this
  resource, else ``401`` with a ``WWW-Authenticate: Bearer`` challenge; a tool whose
  scope the token lacks gets ``403 insufficient_scope``. It also serves the protected
  resource metadata (RFC 9728) where ``prm`` says.
* the authorization server at ``issuer``: metadata (RFC 8414 or OpenID Connect, where
  ``metadata`` says), ``/authorize`` (approves at once: redirects with a code, ``state``
  and ``iss``), ``/token`` (authorization code with PKCE S256, refresh token with
  rotation, client credentials; client_secret_basic / _post / none) and ``/register``
  (RFC 7591).

Both listen on 127.0.0.1; ``host=`` (and ``as_host=`` for the authorization server) is the
name their URLs use, for a test that resolves it to 127.0.0.1 (a "remote" server), and
``tls=`` (an ``ssl.SSLContext`` of tests/servers/tls.py) serves them over HTTPS.

With ``prm="none"`` the server is a 2025-03-26 one: no protected resource metadata, and
the authorization server lives on the MCP server's own origin (``metadata="none"``: not
even metadata, only the default ``/authorize``, ``/token`` and ``/register``).

Knobs are attributes, set before the client does what they apply to; records
(``requests``, ``authorizations``, ``token_requests``, ``registrations``) let a test see
what the client did. ``revoke_access_tokens()`` makes every access token invalid (the
refresh tokens stay valid). Threads are named ``oauth-test-*``, outside the ``mcp-sync``
names the leak check watches.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Set, Tuple
from urllib.parse import parse_qsl, unquote_plus, urlencode, urlsplit

from .tls import wrap_listener

__all__ = ["OAuthTestServer", "Seen"]

TOOLS = [
    {"name": "echo", "inputSchema": {"type": "object"}},
    {"name": "write_note", "inputSchema": {"type": "object"}},
    {"name": "admin", "inputSchema": {"type": "object"}},
]


class Seen:
    """One HTTP request either server received."""

    def __init__(self, server: str, method: str, target: str, headers: Dict[str, str],
                 body: bytes) -> None:
        self.server = server  # "mcp" or "as"
        self.method = method
        self.target = target  # path and query, as sent
        self.path = urlsplit(target).path
        self.headers = headers  # keys lower-cased
        self.body = body

    def __repr__(self) -> str:
        return f"<{self.server} {self.method} {self.path}>"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    role = "mcp"
    owner: OAuthTestServer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: the records say what happened

    def _read(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, status: int, body: Any = None, headers: Optional[Dict[str, str]] = None,
              *, content_type: str = "application/json") -> None:
        data = b"" if body is None else (body if isinstance(body, bytes)
                                         else json.dumps(body).encode())
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if data:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)

    def _handle(self, method: str) -> None:
        body = self._read() if method == "POST" else b""
        headers = {key.lower(): value for key, value in self.headers.items()}
        seen = Seen(self.role, method, self.path, headers, body)
        self.owner.record(seen)
        try:
            self.owner.route(self, seen)
        except Exception as exc:  # noqa: BLE001 - a bug here: answer 500, never hang
            self._send(500, {"error": "server_error", "error_description": repr(exc)})

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_DELETE(self) -> None:
        self._handle("DELETE")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up: nothing to report


def _s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class OAuthTestServer:
    """See the module docstring. Use as a context manager (or ``start()``/``stop()``)."""

    def __init__(self, *, prm: str = "header", metadata: str = "oauth",
                 issuer_path: str = "", host: str = "127.0.0.1", as_host: Optional[str] = None,
                 tls: Optional[ssl.SSLContext] = None) -> None:
        assert prm in ("header", "path", "root", "none"), prm
        assert metadata in ("oauth", "openid", "openid-append", "none"), metadata
        self.prm = prm
        self.metadata = metadata
        self.issuer_path = issuer_path.rstrip("/")
        self.host = host
        self.as_host = as_host or host
        self.tls = tls
        self.scheme = "https" if tls is not None else "http"
        # -- knobs
        self.prm_resource: Optional[str] = None  # what the PRM claims; default mcp_url
        self.challenge_scope: Optional[str] = None
        self.scopes_supported: Optional[List[str]] = None  # in the PRM
        self.as_scopes_supported: Optional[List[str]] = None
        self.token_lifetime: Optional[int] = 3600
        self.refresh_tokens = True
        self.iss_mode = "correct"  # correct | wrong | omit | normalized
        self.iss_supported: Optional[bool] = True
        self.pkce_methods: Optional[List[str]] = ["S256"]
        self.auth_methods: List[str] = ["none"]
        self.registration = True
        self.cimd_supported = False
        self.metadata_issuer: Optional[str] = None
        self.tool_scopes: Dict[str, str] = {"write_note": "mcp:write", "admin": "mcp:admin"}
        self.never_grant: Set[str] = {"mcp:admin"}
        self.clients: Dict[str, Dict[str, Any]] = {}  # client_id -> {secret, redirect_uris}
        self.workload_key: Any = None  # verifies JWT-bearer assertions (a public key)
        # Where the server sends the client (a hostile server's choices):
        self.prm_authorization_servers: Optional[List[str]] = None  # default [issuer]
        self.challenge_resource_metadata: Optional[str] = None  # default prm_url (header)
        self.metadata_overrides: Dict[str, Any] = {}  # merged into the AS metadata
        self.redirects: Dict[Tuple[str, str], str] = {}  # (role, path) -> 302 Location
        self.prm_paths: Set[str] = set()  # more paths of the MCP server serving the PRM
        self.challenge_cookie: Optional[str] = None  # a Set-Cookie sent with every 401
        # -- records (guarded by _lock; _changed is notified on every request)
        # Reentrant: wait_for() predicates call seen(), which takes it again.
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self.requests: List[Seen] = []
        self.authorizations: List[Dict[str, str]] = []
        self.token_requests: List[Dict[str, Any]] = []
        self.registrations: List[Dict[str, Any]] = []
        self._codes: Dict[str, Dict[str, Any]] = {}
        self._tokens: Dict[str, Dict[str, Any]] = {}
        self._refresh: Dict[str, Dict[str, Any]] = {}
        self._servers: List[_Server] = []
        self._threads: List[threading.Thread] = []
        self._mcp_port = 0
        self._as_port = 0

    # -- lifecycle ----------------------------------------------------------------------

    def _serve(self, role: str) -> int:
        handler = type(f"_{role}Handler", (_Handler,), {"role": role, "owner": self})
        server = _Server(("127.0.0.1", 0), handler)
        if self.tls is not None:
            server.socket = wrap_listener(server.socket, self.tls)
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                  name=f"oauth-test-{role}", daemon=True)
        thread.start()
        self._servers.append(server)
        self._threads.append(thread)
        return int(server.server_address[1])

    def start(self) -> OAuthTestServer:
        self._mcp_port = self._serve("mcp")
        self._as_port = self._mcp_port if self.legacy else self._serve("as")
        return self

    def stop(self) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()
        for thread in self._threads:
            thread.join(5.0)

    def __enter__(self) -> OAuthTestServer:
        return self.start()

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    @property
    def legacy(self) -> bool:
        return self.prm == "none"

    @property
    def mcp_origin(self) -> str:
        return f"{self.scheme}://{self.host}:{self._mcp_port}"

    @property
    def mcp_url(self) -> str:
        return f"{self.mcp_origin}/mcp"

    @property
    def as_origin(self) -> str:
        return f"{self.scheme}://{self.as_host}:{self._as_port}"

    @property
    def issuer(self) -> str:
        return f"{self.as_origin}{self.issuer_path}"

    @property
    def prm_url(self) -> str:
        if self.prm == "root":
            return f"{self.mcp_origin}/.well-known/oauth-protected-resource"
        if self.prm == "header":
            return f"{self.mcp_origin}/meta/resource.json"
        return f"{self.mcp_origin}/.well-known/oauth-protected-resource/mcp"

    # -- records and controls -----------------------------------------------------------

    def record(self, seen: Seen) -> None:
        with self._lock:
            self.requests.append(seen)
            self._changed.notify_all()

    def wait_for(self, predicate: Any, timeout: float = 10.0) -> bool:
        """Wait until ``predicate(self)`` holds (checked at every request received)."""
        with self._changed:
            return self._changed.wait_for(lambda: predicate(self), timeout)

    def seen(self, server: str, path: Optional[str] = None) -> List[Seen]:
        with self._lock:
            return [r for r in self.requests
                    if r.server == server and (path is None or r.path == path)]

    def revoke_access_tokens(self) -> None:
        with self._lock:
            self._tokens.clear()

    def add_client(self, client_id: str, secret: Optional[str] = None,
                   redirect_uris: Optional[List[str]] = None, public_key: Any = None) -> None:
        """A pre-registered client (``public_key``: it authenticates with private_key_jwt)."""
        self.clients[client_id] = {"secret": secret, "redirect_uris": redirect_uris,
                                   "public_key": public_key}

    def issue_token(self, client_id: str = "tester", scopes: Optional[List[str]] = None) -> str:
        """An access token for the MCP server, issued without any flow."""
        return str(self._issue(client_id, scopes or [], self.prm_resource or self.mcp_url,
                               refresh=False)["access_token"])

    # -- routing ------------------------------------------------------------------------

    def route(self, handler: _Handler, seen: Seen) -> None:
        path = seen.path
        location = self.redirects.get((handler.role, path))
        if location is not None:
            return handler._send(302, None, {"Location": location})
        if handler.role == "mcp" and path == "/mcp":
            return self._mcp(handler, seen)
        if handler.role == "mcp" and seen.method == "GET" and self._is_prm_path(path):
            return self._prm(handler)
        if handler.role == "as" or self.legacy:
            prefix = self.issuer_path if not self.legacy else ""
            if seen.method == "GET" and path in self._metadata_paths():
                return handler._send(200, self._as_metadata())
            if path == f"{prefix}/authorize" and seen.method == "GET":
                return self._authorize(handler, seen)
            if path == f"{prefix}/token" and seen.method == "POST":
                return self._token(handler, seen)
            if path == f"{prefix}/register" and seen.method == "POST" and self.registration:
                return self._register(handler, seen)
        handler._send(404, {"error": "not_found"})

    def _is_prm_path(self, path: str) -> bool:
        if self.legacy:
            return False
        return f"{self.mcp_origin}{path}" == self.prm_url or path in self.prm_paths

    def _metadata_paths(self) -> List[str]:
        path = self.issuer_path if not self.legacy else ""
        if self.metadata == "none":
            return []
        if self.metadata == "oauth":
            return [f"/.well-known/oauth-authorization-server{path}"]
        if self.metadata == "openid":
            return [f"/.well-known/openid-configuration{path}"]
        return [f"{path}/.well-known/openid-configuration"]

    # -- the protected resource -----------------------------------------------------------

    def _prm(self, handler: _Handler) -> None:
        document: Dict[str, Any] = {
            "resource": self.prm_resource or self.mcp_url,
            "authorization_servers": self.prm_authorization_servers or [self.issuer]}
        if self.scopes_supported is not None:
            document["scopes_supported"] = self.scopes_supported
        handler._send(200, document)

    def _challenge(self, *, error: Optional[str] = None, scope: Optional[str] = None) -> str:
        parts = []
        if error:
            parts.append(f'error="{error}"')
        scope = scope or self.challenge_scope
        if scope:
            parts.append(f'scope="{scope}"')
        if self.challenge_resource_metadata is not None:
            parts.append(f'resource_metadata="{self.challenge_resource_metadata}"')
        elif self.prm == "header":
            parts.append(f'resource_metadata="{self.prm_url}"')
        return "Bearer " + ", ".join(parts) if parts else "Bearer"

    def _mcp(self, handler: _Handler, seen: Seen) -> None:
        authorization = seen.headers.get("authorization", "")
        token = authorization[7:] if authorization.lower().startswith("bearer ") else None
        with self._lock:
            grant = self._tokens.get(token) if token else None
        if grant is not None and grant["expires_at"] is not None and (
                time.time() >= grant["expires_at"]):
            grant = None
        if grant is not None and grant["resource"] != (self.prm_resource or self.mcp_url):
            grant = None
        if grant is None:
            error = "invalid_token" if token else None
            refusal = {"WWW-Authenticate": self._challenge(error=error)}
            if self.challenge_cookie is not None:
                refusal["Set-Cookie"] = self.challenge_cookie
            return handler._send(401, {"error": error or "unauthorized"}, refusal)
        if seen.method != "POST":
            return handler._send(405, {"error": "method_not_allowed"}, {"Allow": "POST"})
        message = json.loads(seen.body or b"{}")
        method = message.get("method")
        if "id" not in message:
            return handler._send(202)
        params = message.get("params") or {}
        if method == "tools/call":
            needed = self.tool_scopes.get(params.get("name"))
            if needed and needed not in grant["scopes"]:
                return handler._send(
                    403, {"error": "insufficient_scope"},
                    {"WWW-Authenticate": self._challenge(error="insufficient_scope",
                                                         scope=needed)})
        handler._send(200, {"jsonrpc": "2.0", "id": message["id"],
                            **self._answer(method, params, grant)})

    def _answer(self, method: Any, params: Dict[str, Any],
                grant: Dict[str, Any]) -> Dict[str, Any]:
        if method == "initialize":
            return {"result": {
                "protocolVersion": params.get("protocolVersion") or "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "oauth-test", "version": "1"},
            }}
        if method == "ping":
            return {"result": {}}
        if method == "tools/list":
            return {"result": {"tools": TOOLS}}
        if method == "tools/call":
            text = f"{params.get('name')} by {grant['client_id']} with {' '.join(grant['scopes'])}"
            return {"result": {"content": [{"type": "text", "text": text}]}}
        return {"error": {"code": -32601, "message": f"Method not found: {method}"}}

    # -- the authorization server -----------------------------------------------------------

    def _as_metadata(self) -> Dict[str, Any]:
        base = self.as_origin + (self.issuer_path if not self.legacy else "")
        document: Dict[str, Any] = {
            "issuer": self.metadata_issuer or (self.mcp_origin if self.legacy else self.issuer),
            "authorization_endpoint": f"{base}/authorize",
            "token_endpoint": f"{base}/token",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token",
                                      "client_credentials"],
            "token_endpoint_auth_methods_supported": self.auth_methods,
        }
        if self.registration:
            document["registration_endpoint"] = f"{base}/register"
        if self.pkce_methods is not None:
            document["code_challenge_methods_supported"] = self.pkce_methods
        if self.iss_supported is not None:
            document["authorization_response_iss_parameter_supported"] = self.iss_supported
        if self.as_scopes_supported is not None:
            document["scopes_supported"] = self.as_scopes_supported
        if self.cimd_supported:
            document["client_id_metadata_document_supported"] = True
        document.update(self.metadata_overrides)
        return document

    def _recorded_issuer(self) -> str:
        document = self._as_metadata()
        return str(document["issuer"])

    def _authorize(self, handler: _Handler, seen: Seen) -> None:
        query = dict(parse_qsl(urlsplit(seen.target).query))
        with self._lock:
            self.authorizations.append(query)
        client_id = query.get("client_id", "")
        redirect_uri = query.get("redirect_uri", "")
        client = self.clients.get(client_id)
        known = client is not None or (self.cimd_supported and client_id.startswith("https://"))
        if not known:
            return handler._send(400, {"error": "invalid_client"})
        registered = (client or {}).get("redirect_uris")
        if registered is not None and redirect_uri not in registered:
            return handler._send(400, {"error": "invalid_request",
                                       "error_description": "unregistered redirect_uri"})
        if query.get("response_type") != "code" or query.get("code_challenge_method") != "S256" \
                or not query.get("code_challenge"):
            return handler._send(400, {"error": "invalid_request"})
        code = secrets.token_urlsafe(16)
        granted = [s for s in (query.get("scope") or "").split() if s not in self.never_grant]
        with self._lock:
            self._codes[code] = {"client_id": client_id, "redirect_uri": redirect_uri,
                                 "challenge": query["code_challenge"], "scopes": granted,
                                 "resource": query.get("resource")}
        params = {"code": code}
        if "state" in query:
            params["state"] = query["state"]
        issuer = self._recorded_issuer()
        iss = {"correct": issuer, "wrong": "https://evil.example.com",
               "normalized": issuer + "/", "omit": None}[self.iss_mode]
        if iss is not None:
            params["iss"] = iss
        handler._send(302, None, {"Location": f"{redirect_uri}?{urlencode(params)}"})

    def _client_auth(self, seen: Seen, form: Dict[str, str],
                     record: Dict[str, Any]) -> Optional[str]:
        """The authenticated client's ID, or None when authentication fails."""
        authorization = seen.headers.get("authorization", "")
        if "client_assertion" in form:
            return self._assertion_auth(form, record)
        if authorization.startswith("Basic "):
            decoded = base64.b64decode(authorization[6:]).decode()
            client_id, _, secret = decoded.partition(":")
            client_id, secret = unquote_plus(client_id), unquote_plus(secret)
            method = "client_secret_basic"
        elif "client_secret" in form:
            client_id, secret = form.get("client_id", ""), form["client_secret"]
            method = "client_secret_post"
        else:
            client_id, secret = form.get("client_id", ""), None
            method = "none"
        record["auth_method"], record["client_id"] = method, client_id
        client = self.clients.get(client_id)
        if client is None:
            return client_id if self.cimd_supported and client_id.startswith("https://") \
                and method == "none" else None
        if client["secret"] is not None and secret != client["secret"]:
            return None
        return client_id

    def _assertion_auth(self, form: Dict[str, str], record: Dict[str, Any]) -> Optional[str]:
        import jwt

        client_id = form.get("client_id", "")
        record["auth_method"], record["client_id"] = "private_key_jwt", client_id
        client = self.clients.get(client_id)
        assertion_type = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
        if (client is None or client.get("public_key") is None
                or form.get("client_assertion_type") != assertion_type):
            return None
        try:
            claims = jwt.decode(form["client_assertion"], client["public_key"],
                                algorithms=["ES256", "RS256"], audience=self.issuer)
        except jwt.PyJWTError:
            return None
        return client_id if claims.get("iss") == claims.get("sub") == client_id else None

    def _workload(self, assertion: str) -> Optional[str]:
        """The subject of a JWT-bearer assertion signed by ``workload_key``, or None."""
        import jwt

        if self.workload_key is None:
            return None
        try:
            claims = jwt.decode(assertion, self.workload_key, algorithms=["ES256"],
                                audience=self.issuer)
        except jwt.PyJWTError:
            return None
        return str(claims.get("sub") or "") or None

    def _token(self, handler: _Handler, seen: Seen) -> None:
        form = dict(parse_qsl(seen.body.decode()))
        record: Dict[str, Any] = {"form": form}
        with self._lock:
            self.token_requests.append(record)
        client_id = self._client_auth(seen, form, record)
        anonymous = not form.get("client_id") and "authorization" not in seen.headers
        if client_id is None and not (anonymous and form.get("grant_type", "").endswith(
                ":jwt-bearer")):
            return handler._send(401, {"error": "invalid_client"})
        grant_type = form.get("grant_type")
        if grant_type == "authorization_code":
            with self._lock:
                code = self._codes.pop(form.get("code", ""), None)
            if (code is None or code["client_id"] != client_id
                    or code["redirect_uri"] != form.get("redirect_uri")
                    or _s256(form.get("code_verifier", "")) != code["challenge"]
                    or code["resource"] != form.get("resource")):
                return handler._send(400, {"error": "invalid_grant"})
            scopes, resource = code["scopes"], code["resource"]
        elif grant_type == "refresh_token":
            with self._lock:
                old = self._refresh.pop(form.get("refresh_token", ""), None)
            if old is None or old["client_id"] != client_id:
                return handler._send(400, {"error": "invalid_grant"})
            scopes, resource = old["scopes"], form.get("resource") or old["resource"]
        elif grant_type == "urn:ietf:params:oauth:grant-type:jwt-bearer":
            subject = self._workload(form.get("assertion", ""))
            if subject is None:
                return handler._send(400, {"error": "invalid_grant"})
            client_id = subject
            scopes = [s for s in (form.get("scope") or "").split() if s not in self.never_grant]
            resource = form.get("resource")
        elif grant_type == "client_credentials":
            scopes = [s for s in (form.get("scope") or "").split() if s not in self.never_grant]
            resource = form.get("resource")
        else:
            return handler._send(400, {"error": "unsupported_grant_type"})
        handler._send(200, self._issue(client_id, scopes, resource,
                                       refresh=grant_type != "client_credentials"))

    def _issue(self, client_id: str, scopes: List[str], resource: Optional[str],
               *, refresh: bool) -> Dict[str, Any]:
        access = "at-" + secrets.token_urlsafe(16)
        lifetime = self.token_lifetime
        grant = {"client_id": client_id, "scopes": scopes, "resource": resource,
                 "expires_at": time.time() + lifetime if lifetime else None}
        response: Dict[str, Any] = {"access_token": access, "token_type": "Bearer",
                                    "scope": " ".join(scopes)}
        if lifetime:
            response["expires_in"] = lifetime
        with self._lock:
            self._tokens[access] = grant
            if refresh and self.refresh_tokens:
                refresh_token = "rt-" + secrets.token_urlsafe(16)
                self._refresh[refresh_token] = grant
                response["refresh_token"] = refresh_token
        return response

    def _register(self, handler: _Handler, seen: Seen) -> None:
        request = json.loads(seen.body or b"{}")
        with self._lock:
            self.registrations.append(request)
        client_id = "client-" + secrets.token_urlsafe(8)
        method = request.get("token_endpoint_auth_method") or "client_secret_basic"
        if method not in self.auth_methods:
            method = self.auth_methods[0]
        secret = None if method == "none" else "secret-" + secrets.token_urlsafe(16)
        self.add_client(client_id, secret, list(request.get("redirect_uris") or []))
        response = {"client_id": client_id, "token_endpoint_auth_method": method,
                    "redirect_uris": request.get("redirect_uris") or []}
        if secret:
            response["client_secret"] = secret
        handler._send(201, response)
