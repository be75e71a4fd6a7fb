"""Django in the test process: configured once, from the example project's settings,
whichever test module imports Django first (the settings of a process are set once)."""

from __future__ import annotations

import sys

import django
from django.conf import settings

from .._procs import EXAMPLES

PROJECT = EXAMPLES / "django_project"


def setup_django() -> None:
    """Configure Django once per test process from the example project's settings; a
    test that needs other settings overrides them (``override_settings``)."""
    if settings.configured:
        return
    if str(PROJECT) not in sys.path:
        sys.path.insert(0, str(PROJECT))
    from mcpsite import settings as example_settings

    settings.configure(**{name: getattr(example_settings, name)
                          for name in dir(example_settings) if name.isupper()})
    django.setup()
