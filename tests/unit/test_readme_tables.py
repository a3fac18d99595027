"""Every lab table in the READMEs is what its committed result files render, and changes when they change."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from capsel_lab.result_tables import BLOCK, DOCUMENTS, render, stale_documents

ROOT = Path(__file__).resolve().parents[2]


def test_every_readme_table_equals_what_its_committed_json_renders():
    assert stale_documents(ROOT) == []


def test_every_table_block_names_committed_files_and_a_known_renderer():
    blocks = [match for name in DOCUMENTS for match in BLOCK.finditer((ROOT / name).read_text(encoding="utf-8"))]
    assert blocks
    for match in blocks:
        for name in match.group("files").split():
            assert (ROOT / name).is_file() and name.startswith(("docs/lab/", "capsel/data/", "benchmarks/results/")), name


def test_a_changed_result_file_changes_the_table(tmp_path):
    (tmp_path / "docs" / "lab").mkdir(parents=True)
    source = ROOT / "docs" / "lab" / "noise_gemma3-270m-raw.json"
    shutil.copy(source, tmp_path / "docs" / "lab" / source.name)
    text = f"before\n<!-- table: noise-selections docs/lab/{source.name} -->\nold\n<!-- /table -->\nafter\n"
    rendered = render(text, tmp_path)
    assert rendered.startswith("before\n") and rendered.endswith("<!-- /table -->\nafter\n")
    assert "| Gemma 3 270M (base) | raw | 19 of 147 (salad 18, shuffled 1) |" in rendered
    changed = json.loads(source.read_text())
    changed["aggregate"]["selections"]["cap"]["n_junk"] = 3
    (tmp_path / "docs" / "lab" / source.name).write_text(json.dumps(changed))
    assert "| 3 of 147 (salad 18, shuffled 1) |" in render(rendered, tmp_path)


def test_a_benchmark_table_is_the_last_line_of_its_jsonl_run(tmp_path):
    """pool_scale's increment table: its rows from the run's summary line, the shares computed from the seconds."""
    (tmp_path / "runs").mkdir()
    summary = {"rows": 1000, "total_seconds": 40.0, "peak_rss_gib": 2.0, "stages": [
        {"stage": "ingest", "seconds": 10.0, "peak_rss_gib": 1.0, "inserted": 790, "duplicates": 200,
         "quarantined": 10},
        {"stage": "select, gate, publish", "seconds": 30.0, "peak_rss_gib": 2.0, "members": 79}],
        "increment": {"rows": 10, "total_seconds": 8.0, "peak_rss_gib": 1.5, "stages": [
            {"stage": "ingest", "seconds": 0.5, "peak_rss_gib": 1.0, "inserted": 8, "duplicates": 2,
             "quarantined": 0},
            {"stage": "select, gate, publish", "seconds": 7.5, "peak_rss_gib": 1.5, "members": 80}]}}
    stage_line = json.dumps({"stage": "ingest", "seconds": 10.0})
    (tmp_path / "runs" / "run.jsonl").write_text(f"{stage_line}\n{json.dumps(summary)}\n")
    rendered = render("<!-- table: pool-scale-increment runs/run.jsonl -->\n<!-- /table -->\n", tmp_path)
    assert "| stage | full run (1,000 rows): s | increment (10 rows): s | increment / full |\n|---|---:|---:|---:|" \
        in rendered
    assert "| ingest (increment: 8 inserted + 2 duplicates + 0 quarantined) | 10.0 | 0.5 | 5.0% |" in rendered
    assert "| select, gate, publish (the whole pool: 80 members) | 30.0 | 7.5 | 25.0% |" in rendered
    assert "| **whole run** | **40.0** | **8.0** | **20.0%** |" in rendered
    assert "| peak RSS of the process | 2.00 GiB | 1.50 GiB |  |" in rendered


def test_the_ingest_growth_table_puts_each_file_of_both_runs_on_one_row(tmp_path):
    """A row per file: the plain run's seconds beside the split-checkpoint run's; the slopes from their summaries."""
    def run(path, split: bool) -> None:
        lines = [{"stored_before": stored, "seconds": 10.0 + stored / 1e6, "keyed_seconds": 2.0,
                  "unkeyed_seconds": 0.5, **({"checkpoint_seconds": 0.1, "keyed_checkpoint_seconds": 0.2}
                                             if split else {})} for stored in (0, 790_000)]
        slopes = {"seconds": 1.0 + split, "keyed_seconds": 0.5, "unkeyed_seconds": 0.0,
                  **({"checkpoint_seconds": 0.06, "keyed_checkpoint_seconds": 0.12} if split else {})}
        path.write_text("\n".join(json.dumps(line) for line in [*lines, {"slope_s_per_million_stored": slopes}]))

    run(tmp_path / "plain.jsonl", split=False)
    run(tmp_path / "split.jsonl", split=True)
    rendered = render("<!-- table: ingest-growth plain.jsonl split.jsonl -->\n<!-- /table -->\n", tmp_path)
    assert "| 0.79 | 10.79 | 2.00 | 0.50 | 10.79 | 0.10 | 2.00 | 0.20 | 0.50 |" in rendered
    assert "| **slope, s per million stored** | **+1.00** | **+0.50** | +0.00 | **+2.00** | +0.06 | +0.50 | +0.12 " \
        "| +0.00 |" in rendered


def test_help_time_rounds_name_each_sides_slowest_command_and_count_the_slow_ones(tmp_path):
    before = {"median_s": {"demo": 1.2, "score": 0.9}}
    after = {"median_s": {"demo": 0.3, "score": 0.61, "select": 0.5, "ingest": 0.49}}
    for name, summary in (("before.json", before), ("after.json", after)):
        (tmp_path / name).write_text(json.dumps(summary))
    rendered = render("<!-- table: help-time-rounds before.json after.json -->\n<!-- /table -->\n", tmp_path)
    assert "| 1 | 1.20 s (demo) | 0.61 s (score) | 2 of 4, up to 0.61 s |" in rendered


def test_pool_scale_growth_divides_the_large_run_by_the_small_one(tmp_path):
    def run(name: str, rows: int, seconds: float, peak: float) -> None:
        summary = {"rows": rows, "total_seconds": seconds, "peak_rss_gib": peak,
                   "stages": [{"stage": "residualize", "seconds": seconds, "peak_rss_gib": peak}]}
        (tmp_path / name).write_text(json.dumps({"stage": "residualize"}) + "\n" + json.dumps(summary) + "\n")

    run("small.jsonl", 1_000_000, 2.0, 1.0)
    run("large.jsonl", 10_000_000, 30.0, 3.0)
    run("again.jsonl", 10_000_000, 120.0, 3.5)
    rendered = render("<!-- table: pool-scale-growth small.jsonl large.jsonl again.jsonl -->\n<!-- /table -->\n",
                      tmp_path)
    assert "| stage | 1M rows: s | 10M rows: s | 10M / 1M | peak RSS at 10M | 10M again (`-b`): s |" in rendered
    assert "| residualize | 2.0 | 30.0 | 15.0 | 3.00 GiB | 120.0 |" in rendered
    assert "| **whole run** | 2.0 | **30.0 (0.5 min)** | 15.0 | **3.00 GiB** | **120.0 (2.0 min), 3.50 GiB** |" in rendered


def test_the_select_profile_table_puts_both_runs_parts_side_by_side(tmp_path):
    before = {"wall_s": 110.0, "parts_s": {"residualize": 17.0, "picks": 10.4, "gone": 3.0}}
    after = {"wall_s": 75.4, "parts_s": {"residualize": 8.6, "picks": 1.8, "gone": None, "new": 0.5}}
    for name, summary in (("before.json", before), ("after.json", after)):
        (tmp_path / name).write_text(json.dumps(summary))
    rendered = render("<!-- table: select-profile-before-after before.json after.json -->\n<!-- /table -->\n",
                      tmp_path)
    assert "| picks | 10.4 | 1.8 |" in rendered
    assert "| gone | 3.0 | – |" in rendered and "| new | – | 0.5 |" in rendered
    assert "| **residualize, then select, gate and publish** | **110.0** | **75.4** |" in rendered


def test_the_select_profile_pairs_table_gives_the_mean_difference_and_its_paired_t_interval(tmp_path):
    walls = [(60.0, 50.0), (62.0, 55.0), (61.0, 52.0)]
    names = []
    for number, (before, after) in enumerate(walls, start=1):
        for side, wall in (("before", before), ("after", after)):
            names.append(f"{side}{number}.json")
            (tmp_path / names[-1]).write_text(json.dumps({"wall_s": wall, "parts_s": {}}))
    rendered = render(f"<!-- table: select-profile-pairs {' '.join(names)} -->\n<!-- /table -->\n", tmp_path)
    assert "| 2 | 62.0 | 55.0 | 7.0 |" in rendered
    # differences 10, 7, 9: mean 26/3, sample sd sqrt(7/3), t(0.975, 2 df) = 4.302653
    half = 4.302653 * (7 / 3) ** 0.5 / 3 ** 0.5
    assert (f"| **mean of 3 pairs** | **61.0** | **52.3** | **8.7** (95% CI {26 / 3 - half:.1f} to "
            f"{26 / 3 + half:.1f}) |") in rendered


def test_the_reselect_floor_table_lists_each_part_per_run_then_the_floors_against_the_goal(tmp_path):
    names = []
    for number, (z_cpu, floor) in enumerate(((5.0, 6.9), (6.0, 7.4)), start=1):
        names.append(f"floor{number}.json")
        (tmp_path / names[-1]).write_text(json.dumps({
            "parts": {"z, bare": {"wall_s": 2.6, "cpu_s": z_cpu}, "import": {"wall_s": 2.7},
                      "excluded.parquet encoded, bare": {"wall_s": 1.0, "cpu_s": 2.0}},
            "budget": {"full_run_s": 300.0, "goal_s": 15.0, "increment_new_rows_ingest_s": 3.0, "cores": 2,
                       "floor_s": floor, "floor_share_of_full_run": floor / 300.0}}))
    rendered = render(f"<!-- table: reselect-floor {' '.join(names)} -->\n<!-- /table -->\n", tmp_path)
    assert "| part | run 1: wall / CPU s | run 2: wall / CPU s |" in rendered
    assert "| z, bare | 2.6 / 5.0 | 2.6 / 6.0 |" in rendered and "| import | 2.7 / – | 2.7 / – |" in rendered
    assert ("| **floor: the new rows' ingest (3.0 s) + the CPU seconds over 2 cores** | **6.9** (2.3%) | **7.4** "
            "(2.5%) |") in rendered
    # less excluded.parquet's 2.0 CPU seconds over 2 cores: 6.9 - 1.0 and 7.4 - 1.0
    assert "| the same floor without excluded.parquet's encoding | 5.9 (2.0%) | 6.4 (2.1%) |" in rendered
    assert "| goal: 5% of the full run (300.0 s) | 15.0 | 15.0 |" in rendered
