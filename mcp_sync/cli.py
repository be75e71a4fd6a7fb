"""The ``mcp-sync`` command line (also ``python -m mcp_sync``).

Commands: ``demo`` (spawn the embedded demo server, list its tools, call one with
progress), ``tools``, ``call``, ``ping`` and ``info`` against a server given as a URL or
as a command after ``--``. Exit codes: 0 ok, 1 tool result with ``isError``, 2 usage,
3 connection or protocol failure, 4 timeout.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, List, Optional, Sequence

from .client import Client
from .exceptions import MCPError, RequestTimeout

__all__ = ["main"]


def _out(text: str = "") -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _progress_bar(progress: float, total: Optional[float], message: Optional[str]) -> None:
    if total:
        filled = int(20 * min(progress / total, 1.0))
        bar = "#" * filled + "-" * (20 - filled)
        sys.stderr.write(f"\r[{bar}] {progress:g}/{total:g} {message or ''}\x1b[K")
    else:
        sys.stderr.write(f"\r{progress:g} {message or ''}\x1b[K")
    sys.stderr.flush()


def _connect(args: argparse.Namespace) -> Client:
    from .connect import connect

    target: Any = args.url or args.command
    if not target:
        raise SystemExit("mcp-sync: give a server as --url URL or as a command after --")
    return connect(target, timeout=args.timeout)


def _demo(args: argparse.Namespace) -> int:
    from .connect import connect

    command = [sys.executable, "-m", "mcp_sync.demo_server"]
    with connect(command, timeout=args.timeout) as client:
        info = client.server_info
        _out(f"Connected to {info.name} {info.version} over stdio "
             f"(protocol {client.protocol_version})")
        _out("Tools:")
        for tool in client.list_tools():
            _out(f"  {tool.name:<8} {tool.description or ''}")
        _out("Calling count(n=5) ...")
        result = client.call_tool("count", {"n": 5, "interval": 0.1},
                                  on_progress=_progress_bar)
        sys.stderr.write("\n")
        _out(f"Result: {result.text}")
        return 1 if result.is_error else 0


def _tools(args: argparse.Namespace) -> int:
    with _connect(args) as client:
        tools = client.list_tools()
        if args.json:
            _out(json.dumps([t.to_wire() for t in tools], indent=2))
        else:
            for tool in tools:
                _out(f"{tool.name:<24} {(tool.description or '').splitlines()[0:1]}")
    return 0


def _call(args: argparse.Namespace) -> int:
    arguments = json.loads(args.json_args) if args.json_args else {}
    for pair in args.arg or ():
        key, _, value = pair.partition("=")
        try:
            arguments[key] = json.loads(value)
        except ValueError:
            arguments[key] = value
    with _connect(args) as client:
        result = client.call_tool(args.tool, arguments, on_progress=_progress_bar)
        _out(json.dumps(result.to_wire(), indent=2) if args.json else result.text)
        return 1 if result.is_error else 0


def _ping(args: argparse.Namespace) -> int:
    with _connect(args) as client:
        client.ping()
        _out("ok")
    return 0


def _info(args: argparse.Namespace) -> int:
    with _connect(args) as client:
        info = {
            "server": client.server_info.to_wire(),
            "protocolVersion": client.protocol_version,
            "capabilities": client.server_capabilities.to_wire(),
            "instructions": client.instructions,
        }
        _out(json.dumps(info, indent=2))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mcp-sync", description="A blocking MCP client.")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per request")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--url", help="the server's URL (Streamable HTTP or legacy SSE)")
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("demo", help="run the embedded demo server and call a tool")
    sub.add_parser("tools", help="list the server's tools")
    call = sub.add_parser("call", help="call a tool")
    call.add_argument("tool")
    call.add_argument("--arg", action="append", help="key=value (value parsed as JSON if it can)")
    call.add_argument("--json-args", help="all arguments as one JSON object")
    sub.add_parser("ping", help="check that the server answers")
    sub.add_parser("info", help="server info, protocol version and capabilities")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command: List[str] = []
    if "--" in argv:
        index = argv.index("--")
        argv, command = argv[:index], argv[index + 1:]
    args = _parser().parse_args(argv)
    args.command = command
    handlers = {"demo": _demo, "tools": _tools, "call": _call, "ping": _ping, "info": _info}
    try:
        return handlers[args.cmd](args)
    except KeyboardInterrupt:
        sys.stderr.write("\ninterrupted; the call was cancelled\n")
        return 130
    except RequestTimeout as exc:
        sys.stderr.write(f"mcp-sync: {exc}\n")
        return 4
    except MCPError as exc:
        sys.stderr.write(f"mcp-sync: {exc}\n")
        return 3


if __name__ == "__main__":
    sys.exit(main())
