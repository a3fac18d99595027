"""QuRating: a QuRater-style classifier's label logit for the whole example, highest first."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from capsel.methods.method import Method
from capsel.methods.selectors import TopScore
from capsel.methods.spec import LocalModelSpec, MethodSpec


class QuratingSpec(MethodSpec):
    """A QuRater-style classifier's label logit for the whole example."""

    method: Literal["qurating"] = "qurating"
    rater: LocalModelSpec = Field(
        ..., description="local sequence-classifier folder (AutoModelForSequenceClassification)")
    rater_label: str = Field("educational_value", description="the label whose logit is the score")
    max_length: int = Field(512, gt=1, description="the example is cut to its first max_length rater tokens")


METHOD = Method(
    name="qurating", summary="a QuRater-style classifier's educational_value logit", selector=TopScore("high"),
    spec=QuratingSpec, scorer="capsel.methods.qurating.scorer:qurating_scorer", help="needs --rater",
)
