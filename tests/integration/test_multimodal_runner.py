"""The runner scores image candidates from a real DuckDB file: pending pages carry the image files to CAP's scorer.

Checked against the engine called directly on the same candidates and files, both for the fused route and
for a stored y-hat rejoined to its images (a second scoring config over the same generations).
"""

from __future__ import annotations

import io

import pytest
import torch
from PIL import Image

from capsel.cap_engine.config import ScoringConfig
from capsel.cap_engine.engine import ScoringEngine
from capsel.cap_engine.generation import HFGenerator
from capsel.cap_engine.inputs import CandidateText
from capsel.db import open_db
from capsel.image_store.store import ImageStore, image_store_dir
from capsel.methods.cap.scorer import CapScorer
from capsel.methods.cap.yhat import YhatScorer
from capsel.methods.ppl.scorer import PplConfig, PplScorer
from capsel.models.loading import describe_model, load_model
from capsel.runner.job import run_scorer
from capsel.store.image_files import database_image_store
from capsel_lab.tiny_vlm import build_tiny_vlm
from tests.fixtures.pool import append_candidates

torch.set_num_threads(1)
CONFIG = ScoringConfig(prompt_tokens=40, horizon=12)
LONG = " ".join(["the quick brown fox jumps over the lazy dog"] * 8)


def _png(colour) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (30, 20), colour).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mm_runner")
    db = folder / "pool.duckdb"
    con = open_db(str(db))
    store = ImageStore(image_store_dir(db))
    red, blue = store.put(_png((200, 30, 30))), store.put(_png((30, 30, 200)))
    for image in (red, blue):
        con.execute("insert into images values (?, ?, ?, ?, ?)",
                    [image.sha256, image.format, image.width, image.height, image.n_bytes])
    rows = [
        {"candidate_id": "a-one", "instruction": "<image>\nWhat colour is this?",
         "response": "It is red from one edge to the other edge.", "images": [red]},
        {"candidate_id": "b-two", "instruction": "Is <image> darker than <image>?",
         "response": "The second one is darker than the first one here.", "images": [red, blue]},
        {"candidate_id": "c-cut", "instruction": f"<image>\n{LONG}\n<image>\nWhich colour comes last?",
         "response": "The last picture is blue, the first one was red.", "images": [red, blue]},
        {"candidate_id": "d-text", "instruction": "Say something about colours.",
         "response": "Red and blue are both primary colours in paint.", "images": []},
    ]
    append_candidates(con, rows)
    for row in rows:
        if row["images"]:
            con.execute("update candidates set image_sha256 = ? where candidate_id = ?",
                        [[image.sha256 for image in row["images"]], row["candidate_id"]])
    files = {row["candidate_id"]: tuple(str(store.path(i.sha256, i.format)) for i in row["images"]) for row in rows}
    texts = [CandidateText(row["candidate_id"], row["instruction"], "", row["response"], files[row["candidate_id"]])
             for row in rows]
    model = build_tiny_vlm(folder / "vlm", "llava")
    return con, texts, describe_model(str(model), dtype="float32", device="cpu")


def _stored(con, config) -> dict:
    found = con.execute(
        "select candidate_id, layer_divergence, d_early, d_late, ppl, excluded_reason, images_dropped "
        "from divergences where config_hash = ? order by candidate_id", [config.scoring_hash]).fetchall()
    return {row[0]: row[1:] for row in found}


