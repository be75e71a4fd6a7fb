"""Which hosts are this machine: the one rule behind "plain HTTP is allowed on loopback"
(``auth/metadata.py``, ``auth/policy.py``) and "``localhost:8000`` means
``http://localhost:8000``" (``client/_connect.py``).

Standard library only, so that ``client/_connect.py`` can use it without importing the auth
package.
"""

from __future__ import annotations

import ipaddress

__all__ = ["is_loopback_host"]


def is_loopback_host(host: str) -> bool:
    """True for ``localhost`` (and ``*.localhost``), ``127.0.0.0/8`` and ``::1``; the host
    as a URL writes it (an IPv6 address in brackets or not, any case)."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
