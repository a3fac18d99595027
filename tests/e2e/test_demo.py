"""`capsel demo` as a user runs it, on the lab model and on a real registry model, checked against its DB and files."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import orjson
import pandas as pd
import pytest

from capsel.db import open_db
from capsel_lab.demo import MEASURED_PACE, REFERENCE_MACHINE, TOY_MODEL
from capsel_lab.demo_pool import MALFORMED_LINES, demo_pool_dir, read_pool, stage_demo_pool
from capsel_lab.labels import candidate_labels
from capsel_lab.noise.stats import percentiles_among
from tests.fixtures.real_models import REAL_MODELS_DIR, smollm2_instruct  # noqa: F401 (fixture)
from tests.support.demo_run import run_demo

pytestmark = pytest.mark.e2e

PER_DOMAIN = 40
REAL_PER_DOMAIN = 16


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory, prefect_server):
    return run_demo(tmp_path_factory, prefect_server, "--model", "demo", "--limit", str(PER_DOMAIN), "--budget", "5",
                     "--json")


@pytest.fixture(scope="module")
def real_demo_run(tmp_path_factory, prefect_server, smollm2_instruct):  # noqa: F811
    return run_demo(tmp_path_factory, prefect_server, "--model", "smollm2-135m-instruct", "--limit",
                     str(REAL_PER_DOMAIN), "--budget", "3", CAPSEL_MODELS_DIR=str(REAL_MODELS_DIR))


def _db_tables(folder) -> dict:
    con = open_db(folder / "capsel.duckdb", read_only=True)
    try:
        return {
            "n_candidates": con.execute("select count(*) from candidates").fetchone()[0],
            "n_duplicates": con.execute("select count(*) from duplicates").fetchone()[0],
            "quarantine": Counter(dict(con.execute("select reason, count(*) from quarantine group by all").fetchall())),
            "scores": con.execute(
                "select d.candidate_id, c.domain, d.excluded_reason, d.ppl, s.z from divergences d "
                "join candidates c using (candidate_id) left join cap_scores s using (candidate_id)").df(),
            "ids": set(r[0] for r in con.execute("select candidate_id from candidates").fetchall()),
        }
    finally:
        con.close()


def _published(folder) -> tuple[dict, pd.DataFrame]:
    (selection,) = sorted((folder / "selections").glob("sel-*"))
    return orjson.loads((selection / "manifest.json").read_bytes()), pd.read_parquet(selection / "data.parquet")


def test_demo_publishes_a_gated_selection_whose_counts_add_up(demo_run, tmp_path):
    folder, stdout = demo_run
    records = stage_demo_pool(demo_pool_dir(), tmp_path, PER_DOMAIN)[1]
    labels = Counter(record["lab_label"] for record in records)
    assert all(labels[label] for label in ("known", "learnable", "junk", "duplicate"))
    manifest, members = _published(folder)
    db = _db_tables(folder)
    excluded = set(db["scores"].loc[db["scores"]["excluded_reason"].notna(), "candidate_id"])

    assert manifest["gate"]["success"] and manifest["method"] == "cap"
    # every row of the staged pool is a candidate, a dropped duplicate or a quarantined row
    quarantined = sum(db["quarantine"].values())
    assert db["n_candidates"] + db["n_duplicates"] + quarantined == len(records) + len(MALFORMED_LINES)
    assert db["n_duplicates"] == labels["duplicate"] > 0
    assert quarantined == len(MALFORMED_LINES) == len(db["quarantine"])
    assert len(db["scores"]) == db["n_candidates"] and db["ids"] == set(candidate_labels(records)["candidate_id"])
    # 5 per domain, from the candidates the engine measured
    assert Counter(members["domain"]) == {"math": 5, "code": 5, "science": 5}
    assert not set(members["candidate_id"]) & excluded and set(members["candidate_id"]) <= db["ids"]
    assert manifest["n_members"] == len(members)
    (selection,) = sorted((folder / "selections").glob("sel-*"))
    for name in ("data.jsonl", "report/index.html", "gate/index.html"):
        assert (selection / name).is_file()
    assert (folder / "profile" / "profile.png").is_file() and (folder / "profile" / "verdict.json").is_file()
    # --json: one object on stdout, the same numbers as demo.json and the store
    shown = orjson.loads(stdout)
    assert shown["ok"] and shown["selection_id"] == selection.name and shown["gate_success"]
    assert shown["counts"] == orjson.loads((folder / "demo.json").read_bytes())["counts"]
    assert (shown["counts"]["duplicates"], shown["counts"]["quarantined"]) == (db["n_duplicates"], quarantined)
    assert shown["counts"]["selected"] == len(members) and shown["paths"]["data"] == str(selection / "data.jsonl")
    assert shown["paths"]["summary"] == str(folder / "demo.json")
    # every step timed, and the estimate made of the reference machine's pace for every step, the survey included
    assert set(shown["steps_s"]) == {"rank survey", "flow", "comparisons"}
    # each figure is rounded to 0.1 s on its own, so the steps' sum may pass the wall by half a tenth per figure
    rounding = 0.05 * (len(shown["steps_s"]) + 1)
    assert sum(shown["steps_s"].values()) <= shown["wall_s"] + rounding
    pace = MEASURED_PACE[TOY_MODEL]
    n_scored = len(records) - labels["duplicate"]
    assert shown["estimated_s"] == pytest.approx(
        pace.survey_s + pace.start_s + n_scored / pace.rate + pace.compare_s, abs=0.1)
    # the funnel: rows read down to members, each stage's rows listed in excluded.parquet beside the selection
    funnel = {entry["stage"]: entry for entry in shown["funnel"]}
    assert shown["funnel"] == manifest["funnel"] == orjson.loads((folder / "demo.json").read_bytes())["funnel"]
    assert funnel["read"]["rows"] == len(records) + len(MALFORMED_LINES) == shown["counts"]["rows_read"]
    dropped = pd.read_parquet(selection / "excluded.parquet")
    assert len(dropped) + len(members) == funnel["read"]["rows"]
    assert (funnel["duplicate"]["rows"], funnel["quarantined"]["rows"]) == (db["n_duplicates"], quarantined)
    assert funnel["excluded"]["rows"] == len(excluded) and funnel["selected"]["rows"] == len(members)
    assert funnel["eligible"]["rows"] == db["n_candidates"] - len(excluded)
    assert dropped.groupby("stage").size().to_dict() == {
        stage: entry["rows"] for stage, entry in funnel.items() if entry["rows"] and stage not in (
            "read", "eligible", "selected")}


@pytest.mark.slow
def test_real_model_demo_reports_where_each_junk_kind_went(real_demo_run):
    folder, stdout = real_demo_run
    records = read_pool(folder / "pool" / "pool.jsonl")
    labels = candidate_labels(records).drop(columns="domain")
    summary = orjson.loads((folder / "demo.json").read_bytes())
    manifest, members = _published(folder)
    db = _db_tables(folder)
    # the staged cut: 16 clean rows per domain, 5% junk of both kinds, a near-duplicate per domain, bad rows
    staged = Counter(record["lab_label"] for record in records)
    assert staged == {"clean": 2 * REAL_PER_DOMAIN, "junk": 2, "duplicate": 2}
    assert summary["counts"]["duplicates"] == db["n_duplicates"] == 2
    assert summary["counts"]["quarantined"] == len(MALFORMED_LINES)
    assert summary["prompt_format"] == "chat" and "prompt format chat" in stdout  # auto: SmolLM2 has a template
    # the announced time names where it was measured and every step; the last line says what each step took here
    announced = " ".join(stdout.split())
    assert f"On {REFERENCE_MACHINE} this took about" in announced and "rank survey" in announced
    assert re.search(r"took [\d.]+ (s|min) \(estimated [\d.]+ (s|min) from .*\): rank survey [\d.]+ (s|min), "
                     r"flow [\d.]+ (s|min), comparisons [\d.]+ (s|min); scored at [\d.]+ candidates/s$", announced)

    scores = db["scores"].merge(labels, on="candidate_id")
    eligible = scores[scores["excluded_reason"].isna()]
    clean, junk = eligible[eligible["lab_label"] == "clean"], eligible[eligible["lab_label"] == "junk"]
    assert summary["junk"]["n"] == len(scores[scores["lab_label"] == "junk"]) == 2
    for method, column in (("ppl", "ppl"), ("cap", "z")):
        expected = percentiles_among(junk[column].to_numpy(), clean[column].to_numpy())
        ranks = summary["junk"]["ranks"]["all junk"][method]
        assert ranks["median"] == pytest.approx(np.median(expected))
        assert (ranks["min"], ranks["max"]) == pytest.approx((expected.min(), expected.max()))
    kinds = {record["lab_detail"].split(":")[0] for record in records if record["lab_label"] == "junk"}
    assert kinds == {"salad", "shuffled"} and set(summary["junk"]["ranks"]) == {"all junk", *kinds}

    selections = summary["junk"]["selections"]["methods"]
    published_junk = set(members["candidate_id"]) & set(scores.loc[scores["lab_label"] == "junk", "candidate_id"])
    assert selections["cap"]["n_junk"] == len(published_junk) and selections["cap"]["n_members"] == len(members) == 6
    # PPL high first, 3 per domain, over every candidate the PPL baseline stored as eligible (ties by id)
    con = open_db(folder / "capsel.duckdb", read_only=True)
    try:
        ppl = con.execute("select m.candidate_id, c.domain, m.score from method_scores m join candidates c "
                          "using (candidate_id) where m.method = 'ppl' and m.excluded_reason is null").df()
    finally:
        con.close()
    top_ppl = ppl.merge(labels, on="candidate_id").sort_values(["domain", "score", "candidate_id"],
                                                               ascending=[True, False, True])
    assert selections["ppl"]["n_junk"] == int((top_ppl.groupby("domain").head(3)["lab_label"] == "junk").sum())
    assert manifest["gate"]["success"]
