"""Scoring runs against a real DuckDB file: incremental, keyed by model and config, resumable by whole batches."""

from __future__ import annotations

import orjson
import pytest

from capsel.cap_engine.config import ScoringConfig
from capsel.cap_engine.engine import ScoringEngine
from capsel.cap_engine.generation import HFGenerator
from capsel.cap_engine.inputs import CandidateText
from capsel.db import open_db
from capsel.methods.cap import CapSpec
from capsel.methods.cap.scorer import CapScorer
from capsel.methods.cap.yhat import YhatScorer
from capsel.methods.spec import ModelSpec
from capsel.models.loading import load_model
from capsel.runner import job
from capsel.runner.job import run_scorer
from capsel.runner.work import GPU_SHARD_SIZE, SHARD_SIZE, default_shard_size, workers_spec
from capsel.store.scope import Scope
from tests.fixtures.candidates import mixed_candidates
from tests.fixtures.pool import append_candidates

BATCH = 4


@pytest.fixture(scope="module")
def loaded(info):
    return load_model(info)


def _rows(con, table: str) -> list[tuple]:
    return con.execute(
        f"select candidate_id, config_hash, excluded_reason, run_id from {table} order by all"
    ).fetchall()


class Recorder:
    """A progress sink that remembers what it was told and can stop the run after some batches."""

    def __init__(self, stop_after: int | None = None):
        self.total, self.reports, self.stop_after = None, [], stop_after

    def start(self, total: int) -> None:
        self.total = total

    def advance(self, report) -> None:
        self.reports.append(report)
        if self.stop_after is not None and len(self.reports) >= self.stop_after:
            raise KeyboardInterrupt


def test_results_in_db_equal_the_pure_engine(con, loaded, pool):
    engine = ScoringEngine(loaded, ScoringConfig(), batch_size=BATCH)
    summary = run_scorer(con, CapScorer.of(engine))
    expected = engine.generate_and_score(engine.prepare([CandidateText(**c) for c in pool]))
    stored = {
        row[0]: row[1:] for row in con.execute(
            "select candidate_id, n_aligned, layer_divergence, d_early, d_late, ppl, excluded_reason "
            "from divergences"
        ).fetchall()
    }
    assert len(stored) == len(pool) == summary.n_processed
    for item in expected:
        d = item.divergence
        n_aligned, profile, d_early, d_late, ppl, reason = stored[d.candidate_id]
        assert reason == d.excluded_reason
        if reason:
            assert (n_aligned, profile, d_early, d_late, ppl) == (None, None, None, None, None)
        else:
            assert n_aligned == d.n_aligned
            assert profile == pytest.approx(d.layer_divergence, abs=1e-6)
            assert (d_early, d_late, ppl) == pytest.approx((d.d_early, d.d_late, d.ppl), rel=1e-6)
    generated = dict(con.execute("select candidate_id, generated_ids from generations").fetchall())
    assert {i.generation.candidate_id: i.generation.generated_ids for i in expected} == generated
    excluded = {reason for *_, reason in stored.values() if reason}
    assert excluded == {"short_prompt", "short_response", "empty_generation"}
    assert summary.n_done + sum(summary.excluded.values()) == summary.n_processed
    run = con.execute("select kind, status, counters, model_fingerprint from runs").fetchall()
    assert [(r[0], r[1], r[3]) for r in run] == [("score", "completed", loaded.info.fingerprint)]
    assert orjson.loads(run[0][2])["n_done"] == summary.n_done


def test_rerun_scores_only_what_is_missing(con, loaded, pool):
    engine = ScoringEngine(loaded, ScoringConfig(), batch_size=BATCH)
    first = run_scorer(con, CapScorer.of(engine), Scope(limit=10))
    assert first.n_processed == 10
    before = _rows(con, "divergences")
    sink = Recorder()
    second = run_scorer(con, CapScorer.of(engine), sink=sink)
    assert second.n_already_done == 10 and second.n_processed == len(pool) - 10
    assert sink.total == len(pool) - 10 == sum(r.n_candidates for r in sink.reports)
    after = _rows(con, "divergences")
    assert set(before) <= set(after) and len(after) == len(pool)
    third = run_scorer(con, CapScorer.of(engine))
    assert third.n_processed == 0 and _rows(con, "divergences") == after


def test_domain_scope_and_limit(con, loaded, pool):
    append_candidates(con, mixed_candidates(seed=5, prefix="z"), domain="code")
    engine = ScoringEngine(loaded, ScoringConfig(), batch_size=BATCH)
    summary = run_scorer(con, CapScorer.of(engine), Scope(domain="code", limit=5))
    ids = [row[0] for row in _rows(con, "divergences")]
    assert summary.n_in_scope == len(mixed_candidates()) and len(ids) == 5
    assert all(candidate_id.startswith("z") for candidate_id in ids)


