"""Change notifications: ``Client.subscribe()`` in both protocol eras.

In the stateless era (2026-07-28) a subscription is a long-lived ``subscriptions/listen``
request whose response stream carries the notifications the client opted in to. One
named thread per subscription (``mcp-sync-subscription-<name>``, a daemon like every
mcp_sync thread; ``close()`` joins it with a bound) opens the request, waits for the
server's acknowledgement, and re-opens the stream with backoff if it ends while the
client is connected. In the session era the server sends list changes unasked, and
resource updates follow ``resources/subscribe``; the same object covers both.

:class:`ClientSubscriptions` holds a client's subscriptions: ``Client.subscribe()``,
``subscribe_resource()`` and ``unsubscribe_resource()`` delegate to it, and it counts the
resources a session-era session has subscribed, which a renewed session is told again.
The client builds it once with a :class:`SubscriptionsHost`; this module imports no
client.
"""

from __future__ import annotations

import collections
import logging
import threading
from concurrent.futures import Future
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Callable, Counter, Dict, List, NamedTuple, Optional, Sequence

from .._protocol import DEFAULT, Timeout
from .._util.threads import join_or_warn, start_thread
from ..exceptions import ConnectionClosed, MCPError, RequestTimeout

if TYPE_CHECKING:
    from .._rpc.session import RequestFuture, RpcSession

__all__ = ["ClientSubscriptions", "Subscription", "SubscriptionHost", "SubscriptionsHost"]

log = logging.getLogger(__name__)

#: Seconds between attempts to re-open a dropped stream: 0.5, 1, 2, 4, then every 4.
BACKOFF = (0.5, 1.0, 2.0, 4.0)


class SubscriptionHost(NamedTuple):
    """What a subscription needs of its client, and all it may use (the client builds
    it; this module imports no client)."""

    #: The server's name, for thread names and log lines (it may change on rename).
    name: Callable[[], str]
    #: True in the stateless era (``subscriptions/listen``).
    stateless: Callable[[], bool]
    #: The live session (raises ``ClientNotConnected`` when there is none).
    live_session: Callable[[], RpcSession]
    #: ``resources/subscribe`` and ``resources/unsubscribe`` (session era), as the
    #: client sends and remembers them (a renewed session repeats what is subscribed).
    subscribe_uri: Callable[[str], None]
    unsubscribe_uri: Callable[[str], None]
    #: Whether the server declared the capability at a path (``"tools", "listChanged"``).
    has_capability: Callable[..., bool]
    #: Called once the subscription is closed: the client forgets it.
    forget: Callable[[Subscription], None]
    close_timeout: float


