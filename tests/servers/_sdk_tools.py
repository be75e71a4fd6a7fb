"""Tools that more than one of the official SDK's test servers offers, added to a server
by a call (the servers run as scripts from this folder, so they import it by name)."""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer


def add_grow(mcp: MCPServer) -> None:
    """``grow(name)``: adds a tool ``name`` (answering ``"extra"``) and tells
    ``subscriptions/listen`` subscribers the tool list changed."""

    @mcp.tool()
    async def grow(name: str, ctx: Context) -> str:
        """Add a tool named `name` and tell subscribers the tool list changed."""

        def extra() -> str:
            return "extra"

        mcp.add_tool(extra, name=name, description="added at run time")
        await ctx.notify_tools_changed()
        return f"added {name}"
