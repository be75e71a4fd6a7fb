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
The client's connection holds one, made with the connection itself, of which it uses
what :class:`SubscriptionsConnection` names; each :class:`Subscription` reaches the
connection through it. This module imports no client.
"""

from __future__ import annotations

import collections
import logging
import threading
from concurrent.futures import Future
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Counter, Dict, List, Optional, Protocol, Sequence

from .._protocol import DEFAULT, Timeout
from .._util.threads import join_or_warn, start_thread
from ..exceptions import ConnectionClosed, MCPError, RequestTimeout
from ._settings import Timeouts

if TYPE_CHECKING:
    from .._rpc.session import RequestFuture, RpcSession

__all__ = ["ClientSubscriptions", "Subscription", "SubscriptionsConnection"]

log = logging.getLogger(__name__)

#: Seconds between attempts to re-open a dropped stream: 0.5, 1, 2, 4, then every 4.
BACKOFF = (0.5, 1.0, 2.0, 4.0)


class SubscriptionsConnection(Protocol):
    """What subscriptions use of the client's connection (read at each use, so a
    renamed client or a new session is seen)."""

    @property
    def name(self) -> str:
        """The server's name, for thread names and log lines."""

    @property
    def timeouts(self) -> Timeouts: ...

    @property
    def lock(self) -> AbstractContextManager[Any]:
        """The connection's lock: the subscribed resources change under it, and a
        renewed session reads them under it."""

    def stateless(self) -> bool: ...

    def live_session(self) -> RpcSession:
        """The live session (``ClientNotConnected`` when there is none)."""

    def has_capability(self, *path: str) -> bool: ...

    def require_capability(self, what: str, *path: str) -> None:
        """``CapabilityError`` naming ``what`` unless the server declared ``path``."""

    def request(self, method: str, params: Optional[Dict[str, Any]] = None, *,
                timeout: Timeout = DEFAULT) -> Any:
        """One request, blocking."""


