"""Every HTTP request of the authorization flow: :class:`Fetcher`, under one
:class:`~mcp_sync.auth.policy.FetchPolicy`.

Discovery, registration and token requests (and the ID-JAG exchange) send nothing
themselves: they ask a :class:`Fetcher`, which

* checks each URL with the policy before anything is sent (:meth:`FetchPolicy.check_url`);
* follows the redirects of a GET itself (``requests`` never does), at most
  :data:`~mcp_sync.auth.policy.MAX_REDIRECTS`, each hop checked
  (:meth:`FetchPolicy.check_redirect`) before it is sent; a POST is never redirected;
* sends through its own connection adapter, whose connections check the address they
  reached before the request is written.

**Why on the connected socket.** Resolving a name, checking the answer and then letting
``requests`` connect would resolve it twice: a DNS answer can change in between (DNS
rebinding), and the check would pass an address the connection never used. So the check
is made where the connection is: :class:`_CheckedAdapter` is a ``requests`` transport
adapter whose ``urllib3`` pool manager makes its pools with connection classes of ours
(``PoolManager.pool_classes_by_scheme`` and ``HTTPConnectionPool.ConnectionCls``, both
meant for this); their ``connect()`` lets ``urllib3`` connect, then reads the peer address
of the socket (``getpeername()``) and asks the policy, before the request is written.
Nothing is resolved twice, nothing private of ``requests`` or ``urllib3`` is touched. For
``https`` the TLS handshake comes first (it is inside ``urllib3``'s ``connect()``): the
peer then gets a TLS hello and nothing of the request (no method, path, header or body).
A refused connection is closed and the fetch raises :class:`~mcp_sync.AuthError`.

**Through a proxy** (``HTTPS_PROXY``, ``session.proxies``) the proxy resolves names and
connects, so there is no socket of ours to check: the URL rule still holds (no private
address or loopback name in a URL), and the address rule is the proxy's to enforce.

**A session given by the user** (``OAuth(session=...)``) lends its configuration: headers,
cookies, ``verify``, ``cert``, proxies and the environment (``requests``'
``prepare_request`` and ``merge_environment_settings``); the request itself goes through
the fetcher's adapter, never one mounted on that session. No request of the flow carries
the session's ``auth`` or a ``.netrc`` password: only what the flow itself adds (a client
secret, to the token endpoint).
"""

from __future__ import annotations

import logging
from typing import Any, Dict, Mapping, Optional, Type
from urllib.parse import urldefrag, urljoin

import requests
import requests.adapters
import urllib3
import urllib3.connection

from ..transports.http._requests import close_session
from .policy import MAX_REDIRECTS, RULE_ADDRESS, RULE_FORM, RULE_HOPS, FetchPolicy

__all__ = ["Fetcher", "no_credentials"]

log = logging.getLogger(__name__)


def no_credentials(request: requests.PreparedRequest) -> requests.PreparedRequest:
    """The ``auth`` of every request of the flow: it adds nothing. (Given no auth,
    ``requests`` would add the session's, or the user's ``.netrc`` password for the URL's
    host: a server-chosen URL must not make the client send the user's credentials.)"""
    return request


class _AddressRefused(Exception):
    """A connection reached an address the policy refuses; the :class:`Fetcher` turns
    it into the refusal that names the URL and the rule (an :class:`AuthError`). A signal
    from inside urllib3's ``connect()`` to :meth:`Fetcher._send`, never raised to a
    caller, so it is no :class:`~mcp_sync.MCPError`."""


def _pool_classes(policy: FetchPolicy) -> Dict[str, Type[urllib3.HTTPConnectionPool]]:
    """``urllib3`` pool classes whose connections check their peer with ``policy``."""

    def check(connection: urllib3.connection.HTTPConnection) -> None:
        sock = connection.sock
        try:
            peer = str(sock.getpeername()[0]) if sock is not None else ""
        except OSError:
            peer = ""  # not connected after all: no address, refused unless allowed
        problem = policy.address_problem(connection.host, peer)
        if problem is not None:
            connection.close()
            raise _AddressRefused(problem)

    class CheckedHTTPConnection(urllib3.connection.HTTPConnection):
        def connect(self) -> None:
            super().connect()
            check(self)

    class CheckedHTTPSConnection(urllib3.connection.HTTPSConnection):
        def connect(self) -> None:
            super().connect()
            check(self)

    class CheckedHTTPConnectionPool(urllib3.HTTPConnectionPool):
        ConnectionCls = CheckedHTTPConnection

    class CheckedHTTPSConnectionPool(urllib3.HTTPSConnectionPool):
        ConnectionCls = CheckedHTTPSConnection

    return {"http": CheckedHTTPConnectionPool, "https": CheckedHTTPSConnectionPool}


