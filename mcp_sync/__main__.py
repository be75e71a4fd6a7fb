"""``python -m mcp_sync``: the command line."""

import sys

from .cli import main

sys.exit(main())
