"""The real-model SFT lab's data: pools drawn apart from their held-out and demonstration rows."""

from __future__ import annotations

import json
from pathlib import Path

from capsel_lab.real_sft.pool import N_DEMONSTRATIONS, write_lab_files

ROOT = Path(__file__).resolve().parents[2]


def _questions(path) -> list[str]:
    return [json.loads(line).get("question") or json.loads(line)["instruction"]
            for line in path.read_text().splitlines()]


def test_heldout_and_demonstration_rows_are_disjoint_from_the_pool(tmp_path):
    files = write_lab_files(tmp_path, n_pool=30, n_heldout=12, junk_share=0.1, seed=3)
    pool = [json.loads(line) for line in files.pool.read_text().splitlines()]
    clean = {row["instruction"] for row in pool if row["lab_label"] == "clean"}
    assert len(clean) == 30 and sum(row["lab_label"] == "junk" for row in pool) == 3
    heldout, demos = _questions(files.heldout), _questions(files.demos)
    assert len(heldout) == 12 and len(demos) == N_DEMONSTRATIONS
    assert not clean & set(heldout) and not clean & set(demos) and not set(heldout) & set(demos)
    again = write_lab_files(tmp_path / "again", n_pool=30, n_heldout=12, junk_share=0.1, seed=3)
    assert again.heldout.read_text() == files.heldout.read_text()  # the same seed draws the same rows
    other = write_lab_files(tmp_path / "other", n_pool=30, n_heldout=12, junk_share=0.1, seed=4)
    assert other.pool.read_text() != files.pool.read_text()  # each pool seed a fresh draw
