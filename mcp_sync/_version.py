"""The package's version, written once: ``mcp_sync.__version__`` and the distribution's
metadata (pyproject.toml reads it from here) both come from this line."""

__version__ = "0.1.0"
