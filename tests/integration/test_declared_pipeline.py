"""The declared selection pipeline, run in this process on a real pool file, model and DuckDB file: it publishes what
the steps run one by one (as `capsel ingest`, `capsel score`, `capsel select` run them) publish, in the declared
order; a rescore that adds nothing stops after scoring; a pool that loses every row stops after ingest."""

from __future__ import annotations

import random

import pytest

from capsel.config import load_settings
from capsel.db import open_db
from capsel.errors import CapselError
from capsel.ingest.pipeline import IngestOptions
from capsel.methods.cap import CapSpec
from capsel.methods.spec import ModelSpec
from capsel.selection.params import SelectionParams
from capsel.stages.context import RunContext
from capsel.stages.ingest import IngestRequest, ingest
from capsel.stages.pipeline import SELECTION_STEPS, SelectionOutcome, SelectionPlan, call_here, run_steps
from capsel.stages.score import ScoreRequest, score
from capsel.stages.select import SelectRequest, select_and_publish
from tests.integration.pool_files import write_jsonl
from tests.support.scored_pool import pinned_rows

WORDS = "the a of to in is was for on that with as by at from this be it are or an".split()


def _records(n: int, seed: int = 3) -> list[dict]:
    rng = random.Random(seed)

    def text(k: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(k))

    return [{"instruction": text(rng.randint(3, 12)), "response": text(rng.randint(2, 14)),
             "domain": ("math", "code")[index % 2]} for index in range(n)]


def _plan(pool, model_dir, out_dir, publish_unchanged: bool = True) -> SelectionPlan:
    spec = CapSpec(model=ModelSpec(path=str(model_dir), dtype="float32", device="cpu", prompt_format="raw"),
                   batch_size=4)
    return SelectionPlan(IngestRequest([str(pool)], IngestOptions()), ScoreRequest(spec),
                         SelectRequest(SelectionParams(budget="4"), out_dir),
                         publish_unchanged=publish_unchanged)


def _recording(calls: list[str], pinned: dict[str, int] | None = None):
    def call(declared, request, ctx):
        calls.append(declared.name)
        if pinned is not None:  # CAP's z held for the run when the step starts
            pinned[declared.name] = pinned_rows(ctx.con)
        return call_here(declared, request, ctx)
    return call


def test_the_declared_pipeline_publishes_what_its_steps_run_one_by_one_publish(tmp_path, model_dir):
    pool = write_jsonl(tmp_path / "pool.jsonl", _records(24))
    settings = load_settings()
    calls: list[str] = []
    ended: list[str] = []
    pinned: dict[str, int] = {}
    with open_db(tmp_path / "declared.duckdb") as con:
        plan = _plan(pool, model_dir, tmp_path / "declared")
        outcome = run_steps(SELECTION_STEPS, plan, SelectionOutcome(), RunContext(con, settings),
                            _recording(calls, pinned), lambda name, outcome: ended.append(name))
        # the select step reads the z the residualize step pinned (every eligible row); the run lets it go at its end
        eligible = sum(pool.size for pool in outcome.selected.selection.pools)
        assert pinned == {"ingest": 0, "score": 0, "residualize": 0, "select-and-publish": eligible}
        assert eligible > 8 and pinned_rows(con) == 0
    assert calls == ["ingest", "score", "residualize", "select-and-publish"]
    assert ended == [declared.name for declared in SELECTION_STEPS]
    assert outcome.ingest is not None and outcome.ingest.totals().n_inserted == 24
    assert outcome.score is not None and outcome.score.scoring.n_processed == 24
    assert outcome.residuals is not None and {fit.domain for fit in outcome.residuals.fits} == {"math", "code"}
    assert outcome.selected is not None

    # the same steps called one by one, as the CLI commands call them: selection resolves its own key and fits
    with open_db(tmp_path / "by_hand.duckdb") as con:
        ctx = RunContext(con, settings)
        ingest(plan.ingest, ctx)
        scored = score(plan.score, ctx)
        wanted = SelectionParams(budget="4", model=scored.key.model_fingerprint, config_hash=scored.key.config_hash)
        by_hand = select_and_publish(SelectRequest(wanted, tmp_path / "by_hand"), ctx)
    members = sorted(outcome.selected.selection.members["candidate_id"])
    assert len(members) == 8
    assert members == sorted(by_hand.selection.members["candidate_id"])
    assert outcome.selected.selection.members["z"].tolist() == pytest.approx(
        by_hand.selection.members["z"].tolist(), abs=1e-9)


def test_a_rescore_that_adds_nothing_stops_after_scoring(tmp_path, model_dir):
    pool = write_jsonl(tmp_path / "pool.jsonl", _records(12))
    with open_db(tmp_path / "capsel.duckdb") as con:
        ctx = RunContext(con, load_settings())
        first = run_steps(SELECTION_STEPS, _plan(pool, model_dir, tmp_path / "out", False), SelectionOutcome(), ctx)
        assert first.selected is not None
        calls: list[str] = []
        again = run_steps(SELECTION_STEPS, _plan(pool, model_dir, tmp_path / "out", False), SelectionOutcome(), ctx,
                          _recording(calls))
    assert calls == ["ingest", "score"]
    assert again.n_new() == 0 and again.selected is None and again.residuals is None
    assert again.notes == ["nothing new was ingested or scored: no new selection version"]


def test_a_pool_that_loses_every_row_stops_after_ingest_with_the_cli_words(tmp_path, model_dir):
    pool = write_jsonl(tmp_path / "pool.jsonl", [{"question": "2+2?", "answer": "4"}] * 3)
    calls: list[str] = []
    ended: list[str] = []
    with open_db(tmp_path / "capsel.duckdb") as con:
        outcome = SelectionOutcome()
        with pytest.raises(CapselError, match=r"every row of .*pool.jsonl was quarantined") as raised:
            run_steps(SELECTION_STEPS, _plan(pool, model_dir, tmp_path / "out"), outcome,
                      RunContext(con, load_settings()), _recording(calls), lambda name, outcome: ended.append(name))
    assert calls == ["ingest"] and ended == ["ingest"]
    assert outcome.ingest is not None and outcome.ingest.totals().n_quarantined == 3
    assert "question" in str(raised.value)  # the fields hint `capsel ingest` prints
