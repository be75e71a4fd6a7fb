"""Extensions: what a client advertises under ``capabilities.extensions``, and owns.

An MCP extension (SEP-2133) is named by an identifier of the ``_meta`` key form with a
mandatory prefix (``com.example/name``, ``io.modelcontextprotocol/tasks``); each side
advertises the extensions it supports under ``capabilities.extensions[identifier]``, with
that extension's settings (an object; ``{}``: support with no settings). An extension is
in use when both sides advertised it.

:class:`Extension` is the seam: an identifier, the settings it advertises in each era (the
session era's ``initialize`` and the 2026-07-28 era's capabilities in every request's
``_meta``), and two hooks that recognise what belongs to it: the server's notifications
(:meth:`Extension.claims_notification`, then :meth:`Extension.on_notification` on the
client's callback thread) and unusual ``tools/call`` results
(:meth:`Extension.claims_result`, then :meth:`Extension.on_result`). A client is given
extensions with ``Client(extensions=[...])`` (``connect()`` and a ``Manager`` pass the
keyword on), or a dict shorthand ``{"com.example/x": {"setting": 1}}``. The tasks
extension (:class:`TasksExtension`) is every client's, registered by default;
``mcp_sync.apps.AppsExtension`` declares MCP Apps, when asked for.

What a server advertises is untrusted: :func:`server_extensions` keeps at most
:data:`MAX_SERVER_EXTENSIONS` entries whose identifier is valid and whose settings are an
object of at most :data:`MAX_SETTINGS_BYTES` bytes (compact JSON), and logs what it
skips.
"""

from __future__ import annotations

import json
import logging
from types import MappingProxyType
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ._protocol import STATELESS_ERA, TASKS_EXTENSION
from ._util.text import excerpt, pattern

__all__ = [
    "MAX_IDENTIFIER_LENGTH",
    "MAX_SERVER_EXTENSIONS",
    "MAX_SETTINGS_BYTES",
    "Extension",
    "TasksExtension",
    "check_identifier",
    "extensions_of",
    "server_extensions",
]

log = logging.getLogger(__name__)

#: The longest identifier taken, from the user or a server.
MAX_IDENTIFIER_LENGTH = 256
#: The most entries of a server's ``capabilities.extensions`` kept (the rest skipped).
MAX_SERVER_EXTENSIONS = 64
#: The largest settings object of one extension kept (bytes of compact JSON), the
#: user's or a server's.
MAX_SETTINGS_BYTES = 16 * 1024

# The _meta key rules: a prefix of dot-separated labels (a letter first, a letter or
# digit last, letters, digits and hyphens between), a slash, and a name (a letter or
# digit at both ends; letters, digits, hyphens, underscores and dots between).
_LABEL = r"[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_IDENTIFIER = rf"{_LABEL}(?:\.{_LABEL})*/{_NAME}"


def _valid(identifier: Any) -> bool:
    return (isinstance(identifier, str) and len(identifier) <= MAX_IDENTIFIER_LENGTH
            and pattern(_IDENTIFIER).fullmatch(identifier) is not None)


def check_identifier(identifier: Any) -> str:
    """``identifier`` if it is an extension identifier (``vendor-prefix/name``: dotted
    labels, a slash, a name; at most 256 characters).

    Raises:
        ValueError: it is not; the message says what the form is.
    """
    if _valid(identifier):
        return str(identifier)
    raise ValueError(
        f"{excerpt(repr(identifier), 100)} is not an extension identifier: expected "
        "'vendor-prefix/name', a prefix of dot-separated labels (each a letter first, "
        "letters, digits and hyphens, a letter or digit last), a slash, and a name "
        "(letters, digits, '-', '_', '.'; a letter or digit at both ends), such as "
        "'com.example/my-extension'"
    )


def _settings_copy(settings: Any) -> Optional[Dict[str, Any]]:
    """A copy of ``settings`` through JSON if it is an object of at most
    MAX_SETTINGS_BYTES, else None."""
    if not isinstance(settings, Mapping):
        return None
    try:
        text = json.dumps(settings, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        return None
    if len(text.encode("utf-8")) > MAX_SETTINGS_BYTES:
        return None
    copied: Dict[str, Any] = json.loads(text)
    return copied


class Extension:
    """One extension as a client supports it. Use it as it is (an identifier and its
    settings, advertised in both eras) or subclass it to advertise otherwise or to
    recognise the server's messages of the extension.

    One object may serve many clients at once (a ``Manager`` gives it to each of its
    clients): its hooks run on each client's threads and keep no state of a client's
    unless the subclass guards it.

    Args:
        identifier: ``vendor-prefix/name`` (see :func:`check_identifier`).
        settings: the object advertised under ``capabilities.extensions[identifier]``
            (JSON, at most 16 KiB; default ``{}``: support with no settings).

    Raises:
        ValueError: a malformed identifier, or settings that are not a JSON object
            within the bound.
    """

    def __init__(self, identifier: str, settings: Optional[Mapping[str, Any]] = None) -> None:
        self.identifier = check_identifier(identifier)
        copied = _settings_copy({} if settings is None else settings)
        if copied is None:
            raise ValueError(f"the settings of extension {self.identifier} must be a JSON "
                             f"object of at most {MAX_SETTINGS_BYTES} bytes")
        self.settings: Mapping[str, Any] = MappingProxyType(copied)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.identifier!r}, {dict(self.settings)!r})"

    def advertised(self, era: str) -> Optional[Dict[str, Any]]:
        """The settings advertised in ``era`` (``"session"``: in ``initialize``;
        ``"stateless"``: in every request's capabilities), or None to advertise nothing
        in that era. By default the settings, in both eras."""
        copied: Dict[str, Any] = json.loads(json.dumps(dict(self.settings)))
        return copied  # a deep copy for the wire

    def claims_notification(self, method: str) -> bool:
        """Whether the server's notification ``method`` is this extension's (then
        :meth:`on_notification` gets it). By default none is."""
        return False

    def on_notification(self, method: str, params: Optional[Dict[str, Any]]) -> None:
        """A notification this extension claims, on the client's callback thread (the
        client's ``notification_handler`` sees it too). An exception is logged."""

    def claims_result(self, method: str, result: Any) -> bool:
        """Whether ``result``, the server's answer to ``method``, is this extension's: a
        ``tools/call`` result whose ``resultType`` is neither absent nor ``"complete"``
        is offered to the client's extensions both sides agreed on. By default none is."""
        return False

    def on_result(self, method: str, result: Dict[str, Any]) -> Any:
        """What the call answers instead of a claimed ``result`` (on the calling thread,
        or the handler pool for a future): for ``tools/call``, a ``CallToolResult`` or a
        dict parsed and checked as one. By default ``result`` itself."""
        return result


