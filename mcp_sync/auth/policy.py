"""The one rule for every URL the authorization flow fetches: :class:`FetchPolicy`.

Discovery hands the client URLs chosen by the MCP server and its authorization server:
the ``resource_metadata`` of a challenge, ``authorization_servers``, every endpoint of the
authorization server's metadata, and the ``Location`` of each redirect on the way. A
hostile server could point them at plain ``http``, at this machine (``127.0.0.1``,
``localhost``), at the cloud's metadata service (``169.254.169.254``) or at the private
network the client sits in, and make the client send requests there for it. So every
URL of the flow, and every redirect hop, passes one policy, made from the MCP server's
URL and the user's ``allowed_private_hosts``:

* **Scheme.** ``https``; plain ``http`` only to a loopback host (``localhost``,
  ``127.0.0.0/8``, ``::1``) and only when the MCP server itself is on loopback (or with
  ``allow_insecure_http=True``, for development).
* **Address.** When the MCP server is not on loopback, no loopback, private, link-local
  or otherwise non-public address: refused at once when the URL names one
  (:meth:`FetchPolicy.check_url`), and checked again on the address the connection
  actually reached (:meth:`FetchPolicy.address_problem`, asked by
  :mod:`~mcp_sync.auth.fetch` on the connected socket, so a name that resolves to such an
  address is refused too, whatever the DNS answered before). A host listed in
  ``allowed_private_hosts`` (an enterprise's own authorization server) is exempt. A
  server on loopback runs on this machine and can reach all of this already: its flow
  is not restricted.
* **Redirects.** A redirect never goes from ``https`` down to ``http``, nor to another
  class of host (loopback, private, link-local, public); its target is then checked
  like any URL, and at most :data:`MAX_REDIRECTS` are followed.

A refusal is an :class:`~mcp_sync.AuthError` that names the URL (escaped, without
credentials) and the rule. Standard library only, no I/O.
"""

from __future__ import annotations

import ipaddress
from typing import Iterable, NoReturn, Optional, Union
from urllib.parse import urlsplit, urlunsplit

from .._util.hosts import is_loopback_host
from ..exceptions import AuthError, excerpt

__all__ = ["MAX_REDIRECTS", "RULE_ADDRESS", "RULE_FORM", "RULE_HOPS", "FetchPolicy",
           "address_class", "host_class", "shown"]

#: The most redirects followed for one fetch.
MAX_REDIRECTS = 5

Address = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]

RULE_SCHEME = ("https only; plain http only to a loopback host, and only when the MCP "
               "server is on loopback (or with allow_insecure_http=True)")
RULE_ADDRESS = ("no loopback, private or link-local address unless the MCP server is on "
                "loopback or the host is listed in allowed_private_hosts")
RULE_REDIRECT = ("a redirect never goes from https down to http, nor to another class of "
                 "host (loopback, private, link-local, public)")
RULE_HOPS = f"at most {MAX_REDIRECTS} redirects"
RULE_FORM = "an absolute http or https URL without a fragment"

