"""An MCP Apps server written with the official Python SDK (PyPI ``mcp``): its
``Apps`` extension serves the UI tools and their ``ui://`` documents.

Nobody on this project wrote the protocol side: the SDK stamps ``_meta.ui`` on the tools,
serves the documents as ``text/html;profile=mcp-app`` and advertises
``io.modelcontextprotocol/ui``. The SDK serves UI tools to every client (its
``client_supports_apps`` helper would let a tool branch on the client's declaration;
these do not), so a client that does not declare the extension yet sees them too.

Usage::

    python tests/servers/apps_server.py --record calls.jsonl          # stdio
    python tests/servers/apps_server.py --record calls.jsonl \\
        --connect-domain http://127.0.0.1:8001 --probe http://127.0.0.1:8001/hit \\
        --probe http://127.0.0.1:8002/hit --extra-tool secret_op

Each tool call is appended to ``--record`` as one JSON line (``{"tool", "arguments"}``),
so a test sees which calls reached the server, from which process.

Tools:

* ``show_board(title)``: a UI tool (visible to the model and the app) whose app
  (``ui://board/app.html``) initialises, shows its tool input and result, asks for a
  height of 321 px, then calls ``add_item`` through the host and shows the count.
* ``add_item(text)``: app-only (``visibility: ["app"]``).
* ``clear_board()``: model-only (``visibility: ["model"]``): an app may not call it.
* ``slow_item(seconds)``: app-only; recorded when it starts, answers after ``seconds``.
* ``show_hostile()``: a UI tool whose app (``ui://hostile/app.html``) tries what an app
  may not do, and shows each outcome (see HOSTILE_HTML); its document declares the
  ``--connect-domain`` origins (and one that is not an origin).
* ``show_wanderer()``: a UI tool whose app (``ui://wanderer/app.html``), once it has its
  result, navigates its frame to another document.
* ``--extra-tool NAME``: one more app-callable tool of that name (a second server's).
* ``--declared-tool``: adds ``client_declared()``, a plain tool answering what the
  client declared, as the SDK sees it on this request: ``extensions`` (its
  ``capabilities.extensions``) and ``supportsApps`` (the SDK's ``client_supports_apps``);
  the same is recorded (``{"tool": "client_declared", "arguments": {...}}``).
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional

warnings.filterwarnings("ignore", category=DeprecationWarning)

import anyio  # noqa: E402
from mcp.server.apps import Apps, ResourceCsp, client_supports_apps  # noqa: E402
from mcp.server.mcpserver import Context, MCPServer  # noqa: E402
from pydantic import BaseModel  # noqa: E402

BOARD_URI = "ui://board/app.html"
HOSTILE_URI = "ui://hostile/app.html"
WANDERER_URI = "ui://wanderer/app.html"

# The app side, written by hand as the specification shows (no SDK): JSON-RPC over
# postMessage to window.parent.
APP_RUNTIME = r"""
var nextId = 1, pending = {};
function show(id, text) { document.getElementById(id).textContent = text; }
function request(method, params, ms) {
  var id = nextId++;
  return new Promise(function (resolve) {
    pending[id] = resolve;
    try {
      window.parent.postMessage({jsonrpc: "2.0", id: id, method: method, params: params}, "*");
    } catch (e) { delete pending[id]; resolve({error: {code: 0, message: String(e)}}); }
    setTimeout(function () {
      if (pending[id]) { delete pending[id]; resolve({error: {code: 0, message: "no answer"}}); }
    }, ms || 15000);
  });
}
function notify(method, params) {
  window.parent.postMessage({jsonrpc: "2.0", method: method, params: params}, "*");
}
var handlers = {};
window.addEventListener("message", function (event) {
  if (event.source !== window.parent) { return; }
  var m = event.data;
  if (m && m.id !== undefined && pending[m.id]) {
    var resolve = pending[m.id]; delete pending[m.id]; resolve(m); return;
  }
  if (m && m.method === "ui/resource-teardown") {
    show("teardown", "asked");
    window.parent.postMessage({jsonrpc: "2.0", id: m.id, result: {}}, "*");
    return;
  }
  if (m && handlers[m.method]) { handlers[m.method](m.params); }
});
function outcome(reply) {
  if (reply.error) { return "error " + reply.error.code + ": " + reply.error.message; }
  return "ok " + JSON.stringify(reply.result).slice(0, 200);
}
function start(then) {
  request("ui/initialize", {appInfo: {name: "test-app", version: "1.0.0"},
                            appCapabilities: {}, protocolVersion: "2026-01-26"})
    .then(function (reply) {
      if (reply.error) { show("status", "initialize failed: " + reply.error.message); return; }
      var r = reply.result;
      show("status", "initialised by " + r.hostInfo.name + " " + r.protocolVersion +
           " tool " + r.hostContext.toolInfo.tool.name);
      show("csp", JSON.stringify(r.hostCapabilities.sandbox.csp || {}));
      notify("ui/notifications/initialized", {});
      then(r);
    });
}
"""

BOARD_HTML = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Board</title></head>
<body>
<h1 id="title">loading</h1>
<p id="status">not initialised</p>
<p id="input"></p><p id="added"></p><p id="csp"></p><p id="teardown"></p>
<script>/*RUNTIME*/
handlers["ui/notifications/tool-input"] = function (params) {
  show("input", "input " + JSON.stringify(params.arguments));
};
handlers["ui/notifications/tool-result"] = function (result) {
  show("title", result.structuredContent.title);
  request("tools/call", {name: "add_item", arguments: {text: "from the app"}})
    .then(function (reply) {
      show("added", reply.error ? "add failed: " + reply.error.message
                                : "added: " + reply.result.structuredContent.count);
      document.body.dataset.done = "yes";
    });
};
start(function () {
  notify("notifications/message", {level: "info", data: "board ready"});
  notify("ui/notifications/size-changed", {width: 400, height: 321});
});
</script>
</body></html>
""".replace("/*RUNTIME*/", APP_RUNTIME)

