"""What the HTTP transport reads of a streamed ``requests`` response besides messages.

Its media type; a body nobody parses as a message (an error's, an acknowledgement's),
read up to a bound in decoded bytes (``_bodies.py``) and released, so that a body read to
its end hands its connection back to the pool; and the errors such a read raises when the
connection breaks or another thread shuts it down (``_interrupt.py``).
"""

from __future__ import annotations

import http.client
import logging
from typing import Optional

import requests
import urllib3.exceptions

from ._bodies import read_decoded

__all__ = ["ERROR_BODY_LIMIT", "READ_ERRORS", "discard", "media_type", "read_body"]

log = logging.getLogger(__name__)

# How much of an error body is kept for the exception message.
ERROR_BODY_LIMIT = 64 * 1024
# Errors a read of a response body raises when the connection breaks or is shut down.
READ_ERRORS = (
    urllib3.exceptions.HTTPError,
    requests.RequestException,
    http.client.HTTPException,
    OSError,
    ValueError,  # a read on a response closed by another thread
    AttributeError,  # ...on urllib3 versions that drop the file object on close
)


def media_type(response: requests.Response) -> str:
    """``response``'s ``Content-Type`` without its parameters, in lower case."""
    return response.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()


def read_body(response: requests.Response, limit: Optional[int] = None) -> bytes:
    """Read a streamed response's body (at most ``limit`` decoded bytes) and release it.

    A body read to its end hands its connection back to the pool for the next request;
    one cut short is closed.
    """
    try:
        if limit is None:
            data: bytes = response.raw.read(decode_content=True)
        else:
            data = b"".join(read_decoded(response, limit))
    finally:
        response.close()
    return data or b""


def discard(response: requests.Response) -> None:
    """Read a body nobody needs (up to ``ERROR_BODY_LIMIT``) and release it; a failed
    read is only logged."""
    try:
        read_body(response, ERROR_BODY_LIMIT)
    except READ_ERRORS as exc:
        log.debug("discarding a response body failed: %r", exc)

