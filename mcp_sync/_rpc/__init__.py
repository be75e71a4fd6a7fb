"""The JSON-RPC session layer: :class:`~mcp_sync._rpc.session.RpcSession` (ids, pending
futures, deadlines, progress, cancellation, the dispatch and callback threads, the handler
pool), its sans-I/O core (:mod:`.core`) and its bounded queues (:mod:`.queues`).

Below the client, above the transports: it knows JSON-RPC and the agreement it is handed,
never an MCP method's meaning.
"""
