"""LESS: LoRA gradient sketches of each candidate, and their cosine with a target set's (Xia et al.)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from capsel.methods.method import Method, TargetScoring
from capsel.methods.selectors import TopScore
from capsel.methods.spec import MethodSpec, ModelSpec


class LessSpec(MethodSpec):
    """LESS: LoRA gradient sketches of each candidate, and their cosine with a target set's."""

    source_fields: ClassVar[tuple[str, ...]] = ("target",)

    method: Literal["less"] = "less"
    model: ModelSpec
    max_length: int = Field(1024, gt=1, description="[prompt; response] is cut to its first max_length ids")
    target: str | None = Field(None, description="file of target examples; without it only features are stored")
    target_max: int = Field(2000, gt=0, description="use the first N examples of the target")


METHOD = Method(
    name="less", summary="cosine of LoRA gradient sketches with a target set's (Xia et al.)",
    selector=TopScore("high"), spec=LessSpec, scorer="capsel.baselines.less.scorer:less_scorer",
    results_table="gradient_features", selects_from="method_scores", counted_as="featured (eligible)",
    target=TargetScoring(prepare="capsel.baselines.less.target:target_file_of",
                         score="capsel.runner.less_job:score_target",
                         scores_hash="capsel.baselines.less.target:target_scores_hash"),
    help="needs --model; LoRA gradient features and their cosine with a --target set's",
)
