"""What every baseline scorer shares: its result type, its typed config, and its binding to the scorer interface."""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Sequence

from pydantic import BaseModel

from capsel.cap_engine.inputs import CandidateText
from capsel.scorers.base import ConfigRow, Scorer, ScorerIdentity
from capsel.versioning import config_hash

# Bump when the meaning of a stored baseline score changes, so old rows get new keys.
BASELINE_VERSION = 1
# A pending row with images, for a scorer that reads text alone: scored as text it would be a wrong number.
NEEDS_MULTIMODAL_SCORER = "needs_multimodal_scorer"


@dataclass(frozen=True)
class BaselineResult:
    """One candidate's result: a score or an embedding, or why it is excluded (a score may stay beside it)."""

    candidate_id: str
    score: float | None = None
    excluded_reason: str | None = None
    embedding: list[float] | None = None


class BaselineConfig(BaseModel):
    """Base of each method's typed config; `as_dict` (and so the config hash) names the method."""

    method: ClassVar[str] = ""

    def as_dict(self) -> dict:
        """The stored config: method, version and every field."""
        return {"kind": self.method, "method_version": BASELINE_VERSION, **self.model_dump()}

    @property
    def hash(self) -> str:
        """Key of the rows written under this config."""
        return config_hash(self.as_dict())


class BaselineScorer(Scorer):
    """A baseline's scorer: its typed config keys the rows it writes to `table` (see `capsel.scorers.base`).

    A candidate with images (its pending row's `images`) is excluded with `image_exclusion` before any model
    runs: these scorers read text alone, and its `<image>` placeholders read as text would give it a score
    that ignores what the question is about. The exclusion is stored like any other, so `excluded.parquet`
    and the funnel count it.
    """

    image_exclusion: ClassVar[str] = NEEDS_MULTIMODAL_SCORER

    def __init__(self, config: BaselineConfig, identity: ScorerIdentity, batch_size: int):
        super().__init__(identity, batch_size)
        self.config = config

    @property
    def method(self) -> str:
        """The method name results are stored under."""
        return self.config.method

    @property
    def config_hash(self) -> str:
        """The hash of the method config."""
        return self.config.hash

    def config_rows(self) -> list[ConfigRow]:
        """The method config, recorded once."""
        return [ConfigRow(self.config.hash, self.config.as_dict())]

    def reuse(self, row: dict) -> Any | None:
        """A row with images: excluded with `image_exclusion`; a text row: left to the model."""
        if row.get("images"):
            return BaselineResult(row["candidate_id"], excluded_reason=self.image_exclusion)
        return None

    @abstractmethod
    def score(self, candidates: Sequence[CandidateText]) -> list[BaselineResult]:
        """One result per candidate, in input order."""


