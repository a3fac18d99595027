"""Where an image reference may be read from (capsel.ingest.image_access), against expectations written out by hand:
the pool's folder or prefix, the image roots, symlinks resolved, schemes and hosts on the allowlists."""

from __future__ import annotations

import os

import pytest

from capsel.config import Settings
from capsel.errors import OptionError
from capsel.ingest.image_access import ImageAccess, LocalImage, StorageImage, WebImage, image_access, locate
from capsel.ingest.reasons import Reason, Rejection

NONE = ImageAccess()
HOW = "name a folder or prefix holding it in CAPSEL_IMAGE_ROOTS or --image-root to allow it"


@pytest.fixture
def tree(tmp_path):
    """pool/ (img/a.png, links in and out), pool2/b.png beside it, outside/s.png; paths made real up front."""
    root = tmp_path.resolve()
    for folder in ("pool/img", "pool2", "outside"):
        (root / folder).mkdir(parents=True)
    for name in ("pool/img/a.png", "pool2/b.png", "outside/s.png"):
        (root / name).write_bytes(b"x")
    (root / "pool" / "img" / "in.png").symlink_to(root / "pool" / "img" / "a.png")
    (root / "pool" / "img" / "out.png").symlink_to(root / "outside" / "s.png")
    (root / "pool" / "up").symlink_to(root / "outside")
    return root


def refused(detail: str) -> Rejection:
    return Rejection(Reason.IMAGE_REFUSED, detail)


@pytest.mark.parametrize(("ref", "expected"), [
    ("img/a.png", "pool/img/a.png"),
    ("./img/../img/a.png", "pool/img/a.png"),
    ("img/in.png", "pool/img/a.png"),  # a link inside the folder reads as its target
    ("img/missing.png", "pool/img/missing.png"),  # whether it exists is the reader's to say
])
def test_paths_inside_the_pool_folder_resolve_to_their_real_path(tree, ref, expected):
    assert locate(ref, str(tree / "pool"), NONE) == LocalImage(str(tree / expected))


def test_absolute_and_file_url_forms_inside_the_pool_folder_are_allowed(tree):
    inside = str(tree / "pool" / "img" / "a.png")
    assert locate(inside, str(tree / "pool"), NONE) == LocalImage(inside)
    assert locate(f"file://{inside}", str(tree / "pool"), NONE) == LocalImage(inside)


@pytest.mark.parametrize("ref", ["../outside/s.png", "{root}/outside/s.png", "file://{root}/outside/s.png",
                                 "../pool2/b.png", "/etc/passwd", "/dev/zero"])
def test_paths_outside_the_pool_folder_are_refused_with_their_real_path(tree, ref):
    ref = ref.format(root=tree)
    target = os.path.normpath(os.path.join(tree / "pool", ref.removeprefix("file://")))
    assert locate(ref, str(tree / "pool"), NONE) == refused(
        f"{target} is outside the pool's folder and the image roots; {HOW}")


@pytest.mark.parametrize("ref", ["img/out.png", "up/s.png"])
def test_a_symlink_leading_out_of_the_pool_folder_is_refused_as_a_symlink(tree, ref):
    assert locate(ref, str(tree / "pool"), NONE) == refused(
        f"a symlink to {tree}/outside/s.png, outside the pool's folder and the image roots; {HOW}")


def test_an_image_root_lets_its_folder_in_and_no_other(tree):
    access = ImageAccess(roots=(str(tree / "outside"),))
    assert locate("../outside/s.png", str(tree / "pool"), access) == LocalImage(f"{tree}/outside/s.png")
    assert locate("img/out.png", str(tree / "pool"), access) == LocalImage(f"{tree}/outside/s.png")
    assert isinstance(locate("../pool2/b.png", str(tree / "pool"), access), Rejection)


def test_a_root_given_through_a_symlink_or_as_file_url_counts_as_its_real_folder(tree):
    (tree / "alias").symlink_to(tree / "outside")
    for root in (str(tree / "alias"), f"file://{tree}/alias/"):
        assert locate(f"{tree}/outside/s.png", str(tree / "pool"), ImageAccess(roots=(root,))) == LocalImage(
            f"{tree}/outside/s.png")


def test_a_folder_whose_name_extends_the_pool_folders_is_not_inside_it(tree):
    assert isinstance(locate(f"{tree}/pool2/b.png", str(tree / "pool"), NONE), Rejection)


@pytest.mark.parametrize(("ref", "expected"), [
    ("img/a.png", StorageImage("s3://bucket/pool/img/a.png")),
    ("s3://bucket/pool/img/a.png", StorageImage("s3://bucket/pool/img/a.png")),
    ("S3://bucket/pool/a.png", StorageImage("S3://bucket/pool/a.png")),
    ("../secret/x.png", refused("the URL has a '.' or '..' segment, which could step out of an allowed prefix")),
    ("s3://bucket/pool/../secret/x.png",
     refused("the URL has a '.' or '..' segment, which could step out of an allowed prefix")),
    ("s3://bucket/pool2/x.png", refused(f"outside the pool's storage prefix and the image roots; {HOW}")),
    ("s3://other/x.png", refused(f"outside the pool's storage prefix and the image roots; {HOW}")),
    ("s3://key:secret@bucket/pool/x.png",
     refused("the URL holds credentials; storage credentials come from the environment only")),
    ("/etc/passwd", refused(f"/etc/passwd is outside the pool's folder and the image roots; {HOW}")),
])
def test_a_pool_in_storage_reads_images_under_its_own_prefix(ref, expected):
    assert locate(ref, "s3://bucket/pool", NONE) == expected