class Subscription:
    """An open subscription to change notifications. Close it (or the client) to end it.

    Notifications reach the client's usual callbacks (``notification_handler``, the
    list caches) whichever era the server speaks. ``acknowledged`` holds the filter the
    server agreed to (stateless era), e.g. ``{"toolsListChanged": True}``.
    """

    def __init__(self, host: SubscriptionHost, notifications: Dict[str, Any], *,
                 ack_timeout: Optional[float], backoff: Sequence[float] = BACKOFF) -> None:
        self._host = host
        self.notifications = notifications
        self.acknowledged: Optional[Dict[str, Any]] = None
        self.ack_timeout = ack_timeout
        self.backoff = tuple(backoff)
        self._stop = threading.Event()
        self._acked = threading.Event()
        self._ended = threading.Event()  # the current stream ended (response or error)
        # Guards _future and _request_id, read by the client's notification routing.
        self._lock = threading.Lock()
        self._future: Optional[RequestFuture] = None
        self._request_id: Any = None
        self._failure: Optional[BaseException] = None
        self._thread: Optional[threading.Thread] = None
        self._subscribed_uris: List[str] = []

    def covers(self, key: str) -> bool:
        """Did the server acknowledge notifications of this kind (``toolsListChanged``...)?"""
        acked = self.acknowledged
        return bool(acked and acked.get(key)) and not self._stop.is_set()

    @property
    def request_id(self) -> Any:
        return self._request_id

    # -- stateless era ---------------------------------------------------------------------

    def start(self) -> Subscription:
        """Open the stream and wait for the acknowledgement.

        Raises:
            RequestTimeout: no acknowledgement within ``ack_timeout``.
            ServerError, ConnectionClosed: the server refused or the link died.
        """
        if not self._host.stateless():
            self._start_session_era()
            return self
        self._open()
        if not self._wait_ack(self.ack_timeout):
            self.close()
            if self._failure is not None:
                raise self._failure
            raise RequestTimeout("subscriptions/listen", self._request_id, self.ack_timeout)
        self._thread = start_thread(self._keep_open, f"mcp-sync-subscription-{self._host.name()}")
        return self

    def _open(self) -> None:
        session = self._host.live_session()
        self._acked.clear()
        self._ended.clear()
        future = session.submit(
            "subscriptions/listen", {"notifications": self.notifications},
            timeout=None, reset_timeout_on_progress=False,
        )
        with self._lock:
            self._future, self._request_id = future, future.request_id
        future.add_done_callback(self._stream_ended)

    def _stream_ended(self, future: Future[Any]) -> None:
        if not future.cancelled() and future.exception() is not None:
            self._failure = future.exception()
        self._ended.set()
        self._acked.set()  # wake a start() still waiting for the acknowledgement

    def _wait_ack(self, timeout: Optional[float]) -> bool:
        return self._acked.wait(timeout) and self.acknowledged is not None

    def acknowledge(self, params: Dict[str, Any]) -> None:
        """Called by the client for ``notifications/subscriptions/acknowledged``."""
        agreed = params.get("notifications")
        self.acknowledged = agreed if isinstance(agreed, dict) else {}
        missing = [key for key, wanted in self.notifications.items()
                   if wanted and not self.acknowledged.get(key)]
        if missing:
            log.info("%s will not send %s on subscription %s", self._host.name(),
                     ", ".join(missing), self._request_id)
        self._acked.set()

    def _keep_open(self) -> None:
        attempt = 0
        while not self._stop.is_set():
            # Bounded waits: wake now and then even if nothing ends the stream.
            if not self._ended.wait(5.0):
                continue
            if self._stop.is_set():
                return
            failure = self._failure
            if isinstance(failure, ConnectionClosed):
                log.debug("subscription %s of %s ends with the connection", self._request_id,
                          self._host.name())
                return
            delay = self.backoff[min(attempt, len(self.backoff) - 1)]
            log.info("subscription stream of %s ended (%r); re-opening in %.1f s",
                     self._host.name(), failure, delay)
            if self._stop.wait(delay):
                return
            attempt += 1
            self._failure = None
            try:
                self._open()
            except MCPError as exc:
                self._failure = exc
                self._ended.set()
                if isinstance(exc, ConnectionClosed):
                    return
                continue
            if self._wait_ack(self.ack_timeout if self.ack_timeout is not None else 30.0):
                attempt = 0

    # -- session era -----------------------------------------------------------------------

    def _start_session_era(self) -> None:
        uris = list(self.notifications.get("resourceSubscriptions") or ())
        for uri in uris:
            self._host.subscribe_uri(uri)
            self._subscribed_uris.append(uri)
        # The server sends list changes unasked; acknowledge what it declared.
        agreed: Dict[str, Any] = {}
        for kind in ("tools", "prompts", "resources"):
            key = f"{kind}ListChanged"
            if self.notifications.get(key) and self._host.has_capability(kind, "listChanged"):
                agreed[key] = True
        if uris:
            agreed["resourceSubscriptions"] = uris
        self.acknowledged = agreed

    # -- closing ---------------------------------------------------------------------------

    def close(self, *, unsubscribe: bool = True) -> None:
        """End the subscription: cancel the stream (HTTP closes it; stdio sends
        ``notifications/cancelled``), or unsubscribe the resources (session era; not
        with ``unsubscribe=False``, when the client is closing anyway).
        Idempotent; joins the thread with a bound."""
        if self._stop.is_set():
            return
        self._stop.set()
        with self._lock:
            future = self._future
        if future is not None and not future.done():
            future.cancel()
        self._ended.set()
        join_or_warn(self._thread, self._host.close_timeout, "closing the subscription", log)
        for uri in self._subscribed_uris if unsubscribe else ():
            try:
                self._host.unsubscribe_uri(uri)
            except MCPError as exc:
                log.debug("unsubscribing %s from %s failed: %r", uri, self._host.name(), exc)
        self._subscribed_uris.clear()
        self._host.forget(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()




class SubscriptionsHost(NamedTuple):
    """What a client's subscriptions need of it (the client builds it once; read at
    each use, so a renamed client or a new connection is seen)."""

    name: Callable[[], str]
    stateless: Callable[[], bool]
    #: The live session (raises ``ClientNotConnected`` when there is none).
    live_session: Callable[[], RpcSession]
    #: Whether the server declared the capability at a path (``"tools", "listChanged"``).
    has_capability: Callable[..., bool]
    #: ``require_capability(what, *path)``: ``CapabilityError`` naming ``what`` unless
    #: the server declared the capability at ``path``.
    require_capability: Callable[..., None]
    #: ``Client.request``: one request, blocking.
    request: Callable[..., Any]
    #: ``Client._timeout``: the seconds a ``timeout`` argument stands for.
    timeout: Callable[[Timeout], Optional[float]]
    #: ``Client.close_timeout``: the bound on joining a subscription's thread.
    close_timeout: Callable[[], float]
    #: The client's connection lock: the subscribed resources change under it, and a
    #: renewed session reads them under it.
    lock: AbstractContextManager[Any]


class ClientSubscriptions:
    """One client's subscriptions: the open :class:`Subscription` objects, the one
    that carries ``subscribe_resource()``'s URIs (stateless era), and how many times
    each resource is subscribed (session era)."""

    def __init__(self, host: SubscriptionsHost) -> None:
        self.host = host
        #: The open subscriptions (the client's notification routing and list cache
        #: read a copy).
        self.active: List[Subscription] = []
        self._resource_subscription: Optional[Subscription] = None
        # What a session-era session holds that a new one must be told again: the
        # resources subscribed, a count per URI (under host.lock).
        self._resource_uris: Counter[str] = collections.Counter()

    def subscribe(self, notifications: Dict[str, Any], timeout: Timeout) -> Subscription:
        """Open a :class:`Subscription` to ``notifications`` (``Client.subscribe``)."""
        if not notifications:
            raise ValueError("subscribe() needs at least one kind of notification")
        host = self.host
        host.live_session()
        subscription = Subscription(self._subscription_host(), notifications,
                                    ack_timeout=host.timeout(timeout))
        self.active.append(subscription)
        try:
            return subscription.start()
        except BaseException:
            subscription.close()
            raise

    def subscribe_resource(self, uri: str, timeout: Timeout) -> None:
        """``Client.subscribe_resource``."""
        self.host.require_capability("resource subscriptions", "resources", "subscribe")
        if self.host.stateless():
            self._resubscribe_resources(add=uri, timeout=timeout)
        else:
            self._subscribe_session_era(uri, timeout)

    def unsubscribe_resource(self, uri: str, timeout: Timeout) -> None:
        """``Client.unsubscribe_resource``."""
        self.host.require_capability("resource subscriptions", "resources", "subscribe")
        if self.host.stateless():
            self._resubscribe_resources(remove=uri, timeout=timeout)
        else:
            self._unsubscribe_session_era(uri, timeout)

    def subscribed_uris(self) -> List[str]:
        """The resources a session-era session subscribed (``host.lock`` held): a
        renewed session subscribes them again."""
        return list(self._resource_uris)

    def detach(self) -> List[Subscription]:
        """Forget every subscription (the client is closing, ``host.lock`` held);
        returns them, to be closed."""
        subscriptions, self.active = list(self.active), []
        self._resource_subscription = None
        return subscriptions

    def _subscribe_session_era(self, uri: str, timeout: Timeout = DEFAULT) -> None:
        self.host.request("resources/subscribe", {"uri": uri}, timeout=timeout)
        with self.host.lock:
            self._resource_uris[uri] += 1

    def _unsubscribe_session_era(self, uri: str, timeout: Timeout = DEFAULT) -> None:
        with self.host.lock:
            self._resource_uris[uri] -= 1
            if self._resource_uris[uri] <= 0:
                del self._resource_uris[uri]
        self.host.request("resources/unsubscribe", {"uri": uri}, timeout=timeout)

    def _resubscribe_resources(self, *, add: Optional[str] = None, remove: Optional[str] = None,
                               timeout: Timeout) -> None:
        with self.host.lock:
            old = self._resource_subscription
            uris = list(old.notifications["resourceSubscriptions"]) if old else []
            if add is not None and add not in uris:
                uris.append(add)
            if remove is not None and remove in uris:
                uris.remove(remove)
            self._resource_subscription = (
                self.subscribe({"resourceSubscriptions": uris}, timeout) if uris else None
            )
        if old is not None:
            old.close()

    def _subscription_host(self) -> SubscriptionHost:
        host = self.host

        def forget(subscription: Subscription) -> None:
            with host.lock:
                if subscription in self.active:
                    self.active.remove(subscription)

        return SubscriptionHost(
            name=host.name, stateless=host.stateless, live_session=host.live_session,
            subscribe_uri=self._subscribe_session_era,
            unsubscribe_uri=self._unsubscribe_session_era,
            has_capability=host.has_capability, forget=forget,
            close_timeout=host.close_timeout())
