"""A server's outputSchema is checked in a sandbox (issue 19, §1; §6's first point): against
``tests/servers/schema_stdio.py``, a real stdio server whose tools declare hostile schemas.

* A reference outside the schema (a URL, a file, ``/dev/zero``, a meta-schema), to
  nothing, or back to itself, an invalid schema, one too large or too deep: each fails the
  call with ``InvalidToolSchema`` naming the tool, before the call is sent. Nothing is
  fetched (a local HTTP server sees no request), no file is read (its content appears in
  no error and no log record; a FIFO, which blocks whoever opens it, is never opened).
* Checking is bounded: a backtracking pattern, an exponential ``allOf``/``$ref`` schema
  and ``uniqueItems`` over many objects end within a few seconds, and a ping from another
  thread on the same client answers within a second meanwhile (``re`` held the GIL for
  the whole backtracking), on the blocking and the future form alike.
* In the 2026-07-28 era ``structuredContent`` may be any JSON value: it is kept, and
  checked against the outputSchema like an object.

The matcher behind ``pattern`` itself is tested in test_pattern.py.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest

import mcp_sync
from mcp_sync import InvalidToolSchema, ProtocolError

from ..conftest import PY, SERVERS

T = 10.0
# A check never takes longer than this here (a bound far above what each one takes, far
# below what they took before: from seconds to forever).
CHECK_BOUND = 5.0
# A ping from another thread answers within this while a check runs.
PING_BOUND = 1.0


def schema_server(*args: str) -> List[str]:
    return [PY, str(SERVERS / "schema_stdio.py"), *args]


def connect(*args: str, **kwargs: Any) -> mcp_sync.Client:
    kwargs.setdefault("timeout", T)
    return mcp_sync.connect(schema_server(*args), **kwargs)


def calls_received(client: mcp_sync.Client) -> int:
    """How many tools/call requests the server got (but those asking it this)."""
    answer = client.request("tools/call", {"name": "received",
                                           "arguments": {"method": "tools/call"}})
    count: int = answer["structuredContent"]["count"]
    return count


def refused(client: mcp_sync.Client, tool: str, **arguments: Any) -> InvalidToolSchema:
    """Call ``tool`` in both forms; each must fail before anything is sent."""
    with pytest.raises(InvalidToolSchema) as raised:
        client.call_tool(tool, arguments)
    with pytest.raises(InvalidToolSchema):
        client.call_tool_future(tool, arguments)
    error = raised.value
    assert error.tool == tool and error.server == client.name
    assert error.reason in str(error) and repr(tool) in str(error)
    assert calls_received(client) == 0  # the calls never reached the server
    return error


# -- references outside the schema -------------------------------------------------------------


def test_a_remote_ref_is_an_error_of_the_tool_and_nothing_is_fetched(
    schema_host: Dict[str, Any]
) -> None:
    with connect("--ref-url", schema_host["url"]) as client:
        error = refused(client, "remote_ref", value="x")
        assert "$ref" in error.reason and schema_host["url"] in error.reason
        assert "fetches" in error.reason
        # Judged once per listing: the same answer again, still without a request.
        with pytest.raises(InvalidToolSchema):
            client.call_tool("remote_ref", {"value": "x"})
    # validate_output=False calls such a tool on purpose, unchecked, and fetches nothing.
    with connect("--ref-url", schema_host["url"], validate_output=False) as client:
        assert client.call_tool("remote_ref", {"value": 1}).structured == {"value": 1}
        assert client.call_tool("self_ref", {"value": "x"}).structured == {"value": "x"}
    assert schema_host["requests"] == []


def test_a_file_ref_never_reads_the_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    secret = f"SECRET-{uuid.uuid4().hex}"
    path = tmp_path / "secret.json"
    path.write_text(json.dumps({"type": "string", "description": secret}))
    caplog.set_level(logging.DEBUG)
    with connect("--ref-file", str(path)) as client:
        errors = [refused(client, "file_ref", value="x"), refused(client, "path_ref", value="x")]
    assert path.as_uri() in errors[0].reason and str(path) in errors[1].reason
    seen = [str(error) for error in errors] + [record.getMessage() for record in caplog.records]
    assert not [text for text in seen if secret in text]

    # A FIFO blocks whoever opens it for reading until a writer comes: the calls end at
    # once, so nothing opened it.
    fifo = tmp_path / "schema.fifo"
    os.mkfifo(fifo)
    with connect("--ref-file", str(fifo)) as client:
        started = time.monotonic()
        refused(client, "file_ref", value="x")
        refused(client, "path_ref", value="x")
        assert time.monotonic() - started < CHECK_BOUND


@pytest.mark.parametrize("tool, reason", [
    ("dev_zero", "'/dev/zero' leads to nothing in the schema"),
    ("meta_ref", "'https://json-schema.org/draft/2020-12/schema' leads to nothing"),
    ("dangling", "'#/$defs/missing' leads to nothing in the schema"),
    ("self_ref", "refers to itself without looking into the value"),
    ("loop", "refers to itself without looking into the value"),
    ("invalid", "not a valid JSON schema: 12 is not valid"),
    ("huge", "more than 20,000 JSON values"),
    ("deep", "nests deeper than 64 levels"),
    ("other_dialect", "a subschema names another dialect"),
    ("bad_id", "its $id 'http://[::1' is not a usable URI"),
])
def test_a_schema_that_cannot_check_results_fails_the_call_before_it_is_sent(
    tool: str, reason: str
) -> None:
    """Not a RecursionError, not jsonschema's or referencing's own error, not a log line
    and an unchecked result: an ``InvalidToolSchema`` naming the tool."""
    with connect() as client:
        started = time.monotonic()
        error = refused(client, tool, value="x")
        assert time.monotonic() - started < CHECK_BOUND
        assert reason in error.reason
        assert isinstance(error, ProtocolError)
        # The rest of the server's tools are unaffected, and local references resolve.
        assert client.call_tool("local_ref", {"value": 2}).structured == {"value": 2}
        with pytest.raises(ProtocolError, match="'x' is not of type 'number'") as mismatch:
            client.call_tool("local_ref", {"value": "x"})
        assert not isinstance(mismatch.value, InvalidToolSchema)


# -- bounded work, the GIL shared ---------------------------------------------------------------


class Pinger:
    """Pings the client from its own thread until stopped, timing each answer."""

    def __init__(self, client: mcp_sync.Client) -> None:
        self.client = client
        self.latencies: List[float] = []
        self.first = threading.Event()
        self.stop = threading.Event()
        self.errors: List[BaseException] = []
        self.thread = threading.Thread(target=self.run, name="test-pinger")

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                started = time.monotonic()
                self.client.ping(timeout=T)
                self.latencies.append(time.monotonic() - started)
                self.first.set()
                self.stop.wait(0.01)  # pace: a ping every 10 ms or so
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.errors.append(exc)
            self.first.set()

    def __enter__(self) -> Pinger:
        self.thread.start()
        assert self.first.wait(T), "no ping answered before the check"
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.stop.set()
        self.thread.join(T)
        assert not self.thread.is_alive()


def call_in(form: str, client: mcp_sync.Client, tool: str, arguments: Dict[str, Any]) -> Any:
    """The result of a call, or the exception it raised."""
    try:
        if form == "blocking":
            return client.call_tool(tool, arguments)
        return client.call_tool_future(tool, arguments).result(T * 3)
    except Exception as exc:  # noqa: BLE001 - the test looks at it
        return exc


def bounded_while_pinging(client: mcp_sync.Client, run: Callable[[], Any]) -> Any:
    """``run()``'s outcome: within CHECK_BOUND, with pings answering meanwhile."""
    with Pinger(client) as pinger:
        answered_before = len(pinger.latencies)
        started = time.monotonic()
        outcome = run()
        elapsed = time.monotonic() - started
    assert not pinger.errors, pinger.errors
    assert elapsed < CHECK_BOUND, f"the check took {elapsed:.1f} s"
    during = pinger.latencies[answered_before:]
    assert during and max(during) < PING_BOUND, f"slowest ping: {max(during):.2f} s"
    return outcome


