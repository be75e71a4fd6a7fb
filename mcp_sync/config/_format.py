"""The ``mcpServers`` format: load, validate and expand it (see the package's docstring)."""

from __future__ import annotations

import copy
import fnmatch
import json
import logging
import os
import re
from dataclasses import dataclass
from typing import (
    Any,
    Callable,
    Dict,
    Iterator,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..exceptions import MCPError

__all__ = [
    "MAX_FILE_BYTES", "Config", "ConfigError", "ConfigLocation", "ServerConfig", "expand",
    "load_config",
]

log = logging.getLogger(__name__)

#: ``${NAME}`` or ``${NAME:-default}``; the default runs to the first ``}``.
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_TYPES = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamableHttp": "http",
    "streamable_http": "http",
    "sse": "sse",
}
#: Keys whose string values are expanded; unknown keys are kept as written.
_EXPANDED = ("type", "transport", "command", "args", "env", "cwd", "url", "headers", "timeout",
             "disabled", "enabled")

Source = Union[str, "os.PathLike[str]", Mapping[str, Any], "Config"]


class ConfigError(MCPError, ValueError):
    """An invalid ``mcpServers`` configuration.

    ``source`` is the file (or ``None`` for a dict), ``server`` the entry's name and ``key``
    the offending key (``args[1]``, ``env.TOKEN``...) when known.
    """

    def __init__(
        self,
        message: str,
        *,
        source: Optional[str] = None,
        server: Optional[str] = None,
        key: Optional[str] = None,
    ) -> None:
        self.source = source
        self.server = server
        self.key = key
        where = []
        if source:
            where.append(source)
        if server is not None:
            where.append(f"server {server!r}")
        if key:
            where.append(f"key {key!r}")
        super().__init__(f"{': '.join(where)}: {message}" if where else message)


class _Missing(Exception):
    def __init__(self, variable: str) -> None:
        self.variable = variable


def _expand_string(value: str, environ: Mapping[str, str], lenient: bool) -> str:
    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = environ.get(name)
        if found is None or (found == "" and default is not None):
            if default is not None:
                return default
            if lenient:
                return match.group(0)
            raise _Missing(name)
        return found

    expanded = _VARIABLE.sub(replace, value)
    leftover = _VARIABLE.sub("", value)
    if "${" in leftover:
        start = leftover.index("${")
        raise ValueError(
            f"malformed variable reference {leftover[start:start + 40]!r}; "
            "use ${NAME} or ${NAME:-default}"
        )
    return expanded


def expand(
    value: Any, environ: Optional[Mapping[str, str]] = None, *, path: str = "",
    server: Optional[str] = None, source: Optional[str] = None, lenient: bool = False,
) -> Any:
    """``value`` with ``${VAR}``/``${VAR:-default}`` replaced in every string it holds.

    ``lenient`` leaves unset variables as written instead of failing (for disabled entries).

    Raises:
        ConfigError: a variable without a default is not set, or a reference is malformed.
    """
    env = os.environ if environ is None else environ
    if isinstance(value, str):
        try:
            return _expand_string(value, env, lenient)
        except _Missing as exc:
            raise ConfigError(
                f"environment variable {exc.variable!r} is not set (set it, or write "
                f"${{{exc.variable}:-default}})", source=source, server=server, key=path,
            ) from None
        except ValueError as exc:
            raise ConfigError(str(exc), source=source, server=server, key=path) from None
    if isinstance(value, list):
        return [expand(item, env, path=f"{path}[{index}]", server=server, source=source,
                       lenient=lenient) for index, item in enumerate(value)]
    if isinstance(value, dict):
        return {key: expand(item, env, path=f"{path}.{key}" if path else str(key),
                            server=server, source=source, lenient=lenient)
                for key, item in value.items()}
    return value


