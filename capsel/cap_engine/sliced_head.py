"""A greedy step's output head on CPU in slices of the vocabulary, choosing the token the plain head chooses.

A greedy step multiplies a batch's few rows by the whole vocabulary. MKL runs that product slowly in the plain
head's shape: on 2 cores, Gemma 3 270M's 262,144 x 640 head took 181 ms at 32 rows (56 GFLOP/s, against 181
GFLOP/s for a square product on the same cores), while the same product as slices of 4,096 vocabulary rows
times the batch took 117 ms; 122 against 68 ms at 16 rows (benchmarks/README.md, 2026-11-29).

The slices sum each logit in their own order, so a logit can differ from the plain head's in its last bits, and
a step keeps only the argmax. Any float32 sum of K products lies within gamma_K * |h|.|w| <= gamma_K ||h|| ||w||
of the exact dot product whatever the order of the sums (Higham, Accuracy and Stability of Numerical Algorithms,
eq. 3.5), the plain head's too. So where a row's best slice logit beats its second by more than
2 gamma_K ||h|| (||w_best|| + max ||w||), the plain head's argmax is the same token. A step where any row's two
best are closer than that runs the plain head instead, so every step picks exactly the plain head's tokens.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

import torch

from capsel.cap_engine.per_model import PerModel

if TYPE_CHECKING:
    from capsel.models.loading import LoadedModel

# Vocabulary rows a slice multiplies at once: its logits for a batch of 32 (512 KB) stay in the core's cache.
SLICE_ROWS = 4096
# Whatever the bound itself loses to float64 rounding (a few units in 2^-52) is far inside this.
BOUND_MARGIN = 1.01
_UNIT_ROUNDOFF = 2.0 ** -24  # float32


@dataclass
class SlicedHeadSteps:
    """How many greedy steps a model's sliced head decided, and how many it left to the plain head."""

    sliced: int = 0
    plain: int = 0


_STEPS = PerModel(SlicedHeadSteps)


def sliced_head_steps(loaded: LoadedModel) -> SlicedHeadSteps:
    """The greedy steps decided so far by `loaded`'s sliced head, and those that fell back to the plain head."""
    return _STEPS.of(loaded.model)


def slices_head(loaded: LoadedModel) -> bool:
    """Whether `loaded`'s greedy steps run the sliced head: `loaded.sliced_head`, for a plain float32 linear head
    on CPU whose logits feed the argmax directly (no final soft-capping), with float32 products in full
    precision (the bound assumes float32 sums)."""
    head = loaded.model.get_output_embeddings()
    config = loaded.model.config
    softcap = getattr(config, "final_logit_softcapping", None) or getattr(
        getattr(config, "text_config", None), "final_logit_softcapping", None)
    return (loaded.sliced_head and loaded.input_device.type == "cpu" and type(head) is torch.nn.Linear
            and head.bias is None and head.weight.dtype == torch.float32 and softcap is None
            and torch.get_float32_matmul_precision() == "highest"
            and getattr(torch.backends.mkldnn.matmul, "fp32_precision", "none") in ("none", "ieee"))


@contextlib.contextmanager
def sliced_head(loaded: LoadedModel) -> Iterator[None]:
    """Within this block, `loaded`'s output head computes in slices where `slices_head` allows it.

    Only for greedy steps: a step's logits serve its argmax alone, and only the argmax is kept exact.
    """
    if not slices_head(loaded):
        yield
        return
    head = loaded.model.get_output_embeddings()
    weight = head.weight.detach()
    # float64, so the bound is not itself short by a rounding
    norms = torch.linalg.vector_norm(weight, dim=1, dtype=torch.float64)
    steps = _STEPS.of(loaded.model)

    def forward(hidden: torch.Tensor) -> torch.Tensor:
        rows = hidden.reshape(-1, hidden.shape[-1])
        logits = sliced_logits(weight, rows)
        if plain_argmax_certain(logits, rows, norms):
            steps.sliced += 1
            return logits.reshape(*hidden.shape[:-1], -1)
        steps.plain += 1
        return torch.nn.Linear.forward(head, hidden)

    head.forward = forward
    try:
        yield
    finally:
        del head.forward


def sliced_logits(weight: torch.Tensor, rows: torch.Tensor, slice_rows: int = SLICE_ROWS) -> torch.Tensor:
    """rows @ weight.T, computed as (weight's slice @ rows.T) for each `slice_rows` rows of `weight`."""
    logits = rows.new_empty(rows.shape[0], weight.shape[0])
    columns = rows.T.contiguous()
    for start in range(0, weight.shape[0], slice_rows):
        logits[:, start:start + slice_rows].copy_(torch.mm(weight[start:start + slice_rows], columns).T)
    return logits


def plain_argmax_certain(logits: torch.Tensor, rows: torch.Tensor, weight_norms: torch.Tensor) -> bool:
    """Whether every row's argmax of `logits` (float32 rows @ weight.T in some order of sums) is the argmax
    of any other float32 computation of the same product, the plain head's included.

    `weight_norms`: each vocabulary row's Euclidean norm, in float64. A row whose best logit does not beat its
    second by the two computations' error bound, or whose two best are not finite, is not certain.
    """
    if logits.shape[-1] < 2:
        return False
    depth = rows.shape[-1]
    gamma = depth * _UNIT_ROUNDOFF / (1 - depth * _UNIT_ROUNDOFF)
    best = logits.topk(2, dim=-1)
    first, second = best.values.double().unbind(-1)
    row_norms = torch.linalg.vector_norm(rows, dim=-1, dtype=torch.float64)
    bound = BOUND_MARGIN * 2 * gamma * row_norms * (weight_norms[best.indices[:, 0]] + weight_norms.max())
    return bool((first - second > bound).all()) and bool(torch.isfinite(best.values).all())
