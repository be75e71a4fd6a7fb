"""A scriptable MCP server over stdio for the tests, built on mcp_sync.testing.FakeServer.

Options:
  --name NAME            the name in its serverInfo (default "fake")
  --page-size N          split list results into pages of N
  --extra-tools N        register N more tools named tool_000 ... (for pagination)
  --protocol-version V   answer initialize with V whatever the client offers
  --no-resources         declare no resources (so no resources.subscribe)
  --no-prompts           declare no prompts
  --banner               print a non-JSON banner line on stdout before serving
  --exit-at-start N      exit with status N before reading anything
  --ignore-unknown       never answer unknown methods (some servers ignore server/discover)
  --endless METHOD       answer the list METHOD (tools/list, resources/list,
                         resources/templates/list, prompts/list) with pages that never end:
                         every page has a nextCursor (repeatable)
  --endless-items N      items per endless page (default 100)
  --endless-item-size N  characters of description in each endless item (default 100)
  --display-tools        add the tools whose results test the Jupyter display's bounds
                         and escaping (records, flat, blocks, images, hostile, wide)
  --typed-tools          add `typed`, whose arguments have every JSON type (and one has
                         no type), answering with the arguments it got and their types
  --stateless            also serve 2026-07-28 (server/discover); tools may answer
                         input_required (see needs_input)
  --stubborn             ignore SIGTERM, and keep running (60 s at most) after stdin ends:
                         only SIGKILL stops it
  --extensions JSON      advertise this value as capabilities.extensions (both eras)
  --many-extensions N    advertise N extensions (com.example/ext-0 ...), each with
                         settings {"n": i}, after those of --extensions
                         (either adds the tool `answer_with(result)`, which answers
                         with `result` as it is: an extension's own kind of result)
  --ttl-ms N             (with --stateless) answer tools/list (public) and resources/read
                         (private) with the caching hints ttlMs N and a cacheScope;
                         reading test://roots takes an input round (roots/list) first
  --count-file PATH      append the method of each tools/list and resources/read received
                         to PATH, a line each (what a response-cache test counts)
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcp_sync.testing import FakeServer, RpcError, ToolContext

parser = argparse.ArgumentParser()
parser.add_argument("--name", default="fake")
parser.add_argument("--page-size", type=int)
parser.add_argument("--extra-tools", type=int, default=0)
parser.add_argument("--protocol-version")
parser.add_argument("--no-resources", action="store_true")
parser.add_argument("--no-prompts", action="store_true")
parser.add_argument("--banner", action="store_true")
parser.add_argument("--exit-at-start", type=int)
parser.add_argument("--ignore-unknown", action="store_true",
                    help="never answer unknown methods (e.g. server/discover)")
parser.add_argument("--endless", action="append", default=[],
                    choices=["tools/list", "resources/list", "resources/templates/list",
                             "prompts/list"])
parser.add_argument("--endless-items", type=int, default=100)
parser.add_argument("--endless-item-size", type=int, default=100)
parser.add_argument("--display-tools", action="store_true")
parser.add_argument("--typed-tools", action="store_true")
parser.add_argument("--stateless", action="store_true",
                    help="answer server/discover: serve the 2026-07-28 era too")
parser.add_argument("--stubborn", action="store_true",
                    help="ignore SIGTERM and stdin's end: only SIGKILL stops it")
parser.add_argument("--extensions", type=json.loads)
parser.add_argument("--many-extensions", type=int, default=0)
parser.add_argument("--ttl-ms", type=int)
parser.add_argument("--count-file")
options = parser.parse_args()

if options.stubborn:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)

if options.exit_at_start is not None:
    sys.stderr.write("fake server refusing to start\n")
    sys.exit(options.exit_at_start)

versions = (options.protocol_version,) if options.protocol_version else (
    "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
advertised: Any = options.extensions
if options.many_extensions:
    advertised = dict(advertised or {})
    advertised.update({f"com.example/ext-{i}": {"n": i} for i in range(options.many_extensions)})


class Server(FakeServer):
    def capabilities(self) -> Dict[str, Any]:
        capabilities = super().capabilities()
        if advertised is not None:
            capabilities["extensions"] = advertised
        return capabilities


server = Server(options.name, "1.2.3", instructions="Test server.",
                page_size=options.page_size, protocol_versions=versions,
                ignore_unknown=options.ignore_unknown)


if advertised is not None:
    @server.tool()
    def answer_with(result: Dict[str, Any]) -> Dict[str, Any]:
        """Answer with `result` as it is (it has `content`)."""
        return result


def raw_write(ctx: ToolContext, data: bytes) -> None:
    connection = ctx.connection
    assert connection.write_lock is not None and connection.stdout is not None
    with connection.write_lock:
        connection.stdout.write(data)
        connection.stdout.flush()


@server.tool()
def echo(text: str) -> str:
    """Echo the text."""
    return text


@server.tool(annotations={"readOnlyHint": True})
def add(a: float, b: float) -> Dict[str, Any]:
    """Add two numbers (structured result)."""
    return {"sum": a + b}


@server.tool()
def slow(seconds: float, ctx: ToolContext, progress_interval: float = 0.0) -> str:
    """Wait `seconds` (ends early when cancelled), reporting progress if asked."""
    deadline = time.monotonic() + seconds
    step = 0
    while time.monotonic() < deadline:
        wait = deadline - time.monotonic()
        if progress_interval:
            wait = min(wait, progress_interval)
        if ctx.cancelled.wait(max(0.0, wait)):
            return "cancelled"
        if progress_interval:
            step += 1
            ctx.progress(step, None, f"step {step}")
    return f"slept {seconds}"


@server.tool()
def big(size: int) -> str:
    """A text result of `size` characters."""
    return "x" * size


@server.tool()
def crash(code: int = 3, message: str = "fatal: something broke") -> str:
    """Write to stderr and exit at once with `code`, mid-request."""
    sys.stderr.write(message + "\n")
    sys.stderr.flush()
    os._exit(code)


@server.tool()
def orphan(code: int = 5, own_session: bool = False) -> str:
    """Start a process that inherits stdout and stderr and lives on (60 s at most; in a
    session of its own with `own_session`), write its pid to stderr as "orphan pid N",
    then exit at once with `code`, mid-request."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                             start_new_session=own_session)
    sys.stderr.write(f"orphan pid {child.pid}\n")
    sys.stderr.flush()
    os._exit(code)


