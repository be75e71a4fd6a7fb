"""Which URLs from a server a user may be asked to open: the rule behind URL-mode
elicitation (an ``elicitation/create`` request, or a -32042 error, that sends the user to
a URL the server chose).

MCP has the client show the full URL and its host before the user consents to open it.
A URL is shown only if opening it leads to a web page on the host it shows: an absolute
``https`` URL (``http`` only to this machine: ``localhost``, 127.0.0.0/8, ``::1``) with a
plain host and no user info, at most :data:`MAX_LINK_LENGTH` characters long. What a
browser would read differently from what is shown is refused, not repaired: a leading
space or any control, format or separator character (a browser drops some of them, so
``" JavaScript:..."`` runs script), user info (``https://bank.example@evil.example/``
leads to ``evil.example``), a host outside ASCII letters, digits, ``-`` and ``.`` (a
look-alike in another script: a domain is written in its ``xn--`` form), a number a
browser reads as another IPv4 address (``2130706433``).

Standard library only; nothing is fetched or resolved.
"""

from __future__ import annotations

import ipaddress
import unicodedata
from typing import Optional
from urllib.parse import urlsplit

from .._util.hosts import is_loopback_host
from .._util.text import excerpt, pattern

__all__ = ["MAX_LINK_LENGTH", "link_host", "link_refusal"]

#: The longest URL shown, in characters: what RFC 9110 (section 4.1) asks every sender
#: and recipient to support. A user asked to examine a URL must be able to read it.
MAX_LINK_LENGTH = 8000

# A host name as shown: ASCII labels of letters, digits and "-" (urlsplit lowercases it),
# with an optional final dot.
_HOST_NAME = r"[a-z0-9-]+(?:\.[a-z0-9-]+)*\.?\Z"
# WHATWG URL: a host whose last label is a number (decimal, or 0x hex) is an IPv4 address.
_NUMERIC_LABEL = r"(?:[0-9]+|0x[0-9a-f]*)\Z"


def link_refusal(url: str) -> Optional[str]:
    """Why ``url`` must not be shown to a user as a link to open, or None when it may
    (see the module docstring). The reason quotes the server's text only escaped."""
    if len(url) > MAX_LINK_LENGTH:
        return f"it is {len(url):,} characters long, more than {MAX_LINK_LENGTH:,}"
    for index, char in enumerate(url):
        category = unicodedata.category(char)
        if category[0] in "CZ":  # control, format, surrogate, unassigned; any space
            return (f"it holds a space or an invisible character (U+{ord(char):04X}, "
                    f"{category}) at {index}")
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        return f"it is not a valid URL ({excerpt(str(exc), 100)})"
    if parts.scheme not in ("https", "http"):
        if not parts.scheme:
            return "it is not an absolute URL"
        return f"its scheme is {excerpt(repr(parts.scheme), 40)}: only https is opened"
    if "@" in parts.netloc:
        return ("it has user info before '@', which hides the host it leads to behind a "
                "name that looks like one")
    host = parts.hostname or ""
    if not host:
        return "it names no host"
    try:
        parts.port  # noqa: B018 - raises ValueError for a port out of range or not a number
    except ValueError as exc:
        return f"its port is not valid ({excerpt(str(exc), 100)})"
    shown = excerpt(repr(host), 100)
    if parts.netloc.startswith("["):
        try:
            ipaddress.IPv6Address(host)
            valid = "%" not in host  # a zone (fe80::1%eth0) means nothing to a browser
        except ValueError:
            valid = False
        if not valid:
            return f"its host {shown} is not a valid IPv6 address"
    elif not pattern(_HOST_NAME).match(host):
        return (f"its host {shown} is not made of ASCII letters, digits, '-' and '.' "
                "(a domain is written in its xn-- form)")
    elif pattern(_NUMERIC_LABEL).match(host.rstrip(".").rsplit(".", 1)[-1]):
        try:
            plain = str(ipaddress.IPv4Address(host)) == host
        except ValueError:
            plain = False
        if not plain:
            return (f"its host {shown} ends in a number, which a browser reads as an IPv4 "
                    "address, and is not one written plainly")
    if parts.scheme == "http" and not is_loopback_host(host):
        return f"it is plain http to {shown}: http is allowed only to this machine"
    return None


def link_host(url: str) -> Optional[str]:
    """The host ``url`` leads to, as a user should see it before opening it (lowercase;
    an IPv6 address without its brackets), or None when it names none. Meaningful for a
    URL :func:`link_refusal` accepts."""
    try:
        return urlsplit(url).hostname or None
    except ValueError:
        return None
