"""The ``mcp-sync`` command line (also ``python -m mcp_sync``).

::

    mcp-sync demo                                        # the embedded demo server
    mcp-sync tools -- python server.py                   # a stdio server: a command after --
    mcp-sync tools add -- python server.py               # one tool whole, with its schemas
    mcp-sync --config mcp.json tools --changes           # what changed since pinned
    mcp-sync --config mcp.json tools --changes --accept  # ... and trust it
    mcp-sync call add --arg a=1 --arg b=2 -- python server.py
    mcp-sync --env API_KEY=... tools -- npx -y @scope/server-x
    mcp-sync --url http://127.0.0.1:8000/mcp resources   # a URL
    mcp-sync --config mcp.json prompts                   # the one enabled server of a file
    mcp-sync --config mcp.json --server files prompts    # a server of an mcpServers file
    mcp-sync --config mcp.json servers                   # the status of every server
    mcp-sync servers --no-connect                        # the servers found, not connected
    mcp-sync trust .mcp.json                             # let a project file start its servers
    mcp-sync call --task report --arg topic=tides -- python server.py   # a tool as a task
    mcp-sync --url http://127.0.0.1:8000/mcp call --task --detach report --arg topic=x
    mcp-sync --url http://127.0.0.1:8000/mcp task task-1 --wait       # its result, later
    mcp-sync --url http://127.0.0.1:8000/mcp tasks                    # the server's tasks

Commands: ``tools [NAME]``, ``call TOOL [--arg k=v ...] [--json-args '{...}'] [--task
[--ttl SECONDS] [--detach]]``, ``task ID [--wait]``, ``tasks``, ``resources``,
``read URI``, ``prompts``, ``prompt NAME [--arg k=v ...]``, ``ping``, ``info``,
``servers``, ``trust [FILE] [--yes | --list | --revoke]``, ``demo``. Options may come
before or after the command.

Tasks (MCP 2025-11-25, servers that run tools as tasks): ``call --task`` starts the tool
as a task and shows each new state of it on stderr, one line each
(``task-1 working: poll 1 of 3``; none with ``--progress never``), then prints the
result on stdout as ``call`` does (``--json``: ``{"task": ..., "result": ...}``, the
task's last state and the result). ``--ttl SECONDS`` asks the server to keep the task
that long. ``--detach`` prints the task's id (``--json``: ``{"task": ...}``, its state
as created) and ends at once, leaving the task to the server. ``task ID`` shows a task's
state (one ``tasks/get``; ``--json``: the task as the server sent it); ``task ID
--wait`` waits for its result and prints it as ``call --task`` does. ``tasks`` lists the
tasks the server keeps. ``--timeout`` bounds each request and, for ``call --task`` and
``task ID --wait``, the whole wait for a task's result: its polls and the reading of the
result together (a task that takes longer needs a longer ``--timeout``, or ``0``: none);
a wait that runs out ends with exit code 4, says so, and leaves the task running on an
HTTP server (``task ID --wait`` can ask again), while Ctrl-C during ``call --task`` cancels the task
(``tasks/cancel``) and Ctrl-C during ``task ID --wait`` only stops waiting.
``call --task`` of a tool that does not run as a task, or ``tasks`` against a server
that does not list tasks, is refused before anything is sent (exit code 3).

Each run is a new MCP session, so ``task ID`` and ``tasks`` reach a task started by an
earlier run only on a server that outlives the runs and keeps tasks across sessions: an
HTTP server (``--url``, or a ``--config`` entry with a URL). A stdio server is started
by each run and stopped at its end, with the tasks it ran: ``call --task --detach`` over
stdio prints an id no later run can use.

``servers`` shows every server of ``--config FILE`` or, without it, of the configuration
files found from the current directory (the project's ``.mcp.json``, ``.cursor/mcp.json``
and ``.vscode/mcp.json``, then the user's Claude Desktop, Cursor and VS Code files: see
:mod:`mcp_sync.config`): its transport, the file it comes from, its ``enabledTools`` and
``disabledTools`` filters and what it runs or reaches (the command and arguments, or the
URL; in ``--json`` and with ``--no-connect``), as written in the file: ``${VAR}``
references are not expanded, and the values of ``env`` and ``headers``, of arguments
after a flag named like a secret (``--api-key``, ``--token=``...) and of a URL's
credentials and query are shown as ``***``. It connects every enabled server and shows
its state, tool count (after the filters) and last error (exit code 3 when an enabled
server is not connected); ``--no-connect`` shows the configuration only, connecting
nothing. A user file that could not be used (or a VS Code entry that needs an input) is
named in a warning on stderr.

A project file (``.mcp.json``, ``.cursor/mcp.json``, ``.vscode/mcp.json``) is someone
else's writing: a repository you cloned can put any command in it. Its servers start
only once you have trusted the file: until then ``servers`` lists them with the state
``untrusted`` (``--json``: ``"state": "untrusted"``, and ``"trust"`` is ``"untrusted"``
or ``"changed"``), starts none of them, and says on stderr how to trust the file; and a
server of your own files with the same name is used instead of the project's (a
warning names both files). ``trust FILE`` shows every server the file would start, the
program and each of its arguments, its working folder and its URL exactly as written
(escaped for the terminal), and of its ``env`` and ``headers`` the names and the
``${VAR}`` variables of your environment their values read (text written in the file is
shown as ``***``), then asks ``[y/N]`` on the terminal; ``--yes`` trusts without asking
(for scripts: read the file first), and without a terminal and without ``--yes`` it
refuses (exit code 2). Without FILE it takes the project files found from the current
directory. The approval is kept in your configuration folder
(``$MCP_SYNC_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/mcp-sync`` or ``~/.config/mcp-sync``,
``%APPDATA%\\mcp-sync`` on Windows), keyed by the file's path and the SHA-256 of its
content: once the file changes in any way, its servers stop starting (``changed since
you trusted it``) until you trust it again. A trusted project file's server comes
before your own server of the same name, as in Claude Code (a warning says so).
``trust --list`` lists the trusted files and whether each changed since, and ``trust
--revoke FILE`` forgets an approval. A file given with ``--config`` needs no approval:
naming it is the choice. No other command reads the discovered files: each needs its
server named (``--config``, ``--url`` or a command).

``tools`` lists each tool with its arguments (``name*:type``; ``*``: required), hints and
description; ``tools NAME`` shows one tool whole: description, arguments, input and
output schema. On a terminal a table is cut to its width: a tool's arguments, when they
do not all fit, end with ``+N more``, and a description with ``...``; output piped to a
program or written to a file is never cut. A tool name the server did not list is
answered with the listed names closest to it (``did you mean 'add'?``), after the
server's own error when the call was sent.

``tools --changes`` compares the server's tools with the definitions pinned in the tool
cache (``Manager(tool_cache=...)``: ``--tool-cache DIR``, by default the user's cache
directory) and says, for each tool whose definition changed, what changed, in words
(escaped). A Manager blocks such a tool until the change is accepted; ``tools --changes
--accept`` accepts: it pins the tools listed now. The server's file in the cache is the
one a Manager uses for a ``--config`` entry, or for an entry with the same command and
arguments (or URL).

``--arg KEY=VALUE`` values are typed by the tool's input schema: for an argument of type
string the value is sent as written (``--arg message=123`` sends ``"123"``); integer,
number, boolean, null, array and object values are parsed as JSON (``--arg n=5``,
``--arg tags='["a","b"]'``), and a value that does not fit is a usage error naming the
argument and the type expected. When several types are allowed, JSON of a type other
than string is sent as that, anything else as the string. For an argument the schema
does not type, the value is sent as JSON when it parses as JSON, else as a string.
``--json-args`` gives all arguments as one JSON object; ``--arg`` wins over it. An
argument the input schema requires and neither gives is a usage error naming it, and
nothing is sent. Prompt
arguments (``prompt NAME --arg``) are strings, always.

The server: a command after ``--`` (run over stdio; a command given without the ``--``
is a usage error that shows the line with it), ``--url URL`` (Streamable HTTP,
falling back to legacy HTTP+SSE), or ``--config FILE`` (an ``mcpServers`` file) with
``--server NAME``, which may be left out when the file has a single enabled server; a
disabled entry is refused, not connected. A stdio server gets only the variables of this
environment that a program needs to run (``PATH``, ``HOME``, ``USER``, ``LOGNAME``,
``SHELL``, ``TERM``, ``LANG``, ``LC_ALL``, ``LC_CTYPE``, ``TZ``, ``TMPDIR``; on Windows
the system folders and ``PATH``), not API keys or tokens that happen to be set here:
give those with ``--env KEY=VALUE`` (repeatable; added to a ``--config`` entry's
``env``), or pass the whole environment with ``--inherit-env``. Servers are named after
what they say they are (``serverInfo.name``) in messages, or after the ``--config``
entry.

Output is human-readable by default and JSON with ``--json``. What the server sent is
shown with its terminal escapes, control, bidi and invisible characters escaped (``\\x1b``,
``\\u202e``); ``--json`` writes them as ``\\u`` escapes. While a tool reports progress, a
bar is drawn on stderr (``--progress auto|always|never``; ``auto`` draws on a terminal).
Ctrl-C cancels the call on the wire. PNG, JPEG, GIF, WebP and BMP images in results are
written to files in ``--save-images DIR`` (under names the client makes) instead of being
printed; other media are reported, never written. Piped into a program that stops
reading (``mcp-sync tools | head -1``), it stops quietly.

Exit codes: 0 ok, 1 the server refused the request (a JSON-RPC error such as an unknown
tool, resource or prompt; the server's message is printed), the tool result has
``isError``, or a task failed, was cancelled or is unknown to the server (``task ID``
without ``--wait`` also exits 1 when the task it shows is ``failed`` or ``cancelled``),
2 usage (bad arguments or configuration), 3 connection or protocol failure
(a refused handshake included), 4 timeout, 130 interrupted, 141 the output was
closed early (as a shell reports a program ended by SIGPIPE). ``trust`` exits 1 when
you answer no.

A stdio server is stopped with a 0.5 s grace for each step (stdin closed, SIGTERM,
SIGKILL), so a command that gave up on a call (``--timeout``, Ctrl-C) ends about a
second after it, even when the server is stuck in that call.

``mcp-sync`` answers no sampling or elicitation request. When a tool fails because it
asked for one with a request of its own mid-call over a 2026-07-28 connection, which has
no channel for it (the server says "no back-channel for server-initiated requests", or
"unavailable on 2026-07-28 connections"), the error adds that such a tool needs the
session era: ``--protocol-version 2025-11-25`` (in Python ``protocol_version="2025-11-25"``
with an ``elicitation_handler`` or ``sampling_handler``).
"""

from ._main import (
    main,
)

__all__ = [
    "main",
]
