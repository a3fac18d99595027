"""`score-baseline --method less`: stored gradient features for the pool, then the scores against one target.

Features are scored by the one resumable runner (`run_scorer`) under (model, feature config);
the target aggregate is computed once per target fingerprint; the scores are one SQL insert of
cosines, so a new target costs its own examples' gradients and no candidate's.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from capsel.db import one_row, transaction
from capsel.methods.less import METHOD as LESS
from capsel.methods.less.scorer import LessFeatureScorer
from capsel.methods.less.target import TargetFile, compute_target, stored_target
from capsel.runs import recorded_run


@dataclass
class LessSummary:
    """What scoring against one target did: the target it scored against (computed now or reused), the scores
    written."""

    target: dict | None = None
    target_computed: bool = False
    n_scores_written: int = 0

    def counters(self) -> dict:
        """What the target run did, for the flow's counters (empty before a target is stored)."""
        if self.target is None:
            return {}
        return {"target_fingerprint": self.target["target_fingerprint"], "target_computed": self.target_computed,
                "n_used": self.target["n_used"], "n_examples": self.target["n_examples"],
                "n_scores_written": self.n_scores_written}


def score_target(con: duckdb.DuckDBPyConnection, scorer: LessFeatureScorer, target: TargetFile) -> LessSummary:
    """Compute (or reuse) the target aggregate and write the cosine of every stored feature not yet scored."""
    model = scorer.identity.fingerprint
    fingerprint = target.fingerprint(model, scorer.config.hash)
    counters: dict = {}
    config = {"method": LESS.name, **target.config(model, scorer.config.hash), "target_path": str(target.path),
              "target_fingerprint": fingerprint}
    summary = LessSummary()
    with recorded_run(con, "less-target", counters, config=config, model_fingerprint=model) as run_id:
        summary.target = stored_target(con, fingerprint)
        if summary.target is None:
            summary.target = compute_target(con, scorer, target, run_id)
            summary.target_computed = True
        with transaction(con):
            (written,) = one_row(con, "baselines/less_scores_insert", {
                "target_fingerprint": fingerprint, "model_fingerprint": model,
                "feature_config_hash": scorer.config.hash, "run_id": run_id,
            })
        summary.n_scores_written = int(written)
        counters.update(
            target_fingerprint=fingerprint, target_computed=summary.target_computed,
            n_target_examples=summary.target["n_examples"], n_target_used=summary.target["n_used"],
            n_scores_written=summary.n_scores_written,
        )
    return summary
