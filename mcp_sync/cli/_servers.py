"""The commands about configured servers: servers (their status, or what the files found would
start) and trust (a project file's consent).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import sys
import time
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    List,
    Sequence,
)

from .._util.text import printable
from ._arguments import (
    _timeout,
)
from ._output import (
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_TOOL_ERROR,
    UsageError,
    _err,
    _first_line,
    _json,
    _out,
    _table,
)

if TYPE_CHECKING:
    from ..config import Config


# An argument after (or in) a flag named like one of these is a secret: never printed.
_SECRET_FLAG = re.compile(r"token|key|secret|passw|auth|credential|cookie", re.IGNORECASE)


_MASK = "***"


def _masked_args(arguments: Sequence[Any]) -> List[str]:
    """A config entry's ``args`` with the value of every secret-looking flag masked
    (``--api-key X``, ``--token=X``)."""
    masked: List[str] = []
    hide_next = False
    for argument in arguments:
        text = str(argument)
        if hide_next:
            masked.append(_MASK)
            hide_next = False
        elif text.startswith("-") and _SECRET_FLAG.search(text.partition("=")[0]):
            flag, equals, _ = text.partition("=")
            masked.append(f"{flag}={_MASK}" if equals else text)
            hide_next = not equals
        else:
            masked.append(text)
    return masked


def _masked_url(url: Any) -> str:
    """A URL with its user info and its query's values masked."""
    from urllib.parse import parse_qsl, urlsplit, urlunsplit

    try:
        parts = urlsplit(str(url))
        netloc = parts.netloc
        if "@" in netloc:
            netloc = f"{_MASK}@{netloc.rpartition('@')[2]}"
        query = "&".join(f"{key}={_MASK}" for key, _ in
                         parse_qsl(parts.query, keep_blank_values=True))
        return urlunsplit((parts.scheme, netloc, parts.path, query, ""))
    except ValueError:
        return _MASK


def _server_entry(config: Config, name: str) -> Dict[str, Any]:
    """What ``servers`` shows of an entry: as written (``${VAR}`` not expanded), with the
    values of ``env`` and ``headers``, secret-looking arguments and URL credentials
    masked."""
    raw = config.raw(name)
    shape = config.resolve(name, lenient=True)
    entry: Dict[str, Any] = {"name": name, "enabled": shape.enabled,
                             "transport": shape.type, "source": config.source_of(name)}
    if shape.type == "stdio":
        entry["command"] = str(raw.get("command", ""))
        entry["args"] = _masked_args(raw.get("args") or [])
        entry["env"] = {str(key): _MASK for key in raw.get("env") or {}}
    else:
        entry["url"] = _masked_url(raw.get("url", ""))
        entry["headers"] = {str(key): _MASK for key in raw.get("headers") or {}}
    entry["enabledTools"] = None if shape.enabled_tools is None else list(
        shape.enabled_tools)
    entry["disabledTools"] = list(shape.disabled_tools)
    return entry


def _target_cell(entry: Dict[str, Any]) -> str:
    if "command" in entry:
        text = " ".join([entry["command"], *entry["args"]])
        variables = " ".join(f"{key}={value}" for key, value in entry["env"].items())
        return f"{text} (env {variables})" if variables else text
    headers = " ".join(f"{key}: {value}" for key, value in entry["headers"].items())
    return f"{entry['url']} (headers {headers})" if headers else entry["url"]


def _filters_cell(entry: Dict[str, Any]) -> str:
    parts = []
    if entry["enabledTools"] is not None:
        parts.append(f"enabled: {','.join(entry['enabledTools']) or '(none)'}")
    if entry["disabledTools"]:
        parts.append(f"disabled: {','.join(entry['disabledTools'])}")
    return "; ".join(parts) or "-"


