"""Transports: how messages reach a server (stdio, Streamable HTTP, legacy SSE, memory)."""
