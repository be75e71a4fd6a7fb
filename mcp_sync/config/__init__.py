"""The ``mcpServers`` configuration format: load, validate and expand it.

The format is the one MCP hosts share (Claude Desktop, Cursor, VS Code...)::

    {
      "mcpServers": {
        "files": {"command": "npx", "args": ["-y", "@scope/server", "${HOME}/docs"],
                  "env": {"API_KEY": "${FILES_KEY}"}, "cwd": "/tmp"},
        "remote": {"url": "https://example.com/mcp", "type": "http",
                   "headers": {"Authorization": "Bearer ${TOKEN:-anonymous}"},
                   "timeout": 60},
        "old": {"url": "http://127.0.0.1:3002/sse", "type": "sse", "disabled": true}
      }
    }

* ``type`` is ``stdio``, ``http`` (Streamable HTTP; also ``streamable-http``,
  ``streamableHttp``) or ``sse`` (legacy HTTP+SSE). Without it, ``command`` means stdio and
  ``url`` means http.
* ``timeout`` is the server's default request timeout in seconds.
* ``"disabled": true`` or ``"enabled": false`` keeps an entry without connecting it.
* ``enabledTools`` and ``disabledTools`` are lists of the server's tool names or
  shell-style patterns (``"read_*"``, ``"get_?"``; :func:`fnmatch.fnmatchcase`, so case
  matters), matched against the server's own tool names: with ``enabledTools`` only the
  tools matching one of its patterns are offered (``[]`` offers none), and a tool matching
  a ``disabledTools`` pattern is never offered, even if ``enabledTools`` names it. A
  :class:`~mcp_sync.Manager` leaves the others out of its listings (and so does a
  :class:`~mcp_sync.Toolbox` over it) and refuses a call to one with
  :class:`~mcp_sync.InvalidToolCall`, before sending anything. (``manager[name]`` is the
  server's own client: it is not filtered.)
* Unknown keys are kept (:attr:`ServerConfig.model_extra`), never an error.
* ``${VAR}`` and ``${VAR:-default}`` in string values are replaced from the environment
  (``:-`` also replaces a variable that is set but empty). Expansion happens every time an
  entry is resolved, so a :class:`~mcp_sync.Manager` picks up changed variables when it
  reconnects.

Every problem is a :class:`ConfigError` that names the file, the server and the key.

**Finding the configuration.** :func:`discover_config` (and ``Manager.from_config()``
with no argument, and ``mcp-sync servers`` without ``--config``) reads the files where
MCP hosts keep their servers, and merges them by server name: the first file, in the
order below, that names a server gives its whole entry (entries are never merged key by
key), and each server remembers its file (:meth:`Config.source_of`).

1. The project, nearest directory first: the current directory, then each parent up to
   the root of the git repository it is in (the first directory holding ``.git``);
   outside a git repository, the current directory only. In each directory:
   ``.mcp.json`` (Claude Code and others), then ``.cursor/mcp.json`` (Cursor), then
   ``.vscode/mcp.json`` (VS Code: its key is ``servers``, not ``mcpServers``).
2. The user's files: Claude Desktop's ``claude_desktop_config.json``
   (``~/Library/Application Support/Claude/`` on macOS, ``%APPDATA%\\Claude\\`` on
   Windows, ``$XDG_CONFIG_HOME/Claude/`` or ``~/.config/Claude/`` elsewhere), then
   Cursor's ``~/.cursor/mcp.json``, then VS Code's user ``mcp.json`` and ``settings.json``
   (its ``"mcp": {"servers": ...}``), in ``Code/User/`` under the same folders as Claude's.

So a trusted project file beats the user's files (as in Claude Code, the project's
scope comes before the user's), a nearer directory beats a farther one, and within one
place the order above decides.

**A project file needs the user's approval.** A project file is someone else's writing
(a repository you cloned, an archive you unpacked), and starting a server runs its
command as you; so the servers of a project file are taken only once you have trusted
that file, as it is now: ``mcp-sync trust [FILE]`` shows every command and URL it
would start and records your approval (:mod:`mcp_sync.config.trust`: kept in your own
configuration folder, keyed by the file's resolved path and the SHA-256 of its bytes, so
any change to the file needs a new approval). Until then its servers are left out, with
a WARNING saying how to trust the file, and listed in :attr:`Config.untrusted` (their
file's state, ``"untrusted"`` or ``"changed"`` since you trusted it, in
:attr:`Config.project_files`). An untrusted project server never takes the place of
another file's server of the same name: that one is used. Where a project file and one
of your files name the same server, a WARNING (and :attr:`Config.shadowed`) says which
entry is used and why. ``discover_config(trust_project=True)`` (and
``Manager.from_config(trust_project=True)``) takes every project file: the caller's
explicit choice. The user's own files need no approval, nor does a file given by path
(``load_config``, ``--config FILE``): naming it is the choice.

VS Code's files may hold comments and trailing commas, and
their variables are read as VS Code means them: ``${env:NAME}`` is ``${NAME}``,
``${workspaceFolder}`` the folder holding ``.vscode`` (for the user's files: the git
root, or the current directory), ``${userHome}`` the home; an entry that needs an
``${input:...}`` (which VS Code asks the user for) is left out, with a warning, and
listed in :attr:`Config.skipped`.
A file that is missing, or that has no servers key, is passed over. A file is read once,
at most :data:`MAX_FILE_BYTES`. A project file that cannot be read (or is larger), is not
valid JSON or has an invalid entry is a :class:`ConfigError` naming it (the project is
yours to fix; reading it runs nothing); a user file in that state is logged (WARNING),
left out and listed in :attr:`Config.skipped` (it belongs to another application, and
must not stop this one). No server anywhere (trusted or not) is a :class:`ConfigError`
listing every place looked.
"""

from ._discovery import (
    ProjectFile,
    config_locations,
    discover_config,
    read_project_file,
)
from ._format import (
    MAX_FILE_BYTES,
    Config,
    ConfigError,
    ConfigLocation,
    ServerConfig,
    expand,
    load_config,
)

__all__ = [
    "MAX_FILE_BYTES",
    "Config",
    "ConfigError",
    "ConfigLocation",
    "ProjectFile",
    "ServerConfig",
    "config_locations",
    "discover_config",
    "expand",
    "load_config",
    "read_project_file",
]
