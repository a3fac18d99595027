"""LESS: LoRA gradient sketches of each candidate, and their cosine with a target set's (Xia et al.)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from capsel.methods.method import Method, TargetScoring
from capsel.methods.selectors import TopScore
from capsel.methods.spec import MethodSpec, ModelSpec

# a target's examples used at most (its first)
TARGET_MAX = 2000


class LessSpec(MethodSpec):
    """LESS: LoRA gradient sketches of each candidate, and their cosine with a target set's."""

    source_fields: ClassVar[tuple[str, ...]] = ("target",)

    method: Literal["less"] = "less"
    model: ModelSpec
    max_length: int = Field(1024, gt=1, description="[prompt; response] is cut to its first max_length ids")
    target: str | None = Field(None, description="file of target examples; without it only features are stored")
    target_max: int = Field(TARGET_MAX, gt=0, description="use the first N examples of the target")


METHOD = Method(
    name="less", summary="cosine of LoRA gradient sketches with a target set's (Xia et al.)",
    selector=TopScore("high"), spec=LessSpec, scorer="capsel.methods.less.scorer:less_scorer",
    results_table="gradient_features", selects_from="method_scores", counted_as="featured (eligible)",
    target=TargetScoring(prepare="capsel.methods.less.target:target_file_of",
                         score="capsel.methods.less.job:score_target",
                         scores_hash="capsel.methods.less.target:target_scores_hash"),
    help="needs --model; LoRA gradient features and their cosine with a --target set's",
)
