"""One :class:`~mcp_sync.Manager` per process, built on first use: what the integrations
share (the web frameworks' and Celery's).

A web app serves requests on many threads (a threaded dev server, gunicorn's ``gthread``
workers) and often in many processes forked from one parent (gunicorn's pre-fork model).
:class:`ProcessManager` gives every thread of a process the same manager, and every
process its own:

* the first :meth:`~ProcessManager.get` builds and connects the manager; threads arriving
  meanwhile wait for it (one manager, one server child per configured stdio server);
* in a process forked after that, the parent's manager is dropped untouched (its server
  children, sockets and threads belong to the parent) and the child builds its own on
  first use;
* at interpreter exit every manager this process built is closed (before the stdio
  transport's own exit hook, which would stop the children anyway).
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import weakref
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from ..config._format import Source
from ..manager import Manager

__all__ = ["ProcessManager", "server_name", "servers_source"]

log = logging.getLogger(__name__)

#: Returns ``(config, manager options)``; called when the manager is built.
Loader = Callable[[], Tuple[Source, Dict[str, Any]]]

# How long the exit hook waits for a thread that is building a manager right now.
_EXIT_LOCK_TIMEOUT = 10.0

_instances: weakref.WeakSet[ProcessManager] = weakref.WeakSet()


def servers_source(value: Any, setting: str = "MCP_SERVERS") -> Source:
    """The configuration source for an ``MCP_SERVERS`` setting.

    Accepts the ``mcpServers`` mapping itself (``{"name": {"command": ...}}``), a whole
    document (``{"mcpServers": {...}}``), a path to an ``mcp.json`` file, or a
    :class:`~mcp_sync.config.Config`.

    Raises:
        ValueError: the setting is missing or of another type.
    """
    from ..config import Config

    if value is None:
        raise ValueError(f"{setting} is not set: give it the servers in the mcpServers format, "
                         'e.g. {"demo": {"command": "python", "args": ["server.py"]}}')
    if isinstance(value, (str, os.PathLike, Config)):
        return value
    if isinstance(value, Mapping):
        if "mcpServers" in value or "servers" in value:
            return value
        return {"mcpServers": dict(value)}
    raise ValueError(f"{setting} must be a mapping of servers (the mcpServers format) or a "
                     f"path to an mcp.json file, not {type(value).__name__}")


def server_name(manager: Manager, name: Optional[str], setting: str = "MCP_SERVERS") -> str:
    """``name``, or the only configured server's name when ``name`` is None.

    Raises:
        ValueError: ``name`` is None and there is not exactly one server.
    """
    if name is not None:
        return name
    servers = manager.servers
    if len(servers) != 1:
        raise ValueError(f"name the server: {setting} has {len(servers)} "
                         f"({', '.join(servers) or 'none'})")
    return servers[0]


class ProcessManager:
    """A :class:`~mcp_sync.Manager` for this process, built by the first :meth:`get`.

    Can be shared between threads. ``loader`` is called (once per build) for the
    configuration and the manager's keyword arguments, so settings are read at first use,
    not at import.
    """

    def __init__(self, loader: Loader, label: str = "mcp_sync") -> None:
        self._loader = loader
        self.label = label
        # Guards _manager and _pid; held while a manager is built and connected, so that
        # concurrent first requests wait for one manager instead of building several.
        self._lock = threading.Lock()
        self._manager: Optional[Manager] = None
        self._pid = os.getpid()
        _instances.add(self)

    def __repr__(self) -> str:
        state = "built" if self._manager is not None and self._owned() else "not built"
        return f"<ProcessManager {self.label} {state}>"

    def _owned(self) -> bool:
        return self._pid == os.getpid()

    @property
    def built(self) -> bool:
        """True when this process has a manager (a parent's, inherited, does not count)."""
        return self._manager is not None and self._owned()

    def get(self) -> Manager:
        """This process's manager, connected; built on the first call.

        Blocks while another thread builds it. A server that could not be reached does not
        fail this call: the manager keeps retrying it, and using it raises
        :class:`~mcp_sync.manager.ServerUnavailable`.

        Raises:
            ConfigError, ValueError: the configuration is invalid.
        """
        manager = self._manager
        if manager is not None and self._owned():
            return manager
        with self._lock:
            if not self._owned():
                self._forget_parent()
            if self._manager is None:
                config, options = self._loader()
                built = Manager(config, **options)
                try:
                    built.connect()
                except BaseException:
                    built.close()
                    raise
                self._manager = built
                log.debug("%s: built %r in process %s", self.label, built, self._pid)
            return self._manager

    def close(self, timeout: Optional[float] = None) -> None:
        """Close this process's manager (stopping its servers); the next :meth:`get`
        builds a new one. Idempotent. In a forked child the parent's manager is only
        forgotten.

        ``timeout`` bounds the wait for a thread that is building the manager right now
        (``None``: wait for it).
        """
        if not self._lock.acquire(timeout=-1 if timeout is None else timeout):
            log.warning("%s: a manager is still being built; not closing it", self.label)
            return
        try:
            if not self._owned():
                self._forget_parent()
                return
            manager, self._manager = self._manager, None
        finally:
            self._lock.release()
        if manager is not None:
            manager.close()

    def _forget_parent(self) -> None:
        """In a forked child: drop the parent's manager without touching it."""
        if self._manager is not None:
            log.debug("%s: process %s was forked from %s; not using the parent's manager",
                      self.label, os.getpid(), self._pid)
        self._manager = None
        self._pid = os.getpid()


def _after_fork_in_child() -> None:
    # The parent's lock may have been held by a thread that does not exist here.
    for instance in list(_instances):
        instance._lock = threading.Lock()
        instance._forget_parent()


def _close_all_at_exit() -> None:
    for instance in list(_instances):
        try:
            instance.close(timeout=_EXIT_LOCK_TIMEOUT)
        except Exception:
            log.exception("error closing %r at exit", instance)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
atexit.register(_close_all_at_exit)
