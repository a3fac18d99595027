"""A generator in a spawned worker process: same tokens as in this process, clean errors, and a real exit."""

from __future__ import annotations

import pytest

from capsel.errors import CapselError
from capsel.scoring.config import ScoringConfig
from capsel.scoring.generation import HFGenerator
from capsel.scoring.inputs import CandidateText, build_inputs
from capsel.scoring.model_loading import describe_model, load_model
from capsel.scoring.worker_process import ProcessGenerator
from tests.fixtures.candidates import mixed_candidates
from tests.fixtures.pool import tiny_model_dir
from tests.support import process_factories


def test_generator_in_a_worker_process_matches_in_process(tmp_path):
    path = str(tiny_model_dir(tmp_path / "m"))
    info = describe_model(path, dtype="float32", device="cpu")
    inputs = build_inputs([CandidateText(**c) for c in mixed_candidates()], info.tokenizer, ScoringConfig())
    prompts = [item.prompt_ids for item in inputs if not item.excluded_reason]
    expected = HFGenerator(load_model(info), 48, batch_size=4).generate(prompts)

    worker = ProcessGenerator(process_factories.hf_generator, {"model_dir": path, "horizon": 48, "batch_size": 4},
                              name="hf", batch_size=4)
    try:
        assert worker.generate(prompts) == expected
        assert worker.generate(prompts[:2]) == expected[:2], "the worker serves batch after batch"
        assert worker.exitcode is None
    finally:
        worker.close()
    assert worker.exitcode == 0
    with pytest.raises(CapselError, match="closed"):
        worker.generate(prompts)


def test_a_generator_that_cannot_start_is_one_clear_error():
    with pytest.raises(CapselError, match="cannot start here"):
        ProcessGenerator(process_factories.refusing_generator, {}, name="refusing", batch_size=1)


def test_a_worker_that_dies_mid_batch_is_reported_with_its_exit_code():
    worker = ProcessGenerator(process_factories.dying_generator, {}, name="dying", batch_size=1)
    with pytest.raises(CapselError, match=r"died while generating \(exit code 3\)"):
        worker.generate([[1, 2, 3]])
    assert worker.exitcode == 3
