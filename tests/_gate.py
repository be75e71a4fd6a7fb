"""The test's end of tests/servers/gate_stdio.py: a gate server's start and every call of
its ``hold`` tools connect to a socket of the test and wait there until the test lets them
go on, so that "the server is starting" or "the call is in progress" is a known moment,
not a race."""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, List


@dataclass
class Arrival:
    """A gate server's start or call, waiting for the test's go."""

    event: str
    tool: str
    key: str
    pid: int
    ppid: int
    connection: socket.socket
    released: bool = False


class Gate:
    """The test's end of tests/servers/gate_stdio.py: records every server start and call
    and lets each go on when told. Starts go on at once unless ``hold_starts`` is set."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.arrivals: List[Arrival] = []
        self.hold_starts = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._accept, name="gate-accept", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return  # closed
            connection.settimeout(10)
            try:
                message = json.loads(connection.makefile("rb").readline())
            except (OSError, ValueError):
                connection.close()
                continue
            arrival = Arrival(message["event"], message["tool"], message["key"],
                              message["pid"], message["ppid"], connection)
            with self._changed:
                self.arrivals.append(arrival)
                if arrival.event == "start" and not self.hold_starts:
                    self._release(arrival)
                self._changed.notify_all()

    def _release(self, arrival: Arrival) -> None:
        if not arrival.released:
            arrival.released = True
            try:
                arrival.connection.sendall(b"go\n")
            except OSError:
                pass  # that server is gone
            arrival.connection.close()

    def release(self, arrival: Arrival) -> None:
        with self._changed:
            self._release(arrival)

    def release_starts(self) -> None:
        with self._changed:
            self.hold_starts = False
            for arrival in self.arrivals:
                if arrival.event == "start":
                    self._release(arrival)

    def wait_for(self, match: Callable[[List[Arrival]], Any], timeout: float = 30.0) -> Any:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = match(self.arrivals)
                if found:
                    return found
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"gate: timed out; arrivals: {self.arrivals}")
                self._changed.wait(remaining)

    def calls(self, **fields: Any) -> List[Arrival]:
        with self._changed:
            return [a for a in self.arrivals if a.event == "call"
                    and all(getattr(a, k) == v for k, v in fields.items())]

    def starts(self) -> List[Arrival]:
        with self._changed:
            return [a for a in self.arrivals if a.event == "start"]

    def close(self) -> None:
        self.listener.shutdown(socket.SHUT_RDWR)  # wakes accept()
        self.listener.close()
        self._thread.join(10)
        assert not self._thread.is_alive()
        with self._changed:
            for arrival in self.arrivals:
                arrival.connection.close()

    def __enter__(self) -> Gate:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()
