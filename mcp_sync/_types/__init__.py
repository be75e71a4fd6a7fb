"""The protocol's pydantic models (:mod:`mcp_sync.types` is their public face, and says
when each module here is loaded), their parsing from server data and their Jupyter display.
"""