class Subscription:
    """An open subscription to change notifications. Close it (or the client) to end it.

    Notifications reach the client's usual callbacks (``notification_handler``, the
    list caches) whichever era the server speaks. ``acknowledged`` holds the filter the
    server agreed to (stateless era), e.g. ``{"toolsListChanged": True}``.
    """

    def __init__(self, owner: ClientSubscriptions, notifications: Dict[str, Any], *,
                 ack_timeout: Optional[float], backoff: Sequence[float] = BACKOFF) -> None:
        self._owner = owner
        self._connection = owner.connection
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
        if not self._connection.stateless():
            self._start_session_era()
            return self
        self._open()
        if not self._wait_ack(self.ack_timeout):
            self.close()
            if self._failure is not None:
                raise self._failure
            raise RequestTimeout("subscriptions/listen", self._request_id, self.ack_timeout)
        self._thread = start_thread(self._keep_open,
                                    f"mcp-sync-subscription-{self._connection.name}")
        return self

    def _open(self) -> None:
        session = self._connection.live_session()
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
            log.info("%s will not send %s on subscription %s", self._connection.name,
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
                          self._connection.name)
                return
            delay = self.backoff[min(attempt, len(self.backoff) - 1)]
            log.info("subscription stream of %s ended (%r); re-opening in %.1f s",
                     self._connection.name, failure, delay)
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
            self._owner.subscribe_uri(uri)
            self._subscribed_uris.append(uri)
        # The server sends list changes unasked; acknowledge what it declared.
        agreed: Dict[str, Any] = {}
        for kind in ("tools", "prompts", "resources"):
            key = f"{kind}ListChanged"
            if self.notifications.get(key) and self._connection.has_capability(
                    kind, "listChanged"):
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
        join_or_warn(self._thread, self._connection.timeouts.close_timeout,
                     "closing the subscription", log)
        for uri in self._subscribed_uris if unsubscribe else ():
            try:
                self._owner.unsubscribe_uri(uri)
            except MCPError as exc:
                log.debug("unsubscribing %s from %s failed: %r", uri, self._connection.name,
                          exc)
        self._subscribed_uris.clear()
        self._owner.forget(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


class ClientSubscriptions:
    """One client's subscriptions: the open :class:`Subscription` objects, the one
    that carries ``subscribe_resource()``'s URIs (stateless era), and how many times
    each resource is subscribed (session era)."""

    def __init__(self, connection: SubscriptionsConnection) -> None:
        self.connection = connection
        # The open subscriptions (routing and covers() read a copy); changed under the
        # connection's lock.
        self._active: List[Subscription] = []
        self._resource_subscription: Optional[Subscription] = None
        # What a session-era session holds that a new one must be told again: the
        # resources subscribed, a count per URI (under the connection's lock).
        self._resource_uris: Counter[str] = collections.Counter()

    def subscribe(self, notifications: Dict[str, Any], timeout: Timeout) -> Subscription:
        """Open a :class:`Subscription` to ``notifications`` (``Client.subscribe``)."""
        if not notifications:
            raise ValueError("subscribe() needs at least one kind of notification")
        connection = self.connection
        connection.live_session()
        subscription = Subscription(self, notifications,
                                    ack_timeout=connection.timeouts.of(timeout))
        with connection.lock:
            self._active.append(subscription)
        try:
            return subscription.start()
        except BaseException:
            subscription.close()
            raise

    def subscribe_resource(self, uri: str, timeout: Timeout) -> None:
        """``Client.subscribe_resource``."""
        self.connection.require_capability("resource subscriptions", "resources", "subscribe")
        if self.connection.stateless():
            self._resubscribe_resources(add=uri, timeout=timeout)
        else:
            self.subscribe_uri(uri, timeout)

    def unsubscribe_resource(self, uri: str, timeout: Timeout) -> None:
        """``Client.unsubscribe_resource``."""
        self.connection.require_capability("resource subscriptions", "resources", "subscribe")
        if self.connection.stateless():
            self._resubscribe_resources(remove=uri, timeout=timeout)
        else:
            self.unsubscribe_uri(uri, timeout)

    def covers(self, key: str) -> bool:
        """Whether an open subscription carries notifications of kind ``key``
        (``toolsListChanged``...): the server acknowledged them."""
        return any(subscription.covers(key) for subscription in list(self._active))

    def acknowledged(self, subscription_id: Any, params: Dict[str, Any]) -> None:
        """A ``notifications/subscriptions/acknowledged`` for ``subscription_id`` (the
        callback thread): the subscription of that request learns what it gets."""
        for subscription in list(self._active):
            if subscription.request_id == subscription_id:
                subscription.acknowledge(params)

    def subscribed_uris(self) -> List[str]:
        """The resources a session-era session subscribed (the connection's lock held):
        a renewed session subscribes them again."""
        return list(self._resource_uris)

    def detach(self) -> List[Subscription]:
        """Forget every subscription (the client is closing, the connection's lock
        held); returns them, to be closed."""
        subscriptions, self._active = list(self._active), []
        self._resource_subscription = None
        return subscriptions

    def forget(self, subscription: Subscription) -> None:
        """``subscription`` closed: it is no longer open."""
        with self.connection.lock:
            if subscription in self._active:
                self._active.remove(subscription)

    def subscribe_uri(self, uri: str, timeout: Timeout = DEFAULT) -> None:
        """``resources/subscribe`` (session era), counted: a renewed session repeats
        what is subscribed."""
        self.connection.request("resources/subscribe", {"uri": uri}, timeout=timeout)
        with self.connection.lock:
            self._resource_uris[uri] += 1

    def unsubscribe_uri(self, uri: str, timeout: Timeout = DEFAULT) -> None:
        """``resources/unsubscribe`` (session era), counted."""
        with self.connection.lock:
            self._resource_uris[uri] -= 1
            if self._resource_uris[uri] <= 0:
                del self._resource_uris[uri]
        self.connection.request("resources/unsubscribe", {"uri": uri}, timeout=timeout)

    def _resubscribe_resources(self, *, add: Optional[str] = None, remove: Optional[str] = None,
                               timeout: Timeout) -> None:
        with self.connection.lock:
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
