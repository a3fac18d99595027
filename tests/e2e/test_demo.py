"""`capsel demo` as a user runs it: the select flow on the bundled lab pool, checked against its DB and files."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import orjson
import pandas as pd
import pytest

from capsel.db import open_db
from capsel.lab.demo_pool import MALFORMED_LINES, demo_pool_dir, stage_demo_pool
from capsel.lab.labels import candidate_labels

pytestmark = pytest.mark.e2e

PER_DOMAIN = 40


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory, prefect_server):
    root = tmp_path_factory.mktemp("demo_root")
    env = prefect_server.env(CAPSEL_OUTPUT_ROOT=str(root))
    done = subprocess.run([sys.executable, "-m", "capsel", "demo", "--limit", str(PER_DOMAIN), "--budget", "5"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return root / "demo", done.stdout


def _staged_records(tmp_path) -> list[dict]:
    return stage_demo_pool(demo_pool_dir(), tmp_path, PER_DOMAIN)[1]


def test_demo_publishes_a_gated_selection_whose_counts_add_up(demo_run, tmp_path):
    folder, stdout = demo_run
    records = _staged_records(tmp_path)
    labels = Counter(record["lab_label"] for record in records)
    assert all(labels[label] for label in ("known", "learnable", "junk", "duplicate"))
    (selection,) = sorted((folder / "selections").glob("sel-*"))
    manifest = orjson.loads((selection / "manifest.json").read_bytes())
    members = pd.read_parquet(selection / "data.parquet")
    con = open_db(folder / "capsel.duckdb", read_only=True)
    try:
        n_candidates = con.execute("select count(*) from candidates").fetchone()[0]
        n_duplicates = con.execute("select count(*) from duplicates").fetchone()[0]
        reasons = Counter(dict(con.execute("select reason, count(*) from quarantine group by all").fetchall()))
        excluded = set(r[0] for r in con.execute(
            "select candidate_id from divergences where excluded_reason is not null").fetchall())
        n_scored = con.execute("select count(*) from divergences").fetchone()[0]
        ids = set(r[0] for r in con.execute("select candidate_id from candidates").fetchall())
    finally:
        con.close()

    assert manifest["gate"]["success"] and manifest["method"] == "cap"
    # every row of the staged pool is a candidate, a dropped duplicate or a quarantined row
    assert n_candidates + n_duplicates + sum(reasons.values()) == len(records) + len(MALFORMED_LINES)
    assert n_duplicates == labels["duplicate"] > 0
    assert sum(reasons.values()) == len(MALFORMED_LINES) and len(reasons) == len(MALFORMED_LINES)
    assert n_scored == n_candidates and ids == set(candidate_labels(records)["candidate_id"])
    # 5 per domain, from the candidates the engine measured
    assert Counter(members["domain"]) == {"math": 5, "code": 5, "science": 5}
    assert not set(members["candidate_id"]) & excluded and set(members["candidate_id"]) <= ids
    assert manifest["n_members"] == len(members)
    for name in ("data.jsonl", "report/index.html", "gate/index.html"):
        assert (selection / name).is_file()
        assert name.split("/")[0] in stdout
    assert (folder / "profile" / "profile.png").is_file() and (folder / "profile" / "verdict.json").is_file()


def test_demo_reports_the_junk_it_measured(demo_run, tmp_path):
    folder, stdout = demo_run
    records = _staged_records(tmp_path)
    junk = set(candidate_labels([r for r in records if r["lab_label"] == "junk"])["candidate_id"])
    (selection,) = sorted((folder / "selections").glob("sel-*"))
    members = set(pd.read_parquet(selection / "data.parquet")["candidate_id"])
    summary = orjson.loads(stdout[stdout.rindex('{\n  "counts"'):].split("\n}\n")[0] + "\n}")
    assert summary["junk"]["n"] == len(junk) > 0
    assert summary["junk"]["selected"] == len(junk & members)
    assert summary["junk"]["selected"] + summary["junk"]["selected_clean"] == summary["counts"]["selected"] == 15
