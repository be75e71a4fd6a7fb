"""MCP Apps in Jupyter: an ``anywidget`` widget that shows a tool's app in a sandboxed
frame and bridges it to the client in the kernel.

Imported on first use of :func:`mcp_sync.apps.show` or :class:`mcp_sync.apps.AppView`
(``anywidget`` is optional: ``pip install 'mcp-sync-client[jupyter]'``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional

import anywidget
import traitlets

from .._protocol import DEFAULT, Timeout
from .._util.text import excerpt
from ._bridge import BridgeLimits
from ._load import MAX_HTML_BYTES, App, load_app
from ._page import ESM, PERMISSIONS_DENIED, srcdoc
from ._session import AppSession

if TYPE_CHECKING:
    from ..client import Client

__all__ = ["AppView", "show"]

log = logging.getLogger(__name__)

# The longest message id taken from the page (the page makes them: view:number).
_MAX_ID = 100


class AppView(anywidget.AnyWidget):  # type: ignore[misc, unused-ignore]  # Any without anywidget
    """A tool's app in a notebook: its document in ``<iframe sandbox="allow-scripts">``
    (``srcdoc``, under its policy), its messages answered by the kernel.

    Made by :func:`show`; display it (or leave it as a cell's last value). Each message
    of the app reaches the kernel over the widget's comm and is answered there
    (:class:`~mcp_sync.apps.AppSession`): a tool call is sent as a future and answered
    when it completes, so the kernel is never held by one. Displayed twice, it shows
    two frames, each with its own channel.

    Attributes:
        app: the loaded app (tool, arguments, result, document).
        session: its bridge to the server's client.
    """

    _esm = ESM
    srcdoc = traitlets.Unicode("").tag(sync=True)
    tool_data: traitlets.List[Any] = traitlets.List([]).tag(sync=True)
    title = traitlets.Unicode("").tag(sync=True)
    allow = traitlets.Unicode(PERMISSIONS_DENIED).tag(sync=True)
    height = traitlets.Int(360).tag(sync=True)
    border = traitlets.Bool(True).tag(sync=True)
    max_message_bytes = traitlets.Int(1 << 20).tag(sync=True)
    max_in_flight = traitlets.Int(8).tag(sync=True)
    reply_timeout_ms = traitlets.Int(120_000).tag(sync=True)

    def __init__(self, app: App, session: AppSession, *, height: int = 360,
                 reply_timeout: float = 120.0) -> None:
        resource = app.resource
        super().__init__(
            srcdoc=srcdoc(resource.html, resource.csp),
            tool_data=app.tool_data(),
            title=excerpt(app.tool.title or app.tool.name, 120),
            height=height,
            border=resource.prefers_border is not False,
            max_message_bytes=session.bridge.limits.max_message_bytes,
            max_in_flight=session.max_calls,
            reply_timeout_ms=int(reply_timeout * 1000),
        )
        self.app = app
        self.session = session
        self.on_msg(self._received)

    def _received(self, _widget: Any, content: Any, _buffers: Any) -> None:
        """One message of the page: ``{"kind": "message", "id": ..., "message": text}``;
        anything else is dropped (the page is ours; the app's text is checked by the
        bridge)."""
        if not isinstance(content, dict) or content.get("kind") != "message":
            return
        message_id = content.get("id")
        message = content.get("message")
        if not isinstance(message_id, str) or len(message_id) > _MAX_ID or \
                not isinstance(message, str):
            log.warning("app view of %s: dropped a malformed message from the page",
                        excerpt(self.app.server, 100))
            return

        def answer(reply: Dict[str, Any]) -> None:
            try:
                self.send({"kind": "reply", "id": message_id, "reply": reply})
            except Exception as exc:  # noqa: BLE001 - the comm may be gone; log, never raise
                log.warning("app view of %s: the reply could not be sent: %s",
                            excerpt(self.app.server, 100), excerpt(exc, 200))

        self.session.handle_async(message, answer)

    def post(self, messages: List[Dict[str, Any]]) -> None:
        """Post ``messages`` (host-made JSON-RPC messages) to the app in every view."""
        self.send({"kind": "post", "post": list(messages)})

    def teardown(self, reason: str = "") -> None:
        """Tell the app it is about to be removed (``ui/resource-teardown``); close the
        widget afterwards."""
        self.post([self.session.bridge.teardown_request(reason)])


def show(client: Client, tool: str, arguments: Optional[Mapping[str, Any]] = None, *,
         timeout: Timeout = DEFAULT, height: int = 360,
         limits: Optional[BridgeLimits] = None,
         host_context: Optional[Mapping[str, Any]] = None, max_calls: int = 8,
         max_html_bytes: int = MAX_HTML_BYTES) -> AppView:
    """Call ``tool`` of ``client``'s server with ``arguments`` and show its app: the
    returned :class:`AppView` renders it when displayed (the last value of a cell, or
    ``display(view)``).

    Blocks while the tool runs and its document is read (each request bounded by
    ``timeout``); the app's own tool calls later reach this ``client`` only, and only
    the tools its server lets an app call. ``height`` is the frame's height in pixels
    until the app asks for another (bounded by ``limits.max_height``).

    Raises:
        AppError: the tool has no app, or its document is refused.
        MCPError: a request to the server failed.
    """
    app = load_app(client, tool, arguments, timeout=timeout, max_html_bytes=max_html_bytes)
    session = AppSession(client, app.bridge(limits=limits, host_context=host_context),
                         timeout=timeout, max_calls=max_calls)
    return AppView(app, session, height=height)