@server.tool()
def stderr_flood(lines: int) -> str:
    """Write `lines` lines to stderr, then answer."""
    for i in range(lines):
        sys.stderr.write(f"noise line {i}\n")
    sys.stderr.write("last noise line\n")
    sys.stderr.flush()
    return f"wrote {lines}"


@server.tool()
def malformed(ctx: ToolContext) -> str:
    """Write broken lines to stdout before answering."""
    raw_write(ctx, b"this is not json\n")
    raw_write(ctx, b'{"truncated": \n')
    raw_write(ctx, b'"just a string"\n')
    raw_write(ctx, b'{"jsonrpc": "2.0", "no": "method or id"}\n')
    raw_write(ctx, b'{"jsonrpc":"2.0","id":999999,"result":{}}\n')  # unknown id
    return "survived"


@server.tool()
def batch(ctx: ToolContext) -> str:
    """Send two log notifications as one JSON array (a 2025-03-26 batch) before answering."""
    notes = [
        {"jsonrpc": "2.0", "method": "notifications/message",
         "params": {"level": "info", "data": f"batched {i}"}}
        for i in range(2)
    ]
    raw_write(ctx, json.dumps(notes).encode() + b"\n")
    return "batched"


@server.tool()
def ask(method: str, ctx: ToolContext, params: Optional[Dict[str, Any]] = None) -> Any:
    """Send a request to the client; return its result or its error."""
    try:
        return {"result": ctx.request(method, params, timeout=10.0)}
    except Exception as exc:  # noqa: BLE001
        return {"error": getattr(exc, "error", {"message": str(exc)})}


