"""Parity between two float32 code paths: equal to float rounding, and the same greedy choice wherever it is clear.

Two paths that compute the same function in float32 (a cache view against a fresh tensor, one row of a batch
against another) may sum in a different order: the CPU's BLAS picks its kernel by shape, alignment and
instruction set, so the last bits differ from one machine to the next (AMD EPYC against the CI's Intel host).
Each such difference is a few ulps of the largest term: measured 1e-7 to 1e-6 on logits of magnitude 0.5 to 8.
RTOL = ATOL = 1e-5 (about 80 ulps at 1.0) leaves room for that and for a deeper model, while reading a wrong
cache slot or a stale state moves a logit by 1e-2 or more.
"""

from __future__ import annotations

import torch

RTOL = ATOL = 1e-5


def assert_float32_parity(expected: torch.Tensor, got: torch.Tensor) -> None:
    """Equal within RTOL/ATOL, and the same argmax at every position whose top two logits are further apart
    than rounding could move them (ŷ is the argmax, so the contract needs those ids identical)."""
    torch.testing.assert_close(got, expected, rtol=RTOL, atol=ATOL)
    top_two = expected.topk(2, dim=-1).values
    clear = (top_two[..., 0] - top_two[..., 1]) > 2 * (ATOL + RTOL * top_two[..., 0].abs())
    assert torch.equal(got.argmax(-1)[clear], expected.argmax(-1)[clear])
