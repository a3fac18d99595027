"""The bundled real pool is what its sources and spec give, and ingest turns every record into a candidate."""

from __future__ import annotations

import json
from collections import Counter

import pandas as pd
from typer.testing import CliRunner

from capsel.cli.main import app
from capsel.ingest.pipeline import IngestOptions, ingest
from capsel_lab.demo_pool import read_pool
from capsel_lab.real_pool import LABELS_FILE, MANIFEST_FILE, POOL_FILE, RealPoolSpec, real_pool_dir, write_real_pool
from capsel_lab.real_sources import bundled_real_sources
from tests.integration.pool_files import table


def test_bundled_real_pool_regenerates_identically(tmp_path):
    write_real_pool(bundled_real_sources(), tmp_path / "pool", RealPoolSpec())
    names = sorted(path.name for path in real_pool_dir().iterdir())
    assert names == sorted(path.name for path in (tmp_path / "pool").iterdir())
    assert {POOL_FILE, LABELS_FILE, MANIFEST_FILE, "PROVENANCE.md", "LICENSE-gsm8k", "LICENSE-humaneval"} == set(names)
    for name in names:
        assert (tmp_path / "pool" / name).read_bytes() == (real_pool_dir() / name).read_bytes(), name


def test_ingesting_the_bundled_real_pool_keeps_every_record(db):
    report = ingest(db, [real_pool_dir() / POOL_FILE], IngestOptions())
    records = read_pool(real_pool_dir() / POOL_FILE)
    manifest = json.loads((real_pool_dir() / MANIFEST_FILE).read_text())
    labels = pd.read_csv(real_pool_dir() / LABELS_FILE, dtype=str, keep_default_na=False)
    candidates = table(db, "candidates")
    assert len(table(db, "quarantine")) == 0 and len(table(db, "duplicates")) == manifest["n_duplicates"] == 0
    assert len(candidates) == len(records) == len(labels) == manifest["n_records"] == 487
    domains = report.counters()["domains"]
    assert {domain: (counts["n_read"], counts["n_inserted"]) for domain, counts in domains.items()} == \
        {"math": (315, 315), "code": (172, 172)}
    # labels.csv names each record's candidate in file order, and ingest stored the texts unchanged
    assert labels["lab_id"].tolist() == [record["lab_id"] for record in records]
    stored = candidates.set_index("candidate_id")
    for (_, label), record in zip(labels.iterrows(), records):
        row = stored.loc[label["candidate_id"]]
        assert (row["domain"], row["instruction"], row["response"]) == \
            (label["domain"], record["instruction"], record["output"])
    kinds = Counter((label.domain, label.lab_label, label.lab_detail.split(":")[0]) for label in labels.itertuples())
    assert kinds == {("math", "clean", ""): 300, ("math", "junk", "salad"): 8, ("math", "junk", "shuffled"): 7,
                     ("code", "clean", ""): 164, ("code", "junk", "salad"): 4, ("code", "junk", "shuffled"): 4}
    assert manifest["counts"] == {"math": {"clean": 300, "salad": 8, "shuffled": 7},
                                  "code": {"clean": 164, "salad": 4, "shuffled": 4}}


def test_real_pool_cli_writes_the_pool_and_its_summary(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a typed --out is relative to the working directory, not the output root
    env = {"CAPSEL_OUTPUT_ROOT": str(tmp_path / "root"), "COLUMNS": "200"}
    args = ["lab", "real-pool", "--out", "rp", "--seed", "3", "--n-math", "20", "--n-code", "10", "--junk-share", "0.2",
            "--source", str(bundled_real_sources())]
    result = CliRunner().invoke(app, args, env=env)
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "rp" / MANIFEST_FILE).read_text())
    assert manifest["counts"] == {"math": {"clean": 20, "salad": 2, "shuffled": 2},
                                  "code": {"clean": 10, "salad": 1, "shuffled": 1}}
    spec = RealPoolSpec(seed=3, n_math=20, n_code=10, junk_share=0.2)
    write_real_pool(bundled_real_sources(), tmp_path / "lib", spec)
    for name in (POOL_FILE, LABELS_FILE, MANIFEST_FILE):
        assert (tmp_path / "rp" / name).read_bytes() == (tmp_path / "lib" / name).read_bytes(), name
    assert "│ math   │    20 │           2 │              2 │" in result.output
    assert f"wrote {tmp_path / 'rp'}" in " ".join(result.output.split())  # a long path wraps at the console's width
    assert not (tmp_path / "root").exists()