class _CheckedAdapter(requests.adapters.HTTPAdapter):
    """A ``requests`` adapter whose direct connections are checked by a policy."""

    def __init__(self, policy: FetchPolicy) -> None:
        self._policy = policy  # before HTTPAdapter.__init__, which makes the pool manager
        super().__init__()

    def init_poolmanager(self, connections: int, maxsize: int, block: bool = False,
                         **pool_kwargs: Any) -> None:
        super().init_poolmanager(connections, maxsize, block, **pool_kwargs)
        self.poolmanager.pool_classes_by_scheme = _pool_classes(self._policy)


class Fetcher:
    """Sends the authorization flow's requests under ``policy`` (see the module docstring).

    Args:
        policy: the rule every URL, redirect hop and connection is checked by.
        timeout: the timeout of each request (connect and each read).
        session: a ``requests.Session`` whose configuration (headers, ``verify``,
            ``cert``, proxies, the environment) the requests take; by default one of the
            fetcher's own.

    Thread-safe (a ``requests`` adapter is). :meth:`close` releases its connections.
    """

    def __init__(self, policy: FetchPolicy, *, timeout: float,
                 session: Optional[requests.Session] = None) -> None:
        self.policy = policy
        self.timeout = timeout
        self._given = session
        self._adapter = _CheckedAdapter(policy)
        # Holds the adapter (so close_session closes its pools) and, without a session
        # of the user's, the configuration: requests' defaults and the environment.
        self._own = requests.Session()
        self._own.mount("https://", self._adapter)
        self._own.mount("http://", self._adapter)

    def __repr__(self) -> str:
        return f"Fetcher({self.policy!r})"

    def _send(self, method: str, url: str, what: str, **kwargs: Any) -> requests.Response:
        config = self._given if self._given is not None else self._own
        prepared = config.prepare_request(requests.Request(method, url, auth=no_credentials,
                                                           **kwargs))
        settings = config.merge_environment_settings(prepared.url, {}, None, None, None)
        try:
            return self._adapter.send(
                prepared, timeout=self.timeout, stream=bool(settings["stream"]),
                verify=True if settings["verify"] is None else settings["verify"],
                cert=settings["cert"], proxies=settings["proxies"])
        except _AddressRefused as exc:
            self.policy.refuse(url, what, str(exc), RULE_ADDRESS)

    def get(self, url: str, what: str, *,
            headers: Optional[Mapping[str, str]] = None) -> requests.Response:
        """GET ``url`` (``what`` names it in errors), following redirects, each checked.

        Raises:
            AuthError: the URL, a redirect or a connection breaks the policy.
            requests.RequestException: the request failed.
        """
        self.policy.check_url(url, what)
        current, hops = url, 0
        while True:
            response = self._send("GET", current, what, headers=dict(headers or {}))
            if not response.is_redirect:
                return response
            status = response.status_code
            response.close()
            location = response.headers["location"]
            try:
                target = urldefrag(urljoin(current, location))[0]
            except ValueError:  # a server's Location that is no URL
                self.policy.refuse(location, what, f"a redirect (HTTP {status}) to no valid "
                                   "URL", RULE_FORM)
            if hops == MAX_REDIRECTS:
                self.policy.refuse(target, what, f"the redirect (HTTP {status}) after "
                                   f"{MAX_REDIRECTS} others", RULE_HOPS)
            log.debug("the %s redirects (HTTP %s)", what, status)
            self.policy.check_redirect(current, target, what)
            current, hops = target, hops + 1

    def post(self, url: str, what: str, *, headers: Optional[Mapping[str, str]] = None,
             data: Any = None, json: Any = None) -> requests.Response:
        """POST to ``url``; a redirect is returned as it is, never followed (it would send
        the body, secrets included, elsewhere).

        Raises:
            AuthError: the URL or the connection breaks the policy.
            requests.RequestException: the request failed.
        """
        self.policy.check_url(url, what)
        return self._send("POST", url, what, headers=dict(headers or {}), data=data,
                          json=json)

    def close(self) -> None:
        """Close the fetcher's connections (not a session given to it). Idempotent."""
        close_session(self._own)