BACKTRACKING = [
    ("backtracking", {}),
    ("backtracking_keys", {"key": "a", "key_times": 26, "key_tail": "!", "value": 1}),
    ("backtracking_unevaluated", {"key": "a", "key_times": 26, "key_tail": "!", "value": 1}),
    ("backtracking_root", {"next": True}),
]


@pytest.mark.parametrize("form", ["blocking", "future"])
@pytest.mark.parametrize("tool, arguments", BACKTRACKING)
def test_a_backtracking_pattern_is_checked_in_linear_time(
    tool: str, arguments: Dict[str, Any], form: str
) -> None:
    """``^(a+)+$`` against 26 a's and a "!": seconds of ``re`` holding the GIL (every
    thread stalled), then as many more for each a added. Here it fails at once, pings
    answering, and a megabyte of a's fails as fast."""
    with connect() as client:
        for times in (26, 1_000_000):
            if "key" in arguments:
                sent = dict(arguments, key_times=times)
            else:
                sent = dict(arguments, text="a", text_times=times, text_tail="!")
            outcome = bounded_while_pinging(
                client, lambda sent=sent: call_in(form, client, tool, sent))
            assert isinstance(outcome, ProtocolError), outcome
            assert not isinstance(outcome, InvalidToolSchema)
            assert "does not match its outputSchema" in str(outcome)
        sent = dict(arguments, key="aaa", key_tail="") if "key" in arguments else dict(
            arguments, text="a", text_times=30)
        accepted = call_in(form, client, tool, sent)
        assert not isinstance(accepted, Exception), accepted  # a match still passes


