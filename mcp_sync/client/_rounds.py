"""One retry state machine for a call, and its two drivers (blocking and future).

A request may need to go more than once before it has its answer:

* the server forgot the MCP session (:class:`~mcp_sync.SessionExpired`, the request
  not processed): once more on a new session (``renew``);
* a stateless-era -32022 (unsupported protocol version): once more per round, at a
  version the server lists (``switch_version``);
* a -32020 (header mismatch) where the tool's ``x-mcp-header`` annotations may have
  changed: once per call, after listing the tools again (``refresh``);
* an ``input_required`` result (2026-07-28 multi round-trip requests): the user's
  handlers answer its input requests and the next round carries ``inputResponses`` and
  the echoed ``requestState``, at most ``max_input_rounds`` rounds.

:class:`Rounds` decides (:meth:`Rounds.decide`: cheap, on whatever thread the outcome
arrives) and prepares (:meth:`Rounds.prepare`: may block, and may run user code). The
blocking driver (:meth:`Rounds.run`) does both on the caller's thread; the future driver
(:class:`RoundsFuture`) decides where a round settles and prepares on the session's
handler pool (or, for a renewal, on a thread of its own: the dying session's pool is
stopping). Both forms therefore retry alike (``tests/client/test_call_forms.py``).

:class:`RoundsRunner` is the client's side of it: the connection holds one, made with the
connection itself (of which it uses what :class:`RoundsConnection` names; this module
imports no client). It starts a machine on the live session
(:meth:`RoundsRunner.start`), runs a blocking call through it
(:meth:`RoundsRunner.round_trip`), and does what a round needs between sends: the
renewal and the switch to a version the server lists (both the connection's), the next
round's params with the handlers' answers.
"""

from __future__ import annotations

import enum
import logging
import threading
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Callable, Dict, Mapping, Optional, Protocol, Tuple

from .._protocol import (
    DEFAULT,
    HEADER_MISMATCH,
    STATELESS_PROTOCOL_VERSIONS,
    UNSUPPORTED_PROTOCOL_VERSION,
    Timeout,
)
from .._rpc.core import ProgressCallback, settle
from .._rpc.session import RequestFuture
from .._util.threads import start_thread
from ..exceptions import MCPError, ProtocolError, ServerError, SessionExpired
from ._negotiation import choose_version
from ._settings import Limits, Timeouts

if TYPE_CHECKING:
    from .._protocol.agreement import Agreement
    from .._rpc.session import RpcSession

__all__ = ["Rounds", "RoundsConnection", "RoundsFuture", "RoundsRunner"]

# The client's logger: these messages were always the client's.
log = logging.getLogger("mcp_sync.client")


class Step(enum.Enum):
    DONE = "done"
    FAIL = "fail"
    RENEW = "renew"
    SWITCH = "switch"
    REFRESH = "refresh"
    NEXT = "next"


def input_required(result: Any) -> bool:
    return isinstance(result, dict) and result.get("resultType") == "input_required"


# Guards the first making of a Rounds' ``cancelled`` event (rare: input rounds, cancels).
_EVENT_LOCK = threading.Lock()


