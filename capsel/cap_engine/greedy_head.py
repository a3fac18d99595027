"""A greedy step's head on CPU: each row's argmax of the plain float32 logits, from a bfloat16 estimate of every
logit and the exact logits of the few vocabulary slices that can hold the greatest.

A greedy step reads one thing from its logits: the index of each row's greatest (the first, on a tie). On 2 cores,
Gemma 3 270M's 262,144 x 640 head took about 110 ms for 32 rows in exact slices; a bfloat16 copy of the head gave
every logit approximately in about 40 ms, and the steps then computed 7.7% of the 128 slices of 2,048 rows (5.4%
at 16 rows): 1.69 against 1.45 candidates/s, every result identical (benchmarks/README.md, 2026-11-29, seventh
session). Those slices are computed as cap_engine.sliced_head computes them, so their logits have the plain head's
bits.

Why no other slice can hold it. A float32 dot product of a row x and a vocabulary row w, summed in any order, is
within γ_K·A of the real one, where A = Σ|x_i·w_i|, K the hidden size and γ_K = K·u / (1 - K·u), u = 2^-24 (Higham,
Accuracy and Stability of Numerical Algorithms, 2nd ed., 3.1). The bfloat16 product rounds each x_i and w_i to 8
significant bits (a relative error of at most b = 2^-8 each), multiplies them exactly and sums in float32: that sum
is within ((1+b)^2·(1+γ_K) - 1)·A of the real dot product. A ≤ ‖x‖·‖w‖ (Cauchy-Schwarz), and a denormal flushed
to zero on either side moves a sum by less than K·2^-124·(1 + ‖x‖ + max|w|). Those bounds, taken with the row's ‖x‖
and the head's largest ‖w‖, make E. The sum is then rounded to bfloat16, which moves it by at most 2^-7 of itself
(one unit in the last place, whatever the rounding), so the estimate t of a logit l has |t - l| ≤ β·|t| + E with
β = 2^-7 / (1 - 2^-7). Both t + β·|t| and t - β·|t| grow with t, so no logit in a slice exceeds (its greatest
estimate m) + β·|m| + E, and the row's greatest logit is at least (its greatest estimate) - β·|…| - E. A slice
whose upper end falls below that cannot hold the greatest logit; every logit equal to the greatest lies in a slice
kept, so the first of them is the first in the screened logits too.

The screened logits are exact in the kept slices and -inf elsewhere: their argmax is the plain logits' argmax and
nothing else about them is. So only a step inside `argmax_only` gets them, and only once its model was seen to
return its head's logits as they are (a softcap or a scale after the head could make two logits equal).
"""

from __future__ import annotations

import contextlib
import math
import threading
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

import torch

from capsel.cap_engine.thread_heads import HeadsOnThread
from capsel.cap_engine.vocabulary_slices import SLICE_ROWS, columns_of, slice_logits, slices_head

if TYPE_CHECKING:
    from capsel.models.loading import LoadedModel

BFLOAT16_ROUNDING = 2.0 ** -8
FLOAT32_ROUNDING = 2.0 ** -24
# β: how far a sum rounded to bfloat16 can move, relative to the rounded value
OUTPUT_ROUNDING = 2.0 ** -7 / (1 - 2.0 ** -7)
# Beyond this, a sum could overflow float32 on one side and not on the other; such a row takes the exact head.
LARGEST_BOUNDED = 2.0 ** 100
# The estimate costs about a third of the exact head, so a head whose screens keep more than half of its slices is
# slower screened: after this many steps it takes the exact head for good. Gemma 3 270M kept about 5% of its slices,
# SmolLM2-135M about 80% (its greatest logits stand closer together against larger rows).
TRIAL_STEPS = 4
MOST_KEPT = 0.5


@dataclass(frozen=True)
class _Estimator:
    """A head's bfloat16 copy, and what the bound needs of the float32 weight it was made from."""

    weight: torch.Tensor  # [vocabulary, hidden], bfloat16
    largest_row_norm: float
    largest_abs: float


# Heads whose model returns the head's logits as they are (True) or changes them after it (False).
_PASSES_THROUGH: weakref.WeakKeyDictionary[torch.nn.Module, bool] = weakref.WeakKeyDictionary()
# Each head's estimator, or None for a weight that is not finite, with the weight's (data_ptr, version) it was made
# from: a weight changed in place needs a new one.
_ESTIMATORS: weakref.WeakKeyDictionary[torch.nn.Module, tuple[tuple[int, int], _Estimator | None]] = (
    weakref.WeakKeyDictionary())
