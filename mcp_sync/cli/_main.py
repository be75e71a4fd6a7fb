"""The ``mcp-sync`` command line: its commands and parser (see the package's docstring)."""

from __future__ import annotations

import argparse
import logging
import os
import re
import shlex
import shutil
import sys
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    List,
    Optional,
    Sequence,
)

from ..exceptions import (
    MCPError,
    RequestTimeout,
    ServerError,
    TaskError,
    UnsupportedProtocolVersion,
)
from ._commands import (
    _cmd_demo,
    _cmd_info,
    _cmd_ping,
    _cmd_prompt,
    _cmd_prompts,
    _cmd_read,
    _cmd_resources,
)
from ._output import (
    _HANDSHAKE_METHODS,
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_OUTPUT_CLOSED,
    EXIT_TIMEOUT,
    EXIT_TOOL_ERROR,
    EXIT_USAGE,
    UsageError,
    _err,
    _error,
)
from ._servers import _cmd_servers, _cmd_trust
from ._tools import _cmd_call, _cmd_task, _cmd_tasks, _cmd_tools

if TYPE_CHECKING:
    pass

__all__ = ["main"]






# -- output ------------------------------------------------------------------------------
























# -- media files -------------------------------------------------------------------------














# -- arguments ---------------------------------------------------------------------------






































# -- commands ----------------------------------------------------------------------------


























# -- tasks (2025-11-25) ------------------------------------------------------------------






























































_COMMANDS: Dict[str, Callable[[argparse.Namespace], int]] = {
    "tools": _cmd_tools, "call": _cmd_call, "resources": _cmd_resources, "read": _cmd_read,
    "prompts": _cmd_prompts, "prompt": _cmd_prompt, "ping": _cmd_ping, "info": _cmd_info,
    "servers": _cmd_servers, "demo": _cmd_demo, "task": _cmd_task, "tasks": _cmd_tasks,
    "trust": _cmd_trust,
}


# -- the parser --------------------------------------------------------------------------