class Rounds:
    """The state of one call's retries; see the module docstring.

    ``inputs`` says whether ``input_required`` results are rounds (tools/call,
    prompts/get, resources/read) or plain results; ``refresh``, when given, repairs a
    header mismatch once.
    """

    def __init__(self, runner: RoundsRunner, session: RpcSession, method: str,
                 params: Optional[Dict[str, Any]], *, inputs: bool = True,
                 refresh: Optional[Callable[[], None]] = None) -> None:
        self.runner = runner
        self.session = session
        self.method = method
        self.params = params
        #: What the next send carries.
        self.round_params = params
        self.inputs = inputs
        self._refresh = refresh
        self._rounds = 0
        self._switched_round = -1
        self._renewed = False
        self._cancelled: Optional[threading.Event] = None

    @property
    def cancelled(self) -> threading.Event:
        """Shared by the RequestContext of every handler this call runs; set when the
        call is cancelled. Made on first use: most calls never run a handler."""
        event = self._cancelled
        if event is None:
            with _EVENT_LOCK:
                event = self._cancelled
                if event is None:
                    event = self._cancelled = threading.Event()
        return event

    def decide(self, result: Any, error: Optional[BaseException]) -> Tuple[Step, Any]:
        """What follows a round's outcome: ``(DONE, result)``, ``(FAIL, error)``, or a
        step to :meth:`prepare` before the next send (with what it needs)."""
        if error is not None:
            if (isinstance(error, SessionExpired) and error.request_sent is False
                    and not self._renewed):
                self._renewed = True
                return Step.RENEW, error
            if isinstance(error, ServerError):
                if (error.code == UNSUPPORTED_PROTOCOL_VERSION and self.runner.stateless()
                        and self._switched_round != self._rounds):
                    self._switched_round = self._rounds
                    return Step.SWITCH, error
                if error.code == HEADER_MISMATCH and self._refresh is not None:
                    return Step.REFRESH, error
            return Step.FAIL, error
        if not (self.inputs and input_required(result)):
            return Step.DONE, result
        self._rounds += 1
        limit = self.runner.limits.max_input_rounds
        if self._rounds > limit:
            return Step.FAIL, ProtocolError(
                f"{self.method} to {self.runner.name} still required input after "
                f"{limit} rounds")
        return Step.NEXT, result

    def prepare(self, step: Step, payload: Any) -> None:
        """Do what ``step`` needs before the next send (may block; runs user handlers
        for ``NEXT``). Raises what makes the call fail instead."""
        if step is Step.RENEW:
            self.session = self.runner.renew(self.session, payload)
        elif step is Step.SWITCH:
            self.runner.switch_to_listed(self.session, payload)
        elif step is Step.REFRESH:
            refresh, self._refresh = self._refresh, None
            assert refresh is not None  # decide() checked
            refresh()
        elif step is Step.NEXT:
            assert self.params is not None  # an input_required round had params
            self.round_params = self.runner.next_round(self.params, payload, self.cancelled)
        else:  # pragma: no cover - DONE and FAIL need no preparing
            raise AssertionError(step)

    def run(self, send: Callable[[RpcSession, Optional[Dict[str, Any]]], Any],
            first: Optional[Tuple[Any, Optional[MCPError]]] = None) -> Any:
        """The blocking driver: send, decide, prepare, until done. Each retry happens at
        most once (a round's version switch, the refresh, the renewal) and rounds are
        bounded, so this ends. ``first``, when given, is the outcome of the first send,
        made already: ``(result, error)``."""
        while True:
            if first is not None:
                (result, error), first = first, None
            else:
                try:
                    result = send(self.session, self.round_params)
                    error = None
                except MCPError as exc:
                    result, error = None, exc
            step, payload = self.decide(result, error)
            if step is Step.DONE:
                return payload
            if step is Step.FAIL:
                raise payload
            self.prepare(step, payload)


