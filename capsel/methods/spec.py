"""What a method's spec is built from: the model a worker loads, and the base every method's spec extends.

Each method module declares its spec (a `MethodSpec` whose `method` field is a Literal of its name); the CLI,
the flows (the Prefect UI renders specs as a form) and every worker build the method's scorer from it. Nothing
here imports torch, so help texts and flow schemas stay light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field

from capsel.cap_engine.prompt_format import PromptFormat, resolve_prompt_format

if TYPE_CHECKING:
    from capsel.models.loading import ModelInfo

_STRICT = ConfigDict(extra="forbid", frozen=True)
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

    def describe(self) -> ModelInfo:
        """This model described without loading weights (its identity, config and tokenizer)."""
        from capsel.models.loading import describe_model  # torch: a run describes a model, a schema never does

        return describe_model(self.path, dtype=self.dtype, device=self.device,
                              trust_remote_code=self.trust_remote_code, allow_pickle=self.allow_pickle)


class ModelSpec(LocalModelSpec):
    """A causal LM that scores candidates, and how their prompts become ids."""

    prompt_format: PromptFormat = Field(
        "auto", description="raw: tokenizer(prompt), the paper's protocol; chat: the model's chat template; "
        "auto: chat when the tokenizer has a chat template",
    )

    def resolved_prompt_format(self, info: ModelInfo) -> str:
        """The prompt format asked for, resolved for the model's tokenizer (auto: chat if it has one)."""
        return resolve_prompt_format(self.prompt_format, info.tokenizer)


class MethodSpec(BaseModel):
    """The options of one method's scorer. `source_fields` name the fields that hold a file the run reads (a run
    parameter's file must lie under the deployment's source roots)."""

    model_config = _STRICT
    source_fields: ClassVar[tuple[str, ...]] = ()

    method: str
    batch_size: int = Field(16, gt=0, description="candidates per model batch")

    @classmethod
    def model_fields_of(cls) -> dict[str, type[LocalModelSpec]]:
        """The fields that hold a model the scorer loads, with the kind of model each takes."""
        return {name: info.annotation for name, info in cls.model_fields.items()
                if isinstance(info.annotation, type) and issubclass(info.annotation, LocalModelSpec)}

    def sources(self) -> dict[str, str]:
        """The files this spec names (field -> path), those set."""
        return {name: value for name in self.source_fields if (value := getattr(self, name)) is not None}

    def models(self) -> dict[str, LocalModelSpec]:
        """The fields holding the models this scorer loads."""
        return {name: value for name in type(self).model_fields
                if isinstance(value := getattr(self, name), LocalModelSpec)}

    def with_models(self, change: Callable[[LocalModelSpec], LocalModelSpec]) -> Self:
        """This spec with `change(model_spec)` applied to each model it loads."""
        return self.model_copy(update={name: change(spec) for name, spec in self.models().items()})
