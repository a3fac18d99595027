"""Artifact keys: Prefect's alphabet, the pool's path hash, one key per kind."""

import hashlib
import re
from pathlib import Path

import pytest

from capsel.orchestration.artifact_keys import KINDS, ArtifactKeys, slug

PREFECT_KEY = re.compile(r"^[a-z0-9-]+$")


@pytest.mark.parametrize(("text", "expected"), [
    ("On-Demand Select", "on-demand-select"), ("nightly_rescore", "nightly-rescore"), ("--a..b--", "a-b"),
    ("Pool.V2", "pool-v2"), ("ünïcode", "n-code"), ("", ""),
])
def test_slug(text, expected):
    assert slug(text) == expected


def test_key_names_flow_deployment_stem_and_path_hash(tmp_path):
    db = tmp_path / "My Pool.duckdb"
    digest = hashlib.sha256(str(db.resolve()).encode()).hexdigest()[:8]
    keys = ArtifactKeys("select", db, "On-Demand Select")
    assert keys.key("summary") == f"capsel-select-on-demand-select-my-pool-{digest}-summary"
    assert ArtifactKeys("score", db).key("progress") == f"capsel-score-my-pool-{digest}-progress"
    assert all(PREFECT_KEY.match(keys.key(kind)) and "--" not in keys.key(kind) for kind in KINDS)


def test_same_file_name_in_two_folders_gets_two_keys(tmp_path, monkeypatch):
    first, second = ArtifactKeys("select", tmp_path / "a" / "capsel.duckdb"), \
        ArtifactKeys("select", tmp_path / "b" / "capsel.duckdb")
    assert first.key("summary") != second.key("summary")
    # a relative path is the same pool as its absolute form
    monkeypatch.chdir(tmp_path / ".")
    assert ArtifactKeys("select", Path("a/capsel.duckdb")).key("data") == first.key("data")


def test_unknown_kind_is_refused(tmp_path):
    with pytest.raises(ValueError, match="summry"):
        ArtifactKeys("select", tmp_path / "x.duckdb").key("summry")


def test_a_long_file_name_is_cut_and_the_hash_keeps_it_apart(tmp_path):
    long = "pool-" + "x" * 100
    first, second = ArtifactKeys("select", tmp_path / f"{long}a.duckdb"), ArtifactKeys("select", tmp_path / f"{long}b.duckdb")
    assert first.key("summary") != second.key("summary")
    assert first.prefix.startswith("capsel-select-pool-xxx") and len(first.prefix) == len("capsel-select-") + 40 + 1 + 8
