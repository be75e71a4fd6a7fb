"""The session's observer seam: :class:`RequestObserver` (what tracing and metrics are
told) and the plumbing that tells it, exactly once and never to the session's harm.

No thread of its own: each call to the observer runs on the thread the protocol names
(the sender's, the dispatch thread, a handler thread), inside a ``try`` that logs what the
observer raised and goes on.

* :class:`ObservedFuture` stands for a request's future in the ``RequestTable``, so that
  whoever settles the request (its response, its deadline, its cancellation, the close)
  tells the observer first, once.
* :func:`observe_serving` and :func:`observe_served` bracket the answer to a request from
  the server (and the routing of a notification from it).
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Protocol, Tuple

from ..exceptions import excerpt

if TYPE_CHECKING:
    from .._protocol.agreement import Agreement

__all__ = ["ObservedFuture", "ObservedSession", "RequestObserver", "ServingToken", "observe_served",
           "observe_serving", "progress_attributes"]

log = logging.getLogger(__name__)

_UNSET = object()  # no token yet: started() has not returned
_BROKEN = object()  # started() raised: nothing to finish


class ObservedSession(Protocol):
    """What an observer is told of the session it watches (an
    :class:`~mcp_sync._rpc.session.RpcSession`), and what it may read of it. The parts of
    the session hand it on as this, so none of them imports the session itself."""

    @property
    def name(self) -> str:
        """The server's name, as threads and logs say it."""

    @property
    def agreement(self) -> Optional[Agreement]:
        """What the client and the server agreed (None before the negotiation)."""

    @property
    def transport(self) -> Any:
        """The transport the session runs on (a :class:`~mcp_sync.Transport`)."""


class RequestObserver(Protocol):
    """Watches a session (tracing and metrics, ``client/_tracing.py``): told of each
    request it sends before it is written, and of its outcome once it settles, on
    whatever thread; of each notification it sends, around its write; of each request
    from the server around the work that answers it, and of each notification from the
    server around its routing; and of the session's start and end. Whatever it raises is
    logged, never the session's failure."""

    def started(self, session: ObservedSession, method: str, params: Optional[Mapping[str, Any]],
                request_id: Any) -> Tuple[Any, Optional[Mapping[str, Any]],
                                          Optional[Mapping[str, str]]]:
        """Called on the sending thread; returns ``(token, meta, headers)``: ``meta`` is
        merged into the message's ``params._meta`` and ``headers`` into its transport
        headers (either may be None); ``token`` is handed back to :meth:`finished`.
        ``request_id`` is None for a notification."""

    def finished(self, token: Any, result: Any, error: Optional[BaseException]) -> None:
        """Called once per message :meth:`started` returned for: a request with its
        result or its error; a notification once written (result None), or with the
        error that stopped its write."""

    def active(self) -> bool:
        """Whether to observe requests now (checked per request, before anything else:
        it must be cheap); an inactive observer costs a request nothing more."""

    def event(self, token: Any, name: str, attributes: Mapping[str, Any]) -> None:
        """Something happened to a request still in flight (``token`` from
        :meth:`started`): ``notifications/progress`` from the server, or
        ``notifications/cancelled`` when the client gives it up. On the dispatch
        thread (or the thread that cancels), before :meth:`finished`."""

    def serving(self, session: ObservedSession, method: str, params: Any, request_id: Any) -> Any:
        """Called on the thread that answers a request from the server, before the
        handler runs; returns a token for :meth:`served`, which that thread calls once
        it answered (the handler runs between the two, in whatever context this set).
        For a notification from the server (``request_id`` None): on the dispatch
        thread, around its routing (its callbacks are queued, not run, in between)."""

    def served(self, token: Any, error: Optional[BaseException]) -> None:
        """The request :meth:`serving` was told of is answered: ``error`` is None, or
        the :class:`ServerError` sent back, or why it was not answered (cancelled)."""

    def opened(self, session: ObservedSession) -> Any:
        """The session started; returns a token for :meth:`ended`."""

    def ended(self, session: ObservedSession, token: Any, error: Optional[BaseException]) -> None:
        """The session ended: ``error`` is None after :meth:`RpcSession.close`, else the
        failure that ended it."""


