"""The rank survey and the CAP scorer measure the same decoder blocks on every supported family."""

from __future__ import annotations

import pytest

from capsel.models.blocks import model_blocks
from capsel.models.loading import describe_model, load_causal_lm, load_model
from tests.fixtures.pool import tiny_model_dir
from tests.fixtures.tiny_models import BLOCK_PATHS, FAMILIES


def _path_of(model, blocks) -> str:
    return next(name for name, module in model.named_modules() if module is blocks)


@pytest.mark.parametrize("family", FAMILIES)
def test_profile_and_scorer_take_the_same_blocks(family, tmp_path):
    path = str(tiny_model_dir(tmp_path / family, family))
    scorer = load_model(describe_model(path, dtype="float32", device="cpu"))
    surveyed, _ = load_causal_lm(path)
    assert _path_of(scorer.model, scorer.blocks) == _path_of(surveyed, model_blocks(surveyed)) == BLOCK_PATHS[family]
