"""What the harness tests share: lm-eval's environment (or a skip saying how to build it) and their data files.

The rows are real: GSM8K train and HumanEval as capsel bundles them in capsel/data/real.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capsel.config import load_settings
from capsel.errors import CapselError
from capsel.side_environments import HARNESS

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "capsel" / "data" / "real"


def _lmeval_python() -> tuple[Path, str]:
    # found as capsel finds it: CAPSEL_HARNESS_PYTHON, else .venv-lmeval here or in the checkout
    try:
        return HARNESS.python(load_settings().harness_python), ""
    except CapselError as missing:
        return REPO / ".venv-lmeval" / "bin" / "python", str(missing)


LMEVAL_PYTHON, _MISSING = _lmeval_python()
needs_lmeval = pytest.mark.skipif(bool(_MISSING), reason=_MISSING)


def read_jsonl(path: Path) -> list[dict]:
    """The rows of a JSONL file."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    """Write rows as JSONL; return the path."""
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def gsm8k_files(folder: Path, n_right: int, n_wrong: int) -> tuple[Path, Path]:
    """Demonstrations (GSM8K train's first 5 rows) and, after them, rows whose answer is 72 and rows whose is not.

    The two kinds alternate, answer-72 first, then the leftovers of the longer kind.
    """
    rows = read_jsonl(REAL / "gsm8k_train.jsonl")
    right = [row for row in rows[5:] if row["answer"].endswith("#### 72")][:n_right]
    wrong = [row for row in rows[5:] if not row["answer"].endswith("#### 72")][:n_wrong]
    mixed = [row for pair in zip(right, wrong) for row in pair] + right[len(wrong):] + wrong[len(right):]
    return write_jsonl(folder / "demos.jsonl", rows[:5]), write_jsonl(folder / "eval.jsonl", mixed)


def humaneval_file(folder: Path, task_ids: list[str]) -> Path:
    """A HumanEval file holding the named problems, in that order."""
    rows = {row["task_id"]: row for row in read_jsonl(REAL / "humaneval.jsonl")}
    return write_jsonl(folder / "humaneval.jsonl", [rows[task_id] for task_id in task_ids])