_cancelled_ids = itertools.count(1)


@server.tool()
def ask_and_cancel(method: str, ctx: ToolContext, params: Optional[Dict[str, Any]] = None,
                   after_progress: bool = False, wait: float = 10.0) -> Dict[str, Any]:
    """Send a request to the client with a progress token, then cancel it: at once, or
    once the client reported progress for it. Returns the request's id and that progress."""
    request_id = f"cancel-{next(_cancelled_ids)}"
    token = f"token-{request_id}"
    request_params = dict(params or {})
    request_params["_meta"] = {"progressToken": token}
    ctx.connection.send({"jsonrpc": "2.0", "id": request_id, "method": method,
                         "params": request_params})
    progress = None
    if after_progress:
        progress = ctx.connection.wait_for(
            lambda m: m.get("method") == "notifications/progress"
            and (m.get("params") or {}).get("progressToken") == token, wait)["params"]
    ctx.connection.notify("notifications/cancelled",
                          {"requestId": request_id, "reason": "no longer needed"})
    return {"id": request_id, "progress": progress}


@server.tool()
def answers(request_id: str) -> List[Dict[str, Any]]:
    """Responses this server received to its request `request_id`."""
    return [m for c in server.connections for m in c.received
            if m.get("id") == request_id and "method" not in m]


@server.tool()
def needs_url(url: str, elicitation_id: str = "el-1") -> str:
    """Fail with -32042: the user must complete a URL-mode elicitation first."""
    raise RpcError({"code": -32042, "message": "This request requires more information.",
                    "data": {"elicitations": [{"mode": "url", "elicitationId": elicitation_id,
                                               "url": url, "message": "Authorize access."}]}})


@server.tool()
def needs_input(input_requests: Dict[str, Any], ctx: ToolContext) -> Dict[str, Any]:
    """2026-07-28: answer input_required with `input_requests` first; the retry gets
    the client's inputResponses back as structured content."""
    call = next(m for m in reversed(ctx.connection.received) if m.get("id") == ctx.request_id
                and m.get("method") == "tools/call")
    responses = call["params"].get("inputResponses")
    if responses is None:
        return {"resultType": "input_required", "content": [],
                "inputRequests": input_requests, "requestState": "asked"}
    return {"content": [{"type": "text", "text": "answered"}],
            "structuredContent": {"inputResponses": responses}}


@server.tool()
def received(method: str) -> List[Dict[str, Any]]:
    """Messages this server received with the given method, in order."""
    return [m for c in server.connections for m in c.received if m.get("method") == method]


@server.tool()
def transcript() -> List[Dict[str, Any]]:
    """Every message this server received, in order."""
    return [m for c in server.connections for m in c.received]


@server.tool()
def log(level: str, data: str, ctx: ToolContext) -> str:
    """Send a log notification."""
    ctx.log(level, data, logger="tool")
    return "logged"


@server.tool()
def notify(method: str, ctx: ToolContext, params: Optional[Dict[str, Any]] = None) -> str:
    """Send a notification (e.g. notifications/tools/list_changed), with `params` if given."""
    ctx.connection.notify(method, params)
    return "sent"


@server.tool()
def grow(name: str, ctx: ToolContext) -> str:
    """Add a tool `name` (answering with its name), then send
    notifications/tools/list_changed."""
    server.tool(name=name, description=f"Added at run time: {name}")(lambda: name)
    ctx.connection.notify("notifications/tools/list_changed", None)
    return "grown"


@server.tool()
def environment() -> List[str]:
    """The names of the server's environment variables."""
    return sorted(os.environ)


# `shaped` declares that its structured result holds a number; `reshape` changes that.
NUMBER_RESULT = {"type": "object", "properties": {"value": {"type": "number"}},
                 "required": ["value"]}


@server.tool(output_schema=NUMBER_RESULT)
def shaped(value: Any, ctx: ToolContext, ask_roots: bool = False) -> Dict[str, Any]:
    """Return {"value": value} as structuredContent, whatever its type; with `ask_roots`,
    ask the client for its roots first (so the client can hold the result back)."""
    if ask_roots:
        ctx.request("roots/list", None, timeout=10.0)
    return {"value": value}


