"""A process with a response cache of its own over a shared store, driven line by line:
one of "two processes of a web app" in the shared-store tests.

Usage: cache_process.py redis URL | cache_process.py django-file DIRECTORY

Reads one JSON command per line on stdin and answers each with one JSON line on stdout:

* ``{"op": "begin", "id": ..., "context": ..., "method": ..., "params": ..., "mode": ...}``:
  a lookup whose ticket is kept under ``id``; answers ``{"hit": result or null,
  "info": [...]}``;
* ``{"op": "finish", "id": ..., "result": ...}``: stores ``result`` with that ticket;
  answers ``{"stored": bool}``;
* ``{"op": "notified", "notification": ..., "params": ...}``: answers ``{"stale": [...]}``;
* ``{"op": "reconnected"}``.

The server is the same for every command (``SERVER``); the protocol version 2026-07-28.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Callable, Dict, Optional, Tuple

from mcp_sync.cache import CacheStore, ResponseCache, ServerCache, Ticket, url_identity

SERVER = url_identity("http://127.0.0.1:1/shared")


def make_store(kind: str, where: str) -> CacheStore:
    if kind == "redis":
        from mcp_sync.cache import RedisStore

        return RedisStore(where)
    import django
    from django.conf import settings

    settings.configure(CACHES={"mcp": {
        "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
        "LOCATION": where}})
    django.setup()
    from mcp_sync.contrib.django.cache import DjangoCacheStore

    return DjangoCacheStore("mcp")


def serve_commands(answer: Callable[[str, Dict[str, Any]], Optional[Dict[str, Any]]]) -> None:
    """Say ready, then answer each JSON command line on stdin with one JSON line:
    ``answer(op, command)``, or an error when it returns ``None`` (an unknown op)."""
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        command: Dict[str, Any] = json.loads(line)
        reply = answer(command["op"], command)
        if reply is None:
            reply = {"error": f"unknown op {command['op']!r}"}
        print(json.dumps(reply), flush=True)


def main() -> None:
    cache = ResponseCache(make_store(sys.argv[1], sys.argv[2]))
    views: Dict[str, ServerCache] = {}
    tickets: Dict[str, Tuple[ServerCache, Ticket]] = {}

    def view(context: str) -> ServerCache:
        if context not in views:
            views[context] = cache.bind(server=SERVER, version="2026-07-28", context=context)
        return views[context]

    any_view = view("")

    def answer(op: str, command: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        if op == "begin":
            asking = view(command.get("context", ""))
            ticket = asking.lookup(command["method"], command.get("params"),
                                   mode=command.get("mode", "use"))
            tickets[command["id"]] = (asking, ticket)
            return {"hit": None if ticket.hit is None else ticket.hit.result,
                    "info": None if ticket.hit is None else list(ticket.hit.info)}
        if op == "finish":
            asking, ticket = tickets.pop(command["id"])
            return {"stored": asking.store(ticket, command["result"]).stored}
        if op == "notified":
            stale = any_view.notified(command["notification"], command.get("params"))
            return {"stale": [list(pair) for pair in stale]}
        if op == "reconnected":
            any_view.reconnected()
            return {}
        return None

    serve_commands(answer)


if __name__ == "__main__":
    main()