def test_changed_horizon_scores_afresh_and_leaves_old_rows(con, loaded, pool):
    run_scorer(con, CapScorer.of(ScoringEngine(loaded, ScoringConfig(horizon=48), batch_size=BATCH)))
    old = con.execute("select * from divergences order by candidate_id").fetchall()
    summary = run_scorer(con, CapScorer.of(ScoringEngine(loaded, ScoringConfig(horizon=24), batch_size=BATCH)))
    assert summary.n_already_done == 0 and summary.n_processed == len(pool)
    hashes = con.execute("select config_hash, count(*) from divergences group by all").fetchall()
    assert sorted(count for _, count in hashes) == [len(pool), len(pool)]
    old_hash = old[0][2]
    assert con.execute(
        "select * from divergences where config_hash = ? order by candidate_id", [old_hash]
    ).fetchall() == old
    n_aligned = con.execute(
        "select max(n_aligned) from divergences where config_hash != ?", [old_hash]
    ).fetchone()[0]
    assert n_aligned == 24


def test_split_change_reuses_stored_generations(con, loaded, pool):
    config = ScoringConfig(prompt_format="raw")
    run_scorer(con, CapScorer.of(ScoringEngine(loaded, config, batch_size=BATCH)))
    changed = ScoringConfig(early=0.25, late=0.75, prompt_format="raw")
    assert changed.generation_hash == config.generation_hash != changed.scoring_hash
    summary = run_scorer(con, CapScorer.of(ScoringEngine(loaded, changed, batch_size=BATCH)))
    assert summary.n_processed == len(pool) and summary.n_generated == 0
    assert con.execute("select count(*) from generations").fetchone()[0] == len(pool)


def test_generate_then_score_matches_fused(tmp_path, con, loaded, pool):
    config = ScoringConfig(prompt_format="raw")
    generator = HFGenerator(loaded, config.horizon, batch_size=BATCH)
    generated = run_scorer(con, YhatScorer(CapScorer(loaded.info, config), generator))
    assert generated.n_processed == len(pool)
    scored = run_scorer(con, CapScorer.of(ScoringEngine(loaded, config, batch_size=BATCH)))
    assert scored.n_generated == 0 and scored.n_processed == len(pool)

    fused_con = open_db(tmp_path / "fused.duckdb")
    append_candidates(fused_con, pool)
    run_scorer(fused_con, CapScorer.of(ScoringEngine(loaded, config, batch_size=BATCH)))
    query = "select candidate_id, excluded_reason, d_early, d_late, ppl from divergences order by candidate_id"
    stored_path, fused_path = con.execute(query).fetchall(), fused_con.execute(query).fetchall()
    assert [row[:2] for row in stored_path] == [row[:2] for row in fused_path]
    for left, right in zip(stored_path, fused_path):
        if left[1] is None:
            assert left[2:] == pytest.approx(right[2:], rel=1e-5)
    gen_query = "select candidate_id, generated_ids, excluded_reason from generations order by candidate_id"
    assert con.execute(gen_query).fetchall() == fused_con.execute(gen_query).fetchall()
    fused_con.close()


def test_interrupt_between_batches_then_resume(con, loaded, pool):
    engine = ScoringEngine(loaded, ScoringConfig(), batch_size=BATCH)
    sink = Recorder(stop_after=2)
    with pytest.raises(KeyboardInterrupt):
        run_scorer(con, CapScorer.of(engine), sink=sink)
    committed = sum(report.n_candidates for report in sink.reports)
    assert con.execute("select count(*) from divergences").fetchone()[0] == committed
    assert con.execute("select status from runs").fetchall() == [("interrupted",)]
    _resume_and_check(con, engine, pool)


def test_interrupt_inside_a_batch_loses_only_that_batch(con, loaded, pool):
    engine = ScoringEngine(loaded, ScoringConfig(), batch_size=BATCH)
    sink = Recorder()

    def stop_in_second_model_batch(_module, _inputs):
        # The first report is the batch of exclusions, the second the first model batch.
        if len(sink.reports) >= 2:
            raise KeyboardInterrupt

    handle = loaded.model.register_forward_pre_hook(stop_in_second_model_batch)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_scorer(con, CapScorer.of(engine), sink=sink)
    finally:
        handle.remove()
    assert len(sink.reports) == 2
    committed = sum(report.n_candidates for report in sink.reports)
    assert sink.reports[1].n_candidates == BATCH
    for table in ("divergences", "generations"):
        assert con.execute(f"select count(*) from {table}").fetchone()[0] == committed
    _resume_and_check(con, engine, pool)


