"""The Django app config of :mod:`mcp_sync.contrib.django`."""

from __future__ import annotations

from typing import Any

from django.apps import AppConfig


class MCPConfig(AppConfig):  # type: ignore[misc]  # Django ships no type hints
    """Checks ``MCP_SERVERS`` at start-up; connects nothing until first use."""

    name = "mcp_sync.contrib.django"
    label = "mcp_sync"
    verbose_name = "MCP servers (mcp_sync)"

    def ready(self) -> None:
        from django.conf import settings
        from django.core.exceptions import ImproperlyConfigured
        from django.core.signals import setting_changed

        from ...config import ConfigError, load_config
        from . import load_settings

        if getattr(settings, "MCP_SERVERS", None) is not None:
            source, _ = load_settings()
            try:
                load_config(source)
            except ConfigError as exc:
                raise ImproperlyConfigured(f"MCP_SERVERS: {exc}") from exc
        setting_changed.connect(_settings_changed, dispatch_uid="mcp_sync.settings_changed")


def _settings_changed(*, setting: str, **kwargs: Any) -> None:
    # override_settings(MCP_SERVERS=...) in a test: the next use builds from the new value.
    if setting in ("MCP_SERVERS", "MCP_OPTIONS"):
        from . import close

        close()
