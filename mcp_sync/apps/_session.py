"""One app's bridge joined to its server's client: each message from the app answered,
its tool calls made on the client.

What a host page's script gets back for each message it forwarded (a *host reply*,
JSON)::

    {"post": [...],        # JSON-RPC messages to post to the app's frame, in order
     "resize": {...},      # the frame size the app asked for, clamped, or null
     "deliver": false,     # true: the app is initialised, post it the tool's data
     "refused": null}      # why the message was refused, or null
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Union

from .._protocol import DEFAULT, Timeout
from .._util.text import excerpt
from ..exceptions import MCPError
from ._bridge import INTERNAL_ERROR, AppBridge, Step, ToolCall

if TYPE_CHECKING:
    from .. import types
    from ..client import Client

__all__ = ["AppSession", "host_reply"]

log = logging.getLogger(__name__)

Message = Union[str, bytes, Mapping[str, Any]]


def host_reply(step: Step, post: Optional[List[Dict[str, Any]]] = None) -> Dict[str, Any]:
    """The host reply for ``step`` (its own ``reply`` posted first, then ``post``)."""
    messages = ([step.reply] if step.reply is not None else []) + list(post or ())
    return {"post": messages, "resize": step.resize, "deliver": step.deliver,
            "refused": step.refused}


class AppSession:
    """The app of one tool of one server, as one page shows it.

    Args:
        client: the server's connected client (the server that served the app: the
            only one the app's calls reach).
        bridge: the app's bridge (``App.bridge()``).
        timeout: seconds each request the app causes may take (the client's default
            when not given).
        max_calls: the most tool calls of this app in flight at once, in
            :meth:`handle_async` (past it a call is answered with an error at once).

    Can be shared between threads.
    """

    def __init__(self, client: Client, bridge: AppBridge, *, timeout: Timeout = DEFAULT,
                 max_calls: int = 8) -> None:
        if max_calls < 1:
            raise ValueError("max_calls must be at least 1")
        self.client = client
        self.bridge = bridge
        self.timeout = timeout
        self.max_calls = max_calls
        self._lock = threading.Lock()  # guards _in_flight
        self._in_flight = 0

    def _authorized(self, call: ToolCall) -> Step:
        """The call checked against the server's tools as listed now."""
        try:
            tools = self.client.list_tools(timeout=self.timeout)
        except MCPError as exc:
            log.warning("app of %s: listing the tools failed: %s",
                        excerpt(self.client.name, 100), excerpt(exc, 300))
            return Step("tools/call", reply=self.bridge.error_reply(call, exc),
                        refused="the server's tools could not be listed")
        step = self.bridge.authorize(call, tools)
        if step.call is not None:
            log.info("app of %s calls tool %s", excerpt(self.client.name, 100),
                     excerpt(call.name, 100))
        return step

    def _answered(self, call: ToolCall, result: Optional[types.CallToolResult],
                  error: Optional[BaseException]) -> Dict[str, Any]:
        if error is not None:
            log.info("app of %s: tool %s failed: %s", excerpt(self.client.name, 100),
                     excerpt(call.name, 100), excerpt(error, 300))
            return self.bridge.error_reply(call, error)
        assert result is not None
        return self.bridge.tool_reply(call, result)

    def handle(self, message: Message) -> Dict[str, Any]:
        """The host reply to one message of the app; a tool call is made here and waited
        for (bounded by ``timeout``). Never raises for what the app or the server did:
        their faults are error replies."""
        step = self.bridge.receive(message)
        if step.call is None:
            return host_reply(step)
        step = self._authorized(step.call)
        if step.call is None:
            return host_reply(step)
        call = step.call
        try:
            result = self.client.call_tool(call.name, call.arguments, timeout=self.timeout)
        except MCPError as exc:
            return host_reply(Step("tools/call"), [self._answered(call, None, exc)])
        return host_reply(Step("tools/call"), [self._answered(call, result, None)])

    def handle_async(self, message: Message, answer: Callable[[Dict[str, Any]], None]) -> None:
        """Answer one message of the app through ``answer(host_reply)``: at once, on
        this thread, unless it is an allowed tool call, which is sent as a future and
        answered from the client's thread when its result (or error) arrives. At most
        ``max_calls`` calls are in flight; ``answer`` must not raise."""
        step = self.bridge.receive(message)
        if step.call is not None:
            step = self._authorized(step.call)
        if step.call is None:
            answer(host_reply(step))
            return
        call = step.call
        with self._lock:
            busy = self._in_flight >= self.max_calls
            if not busy:
                self._in_flight += 1
        if busy:
            answer(host_reply(Step("tools/call", refused="too many tool calls in flight"),
                              [{"jsonrpc": "2.0", "id": call.request_id, "error": {
                                  "code": INTERNAL_ERROR,
                                  "message": f"Too many tool calls in flight (at most "
                                             f"{self.max_calls})"}}]))
            return

        def done(future: Future[types.CallToolResult]) -> None:
            with self._lock:
                self._in_flight -= 1
            try:
                reply = self._answered(call, future.result(), None)
            except Exception as exc:  # noqa: BLE001 - any failure is the app's error reply
                reply = self._answered(call, None, exc)
            answer(host_reply(Step("tools/call"), [reply]))

        try:
            future = self.client.call_tool_future(call.name, call.arguments,
                                                  timeout=self.timeout)
        except MCPError as exc:
            with self._lock:
                self._in_flight -= 1
            answer(host_reply(Step("tools/call"), [self._answered(call, None, exc)]))
            return
        future.add_done_callback(done)