def _cmd_servers(args: argparse.Namespace) -> int:
    from ..config import discover_config, load_config
    from ..manager import Manager, ServerState

    if args.url or args.command or args.server or args.env or args.inherit_env:
        raise UsageError("servers takes only --config FILE (without it, the configuration "
                         "is discovered)")
    config = load_config(args.config) if args.config else discover_config()
    for path, why in config.skipped.items():  # the user's files that could not be used
        _err(f"mcp-sync: warning: left out {printable(path)}: {printable(why)}")
    _warn_untrusted(config)
    # in the order of precedence of their files (the project's first), trusted or not
    order = {location.path: index for index, location in enumerate(config.searched)}
    entries = sorted(
        [_server_entry(config, name) for name in config.names]
        + [{**_server_entry(config.untrusted, name), "state": "untrusted"}
           for name in config.untrusted.names],
        key=lambda entry: order.get(entry["source"], 0))
    for entry in entries:
        entry["trust"] = config.project_files.get(entry["source"])
    statuses: Dict[str, Any] = {}
    if not args.no_connect and config.names:
        with Manager.from_config(config, reconnect=False, timeout=_timeout(args)) as manager:
            statuses = manager.status()
    down = [s for s in statuses.values()
            if s.state not in (ServerState.CONNECTED, ServerState.DISABLED)]
    connected = not args.no_connect
    if args.json:
        _json([{**entry, **(statuses[entry["name"]].to_dict()
                            if connected and "state" not in entry else {})}
               for entry in entries])
        return EXIT_FAILURE if down else EXIT_OK
    rows = []
    for entry in entries:
        source, filters = entry["source"] or "-", _filters_cell(entry)
        untrusted = entry.get("state") == "untrusted"
        if not connected:
            state = "untrusted" if untrusted else "enabled" if entry["enabled"] else "disabled"
            rows.append([entry["name"], state, entry["transport"], source, filters,
                         _target_cell(entry)])
        elif untrusted:
            rows.append([entry["name"], "untrusted", entry["transport"], "-", "-", source,
                         filters, "not started: run mcp-sync trust on its file"])
        else:
            status = statuses[entry["name"]]
            server = " ".join(p for p in (status.server_name, status.server_version) if p)
            error = "" if status.error is None else _first_line(str(status.error))
            rows.append([status.name, status.state.value, status.transport,
                         str(status.tools) if status.state is ServerState.CONNECTED else "-",
                         server or "-", source, filters, error])
    if connected:  # what each server runs is in --no-connect's table and in --json
        _table(["NAME", "STATE", "TRANSPORT", "TOOLS", "SERVER", "SOURCE", "FILTERS",
                "ERROR"], rows)
    else:
        _table(["NAME", "STATE", "TRANSPORT", "SOURCE", "FILTERS", "TARGET"], rows)
    return EXIT_FAILURE if down else EXIT_OK


def _warn_untrusted(config: Config) -> None:
    """Say on stderr which project files start nothing until trusted, and which server
    of two files of the same name is used."""
    from ..config.trust import TRUSTED, untrusted_reason

    for path, state in config.project_files.items():
        if state == TRUSTED:
            continue
        names = [name for name, source in config.untrusted.sources.items() if source == path]
        listed = f" ({printable(', '.join(names))})" if names else ""
        _err(f"mcp-sync: warning: {printable(path)} {untrusted_reason(state)}: its "
             f"servers{listed} are not started; read it, then run: "
             f"mcp-sync trust {printable(path)}")
    for name, why in config.shadowed.items():
        _err(f"mcp-sync: warning: server {printable(repr(name))}: {printable(why)}")


def _exact(text: Any) -> str:
    """Text of a file shown whole for a decision: every character that could act on a
    terminal escaped (``printable()``), newlines and tabs too, so that nothing it holds
    can draw a line of its own."""
    return printable(str(text)).replace("\n", "\\n").replace("\t", "\\t")


def _show_consent(path: str, state: str, sha256: str, entries: Sequence[Dict[str, Any]],
                  left_out: Sequence[str], show: Callable[[str], None]) -> None:
    """What ``trust`` shows before asking: every server the file would start, whole, through
    ``show`` (stdout; stderr when stdout is for JSON)."""

    from ..config.trust import untrusted_reason

    show(f"{_exact(path)} {untrusted_reason(state)}.")
    show(f"sha256 {sha256}")
    show("Trusting it lets mcp-sync start these servers in this project (mcp-sync servers, "
         "Manager.from_config()), as you, with all your rights: starting a server runs its "
         "command on this machine.")
    for entry in entries:
        label = entry["transport"] + ("" if entry["enabled"] else
                                      ", disabled: not started while the file says so")
        show(f"  server {_exact(repr(entry['name']))} ({label})")
        if "command" in entry:
            show(f"    command: {_exact(shlex.join(entry['command']))}")
            for key, value in entry["env"].items():
                show(f"    env:     {_exact(key)}={_exact(value)}")
            if "cwd" in entry:
                show(f"    cwd:     {_exact(entry['cwd'])}")
        else:
            show(f"    url:     {_exact(entry['url'])}")
            for key, value in entry["headers"].items():
                show(f"    header:  {_exact(key)}: {_exact(value)}")
    for why in left_out:
        show(f"  left out: {_exact(why)}")
    show("Values written in the file are shown as ***; ${NAME} is a variable of your "
         "environment that the server would receive. Any change to the file needs a new "
         "approval.")


