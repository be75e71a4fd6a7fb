#!/usr/bin/env python
"""Instructions per sequential ``tools/call`` (stdio, Streamable HTTP), counted by callgrind.

    python bench/callgrind_calls.py                      # stdio, HTTP JSON and SSE replies
    python bench/callgrind_calls.py --modes json --calls 300 --base 50
    python bench/callgrind_calls.py --tree ../before     # two checkouts, side by side

Wall-clock figures move with whatever else the machine runs; instruction counts barely
do, so this is the figure to compare a change of a transport by (before and after, same
machine). For each mode the client process runs twice under ``valgrind --tool=callgrind``
(the echo server, ``bench/echo_server.py``, over stdio or ``--http 0`` with JSON or SSE
replies, is its child and is not traced): once making ``--base`` calls, once ``--calls``;
the difference divided by the difference in calls is what one call costs the client,
every thread of it, start-up and connect cancelled out. Needs ``valgrind`` on ``PATH``;
imports ``mcp_sync`` from this checkout and, with ``--tree``, from another one too (a
``git worktree`` of an older commit, say): one column per checkout, and their ratio.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
PINNED_VERSION = "2025-11-25"  # pinned, so that no era probe is counted
WARM_CALLS = 30


def child(tree: str, mode: str, calls: int) -> None:
    """Connect to a fresh echo server, warm up, make ``calls`` calls (under callgrind)."""
    sys.path.insert(0, tree)
    import mcp_sync

    if mode == "stdio":
        argv = [sys.executable, str(BENCH / "echo_server.py")]
        with mcp_sync.connect(argv, protocol_version=PINNED_VERSION) as client:
            calls_on(client, calls)
        return
    server = subprocess.Popen(
        [sys.executable, str(BENCH / "echo_server.py"), "--http", "0", "--reply", mode],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    assert server.stdout is not None
    url = server.stdout.readline().decode().strip()
    try:
        with mcp_sync.connect(url, protocol_version=PINNED_VERSION) as client:
            calls_on(client, calls)
    finally:
        server.terminate()
        server.wait(10)
        server.stdout.close()


def calls_on(client: Any, calls: int) -> None:
    """List the tools, warm up, then make ``calls`` checked echo calls."""
    client.list_tools()
    for n in range(WARM_CALLS):
        client.call_tool("echo", {"text": f"warm {n}"})
    for n in range(calls):
        text = f"hello {n}"
        assert client.call_tool("echo", {"text": text}).text == text


def instructions(tree: str, mode: str, calls: int) -> int:
    """What callgrind counted for a child making ``calls`` calls."""
    run = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
         sys.executable, __file__, "--child", tree, mode, str(calls)],
        capture_output=True, text=True, timeout=1800)
    if run.returncode != 0:
        raise RuntimeError(f"the callgrind run failed:\n{run.stderr[-3000:]}")
    found = re.search(r"Collected : (\d+)", run.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in callgrind's output:\n{run.stderr[-3000:]}")
    return int(found.group(1))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--modes", default="stdio,json,sse",
                   help="stdio, and the HTTP reply modes json and sse (all three)")
    p.add_argument("--tree", help="another checkout to count beside this one")
    p.add_argument("--calls", type=int, default=300, help="calls of the longer run (300)")
    p.add_argument("--base", type=int, default=50, help="calls of the shorter run (50)")
    p.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args.child[0], args.child[1], int(args.child[2]))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not on PATH (apt-get install valgrind)", file=sys.stderr)
        return 2
    if args.calls <= args.base:
        p.error("--calls must be more than --base")
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = sorted(set(modes) - {"stdio", "json", "sse"})
    if unknown:
        p.error(f"unknown mode(s): {', '.join(unknown)}")
    trees = [str(ROOT)] + ([str(Path(args.tree).resolve())] if args.tree else [])
    if args.tree and not (Path(trees[1]) / "mcp_sync" / "__init__.py").is_file():
        p.error(f"--tree {args.tree}: no mcp_sync package there")
    header = "| mode | this checkout |" + (" --tree | this / --tree |" if args.tree else "")
    print(header + "\n|" + " --- |" + " ---: |" * (3 if args.tree else 1))
    for mode in modes:
        counts = []
        for tree in trees:
            short, long = instructions(tree, mode, args.base), instructions(tree, mode, args.calls)
            counts.append((long - short) / (args.calls - args.base))
        row = f"| {mode} | " + " | ".join(f"{c / 1000:,.0f}k" for c in counts) + " |"
        if args.tree:
            row += f" {counts[0] / counts[1]:.3f} |"
        print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