class ServerConfig(BaseModel):
    """One resolved ``mcpServers`` entry: variables expanded, ``type`` filled in.

    Unknown keys of the entry are kept in ``model_extra``.
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str
    type: Literal["stdio", "http", "sse"]
    #: Whether ``type`` was written in the entry (False: inferred from command/url).
    type_given: bool = False
    command: Optional[str] = None
    args: List[str] = Field(default_factory=list)
    env: Dict[str, str] = Field(default_factory=dict)
    cwd: Optional[str] = None
    url: Optional[str] = None
    headers: Dict[str, str] = Field(default_factory=dict)
    timeout: Optional[float] = Field(default=None, ge=0)
    disabled: bool = False
    #: ``enabledTools``: only the tools matching one of these patterns are offered
    #: (``None``: every tool).
    enabled_tools: Optional[Tuple[str, ...]] = None
    #: ``disabledTools``: the tools matching one of these patterns are never offered.
    disabled_tools: Tuple[str, ...] = ()

    @property
    def enabled(self) -> bool:
        return not self.disabled

    def tool_hidden(self, tool: str) -> Optional[str]:
        """Why the configuration hides the server's tool ``tool`` (its own name), or
        ``None`` when it is offered: ``"not in enabledTools"`` or
        ``"disabledTools has 'pattern'"``."""
        return _tool_hidden(tool, self.enabled_tools, self.disabled_tools)

    def to_entry(self) -> Dict[str, Any]:
        """The entry as :func:`mcp_sync.connect` / ``make_transport`` take it."""
        if self.type == "stdio":
            entry: Dict[str, Any] = {"command": self.command, "args": list(self.args)}
            if self.env:
                entry["env"] = dict(self.env)
            if self.cwd:
                entry["cwd"] = self.cwd
            return entry
        entry = {"url": self.url}
        if self.type_given or self.type != "http":
            entry["type"] = self.type  # an inferred "http" may fall back to legacy SSE
        if self.headers:
            entry["headers"] = dict(self.headers)
        return entry


def _references_only(value: Any) -> str:
    """``value`` with its ``${VAR}`` references kept and the rest, text written in the
    file, as ``***``: ``"Bearer ${TOKEN}"`` is ``"***${TOKEN}"``."""
    text = str(value)
    parts, last = [], 0
    for match in _VARIABLE.finditer(text):
        if match.start() > last:
            parts.append("***")
        parts.append(match.group(0))
        last = match.end()
    if last < len(text) or not parts:
        parts.append("***")
    return "".join(parts)


def _tool_hidden(tool: str, enabled_tools: Optional[Sequence[str]],
                disabled_tools: Sequence[str]) -> Optional[str]:
    """Why ``enabledTools``/``disabledTools`` hide ``tool``, or ``None`` (not hidden)."""
    if enabled_tools is not None and not any(
            fnmatch.fnmatchcase(tool, pattern) for pattern in enabled_tools):
        return "not in enabledTools"
    for pattern in disabled_tools:
        if fnmatch.fnmatchcase(tool, pattern):
            return f"disabledTools has {pattern!r}"
    return None


def _tool_patterns(value: Any, key: str,
                   fail: Callable[[str, str], ConfigError]) -> Tuple[str, ...]:
    """``enabledTools``/``disabledTools`` checked: a list of non-empty strings."""
    if not isinstance(value, list):
        raise fail(f"must be a list of tool names or patterns, got {type(value).__name__}",
                   key)
    for index, pattern in enumerate(value):
        if not isinstance(pattern, str) or not pattern.strip():
            raise fail(f"must be a non-empty string (a tool name or pattern), got "
                       f"{pattern!r}", f"{key}[{index}]")
    return tuple(value)


def _scalar_to_str(value: Any) -> Any:
    # JSON numbers and booleans in args/env/headers are written as strings by every host.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return value


def _resolve(
    name: str, raw: Mapping[str, Any], environ: Optional[Mapping[str, str]],
    source: Optional[str], *, lenient: bool = False,
) -> ServerConfig:
    def fail(message: str, key: Optional[str] = None) -> ConfigError:
        return ConfigError(message, source=source, server=name, key=key)

    data = {key: expand(value, environ, path=key, server=name, source=source, lenient=lenient)
            if key in _EXPANDED else value for key, value in raw.items()}
    waiting = set()  # keys whose value still waits for a variable (lenient mode only)
    if lenient:
        # Checking the shape only: scalars still waiting for a variable are left out.
        for key in ("disabled", "enabled", "timeout", "type", "transport", "url"):
            if isinstance(data.get(key), str) and _VARIABLE.search(data[key]):
                waiting.add(key)
                if key != "url":
                    del data[key]
    for key in ("disabled", "enabled"):
        if isinstance(data.get(key), str):
            word = data[key].strip().lower()
            if word not in ("true", "false", "1", "0", "yes", "no", ""):
                raise fail(f"must be true or false, got {data[key]!r}", key)
            data[key] = word in ("true", "1", "yes")
    disabled = data.pop("disabled", None)
    enabled = data.pop("enabled", None)
    for key, flag in (("disabled", disabled), ("enabled", enabled)):
        if flag is not None and not isinstance(flag, bool):
            raise fail(f"must be true or false, got {flag!r}", key)
    if disabled is not None and enabled is not None and disabled == enabled:
        raise fail("'disabled' and 'enabled' contradict each other", "enabled")
    is_disabled = bool(disabled) if disabled is not None else enabled is False

    kind_key = "type" if "type" in data else "transport" if "transport" in data else None
    kind_value = data.pop(kind_key) if kind_key else None
    has_command, has_url = "command" in data, "url" in data
    if has_command and has_url:
        raise fail("has both 'command' (stdio) and 'url' (HTTP); keep one", "url")
    if kind_value is None:
        if not (has_command or has_url):
            raise fail("needs a 'command' (stdio) or a 'url' (http/sse)")
        kind = "stdio" if has_command else "http"
    else:
        if not isinstance(kind_value, str) or kind_value not in _TYPES:
            raise fail(f"unknown type {kind_value!r}; use 'stdio', 'http' or 'sse'", kind_key)
        kind = _TYPES[kind_value]
        if kind == "stdio" and not has_command:
            raise fail("type 'stdio' needs a 'command'", "command")
        if kind != "stdio" and not has_url:
            raise fail(f"type {kind_value!r} needs a 'url'", "url")
    if has_command:
        command = data["command"]
        if not isinstance(command, str) or not command.strip():
            raise fail("must be a non-empty string", "command")
    if has_url and "url" not in waiting:
        url = data["url"]
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise fail(f"must be an http:// or https:// URL, got {url!r}", "url")
    if isinstance(data.get("args"), list):
        data["args"] = [_scalar_to_str(arg) for arg in data["args"]]
    for key in ("env", "headers"):
        if isinstance(data.get(key), dict):
            data[key] = {k: _scalar_to_str(v) for k, v in data[key].items()}
    if data.get("env") is None:
        data.pop("env", None)
    if isinstance(data.get("cwd"), str):
        data["cwd"] = os.path.expanduser(data["cwd"])
    for reserved in ("name", "type_given", "enabled_tools", "disabled_tools"):
        data.pop(reserved, None)
    if "enabledTools" in data:
        data["enabled_tools"] = _tool_patterns(data.pop("enabledTools"), "enabledTools", fail)
    if "disabledTools" in data:
        data["disabled_tools"] = _tool_patterns(data.pop("disabledTools"), "disabledTools",
                                                fail)
    type_given = kind_value is not None or bool(waiting & {"type", "transport"})
    try:
        return ServerConfig(name=name, type=kind, type_given=type_given, disabled=is_disabled,
                            **data)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = ".".join(str(part) for part in error.get("loc", ()))
        key = re.sub(r"\.(\d+)(?=\.|$)", r"[\1]", key)
        raise fail(f"{error.get('msg', 'invalid value')} (got {error.get('input')!r})",
                   key or None) from None


class Config:
    """A parsed ``mcpServers`` configuration; entries keep their ``${VAR}`` references.

    Loading checks the shape of every entry (keys, types, flags, transport type) with the
    variables that are set; :meth:`resolve` expands an entry's variables, each time it is
    called, and only then requires them. So a variable missing for one server fails that
    server (when it connects), not the whole configuration. :meth:`check` resolves every
    enabled entry now, for a strict check.

    Args:
        servers: the ``mcpServers`` mapping, server name to entry.
        source: the file it came from, for error messages.
        extra: the other top-level keys of the file (kept, unused).
        environ: the variables to expand (default: ``os.environ``, read at each resolve).
        sources: the file of each server, when they come from several
            (:func:`discover_config`); a server not in it came from ``source``.

    A configuration found by :func:`discover_config` also says where it looked
    (:attr:`searched`, in order of precedence), which user files it left out, and why
    (:attr:`skipped`), the state of each project file (:attr:`project_files`), the
    servers it left out because their project file is not trusted (:attr:`untrusted`),
    and which entry it used where two files name the same server (:attr:`shadowed`); all
    are empty for one loaded with :func:`load_config`.
    """

    def __init__(
        self,
        servers: Mapping[str, Mapping[str, Any]],
        *,
        source: Optional[str] = None,
        extra: Optional[Mapping[str, Any]] = None,
        environ: Optional[Mapping[str, str]] = None,
        sources: Optional[Mapping[str, str]] = None,
    ) -> None:
        self.source = source
        self.extra = dict(extra or {})
        self.environ = environ
        self._sources: Dict[str, str] = dict(sources or {})
        #: Every file :func:`discover_config` looked for, in order of precedence.
        self.searched: List[ConfigLocation] = []
        #: What :func:`discover_config` left out: a user file, or VS Code entries
        #: needing an input (path -> why).
        self.skipped: Dict[str, str] = {}
        #: Every project file :func:`discover_config` found servers in, and its state:
        #: ``"trusted"``, ``"untrusted"`` or ``"changed"`` (:mod:`mcp_sync.config.trust`).
        self.project_files: Dict[str, str] = {}
        #: For a server that a project file and another file both name: which entry is
        #: used, and why (name -> a sentence naming both files).
        self.shadowed: Dict[str, str] = {}
        self._untrusted: Optional[Config] = None
        self._raw: Dict[str, Dict[str, Any]] = {}
        for name, entry in servers.items():
            if not isinstance(name, str) or not name.strip():
                raise ConfigError(f"server names must be non-empty strings, got {name!r}",
                                  source=source)
            if not isinstance(entry, Mapping):
                raise ConfigError(f"the entry must be an object, got {type(entry).__name__}",
                                  source=source, server=name)
            self._raw[name] = dict(entry)
        for name in self._raw:
            self.resolve(name, lenient=True)  # shape, type, flags; variables not required

    @property
    def untrusted(self) -> Config:
        """The servers :func:`discover_config` left out because their project file is not
        trusted (or changed since it was), as a configuration of their own: its
        :attr:`names`, :meth:`raw` entries and :meth:`source_of` say what they would run
        and where they are written. Empty for any other configuration."""
        if self._untrusted is None:
            self._untrusted = Config({}, environ=self.environ)
        return self._untrusted

    def __repr__(self) -> str:
        origin = self.source or ("several files" if self._sources else "dict")
        return f"<mcp_sync.Config {origin}: {', '.join(self._raw)}>"

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __contains__(self, name: object) -> bool:
        return name in self._raw

    @property
    def names(self) -> List[str]:
        """Every server's name, in file order (disabled ones included)."""
        return list(self._raw)

    def source_of(self, name: str) -> Optional[str]:
        """The file server ``name`` came from (``None`` for a dict).

        Raises:
            ConfigError: no such server.
        """
        self._entry(name)
        return self._sources.get(name, self.source)

    @property
    def sources(self) -> Dict[str, Optional[str]]:
        """Each server's file (``None`` for a dict), in configuration order."""
        return {name: self._sources.get(name, self.source) for name in self._raw}

    def raw(self, name: str) -> Dict[str, Any]:
        """The entry as written (a copy), variables unexpanded."""
        return copy.deepcopy(self._entry(name))

    def describe(self, name: str) -> Dict[str, Any]:
        """What starting server ``name`` would run or reach, for a person to read before
        allowing it (``mcp-sync trust`` shows this): ``name``, ``transport``,
        ``enabled``; for stdio the ``command`` (the program and every argument) and
        ``cwd``, for HTTP the ``url``, exactly as written (``${VAR}`` not expanded);
        and the names of ``env`` (stdio) or ``headers`` (HTTP) with, of each value, only
        the ``${VAR}`` references it reads from the environment: the text written in the
        file is ``***`` (it may be a secret).

        Raises:
            ConfigError: no such server.
        """
        raw = self.raw(name)
        shape = self.resolve(name, lenient=True)
        described: Dict[str, Any] = {"name": name, "transport": shape.type,
                                     "enabled": shape.enabled}
        if shape.type == "stdio":
            described["command"] = [str(raw.get("command", "")),
                                    *(str(arg) for arg in raw.get("args") or [])]
            described["env"] = {str(key): _references_only(value)
                                for key, value in (raw.get("env") or {}).items()}
            if raw.get("cwd") is not None:
                described["cwd"] = str(raw["cwd"])
        else:
            described["url"] = str(raw.get("url", ""))
            described["headers"] = {str(key): _references_only(value)
                                    for key, value in (raw.get("headers") or {}).items()}
        return described

    def _entry(self, name: str) -> Dict[str, Any]:
        try:
            return self._raw[name]
        except KeyError:
            known = ", ".join(self._raw) or "none"
            raise ConfigError(f"no server {name!r} (configured: {known})",
                              source=self.source) from None

    def is_enabled(self, name: str) -> bool:
        """Whether the entry is enabled (flags may use variables, with their defaults)."""
        return self.resolve(name, lenient=True).enabled

    @property
    def enabled(self) -> List[str]:
        """The names of the enabled servers, in file order."""
        return [name for name in self._raw if self.is_enabled(name)]

    def resolve(
        self, name: str, environ: Optional[Mapping[str, str]] = None, *, lenient: bool = False
    ) -> ServerConfig:
        """Expand and validate the entry ``name`` now.

        Raises:
            ConfigError: unknown server, invalid entry, unset variable, unknown type.
        """
        env = environ if environ is not None else self.environ
        entry = self._entry(name)
        return _resolve(name, entry, env, self._sources.get(name, self.source),
                        lenient=lenient)

    def servers(self, environ: Optional[Mapping[str, str]] = None) -> Dict[str, ServerConfig]:
        """Every enabled entry, resolved now.

        Raises:
            ConfigError: for the first entry that does not resolve.
        """
        return {name: self.resolve(name, environ) for name in self.enabled}

    def check(self, environ: Optional[Mapping[str, str]] = None) -> None:
        """Resolve every enabled entry now; raises the first :class:`ConfigError`."""
        self.servers(environ)