# NAT64 (RFC 6052): the IPv4 address in the last 32 bits is the one reached.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def _embedded_ipv4(address: Address) -> Address:
    """The IPv4 address an IPv6 one stands for (mapped, 6to4, NAT64), else itself."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address.sixtofour is not None:
            return address.sixtofour
        if address in _NAT64:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address


def address_class(address: Address) -> str:
    """``"loopback"``, ``"link-local"``, ``"private"``, ``"non-public"`` (unspecified,
    multicast, reserved, documentation, shared) or ``"public"``; an IPv6 address that
    carries an IPv4 one is judged by it (``::ffff:127.0.0.1`` is loopback)."""
    address = _embedded_ipv4(address)
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address.is_unspecified or address.is_multicast or address.is_reserved:
        return "non-public"  # 0.0.0.0 reaches this machine on Linux
    if address.is_private:
        return "private"
    return "public" if address.is_global else "non-public"


def _parse_address(host: str) -> Optional[Address]:
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])  # an IPv6 zone is no part of it
    except ValueError:
        return None


def _normal_host(host: str) -> str:
    """A host as URLs and sockets write it, compared: lower case, no brackets, no
    trailing dot; an IP address in its compressed form."""
    host = host.strip().strip("[]").lower().rstrip(".")
    address = _parse_address(host)
    return str(address) if address is not None else host


def host_class(host: str) -> str:
    """The class of a URL's host as written: ``localhost`` names are loopback, an IP
    address has its :func:`address_class`, any other name is ``"public"`` until a
    connection says where it leads."""
    if is_loopback_host(host):
        return "loopback"
    address = _parse_address(_normal_host(host))
    return address_class(address) if address is not None else "public"


def shown(url: str) -> str:
    """``url`` as a message may show it: no ``user:password@``, escaped, bounded."""
    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL (a bracket left open): shown as the text it is
        return excerpt(url, 200)
    if "@" in parts.netloc:
        url = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    return excerpt(url, 200)


class FetchPolicy:
    """What the authorization flow of one MCP server may fetch (see the module docstring).

    Args:
        server_url: the MCP server's URL; "local" when its host is a loopback one.
        allowed_private_hosts: hosts (as their URLs write them: names or IP addresses)
            the flow may reach on a loopback, private or link-local address although the
            MCP server is not on loopback: an enterprise's own authorization server.
        allow_insecure_http: accept plain ``http`` to any host (development only).

    Not changed after it is made; thread-safe.
    """

    __slots__ = ("allow_insecure_http", "allowed_private_hosts", "server_is_local",
                 "server_url")

    def __init__(self, server_url: Optional[str], *, allowed_private_hosts: Iterable[str] = (),
                 allow_insecure_http: bool = False) -> None:
        self.server_url = server_url
        self.server_is_local = bool(server_url) and is_loopback_host(
            urlsplit(server_url or "").hostname or "")
        self.allowed_private_hosts = frozenset(_normal_host(host)
                                               for host in allowed_private_hosts)
        self.allow_insecure_http = allow_insecure_http

    def __repr__(self) -> str:
        return (f"FetchPolicy(server_url={self.server_url!r}, "
                f"allowed_private_hosts={sorted(self.allowed_private_hosts)!r}, "
                f"allow_insecure_http={self.allow_insecure_http!r})")

    def refuse(self, url: str, what: str, problem: str, rule: str) -> NoReturn:
        """Raise the refusal of ``url``: an :class:`~mcp_sync.AuthError` naming the URL
        (escaped, without credentials), what it was for, why, and the rule."""
        raise AuthError(f"refusing the {what} {shown(url)}: {problem} (rule: {rule})")

    def _server(self) -> str:
        return shown(self.server_url) if self.server_url else "(unknown)"

    def _admits(self, host: str) -> bool:
        return self.server_is_local or _normal_host(host) in self.allowed_private_hosts

    def check_url(self, url: str, what: str) -> None:
        """Refuse ``url`` before anything is sent: not absolute http(s), a fragment,
        plain ``http`` where it is not allowed, or a host that names a loopback, private
        or link-local address when that is not allowed.

        Raises:
            AuthError: the URL breaks the rule (the message names it).
        """
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 - raises for a port that is not one
        except ValueError:
            self.refuse(url, what, "not a valid URL", RULE_FORM)
        scheme = parts.scheme.lower()
        host = parts.hostname or ""
        if scheme not in ("http", "https") or not host:
            self.refuse(url, what, "not an absolute http(s) URL", RULE_FORM)
        if parts.fragment:
            self.refuse(url, what, "it has a fragment", RULE_FORM)
        kind = host_class(host)
        if scheme == "http" and not self.allow_insecure_http and not (
                kind == "loopback" and self.server_is_local):
            problem = ("plain http" if kind != "loopback" else
                       f"plain http to loopback, and the MCP server {self._server()} is "
                       "not on loopback")
            self.refuse(url, what, problem, RULE_SCHEME)
        if kind != "public" and not self._admits(host):
            self.refuse(url, what, f"{excerpt(host, 100)} is a {kind} address, and the MCP "
                        f"server {self._server()} is not on loopback", RULE_ADDRESS)

    def address_problem(self, host: str, peer: str) -> Optional[str]:
        """Why a connection to ``host`` that reached ``peer`` (the IP address of the
        connected socket) must not be used, or None when it may: ``peer`` is loopback,
        private, link-local or otherwise not public, the MCP server is not on loopback,
        and ``host`` is not allowed. (The caller refuses with :data:`RULE_ADDRESS`.)"""
        if self._admits(host):
            return None
        address = _parse_address(peer)
        kind = address_class(address) if address is not None else "non-public"
        if kind == "public":
            return None
        return (f"{excerpt(host, 100)} led to {excerpt(peer, 60)}, a {kind} address, and "
                f"the MCP server {self._server()} is not on loopback")

    def check_redirect(self, source: str, target: str, what: str) -> None:
        """Refuse a redirect from ``source`` to ``target`` that goes down from https to
        http or to another class of host; then ``target`` must pass :meth:`check_url`.

        Raises:
            AuthError: the redirect breaks the rule.
        """
        try:
            old, new = urlsplit(source), urlsplit(target)
        except ValueError:
            self.refuse(target, what, f"a redirect from {shown(source)} to no valid URL",
                        RULE_FORM)
        if old.scheme.lower() == "https" and new.scheme.lower() != "https":
            self.refuse(target, what, f"a redirect from {shown(source)} down from https",
                        RULE_REDIRECT)
        old_class, new_class = host_class(old.hostname or ""), host_class(new.hostname or "")
        if old_class != new_class:
            self.refuse(target, what, f"a redirect from {shown(source)}, a {old_class} host, "
                        f"to a {new_class} one", RULE_REDIRECT)
        self.check_url(target, what)
