"""Baselines on a pool that mixes text and image rows, in a real DuckDB store with real images beside it.

The text baselines (PPL without CAP's measurement, IFD, QuRating) exclude image rows with a reason before any
model runs, so counts add up in excluded.parquet and the funnel; k-center refuses the pool; the text rows get
exactly the scores they get on their own.
"""

from __future__ import annotations

import os
import subprocess
import sys

import orjson
import pandas as pd
import pytest

from capsel.cap_engine.inputs import CandidateText
from capsel.db import open_db
from capsel.methods.ifd.scorer import IFD_UNDEFINED_WITH_IMAGE, IfdConfig, IfdScorer
from capsel.methods.kcenter import KCenterSpec
from capsel.methods.kcenter.scorer import ImageRowsRefused, kcenter_scorer
from capsel.methods.ppl.scorer import PplConfig, PplScorer
from capsel.methods.qurating import QuratingSpec
from capsel.methods.qurating.scorer import QURATING_TEXT_ONLY, qurating_scorer
from capsel.methods.spec import LocalModelSpec
from capsel.publish.publish import publish_selection
from capsel.runner.job import run_scorer
from capsel.scorers.baseline import NEEDS_MULTIMODAL_SCORER
from capsel.selection.params import SelectionParams
from capsel.selection.plan import build_selection
from capsel.selection.scoring_key import resolve_scoring_key
from capsel.store.scope import Scope
from tests.fixtures.candidates import mixed_candidates
from tests.fixtures.pool import append_candidates
from tests.fixtures.tiny_aux_models import save_encoder_dir, save_rater_dir
from tests.support.image_pool import attach_images

# the "charts" domain mixes text rows and image rows (one image shared, one row with two)
IMAGES_OF = {"i002": [1], "i005": [2, 3], "i008": [1], "i011": [4]}
IMAGE_IDS = set(IMAGES_OF)


@pytest.fixture
def con(tmp_path):
    db_path = tmp_path / "capsel.duckdb"
    connection = open_db(db_path)
    text = mixed_candidates()
    charts = [{**c, "domain": "charts"} for c in mixed_candidates(seed=11, prefix="i")]
    append_candidates(connection, text + charts)
    # the source file append_candidates names, so a selection passes the gate's lineage checks
    connection.append("sources", pd.DataFrame([{
        "source_id": "test-source", "path": "/data/pool.jsonl", "sha256": "0" * 64, "n_bytes": 1,
        "n_rows_read": 28, "n_inserted": 28, "n_duplicates": 0, "n_quarantined": 0, "ingest_run_id": "test-ingest",
    }]), by_name=True)
    attach_images(connection, db_path, IMAGES_OF)
    yield connection
    connection.close()


@pytest.fixture(scope="module")
def rater_dir(tmp_path_factory):
    return save_rater_dir(tmp_path_factory.mktemp("rater") / "rater")


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory):
    return save_encoder_dir(tmp_path_factory.mktemp("encoder") / "bert")


def stored(con, method: str) -> dict[str, tuple[float | None, str | None]]:
    rows = con.execute("select candidate_id, score, excluded_reason from method_scores where method = ?",
                       [method]).fetchall()
    return {row[0]: (row[1], row[2]) for row in rows}


def text_rows(con) -> list[CandidateText]:
    frame = con.execute("select candidate_id, instruction, input, response from candidates "
                        "where image_sha256 is null order by candidate_id").df()
    return [CandidateText(*row) for row in frame.itertuples(index=False)]


def assert_text_rows_scored_as_alone(results: dict, direct: list) -> None:
    """The text rows' stored results are what the scorer gives them with no image row in sight."""
    for result in direct:
        score, reason = results[result.candidate_id]
        assert reason == result.excluded_reason
        assert score == pytest.approx(result.score, rel=1e-5) if result.score is not None else score is None


def test_ppl_excludes_image_rows_it_cannot_condition_on(con, info):
    scorer = PplScorer(PplConfig(), info, batch_size=4)
    summary = run_scorer(con, scorer)
    results = stored(con, "ppl")
    assert len(results) == summary.n_processed == 28
    assert {cid for cid, (_, reason) in results.items() if reason == NEEDS_MULTIMODAL_SCORER} == IMAGE_IDS
    assert all(results[cid][0] is None for cid in IMAGE_IDS)
    assert summary.excluded[NEEDS_MULTIMODAL_SCORER] == len(IMAGE_IDS)
    assert_text_rows_scored_as_alone(results, scorer.score(text_rows(con)))


def test_ppl_takes_the_image_conditioned_ppl_cap_measured(info):
    scorer = PplScorer(PplConfig(), info)
    measured = {"candidate_id": "i1", "images": ("/store/a.png",), "has_cap": True, "cap_ppl": 2.5,
                "cap_excluded_reason": None}
    assert scorer.reuse(measured).score == 2.5
    unmeasured = {**measured, "has_cap": False, "cap_ppl": None}
    assert scorer.reuse(unmeasured).excluded_reason == NEEDS_MULTIMODAL_SCORER
    assert scorer.reuse({**unmeasured, "images": ()}) is None  # a text row goes to the model


