"""The one interface every selection method's scorer implements: pending rows in, plain results out, no database.

CAP is one implementation beside PPL, IFD, QuRating, k-center and LESS. A scorer knows its identity
(the model behind it), its config (whose hash keys its results), which table its results go to, how
a pending row becomes an item, how items batch, and how a batch scores. The store writes results,
the runner pages, dispatches and commits: neither branches on the method.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Sequence

from capsel.cap_engine.batching import length_sorted_batches
from capsel.cap_engine.inputs import CandidateText, candidate_text
from capsel.models.loading import ModelInfo

Table = Literal["divergences", "generations", "method_scores", "embeddings", "gradient_features"]


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


def model_identity(info: ModelInfo) -> ScorerIdentity:
    """The `models` row of a causal LM described by `describe_model`."""
    return ScorerIdentity(
        fingerprint=info.fingerprint, name_or_path=info.source.name_or_path, revision=info.source.revision,
        weight_files=info.source.files, dtype=info.dtype, architecture=info.architecture, n_layers=info.n_layers,
    )


@dataclass(frozen=True)
class ConfigRow:
    """A config as the `scoring_configs` table keeps it (a CAP scoring config names its generation config)."""

    config_hash: str
    body: dict
    generation_hash: str | None = None


@dataclass(frozen=True)
class Counted:
    """What a batch of results amounts to: measured, excluded by reason, y-hat generated on the way."""

    n_done: int
    excluded: list[str]
    n_generated: int = 0


class Scorer(ABC):
    """Scores batches of one method's items with one model; touches no database.

    `table` says where results go; `run_kind` names the `runs` rows of a scoring run; `generation_hash`
    (CAP) names the stored y-hat a pending row may carry; `reuse` may answer a pending row from
    CAP's measurement joined into it (PPL), so the model never runs for that candidate.
    """

    table: ClassVar[Table] = "method_scores"
    run_kind: ClassVar[str] = "score-baseline"

    def __init__(self, identity: ScorerIdentity, batch_size: int):
        self.identity = identity
        self._batch_size = batch_size

    @property
    def batch_size(self) -> int:
        """Items per model batch."""
        return self._batch_size

    @property
    @abstractmethod
    def method(self) -> str:
        """The method name its results are stored under."""

    @property
    @abstractmethod
    def config_hash(self) -> str:
        """Key of the rows this scorer writes."""

    @abstractmethod
    def config_rows(self) -> list[ConfigRow]:
        """The configs to record for this scorer's results."""

    def run_config(self) -> dict:
        """What a scoring run records of the scorer's config."""
        return {"method": self.method, **self.config_rows()[-1].body, "config_hash": self.config_hash,
                "batch_size": self.batch_size}

    @property
    def prompt_format(self) -> str:
        """How this scorer turns prompts into ids (raw unless it tokenises them with a chat template)."""
        return "raw"

    @property
    def holds_pictures(self) -> bool:
        """Whether its prepared items carry picture tensors (a vision-language model's). A page's items are all
        prepared at once, so the runner keeps such pages at their usual size."""
        return False

    @property
    def generation_hash(self) -> str | None:
        """The generation config whose stored y-hat pending rows carry (CAP); None for the others."""
        return None

    def close(self) -> None:
        """Release what the scorer holds beside its model (a y-hat writer's generator); nothing by default."""

    def reusable_cap_configs(self, known_configs: Sequence[dict]) -> list[str]:
        """Hashes of stored CAP configs whose measurements `reuse` can take (none by default)."""
        return []

    def reuse(self, row: dict) -> Any | None:
        """A result taken from the pending row itself, or None when the model must score it."""
        return None

    def item(self, row: dict) -> Any:
        """What `score` takes for a pending row: its texts by default."""
        return candidate_text(row)

    def batches(self, items: Sequence[Any]) -> list[list[Any]]:
        """Batches of similar total text length, so padding stays small."""
        return length_sorted_batches(items, self.batch_size, _text_length)

    def counted(self, results: Sequence[Any]) -> Counted:
        """How many results were measured and why the rest were excluded."""
        excluded = [result.excluded_reason for result in results if result.excluded_reason]
        return Counted(len(results) - len(excluded), excluded)

    @abstractmethod
    def score(self, items: Sequence[Any]) -> list[Any]:
        """One result per item, in input order."""


def _text_length(candidate: CandidateText) -> int:
    return len(candidate.instruction) + len(candidate.input) + len(candidate.response)