class RoundsFuture(RequestFuture):
    """The future driver of :class:`Rounds`: each send is an ordinary request future;
    when one settles, the machine decides there, and prepares the next send off that
    thread (the dispatch thread must never run user handlers or block). ``cancel()``
    cancels the send in flight on the wire and sets the handlers' ``cancelled`` event.
    With ``offload``, the final result is converted on the handler pool too: checking it
    against a server's outputSchema takes as long as that schema makes it.

    ``convert`` may hand the result over instead: when it returns a future (the task the
    server made of a tool call, followed on a thread of its own), this future settles
    as that one does, and cancelling this one cancels it.
    """

    def __init__(
        self,
        machine: Rounds,
        send: Callable[[RpcSession, Optional[Dict[str, Any]]], RequestFuture],
        convert: Callable[[Any], Any],
        *,
        offload: bool = False,
    ) -> None:
        super().__init__()
        self._machine = machine
        self._send = send
        self._convert = convert
        self._offload = offload
        self._current: Optional[RequestFuture] = None
        # The future the result was handed over to (see the class docstring), if any.
        self._handed: Optional[Future[Any]] = None

    def start(self) -> RoundsFuture:
        self._launch()
        return self

    def _launch(self) -> None:
        machine = self._machine
        try:
            current = self._send(machine.session, machine.round_params)
        except BaseException as exc:  # noqa: BLE001 - delivered to the future's owner
            self._fail(exc)
            return
        self._current = current
        self.request_id, self.method = current.request_id, current.method
        if self.cancelled():
            current.cancel()
            return
        current.add_done_callback(self._round_done)

    def _fail(self, error: BaseException) -> None:
        if not self.done():
            self.set_exception(error)

    def _round_done(self, current: Future[Any]) -> None:
        if self.done() or current.cancelled():
            return
        error = current.exception()
        step, payload = self._machine.decide(None if error else current.result(), error)
        if step is Step.DONE:
            # A check against an outputSchema runs on the handler pool, not on the dispatch
            # thread that resolved this round; a stopped pool means the session closed and
            # its dispatch thread is gone.
            if not (self._offload and self._machine.session.offload(self._finish, payload)):
                self._finish(payload)
            return
        if step is Step.FAIL:
            self._fail(payload)
            return
        if step is not Step.RENEW and self._machine.session.offload(self._next, step, payload):
            return
        # A renewal closes the dying session, pool included (and a stopped pool takes
        # nothing): a thread of its own.
        start_thread(self._next, f"mcp-sync-retry-{self._machine.runner.name}", step, payload)

    def _next(self, step: Step, payload: Any) -> None:
        if self.done():
            return  # cancelled while this job waited: run no handler for it
        try:
            self._machine.prepare(step, payload)
        except BaseException as exc:  # noqa: BLE001 - delivered to the future's owner
            self._fail(exc)
            return
        if not self.done():
            self._launch()

    def _finish(self, result: Any) -> None:
        # Converted even when cancelled meanwhile: a result handed over (a task the
        # server made of the call) must be seen, to be cancelled too (_hand_over).
        try:
            converted = self._convert(result)
        except Exception as exc:  # noqa: BLE001 - e.g. ProtocolError from validation
            settle(self, error=exc)
        else:
            if isinstance(converted, Future):
                self._hand_over(converted)
            else:
                settle(self, converted)

    def _hand_over(self, handed: Future[Any]) -> None:
        self._handed = handed
        if self.cancelled():  # cancel() ran before it could see the hand-over
            handed.cancel()
            return
        handed.add_done_callback(self._handed_done)

    def _handed_done(self, handed: Future[Any]) -> None:
        if self.done() or handed.cancelled():
            return
        error = handed.exception()
        if error is not None:
            settle(self, error=error)
        else:
            settle(self, handed.result())

    def cancel(self) -> bool:
        if not Future.cancel(self):
            return False
        self._machine.cancelled.set()
        current = self._current
        if current is not None:
            current.cancel()
        handed = self._handed
        if handed is not None:
            handed.cancel()
        return True


# -- the client's side ---------------------------------------------------------------------


class InputAnswers(Protocol):
    """The client's handlers, as a round needs them (``ServerCallbacks``)."""

    def fulfil_observed(self, request: Any, key: str, cancelled: threading.Event) -> Any:
        """Answer one input request with the user's handlers."""


class RoundsConnection(Protocol):
    """What a call's rounds use of the client's connection (read at each use: an
    application may change a setting after the client is made)."""

    @property
    def name(self) -> str: ...

    @property
    def timeouts(self) -> Timeouts: ...

    @property
    def limits(self) -> Limits: ...

    @property
    def callbacks(self) -> InputAnswers: ...

    def stateless(self) -> bool: ...

    def live_session(self) -> RpcSession:
        """The live session (``ClientNotConnected`` when there is none)."""

    def require_agreement(self) -> Agreement:
        """The current agreement (``ClientNotConnected`` before the first connect)."""

    def adopt(self, agreement: Agreement, session: RpcSession) -> None:
        """Make ``agreement`` the connection's, and hand it down to ``session``."""

    def renew(self, dead: RpcSession, cause: SessionExpired) -> RpcSession:
        """A new session after the server forgot the old one; returns it."""


