"""Which paths are object-storage URLs, and the fsspec filesystem behind one; credentials never ride in a URL.

Credentials come from the environment (AWS_ACCESS_KEY_ID, AWS_ENDPOINT_URL, GOOGLE_APPLICATION_CREDENTIALS, ...) or
fsspec's configuration, so a URL is safe to print, log and store: one that embeds a user or password is refused.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Iterator
from urllib.parse import urlsplit

from capsel.errors import CapselError

if TYPE_CHECKING:  # every path option is checked with is_url at --help time; fsspec loads when a URL is opened
    from fsspec import AbstractFileSystem

_SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://")
# file:// names a local path, which keeps the local rules (FIFO checks, rename-based publish)
_LOCAL_SCHEMES = ("file", "local")


def is_url(text: object) -> bool:
    """True for `scheme://...` naming remote storage (not file://)."""
    match = _SCHEME.match(str(text))
    return match is not None and match["scheme"].lower() not in _LOCAL_SCHEMES


def url_scheme(text: object) -> str | None:
    """The lower-cased scheme of a `scheme://...` text (file:// included), or None for a plain path."""
    match = _SCHEME.match(str(text))
    return None if match is None else match["scheme"].lower()


def under_prefix(url: str, prefix: str) -> bool:
    """True when `url` names something below the storage prefix `prefix` (whole path components only: s3://b/pool
    holds s3://b/pool/x, not s3://b/pool2/x); schemes compare without case."""
    scheme, prefix_scheme = url_scheme(url), url_scheme(prefix)
    if scheme is None or scheme != prefix_scheme:
        return False
    rest, prefix_rest = url.split("://", 1)[1], prefix.split("://", 1)[1].rstrip("/")
    return rest.startswith(prefix_rest + "/")


def local_path_text(text: str) -> str:
    """`text` with a file:// scheme taken off, so it reads as the local path it names."""
    match = _SCHEME.match(text)
    return text[match.end():] if match is not None and match["scheme"].lower() in _LOCAL_SCHEMES else text


def redacted(url: str) -> str:
    """`url` with any user and password replaced by ***, fit for an error message."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]).geturl()


def filesystem(url: str) -> tuple[AbstractFileSystem, str]:
    """The fsspec filesystem serving `url` and the path inside it; CapselError for embedded credentials or an
    unknown or uninstalled protocol."""
    if "@" in urlsplit(url).netloc:
        raise CapselError(f"{redacted(url)}: the URL holds credentials; give them through the environment "
                          "(e.g. AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY) or fsspec's configuration instead")
    import fsspec

    try:
        return fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as exc:
        raise CapselError(f"{url}: cannot open this storage ({exc})") from exc


@contextmanager
def storage_errors(what: str) -> Iterator[None]:
    """A storage call's error as one CapselError line, `what (cause)`, instead of the client's traceback.

    FileNotFoundError passes through: what a missing object means is the caller's to say.
    """
    try:
        yield
    except (FileNotFoundError, CapselError):
        raise
    except Exception as exc:  # noqa: BLE001 (each client has its own errors: botocore's unreachable endpoint is no OSError)
        raise CapselError(f"{what} ({exc})") from exc


def joined(url: str, *names: str) -> str:
    """`url` with path components appended, one slash between each."""
    return "/".join([url.rstrip("/"), *names])


class Located:
    """Something in storage known by its URL: prints as the URL, equal to another of its kind with the same URL.

    Not a dataclass: reports turn dataclasses into dicts, and these should print as their URL.
    """

    __slots__ = ("url",)

    def __init__(self, url: str) -> None:
        self.url = url

    @property
    def name(self) -> str:
        """The last component of the URL's path."""
        return PurePosixPath(self.url).name

    def __str__(self) -> str:
        return self.url

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.url == self.url

    def __hash__(self) -> int:
        return hash(self.url)
