"""The other commands: resources, read, prompts, prompt, ping, info and demo."""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import (
    TYPE_CHECKING,
    List,
)

from ._arguments import (
    _connect,
    _pairs,
    _timeout,
)
from ._output import (
    EXIT_OK,
    EXIT_TOOL_ERROR,
    UsageError,
    _clean,
    _first_line,
    _json,
    _MediaSaver,
    _out,
    _print_listing,
    _print_rendered,
    _Progress,
    _render_blocks,
    _render_contents,
    _table,
)

if TYPE_CHECKING:
    from .. import types


def _cmd_resources(args: argparse.Namespace) -> int:
    with _connect(args) as client:
        resources = client.list_resources()
        templates = client.list_resource_templates()
    if args.json:
        _json({"resources": [r.to_wire() for r in resources],
               "resourceTemplates": [t.to_wire() for t in templates]})
        return EXIT_OK
    if not resources and not templates:
        _out("(no resources)")
        return EXIT_OK
    if resources:
        _table(["URI", "NAME", "MIME TYPE", "DESCRIPTION"],
               [[r.uri, r.name, r.mime_type or "", _first_line(r.description)]
                for r in resources])
    if templates:
        if resources:
            _out()
        _table(["URI TEMPLATE", "NAME", "MIME TYPE", "DESCRIPTION"],
               [[t.uri_template, t.name, t.mime_type or "", _first_line(t.description)]
                for t in templates])
    return EXIT_OK


def _cmd_read(args: argparse.Namespace) -> int:
    saver = _MediaSaver(args.save_images)
    with _connect(args) as client:
        result = client.read_resource(args.uri)
    wire = result.to_wire()
    # Saved media are named after the URI the user asked for, not the ones the server sent.
    stem = os.path.splitext(args.uri.rstrip("/").rsplit("/", 1)[-1])[0] or "resource"
    lines = _render_contents(result.contents, saver, stem, wire.get("contents", []))
    return _print_rendered(args, wire, lines)


def _cmd_prompts(args: argparse.Namespace) -> int:
    with _connect(args) as client:
        prompts = client.list_prompts()

    def row(prompt: types.Prompt) -> List[str]:
        names = [a.name + ("*" if a.required else "") for a in prompt.arguments or ()]
        return [prompt.name, " ".join(names), _first_line(prompt.description)]

    return _print_listing(args, prompts, "(no prompts)",
                          ["NAME", "ARGUMENTS (* required)", "DESCRIPTION"], row)


def _cmd_prompt(args: argparse.Namespace) -> int:
    arguments = dict(_pairs(args.arg))  # prompt arguments are strings, always
    saver = _MediaSaver(args.save_images)
    with _connect(args) as client:
        result = client.get_prompt(args.name, arguments)
    wire = result.to_wire()
    messages_wire = wire.get("messages", [])
    lines: List[str] = []
    if result.description:
        lines.append(_clean(result.description, multiline=True))
    for index, message in enumerate(result.messages):
        content_wire = messages_wire[index].get("content", {}) if index < len(
            messages_wire) else {}
        rendered = _render_blocks([message.content], saver, f"{args.name}-{index + 1}",
                                  [content_wire])
        lines.append(f"[{message.role}] " + "\n".join(rendered))
    return _print_rendered(args, wire, lines)


def _cmd_ping(args: argparse.Namespace) -> int:
    with _connect(args) as client:
        started = time.perf_counter()
        client.ping()
        elapsed = (time.perf_counter() - started) * 1000
    if args.json:
        _json({"ok": True, "milliseconds": round(elapsed, 3)})
    else:
        _out(f"ok ({elapsed:.1f} ms)")
    return EXIT_OK


def _cmd_info(args: argparse.Namespace) -> int:
    with _connect(args) as client:
        server = client.server_info.to_wire()
        capabilities = client.server_capabilities.to_wire()
        info = {
            "server": server,
            "protocolVersion": client.protocol_version,
            "era": client.era,
            "capabilities": capabilities,
            "instructions": client.instructions,
        }
    if args.json:
        _json(info)
        return EXIT_OK
    described = [_clean(server.get(key) or "") for key in ("name", "version")]
    if server.get("title"):
        described.append(f"({_clean(server['title'])})")
    _out(f"Server:       {' '.join(part for part in described if part)}")
    _out(f"Protocol:     {info['protocolVersion']} ({info['era']} era)")
    features = []
    for name, value in capabilities.items():
        flags = [key for key, flag in value.items() if flag is True] if isinstance(
            value, dict) else []
        features.append(name + (f" ({', '.join(flags)})" if flags else ""))
    _out(f"Capabilities: {_clean(', '.join(features)) or '(none)'}")
    if info["instructions"]:
        _out("Instructions:")
        for line in _clean(info["instructions"], multiline=True).splitlines():
            _out(f"  {line}")
    return EXIT_OK


def _cmd_demo(args: argparse.Namespace) -> int:
    from ..client._connect import connect

    if args.config or args.url or args.command or args.env or args.inherit_env:
        raise UsageError("demo runs the embedded server; it takes no --config, --url, --env, "
                         "--inherit-env or --")
    command = [sys.executable, "-m", "mcp_sync.demo_server"]
    progress = _Progress(args.progress if args.progress != "auto" or args.json else "always")
    with connect(command, timeout=_timeout(args), name="demo") as client:
        info = client.server_info
        tools = client.list_tools()
        if not args.json:
            _out(f"Connected to {_clean(info.name)} {_clean(info.version)} over stdio "
                 f"(protocol {client.protocol_version})")
            _out("Tools:")
            names = [_clean(tool.name) for tool in tools]
            width = max(len(name) for name in names) if names else 0
            for name, tool in zip(names, tools):
                _out(f"  {name.ljust(width)}  {_clean(_first_line(tool.description))}"
                     .rstrip())
            _out("Calling count(n=5) ...")
        try:
            result = client.call_tool("count", {"n": 5, "interval": 0.1}, on_progress=progress)
        finally:
            progress.finish()
    if args.json:
        _json({"server": info.to_wire(), "protocolVersion": client.protocol_version,
               "tools": [tool.to_wire() for tool in tools], "result": result.to_wire()})
    else:
        _out(f"Result: {_clean(result.text, multiline=True)}")
    return EXIT_TOOL_ERROR if result.is_error else EXIT_OK
