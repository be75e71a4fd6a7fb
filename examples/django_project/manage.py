#!/usr/bin/env python
"""Django's command-line utility for the example project.

    python manage.py runserver          # the threaded development server
    gunicorn --workers 2 --threads 8 mcpsite.wsgi   # pre-forked workers
"""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcpsite.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