@pytest.mark.parametrize("form", ["blocking", "future"])
def test_a_pattern_for_the_regex_package_stops_at_its_timeout(form: str) -> None:
    """A lookahead is the regex package's to run: it backtracks too, but releases the GIL
    and stops at its timeout (one second for a check)."""
    with connect() as client:
        outcome = bounded_while_pinging(client, lambda: call_in(
            form, client, "backtracking_regex", {"text": "a", "text_times": 60, "text_tail": "!"}))
        assert isinstance(outcome, InvalidToolSchema), outcome
        assert "takes more than 1.0 s of matching" in outcome.reason
        accepted = call_in(form, client, "backtracking_regex", {"text": "a", "text_times": 60})
        assert not isinstance(accepted, Exception), accepted


@pytest.mark.parametrize("form", ["blocking", "future"])
def test_an_exponential_schema_is_refused_within_its_budget(form: str) -> None:
    """Two ``$ref``s to the next definition under ``allOf``, 40 deep: 2**40 checks of
    ``type`` for jsonschema. The check spends its budget and stops."""
    with connect() as client:
        outcome = bounded_while_pinging(
            client, lambda: call_in(form, client, "exponential", {"value": 1}))
        assert isinstance(outcome, InvalidToolSchema), outcome
        assert outcome.tool == "exponential"
        assert re.search(r"takes more than [\d,]+ steps, past the bound for a result",
                         outcome.reason)
        client.ping(timeout=T)  # the client is fine


def test_unique_items_over_many_objects_is_checked_in_linear_time() -> None:
    """jsonschema compares every pair of objects: 20,000 took minutes."""
    with connect() as client:
        result = bounded_while_pinging(
            client, lambda: client.call_tool("unique", {"unique_objects": 20_000}))
        assert len(result.structured["value"]) == 20_000
        with pytest.raises(ProtocolError, match="has non-unique elements"):
            client.call_tool("unique", {"value": [{"a": 1, "b": [1]}, {"b": [1.0], "a": 1}]})
        assert client.call_tool("unique", {"value": [1, True, [1], [True]]}).structured


# -- 2026-07-28: structuredContent is any JSON value -------------------------------------------


def test_stateless_structured_content_of_any_json_value_is_kept_and_checked() -> None:
    with connect("--stateless") as client:
        assert client.protocol_version == "2026-07-28"
        result = client.call_tool("any_value", {"value": [1, 2, 3]})
        assert result.structured == [1, 2, 3]
        assert isinstance(result, mcp_sync.types.CallToolResult2026)
        future = client.call_tool_future("any_value", {"value": [4]})
        assert future.result(T).structured == [4]
        with pytest.raises(ProtocolError, match=r"at \$\[1\]: 'x' is not of type 'integer'"):
            client.call_tool("any_value", {"value": [1, "x"]})
        with pytest.raises(ProtocolError, match="is not of type 'array'"):
            client.call_tool("any_value", {"value": {"a": 1}})
        # null is a value too: checked, not taken for a missing structuredContent.
        with pytest.raises(ProtocolError, match="None is not of type 'array'"):
            client.call_tool("any_value", {"value": None})
    # The session era's CallToolResult has an object there, as its schema says.
    with connect(protocol_version="2025-11-25") as client, pytest.raises(
            ProtocolError, match="invalid tools/call result"):
        client.call_tool("any_value", {"value": [1, 2, 3]})