def _resume_and_check(con, engine, pool) -> None:
    summary = run_scorer(con, CapScorer.of(engine))
    assert summary.n_already_done + summary.n_processed == len(pool)
    counts = con.execute("select candidate_id, count(*) from divergences group by all").fetchall()
    assert len(counts) == len(pool) and {count for _, count in counts} == {1}
    assert con.execute("select count(distinct candidate_id) from generations").fetchone()[0] == len(pool)


def _scored_prompt_lengths(monkeypatch, scorer) -> list[int]:
    """The prompt lengths of the rows `scorer` scores with its model, in the order it scores them."""
    seen: list[int] = []
    score = scorer.score

    def recorded(items):
        seen.extend(len(item.prompt_ids) for item in items if not item.excluded_reason)
        return score(items)

    monkeypatch.setattr(scorer, "score", recorded)
    return seen


@pytest.mark.parametrize("page_size", [None, 8])
def test_in_process_pages_hold_many_batches_sorted_together(monkeypatch, con, loaded, pool, page_size):
    # The floor of 1,024 would put this whole pool in one page whatever the rule; lowered, the default page is
    # BATCHES_PER_PAGE batches.
    monkeypatch.setattr(job, "PAGE_SIZE", 8)
    scorer = CapScorer.of(ScoringEngine(loaded, ScoringConfig(), batch_size=BATCH))
    lengths = _scored_prompt_lengths(monkeypatch, scorer)
    run_scorer(con, scorer, page_size=page_size)
    expected_page = job.BATCHES_PER_PAGE * BATCH if page_size is None else page_size
    config = orjson.loads(con.execute("select config from runs where kind = 'score'").fetchone()[0])
    assert config["shard_size"] == expected_page
    # One page for the whole pool: the batches are cut from all of it sorted; pages of 8 rows sort two at a time.
    assert 8 < len(pool) <= job.BATCHES_PER_PAGE * BATCH
    assert len(lengths) > 2 * BATCH
    assert (lengths == sorted(lengths)) == (page_size is None)


@pytest.fixture(scope="module")
def tiny_vlm_info(tmp_path_factory):
    from capsel_lab.tiny_vlm import build_tiny_vlm
    from tests.fixtures.tiny_vlm_rows import describe_tiny_vlm

    return describe_tiny_vlm(build_tiny_vlm(tmp_path_factory.mktemp("vlm") / "llava", "llava"), "llava")


def test_a_vlms_pages_keep_their_usual_size(info, tiny_vlm_info):
    # 16 batches of 128 pictures' tensors would be prepared at once; a text page of them holds token ids.
    vlm = CapScorer(tiny_vlm_info, ScoringConfig(), batch_size=128)
    text = CapScorer(info, ScoringConfig(), batch_size=128)
    assert job.default_page_size(vlm, dispatched=False) == job.PAGE_SIZE
    assert job.default_page_size(text, dispatched=False) == job.BATCHES_PER_PAGE * 128
    assert job.default_page_size(text, dispatched=True) == job.PAGE_SIZE


@pytest.mark.parametrize(("device", "uses_gpus", "vlm", "expected"), [
    ("auto", False, False, SHARD_SIZE), ("cpu", True, False, SHARD_SIZE), ("auto", True, False, GPU_SHARD_SIZE),
    ("cuda", False, False, GPU_SHARD_SIZE), ("cuda", False, True, SHARD_SIZE),
])
def test_a_flows_workers_on_a_gpu_get_shards_of_many_batches(info, tiny_vlm_info, device, uses_gpus, vlm,
                                                             expected):
    described = tiny_vlm_info if vlm else info
    spec = workers_spec(CapSpec(model=ModelSpec(path=str(described.source.local_dir), device=device)),
                        uses_gpus=uses_gpus, local_cuda=False)
    assert default_shard_size(spec, CapScorer(described, ScoringConfig(), batch_size=256)) == expected
    assert GPU_SHARD_SIZE >= job.BATCHES_PER_PAGE * 256 > SHARD_SIZE


def test_a_scoring_run_that_wrote_results_checkpoints_them_into_the_file(con, loaded, tmp_path):
    # a checkpoint is what makes DuckDB let go of the key index the results' inserts loaded (capsel/db/checkpoint.py)
    wal = tmp_path / "capsel.duckdb.wal"
    assert wal.exists() and wal.stat().st_size > 0  # the candidates' insert is still in the log
    summary = run_scorer(con, CapScorer.of(ScoringEngine(loaded, ScoringConfig(), batch_size=BATCH)))
    assert summary.n_processed > 0
    assert not wal.exists() or wal.stat().st_size == 0
    assert con.execute("select count(*) from divergences").fetchone()[0] == summary.n_processed
