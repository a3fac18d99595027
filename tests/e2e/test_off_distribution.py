"""The demo model (trained on the lab's synthetic world) scored on real GSM8K text: the run says the model is far
off the text's distribution; on its own world it says nothing of the kind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pytest

from capsel.cap_engine.distribution_check import OFF_DISTRIBUTION_PPL

pytestmark = pytest.mark.e2e
DATA = Path(__file__).resolve().parents[2] / "capsel" / "data"


def first_rows(path: Path, domain: str, n: int) -> list[str]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [json.dumps(row) for row in rows if row["domain"] == domain][:n]


def score_json(tmp_path: Path, rows: list[str]) -> dict:
    (tmp_path / "pool.jsonl").write_text("\n".join(rows) + "\n")
    env = {key: value for key, value in os.environ.items() if not key.startswith("CAPSEL_")}
    env.update(CAPSEL_DB_PATH=str(tmp_path / "capsel.duckdb"), COLUMNS="200")
    for args in (["ingest", "pool.jsonl"], ["score", "--model", "demo", "--threads", "1", "--json"]):
        done = subprocess.run([sys.executable, "-m", "capsel", *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def median_ppl(tmp_path: Path) -> float:
    con = duckdb.connect(str(tmp_path / "capsel.duckdb"), read_only=True)
    values = [row[0] for row in con.execute("select ppl from divergences where excluded_reason is null").fetchall()]
    con.close()
    return float(np.median(values))


def test_the_demo_model_on_real_text_is_reported_off_distribution(tmp_path):
    real = score_json(tmp_path, first_rows(DATA / "real_pool" / "pool.jsonl", "math", 24))
    notes = [note for note in real["scoring"]["notes"] if "far off this text's distribution" in note]
    measured = median_ppl(tmp_path)
    assert measured > OFF_DISTRIBUTION_PPL
    assert len(notes) == 1 and notes[0].startswith("math: the model's median PPL on the reference responses is "
                                                   f"{measured:,.0f}")


def test_the_demo_model_on_its_own_world_is_not(tmp_path):
    own = score_json(tmp_path, first_rows(DATA / "lab_pool" / "pool.jsonl", "math", 24))
    assert median_ppl(tmp_path) < 20
    assert not [note for note in own["scoring"]["notes"] if "distribution" in note]