# The hostile app: each attempt's outcome lands in the element of its name.
HOSTILE_HTML = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Hostile</title></head>
<body>
<p id="status">not initialised</p><p id="csp"></p><p id="teardown"></p>
<ul>
<li id="model-only"></li><li id="other-server"></li><li id="oversized"></li>
<li id="open-link"></li><li id="resources-read"></li><li id="bad-params"></li>
<li id="fetch-declared"></li><li id="fetch-undeclared"></li><li id="cookie"></li>
<li id="parent"></li><li id="allowed"></li>
</ul>
<script>/*RUNTIME*/
var PROBES = /*PROBES*/;
function attempt(id, run) {
  return Promise.resolve().then(run).then(function (text) { show(id, text); },
                                          function (e) { show(id, "threw " + e); });
}
function steps() {
  return attempt("model-only", function () {
    return request("tools/call", {name: "clear_board", arguments: {}}).then(outcome);
  }).then(function () { return attempt("other-server", function () {
    return request("tools/call", {name: "secret_op", arguments: {}}).then(outcome);
  }); }).then(function () { return attempt("oversized", function () {
    var big = new Array(1572864 + 1).join("x");
    return request("tools/call", {name: "add_item", arguments: {text: big}}).then(outcome);
  }); }).then(function () { return attempt("open-link", function () {
    return request("ui/open-link", {url: "https://example.com/"}).then(outcome);
  }); }).then(function () { return attempt("resources-read", function () {
    return request("resources/read", {uri: "ui://board/app.html"}).then(outcome);
  }); }).then(function () { return attempt("bad-params", function () {
    return request("tools/call", {name: "add_item", arguments: "not an object"})
      .then(outcome);
  }); }).then(function () { return attempt("fetch-declared", function () {
    return fetch(PROBES[0], {mode: "no-cors"}).then(function () { return "fetched"; });
  }); }).then(function () { return attempt("fetch-undeclared", function () {
    return fetch(PROBES[1], {mode: "no-cors"}).then(function () { return "fetched"; });
  }); }).then(function () { return attempt("cookie", function () {
    return "read " + JSON.stringify(document.cookie);
  }); }).then(function () { return attempt("parent", function () {
    return "read " + window.parent.document.title;
  }); }).then(function () { return attempt("allowed", function () {
    return request("tools/call", {name: "add_item", arguments: {text: "hostile"}})
      .then(outcome);
  }); }).then(function () { document.body.dataset.done = "yes"; });
}
handlers["ui/notifications/tool-result"] = function () { steps(); };
start(function () {});
</script>
</body></html>
"""


class Board(BaseModel):
    title: str
    items: List[str]


class Count(BaseModel):
    count: int


class Done(BaseModel):
    done: bool

WANDERER_HTML = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Wanderer</title></head>
<body><p id="status">not initialised</p><p id="csp"></p><p id="teardown"></p>
<script>/*RUNTIME*/
handlers["ui/notifications/tool-result"] = function () {
  document.body.dataset.done = "yes";
  location.href = "about:blank";
};
start(function () {});
</script>
</body></html>
""".replace("/*RUNTIME*/", APP_RUNTIME)


