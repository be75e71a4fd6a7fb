"""The session's parts that are pure logic, fed directly: no threads, no I/O.

The link's closed state (``_rpc/link.py``), the inbox's accounting (``_rpc/queues.py``),
the observer plumbing (``_rpc/observer.py``) and the notification helpers
(``_rpc/notifications.py``, ``_rpc/serving.py``).
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any, Dict, List, Mapping, Optional, Tuple

import pytest

from mcp_sync import ClientNotConnected, ConnectionClosed, ForkedClientError, ServerError
from mcp_sync._protocol.agreement import Agreement
from mcp_sync._rpc.link import Link
from mcp_sync._rpc.notifications import merge_key
from mcp_sync._rpc.observer import ObservedFuture, progress_attributes
from mcp_sync._rpc.queues import STOP, WAKE, Inbox
from mcp_sync._rpc.serving import answer_error, to_wire
from mcp_sync.types import Implementation

# -- the link ------------------------------------------------------------------------------


def started_link() -> Link:
    link = Link(object(), "srv")  # type: ignore[arg-type]  # the link only holds it
    link.started = True
    return link


def test_a_link_is_unusable_until_started_and_says_which_server() -> None:
    link = Link(object(), "srv")  # type: ignore[arg-type]
    with pytest.raises(ClientNotConnected, match="srv"):
        link.check_usable()
    link.started = True
    link.check_usable()  # nothing raised: usable


def test_the_first_close_report_wins_and_every_caller_gets_its_own_copy() -> None:
    link = started_link()
    cause = OSError("pipe")
    first = ConnectionClosed("the server exited", exit_code=3, stderr_tail=["boom"])
    first.__cause__ = cause
    assert link.mark_closed(first) is True
    assert link.mark_closed(ConnectionClosed("later")) is False
    assert link.closed_error is first and link.lost  # close() was not called: lost
    copies = []
    for _ in range(2):
        with pytest.raises(ConnectionClosed) as info:
            link.check_usable()
        copies.append(info.value)
    assert copies[0] is not copies[1] and copies[0] is not first
    for copy in copies:
        assert (copy.reason, copy.exit_code, copy.stderr_tail) == ("the server exited", 3,
                                                                   ["boom"])
        assert copy.__cause__ is cause


def test_a_closed_copy_before_any_report_names_the_server() -> None:
    error = started_link().closed_copy()
    assert isinstance(error, ConnectionClosed) and "srv" in str(error)


def test_a_link_closed_by_its_user_is_not_lost_and_reports_what_close_was_given() -> None:
    link = started_link()
    failure = RuntimeError("handshake failed")
    assert link.stop(failure) is True
    assert link.stop(None) is False  # idempotent: the first failure stays
    assert link.mark_closed(ConnectionClosed("closed")) is True
    assert not link.lost
    assert link.ending_error() is failure


def test_a_lost_link_reports_the_transport_error_not_the_failure_given_later() -> None:
    link = started_link()
    lost = ConnectionClosed("the server exited")
    link.mark_closed(lost)
    link.stop(RuntimeError("too late"))
    assert link.lost and link.ending_error() is lost


def test_a_forked_link_refuses_before_anything_else() -> None:
    link = started_link()
    link.mark_closed(ConnectionClosed("closed"))
    link.forked = True
    with pytest.raises(ForkedClientError, match="srv"):
        link.check_usable()


def test_server_info_is_known_only_once_the_agreement_is_settled() -> None:
    link = started_link()
    assert link.server_info() is None
    info = {"name": "everything", "version": "1"}
    link.agreement = Agreement("session", "2025-11-25", server_info=info, settled=False)
    assert link.server_info() is None  # a proposal, mid-handshake
    link.agreement = Agreement("session", "2025-11-25", server_info=info)
    assert link.server_info() == info
    link.agreement = Agreement("session", "2025-11-25")
    assert link.server_info() is None  # settled, but the server said nothing


# -- the inbox -----------------------------------------------------------------------------


def drain(inbox: Inbox) -> List[Any]:
    items = []
    while not inbox.messages.empty():
        items.append(inbox.messages.get_nowait())
    return items


def test_the_inbox_counts_what_readers_put_not_the_markers() -> None:
    inbox = Inbox(2, started_link())
    assert inbox.put_shared({"id": 1}) and inbox.put_shared(None)  # null is a message too
    inbox.wake()
    inbox.put_marker("marker")
    assert (inbox.queued, inbox.routed) == (2, 0)
    assert drain(inbox) == [{"id": 1}, None, WAKE, "marker"]


def test_a_full_inbox_has_room_again_once_routed() -> None:
    inbox = Inbox(2, started_link())
    assert inbox.room()
    inbox.put_shared(1)
    inbox.put_shared(2)
    inbox.routed += 1  # the dispatch thread routed one
    assert inbox.room() and inbox.put_shared(3)
    assert inbox.queued == 3 and drain(inbox) == [1, 2, 3]


@pytest.mark.parametrize("how", ["stopped", "closed"])
def test_a_full_inbox_of_a_finished_session_drops_at_once(how: str) -> None:
    link = started_link()
    inbox = Inbox(1, link)
    inbox.put_shared("first")
    if how == "stopped":
        link.stop(None)
    else:
        link.mark_closed(ConnectionClosed("closed"))
    assert inbox.room() is False  # no wait: nothing would ever route it
    assert inbox.put_shared("second") is False
    assert inbox.queued == 1 and drain(inbox) == ["first"]


def test_readers_that_may_not_wait_go_past_the_bound() -> None:
    link = started_link()
    link.stop(None)  # would refuse any reader that waits
    inbox = Inbox(1, link, readers_may_wait=False)  # an in-process server
    assert inbox.put_shared(1) and inbox.put_shared(2)
    assert drain(inbox) == [1, 2]


def test_stopping_the_inbox_queues_stop() -> None:
    inbox = Inbox(1, started_link())
    inbox.stop()
    assert drain(inbox) == [STOP]


# -- the observer plumbing -----------------------------------------------------------------


class Recorder:
    """A RequestObserver that records what it is told."""

    def __init__(self, fail_start: bool = False,
                 meta: Optional[Mapping[str, Any]] = None,
                 headers: Optional[Mapping[str, str]] = None) -> None:
        self.fail_start = fail_start
        self.meta = meta
        self.headers = headers
        self.finished_with: List[Tuple[Any, Any, Optional[BaseException]]] = []
        self.events: List[Tuple[Any, str, Dict[str, Any]]] = []

    def started(self, session: Any, method: str, params: Any, request_id: Any,
                ) -> Tuple[Any, Optional[Mapping[str, Any]], Optional[Mapping[str, str]]]:
        if self.fail_start:
            raise RuntimeError("observer broken")
        return f"token-{request_id}", self.meta, self.headers

    def finished(self, token: Any, result: Any, error: Optional[BaseException]) -> None:
        self.finished_with.append((token, result, error))

    def event(self, token: Any, name: str, attributes: Mapping[str, Any]) -> None:
        self.events.append((token, name, dict(attributes)))


def observed(recorder: Recorder) -> Tuple[ObservedFuture, Future[Any]]:
    future: Future[Any] = Future()
    return ObservedFuture(future, recorder), future  # type: ignore[arg-type]


def test_an_outcome_before_the_token_is_reported_once_the_token_is_known() -> None:
    recorder = Recorder()
    entry, future = observed(recorder)
    entry.set_result({"ok": True})  # the response beat started()'s return
    assert future.result(0) == {"ok": True} and recorder.finished_with == []
    entry.start(None, "tools/call", None, 7, None, None)  # type: ignore[arg-type]
    assert recorder.finished_with == [("token-7", {"ok": True}, None)]


def test_the_observer_hears_of_one_outcome_only() -> None:
    recorder = Recorder()
    entry, future = observed(recorder)
    entry.start(None, "ping", None, 1, None, None)  # type: ignore[arg-type]
    timed_out = TimeoutError("gave up")
    entry.observe_outcome(None, timed_out)  # a blocked caller gave up and raises it
    entry.set_exception(ConnectionClosed("closed"))  # then the close settles the future
    assert recorder.finished_with == [("token-1", None, timed_out)]
    assert isinstance(future.exception(0), ConnectionClosed)


def test_a_broken_observer_never_stops_the_request() -> None:
    recorder = Recorder(fail_start=True)
    entry, future = observed(recorder)
    meta, headers = entry.start(None, "ping", None, 1, {"k": 1},  # type: ignore[arg-type]
                                {"h": "v"})
    assert (meta, headers) == ({"k": 1}, {"h": "v"})  # unchanged
    entry.note("notifications/progress", {"progress": 1})
    entry.set_result({})
    assert future.result(0) == {} and recorder.finished_with == [] and recorder.events == []


def test_what_the_observer_adds_never_overrides_the_session_or_the_caller() -> None:
    recorder = Recorder(meta={"traceparent": "t", "k": "observer"},
                        headers={"traceparent": "t", "X-Mine": "observer"})
    entry, _ = observed(recorder)
    meta, headers = entry.start(None, "ping", None, 1,  # type: ignore[arg-type]
                                {"k": "session"}, {"X-Mine": "caller"})
    assert meta == {"traceparent": "t", "k": "session"}
    assert headers == {"traceparent": "t", "X-Mine": "caller"}


def test_events_reach_the_observer_only_while_the_request_is_in_flight() -> None:
    recorder = Recorder()
    entry, _ = observed(recorder)
    entry.note("notifications/progress", {"progress": 0})  # no token yet: dropped
    entry.start(None, "tools/call", None, 2, None, None)  # type: ignore[arg-type]
    entry.note("notifications/progress", {"progress": 1})
    entry.set_result({})
    entry.note("notifications/progress", {"progress": 2})  # settled: dropped
    assert recorder.events == [("token-2", "notifications/progress", {"progress": 1})]


def test_progress_attributes_keep_numbers_and_a_cut_message() -> None:
    attributes = progress_attributes({"progress": 2, "total": True, "message": "m" * 500,
                                      "progressToken": 1, "extra": {"x": 1}})
    assert attributes["progress"] == 2 and "total" not in attributes  # a bool is no number
    assert set(attributes) == {"progress", "message"}
    assert len(attributes["message"]) < 250


# -- notification and answer helpers -------------------------------------------------------


@pytest.mark.parametrize(("method", "params", "key"), [
    ("notifications/tools/list_changed", None, "notifications/tools/list_changed"),
    ("notifications/resources/updated", {"uri": "a://b"},
     ("notifications/resources/updated", "a://b")),
    ("notifications/resources/updated", {"uri": 5}, None),
    ("notifications/resources/updated", None, None),
    ("notifications/message", {"level": "info"}, None),
])
def test_merge_key_says_which_change_notifications_say_the_same(
        method: str, params: Any, key: Any) -> None:
    assert merge_key(method, params) == key


def test_to_wire_dumps_models_by_alias_and_none_as_an_empty_result() -> None:
    assert to_wire(None) == {}
    assert to_wire({"a": None}) == {"a": None}  # a dict goes as given
    assert to_wire(Implementation(name="n", version="1", title=None)) == {"name": "n",
                                                                         "version": "1"}


def test_answer_error_reads_the_error_an_answer_carries() -> None:
    assert answer_error({"jsonrpc": "2.0", "id": 1, "result": {}}) is None
    error = answer_error({"jsonrpc": "2.0", "id": 1,
                          "error": {"code": -32601, "message": "Method not found: x"}})
    assert isinstance(error, ServerError) and error.code == -32601
