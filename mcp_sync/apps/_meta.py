"""The MCP Apps names, and what a tool's ``_meta.ui`` says: its app and who may call it.

Pure functions of a tool's definition (a :class:`mcp_sync.types.Tool` or its wire dict);
standard library only, so the Toolbox can apply the visibility rule without loading the
rest of :mod:`mcp_sync.apps`.
"""

from __future__ import annotations

from typing import Any, Dict, FrozenSet, Mapping, Optional

__all__ = [
    "APP_MIME_TYPE",
    "EXTENSION_ID",
    "UI_PROTOCOL_VERSION",
    "UI_SCHEME",
    "app_callable",
    "client_settings",
    "model_visible",
    "tool_resource_uri",
    "tool_visibility",
    "visibility_malformed",
]

#: The extension's identifier, under ``capabilities.extensions`` (SEP-1865).
EXTENSION_ID = "io.modelcontextprotocol/ui"
#: The MIME type of an app's HTML resource, the one type a host renders.
APP_MIME_TYPE = "text/html;profile=mcp-app"
#: The version of the app <-> host protocol this host speaks (ext-apps' 2026-01-26).
UI_PROTOCOL_VERSION = "2026-01-26"
#: The scheme of an app's resource URI.
UI_SCHEME = "ui://"
# The longest resource URI taken from a tool's definition.
MAX_URI_LENGTH = 2048

_BOTH = frozenset(("model", "app"))
_NOBODY: FrozenSet[str] = frozenset()


def client_settings() -> Dict[str, Any]:
    """The settings a client declares for the extension, under
    ``capabilities.extensions["io.modelcontextprotocol/ui"]``: the MIME types it renders."""
    return {"mimeTypes": [APP_MIME_TYPE]}


def _meta_of(tool: Any) -> Optional[Mapping[str, Any]]:
    meta = tool.get("_meta") if isinstance(tool, Mapping) else getattr(tool, "meta", None)
    return meta if isinstance(meta, Mapping) else None


def tool_resource_uri(tool: Any) -> Optional[str]:
    """The ``ui://`` URI of the tool's app (``_meta.ui.resourceUri``, or the deprecated
    flat ``_meta["ui/resourceUri"]``), or None: the tool has no app, or names one that is
    not a ``ui://`` URI of at most 2,048 characters."""
    meta = _meta_of(tool)
    if meta is None:
        return None
    ui = meta.get("ui")
    uri = ui.get("resourceUri") if isinstance(ui, Mapping) else None
    if uri is None:
        uri = meta.get("ui/resourceUri")
    if isinstance(uri, str) and uri.startswith(UI_SCHEME) and len(uri) <= MAX_URI_LENGTH:
        return uri
    return None


def tool_visibility(tool: Any) -> FrozenSet[str]:
    """Who may see and call the tool: a set of ``"model"`` and ``"app"``.

    ``_meta.ui.visibility`` absent (or no ``_meta.ui`` at all): both, the specification's
    default. A list of strings: the known ones it names (an empty list: nobody). Anything
    else (a string, a list holding a non-string): nobody (see :func:`visibility_malformed`);
    a server that meant to restrict its tool and wrote it wrong is taken at its most
    restrictive.
    """
    meta = _meta_of(tool)
    ui = meta.get("ui") if meta is not None else None
    if not isinstance(ui, Mapping) or "visibility" not in ui:
        return _BOTH
    visibility = ui["visibility"]
    if isinstance(visibility, list) and all(isinstance(item, str) for item in visibility):
        return _BOTH.intersection(visibility)
    return _NOBODY


def visibility_malformed(tool: Any) -> bool:
    """Whether the tool's ``_meta.ui.visibility`` is present but not a list of strings
    (so :func:`tool_visibility` is empty): what a caller logs, once."""
    meta = _meta_of(tool)
    ui = meta.get("ui") if meta is not None else None
    if not isinstance(ui, Mapping) or "visibility" not in ui:
        return False
    visibility = ui["visibility"]
    return not (isinstance(visibility, list) and all(isinstance(i, str) for i in visibility))


def model_visible(tool: Any) -> bool:
    """Whether a model may be offered the tool (its visibility holds ``"model"``)."""
    return "model" in tool_visibility(tool)


def app_callable(tool: Any) -> bool:
    """Whether an app of the tool's server may call it (its visibility holds ``"app"``)."""
    return "app" in tool_visibility(tool)
