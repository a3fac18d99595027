"""What a target of an evaluation is called beside its id: the base model, the full pool, or the method that
selected its rows."""

from __future__ import annotations

BASE_LABEL = "base model"
FULL_POOL_BUDGET = "100%"


def method_label(row: dict) -> str:
    """base model, full pool, or the method and budget with what else set its selection apart (the row: an
    evaluation's `method`, `budget`, `ppl_guard`, `ppl_guard_z` and `late`)."""
    method = row["method"]
    if method is None or method != method:
        return BASE_LABEL
    if row["budget"] == FULL_POOL_BUDGET:
        return "full pool"
    extras = [f"{name} {row[key]}" for key, name in (("ppl_guard", "PPL guard"), ("ppl_guard_z", "PPL guard z"),
                                                    ("late", "late")) if row.get(key) is not None]
    return f"{method} {row['budget']}" + (f" ({', '.join(extras)})" if extras else "")
