"""benchmarks/pool_scale.py --add-rows, benchmarks/select_profile.py and benchmarks/reselect_floor.py run end to
end on a small pool, as the benchmark notes print them, so the nightly-increment scripts cannot rot."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
ROWS, ADDED = 20_000, 2_000


def _script(name: str, *args: str) -> list[str]:
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / name), *args], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


def _pool_counts(rows: int) -> dict:
    """What the generated pool holds: every fifth row a case variant of the one before (a duplicate), one row in
    100 with an empty response, and max(1, rows // 10,000) lines that are not JSON (both quarantined)."""
    duplicates = rows // 5
    return {"duplicates": duplicates, "quarantined": rows // 100 + max(1, rows // 10_000),
            "inserted": rows - duplicates - rows // 100}


def test_the_increment_runs_in_its_own_process_and_the_profile_reselects_the_whole_pool(tmp_path):
    lines = _script("pool_scale.py", "--rows", str(ROWS), "--add-rows", str(ADDED), "--workdir", str(tmp_path))
    full_run = tmp_path / "full_run.jsonl"
    full_run.write_text("\n".join(lines) + "\n")
    summary = json.loads(lines[-1])
    full, increment = summary["stages"], summary["increment"]["stages"]
    assert [stage["stage"] for stage in full] == [stage["stage"] for stage in increment] == [
        "ingest", "score", "residualize", "select, gate, publish"]
    for stages, rows in ((full, ROWS), (increment, ADDED)):
        assert {key: stages[0][key] for key in ("inserted", "duplicates", "quarantined")} == _pool_counts(rows)
        assert stages[1]["scored"] == stages[0]["inserted"]  # only the new rows are scored
    # the increment's selection covers the whole pool, old rows and new
    assert increment[3]["members"] > full[3]["members"]
    shares = summary["increment"]
    assert shares["share_of_full_time"] == round(shares["total_seconds"] / summary["total_seconds"], 4)
    assert shares["peak_within_full"] == (shares["peak_rss_gib"] <= summary["peak_rss_gib"])

    profile = json.loads("\n".join(_script("select_profile.py", "--workdir", str(tmp_path))))
    assert profile["members"] == increment[3]["members"]
    assert profile["pool_candidates"] > profile["members"] > 0
    parts = profile["parts_s"]
    # every part's function was found in the profile (rounded to 0.1 s, a small part reads 0.0)
    assert len(parts) == 12 and all(seconds is not None and seconds >= 0 for seconds in parts.values()), parts
    assert parts["select, gate, publish"] > 0
    assert parts["fit"] <= parts["residualize"] and parts["picks"] <= parts["select, gate, publish"] <= profile[
        "wall_s"]

    floor = json.loads("\n".join(_script("reselect_floor.py", "--workdir", str(tmp_path), "--full-run",
                                         str(full_run))))
    bare_z, excluded = floor["parts"]["z for every row, bare"], floor["parts"]["excluded.parquet encoded, bare"]
    # the bare query's z, computed apart from capsel's SQL, is the z the profile's selection published
    assert bare_z["members_compared"] == profile["members"]
    assert bare_z["max_abs_z_diff_from_published"] < 1e-9
    # every line of both pool files is a member or a row of excluded.parquet
    assert excluded["rows"] + profile["members"] == ROWS + ADDED + max(1, ROWS // 10_000) + max(1, ADDED // 10_000)
    assert floor["parts"]["great-expectations validation of the members"]["gate_passed"] is True
    budget = floor["budget"]
    assert budget["goal_s"] == round(0.05 * summary["total_seconds"], 1)
    assert budget["increment_new_rows_ingest_s"] == increment[0]["seconds"]
    spread = sum(part.get("cpu_s", part["wall_s"]) for part in floor["parts"].values()) / budget["cores"]
    assert budget["floor_s"] == pytest.approx(increment[0]["seconds"] + spread, abs=0.11)
    assert budget["goal_in_reach"] == (budget["floor_s"] <= budget["goal_s"])
