"""y-hat alone for every pending candidate (the vLLM pre-pass): whole batches committed, resumable.

Scoring later finds the stored y-hat and measures only the divergences (`capsel.scorers.cap`).
"""

from __future__ import annotations

import duckdb

from capsel.cap_engine.config import ScoringConfig
from capsel.cap_engine.generation import Generator, generation_results
from capsel.cap_engine.inputs import candidate_text
from capsel.db import one_row, transaction
from capsel.faults import fault_point
from capsel.models.loading import ModelInfo
from capsel.runner.progress import ProgressSink, RunSummary, Tally
from capsel.runs import recorded_run
from capsel.scorers.cap import CapScorer, input_batches
from capsel.store.notes import result_notes
from capsel.store.results import register
from capsel.store.scope import Scope, pending_pages
from capsel.store.tables import insert_generations

PAGE_SIZE = 1024


def run_generation(
    con: duckdb.DuckDBPyConnection, info: ModelInfo, generator: Generator, config: ScoringConfig,
    scope: Scope = Scope(), sink: ProgressSink | None = None, run_config: dict | None = None,
) -> RunSummary:
    """Generate y-hat for every pending candidate in scope; each batch commits its generations atomically.

    A generator with a batch size above PAGE_SIZE (vLLM) gets pages that large, so it can schedule a
    whole batch at once instead of draining its queue every PAGE_SIZE prompts.
    """
    keys = CapScorer(info, config, generator.batch_size)  # keys, registration and tokenising only
    key = register(con, keys)
    generation_hash = keys.generation_hash
    params = {"model_fingerprint": key.model_fingerprint, "generation_hash": key.generation_hash}
    tally = Tally(sink)
    run_config = {**keys.run_config(), "domain": scope.domain, "limit": scope.limit, **(run_config or {})}
    with recorded_run(con, "generate", tally.counters, config=run_config, model_fingerprint=key.model_fingerprint) \
            as run_id:
        n_in_scope, n_generated = one_row(con, "store/generation_progress", {"domain": scope.domain, **params})
        tally.begin(run_id, n_in_scope, n_generated, scope.limit)
        for rows in pending_pages(con, "store/generation_pending", params, scope, max(PAGE_SIZE, generator.batch_size)):
            for batch in input_batches(keys.prepare([candidate_text(row) for row in rows]), generator.batch_size):
                with tally.timing("model"):
                    results = generation_results(batch, generator)
                fault_point("generate.mid_batch")
                with tally.timing("write"), transaction(con):
                    insert_generations(con, key.model_fingerprint, generation_hash, run_id, results)
                    fault_point("generate.before_commit")
                fault_point("generate.after_commit")
                reasons = [r.excluded_reason for r in results if r.excluded_reason]
                tally.committed(len(results), reasons, n_generated=len(results) - len(reasons))
    summary = tally.finished()
    summary.notes = result_notes(con, keys, key)
    return summary