@server.tool()
def reshape(schema: Dict[str, Any]) -> str:
    """Make `schema` the outputSchema of `shaped` (no notification: send one with `notify`)."""
    server.tools["shaped"].definition["outputSchema"] = schema
    return "reshaped"


@server.tool()
def fail(message: str) -> str:
    """Raise: the result has isError true."""
    raise RuntimeError(message)


for index in range(options.extra_tools):
    server.tool(name=f"tool_{index:03d}", description=f"Extra tool {index}")(
        lambda: "extra"
    )

# Text that would be markup or terminal control if shown raw: ANSI colours, a bell, a C1
# CSI, a right-to-left override, Markdown emphasis, links and mathematics, and HTML.
HOSTILE_TEXT = ("red \x1b[31mALERT\x1b[0m\x07 \x9b2J \u202egnp.exe *bold* _it_ "
                "[link](javascript:alert(1)) $x^2$ | pipe <b>tag</b> & `tick`")


def display_tools() -> None:
    @server.tool()
    def records(count: int, keys: int = 1, size: int = 1) -> Dict[str, Any]:
        """`count` flat records, each with `keys` keys of its own holding `size`
        characters; structuredContent is the list itself (2026-07-28 shape)."""
        rows = [{f"r{i}_k{j}": "v" * size for j in range(keys)} for i in range(count)]
        return {"content": [{"type": "text", "text": f"{count} records"}],
                "structuredContent": rows}

    @server.tool()
    def flat(keys: int, size: int = 1) -> Dict[str, Any]:
        """A flat structured result: `keys` keys each holding `size` characters."""
        return {f"key_{j}": "x" * size for j in range(keys)}

    @server.tool()
    def blocks(count: int, size: int = 10) -> List[Dict[str, Any]]:
        """`count` text content blocks of `size` characters."""
        return [{"type": "text", "text": f"{i}:" + "b" * size} for i in range(count)]

    @server.tool()
    def images(count: int, size: int) -> List[Dict[str, Any]]:
        """`count` PNG image blocks of `size` characters of base64 each."""
        return [{"type": "image", "mimeType": "image/png", "data": "AAAA" * (size // 4)}
                for _ in range(count)]

    @server.tool(description=HOSTILE_TEXT)
    def hostile() -> Dict[str, Any]:
        """Hostile text in a text block, a structured key and value, an embedded
        resource and a resource link."""
        return {"content": [
            {"type": "text", "text": HOSTILE_TEXT},
            {"type": "resource", "resource": {"uri": "test://hostile", "text": HOSTILE_TEXT}},
            {"type": "resource_link", "uri": "https://example.com/\x1b[2J", "name": "link"},
        ], "structuredContent": {"note": HOSTILE_TEXT, HOSTILE_TEXT: "key"}}

    server.tool(name="wide", description="A tool with 100 parameters", input_schema={
        "type": "object",
        "properties": {f"p{index}": {"type": "string", "description": HOSTILE_TEXT * 20}
                       for index in range(100)},
        "required": ["p0", {"not": "a name"}],
    })(lambda **_: "wide")


if options.display_tools:
    display_tools()

TYPED_SCHEMA = {"type": "object", "properties": {
    "text": {"type": "string"}, "count": {"type": "integer"}, "ratio": {"type": "number"},
    "flag": {"type": "boolean"}, "nothing": {"type": "null"}, "items": {"type": "array"},
    "options": {"type": "object"}, "label": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    "size": {"type": ["integer", "string"]}, "unit": {"enum": ["celsius", "fahrenheit"]},
    "free": {"description": "no type: anything"},
}, "required": ["text"]}
JSON_TYPES = {type(None): "null", bool: "boolean", int: "integer", float: "number",
              str: "string", list: "array", dict: "object"}


def typed(**arguments: Any) -> Dict[str, Any]:
    """The arguments it got, and the JSON type of each."""
    return {"arguments": arguments,
            "types": {name: JSON_TYPES[type(value)] for name, value in arguments.items()}}


if options.typed_tools:
    server.tool(name="typed", description=typed.__doc__, input_schema=TYPED_SCHEMA)(typed)


def endless_item(method: str, page: int, index: int, description: str) -> Dict[str, Any]:
    name = f"endless_{page}_{index}"
    if method == "tools/list":
        return {"name": name, "description": description, "inputSchema": {"type": "object"}}
    if method == "resources/list":
        return {"uri": f"test://endless/{page}/{index}", "name": name,
                "description": description}
    if method == "resources/templates/list":
        return {"uriTemplate": f"test://endless/{page}/{index}/{{x}}", "name": name,
                "description": description}
    return {"name": name, "description": description}


def endless_pages(method: str, key: str) -> None:
    # Distinct names on every page, and always a new cursor: a hostile server's listing.
    description = "d" * options.endless_item_size

    @server.method(method)
    def page(params: Dict[str, Any]) -> Dict[str, Any]:
        number = int(params.get("cursor") or 0)
        return {key: [endless_item(method, number, index, description)
                      for index in range(options.endless_items)],
                "nextCursor": str(number + 1)}


for endless in options.endless:
    endless_pages(endless, {"tools/list": "tools", "resources/list": "resources",
                            "resources/templates/list": "resourceTemplates",
                            "prompts/list": "prompts"}[endless])

if not options.no_resources:
    server.resource("test://hello", "hello world", name="hello")
    server.resource("test://blob", None, name="blob", mime_type="application/octet-stream",
                    blob="AAEC")


def greet(who: str) -> str:
    """Greet someone."""
    return f"Hello, {who}!"


if not options.no_prompts:
    server.prompt(arguments=[{"name": "who", "required": True}])(greet)


if options.stateless:
    @server.method("server/discover")
    def discover(params: Dict[str, Any]) -> Dict[str, Any]:
        return {"resultType": "complete", "supportedVersions": ["2026-07-28", *versions],
                "capabilities": server.capabilities(),
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": server.name,
                                                                 "version": server.version}}}


