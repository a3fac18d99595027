"""A greedy step's screened head (cap_engine.greedy_head): each row's argmax is the plain head's, ties included.

The screen estimates every logit from a bfloat16 copy of the head and computes exactly only the vocabulary slices
that can hold a row's greatest logit. The tests hold its argmax to the plain float32 head's (F.linear), its kept
logits to the plain head's bits, and its error bound to float64 sums computed here.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

from capsel.cap_engine.greedy_head import (
    MOST_KEPT,
    TRIAL_STEPS,
    argmax_only,
    passes_logits_through,
    returned,
    screening_counts,
)
from capsel.cap_engine.inputs import CandidateText
from capsel.cap_engine.sliced_head import head_shapes_checked, sliced_head
from capsel.cap_engine.vocabulary_slices import SLICE_ROWS
from capsel.models.loading import describe_model, load_model
from tests.fixtures.candidates import mixed_candidates
from tests.fixtures.step_capture import scored
from tests.fixtures.stock_cache import load_cache_family
from tests.integration.test_sliced_head import assert_identical, texts

# 13 slices, the last a short one; the rows the tests aim at lie in the first 6, so the other 7 can be left out
VOCABULARY = 12 * SLICE_ROWS + 300
TIED = [SLICE_ROWS + 5, 3 * SLICE_ROWS + 7, 5 * SLICE_ROWS + 11]
NEAR = 2 * SLICE_ROWS + 1


def sixteen() -> list[CandidateText]:
    """16 candidates with responses: on the CPUs measured, MKL's slices give the plain bits from 16 rows up."""
    rows = mixed_candidates(seed=7, prefix="c") + mixed_candidates(seed=8, prefix="d")
    return [CandidateText(**row) for row in rows if row["response"].strip()][:16]


def with_head(tmp_path, weight: torch.Tensor):
    """A tiny llama, slices forced, whose head is `weight` (the head is called directly, not through the model)."""
    loaded = replace(load_cache_family("llama", tmp_path / "llama"), sliced_head=True)
    head = loaded.model.get_output_embeddings()
    head.weight = torch.nn.Parameter(weight, requires_grad=False)
    return loaded, head


def tied_weight(hidden: int) -> torch.Tensor:
    """Random rows, one of them repeated in three slices (exact ties) and once more with one element a bit larger."""
    torch.manual_seed(0)
    weight = torch.randn(VOCABULARY, hidden) * 0.05
    for index in TIED[1:]:
        weight[index] = weight[TIED[0]]
    weight[NEAR] = weight[TIED[0]]
    weight[NEAR, 0] = torch.nextafter(weight[NEAR, 0], torch.tensor(float("inf")))
    return weight


def rows_toward(weight: torch.Tensor, targets: list[int], seed: int) -> torch.Tensor:
    """Rows each close to a multiple of a target vocabulary row, so that row's logit is near the greatest."""
    generator = torch.Generator().manual_seed(seed)
    rows = torch.stack([weight[target] * 400 for target in targets])
    return rows + torch.randn(rows.shape, generator=generator) * 0.5


def test_the_screened_argmax_is_the_plain_argmax_and_its_kept_logits_the_plain_bits(tmp_path):
    loaded, head = with_head(tmp_path, tied_weight(32))
    weight = head.weight
    # 16 rows: on the CPUs measured, MKL's slices give the plain bits from 16 rows up and not at 8 or fewer
    targets = [TIED[0], TIED[1], NEAR, 17, 4 * SLICE_ROWS + 3, 6 * SLICE_ROWS - 1] + list(range(40, 4000, 400))
    screened_any = False
    with torch.inference_mode(), sliced_head(loaded), argmax_only(loaded):
        # The first step's logits are exact; the model's return of them as they are lets later steps screen.
        first = head(rows_toward(weight, targets, seed=0)[:, None])
        returned(loaded, first)
        assert passes_logits_through(loaded) is True
        for seed in range(1, 25):
            rows = rows_toward(weight, targets, seed)
            plain = F.linear(rows, weight)
            logits = head(rows[:, None])[:, 0]
            assert torch.equal(logits.argmax(-1), plain.argmax(-1))
            kept = torch.isfinite(logits)
            assert torch.equal(logits[kept], plain[kept])
            assert (~kept | (logits == plain)).all()
            screened_any |= bool((~kept).any())
        if plain[0, TIED[0]] == plain[0].max():
            assert int(logits[0].argmax()) == TIED[0]  # the first of the three equal logits
    if head_shapes_checked(loaded)[(len(targets), True, torch.get_num_threads())]:
        assert screened_any and screening_counts(loaded)["slices_kept"] < screening_counts(loaded)["slices"]
        assert not torch.isfinite(logits[:, 6 * SLICE_ROWS:]).any()
    else:  # this machine's slices gave other bits at this shape: the head stayed exact and never screened
        assert not screened_any and screening_counts(loaded)["steps"] == 0
    # outside an argmax-only step the head hands out every logit
    with torch.inference_mode(), sliced_head(loaded):
        assert torch.equal(head(rows[:, None])[:, 0], F.linear(rows, weight))