#: The largest configuration file read (a project file is read before anyone trusts it).
MAX_FILE_BYTES = 16 * 1024 * 1024


def _read_bytes(path: str) -> bytes:
    """The bytes of the file ``path``, at most :data:`MAX_FILE_BYTES`; a
    :class:`ConfigError` naming it when it cannot be read or is larger."""
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigError(f"cannot read the configuration: {reason}", source=path) from exc
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(f"cannot read the configuration: larger than {MAX_FILE_BYTES} "
                          "bytes", source=path)
    return data


def _parse(data: bytes, path: str, jsonc: bool = False) -> Any:
    """The JSON document in ``data``, the bytes of ``path`` (with ``jsonc``: comments and
    trailing commas allowed, as VS Code writes them); a :class:`ConfigError` naming the
    file when it is not UTF-8 or not JSON."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"cannot read the configuration: {exc}", source=path) from exc
    try:
        return json.loads(_strip_jsonc(text) if jsonc else text)
    except (ValueError, RecursionError) as exc:  # nested past the parser's limit: the latter
        raise ConfigError(f"not valid JSON: {exc}", source=path) from None


def _read(path: str, jsonc: bool = False) -> Tuple[Any, str]:
    """The JSON document in ``path`` and the path (see :func:`_parse`)."""
    return _parse(_read_bytes(path), path, jsonc), path


def load_config(source: Source, *, environ: Optional[Mapping[str, str]] = None) -> Config:
    """Load an ``mcpServers`` configuration from a JSON file or a dict.

    The top level is ``{"mcpServers": {...}}`` (VS Code's ``{"servers": {...}}`` is accepted
    too); other top-level keys are kept in :attr:`Config.extra`. ``environ`` replaces
    ``os.environ`` for ``${VAR}`` expansion.

    Raises:
        ConfigError: unreadable or invalid file, or an invalid entry.
    """
    if isinstance(source, Config):
        return source
    origin: Optional[str] = None
    if isinstance(source, Mapping):
        document: Any = source
    elif isinstance(source, (str, os.PathLike)):
        document, origin = _read(os.fspath(source))
    else:
        raise ConfigError(f"expected a file path or a dict, got {type(source).__name__}")
    if not isinstance(document, Mapping):
        raise ConfigError("the configuration must be a JSON object with an 'mcpServers' key",
                          source=origin)
    key = "mcpServers" if "mcpServers" in document else "servers" if "servers" in document \
        else None
    if key is None:
        raise ConfigError("no 'mcpServers' key at the top level", source=origin)
    servers = document[key]
    if not isinstance(servers, Mapping):
        raise ConfigError(f"'{key}' must be an object mapping names to entries",
                          source=origin, key=key)
    extra = {k: v for k, v in document.items() if k != key}
    return Config(servers, source=origin, extra=extra, environ=environ)


# -- finding the configuration -----------------------------------------------------------














#: VS Code's variables: ``${env:NAME}``, ``${input:id}``, ``${workspaceFolder}``...
_VSCODE_VARIABLE = re.compile(r"\$\{(env:|input:)?([^}]*)\}")


def _strip_jsonc(text: str) -> str:
    """JSON with comments (``//``, ``/* */``) and trailing commas made JSON; strings are
    kept as written."""
    out: List[str] = []
    index, end = 0, len(text)
    while index < end:
        char = text[index]
        if char == '"':
            close = index + 1
            while close < end and text[close] != '"':
                close += 2 if text[close] == "\\" else 1
            out.append(text[index:close + 1])
            index = close + 1
        elif text.startswith("//", index):
            newline = text.find("\n", index)
            index = end if newline < 0 else newline
        elif text.startswith("/*", index):
            close = text.find("*/", index + 2)
            index = end if close < 0 else close + 2
            out.append(" ")
        else:
            if char in "}]":
                last = len(out) - 1
                while last >= 0 and out[last].isspace():
                    last -= 1
                if last >= 0 and out[last] == ",":
                    del out[last]  # a trailing comma
            out.append(char)
            index += 1
    return "".join(out)


@dataclass(frozen=True)
class ConfigLocation:
    """One file :func:`~mcp_sync.config.discover_config` looks for (see the package's
    docstring)."""

    #: The file's path.
    path: str
    #: ``"project"`` or ``"user"``.
    scope: str
    #: Whose file it is: ``"mcp.json"`` (a project's ``.mcp.json``), ``"cursor"``,
    #: ``"vscode"`` or ``"claude-desktop"``.
    host: str
    #: The keys that lead to the servers: ``("mcpServers",)``, ``("servers",)`` or
    #: ``("mcp", "servers")`` (VS Code's settings).
    keys: Tuple[str, ...] = ("mcpServers",)
    #: Comments and trailing commas are allowed (VS Code's files).
    jsonc: bool = False
