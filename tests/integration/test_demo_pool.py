"""The bundled demo pool is what the world seed gives, and a cut pool keeps the duplicates of what it keeps."""

from __future__ import annotations

from collections import Counter

from capsel.models import demo_model_path
from capsel_lab.demo import DemoOptions, prepare_demo
from capsel_lab.demo_pool import (
    MALFORMED_FILE,
    MANIFEST_FILE,
    POOL_FILE,
    demo_pool_dir,
    stage_demo_pool,
    write_demo_pool,
)
from capsel_lab.pretrain_config import world_spec_of


def test_bundled_demo_pool_regenerates_identically(tmp_path):
    write_demo_pool(tmp_path, world_spec_of(demo_model_path()))
    for name in (POOL_FILE, MALFORMED_FILE, MANIFEST_FILE):
        assert (tmp_path / name).read_bytes() == (demo_pool_dir() / name).read_bytes(), name


def test_cut_pool_keeps_first_rows_per_domain_and_their_duplicates(tmp_path):
    _, full = stage_demo_pool(demo_pool_dir(), tmp_path / "full")
    _, cut = stage_demo_pool(demo_pool_dir(), tmp_path / "cut", per_domain=25)
    originals = [r for r in cut if r["lab_label"] != "duplicate"]
    assert Counter(r["domain"] for r in originals) == {"math": 25, "code": 25, "science": 25}
    for domain in ("math", "code", "science"):
        first = [r["lab_id"] for r in full if r["domain"] == domain and r["lab_label"] != "duplicate"][:25]
        assert [r["lab_id"] for r in originals if r["domain"] == domain] == first
    kept = {r["lab_id"] for r in originals}
    expected = [r for r in full if r["lab_label"] == "duplicate" and r["lab_detail"].split(":")[-1] in kept]
    assert [r for r in cut if r["lab_label"] == "duplicate"] == expected and expected
    # the staged file is the records, in file order
    assert (tmp_path / "cut" / POOL_FILE).read_text().count("\n") == len(cut)


def test_prepare_demo_starts_from_an_empty_folder(tmp_path):
    root = tmp_path / "demo"
    (root / "selections" / "sel-old").mkdir(parents=True)
    (root / "capsel.duckdb").write_text("stale")
    config, records = prepare_demo(DemoOptions(root=root, model="demo", per_domain=3))
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == ["pool", "pool/" + MALFORMED_FILE,
                                                                               "pool/" + POOL_FILE]
    assert config.sources.paths == [str(root / "pool" / POOL_FILE), str(root / "pool" / MALFORMED_FILE)]
    assert config.selection.method == "cap" and len([r for r in records if r["lab_label"] != "duplicate"]) == 9
