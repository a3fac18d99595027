"""Stage: score the pool with any method's scorer, CAP included (resumable); a method that ranks against a target
(LESS) then scores it.

A y-hat pre-pass (vLLM writing every missing y-hat before the scorer loads) is the generate stage's, run first by
whoever chose the generator (`capsel score`, the score flow): this stage then finds every y-hat stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from capsel.methods.method import load_object
from capsel.methods.registry import build_scorer, method
from capsel.methods.scorer_spec import ScorerSpec
from capsel.runner.job import run_scorer
from capsel.runner.progress import RunSummary
from capsel.scorers.base import Scorer
from capsel.stages.context import RunContext
from capsel.store.results import ResultKey, result_key
from capsel.store.scope import Scope


@dataclass(frozen=True)
class ScoreRequest:
    """What to score: a method's spec and the candidates in scope.
    `scorer`: one already built from the spec (a door that described it first, or the lab's own engine)."""

    spec: ScorerSpec
    scope: Scope = Scope()
    scorer: Scorer | None = None


@dataclass
class ScoreSummary:
    """What the stage did: the scoring run, its key and the LESS target, when it ran; a caller that ran a y-hat
    pre-pass first adds its run (`generation`)."""

    scoring: RunSummary
    key: ResultKey
    generation: RunSummary | None = None
    # what the method's target scoring returned: a summary with counters()
    target: Any = None

    def counters(self) -> dict:
        """JSON-ready counters: the method, its key, the scoring run and the target it scored against."""
        counters = {"method": self.key.method, "scorer_fingerprint": self.key.model_fingerprint,
                    "config_hash": self.key.config_hash, "score": self.scoring.counters()}
        if self.generation is not None:
            counters["generate"] = self.generation.counters()
        if self.target is not None and (target := self.target.counters()):
            counters["target"] = target
        return counters


def score(request: ScoreRequest, ctx: RunContext) -> ScoreSummary:
    """Score every pending candidate in scope with the request's scorer, built from its spec when not given."""
    targeting = method(request.spec.method).target
    # read before any scoring, so a bad target row fails first
    target = load_object(targeting.prepare)(request.spec) if targeting is not None else None
    scorer = request.scorer or build_scorer(request.spec)
    run_config = {**ctx.run_config, **({"target": str(target.path), "target_max": target.target_max} if target else {})}
    summary = run_scorer(
        ctx.con, scorer, request.scope, ctx.sink, run_config,
        dispatch=ctx.dispatch, page_size=ctx.page_size, max_in_flight=ctx.max_in_flight,
        parent_run_id=ctx.parent_run_id, prefect_flow_run_id=ctx.prefect_flow_run_id,
    )
    scored_target = load_object(targeting.score)(ctx.con, scorer, target) if targeting and target else None
    return ScoreSummary(summary, result_key(scorer), target=scored_target)
