"""A raw-socket HTTP/1.1 MCP server for tests of kept-alive connections the server closes.

Every reply keeps its connection alive (``Content-Length``, no ``Connection: close``), as
``http.server`` cannot be made to: the test decides when a connection ends, and how.
It answers what a client with a pinned protocol version and ``listen=False`` sends:
``initialize``, ``tools/list`` (the one tool ``echo``, which a client lists before its
first call), ``tools/call`` of ``echo`` (returns ``text``), any other request with an
empty result, notifications and responses with ``202``.

Controls: ``close_idle(how)`` closes every open connection once it is idle, gracefully
(``"fin"``) or abortively (``"rst"``: ``SO_LINGER`` 0, the peer gets a reset), and
returns when they are closed. Records: ``requests``, ``(connection number, message)`` for
every message received; ``connections``, how many were accepted.

``keep_alive=N`` makes it a server with an idle timeout, as Node's: every reply says
``Keep-Alive: timeout=N`` and a connection idle for ``N`` seconds is closed. ``deaf``
seconds before that it stops reading, as a server does whose close is already on the wire:
a request arriving then is never answered, and the close resets it (its bytes are unread).
Records: ``idle_closes``, the connections closed so; ``crossed``, those a request crossed.

Binds 127.0.0.1 on a free port; ``stop()`` (or the context manager) ends every connection
and joins every thread. Threads are named ``keepalive-test-*``, outside the ``mcp-sync``
names the leak check watches.
"""

from __future__ import annotations

import json
import select
import socket
import struct
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

__all__ = ["KeepAliveServer"]

_WAIT = 10.0  # the bound for every wait here


class _Connection:
    """One accepted connection and the means to tell its thread to close it."""

    def __init__(self, number: int, sock: socket.socket) -> None:
        self.number = number
        self.sock = sock
        self.wake_read, self.wake_write = socket.socketpair()
        self.close_how: Optional[str] = None
        self.closed = threading.Event()

    def order_close(self, how: str) -> None:
        self.close_how = how
        try:
            self.wake_write.send(b"x")
        except OSError:
            pass  # the connection ended (and closed its wake-up pair) meanwhile


class KeepAliveServer:
    """See the module docstring. Use as a context manager."""

    def __init__(self, protocol_version: str = "2025-11-25", *,
                 keep_alive: Optional[float] = None, deaf: float = 0.0) -> None:
        self.protocol_version = protocol_version
        self.keep_alive = keep_alive
        self.deaf = deaf
        self.idle_closes = 0
        self.crossed = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        # Guards requests, connections and _open.
        self.lock = threading.Lock()
        self.requests: List[Tuple[int, Any]] = []
        self.connections = 0
        self._open: Dict[int, _Connection] = {}
        self._stop_read, self._stop_write = socket.socketpair()
        self._threads: List[threading.Thread] = []
        self._accepter = threading.Thread(target=self._accept, name=f"keepalive-test-{self.port}")

    def __enter__(self) -> KeepAliveServer:
        self._accepter.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop_write.send(b"x")
        self._accepter.join(_WAIT)
        with self.lock:
            connections = list(self._open.values())
        for connection in connections:
            connection.order_close("fin")
        for thread in list(self._threads):
            thread.join(_WAIT)
        self.listener.close()
        self._stop_read.close()
        self._stop_write.close()

    def close_idle(self, how: str) -> int:
        """Close every open connection (``"fin"`` or ``"rst"``); returns how many."""
        with self.lock:
            connections = list(self._open.values())
        for connection in connections:
            connection.order_close(how)
        for connection in connections:
            if not connection.closed.wait(_WAIT):
                raise TimeoutError(f"connection {connection.number} did not close")
        return len(connections)

    def messages(self, method: str) -> List[Tuple[int, Any]]:
        with self.lock:
            return [(number, message) for number, message in self.requests
                    if isinstance(message, dict) and message.get("method") == method]

    # -- serving -----------------------------------------------------------------------

    def _accept(self) -> None:
        while True:
            readable, _, _ = select.select([self.listener, self._stop_read], [], [], _WAIT)
            if self._stop_read in readable:
                return
            if self.listener not in readable:
                continue
            sock, _ = self.listener.accept()
            with self.lock:
                self.connections += 1
                connection = _Connection(self.connections, sock)
                self._open[connection.number] = connection
            thread = threading.Thread(target=self._serve, args=(connection,),
                                      name=f"keepalive-test-{self.port}-{connection.number}")
            self._threads.append(thread)
            thread.start()

    def _serve(self, connection: _Connection) -> None:
        sock = connection.sock
        buffer = b""
        idle_since = time.monotonic()
        try:
            while True:
                while b"\r\n\r\n" not in buffer:
                    wait = _WAIT
                    if self.keep_alive is not None and not buffer:
                        wait = idle_since + self.keep_alive - self.deaf - time.monotonic()
                        if wait <= 0:
                            self._close_when_idle(connection, idle_since)
                            return
                    readable, _, _ = select.select([sock, connection.wake_read], [], [], wait)
                    if connection.wake_read in readable:
                        return  # told to close
                    if not readable:
                        if self.keep_alive is None:
                            return  # nothing for too long
                        continue  # idle: the keep-alive's end, above
                    data = sock.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
                while len(buffer) < length:
                    data = sock.recv(65536)
                    if not data:
                        return
                    buffer += data
                body, buffer = buffer[:length], buffer[length:]
                sock.sendall(self._reply(connection.number, body))
                idle_since = time.monotonic()
        except OSError:
            pass  # the client went away
        finally:
            if connection.close_how == "rst":
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
            connection.wake_read.close()
            connection.wake_write.close()
            with self.lock:
                self._open.pop(connection.number, None)
            connection.closed.set()

    def _close_when_idle(self, connection: _Connection, idle_since: float) -> None:
        """The last ``deaf`` seconds of the keep-alive: nothing is read any more; then
        the connection is closed (by the caller), reset if a request came meanwhile."""
        end = idle_since + self.keep_alive - time.monotonic() if self.keep_alive else 0.0
        readable, _, _ = select.select([connection.wake_read], [], [], max(0.0, end))
        if connection.wake_read in readable:
            return
        crossed = bool(select.select([connection.sock], [], [], 0)[0])
        with self.lock:
            self.idle_closes += 1
            self.crossed += crossed

    def _reply(self, number: int, body: bytes) -> bytes:
        message = json.loads(body) if body else None
        with self.lock:
            self.requests.append((number, message))
        keep_alive = b""
        if self.keep_alive is not None:
            keep_alive = b"Keep-Alive: timeout=%d\r\n" % self.keep_alive
        if not isinstance(message, dict) or "id" not in message or "method" not in message:
            return b"HTTP/1.1 202 Accepted\r\n%sContent-Length: 0\r\n\r\n" % keep_alive
        method = message["method"]
        result: Dict[str, Any] = {}
        if method == "initialize":
            result = {"protocolVersion": self.protocol_version, "capabilities": {"tools": {}},
                      "serverInfo": {"name": "keepalive", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [{"name": "echo", "inputSchema": {
                "type": "object", "properties": {"text": {"type": "string"}}}}]}
        elif method == "tools/call":
            text = str((message.get("params") or {}).get("arguments", {}).get("text", ""))
            result = {"content": [{"type": "text", "text": text}]}
        answer = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
        return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n%s"
                b"Content-Length: %d\r\n\r\n%s" % (keep_alive, len(answer), answer))