def _ask(question: str) -> bool:
    """A yes/no question on the terminal; anything but y or yes is no."""
    sys.stderr.write(question)
    sys.stderr.flush()
    answer = sys.stdin.readline(100)
    return answer.strip().lower() in ("y", "yes")


def _project_files_here() -> List[str]:
    """The project files found from the current directory, as discovery finds them."""
    from ..config import config_locations

    return [location.path for location in config_locations()
            if location.scope == "project" and os.path.isfile(location.path)]


def _cmd_trust(args: argparse.Namespace) -> int:
    from ..config import read_project_file
    from ..config.trust import CHANGED, TRUSTED, TrustStore, current_digest

    if args.config or args.url or args.command or args.server or args.env or \
            args.inherit_env:
        raise UsageError("trust takes a project FILE only (a file you give with --config "
                         "needs no approval)")
    store = TrustStore.default()
    if args.list:
        if args.file or args.revoke or args.yes:
            raise UsageError("trust --list takes no FILE, --revoke or --yes")
        listed = []
        for approval in store.approvals():
            digest = current_digest(approval.path)
            state = "missing" if digest is None else TRUSTED if digest == approval.sha256 \
                else CHANGED
            listed.append({"path": approval.path, "sha256": approval.sha256, "state": state,
                           "trustedAt": time.strftime("%Y-%m-%dT%H:%M:%S%z",
                                                      time.localtime(approval.trusted_at))})
        if args.json:
            _json(listed)
        elif not listed:
            _out(f"No project file is trusted (the approvals are kept in {store.path}).")
        else:
            _table(["FILE", "STATE", "TRUSTED"],
                   [[item["path"], item["state"], item["trustedAt"]] for item in listed])
        return EXIT_OK
    paths = [os.path.abspath(args.file)] if args.file else _project_files_here()
    if not paths:
        raise UsageError("no project file found from here (.mcp.json, .cursor/mcp.json, "
                         ".vscode/mcp.json, up to the git root): give the FILE to trust")
    if args.revoke:
        revoked = [path for path in paths if store.revoke(path)]
        for path in paths:
            _err(f"mcp-sync: {'revoked the approval of' if path in revoked else 'no approval of'}"
                 f" {printable(path)}")
        if args.json:
            _json({"revoked": revoked})
        return EXIT_OK
    results, declined = [], False
    for path in paths:
        project = read_project_file(path)
        state = store.state(path, project.sha256)
        config = project.config
        entries = [config.describe(name) for name in config.names] if config else []
        result: Dict[str, Any] = {"path": path, "sha256": project.sha256, "state": state,
                                  "servers": entries}
        results.append(result)
        if state == TRUSTED:
            _err(f"mcp-sync: {printable(path)} is trusted already")
            result["trusted"] = True
            continue
        if not (args.json and args.yes):  # with --json, shown on stderr when asked
            _show_consent(path, state, project.sha256, entries, project.left_out,
                          _err if args.json else _out)
        if not args.yes:
            if not sys.stdin.isatty():
                raise UsageError(f"not trusting {path}: there is no terminal to ask on; read "
                                 "the file, then run mcp-sync trust --yes FILE")
            if not _ask(f"Trust {printable(path)} and let it start these servers? [y/N] "):
                _err(f"mcp-sync: {printable(path)} stays untrusted")
                result["trusted"] = False
                declined = True
                continue
        store.trust(path, project.sha256)
        result["trusted"] = True
        _err(f"mcp-sync: trusted {printable(path)}")
    if args.json:
        _json(results)
    return EXIT_TOOL_ERROR if declined else EXIT_OK
