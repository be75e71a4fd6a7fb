"""The JSON-RPC session layer: :class:`~mcp_sync._rpc.session.RpcSession` and its parts.

* :mod:`.session`: ``RpcSession``, the face the client uses; it makes the parts below,
  starts, renames and stops them, and holds the handler pool they share.
* :mod:`.link`: what the parts share of the transport (name, agreement, closed state).
* :mod:`.outbound`: the client's requests and notifications: ids, deadlines, progress
  tokens, cancellation.
* :mod:`.dispatch`: the reader's hand-off and the dispatch thread's routing.
* :mod:`.serving`: the server's requests (handlers on the pool, the reply thread).
* :mod:`.notifications`: the server's notifications and the callback thread.
* :mod:`.observer`: the ``RequestObserver`` seam (tracing and metrics).
* :mod:`.core`: the sans-I/O core (classification, ids, the pending-request table).
* :mod:`.queues`: the bounded inbox and callback queue.

Below the client, above the transports: it knows JSON-RPC and the agreement it is handed,
never an MCP method's meaning.
"""
