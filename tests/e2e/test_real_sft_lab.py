"""`capsel lab sft --pool real` is the pilot's design on the lab's pool: on a tiny model, two pools of GSM8K train
rows with junk, CAP against two random draws; the junk each selection took is counted from the lab's labels."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from capsel.config import load_settings
from capsel.pilot.run import PilotEvents
from capsel_lab.real_sft.preset import RealLab, run_real_lab
from tests.integration.test_finetune_llamafactory import FOUND, LF_PYTHON
from tests.support.finetune_fixtures import tiny_base_model

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(
    FOUND is None, reason=f"LlamaFactory's environment is missing ({LF_PYTHON}): run `make setup-llamafactory`")]


def test_the_real_lab_runs_the_pilot_on_its_pool_and_counts_the_junk_taken(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPSEL_TRAINER_PYTHON", str(LF_PYTHON))
    monkeypatch.setenv("CAPSEL_THREADS", "1")
    base = tiny_base_model(tmp_path / "base", layers=4)
    lab = RealLab(model=str(base), pools=2, n_pool=20, n_heldout=10, junk_share=0.1, budgets=("25%",),
                  methods=("cap",), random_draws=2, min_steps=2, allow_dirty=True)
    said: list[str] = []
    result = run_real_lab(lab, tmp_path / "lab", load_settings(), PilotEvents(say=said.append))
    assert [cell["method"] for cell in result["cells"]].count("cap") == 2 and len(result["cells"]) == 6
    # the pilot's own files: its pool is the lab's, its held-out rows apart from it
    pilot = json.loads((tmp_path / "lab" / "pilot" / "pilot.json").read_text())
    assert pilot["design"]["n_heldout"] == 10 and pilot["design"]["subpool_rows"] == 22  # 2 x 20 clean + 4 junk
    labels = pd.read_csv(tmp_path / "lab" / "data" / "pool" / "labels.csv").set_index("candidate_id")["lab_label"]
    for cell in result["cells"]:
        members = [json.loads(line) for line in (tmp_path / "lab" / "pilot" / f"replicate-{cell['replicate']}" /
                                                 "selections" / cell["selection_id"] / "data.jsonl").read_text()
                   .splitlines()]
        assert len(members) == cell["rows"]
        by_text = {row["instruction"] for row in members}
        pool = [json.loads(line) for line in (tmp_path / "lab" / "data" / "pool" / "pool.jsonl").read_text()
                .splitlines()]
        junk = sum(row["lab_label"] == "junk" for row in pool if row["instruction"] in by_text)
        assert result["junk"][cell["cell"]] == junk
    assert set(labels) and json.loads((tmp_path / "lab" / "lab.json").read_text())["junk"] == result["junk"]