def test_a_storage_root_lets_its_prefix_in_and_its_scheme_with_it(tree):
    access = ImageAccess(roots=("gs://shared/images/",))
    assert locate("gs://shared/images/a/b.png", str(tree / "pool"), access) == StorageImage(
        "gs://shared/images/a/b.png")
    assert locate("gs://shared/other.png", str(tree / "pool"), access) == refused(
        f"outside the pool's storage prefix and the image roots; {HOW}")


@pytest.mark.parametrize("ref", ["ftp://127.0.0.1:9/x.png", "foo://x.png", "hdfs://namenode/x.png",
                                 "sftp://host/x.png", "memory://x.png", "s3://bucket/x.png"])
def test_a_scheme_no_root_and_not_the_pool_names_is_refused(tree, ref):
    scheme = ref.split("://")[0]
    assert locate(ref, str(tree / "pool"), NONE) == refused(
        f"{scheme}:// is not a storage images are read from: only local files, data: URLs, the pool's own storage, "
        "storage under an image root (CAPSEL_IMAGE_ROOTS, --image-root) and http(s) hosts in CAPSEL_IMAGE_URL_HOSTS")


@pytest.mark.parametrize("ref", ["zip://a.png::file:///etc/passwd", "s3://bucket/pool/a.png::zip://x"])
def test_chained_urls_are_refused_even_under_the_pool_prefix(ref):
    assert locate(ref, "s3://bucket/pool", NONE) == refused(
        "a chained URL (::), which reads through a second storage; chained URLs are not read")


@pytest.mark.parametrize("ref", ["http://127.0.0.1:8000/admin/delete?all=1", "https://example.com/a.png"])
def test_network_fetch_is_off_without_a_host_list(tree, ref):
    assert locate(ref, str(tree / "pool"), NONE) == refused(
        "network fetch is off: CAPSEL_IMAGE_URL_HOSTS names no host images may be fetched from")


@pytest.mark.parametrize(("hosts", "ref", "allowed"), [
    (("images.example.com",), "https://images.example.com/a.png", True),
    (("images.example.com",), "https://IMAGES.example.com:8443/a.png", True),  # no port named: any port
    (("images.example.com:443",), "https://images.example.com/a.png", True),  # https's own port
    (("images.example.com:443",), "http://images.example.com/a.png", False),  # http's is 80
    (("127.0.0.1:8000",), "http://127.0.0.1:8001/a.png", False),
    (("images.example.com",), "https://images.example.com.evil.net/a.png", False),
    (("images.example.com",), "https://evil.net/images.example.com/a.png", False),
    (("[::1]:8000",), "http://[::1]:8000/a.png", True),
])
def test_hosts_on_the_list_are_fetched_and_no_others(tree, hosts, ref, allowed):
    found = locate(ref, str(tree / "pool"), ImageAccess(url_hosts=hosts))
    assert (found == WebImage(ref)) if allowed else (found.reason is Reason.IMAGE_REFUSED)


def test_a_refused_host_is_named_with_its_port(tree):
    found = locate("http://127.0.0.1/x", str(tree / "pool"), ImageAccess(url_hosts=("example.com",)))
    assert found == refused("host 127.0.0.1:80 is not in CAPSEL_IMAGE_URL_HOSTS, the hosts images may be fetched from")


def test_a_pool_served_over_https_reads_images_under_its_own_prefix():
    assert locate("img/a.png", "https://data.example.com/pool", NONE) == WebImage(
        "https://data.example.com/pool/img/a.png")
    assert locate("https://data.example.com/other.png", "https://data.example.com/pool", NONE).reason == (
        Reason.IMAGE_REFUSED)


@pytest.mark.parametrize("entry", ["", "host:", "host:port", "user@host", "host/path", "http://host"])
def test_a_host_entry_that_is_not_host_or_host_port_fails_at_once(entry):
    with pytest.raises(OptionError, match="CAPSEL_IMAGE_URL_HOSTS"):
        ImageAccess(url_hosts=(entry,))


def test_settings_give_the_grants_and_a_command_adds_roots(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CAPSEL_IMAGE_ROOTS", "/data/images, s3://bucket/images/")
    monkeypatch.setenv("CAPSEL_IMAGE_URL_HOSTS", "images.example.com,cdn.example.com:8443")
    assert image_access(Settings(), ["/more"]) == ImageAccess(
        ("/data/images", "s3://bucket/images/", "/more"), ("images.example.com", "cdn.example.com:8443"))
    monkeypatch.delenv("CAPSEL_IMAGE_ROOTS")
    monkeypatch.delenv("CAPSEL_IMAGE_URL_HOSTS")
    assert image_access(Settings()) == ImageAccess()


@pytest.mark.parametrize(("ref", "detail"), [
    ("img/a\0.png", "the reference holds a NUL character, which no path or URL can"),
    ("http://[::1/a.png", "not a valid URL (Invalid IPv6 URL)"),
    ("https://images.example.com:99999/a.png", "not a valid URL (Port out of range 0-65535)"),
])
def test_a_reference_no_path_or_url_can_be_is_the_rows_problem_not_a_traceback(tree, ref, detail):
    assert locate(ref, str(tree / "pool"), ImageAccess(url_hosts=("images.example.com",))) == Rejection(
        Reason.IMAGE_UNREADABLE, detail)


def test_a_tilde_in_a_row_is_no_home_folder(tree):
    assert locate("~/a.png", str(tree / "pool"), NONE) == LocalImage(f"{tree}/pool/~/a.png")
