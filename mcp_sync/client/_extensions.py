"""The client's extensions: what it advertises in each era, what the server advertised,
and the server's messages handed to the extension they belong to.

:class:`ClientExtensions` is one client's: the tasks extension first (every client's,
made with the connection so that the task statuses it claims reach the connection's
tasks), then the user's (``Client(extensions=...)``, see :mod:`mcp_sync.extensions`).
The negotiation asks it what to advertise (:meth:`ClientExtensions.advertised`), the
callbacks hand it every notification (:meth:`ClientExtensions.notified`) and the tool
calls an unusual result (:meth:`ClientExtensions.claimant`). This module imports no
client.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Protocol, Sequence, Tuple

from .._protocol import SESSION_ERA, STATELESS_ERA
from .._util.text import excerpt
from ..extensions import Extension, TasksExtension, server_extensions

if TYPE_CHECKING:
    from .._protocol.agreement import Agreement

__all__ = ["ClientExtensions", "ExtensionsConnection"]

# The client's logger: these messages are the client's.
log = logging.getLogger("mcp_sync.client")

# Results every call knows: no extension is asked about them.
_PLAIN_RESULT_TYPES = (None, "complete")


class TaskStatuses(Protocol):
    """The client's task waiters, told of ``notifications/tasks/status``."""

    def status(self, params: Optional[Dict[str, Any]]) -> None: ...


class ExtensionsConnection(Protocol):
    """What the extensions use of the client's connection (read at each use)."""

    @property
    def name(self) -> str: ...

    @property
    def agreement(self) -> Optional[Agreement]: ...

    @property
    def tasks(self) -> TaskStatuses: ...

    def require_agreement(self) -> Agreement:
        """The agreement (``ClientNotConnected`` before the first connect)."""


class _ConnectionTasks(TasksExtension):
    """The tasks extension of one connection: the statuses it claims go to the
    connection's task waiters."""

    def __init__(self, connection: ExtensionsConnection) -> None:
        super().__init__()
        self._connection = connection

    def on_notification(self, method: str, params: Optional[Dict[str, Any]]) -> None:
        self._connection.tasks.status(params)


class ClientExtensions:
    """One client's extensions; see the module docstring. Can be shared between threads
    (the server's map is replaced whole, once per agreement)."""

    def __init__(self, connection: ExtensionsConnection, given: Sequence[Extension]) -> None:
        self._connection = connection
        #: The tasks extension, every client's.
        self.tasks: TasksExtension = _ConnectionTasks(connection)
        #: The user's extensions, in the order given.
        self.given: Tuple[Extension, ...] = tuple(given)
        self.all: Tuple[Extension, ...] = (self.tasks, *self.given)
        self._by_id = {extension.identifier: extension for extension in self.all}
        # The given extensions that may claim a result (those that override
        # claims_result): only with one do plain tool results get looked at.
        self.claim_results = tuple(
            extension for extension in self.given
            if type(extension).claims_result is not Extension.claims_result)
        # The server's extensions, with the agreement they were read from.
        self._server: Tuple[Optional[Agreement], Mapping[str, Mapping[str, Any]]] = (None, {})

    def advertised(self, stateless: bool) -> Dict[str, Dict[str, Any]]:
        """What the client advertises under ``capabilities.extensions`` in an era."""
        era = STATELESS_ERA if stateless else SESSION_ERA
        advertised: Dict[str, Dict[str, Any]] = {}
        for extension in self.all:
            settings = extension.advertised(era)
            if settings is not None:
                advertised[extension.identifier] = settings
        return advertised

    def declared(self, identifier: str, era: Optional[str] = None) -> bool:
        """Whether the client advertises ``identifier`` (in ``era``; None: in either)."""
        extension = self._by_id.get(identifier)
        if extension is None:
            return False
        eras = (era,) if era is not None else (SESSION_ERA, STATELESS_ERA)
        return any(extension.advertised(one) is not None for one in eras)

    def of_server(self) -> Mapping[str, Mapping[str, Any]]:
        """What the server advertised under ``capabilities.extensions``, bounded (see
        :func:`mcp_sync.extensions.server_extensions`); read once per agreement.

        Raises:
            ClientNotConnected: the client has not connected yet.
        """
        agreement = self._connection.require_agreement()
        seen, extensions = self._server
        if seen is not agreement:
            extensions = server_extensions(agreement.capabilities, self._connection.name)
            self._server = (agreement, extensions)
        return extensions

    def agreed(self, identifier: str) -> bool:
        """Whether both sides advertised ``identifier`` on this connection's agreement.

        Raises:
            ClientNotConnected: the client has not connected yet.
        """
        agreement = self._connection.require_agreement()
        return (identifier in self.of_server()
                and self.declared(identifier, agreement.era))

    def notified(self, method: str, params: Optional[Dict[str, Any]]) -> bool:
        """Hand a notification to every extension that claims it (the callback thread);
        True if one did. An extension's exception is logged."""
        claimed = False
        for extension in self.all:
            try:
                if not extension.claims_notification(method):
                    continue
                claimed = True
                extension.on_notification(method, params)
            except Exception:
                log.exception("extension %s raised for %s from %s", extension.identifier,
                              excerpt(method, 100), self._connection.name)
        return claimed

    def claimant(self, method: str, result: Any) -> Optional[Extension]:
        """The given extension, agreed on with the server, that claims ``result`` (an
        answer to ``method`` whose ``resultType`` is neither absent nor ``"complete"``),
        or None. An extension whose ``claims_result`` raises is logged and passed over."""
        if not self.claim_results or not isinstance(result, dict):
            return None
        if result.get("resultType") in _PLAIN_RESULT_TYPES:
            return None
        for extension in self.claim_results:
            try:
                if self.agreed(extension.identifier) and extension.claims_result(method,
                                                                                 result):
                    return extension
            except Exception:
                log.exception("extension %s raised looking at a %s result from %s",
                              extension.identifier, excerpt(method, 100),
                              self._connection.name)
        return None

    def taken(self, method: str, result: Any) -> Any:
        """``result``, or what the given extension that claims it makes of it
        (:meth:`Extension.on_result`, whose exception raises)."""
        extension = self.claimant(method, result)
        return result if extension is None else extension.on_result(method, result)
