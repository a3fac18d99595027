"""Fetch one image over http(s): a single GET, redirects followed only to places the access policy allows, the read
bounded in bytes and in time.

Not fsspec's HTTP filesystem: it sends a HEAD before the GET and follows any redirect, so an allowed host could
bounce capsel onto the machine's own network.
"""

from __future__ import annotations

import http.client
import time
import urllib.error
import urllib.request
from typing import BinaryIO, Callable

from capsel.ingest.image_allowance import ByteAllowance
from capsel.ingest.reasons import Reason, Rejection

# Per socket operation, and for the whole body: a server that trickles bytes cannot hold a row forever.
TIMEOUT_S = 30.0
_CHUNK = 1 << 16


class _RedirectRefused(Exception):
    """A redirect to a URL the access policy does not allow."""


class _CheckedRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only to a URL `allowed` accepts (each hop is judged like a row's own URL)."""

    def __init__(self, allowed: Callable[[str], bool]) -> None:
        self.allowed = allowed

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if not self.allowed(newurl):
            raise _RedirectRefused(newurl)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def fetch(url: str, allowance: ByteAllowance, allowed: Callable[[str], bool]) -> bytes | Rejection:
    """The image at `url` if it fits `allowance`, or why not; `allowed` says whether a redirect may be followed."""
    opener = urllib.request.build_opener(_CheckedRedirects(allowed))
    try:
        with opener.open(urllib.request.Request(url, method="GET"), timeout=TIMEOUT_S) as response:
            declared = response.headers.get("Content-Length", "")
            if declared.isdigit() and int(declared) > allowance.n_bytes:  # judged before reading: costs nothing
                return allowance.refusal(f"{int(declared):,}")
            return _body(response, allowance)
    except _RedirectRefused as exc:
        return Rejection(Reason.IMAGE_REFUSED, f"redirected to {exc}, which is not allowed (CAPSEL_IMAGE_URL_HOSTS)")
    except urllib.error.HTTPError as exc:
        reason = Reason.IMAGE_MISSING if exc.code in (404, 410) else Reason.IMAGE_UNREADABLE
        return Rejection(reason, f"HTTP {exc.code} {exc.reason}")
    except urllib.error.URLError as exc:
        return Rejection(Reason.IMAGE_UNREADABLE, f"cannot fetch it ({exc.reason})")
    except TimeoutError:
        return Rejection(Reason.IMAGE_UNREADABLE, f"cannot fetch it (no answer within {TIMEOUT_S:.0f} s)")
    except OSError as exc:
        return Rejection(Reason.IMAGE_UNREADABLE, f"cannot fetch it ({exc.strerror or exc})")
    except (http.client.HTTPException, ValueError) as exc:  # a garbled answer, a URL http.client will not send
        return Rejection(Reason.IMAGE_UNREADABLE, f"cannot fetch it ({type(exc).__name__}: {exc})")


def _body(response: BinaryIO, allowance: ByteAllowance) -> bytes | Rejection:
    """The body, read until it ends, passes the allowance (one byte past it is enough to know) or the deadline."""
    deadline = time.monotonic() + TIMEOUT_S
    chunks: list[bytes] = []
    n_read = 0
    while n_read <= allowance.n_bytes:
        if time.monotonic() > deadline:
            raise TimeoutError
        chunk = response.read(min(_CHUNK, allowance.n_bytes + 1 - n_read))
        if not chunk:
            break
        chunks.append(chunk)
        n_read += len(chunk)
    if n_read > allowance.n_bytes:
        return allowance.refusal(f"more than {allowance.n_bytes:,}")
    return allowance.judged(b"".join(chunks))