def test_runner_scores_image_candidates_as_the_engine_does(pool):
    con, texts, info = pool
    loaded = load_model(info)
    configs = [config.resolved(info.tokenizer) for config in (CONFIG, CONFIG.model_copy(update={"late": 0.5}))]
    for config in configs:
        run_scorer(con, CapScorer(info, config, 2, loaded))
        engine = ScoringEngine(loaded, config, 1)
        stored = _stored(con, config)
        assert sorted(stored) == [text.candidate_id for text in texts]
        for result in engine.generate_and_score(engine.prepare(texts)):
            divergence = result.divergence
            layers, d_early, d_late, ppl, reason, dropped = stored[result.candidate_id]
            assert reason == divergence.excluded_reason
            assert dropped == divergence.images_dropped
            if reason is None:
                assert layers == pytest.approx(divergence.layer_divergence, abs=1e-6)
                assert (d_early, d_late) == pytest.approx((divergence.d_early, divergence.d_late), abs=1e-6)
                assert ppl == pytest.approx(divergence.ppl, rel=1e-6)
    assert _stored(con, configs[0])["c-cut"][-1] == 1, "truncation dropped the first picture and said so"
    # the second config found CAP's stored y-hat (same generation config) and scored it with its pictures
    generators = dict(con.execute("select run_id, count(*) from generations group by run_id").fetchall())
    assert len(generators) == 1



def test_two_phase_generation_then_scoring_gives_the_fused_results(pool, tmp_path):
    """`capsel generate` then `capsel score` on a VLM: y-hat decoded with its pictures, scored from storage."""
    _, texts, info = pool
    source = pool[0]
    con = _copy_of(source, tmp_path / "two_phase.duckdb")

    loaded = load_model(info)
    config = CONFIG.resolved(info.tokenizer)
    generated = run_scorer(con, YhatScorer(CapScorer(info, config), HFGenerator(loaded, config.horizon, 4)))
    assert generated.n_done == len(texts)
    run_scorer(con, CapScorer(info, config, 2, loaded))

    assert con.execute("select count(distinct generator) from generations").fetchone()[0] == 1
    assert con.execute("select generator from generations limit 1").fetchone()[0] == "hf"
    fused = _stored(source, config)
    two_phase = _stored(con, config)
    assert sorted(two_phase) == sorted(fused)
    for candidate_id, (layers, d_early, d_late, ppl, reason, dropped) in two_phase.items():
        expected = fused[candidate_id]
        assert (reason, dropped) == (expected[4], expected[5])
        if reason is None:
            assert layers == pytest.approx(expected[0], abs=1e-6) and ppl == pytest.approx(expected[3], rel=1e-6)


def test_ppl_on_a_vlm_is_conditioned_on_the_pictures(pool, tmp_path):
    """The PPL baseline with no CAP run to reuse: the VLM computes it from the pictures and the prompt."""
    con, texts, info = pool
    fresh = _copy_of(con, tmp_path / "ppl.duckdb")
    limits = PplConfig(prompt_tokens=CONFIG.prompt_tokens, horizon=CONFIG.horizon, prompt_format="chat")
    run_scorer(fresh, PplScorer(limits, info, 2))

    found = dict(fresh.execute("select candidate_id, coalesce(cast(score as varchar), excluded_reason) "
                               "from method_scores where method = 'ppl'").fetchall())
    engine = ScoringEngine(load_model(info), limits.token_limits(), 1)
    expected = {s.candidate_id: s.divergence.ppl for s in engine.generate_and_score(engine.prepare(texts))}
    assert sorted(found) == sorted(expected)
    for candidate_id, ppl in expected.items():
        assert float(found[candidate_id]) == pytest.approx(ppl, rel=1e-5), candidate_id


def _copy_of(source, db):
    """A second database with the source's candidates and images (in its own store beside it)."""
    con = open_db(str(db))
    store = ImageStore(image_store_dir(db))
    for (sha, fmt, width, height, n_bytes) in source.execute("select * from images").fetchall():
        stored = store.put(database_image_store(source).path(sha, fmt).read_bytes())
        assert stored.sha256 == sha
        con.execute("insert into images values (?, ?, ?, ?, ?)", [sha, fmt, width, height, n_bytes])
    con.register("source_candidates", source.execute("select * from candidates").df())
    con.execute("insert into candidates select * from source_candidates")
    con.unregister("source_candidates")
    return con



def test_the_vllm_generator_refuses_a_vlm_in_one_line(pool):
    from capsel.cap_engine.vllm_generation import VLLMGenerator
    from capsel.errors import CapselError

    with pytest.raises(CapselError, match="does not take images yet"):
        VLLMGenerator(pool[2], CONFIG)
