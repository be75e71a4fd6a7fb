"""An MCP server over stdio that floods the client (standard library only).

It speaks the session era (2025-11-25 and older) and writes its floods as fast as the
pipe takes them, from a thread of its own, while its main thread keeps reading the
client's answers and counting them. Every tool answers at once; the floods go on after.

=========================  ==============================================================
tool                       what it does
=========================  ==============================================================
``echo(text)``             answers ``text``
``flood(kind, count)``     starts writing ``count`` messages of one kind: ``log``
                           (``notifications/message``, ``size`` characters of data),
                           ``ping`` (requests, ids ``ping-<n>``), ``roots`` (``roots/list``
                           requests, ids ``roots-<n>``), ``updated``
                           (``notifications/resources/updated``, a new URI each),
                           ``list_changed`` (the same ``tools/list_changed`` each time),
                           ``stderr`` (``count`` bytes on stderr, without a newline)
``ask(method, count)``     sends ``count`` requests of ``method`` (ids ``ask-<n>``)
``stats(...)``             what was sent and the answers received, by id prefix (``ping``,
                           ``roots``, ``ask``): ``ok`` and ``errors`` counts and the first
                           error messages. ``flood_done`` waits for the flood writer to
                           finish; ``prefix`` and ``count`` wait until that many answers
                           with that prefix arrived (each wait bounded by ``timeout``)
=========================  ==============================================================
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any, Callable, Dict, Optional

out = sys.stdout.buffer
write_lock = threading.Lock()
# Guards answers, sent and flood_done; signalled on every change.
changed = threading.Condition()
answers: Dict[str, Dict[str, Any]] = {}
sent: Dict[str, int] = {}
flood_done = threading.Event()
flood_done.set()
CHUNK = 500  # messages joined into one write

TOOLS = [
    {"name": name, "description": name, "inputSchema": {"type": "object"}}
    for name in ("echo", "flood", "ask", "stats")
]


def write(data: bytes) -> None:
    with write_lock:
        out.write(data)
        out.flush()


def send(message: Dict[str, Any]) -> None:
    write(json.dumps(message, separators=(",", ":")).encode() + b"\n")


def text_result(request_id: Any, value: Any) -> None:
    text = value if isinstance(value, str) else json.dumps(value)
    send({"jsonrpc": "2.0", "id": request_id,
          "result": {"content": [{"type": "text", "text": text}]}})


def note_sent(kind: str, count: int) -> None:
    with changed:
        sent[kind] = sent.get(kind, 0) + count
        changed.notify_all()


def make_message(kind: str, index: int, size: int) -> Dict[str, Any]:
    if kind == "log":
        return {"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "logger": "flood",
                           "data": f"log {index} " + "x" * size}}
    if kind == "ping":
        return {"jsonrpc": "2.0", "id": f"ping-{index}", "method": "ping"}
    if kind == "roots":
        return {"jsonrpc": "2.0", "id": f"roots-{index}", "method": "roots/list"}
    if kind == "updated":
        return {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                "params": {"uri": f"test://flood/{index}"}}
    if kind == "list_changed":
        return {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    raise ValueError(f"unknown flood kind {kind!r}")


def flood(kind: str, count: int, size: int) -> None:
    try:
        if kind == "stderr":
            block = b"e" * 65536
            left = count
            while left > 0:
                sys.stderr.buffer.write(block[:left])
                left -= len(block)
            sys.stderr.buffer.flush()
            note_sent(kind, count)
            return
        for start in range(0, count, CHUNK):
            stop = min(count, start + CHUNK)
            write(b"".join(json.dumps(make_message(kind, index, size),
                                      separators=(",", ":")).encode() + b"\n"
                           for index in range(start, stop)))
            note_sent(kind, stop - start)
    except (BrokenPipeError, ValueError, OSError):
        pass  # the client went away
    finally:
        flood_done.set()


def stats(arguments: Dict[str, Any]) -> Dict[str, Any]:
    timeout = float(arguments.get("timeout", 10.0))
    if arguments.get("flood_done"):
        flood_done.wait(timeout)
    prefix: Optional[str] = arguments.get("prefix")
    if prefix is not None:
        wanted = int(arguments["count"])

        def arrived() -> bool:
            entry = answers.get(prefix) or {}
            return entry.get("ok", 0) + entry.get("error_count", 0) >= wanted

        with changed:
            changed.wait_for(arrived, timeout)
    with changed:
        return {"sent": dict(sent), "answers": json.loads(json.dumps(answers)),
                "flood_done": flood_done.is_set()}


def note_answer(message: Dict[str, Any]) -> None:
    prefix = str(message.get("id")).split("-", 1)[0]
    with changed:
        entry = answers.setdefault(prefix, {"ok": 0, "error_count": 0, "errors": []})
        if "error" in message:
            entry["error_count"] += 1
            if len(entry["errors"]) < 5:
                entry["errors"].append(message["error"])
        else:
            entry["ok"] += 1
        changed.notify_all()


def call_tool(request_id: Any, name: str, arguments: Dict[str, Any]) -> None:
    if name == "echo":
        text_result(request_id, arguments.get("text", ""))
    elif name == "flood":
        flood_done.clear()
        text_result(request_id, "flooding")
        threading.Thread(target=flood, args=(arguments["kind"], int(arguments["count"]),
                                             int(arguments.get("size", 0))),
                         daemon=True).start()
    elif name == "ask":
        count = int(arguments.get("count", 1))
        lines = [json.dumps({"jsonrpc": "2.0", "id": f"ask-{index}",
                             "method": arguments["method"]}) + "\n" for index in range(count)]
        write("".join(lines).encode())
        note_sent("ask", count)
        text_result(request_id, f"asked {count}")
    elif name == "stats":
        # Waits: off the reading thread, which must go on counting answers.
        threading.Thread(target=lambda: text_result(request_id, stats(arguments)),
                         daemon=True).start()
    else:
        send({"jsonrpc": "2.0", "id": request_id,
              "error": {"code": -32602, "message": f"Unknown tool: {name}"}})


def handle(message: Dict[str, Any]) -> None:
    method = message.get("method")
    request_id = message.get("id")
    if method is None:
        note_answer(message)
        return
    if request_id is None:
        return  # a notification
    params = message.get("params") or {}
    handlers: Dict[str, Callable[[], Any]] = {
        "initialize": lambda: {
            "protocolVersion": params.get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {}, "logging": {}},
            "serverInfo": {"name": "flood", "version": "1"}},
        "ping": lambda: {},
        "tools/list": lambda: {"tools": TOOLS},
        "logging/setLevel": lambda: {},
    }
    if method == "tools/call":
        call_tool(request_id, params.get("name"), params.get("arguments") or {})
    elif method in handlers:
        send({"jsonrpc": "2.0", "id": request_id, "result": handlers[method]()})
    else:
        send({"jsonrpc": "2.0", "id": request_id,
              "error": {"code": -32601, "message": f"Method not found: {method}"}})


def main() -> None:
    for line in sys.stdin.buffer:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict):
            handle(message)


if __name__ == "__main__":
    main()
