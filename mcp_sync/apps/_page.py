"""What a browser runs: the host page's script, the app's framed document, the web host
page.

The app always runs in ``<iframe sandbox="allow-scripts">``, never with
``allow-same-origin``: its document has an opaque origin (``"null"``), so it cannot read
the host page, its cookies or its storage, and the one way out is ``postMessage`` to the
host page. The host page's script (:data:`HOST_JS`, the same in Jupyter and on a web
page) takes a message only from that frame's window with the origin ``"null"``, bounds
it, forwards it as JSON text to the Python side (the kernel's comm, or the site's bridge
endpoint) and posts back what the bridge answers; it never interprets the app's
messages itself. When the frame loads a second document (the app navigated itself away
from the one it was served), the host stops bridging and blanks the frame.
"""

from __future__ import annotations

import html
import json
from typing import Any, Dict, Mapping, Optional

from .._util.text import excerpt
from ._csp import AppCsp

__all__ = [
    "ESM",
    "FRAME_SANDBOX",
    "HOST_JS",
    "PERMISSIONS_DENIED",
    "frame_headers",
    "host_page",
    "page_csp",
    "script_json",
    "srcdoc",
]

#: The frame's sandbox: scripts, and nothing else (no same-origin, no popups, no forms,
#: no top navigation, no downloads).
FRAME_SANDBOX = "allow-scripts"
#: The frame's ``allow`` attribute: none of the permissions an app may ask for.
PERMISSIONS_DENIED = ("camera 'none'; microphone 'none'; geolocation 'none'; "
                      "clipboard-write 'none'")

HOST_JS = r"""
function mcpSyncAppHost(frame, options) {
  "use strict";
  var delivered = false, inFlight = 0, loads = 0, closed = false;
  var encoder = new TextEncoder();
  function note(kind, detail) {
    if (options.onEvent) { try { options.onEvent(kind, detail); } catch (e) { /* not ours */ } }
  }
  function post(message) {
    if (!closed && frame.contentWindow) { frame.contentWindow.postMessage(message, "*"); }
  }
  function fail(data, code, text) {
    // A refused request still gets its answer; a notification has none.
    if (data && typeof data === "object" && typeof data.method === "string" &&
        (typeof data.id === "number" || typeof data.id === "string")) {
      post({jsonrpc: "2.0", id: data.id, error: {code: code, message: text}});
    }
  }
  function apply(reply) {
    if (closed || !reply || typeof reply !== "object") { return; }
    (Array.isArray(reply.post) ? reply.post : []).forEach(post);
    var size = reply.resize;
    if (size && typeof size === "object") {
      if (typeof size.height === "number") { frame.style.height = size.height + "px"; }
      if (typeof size.width === "number") { frame.style.width = size.width + "px"; }
    }
    if (reply.deliver === true && !delivered) {
      delivered = true;
      (options.toolData || []).forEach(post);
      note("delivered", null);
    }
    if (reply.refused) { note("refused", String(reply.refused)); }
  }
  function onMessage(event) {
    if (closed || event.source !== frame.contentWindow || event.origin !== "null") { return; }
    var text;
    try { text = JSON.stringify(event.data); } catch (e) { note("refused", "not JSON"); return; }
    if (typeof text !== "string") { return; }
    if (text.length > options.maxMessageBytes ||
        encoder.encode(text).length > options.maxMessageBytes) {
      note("refused", "a message over " + options.maxMessageBytes + " bytes");
      fail(event.data, -32600, "Message too large");
      return;
    }
    if (inFlight >= options.maxInFlight) {
      note("refused", "too many messages in flight");
      fail(event.data, -32603, "Too many messages in flight");
      return;
    }
    inFlight += 1;
    options.send(text).then(function (reply) {
      inFlight -= 1;
      apply(reply);
    }, function (error) {
      inFlight -= 1;
      note("failed", String(error));
      fail(event.data, -32603, "The host could not answer");
    });
  }
  function stop(reason) {
    if (closed) { return; }
    closed = true;
    window.removeEventListener("message", onMessage);
    note("stopped", reason);
    frame.removeAttribute("srcdoc");
    frame.setAttribute("src", "about:blank");
  }
  window.addEventListener("message", onMessage);
  frame.addEventListener("load", function () {
    loads += 1;
    if (loads > 1) { stop("the app left the document it was served"); }
  });
  return {apply: apply, stop: stop};
}
"""

#: The anywidget module of :class:`mcp_sync.apps.AppView` (Jupyter).
ESM = HOST_JS + r"""
function render({model, el}) {
  var view = Math.random().toString(36).slice(2);
  var next = 0, waiting = new Map();
  var frame = document.createElement("iframe");
  frame.setAttribute("sandbox", "allow-scripts");
  frame.setAttribute("allow", model.get("allow"));
  frame.setAttribute("referrerpolicy", "no-referrer");
  frame.setAttribute("title", model.get("title"));
  frame.className = "mcp-sync-app";
  frame.style.width = "100%";
  frame.style.height = model.get("height") + "px";
  frame.style.border = model.get("border") ? "1px solid #ccc" : "0";
  frame.style.maxWidth = "100%";
  frame.srcdoc = model.get("srcdoc");
  el.appendChild(frame);
  var host = mcpSyncAppHost(frame, {
    toolData: model.get("tool_data"),
    maxMessageBytes: model.get("max_message_bytes"),
    maxInFlight: model.get("max_in_flight"),
    onEvent: function (kind, detail) { el.dataset.mcpSyncLast = kind + ": " + detail; },
    send: function (text) {
      next += 1;
      var id = view + ":" + next;
      return new Promise(function (resolve, reject) {
        waiting.set(id, resolve);
        model.send({kind: "message", id: id, message: text});
        setTimeout(function () {
          if (waiting.delete(id)) { reject(new Error("the kernel did not answer")); }
        }, model.get("reply_timeout_ms"));
      });
    }
  });
  function onCustom(content) {
    if (!content || typeof content !== "object") { return; }
    if (content.kind === "reply" && waiting.has(content.id)) {
      var resolve = waiting.get(content.id);
      waiting.delete(content.id);
      resolve(content.reply);
    } else if (content.kind === "post") {
      host.apply({post: content.post});
    }
  }
  model.on("msg:custom", onCustom);
  return function () {
    model.off("msg:custom", onCustom);
    host.stop("the view was removed");
  };
}
export default {render};
"""

