"""The URLconf of tests/places/test_apps_django.py: a page showing an app, the app's
frame and bridge (mcp_sync.contrib.django.views.app_urls), and a log-in view; the
site's own decorator, a cookie check standing in for ``login_required``, wraps all but
the log-in."""

from __future__ import annotations

import functools
import json
from typing import Any, Callable

from django.http import HttpRequest, HttpResponse
from django.urls import include, path

from mcp_sync.contrib.django.views import app_urls, render_app


def login_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @functools.wraps(view)
    def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.COOKIES.get("session") != "alice":
            return HttpResponse("log in first", status=401)
        return view(request, *args, **kwargs)

    return checked


def login(request: HttpRequest) -> HttpResponse:
    response = HttpResponse("welcome")
    response.set_cookie("session", "alice", samesite="Lax")
    return response


@login_required
def page(request: HttpRequest, tool: str) -> HttpResponse:
    return render_app(request, "board", tool, json.loads(request.GET.get("arguments", "{}")))


urlpatterns = [
    path("login", login),
    path("app/<str:tool>", page),
    path("mcp-apps/", include(app_urls(decorators=[login_required]))),
]