def test_ifd_excludes_image_rows_and_the_selection_accounts_for_them(con, info, tmp_path):
    config = IfdConfig(max_length=64)
    summary = run_scorer(con, IfdScorer(config, info, batch_size=4))
    results = stored(con, "ifd")
    assert {cid for cid, (_, reason) in results.items() if reason == IFD_UNDEFINED_WITH_IMAGE} == IMAGE_IDS
    assert summary.excluded[IFD_UNDEFINED_WITH_IMAGE] == len(IMAGE_IDS)
    assert_text_rows_scored_as_alone(results, IfdScorer(config, info, batch_size=4).score(text_rows(con)))

    key = resolve_scoring_key(con, method="ifd")
    selection = build_selection(con, SelectionParams(budget="3", method="ifd"), key)
    assert not IMAGE_IDS & set(selection.members["candidate_id"])
    folder = publish_selection(con, selection, tmp_path / "out").path
    excluded = pd.read_parquet(folder / "excluded.parquet")
    dropped = excluded[excluded["reason"] == IFD_UNDEFINED_WITH_IMAGE]
    assert set(dropped["candidate_id"]) == IMAGE_IDS and set(dropped["stage"]) == {"excluded"}
    # every candidate is a member or an excluded row, once
    listed = [*selection.members["candidate_id"], *excluded["candidate_id"].dropna()]
    assert sorted(listed) == sorted(con.execute("select candidate_id from candidates").df()["candidate_id"])
    funnel = {entry["stage"]: entry for entry in orjson.loads((folder / "manifest.json").read_bytes())["funnel"]}
    n_other = sum(reason != IFD_UNDEFINED_WITH_IMAGE for _, reason in results.values() if reason)
    assert funnel["excluded"]["reasons"][IFD_UNDEFINED_WITH_IMAGE] == len(IMAGE_IDS)
    assert funnel["excluded"]["rows"] == len(IMAGE_IDS) + n_other


def test_qurating_excludes_image_rows(con, rater_dir):
    spec = QuratingSpec(rater=LocalModelSpec(path=str(rater_dir), device="cpu"), batch_size=5)
    summary = run_scorer(con, qurating_scorer(spec))
    results = stored(con, "qurating")
    assert {cid for cid, (_, reason) in results.items() if reason} == IMAGE_IDS
    assert {reason for cid, (_, reason) in results.items() if reason} == {QURATING_TEXT_ONLY}
    assert summary.excluded == {QURATING_TEXT_ONLY: len(IMAGE_IDS)}
    assert_text_rows_scored_as_alone(results, qurating_scorer(spec).score(text_rows(con)))


def test_kcenter_refuses_image_rows_in_one_line_and_scores_a_text_domain(con, encoder_dir):
    spec = KCenterSpec(encoder=LocalModelSpec(path=str(encoder_dir), device="cpu"), batch_size=8)
    with pytest.raises(ImageRowsRefused) as refused:
        run_scorer(con, kcenter_scorer(spec))
    message = str(refused.value)
    assert "\n" not in message and "i002 has images" in message and "multimodal encoder" in message
    # refused while sorting the page out, before the encoder ran on any of it
    assert con.execute("select count(*) from embeddings").fetchall() == [(0,)]
    summary = run_scorer(con, kcenter_scorer(spec), Scope(domain="math"))
    assert summary.n_processed == 14
    assert con.execute("select count(*) from embeddings").fetchall() == [(14,)]


def test_capsel_compare_handles_a_pool_mixing_text_and_image_rows(con, info, tmp_path):
    run_scorer(con, PplScorer(PplConfig(), info, batch_size=4))
    run_scorer(con, IfdScorer(IfdConfig(max_length=64), info, batch_size=4))
    con.close()  # the CLI opens the store itself
    env = {key: value for key, value in os.environ.items() if not key.startswith("CAPSEL_")}
    env.update(CAPSEL_DB_PATH=str(tmp_path / "capsel.duckdb"), CAPSEL_OUTPUT_ROOT=str(tmp_path / "root"),
               COLUMNS="200")
    done = subprocess.run([sys.executable, "-m", "capsel", "compare", "--budget", "50%", "--out", "cmp", "--json"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    payload = orjson.loads(done.stdout)
    assert payload["methods"] == ["ppl", "ifd", "random"]
    assert any(note.startswith(f"{len(IMAGE_IDS)} candidates hold images") for note in payload["notes"])

    store = open_db(tmp_path / "capsel.duckdb", read_only=True)
    image_rows = store.execute("select candidate_id from candidates where image_sha256 is not null").df()
    assert set(image_rows["candidate_id"]) == IMAGE_IDS
    # members with images per (domain, method), from each method's own selection
    for row in payload["medians"]:
        method = row["method"]
        key = None if method == "random" else resolve_scoring_key(store, method=method)
        members = build_selection(store, SelectionParams(budget="50%", method=method), key).members
        of_domain = set(members.loc[members["domain"] == row["domain"], "candidate_id"])
        assert row["n_with_images"] == len(of_domain & IMAGE_IDS), row
        if method != "random":
            assert row["n_with_images"] == 0  # the text baselines excluded every image row
    store.close()
    assert any(row["n_with_images"] for row in payload["medians"] if row["method"] == "random")
    assert payload["report"] == str(tmp_path / "cmp" / "index.html") and (tmp_path / "cmp" / "index.html").exists()
