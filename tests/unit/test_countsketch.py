"""CountSketch against its dense matrix, and its inner products against the exact ones over seeds."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from capsel.methods.less.countsketch import CountSketch, block_seed


def sketch_blocks(sketch: CountSketch, blocks: dict[str, torch.Tensor]) -> torch.Tensor:
    accumulator = torch.zeros(sketch.dim)
    for name, block in blocks.items():
        sketch.add(accumulator, name, block)
    return accumulator


def blocks_of(seed: int) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return {"layer.0.lora_B": torch.randn(6, 4, generator=generator), "layer.1.lora_B": torch.randn(9, generator=generator)}


def test_sketch_is_the_dense_matrix_applied_block_by_block():
    sketch = CountSketch(dim=16, seed=3)
    blocks = blocks_of(0)
    dense = sum(sketch.matrix(name, block.numel()) @ block.reshape(-1) for name, block in blocks.items())
    torch.testing.assert_close(sketch_blocks(sketch, blocks), dense)
    # one ±1 per column: a CountSketch, not a general projection
    matrix = sketch.matrix("layer.0.lora_B", 24)
    assert ((matrix != 0).sum(0) == 1).all() and set(matrix[matrix != 0].tolist()) <= {-1.0, 1.0}


def test_sketch_is_deterministic_and_independent_of_block_order_and_cache():
    blocks = blocks_of(1)
    first = sketch_blocks(CountSketch(32, seed=5), blocks)
    again = sketch_blocks(CountSketch(32, seed=5), dict(reversed(list(blocks.items()))))
    assert torch.equal(first, again)
    assert not torch.equal(first, sketch_blocks(CountSketch(32, seed=6), blocks))
    # the hash of a block depends on its name, not on where it sits among the others
    assert block_seed(5, "a") == block_seed(5, "a") != block_seed(5, "b")


def test_inner_products_are_preserved_in_expectation_over_seeds():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=40), rng.normal(size=40)
    exact = float(x @ y)
    estimates = []
    for seed in range(3000):
        matrix = CountSketch(dim=8, seed=seed).matrix("block", 40).double().numpy()
        estimates.append(float((matrix @ x) @ (matrix @ y)))
    estimates = np.asarray(estimates)
    standard_error = estimates.std(ddof=1) / np.sqrt(len(estimates))
    # unbiased: the mean over seeds is within 4 standard errors of the exact inner product
    assert abs(estimates.mean() - exact) < 4 * standard_error
    # and a single sketch is not the identity: the estimates do vary from seed to seed
    assert estimates.std() > 0.1 * abs(exact)


@pytest.mark.parametrize("dim", [64, 4096])
def test_norms_concentrate_as_the_sketch_grows(dim):
    rng = np.random.default_rng(1)
    x = torch.tensor(rng.normal(size=500), dtype=torch.float32)
    sketched = sketch_blocks(CountSketch(dim, seed=0), {"block": x})
    relative = abs(float(sketched.norm() ** 2) / float(x.norm() ** 2) - 1)
    assert relative < (0.5 if dim == 64 else 0.15)
