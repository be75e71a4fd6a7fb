"""A process with an ``mcp_sync.Client`` whose response cache is over a shared store,
driven line by line: one of "two worker processes of a web app" in the tests of the
client's cache across processes.

Usage: cache_client_process.py (redis URL | django-file DIRECTORY) SERVER_URL [TOKEN]

Connects to the MCP server at SERVER_URL (with ``Authorization: Bearer TOKEN`` when
given) with ``cache=ResponseCache(store)``, then reads one JSON command per line on
stdin and answers each with one JSON line on stdout:

* ``{"op": "list_tools"}``: answers ``{"names": [...], "hit": bool}``;
* ``{"op": "read", "uri": ...}``: answers ``{"text": ..., "hit": bool}``;
* ``{"op": "invalidate"}``: ``client.invalidate_cache()``; answers ``{}``.
"""

from __future__ import annotations

import sys
from typing import Any, Dict, Optional

from cache_process import make_store, serve_commands  # the same stores and command loop

import mcp_sync
from mcp_sync.cache import ResponseCache


def main() -> None:
    cache = ResponseCache(make_store(sys.argv[1], sys.argv[2]))
    headers = {"Authorization": f"Bearer {sys.argv[4]}"} if len(sys.argv) > 4 else {}
    with mcp_sync.connect(sys.argv[3], headers=headers, cache=cache, timeout=30,
                          probe_timeout=30) as client:

        def answer(op: str, command: Dict[str, Any]) -> Optional[Dict[str, Any]]:
            if op == "list_tools":
                names = [tool.name for tool in client.list_tools()]
                info = client.cache_info("tools/list")
                return {"names": names, "hit": info is not None and info.hit}
            if op == "read":
                read = client.read_resource(command["uri"])
                info = client.cache_info("resources/read", {"uri": command["uri"]})
                return {"text": read.contents[0].text,  # type: ignore[union-attr]
                        "hit": info is not None and info.hit}
            if op == "invalidate":
                client.invalidate_cache()
                return {}
            return None

        serve_commands(answer)


if __name__ == "__main__":
    main()
