"""Base of scorers that read a causal LM (PPL, IFD; LESS next): its identity now, its weights on first use."""

from __future__ import annotations

from capsel.baselines.scorer import BaselineConfig, BaselineScorer
from capsel.baselines.scorer_models import lm_identity
from capsel.scoring.model_loading import LoadedModel, ModelInfo, load_model


class LmScorer(BaselineScorer):
    """A scorer over a model described by the engine's `describe_model`; weights load lazily, once."""

    def __init__(self, config: BaselineConfig, info: ModelInfo, batch_size: int = 16):
        super().__init__(config, lm_identity(info), batch_size)
        self.info = info
        self._loaded: LoadedModel | None = None

    @property
    def loaded(self) -> LoadedModel:
        """The model, loaded on first use: a run that scores nothing with it never loads weights."""
        if self._loaded is None:
            self._loaded = load_model(self.info)
        return self._loaded
