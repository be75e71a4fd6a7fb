"""The WSGI entry point (``gunicorn mcpsite.wsgi``)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcpsite.settings")
application = get_wsgi_application()
