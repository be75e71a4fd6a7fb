"""The Streamable HTTP transport (:mod:`._transport`, the MCP session, over the exchange
engine of :mod:`._exchange`), and the ``requests`` and urllib3 plumbing it shares with the
legacy HTTP+SSE transport (``_requests``, ``_interrupt``, ``_bodies``, ``_responses``,
``_sse``, ``_deadlines``)."""

from ._transport import (
    HttpTransport,
)

__all__ = [
    "HttpTransport",
]
