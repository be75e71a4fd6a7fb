"""Settings of the example project: the usual minimum, plus ``MCP_SERVERS``."""

import sys

SECRET_KEY = "example-only-not-secret"  # an example: use your own, from the environment
DEBUG = True
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]

INSTALLED_APPS = [
    "mcp_sync.contrib.django",  # checks MCP_SERVERS at start-up; connects on first use
]
MIDDLEWARE = []
ROOT_URLCONF = "mcpsite.urls"
WSGI_APPLICATION = "mcpsite.wsgi.application"
DATABASES = {}  # the example needs none
USE_TZ = True
STATIC_URL = "static/"

# The servers, in the mcpServers format (the same as Claude Desktop's, Cursor's, VS Code's
# mcp.json). Here: the demo server that ships inside mcp_sync, run by this interpreter.
MCP_SERVERS = {
    "demo": {"command": sys.executable, "args": ["-m", "mcp_sync.demo_server"]},
}
# Optional: arguments for mcp_sync.Manager and its clients.
MCP_OPTIONS = {"timeout": 20}