def build(record: Path, connect_domains: List[str], probes: List[str],
          extra_tool: Optional[str], declared_tool: bool = False) -> MCPServer:
    apps = Apps()
    items: List[str] = ["milk"]

    def note(tool: str, arguments: Dict[str, Any]) -> None:
        with record.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"tool": tool, "arguments": arguments}) + "\n")

    @apps.tool(resource_uri=BOARD_URI, description="Show the board, with its app")
    def show_board(title: str) -> Board:
        note("show_board", {"title": title})
        return Board(title=title, items=list(items))

    @apps.tool(resource_uri=BOARD_URI, visibility=["app"], description="Add an item")
    def add_item(text: str) -> Count:
        note("add_item", {"text": text[:100]})
        items.append(text)
        return Count(count=len(items))

    @apps.tool(resource_uri=BOARD_URI, visibility=["model"], description="Clear the board")
    def clear_board() -> Count:
        note("clear_board", {})
        items.clear()
        return Count(count=0)

    @apps.tool(resource_uri=BOARD_URI, visibility=["app"], description="Slowly add an item")
    async def slow_item(seconds: float) -> Count:
        note("slow_item", {"seconds": seconds})
        await anyio.sleep(seconds)
        return Count(count=len(items))

    @apps.tool(resource_uri=WANDERER_URI, description="Show an app that leaves its page")
    def show_wanderer() -> Done:
        note("show_wanderer", {})
        return Done(done=True)

    @apps.tool(resource_uri=HOSTILE_URI, description="Show an app that misbehaves")
    def show_hostile() -> Done:
        note("show_hostile", {})
        return Done(done=True)

    if extra_tool:
        def extra() -> Done:
            note(extra_tool, {})
            return Done(done=True)

        extra.__name__ = extra_tool
        apps.tool(resource_uri=BOARD_URI, visibility=["app"], name=extra_tool,
                  description="A tool of this server only")(extra)

    apps.add_html_resource(BOARD_URI, BOARD_HTML, name="board", prefers_border=True)
    apps.add_html_resource(WANDERER_URI, WANDERER_HTML, name="wanderer")
    apps.add_html_resource(
        HOSTILE_URI, HOSTILE_HTML.replace("/*RUNTIME*/", APP_RUNTIME).replace(
            "/*PROBES*/", json.dumps(probes or ["", ""])),
        name="hostile",
        # The second entry is no origin: a host must drop it, never widen the policy.
        csp=ResourceCsp(connect_domains=[*connect_domains, "*"]))
    server = MCPServer("apps-board", extensions=[apps])
    if declared_tool:
        @server.tool(description="What the client declared, as this server sees it")
        def client_declared(ctx: Context) -> Dict[str, Any]:
            capabilities = ctx.client_capabilities
            extensions = capabilities.extensions if capabilities is not None else None
            seen = {"extensions": extensions, "supportsApps": client_supports_apps(ctx)}
            note("client_declared", seen)
            return seen
    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--record", required=True, type=Path)
    parser.add_argument("--connect-domain", action="append", default=[])
    parser.add_argument("--probe", action="append", default=[])
    parser.add_argument("--extra-tool")
    parser.add_argument("--declared-tool", action="store_true")
    parser.add_argument("--transport", default="stdio")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = build(args.record, args.connect_domain, args.probe, args.extra_tool,
                   args.declared_tool)
    if args.transport == "stdio":
        server.run()
    else:
        server.run(transport=args.transport, host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