# The web host page's own script, after HOST_JS: reads its configuration, makes the frame,
# and forwards to the site's bridge endpoint.
_WEB_BOOT = r"""
(function () {
  "use strict";
  var config = JSON.parse(document.getElementById("mcp-sync-app-config").textContent);
  var root = document.getElementById("mcp-sync-app");
  var frame = document.createElement("iframe");
  frame.setAttribute("sandbox", "allow-scripts");
  frame.setAttribute("allow", config.allow);
  frame.setAttribute("referrerpolicy", "no-referrer");
  frame.setAttribute("title", config.title);
  frame.className = "mcp-sync-app" + (config.border ? " mcp-sync-border" : "");
  frame.style.height = config.height + "px";
  frame.src = config.frameUrl;
  root.appendChild(frame);
  mcpSyncAppHost(frame, {
    toolData: config.toolData,
    maxMessageBytes: config.maxMessageBytes,
    maxInFlight: config.maxInFlight,
    onEvent: function (kind, detail) { root.dataset.mcpSyncLast = kind + ": " + detail; },
    send: function (text) {
      var headers = {"Content-Type": "application/json"};
      if (config.csrfHeader) { headers[config.csrfHeader] = config.csrfToken; }
      return fetch(config.bridgeUrl, {
        method: "POST", headers: headers, credentials: "same-origin", cache: "no-store",
        body: JSON.stringify({token: config.token, message: text})
      }).then(function (response) {
        if (!response.ok) { throw new Error("the bridge answered " + response.status); }
        return response.json();
      });
    }
  });
})();
"""

# JSON inside <script type="application/json">: nothing that can end the element or
# start markup, whatever the server sent.
_SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                   "\u2028": "\\u2028", "\u2029": "\\u2029"}


def script_json(value: Any) -> str:
    """``value`` as JSON safe to place inside a ``<script>`` element: ``<``, ``>``,
    ``&`` and the line separators written as ``\\u`` escapes (the same value parsed)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for char, escape in _SCRIPT_ESCAPES.items():
        text = text.replace(char, escape)
    return text


def srcdoc(app_html: str, csp: AppCsp) -> str:
    """The app's document for a frame's ``srcdoc``: its policy first, as a
    ``<meta http-equiv>`` that applies to everything after it (the app cannot remove
    it, and a policy it adds can only restrict more), then the app's HTML as served."""
    policy = html.escape(csp.policy(), quote=True)
    return (f'<!DOCTYPE html><meta http-equiv="Content-Security-Policy" '
            f'content="{policy}">{app_html}')


def frame_headers(csp: AppCsp) -> Dict[str, str]:
    """The response headers of an app's document served at its own URL: its policy with
    the ``sandbox`` directive (the document has an opaque origin even when opened
    outside the host page) and ``frame-ancestors 'self'`` (only the site's own pages
    frame it), and nothing cached, sniffed, referred or permitted."""
    return {
        "Content-Type": "text/html; charset=utf-8",
        "Content-Security-Policy": (f"{csp.policy()}; sandbox {FRAME_SANDBOX}; "
                                    "frame-ancestors 'self'"),
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
        "Permissions-Policy": "camera=(), microphone=(), geolocation=(), clipboard-write=()",
    }


def page_csp(nonce: str) -> str:
    """The host page's own policy: its one script and style (by ``nonce``), frames and
    fetches of its own site only."""
    return "; ".join((
        "default-src 'none'",
        f"script-src 'nonce-{nonce}'",
        f"style-src 'nonce-{nonce}'",
        "frame-src 'self'",
        "connect-src 'self'",
        "img-src 'self' data:",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'self'",
        "object-src 'none'",
    ))


def host_page(*, title: str, nonce: str, config: Mapping[str, Any],
              lang: Optional[str] = "en") -> str:
    """The web host page: an empty place for the frame, its ``config`` (frame and
    bridge URLs, token, tool data, bounds) as inert JSON, and the host script under
    ``nonce``. ``title`` is made printable, bounded and HTML-escaped."""
    shown = html.escape(excerpt(title, 120), quote=True)
    return (
        f'<!DOCTYPE html>\n<html lang="{html.escape(lang or "en", quote=True)}"><head>'
        '<meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{shown}</title>"
        f'<style nonce="{nonce}">html,body{{margin:0}}'
        "#mcp-sync-app iframe{display:block;width:100%;max-width:100%;border:0}"
        "#mcp-sync-app iframe.mcp-sync-border{border:1px solid #ccc}</style></head><body>"
        '<div id="mcp-sync-app"></div>'
        '<script type="application/json" id="mcp-sync-app-config">'
        f"{script_json(dict(config))}</script>"
        f'<script nonce="{nonce}">{HOST_JS}{_WEB_BOOT}</script>'
        "</body></html>\n"
    )
