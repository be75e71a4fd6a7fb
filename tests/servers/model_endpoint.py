"""A scripted language-model endpoint for the Toolbox tests, on the standard library.

Speaks enough of three HTTP APIs for the real ``openai`` and ``anthropic`` SDKs, pointed
at it with ``base_url``, to run a tool loop:

* ``POST /v1/chat/completions`` (OpenAI Chat Completions),
* ``POST /v1/responses`` (OpenAI Responses),
* ``POST /v1/messages`` (Anthropic Messages).

Each endpoint answers from its own script, in order: a test queues replies built with
:func:`chat_tool_calls`, :func:`chat_text`, :func:`responses_calls`,
:func:`responses_text`, :func:`messages_tool_use` and :func:`messages_text` (the JSON the
real APIs send), and reads back every request body the SDKs sent (``requests``), which is
where the tool results the toolbox built arrive. A request with no reply left gets a 500.

Binds 127.0.0.1 on a free port; ``stop()`` (or the context manager) shuts it down and
joins its serving thread, ``model-test-serve`` (the request threads are the standard
library's daemons); none has an ``mcp-sync`` name, which the leak check watches.
"""

from __future__ import annotations

import collections
import itertools
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Deque, Dict, List, Optional, Sequence, Tuple

__all__ = [
    "ModelEndpoint",
    "Recorded",
    "chat_text",
    "chat_tool_calls",
    "messages_text",
    "messages_tool_use",
    "responses_calls",
    "responses_text",
]

CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"
MESSAGES = "/v1/messages"
_ids = itertools.count(1)


@dataclass
class Recorded:
    path: str
    body: Dict[str, Any]
    headers: Dict[str, str]


def chat_tool_calls(calls: Sequence[Tuple[str, str, str]]) -> Dict[str, Any]:
    """A Chat Completion whose message asks for ``(id, name, arguments JSON)`` calls."""
    return {
        "id": f"chatcmpl-{next(_ids)}", "object": "chat.completion", "created": 1,
        "model": "scripted",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": None, "message": {
            "role": "assistant", "content": None, "refusal": None,
            "tool_calls": [{"id": call_id, "type": "function",
                            "function": {"name": name, "arguments": arguments}}
                           for call_id, name, arguments in calls],
        }}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def chat_text(text: str) -> Dict[str, Any]:
    return {
        "id": f"chatcmpl-{next(_ids)}", "object": "chat.completion", "created": 1,
        "model": "scripted",
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                     "message": {"role": "assistant", "content": text, "refusal": None}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _response(output: List[Dict[str, Any]]) -> Dict[str, Any]:
    return {
        "id": f"resp_{next(_ids)}", "object": "response", "created_at": 1, "status": "completed",
        "model": "scripted", "output": output, "parallel_tool_calls": True,
        "tool_choice": "auto", "tools": [], "error": None, "incomplete_details": None,
        "instructions": None, "metadata": {}, "temperature": 1.0, "top_p": 1.0,
        "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
                  "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens_details": {"reasoning_tokens": 0}},
    }


def responses_calls(calls: Sequence[Tuple[str, str, str]]) -> Dict[str, Any]:
    """A Response whose output is a message and ``(call_id, name, arguments)`` calls."""
    output: List[Dict[str, Any]] = [{
        "type": "message", "id": f"msg_{next(_ids)}", "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Let me look.", "annotations": []}],
    }]
    output += [{"type": "function_call", "id": f"fc_{next(_ids)}", "call_id": call_id,
                "name": name, "arguments": arguments, "status": "completed"}
               for call_id, name, arguments in calls]
    return _response(output)


def responses_text(text: str) -> Dict[str, Any]:
    return _response([{
        "type": "message", "id": f"msg_{next(_ids)}", "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }])


def _message(content: List[Dict[str, Any]], stop_reason: str) -> Dict[str, Any]:
    return {
        "id": f"msg_{next(_ids)}", "type": "message", "role": "assistant", "model": "scripted",
        "content": content, "stop_reason": stop_reason, "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def messages_tool_use(calls: Sequence[Tuple[str, str, Any]]) -> Dict[str, Any]:
    """A Message with a text block and ``(id, name, input)`` tool_use blocks."""
    content: List[Dict[str, Any]] = [{"type": "text", "text": "Let me look."}]
    content += [{"type": "tool_use", "id": call_id, "name": name, "input": arguments}
                for call_id, name, arguments in calls]
    return _message(content, "tool_use")


def messages_text(text: str) -> Dict[str, Any]:
    return _message([{"type": "text", "text": text}], "end_turn")


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        endpoint = self.server.owner
        reply = endpoint._take(self.path, body, dict(self.headers))
        data = json.dumps(reply if reply is not None else {
            "error": {"message": f"no scripted reply for {self.path}", "type": "test"}}
        ).encode()
        self.send_response(200 if reply is not None else 500)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # an SDK's kept-alive connection must not hold stop() up
    owner: ModelEndpoint


class ModelEndpoint:
    """The scripted endpoint; ``url`` is ``http://127.0.0.1:<port>``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards _scripts and requests
        self._scripts: Dict[str, Deque[Dict[str, Any]]] = collections.defaultdict(
            collections.deque)
        self.requests: List[Recorded] = []
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread: Optional[threading.Thread] = None

    def __enter__(self) -> ModelEndpoint:
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,),
                                        name="model-test-serve", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(5.0)

    def script(self, path: str, *replies: Dict[str, Any]) -> None:
        with self._lock:
            self._scripts[path].extend(replies)

    def chat(self, *replies: Dict[str, Any]) -> None:
        self.script(CHAT, *replies)

    def responses(self, *replies: Dict[str, Any]) -> None:
        self.script(RESPONSES, *replies)

    def messages(self, *replies: Dict[str, Any]) -> None:
        self.script(MESSAGES, *replies)

    def bodies(self, path: str) -> List[Dict[str, Any]]:
        with self._lock:
            return [r.body for r in self.requests if r.path == path]

    def _take(self, path: str, body: Dict[str, Any], headers: Dict[str, str]
              ) -> Optional[Dict[str, Any]]:
        with self._lock:
            self.requests.append(Recorded(path, body, headers))
            script = self._scripts.get(path)
            return script.popleft() if script else None
