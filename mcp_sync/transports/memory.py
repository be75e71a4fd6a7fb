"""An in-process transport: a client talks to a server object in the same process.

For application tests: no subprocess, no socket, but every message is still encoded to
JSON and back, so what the server sees is what a wire would carry.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any, Dict, Mapping, Optional

from .._util.threads import join_or_warn, start_thread
from ..exceptions import ConnectionClosed
from .base import (
    CloseCallback,
    MessageCallback,
    RequestFailedCallback,
    Transport,
)

__all__ = ["MemoryTransport"]

log = logging.getLogger(__name__)


class MemoryTransport(Transport):
    """Connects a client to an in-process server such as :class:`mcp_sync.testing.FakeServer`.

    ``server`` is any object with ``open_connection(send) -> connection``, where ``send``
    delivers one message (a dict) to the client and the connection has ``receive(message)``
    and ``close()``. Messages to the server are handled on the sending thread; the server
    answers from whichever thread it likes.
    """

    # The server delivers on whatever thread it likes, the client's own included (it
    # answers a request on the sending thread): the session must never make it wait.
    reader_may_wait = False

    def __init__(self, server: Any, *, name: Optional[str] = None) -> None:
        self.server = server
        self.name = name or str(getattr(server, "name", "memory"))
        self.connection: Any = None
        # Guards the open/closed state; close is reported once.
        self._lock = threading.Lock()
        self._on_message: Optional[MessageCallback] = None
        self._on_close: Optional[CloseCallback] = None
        self._on_request_failed: Optional[RequestFailedCallback] = None

    def start(self, on_message: MessageCallback, on_close: CloseCallback,
              on_request_failed: RequestFailedCallback) -> None:
        with self._lock:
            self._on_message, self._on_close = on_message, on_close
            self._on_request_failed = on_request_failed
        self.connection = self.server.open_connection(self._from_server)
        if hasattr(self.connection, "closed") and hasattr(self.connection.closed, "wait"):
            # A connection the server closes (a simulated crash) closes the transport too.
            self._watcher = start_thread(self._watch_server_close,
                                         f"mcp-sync-reader-{self.name}")

    def _watch_server_close(self) -> None:
        connection = self.connection
        while connection is self.connection and not connection.closed.wait(5.0):
            continue
        self._report(ConnectionClosed(f"in-process server {self.name} closed the connection"))

    def _from_server(self, message: Dict[str, Any]) -> None:
        on_message = self._on_message
        if on_message is not None:
            on_message(json.loads(json.dumps(message)))

    def send(self, message: Dict[str, Any], headers: Optional[Mapping[str, str]] = None) -> None:
        connection = self.connection
        if connection is None or self._on_message is None:
            raise ConnectionClosed(f"in-process connection to {self.name} is closed")
        connection.receive(json.loads(json.dumps(message)))

    def _report(self, error: ConnectionClosed) -> None:
        with self._lock:
            on_close, self._on_close = self._on_close, None
            self._on_message = None
        if on_close is not None:
            on_close(error)

    def close(self) -> None:
        connection = self.connection
        if connection is not None:
            connection.close()
        self._report(ConnectionClosed(f"connection to {self.name} closed by the client"))
        join_or_warn(getattr(self, "_watcher", None), 5.0, "closing the transport", log)
        self.connection = None