def _add_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """The options every command takes; on subcommands they default to "not given" so
    that they do not override the same option given before the command."""

    def default(value: Any) -> Any:
        return value if top else argparse.SUPPRESS

    group = parser.add_argument_group("server (one of)")
    group.add_argument("--config", metavar="FILE", default=default(None),
                       help="an mcpServers JSON file")
    group.add_argument("--server", metavar="NAME", default=default(None),
                       help="the server of --config to use")
    group.add_argument("--url", default=default(None),
                       help="a server URL (Streamable HTTP, falling back to legacy SSE)")
    group.add_argument("--transport", choices=["http", "sse"], default=default(None),
                       help="force the HTTP transport for --url")
    group.add_argument("--header", action="append", metavar="'NAME: VALUE'",
                       default=default(None), help="an HTTP header for --url (repeatable)")
    group.add_argument("--env", action="append", metavar="KEY=VALUE", default=default(None),
                       help="an environment variable for a stdio server (repeatable)")
    group.add_argument("--inherit-env", action="store_true", default=default(False),
                       help="give a stdio server every variable of this environment, not "
                            "only PATH, HOME, the user, terminal, locale and temp folder")
    group.add_argument("--protocol-version", metavar="VERSION", default=default(None),
                       help="pin the protocol version (default: negotiate)")
    output = parser.add_argument_group("output")
    output.add_argument("--json", action="store_true", default=default(False),
                        help="JSON on stdout, for scripts")
    output.add_argument("--timeout", type=float, metavar="SECONDS", default=default(None),
                        help="per request; for call --task and task --wait, the whole wait "
                             "for the task's result (default: $MCP_SYNC_TIMEOUT or 30; 0: "
                             "none)")
    output.add_argument("--save-images", metavar="DIR", default=default(None),
                        help="write PNG, JPEG, GIF, WebP and BMP images in results to "
                             "files in DIR")
    output.add_argument("--progress", choices=["auto", "always", "never"],
                        default=default("auto"), help="progress bar on stderr (auto: on a tty)")
    output.add_argument("-v", "--verbose", action="count", default=default(0),
                        help="log to stderr (-vv: debug)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcp-sync",
        description="A blocking MCP client. Give a server as --config FILE --server NAME, "
                    "--url URL, or a command after --.",
        epilog="exit codes: 0 ok, 1 the server refused the request, the tool result has "
               "isError, or the task failed or was cancelled, 2 usage, 3 connection or "
               "protocol failure, 4 timeout, "
               "130 interrupted",
    )
    _add_options(parser, top=True)
    sub = parser.add_subparsers(dest="cmd", metavar="COMMAND", required=True)

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        child = sub.add_parser(name, help=help_text, description=help_text)
        _add_options(child, top=False)
        return child

    tools = command("tools", "list the server's tools with their arguments; with NAME, "
                             "show one tool whole (description, input and output schema)")
    tools.add_argument("name", nargs="?", metavar="NAME", help="the tool to show")
    tools.add_argument("--changes", action="store_true",
                       help="show what changed in each tool since its definition was pinned "
                            "in the tool cache (a Manager's tool_cache). A changed tool is "
                            "blocked until its change is accepted: not offered to a model, "
                            "a call to it refused (ToolChanged); the library's "
                            "on_tool_change= (\"block\", \"warn\" or a function; "
                            "docs/toolbox.md) chooses another policy")
    tools.add_argument("--accept", action="store_true",
                       help="with --changes: accept the changes, pinning the tools listed now")
    tools.add_argument("--tool-cache", metavar="DIR",
                       help="with --changes: the tool cache directory (default: the user's, "
                            "as Manager(tool_cache=True))")
    call = command("call", "call a tool")
    call.add_argument("tool")
    call.add_argument("--arg", action="append", metavar="KEY=VALUE",
                      help="an argument; VALUE is parsed as JSON when it can be (repeatable)")
    call.add_argument("--json-args", metavar="JSON", help="all arguments as one JSON object")
    call.add_argument("--task", action="store_true",
                      help="run the tool as a task (MCP 2025-11-25): show its status on "
                           "stderr line by line until the result, waiting at most "
                           "--timeout in all")
    call.add_argument("--ttl", type=float, metavar="SECONDS",
                      help="with --task: how long the server should keep the task")
    call.add_argument("--detach", action="store_true",
                      help="with --task: print the task's id and end at once")
    command("resources", "list the server's resources and resource templates")
    read = command("read", "read a resource")
    read.add_argument("uri")
    command("prompts", "list the server's prompts")
    prompt = command("prompt", "get a prompt")
    prompt.add_argument("name")
    prompt.add_argument("--arg", action="append", metavar="KEY=VALUE",
                        help="a prompt argument (a string; repeatable)")
    command("ping", "check that the server answers")
    command("info", "server info, protocol version and era, capabilities")
    servers = command("servers", "show every server of --config (or of the configuration "
                                 "files found: .mcp.json, Claude Desktop, Cursor, VS Code), "
                                 "where it comes from and its tool filters; connect each and "
                                 "show its status. The servers of a project file start only "
                                 "once you trust it (mcp-sync trust)")
    servers.add_argument("--no-connect", action="store_true",
                         help="show the configuration only; connect nothing")
    trust = command("trust", "trust a project file (.mcp.json, .cursor/mcp.json, "
                             ".vscode/mcp.json) after reading every command and URL it "
                             "would start: until then, mcp-sync servers and "
                             "Manager.from_config() start none of its servers; any change "
                             "to the file needs a new approval")
    trust.add_argument("file", nargs="?", metavar="FILE",
                       help="the project file (default: those found from here, up to the "
                            "git root)")
    trust.add_argument("--yes", action="store_true",
                       help="trust without asking (for scripts: read the file first)")
    trust.add_argument("--list", action="store_true",
                       help="list the trusted files and whether they changed since")
    trust.add_argument("--revoke", action="store_true",
                       help="forget the approval of FILE (or of the files found from here)")
    command("demo", "run the embedded demo server, list its tools, call one with progress")
    task = command("task", "show a task's status (a task started by call --task); "
                           "with --wait, wait for its result")
    task.add_argument("id", metavar="ID", help="the task's id")
    task.add_argument("--wait", action="store_true",
                      help="wait for the task to end and print its result (--timeout "
                           "bounds the whole wait)")
    command("tasks", "list the tasks the server keeps")
    return parser




def _missing_dashes_hint(args: argparse.Namespace, argv: Sequence[str], extras: Sequence[str],
                         dashes: bool) -> str:
    """When words left over look like a stdio server's command given without ``--``
    (``mcp-sync tools python -m server``), the command line with it: argparse took
    ``python`` for the tool's name and stumbled on ``-m``."""
    if dashes or getattr(args, "url", None) or getattr(args, "config", None):
        return ""
    server = list(extras)
    # `tools NAME` took the program's name for a tool's when an option follows it or a
    # program of that name exists.
    taken = getattr(args, "name", None) if args.cmd == "tools" else None
    if taken is not None and (server[0].startswith("-") or shutil.which(taken)):
        server.insert(0, taken)
    if server[0].startswith("-"):
        return ""  # not a program: a misspelt option of ours, say
    start = argv.index(args.cmd) + 1 if args.cmd in argv else 0
    kept, pending = list(argv[:start]), list(server)
    for word in argv[start:]:
        if pending and word == pending[0]:
            pending.pop(0)
        else:
            kept.append(word)
    return ("\nmcp-sync: hint: a stdio server's command goes after --: "
            f"mcp-sync {shlex.join(kept)} -- {shlex.join(server)}")


