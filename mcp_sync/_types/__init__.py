"""The protocol's pydantic models (:mod:`mcp_sync.types` is their public face, and says
when each module here is loaded) and their Jupyter display. They know no exception: the
parsing of server data into them, which raises :class:`~mcp_sync.ProtocolError`, is
:mod:`mcp_sync._parsing`'s.
"""
