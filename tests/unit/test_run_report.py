"""Flow run summaries: counts per stage, exclusions, fits and examples as Markdown."""

from pathlib import Path

from capsel.ingest.summary import DomainCounts, FileOutcome, IngestReport
from capsel.orchestration.run_report import FlowReport, gate_failure_markdown, preview, summary_markdown
from capsel.runner.progress import RunSummary
from capsel.selection.residualize import DomainFit


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
    assert "a \\| b" in text and "- a note" in text and "pf1" in text
    assert report.counters()["score"]["n_excluded"] == {"short_response": 2}


def test_preview_and_gate_failure():
    assert preview("  one\n two  ") == "one two"
    assert preview("x" * 100, 10) == "x" * 9 + "…"
    text = gate_failure_markdown("r", ["members: ExpectX(): 2 unexpected"], "/out/rejected/sel/gate/index.html")
    assert "1 expectation(s) failed" in text and "- members: ExpectX(): 2 unexpected" in text