def counted(method: str) -> None:
    if options.count_file:
        with open(options.count_file, "a", encoding="utf-8") as counts:
            counts.write(method + "\n")


if options.ttl_ms is not None or options.count_file:
    hints = {} if options.ttl_ms is None else {"ttlMs": options.ttl_ms}

    @server.method("tools/list")
    def hinted_tools(params: Dict[str, Any]) -> Dict[str, Any]:
        counted("tools/list")
        return {"tools": [tool.definition for tool in server.tools.values()], **hints,
                "cacheScope": "public"}

    @server.method("resources/read")
    def hinted_read(params: Dict[str, Any]) -> Dict[str, Any]:
        counted("resources/read")
        if params.get("uri") == "test://roots":
            # Needs the client's roots first (input_required); the retry's answer, with
            # hints like any other, is the roots the client gave.
            responses = params.get("inputResponses")
            if responses is None:
                return {"resultType": "input_required", "requestState": "asked",
                        "inputRequests": {"r": {"method": "roots/list", "params": {}}},
                        **hints, "cacheScope": "private"}
            return {"contents": [{"uri": "test://roots", "text": json.dumps(responses)}],
                    **hints, "cacheScope": "private"}
        resource = server.resources.get(params.get("uri", ""))
        if resource is None:
            raise RpcError({"code": -32002, "message": "Resource not found"})
        contents = {k: v for k, v in resource.items()
                    if k in ("uri", "mimeType", "text", "blob") and v is not None}
        return {"contents": [contents], **hints, "cacheScope": "private"}


server.completion("greet", lambda name, value: [w for w in ("alice", "bob", "alina")
                                                  if w.startswith(value)])

if options.banner:
    sys.stdout.write("Fake server starting up (not JSON)\n")
    sys.stdout.flush()

server.serve_stdio()
if options.stubborn:
    threading.Event().wait(60.0)  # stdin ended: linger until SIGKILL (or a minute)
