"""Where an image reference may be read from: inside the pool file's own folder or storage prefix, under the
operator's image roots, or over http(s) from the hosts the operator names; anything else is refused unopened.

Pool rows are untrusted: whoever drops a file into an incoming folder must not make capsel read the machine's other
files, reach its network or wake a storage backend the operator never named. Nothing here opens a file: a local
reference comes back as its real path (every symlink resolved, so a link cannot lead out of an allowed folder),
which `image_loading` then opens as a regular file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence
from urllib.parse import urlsplit

from capsel.errors import OptionError
from capsel.ingest.reasons import Reason, Rejection
from capsel.object_storage.urls import is_url, joined, local_path_text, under_prefix, url_scheme

if TYPE_CHECKING:  # the flow configs name this module, and a flow's --help reads no environment
    from capsel.config import Settings

_DEFAULT_PORTS = {"http": 80, "https": 443}
_WEB_SCHEMES = frozenset(_DEFAULT_PORTS)
_ALLOW_PLACE = "name a folder or prefix holding it in CAPSEL_IMAGE_ROOTS or --image-root to allow it"


@dataclass(frozen=True)
class ImageAccess:
    """The operator's grants beyond a pool file's own folder or prefix: local folders and storage prefixes images
    may come from, and the http(s) hosts they may be fetched from (host or host:port; none: no network fetch)."""

    roots: tuple[str, ...] = ()
    url_hosts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for entry in self.url_hosts:
            if not _is_host_entry(entry):
                raise OptionError(f"CAPSEL_IMAGE_URL_HOSTS: {entry!r} is not a host or host:port")


@dataclass(frozen=True)
class LocalImage:
    """A file on this machine, by its real path: no symlink left in it, inside an allowed folder."""

    path: str


@dataclass(frozen=True)
class StorageImage:
    """An object under the pool's own storage prefix or a storage image root."""

    url: str


@dataclass(frozen=True)
class WebImage:
    """An http(s) URL on an allowed host (or under an allowed prefix)."""

    url: str


Location = LocalImage | StorageImage | WebImage


def image_access(settings: Settings, extra_roots: Sequence[str] = ()) -> ImageAccess:
    """The deployment's grants, plus the roots a command names (`capsel ingest --image-root`)."""
    return ImageAccess(tuple([*settings.image_roots, *extra_roots]), tuple(settings.image_url_hosts))


def locate(ref: str, base: str, access: ImageAccess) -> Location | Rejection:
    """Where `ref`, an image path or URL in a pool file whose folder or storage prefix is `base`, may be read, or
    the image_refused rejection saying why it may not (image_unreadable for a reference no path or URL can be)."""
    if "\0" in ref:
        return Rejection(Reason.IMAGE_UNREADABLE, "the reference holds a NUL character, which no path or URL can")
    if is_url(ref):
        return _locate_url(ref, base, access)
    path = local_path_text(ref)  # `~` is no home folder here: the row's text is not the operator's
    if is_url(base) and not os.path.isabs(path):
        return _locate_url(joined(base, path), base, access)
    return _locate_file(path, base, access)


def _locate_file(path: str, base: str, access: ImageAccess) -> LocalImage | Rejection:
    target = os.path.join("" if is_url(base) else base, path)
    real = os.path.realpath(target)
    folders = [os.path.realpath(os.path.expanduser(local_path_text(root)))
               for root in (base, *access.roots) if not is_url(root)]
    if any(os.path.commonpath([real, folder]) == folder for folder in folders):
        return LocalImage(real)
    if real != os.path.abspath(target):  # abspath only tidies `..`: the difference is a link followed
        return _refused(f"a symlink to {real}, outside the pool's folder and the image roots; {_ALLOW_PLACE}")
    return _refused(f"{real} is outside the pool's folder and the image roots; {_ALLOW_PLACE}")


def _locate_url(url: str, base: str, access: ImageAccess) -> Location | Rejection:
    scheme = url_scheme(url) or ""
    # fsspec's chaining (zip://a.png::file:///etc/passwd) reads one storage through another; web URLs never reach
    # fsspec, and an IPv6 host ([::1]) is no chain
    if "::" in url and scheme not in _WEB_SCHEMES:
        return _refused("a chained URL (::), which reads through a second storage; chained URLs are not read")
    try:  # parsed here, so a bad port or IPv6 host is this row's problem, not a traceback
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return Rejection(Reason.IMAGE_UNREADABLE, f"not a valid URL ({exc})")
    if "@" in parts.netloc:
        return _refused("the URL holds credentials; storage credentials come from the environment only")
    if any(segment in (".", "..") for segment in parts.path.split("/")):
        return _refused("the URL has a '.' or '..' segment, which could step out of an allowed prefix")
    prefixes = [prefix for prefix in (base, *access.roots) if is_url(prefix)]
    if any(under_prefix(url, prefix) for prefix in prefixes):
        return WebImage(url) if scheme in _WEB_SCHEMES else StorageImage(url)
    if scheme in _WEB_SCHEMES:
        return _web(url, parts.hostname, port or _DEFAULT_PORTS[scheme], access.url_hosts)
    if scheme not in {url_scheme(prefix) for prefix in prefixes}:
        return _refused(f"{scheme}:// is not a storage images are read from: only local files, data: URLs, the "
                        "pool's own storage, storage under an image root (CAPSEL_IMAGE_ROOTS, --image-root) and "
                        "http(s) hosts in CAPSEL_IMAGE_URL_HOSTS")
    return _refused(f"outside the pool's storage prefix and the image roots; {_ALLOW_PLACE}")


def _web(url: str, host: str | None, port: int, hosts: Sequence[str]) -> WebImage | Rejection:
    """An http(s) URL on one of `hosts` (an entry without a port allows every port of its host)."""
    if not hosts:
        return _refused("network fetch is off: CAPSEL_IMAGE_URL_HOSTS names no host images may be fetched from")
    if not host:
        return _refused("the URL names no host")
    for entry in hosts:
        allowed = urlsplit(f"//{entry}")
        if allowed.hostname == host and allowed.port in (None, port):
            return WebImage(url)
    return _refused(f"host {host}:{port} is not in CAPSEL_IMAGE_URL_HOSTS, the hosts images may be fetched from")


def _is_host_entry(entry: str) -> bool:
    """True for `host` or `host:port` (an IPv6 address in brackets), nothing more."""
    named = urlsplit(f"//{entry}")
    try:
        port = named.port
    except ValueError:
        return False
    return bool(named.hostname) and "@" not in entry and named.netloc == entry and (
        port is not None or not entry.endswith(":"))


def _refused(detail: str) -> Rejection:
    return Rejection(Reason.IMAGE_REFUSED, detail)
