"""Views that call MCP tools on the process's shared client."""

import os

from django.http import HttpRequest, JsonResponse

import mcp_sync
from mcp_sync.contrib.django import get_client, get_manager


def add(request: HttpRequest) -> JsonResponse:
    """Add ``a`` and ``b`` with the demo server's ``add`` tool."""
    a = float(request.GET.get("a", 0))
    b = float(request.GET.get("b", 0))
    try:
        client = get_client("demo")  # per request: cheap, and survives a reconnect
        result = client.call_tool("add", {"a": a, "b": b})
    except mcp_sync.MCPError as error:  # down (being reconnected), timed out, or refused
        return JsonResponse({"error": type(error).__name__, "message": str(error)}, status=502)
    return JsonResponse({
        "sum": (result.structured or {}).get("sum"),
        "worker": os.getpid(),  # which process answered (several under gunicorn)
        "server": getattr(client.transport, "pid", None),  # that process's demo server
    })


def tools(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"tools": [tool.name for tool in get_client("demo").list_tools()]})


def status(request: HttpRequest) -> JsonResponse:
    servers = get_manager().status()
    return JsonResponse({"worker": os.getpid(),
                         "servers": {name: s.to_dict() for name, s in servers.items()}})
