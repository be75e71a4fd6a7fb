#!/usr/bin/env python
"""A cron-job style script: connect to an MCP server, call one tool, print the result.

    python examples/script.py                                   # add 2 + 3
    python examples/script.py --tool echo --args '{"text": "hi"}'
    python examples/script.py --tool count --args '{"n": 50}'   # a long job (5 s)

The ``with`` block stops the server and every mcp-sync thread when the script ends:
normally, on an uncaught exception (try ``--tool nosuchtool``), and on SIGTERM (what
cron daemons, systemd and ``kill`` send), which this script turns into a normal exit.
Without that handler the script dies at once; the server, its stdin closed, exits too.
The output (the tool result as JSON) goes to stdout; progress and errors to stderr.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from types import FrameType
from typing import List, Optional

import mcp_sync

SERVER = [sys.executable, "-m", "mcp_sync.demo_server"]  # ships inside mcp_sync


def exit_on_sigterm(signum: int, frame: Optional[FrameType]) -> None:
    """SIGTERM becomes SystemExit: ``with`` blocks and ``finally`` clauses run, as on
    Ctrl-C, and the exit status is the conventional 128 + 15."""
    raise SystemExit(128 + signum)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool", default="add")
    parser.add_argument("--args", default='{"a": 2, "b": 3}', help="the arguments, as JSON")
    parser.add_argument("--timeout", type=float, default=30.0)
    options = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, exit_on_sigterm)

    with mcp_sync.connect(SERVER, timeout=options.timeout) as client:
        info = client.server_info
        pid = getattr(client.transport, "pid", None)
        print(f"connected to {info.name} {info.version} (server pid {pid})",
              file=sys.stderr, flush=True)
        result = client.call_tool(
            options.tool, json.loads(options.args),
            on_progress=lambda done, total, message: print(
                f"  {message or done}", file=sys.stderr, flush=True),
        )
        print(json.dumps(result.structured if result.structured is not None else result.text))
        return 1 if result.is_error else 0


if __name__ == "__main__":
    sys.exit(main())
