"""The interface every baseline scorer implements: candidates in, plain results out, no database."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar, Literal, Sequence

from pydantic import BaseModel

from capsel.scoring.inputs import CandidateText
from capsel.versioning import config_hash

# Bump when the meaning of a stored baseline score changes, so old rows get new keys.
BASELINE_VERSION = 1


@dataclass(frozen=True)
class BaselineResult:
    """One candidate's result: a score or an embedding, or why it is excluded (a score may stay beside it)."""

    candidate_id: str
    score: float | None = None
    excluded_reason: str | None = None
    embedding: list[float] | None = None


@dataclass(frozen=True)
class ScorerIdentity:
    """What the `models` table records of the LM, encoder or rater behind a scorer."""

    fingerprint: str
    name_or_path: str
    revision: str | None
    weight_files: dict[str, str]
    dtype: str
    architecture: str | None
    n_layers: int | None


@dataclass(frozen=True)
class ScorerOptions:
    """What a user can set for any baseline scorer; each method reads the fields it needs."""

    model: str | None = None
    encoder: str | None = None
    rater: str | None = None
    rater_label: str = "educational_value"
    max_length: int | None = None
    prompt_tokens: int = 256
    horizon: int = 48
    prompt_format: str = "auto"
    dtype: str = "auto"
    device: str = "auto"
    batch_size: int = 16
    trust_remote_code: bool = False


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


class BaselineScorer(ABC):
    """Scores batches of candidates for one method with one model; touches no database.

    `table` says where results go: "method_scores" (a score per candidate), "embeddings" or
    "gradient_features" (a vector per candidate).
    `reuse` may answer a pending row from CAP's measurement joined into it (PPL), so the model
    never runs for that candidate.
    """

    table: ClassVar[Literal["method_scores", "embeddings", "gradient_features"]] = "method_scores"

    def __init__(self, config: BaselineConfig, identity: ScorerIdentity, batch_size: int):
        self.config = config
        self.identity = identity
        self.batch_size = batch_size

    @property
    def method(self) -> str:
        """The method name results are stored under."""
        return self.config.method

    def reusable_cap_configs(self, known_configs: Sequence[dict]) -> list[str]:
        """Hashes of stored CAP configs whose measurements `reuse` can take (none by default)."""
        return []

    def reuse(self, row: dict) -> BaselineResult | None:
        """A result taken from the pending row itself, or None when the model must score it."""
        return None

    @abstractmethod
    def score(self, candidates: Sequence[CandidateText]) -> list[BaselineResult]:
        """One result per candidate, in input order."""
