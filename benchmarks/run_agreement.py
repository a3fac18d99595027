"""How far two scorings of the same candidates agree, for the benchmarks that run the engine two ways."""

from __future__ import annotations

import hashlib


def agreement(first, second) -> dict:
    """Rows whose ŷ ids differ, and the largest |Δ D_ℓ| over the rows with equal ŷ (None when none has layers).

    Rows with another ŷ compare other pairs of branches, so only rows with equal ŷ measure a divergence change.
    """
    same = [(a, b) for a, b in zip(first, second, strict=True)
            if a.generation.generated_ids == b.generation.generated_ids]
    gaps = [abs(x - y) for a, b in same if a.divergence.layer_divergence and b.divergence.layer_divergence
            for x, y in zip(a.divergence.layer_divergence, b.divergence.layer_divergence)]
    return {"rows_with_other_generated_ids": len(first) - len(same),
            "max_abs_layer_divergence_diff": max(gaps) if gaps else None}


def results_digest(scored) -> str:
    """sha256 over every result's ŷ ids and divergence fields (floats by their exact repr), in order: two runs in
    separate processes gave the same bits where their digests match."""
    return hashlib.sha256(repr([(s.generation.generated_ids, s.divergence) for s in scored]).encode()).hexdigest()


def movement(first, second) -> dict:
    """`agreement`, with the largest relative Δ PPL and whether every bit agreed (their digests)."""
    ppl_moves = [abs(a.divergence.ppl - b.divergence.ppl) / a.divergence.ppl for a, b in zip(first, second)
                 if a.divergence.ppl and b.divergence.ppl]
    return {**agreement(first, second), "max_relative_ppl_diff": max(ppl_moves) if ppl_moves else None,
            "same_bits": results_digest(first) == results_digest(second)}
