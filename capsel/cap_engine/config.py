"""The scoring configuration (P, R, depth split, exclusion thresholds) and the hashes that key results."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from capsel.cap_engine.prompt_format import RAW, PromptFormat, resolve_prompt_format
from capsel.errors import CapselError
from capsel.versioning import config_hash

# Bump when the meaning of a stored generation or divergence changes, so old rows get new keys.
METHOD_VERSION = 1
# The paper's P and R: keep the last P prompt ids and the first R response ids (generate at most R).
PROMPT_TOKENS = 256
HORIZON = 48


class CapLimits(BaseModel):
    """What CAP keeps of a candidate and where it splits the depth (docs/method.md): the options a CAP run
    (`CapSpec`) and the engine's config share."""

    prompt_tokens: int = Field(PROMPT_TOKENS, gt=0, description="P: keep the last P prompt token ids")
    horizon: int = Field(HORIZON, gt=0, description="R: keep the first R response ids; generate at most R tokens")
    early: float = Field(0.33, gt=0, lt=1, description="D_early averages blocks 1..floor(early * L)")
    late: float = Field(0.66, gt=0, lt=1, description="D_late averages blocks ceil(late * L)..L")
    min_prompt_tokens: int = Field(2, ge=1, description="fewer prompt ids: excluded short_prompt")
    min_response_tokens: int = Field(6, ge=1, description="fewer response ids: excluded short_response")

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.min_response_tokens > self.horizon:
            raise ValueError(f"horizon {self.horizon} is below min_response_tokens {self.min_response_tokens}")
        if self.min_prompt_tokens > self.prompt_tokens:
            raise ValueError(
                f"prompt_tokens {self.prompt_tokens} is below min_prompt_tokens {self.min_prompt_tokens}"
            )
        if self.early >= self.late:
            raise ValueError(f"early fraction {self.early} must be below late fraction {self.late}")
        return self


class ScoringConfig(CapLimits):
    """Everything a generation or a divergence depends on besides the model (docs/method.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt_format: PromptFormat = Field(
        "auto", description="raw: the paper's tokenizer(prompt); chat: the model's chat template with the prompt "
        "as the user turn; auto: chat when the tokenizer has a chat template, else raw",
    )

    def resolved(self, tokenizer) -> "ScoringConfig":
        """This configuration with `auto` replaced by the prompt format the tokenizer gets (raw or chat)."""
        return self.model_copy(update={"prompt_format": resolve_prompt_format(self.prompt_format, tokenizer)})

    def generation_config(self) -> dict:
        """The fields a stored generation (and its exclusion reason) depends on."""
        if self.prompt_format not in ("raw", "chat"):
            raise ValueError("the prompt format is unresolved: hash a config returned by `resolved(tokenizer)`")
        return {
            "kind": "generation",
            "method_version": METHOD_VERSION,
            "prompt_tokens": self.prompt_tokens,
            "horizon": self.horizon,
            "min_prompt_tokens": self.min_prompt_tokens,
            "min_response_tokens": self.min_response_tokens,
            # raw is left out, so results stored before prompt formats existed keep their keys
            **({} if self.prompt_format == RAW else {"prompt_format": self.prompt_format}),
        }

    def scoring_config(self) -> dict:
        """The fields a stored divergence depends on: the generation's plus the depth split."""
        return {**self.generation_config(), "kind": "scoring", "early": self.early, "late": self.late}

    @property
    def generation_hash(self) -> str:
        """Key of `generations` rows written under this configuration."""
        return config_hash(self.generation_config())

    @property
    def scoring_hash(self) -> str:
        """Key of `divergences` rows written under this configuration."""
        return config_hash(self.scoring_config())


def layer_split(n_layers: int, early: float, late: float) -> tuple[list[int], list[int]]:
    """1-indexed layers with l <= early*L and l >= late*L.

    The fractions are read as the decimals the user wrote (0.66 is 66/100, not the
    nearest binary float), so L=50 puts layer 33 in the late group exactly as on paper.
    """
    early_layers = list(range(1, last_early_layer(n_layers, early) + 1))
    late_layers = list(range(first_late_layer(n_layers, late), n_layers + 1))
    if not early_layers or not late_layers:
        raise CapselError(
            f"a model with {n_layers} layers has no layer l <= {early}*L or none l >= {late}*L; "
            "use a deeper model or change [[early]]/[[late]]"
        )
    return early_layers, late_layers


def last_early_layer(n_layers: int, early: float) -> int:
    """floor(early * L): the last 1-indexed layer of D_early (0 when none), the fraction read as written."""
    return math.floor(Fraction(repr(early)) * n_layers)


def first_late_layer(n_layers: int, late: float) -> int:
    """ceil(late * L), at least 1: the first 1-indexed layer of D_late, the fraction read as written."""
    return max(1, math.ceil(Fraction(repr(late)) * n_layers))