_MAKING = threading.Lock()
# Per head: screened calls, the slices they kept and the slices there were (for a benchmark's report).
_COUNTS: weakref.WeakKeyDictionary[torch.nn.Module, list[int]] = weakref.WeakKeyDictionary()
# the heads in argmax-only steps, per thread
_ARGMAX_ONLY = HeadsOnThread()
# Per thread: the logits a head handed out before its model's verdict; each head's screened-logits buffer and the
# slices it holds exact.
_THREAD = threading.local()


def screens(loaded: LoadedModel) -> bool:
    """Whether `loaded`'s greedy steps may screen their head: `loaded.screened_greedy_head`, or when that is None,
    wherever the head runs in vocabulary slices (cap_engine.sliced_head)."""
    if not slices_head(loaded) or loaded.model.get_output_embeddings().weight.dtype != torch.float32:
        return False
    return loaded.screened_greedy_head is not False


@contextlib.contextmanager
def argmax_only(loaded: LoadedModel) -> Iterator[None]:
    """Within, on this thread: `loaded`'s head may hand out screened logits, fit only for each row's argmax and only
    until the head's next call (the next step overwrites them)."""
    if not screens(loaded):
        yield
        return
    head = loaded.model.get_output_embeddings()
    with _ARGMAX_ONLY.on(head, when_off=lambda: _state("pending", dict).pop(head, None)):
        yield


def handed_out(head: torch.nn.Module, logits: torch.Tensor) -> torch.Tensor:
    """`logits`, the head's exact output; in an argmax-only step before the model's verdict, kept with a copy of
    their values until the model returns."""
    if head in _ARGMAX_ONLY and head not in _PASSES_THROUGH:
        _state("pending", dict)[head] = (logits, logits.clone())
    return logits


def returned(loaded: LoadedModel, logits: torch.Tensor) -> None:
    """Record, after a model call, whether the model returned its head's logits as they are: the same tensor, with
    the same values (a model could scale them in place)."""
    pending = _state("pending", dict)
    if not pending:
        return
    head = loaded.model.get_output_embeddings()
    given = pending.pop(head, None)
    if given is not None:
        tensor, values = given
        _PASSES_THROUGH[head] = (logits.data_ptr() == tensor.data_ptr() and logits.shape == values.shape
                                 and torch.equal(logits, values))


def passes_logits_through(loaded: LoadedModel) -> bool | None:
    """Whether `loaded`'s model was seen to return its head's logits as they are; None before a greedy step asked."""
    return _PASSES_THROUGH.get(loaded.model.get_output_embeddings())


def screening_counts(loaded: LoadedModel) -> dict[str, int]:
    """How many greedy steps `loaded`'s head screened, the slices they computed exactly and the slices there were."""
    steps, kept, slices = _COUNTS.get(loaded.model.get_output_embeddings(), [0, 0, 0])
    return {"steps": steps, "slices_kept": kept, "slices": slices}


def screened_logits(head: torch.nn.Linear, rows: torch.Tensor) -> torch.Tensor | None:
    """The screened logits of `rows` ([rows, hidden] float32), or None where this call may not screen: outside an
    argmax-only step, before the model's verdict, or when a row is not finite or too large for the bound."""
    if head not in _ARGMAX_ONLY or not _PASSES_THROUGH.get(head, False) or not _pays(head):
        return None
    estimator = _estimator(head)
    if estimator is None:
        return None
    norms = torch.linalg.vector_norm(rows.double(), dim=1)
    if not bool(torch.isfinite(norms).all()) or float(norms.max()) * estimator.largest_row_norm > LARGEST_BOUNDED:
        return None
    estimates = torch.mm(estimator.weight, columns_of(rows.to(torch.bfloat16)))  # [vocabulary, rows]
    # float64 from here: its own rounding is far below the 2^-30 of E added in _error_bound
    slice_best = _slice_maxima(estimates).double()  # [slices, rows], exactly the bfloat16 values
    best = slice_best.max(dim=0).values
    bound = _error_bound(norms, estimator, rows.shape[1])
    floor = best - OUTPUT_ROUNDING * best.abs() - 2 * bound
    kept = (slice_best + OUTPUT_ROUNDING * slice_best.abs() >= floor).any(dim=1).nonzero().flatten().tolist()
    counts = _COUNTS.setdefault(head, [0, 0, 0])
    counts[0] += 1
    counts[1] += len(kept)
    counts[2] += slice_best.shape[0]
    return _fill(head, rows, kept)


