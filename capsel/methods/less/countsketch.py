"""Signed CountSketch of gradient blocks into one fixed-size vector, block by block.

Coordinate i of the block named `name` goes to bucket h(name, i) with sign s(name, i). Both come
from a generator seeded by (seed, name), so a block's sketch does not depend on where its
parameter sits in memory or in which order blocks arrive: sketch(x) = S x for one fixed sparse
matrix S (one ±1 per column), and E_S[<Sx, Sy>] = <x, y> over seeds.
"""

from __future__ import annotations

import hashlib

import torch


def block_seed(seed: int, name: str) -> int:
    """A 63-bit generator seed for one named block, stable across processes and Python versions."""
    digest = hashlib.blake2b(f"{seed}:{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


class CountSketch:
    """Sketches named blocks of coordinates into a `dim`-vector; hashes are made once per block and cached."""

    def __init__(self, dim: int, seed: int):
        self.dim = dim
        self.seed = seed
        self._hashes: dict[tuple[str, int, str], tuple[torch.Tensor, torch.Tensor]] = {}

    def hashes(self, name: str, numel: int, device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
        """(buckets int64 [numel], signs float32 [numel]) of the block `name`."""
        key = (name, numel, str(device))
        if key not in self._hashes:
            generator = torch.Generator().manual_seed(block_seed(self.seed, name))
            buckets = torch.randint(0, self.dim, (numel,), generator=generator)
            signs = torch.randint(0, 2, (numel,), generator=generator).to(torch.float32).mul_(2).sub_(1)
            self._hashes[key] = (buckets.to(device), signs.to(device))
        return self._hashes[key]

    def add(self, accumulator: torch.Tensor, name: str, block: torch.Tensor) -> None:
        """accumulator += S_name · block (flattened, in float32): one block, never the whole vector."""
        buckets, signs = self.hashes(name, block.numel(), accumulator.device)
        # a model spread over several GPUs produces blocks on each of them; the sum lives on one
        values = block.detach().reshape(-1).to(device=accumulator.device, dtype=torch.float32)
        accumulator.index_add_(0, buckets, values * signs)

    def matrix(self, name: str, numel: int) -> torch.Tensor:
        """The dense [dim, numel] matrix S_name this sketch applies (for tests and small checks)."""
        buckets, signs = self.hashes(name, numel)
        dense = torch.zeros(self.dim, numel)
        dense[buckets, torch.arange(numel)] = signs
        return dense
