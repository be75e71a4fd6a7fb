"""Streamable HTTP: a response that opens its stream resolves its caller on the stream
thread, without the dispatch thread; wire order within a stream still holds.

Against the threaded ``tests/servers/http_server.py``. The dispatch thread is held from
outside by a :class:`~mcp_sync._rpc.session.RequestObserver` (the hook tracing uses), which is told
of every notification from the server on that thread, around its routing: this one waits
on a gate for the notification the test marks.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, Iterator, List, Mapping, Optional, Tuple

import pytest

from mcp_sync import HttpTransport
from mcp_sync._protocol import SESSION_ERA
from mcp_sync._protocol.agreement import Agreement
from mcp_sync._rpc.session import RpcSession
from mcp_sync.testing import FakeServer, ToolContext

from ..servers.http_server import McpHttpServer

WAIT = 10.0  # the bound for anything a test waits on; nothing should come near it
STEPS = 20
VERSION = "2025-11-25"


class HoldingObserver:
    """Holds the dispatch thread on ``gate`` while it routes the notification whose
    ``data`` is ``"hold"``; observes nothing else."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.holding = threading.Event()

    def active(self) -> bool:
        return True

    def started(self, session: Any, method: str, params: Optional[Mapping[str, Any]],
                request_id: Any) -> Tuple[Any, None, None]:
        return None, None, None

    def finished(self, token: Any, result: Any, error: Optional[BaseException]) -> None:
        pass

    def event(self, token: Any, name: str, attributes: Mapping[str, Any]) -> None:
        pass

    def serving(self, session: Any, method: str, params: Any, request_id: Any) -> Any:
        if request_id is None and isinstance(params, dict) and params.get("data") == "hold":
            self.holding.set()
            self.gate.wait(3 * WAIT)  # longer than any wait of the test: it opens the gate
        return None

    def served(self, token: Any, error: Optional[BaseException]) -> None:
        pass

    def opened(self, session: Any) -> Any:
        return None

    def ended(self, session: Any, token: Any, error: Optional[BaseException]) -> None:
        pass


def make_fake() -> FakeServer:
    fake = FakeServer("http-direct")

    @fake.tool()
    def echo(text: str) -> str:
        return text

    @fake.tool()
    def steps(ctx: ToolContext) -> str:
        """Progress ``STEPS`` times, then the answer: all on the request's stream."""
        for step in range(1, STEPS + 1):
            ctx.progress(step, STEPS)
        return "done"

    return fake


@pytest.fixture
def server() -> Iterator[McpHttpServer]:
    with McpHttpServer(make_fake()) as running:
        yield running


class Session:
    """An RpcSession over HTTP with the handshake done and the GET stream open."""

    def __init__(self, server: McpHttpServer) -> None:
        self.observer = HoldingObserver()
        self.notes: List[Any] = []
        self.noted = threading.Condition()
        self.rpc = RpcSession(HttpTransport(server.url), default_timeout=WAIT,
                              on_notification=self._on_notification, observer=self.observer)
        self.rpc.start()
        self.rpc.request("initialize", {"protocolVersion": VERSION, "capabilities": {},
                                        "clientInfo": {"name": "test", "version": "0"}})
        self.rpc.agree(Agreement(SESSION_ERA, VERSION))  # opens the GET stream
        self.rpc.notify("notifications/initialized")

    def _on_notification(self, method: str, params: Any) -> None:
        if method == "notifications/message":
            with self.noted:
                self.notes.append(params["data"])
                self.noted.notify_all()

    def wait_for_notes(self, count: int) -> bool:
        with self.noted:
            return self.noted.wait_for(lambda: len(self.notes) >= count, WAIT)

    def hold_dispatch(self, server: McpHttpServer) -> None:
        """The server sends the marked notification on the GET stream; returns once the
        dispatch thread is held routing it."""
        server.push("notifications/message", {"level": "info", "data": "hold"})
        assert self.observer.holding.wait(WAIT)

    def close(self) -> None:
        self.observer.gate.set()
        self.rpc.close()


@pytest.fixture
def session(server: McpHttpServer) -> Iterator[Session]:
    opened = Session(server)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def caller() -> Iterator[ThreadPoolExecutor]:
    """A thread for the blocking call, so that the test can watch it from outside."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="test-caller")
    try:
        yield pool
    finally:
        pool.shutdown(wait=True)


@pytest.mark.parametrize("reply", ["json", "sse"])
def test_a_response_opening_its_stream_needs_no_dispatch_thread(
        server: McpHttpServer, session: Session, caller: ThreadPoolExecutor,
        reply: str) -> None:
    """A JSON reply, or an event stream whose first message is the response, resolves
    the blocked caller on the stream thread: the call returns while the dispatch thread
    is held (it did not, when every response went through dispatch)."""
    server.reply = reply
    session.hold_dispatch(server)
    call = caller.submit(session.rpc.request, "tools/call",
                         {"name": "echo", "arguments": {"text": "quick"}})
    try:
        assert wait([call], WAIT).done, "the call waited for the held dispatch thread"
        assert call.result()["content"][0]["text"] == "quick"
    finally:
        session.observer.gate.set()
    assert session.wait_for_notes(1) and session.notes == ["hold"]


def test_a_response_behind_progress_on_its_stream_waits_for_their_routing(
        server: McpHttpServer, session: Session, caller: ThreadPoolExecutor) -> None:
    """An event stream carrying progress before the response: the response is routed
    after them, so the call returns only once the dispatch thread routed each progress
    notification, and every progress callback runs, in order. (Resolved ahead of them,
    the call would return while dispatch is held, and the progress would find its
    request gone and be dropped.)"""
    server.reply = "sse"
    progress: List[float] = []
    all_progress = threading.Event()

    def on_progress(done: float, total: Optional[float], message: Optional[str]) -> None:
        progress.append(done)
        if len(progress) == STEPS:
            all_progress.set()

    session.hold_dispatch(server)
    call = caller.submit(session.rpc.request, "tools/call", {"name": "steps", "arguments": {}},
                         on_progress=on_progress)
    try:
        posted = server.wait_for(lambda r: r.method == "POST" and r.rpc_method == "tools/call")
        assert server.stream_end(posted.json["id"]).wait(WAIT)  # every event is written
        assert not call.done()
    finally:
        session.observer.gate.set()
    assert call.result(WAIT)["content"][0]["text"] == "done"
    assert all_progress.wait(WAIT), progress
    assert progress == [float(step) for step in range(1, STEPS + 1)]


def test_get_stream_notifications_are_routed_in_wire_order(
        server: McpHttpServer, session: Session) -> None:
    """The GET stream's first message may take the direct path only if it answers a
    blocked call: its notifications, the first included, all go through dispatch, in
    the order they came, even while dispatch is held and they pile up."""
    session.hold_dispatch(server)
    for n in range(50):
        server.push("notifications/message", {"level": "info", "data": n})
    session.observer.gate.set()
    assert session.wait_for_notes(51), session.notes
    assert session.notes == ["hold", *range(50)]
