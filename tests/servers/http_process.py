"""The scriptable Streamable HTTP test server (``http_server.McpHttpServer``) in a process
of its own, for load and soak runs: the server then has its own interpreter (and GIL), and
the client process measures only itself.

    python tests/servers/http_process.py [--reply json|sse]

Prints the server's URL as the first line on stdout, serves until its stdin closes (the
parent went away or closed the pipe), then stops the server and exits 0. Its tools are
``echo`` (returns ``text``) and ``hold`` (reports progress once, then answers only when
cancelled, after 60 s at most: a call that waits on its event stream). Its listen backlog
is 256, not ``socketserver``'s 5.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcp_sync.testing import ToolContext
from tests.servers import http_server
from tests.servers.http_server import McpHttpServer, echo_fake

# socketserver listens with a backlog of 5: 64 threads connecting at once would see
# dropped SYNs and resets from the test server, not from the client under test.
http_server._HttpServer.request_queue_size = 256


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reply", choices=("json", "sse"), default="json")
    options = parser.parse_args()
    fake = echo_fake("http-load")

    @fake.tool()
    def hold(ctx: ToolContext) -> str:
        """Reports progress once, then waits to be cancelled."""
        ctx.progress(0, 1, "holding")
        ctx.cancelled.wait(60)
        return "released"

    with McpHttpServer(fake, reply=options.reply) as server:
        sys.stdout.write(server.url + "\n")
        sys.stdout.flush()
        sys.stdin.buffer.read()  # until the parent closes the pipe


if __name__ == "__main__":
    main()
