"""Base of scorers that read a causal LM (PPL, IFD, LESS): its identity now, its weights on first use."""

from __future__ import annotations

from pydantic import Field

from capsel.cap_engine.prompt_format import RAW
from capsel.models.loading import LoadedModel, ModelInfo, load_model
from capsel.scorers.base import model_identity
from capsel.scorers.baseline import BaselineConfig, BaselineScorer


class LmConfig(BaselineConfig):
    """Base of the configs of scorers that tokenise a candidate's prompt for a causal LM (PPL, IFD, LESS)."""

    prompt_format: str = Field(RAW, pattern="^(raw|chat)$", description="resolved prompt format (raw or chat)")

    def as_dict(self) -> dict:
        """The stored config; raw is left out, so scores stored before prompt formats existed keep their keys."""
        stored = super().as_dict()
        if stored["prompt_format"] == RAW:
            del stored["prompt_format"]
        return stored


class LmScorer(BaselineScorer):
    """A scorer over a model described by the engine's `describe_model`; weights load lazily, once."""

    def __init__(self, config: BaselineConfig, info: ModelInfo, batch_size: int = 16):
        super().__init__(config, model_identity(info), batch_size)
        self.info = info
        self._loaded: LoadedModel | None = None

    @property
    def prompt_format(self) -> str:
        """The resolved prompt format of the config (raw or chat)."""
        return getattr(self.config, "prompt_format", RAW)

    @property
    def holds_pictures(self) -> bool:
        """True for a vision-language model: its prepared items carry their pictures' tensors."""
        return self.info.is_multimodal

    @property
    def loaded(self) -> LoadedModel:
        """The model, loaded on first use: a run that scores nothing with it never loads weights."""
        if self._loaded is None:
            self._loaded = load_model(self.info)
        return self._loaded
