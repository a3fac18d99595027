"""Longest response first: "Long Is More for Alignment" (Zhao et al., 2024) keeps the examples whose reference
response is longest. A whole capsel selection method in one file: its spec, its scorer and its declaration.

The pyproject beside this file names the module under the `capsel.methods` entry-point group; once installed,
`capsel score-baseline --method longest`, `capsel select --method longest`, `capsel flow select --method longest`,
`capsel compare` and `capsel lineage` know it.
"""

from __future__ import annotations

from typing import Literal, Sequence

from capsel.baselines.scorer import BaselineConfig, BaselineResult, BaselineScorer
from capsel.cap_engine.inputs import CandidateText
from capsel.methods.method import Method
from capsel.methods.selectors import TopScore
from capsel.methods.spec import MethodSpec
from capsel.scorers.base import ScorerIdentity


class LongestSpec(MethodSpec):
    """What the method's scorer is built from: nothing but the batch size (no model)."""

    method: Literal["longest"] = "longest"
    batch_size: int = 1024


class LongestConfig(BaselineConfig):
    """The stored config: its hash keys the scores (a new unit or definition would need a new field)."""

    method = "longest"
    unit: Literal["characters"] = "characters"


class LongestScorer(BaselineScorer):
    """The length of the reference response, stripped, in characters."""

    def score(self, candidates: Sequence[CandidateText]) -> list[BaselineResult]:
        return [BaselineResult(candidate.candidate_id, score=float(len(candidate.response.strip())))
                for candidate in candidates]


def longest_scorer(spec: LongestSpec) -> LongestScorer:
    """The scorer of `spec`: no model, so its identity names the measure itself."""
    identity = ScorerIdentity(fingerprint="response-chars-v1", name_or_path="response length (characters)",
                              revision=None, weight_files={}, dtype="none", architecture=None, n_layers=None)
    return LongestScorer(LongestConfig(), identity, spec.batch_size)


METHOD = Method(
    name="longest", summary="longest reference response first (Zhao et al., 2024)", selector=TopScore("high"),
    spec=LongestSpec, scorer="capsel_longest:longest_scorer", help="no model",
)