class TasksExtension(Extension):
    """The tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663): tasks in the
    2026-07-28 era. Advertised (``{}``) in that era only (the session era declares tasks
    as the ``tasks`` capability); it claims a ``tools/call`` answered with a task
    (``resultType: "task"``) and ``notifications/tasks/status``. Every client has one,
    registered by default; the client follows the tasks it claims."""

    def __init__(self) -> None:
        # The specification's identifier: nothing to check (nor a pattern to compile).
        self.identifier = TASKS_EXTENSION
        self.settings = MappingProxyType({})

    def advertised(self, era: str) -> Optional[Dict[str, Any]]:
        return {} if era == STATELESS_ERA else None

    def claims_notification(self, method: str) -> bool:
        return method == "notifications/tasks/status"

    def claims_result(self, method: str, result: Any) -> bool:
        return (method == "tools/call" and isinstance(result, dict)
                and result.get("resultType") == "task")


ExtensionsArgument = Union[Sequence[Union[Extension, str]], Mapping[str, Mapping[str, Any]],
                           None]


def extensions_of(given: ExtensionsArgument) -> Tuple[Extension, ...]:
    """The extensions of ``Client(extensions=...)``: a sequence of :class:`Extension`
    (or bare identifiers, advertised with ``{}``), or a dict of identifier to settings.

    Raises:
        ValueError: a malformed identifier or settings, an identifier given twice, or the
            tasks extension's (every client has it already).
        TypeError: something else than an extension.
    """
    if given is None:
        return ()
    items: List[Extension] = []
    if isinstance(given, Mapping):
        items = [Extension(identifier, settings) for identifier, settings in given.items()]
    elif isinstance(given, (str, bytes)):
        raise TypeError("extensions must be a sequence of Extension or a dict of "
                        "identifier to settings, not a string")
    else:
        for item in given:
            if isinstance(item, Extension):
                items.append(item)
            elif isinstance(item, str):
                items.append(Extension(item))
            else:
                raise TypeError(f"not an extension: {excerpt(repr(item), 100)} (give "
                                "mcp_sync.extensions.Extension objects or identifiers)")
    seen = {TASKS_EXTENSION}
    for extension in items:
        if extension.identifier in seen:
            raise ValueError(
                f"extension {extension.identifier} given twice" if extension.identifier
                != TASKS_EXTENSION else f"{TASKS_EXTENSION} is every client's already")
        seen.add(extension.identifier)
    return tuple(items)


def server_extensions(capabilities: Any, server: str) -> Mapping[str, Mapping[str, Any]]:
    """What a server advertised under ``capabilities.extensions``, bounded: at most
    MAX_SERVER_EXTENSIONS entries with a valid identifier and settings that are an object
    within MAX_SETTINGS_BYTES, copied and read-only. What is skipped is logged (WARNING,
    once per call), with the server's text excerpted."""
    advertised = capabilities.get("extensions") if isinstance(capabilities, dict) else None
    if advertised is None:
        return MappingProxyType({})
    if not isinstance(advertised, dict):
        log.warning("%s advertised capabilities.extensions that is not an object; "
                    "ignored", server)
        return MappingProxyType({})
    kept: Dict[str, Mapping[str, Any]] = {}
    skipped: List[str] = []
    for identifier, settings in advertised.items():
        if len(kept) >= MAX_SERVER_EXTENSIONS:
            skipped.append(f"{len(advertised) - len(kept) - len(skipped)} past the first "
                           f"{MAX_SERVER_EXTENSIONS}")
            break
        copied = _settings_copy(settings) if _valid(identifier) else None
        if copied is None:
            skipped.append(excerpt(repr(identifier), 60))
            continue
        kept[identifier] = MappingProxyType(copied)
    if skipped:
        log.warning("%s advertised extensions that were skipped (a malformed identifier, "
                    "settings not an object within %d bytes, or too many): %s", server,
                    MAX_SETTINGS_BYTES, excerpt(", ".join(skipped[:10]), 600))
    return MappingProxyType(kept)

