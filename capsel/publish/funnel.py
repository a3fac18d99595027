"""The funnel of a selection: rows read, what each stage dropped and what was left, down to the members."""

from __future__ import annotations

# The order a row meets the stages in: ingest drops duplicates, sample leftovers and malformed rows;
# scoring leaves some unscored or excluded; the rest is eligible and the selection cuts it.
DROP_STAGES = ("duplicate", "sampled_out", "quarantined", "unscored", "excluded", "below_cut")
# Stages whose reason names a kind (quarantine reason, scorer exclusion), worth counting one by one.
REASON_STAGES = ("quarantined", "excluded")
# Stages that count what is there rather than what was dropped.
CHECKPOINTS = ("read", "eligible", "selected")


def funnel(counts: list[dict], n_selected: int) -> list[dict]:
    """Funnel entries from per-(stage, reason) row counts of the excluded rows and the member count."""
    dropped = {stage: 0 for stage in DROP_STAGES}
    reasons: dict[str, dict[str, int]] = {stage: {} for stage in REASON_STAGES}
    for row in counts:
        dropped[row["stage"]] += row["n_rows"]
        if row["stage"] in reasons:
            reasons[row["stage"]][str(row["reason"])] = row["n_rows"]
    left = sum(dropped.values()) + n_selected
    entries = [{"stage": "read", "rows": left, "left": left}]
    for stage in DROP_STAGES:
        if stage == "below_cut":
            entries.append({"stage": "eligible", "rows": left, "left": left})
        left -= dropped[stage]
        entries.append({
            "stage": stage, "rows": dropped[stage], "left": left,
            **({"reasons": reasons[stage]} if reasons.get(stage) else {}),
        })
    entries.append({"stage": "selected", "rows": n_selected, "left": n_selected})
    return entries


def funnel_lines(entries: list[dict]) -> list[str]:
    """The funnel as aligned text lines (CLI output): stage, rows dropped or counted, rows left."""
    lines = []
    for entry in entries:
        rows = f"{_signed(entry):>10}"
        reasons = _reasons(entry)
        lines.append(f"{entry['stage']:<12}{rows}  → {entry['left']:>10,}" + (f"  ({reasons})" if reasons else ""))
    return lines


def funnel_rows(entries: list[dict]) -> list[list[str]]:
    """Table rows (stage, rows, left, reasons) for Markdown: dropped rows signed, checkpoints plain."""
    return [
        [entry["stage"], _signed(entry),
         f"{entry['left']:,}", _reasons(entry)]
        for entry in entries
    ]


def _signed(entry: dict) -> str:
    # a stage's drop reads as a subtraction; checkpoints and empty stages as plain counts
    dropped = entry["stage"] not in CHECKPOINTS and entry["rows"]
    return f"-{entry['rows']:,}" if dropped else f"{entry['rows']:,}"


def _reasons(entry: dict) -> str:
    return ", ".join(f"{reason} {n:,}" for reason, n in entry.get("reasons", {}).items())
