"""Negotiation: from a connected session to one :class:`~mcp_sync._protocol.agreement.Agreement`.

The client offers (:class:`Offer`: its info, capabilities, log level, a pinned version;
:func:`client_offer` makes it from the connection's settings, an :class:`OfferSource`);
:func:`negotiate` probes ``server/discover`` for the stateless era and falls back to the
``initialize`` handshake of the session era, handing proposals and then the settled
agreement down through the session as it goes.

This module also keeps the per-process memory of each server's era (so that a second
client of a session-era server skips the stateless probe).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import TYPE_CHECKING, Any, Dict, Mapping, NamedTuple, Optional, Protocol

from .._protocol import (
    LATEST_PROTOCOL_VERSION,
    LATEST_SESSION_VERSION,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    SESSION_ERA,
    SESSION_PROTOCOL_VERSIONS,
    STATELESS_ERA,
    STATELESS_ERROR_CODES,
    STATELESS_PROTOCOL_VERSIONS,
    SUPPORTED_PROTOCOL_VERSIONS,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from .._protocol.agreement import Agreement
from ..exceptions import (
    HTTPError,
    MCPError,
    ProtocolError,
    RequestTimeout,
    ServerError,
    UnsupportedProtocolVersion,
    excerpt,
)
from ._settings import Handlers, Timeouts

if TYPE_CHECKING:
    from .._rpc.session import RpcSession

__all__ = [
    "Agreement",
    "Offer",
    "OfferExtensions",
    "OfferSource",
    "choose_version",
    "client_capabilities",
    "client_offer",
    "forget_protocol_eras",
    "negotiate",
]

log = logging.getLogger("mcp_sync.client")

# HTTP statuses with which a server says it does not know a method or this transport.
REFUSED_STATUSES = (400, 404, 405)

class Offer(NamedTuple):
    """What the client brings to a negotiation."""

    name: str
    client_info: Mapping[str, Any]
    #: Declared in ``initialize`` (session era).
    capabilities: Mapping[str, Any]
    #: Declared in the envelope (stateless era).
    stateless_capabilities: Mapping[str, Any]
    log_level: Optional[str]
    #: The version the user pinned (``protocol_version=``), or None to negotiate.
    pinned: Optional[str]
    probe_timeout: Optional[float]
    timeout: Optional[float]
    #: Identifies the server for the era memory (the transport's ``era_key``).
    era_key: Any
    #: The transport answers every request (an HTTP status), so an unanswered probe
    #: means a busy server, not an old one.
    answers_every_request: bool
    #: When (``time.monotonic()``) the whole negotiation must be over: every request of
    #: it waits at most until then, the era probe at most half of what is left. None:
    #: each request has its own timeout only.
    deadline: Optional[float] = None

    def left(self, bound: Optional[float]) -> Optional[float]:
        """``bound`` (seconds, None for none) cut to the time left before the deadline."""
        if self.deadline is None:
            return bound
        left = max(0.0, self.deadline - time.monotonic())
        return left if bound is None else min(bound, left)

    def envelope(self, version: str) -> Dict[str, Any]:
        meta: Dict[str, Any] = {
            META_PROTOCOL_VERSION: version,
            META_CLIENT_CAPABILITIES: dict(self.stateless_capabilities),
            META_CLIENT_INFO: dict(self.client_info),
        }
        if self.log_level is not None:
            meta[META_LOG_LEVEL] = self.log_level
        return meta

    def initialize_params(self, version: Optional[str] = None) -> Dict[str, Any]:
        return {
            "protocolVersion": version or self.pinned or LATEST_SESSION_VERSION,
            "capabilities": dict(self.capabilities),
            "clientInfo": dict(self.client_info),
        }


class OfferTransport(Protocol):
    """What an offer needs of the client's transport."""

    @property
    def era_key(self) -> Any: ...

    @property
    def answers_every_request(self) -> bool: ...


class OfferExtensions(Protocol):
    """The client's extensions, as an offer advertises them."""

    def advertised(self, stateless: bool) -> Dict[str, Dict[str, Any]]: ...


