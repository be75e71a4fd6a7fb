"""An example Django project whose views call MCP tools (see ``views.py``)."""
