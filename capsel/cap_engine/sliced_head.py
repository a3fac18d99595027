"""The output head on CPU in slices of the vocabulary: the plain head's float32 logits, bit for bit, sooner.

A greedy step multiplies a batch's few rows by the whole vocabulary, and MKL runs that product slowly in the shape
`nn.Linear` gives it. On 2 cores, Gemma 3 270M's 262,144 x 640 head took 186 ms at 32 rows, where the same product
as slices of 4,096 vocabulary rows times the rows' transpose took 126 ms: 78 against 138 ms at 16 rows, 185 against
255 at 64 (benchmarks/README.md, 2026-11-29, fifth session); slices of 2,048 rows take as long (cap_engine.
vocabulary_slices). In a batch of 32 the greedy steps' heads were a third of the engine's time. Each logit is still
one dot product over the hidden size, and the slices only change which logits one call of MKL computes. A greedy
step may go further and compute only the slices that can hold a row's greatest logit (cap_engine.greedy_head).

MKL does not promise that a product's bits are independent of its shape, and they are not always: at 2, 5 and 8
rows the slices gave other last bits on that CPU. So the first product of each shape (the row count, the input's
layout and the threads) is checked against the plain head on the call's own input. The slices serve that shape only
if every bit agreed, and the check itself returns the plain logits. A product's order of sums is fixed by its
shape and threads, not by the values, so one check answers for every later call of the same shape.

The head's forward is routed through the slices once per model and stays so; only a call made inside
`sliced_head(loaded)` on the same thread takes them, so another thread's call, or one with gradients, runs plain.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import weakref
from typing import TYPE_CHECKING, Callable, Iterator

import torch

from capsel.cap_engine.greedy_head import handed_out, screened_logits
from capsel.cap_engine.per_model import PerModel
from capsel.cap_engine.thread_heads import HeadsOnThread
from capsel.cap_engine.vocabulary_slices import in_slices, slices_head

if TYPE_CHECKING:
    from capsel.models.loading import LoadedModel

# Beyond this many rows (a response branch's every position) the slices gained nothing: 1,425 against 1,394 ms at
# 512 rows. One row gained nothing either (61 against 57 ms).
MAX_ROWS = 256

# (rows, contiguous input, torch threads) -> whether the slices gave the plain head's bits, per model.
_AGREED: PerModel[dict[tuple[int, bool, int], bool]] = PerModel(dict)
_ROUTED: weakref.WeakSet[torch.nn.Module] = weakref.WeakSet()
_ROUTING = threading.Lock()
# the heads a sliced_head context has on, per thread
_SERVING = HeadsOnThread()


def head_shapes_checked(loaded: LoadedModel) -> dict[tuple[int, bool, int], bool]:
    """Each head shape checked so far on `loaded`'s model, (rows, contiguous, threads), and whether it agreed."""
    return dict(_AGREED.of(loaded.model))


@contextlib.contextmanager
def sliced_head(loaded: LoadedModel) -> Iterator[None]:
    """Within, on this thread: `loaded`'s head computes its logits in slices for every shape checked to give the
    plain bits."""
    if not slices_head(loaded):
        yield
        return
    head = loaded.model.get_output_embeddings()
    _route(head, _AGREED.of(loaded.model))
    with _SERVING.on(head):
        yield


def _route(head: torch.nn.Linear, agreed: dict[tuple[int, bool, int], bool]) -> None:
    """Send `head`'s calls through _logits, once per head. Its forward at that moment is the plain head: a hook
    library's (accelerate sets an instance's own forward) stays under the slices."""
    with _ROUTING:
        if head not in _ROUTED:
            head.forward = functools.partial(_logits, head, head.forward, agreed)  # type: ignore[method-assign]
            _ROUTED.add(head)


def _logits(
    head: torch.nn.Linear, plain: Callable[[torch.Tensor], torch.Tensor], agreed: dict[tuple[int, bool, int], bool],
    hidden: torch.Tensor,
) -> torch.Tensor:
    rows = hidden.numel() // hidden.shape[-1]
    if head not in _SERVING or torch.is_grad_enabled() or not 1 < rows <= MAX_ROWS:
        return plain(hidden)
    weight = head.weight
    shape = (rows, hidden.is_contiguous(), torch.get_num_threads())
    if agreed.get(shape) is False:
        return handed_out(head, plain(hidden))
    flat = hidden.reshape(rows, hidden.shape[-1])
    # A greedy step's screened logits take the exact slices' bits, so only a shape whose slices agreed may screen.
    screened = screened_logits(head, flat) if agreed.get(shape) else None
    if screened is not None:
        return screened.reshape(*hidden.shape[:-1], weight.shape[0])
    logits = in_slices(flat, weight).reshape(*hidden.shape[:-1], weight.shape[0])
    if shape not in agreed:
        expected = plain(hidden)
        agreed[shape] = torch.equal(logits, expected)
        return handed_out(head, expected)
    return handed_out(head, logits)
