"""A misbehaving MCP server over stdio, for the fault-injection tests (standard library only).

It answers ``initialize``, ``ping`` and ``tools/call`` like a plain server, and each
``tools/call`` name is one fault, injected when the client calls it, so that one process
can first prove the connection works and then break it:

========================  ===============================================================
tool (arguments)          what the server does
========================  ===============================================================
``echo`` (text)           answers normally
``hang``                  never answers
``slow`` (seconds)        answers after ``seconds`` on a thread (the main loop goes on)
``close_stdout``          closes its stdout, keeps reading stdin until EOF, answers nothing
``half_line``             writes half a JSON line, then stalls until the notification
                          ``fault/continue`` arrives; then ends that line (as garbage) and
                          answers this call on a line of its own
``huge_line`` (size,      writes ``size`` bytes without a newline; with ``newline`` true it
newline)                  then ends the line and answers this call; else it stalls
``huge_result`` (size)    answers with a response whose text is ``size`` bytes long, the
                          id at the start of its line (as every server writes it)
``deep`` (depth,          writes an array nested ``depth`` deep (100000: past the JSON
in_result)                parser's recursion limit), then answers; with ``in_result`` the
                          array is the answer's ``structuredContent.deep``
``banners`` (count)       writes ``count`` non-JSON-RPC lines on stdout, then answers
``nulls`` (count)         writes ``count`` lines of JSON ``null``, then answers
``wrong_id`` (mode,       answers with the wrong id: ``offset`` (id + 100000), ``string``
target)                   (``"<id>"``), ``null`` (an error with id null), ``bool``
                          (``true``), ``float`` (``<id>.0``), ``object`` (``{"id": id}``),
                          ``list`` (``[id]``); ``target`` names another request's id to
                          imitate instead of this one's
``malformed`` (mode)      answers with a malformed response to this call: ``string`` (an
                          ``error`` that is a string), ``no_code`` (an error without
                          ``code``), ``both`` (a ``result`` and an ``error``)
``duplicate`` (times)     answers ``times`` times (the later ones with another text)
``ignore_cancel``         answers only once ``fault/continue`` arrives, cancelled or not
``flood`` (count)         sends ``count`` ``notifications/message`` then answers
``storm`` (count)         sends ``count`` ``ping`` requests to the client, waits (at most
                          20 s) for every answer, then answers with how many came back
``stop_reading`` (then)   answers, then stops reading stdin until it gets SIGUSR1 (at most
                          60 s): the client's writes fill the pipe; with ``then`` set to
                          ``close_stdin`` it then closes its stdin and waits for another
                          SIGUSR1 (or SIGTERM) before exiting
``images``                answers with image, audio and embedded-resource blocks whose MIME
                          types and URIs try to name files outside any folder
``fds``                   answers with the descriptors it inherited (``/proc/self/fd``)
``hostile_error`` (code)  answers with a JSON-RPC error whose message and data are long and
                          full of terminal escapes, C1 controls and bidi overrides
``hostile_stderr``        writes such lines to stderr, then exits with status 3
``exit`` (code)           exits at once with ``code``, without answering
========================  ===============================================================

Options: ``--exit-at-start CODE`` (exit before reading anything, after a stderr line),
``--banner N`` (N non-JSON lines on stdout before serving).

``resources/read`` of any URI answers with blobs named by hostile URIs (``HOSTILE_URIS``).

Notifications ``fault/continue`` release ``half_line`` and ``ignore_cancel``. Every
``notifications/cancelled`` received is counted; ``tools/call`` of ``stats`` answers with
``{"cancelled": [...ids], "requests": n}``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional

parser = argparse.ArgumentParser()
parser.add_argument("--exit-at-start", type=int)
parser.add_argument("--banner", type=int, default=0)
options = parser.parse_args()

if options.exit_at_start is not None:
    sys.stderr.write("fault server: refusing to start\n")
    sys.stderr.flush()
    sys.exit(options.exit_at_start)

stdout = sys.stdout.buffer
write_lock = threading.Lock()
# What the next ``fault/continue`` does (finish a torn line, answer a held request).
on_continue: List[Callable[[], None]] = []
cancelled: List[Any] = []
requests_seen = 0
# Answers to the server's own requests (storm), by id.
answers: Dict[str, Any] = {}
answered = threading.Condition()


def write_raw(data: bytes) -> None:
    with write_lock:
        stdout.write(data)
        stdout.flush()


def send(message: Dict[str, Any]) -> None:
    write_raw(json.dumps(message, separators=(",", ":")).encode() + b"\n")


def result(request_id: Any, value: Any) -> Dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


def text_result(request_id: Any, text: str) -> Dict[str, Any]:
    return result(request_id, {"content": [{"type": "text", "text": text}]})


TOOLS = ["echo", "hang", "slow", "close_stdout", "half_line", "huge_line", "huge_result",
         "deep", "banners", "wrong_id", "malformed", "duplicate", "ignore_cancel", "flood",
         "storm", "stop_reading", "images", "fds", "hostile_error", "hostile_stderr", "exit",
         "stats"]
# Responses that break JSON-RPC's rules, by mode (the ``malformed`` tool).
MALFORMED: Dict[str, Dict[str, Any]] = {
    "string": {"error": "boom"},
    "no_code": {"error": {"message": "an error without a code"}},
    "both": {"result": {"content": []}, "error": {"code": -32000, "message": "and an error"}},
}
# Terminal escapes (C0 and C1), a bell, a NUL, bidi overrides: what a server should never
# get onto the user's terminal through an error message.
HOSTILE = "\x1b[2J\x1b]0;owned\x07\x9b31m\u202eevil\u202c\x00\r"
# A 1x1 PNG, and resource URIs that try to name files outside the folder they go to.
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5"
       "ErkJggg==")
HOSTILE_URIS = ["file:///../../../../home/user/.bashrc", "x:/a/..%2F..%2F..%2Fescape.png",
                "file:///tmp/\x1b[2J/.ssh/authorized_keys", "res://host/..", "res://host/",
                "file:///C:/Windows/System32/evil.dll", "res://x/" + "n" * 300 + ".png"]


def call_tool(request_id: Any, name: str, args: Dict[str, Any]) -> None:
    if name == "echo":
        send(text_result(request_id, str(args.get("text", ""))))
    elif name == "hang":
        pass
    elif name == "slow":
        def later() -> None:
            time.sleep(float(args.get("seconds", 1)))
            send(text_result(request_id, "slow done"))
        threading.Thread(target=later, daemon=True).start()
    elif name == "close_stdout":
        with write_lock:
            stdout.close()
            os.close(1)
    elif name == "half_line":
        write_raw(b'{"jsonrpc":"2.0","id":')
        on_continue.append(lambda: finish_half_line(request_id))
    elif name == "huge_line":
        size = int(args.get("size", 100 * 1024 * 1024))
        chunk = b"x" * (1 << 20)
        with write_lock:
            left = size
            while left > 0:
                stdout.write(chunk[:left])
                left -= len(chunk)
            stdout.flush()
            if args.get("newline"):
                stdout.write(b"\n")
                stdout.flush()
        if args.get("newline"):
            send(text_result(request_id, f"after {size} bytes"))
    elif name == "huge_result":
        size = int(args.get("size", 100 * 1024 * 1024))
        chunk = b"x" * (1 << 20)
        with write_lock:
            stdout.write(b'{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text",'
                         b'"text":"' % json.dumps(request_id).encode())
            left = size
            while left > 0:
                stdout.write(chunk[:left])
                left -= len(chunk)
            stdout.write(b'"}]}}\n')
            stdout.flush()
    elif name == "deep":
        depth = int(args.get("depth", 100000))  # nested past any JSON parser's recursion limit
        nested = b"[" * depth + b"]" * depth
        if args.get("in_result"):  # as the answer's structuredContent
            write_raw(b'{"jsonrpc":"2.0","id":%s,"result":{"content":[],"structuredContent":'
                      b'{"deep":%s}}}\n' % (json.dumps(request_id).encode(), nested))
            return
        write_raw(nested + b"\n")
        send(text_result(request_id, f"after a {depth}-deep array"))
    elif name == "banners":
        for i in range(int(args.get("count", 10))):
            line = (f"[INFO] banner line {i}" if i % 3 else
                    json.dumps({"level": "info", "msg": f"structured log {i}"}))
            write_raw(line.encode() + b"\n")
        send(text_result(request_id, "after banners"))
    elif name == "nulls":
        write_raw(b"null\n" * int(args.get("count", 10)))
        send(text_result(request_id, "after nulls"))
    elif name == "wrong_id":
        mode = args.get("mode", "offset")
        target = args.get("target", request_id)  # the id to imitate (another request's)
        wrong: Any = {"offset": request_id + 100000 if isinstance(request_id, int) else "x",
                      "string": str(target), "bool": True, "float": float(target),
                      "object": {"id": target}, "list": [target], "null": None}[mode]
        if mode == "null":
            send({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "bad"}})
        else:
            send(text_result(wrong, "wrong id"))
    elif name == "malformed":
        send({"jsonrpc": "2.0", "id": request_id, **MALFORMED[args.get("mode", "string")]})
    elif name == "duplicate":
        for i in range(int(args.get("times", 2))):
            send(text_result(request_id, "first" if i == 0 else f"duplicate {i}"))
    elif name == "ignore_cancel":
        on_continue.append(lambda: send(text_result(request_id, "answered anyway")))
    elif name == "flood":
        count = int(args.get("count", 10000))
        with write_lock:
            for i in range(count):
                stdout.write(json.dumps({
                    "jsonrpc": "2.0", "method": "notifications/message",
                    "params": {"level": "info", "data": f"flood {i}"}},
                    separators=(",", ":")).encode() + b"\n")
            stdout.flush()
        send(text_result(request_id, f"flooded {count}"))
    elif name == "storm":
        threading.Thread(target=storm, args=(request_id, int(args.get("count", 1000))),
                         daemon=True).start()
    elif name == "stop_reading":
        send(text_result(request_id, "not reading"))
        signal.sigtimedwait([signal.SIGUSR1], 60.0)
        if args.get("then") == "close_stdin":
            os.close(0)  # the client's writes now fail with EPIPE
            signal.sigtimedwait([signal.SIGUSR1], 60.0)
            os._exit(0)
    elif name == "images":  # media whose every server-chosen field is hostile
        send(result(request_id, {"content": [
            {"type": "image", "data": PNG, "mimeType": "image/../../../evil"},
            {"type": "image", "data": PNG, "mimeType": "image/png\x00/../../x"},
            {"type": "audio", "data": PNG, "mimeType": "audio/wav; name=../../.bashrc"},
            {"type": "resource", "resource": {"uri": "file:///../../../etc/cron.d/evil",
                                              "blob": PNG, "mimeType": "image/png"}},
        ]}))
    elif name == "fds":  # the descriptors this process inherited
        send(result(request_id, {"content": [], "structuredContent": {
            "fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd"))}}))
    elif name == "hostile_error":  # a JSON-RPC error made of hostile strings
        code = int(args.get("code", -32000))
        data = {"supported": [HOSTILE] * 3, "requiredCapabilities": {HOSTILE: {}}}
        send({"jsonrpc": "2.0", "id": request_id,
              "error": {"code": code, "message": HOSTILE * 50, "data": data}})
    elif name == "hostile_stderr":  # last words full of escapes, then death
        for _ in range(20):
            sys.stderr.write(HOSTILE * 20 + "\n")
        sys.stderr.flush()
        os._exit(3)
    elif name == "exit":
        os._exit(int(args.get("code", 0)))
    elif name == "stats":
        send(result(request_id, {"content": [], "structuredContent": {
            "cancelled": list(cancelled), "requests": requests_seen}}))
    else:
        send({"jsonrpc": "2.0", "id": request_id,
              "error": {"code": -32602, "message": f"Unknown tool: {name}"}})


def finish_half_line(request_id: Any) -> None:
    write_raw(b' "rest of a torn line"\n')
    send(text_result(request_id, "after the torn line"))


def storm(request_id: Any, count: int) -> None:
    ids = [f"storm-{request_id}-{i}" for i in range(count)]
    for server_request_id in ids:
        send({"jsonrpc": "2.0", "id": server_request_id, "method": "ping"})
    deadline = time.monotonic() + 20.0
    with answered:
        answered.wait_for(lambda: all(i in answers for i in ids),
                          max(0.0, deadline - time.monotonic()))
        ok = sum(1 for i in ids if isinstance(answers.get(i), dict) and "result" in answers[i])
    send(result(request_id, {"content": [{"type": "text", "text": f"{ok}/{count}"}],
                             "structuredContent": {"answered": ok, "sent": count}}))


def handle(message: Any) -> None:
    global requests_seen
    if not isinstance(message, dict):
        return
    method = message.get("method")
    request_id = message.get("id")
    if method is None:  # an answer to one of our requests
        with answered:
            answers[str(request_id)] = message
            answered.notify_all()
        return
    if "id" not in message:
        if method == "fault/continue":
            # On the main loop, before the next message is read: what it writes comes
            # before any later answer.
            while on_continue:
                on_continue.pop(0)()
        elif method == "notifications/cancelled":
            cancelled.append((message.get("params") or {}).get("requestId"))
        return
    requests_seen += 1
    params = message.get("params") or {}
    if method == "initialize":
        send(result(request_id, {
            "protocolVersion": params.get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {}, "resources": {}},
            "serverInfo": {"name": "fault", "version": "1"}}))
    elif method == "ping":
        send(result(request_id, {}))
    elif method == "resources/read":  # blobs named by hostile URIs (the CLI's file names)
        send(result(request_id, {"contents": [
            {"uri": uri, "blob": PNG, "mimeType": "image/png"} for uri in HOSTILE_URIS]}))
    elif method == "tools/list":
        send(result(request_id, {"tools": [
            {"name": name, "inputSchema": {"type": "object"}} for name in TOOLS]}))
    elif method == "tools/call":
        call_tool(request_id, str(params.get("name")), params.get("arguments") or {})
    else:
        send({"jsonrpc": "2.0", "id": request_id,
              "error": {"code": -32601, "message": f"Method not found: {method}"}})


def main() -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
    for i in range(options.banner):
        write_raw(f"fault server banner {i}: starting up\n".encode())
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        try:
            message: Optional[Any] = json.loads(line)
        except ValueError:
            continue
        try:
            handle(message)
        except (BrokenPipeError, ValueError, OSError):
            pass  # stdout closed (close_stdout): keep reading until stdin ends


if __name__ == "__main__":
    main()
