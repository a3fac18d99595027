"""The output head on CPU in slices of the vocabulary: the plain head's float32 logits, bit for bit, sooner.

A greedy step multiplies a batch's few rows by the whole vocabulary, and MKL runs that product slowly in the shape
`nn.Linear` gives it. On 2 cores, Gemma 3 270M's 262,144 x 640 head took 186 ms at 32 rows, where the same product
as slices of 4,096 vocabulary rows times the rows' transpose took 126 ms: 78 against 138 ms at 16 rows, 185 against
255 at 64 (benchmarks/README.md, 2026-11-29, fifth session). In a batch of 32 the greedy steps' heads were a third
of the engine's time. Each logit is still one dot product over the hidden size, and the slices only change which
logits one call of MKL computes.

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

from capsel.cap_engine.per_model import PerModel

if TYPE_CHECKING:
    from capsel.models.loading import LoadedModel

# Vocabulary rows per slice: a slice's logits for a batch of 32 (512 KB) stay in the core's cache.
SLICE_ROWS = 4096
# Beyond this many rows (a response branch's every position) the slices gained nothing: 1,425 against 1,394 ms at
# 512 rows. One row gained nothing either (61 against 57 ms).
MAX_ROWS = 256

# (rows, contiguous input, torch threads) -> whether the slices gave the plain head's bits, per model.
_AGREED: PerModel[dict[tuple[int, bool, int], bool]] = PerModel(dict)
_ROUTED: weakref.WeakSet[torch.nn.Module] = weakref.WeakSet()
_ROUTING = threading.Lock()
# Per thread: the heads a sliced_head context has on now, and how deep.
_SERVING = threading.local()


def slices_head(loaded: LoadedModel) -> bool:
    """Whether `loaded`'s head runs in slices where they agree: never unless it is a linear head without bias on CPU;
    then `loaded.sliced_head`, or when that is None, for a float32 head whose vocabulary spans more than one slice
    (the shapes measured)."""
    head = loaded.model.get_output_embeddings()
    if type(head) is not torch.nn.Linear or head.bias is not None or head.weight.device.type != "cpu":
        return False
    if loaded.sliced_head is not None:
        return loaded.sliced_head
    return head.weight.dtype == torch.float32 and head.weight.shape[0] > SLICE_ROWS


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
    serving = _serving()
    serving[head] = serving.get(head, 0) + 1
    try:
        yield
    finally:
        serving[head] -= 1
        if not serving[head]:
            del serving[head]


def _serving() -> dict[torch.nn.Module, int]:
    if not hasattr(_SERVING, "heads"):
        _SERVING.heads = {}
    return _SERVING.heads


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
    if head not in _serving() or torch.is_grad_enabled() or not 1 < rows <= MAX_ROWS:
        return plain(hidden)
    weight = head.weight
    shape = (rows, hidden.is_contiguous(), torch.get_num_threads())
    if agreed.get(shape) is False:
        return plain(hidden)
    logits = in_slices(hidden.reshape(rows, hidden.shape[-1]), weight).reshape(*hidden.shape[:-1], weight.shape[0])
    if shape not in agreed:
        expected = plain(hidden)
        agreed[shape] = torch.equal(logits, expected)
        return expected
    return logits


def in_slices(rows: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """rows @ weight.T, computed as each slice of `weight`'s rows times the rows' transpose."""
    columns = rows.T.contiguous()
    logits = rows.new_empty(rows.shape[0], weight.shape[0])
    for start in range(0, weight.shape[0], SLICE_ROWS):
        logits[:, start:start + SLICE_ROWS] = torch.mm(weight[start:start + SLICE_ROWS], columns).T
    return logits
