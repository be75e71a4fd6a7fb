"""The :class:`Agreement`: what a connection settled on with its server, in one value.

It is the one home of the era and the protocol version, the server's info,
capabilities and instructions, the ``_meta`` envelope every request carries in the
stateless era, and what follows from them for the wire (which headers a request
mirrors, whether the server keeps an MCP session, how a request is cancelled). It is
immutable: a change (another version after a -32022, a new log level in the envelope, a
renewed session) is a new agreement, handed down once through
:meth:`RpcSession.agree <mcp_sync._rpc.session.RpcSession.agree>` to the session and its transport.
Nothing below the client reads ``_meta`` or compares era names: they ask the agreement.
Negotiation (``client/_negotiation.py``) makes it.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Mapping, Optional, Tuple

from . import (
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    SESSION_ERA,
    STATELESS_ERA,
)
from .headers import encode_header_value

__all__ = ["Agreement"]

# Requests whose name (or URI, or task id: the tasks extension) the stateless era
# mirrors into ``Mcp-Name``.
_NAMED_BY = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}


@dataclasses.dataclass(frozen=True)
class Agreement:
    """What this connection settled on with its server. Immutable; its dicts are never
    mutated (a change is a new agreement: :meth:`replace`).

    A *proposal* (``settled=False``) is what the client offers while it negotiates: the
    stateless probe (``server/discover`` with its envelope) or an ``initialize`` in
    flight (``version`` still ``None``). It frames those requests like any agreement.
    """

    era: str
    version: Optional[str]
    server_info: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    capabilities: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    instructions: Optional[str] = None
    #: The versions the server listed (``server/discover``); empty in the session era.
    supported_versions: Tuple[str, ...] = ()
    #: Merged into every request's ``params._meta`` (stateless era); None otherwise.
    envelope: Optional[Mapping[str, Any]] = None
    settled: bool = True
    #: The server's result as it sent it (``initialize`` or ``server/discover``).
    result: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def stateless(self) -> bool:
        """The stateless era: no handshake, an envelope on every request."""
        return self.era == STATELESS_ERA

    @property
    def keeps_session(self) -> bool:
        """The server keeps an MCP session (the session era): over HTTP that means an
        ``Mcp-Session-Id``, a GET stream for the server's own messages, and a 404 on
        that id when the server forgot it."""
        return self.era == SESSION_ERA

    @property
    def cancels_by_closing(self) -> bool:
        """A request is cancelled by closing its stream (stateless era over HTTP), not
        with ``notifications/cancelled``."""
        return self.era == STATELESS_ERA

    @property
    def errors_in_status(self) -> bool:
        """A refused request comes back as an HTTP 4xx/5xx whose body is the JSON-RPC
        error (stateless era)."""
        return self.era == STATELESS_ERA

    @property
    def resumable(self) -> bool:
        """A dropped response stream may be resumed with ``Last-Event-ID`` (session era)."""
        return self.era == SESSION_ERA

    @property
    def protocol_header(self) -> Optional[str]:
        """The ``MCP-Protocol-Version`` every message carries, once one is agreed."""
        return self.version if self.settled or self.stateless else None

    def request_headers(self, method: str, params: Any) -> Dict[str, str]:
        """The headers a request mirrors (stateless era): its version, its method, and
        its tool or prompt name, resource URI or task id. Empty in the session era."""
        if not self.stateless or self.version is None:
            return {}
        headers = {"MCP-Protocol-Version": self.version, "Mcp-Method": method}
        field = _NAMED_BY.get(method)
        name = params.get(field) if field is not None and isinstance(params, dict) else None
        if isinstance(name, str):
            headers["Mcp-Name"] = encode_header_value(name)
        return headers

    def replace(self, **changes: Any) -> Agreement:
        """A copy with ``changes`` (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)

    def with_version(self, version: str) -> Agreement:
        """The same agreement at another version of its era (a -32022 switch)."""
        envelope = None
        if self.envelope is not None:
            envelope = {**self.envelope, META_PROTOCOL_VERSION: version}
        return self.replace(version=version, envelope=envelope)

    def with_log_level(self, level: str) -> Agreement:
        """The same stateless agreement with ``level`` in its envelope."""
        if self.envelope is None:
            return self
        return self.replace(envelope={**self.envelope, META_LOG_LEVEL: level})
