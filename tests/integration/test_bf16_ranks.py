"""bf16 scoring ranks candidates like the float32 CPU reference: Spearman of CAP >= 0.99.

Exact values differ in bf16, so the check is on ranks. Both score the same stored float32
y-hat, as the vLLM route does (generation elsewhere, HF scoring here), so a flipped argmax
in bf16 decoding cannot change which pair of branches is compared. On CPU the test runs
everywhere; the CUDA case is the one the GPU path is held to (SDPA or FlashAttention-2).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from capsel.cap_engine.batch_memory import resolve_batch_size
from capsel.cap_engine.config import ScoringConfig
from capsel.cap_engine.engine import ScoringEngine
from capsel.cap_engine.inputs import CandidateText
from capsel.models.loading import describe_model, load_model
from tests.fixtures.candidates import mixed_candidates
from tests.fixtures.pool import tiny_model_dir

DEVICES = [
    "cpu",
    pytest.param("cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(),
                                                                    reason="needs a CUDA GPU")]),
]


@pytest.fixture(scope="module")
def float32_reference(tmp_path_factory):
    """The model folder, its float32 CPU generations over a pool of ~50 scorable candidates, and their scores."""
    path = str(tiny_model_dir(tmp_path_factory.mktemp("bf16") / "llama", hidden=64))
    engine = ScoringEngine(load_model(describe_model(path, dtype="float32", device="cpu")), ScoringConfig(), 16)
    texts = [CandidateText(**c) for seed in range(5) for c in mixed_candidates(seed=seed, prefix=f"s{seed}-")]
    generations = engine.generate(engine.prepare(texts))
    return path, generations, engine.score(generations)


def cap(divergences) -> dict[str, float]:
    """CAP per candidate: the residual of the OLS of D_late on D_early over the pool (one domain)."""
    scored = [d for d in divergences if d.excluded_reason is None]
    early, late = np.array([d.d_early for d in scored]), np.array([d.d_late for d in scored])
    beta, alpha = np.polyfit(early, late, 1)
    return {d.candidate_id: float(r) for d, r in zip(scored, late - (alpha + beta * early))}


def spearman(a: list[float], b: list[float]) -> float:
    """Pearson correlation of the ranks (no ties among continuous scores)."""
    ranks = [np.argsort(np.argsort(values)) for values in (a, b)]
    return float(np.corrcoef(*ranks)[0, 1])


@pytest.mark.parametrize("device", DEVICES)
def test_bf16_cap_ranks_match_float32_cpu(float32_reference, device):
    path, generations, reference = float32_reference
    loaded = load_model(describe_model(path, dtype="bfloat16", device=device))
    config = ScoringConfig(prompt_format="raw")
    engine = ScoringEngine(loaded, config, resolve_batch_size("auto", loaded, config))
    scored = engine.score(generations)

    assert [d.excluded_reason for d in scored] == [d.excluded_reason for d in reference]
    expected, got = cap(reference), cap(scored)
    assert len(expected) >= 40
    ids = sorted(expected)
    rho = spearman([expected[i] for i in ids], [got[i] for i in ids])
    assert rho >= 0.99, rho
    # Not identical: the model really ran in bf16.
    assert max(abs(expected[i] - got[i]) for i in ids) > 0