def test_every_estimate_is_within_the_bound_of_its_float32_logit():
    """The bound the screen rests on, checked entry by entry against float64 sums of |x_i·w_i|."""
    torch.manual_seed(1)
    for hidden, scale in [(64, 1.0), (640, 0.04), (640, 30.0), (2048, 0.02)]:
        weight = torch.randn(3000, hidden) * scale
        weight[::7] *= 50  # rows of very different norms
        rows = torch.randn(16, hidden) * torch.logspace(-2, 3, 16)[:, None]
        exact = F.linear(rows, weight).double()
        estimate = torch.mm(weight.to(torch.bfloat16), rows.to(torch.bfloat16).T.contiguous()).T.double()
        absolute_sums = rows.double().abs() @ weight.double().abs().T
        gamma = hidden * 2.0 ** -24 / (1 - hidden * 2.0 ** -24)
        bound = (2.0 ** -7 / (1 - 2.0 ** -7)) * estimate.abs() + (
            (1 + 2.0 ** -8) ** 2 * (1 + gamma) - 1 + gamma) * absolute_sums
        assert ((estimate - exact).abs() <= bound).all()


def test_a_weight_changed_in_place_is_estimated_again(tmp_path):
    loaded, head = with_head(tmp_path, tied_weight(32))
    weight = head.weight
    targets = [TIED[0], 9, 3 * SLICE_ROWS + 2] + list(range(100, 1400, 100))
    with torch.inference_mode(), sliced_head(loaded), argmax_only(loaded):
        returned(loaded, head(rows_toward(weight, targets, seed=0)[:, None]))
        rows = rows_toward(weight, targets, seed=1)
        head(rows[:, None])
        # Every row now points elsewhere: a stale bfloat16 copy would keep the old rows' slices and miss the new.
        with torch.no_grad():
            weight.copy_(weight.roll(SLICE_ROWS + 3, dims=0))
        assert torch.equal(head(rows[:, None])[:, 0].argmax(-1), F.linear(rows, weight).argmax(-1))


def test_a_row_that_is_not_finite_takes_the_exact_head(tmp_path):
    loaded, head = with_head(tmp_path, tied_weight(32))
    weight = head.weight
    rows = rows_toward(weight, [TIED[0], *range(1, 16)], seed=0)
    with torch.inference_mode(), sliced_head(loaded), argmax_only(loaded):
        returned(loaded, head(rows[:, None]))
        rows[1, 3] = float("inf")
        logits = head(rows[:, None])[:, 0]
    assert torch.equal(logits.nan_to_num(), F.linear(rows, weight).nan_to_num())


def test_a_model_that_changes_its_heads_logits_in_place_never_screens(tmp_path):
    loaded, head = with_head(tmp_path, tied_weight(32))
    rows = rows_toward(head.weight, [TIED[0], *range(1, 16)], seed=0)
    with torch.inference_mode(), sliced_head(loaded), argmax_only(loaded):
        logits = head(rows[:, None])
        logits.mul_(2)  # what a model scaling its logits in place after the head would do
        returned(loaded, logits)
        assert passes_logits_through(loaded) is False
        assert torch.equal(head(rows[:, None])[:, 0], F.linear(rows, head.weight))  # every logit, exact
    assert screening_counts(loaded)["steps"] == 0


