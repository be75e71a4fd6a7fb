#!/usr/bin/env python
"""Instructions per sequential ``tools/call`` over Streamable HTTP, counted by callgrind.

    python bench/callgrind_http.py                 # JSON and SSE replies, ~4 minutes
    python bench/callgrind_http.py --modes json --calls 300 --base 50

Wall-clock figures move with whatever else the machine runs; instruction counts barely
do, so this is the figure to compare a change of the HTTP transport by (before and after,
same machine). For each reply mode the client process runs twice under
``valgrind --tool=callgrind`` (the echo server, ``bench/echo_server.py --http 0``, is its
child and is not traced): once making ``--base`` calls, once ``--calls``; the difference
divided by the difference in calls is what one call costs the client, every thread of it,
start-up and connect cancelled out. Needs ``valgrind`` on ``PATH``; imports ``mcp_sync``
from this checkout.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
PINNED_VERSION = "2025-11-25"  # pinned, so that no era probe is counted
WARM_CALLS = 30


def child(mode: str, calls: int) -> None:
    """Connect to a fresh echo server, warm up, make ``calls`` calls (under callgrind)."""
    sys.path.insert(0, str(ROOT))
    server = subprocess.Popen(
        [sys.executable, str(BENCH / "echo_server.py"), "--http", "0", "--reply", mode],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    assert server.stdout is not None
    url = server.stdout.readline().decode().strip()
    try:
        import mcp_sync

        with mcp_sync.connect(url, protocol_version=PINNED_VERSION) as client:
            client.list_tools()
            for n in range(WARM_CALLS):
                client.call_tool("echo", {"text": f"warm {n}"})
            for n in range(calls):
                text = f"hello {n}"
                assert client.call_tool("echo", {"text": text}).text == text
    finally:
        server.terminate()
        server.wait(10)
        server.stdout.close()


def instructions(mode: str, calls: int) -> int:
    """What callgrind counted for a child making ``calls`` calls."""
    run = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
         sys.executable, __file__, "--child", mode, str(calls)],
        capture_output=True, text=True, timeout=1800)
    if run.returncode != 0:
        raise RuntimeError(f"the callgrind run failed:\n{run.stderr[-3000:]}")
    found = re.search(r"Collected : (\d+)", run.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in callgrind's output:\n{run.stderr[-3000:]}")
    return int(found.group(1))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--modes", default="json,sse", help="reply modes (json,sse)")
    p.add_argument("--calls", type=int, default=300, help="calls of the longer run (300)")
    p.add_argument("--base", type=int, default=50, help="calls of the shorter run (50)")
    p.add_argument("--child", nargs=2, metavar=("MODE", "CALLS"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not on PATH (apt-get install valgrind)", file=sys.stderr)
        return 2
    if args.calls <= args.base:
        p.error("--calls must be more than --base")
    print("| reply | instructions per tools/call |\n| --- | ---: |")
    for mode in [m.strip() for m in args.modes.split(",") if m.strip()]:
        short, long = instructions(mode, args.base), instructions(mode, args.calls)
        per_call = (long - short) / (args.calls - args.base)
        print(f"| {mode} | {per_call / 1000:,.0f}k |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
