"""The peer of tests/client/test_call_forms.py: one FakeServer, the same over stdio and HTTP.

``python tests/servers/forms_server.py [--stateless]`` serves it over stdio; the tests
host it over Streamable HTTP in their own process (``McpHttpServer(forms.fake)``, with
``forms.param_header_check`` as the post hook in the 2026-07-28 era). ``--stateless``
(``Forms(stateless=True)``) also answers ``server/discover``: the 2026-07-28 era.

Tools:

* ``echo(text)``; ``fail(message)``: a result with ``isError: true``.
* ``shaped(value)``: ``{"value": value}`` as structuredContent; its outputSchema wants a
  number.
* ``progress(steps)``: ``steps`` progress notifications (``k`` of ``steps``, message
  ``step k``), then ``done``.
* ``hold(tag, announce=False)``: waits (30 s at most) until the call is cancelled, with a
  progress notification first if ``announce``; ``was_cancelled(tag, wait)`` tells whether
  the hold of ``tag`` saw its cancellation within ``wait`` seconds. The session era
  cancels with ``notifications/cancelled``; the 2026-07-28 era over HTTP by closing the
  response stream, which the HTTP server reports to :meth:`Forms.stream_closed`.
* ``ask(requests)``: (session era) sends each ``{"method", "params"}`` of ``requests`` to
  the client in turn and returns the results (or errors) as structuredContent.
* ``rounds(plan, reject_version_at=-1)``: (2026-07-28) one ``input_required`` round per
  entry of ``plan`` (its ``inputRequests``), the answers so far carried in
  ``requestState``; then the ``inputResponses`` of every round as structuredContent
  ``{"responses": [...]}``. The first request of round ``reject_version_at`` (counted
  from 0) is answered -32022, listing 2026-07-28.
* ``endless()``: (2026-07-28) ``input_required`` for ever, ``requestState`` ``s1``, ``s2``...
* ``rejects_version(tag, times)``: answers the first ``times`` calls of ``tag`` with
  -32022 (unsupported protocol version, listing 2026-07-28), then ``attempt N``.
* ``regional(region)``: ``region`` carries ``x-mcp-header: Region``;
  ``rename_header(name)`` renames that header (the listing and the server's check);
  ``stale(region)`` is listed with ``Region`` but checked against ``Zone``: a mismatch
  that no refresh repairs.
* ``mismatch()``: answers -32020 (header mismatch) itself, on any transport.
* ``received(method)``: the messages of ``method`` this server received, in order.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional, Set

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcp_sync.testing import FakeServer, RpcError, ToolContext

STATELESS = "2026-07-28"
SESSION_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
NUMBER_RESULT = {"type": "object", "properties": {"value": {"type": "number"}},
                 "required": ["value"]}
HOLD_LIMIT = 30.0  # the longest a hold waits for its cancellation


def _header_tool(header: str) -> Dict[str, Any]:
    return {"type": "object", "required": ["region"], "properties": {
        "region": {"type": "string", "x-mcp-header": header}}}


class Forms:
    """The FakeServer (``fake``) and the state its tools share."""

    def __init__(self, stateless: bool) -> None:
        self.fake = FakeServer("forms", "1.0")
        # Guards every attribute below.
        self._lock = threading.Lock()
        self._holds: Dict[Any, ToolContext] = {}  # running holds, by request id
        self._closed_streams: Set[Any] = set()  # request ids whose stream the client closed
        self._cancelled: Dict[str, threading.Event] = {}  # by tag
        self._attempts: Dict[str, int] = {}  # rejects_version calls, by tag
        # The header the server checks for each x-mcp-header tool (HTTP, 2026-07-28).
        self.checked_headers = {"regional": "Region", "stale": "Zone"}
        self._define(stateless)

    def cancelled(self, tag: str) -> threading.Event:
        with self._lock:
            return self._cancelled.setdefault(tag, threading.Event())

    def stream_closed(self, request_id: Any) -> None:
        """The client closed a request's response stream: in the 2026-07-28 era over
        HTTP, that request is cancelled."""
        with self._lock:
            self._closed_streams.add(request_id)
            ctx = self._holds.get(request_id)
        if ctx is not None:
            ctx.cancelled.set()

    def _call(self, ctx: ToolContext) -> Dict[str, Any]:
        """The tools/call message ``ctx`` runs (for the params beyond the arguments)."""
        return next(m for m in reversed(ctx.connection.received)
                    if m.get("id") == ctx.request_id and m.get("method") == "tools/call")

    def _define(self, stateless: bool) -> None:
        fake = self.fake

        @fake.tool()
        def echo(text: str) -> str:
            """Echo the text."""
            return text

        @fake.tool()
        def fail(message: str) -> str:
            """Fail: the result has isError true."""
            raise RuntimeError(message)

        @fake.tool(output_schema=NUMBER_RESULT)
        def shaped(value: Any) -> Dict[str, Any]:
            """{"value": value} as structuredContent, whatever its type."""
            return {"value": value}

        @fake.tool()
        def progress(steps: int, ctx: ToolContext) -> str:
            """Report `steps` steps of progress, then answer."""
            for step in range(1, steps + 1):
                ctx.progress(step, steps, f"step {step}")
            return "done"

        @fake.tool()
        def hold(tag: str, ctx: ToolContext, announce: bool = False) -> str:
            """Wait until cancelled (30 s at most)."""
            with self._lock:
                self._holds[ctx.request_id] = ctx
                if ctx.request_id in self._closed_streams:
                    ctx.cancelled.set()
            try:
                if announce:
                    ctx.progress(0, None, "holding")
                if ctx.cancelled.wait(HOLD_LIMIT):
                    self.cancelled(tag).set()
                    return "cancelled"
                return "released"
            finally:
                with self._lock:
                    self._holds.pop(ctx.request_id, None)

        @fake.tool()
        def was_cancelled(tag: str, wait: float) -> Dict[str, Any]:
            """Whether the hold of `tag` saw its cancellation within `wait` seconds."""
            return {"cancelled": self.cancelled(tag).wait(wait)}

        @fake.tool()
        def ask(requests: List[Dict[str, Any]], ctx: ToolContext) -> Dict[str, Any]:
            """Send each request to the client in turn; return what each got."""
            answers = []
            for request in requests:
                try:
                    answers.append({"result": ctx.request(request["method"],
                                                          request.get("params"), 10.0)})
                except RpcError as exc:
                    answers.append({"error": exc.error})
            return {"answers": answers}

        @fake.tool()
        def mismatch() -> str:
            """Answer -32020 (header mismatch)."""
            raise RpcError({"code": -32020, "message": "Header mismatch: Mcp-Param-Region"})

        @fake.tool()
        def received(method: str) -> List[Dict[str, Any]]:
            """Messages this server received with the given method, in order."""
            return [m for c in fake.connections for m in c.received
                    if m.get("method") == method]

        if stateless:
            self._define_stateless()

    def _define_stateless(self) -> None:
        fake = self.fake

        @fake.method("server/discover")
        def discover(params: Dict[str, Any]) -> Dict[str, Any]:
            return {"resultType": "complete", "supportedVersions": [STATELESS, *SESSION_VERSIONS],
                    "capabilities": fake.capabilities(),
                    "_meta": {"io.modelcontextprotocol/serverInfo": {
                        "name": fake.name, "version": fake.version}}}

        @fake.tool()
        def rounds(plan: List[Dict[str, Any]], ctx: ToolContext,
                   reject_version_at: int = -1) -> Dict[str, Any]:
            """One input_required round per entry of `plan`, then every round's answers;
            the first request of round `reject_version_at` (from 0) is answered -32022."""
            params = self._call(ctx)["params"]
            state = params.get("requestState")
            answered: List[Any] = json.loads(state) if state else []
            if state:
                answered.append(params.get("inputResponses"))
            if len(answered) == reject_version_at:
                key = f"rounds: round {reject_version_at}"
                with self._lock:
                    attempt = self._attempts[key] = self._attempts.get(key, 0) + 1
                if attempt == 1:
                    raise RpcError({"code": -32022, "message": "Unsupported protocol version",
                                    "data": {"supported": [STATELESS]}})
            if len(answered) < len(plan):
                return {"resultType": "input_required", "content": [],
                        "inputRequests": plan[len(answered)],
                        "requestState": json.dumps(answered)}
            return {"content": [{"type": "text", "text": f"{len(answered)} rounds"}],
                    "structuredContent": {"responses": answered}}

        @fake.tool()
        def endless(ctx: ToolContext) -> Dict[str, Any]:
            """input_required, for ever."""
            state = self._call(ctx)["params"].get("requestState") or "s0"
            return {"resultType": "input_required", "content": [],
                    "requestState": f"s{int(state[1:]) + 1}"}

        @fake.tool()
        def rejects_version(tag: str, times: int, ctx: ToolContext) -> str:
            """Answer -32022 to the first `times` calls of `tag`."""
            with self._lock:
                attempt = self._attempts[tag] = self._attempts.get(tag, 0) + 1
            if attempt <= times:
                meta = self._call(ctx)["params"].get("_meta") or {}
                raise RpcError({"code": -32022, "message": "Unsupported protocol version",
                                "data": {"supported": [STATELESS],
                                         "requested": meta.get(
                                             "io.modelcontextprotocol/protocolVersion")}})
            return f"attempt {attempt}"

        fake.tool(name="regional", input_schema=_header_tool("Region"),
                  description="The region, mirrored into a header.")(
            lambda region: f"region={region}")
        fake.tool(name="stale", input_schema=_header_tool("Region"),
                  description="Listed with the Region header, checked against Zone.")(
            lambda region: f"region={region}")

        @fake.tool()
        def rename_header(name: str) -> str:
            """Mirror `regional`'s argument into Mcp-Param-<name> from now on."""
            fake.tools["regional"].definition["inputSchema"] = _header_tool(name)
            self.checked_headers["regional"] = name
            return f"renamed to {name}"

    def param_header_check(self, handler: Any, message: Any) -> bool:
        """An McpHttpServer post hook: answer a tools/call whose Mcp-Param headers do not
        match its arguments (as the server defines the tool now) with HTTP 400 and -32020."""
        if not isinstance(message, dict) or message.get("method") != "tools/call":
            return False
        params = message.get("params") or {}
        header = self.checked_headers.get(params.get("name"))
        if header is None:
            return False
        sent = {key.lower(): value for key, value in handler.headers.items()
                if key.lower().startswith("mcp-param-")}
        region = (params.get("arguments") or {}).get("region")
        if sent == {f"mcp-param-{header.lower()}": region}:
            return False
        handler.send_json({"jsonrpc": "2.0", "id": message.get("id"), "error": {
            "code": -32020, "message": f"Header mismatch: expected Mcp-Param-{header}",
            "data": {"sent": sorted(sent)}}}, 400)
        return True


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stateless", action="store_true",
                        help="answer server/discover: serve the 2026-07-28 era too")
    options = parser.parse_args(argv)
    Forms(options.stateless).fake.serve_stdio()


if __name__ == "__main__":
    main()