class OfferSource(Protocol):
    """What an offer is made of: the client's connection, read at each negotiation (an
    application may change a setting after the client is made)."""

    @property
    def name(self) -> str: ...

    @property
    def client_info(self) -> Mapping[str, Any]: ...

    @property
    def requested_protocol_version(self) -> Optional[str]: ...

    @property
    def log_level(self) -> Optional[str]: ...

    @property
    def handlers(self) -> Handlers: ...

    @property
    def extensions(self) -> OfferExtensions: ...

    @property
    def timeouts(self) -> Timeouts: ...

    @property
    def transport(self) -> OfferTransport: ...


def client_capabilities(handlers: Handlers, *, stateless: bool = False,
                        extensions: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """What the client declares: only what its handlers do (``handlers.task_methods``:
    the methods whose task-augmented requests it runs as tasks), and the ``extensions``
    it advertises in the era (identifier to settings; the tasks extension's in the
    stateless era, where the client follows a task whichever call the server makes one
    of). The stateless era has no ``notifications/roots/list_changed`` (the server asks
    for roots each time)."""
    capabilities: Dict[str, Any] = {}
    if handlers.roots is not None:
        capabilities["roots"] = {} if stateless else {"listChanged": True}
    if handlers.sampling_handler is not None:
        capabilities["sampling"] = {feature: {} for feature in handlers.sampling_features}
    if handlers.elicitation_handler is not None:
        capabilities["elicitation"] = {mode: {} for mode in handlers.elicitation_modes}
    if extensions:
        capabilities["extensions"] = dict(extensions)
    if handlers.task_methods and not stateless:
        requests: Dict[str, Any] = {}
        for method in handlers.task_methods:
            kind, _, verb = method.partition("/")
            requests.setdefault(kind, {})[verb] = {}
        capabilities["tasks"] = {"list": {}, "cancel": {}, "requests": requests}
    return capabilities


def client_offer(source: OfferSource, deadline: Optional[float] = None) -> Offer:
    """The :class:`Offer` of a client (see :func:`client_capabilities`), to be negotiated
    by ``deadline`` (``time.monotonic()``; None: no bound but each request's own)."""
    transport = source.transport
    extensions = source.extensions
    return Offer(
        name=source.name,
        client_info=source.client_info,
        capabilities=client_capabilities(source.handlers,
                                         extensions=extensions.advertised(False)),
        stateless_capabilities=client_capabilities(
            source.handlers, stateless=True, extensions=extensions.advertised(True)),
        log_level=source.log_level,
        pinned=source.requested_protocol_version,
        probe_timeout=source.timeouts.probe_timeout,
        timeout=source.timeouts.timeout,
        era_key=transport.era_key,
        answers_every_request=transport.answers_every_request,
        deadline=deadline,
    )


# -- the era memory ------------------------------------------------------------------------

# The era found for each server (Offer.era_key), for the life of the process, so a second
# client skips the probe. Guarded by _era_lock.
_era_cache: Dict[Any, str] = {}
_era_lock = threading.Lock()


def _renew_era_lock() -> None:
    """In a forked child: another thread of the parent may have held the lock at the
    fork, and that thread does not exist here to release it."""
    global _era_lock
    _era_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew_era_lock)


def forget_protocol_eras() -> None:
    """Forget the protocol era remembered for every server (the next connect probes)."""
    with _era_lock:
        _era_cache.clear()


def _remember(key: Any, era: str) -> None:
    with _era_lock:
        _era_cache[key] = era


def _remembered(key: Any) -> Optional[str]:
    with _era_lock:
        return _era_cache.get(key)


# -- negotiating -----------------------------------------------------------------------------


class _SessionEraServer(Exception):
    """The era probe says the server predates 2026-07-28 (internal control flow)."""


def choose_version(data: Any, name: str, rejected: Optional[ServerError] = None) -> str:
    """The newest version in an error's or result's ``supported`` list that we speak.

    With none in common, ``rejected`` (the server's -32022, a ``ProtocolVersionRejected``
    carrying ``supported``) is raised as it is; without it, an
    ``UnsupportedProtocolVersion``.
    """
    supported = data.get("supported") if isinstance(data, dict) else None
    if isinstance(supported, list):
        for version in SUPPORTED_PROTOCOL_VERSIONS:
            if version in supported:
                return version
    if rejected is not None:
        raise rejected
    raise UnsupportedProtocolVersion(
        f"{name} supports protocol versions {excerpt(repr(supported), 200)}; this client speaks "
        f"{', '.join(SUPPORTED_PROTOCOL_VERSIONS)}"
    )


