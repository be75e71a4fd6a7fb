"""The command line's arguments: tool arguments checked against the input schema, the server to
reach (a command, a URL, a configuration entry), and the client connected to it.
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    List,
    Optional,
    Sequence,
    Tuple,
)

from .._protocol import json_type
from .._util.text import excerpt
from ..client import DEFAULT, Client
from ._output import (
    CLI_CLOSE_TIMEOUT,
    UsageError,
)

if TYPE_CHECKING:
    from .. import types
    from ..config import Config


def _pairs(pairs: Optional[Sequence[str]], option: str = "--arg") -> List[Tuple[str, str]]:
    """``KEY=VALUE`` options split, checked before anything is started."""
    parsed = []
    for pair in pairs or ():
        key, equals, value = pair.partition("=")
        if not equals or not key:
            raise UsageError(f"{option} takes KEY=VALUE, got {excerpt(pair, 80)!r}")
        parsed.append((key, value))
    return parsed


def _json_args(json_args: Optional[str]) -> Dict[str, Any]:
    if not json_args:
        return {}
    try:
        arguments = json.loads(json_args)
    except ValueError as exc:
        raise UsageError(f"--json-args is not valid JSON: {exc}") from None
    if not isinstance(arguments, dict):
        raise UsageError("--json-args must be a JSON object")
    return arguments


_JSON_TYPES = ("string", "integer", "number", "boolean", "null", "array", "object")


_TYPE_WORDS = {"string": "a string", "integer": "an integer", "number": "a number",
               "boolean": "a boolean (true or false)", "null": "null",
               "array": "a JSON array", "object": "a JSON object"}


def _schema_types(schema: Any) -> Optional[List[str]]:
    """The JSON types a property's schema allows (``type``, a list of types, ``anyOf`` /
    ``oneOf`` of typed branches, ``enum``/``const`` values), or ``None`` when the schema
    does not say, or says it in a way this reading does not follow (``$ref``...)."""
    if not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    kinds: List[str] = []
    if isinstance(kind, str):
        kinds = [kind]
    elif isinstance(kind, list) and kind and all(isinstance(k, str) for k in kind):
        kinds = list(kind)
    elif kind is not None:
        return None
    elif isinstance(schema.get("anyOf") or schema.get("oneOf"), list):
        for branch in schema.get("anyOf") or schema["oneOf"]:
            branch_kinds = _schema_types(branch)
            if branch_kinds is None:
                return None
            kinds += branch_kinds
    elif "const" in schema:
        kinds = [json_type(schema["const"])]
    elif isinstance(schema.get("enum"), list) and schema["enum"]:
        kinds = [json_type(value) for value in schema["enum"]]
    if not kinds or any(k not in _JSON_TYPES for k in kinds):
        return None
    return list(dict.fromkeys(kinds))


def _property_schema(input_schema: Optional[Dict[str, Any]], key: str) -> Any:
    if not isinstance(input_schema, dict):
        return None
    properties = input_schema.get("properties")
    if isinstance(properties, dict) and key in properties:
        return properties[key]
    extra = input_schema.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # NaN, Infinity: no JSON type holds them


def _value(key: str, value: str, schema: Any, tool: str) -> Any:
    """An ``--arg`` value as the tool's input schema types it: a string stays a string;
    integer, number, boolean, null, array and object values are parsed as JSON. With
    several types allowed, JSON of a type other than string is taken as that, anything
    else as the string. Without a type for the argument, JSON when it parses, else the
    string.

    Raises:
        UsageError: the value fits none of the types the schema allows.
    """
    kinds = _schema_types(schema)
    if kinds is None:
        try:
            return json.loads(value)
        except ValueError:
            return value
    if kinds == ["string"]:
        return value
    try:
        parsed = json.loads(value, parse_constant=_refuse_constant)
    except ValueError:
        parsed = value
    else:
        kind = json_type(parsed)
        if kind == "number" and not math.isfinite(parsed):
            kind = "out of range"  # 1e999 parses as infinity, which JSON cannot carry
        if kind == "number" and "integer" in kinds and "number" not in kinds and (
                parsed.is_integer()):
            parsed, kind = int(parsed), "integer"  # JSON Schema: 2.0 is an integer
        if kind == "integer" and "integer" not in kinds:
            kind = "number"  # every integer is a number
        if kind in kinds and kind != "string":
            return parsed
    if "string" in kinds:
        return value
    expected = " or ".join(_TYPE_WORDS[k] for k in kinds)
    raise UsageError(f"--arg {excerpt(key, 80)}: tool {excerpt(tool, 80)!r} takes "
                     f"{expected} there, not {excerpt(value, 80)!r}")


def _tool_arguments(pairs: Sequence[Tuple[str, str]], json_args: Dict[str, Any],
                    input_schema: Optional[Dict[str, Any]], tool: str) -> Dict[str, Any]:
    """``--json-args``, then each ``--arg`` (which wins) typed by the input schema."""
    arguments = dict(json_args)
    for key, value in pairs:
        arguments[key] = _value(key, value, _property_schema(input_schema, key), tool)
    return arguments


def _missing_required(arguments: Dict[str, Any], input_schema: Optional[Dict[str, Any]],
                      tool: str) -> None:
    """Refuse a call that leaves out an argument the tool's input schema requires.

    Raises:
        UsageError: naming each missing argument and how to give it.
    """
    required = input_schema.get("required") if isinstance(input_schema, dict) else None
    if not isinstance(required, list):
        return
    missing = [name for name in required if isinstance(name, str) and name not in arguments]
    if not missing:
        return
    names = ", ".join(excerpt(name, 80) for name in missing)
    give = " ".join(f"--arg {excerpt(name, 80)}=VALUE" for name in missing)
    one = len(missing) == 1
    raise UsageError(f"tool {excerpt(tool, 80)!r} needs {'argument' if one else 'arguments'} "
                     f"{names} (required by its input schema): give {'it' if one else 'them'}"
                     f" with {give}")


def _tool_names(tools: Sequence[types.Tool]) -> str:
    names = ", ".join(excerpt(t.name, 60) for t in tools[:20])
    more = f" and {len(tools) - 20} more" if len(tools) > 20 else ""
    return f"tools: {names or 'none'}{more}"


def _did_you_mean(name: str, tools: Sequence[types.Tool]) -> str:
    """``; did you mean 'add'?`` for the listed names close to ``name``, else ``""``."""
    close = difflib.get_close_matches(name, [tool.name for tool in tools], n=3)
    if not close:
        return ""
    return "; did you mean " + " or ".join(repr(excerpt(match, 60)) for match in close) + "?"


def _unlisted_hint(name: str, tools: Sequence[types.Tool], server: str) -> str:
    """What to say when the server refuses a call to a tool it did not list."""
    close = _did_you_mean(name, tools)
    if close:
        return f"{server} lists no tool {excerpt(name, 80)!r}{close}"
    return f"{server} lists no tool {excerpt(name, 80)!r} ({_tool_names(tools)})"


def _timeout(args: argparse.Namespace) -> Any:
    if args.timeout is None:
        return DEFAULT
    return None if args.timeout <= 0 else args.timeout


def _target(args: argparse.Namespace) -> Tuple[Any, Dict[str, Any]]:
    """What to connect to and the keyword arguments for ``connect()``."""
    command: List[str] = args.command
    given = [flag for flag, present in (("--config", args.config), ("--url", args.url),
                                        ("a command after --", command)) if present]
    if len(given) > 1:
        raise UsageError(f"give one server: {' or '.join(given)}, not both")
    if args.server and not args.config:
        raise UsageError("--server needs --config FILE")
    # A stdio server's environment (connect() adds env to an entry's own).
    stdio = {key: value for key, value in (("env", dict(_pairs(args.env, "--env"))),
                                           ("inherit_env", args.inherit_env)) if value}
    flags = [flag for flag, key in (("--env", "env"), ("--inherit-env", "inherit_env"))
             if key in stdio]
    env_given = f"{' and '.join(flags)} {'is' if len(flags) == 1 else 'are'} for stdio " \
        "servers only" if flags else ""
    kwargs: Dict[str, Any] = {"timeout": _timeout(args)}
    if args.protocol_version:
        kwargs["protocol_version"] = args.protocol_version
    if args.config:
        from ..config import load_config

        config = load_config(args.config)
        name = _config_server(config, args.config, args.server)
        resolved = config.resolve(name)
        if resolved.timeout is not None and args.timeout is None:
            kwargs["timeout"] = resolved.timeout
        kwargs["name"] = name
        if resolved.type != "stdio" and env_given:
            raise UsageError(f"server {name!r} of {args.config} is a URL: {env_given}")
        kwargs.update(stdio)
        return resolved.to_entry(), kwargs
    url = args.url
    if command and len(command) == 1 and command[0].startswith(("http://", "https://")):
        url = command[0]
    if url and env_given:
        raise UsageError(f"{env_given} (a command after --), not for a URL")
    if url:
        from ..client._connect import http_url

        try:
            url = http_url(url)
        except ValueError as exc:
            raise UsageError(f"--url: {exc}") from None
        if args.transport:
            kwargs["transport"] = args.transport
        if args.header:
            kwargs["headers"] = dict(_header(h) for h in args.header)
        return url, kwargs
    if command:
        kwargs.update(stdio)
        return command, kwargs
    raise UsageError("give a server: --config FILE --server NAME, --url URL, or a command "
                     "after -- (e.g. mcp-sync tools -- python server.py)")


def _config_server(config: Config, source: str, name: Optional[str]) -> str:
    """The server of ``--config`` to use: ``--server NAME``, or the only enabled one."""
    enabled = config.enabled
    listed = ", ".join(enabled) or "none"
    if name is None:
        if len(enabled) == 1:
            return enabled[0]
        if not enabled:
            raise UsageError(f"{source} has no enabled server")
        raise UsageError(f"{source} has {len(enabled)} enabled servers; choose one with "
                         f"--server NAME ({listed})")
    if name not in config:
        raise UsageError(f"no server {name!r} in {source} (enabled servers: {listed})")
    if name not in enabled:
        raise UsageError(f"server {name!r} is disabled in {source}: enable it there to use "
                         "it")
    return name


def _header(text: str) -> Tuple[str, str]:
    name, colon, value = text.partition(":")
    if not colon or not name.strip():
        raise UsageError(f"--header takes 'Name: value', got {text!r}")
    return name.strip(), value.strip()


def _connect(args: argparse.Namespace) -> Client:
    from ..client._connect import connect

    target, kwargs = _target(args)
    kwargs.setdefault("close_timeout", CLI_CLOSE_TIMEOUT)
    return connect(target, **kwargs)