def _pays(head: torch.nn.Module) -> bool:
    """Whether screening `head` is still on trial or has kept at most MOST_KEPT of its slices."""
    steps, kept, slices = _COUNTS.get(head, [0, 0, 0])
    return steps < TRIAL_STEPS or kept <= MOST_KEPT * slices


def _error_bound(norms: torch.Tensor, estimator: _Estimator, hidden: int) -> torch.Tensor:
    """E per row: how far the float32 sum of the bfloat16 products can be from the float32 logit (see the module's
    docstring)."""
    gamma = hidden * FLOAT32_ROUNDING / (1 - hidden * FLOAT32_ROUNDING)
    relative = (1 + BFLOAT16_ROUNDING) ** 2 * (1 + gamma) - 1 + gamma
    flushed = hidden * 2.0 ** -124 * (1 + norms + estimator.largest_abs)
    return relative * (1 + 2.0 ** -30) * norms * estimator.largest_row_norm + flushed


def _slice_maxima(estimates: torch.Tensor) -> torch.Tensor:
    """The greatest estimate of each row in each vocabulary slice: [slices, rows]."""
    whole = estimates.shape[0] // SLICE_ROWS * SLICE_ROWS
    # max() rather than amax(): 3.6 against 10.4 ms over Gemma 3 270M's bfloat16 estimates for 32 rows
    maxima = estimates[:whole].view(-1, SLICE_ROWS, estimates.shape[1]).max(dim=1).values
    if whole == estimates.shape[0]:
        return maxima
    return torch.cat([maxima, estimates[whole:].max(dim=0, keepdim=True).values])


def _fill(head: torch.nn.Linear, rows: torch.Tensor, kept: list[int]) -> torch.Tensor:
    """The head's buffer for this many rows: the kept slices exact, -inf elsewhere. The slices the last call
    filled are reset, so a step writes a few slices rather than the whole vocabulary."""
    buffers = _state("buffers", weakref.WeakKeyDictionary)
    weight = head.weight
    buffer, filled = buffers.get(head, (None, []))
    if buffer is None or buffer.shape != (rows.shape[0], weight.shape[0]):
        buffer, filled = rows.new_full((rows.shape[0], weight.shape[0]), -math.inf), []
    for index in filled:
        buffer[:, index * SLICE_ROWS:(index + 1) * SLICE_ROWS] = -math.inf
    columns = columns_of(rows)
    for index in kept:
        start = index * SLICE_ROWS
        buffer[:, start:start + SLICE_ROWS] = slice_logits(weight, columns, start)
    buffers[head] = (buffer, kept)
    return buffer


def _estimator(head: torch.nn.Linear) -> _Estimator | None:
    """The head's bfloat16 copy, made on first use and again when its weight changed; None for a weight that is not
    finite."""
    weight = head.weight
    made_from = (weight.data_ptr(), weight._version)
    with _MAKING:
        known = _ESTIMATORS.get(head)
        if known is not None and known[0] == made_from:
            return known[1]
        with torch.no_grad():
            finite, largest_row_norm, largest_abs = _weight_bounds(weight)
            estimator = _Estimator(weight.to(torch.bfloat16), largest_row_norm, largest_abs) if finite else None
        _ESTIMATORS[head] = (made_from, estimator)
        return estimator


def _weight_bounds(weight: torch.Tensor) -> tuple[bool, float, float]:
    """Whether every weight is finite, the largest row norm (summed in float64) and the largest |weight|, read a
    block of rows at a time: whole-head temporaries on Gemma 3 would be 1.3 GB in float64, 671 MB for |weight|."""
    finite, largest_row_norm, largest_abs = True, 0.0, 0.0
    block = 16 * SLICE_ROWS
    for start in range(0, weight.shape[0], block):
        rows = weight[start:start + block]
        finite = finite and bool(torch.isfinite(rows).all())
        largest_row_norm = max(largest_row_norm, float(torch.linalg.vector_norm(rows.double(), dim=1).max()))
        largest_abs = max(largest_abs, float(rows.abs().max()))
    return finite, largest_row_norm, largest_abs


def _state(name: str, make: type) -> dict:
    if not hasattr(_THREAD, name):
        setattr(_THREAD, name, make())
    return getattr(_THREAD, name)
