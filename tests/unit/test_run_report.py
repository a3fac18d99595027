"""Flow run summaries: counts per stage, exclusions, fits and examples as Markdown."""

from pathlib import Path

from capsel.ingest.file_outcome import FileOutcome
from capsel.ingest.inputs import EMPTY_FILE, Skipped
from capsel.ingest.summary import DomainCounts, IngestReport
from capsel.orchestration.run_report import (
    FlowReport,
    gate_failure_markdown,
    ingest_line,
    ingest_rows,
    preview,
    summary_markdown,
)
from capsel.orchestration.version_diff import VersionDiff
from capsel.runner.progress import RunSummary
from capsel.selection.residualize import DomainFit
from capsel.stages.ingest import kept_nothing, lost_files_error


def test_summary_lists_every_stage():
    ingest = IngestReport("ing", [FileOutcome(Path("/a.jsonl"), "s1", 7), FileOutcome(Path("/b.jsonl"), "s2", 0, "old")],
                          [DomainCounts("math", 7, 5, 1, 1, 0)])
    scoring = RunSummary(run_id="sc", n_in_scope=9, n_already_done=4, n_processed=5, n_done=3, n_generated=4,
                         wall_s=2.0)
    scoring.excluded.update({"short_response": 2})
    fit = DomainFit("math", 3, 0, 0.1, 0.25, 0.5, 0.9, 0.1, 0.3, 0.4, 0.2, 0.0, 1.0)
    report = FlowReport("select", "run1", "pf1", ingest=ingest, scoring=scoring, fits=[fit],
                        examples=[{"domain": "math", "side": "top", "candidate_id": "c1", "z": 1.5,
                                   "instruction": "a | b"}], notes=["a note"])
    text = summary_markdown(report)
    assert "| math | 7 | 5 | 1 | 1 | 0 |" in text and "| total | 7 | 5 | 1 | 1 | 0 |" in text
    assert "1 file(s) ingested, 1 already ingested" in text
    assert "| excluded: short_response | 2 |" in text and "| scored this run | 5 |" in text
    assert "| math | 3 | 0.25 | 0.5 | 0.9 |" in text
    assert "a &#124; b" in text and "- a note" in text and "pf1" in text
    assert report.counters()["score"]["n_excluded"] == {"short_response": 2}


def test_preview_and_gate_failure():
    assert preview("  one\n two  ") == "one two"
    assert preview("x" * 100, 10) == "x" * 9 + "…"
    text = gate_failure_markdown("r", ["members: ExpectX(): 2 unexpected"], "/out/rejected/sel/gate/index.html")
    assert "1 expectation(s) failed" in text and "- members: ExpectX(): 2 unexpected" in text


def _two_domain_ingest() -> IngestReport:
    return IngestReport("ing", [FileOutcome(Path("/a.jsonl"), "s1", 12), FileOutcome(Path("/b.jsonl"), "s2", 0, "old")],
                        [DomainCounts("code", 5, 4, 1, 0, 0), DomainCounts("math", 7, 5, 0, 1, 1)])


def test_ingest_rows_and_totals():
    rows = ingest_rows(_two_domain_ingest())
    assert rows == [
        {"domain": "code", "read": 5, "inserted": 4, "duplicates": 1, "quarantined": 0, "sampled out": 0},
        {"domain": "math", "read": 7, "inserted": 5, "duplicates": 0, "quarantined": 1, "sampled out": 1},
        {"domain": "total", "read": 12, "inserted": 9, "duplicates": 1, "quarantined": 1, "sampled out": 1},
    ]
    text = summary_markdown(FlowReport("select", "r", ingest=_two_domain_ingest()))
    assert "| domain | read | inserted | duplicates | quarantined | sampled out |" in text
    assert "| total | 12 | 9 | 1 | 1 | 1 |" in text


def test_ingest_line_is_readable_not_a_dict():
    line = ingest_line(_two_domain_ingest())
    assert line == ("ingest: 1 file(s) read, 1 already ingested; 12 row(s): 9 inserted, 1 duplicate(s), "
                    "1 quarantined, 1 sampled out")
    assert "{" not in line


def test_summary_says_what_changed_since_the_previous_version():
    change = VersionDiff("sel-new", "sel-old", frozenset({"c9"}), frozenset({"c1", "c2"}), 0.5)
    text = summary_markdown(FlowReport("rescore", "r", change=change))
    assert "since `sel-old`: 1 member(s) added, 2 dropped, Jaccard overlap 0.500" in text
    assert "- added: `c9`" in text and "- dropped: `c1`, `c2`" in text


def test_blank_lines_and_empty_files_are_said_though_they_are_no_rows():
    ingest = IngestReport("ing", [FileOutcome(Path("/a.csv"), "s1", 2, n_blank_lines=3)], [],
                          skipped=[Skipped(Path("/e.parquet"), EMPTY_FILE)])
    assert ingest_line(ingest).startswith("ingest: 1 file(s) read, 0 already ingested, 1 empty file(s) skipped, "
                                          "3 blank line(s) passed over; 0 row(s)")
    assert "skipped), 1 empty file(s) skipped, 3 blank line(s) passed over." in summary_markdown(
        FlowReport("select", "r", ingest=ingest))


def _report(*outcomes: FileOutcome) -> IngestReport:
    return IngestReport("ing", list(outcomes), [])


def test_a_run_kept_nothing_only_when_every_file_it_read_lost_all_its_rows():
    lost = FileOutcome(Path("/bad.jsonl"), "s1", 7, n_source_rows=7, n_quarantined=7)
    good = FileOutcome(Path("/good.jsonl"), "s2", 5, n_source_rows=5, n_quarantined=1)
    skipped = FileOutcome(Path("/old.jsonl"), "s3", 0, "older run")
    assert kept_nothing(_report(lost)) and kept_nothing(_report(lost, skipped))
    assert not kept_nothing(_report(lost, good)) and not kept_nothing(_report(skipped))
    error = lost_files_error(_report(lost, good))
    assert error is not None and str(error).startswith("every row of /bad.jsonl was quarantined")
    assert lost_files_error(_report(good, skipped)) is None
