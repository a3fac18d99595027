"""Storage URLs: which paths are URLs, credentials refused without being echoed, and a storage output root keeps
flow paths inside it as a local root does."""

import pytest

from capsel.config import load_settings
from capsel.errors import CapselError
from capsel.object_storage.remote_folder import RemoteFolder
from capsel.object_storage.urls import is_url, local_path_text, redacted
from capsel.paths import inside_destination, typed_destination
from capsel.pipeline_config import PipelineConfig

ROOT = "s3://bucket/root"


@pytest.mark.parametrize(("text", "url"), [
    ("s3://bucket/x", True), ("gs://b/p/", True), ("memory://x", True), ("file:///tmp/x", False),
    ("/tmp/s3://x", False), ("pool.jsonl", False), ("C:/data", False),
])
def test_which_paths_are_urls(text, url):
    assert is_url(text) is url


def test_a_file_url_reads_as_its_local_path():
    assert local_path_text("file:///tmp/pool") == "/tmp/pool" and local_path_text("pool") == "pool"


def test_credentials_in_a_url_are_refused_and_never_echoed():
    secret = "wJalrXUtnFEMI-secret"
    assert redacted(f"s3://AKIA:{secret}@bucket/x") == "s3://***@bucket/x"
    with pytest.raises(CapselError, match=r"s3://\*\*\*@bucket/x: the URL holds credentials") as raised:
        RemoteFolder(f"s3://AKIA:{secret}@bucket/x")
    assert secret not in str(raised.value)


def test_a_typed_url_is_a_storage_folder_and_a_path_stays_a_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert typed_destination("s3://bucket/sels/") == RemoteFolder("s3://bucket/sels")
    assert typed_destination("sels") == tmp_path.resolve() / "sels"
    assert typed_destination(f"file://{tmp_path}/x") == tmp_path.resolve() / "x"


@pytest.mark.parametrize(("given", "expected"), [
    ("v1", f"{ROOT}/v1"), ("a/./b", f"{ROOT}/a/b"), (f"{ROOT}/v2", f"{ROOT}/v2"), (ROOT, ROOT), (".", ROOT),
])
def test_flow_paths_land_under_a_storage_root(given, expected):
    assert str(inside_destination(RemoteFolder(ROOT), given)) == expected


@pytest.mark.parametrize("escape", ["../x", "a/../../b", "/etc", "s3://bucket/other", "s3://bucket/rootless/x",
                                    "gs://bucket/root/x"])
def test_flow_paths_outside_a_storage_root_are_refused(escape):
    with pytest.raises(CapselError, match="outside the output root"):
        inside_destination(RemoteFolder(ROOT), escape)


def test_a_storage_output_root_publishes_and_the_local_root_keeps_the_rest(tmp_path):
    config = PipelineConfig.model_validate({"scoring": {"method": "cap", "model": {"path": "/models/m"}},
                                            "output_root": ROOT})
    settings = load_settings(output_root=tmp_path / "local")
    assert config.publish_root(settings) == RemoteFolder(ROOT)
    assert config.settings().output_root != RemoteFolder(ROOT)  # never a mangled "s3:/bucket/root" Path
    assert "s3:" not in str(config.settings().output_root)
    local = PipelineConfig.model_validate({"scoring": {"method": "cap", "model": {"path": "/models/m"}},
                                           "output_root": str(tmp_path / "out")})
    assert local.publish_root(local.settings()) == tmp_path / "out"
