"""The lab page's multiplicity paragraph, recomputed from the committed real-model runs: Holm over their 14
across-pool paired t-tests (the naive step-down in tests/reference/naive_pilot.py), and the sign test's floor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.reference.naive_pilot import holm

ROOT = Path(__file__).resolve().parents[2]


def test_three_of_the_fourteen_survive_holm_and_no_sign_test_can():
    tests = []
    for path in sorted((ROOT / "docs" / "lab").glob("real_sft_*.json")):
        for comparison in json.loads(path.read_text())["comparisons"]:
            tests.append((path.stem, comparison["method"], comparison["against"], comparison["t_test_p"],
                          comparison["sign_test"]["p"], comparison["n_pools"]))
    assert len(tests) == 14
    adjusted = holm([test[3] for test in tests])
    survivors = {(stem, method, against): round(p, 3) for (stem, method, against, *_), p in zip(tests, adjusted)
                 if p < 0.05}
    assert survivors == {("real_sft_smollm2-135m-instruct-junk5", "cap", "ppl"): 0.023,
                         ("real_sft_smollm2-135m-instruct-junk5", "cap", "ifd"): 0.006,
                         ("real_sft_gemma3-270m-junk5", "cap", "ppl"): 0.002}
    gemma_random = next(p for (stem, method, against, *_), p in zip(tests, adjusted)
                        if stem == "real_sft_gemma3-270m-junk5" and (method, against) == ("cap", "random"))
    assert gemma_random == pytest.approx(0.053, abs=5e-4)
    floor = 2 / 2 ** 6
    assert all(n == 6 for *_, n in tests) and min(test[4] for test in tests) == pytest.approx(floor)
    assert all(min(1.0, 14 * test[4]) > 0.05 for test in tests)  # not even Bonferroni's first step lets one through
    lab = (ROOT / "docs" / "lab.md").read_text()
    assert "adjusted p 0.023 on SmolLM2, 0.002 on Gemma" in lab and "(0.006)" in lab and "adjusted 0.053" in lab
