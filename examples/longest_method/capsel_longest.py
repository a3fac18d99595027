"""Longest response first: "Long Is More for Alignment" (Zhao et al., 2024) keeps the examples whose reference
response is longest. A whole capsel selection method in one file, using only capsel's public plugin module.

The pyproject beside this file names the module under the `capsel.methods` entry-point group; once installed,
`capsel score-baseline --method longest`, `capsel select --method longest`, `capsel flow select --method longest`,
`capsel compare` and `capsel lineage` know it.
"""

from __future__ import annotations

from typing import Sequence

from capsel.plugin import Candidate, ModelFreeScorer, Result, TopScore, model_free_method


class LongestScorer(ModelFreeScorer):
    """The length of the reference response, stripped, in characters."""

    version = "chars-1"  # bump it when a score's meaning changes: old scores then get other keys

    def score(self, candidates: Sequence[Candidate]) -> list[Result]:
        return [Result(candidate.candidate_id, score=float(len(candidate.response.strip())))
                for candidate in candidates]


METHOD = model_free_method("longest", "longest reference response first (Zhao et al., 2024)", LongestScorer,
                           TopScore("high"))
