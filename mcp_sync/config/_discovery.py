"""Finding the mcpServers files of the project and the user, reading them as their hosts
(Claude Desktop, Cursor, VS Code) write them, and merging them by name, with the project's
files counted only once trusted.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from dataclasses import dataclass, replace
from typing import (
    Any,
    Dict,
    List,
    Mapping,
    Optional,
    Tuple,
    Union,
)

from .._util.text import excerpt
from ._format import _VSCODE_VARIABLE, Config, ConfigError, ConfigLocation, _parse, _read_bytes

__all__ = [
    "ProjectFile",
    "config_locations",
    "discover_config",
    "read_project_file",
]

log = logging.getLogger(__name__)


def _home(home: Optional[str], environ: Mapping[str, str], platform: str) -> str:
    if home is not None:
        return os.fspath(home)
    for key in ("USERPROFILE", "HOME") if platform == "win32" else ("HOME",):
        if environ.get(key):
            return environ[key]
    return os.path.expanduser("~")


def _user_config_dir(home: str, environ: Mapping[str, str], platform: str) -> str:
    """Where desktop applications keep their settings, per platform."""
    if platform == "darwin":
        return os.path.join(home, "Library", "Application Support")
    if platform == "win32":
        return environ.get("APPDATA") or os.path.join(home, "AppData", "Roaming")
    xdg = environ.get("XDG_CONFIG_HOME", "")
    return xdg if os.path.isabs(xdg) else os.path.join(home, ".config")


def _project_dirs(cwd: str) -> List[str]:
    """``cwd`` and its parents up to the git root; ``cwd`` alone outside a repository."""
    start = os.path.abspath(cwd)
    dirs, current = [], start
    while True:
        dirs.append(current)
        if os.path.exists(os.path.join(current, ".git")):
            return dirs
        parent = os.path.dirname(current)
        if parent == current:
            return [start]
        current = parent


def config_locations(
    cwd: Union[str, os.PathLike[str], None] = None,
    *,
    home: Union[str, os.PathLike[str], None] = None,
    environ: Optional[Mapping[str, str]] = None,
    platform: Optional[str] = None,
) -> List[ConfigLocation]:
    """Every file :func:`discover_config` looks for, in order of precedence (the first
    one that names a server wins), whether it exists or not. Reads nothing but the
    directories' ``.git`` entries.

    Args:
        cwd: the project's directory (default: the current directory).
        home: the user's home (default: ``$HOME``, ``%USERPROFILE%`` on Windows, from
            ``environ``).
        environ: the variables that place the user's files (``APPDATA``,
            ``XDG_CONFIG_HOME``, ``HOME``; default ``os.environ``).
        platform: a ``sys.platform`` value (``"darwin"``, ``"win32"``, ``"linux"``...;
            default: this one's).
    """
    env = os.environ if environ is None else environ
    system = sys.platform if platform is None else platform
    user_home = _home(None if home is None else os.fspath(home), env, system)
    locations: List[ConfigLocation] = []
    for directory in _project_dirs(os.getcwd() if cwd is None else os.fspath(cwd)):
        locations += [
            ConfigLocation(os.path.join(directory, ".mcp.json"), "project", "mcp.json"),
            ConfigLocation(os.path.join(directory, ".cursor", "mcp.json"), "project",
                           "cursor"),
            ConfigLocation(os.path.join(directory, ".vscode", "mcp.json"), "project",
                           "vscode", ("servers",), jsonc=True),
        ]
    settings = _user_config_dir(user_home, env, system)
    vscode = os.path.join(settings, "Code", "User")
    locations += [
        ConfigLocation(os.path.join(settings, "Claude", "claude_desktop_config.json"),
                       "user", "claude-desktop"),
        ConfigLocation(os.path.join(user_home, ".cursor", "mcp.json"), "user", "cursor"),
        ConfigLocation(os.path.join(vscode, "mcp.json"), "user", "vscode", ("servers",),
                       jsonc=True),
        ConfigLocation(os.path.join(vscode, "settings.json"), "user", "vscode",
                       ("mcp", "servers"), jsonc=True),
    ]
    # A home inside the project (or the project at the home): the file keeps the
    # project's place in the order, and stays the user's own (trusted, never an error).
    unique: Dict[str, ConfigLocation] = {}
    for location in locations:
        key = os.path.normcase(os.path.abspath(location.path))
        if key not in unique:
            unique[key] = location
        elif location.scope == "user":
            unique[key] = replace(unique[key], scope="user")
    return list(unique.values())


class _NeedsInput(Exception):
    def __init__(self, name: str) -> None:
        self.name = name


def _from_vscode(value: Any, workspace: str, home: str) -> Any:
    """``value`` with VS Code's variables made ours: ``${env:NAME}`` becomes ``${NAME}``,
    ``${workspaceFolder}`` and ``${userHome}`` their paths; others are left as written.

    Raises:
        _NeedsInput: ``${input:id}``, which only VS Code can ask the user for.
    """
    if isinstance(value, str):
        def replace(match: re.Match[str]) -> str:
            kind, name = match.group(1), match.group(2)
            if kind == "env:":
                return f"${{{name}}}"
            if kind == "input:":
                raise _NeedsInput(name)
            return {"workspaceFolder": workspace, "userHome": home}.get(name, match.group(0))

        return _VSCODE_VARIABLE.sub(replace, value)
    if isinstance(value, list):
        return [_from_vscode(item, workspace, home) for item in value]
    if isinstance(value, dict):
        return {key: _from_vscode(item, workspace, home) for key, item in value.items()}
    return value


def _read_location(
    location: ConfigLocation, environ: Optional[Mapping[str, str]], workspace: str, home: str,
) -> Tuple[Optional[Config], List[str], str]:
    """The servers of one discovered file (None when it is missing or names none), why
    entries of it were left out (VS Code entries that need an input), and the SHA-256 of
    the bytes they were read from ("" for a missing file)."""
    from .trust import file_digest

    path = location.path
    if not os.path.isfile(path):  # missing (or a directory, a pipe: never opened)
        return None, [], ""
    data = _read_bytes(path)
    digest = file_digest(data)  # of the very bytes parsed: what is trusted is what runs
    document = _parse(data, path, location.jsonc)
    if not isinstance(document, Mapping):
        raise ConfigError("the configuration must be a JSON object", source=path)
    servers: Any = document
    for key in location.keys:
        if not isinstance(servers, Mapping) or key not in servers:
            log.debug("%s has no %r: no servers there", path, ".".join(location.keys))
            return None, [], digest
        servers = servers[key]
    if not isinstance(servers, Mapping):
        raise ConfigError("must be an object mapping names to entries", source=path,
                          key=".".join(location.keys))
    left_out: List[str] = []
    if location.host == "vscode":
        if location.scope == "project":  # <folder>/.vscode/mcp.json
            workspace = os.path.dirname(os.path.dirname(path))
        translated = {}
        for name, entry in servers.items():
            try:
                translated[name] = _from_vscode(entry, workspace, home)
            except _NeedsInput as exc:
                left_out.append(f"server {name!r} needs the VS Code input "
                                f"${{input:{exc.name}}}, which only VS Code can ask for")
        servers = translated
    return Config(servers, source=path, environ=environ), left_out, digest


@dataclass(frozen=True)
class ProjectFile:
    """A project configuration file as :func:`read_project_file` read it: what its
    approval is about."""

    #: The file's absolute path.
    path: str
    #: The SHA-256 (hex) of the bytes read: the digest to approve
    #: (:meth:`mcp_sync.config.trust.TrustStore.trust`).
    sha256: str
    #: Its servers, as discovery reads them (VS Code's variables translated); ``None``
    #: when it names none.
    config: Optional[Config]
    #: Why entries of it are left out (VS Code entries that need an input).
    left_out: Tuple[str, ...]


#: The project files discovery looks for in each directory: (the path's last parts,
#: host, keys to the servers, JSON with comments).
_PROJECT_FILES = (
    ((".mcp.json",), "mcp.json", ("mcpServers",), False),
    ((".cursor", "mcp.json"), "cursor", ("mcpServers",), False),
    ((".vscode", "mcp.json"), "vscode", ("servers",), True),
)


def read_project_file(
    path: Union[str, os.PathLike[str]],
    *,
    home: Union[str, os.PathLike[str], None] = None,
    environ: Optional[Mapping[str, str]] = None,
    platform: Optional[str] = None,
) -> ProjectFile:
    """Read a project file (``.mcp.json``, ``.cursor/mcp.json`` or ``.vscode/mcp.json``)
    once, the way :func:`discover_config` reads it, for showing it to the user before
    they trust it: its servers and the digest of the bytes they come from.

    Args:
        path: the file; its name says its format.
        home, environ, platform: as for :func:`config_locations` (VS Code's
            ``${userHome}``); ``environ`` is also the configuration's.

    Raises:
        ConfigError: not one of the project files above, missing, unreadable or invalid.
    """
    absolute = os.path.abspath(os.fspath(path))
    for parts, host, keys, jsonc in _PROJECT_FILES:
        tail = os.path.join(*parts)
        if absolute.endswith(os.sep + tail):
            location = ConfigLocation(absolute, "project", host, keys, jsonc)
            break
    else:
        raise ConfigError("not a project configuration file (.mcp.json, .cursor/mcp.json or "
                          ".vscode/mcp.json); a file you give with --config (or to "
                          "Manager.from_config) needs no approval", source=absolute)
    if not os.path.isfile(absolute):
        raise ConfigError("no such file", source=absolute)
    env = os.environ if environ is None else environ
    system = sys.platform if platform is None else platform
    user_home = _home(None if home is None else os.fspath(home), env, system)
    workspace = os.path.dirname(os.path.dirname(absolute))
    found, left_out, digest = _read_location(location, environ, workspace, user_home)
    return ProjectFile(absolute, digest, found, tuple(left_out))


def discover_config(
    cwd: Union[str, os.PathLike[str], None] = None,
    *,
    home: Union[str, os.PathLike[str], None] = None,
    environ: Optional[Mapping[str, str]] = None,
    platform: Optional[str] = None,
    trust_project: bool = False,
) -> Config:
    """The servers of every ``mcpServers`` file of the project and the user, merged by
    name (see the module's docstring for the files, their precedence, and which project
    files count).

    Each server keeps the entry of the first file that names it; :meth:`Config.source_of`
    says which. The servers of a project file that the user has not trusted
    (:mod:`mcp_sync.config.trust`) are left out, unless ``trust_project``: they are in
    :attr:`Config.untrusted` (a :class:`Config` of their own) and never take the place of
    a user's server of the same name. :attr:`Config.project_files` gives the state of
    every project file found, :attr:`Config.shadowed` says, for each name that a project
    file and a user file both hold, which entry is used and why; both are logged at
    WARNING. :attr:`Config.searched` lists every file looked for, and
    :attr:`Config.skipped` the user files left out (unreadable or invalid) and the VS Code
    entries left out (they need an ``${input:...}``), each logged at WARNING. Reads the
    files once, now; nothing is connected.

    Args:
        cwd, home, environ, platform: as for :func:`config_locations`; ``environ`` is
            also the configuration's, for ``${VAR}`` expansion, and places the store of
            approvals (:func:`mcp_sync.config.trust.config_directory`).
        trust_project: take the servers of every project file found, trusted or not:
            the caller's explicit choice (``Manager.from_config(trust_project=True)``).

    Raises:
        ConfigError: a project file is unreadable or invalid (the error names it), or no
            file names any server (the error lists every place looked).
    """
    from .trust import TRUSTED, TrustStore, untrusted_reason

    locations = config_locations(cwd, home=home, environ=environ, platform=platform)
    system = sys.platform if platform is None else platform
    env = os.environ if environ is None else environ
    user_home = _home(None if home is None else os.fspath(home), env, system)
    workspace = _project_dirs(os.getcwd() if cwd is None else os.fspath(cwd))[-1]
    store = TrustStore.default(env, system)
    merged: Dict[str, Dict[str, Any]] = {}
    sources: Dict[str, str] = {}
    held_back: Dict[str, Dict[str, Any]] = {}  # the untrusted project entries, by name
    held_back_sources: Dict[str, str] = {}
    user_holders: Dict[str, str] = {}  # the first user file naming each server
    project_files: Dict[str, str] = {}
    skipped: Dict[str, str] = {}
    for location in locations:
        try:
            found, left_out, digest = _read_location(location, environ, workspace,
                                                     user_home)
        except ConfigError as exc:
            if location.scope == "project":
                raise
            why = str(exc)
            if why.startswith(f"{location.path}: "):  # said once, by the key
                why = why[len(location.path) + 2:]
            log.warning("leaving out %s: %s", location.path, why)
            skipped[location.path] = why
            continue
        if left_out:
            log.warning("leaving out of %s: %s", location.path, "; ".join(left_out))
            skipped[location.path] = "; ".join(left_out)
        if found is None:
            continue
        allowed = location.scope == "user"
        if location.scope == "project":
            state = store.state(location.path, digest)
            project_files[location.path] = state
            allowed = trust_project or state == TRUSTED
            if not allowed:
                log.warning("not starting the servers of %s (%s): it %s; read it, then run "
                            "`mcp-sync trust %s`", location.path,
                            excerpt(", ".join(found.names), 300),
                            untrusted_reason(state), location.path)
        for name in found.names:
            if location.scope == "user":
                user_holders.setdefault(name, location.path)
            if not allowed:
                held_back_sources.setdefault(name, location.path)
                held_back.setdefault(name, found.raw(name))
            elif name in merged:
                log.debug("server %r of %s is shadowed by the one of %s", name,
                          location.path, sources[name])
            else:
                merged[name] = found.raw(name)
                sources[name] = location.path
    if not merged and not held_back:
        looked = "; ".join(location.path for location in locations)
        why_not = "".join(f"; left out {path}: {why}" for path, why in skipped.items())
        raise ConfigError(f"no MCP server configuration found (looked for {looked}"
                          f"{why_not})")
    shadowed: Dict[str, str] = {}
    for name, used in sources.items():
        if name in held_back_sources:  # an untrusted project entry never wins
            shadowed[name] = (f"using the one of {used}, not the one of "
                              f"{held_back_sources[name]}, which is not trusted")
        elif used in project_files and name in user_holders:
            how = "trusted" if project_files[used] == TRUSTED else "taken with trust_project"
            shadowed[name] = (f"using the one of {used} ({how}), not yours of "
                              f"{user_holders[name]}: a trusted project file comes first")
    config = Config(merged, sources=sources, environ=environ)
    config.searched = list(locations)
    config.skipped = skipped
    config.project_files = project_files
    config._untrusted = Config(held_back, sources=held_back_sources, environ=environ)
    config.shadowed = shadowed
    for name, why in shadowed.items():
        log.warning("server %r: %s", name, why)
    return config
