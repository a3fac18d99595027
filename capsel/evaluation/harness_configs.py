"""The task folder capsel hands lm-eval: its GSM8K or HumanEval config over the caller's local files, checked first."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from capsel.errors import CapselError
from capsel.ingest.readers import JSONL
from capsel.ingest.readers import read_rows as read_jsonl_rows
from capsel.ingest.reasons import Rejection

TEMPLATES = Path(__file__).with_name("harness_templates")
SANDBOX = Path(__file__).with_name("sandbox")
# The names lm-eval imports the executor by, from the task folder: the module the yaml's `!function` names, and the
# sandbox package it imports (the task folder is on lm-eval's PYTHONPATH).
EXECUTOR_MODULE, SANDBOX_PACKAGE = "capsel_code_execution", "capsel_sandbox"
# Named apart from lm-eval's stock gsm8k and humaneval, which load from the hub.
TASK_NAMES = {"gsm8k": "capsel_gsm8k", "humaneval": "capsel_humaneval"}
N_DEMONSTRATIONS = 5
MARKER = re.compile(r"@[A-Z]+@")
REQUIRED_FIELDS = {
    "gsm8k": ("question", "answer"),
    "humaneval": ("task_id", "prompt", "test", "entry_point"),
}


def read_rows(path: Path, name: str) -> list[dict]:
    """The JSONL file's rows, each checked to hold the task's fields as non-empty strings (one error line if not).

    Read as ingest reads JSONL, so a line too long for any row is refused without being held in memory.
    """
    if not path.is_file():
        raise CapselError(f"{name} data file {path} does not exist")
    rows: list[dict] = []
    with path.open("rb") as handle:
        for number, _, row in read_jsonl_rows(handle, JSONL):
            if isinstance(row, Rejection):
                raise CapselError(f"{path}:{number}: {row.reason.value} ({row.detail})")
            if not isinstance(row, dict):
                raise CapselError(f"{path}:{number}: {name} rows are JSON objects; this one is not")
            missing = [field for field in REQUIRED_FIELDS[name]
                       if not isinstance(row.get(field), str) or not row[field].strip()]
            if missing:
                raise CapselError(f"{path}:{number}: {name} rows need {', '.join(REQUIRED_FIELDS[name])}; "
                                  f"this one lacks {', '.join(missing)}")
            # The strict metric compares the number after `####`: an answer without one could never be matched.
            if name == "gsm8k" and "#### " not in row["answer"]:
                raise CapselError(f"{path}:{number}: a GSM8K answer must end with `#### <number>`; this one has none")
            rows.append(row)
    if not rows:
        raise CapselError(f"{name} data file {path} holds no rows")
    return rows


def write_task_folder(name: str, data_file: Path, folder: Path, *, fewshot_file: Path | None = None,
                      execution_folder: Path | None = None, timeout_s: float = 10.0, bwrap: str | None = None,
                      seccomp_filter: Path | None = None) -> str:
    """Write the task's yaml (and, for HumanEval, its executor and sandbox) into `folder`; return the task name
    lm-eval runs."""
    read_rows(data_file, name)
    values: dict[str, object] = {"TASK": TASK_NAMES[name], "DATA": str(data_file.resolve())}
    if name == "gsm8k":
        if fewshot_file is None:
            raise CapselError("gsm8k needs a demonstrations file (fewshot_file): its first 5 rows are the 5 shots")
        if len(read_rows(fewshot_file, name)) < N_DEMONSTRATIONS:
            raise CapselError(f"gsm8k demonstrations file {fewshot_file} holds fewer than {N_DEMONSTRATIONS} rows")
        values["DEMOS"] = str(fewshot_file.resolve())
    else:
        if execution_folder is None or bwrap is None or seccomp_filter is None:
            raise CapselError("humaneval needs a folder and a sandbox (bwrap and its seccomp filter) to execute the "
                              "model's programs in")
        values.update(FOLDER=str(execution_folder.resolve()), TIMEOUT=timeout_s, BWRAP=bwrap,
                      SECCOMP=str(seccomp_filter.resolve()))
    text = (TEMPLATES / f"{name}.yaml").read_text()
    for marker, value in values.items():
        # JSON strings are valid YAML scalars, so a path with quotes, colons or spaces stays one value.
        text = text.replace(f"@{marker}@", json.dumps(value))
    unfilled = MARKER.search(text)
    if unfilled:
        raise AssertionError(f"the {name} template's marker {unfilled.group()} was left unfilled")
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / f"{TASK_NAMES[name]}.yaml").write_text(text)
    if name == "humaneval":
        shutil.copytree(SANDBOX, folder / SANDBOX_PACKAGE, ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copyfile(TEMPLATES / f"{EXECUTOR_MODULE}.py", folder / f"{EXECUTOR_MODULE}.py")
    return TASK_NAMES[name]
