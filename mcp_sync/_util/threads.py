"""Thread policy, written once: how the library starts a thread and how it joins one.

* :func:`start_thread` starts a named daemon thread. Every thread is named
  ``mcp-sync-<role>-<server>`` (docs/architecture.md lists them), so that a thread dump,
  a log record's ``threadName`` or a test's leak check tells whose it is. Every one is a
  daemon, so that a client nobody closed never keeps the interpreter from exiting; no
  cleanup relies on that: each owner's ``close()`` joins its threads with a bound.
* :func:`join_or_warn` is that bounded join: it waits at most the bound, and a thread
  that outlives it is left to end on its own, with one WARNING naming it, so that
  ``close()`` returns in time and the leftover thread is not a silent one.
* :func:`green` tells whether those threads are greenlets: after gevent's
  ``monkey.patch_all()`` the ``threading`` module starts greenlets on one OS thread, and
  a call that blocks the OS thread (one gevent does not make cooperative) blocks them
  all. The library starts no native thread then: every wait of its threads is one that
  gevent makes cooperative (pipes of gevent's ``subprocess``, sockets, ``select.poll``,
  locks, events, ``Popen.wait``), and the one that is not, ``os.waitid`` (the stdio
  watcher's), is not used (docs/architecture.md, "Threads").

Standard library only; it imports nothing of ours, and never imports gevent.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from typing import Any, Callable, List, Optional

__all__ = ["green", "join_or_warn", "start_thread", "unpatched"]

_PREFIX = "mcp-sync-"


def start_thread(target: Callable[..., object], name: str, *args: Any) -> threading.Thread:
    """Start ``target(*args)`` on a new daemon thread called ``name``, and return it.

    ``name`` is the whole name, ``mcp-sync-<role>-<server>``. The thread is running when
    this returns: assign it where its owner's ``close()`` will find it while still holding
    whatever lock guards that place, so that ``close()`` never sees it half-made.

    Raises:
        ValueError: ``name`` does not start with ``mcp-sync-``.
        RuntimeError: the interpreter cannot start another thread.
    """
    if not name.startswith(_PREFIX):
        raise ValueError(f"thread names start with {_PREFIX!r}: {name!r}")
    thread = threading.Thread(target=target, name=name, args=args, daemon=True)
    thread.start()
    return thread


def green() -> bool:
    """True when gevent has patched ``threading``: :func:`start_thread` starts greenlets.

    Only a program that imported gevent can be patched, so gevent is not imported here:
    where it was not imported, this is False at the cost of a dictionary look-up.
    """
    monkey = sys.modules.get("gevent.monkey")
    return monkey is not None and bool(monkey.is_module_patched("threading"))


def unpatched(*modules: str) -> List[str]:
    """Those of ``modules`` that gevent has not patched, in a process where it patched
    ``threading`` (elsewhere none: there nothing needs them patched)."""
    if not green():
        return []
    monkey = sys.modules["gevent.monkey"]
    return [name for name in modules if not monkey.is_module_patched(name)]


def join_or_warn(thread: Optional[threading.Thread], timeout: float, what: str,
                 logger: logging.Logger, *, deadline: Optional[float] = None) -> bool:
    """Wait at most ``timeout`` seconds for ``thread`` to end; True unless it outlived that.

    A thread still running after the bound is left to end on its own, and ``logger``
    gets one WARNING: ``<thread name> did not stop within <timeout> s of <what>``
    (``what`` names the wait, e.g. ``"closing the session"``). ``None``, a thread never
    started and a thread that already ended return True at once. The calling thread is
    never joined (it cannot wait for itself: an owner closed from one of its own threads
    ends that thread when the call returns), and counts as True.

    Args:
        deadline: when the wait ends, a :func:`time.monotonic` time (default: ``timeout``
            from now), so that threads stopped together share one bound: each is joined
            until the same deadline, and ``timeout``, the whole bound, is what the
            warning reports.
    """
    if thread is None or thread.ident is None or thread is threading.current_thread():
        return True
    end = time.monotonic() + timeout if deadline is None else deadline
    thread.join(max(0.0, end - time.monotonic()))
    if not thread.is_alive():
        return True
    logger.warning("%s did not stop within %.1f s of %s", thread.name, timeout, what)
    return False