class RoundsRunner:
    """Runs the client's calls through :class:`Rounds`; see the module docstring. One
    per connection: a call makes its machine and its send, nothing more."""

    def __init__(self, connection: RoundsConnection) -> None:
        self._connection = connection
        # Each call reads these (the groups are the connection's for its life; their
        # fields are read at each use).
        self._timeouts = connection.timeouts
        self.limits = connection.limits

    @property
    def name(self) -> str:
        return self._connection.name

    def stateless(self) -> bool:
        return self._connection.stateless()

    def renew(self, dead: RpcSession, cause: SessionExpired) -> RpcSession:
        """A new session after the server forgot the one of ``dead`` (the connection's
        :meth:`~RoundsConnection.renew`)."""
        return self._connection.renew(dead, cause)

    def start(self, method: str, params: Optional[Dict[str, Any]], *, inputs: bool,
              refresh: Optional[Callable[[], None]]) -> Rounds:
        """A call's machine, on the live session (``ClientNotConnected`` without one)."""
        return Rounds(self, self._connection.live_session(), method, params,
                      inputs=inputs, refresh=refresh)

    def round_trip(
        self,
        method: str,
        params: Optional[Dict[str, Any]],
        timeout: Timeout = DEFAULT,
        on_progress: Optional[ProgressCallback] = None,
        headers: Optional[Callable[[], Optional[Mapping[str, str]]]] = None,
        inputs: bool = True,
        refresh: Optional[Callable[[], None]] = None,
    ) -> Any:
        """One request to its result, blocking, with the retries of :class:`Rounds`:
        a renewed session, a -32022 version switch, ``refresh`` on a header mismatch,
        and with ``inputs`` the ``input_required`` rounds. ``headers()`` gives each
        send's extra headers (a refresh may change them); ``timeout`` is the client's
        own (read at each send) unless given. The hot path of every call."""
        session = self._connection.live_session()
        # The first send happens before the machine (and its send function) is made:
        # most calls are one send answered with a plain result, and need neither.
        try:
            result = self._send(session, method, params, timeout, on_progress, headers)
        except MCPError as exc:
            first: Tuple[Any, Optional[MCPError]] = (None, exc)
        else:
            # input_required(), inlined: this runs once per call.
            if not (inputs and isinstance(result, dict)
                    and result.get("resultType") == "input_required"):
                return result
            first = (result, None)

        def send(session: RpcSession, round_params: Optional[Dict[str, Any]]) -> Any:
            return self._send(session, method, round_params, timeout, on_progress, headers)

        machine = Rounds(self, session, method, params, inputs=inputs, refresh=refresh)
        return machine.run(send, first)

    def _send(self, session: RpcSession, method: str, params: Optional[Dict[str, Any]],
              timeout: Timeout, on_progress: Optional[ProgressCallback],
              headers: Optional[Callable[[], Optional[Mapping[str, str]]]]) -> Any:
        """One send of :meth:`round_trip`: the client's timeout read now."""
        return session.request(
            method, params, timeout=self._timeouts.timeout if timeout is DEFAULT else timeout,
            on_progress=on_progress, headers=headers() if headers is not None else None)

    def switch_to_listed(self, session: RpcSession, rejected: ServerError) -> None:
        """A -32022: switch to the newest stateless-era version the server lists.

        Raises:
            ServerError: ``rejected``, when the server lists none of them.
        """
        version = choose_version(rejected.data, self._connection.name, rejected)
        if version not in STATELESS_PROTOCOL_VERSIONS:
            raise rejected
        self.switch_version(session, version)

    def switch_version(self, session: RpcSession, version: str) -> None:
        """Adopt ``version`` of the current era and hand the agreement down."""
        connection = self._connection
        log.info("%s asked for protocol version %s; switching", connection.name, version)
        connection.adopt(connection.require_agreement().with_version(version), session)

    def next_round(self, params: Dict[str, Any], result: Dict[str, Any],
                   cancelled: threading.Event) -> Dict[str, Any]:
        """The params of the retry: the original ones plus this round's answers.

        ``cancelled`` is the event the handlers' contexts share: set when the call they
        answer for is cancelled (``call_tool_future``).
        """
        requests = result.get("inputRequests") or {}
        if not isinstance(requests, dict):
            raise ProtocolError(f"inputRequests from {self._connection.name} is not an object")
        retry = {k: v for k, v in params.items() if k not in ("inputResponses", "requestState")}
        if requests:
            fulfil = self._connection.callbacks.fulfil_observed
            retry["inputResponses"] = {
                key: fulfil(request, key, cancelled) for key, request in requests.items()
            }
        if "requestState" in result:
            retry["requestState"] = result["requestState"]
        return retry
