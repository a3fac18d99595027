"""QuRating baseline: a QuRater-style sequence classifier's logit for one quality criterion (Wettig et al.).

The rater reads the whole example (instruction, optional input and response, one per line), cut to
its first 512 tokens, and the selection signal is the logit of the `educational_value` label (the
paper's setting; --rater-label picks another). The rater is a local folder: the paper's
princeton-nlp/QuRater-1.3B once downloaded, or any AutoModelForSequenceClassification checkpoint.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from pydantic import ConfigDict, Field

from capsel.errors import CapselError
from capsel.methods.qurating import QuratingSpec
from capsel.scorers.baseline import BaselineConfig, BaselineResult, BaselineScorer
from capsel.scorers.example_text import SEPARATOR, example_text
from capsel.scorers.scorer_models import LocalModel, describe_local_model, load_local_model

DEFAULT_LABEL = "educational_value"
# QuRater rates text; an image row's rating would judge a question without its picture (the paper: text-only)
QURATING_TEXT_ONLY = "qurating_text_only"


class QuratingConfig(BaselineConfig):
    """Which head the score reads and how much text the rater sees."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    method: ClassVar[str] = "qurating"

    label: str = Field(DEFAULT_LABEL, description="the rater label whose logit is the score")
    label_index: int = Field(ge=0, description="its index among the classifier's outputs")
    max_length: int = Field(512, gt=0, description="the example is cut to its first max_length tokens")
    separator: str = Field(SEPARATOR, description="joins instruction, input and response")


def label_index(config, label: str) -> int:
    """Index of `label` in the classifier config's id2label (case-insensitive), or a CapselError listing them."""
    labels = {int(index): name for index, name in (getattr(config, "id2label", None) or {}).items()}
    for index, name in sorted(labels.items()):
        if str(name).lower() == label.lower():
            return index
    raise CapselError(
        f"the rater has no label {label!r}; its labels are {sorted(labels.values())}: "
        "set [[rater_label]] to one of them"
    )


class QuratingScorer(BaselineScorer):
    """Batched classifier forwards; the score is the chosen label's logit."""

    config: QuratingConfig
    image_exclusion: ClassVar[str] = QURATING_TEXT_ONLY

    def __init__(self, config: QuratingConfig, rater: LocalModel, batch_size: int = 16):
        super().__init__(config, rater.identity, batch_size)
        self.rater = rater
        self.tokenizer = rater.tokenizer
        self._model = None

    @property
    def model(self):
        """The classifier, loaded on first use, with a pad id it can find the last real token by."""
        if self._model is None:
            from transformers import AutoModelForSequenceClassification

            self._model = load_local_model(self.rater, AutoModelForSequenceClassification)
            if self.tokenizer.pad_token is None and self.tokenizer.eos_token is not None:
                self.tokenizer.pad_token = self.tokenizer.eos_token
            if self._model.config.pad_token_id is None and self.tokenizer.pad_token_id is not None:
                self._model.config.pad_token_id = self.tokenizer.pad_token_id
        return self._model

    def score(self, candidates) -> list[BaselineResult]:
        """The label logit of every candidate (rows without a pad token run one at a time)."""
        texts = [example_text(candidate) for candidate in candidates]
        model = self.model
        step = self.batch_size if self.tokenizer.pad_token is not None else 1
        scores: list[float] = []
        with torch.inference_mode():
            for start in range(0, len(texts), step):
                encoded = self.tokenizer(
                    texts[start:start + step], truncation=True, max_length=self.config.max_length,
                    padding=step > 1, return_tensors="pt",
                ).to(self.rater.device)
                logits = model(**encoded).logits
                scores += logits[:, self.config.label_index].float().cpu().tolist()
        return [BaselineResult(candidate.candidate_id, score=value) for candidate, value in zip(candidates, scores)]


def qurating_scorer(spec: QuratingSpec) -> QuratingScorer:
    """The rater scorer for the spec's local sequence classifier."""
    rater = describe_local_model(spec.rater.path, "rater", spec.rater.dtype, spec.rater.device,
                                 spec.rater.trust_remote_code, spec.rater.allow_pickle)
    config = QuratingConfig(
        label=spec.rater_label, label_index=label_index(rater.config, spec.rater_label), max_length=spec.max_length,
    )
    return QuratingScorer(config, rater, spec.batch_size)
