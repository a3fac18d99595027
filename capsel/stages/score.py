"""Stage: score the pool with any method's scorer, CAP included (resumable); LESS then scores its target."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from capsel.baselines.less.scorer import LessFeatureScorer
from capsel.baselines.less.target import TargetFile, read_target
from capsel.errors import OptionError
from capsel.runner.build import build_scorer
from capsel.runner.generation import run_generation
from capsel.runner.job import PAGE_SIZE, run_scorer
from capsel.runner.less_job import LessSummary, score_target
from capsel.runner.progress import RunSummary
from capsel.scorers.base import Scorer
from capsel.scorers.cap import CapScorer
from capsel.scorers.specs import LessSpec, ScorerSpec
from capsel.scoring.generation import Generator
from capsel.stages.context import RunContext
from capsel.store.results import ResultKey, result_key
from capsel.store.scope import Scope


@dataclass(frozen=True)
class ScoreRequest:
    """What to score: a method's spec and the candidates in scope; CAP may take y-hat from a `generator` first."""

    spec: ScorerSpec
    scope: Scope = Scope()
    generator: Generator | None = None


@dataclass
class ScoreSummary:
    """What the stage did: the scoring run, its key, the y-hat pre-pass and the LESS target, when they ran."""

    scoring: RunSummary
    key: ResultKey
    generation: RunSummary | None = None
    target: LessSummary | None = None

    def counters(self) -> dict:
        """JSON-ready counters: the method, its key, the scoring run and the target it scored against."""
        counters = {"method": self.key.method, "scorer_fingerprint": self.key.model_fingerprint,
                    "config_hash": self.key.config_hash, "score": self.scoring.counters()}
        if self.generation is not None:
            counters["generate"] = self.generation.counters()
        if self.target is not None and self.target.target is not None:
            less, stored = self.target, self.target.target
            counters["target"] = {"target_fingerprint": stored["target_fingerprint"],
                                  "target_computed": less.target_computed, "n_used": stored["n_used"],
                                  "n_examples": stored["n_examples"], "n_scores_written": less.n_scores_written}
        return counters


def target_of(spec: ScorerSpec) -> TargetFile | None:
    """The LESS target file a spec names, read once so a bad row fails before any gradient is taken."""
    if not isinstance(spec, LessSpec) or spec.target is None:
        return None
    file = TargetFile.of(Path(spec.target), spec.target_max)
    read_target(file)
    return file


def score(request: ScoreRequest, ctx: RunContext, scorer: Scorer | None = None) -> ScoreSummary:
    """Score every pending candidate in scope with the spec's scorer (`scorer`: one already built from it)."""
    target = target_of(request.spec)
    scorer = scorer or build_scorer(request.spec)
    generation = None
    if request.generator is not None:
        if not isinstance(scorer, CapScorer):
            raise OptionError(f"a y-hat [[generator]] applies to cap, not to {scorer.method}")
        # the generator writes every missing y-hat first, then exits (freeing its GPU memory); the scorer then
        # finds every y-hat stored
        try:
            generation = run_generation(ctx.con, scorer.info, request.generator, scorer.config, request.scope,
                                        ctx.sink, {"generator": request.generator.name})
        finally:
            if hasattr(request.generator, "close"):
                request.generator.close()
    run_config = {**ctx.run_config, **({"target": str(target.path), "target_max": target.target_max} if target else {})}
    summary = run_scorer(
        ctx.con, scorer, request.scope, ctx.sink, run_config,
        dispatch=ctx.dispatch, page_size=ctx.page_size or PAGE_SIZE, max_in_flight=ctx.max_in_flight,
        parent_run_id=ctx.parent_run_id, prefect_flow_run_id=ctx.prefect_flow_run_id,
    )
    less = score_target(ctx.con, scorer, target) if isinstance(scorer, LessFeatureScorer) and target else None
    return ScoreSummary(summary, result_key(scorer), generation, less)