def negotiate(session: RpcSession, offer: Offer) -> Agreement:
    """Find the era and the version with the server behind ``session``; the agreement
    is handed to the session (and its transport) before this returns.

    Raises:
        UnsupportedProtocolVersion, ProtocolError, RequestTimeout, ServerError,
        TransportError: no agreement.
    """
    return _Negotiation(session, offer).run()


class _Negotiation:
    def __init__(self, session: RpcSession, offer: Offer) -> None:
        self.session = session
        self.offer = offer
        self.name = offer.name

    def run(self) -> Agreement:
        offer = self.offer
        pinned = offer.pinned
        if pinned in STATELESS_PROTOCOL_VERSIONS:
            return self.discover(pinned, probe=False)
        if pinned is not None:
            return self.handshake(pinned)
        if _remembered(offer.era_key) == SESSION_ERA:
            return self.handshake(None)
        # Built before the probe, so that falling back costs one write, not more.
        fallback = offer.initialize_params()
        try:
            return self.discover(LATEST_PROTOCOL_VERSION, probe=True)
        except _SessionEraServer as exc:
            silent = isinstance(exc.__cause__, RequestTimeout)
            try:
                agreement = self.handshake(None, fallback)
            except (ServerError, HTTPError) as rejected:
                # Silence was no proof: a slow starter (a stdio server importing a big
                # SDK) or a busy server answered the probe after our timeout and serves
                # 2026-07-28 only, so it refuses initialize.
                refused = not isinstance(rejected, HTTPError) or (
                    rejected.status in REFUSED_STATUSES)
                if not (silent and refused):
                    raise
                return self.rediscover(rejected)
            if silent and offer.answers_every_request:
                # Over Streamable HTTP an older server refuses the probe at once; silence
                # means a busy server (maybe one serving both eras), so this connection
                # takes the handshake it accepted and the next one probes again.
                log.debug("%s accepted initialize after a silent probe: era not remembered",
                          self.name)
                return agreement
            _remember(offer.era_key, SESSION_ERA)  # only once the server accepted it
            log.debug("%s is a session-era server (%s)", self.name, exc)
            return agreement

    def rediscover(self, rejected: MCPError) -> Agreement:
        """After a timed-out probe, ``initialize`` was refused: ask ``server/discover``
        again, this time with the full timeout. Raises ``rejected`` if that fails too."""
        version = LATEST_PROTOCOL_VERSION
        if isinstance(rejected, ServerError) and rejected.code == UNSUPPORTED_PROTOCOL_VERSION:
            version = choose_version(rejected.data, self.name, rejected)
            if version not in STATELESS_PROTOCOL_VERSIONS:
                raise rejected
        log.debug("%s refused initialize after a silent probe (%s): discovering again",
                  self.name, rejected)
        try:
            return self.discover(version, probe=False)
        except MCPError as again:
            raise rejected from again

    def discover(self, version: str, *, probe: bool) -> Agreement:
        """``server/discover`` (the stateless era).

        With ``probe``, an answer that looks like a session-era server (another error,
        HTTP 400/404/405 without a stateless-era error, or silence past
        ``probe_timeout``) raises ``_SessionEraServer`` so that the caller falls back to
        ``initialize``.
        """
        offer = self.offer
        for attempt in range(3):
            self.session.agree(Agreement(STATELESS_ERA, version,
                                         envelope=offer.envelope(version), settled=False))
            # The probe takes at most half of what is left of a connect's deadline: the
            # handshake after it needs the rest.
            timeout = offer.left(offer.timeout)
            if probe and timeout is not None:
                timeout = timeout / 2
            if probe and offer.probe_timeout is not None:
                timeout = offer.probe_timeout if timeout is None else min(
                    offer.probe_timeout, timeout)
            try:
                result = self.session.request(
                    "server/discover", {}, timeout=timeout,
                    reset_timeout_on_progress=False, cancellable=not probe,
                )
                break
            except RequestTimeout as exc:
                if probe:
                    raise _SessionEraServer(f"no answer to server/discover within "
                                            f"{round(timeout or 0.0, 3)} s") from exc
                raise
            except ServerError as exc:
                if exc.code == UNSUPPORTED_PROTOCOL_VERSION and attempt < 2:
                    chosen = choose_version(exc.data, self.name, exc)
                    if chosen in SESSION_PROTOCOL_VERSIONS:
                        return self.handshake(chosen)
                    version = chosen
                    continue
                if exc.code in STATELESS_ERROR_CODES or not probe:
                    raise
                raise _SessionEraServer("server/discover failed") from exc
            except HTTPError as exc:
                if probe and exc.status in REFUSED_STATUSES:
                    raise _SessionEraServer(f"server/discover got HTTP {exc.status}") from exc
                raise
        else:  # pragma: no cover - the loop always breaks, returns or raises
            raise ProtocolError(f"{self.name} kept rejecting protocol versions")
        if not isinstance(result, dict) or not isinstance(result.get("capabilities"), dict):
            if probe:
                # Some session-era servers answer any unknown method with an empty result
                # (the conformance suite's mocks do): that is not a stateless server.
                raise _SessionEraServer("server/discover answered without capabilities")
            raise ProtocolError(f"server/discover result from {self.name} has no capabilities")
        supported = result.get("supportedVersions") or [version]
        if version not in supported:
            version = choose_version({"supported": supported}, self.name)
            if version in SESSION_PROTOCOL_VERSIONS:
                return self.handshake(version)
        meta = result.get("_meta")
        server_info = (meta.get(META_SERVER_INFO) if isinstance(meta, dict) else None) or (
            result.get("serverInfo"))
        if not isinstance(server_info, dict):
            server_info = {"name": self.name, "version": ""}
        instructions = result.get("instructions")
        agreement = Agreement(
            STATELESS_ERA, version,
            server_info=server_info,
            capabilities=result["capabilities"],
            instructions=instructions if isinstance(instructions, str) else None,
            supported_versions=tuple(v for v in supported if isinstance(v, str)),
            envelope=offer.envelope(version),
            result=result,
        )
        self.session.agree(agreement)
        _remember(offer.era_key, STATELESS_ERA)
        log.debug("connected to %s, protocol %s (stateless)", self.name, version)
        return agreement

    def handshake(self, pinned: Optional[str],
                  params: Optional[Dict[str, Any]] = None) -> Agreement:
        """``initialize`` (the session era), then ``notifications/initialized`` once the
        agreement is handed down (over HTTP the GET stream opens in between)."""
        self.session.agree(Agreement(SESSION_ERA, None, settled=False))
        result = self.session.request(
            "initialize", params or self.offer.initialize_params(pinned),
            timeout=self.offer.left(self.offer.timeout), cancellable=False,
        )
        agreement = self.accept(result)
        self.session.agree(agreement)
        self.session.notify("notifications/initialized")
        log.debug("connected to %s, protocol %s", self.name, agreement.version)
        return agreement

    def accept(self, result: Any) -> Agreement:
        """The agreement an ``initialize`` result makes.

        Raises:
            UnsupportedProtocolVersion, ProtocolError: not a result this client accepts.
        """
        if not isinstance(result, dict):
            raise ProtocolError(f"initialize result from {self.name} is not an object")
        version = result.get("protocolVersion")
        if version not in SESSION_PROTOCOL_VERSIONS:
            raise UnsupportedProtocolVersion(
                f"{self.name} answered protocol version {excerpt(repr(version), 80)}; this "
                f"client speaks {', '.join(SUPPORTED_PROTOCOL_VERSIONS)}"
            )
        for key in ("capabilities", "serverInfo"):
            if not isinstance(result.get(key), dict):
                raise ProtocolError(f"initialize result from {self.name} has no {key!r}")
        instructions = result.get("instructions")
        return Agreement(
            SESSION_ERA, str(version),
            server_info=result["serverInfo"],
            capabilities=result["capabilities"],
            instructions=instructions if isinstance(instructions, str) else None,
            result=result,
        )