class ObservedFuture:
    """Stands for a request's future in the table: tells the observer of the outcome
    before the future's owner can see it, and exactly once.

    Thread-safety: ``_lock`` guards ``_token``, ``_outcome`` and ``_done``: the sender
    learns the token (:meth:`start`) while any thread may settle the request.
    """

    __slots__ = ("_done", "_lock", "_observer", "_outcome", "_token", "future")

    def __init__(self, future: Any, observer: RequestObserver) -> None:
        self.future = future
        self._observer = observer
        self._lock = threading.Lock()
        self._token: Any = _UNSET
        self._outcome: Optional[Tuple[Any, Optional[BaseException]]] = None
        self._done = False

    def start(self, session: ObservedSession, method: str, params: Optional[Dict[str, Any]],
              request_id: Any, meta: Optional[Dict[str, Any]],
              headers: Optional[Mapping[str, str]],
              ) -> Tuple[Optional[Dict[str, Any]], Optional[Mapping[str, str]]]:
        """Tell the observer of the request about to be sent (sending thread); returns
        its ``_meta`` and headers with what the observer adds (the caller's own headers
        and the session's ``_meta`` keys win)."""
        try:
            token, extra_meta, extra_headers = self._observer.started(
                session, method, params, request_id)
        except Exception:  # an observer never stops a request
            log.exception("request observer failed on %s", method)
            self.begin(_BROKEN)
            return meta, headers
        self.begin(token)
        if extra_meta:
            meta = {**extra_meta, **(meta or {})}
        if extra_headers:
            headers = {**extra_headers, **(headers or {})}
        return meta, headers

    def begin(self, token: Any) -> None:
        """The observer's token, known once the request has an id; an outcome that came
        first is reported now."""
        with self._lock:
            self._token = token
            outcome = self._outcome if self._done else None
        if outcome is not None:
            self._report(token, *outcome)

    def set_result(self, result: Any) -> None:
        self.observe_outcome(result, None)
        self.future.set_result(result)

    def set_exception(self, error: BaseException) -> None:
        self.observe_outcome(None, error)
        self.future.set_exception(error)

    def observe_outcome(self, result: Any, error: Optional[BaseException]) -> None:
        """Tell the observer of the outcome (once; later calls do nothing) without
        settling the future: for a caller that raises ``error`` itself."""
        with self._lock:
            if self._done:
                return
            self._done = True
            token = self._token
            if token is _UNSET:
                self._outcome = (result, error)
                return
        self._report(token, result, error)

    def note(self, name: str, attributes: Mapping[str, Any]) -> None:
        """Tell the observer of an event of the request while it is in flight."""
        with self._lock:
            token = self._token
            if self._done or token is _UNSET or token is _BROKEN:
                return
        try:
            self._observer.event(token, name, attributes)
        except Exception:  # an observer never breaks a request
            log.exception("request observer failed")

    def _report(self, token: Any, result: Any, error: Optional[BaseException]) -> None:
        if token is _BROKEN:
            return  # started() failed: nothing to finish
        try:
            self._observer.finished(token, result, error)
        except Exception:  # an observer never breaks a request
            log.exception("request observer failed")


class ServingToken:
    """An observer's token for a request from the server, with the observer it belongs
    to (:func:`observe_served` needs both)."""

    __slots__ = ("observer", "token")

    def __init__(self, observer: RequestObserver, token: Any) -> None:
        self.observer = observer
        self.token = token


def observe_serving(observer: Optional[RequestObserver], session: ObservedSession, method: str,
                    params: Any, request_id: Any) -> Optional[ServingToken]:
    """Tell ``observer`` (if active) that this thread answers a request from the server
    (``request_id`` None: routes a notification). Returns the token for
    :func:`observe_served`, which this thread calls once done, or None: nothing to
    tell."""
    if observer is None or not observer.active():
        return None
    try:
        token = observer.serving(session, method, params, request_id)
    except Exception:  # an observer never stops an answer
        log.exception("request observer failed on %s from %s", excerpt(method, 100),
                      session.name)
        return None
    return ServingToken(observer, token) if token is not None else None


def observe_served(token: ServingToken, error: Optional[BaseException]) -> None:
    """The request :func:`observe_serving` returned ``token`` for is answered (or not:
    ``error`` says why)."""
    try:
        token.observer.served(token.token, error)
    except Exception:  # an observer never stops an answer
        log.exception("request observer failed after answering the server")


def progress_attributes(params: Dict[str, Any]) -> Dict[str, Any]:
    """A progress notification's fields as the attributes of an observer's event
    (numbers and a cut message; whatever else the server sent is left out)."""
    attributes: Dict[str, Any] = {}
    for key in ("progress", "total"):
        value = params.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            attributes[key] = value
    message = params.get("message")
    if isinstance(message, str):
        attributes["message"] = excerpt(message, 200)
    return attributes