def test_a_model_that_changes_its_heads_logits_never_screens(tmp_path):
    """Gemma 2 softcaps its logits after the head, which could make two different logits equal."""
    loaded = load_cache_family("gemma2", tmp_path / "gemma2")
    plain = scored(replace(loaded, sliced_head=False), texts(8))
    forced = replace(loaded, sliced_head=True)
    assert_identical(plain, scored(forced, texts(8)))
    assert passes_logits_through(forced) is False
    assert screening_counts(forced)["steps"] == 0


def test_a_model_that_returns_its_heads_logits_screens_every_later_greedy_step_and_scores_as_plain(tmp_path):
    loaded = load_cache_family("llama", tmp_path / "llama")
    candidates = sixteen()
    assert len(candidates) == 16
    plain = scored(replace(loaded, sliced_head=False), candidates, batch_size=16)
    forced = replace(loaded, sliced_head=True)
    assert_identical(plain, scored(forced, candidates, batch_size=16))
    assert passes_logits_through(forced) is True
    # The greedy steps run the batch's rows left after the prompts' checks (14 of 16), contiguous, the largest shape
    # checked; they screen only where this machine's slices gave the plain bits at that shape.
    greedy_shape = greedy_head_shape(forced)
    assert greedy_shape[0] >= 14
    assert (screening_counts(forced)["steps"] > 0) == head_shapes_checked(forced)[greedy_shape]
    # switched off, the greedy steps take the exact slices
    steps = screening_counts(forced)["steps"]
    assert_identical(plain, scored(replace(forced, screened_greedy_head=False), candidates, batch_size=16))
    assert screening_counts(forced)["steps"] == steps


def greedy_head_shape(loaded) -> tuple[int, bool, int]:
    """The head shape the greedy steps of a 16-row batch ran: the largest contiguous one checked."""
    return max((shape for shape in head_shapes_checked(loaded) if shape[1]), key=lambda shape: shape[0])


def screening_scoring_as_plain(model_dir) -> tuple[dict[str, int], bool]:
    """A real model scores the 16 candidates bit for bit as with the plain head; what its greedy head screened, and
    whether this CPU's slices gave the plain bits at the greedy steps' shape (only then may a step screen)."""
    loaded = load_model(describe_model(str(model_dir), dtype="float32", device="cpu"))
    plain = scored(replace(loaded, sliced_head=False), sixteen(), batch_size=16)
    assert_identical(plain, scored(loaded, sixteen(), batch_size=16))
    assert passes_logits_through(loaded) is True
    return screening_counts(loaded), head_shapes_checked(loaded)[greedy_head_shape(loaded)]


# Whether a shape's slices give the plain bits is MKL's choice on each CPU: Gemma's greedy shape agreed on the CPUs
# measured before and not on an AVX-512 Xeon with AMX, where no step may screen and the scores stay the plain bits.
@pytest.mark.slow
def test_real_smollm2_stops_screening_where_the_screen_keeps_most_slices(smollm2_instruct_dir):
    counts, agreed = screening_scoring_as_plain(smollm2_instruct_dir)
    if not agreed:
        assert counts == {"steps": 0, "slices": 0, "slices_kept": 0}
        return
    # 49,152 rows are 24 slices. SmolLM2's greatest logits stand close together against large rows, so its trial
    # steps kept most slices, and the later steps took the exact head.
    assert counts["steps"] == TRIAL_STEPS and counts["slices"] == 24 * TRIAL_STEPS
    assert counts["slices_kept"] > MOST_KEPT * counts["slices"]


@pytest.mark.slow
def test_real_gemma3_screens_its_greedy_steps_and_scores_exactly_as_with_the_plain_head(gemma3_270m_dir):
    counts, agreed = screening_scoring_as_plain(gemma3_270m_dir)
    if not agreed:
        assert counts == {"steps": 0, "slices": 0, "slices_kept": 0}
        return
    # 262,144 rows are 128 slices; every greedy step after the first screened, and most slices were left out
    assert counts["steps"] > TRIAL_STEPS and counts["slices"] == 128 * counts["steps"]
    assert counts["slices_kept"] <= MOST_KEPT * counts["slices"]
