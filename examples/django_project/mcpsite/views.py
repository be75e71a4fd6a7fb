"""Views that call MCP tools on the process's shared client.

Every answer is JSON, errors included (``{"error": ..., "message": ...}``): 400 for a
request the view cannot use (``/add?a=x``), 502 when the MCP server failed or refused
the call, 504 when it timed out.
"""

import functools
import math
import os
from typing import Callable

from django.http import HttpRequest, JsonResponse

import mcp_sync
from mcp_sync.contrib.django import get_client, get_manager


class BadInput(Exception):
    """A request the view cannot use: answered 400 with the reason."""


def number(request: HttpRequest, name: str) -> float:
    """The query argument ``name`` as a finite number (0 when absent)."""
    text = request.GET.get(name, "0")
    try:
        value = float(text)
    except ValueError:
        raise BadInput(f"{name} must be a number, not {text[:40]!r}") from None
    if not math.isfinite(value):  # nan and inf parse, but no JSON number holds them
        raise BadInput(f"{name} must be a finite number, not {text[:40]!r}")
    return value


def json_errors(view: Callable[[HttpRequest], JsonResponse]
                ) -> Callable[[HttpRequest], JsonResponse]:
    """Answer the view's bad input and MCP errors in JSON, not Django's HTML pages."""

    @functools.wraps(view)
    def wrapped(request: HttpRequest) -> JsonResponse:
        try:
            return view(request)
        except BadInput as error:
            return JsonResponse({"error": "BadRequest", "message": str(error)}, status=400)
        except mcp_sync.MCPError as error:  # down (being reconnected), timed out, refused
            status = 504 if isinstance(error, mcp_sync.RequestTimeout) else 502
            return JsonResponse({"error": type(error).__name__, "message": str(error)},
                                status=status)

    return wrapped


@json_errors
def add(request: HttpRequest) -> JsonResponse:
    """Add ``a`` and ``b`` with the demo server's ``add`` tool."""
    a, b = number(request, "a"), number(request, "b")
    client = get_client("demo")  # per request: cheap, and survives a reconnect
    result = client.call_tool("add", {"a": a, "b": b})
    return JsonResponse({
        "sum": (result.structured or {}).get("sum"),
        "worker": os.getpid(),  # which process answered (several under gunicorn)
        "server": getattr(client.transport, "pid", None),  # that process's demo server
    })


@json_errors
def tools(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"tools": [tool.name for tool in get_client("demo").list_tools()]})


@json_errors
def status(request: HttpRequest) -> JsonResponse:
    servers = get_manager().status()
    return JsonResponse({"worker": os.getpid(),
                         "servers": {name: s.to_dict() for name, s in servers.items()}})
