"""No command's --help, and no check of its options, imports torch, transformers or (outside the lab) the lab, and
no --help loads the data libraries, object storage or the settings' reader either:
measured with `python -X importtime`, one process per command, as a user's shell runs it."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from capsel.cli.command_list import typed_commands

HEAVY = ("torch", "transformers")
# what a --help waited for before (the store, the lab's tables, the readers, object storage, the settings): 0.9 s on 2 cores
NOT_FOR_HELP = ("duckdb", "pandas", "numpy", "pyarrow", "fsspec", "httpx", "pydantic_settings", "prefect")
LAB = ("demo", "lab")  # the lab's own commands live in capsel_lab
IMPORTED = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s*([\w.]+)$", re.MULTILINE)


def _imports_of(args: list[str]) -> set[str]:
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "capsel", *args], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-1000:] + done.stderr[-2000:]
    return {name.split(".")[0] for name in IMPORTED.findall(done.stderr)}


@pytest.mark.parametrize("args", typed_commands(), ids=" ".join)
def test_help_imports_nothing_heavy(args):
    imported = _imports_of([*args, "--help"])
    assert not imported & set(HEAVY + NOT_FOR_HELP), sorted(imported & set(HEAVY + NOT_FOR_HELP))
    if args[0] not in LAB:
        assert "capsel_lab" not in imported


@pytest.mark.parametrize("command", [["score"], ["evaluate", "base:x", "--eval", "loss:x.jsonl"], ["finetune", "x"],
                                     ["flow", "select"]])
def test_a_misspelt_model_is_answered_before_anything_heavy_loads(command, tmp_path):
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "capsel", *command, "--model",
                           "smolm2-135m-instruct"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 3 and "did you mean 'smollm2-135m-instruct'" in " ".join(done.stderr.split())
    assert not {name.split(".")[0] for name in IMPORTED.findall(done.stderr)} & set(HEAVY)


def test_a_missing_eval_file_is_answered_before_torch_loads_with_its_resolved_path(tmp_path):
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "capsel", "evaluate", "base:smollm2-135m-instruct",
                           "--eval", "loss:held_out.jsonl"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "COLUMNS": "300"})
    told = [line for line in done.stderr.splitlines() if not line.startswith("import time:")]
    assert done.returncode == 3 and len(told) == 1, done.stderr[-2000:]
    assert told[0] == (f"error: --eval held_out.jsonl: no such file {tmp_path / 'held_out.jsonl'} (a relative path is "
                       f"read from {tmp_path}); give the path of the file that holds the rows")
    assert "torch threads" not in done.stdout
    assert not {name.split(".")[0] for name in IMPORTED.findall(done.stderr)} & set(HEAVY)