# What a server says when one of its tools asked the client for input with a request in
# the middle of the call (the session era's way) on a 2026-07-28 connection, which has no
# channel for it: the official Python SDK's "Cannot send 'elicitation/create': this
# transport context has no back-channel for server-initiated requests", FastMCP's
# "... unavailable on 2026-07-28 connections".
_NO_BACK_CHANNEL = r"back-channel|server-initiated|2026-07-28"
_ASKS_THE_CLIENT = r"elicit|sampl|createMessage"


def _no_back_channel_hint(args: argparse.Namespace, exc: ServerError) -> str:
    """The way out, for a tool call the server failed so, unless the era was pinned to
    the session era already."""
    pinned = getattr(args, "protocol_version", None)
    if exc.method != "tools/call" or (pinned and pinned != "2026-07-28"):
        return ""
    said = exc.message[:2000]
    if not (re.search(_NO_BACK_CHANNEL, said, re.IGNORECASE)
            and re.search(_ASKS_THE_CLIENT, said, re.IGNORECASE)):
        return ""
    handler = "elicitation_handler" if re.search("elicit", said, re.IGNORECASE) else (
        "sampling_handler")
    return ("\n  this tool asks the client for input mid-call (a request from the server), "
            "which a 2026-07-28 connection cannot carry; a 2025-11-25 one can: "
            "--protocol-version 2025-11-25 here, protocol_version=\"2025-11-25\" plus "
            f"{handler}= in Python (mcp-sync itself answers no such request)")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; returns the exit code."""
    try:
        return _main(argv)
    except BrokenPipeError:
        return _output_closed()


def _output_closed() -> int:
    """Whoever read our output stopped (``mcp-sync tools | head -1``): end quietly, as Unix
    tools do, with the status a shell gives a program SIGPIPE ended. The client was closed
    on the way out (context managers); what is left in stdout's buffer is dropped, so that
    the interpreter's last flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError):  # no file descriptor behind sys.stdout: nothing to flush
        pass
    return EXIT_OUTPUT_CLOSED


def _main(argv: Optional[Sequence[str]]) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command: List[str] = []
    if "--" in argv:
        index = argv.index("--")
        argv, command = argv[:index], argv[index + 1:]
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")
    parser = _parser()
    args, extras = parser.parse_known_args(argv)
    if extras:
        parser.error(f"unrecognized arguments: {' '.join(extras)}"
                     + _missing_dashes_hint(args, argv, extras, bool(command)))
    args.command = command
    if args.verbose:
        logging.basicConfig(
            stream=sys.stderr, format="%(asctime)s %(threadName)s %(name)s: %(message)s")
        logging.getLogger("mcp_sync").setLevel(
            logging.DEBUG if args.verbose > 1 else logging.INFO)
    from ..config import ConfigError

    try:
        return _COMMANDS[args.cmd](args)
    except KeyboardInterrupt:
        _err("\nmcp-sync: interrupted; the task goes on on the server" if args.cmd == "task"
             else "\nmcp-sync: interrupted; nothing more was trusted" if args.cmd == "trust"
             else "\nmcp-sync: interrupted; the call was cancelled")
        return EXIT_INTERRUPTED
    except (UsageError, ConfigError) as exc:
        parser.print_usage(sys.stderr)
        return _error(args, EXIT_USAGE, type(exc).__name__, f"error: {exc}")
    except RequestTimeout as exc:
        return _error(args, EXIT_TIMEOUT, type(exc).__name__, str(exc))
    except TaskError as exc:  # the task failed, was cancelled, or is unknown
        return _error(args, EXIT_TOOL_ERROR, type(exc).__name__, str(exc))
    except ServerError as exc:
        refused = exc.method not in _HANDSHAKE_METHODS and not isinstance(
            exc, UnsupportedProtocolVersion)
        return _error(args, EXIT_TOOL_ERROR if refused else EXIT_FAILURE, type(exc).__name__,
                      str(exc) + _no_back_channel_hint(args, exc))
    except MCPError as exc:
        return _error(args, EXIT_FAILURE, type(exc).__name__, str(exc))


if __name__ == "__main__":
    sys.exit(main())
